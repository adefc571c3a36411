//! CUDA kernels for the fused groups and reductions of real gradient tapes
//! (workloads shaped like W1 and W2): each gets CUDA C source, and where
//! the NVRTC library can be loaded every kernel compiles to PTX. No GPU is
//! needed; without NVRTC the compile step is skipped with a message.

use epsilon::Engine;
use epsilon::backends::cuda::kernels::{Access, group_kernel};
use epsilon::backends::cuda::launch;
use epsilon::backends::cuda::reduce::reduction_kernel;
use epsilon::backends::cuda::{compile, nvrtc_available, oldest_arch, probe};
use epsilon::ir::TOp;
use epsilon::tape::{Kernel, Tape};
use std::collections::HashMap;

/// How each operand of instruction `at` is laid out, as the executor
/// reads it: a number on the host is uniform, an array of the group's
/// shape elementwise, a smaller one broadcast.
fn accesses(
    tape: &Tape,
    at: usize,
    shape: &[usize],
    shapes: &HashMap<usize, Vec<usize>>,
) -> Vec<Access> {
    tape.instructions[at]
        .args
        .iter()
        .map(|slot| {
            let operand = shapes.get(&(*slot as usize)).cloned().unwrap_or_default();
            launch::access((!operand.is_empty()).then_some(&operand[..]), shape)
        })
        .collect()
}

/// Generates (and compiles, when NVRTC is present) the kernel of every
/// fused group and reduction of `tape`; returns how many there were.
fn kernels_of(tape: &Tape, what: &str) -> (usize, usize) {
    let mut shapes: HashMap<usize, Vec<usize>> = HashMap::new();
    let (mut count, mut reductions) = (0, 0);
    for (at, instruction) in tape.instructions.iter().enumerate() {
        if let Kernel::Fused(group) = &instruction.op {
            // A summing group runs over the shape it sums, not its result's.
            let shape: Vec<usize> = match &group.sum_over {
                Some(over) => over.iter().copied().collect(),
                None => instruction.shape.iter().copied().collect(),
            };
            let access = accesses(tape, at, &shape, &shapes);
            let source = group_kernel(group, &shape, &access, &format!("group{at}"))
                .unwrap_or_else(|e| panic!("{what}, group {at}: {e}"));
            if nvrtc_available() {
                oldest_arch()
                    .and_then(|arch| compile(&source, arch))
                    .unwrap_or_else(|e| panic!("{what}, group {at}: {e}\n{source}"));
            }
            count += 1;
        }
        if let Kernel::Op(TOp::Reduce { op, axes, .. }) = &instruction.op {
            let operand = shapes
                .get(&(instruction.args[0] as usize))
                .cloned()
                .unwrap_or_default();
            let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
            let source = reduction_kernel(*op, &operand, &axes, &format!("reduce{at}"));
            if nvrtc_available() {
                oldest_arch()
                    .and_then(|arch| compile(&source, arch))
                    .unwrap_or_else(|e| panic!("{what}, reduction {at}: {e}\n{source}"));
            }
            reductions += 1;
        }
        shapes.insert(
            instruction.out as usize,
            instruction.shape.iter().copied().collect(),
        );
    }
    (count, reductions)
}

