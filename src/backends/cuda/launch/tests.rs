//! Plans checked without a device: operand layouts, and every matrix
//! product's cuBLAS call computed by cuBLAS's column-major definition
//! against the CPU backend's product.

use super::*;
use crate::backends::cpu::{Buf, eval_op};
use crate::backends::cuda::compile;
use crate::backends::cuda::sim::column_major_gemm;
use ndarray::{ArrayD, IxDyn};
use std::rc::Rc;

fn array(shape: &[usize], seed: usize) -> ArrayD<f64> {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| ((i * 7 + seed * 13) % 11) as f64 - 5.0 + 0.25 * seed as f64)
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
}

/// The product as the CPU computes it, of operands given untransposed
/// (`ta`/`tb` transpose the stored matrices first).
fn cpu_product(a: &ArrayD<f64>, b: &ArrayD<f64>, ta: bool, tb: bool) -> ArrayD<f64> {
    let t = |x: &ArrayD<f64>, flag: bool| {
        if flag {
            x.t().as_standard_layout().into_owned()
        } else {
            x.clone()
        }
    };
    let (a, b) = (t(a, ta), t(b, tb));
    let shape = match (a.ndim(), b.ndim()) {
        (2, 2) => vec![a.shape()[0], b.shape()[1]],
        (2, 1) => vec![a.shape()[0]],
        (1, 2) => vec![b.shape()[1]],
        (1, 1) => vec![],
        _ => {
            let mut s: Vec<usize> = a.shape()[..a.ndim() - 2]
                .iter()
                .zip(&b.shape()[..b.ndim() - 2])
                .map(|(x, y)| *x.max(y))
                .collect();
            if a.ndim() != b.ndim() {
                let longer = if a.ndim() > b.ndim() { &a } else { &b };
                s = longer.shape()[..longer.ndim() - 2].to_vec();
            }
            s.extend([a.shape()[a.ndim() - 2], b.shape()[b.ndim() - 1]]);
            s
        }
    };
    let (a, b) = (Buf::from_array(Rc::new(a)), Buf::from_array(Rc::new(b)));
    eval_op(&TOp::MatMul, &[&a, &b], &shape)
        .unwrap()
        .unwrap()
        .to_array()
}

fn check(a_shape: &[usize], b_shape: &[usize], ta: bool, tb: bool) {
    let (a, b) = (array(a_shape, 1), array(b_shape, 2));
    let call = gemm_call(a_shape, b_shape, ta, tb).unwrap();
    let want = cpu_product(&a, &b, ta, tb);
    let full = |x: &ArrayD<f64>, to: &Option<Vec<usize>>| -> Vec<f64> {
        match to {
            Some(shape) => x.broadcast(IxDyn(shape)).unwrap().iter().copied().collect(),
            None => x.iter().copied().collect(),
        }
    };
    // cuBLAS's first operand is the tape's second.
    let got = column_major_gemm(
        &call,
        &full(&b, &call.broadcast[1]),
        &full(&a, &call.broadcast[0]),
    )
    .unwrap();
    let want: Vec<f64> = want.iter().copied().collect();
    assert_eq!(
        &got[..want.len()],
        &want[..],
        "{a_shape:?} x {b_shape:?}, ta {ta}, tb {tb}: {call:?}"
    );
}

#[test]
fn every_matrix_product_maps_to_cublas_correctly() {
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        // Stored shapes: a transposed flag means the stored matrix is the
        // transpose of the operand.
        let a: &[usize] = if ta { &[4, 3] } else { &[3, 4] };
        let b: &[usize] = if tb { &[5, 4] } else { &[4, 5] };
        check(a, b, ta, tb);
    }
    check(&[3, 4], &[4], false, false);
    check(&[4], &[4, 5], false, false);
    check(&[4], &[4], false, false);
    check(&[1, 1], &[1, 6], false, false);
    check(&[2, 3, 4], &[2, 4, 5], false, false);
    check(&[2, 3, 4], &[4, 5], false, false);
    check(&[3, 4], &[2, 4, 5], false, false);
    check(&[2, 1, 3, 4], &[5, 4, 2], false, false);
}

#[test]
fn impossible_products_are_errors() {
    assert!(gemm_call(&[3, 4], &[5, 6], false, false).is_err());
    assert!(gemm_call(&[], &[5], false, false).is_err());
    assert!(gemm_call(&[2, 3, 4], &[3, 4, 5], false, false).is_err());
    assert!(gemm_call(&[2, 3, 4], &[2, 4, 5], true, false).is_err());
}

#[test]
fn operands_are_read_by_their_layout() {
    assert_eq!(access(None, &[3, 4]), Access::Uniform);
    assert_eq!(access(Some(&[3, 4]), &[3, 4]), Access::Elementwise);
    assert_eq!(access(Some(&[4]), &[3, 4]), Access::Strided(vec![0, 1]));
    assert_eq!(access(Some(&[3, 1]), &[3, 4]), Access::Strided(vec![1, 0]));
    assert_eq!(access(Some(&[]), &[3, 4]), Access::Strided(vec![0, 0]));
    assert_eq!(
        access(Some(&[2, 1, 5]), &[7, 2, 3, 5]),
        Access::Strided(vec![0, 5, 0, 1])
    );
}

