//! The memory limit on lists: a program that conses without end stops
//! with an error instead of being killed by the system (or aborted by a
//! failed allocation) when memory runs out.
//!
//! Every cons cell is counted when made and when dropped ([`note_made`],
//! [`note_dropped`]), per thread (values never leave the thread that made
//! them). The evaluator compares the live count with the limit wherever
//! it checks for an interrupt — each closure call and each loop pass — so
//! the error points at the call that went over. The default limit is half
//! the machine's memory (or of the container's, where a control group sets
//! less); `set-memory-limit!` changes it. Strings, tensors and other
//! builders ask the allocator first (`try_reserve`) and need no count.
//!
//! A built-in call that builds a list finishes before the next check;
//! those that make a list as long as their inputs or arguments (`append`,
//! `reverse`, `map`, `range`, `to-list`) ask for room first
//! ([`room_for`]), so one call cannot go far past the limit.

use super::error::{EvalError, EvalResult};
use super::value::Pair;
use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    /// The limit in cells less the cells alive on this thread: the cells
    /// that may still be made. One number, so that making a cell and the
    /// evaluator's check each touch one thread-local.
    static SPARE: Cell<isize> = const { Cell::new(0) };
    /// The limit in cells; 0 until first read (then `SPARE` is minus the
    /// cells alive).
    static LIMIT: Cell<isize> = const { Cell::new(0) };
}

/// Bytes one cons cell takes: the cell and its reference counts.
pub const CELL_BYTES: usize = std::mem::size_of::<Pair>() + 2 * std::mem::size_of::<usize>();

/// The limit standing for "none": more cells than memory can hold.
const NO_LIMIT: isize = isize::MAX / 2;

/// Counts a new cons cell.
#[inline(always)]
pub fn note_made() {
    SPARE.with(|spare| spare.set(spare.get() - 1));
}

/// Counts a dropped cons cell.
#[inline(always)]
pub fn note_dropped() {
    SPARE.with(|spare| spare.set(spare.get() + 1));
}

/// An error when the live cells are over the limit.
#[inline(always)]
pub fn check() -> EvalResult<()> {
    if SPARE.with(Cell::get) < 0 {
        return over_limit();
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn over_limit() -> EvalResult<()> {
    let limit = limit_cells();
    let live = live_cells();
    if live <= limit {
        return Ok(());
    }
    Err(EvalError::range(format!(
        "the program's lists hold {live} cells ({:.2} GB), more than the memory limit of {:.2} GB; \
         let go of lists no longer needed (redefine the variables holding them), or raise the limit \
         with set-memory-limit!",
        (live as usize * CELL_BYTES) as f64 / 1e9,
        (limit as usize * CELL_BYTES) as f64 / 1e9
    )))
}

/// An error when `cells` more cells would pass the limit. Built-ins that
/// make long lists in one call ask first, so one call cannot go far past
/// the limit before the next check.
pub fn room_for(cells: usize) -> EvalResult<()> {
    let limit = limit_cells();
    let live = live_cells();
    let spare = usize::try_from(limit - live).unwrap_or(0);
    if cells <= spare {
        return Ok(());
    }
    Err(EvalError::range(format!(
        "a list of {cells} more cells ({:.2} GB) would pass the memory limit of {:.2} GB \
         (the program's lists hold {:.2} GB); raise the limit with set-memory-limit!",
        (cells.saturating_mul(CELL_BYTES)) as f64 / 1e9,
        (limit as usize * CELL_BYTES) as f64 / 1e9,
        (live.max(0) as usize * CELL_BYTES) as f64 / 1e9
    )))
}

/// The limit in cells, set to the default on first use.
fn limit_cells() -> isize {
    let limit = LIMIT.with(Cell::get);
    if limit != 0 {
        return limit;
    }
    let default = isize::try_from(default_limit_bytes() / CELL_BYTES)
        .map_or(NO_LIMIT, |cells| cells.min(NO_LIMIT));
    set_limit_cells(default);
    default
}

fn set_limit_cells(cells: isize) {
    let live = live_cells();
    LIMIT.with(|limit| limit.set(cells));
    SPARE.with(|spare| spare.set(cells - live));
}

/// The limit in bytes (`None`: no limit).
pub fn limit_bytes() -> Option<usize> {
    let cells = limit_cells();
    (cells != NO_LIMIT).then(|| (cells as usize).saturating_mul(CELL_BYTES))
}

/// Sets the limit in bytes (`None`: no limit) for this thread.
pub fn set_limit_bytes(bytes: Option<usize>) {
    let cells = bytes.map_or(NO_LIMIT, |bytes| {
        isize::try_from(bytes / CELL_BYTES).map_or(NO_LIMIT, |cells| cells.clamp(1, NO_LIMIT))
    });
    set_limit_cells(cells);
}

/// Cons cells alive on this thread.
pub fn live_cells() -> isize {
    LIMIT.with(Cell::get) - SPARE.with(Cell::get)
}

/// Half of the memory this process may use: the machine's (`MemTotal`),
/// or less where its control group or its address-space limit (`ulimit
/// -v`) says so. Where none can be read, no limit.
pub fn default_limit_bytes() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| crate::host_memory::total().map_or(usize::MAX, |bytes| bytes / 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lisp::value::Value;

    #[test]
    fn cells_are_counted_when_made_and_dropped() {
        let before = live_cells();
        let list = Value::list((0..1000).map(Value::Int));
        assert_eq!(live_cells(), before + 1000);
        drop(list);
        assert_eq!(live_cells(), before);
    }

    #[test]
    fn the_check_fails_over_the_limit_and_names_it() {
        let saved = limit_bytes();
        set_limit_bytes(Some(100 * CELL_BYTES));
        let list = Value::list((0..200).map(Value::Int));
        let error = check().expect_err("200 cells are over a 100-cell limit");
        assert!(error.message.contains("memory limit"), "{}", error.message);
        drop(list);
        assert!(check().is_ok(), "dropping the list frees the cells");
        set_limit_bytes(saved);
    }
}
