//! f32 steps computed in `float`. The tape writes an f32 operation as the
//! f64 operation then a rounding to f32 (`cast-f32`); a kernel that did
//! that literally would run every f32 step in double precision, which
//! GPUs outside the data centre do at 1/32 to 1/64 of the float rate. So
//! a rounded step whose operands are all f32 numbers (read from f32
//! storage or themselves rounded) is written in `float` with CUDA's
//! single-precision function, and its rounding becomes a copy.
//!
//! For `+ - * /`, `sqrt`, `fabs`, negation and the roundings to integers
//! the float result is the rounded double one, bit for bit (double carries
//! more than twice float's digits, so rounding twice cannot differ). The
//! transcendental functions (`expf`, `tanhf`, ...) are within CUDA's
//! documented few units in the last place of the correctly rounded result,
//! as the device's double ones are of theirs: results differ from the
//! CPU's by rounding, as the backend's module doc says of double.

use crate::ir::math::language::Math;
use crate::ir::{RoundOp, TOp};
use crate::tape::FusedGroup;

/// The `float` C expression of `op` over `float` operands `a`, where CUDA
/// has a single-precision form of it.
pub fn expression(op: &TOp, a: &[String]) -> Option<String> {
    let arg = |k: usize| a.get(k).cloned();
    let call = |f: &str| Some(format!("{f}({})", arg(0)?));
    Some(match op {
        TOp::Map(math) => match math {
            Math::Add(_) => format!("{} + {}", arg(0)?, arg(1)?),
            Math::Sub(_) => format!("{} - {}", arg(0)?, arg(1)?),
            Math::Mul(_) => format!("{} * {}", arg(0)?, arg(1)?),
            Math::Div(_) => format!("{} / {}", arg(0)?, arg(1)?),
            Math::Neg(_) => format!("-{}", arg(0)?),
            // A function with a single-precision spelling in its row.
            row => {
                let row = crate::ir::math::elementwise::row(row)?;
                let args = (0..row.arity).map(arg).collect::<Option<Vec<String>>>()?;
                return row.cuda_f32.apply(&args, &args);
            }
        },
        TOp::Round(RoundOp::Floor) => return call("floorf"),
        TOp::Round(RoundOp::Ceil) => return call("ceilf"),
        TOp::Round(RoundOp::Round) => return call("rintf"),
        _ => return None,
    })
}

/// Which registers of `group` hold f32 numbers as `float`, and which steps
/// are computed in `float`, given which operands are read from f32
/// storage (`operands[k]`). A rounding (`cast-f32`) always gives a `float`
/// register; a step is computed in `float` when it has a float form, its
/// operands are all `float` registers, and its only reader is the
/// rounding that follows it.
pub fn plan(group: &FusedGroup, operands: &[bool]) -> (Vec<bool>, Vec<bool>) {
    let registers = group.inputs + group.steps.len();
    let mut float = vec![false; registers];
    float[..group.inputs].copy_from_slice(&operands[..group.inputs]);
    let mut readers = vec![0usize; registers];
    for (_, args) in &group.steps {
        for &r in args {
            readers[r as usize] += 1;
        }
    }
    for &r in &group.results {
        readers[r as usize] += 1;
    }
    let rounding = |s: usize| {
        matches!(
            group.steps.get(s),
            Some((TOp::Cast(crate::dtype::DType::F32), _))
        )
    };
    let mut in_float = vec![false; group.steps.len()];
    for (s, (op, args)) in group.steps.iter().enumerate() {
        let register = group.inputs + s;
        if rounding(s) {
            float[register] = true;
            continue;
        }
        in_float[s] = rounding(s + 1)
            && group.steps[s + 1].1.as_slice() == [register as u16]
            && readers[register] == 1
            && !args.is_empty()
            && args.iter().all(|&r| float[r as usize])
            && expression(op, &vec![String::new(); args.len()]).is_some();
        float[register] = in_float[s];
    }
    (float, in_float)
}
