//! `Facts`, the e-class analysis: constant folding, the possible signs of a
//! class's value, and whether it is defined for every value of its
//! variables. The guards of domain-keeping rules read these facts.
//!
//! Folding keeps numbers presentable: a result is folded only when it is
//! finite and has a short decimal form, so `(/ 1 3)` and `(log 2)` stay as
//! written while `(* 2 3)` becomes `6`.

use super::assume::Assumptions;
use crate::ir::math::elementwise::{Domain, SignRule, Zero, row};
use crate::ir::math::eval::apply_op;
use crate::ir::math::language::{Constant, Math};
use egg::{Analysis, DidMerge, EGraph, Id, Language};

/// The e-graph type used throughout Epsilon's symbolic layer.
pub type MathGraph = EGraph<Math, FactsAnalysis>;

/// A set of possible signs of a value (bits `NEG`, `ZERO`, `POS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signs(u8);

impl Signs {
    /// Negative values only.
    pub const NEG: Signs = Signs(1);
    /// Zero only.
    pub const ZERO: Signs = Signs(2);
    /// Positive values only.
    pub const POS: Signs = Signs(4);
    /// Zero or positive.
    pub const NON_NEG: Signs = Signs(6);
    /// Zero or negative.
    pub const NON_POS: Signs = Signs(3);
    /// Negative or positive.
    pub const NON_ZERO: Signs = Signs(5);
    /// Any sign.
    pub const ANY: Signs = Signs(7);

    /// The signs in both sets, or `None` when no sign is.
    pub fn intersect(self, other: Signs) -> Option<Signs> {
        let both = Signs(self.0 & other.0);
        (both.0 != 0).then_some(both)
    }

    /// The sign of a number (`ANY` for NaN).
    pub fn of(value: f64) -> Signs {
        if value > 0.0 {
            Signs::POS
        } else if value < 0.0 {
            Signs::NEG
        } else if value == 0.0 {
            Signs::ZERO
        } else {
            Signs::ANY
        }
    }

    /// Every possible value is positive.
    pub fn is_pos(self) -> bool {
        self.0 & !Self::POS.0 == 0 && self.0 != 0
    }

    /// Every possible value is zero or positive.
    pub fn is_non_neg(self) -> bool {
        self.0 & Self::NEG.0 == 0 && self.0 != 0
    }

    /// Zero is not a possible value.
    pub fn is_non_zero(self) -> bool {
        self.0 & Self::ZERO.0 == 0 && self.0 != 0
    }

    fn contains(self, other: Signs) -> bool {
        self.0 & other.0 == other.0
    }

    fn union(self, other: Signs) -> Signs {
        Signs(self.0 | other.0)
    }

    fn without(self, other: Signs) -> Signs {
        Signs(self.0 & !other.0)
    }

    fn members(self) -> impl Iterator<Item = Signs> {
        [Signs::NEG, Signs::ZERO, Signs::POS]
            .into_iter()
            .filter(move |s| self.contains(*s))
    }

    /// The possible signs of `f(a, b)` where `table` gives the signs of `f`
    /// on single signs.
    fn combine(a: Signs, b: Signs, table: fn(Signs, Signs) -> Signs) -> Signs {
        let mut out = Signs(0);
        for x in a.members() {
            for y in b.members() {
                out = out.union(table(x, y));
            }
        }
        if out.0 == 0 { Signs::ANY } else { out }
    }

    fn map(self, table: fn(Signs) -> Signs) -> Signs {
        let out = self.members().fold(Signs(0), |acc, s| acc.union(table(s)));
        if out.0 == 0 { Signs::ANY } else { out }
    }

    /// The set itself, or `ANY` when it is empty (no sign is known).
    fn or_any(self) -> Signs {
        if self.0 == 0 { Signs::ANY } else { self }
    }

    fn negate(self) -> Signs {
        self.map(|s| match s {
            Signs::NEG => Signs::POS,
            Signs::POS => Signs::NEG,
            other => other,
        })
    }
}

fn add_signs(a: Signs, b: Signs) -> Signs {
    match (a, b) {
        (Signs::ZERO, other) | (other, Signs::ZERO) => other,
        (x, y) if x == y => x,
        _ => Signs::ANY,
    }
}

fn mul_signs(a: Signs, b: Signs) -> Signs {
    match (a, b) {
        (Signs::ZERO, _) | (_, Signs::ZERO) => Signs::ZERO,
        (x, y) if x == y => Signs::POS,
        _ => Signs::NEG,
    }
}

fn min_signs(a: Signs, b: Signs) -> Signs {
    if a.0 <= b.0 { a } else { b }
}

fn max_signs(a: Signs, b: Signs) -> Signs {
    if a.0 >= b.0 { a } else { b }
}

