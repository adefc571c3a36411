//! Compile-time folding of a group whose uniform operands' values are
//! known: steps over known numbers are computed once (by the interpreter's
//! own `apply_chunk`, so the bits are the same), a `where` on a known
//! condition is its chosen branch, and a product with 1 is the other
//! factor (exact in IEEE arithmetic). What is left is the code the loop
//! runs for each element.

use super::lowering::{Lowering, lowering};
use crate::backends::cpu::apply_chunk;
use crate::tape::FusedGroup;

/// What is known about a register before the loop runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Known {
    /// The same number for every element.
    Number(f64),
    /// The same as this earlier register (never itself `Same`).
    Same(usize),
    /// Computed per element.
    Varies,
}

/// What is known about each register (operands, then steps), given the
/// values of the operands known before the run.
pub fn fold(group: &FusedGroup, operands: &[Option<f64>]) -> Vec<Known> {
    let mut known: Vec<Known> = operands
        .iter()
        .map(|c| c.map_or(Known::Varies, Known::Number))
        .collect();
    for (op, args) in &group.steps {
        let args: smallvec::SmallVec<[(usize, Known); 3]> = args
            .iter()
            .map(|&r| match known[usize::from(r)] {
                Known::Same(target) => (target, known[target]),
                other => (usize::from(r), other),
            })
            .collect();
        let numbers: Option<smallvec::SmallVec<[[f64; 1]; 3]>> = args
            .iter()
            .map(|(_, k)| match k {
                Known::Number(x) => Some([*x]),
                _ => None,
            })
            .collect();
        let step = if let Some(numbers) = numbers {
            let ins: smallvec::SmallVec<[&[f64]; 3]> = numbers.iter().map(|x| &x[..]).collect();
            let mut out = [0.0];
            apply_chunk(op, &ins, &mut out);
            Known::Number(out[0])
        } else {
            let same = |(r, k): (usize, Known)| match k {
                Known::Number(x) => Known::Number(x),
                _ => Known::Same(r),
            };
            match (lowering(op), &args[..]) {
                (Some(Lowering::Where), [(_, Known::Number(c)), a, b]) => {
                    same(if *c != 0.0 { *a } else { *b })
                }
                (Some(Lowering::Mul), [(_, Known::Number(one)), x])
                | (Some(Lowering::Mul), [x, (_, Known::Number(one))])
                    if *one == 1.0 =>
                {
                    same(*x)
                }
                _ => Known::Varies,
            }
        };
        known.push(step);
    }
    known
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::TOp;
    use crate::ir::math::language::Math;
    use egg::Id;
    use smallvec::smallvec;

    fn id() -> Id {
        Id::from(0usize)
    }

    #[test]
    fn known_numbers_fold_and_select_branches() {
        // r0 varies, r1 = 1, r2 = 200: r3 = r1 * r0 is r0; r4 = r2 * r1 is
        // 200; r5 = where r1 r0 r2 is r0; r6 = r3 + r4 varies.
        let group = FusedGroup {
            inputs: 3,
            steps: vec![
                (TOp::Map(Math::Mul([id(); 2])), smallvec![1, 0]),
                (TOp::Map(Math::Mul([id(); 2])), smallvec![2, 1]),
                (TOp::Where, smallvec![1, 0, 2]),
                (TOp::Map(Math::Add([id(); 2])), smallvec![3, 4]),
            ],
            results: smallvec![6],
            sum_over: None,
        };
        let known = fold(&group, &[None, Some(1.0), Some(200.0)]);
        assert_eq!(
            known[3..],
            [
                Known::Same(0),
                Known::Number(200.0),
                Known::Same(0),
                Known::Varies
            ]
        );
    }
}
