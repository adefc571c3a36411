//! Ctrl-C during a computation. While an engine computes, the GIL is
//! released and Python's own SIGINT handler only marks the signal, to be
//! handled when Python runs again, after the computation. So for the
//! duration of a call on the main thread a handler of this module takes
//! SIGINT: it sets the engine's interrupt flag (the evaluator checks it
//! and stops with an "interrupted" error), the previous handler is put
//! back after, and the call raises `KeyboardInterrupt`.

use pyo3::prelude::*;
use std::ptr::null_mut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The flag of the computation that SIGINT stops, or null.
static CURRENT: AtomicPtr<AtomicBool> = AtomicPtr::new(null_mut());

extern "C" fn on_sigint(_signal: libc::c_int) {
    // Only an atomic load and store: safe in a signal handler.
    let flag = CURRENT.load(Ordering::SeqCst);
    if !flag.is_null() {
        // SAFETY: the pointer is to a flag `Watch` keeps alive until it
        // clears `CURRENT`.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
    }
}

/// SIGINT routed to an engine's interrupt flag while this lives.
pub struct Watch {
    flag: Arc<AtomicBool>,
    previous: Option<libc::sigaction>,
}

impl Watch {
    /// Routes SIGINT to `flag` when called on Python's main thread
    /// (where Python handles signals); elsewhere it does nothing.
    pub fn start(py: Python<'_>, flag: Arc<AtomicBool>) -> Watch {
        flag.store(false, Ordering::SeqCst);
        let main = on_main_thread(py);
        let previous = match main && CURRENT.load(Ordering::SeqCst).is_null() {
            true => install(&flag),
            false => None,
        };
        Watch { flag, previous }
    }

    /// Whether SIGINT arrived; the flag is cleared for the next call.
    pub fn interrupted(&self) -> bool {
        self.previous.is_some() && self.flag.swap(false, Ordering::SeqCst)
    }
}

/// Whether this is Python's main thread and SIGINT has Python's default
/// handler (the one that raises `KeyboardInterrupt`): a program that set
/// its own handler, or ignores the signal, keeps it.
fn on_main_thread(py: Python<'_>) -> bool {
    let check = || -> PyResult<bool> {
        let threading = py.import("threading")?;
        let current = threading.call_method0("current_thread")?;
        let main = threading.call_method0("main_thread")?;
        let signal = py.import("signal")?;
        let handler = signal.call_method1("getsignal", (signal.getattr("SIGINT")?,))?;
        Ok(current.is(&main) && handler.is(&signal.getattr("default_int_handler")?))
    };
    check().unwrap_or(false)
}

/// Installs the handler for `flag`, returning the one it replaces.
fn install(flag: &Arc<AtomicBool>) -> Option<libc::sigaction> {
    CURRENT.store(Arc::as_ptr(flag) as *mut AtomicBool, Ordering::SeqCst);
    // SAFETY: a zeroed sigaction is valid to fill in; the handler only
    // touches atomics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        match libc::sigaction(libc::SIGINT, &action, &mut previous) {
            0 => Some(previous),
            _ => {
                CURRENT.store(null_mut(), Ordering::SeqCst);
                None
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // SAFETY: puts back the handler `install` replaced.
            unsafe { libc::sigaction(libc::SIGINT, &previous, null_mut()) };
            CURRENT.store(null_mut(), Ordering::SeqCst);
        }
    }
}