#[test]
fn the_fused_groups_of_real_gradients_become_kernels() {
    if !nvrtc_available() {
        eprintln!("NVRTC not found: generating kernel source only, not compiling it");
    }
    let mut eps = Engine::new();
    let cases: [(&str, &str, &[&[usize]]); 4] = [
        (
            "an elementwise loss (W1-like)",
            "(lambda (x) (sum (+ (* 100 (pow (- (* x x) 1) 2)) (pow (- 1 x) 2))))",
            &[&[4096]],
        ),
        (
            "an MLP layer with softmax cross-entropy (W2-like)",
            "(lambda (w b x) (softmax-cross-entropy (tanh (+ (matmul x w) b)) [0 1 2 1]))",
            &[&[8, 3], &[3], &[4, 8]],
        ),
        (
            "activations and comparisons",
            "(lambda (x) (sum (+ (relu x) (sigmoid x) (softplus x) (where (> x 0) (exp x) (log1p (abs x))))))",
            &[&[5000]],
        ),
        (
            "the NumPy functions of the elementwise table",
            "(lambda (x y) (sum (+ (square x) (cbrt x) (exp2 x) (hypot x y) (logaddexp x y) (logaddexp2 x y) (sinc x) (deg2rad x) (rad2deg y))))",
            &[&[5000], &[5000]],
        ),
    ];
    for (what, source, shapes) in cases {
        let compiled = eps
            .compile_grad(source, shapes)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let started = std::time::Instant::now();
        let (groups, reductions) = kernels_of(compiled.tape(), what);
        if nvrtc_available() {
            // What a GPU run pays once, at the first call of this gradient.
            eprintln!(
                "{what}: {} kernels compiled by NVRTC in {:.0} ms",
                groups + reductions,
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        assert!(groups > 0, "{what}: the tape has fused groups");
        if what.contains("softmax") {
            assert!(reductions > 0, "{what}: the tape has reductions");
        }
    }
}

#[test]
fn probing_for_a_device_never_panics() {
    // On this kind of machine (no driver) it says what is missing; on a GPU
    // machine it names the device.
    match probe() {
        Ok(device) => assert!(!device.name.is_empty() && device.count > 0),
        Err(reason) => {
            let message = reason.to_string();
            assert!(
                message.contains("libcuda")
                    || message.contains("GPU")
                    || message.contains("driver"),
                "{message}"
            );
            eprintln!("no CUDA device here: {message}");
        }
    }
}

#[test]
fn the_f32_storage_kernels_compile() {
    use epsilon::backends::cuda::kernels::{Access, F32Storage};
    use epsilon::backends::cuda::launch;
    use epsilon::ir::TOp;
    use epsilon::ir::math::language::Math;
    use epsilon::tape::FusedGroup;
    // Conversions; a group reading an f32 operand (elementwise and
    // broadcast) beside an f64 one and writing f32; a transpose in f32.
    let tanh_product = FusedGroup {
        inputs: 3,
        steps: vec![
            (
                TOp::Map(Math::Mul([0.into(); 2])),
                [0u16, 1].into_iter().collect(),
            ),
            (
                TOp::Map(Math::Tanh([0.into()])),
                [3u16].into_iter().collect(),
            ),
            (
                TOp::Map(Math::Add([0.into(); 2])),
                [4u16, 2].into_iter().collect(),
            ),
        ],
        results: [5u16].into_iter().collect(),
        sum_over: None,
    };
    let storage = F32Storage {
        operands: vec![true, false, true],
        result: true,
    };
    let access = [
        Access::Elementwise,
        Access::Elementwise,
        Access::Strided(vec![0, 1]),
    ];
    let group = launch::group_stored(&tanh_product, &[7, 5], &access, &storage).unwrap();
    assert!(group.source.contains("reinterpret_cast<float*>(out0)"));
    assert!(group.source.contains("reinterpret_cast<const float*>(a2)"));
    let transpose = TOp::Transpose([1u8, 0].into_iter().collect());
    let moved = launch::index(&transpose, &[vec![5, 7]], &[7, 5], true).unwrap();
    assert!(moved.source.contains("const float*"));
    let mut launches = vec![group, moved];
    launches.extend([false, true].map(|widen| launch::convert(1001, widen)));
    for launch in launches {
        assert!(launch.source.contains(launch.name));
        if nvrtc_available() {
            oldest_arch()
                .and_then(|arch| compile(&launch.source, arch))
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", launch.name, launch.source));
        } else {
            eprintln!("skipped compiling {}: no NVRTC", launch.name);
        }
    }
}
