//! Numeric evaluation of `Math` expressions in `f64`: one definition of each
//! operator's value (the arithmetic here, every function in its row of
//! `elementwise.rs`), used by constant folding, `evaluate`, `lambdify` and
//! the rule-soundness tests.

use super::language::Math;
use crate::scalar;
use egg::{Id, RecExpr, Symbol};

/// The value of an operator node given the values of its children; `None`
/// for a variable or a user function's call.
pub fn apply_op(node: &Math, value_of: impl Fn(Id) -> f64) -> Option<f64> {
    let unary = |ids: &[Id; 1], f: fn(f64) -> f64| f(value_of(ids[0]));
    let binary = |ids: &[Id; 2], f: fn(f64, f64) -> f64| f(value_of(ids[0]), value_of(ids[1]));
    Some(match node {
        Math::Add(ids) => binary(ids, |a, b| a + b),
        Math::Sub(ids) => binary(ids, |a, b| a - b),
        Math::Mul(ids) => binary(ids, |a, b| a * b),
        Math::Div(ids) => binary(ids, |a, b| a / b),
        Math::Pow(ids) => binary(ids, scalar::pow),
        Math::Neg(ids) => unary(ids, |a| -a),
        Math::Num(value) => value.get(),
        // A user function is evaluated through its body (`lift`), never
        // folded here.
        Math::Var(_) | Math::Call(..) => return None,
        // Every function: its row of the elementwise table.
        row => return super::elementwise::value(row, &value_of),
    })
}

/// Evaluates the nodes `roots` of `expr`, looking variables up with `env`.
/// An unbound variable is returned as the error.
pub fn evaluate(
    expr: &RecExpr<Math>,
    roots: &[Id],
    env: impl Fn(Symbol) -> Option<f64>,
) -> Result<Vec<f64>, Symbol> {
    let mut params = Vec::new();
    let mut args = Vec::new();
    for node in expr.as_ref() {
        if let Math::Var(name) = node
            && !params.contains(name)
        {
            args.push(env(*name).ok_or(*name)?);
            params.push(*name);
        }
    }
    let program = Program::new(expr, roots, &params)?;
    let (mut scratch, mut results) = (Vec::new(), Vec::new());
    program.run(&args, &mut scratch, &mut results);
    Ok(results)
}

/// An expression compiled for repeated evaluation at many points: variables
/// are resolved to parameter positions once.
#[derive(Clone, Debug)]
pub struct Program {
    nodes: Vec<Step>,
    roots: Vec<usize>,
    n_params: usize,
}

#[derive(Clone, Debug)]
enum Step {
    Param(usize),
    Op(Math),
}

impl Program {
    /// Compiles `roots` of `expr` as a function of `params`. A variable of
    /// the expression that is not a parameter is returned as the error.
    pub fn new(expr: &RecExpr<Math>, roots: &[Id], params: &[Symbol]) -> Result<Program, Symbol> {
        let mut nodes = Vec::with_capacity(expr.len());
        for node in expr.as_ref() {
            nodes.push(match node {
                Math::Var(name) => Step::Param(params.iter().position(|p| p == name).ok_or(*name)?),
                op => Step::Op(op.clone()),
            });
        }
        let roots = roots.iter().map(|&id| usize::from(id)).collect();
        Ok(Program {
            nodes,
            roots,
            n_params: params.len(),
        })
    }

    /// The number of parameters.
    pub fn n_params(&self) -> usize {
        self.n_params
    }

    /// The number of results.
    pub fn n_results(&self) -> usize {
        self.roots.len()
    }

    /// Evaluates at `args` (one per parameter), writing the results into
    /// `results`; `scratch` is reused between calls.
    pub fn run(&self, args: &[f64], scratch: &mut Vec<f64>, results: &mut Vec<f64>) {
        scratch.clear();
        for step in &self.nodes {
            let value = match step {
                Step::Param(index) => args[*index],
                Step::Op(op) => apply_op(op, |id| scratch[usize::from(id)]).unwrap_or(f64::NAN),
            };
            scratch.push(value);
        }
        results.clear();
        results.extend(self.roots.iter().map(|&index| scratch[index]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egg::Language;

    /// Whether every child of `node` comes before it (the `RecExpr` invariant).
    fn children_precede(expr: &RecExpr<Math>) -> bool {
        expr.as_ref().iter().enumerate().all(|(index, node)| {
            node.children()
                .iter()
                .all(|&child| usize::from(child) < index)
        })
    }

    #[test]
    fn evaluates_with_bindings() {
        let expr: RecExpr<Math> = "(* x (sin y))".parse().expect("test expression parses");
        let root = Id::from(expr.len() - 1);
        let x = Symbol::from("x");
        let values = evaluate(&expr, &[root], |name| {
            if name == x { Some(2.0) } else { Some(0.5) }
        });
        assert_eq!(values, Ok(vec![2.0 * 0.5f64.sin()]));
        assert_eq!(evaluate(&expr, &[root], |_| None), Err(x));
    }

    #[test]
    fn programs_take_parameters_by_position() {
        let expr: RecExpr<Math> = "(- (pow x 2) y)".parse().expect("test expression parses");
        let root = Id::from(expr.len() - 1);
        let program = Program::new(&expr, &[root], &[Symbol::from("y"), Symbol::from("x")]);
        let program = program.expect("both variables are parameters");
        let (mut scratch, mut results) = (Vec::new(), Vec::new());
        program.run(&[1.0, 3.0], &mut scratch, &mut results);
        assert_eq!(results, vec![8.0]);
        assert!(Program::new(&expr, &[root], &[Symbol::from("x")]).is_err());
        assert!(children_precede(&expr));
    }
}
