//! Schedules are checked by running them on indices: every step reversed
//! once, in order, from the right state, never more snapshots than
//! allowed; revolve's recomputations equal the binomial formula and an
//! independent dynamic program.

use super::*;

/// Runs `schedule` symbolically and checks it; returns the steps run by
/// `Advance` actions.
fn run(n: usize, schedule: &Schedule, limit: usize) -> usize {
    let mut working: Option<usize> = Some(0);
    let mut held: Vec<usize> = Vec::new();
    let mut next_reverse = n;
    let mut steps = 0;
    let mut most_held = 0;
    for (at, action) in schedule.actions().enumerate() {
        if matches!(action, Action::Reverse(_)) && next_reverse == n {
            assert_eq!(working, Some(n - 1), "the forward sweep ends at n - 1");
        }
        match action {
            Action::Advance { from, to } => {
                assert_eq!(working, Some(from), "action {at}: {action:?}");
                assert!(to > from && to < n);
                steps += to - from;
                working = Some(to);
            }
            Action::Store(i) => {
                assert_eq!(working, Some(i), "action {at}: {action:?}");
                assert!(!held.contains(&i));
                held.push(i);
                most_held = most_held.max(held.len());
                assert!(
                    held.len() <= limit,
                    "{} snapshots, limit {limit}",
                    held.len()
                );
            }
            Action::Restore(i) => {
                assert!(held.contains(&i), "action {at}: {action:?} not held");
                working = Some(i);
            }
            Action::Free(i) => {
                let k = held.iter().position(|&h| h == i).expect("held");
                held.remove(k);
            }
            Action::Reverse(i) => {
                assert_eq!(working, Some(i), "action {at}: {action:?}");
                assert_eq!(i + 1, next_reverse, "steps reversed in order");
                next_reverse = i;
                // Reversing consumes the working state.
                working = None;
            }
        }
    }
    assert_eq!(next_reverse, 0, "every step reversed");
    assert!(held.is_empty(), "snapshots left: {held:?}");
    assert_eq!(
        most_held, schedule.max_snapshots,
        "the snapshots held at most"
    );
    steps
}

/// The fewest total forward steps to reverse `l` steps from a held state
/// with `free` more snapshots (dynamic programming over split points).
fn optimum(max_l: usize, max_free: usize) -> Vec<Vec<usize>> {
    let mut g = vec![vec![0usize; max_free + 1]; max_l + 1];
    for l in 1..=max_l {
        for f in 0..=max_free {
            g[l][f] = if l == 1 {
                0
            } else if f == 0 {
                l * (l - 1) / 2
            } else {
                (1..l).map(|m| m + g[l - m][f - 1] + g[m][f]).min().unwrap()
            };
        }
    }
    g
}

#[test]
fn revolve_recomputes_the_binomial_minimum() {
    let g = optimum(70, 9);
    for n in 1..=70 {
        for k in 1..=10 {
            let s = schedule(n, Strategy::Revolve(k));
            let steps = run(n, &s, k);
            assert_eq!(steps, g[n][k.min(n) - 1], "n = {n}, k = {k}: total steps");
            assert_eq!(steps - (n - 1), s.recomputed_steps, "n = {n}, k = {k}");
            assert_eq!(
                s.recomputed_steps,
                binomial_recomputations(n, k),
                "n = {n}, k = {k}: formula"
            );
            assert!(s.max_snapshots <= k);
        }
    }
}

#[test]
fn store_all_and_recompute_are_the_extremes() {
    for n in [1usize, 2, 3, 10, 57] {
        let s = schedule(n, Strategy::StoreAll);
        run(n, &s, n);
        assert_eq!(s.recomputed_steps, 0);
        // Every state but the last, which the working state holds.
        assert_eq!(s.max_snapshots, (n - 1).max(1));
        let s = schedule(n, Strategy::Recompute);
        run(n, &s, 1);
        assert_eq!(s.recomputed_steps, (n - 1) * n.saturating_sub(2) / 2);
        assert_eq!(s.max_snapshots, 1);
    }
}

