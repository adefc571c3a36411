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
//!   with `C(k + t, t) >= n`. Of the snapshot placements that reach that
//!   minimum, it takes the one ending in the longest sweeps (`split`), so
//!   backends run few, long stretches of steps.
//!
//! The actions up to the first `Reverse` are the forward sweep that
//! computes the loop's result. They are generated one at a time
//! (`Schedule::actions`), never held whole: a schedule for 10^8 steps
//! costs a stack as deep as its snapshots.

pub use crate::ir::loops::Strategy;

pub mod online;

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

/// One block of a schedule (`Schedule::blocks`): an action, or a part of
/// the revolve recursion small enough to run as direct calls
/// (`Blocks::run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// One action.
    Do(Action),
    /// Reverse steps `from..to` given a snapshot of state `from` (the
    /// newest) and `free` more snapshot slots; `current`: the working state
    /// holds state `from`.
    Revolve {
        /// The first step reversed.
        from: usize,
        /// One past the last step reversed.
        to: usize,
        /// Snapshot slots free besides `from`'s.
        free: usize,
        /// Whether the working state holds state `from`.
        current: bool,
    },
}

/// The actions a sweep stands for (`Steps::sweep`): from state `from`,
/// advance one step at a time storing states `from + 1..to - 1`, reverse
/// step `to - 1` from the working state, then steps `to - 2` down to
/// `from`, each from its snapshot, freeing the states stored here; the
/// working state ends holding state `from`. A sweep of `l` steps holds
/// `l - 1` snapshots, state `from`'s included: the last state lives in the
/// working state only.
pub fn sweep_actions(from: usize, to: usize) -> impl Iterator<Item = Action> {
    let last = to.saturating_sub(1);
    let forward = (from + 1..to).flat_map(move |i| {
        std::iter::once(Action::Advance { from: i - 1, to: i })
            .chain((i < last).then_some(Action::Store(i)))
    });
    let reverse_last = (to > from).then_some(Action::Reverse(last));
    let back = (from..last).rev().flat_map(move |i| {
        (i + 1 < last)
            .then_some(Action::Free(i + 1))
            .into_iter()
            .chain([Action::Restore(i), Action::Reverse(i)])
    });
    forward.chain(reverse_last).chain(back)
}

/// A backend taking a schedule's actions as direct calls (`Blocks::run`),
/// for loops whose steps cost nanoseconds, where generating actions one at
/// a time would cost more than running them.
pub trait Steps {
    /// Takes one action.
    fn action(&mut self, action: Action);
    /// The actions of `sweep_actions(from, to)`, which a backend may run
    /// as one tight loop: states `from..to - 1` each get a snapshot, and
    /// state `to - 1` is in the working state when step `to - 1` is
    /// reversed (a backend reversing the run as one trail may keep it as a
    /// snapshot too, one slot more than the schedule counts).
    fn sweep(&mut self, from: usize, to: usize) {
        for action in sweep_actions(from, to) {
            self.action(action);
        }
    }
}

/// The most free snapshots of a `Block::Revolve` (its recursion is at
/// most this deep).
const DIRECT_DEPTH: usize = 1024;

/// A backend reversing a loop: it takes a schedule's actions on its own
/// values (`reverse_with`, `online::reverse_online`).
pub trait Reversal {
    /// A failure of the backend.
    type Error;
    /// Whether the loop, its working state holding state `i`, runs step
    /// `i` (a `while-loop`'s condition; an error past its `:max-steps`).
    fn go_on(&mut self, i: usize) -> Result<bool, Self::Error>;
    /// Takes one action.
    fn apply(&mut self, action: Action) -> Result<(), Self::Error>;
    /// The forward sweep is over: later advances are recomputations.
    fn reversing(&mut self);
    /// Whether an interrupt asks to stop.
    fn cancelled(&self) -> bool;
}

