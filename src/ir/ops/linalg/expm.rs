//! The matrix exponential (`matrix-exp`) of each square matrix: scaling
//! and squaring with a diagonal Padé approximant (Higham 2005, "The
//! scaling and squaring method for the matrix exponential revisited":
//! degree 3, 5, 7, 9 or 13 chosen from the 1-norm so the backward error
//! stays below double precision rounding, the matrix scaled by `2^-s`
//! first for degree 13, the result squared `s` times).
//!
//! Rules: the Fréchet derivative `L(a, e)` is the upper-right block of
//! `exp([[a, e], [0, a]])` (Mathias 1996; Higham 2008, "Functions of
//! matrices", 3.2). Forward: `dx = L(a, da)`; reverse: `ā = L(aᵀ, x̄)`
//! (the adjoint of `L(a, ·)`), with `e` scaled to the 1-norm of `a` first
//! (`L` is linear in `e`). Both are this operation on a matrix twice
//! the size, so derivatives of every order go through the same rule.

use super::lu::Lu;
use super::{Batched, leading, run_batch, square_dim, to_mat, write_mat};
use crate::ir::TensorGraph;
use crate::ir::math::language::Math;
use crate::ir::ops::{Definition, Op, OpError, Pulled, Rules, Site};
use crate::ir::shape::{ShapeError, broadcast};
use crate::ir::{CmpOp, ReduceOp, Shape, TOp};
use egg::Id;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// `matrix-exp`: the exponential of each square matrix.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatrixExp {
    /// Where it was called.
    pub site: Site,
}

/// The largest 1-norms for which the Padé approximants of degree 3, 5,
/// 7, 9 and 13 are accurate to double precision (Higham 2005, table 2.3).
pub(super) const THETA: [(usize, f64); 5] = [
    (3, 1.495_585_217_958_292e-2),
    (5, 2.539_398_330_063_23e-1),
    (7, 9.504_178_996_162_932e-1),
    (9, 2.097_847_961_257_068e0),
    (13, 5.371_920_351_148_152e0),
];

/// The coefficients `b_0..b_m` of the degree-`m` Padé approximant.
pub(super) fn coefficients(m: usize) -> &'static [f64] {
    match m {
        3 => &[120.0, 60.0, 12.0, 1.0],
        5 => &[30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
        7 => &[
            17_297_280.0,
            8_648_640.0,
            1_995_840.0,
            277_200.0,
            25_200.0,
            1_512.0,
            56.0,
            1.0,
        ],
        9 => &[
            17_643_225_600.0,
            8_821_612_800.0,
            2_075_673_600.0,
            302_702_400.0,
            30_270_240.0,
            2_162_160.0,
            110_880.0,
            3_960.0,
            90.0,
            1.0,
        ],
        _ => &[
            64_764_752_532_480_000.0,
            32_382_376_266_240_000.0,
            7_771_770_303_897_600.0,
            1_187_353_796_428_800.0,
            129_060_195_264_000.0,
            10_559_470_521_600.0,
            670_442_572_800.0,
            33_522_128_640.0,
            1_323_241_920.0,
            40_840_800.0,
            960_960.0,
            16_380.0,
            182.0,
            1.0,
        ],
    }
}

/// `a b`.
fn product(a: &Mat<f64>, b: &Mat<f64>, par: Par) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(a.nrows(), b.ncols());
    matmul(
        out.as_mut(),
        Accum::Replace,
        a.as_ref(),
        b.as_ref(),
        1.0,
        par,
    );
    out
}

/// `sum_k weights[k] * terms[k]`, plus `identity` times the identity.
fn combine(terms: &[(&Mat<f64>, f64)], identity: f64, n: usize) -> Mat<f64> {
    Mat::from_fn(n, n, |i, j| {
        let diagonal = if i == j { identity } else { 0.0 };
        terms
            .iter()
            .fold(diagonal, |acc, (t, w)| acc + w * t[(i, j)])
    })
}

