//! Values that belong to the thread that made them.
//!
//! Epsilon's engine and values are not shared between threads (reference
//! counts are not atomic). A Python object holding one may still be
//! reached from another thread; [`Owned`] lets only the owning thread in
//! (others get an `EpsilonError` saying so, not a panic), and a value
//! dropped on another thread (its last Python reference released there)
//! is left alone rather than freed where it does not belong.

use crate::errors::EpsilonError;
use pyo3::PyResult;
use std::cell::{RefCell, RefMut};
use std::mem::ManuallyDrop;
use std::thread::{self, ThreadId};

/// A value only its owning thread may use.
pub struct Owned<T> {
    owner: ThreadId,
    value: ManuallyDrop<RefCell<T>>,
}

// SAFETY: the value is only touched on the owning thread: `get` checks the
// thread before handing out a borrow, and `drop` frees it only there.
unsafe impl<T> Send for Owned<T> {}
// SAFETY: as above; the `RefCell`'s flag is only read and written by the
// owning thread.
unsafe impl<T> Sync for Owned<T> {}

impl<T> Owned<T> {
    /// `value`, owned by the calling thread.
    pub fn new(value: T) -> Self {
        Owned {
            owner: thread::current().id(),
            value: ManuallyDrop::new(RefCell::new(value)),
        }
    }

    /// The value, borrowed for the owning thread; `what` names it in the
    /// errors.
    pub fn get(&self, what: &str) -> PyResult<RefMut<'_, T>> {
        if thread::current().id() != self.owner {
            return Err(EpsilonError::new_err(format!(
                "this {what} belongs to the thread that made it: make an epsilon.Engine in each thread"
            )));
        }
        self.value.try_borrow_mut().map_err(|_| {
            EpsilonError::new_err(format!(
                "this {what} is busy (called again from inside one of its own calls)"
            ))
        })
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if thread::current().id() == self.owner {
            // SAFETY: dropped once, here, on the owning thread.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        }
    }
}