/// What is known of an e-class.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The class's value when it is a constant.
    pub constant: Option<Constant>,
    /// The possible signs of its value.
    pub signs: Signs,
    /// Whether it is defined (not NaN, not a division by zero) for every
    /// value of its variables. Overflow is not counted as undefined.
    pub total: bool,
    /// Whether its value is a whole number wherever it is defined.
    pub integer: bool,
}

/// The analysis computing `Facts`, with what is assumed of the variables.
#[derive(Clone, Debug, Default)]
pub struct FactsAnalysis {
    /// Signs and integrality of variables (`simplify :assume`).
    pub assumptions: Assumptions,
}

impl FactsAnalysis {
    /// The analysis under `assumptions`.
    pub fn assuming(assumptions: Assumptions) -> FactsAnalysis {
        FactsAnalysis { assumptions }
    }
}

/// Rounds to 12 significant digits when that changes the number by at most
/// a few units in the last place, so `(+ 0.1 0.2)` folds to `0.3`; `None`
/// when the number has no short decimal form (`1/3`, `log 2`) or is not
/// finite.
pub(crate) fn presentable(value: f64) -> Option<Constant> {
    if !value.is_finite() {
        return None;
    }
    let rounded: f64 = format!("{value:.11e}").parse().ok()?;
    let tolerance = 4.0 * f64::EPSILON * value.abs();
    if (rounded - value).abs() <= tolerance {
        Constant::new(rounded)
    } else {
        None
    }
}

fn fold(egraph: &MathGraph, node: &Math) -> Option<Constant> {
    if let Math::Num(value) = node {
        return Some(*value);
    }
    if node.is_leaf() {
        return None;
    }
    let mut operands = Vec::with_capacity(2);
    for &child in node.children() {
        operands.push(egraph[child].data.constant?.get());
    }
    fold_numbers(node, &operands)
}

/// The presentable value of `node` applied to `operands` (its children's
/// numbers, in order), when folding it loses nothing an operand carries.
///
/// Two kinds of result are left unfolded although they are finite: a sum
/// or difference that drops digits of an operand (`1e308 + 1` is `1e308`
/// in floating point; `1e16 + 1` too), and a zero or subnormal result of an
/// operation that is zero only at zero (`1e-200 * 1e-200`, `(exp -1000)`).
/// Folding them would be false algebra, and saturation compounds it: with
/// `(+ 1e308 1)` folded, `x * x^1e308 = x^(1e308 + 1)` becomes `x^1e308`,
/// cancelling gives `x = 1`, and the e-graph proves anything.
pub(crate) fn fold_numbers(node: &Math, operands: &[f64]) -> Option<Constant> {
    let children = node.children();
    let value = apply_op(node, |id| {
        let index = children.iter().position(|&c| c == id).unwrap_or(0);
        operands[index]
    })?;
    if value != 0.0 && !value.is_normal() {
        return None;
    }
    let folded = presentable(value)?;
    let keeps_operands = match node {
        Math::Add(_) => sum_is_exact(operands[0], operands[1], folded.get()),
        Math::Sub(_) => sum_is_exact(operands[0], -operands[1], folded.get()),
        Math::Mul(_) if value == 0.0 => operands.contains(&0.0),
        Math::Div(_) | Math::Pow(_) if value == 0.0 => operands[0] == 0.0,
        // A function zero only where an operand is (`exp`, `square`):
        // a zero from other operands is an underflow.
        other => match row(other) {
            Some(row) if row.zero == Zero::Underflows => value != 0.0 || operands.contains(&0.0),
            _ => true,
        },
    };
    keeps_operands.then_some(folded)
}

/// Whether `sum`, the folded `a + b`, is their exact decimal sum: the
/// digits from the sum's first to the last digit of either operand (in
/// their shortest decimal forms) fit in the 15 a double always keeps.
fn sum_is_exact(a: f64, b: f64, sum: f64) -> bool {
    if a == 0.0 || b == 0.0 {
        return true;
    }
    if sum == 0.0 {
        return a == -b;
    }
    let last = |x: f64| {
        let (first, digits) = decimal_exponent(x);
        first - (digits - 1)
    };
    decimal_exponent(sum).0 - last(a).min(last(b)) < 15
}

