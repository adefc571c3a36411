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
        assert_eq!(s.max_snapshots, n);
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
            deepest = deepest.max(actions.frames.len());
            most_pending = most_pending.max(actions.pending.len());
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
