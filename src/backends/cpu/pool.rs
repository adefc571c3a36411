//! The threads CPU kernels run on. A parallel kernel called from a thread
//! outside rayon's pool hands its work to the pool and sleeps until a
//! worker finishes it: two wake-ups a call, tens of microseconds each. A
//! loop of small matrix products makes thousands of such calls, so
//! programs that run many kernels (the `epsilon` command, the REPL) run
//! their whole evaluation on a worker of the pool instead: a kernel then
//! starts on the calling thread and wakes only the helpers it splits onto.

use std::sync::OnceLock;

/// The stack each worker gets: as large as a main thread's, so the
/// evaluator (which grows its stack in segments where recursion runs
/// deep) starts where it would on the main thread.
const WORKER_STACK: usize = 8 << 20;

/// Runs `f` on a worker of the compute pool and gives its result (a panic
/// in `f` is resumed on the calling thread). The pool has as many threads
/// as rayon's default (`RAYON_NUM_THREADS`, else the cores); it is built
/// on the first call. Where it cannot be built, `f` runs here.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("epsilon-{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(pool) if rayon::current_thread_index().is_none() => pool.install(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::on_pool;

    #[test]
    fn work_runs_on_a_worker_and_its_result_comes_back() {
        assert!(rayon::current_thread_index().is_none());
        let (worker, value) = on_pool(|| (rayon::current_thread_index(), 6 * 7));
        assert!(worker.is_some(), "ran on the caller, not a worker");
        assert_eq!(value, 42);
        // From a worker, nested work runs where it is.
        let nested = on_pool(|| {
            let outer = rayon::current_thread_index();
            on_pool(|| rayon::current_thread_index() == outer)
        });
        assert!(nested);
    }

    #[test]
    fn a_panic_on_the_worker_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| on_pool(|| panic!("from the worker")));
        let message = caught.expect_err("the panic came back");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"from the worker"));
    }
}