#[test]
fn long_loops_schedule_quickly_within_their_snapshots() {
    for (n, k) in [
        (100_000, 317),
        (10_000, 100),
        (10_000, 3),
        (100_000, 100_000),
    ] {
        let s = schedule(n, Strategy::Revolve(k));
        run(n, &s, k);
        assert_eq!(
            s.recomputed_steps,
            binomial_recomputations(n, k),
            "n = {n}, k = {k}"
        );
    }
}

/// Actions are generated as they are taken: while a schedule of a million
/// steps runs, the generator holds a stack no deeper than its snapshots
/// and a handful of pending actions, whatever the number of steps.
#[test]
fn actions_are_generated_in_memory_bounded_by_the_snapshots() {
    for (n, strategy, k) in [
        (1_000_000, Strategy::Revolve(20), 20),
        (1_000_000, Strategy::Revolve(3), 3),
        (3_000, Strategy::Recompute, 1),
        (100_000, Strategy::StoreAll, 100_000),
    ] {
        let s = schedule(n, strategy);
        let mut actions = s.actions();
        let (mut deepest, mut most_pending, mut count) = (0, 0, 0usize);
        while actions.next().is_some() {
            deepest = deepest.max(actions.0.frames.len());
            most_pending = most_pending.max(actions.0.pending.len());
            count += 1;
        }
        assert!(
            deepest <= k.min(64) + 2,
            "{strategy:?}: a stack {deepest} deep"
        );
        assert!(most_pending <= 3, "{strategy:?}: {most_pending} pending");
        assert!(count >= 2 * n, "{strategy:?}: {count} actions");
    }
}

/// Runs an online schedule for a loop that stops after `n` steps, checking
/// every action as `run` does; returns the steps recomputed after the
/// forward sweep and the most snapshots held.
fn run_online(n: usize, k: usize) -> (usize, usize) {
    let mut online = online::Online::new(k);
    let mut held: Vec<usize> = Vec::new();
    let mut most_held = 0;
    let mut forward = Vec::new();
    for i in 0..n {
        forward.clear();
        online.before_step(i, &mut forward);
        for action in &forward {
            match *action {
                Action::Store(j) => {
                    assert_eq!(j, i);
                    held.push(j);
                }
                Action::Free(j) => {
                    assert!(held.contains(&j), "freeing {j}, not held");
                    held.retain(|&h| h != j);
                }
                other => panic!("forward action {other:?}"),
            }
            most_held = most_held.max(held.len());
            assert!(held.len() <= k, "n {n} k {k}: {} held", held.len());
        }
    }
    let mut working = n;
    let mut next_reverse = n;
    let mut recomputed = 0;
    for action in online.reverse(n) {
        match action {
            Action::Advance { from, to } => {
                assert_eq!(working, from, "{action:?}");
                assert!(to > from && to < next_reverse);
                recomputed += to - from;
                working = to;
            }
            Action::Store(i) => {
                assert_eq!(working, i, "{action:?}");
                assert!(!held.contains(&i));
                held.push(i);
            }
            Action::Restore(i) => {
                assert!(held.contains(&i), "{action:?} not held");
                working = i;
            }
            Action::Free(i) => {
                assert!(held.contains(&i), "{action:?} not held");
                held.retain(|&h| h != i);
            }
            Action::Reverse(i) => {
                assert_eq!(i + 1, next_reverse, "reversed out of order");
                assert_eq!(working, i, "{action:?}");
                next_reverse = i;
            }
        }
        most_held = most_held.max(held.len());
        assert!(held.len() <= k, "n {n} k {k}: {} held", held.len());
    }
    assert_eq!(next_reverse, 0, "n {n} k {k}: every step reversed");
    assert!(held.is_empty(), "n {n} k {k}: {held:?} left");
    (recomputed, most_held)
}

