//! Storage kept for reuse across instructions and runs, by element type
//! and length, and allocation that fails with an error instead of an
//! abort. Fresh large allocations are mapped from the system and zeroed
//! page by page on first touch, which costs more than an elementwise pass.

use crate::backends::BackendError;
use ndarray::{ArrayD, IxDyn};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::rc::Rc;

/// Free buffers of one element type, by length.
type Free<T> = FxHashMap<usize, Vec<Vec<T>>>;

/// The storage one thread keeps.
pub struct Pool {
    wide: Free<f64>,
    single: Free<f32>,
    bytes: usize,
    /// The most storage kept: `POOL_BYTES`, or more after a tape whose
    /// peak was larger ran on this thread (up to `POOL_CEILING`).
    limit: usize,
}

/// An element type the pool keeps buffers of.
pub trait Kept: Copy + Default + 'static {
    /// The buffers of this type.
    fn free(pool: &mut Pool) -> &mut Free<Self>;
}

impl Kept for f64 {
    fn free(pool: &mut Pool) -> &mut Free<f64> {
        &mut pool.wide
    }
}

impl Kept for f32 {
    fn free(pool: &mut Pool) -> &mut Free<f32> {
        &mut pool.single
    }
}

/// The most storage the pool keeps (per thread) until a larger program
/// runs.
const POOL_BYTES: usize = 512 << 20;

/// The most storage the pool keeps after a program whose values take
/// more than `POOL_BYTES` at their peak: a training step whose
/// activations take 900 MB allocated a third of them fresh at every step
/// (page faults were 16% of the step; 1.49 s against 1.29 s kept).
const POOL_CEILING: usize = 4 << 30;

/// Lets the pool keep as much as a program of `peak` bytes needs at once
/// (between `POOL_BYTES` and `POOL_CEILING`): storage the process held
/// anyway at that peak, kept for the program's next run.
pub(crate) fn allow_pool(peak: usize) {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        pool.limit = pool.limit.max(peak.min(POOL_CEILING));
    });
}

/// The bytes of free buffers this thread's pool keeps: memory the process
/// holds that the next run takes again.
pub(crate) fn pooled_bytes() -> usize {
    POOL.with(|pool| pool.borrow().bytes)
}

/// The most free buffers of one length the pool keeps: a loop whose
/// operations free more buffers of a length than they take (structural
/// operations allocate their own) must not fill the pool with them.
const POOL_PER_LENGTH: usize = 64;

thread_local! {
    static POOL: std::cell::RefCell<Pool> = std::cell::RefCell::new(Pool {
        wide: FxHashMap::default(),
        single: FxHashMap::default(),
        bytes: 0,
        limit: POOL_BYTES,
    });
}

/// Results at least this many numbers long are allocated only after the
/// allocator has agreed to hold them (`reserve`), so a result the machine
/// cannot hold is an error, not an abort.
pub(crate) const PROBED_LENGTH: usize = 1 << 23;

/// Empty storage with room for `len` numbers, or the out-of-memory error
/// naming what it was for (`what`), instead of the abort an allocation
/// failure would be.
pub(crate) fn reserve(len: usize, what: impl FnOnce() -> String) -> Result<Vec<f64>, BackendError> {
    let mut storage: Vec<f64> = Vec::new();
    match storage.try_reserve_exact(len) {
        Ok(()) => Ok(storage),
        Err(_) => Err(BackendError::new(format!(
            "out of memory: cannot allocate {:.3} GB for {}",
            len as f64 * 8.0 / 1e9,
            what()
        ))),
    }
}

/// Storage of `n` elements from the pool, if it has some (contents
/// arbitrary).
pub(crate) fn take<T: Kept>(n: usize) -> Option<Vec<T>> {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let found = T::free(&mut pool).get_mut(&n).and_then(Vec::pop)?;
        pool.bytes -= n * size_of::<T>();
        Some(found)
    })
}

/// Storage of `n` elements, from the pool or fresh (contents arbitrary).
pub(crate) fn take_or_new<T: Kept>(n: usize) -> Vec<T> {
    take(n).unwrap_or_else(|| vec![T::default(); n])
}

/// Arrays handed out for one recurring value (a plan's result, a step's
/// row of a sequence): one nobody else holds any more is written again
/// instead of allocating a new one, so a loop's values ping-pong between
/// a few arrays.
#[derive(Default)]
pub(crate) struct Recurring {
    given: SmallVec<[Rc<ArrayD<f64>>; 3]>,
}

impl Recurring {
    /// An array of `shape` holding `data` (row-major).
    pub(crate) fn array(&mut self, shape: &[usize], data: &[f64]) -> Rc<ArrayD<f64>> {
        for kept in self.given.iter_mut() {
            if let Some(array) = Rc::get_mut(kept)
                && array.shape() == shape
                && let Some(storage) = array.as_slice_mut()
            {
                storage.copy_from_slice(data);
                return Rc::clone(kept);
            }
        }
        let mut storage = take(data.len()).unwrap_or_default();
        storage.clear();
        storage.extend_from_slice(data);
        let array = Rc::new(ArrayD::from_shape_vec(IxDyn(shape), storage).expect("sizes match"));
        // Every kept one still held elsewhere (stored states, say): the
        // newest replaces the oldest.
        if self.given.len() == 3 {
            self.given.remove(0);
        }
        self.given.push(Rc::clone(&array));
        array
    }
}

/// Keeps the storage of a dead array for a later result of its size.
pub(crate) fn recycle<T: Kept>(array: Rc<ArrayD<T>>) {
    let Ok(array) = Rc::try_unwrap(array) else {
        return;
    };
    if !array.is_standard_layout() {
        return;
    }
    let (data, offset) = array.into_raw_vec_and_offset();
    if offset.unwrap_or(0) != 0 || data.len() < 1024 {
        return;
    }
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let len = data.len();
        let bytes = len * size_of::<T>();
        let room = T::free(&mut pool).get(&len).map_or(0, Vec::len) < POOL_PER_LENGTH;
        if !room || bytes > pool.limit {
            return;
        }
        // A full pool gives up buffers of other sizes (the largest first):
        // what runs now needs this size, and storage kept for an earlier
        // program's sizes would leave every allocation of this one fresh,
        // zeroed page by page.
        while pool.bytes + bytes > pool.limit {
            if !give_up_largest(&mut pool, bytes) {
                return;
            }
        }
        pool.bytes += bytes;
        T::free(&mut pool).entry(len).or_default().push(data);
    });
}

/// Drops one kept buffer of the largest size in bytes other than `bytes`;
/// false when there is none.
fn give_up_largest(pool: &mut Pool, bytes: usize) -> bool {
    let wide = largest(&pool.wide, bytes);
    let single = largest(&pool.single, bytes);
    let dropped = match (wide, single) {
        (Some(w), s) if s.is_none_or(|s| w >= s) => {
            pool.wide.get_mut(&(w / 8)).and_then(Vec::pop).map(|_| w)
        }
        (_, Some(s)) => pool.single.get_mut(&(s / 4)).and_then(Vec::pop).map(|_| s),
        _ => None,
    };
    match dropped {
        Some(size) => {
            pool.bytes -= size;
            true
        }
        None => false,
    }
}

/// The largest size in bytes of the buffers kept in `free`, other than
/// `bytes`.
fn largest<T>(free: &Free<T>, bytes: usize) -> Option<usize> {
    free.iter()
        .filter(|(l, kept)| **l * size_of::<T>() != bytes && !kept.is_empty())
        .map(|(l, _)| *l * size_of::<T>())
        .max()
}

#[cfg(test)]
pub(crate) mod tests;
