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
/// advance one step at a time storing states `from + 1..to`, then reverse
/// steps `to - 1` down to `from`, each from its state, freeing the states
/// stored here; the working state ends holding state `from`.
pub fn sweep_actions(from: usize, to: usize) -> impl Iterator<Item = Action> {
    let forward =
        (from + 1..to).flat_map(|i| [Action::Advance { from: i - 1, to: i }, Action::Store(i)]);
    let last = (to > from).then_some(Action::Reverse(to.saturating_sub(1)));
    let back = (from..to.saturating_sub(1))
        .rev()
        .flat_map(|i| [Action::Free(i + 1), Action::Restore(i), Action::Reverse(i)]);
    forward.chain(last).chain(back)
}

/// A backend taking a schedule's actions as direct calls (`Blocks::run`),
/// for loops whose steps cost nanoseconds, where generating actions one at
/// a time would cost more than running them.
pub trait Steps {
    /// Takes one action.
    fn action(&mut self, action: Action);
    /// The actions of `sweep_actions(from, to)`, which a backend may run
    /// as one tight loop: states `from..to` each get a snapshot.
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
        max_snapshots: if n == 0 { 0 } else { snapshots.min(n) },
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
            binomials: Binomials::new(self.n, self.snapshots),
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
    /// The binomials revolve's splits read, where they fit a small table.
    binomials: Option<Binomials>,
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
    /// Enough snapshots for every state of `a..b`: advance to and store
    /// state `i`, then the next, then reverse step `b - 1`.
    StoreEach { a: usize, b: usize, i: usize },
    /// Reverse steps `a..next` from their snapshots, last first.
    FromSnapshots { a: usize, next: usize },
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
            if !current && (free + 1 >= b - a || b - a == 1 || free > 0) {
                steps.action(Action::Restore(a));
            }
            if free + 1 >= b - a {
                return steps.sweep(a, b);
            }
            if b - a == 1 {
                return steps.action(Action::Reverse(a));
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
            let m = a + match &self.binomials {
                Some(table) => table.split(b - a, free + 1),
                None => split(b - a, free + 1),
            };
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
                if !current && (free + 1 >= b - a || b - a == 1 || free > 0) {
                    self.emit(Action::Restore(a));
                }
                if free + 1 >= b - a {
                    self.frames.push(Frame::StoreEach { a, b, i: a + 1 });
                } else if b - a == 1 {
                    self.emit(Action::Reverse(a));
                } else if free == 0 {
                    self.frames.push(Frame::FromStart {
                        a,
                        next: b,
                        current,
                    });
                } else {
                    let m = a + match &self.binomials {
                        Some(table) => table.split(b - a, free + 1),
                        None => split(b - a, free + 1),
                    };
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
                    self.emit(Action::Store(i));
                    self.frames.push(Frame::StoreEach { a, b, i: i + 1 });
                } else {
                    self.emit(Action::Reverse(b - 1));
                    self.frames.push(Frame::FromSnapshots { a, next: b - 1 });
                }
            }
            Frame::FromSnapshots { a, next } => {
                if next > a {
                    let i = next - 1;
                    self.emit(Action::Free(i + 1));
                    self.emit(Action::Restore(i));
                    self.emit(Action::Reverse(i));
                    self.frames.push(Frame::FromSnapshots { a, next: i });
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

/// Where revolve places the next snapshot when `steps` steps remain from
/// the current one and `snapshots` snapshots (the current one included)
/// are available: the offset of the next snapshot (Griewank and Walther,
/// Algorithm 799, the `advance` action). Computed in 64-bit arithmetic
/// where no intermediate can overflow it (fewer than 2^24 steps and 2^16
/// snapshots: every product below stays under 2^63), 128-bit otherwise;
/// it runs once per snapshot placed, so its divisions are a visible part
/// of reversing a loop of cheap steps.
fn split(steps: usize, snapshots: usize) -> usize {
    let offset = if steps < 1 << 24 && snapshots < 1 << 16 {
        revolve_offset!(u64, steps, snapshots) as usize
    } else {
        revolve_offset!(u128, steps, snapshots) as usize
    };
    offset.clamp(1, steps - 1)
}

/// The binomials `beta(s, t) = C(s + t, t)` revolve's splits read, for
/// `s` up to a schedule's snapshots and `t` up to the repetitions it
/// needs, so a split is a few lookups instead of a dozen divisions (a
/// loop of cheap steps places one snapshot every two steps or so, and
/// the divisions were most of its reverse).
#[derive(Clone, Debug)]
struct Binomials {
    /// `snapshots + 1`: the length of a row.
    width: usize,
    /// Row `t` holds `beta(0..=snapshots, t)`.
    rows: Vec<u64>,
}

impl Binomials {
    /// The table for `n` steps and `snapshots` snapshots, where it has
    /// at most 2^20 entries that fit 64 bits.
    fn new(n: usize, snapshots: usize) -> Option<Binomials> {
        let width = snapshots.checked_add(1)?;
        let mut rows = vec![1u64; width];
        let mut t = 0;
        while rows[t * width + snapshots] < n as u64 {
            if rows.len() + width > 1 << 20 {
                return None;
            }
            t += 1;
            // Pascal's rule: beta(s, t) = beta(s, t - 1) + beta(s - 1, t).
            let mut left = 0u64;
            for s in 0..width {
                left = left.checked_add(rows[(t - 1) * width + s])?;
                rows.push(left);
            }
        }
        Some(Binomials { width, rows })
    }

    /// `beta(s, t)`, zero for `s < 0` or `t < 0`; `None` past the table.
    fn beta(&self, s: isize, t: isize) -> Option<u64> {
        if s < 0 || t < 0 {
            return Some(0);
        }
        let (s, t) = (s as usize, t as usize);
        (s < self.width)
            .then(|| self.rows.get(t * self.width + s).copied())
            .flatten()
    }

    /// `split(steps, snapshots)` from the table (falling back to the
    /// arithmetic past it).
    fn split(&self, steps: usize, snapshots: usize) -> usize {
        self.offset(steps, snapshots)
            .map(|offset| offset.clamp(1, steps - 1))
            .unwrap_or_else(|| split(steps, snapshots))
    }

    /// `revolve_offset!` with its binomials looked up.
    fn offset(&self, steps: usize, snapshots: usize) -> Option<usize> {
        let (l, s) = (steps as u64, snapshots as isize);
        let mut t: isize = 0;
        let range = loop {
            let range = self.beta(s, t)?;
            if range >= l {
                break range;
            }
            t += 1;
        };
        let bino1 = self.beta(s, t - 1)?;
        let bino2 = self.beta(s - 1, t - 1)?;
        let bino3 = self.beta(s - 2, t - 1)?;
        let bino4 = self.beta(s, t - 2)?;
        let bino5 = self.beta(s - 3, t)?;
        let offset = if l <= bino1 + bino3 {
            bino4
        } else if l >= range - bino5 {
            bino1
        } else {
            l - bino2 - bino3
        };
        Some(offset as usize)
    }
}

/// The body of `split` in the integer type `$t`.
macro_rules! revolve_offset {
    ($t:ty, $steps:expr, $snapshots:expr) => {{
        let s = $snapshots as $t;
        let l = $steps as $t;
        // The smallest `reps` with C(s + reps, reps) >= l, and that
        // binomial.
        let (mut reps, mut range): ($t, $t) = (0, 1);
        while range < l {
            reps += 1;
            range = range * (reps + s) / reps;
        }
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
        if l <= bino1 + bino3 {
            bino4
        } else if l >= range - bino5 {
            bino1
        } else {
            l - bino2 - bino3
        }
    }};
}
use revolve_offset;

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
