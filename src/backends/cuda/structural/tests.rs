//! Each structural kernel's index map against an expression worked out by
//! hand for a small case (which input element each output element reads),
//! and NVRTC compilation of each where NVRTC can be loaded.

use super::*;
use crate::backends::cuda::compiles_if_nvrtc_is_present;
use smallvec::smallvec;

/// A named operation, its operand shapes, its output shape, and the line
/// the kernel must contain.
type Case = (&'static str, TOp, Vec<Vec<usize>>, Vec<usize>, &'static str);

fn cases() -> Vec<Case> {
    vec![
        (
            "reshape",
            TOp::Reshape(smallvec![6]),
            vec![vec![2, 3]],
            vec![6],
            "out[i] = x0[i];",
        ),
        (
            "broadcast a row",
            TOp::Broadcast(smallvec![4, 3]),
            vec![vec![3]],
            vec![4, 3],
            "out[i] = x0[(c1) * 1LL];",
        ),
        (
            "broadcast a column",
            TOp::Broadcast(smallvec![4, 3]),
            vec![vec![4, 1]],
            vec![4, 3],
            "out[i] = x0[(c0) * 1LL];",
        ),
        (
            "transpose",
            TOp::Transpose(smallvec![1, 0]),
            vec![vec![2, 3]],
            vec![3, 2],
            "out[i] = x0[(c1) * 3LL + (c0) * 1LL];",
        ),
        (
            "slice",
            TOp::Slice {
                axis: 1,
                start: 2,
                end: 5,
            },
            vec![vec![4, 6]],
            vec![4, 3],
            "out[i] = x0[(c0) * 6LL + (c1 + 2LL) * 1LL];",
        ),
        (
            "pad",
            TOp::Pad {
                axis: 0,
                before: 1,
                after: 2,
            },
            vec![vec![3]],
            vec![6],
            "out[i] = (c0 >= 1LL && c0 < 4LL) ? x0[(c0 - 1LL) * 1LL] : 0.0;",
        ),
        (
            "roll",
            TOp::Roll { axis: 0, shift: 1 },
            vec![vec![5]],
            vec![5],
            "out[i] = x0[((c0 + 4LL) % 5LL) * 1LL];",
        ),
        (
            "concat",
            TOp::Concat(0),
            vec![vec![2, 3], vec![1, 3]],
            vec![3, 3],
            "out[i] = c0 < 2LL ? x0[(c0 - 0LL) * 3LL + (c1) * 1LL] : (x1[(c1) * 1LL]);",
        ),
    ]
}

#[test]
fn each_operation_reads_the_element_its_coordinates_map_to() {
    for (what, op, inputs, output, expected) in cases() {
        let source = index_kernel(&op, &inputs, &output, "move").expect("structural");
        assert!(
            source.contains(expected),
            "{what}: expected `{expected}` in\n{source}"
        );
        compiles_if_nvrtc_is_present(&source, what);
    }
}

#[test]
fn coordinates_are_row_major() {
    let text = coordinates(&[2, 3, 4]);
    assert!(text.contains("const long long c0 = (i / 12LL) % 2LL;"));
    assert!(text.contains("const long long c1 = (i / 4LL) % 3LL;"));
    assert!(text.contains("const long long c2 = (i / 1LL) % 4LL;"));
}

#[test]
fn arithmetic_is_not_structural() {
    use crate::ir::math::language::Math;
    let op = TOp::Map(Math::Exp([egg::Id::from(0usize); 1]));
    assert!(index_kernel(&op, &[vec![3]], &[3], "k").is_none());
}