#[test]
fn online_schedules_reverse_every_step_within_their_snapshots() {
    for n in 0..70 {
        for k in 1..9 {
            run_online(n, k);
        }
    }
    for (n, k) in [(1000, 4), (4097, 10), (100_000, 32), (12345, 2)] {
        let (recomputed, most) = run_online(n, k);
        assert!(most <= k);
        // Within a small factor of the offline optimum for the same
        // memory (and never worse than recomputing each segment's states
        // from its start).
        let offline = binomial_recomputations(n, k);
        assert!(
            recomputed <= 4 * offline + n,
            "n {n} k {k}: {recomputed} recomputed, offline {offline}"
        );
    }
}

/// The memory of an online schedule does not grow with the loop: a
/// million steps with eight snapshots hold eight.
#[test]
fn online_schedules_hold_at_most_their_snapshots_for_any_length() {
    let (_, most) = run_online(1_000_000, 8);
    assert!(most <= 8, "{most}");
}

/// `split` places each snapshot at the largest offset of least cost,
/// found here by trying every offset.
#[test]
fn splits_take_the_largest_cheapest_offset() {
    // The fewest steps reversing `l` steps with `k` slots runs.
    let least = |l: usize, k: usize| {
        if l <= 1 {
            0
        } else {
            binomial_recomputations(l, k) + l - 1
        }
    };
    for l in 3..260 {
        for k in 2..(l - 1).min(40) {
            let cost = |o: usize| o + least(l - o, k - 1) + least(o, k);
            let best = (1..l).map(cost).min().unwrap();
            let largest = (1..l).rev().find(|&o| cost(o) == best).unwrap();
            assert_eq!(split(l, k), largest, "{l} steps, {k} snapshots");
        }
    }
    // Far past 64-bit binomials, the split still lands inside the range.
    let huge = usize::MAX / 2;
    let o = split(huge, 3);
    assert!(o >= 1 && o < huge);
}

/// A loop of cheap steps reversed with a few hundred snapshots runs a
/// few hundred sweeps, not one per two steps.
#[test]
fn schedules_reverse_in_long_sweeps() {
    #[derive(Default)]
    struct Sweeps {
        count: usize,
        steps: usize,
    }
    impl Steps for Sweeps {
        fn action(&mut self, _: Action) {}
        fn sweep(&mut self, from: usize, to: usize) {
            self.count += 1;
            self.steps += to - from;
        }
    }
    let s = schedule(100_000, Strategy::Revolve(317));
    let mut sweeps = Sweeps::default();
    let mut blocks = s.blocks();
    while let Some(block) = blocks.next() {
        blocks.run(block, &mut sweeps);
    }
    assert!(sweeps.count < 1000, "{} sweeps", sweeps.count);
    assert!(sweeps.steps > 99_000, "{} steps in sweeps", sweeps.steps);
}

/// Records the actions `Blocks::run` calls for.
#[derive(Default)]
struct Recorder(Vec<Action>);

impl Steps for Recorder {
    fn action(&mut self, action: Action) {
        self.0.push(action);
    }
}

#[test]
fn blocks_run_the_same_actions() {
    let mut cases: Vec<(usize, usize)> = Vec::new();
    for n in 1..60 {
        for k in [1, 2, 3, 5, 8, 59, 70] {
            cases.push((n, k));
        }
    }
    // Parts of the recursion too deep to run as calls come as actions.
    cases.extend([(5000, 2000), (100_000, 317)]);
    for (n, k) in cases {
        for strategy in [
            Strategy::Revolve(k),
            Strategy::StoreAll,
            Strategy::Recompute,
        ] {
            let s = schedule(n, strategy);
            let mut recorder = Recorder::default();
            let mut blocks = s.blocks();
            let mut count = 0;
            while let Some(block) = blocks.next() {
                blocks.run(block, &mut recorder);
                count += 1;
            }
            let actions: Vec<Action> = s.actions().collect();
            assert_eq!(recorder.0, actions, "n {n}, {strategy:?}");
            if n > 1000 && k <= DIRECT_DEPTH && strategy == Strategy::Revolve(k) {
                assert!(count * 100 < actions.len(), "{count} blocks");
            }
        }
    }
}
