//! The batching rules on small programs: the batched program's shapes.

use super::*;
use crate::ir::TensorGraph;
use crate::ir::math::language::Math;

#[test]
fn a_matrix_vector_product_over_a_batch_of_vectors_is_one_product() {
    let mut per = TensorGraph::new();
    let w = per.input(0, &[3, 4], crate::dtype::DType::F64);
    let x = per.input(1, &[4], crate::dtype::DType::F64);
    let y = per.add_valid(TOp::MatMul, &[w, x]);
    let mut target = TensorGraph::new();
    let tw = target.input(0, &[3, 4], crate::dtype::DType::F64);
    let tx = target.input(1, &[5, 4], crate::dtype::DType::F64);
    let out = batch_program(
        per.nodes(),
        per.shapes(),
        &[y],
        &[Batched::shared(tw), Batched::mapped(tx)],
        5,
        &mut target,
    )
    .unwrap();
    assert!(out[0].batched);
    assert_eq!(target.shape(out[0].id)[..], [5, 3]);
}

#[test]
fn shared_values_stay_shared_and_inputs_are_checked() {
    let mut per = TensorGraph::new();
    let a = per.input(0, &[2], crate::dtype::DType::F64);
    let b = per.input(1, &[2], crate::dtype::DType::F64);
    let s = per.map(Math::Sin([Id::from(0)]), &[a]);
    let t = per.map(Math::Add([Id::from(0), Id::from(0)]), &[s, b]);
    let mut target = TensorGraph::new();
    let ta = target.input(0, &[2], crate::dtype::DType::F64);
    let tb = target.input(1, &[7, 2], crate::dtype::DType::F64);
    let out = batch_program(
        per.nodes(),
        per.shapes(),
        &[s, t],
        &[Batched::shared(ta), Batched::mapped(tb)],
        7,
        &mut target,
    )
    .unwrap();
    assert!(!out[0].batched);
    assert_eq!(target.shape(out[1].id)[..], [7, 2]);
    // A binding of the wrong shape is refused.
    let error = batch_program(
        per.nodes(),
        per.shapes(),
        &[t],
        &[Batched::shared(ta), Batched::mapped(ta)],
        7,
        &mut target,
    )
    .unwrap_err();
    assert!(error.to_string().contains("[7 2]"), "{error}");
}
