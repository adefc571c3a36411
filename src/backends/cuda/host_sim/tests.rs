//! Generated kernels on the simulated device, against the CPU backend: a
//! summing group over several blocks (shuffles, shared memory, atomics),
//! every reduction over several shapes and axes (NaN included), a plain
//! group striding over several blocks, and an index map. Then the device
//! itself, on a hand-written kernel, and the mistakes it reports. Each
//! test is skipped, with a message, where there is no host C++ compiler.

use super::{SimArg, Simulator};
use crate::backends::cpu::{Buf, eval_op};
use crate::backends::cuda::kernels::{Access, group_kernel};
use crate::backends::cuda::launch;
use crate::backends::cuda::reduce::{self, reduction_kernel};
use crate::backends::cuda::structural::index_kernel;
use crate::ir::math::language::Math;
use crate::ir::{ReduceOp, TOp};
use crate::tape::FusedGroup;
use egg::Id;
use ndarray::{ArrayD, IxDyn};
use smallvec::smallvec;
use std::rc::Rc;
use std::time::Duration;

fn simulator() -> Option<Simulator> {
    let sim = Simulator::new();
    if sim.is_none() {
        eprintln!("skipped: no host C++ compiler");
    }
    sim
}

fn id() -> Id {
    Id::from(0usize)
}

/// `n` values of `f` at 0, 1, ...
fn values(n: usize, f: impl Fn(f64) -> f64) -> Vec<f64> {
    (0..n).map(|i| f(i as f64)).collect()
}

/// An operand: its shape and its elements.
type Operand<'a> = (&'a [usize], &'a [f64]);

/// The CPU backend's result of `op` on `inputs`, of `shape`.
fn on_cpu(op: &TOp, inputs: &[Operand<'_>], shape: &[usize]) -> Vec<f64> {
    let bufs: Vec<Buf> = inputs
        .iter()
        .map(|(shape, data)| {
            let array = ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).expect("sizes");
            Buf::from_array(Rc::new(array))
        })
        .collect();
    let refs: Vec<&Buf> = bufs.iter().collect();
    let result = eval_op(op, &refs, shape)
        .expect("an operation")
        .expect("it runs");
    result.to_array().iter().copied().collect()
}

fn close(got: f64, want: f64, relative: f64) -> bool {
    got == want || (got - want).abs() <= relative * want.abs()
}

#[test]
fn a_summing_group_adds_every_element_across_blocks() {
    let Some(mut sim) = simulator() else { return };
    // sum((x - c)^2) over 1000 elements.
    let source = crate::backends::cuda::kernels::tests::squared_distance_kernel(1000);
    let x = values(1000, |i| (0.37 * i).sin() * 3.0 + 0.001 * i);
    let c = 0.25;
    let want: f64 = x.iter().map(|x| (x - c) * (x - c)).sum();
    // Four blocks as asked; one warp; more threads than elements.
    for (grid, block) in [(4, 256), (1, 32), (3, 512)] {
        let mut buffers = vec![x.clone(), vec![0.0]];
        let args = [
            SimArg::Int(1000),
            SimArg::Buffer(0),
            SimArg::Double(c),
            SimArg::Buffer(1),
        ];
        sim.launch(&source, "total", grid, block, &args, &mut buffers)
            .unwrap_or_else(|e| panic!("{e}"));
        let got = buffers[1][0];
        assert!(
            close(got, want, 1e-12),
            "grid {grid}, block {block}: {got} for {want}"
        );
        assert_eq!(buffers[0], x, "the input is left as it was");
    }
}

/// The `outputs` results of a reduction's launches on `x`: its first
/// kernel, then the combining one where there is one. Every output starts
/// as NaN, so every element must be written.
fn run_stages(
    sim: &mut Simulator,
    plan: &launch::ReductionLaunches,
    outputs: usize,
    x: &[f64],
) -> Result<Vec<f64>, String> {
    let mut stages = vec![(&plan.first, plan.combine.as_ref().map_or(outputs, |c| c.0))];
    if let Some((_, combine)) = &plan.combine {
        stages.push((combine, outputs));
    }
    let mut input = x.to_vec();
    for (launch, len) in stages {
        let mut buffers = vec![input, vec![f64::NAN; len]];
        sim.launch(
            &launch.source,
            launch.name,
            launch.grid,
            launch.block,
            &[SimArg::Buffer(0), SimArg::Buffer(1)],
            &mut buffers,
        )?;
        input = buffers.swap_remove(1);
    }
    Ok(input)
}

