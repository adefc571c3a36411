//! A global allocator that routes each block by its size: small and large
//! blocks to a fast general allocator (the `epsilon` command and the
//! Python module pass mimalloc), blocks of a few kilobytes to the system
//! allocator.
//!
//! Why the middle range goes elsewhere: mimalloc serves blocks of one size
//! class from one page, at a stride of the class's size, and for arrays
//! of a few kilobytes that stride is a multiple of 4 KiB (1,000 numbers,
//! 8,000 bytes, sit 8 KiB apart). The arrays an elementwise kernel reads
//! and writes then lie at the same offset modulo 4 KiB, so they compete
//! for the same sets of the level-1 cache and the processor's loads wait
//! on unrelated stores (4K aliasing). An `odeint` step over 1,000 states
//! reads seven such arrays and ran about 1.6x slower
//! (`bench/implicit/odeint.lisp diffusion`). The system allocator puts
//! consecutive blocks a header apart (8,016 bytes), which staggers them.
//!
//! Small blocks (the interpreter's frames, closures and lists) stay with
//! the fast allocator, and so do blocks of [`LARGE`] bytes and more: the
//! system allocator maps large blocks afresh (above a threshold of 128 KiB
//! at first) and hands their pages back on every free, so that a compiled
//! call over 10^6 numbers would pay a page fault per page each time. With
//! the bound at 128 KiB instead of 1 MiB, the `odeint` step above took
//! 0.63–0.64 ms instead of 0.56–0.57 (bench/history/2026-12-07.md).

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes and below [`LARGE`] go to the
/// system allocator.
pub const MEDIUM: usize = 4 << 10;

/// Blocks of at least this many bytes go back to the fast allocator.
pub const LARGE: usize = 1 << 20;

/// Whether a block of `size` bytes belongs to the system allocator.
fn medium(size: usize) -> bool {
    (MEDIUM..LARGE).contains(&size)
}

/// `Fast` for small and large blocks, the system allocator for medium
/// ones (the module documentation says why).
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: epsilon::allocator::BySize<mimalloc::MiMalloc> =
///     epsilon::allocator::BySize(mimalloc::MiMalloc);
/// ```
pub struct BySize<Fast>(pub Fast);

// SAFETY: every block is freed, and resized in place, by the allocator
// that made it: the layout passed back names the same size, so `medium`
// picks the same one; a resize that crosses between the ranges moves the
// block with `alloc`, a copy and `dealloc`, as `GlobalAlloc::realloc`'s
// default does.
unsafe impl<Fast: GlobalAlloc> GlobalAlloc for BySize<Fast> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            if medium(layout.size()) {
                System.alloc(layout)
            } else {
                self.0.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            if medium(layout.size()) {
                System.alloc_zeroed(layout)
            } else {
                self.0.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: `block` came from the allocator `medium` names for its
        // size (see the `unsafe impl`).
        unsafe {
            if medium(layout.size()) {
                System.dealloc(block, layout)
            } else {
                self.0.dealloc(block, layout)
            }
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // SAFETY: the caller's promises; a block that changes allocator is
        // moved: allocated anew (a valid layout: `size` with `layout`'s
        // alignment, which the caller promises does not overflow), copied
        // (the blocks are distinct) and freed by its own allocator.
        unsafe {
            match (medium(layout.size()), medium(size)) {
                (true, true) => System.realloc(block, layout, size),
                (false, false) => self.0.realloc(block, layout, size),
                _ => {
                    let moved = Layout::from_size_align_unchecked(size, layout.align());
                    let new = self.alloc(moved);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(block, new, layout.size().min(size));
                        self.dealloc(block, layout);
                    }
                    new
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicIsize, Ordering};

    #[test]
    fn blocks_keep_their_contents_across_the_ranges() {
        let a = BySize(System);
        for (from, to) in [
            (16, MEDIUM + 8),
            (MEDIUM + 8, 16),
            (MEDIUM, LARGE),
            (LARGE + 64, MEDIUM + 64),
            (MEDIUM + 8, MEDIUM + 800),
            (LARGE, 2 * LARGE),
        ] {
            let layout = Layout::from_size_align(from, 16).unwrap();
            // SAFETY: a fresh block of `from` bytes, written and read
            // within its sizes, freed with its last layout.
            unsafe {
                let block = a.alloc(layout);
                assert!(!block.is_null());
                for k in 0..from {
                    *block.add(k) = (k % 251) as u8;
                }
                let moved = a.realloc(block, layout, to);
                assert!(!moved.is_null());
                for k in 0..from.min(to) {
                    assert_eq!(*moved.add(k), (k % 251) as u8, "byte {k} of {from} -> {to}");
                }
                a.dealloc(moved, Layout::from_size_align(to, 16).unwrap());
            }
        }
    }

    /// The system allocator, counting the blocks it holds.
    struct Counting(AtomicIsize);

    // SAFETY: `System`'s, with a count beside.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.0.fetch_add(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
            self.0.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.dealloc(block, layout) }
        }
    }

    #[test]
    fn only_medium_blocks_go_to_the_system() {
        let a = BySize(Counting(AtomicIsize::new(0)));
        for (size, fast) in [
            (8, true),
            (MEDIUM - 1, true),
            (MEDIUM, false),
            (LARGE - 1, false),
            (LARGE, true),
            (10 * LARGE, true),
        ] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: a fresh block, freed with its layout.
            unsafe {
                let block = a.alloc(layout);
                assert_eq!(
                    a.0.0.load(Ordering::Relaxed),
                    isize::from(fast),
                    "{size} bytes"
                );
                a.dealloc(block, layout);
                assert_eq!(a.0.0.load(Ordering::Relaxed), 0);
            }
        }
    }
}
