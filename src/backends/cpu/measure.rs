//! What the executor measures while it runs (per thread): the bytes of
//! values alive at once, the bytes of loop snapshots, and the values and
//! flops loops compute again. `measure` brackets a run.

use std::cell::Cell;

/// What one measured run used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measured {
    /// The most bytes of values (tape slots, loop snapshots and trails)
    /// alive at once.
    pub peak_bytes: usize,
    /// The most bytes of loop snapshots held at once.
    pub peak_snapshot_bytes: usize,
    /// Values computed again: by loops recomputing steps from snapshots,
    /// and by reverse steps recomputing a step's intermediates.
    pub recomputed_values: u64,
    /// The floating-point operations of that recomputation.
    pub recomputed_flops: u64,
}

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static SNAPSHOTS: Cell<usize> = const { Cell::new(0) };
    static CURRENT: Cell<Measured> = Cell::new(Measured::default());
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a `measure` is under way on this thread (bookkeeping that costs
/// more than a counter, such as `Held`'s, is skipped otherwise).
pub(crate) fn active() -> bool {
    MEASURING.get()
}

/// Runs `f` and returns what it used.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Measured) {
    let saved = (LIVE.get(), SNAPSHOTS.get(), CURRENT.get());
    LIVE.set(0);
    SNAPSHOTS.set(0);
    CURRENT.set(Measured::default());
    let was_measuring = MEASURING.replace(true);
    let result = f();
    MEASURING.set(was_measuring);
    let measured = CURRENT.get();
    LIVE.set(saved.0);
    SNAPSHOTS.set(saved.1);
    CURRENT.set(saved.2);
    (result, measured)
}

fn update(change: impl FnOnce(&mut Measured)) {
    let mut m = CURRENT.get();
    change(&mut m);
    CURRENT.set(m);
}

/// `bytes` of values became alive.
pub(crate) fn alive(bytes: usize) {
    let live = LIVE.get() + bytes;
    LIVE.set(live);
    update(|m| m.peak_bytes = m.peak_bytes.max(live));
}

/// `bytes` of values died.
pub(crate) fn dead(bytes: usize) {
    LIVE.set(LIVE.get().saturating_sub(bytes));
}

/// A loop stored a snapshot (or trail) of `bytes`.
pub(crate) fn stored(bytes: usize) {
    alive(bytes);
    let held = SNAPSHOTS.get() + bytes;
    SNAPSHOTS.set(held);
    update(|m| m.peak_snapshot_bytes = m.peak_snapshot_bytes.max(held));
}

/// A loop freed a snapshot of `bytes`.
pub(crate) fn released(bytes: usize) {
    dead(bytes);
    SNAPSHOTS.set(SNAPSHOTS.get().saturating_sub(bytes));
}

/// A loop computed `steps` steps again, each of `values` values and
/// `flops` operations.
pub(crate) fn recomputed(steps: usize, values: usize, flops: u64) {
    update(|m| {
        m.recomputed_values += (steps * values) as u64;
        m.recomputed_flops += steps as u64 * flops;
    });
}

/// The buffers a loop's snapshots hold, each counted once however many
/// snapshots share it (a state part the step leaves unchanged is the same
/// buffer in every snapshot), so the bytes `stored` reports are the bytes
/// the snapshots keep alive.
#[derive(Default)]
pub(crate) struct Held {
    /// Snapshots holding each buffer, by its address.
    counts: rustc_hash::FxHashMap<usize, usize>,
}

impl Held {
    /// A snapshot holds the buffer at `address` of `bytes`.
    pub(crate) fn hold(&mut self, address: usize, bytes: usize) {
        if !active() {
            return;
        }
        let count = self.counts.entry(address).or_insert(0);
        if *count == 0 {
            stored(bytes);
        }
        *count += 1;
    }

    /// A snapshot let go of the buffer at `address` of `bytes`.
    pub(crate) fn release(&mut self, address: usize, bytes: usize) {
        if !active() {
            return;
        }
        if let Some(count) = self.counts.get_mut(&address) {
            *count -= 1;
            if *count == 0 {
                self.counts.remove(&address);
                released(bytes);
            }
        }
    }
}
