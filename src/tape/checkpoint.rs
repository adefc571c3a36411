//! Checkpoint schedules for reversing a loop of `n` steps (`scan`): which
//! states to keep, which to recompute, in what order.
//!
//! State `i` is the loop state before step `i` (state 0 is the initial
//! state, state `n` the result). Reversing step `i` needs state `i`. A
//! schedule is a list of actions over one working state and a set of
//! snapshots; running it reverses every step once, from `n - 1` down to 0.
//!
//! - `StoreAll` keeps every state: no recomputation, `n` snapshots.
//! - `Recompute` keeps only state 0 and recomputes each state from it:
//!   `(n - 1) (n - 2) / 2` steps recomputed, one snapshot.
//! - `Revolve(k)` is binomial checkpointing (Griewank and Walther's
//!   revolve) with at most `k` snapshots, state 0 included: the fewest
//!   recomputed steps any schedule with `k` snapshots can have,
//!   `t n - C(k + t, t - 1) - (n - 1)` where `t` is the smallest integer
//!   with `C(k + t, t) >= n`.
//!
//! The schedule's prefix (up to the first `Reverse`) is the forward sweep
//! that computes the loop's result; `forward_prefix` says where it ends.

pub use crate::egraph::tensor::scan::Strategy;

/// One action of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run the steps `from..to` on the working state (which holds state
    /// `from`), leaving state `to` in it.
    Advance {
        /// The state the working state holds.
        from: usize,
        /// The state it holds afterwards.
        to: usize,
    },
    /// Copy the working state (state `i`) into a snapshot.
    Store(usize),
    /// Copy snapshot `i` into the working state.
    Restore(usize),
    /// Free snapshot `i`.
    Free(usize),
    /// Reverse step `i`: the working state holds state `i`.
    Reverse(usize),
}

/// A schedule with its counts.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The actions in order.
    pub actions: Vec<Action>,
    /// The number of leading actions that form the forward sweep (they
    /// end with the working state at state `n - 1`, before the first
    /// `Reverse`).
    pub forward_prefix: usize,
    /// Steps run again after the forward sweep.
    pub recomputed_steps: usize,
    /// The most snapshots held at once.
    pub max_snapshots: usize,
}

/// The schedule reversing `n >= 1` steps with `strategy`.
pub fn schedule(n: usize, strategy: Strategy) -> Schedule {
    let mut plan = Planner::default();
    if n > 0 {
        let snapshots = match strategy {
            Strategy::StoreAll => n,
            Strategy::Recompute => 1,
            Strategy::Revolve(k) => k.clamp(1, n),
        };
        plan.push(Action::Store(0));
        plan.reverse(0, n, snapshots - 1, true);
        plan.push(Action::Free(0));
    }
    let forward_prefix = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::Reverse(_)))
        .unwrap_or(plan.actions.len());
    let first_sweep: usize = advanced(&plan.actions[..forward_prefix]);
    let recomputed_steps = advanced(&plan.actions) - first_sweep;
    Schedule {
        actions: plan.actions,
        forward_prefix,
        recomputed_steps,
        max_snapshots: plan.max_held,
    }
}

/// The number of steps the `Advance` actions run.
fn advanced(actions: &[Action]) -> usize {
    actions
        .iter()
        .map(|a| match a {
            Action::Advance { from, to } => to - from,
            _ => 0,
        })
        .sum()
}

/// Builds a schedule.
#[derive(Default)]
struct Planner {
    actions: Vec<Action>,
    held: usize,
    max_held: usize,
}

impl Planner {
    fn push(&mut self, action: Action) {
        match action {
            Action::Store(_) => {
                self.held += 1;
                self.max_held = self.max_held.max(self.held);
            }
            Action::Free(_) => self.held -= 1,
            _ => {}
        }
        self.actions.push(action);
    }

