//! Determinants of stacks of square matrices, from the LU factorization
//! with partial pivoting: `det` (`Det`) and `slogdet` (`Slogdet`, the
//! sign and the logarithm of the absolute value, packed). A singular
//! matrix has determinant 0, sign 0 and logarithm `-inf`: the right
//! values, not errors.
//!
//! Rules (Giles 2008, "Collected matrix derivative results"):
//! - `d log|det a| = tr(a⁻¹ da)`: reverse `ā = l̄ a⁻ᵀ`, forward
//!   `dl = sum(a⁻ᵀ ∘ da)`. At a singular matrix the logarithm has no
//!   derivative and the solve is an error naming the zero pivot. The sign
//!   is piecewise constant: its derivative is 0.
//! - `d det a = tr(adj(a) da)`: reverse `ā = ḡ adj(a)ᵀ`, forward
//!   `d det = sum(adj(a)ᵀ ∘ da)`, with the adjugate an operation of its
//!   own (`adjugate`): defined at every matrix, singular ones included
//!   (where `det a · a⁻ᵀ` does not exist), with exact derivative rules of
//!   its own, so first and second derivatives of `det` are exact
//!   everywhere.
//! - A zero pivot makes the determinant exactly 0 (the factorization's
//!   later pivots may be NaN).

use super::lu::Lu;
use super::spectral::{as_scale, sum_matrix};
use super::{Batched, leading, run_batch, run_packed, square_dim};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::ShapeError;
use egg::Id;
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `det`: the determinant of each square matrix.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Det {
    /// Where it was called.
    pub site: Site,
}

/// `slogdet`: the sign and `log |det|` of each square matrix, packed
/// (all signs, then all logarithms).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slogdet {
    /// Where it was called.
    pub site: Site,
}

/// The flops of LU factorizations of the matrices of `shape`.
fn lu_flops(shape: &[usize]) -> u64 {
    let n = shape.last().copied().unwrap_or(0) as u64;
    let count = shape.iter().product::<usize>() as u64 / (n * n).max(1);
    count * 2 * n * n * n / 3
}

/// Runs `one` on the LU factorization of every matrix of `a` (each
/// `n x n`), writing `parts` numbers per matrix; an empty matrix gets
/// `empty`.
fn per_matrix(
    operands: &[ArrayViewD<'_, f64>],
    parts: &[usize],
    empty: &[f64],
    one: impl Fn(&Lu) -> Vec<f64> + Sync,
) -> Result<ArrayD<f64>, OpError> {
    let shape = operands[0].shape();
    let n = shape[shape.len() - 1];
    let batch = leading(shape);
    let input = Batched::new(operands, &[2], &batch)?;
    run_packed(input.count, parts, n, |b, par, out| {
        let values = if n == 0 {
            empty.to_vec()
        } else {
            one(&Lu::new(input.core(0, b), n, par)?)
        };
        out.copy_from_slice(&values);
        Ok(())
    })
}

/// `adj(a)ᵀ` for the square matrices `a` (`adjugate`). `site` is where
/// the determinant was called.
fn adjugate_t(rules: &mut Rules<'_>, a: Id, site: Site) -> Id {
    rules.op(Op::Adjugate(super::Adjugate { site }), &[a])
}

/// `a⁻ᵀ` for the square matrices `a` (an error at a singular one, at
/// `site`).
fn inverse_t(rules: &mut Rules<'_>, a: Id, site: Site) -> Id {
    let shape = rules.shape(a);
    let eye = super::spectral::eye(rules, shape[shape.len() - 1]);
    rules.op(
        Op::Solve(super::Solve {
            transpose: true,
            vector: false,
            site,
        }),
        &[a, eye],
    )
}

/// The shape of the determinants of the matrices of `a`.
fn det_shape(a: &[usize], what: &str) -> Result<Shape, ShapeError> {
    square_dim(a, what)?;
    Ok(leading(a))
}

impl Definition for Det {
    fn describe(&self) -> String {
        "det".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        det_shape(operands[0], "det")
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let a = operands[0].shape();
        let n = a[a.len() - 1];
        let input = Batched::new(operands, &[2], shape)?;
        run_batch(input.count, 1, n, shape, |b, par, out| {
            out[0] = if n == 0 {
                1.0
            } else {
                // + 0.0 turns the -0.0 of a singular matrix into 0.
                Lu::new(input.core(0, b), n, par)?.determinant() + 0.0
            };
            Ok(())
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let adjugate = adjugate_t(rules, operands[0], self.site);
        let g = as_scale(rules, g);
        SmallVec::from_slice(&[Some(rules.mul(g, adjugate))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let adjugate = adjugate_t(rules, operands[0], self.site);
        let product = rules.mul(adjugate, da);
        sum_matrix(rules, product)
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        lu_flops(operands[0])
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        crate::ir::ops::reads::per_matrix(out, operands, &[2], shape, 0, element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Det(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::det(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}

impl Definition for Slogdet {
    fn describe(&self) -> String {
        "slogdet".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        let batch = det_shape(operands[0], "slogdet")?;
        let count: usize = batch.iter().product();
        Ok(SmallVec::from_slice(&[2 * count]))
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        _shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        per_matrix(operands, &[1, 1], &[1.0, 0.0], |lu| {
            let (sign, log) = lu.sign_and_log();
            vec![sign, log]
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let a = operands[0];
        let batch = leading(&rules.shape(a));
        let views = rules.unpack(g, &[batch.clone(), batch]);
        let inverse = inverse_t(rules, a, self.site);
        let g = as_scale(rules, views[1]);
        SmallVec::from_slice(&[Some(rules.mul(g, inverse))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let Some(da) = tangents[0] else {
            return rules.zero_tangent(node);
        };
        let inverse = inverse_t(rules, operands[0], self.site);
        let product = rules.mul(inverse, da);
        let dl = sum_matrix(rules, product);
        let shape = rules.shape(dl);
        let sign = rules.graph.full(0.0, &shape);
        rules.pack_tangent(&[sign, dl])
    }

    fn flops(&self, operands: &[&[usize]], _shape: &[usize]) -> u64 {
        lu_flops(operands[0])
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let _ = shape;
        let parts = {
            let a = operands[0];
            let lead: Shape = a[..a.len() - 2].iter().copied().collect();
            [lead.clone(), lead]
        };
        crate::ir::ops::reads::per_matrix_packed(out, operands, &[2], &parts, &[0, 0], element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Slogdet(self.clone());
        let node =
            crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)?;
        // One operand, so batched: the stack the packed parts come from.
        let input = graph.shape(operands[0]).clone();
        let parts = {
            let lead: Shape = input[..input.len() - 2].iter().copied().collect();
            [lead.clone(), lead]
        };
        Some(crate::ir::ops::batching::repacked(
            graph, node, &parts, size,
        ))
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::slogdet(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}
