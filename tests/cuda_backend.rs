//! The CUDA integration suite: every case of `common/device_cases.rs`
//! (every tensor operation forward and reverse, matrix products of every
//! rank, checkpointed loops, and workloads W1, W2 and W4 at reduced sizes)
//! run on the GPU and on the CPU, compared number by number. Where no
//! device can be opened (no driver, no GPU, no NVRTC or cuBLAS) the suite
//! prints why and passes without running; where one can, it runs.

use epsilon::backends::cuda::Cuda;
use epsilon::backends::{Executor, override_executor};
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
    override_executor(Some(cuda.clone()));
    let first = numbers(program);
    let kernels = cuda.compiled_kernels();
    let second = numbers(program);
    override_executor(None);
    assert_eq!(first, second, "the same tape gives the same numbers");
    assert_eq!(cuda.compiled_kernels(), kernels, "no kernel compiled twice");
}

#[test]
fn asking_for_cuda_without_a_device_is_an_error_not_a_panic() {
    match epsilon::backends::select("cuda") {
        Ok(name) => assert_eq!(name, "cuda"),
        Err(message) => assert!(
            message.contains("CUDA") || message.contains("NVRTC") || message.contains("cuBLAS"),
            "{message}"
        ),
    }
    assert_eq!(epsilon::backends::select("cpu"), Ok("cpu"));
}
