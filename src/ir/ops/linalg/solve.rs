//! Linear solves, batched: `op(a) x = b` for a triangular `a`
//! (`TriangularSolve`, only its triangle is read) and for a general square
//! `a` (`Solve`, LU with partial pivoting), where `op(a)` is `a` or `aᵀ`.
//! The right-hand side is a stack of matrices, or of vectors (`vector`).
//!
//! Rules (Giles 2008), with `x = op(a)⁻¹ b`:
//! - forward: `dx = op(a)⁻¹ (db - op(da) x)`;
//! - reverse: `b̄ = op(a)⁻ᵀ x̄`, `op(a)‾ = -b̄ xᵀ` (for a triangular `a`,
//!   its triangle of that).

use super::lu::Lu;
use super::{Batched, batch_shape, run_batch, square_dim};
use crate::ir::Shape;
use crate::ir::TensorGraph;
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::{ShapeError, show};
use egg::Id;
use faer::{Mat, MatRef, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// The result shape of solving with `a` (square stacks) for `b`.
fn solve_shape(a: &[usize], b: &[usize], vector: bool, what: &str) -> Result<Shape, ShapeError> {
    let n = square_dim(a, what)?;
    let core = if vector { 1 } else { 2 };
    if b.len() < core || b[b.len() - core] != n {
        let expected = if vector {
            format!("[.. {n}]")
        } else {
            format!("[.. {n} k]")
        };
        return Err(ShapeError(format!(
            "{what}: a matrix of shape {} and a right-hand side of shape {} do not fit (expected {expected})",
            show(a),
            show(b)
        )));
    }
    let mut out = batch_shape(&[a, b], &[2, core]).map_err(|e| {
        ShapeError(format!(
            "{what}: the leading axes of shapes {} and {} do not broadcast ({e})",
            show(a),
            show(b)
        ))
    })?;
    out.extend_from_slice(&b[b.len() - core..]);
    Ok(out)
}

/// `(n, k)` of the right-hand sides of a solve producing `shape`.
fn rhs_dims(shape: &[usize], vector: bool) -> (usize, usize) {
    if vector {
        (shape[shape.len() - 1], 1)
    } else {
        (shape[shape.len() - 2], shape[shape.len() - 1])
    }
}

/// Runs a per-matrix solve over the broadcast batch of a solve.
fn batched_solve(
    operands: &[ArrayViewD<'_, f64>],
    shape: &[usize],
    vector: bool,
    solve_one: impl Fn(&[f64], Mat<f64>, Par) -> Result<Mat<f64>, OpError> + Sync,
) -> Result<ArrayD<f64>, OpError> {
    let (n, k) = rhs_dims(shape, vector);
    let core = if vector { 1 } else { 2 };
    let batch: Vec<usize> = shape[..shape.len() - core].to_vec();
    let input = Batched::new(operands, &[2, core], &batch)?;
    run_batch(input.count, n * k, n, shape, |b, par, out| {
        let rhs = super::to_mat(input.core(1, b), n, k);
        let x = solve_one(input.core(0, b), rhs, par)?;
        super::write_mat(x.as_ref(), out);
        Ok(())
    })
}

/// `b` as a stack of matrices (a vector becomes one column).
fn as_columns(rules: &mut Rules<'_>, b: Id, vector: bool) -> Id {
    if !vector {
        return b;
    }
    let mut shape = rules.shape(b);
    shape.push(1);
    rules.reshape(b, &shape)
}

/// Back from [`as_columns`] to the shape of `like`.
fn from_columns(rules: &mut Rules<'_>, x: Id, vector: bool, like: &[usize]) -> Id {
    if vector { rules.reshape(x, like) } else { x }
}

/// How a solve reads its operands: `b` a stack of vectors, `a`
/// transposed.
#[derive(Clone, Copy)]
struct Form {
    vector: bool,
    transpose: bool,
}

/// The reverse rule shared by both solves: `solve_t(g)` solves with
/// `op(a)ᵀ`, `mask` keeps the part of `ā` the solve reads.
fn solve_vjp(
    rules: &mut Rules<'_>,
    node: Id,
    operands: &[Id],
    g: Id,
    Form { vector, transpose }: Form,
    solve_t: impl Fn(&mut Rules<'_>, Id) -> Id,
    mask: impl Fn(&mut Rules<'_>, Id) -> Id,
) -> Pulled {
    let (a, b) = (operands[0], operands[1]);
    let g_shape = rules.shape(g);
    let g_cols = as_columns(rules, g, vector);
    let b_bar = solve_t(rules, g_cols);
    let x = as_columns(rules, node, vector);
    // op(a)‾ = -b̄ xᵀ; ā is its transpose when op(a) = aᵀ.
    let (left, right) = if transpose { (x, b_bar) } else { (b_bar, x) };
    let right_t = rules.mt(right);
    let product = rules.mm(left, right_t);
    let a_bar = rules.neg(product);
    let a_bar = mask(rules, a_bar);
    let a_bar = rules.sum_to_like(a_bar, a);
    let b_bar = from_columns(rules, b_bar, vector, &g_shape);
    let b_bar = rules.sum_to_like(b_bar, b);
    SmallVec::from_slice(&[Some(a_bar), Some(b_bar)])
}

/// The forward rule shared by both solves: `solve(r)` solves with
/// `op(a)`, `mask` keeps the part of `da` the solve reads.
fn solve_jvp(
    rules: &mut Rules<'_>,
    node: Id,
    tangents: &[Option<Id>],
    Form { vector, transpose }: Form,
    solve: impl Fn(&mut Rules<'_>, Id) -> Id,
    mask: impl Fn(&mut Rules<'_>, Id) -> Id,
) -> Id {
    let x_shape = rules.shape(node);
    let x = as_columns(rules, node, vector);
    // Operands' stacks may be fewer than the solution's (they broadcast):
    // their tangents get ones after the direction axis.
    let rank = rules.rank(x);
    let mut rhs = tangents[1].map(|db| {
        let db = as_columns(rules, db, vector);
        rules.align_tangent(db, rank)
    });
    if let Some(da) = tangents[0] {
        let da = mask(rules, da);
        let da = if transpose { rules.mt(da) } else { da };
        let da = rules.align_tangent(da, rank);
        let product = rules.mm(da, x);
        rhs = Some(match rhs {
            Some(db) => rules.sub(db, product),
            None => rules.neg(product),
        });
    }
    let rhs = match rhs {
        Some(r) => r,
        None => return rules.zero_tangent(node),
    };
    let dx = solve(rules, rhs);
    let mut shape: Shape = rules.batch().into_iter().collect();
    shape.extend_from_slice(&x_shape);
    let dx = from_columns(rules, dx, vector, &shape);
    rules.graph.expand_to(dx, &shape)
}

/// `triangular-solve`: `op(a) x = b` for triangular `a`. Operands
/// `(a, b)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TriangularSolve {
    /// `a` is lower triangular (else upper).
    pub lower: bool,
    /// Solve with `aᵀ`.
    pub transpose: bool,
    /// `b` is a stack of vectors (else of matrices).
    pub vector: bool,
    /// Where it was called.
    pub site: Site,
}

impl TriangularSolve {
    fn one(&self, a: &[f64], n: usize, mut rhs: Mat<f64>, par: Par) -> Result<Mat<f64>, OpError> {
        if let Some(k) = (0..n).find(|&k| a[k * n + k] == 0.0) {
            return Err(OpError::new(format!(
                "the matrix is singular (diagonal entry {k} is zero)"
            )));
        }
        let a = MatRef::from_row_major_slice(a, n, n);
        let (a, lower) = if self.transpose {
            (a.transpose(), !self.lower)
        } else {
            (a, self.lower)
        };
        if lower {
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(a, rhs.as_mut(), par);
        } else {
            faer::linalg::triangular_solve::solve_upper_triangular_in_place(a, rhs.as_mut(), par);
        }
        Ok(rhs)
    }

    fn with_transpose(&self, transpose: bool) -> Op {
        Op::TriangularSolve(TriangularSolve {
            transpose,
            vector: false,
            ..self.clone()
        })
    }

    fn mask(&self, rules: &mut Rules<'_>, x: Id) -> Id {
        if self.lower {
            rules.tril(x, 0)
        } else {
            rules.triu(x, 0)
        }
    }
}

impl Definition for TriangularSolve {
    fn describe(&self) -> String {
        format!(
            "triangular-solve[{}{}{}]",
            if self.lower { "lower" } else { "upper" },
            if self.transpose { " t" } else { "" },
            if self.vector { " vector" } else { "" }
        )
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        solve_shape(operands[0], operands[1], self.vector, "triangular-solve")
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let n = rhs_dims(shape, self.vector).0;
        batched_solve(operands, shape, self.vector, |a, rhs, par| {
            self.one(a, n, rhs, par)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let a = operands[0];
        let back = self.with_transpose(!self.transpose);
        solve_vjp(
            rules,
            node,
            operands,
            g,
            Form {
                vector: self.vector,
                transpose: self.transpose,
            },
            |rules, r| rules.op(back.clone(), &[a, r]),
            |rules, x| self.mask(rules, x),
        )
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let a = operands[0];
        let forward = self.with_transpose(self.transpose);
        solve_jvp(
            rules,
            node,
            tangents,
            Form {
                vector: self.vector,
                transpose: self.transpose,
            },
            |rules, r| rules.op(forward.clone(), &[a, r]),
            |rules, x| self.mask(rules, x),
        )
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        let (n, _) = rhs_dims(shape, self.vector);
        shape.iter().product::<usize>() as u64 * n as u64
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let core = if self.vector { 1 } else { 2 };
        crate::ir::ops::reads::per_matrix(out, operands, &[2, core], shape, core, element);
        true
    }

    /// Linear in `b` for a shared `a`: the solution for the summed `b`.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        (batched == [false, true]).then(|| crate::ir::ops::Op::TriangularSolve(self.clone()))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::TriangularSolve(self.clone());
        crate::ir::ops::batching::leading_axes(
            graph,
            op,
            operands,
            batched,
            &[2, if self.vector { 1 } else { 2 }],
            size,
        )
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::triangular_solve(
            operands[0],
            operands[1],
            self.lower,
            self.transpose,
            self.vector,
        )
    }

    fn site(&self) -> Site {
        self.site
    }
}

/// `solve`: `op(a) x = b` for a general square `a` (LU with partial
/// pivoting). Operands `(a, b)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Solve {
    /// Solve with `aᵀ`.
    pub transpose: bool,
    /// `b` is a stack of vectors (else of matrices).
    pub vector: bool,
    /// Where it was called.
    pub site: Site,
}

impl Solve {
    fn with_transpose(&self, transpose: bool) -> Op {
        Op::Solve(Solve {
            transpose,
            vector: false,
            ..self.clone()
        })
    }
}

impl Definition for Solve {
    fn describe(&self) -> String {
        format!(
            "solve[{}{}]",
            if self.transpose { "t" } else { "n" },
            if self.vector { " vector" } else { "" }
        )
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        solve_shape(operands[0], operands[1], self.vector, "solve")
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let n = rhs_dims(shape, self.vector).0;
        batched_solve(operands, shape, self.vector, |a, mut rhs, par| {
            let lu = Lu::new(a, n, par)?;
            if let Some(k) = lu.zero_pivot() {
                return Err(OpError::new(format!(
                    "the matrix is singular (pivot {k} of its LU factorization is zero)"
                )));
            }
            lu.solve_in_place(rhs.as_mut(), self.transpose, par);
            Ok(rhs)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], g: Id) -> Pulled {
        let a = operands[0];
        let back = self.with_transpose(!self.transpose);
        solve_vjp(
            rules,
            node,
            operands,
            g,
            Form {
                vector: self.vector,
                transpose: self.transpose,
            },
            |rules, r| rules.op(back.clone(), &[a, r]),
            |_, x| x,
        )
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        let a = operands[0];
        let forward = self.with_transpose(self.transpose);
        solve_jvp(
            rules,
            node,
            tangents,
            Form {
                vector: self.vector,
                transpose: self.transpose,
            },
            |rules, r| rules.op(forward.clone(), &[a, r]),
            |_, x| x,
        )
    }

    fn flops(&self, operands: &[&[usize]], shape: &[usize]) -> u64 {
        let n = rhs_dims(shape, self.vector).0 as u64;
        let count = operands[0].iter().product::<usize>() as u64 / (n * n).max(1);
        count * 2 * n * n * n / 3 + shape.iter().product::<usize>() as u64 * 2 * n
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        let core = if self.vector { 1 } else { 2 };
        crate::ir::ops::reads::per_matrix(out, operands, &[2, core], shape, core, element);
        true
    }

    /// Linear in `b` for a shared `a`: the solution for the summed `b`.
    fn sum_through(&self, batched: &[bool], _ranks: &[usize]) -> Option<crate::ir::ops::Op> {
        (batched == [false, true]).then(|| crate::ir::ops::Op::Solve(self.clone()))
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::Solve(self.clone());
        crate::ir::ops::batching::leading_axes(
            graph,
            op,
            operands,
            batched,
            &[2, if self.vector { 1 } else { 2 }],
            size,
        )
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::solve(operands[0], operands[1], self.transpose, self.vector)
    }

    fn site(&self) -> Site {
        self.site
    }
}