/// The odd part `U` and even part `V` of the degree-`m` approximant at
/// `a`, so that `exp(a) ≈ (V - U)⁻¹ (V + U)`.
fn pade(a: &Mat<f64>, m: usize, par: Par) -> (Mat<f64>, Mat<f64>) {
    let n = a.nrows();
    let b = coefficients(m);
    let a2 = product(a, a, par);
    if m == 13 {
        let a4 = product(&a2, &a2, par);
        let a6 = product(&a4, &a2, par);
        let high = combine(&[(&a6, b[13]), (&a4, b[11]), (&a2, b[9])], 0.0, n);
        let low = combine(&[(&a6, b[7]), (&a4, b[5]), (&a2, b[3])], b[1], n);
        let inner = product(&a6, &high, par) + low;
        let u = product(a, &inner, par);
        let high = combine(&[(&a6, b[12]), (&a4, b[10]), (&a2, b[8])], 0.0, n);
        let low = combine(&[(&a6, b[6]), (&a4, b[4]), (&a2, b[2])], b[0], n);
        let v = product(&a6, &high, par) + low;
        return (u, v);
    }
    // Even powers a², a⁴, ... up to a^(m-1).
    let mut powers = vec![a2];
    while powers.len() < (m - 1) / 2 {
        let next = product(&powers[powers.len() - 1], &powers[0], par);
        powers.push(next);
    }
    let odd: Vec<(&Mat<f64>, f64)> = powers
        .iter()
        .enumerate()
        .map(|(k, p)| (p, b[2 * k + 3]))
        .collect();
    let inner = combine(&odd, b[1], n);
    let u = product(a, &inner, par);
    let even: Vec<(&Mat<f64>, f64)> = powers
        .iter()
        .enumerate()
        .map(|(k, p)| (p, b[2 * k + 2]))
        .collect();
    let v = combine(&even, b[0], n);
    (u, v)
}

/// `exp` of the `n x n` row-major `a`, written row-major into `out`.
fn exponential(a: &[f64], n: usize, par: Par, out: &mut [f64]) -> Result<(), OpError> {
    if !super::all_finite(a) {
        return Err(OpError::new("the matrix has a NaN or an infinite entry"));
    }
    if n == 0 {
        return Ok(());
    }
    let mut a = to_mat(a, n, n);
    let norm = (0..n)
        .map(|j| (0..n).map(|i| a[(i, j)].abs()).sum::<f64>())
        .fold(0.0f64, f64::max);
    let (degree, squarings) = match THETA[..4].iter().find(|(_, theta)| norm <= *theta) {
        Some(&(m, _)) => (m, 0),
        None => {
            let s = (norm / THETA[4].1).log2().ceil().max(0.0) as i32;
            let scale = 0.5f64.powi(s);
            a = Mat::from_fn(n, n, |i, j| a[(i, j)] * scale);
            (13, s)
        }
    };
    let (u, v) = pade(&a, degree, par);
    let numerator = &v + &u;
    let denominator = &v - &u;
    let mut denominator_rows = vec![0.0; n * n];
    write_mat(denominator.as_ref(), &mut denominator_rows);
    let lu = Lu::new(&denominator_rows, n, par)?;
    if let Some(k) = lu.zero_pivot() {
        return Err(OpError::new(format!(
            "the Padé denominator is singular (pivot {k}); the matrix is too large to exponentiate"
        )));
    }
    let mut x = numerator;
    lu.solve_in_place(x.as_mut(), false, par);
    for _ in 0..squarings {
        x = product(&x, &x, par);
    }
    write_mat(x.as_ref(), out);
    Ok(())
}

/// `L(a, e)`: the upper-right block of `exp([[a, e], [0, a]])`, where `a`
/// and `e` are stacks of `n x n` matrices whose leading axes broadcast.
fn frechet(rules: &mut Rules<'_>, a: Id, e: Id, site: Site) -> Id {
    let (a_shape, e_shape) = (rules.shape(a), rules.shape(e));
    let n = a_shape[a_shape.len() - 1];
    let full = broadcast(&a_shape, &e_shape)
        .expect("a derivative's operand broadcasts with the matrix it is of");
    let a = rules.graph.expand_to(a, &full);
    let e = rules.graph.expand_to(e, &full);
    // L is linear in e: L(a, e) = L(a, κ e) / κ for any κ > 0. Scaling e
    // to the size of a keeps the block's norm (and so the number of
    // squarings) that of a; κ is a constant for the derivatives, which
    // hold for every κ.
    let kappa = balance(rules, a, e);
    let e = rules.mul(kappa, e);
    let zero = rules.graph.full(0.0, &full);
    let rank = full.len() as u8;
    let top = rules.graph.add_valid(TOp::Concat(rank - 1), &[a, e]);
    let bottom = rules.graph.add_valid(TOp::Concat(rank - 1), &[zero, a]);
    let block = rules.graph.add_valid(TOp::Concat(rank - 2), &[top, bottom]);
    let exp = rules.op(Op::MatrixExp(MatrixExp { site }), &[block]);
    let rows = rules.graph.add_valid(
        TOp::Slice {
            axis: rank - 2,
            start: 0,
            end: n,
        },
        &[exp],
    );
    let block = rules.graph.add_valid(
        TOp::Slice {
            axis: rank - 1,
            start: n,
            end: 2 * n,
        },
        &[rows],
    );
    rules.div(block, kappa)
}