#[test]
fn reductions_agree_with_the_cpu_backend() {
    let Some(mut sim) = simulator() else { return };
    // A thread per output (short lanes), a block per output, and a full
    // reduction split over five blocks and combined.
    let cases: [(&[usize], &[usize]); 8] = [
        (&[5, 7, 3], &[1]),
        (&[20_000], &[0]),
        (&[40, 100], &[1]),
        (&[5, 7, 3], &[0, 2]),
        (&[5, 7, 3], &[0, 1, 2]),
        (&[1000], &[0]),
        (&[600, 2], &[0]),
        (&[2, 3, 4, 5], &[1, 3]),
    ];
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
        for (shape, axes) in cases {
            let n: usize = shape.iter().product();
            let kept: Vec<usize> = (0..shape.len())
                .filter(|k| !axes.contains(k))
                .map(|k| shape[k])
                .collect();
            let plan = launch::reduction(op, shape, axes);
            let cpu = TOp::Reduce {
                op,
                axes: axes.iter().map(|&a| a as u8).collect(),
                keepdims: false,
            };
            let outputs = reduce::outputs(shape, axes);
            let mut run = |x: &[f64]| -> (Vec<f64>, Vec<f64>) {
                // Every output starts as NaN: every element must be
                // written. A split reduction writes partials first.
                let got = run_stages(&mut sim, &plan, outputs, x)
                    .unwrap_or_else(|e| panic!("{op:?} over {axes:?} of {shape:?}: {e}"));
                (got, on_cpu(&cpu, &[(shape, x)], &kept))
            };
            // Positive values near 1, so that products of 1000 stay normal.
            let x = values(n, |i| 0.8 + 0.45 * (1.7 * i).sin());
            let (got, want) = run(&x);
            for (o, (&got, &want)) in got.iter().zip(&want).enumerate() {
                assert!(
                    if picks_an_element(op) {
                        got.to_bits() == want.to_bits()
                    } else {
                        close(got, want, 1e-12)
                    },
                    "{op:?} over {axes:?} of {shape:?}, output {o}: {got} for {want}"
                );
            }
            // One NaN: the outputs it is reduced into are NaN, the others not.
            if picks_an_element(op) {
                let mut x = values(n, |i| 10.0 * (1.3 * i + 0.2).sin());
                x[n / 3] = f64::NAN;
                let (got, want) = run(&x);
                assert!(want.iter().any(|w| w.is_nan()));
                for (o, (&got, &want)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        got == want || got.is_nan() && want.is_nan(),
                        "{op:?} with a NaN over {axes:?} of {shape:?}, output {o}: {got} for {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn arg_extremes_agree_with_the_cpu_backend_nans_and_ties_included() {
    let Some(mut sim) = simulator() else { return };
    // Short lanes (a thread per output), long ones (a block per output),
    // and few long lanes (each split over several blocks, combined by a
    // second kernel), along an axis and over all elements.
    let cases: [(&[usize], Option<usize>); 6] = [
        (&[6, 9], Some(1)),
        (&[3, 300], Some(1)),
        (&[300, 2], Some(0)),
        (&[1000], None),
        (&[20_000], None),
        (&[2, 9_000], Some(1)),
    ];
    for max in [true, false] {
        for (shape, axis) in cases {
            let n: usize = shape.iter().product();
            let plan = launch::arg_extreme(max, shape, axis);
            let cpu = TOp::ArgExtreme {
                max,
                axis: axis.map(|a| a as u8),
            };
            let out_shape: Vec<usize> = match axis {
                Some(a) => (0..shape.len())
                    .filter(|&k| k != a)
                    .map(|k| shape[k])
                    .collect(),
                None => Vec::new(),
            };
            let outputs: usize = out_shape.iter().product();
            // Ties (values repeat every 7), then NaNs among them.
            let mut x = values(n, |i| ((i as usize % 7) as f64 - 3.0).abs());
            for with_nan in [false, true] {
                if with_nan {
                    x[n / 2] = f64::NAN;
                    x[n / 2 + 3] = f64::NAN;
                }
                let got = run_stages(&mut sim, &plan, outputs, &x)
                    .unwrap_or_else(|e| panic!("{shape:?} along {axis:?}: {e}"));
                let want = on_cpu(&cpu, &[(shape, &x)], &out_shape);
                assert_eq!(
                    got,
                    want,
                    "{} of {shape:?} along {axis:?}, NaNs: {with_nan}",
                    if max { "argmax" } else { "argmin" }
                );
            }
        }
    }
}

/// Max and min give one of the elements, so the same bits as on the CPU.
fn picks_an_element(op: ReduceOp) -> bool {
    matches!(op, ReduceOp::Max | ReduceOp::Min)
}

#[test]
fn a_plain_group_strides_over_several_blocks() {
    let Some(mut sim) = simulator() else { return };
    // exp(x * s + row) - transpose(m) over a 37x41 shape: 1517 elements for
    // 3 blocks of 128 threads, about four each.
    let group = FusedGroup {
        inputs: 4,
        steps: vec![
            (TOp::Map(Math::Mul([id(); 2])), smallvec![0, 1]),
            (TOp::Map(Math::Add([id(); 2])), smallvec![4, 2]),
            (TOp::Map(Math::Exp([id(); 1])), smallvec![5]),
            (TOp::Map(Math::Sub([id(); 2])), smallvec![6, 3]),
        ],
        results: smallvec![7],
        sum_over: None,
    };
    let (rows, cols) = (37, 41);
    let access = [
        Access::Elementwise,
        Access::Uniform,
        Access::Strided(vec![0, 1]),
        Access::Strided(vec![1, rows as isize]),
    ];
    let source = group_kernel(&group, &[rows, cols], &access, "layout").expect("elementwise");
    let x = values(rows * cols, |i| (0.01 * i).cos());
    let row = values(cols, |j| 0.1 * j - 2.0);
    let m = values(rows * cols, |i| 100.0 * i); // cols x rows, read transposed
    let s = -0.5;
    let mut buffers = vec![
        x.clone(),
        row.clone(),
        m.clone(),
        vec![f64::NAN; rows * cols],
    ];
    let args = [
        SimArg::Int((rows * cols) as i64),
        SimArg::Buffer(0),
        SimArg::Double(s),
        SimArg::Buffer(1),
        SimArg::Buffer(2),
        SimArg::Buffer(3),
    ];
    sim.launch(&source, "layout", 3, 128, &args, &mut buffers)
        .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..rows {
        for j in 0..cols {
            let want = (x[i * cols + j] * s + row[j]).exp() - m[j * rows + i];
            let got = buffers[3][i * cols + j];
            // The host's exp is the CPU's libm: the same bits.
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "({i}, {j}): {got} for {want}"
            );
        }
    }
}

#[test]
fn index_maps_move_elements_as_the_cpu_backend_does() {
    let Some(mut sim) = simulator() else { return };
    let a_shape = [5usize, 6, 7];
    let a = values(210, |i| i);
    let b_shape = [5usize, 2, 7];
    let b = values(70, |i| 1000.0 + i);
    let cases: [(TOp, Vec<Operand<'_>>, Vec<usize>); 2] = [
        (
            TOp::Transpose(smallvec![2, 0, 1]),
            vec![(&a_shape, &a)],
            vec![7, 5, 6],
        ),
        (
            TOp::Concat(1),
            vec![(&a_shape, &a), (&b_shape, &b)],
            vec![5, 8, 7],
        ),
    ];
    for (op, inputs, shape) in cases {
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|(s, _)| s.to_vec()).collect();
        let source = index_kernel(&op, &shapes, &shape, "moves").expect("structural");
        let n: usize = shape.iter().product();
        let mut buffers: Vec<Vec<f64>> = inputs.iter().map(|(_, x)| x.to_vec()).collect();
        buffers.push(vec![f64::NAN; n]);
        let mut args = vec![SimArg::Int(n as i64)];
        args.extend((0..buffers.len()).map(SimArg::Buffer));
        sim.launch(&source, "moves", 2, 64, &args, &mut buffers)
            .unwrap_or_else(|e| panic!("{op:?}: {e}"));
        assert_eq!(
            buffers.last().expect("the output"),
            &on_cpu(&op, &inputs, &shape),
            "{op:?}"
        );
    }
}

/// A kernel that writes what each thread sees: its indices, a neighbour's
/// value through shared memory, and shuffled values; and counts its threads
/// with `atomicAdd`.
const PROBE: &str = r#"
extern "C" __global__ void probe(const long long stride, double* __restrict__ out, double* __restrict__ count) {
    __shared__ double slots[1024];
    const unsigned t = threadIdx.x, lane = t % 32;
    double* mine = out + (blockIdx.x * (long long)blockDim.x + t) * stride;
    mine[0] = blockIdx.x;
    mine[1] = t;
    mine[2] = blockDim.x * 1000.0 + gridDim.x;
    slots[t] = 10.0 * blockIdx.x + t;
    __syncthreads();
    mine[3] = slots[(t + 1) % blockDim.x];
    double sum = lane;
    for (int mask = 16; mask > 0; mask /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, mask);
    mine[4] = sum;
    mine[5] = __shfl_up_sync(0xffffffffu, (double)lane, 3);
    mine[6] = __shfl_down_sync(0xffffffffu, (double)lane, 5, 16);
    mine[7] = __shfl_sync(0xffffffffu, (double)lane, 7, 8);
    mine[8] = (double)__shfl_down_sync(0xffffffffu, (long long)t * 3, 1);
    atomicAdd(count, 1.0);
}
"#;

#[test]
fn each_thread_sees_its_indices_its_block_and_its_warp() {
    let Some(mut sim) = simulator() else { return };
    let (grid, block, stride) = (3u32, 64u32, 9usize);
    let threads = (grid * block) as usize;
    let mut buffers = vec![vec![f64::NAN; threads * stride], vec![0.0]];
    let args = [
        SimArg::Int(stride as i64),
        SimArg::Buffer(0),
        SimArg::Buffer(1),
    ];
    sim.launch(PROBE, "probe", grid, block, &args, &mut buffers)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(buffers[1], [threads as f64], "every thread adds 1");
    for b in 0..grid as usize {
        for t in 0..block as usize {
            let lane = t % 32;
            let want = [
                b as f64,
                t as f64,
                (block * 1000 + grid) as f64,
                (10 * b + (t + 1) % block as usize) as f64,
                (0..32).sum::<usize>() as f64,
                (if lane >= 3 { lane - 3 } else { lane }) as f64,
                (if lane % 16 + 5 < 16 { lane + 5 } else { lane }) as f64,
                (lane / 8 * 8 + 7) as f64,
                (if lane < 31 { t + 1 } else { t } * 3) as f64,
            ];
            let at = (b * block as usize + t) * stride;
            assert_eq!(buffers[0][at..at + stride], want, "block {b}, thread {t}");
        }
    }
}

#[test]
fn mistakes_are_reported_not_hung() {
    let Some(mut sim) = simulator() else { return };
    let source = reduction_kernel(ReduceOp::Sum, &[100], &[0], "reduce");
    let mut buffers = vec![vec![1.0; 100], vec![0.0]];
    let args = [SimArg::Buffer(0), SimArg::Buffer(1)];
    let error = sim
        .launch(&source, "reduce", 1, 16, &args, &mut buffers)
        .expect_err("a shuffle in a 16-thread block");
    assert!(error.contains("fewer than 32 threads"), "{error}");
    let error = sim
        .launch(&source, "reduce", 1, 64, &args[..1], &mut buffers)
        .expect_err("a missing argument");
    assert!(error.contains("does not compile"), "{error}");
    let wrong_kind = [SimArg::Buffer(0), SimArg::Double(0.0)];
    let error = sim
        .launch(&source, "reduce", 1, 64, &wrong_kind, &mut buffers)
        .expect_err("a number for a pointer");
    assert!(error.contains("does not compile"), "{error}");
    let error = sim
        .launch(
            &source,
            "reduce",
            1,
            64,
            &[SimArg::Buffer(0), SimArg::Buffer(2)],
            &mut buffers,
        )
        .expect_err("no third buffer");
    assert!(error.contains("2 buffers"), "{error}");
    // Half a warp shuffles while the other half waits for the block.
    let divergent = r#"
extern "C" __global__ void stuck(double* out) {
    double v = threadIdx.x;
    if (threadIdx.x % 32 < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
    __syncthreads();
    out[threadIdx.x] = v;
}
"#;
    sim.time_limit = Duration::from_secs(2);
    let mut buffers = vec![vec![0.0; 64]];
    let error = sim
        .launch(
            divergent,
            "stuck",
            1,
            64,
            &[SimArg::Buffer(0)],
            &mut buffers,
        )
        .expect_err("a deadlock");
    assert!(error.contains("did not finish"), "{error}");
}

#[test]
fn f32_storage_is_packed_two_per_slot_and_widens_back_exactly() {
    let Some(mut sim) = simulator() else { return };
    // An odd count over several blocks: the last slot is half used.
    let n = 1001;
    let x = values(n, |i| crate::dtype::round32((0.37 * i).sin() * 1e3));
    let narrow = crate::backends::cuda::launch::convert(n, false);
    let mut buffers = vec![x.clone(), vec![0.0; n.div_ceil(2)]];
    let args = [SimArg::Int(n as i64), SimArg::Buffer(0), SimArg::Buffer(1)];
    sim.launch(&narrow.source, narrow.name, 2, 256, &args, &mut buffers)
        .unwrap_or_else(|e| panic!("{e}"));
    for (i, &want) in x.iter().enumerate() {
        let bits = buffers[1][i / 2].to_bits() >> (32 * (i % 2));
        assert_eq!(f64::from(f32::from_bits(bits as u32)), want, "element {i}");
    }
    let widen = crate::backends::cuda::launch::convert(n, true);
    let mut back = vec![buffers[1].clone(), vec![f64::NAN; n]];
    sim.launch(&widen.source, widen.name, 2, 256, &args, &mut back)
        .unwrap_or_else(|e| panic!("{e}"));
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back[1]), bits(&x));
}