#[test]
fn launches_cover_their_elements_and_are_keyed_by_source() {
    let one = fill(&[1000]);
    assert_eq!((one.grid, one.block), (4, THREADS));
    assert!(!one.zeroed);
    let huge = fill(&[100_000_000]);
    assert_eq!(huge.grid, 4096, "grid-stride loops cover the rest");
    assert_eq!(
        one.key, huge.key,
        "one elementwise kernel serves every length"
    );
    let plus = single_step(
        &TOp::Map(crate::ir::math::language::Math::Add([egg::Id::from(0); 2])),
        2,
    );
    let row = |rows: usize| {
        let column = access(Some(&[rows, 1]), &[rows, 4]);
        group(&plus, &[rows, 4], &[Access::Elementwise, column])
            .unwrap()
            .key
    };
    assert_eq!(row(3), row(3));
    assert_ne!(
        row(3),
        row(5),
        "a broadcast operand's shape is in the source"
    );
    // Short lanes: a thread per output; long ones: a block per output;
    // few long ones: split over blocks and combined.
    let r = reduction(ReduceOp::Sum, &[6, 7], &[1]);
    assert_eq!((r.first.grid, r.first.block, r.combine), (1, THREADS, None));
    let r = reduction(ReduceOp::Sum, &[3000, 70], &[1]);
    assert_eq!((r.first.grid, r.combine), (3000, None));
    let r = reduction(ReduceOp::Max, &[1_000_000], &[0]);
    let (partials, combine) = r.combine.expect("a full reduction is split");
    assert_eq!((r.first.grid as usize, partials), (245, 245));
    assert_eq!((combine.grid, combine.block), (1, reduce::BLOCK as u32));
    let mut summing = single_step(
        &TOp::Map(crate::ir::math::language::Math::Exp([egg::Id::from(0)])),
        1,
    );
    summing.sum_over = Some(smallvec![50]);
    let s = group(&summing, &[50], &[Access::Elementwise]).unwrap();
    assert!(s.zeroed, "a summing group adds into a zeroed output");
    assert_eq!(arg_extreme(true, &[6, 7], Some(1)).first.grid, 1);
    let long = arg_extreme(false, &[6, 700], Some(1));
    assert_eq!(
        (long.first.grid, long.first.block),
        (6, reduce::BLOCK as u32)
    );
    assert!(long.combine.is_none());
    // All of a million elements: 245 blocks, their winners as pairs.
    let all = arg_extreme(true, &[1000, 1000], None);
    let (partials, combine) = all.combine.expect("a full argmax is split");
    assert_eq!((all.first.grid as usize, partials), (245, 2 * 245));
    assert_eq!((combine.grid, combine.block), (1, reduce::BLOCK as u32));
}

#[test]
fn every_planned_kernel_compiles_with_nvrtc() {
    use crate::backends::cuda::compiles_if_nvrtc_is_present;
    compiles_if_nvrtc_is_present(&fill(&[3, 4]).source, "fill");
    for (shape, axis) in [
        (&[6usize, 7][..], Some(1)),
        (&[6, 7], Some(0)),
        (&[5, 2, 3], None),
        (&[6, 700], Some(1)),
        (&[100_000], None),
    ] {
        for max in [true, false] {
            let plan = arg_extreme(max, shape, axis);
            compiles_if_nvrtc_is_present(&plan.first.source, "arg-extreme");
            if let Some((_, combine)) = &plan.combine {
                compiles_if_nvrtc_is_present(&combine.source, "arg-extreme combine");
            }
        }
    }
}

#[test]
fn the_architecture_is_the_newest_nvrtc_has_up_to_the_device() {
    use crate::backends::cuda::{
        CudaUnavailable, nvrtc_arch, nvrtc_available, nvrtc_version, oldest_arch,
    };
    if !nvrtc_available() {
        assert_eq!(nvrtc_arch(8, 6), Err(CudaUnavailable::NoNvrtc));
        eprintln!("skipped: {}", CudaUnavailable::NoNvrtc);
        return;
    }
    let (major, _) = nvrtc_version().unwrap();
    assert!(major >= 11, "NVRTC {major}");
    // NVRTC 12 compiles for compute_70, NVRTC 13 from compute_75 on.
    let expected_70 = if major >= 13 {
        "compute_75"
    } else {
        "compute_70"
    };
    assert_eq!(oldest_arch().unwrap(), expected_70);
    if major < 13 {
        assert_eq!(nvrtc_arch(7, 0).unwrap(), "compute_70");
    } else {
        assert!(nvrtc_arch(7, 0).is_err(), "NVRTC {major} has no compute_70");
    }
    assert_eq!(nvrtc_arch(8, 6).unwrap(), "compute_86");
    // A device newer than this NVRTC gets NVRTC's newest architecture,
    // which the driver compiles on; one older than all of them, an error.
    let newest = nvrtc_arch(99, 9).unwrap();
    assert!(newest.starts_with("compute_"), "{newest}");
    compile(
        "extern \"C\" __global__ void k(double* x) { x[0] = 1.0; }",
        Box::leak(newest.into_boxed_str()),
    )
    .unwrap();
    assert!(nvrtc_arch(1, 0).is_err());
}

#[test]
fn kernels_compile_to_machine_code_for_drivers_older_than_nvrtc() {
    use crate::backends::cuda::{compile_binary, nvrtc_available, oldest_arch};
    if !nvrtc_available() {
        eprintln!("skipped: no NVRTC");
        return;
    }
    let sm: i32 = oldest_arch().unwrap()["compute_".len()..].parse().unwrap();
    let binary = compile_binary(&fill(&[4]).source, sm).unwrap();
    assert_eq!(&binary[..4], b"\x7fELF", "a cubin is an ELF image");
    let error = compile_binary("this is not CUDA", sm).unwrap_err();
    assert!(error.to_string().contains("error"), "{error}");
}