    /// Reverses steps `a..b` given a snapshot of state `a` and `free` more
    /// snapshot slots; `current` says the working state already holds
    /// state `a`. The left-hand part loops; the right-hand part recurses,
    /// at most `free` deep (on a growing stack).
    fn reverse(&mut self, a: usize, mut b: usize, free: usize, mut current: bool) {
        while b > a {
            if free + 1 >= b - a {
                // Enough snapshots for every state: store them all.
                if !current {
                    self.push(Action::Restore(a));
                }
                for i in a + 1..b {
                    self.push(Action::Advance { from: i - 1, to: i });
                    self.push(Action::Store(i));
                }
                self.push(Action::Reverse(b - 1));
                for i in (a..b - 1).rev() {
                    self.push(Action::Free(i + 1));
                    self.push(Action::Restore(i));
                    self.push(Action::Reverse(i));
                }
                return;
            }
            if b - a == 1 {
                if !current {
                    self.push(Action::Restore(a));
                }
                self.push(Action::Reverse(a));
                return;
            }
            if free == 0 {
                // Recompute each state from state `a`.
                for i in (a..b).rev() {
                    if !current {
                        self.push(Action::Restore(a));
                    }
                    if i > a {
                        self.push(Action::Advance { from: a, to: i });
                    }
                    self.push(Action::Reverse(i));
                    current = false;
                }
                return;
            }
            let m = a + split(b - a, free + 1);
            if !current {
                self.push(Action::Restore(a));
            }
            self.push(Action::Advance { from: a, to: m });
            self.push(Action::Store(m));
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                self.reverse(m, b, free - 1, true);
            });
            self.push(Action::Free(m));
            // Now steps a..m remain, from the snapshot of state a.
            b = m;
            current = false;
        }
    }
}

/// Where revolve places the next snapshot when `steps` steps remain from
/// the current one and `snapshots` snapshots (the current one included)
/// are available: the offset of the next snapshot (Griewank and Walther,
/// Algorithm 799, the `advance` action).
fn split(steps: usize, snapshots: usize) -> usize {
    let s = snapshots as u128;
    let l = steps as u128;
    let (reps, range) = repetitions(l, s);
    let bino1 = range * reps / (s + reps);
    let bino2 = if s > 1 { bino1 * s / (s + reps - 1) } else { 1 };
    let bino3 = if s == 1 {
        0
    } else if s > 2 {
        bino2 * (s - 1) / (s + reps - 2)
    } else {
        1
    };
    let bino4 = bino2 * (reps - 1) / s;
    let bino5 = if s < 3 {
        0
    } else if s > 3 {
        bino3 * (s - 2) / reps
    } else {
        1
    };
    let offset = if l <= bino1 + bino3 {
        bino4
    } else if l >= range - bino5 {
        bino1
    } else {
        l - bino2 - bino3
    };
    (offset as usize).clamp(1, steps - 1)
}

/// The fewest steps any schedule with `snapshots` snapshots (state 0
/// included) recomputes to reverse `n` steps: `t n - C(s + t, t - 1) -
/// (n - 1)` with `t` the smallest integer such that `C(s + t, t) >= n`.
pub fn binomial_recomputations(n: usize, snapshots: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let s = snapshots.clamp(1, n) as u128;
    let l = n as u128;
    let (t, range) = repetitions(l, s);
    // C(s + t, t - 1) = C(s + t, t) * t / (s + 1).
    let total = t * l - range * t / (s + 1);
    (total - (l - 1)) as usize
}

/// The smallest `t` with `C(s + t, t) >= l` (how many times, at most, a
/// step runs with `s` snapshots), with `C(s + t, t)`.
fn repetitions(l: u128, s: u128) -> (u128, u128) {
    let mut t: u128 = 0;
    let mut range: u128 = 1;
    while range < l {
        t += 1;
        range = range * (t + s) / t;
    }
    (t, range)
}

#[cfg(test)]
mod tests;