/// The decimal exponent of `x`'s first digit and the number of significant
/// digits of its shortest form (`1.25e-3`: `(-3, 3)`).
fn decimal_exponent(x: f64) -> (i32, i32) {
    let text = format!("{x:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
    (
        exponent.parse().unwrap_or(0),
        i32::try_from(digits).unwrap_or(17),
    )
}

fn signs_of(egraph: &MathGraph, node: &Math) -> Signs {
    let s = |id: &Id| egraph[*id].data.signs;
    let constant = |id: &Id| egraph[*id].data.constant;
    match node {
        Math::Num(value) => Signs::of(value.get()),
        Math::Var(name) => egraph.analysis.assumptions.of(*name).signs,
        Math::Add([a, b]) => Signs::combine(s(a), s(b), add_signs),
        Math::Sub([a, b]) => Signs::combine(s(a), s(b).negate(), add_signs),
        Math::Mul([a, b]) if a == b => s(a).map(|x| if x == Signs::NEG { Signs::POS } else { x }),
        Math::Mul([a, b]) => Signs::combine(s(a), s(b), mul_signs),
        Math::Div([a, b]) => Signs::combine(s(a), s(b).without(Signs::ZERO), mul_signs),
        Math::Neg([a]) => s(a).negate(),
        Math::Pow([a, b]) => pow_signs(s(a), constant(b).map(Constant::get)),
        // psi^(n) has the sign (-1)^(n+1) on the positive axis.
        Math::Polygamma([n, x]) if s(x).is_pos() => match constant(n).map(Constant::get) {
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n % 2.0 == 1.0 => Signs::POS,
            Some(n) if n >= 1.0 && n.fract() == 0.0 => Signs::NEG,
            _ => Signs::ANY,
        },
        Math::Sqrt([a]) => s(a).without(Signs::NEG).or_any(),
        Math::Relu([a]) => s(a).map(|x| if x == Signs::NEG { Signs::ZERO } else { x }),
        Math::Heaviside([a, at_zero]) => {
            let mut out = s(a).without(Signs::NEG).union(Signs::ZERO);
            if !s(a).contains(Signs::NEG) {
                out = out.without(Signs::ZERO);
            }
            if s(a).contains(Signs::ZERO) {
                out = out.union(s(at_zero));
            }
            out
        }
        Math::Min([a, b]) => Signs::combine(s(a), s(b), min_signs),
        Math::Max([a, b]) => Signs::combine(s(a), s(b), max_signs),
        // Zero only at the origin (its row says non-negative).
        Math::Hypot([a, b]) if s(a).is_non_zero() || s(b).is_non_zero() => Signs::POS,
        Math::Call(..) => Signs::ANY,
        // Every other function: its row's rule.
        other => match row(other).map(|row| row.signs) {
            Some(SignRule::Positive) => Signs::POS,
            Some(SignRule::NonNegative) => Signs::NON_NEG,
            Some(SignRule::Same) => s(&other.children()[0]),
            Some(SignRule::Magnitude) => {
                s(&other.children()[0]).map(|x| if x == Signs::NEG { Signs::POS } else { x })
            }
            Some(SignRule::Any | SignRule::Custom) | None => Signs::ANY,
        },
    }
}

fn pow_signs(base: Signs, exponent: Option<f64>) -> Signs {
    let Some(n) = exponent else {
        return if base.is_pos() {
            Signs::POS
        } else {
            Signs::ANY
        };
    };
    if n == 0.0 {
        return Signs::POS;
    }
    let mut out = Signs(0);
    for sign in base.members() {
        out = out.union(match sign {
            Signs::ZERO if n < 0.0 => Signs(0),
            Signs::ZERO => Signs::ZERO,
            Signs::POS => Signs::POS,
            _ if n.fract() != 0.0 => Signs(0),
            _ if n % 2.0 == 0.0 => Signs::POS,
            _ => Signs::NEG,
        });
    }
    if out.0 == 0 { Signs::ANY } else { out }
}

fn total_of(egraph: &MathGraph, node: &Math) -> bool {
    let facts = |id: &Id| &egraph[*id].data;
    let children_total = node.children().iter().all(|id| facts(id).total);
    if !children_total {
        return false;
    }
    match node {
        Math::Div([_, b]) => facts(b).signs.is_non_zero(),
        Math::Log([a]) | Math::Xlogy([_, a]) => facts(a).signs.is_pos(),
        Math::Log1p([a]) | Math::Sqrt([a]) => facts(a).signs.is_non_neg(),
        Math::Call(..) => false,
        // Poles at 0, -1, -2, ...: defined everywhere on the positive axis.
        Math::Lgamma([a]) | Math::Digamma([a]) => facts(a).signs.is_pos(),
        Math::Polygamma([n, a]) => {
            facts(a).signs.is_pos()
                && facts(n)
                    .constant
                    .is_some_and(|n| n.is_integer() && (0.0..=170.0).contains(&n.get()))
        }
        Math::Pow([a, b]) => match facts(b).constant.map(Constant::get) {
            Some(n) if n.fract() == 0.0 && n >= 0.0 => true,
            Some(n) if n.fract() == 0.0 => facts(a).signs.is_non_zero(),
            Some(n) if n > 0.0 => facts(a).signs.is_non_neg(),
            // A whole exponent that is not a number: assumed integer.
            None if facts(b).integer && facts(b).signs.is_non_neg() => true,
            None if facts(b).integer => facts(a).signs.is_non_zero(),
            _ => facts(a).signs.is_pos(),
        },
        // A function defined everywhere, by its row (`tan`, `asin` and
        // `acos` are not).
        other => row(other).is_none_or(|row| row.domain == Domain::All),
    }
}

/// Whether the node's value is a whole number wherever it is defined:
/// sums, differences, products, negations and magnitudes of whole numbers,
/// and whole numbers to a power that is a whole number, not negative.
fn integer_of(egraph: &MathGraph, node: &Math) -> bool {
    let integer = |id: &Id| egraph[*id].data.integer;
    match node {
        Math::Num(value) => value.get().fract() == 0.0,
        Math::Var(name) => egraph.analysis.assumptions.of(*name).integer,
        Math::Add([a, b]) | Math::Sub([a, b]) | Math::Mul([a, b]) => integer(a) && integer(b),
        Math::Min([a, b]) | Math::Max([a, b]) => integer(a) && integer(b),
        Math::Neg([a]) | Math::Abs([a]) | Math::Sign([a]) | Math::Relu([a]) => integer(a),
        Math::Pow([a, b]) => integer(a) && integer(b) && egraph[*b].data.signs.is_non_neg(),
        _ => false,
    }
}

impl Analysis<Math> for FactsAnalysis {
    type Data = Facts;

    fn make(egraph: &mut MathGraph, node: &Math, _id: Id) -> Facts {
        let constant = fold(egraph, node);
        match constant {
            Some(value) => Facts {
                constant,
                signs: Signs::of(value.get()),
                total: true,
                integer: value.get().fract() == 0.0,
            },
            None => Facts {
                constant,
                signs: signs_of(egraph, node),
                total: total_of(egraph, node),
                integer: integer_of(egraph, node),
            },
        }
    }

    fn merge(&mut self, a: &mut Facts, b: Facts) -> DidMerge {
        let before = a.clone();
        // Two different numbers meeting in one class (only rounding can
        // do it, now that folding keeps every digit) keep the first: the
        // class's number is set once, so a cycle through the class cannot
        // walk it down step by step and rebuilding always settles.
        a.constant = a.constant.or(b.constant);
        let signs = Signs(a.signs.0 & b.signs.0);
        // Contradictory signs only arise from rounding in folded constants;
        // keep the first deterministically rather than an empty set.
        if signs.0 != 0 {
            a.signs = signs;
        }
        a.total |= b.total;
        a.integer |= b.integer;
        DidMerge(*a != before, *a != b)
    }

    fn modify(egraph: &mut MathGraph, id: Id) {
        if let Some(value) = egraph[id].data.constant {
            let added = egraph.add(Math::Num(value));
            // Named, so explanations show the folding as a step.
            egraph.union_trusted(id, added, "fold-constant");
            // A constant class needs no other representation; pruning keeps
            // rules from growing it.
            let id = egraph.find(id);
            egraph[id].nodes.retain(|node| node.is_leaf());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::RecExpr;

    fn facts_of(text: &str) -> Facts {
        let expr: RecExpr<Math> = text.parse().expect("test expression parses");
        let mut egraph = MathGraph::default();
        let id = egraph.add_expr(&expr);
        egraph.rebuild();
        egraph[id].data.clone()
    }

    #[test]
    fn folds_short_results_only() {
        assert_eq!(facts_of("(* 2 3)").constant.map(Constant::get), Some(6.0));
        assert_eq!(
            facts_of("(+ 0.1 0.2)").constant.map(Constant::get),
            Some(0.3)
        );
        assert_eq!(facts_of("(/ 1 3)").constant, None);
        assert_eq!(facts_of("(log 2)").constant, None);
        assert_eq!(facts_of("(exp 0)").constant.map(Constant::get), Some(1.0));
        assert_eq!(facts_of("(/ 1 0)").constant, None);
        assert_eq!(facts_of("(log -1)").constant, None);
    }

    #[test]
    fn signs_and_totality() {
        let square = facts_of("(pow x 2)");
        assert!(square.signs.is_non_neg() && square.total);
        let positive = facts_of("(+ 1 (* x x))");
        assert!(positive.signs.is_pos() && positive.total);
        assert!(facts_of("(exp (sin x))").signs.is_pos());
        assert!(!facts_of("(log x)").total);
        assert!(facts_of("(log (+ 1 (exp x)))").total);
        assert!(!facts_of("(/ 1 x)").total);
        assert!(facts_of("(/ 1 (cosh x))").total);
        assert!(!facts_of("(pow x 0.5)").total);
        assert!(facts_of("(sqrt (* x x))").total);
        assert!(!facts_of("(- (sin x) 1)").signs.is_non_zero());
        assert!(facts_of("(neg (exp x))").signs.is_non_zero());
    }
}