/// Takes every action of `schedule` on a backend (stopping early when it
/// is interrupted), the small parts of the recursion as direct calls
/// (`Schedule::blocks`).
pub fn reverse_with<R: Reversal>(reversal: &mut R, schedule: &Schedule) -> Result<(), R::Error> {
    let mut taking = Taking {
        reversal,
        failure: None,
        reversed: false,
        taken: 0,
        stopped: false,
    };
    let mut blocks = schedule.blocks();
    while let Some(block) = blocks.next() {
        if taking.failure.is_some() || taking.stopped {
            break;
        }
        blocks.run(block, &mut taking);
    }
    match taking.failure {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// A `Reversal` taking actions as `Steps`: the first failure is kept and
/// ends the run, as does an interrupt (looked up every 64 actions).
struct Taking<'a, R: Reversal> {
    reversal: &'a mut R,
    failure: Option<R::Error>,
    reversed: bool,
    taken: usize,
    stopped: bool,
}

impl<R: Reversal> Steps for Taking<'_, R> {
    fn action(&mut self, action: Action) {
        if self.failure.is_some() || self.stopped {
            return;
        }
        self.taken += 1;
        if self.taken.is_multiple_of(64) && self.reversal.cancelled() {
            self.stopped = true;
            return;
        }
        if !self.reversed && matches!(action, Action::Reverse(_)) {
            self.reversed = true;
            self.reversal.reversing();
        }
        if let Err(failure) = self.reversal.apply(action) {
            self.failure = Some(failure);
        }
    }
}

/// A schedule: its counts, and its actions generated one at a time
/// (`actions`), so a schedule for any number of steps takes memory for
/// its snapshots' bookkeeping only (a stack as deep as the snapshots), not
/// for its actions.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The number of steps reversed.
    n: usize,
    /// Snapshot slots, state 0's included.
    snapshots: usize,
    /// Steps run again after the forward sweep.
    pub recomputed_steps: usize,
    /// The most snapshots held at once.
    pub max_snapshots: usize,
}

/// The schedule reversing `n >= 1` steps with `strategy`.
pub fn schedule(n: usize, strategy: Strategy) -> Schedule {
    let snapshots = match strategy {
        Strategy::StoreAll => n,
        Strategy::Recompute => 1,
        Strategy::Revolve(k) => k.clamp(1, n.max(1)),
    };
    let recomputed_steps = match strategy {
        Strategy::StoreAll => 0,
        Strategy::Recompute => n.saturating_sub(1) * n.saturating_sub(2) / 2,
        Strategy::Revolve(_) => binomial_recomputations(n, snapshots),
    };
    Schedule {
        n,
        snapshots,
        recomputed_steps,
        // A sweep's last state lives in the working state only.
        max_snapshots: if n == 0 {
            0
        } else {
            snapshots.min(n - 1).max(1)
        },
    }
}

impl Schedule {
    /// The actions in order: the forward sweep (up to the first
    /// `Reverse`), then the reverse with its recomputations.
    pub fn actions(&self) -> Actions {
        Actions(self.generate(false))
    }

    /// The same schedule in blocks: each part of the recursion with at
    /// most `DIRECT_DEPTH` free snapshots comes as one `Block::Revolve`,
    /// which `Blocks::run` takes as direct calls.
    pub fn blocks(&self) -> Blocks {
        self.generate(true)
    }

    fn generate(&self, sweeps: bool) -> Blocks {
        let mut actions = Blocks {
            pending: std::collections::VecDeque::new(),
            frames: Vec::new(),
            sweeps,
        };
        if self.n > 0 {
            actions.pending.push_back(Block::Do(Action::Store(0)));
            actions.frames.push(Frame::Free(0));
            actions.frames.push(Frame::Reverse {
                a: 0,
                b: self.n,
                free: self.snapshots - 1,
                current: true,
            });
        }
        actions
    }
}

/// A schedule's actions, generated as they are taken.
pub struct Actions(Blocks);

impl Iterator for Actions {
    type Item = Action;

    fn next(&mut self) -> Option<Action> {
        match self.0.next()? {
            Block::Do(action) => Some(action),
            Block::Revolve { .. } => unreachable!("a schedule's actions come one at a time"),
        }
    }
}

