//! Stopping long loops (`scan`) when the user interrupts: the caller lends
//! the executor its interrupt flag for a run; loops check it every so
//! often and stop early. The results of a stopped run are meaningless, so
//! the caller must check its flag afterwards and report the interruption.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` with `flag` as the interrupt flag loops check.
pub fn with_cancel<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    let saved = FLAG.with(|c| c.replace(Some(flag)));
    let result = f();
    FLAG.with(|c| *c.borrow_mut() = saved);
    result
}

/// Whether the run should stop.
pub fn requested() -> bool {
    FLAG.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}
