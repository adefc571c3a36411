//! Online checkpointing: reversing a loop whose number of steps is known
//! only when it stops (`while-loop`), with at most `k` snapshots held at
//! any time, however many steps it runs.
//!
//! While the loop runs forward, up to `ceil(k / 2)` states are kept at
//! the multiples of a stride; when they fill up, the stride doubles and
//! every other one is freed (so the kept states stay evenly spaced, at
//! most twice as far apart as `n / ceil(k / 2)`). When the loop stops at
//! `n`, the segments between kept states are reversed last first, each by
//! revolve (`super::Schedule`) from its kept start with the other
//! `k - ceil(k / 2)` slots. Every step runs once forward, then each
//! segment's steps as revolve reruns them: for `k >= 4` that is within a
//! small factor of the offline optimum for the same memory (Stumm and
//! Walther's online schedules reach the optimum more closely, with a more
//! involved bookkeeping).

use super::{Action, Actions, Reversal, Strategy, schedule};

/// The schedule of a loop of unknown length, built as it runs.
#[derive(Clone, Debug)]
pub struct Online {
    /// The most segment starts kept.
    kept_limit: usize,
    /// Snapshot slots for revolve inside a segment, besides its start.
    inner: usize,
    /// Kept states are the multiples of this.
    stride: usize,
    /// The kept states, in increasing order.
    kept: Vec<usize>,
}

impl Online {
    /// A schedule holding at most `snapshots` (at least one) states.
    pub fn new(snapshots: usize) -> Online {
        let snapshots = snapshots.max(1);
        let kept_limit = snapshots.div_ceil(2);
        Online {
            kept_limit,
            inner: snapshots - kept_limit,
            stride: 1,
            kept: Vec::new(),
        }
    }

    /// The actions to take before step `i` runs (the working state holds
    /// state `i`, and the loop goes on): a snapshot of it when it falls on
    /// the stride, after freeing every other kept state if they are full.
    pub fn before_step(&mut self, i: usize, actions: &mut Vec<Action>) {
        if !i.is_multiple_of(self.stride) {
            return;
        }
        if self.kept.len() >= self.kept_limit {
            self.stride *= 2;
            let stride = self.stride;
            self.kept.retain(|&j| {
                let keep = j.is_multiple_of(stride);
                if !keep {
                    actions.push(Action::Free(j));
                }
                keep
            });
            if !i.is_multiple_of(self.stride) {
                return;
            }
        }
        self.kept.push(i);
        actions.push(Action::Store(i));
    }

    /// The states kept now.
    pub fn kept(&self) -> &[usize] {
        &self.kept
    }

    /// The reverse of a loop that stopped after `n` steps (the working
    /// state holds state `n`): each segment between kept states, last
    /// first, restored from its start and reversed by revolve; every kept
    /// state is freed once its segment is reversed.
    pub fn reverse(self, n: usize) -> OnlineReverse {
        OnlineReverse {
            segments: self.kept,
            end: n,
            inner: self.inner,
            current: None,
        }
    }
}

/// The reverse actions of an `Online` schedule, generated as they are
/// taken.
pub struct OnlineReverse {
    /// The kept segment starts not yet reversed.
    segments: Vec<usize>,
    /// Where the last segment not yet reversed ends.
    end: usize,
    /// Snapshot slots inside a segment, besides its start.
    inner: usize,
    /// The segment being reversed: its start and its revolve actions.
    current: Option<(usize, Actions)>,
}

impl Iterator for OnlineReverse {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        if let Some((start, actions)) = &mut self.current {
            if let Some(action) = actions.next() {
                return Some(offset(action, *start));
            }
            self.current = None;
        }
        let start = self.segments.pop()?;
        let steps = self.end - start;
        self.end = start;
        if steps == 0 {
            return Some(Action::Free(start));
        }
        let mut actions = schedule(steps, Strategy::Revolve(self.inner + 1)).actions();
        // The segment's own first action stores its start, which is kept
        // already: restore it instead.
        let first = actions.next();
        debug_assert_eq!(first, Some(Action::Store(0)));
        self.current = Some((start, actions));
        Some(Action::Restore(start))
    }
}

/// `action` of a segment starting at state `start`, in the loop's steps.
fn offset(action: Action, start: usize) -> Action {
    match action {
        Action::Advance { from, to } => Action::Advance {
            from: from + start,
            to: to + start,
        },
        Action::Store(i) => Action::Store(i + start),
        Action::Restore(i) => Action::Restore(i + start),
        Action::Free(i) => Action::Free(i + start),
        Action::Reverse(i) => Action::Reverse(i + start),
    }
}

/// Reverses a loop of unknown length on a backend: runs it forward,
/// keeping states by the online schedule of `snapshots`, until
/// `reversal.go_on` says it stops; then takes the reverse actions.
pub fn reverse_online<R: Reversal>(reversal: &mut R, snapshots: usize) -> Result<(), R::Error> {
    let mut online = Online::new(snapshots);
    let mut actions = Vec::new();
    let mut i = 0;
    while reversal.go_on(i)? {
        actions.clear();
        online.before_step(i, &mut actions);
        for &action in &actions {
            reversal.apply(action)?;
        }
        reversal.apply(Action::Advance { from: i, to: i + 1 })?;
        i += 1;
    }
    reversal.reversing();
    for (at, action) in online.reverse(i).enumerate() {
        if at % 64 == 0 && reversal.cancelled() {
            break;
        }
        reversal.apply(action)?;
    }
    Ok(())
}