/// A schedule's blocks, generated as they are taken: Griewank and
/// Walther's revolve recursion run on an explicit stack of `Frame`s.
pub struct Blocks {
    /// Blocks generated and not yet taken (a few at a time).
    pending: std::collections::VecDeque<Block>,
    /// What is left to do, innermost last.
    frames: Vec<Frame>,
    /// Whether small parts of the recursion come as `Block::Revolve`.
    sweeps: bool,
}

/// Work left in generating a schedule.
enum Frame {
    /// Reverse steps `a..b` given a snapshot of state `a` and `free` more
    /// snapshot slots; `current`: the working state holds state `a`.
    Reverse {
        a: usize,
        b: usize,
        free: usize,
        current: bool,
    },
    /// Steps `m..b` are reversed: free snapshot `m`, then reverse `a..m`.
    Resume { a: usize, m: usize, free: usize },
    /// Enough snapshots for every state of `a..b - 1`: advance to state
    /// `i` and store it (but state `b - 1`), then the next, then reverse
    /// step `b - 1` from the working state.
    StoreEach { a: usize, b: usize, i: usize },
    /// Reverse steps `a..next` from their snapshots, last first; `held`:
    /// state `next` has a snapshot to free first.
    FromSnapshots { a: usize, next: usize, held: bool },
    /// No free slot: reverse steps `a..next`, last first, each recomputed
    /// from state `a`.
    FromStart {
        a: usize,
        next: usize,
        current: bool,
    },
    /// Free snapshot `i`.
    Free(usize),
}

impl Iterator for Blocks {
    type Item = Block;

    fn next(&mut self) -> Option<Block> {
        loop {
            if let Some(action) = self.pending.pop_front() {
                return Some(action);
            }
            let frame = self.frames.pop()?;
            self.expand(frame);
        }
    }
}

impl Blocks {
    /// Takes `block` on `steps`: the actions `Schedule::actions` generates
    /// in its place, as direct calls, with each run of steps that have a
    /// snapshot each as one `Steps::sweep`.
    pub fn run<S: Steps>(&self, block: Block, steps: &mut S) {
        match block {
            Block::Do(action) => steps.action(action),
            Block::Revolve {
                from,
                to,
                free,
                current,
            } => self.revolve(steps, from, to, free, current),
        }
    }

    /// The recursion of `Frame::Reverse`, as calls (at most `free` deep).
    fn revolve<S: Steps>(&self, steps: &mut S, a: usize, b: usize, free: usize, current: bool) {
        let (mut b, mut current) = (b, current);
        // The second half of each split is a loop, not a call.
        loop {
            if b <= a {
                return;
            }
            if !current && (b - a <= free + 2 || free > 0) {
                steps.action(Action::Restore(a));
            }
            if b - a <= free + 2 {
                return steps.sweep(a, b);
            }
            if free == 0 {
                for i in (a..b).rev() {
                    if !current {
                        steps.action(Action::Restore(a));
                    }
                    if i > a {
                        steps.action(Action::Advance { from: a, to: i });
                    }
                    steps.action(Action::Reverse(i));
                    current = false;
                }
                return;
            }
            let m = a + split(b - a, free + 1);
            steps.action(Action::Advance { from: a, to: m });
            steps.action(Action::Store(m));
            self.revolve(steps, m, b, free - 1, true);
            steps.action(Action::Free(m));
            b = m;
            current = false;
        }
    }

    fn emit(&mut self, action: Action) {
        self.pending.push_back(Block::Do(action));
    }