/// The 1-norm (largest column sum of magnitudes) of each matrix of `x`,
/// as `[.., 1, 1]`.
fn one_norm(rules: &mut Rules<'_>, x: Id) -> Id {
    let rank = rules.rank(x) as u8;
    let magnitude = rules.map1(Math::Abs([Id::from(0)]), x);
    let columns = rules.sum_axes(magnitude, &[usize::from(rank - 2)], true);
    rules.graph.add_valid(
        TOp::Reduce {
            op: ReduceOp::Max,
            axes: SmallVec::from_slice(&[rank - 1]),
            keepdims: true,
        },
        &[columns],
    )
}

/// `κ = max(|a|₁, 1) / |e|₁` per matrix (1 where `e` is 0), with no
/// derivative.
fn balance(rules: &mut Rules<'_>, a: Id, e: Id) -> Id {
    let (size_a, size_e) = (one_norm(rules, a), one_norm(rules, e));
    let (zero, one) = (rules.num(0.0), rules.num(1.0));
    let target = rules.graph.map(Math::Max([Id::from(0); 2]), &[size_a, one]);
    let nonzero = rules
        .graph
        .add_valid(TOp::Compare(CmpOp::Gt), &[size_e, zero]);
    let safe = rules.select(nonzero, size_e, one);
    let ratio = rules.div(target, safe);
    let kappa = rules.select(nonzero, ratio, one);
    rules.graph.add_valid(TOp::StopGradient, &[kappa])
}

impl Definition for MatrixExp {
    fn describe(&self) -> String {
        "matrix-exp".to_string()
    }

    fn shape(&self, operands: &[&[usize]]) -> Result<Shape, ShapeError> {
        square_dim(operands[0], "matrix-exp")?;
        Ok(operands[0].iter().copied().collect())
    }

    fn cpu(
        &self,
        operands: &[ArrayViewD<'_, f64>],
        shape: &[usize],
    ) -> Result<ArrayD<f64>, OpError> {
        let n = shape[shape.len() - 1];
        let input = Batched::new(operands, &[2], &leading(shape))?;
        run_batch(input.count, n * n, n, shape, |b, par, out| {
            exponential(input.core(0, b), n, par, out)
        })
    }

    fn vjp(&self, rules: &mut Rules<'_>, _node: Id, operands: &[Id], g: Id) -> Pulled {
        let at = rules.mt(operands[0]);
        SmallVec::from_slice(&[Some(frechet(rules, at, g, self.site))])
    }

    fn jvp(&self, rules: &mut Rules<'_>, node: Id, operands: &[Id], tangents: &[Option<Id>]) -> Id {
        match tangents[0] {
            Some(da) => frechet(rules, operands[0], da, self.site),
            None => rules.zero_tangent(node),
        }
    }

    fn flops(&self, _operands: &[&[usize]], shape: &[usize]) -> u64 {
        let n = shape[shape.len() - 1] as u64;
        let count = shape.iter().product::<usize>() as u64 / (n * n).max(1);
        // About six products and a solve for degree 13, plus squarings.
        count * 16 * n * n * n
    }

    fn reads(
        &self,
        operands: &[&[usize]],
        shape: &[usize],
        element: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> bool {
        crate::ir::ops::reads::per_matrix(out, operands, &[2], shape, 2, element);
        true
    }

    fn batch(
        &self,
        graph: &mut TensorGraph,
        operands: &[Id],
        batched: &[bool],
        size: usize,
    ) -> Option<Id> {
        let op = crate::ir::ops::Op::MatrixExp(self.clone());
        crate::ir::ops::batching::leading_axes(graph, op, operands, batched, &[2], size)
    }

    fn device_solve(
        &self,
        operands: &[&[usize]],
        _shape: &[usize],
    ) -> Option<crate::ir::ops::solver::DeviceSolve> {
        super::device::matrix_exp(operands[0])
    }

    fn site(&self) -> Site {
        self.site
    }
}
