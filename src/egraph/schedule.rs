//! The rule scheduler of saturation runs: egg's `BackoffScheduler` (a rule
//! that matches more often than its limit is banned for some iterations,
//! its limit and ban doubling each time), with an iteration's rules
//! searched in parallel.
//!
//! Searching reads the e-graph only, and the bookkeeping (bans, limits)
//! runs after the searches in rule order, so a run takes the same steps as
//! under egg's scheduler. One difference: a time limit passed during the
//! search is noticed after it, not between two rules.

use egg::{
    Analysis, EGraph, Language, Rewrite, RewriteScheduler, RunnerLimits, RunnerResult,
    SearchMatches, Symbol,
};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// egg's backoff scheduling, searching in parallel.
#[derive(Default)]
pub struct ParallelBackoff {
    stats: FxHashMap<Symbol, RuleStats>,
}

/// What the scheduler knows of one rule (egg's `RuleStats`).
struct RuleStats {
    banned_until: usize,
    times_banned: usize,
}

/// egg's defaults: a limit of 1,000 matches, bans of 5 iterations.
const MATCH_LIMIT: usize = 1_000;
const BAN_LENGTH: usize = 5;

impl ParallelBackoff {
    fn stats(&mut self, name: Symbol) -> &mut RuleStats {
        self.stats.entry(name).or_insert(RuleStats {
            banned_until: 0,
            times_banned: 0,
        })
    }
}

impl<L, N> RewriteScheduler<L, N> for ParallelBackoff
where
    L: Language + Send + Sync,
    L::Discriminant: Sync,
    N: Analysis<L> + Sync,
    N::Data: Sync,
{
    /// As egg's: with rules banned, the bans are moved forward so the
    /// first ends now, and the run goes on.
    fn can_stop(&mut self, iteration: usize) -> bool {
        let Some(first) = self
            .stats
            .values()
            .filter(|s| s.banned_until > iteration)
            .map(|s| s.banned_until)
            .min()
        else {
            return true;
        };
        let delta = first - iteration;
        for s in self.stats.values_mut() {
            if s.banned_until > iteration {
                s.banned_until -= delta;
            }
        }
        false
    }

    fn search_rewrites<'a>(
        &mut self,
        iteration: usize,
        egraph: &EGraph<L, N>,
        rewrites: &[&'a Rewrite<L, N>],
        limits: &RunnerLimits,
    ) -> RunnerResult<Vec<Vec<SearchMatches<'a, L>>>> {
        // Each rule not banned is searched up to one match past its limit.
        let thresholds: Vec<Option<usize>> = rewrites
            .iter()
            .map(|rewrite| {
                let stats = self.stats(rewrite.name);
                let limit = MATCH_LIMIT
                    .checked_shl(stats.times_banned as u32)
                    .unwrap_or(usize::MAX);
                (iteration >= stats.banned_until).then_some(limit)
            })
            .collect();
        let found: Vec<Vec<SearchMatches<'a, L>>> = rewrites
            .par_iter()
            .zip(&thresholds)
            .map(|(rewrite, threshold)| match threshold {
                Some(limit) => rewrite.search_with_limit(egraph, limit.saturating_add(1)),
                None => Vec::new(),
            })
            .collect();
        let mut matches = Vec::with_capacity(rewrites.len());
        for ((rewrite, threshold), found) in rewrites.iter().zip(thresholds).zip(found) {
            let Some(limit) = threshold else {
                matches.push(Vec::new());
                continue;
            };
            let count: usize = found.iter().map(|m| m.substs.len()).sum();
            if count > limit {
                let stats = self.stats(rewrite.name);
                let ban = BAN_LENGTH
                    .checked_shl(stats.times_banned as u32)
                    .unwrap_or(usize::MAX);
                stats.banned_until = iteration.saturating_add(ban);
                stats.times_banned += 1;
                matches.push(Vec::new());
            } else {
                matches.push(found);
            }
        }
        limits.check_limits(iteration, egraph)?;
        Ok(matches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph::extract::extract;
    use crate::egraph::{FactsAnalysis, Math, all_rules};
    use egg::{BackoffScheduler, RecExpr, Runner};
    use std::time::Duration;

    /// Each iteration's e-graph size and rules applied, and the program
    /// extracted at the end.
    type Steps = (Vec<(usize, Vec<(String, usize)>)>, String);

    /// Which scheduler a test run uses.
    #[derive(Clone, Copy)]
    enum Scheduler {
        Egg,
        Parallel,
        /// Every rule every iteration: no bans.
        Simple,
    }

    fn saturate(expr: &RecExpr<Math>, scheduler: Scheduler) -> Steps {
        let runner = Runner::<Math, FactsAnalysis>::new(FactsAnalysis::default())
            .with_expr(expr)
            .with_iter_limit(12)
            .with_node_limit(30_000)
            .with_time_limit(Duration::from_secs(600));
        let runner = match scheduler {
            Scheduler::Egg => runner.with_scheduler(BackoffScheduler::default()),
            Scheduler::Parallel => runner.with_scheduler(ParallelBackoff::default()),
            Scheduler::Simple => runner.with_scheduler(egg::SimpleScheduler),
        }
        .run(all_rules());
        let steps = runner
            .iterations
            .iter()
            .map(|it| {
                let applied = it.applied.iter().map(|(rule, n)| (rule.to_string(), *n));
                (it.egraph_nodes, applied.collect())
            })
            .collect();
        (
            steps,
            extract(&runner.egraph, &runner.roots).expr.to_string(),
        )
    }

    /// The parallel search takes egg's scheduler's steps, bans included
    /// (the cyclic product and the determinant's log ban rules).
    #[test]
    fn parallel_search_takes_the_steps_of_eggs_scheduler() {
        let mut banned = false;
        let log_det =
            "(log (- (+ (* a e i) (* b f g) (* c d h)) (+ (* c e g) (* a f h) (* b d i))))";
        for text in [
            "(* (+ x0 x1) (* (+ x1 x2) (* (+ x2 x3) (* (+ x3 x4) (* (+ x4 x5) (+ x5 x0))))))",
            log_det,
            "(/ (pow (sin (cos (exp (* x y)))) 3) (+ 1 (* x x) (* y y)))",
        ] {
            let expr: RecExpr<Math> = text.parse().expect("parses");
            let (egg_steps, egg_program) = saturate(&expr, Scheduler::Egg);
            let (steps, program) = saturate(&expr, Scheduler::Parallel);
            assert!(egg_steps.len() > 3, "{text}: {egg_steps:?}");
            assert_eq!(steps, egg_steps, "{text}");
            assert_eq!(program, egg_program, "{text}");
            banned |= saturate(&expr, Scheduler::Simple).0 != egg_steps;
        }
        assert!(banned, "no rule was banned: the bans went untested");
    }
}