    /// Generates the next few actions of `frame`, leaving what remains of
    /// it (and what it starts) on the stack.
    fn expand(&mut self, frame: Frame) {
        match frame {
            Frame::Reverse {
                a,
                b,
                free,
                current,
            } => {
                if b <= a {
                    return;
                }
                if self.sweeps && free <= DIRECT_DEPTH {
                    self.pending.push_back(Block::Revolve {
                        from: a,
                        to: b,
                        free,
                        current,
                    });
                    return;
                }
                if !current && (b - a <= free + 2 || free > 0) {
                    self.emit(Action::Restore(a));
                }
                if b - a <= free + 2 {
                    self.frames.push(Frame::StoreEach { a, b, i: a + 1 });
                } else if free == 0 {
                    self.frames.push(Frame::FromStart {
                        a,
                        next: b,
                        current,
                    });
                } else {
                    let m = a + split(b - a, free + 1);
                    self.emit(Action::Advance { from: a, to: m });
                    self.emit(Action::Store(m));
                    self.frames.push(Frame::Resume { a, m, free });
                    self.frames.push(Frame::Reverse {
                        a: m,
                        b,
                        free: free - 1,
                        current: true,
                    });
                }
            }
            Frame::Resume { a, m, free } => {
                self.emit(Action::Free(m));
                self.frames.push(Frame::Reverse {
                    a,
                    b: m,
                    free,
                    current: false,
                });
            }
            Frame::StoreEach { a, b, i } => {
                if i < b {
                    self.emit(Action::Advance { from: i - 1, to: i });
                    if i + 1 < b {
                        self.emit(Action::Store(i));
                    }
                    self.frames.push(Frame::StoreEach { a, b, i: i + 1 });
                } else {
                    self.emit(Action::Reverse(b - 1));
                    self.frames.push(Frame::FromSnapshots {
                        a,
                        next: b - 1,
                        held: false,
                    });
                }
            }
            Frame::FromSnapshots { a, next, held } => {
                if next > a {
                    let i = next - 1;
                    if held {
                        self.emit(Action::Free(i + 1));
                    }
                    self.emit(Action::Restore(i));
                    self.emit(Action::Reverse(i));
                    self.frames.push(Frame::FromSnapshots {
                        a,
                        next: i,
                        held: true,
                    });
                }
            }
            Frame::FromStart { a, next, current } => {
                if next > a {
                    let i = next - 1;
                    if !current {
                        self.emit(Action::Restore(a));
                    }
                    if i > a {
                        self.emit(Action::Advance { from: a, to: i });
                    }
                    self.emit(Action::Reverse(i));
                    self.frames.push(Frame::FromStart {
                        a,
                        next: i,
                        current: false,
                    });
                }
            }
            Frame::Free(i) => self.emit(Action::Free(i)),
        }
    }
}

/// Where to place the next snapshot when `steps` steps remain from the
/// current one and `snapshots` snapshot slots (the current one's
/// included) are available: the largest offset at which the schedule
/// still recomputes the fewest steps.
///
/// With `T(l, k)` the fewest steps that reverse `l` steps with `k` slots
/// take (`binomial_recomputations` plus `l - 1`), placing the snapshot at
/// offset `o` costs `c(o) = o + T(l - o, k - 1) + T(o, k)`. `T(x, k)` is
/// convex in `x` with slope `t_k(x)`, the smallest `t` with
/// `C(k + t, t) >= x`, so `c` is convex and `c(o) <= c(o - 1)` exactly
/// when `t_k(o) < t_{k-1}(l - o + 1)`: when, for some `t`,
/// `o <= C(k + t, t)` and `o <= l - C(k - 1 + t, t)`. The largest such
/// `o` ends the flat bottom of `c`.
///
/// Any offset there is optimal (Griewank and Walther's revolve picks
/// another); the largest leaves the most steps to the part reversed
/// last, which ends in sweeps of up to `free + 2` steps: a loop of cheap
/// steps reversed with a few hundred snapshots runs a few hundred long
/// sweeps instead of tens of thousands of two-step ones.
fn split(steps: usize, snapshots: usize) -> usize {
    let (l, k) = (steps as u128, snapshots as u128);
    // C(k + t, t) and C(k - 1 + t, t), from t = 0 up; every product
    // below is under 2^128 (a binomial under `l`, times `k + t`).
    let (mut left, mut right) = (1u128, 1u128);
    let mut best = 1u128;
    let mut t = 0u128;
    loop {
        let room = l.saturating_sub(right);
        best = best.max(left.min(room));
        if left >= room {
            break;
        }
        t += 1;
        left = left * (k + t) / t;
        right = right * (k - 1 + t) / t;
    }
    (best as usize).clamp(1, steps - 1)
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
