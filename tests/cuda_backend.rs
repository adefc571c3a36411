//! The CUDA integration suite: every case of `common/device_cases.rs`
//! (every tensor operation forward and reverse, matrix products of every
//! rank, checkpointed loops, and workloads W1, W2 and W4 at reduced sizes)
//! run on the GPU and on the CPU, compared number by number. Where no
//! device can be opened (no driver, no GPU, no NVRTC or cuBLAS) the suite
//! prints why and passes without running; where one can, it runs.

use epsilon::backends::cpu::Cpu;
use epsilon::backends::cuda::Cuda;
use epsilon::backends::{Backend, override_backend};
use epsilon::{Engine, Value};
use std::rc::Rc;

include!("common/device_cases.rs");

/// The device, or the printed reason there is none.
fn device() -> Option<Rc<Cuda>> {
    match Cuda::open() {
        Ok(cuda) => {
            eprintln!("running on {} (CUDA)", cuda.info().name);
            Some(Rc::new(cuda))
        }
        Err(reason) => {
            eprintln!("skipped: no CUDA device can be used here: {reason}");
            None
        }
    }
}

#[test]
fn every_case_agrees_with_the_cpu_on_the_gpu() {
    let Some(cuda) = device() else { return };
    let compared = compare_all(cuda.clone(), 1e-9);
    eprintln!(
        "{compared} numbers agree over {} cases; {} kernels compiled",
        DEVICE_CASES.len(),
        cuda.compiled_kernels()
    );
}

#[test]
fn a_second_run_reuses_compiled_kernels() {
    let Some(cuda) = device() else { return };
    let program = DEVICE_CASES[0].1;
    override_backend(Some(cuda.clone()));
    let first = numbers(program);
    let kernels = cuda.compiled_kernels();
    let second = numbers(program);
    override_backend(None);
    // Summing kernels add with atomics, in an order that may change
    // between runs: equal to rounding.
    // NaN results (the case takes logs and roots of negative numbers)
    // agree when both runs give NaN.
    for (a, b) in first.iter().zip(&second) {
        let agree = (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * a.abs().max(1.0);
        assert!(agree, "{a} vs {b}");
    }
    assert_eq!(cuda.compiled_kernels(), kernels, "no kernel compiled twice");
}

#[test]
fn opening_the_device_without_one_is_an_error_not_a_panic() {
    // (The process-wide choice is left alone: tests run in parallel.)
    if let Err(reason) = Cuda::open() {
        let message = reason.to_string();
        assert!(
            ["CUDA", "NVRTC", "cuBLAS", "GPU", "compute capability"]
                .iter()
                .any(|word| message.contains(word)),
            "{message}"
        );
    }
}
