//! A tape as text (`show-tape`): one instruction per line, slots as `%k`,
//! then the result's shape (and "in f32" for a value kept in f32 storage).

use super::{Kernel, Tape};
use crate::ir::shape::show;
use std::fmt;

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Op(op) => write!(f, "{op}"),
            Kernel::Gemm { ta, tb, single } => write!(
                f,
                "matmul{}{}{}",
                if *single { "-f32" } else { "" },
                if *ta { " aᵀ" } else { "" },
                if *tb { " bᵀ" } else { "" }
            ),
            Kernel::Loop(tapes) => {
                let what = if tapes.reverse { "scan-vjp" } else { "scan" };
                write!(
                    f,
                    "{what}[{} {:?}]{{",
                    tapes.spec.steps_label(),
                    tapes.spec.strategy
                )?;
                let body = tapes.adjoint.as_ref().unwrap_or(&tapes.body);
                write!(f, "{} instructions}}", body.instructions.len())
            }
            Kernel::Fused(group) => {
                write!(f, "fused{{")?;
                for (k, (op, args)) in group.steps.iter().enumerate() {
                    let args: Vec<String> = args.iter().map(|r| format!("r{r}")).collect();
                    if k > 0 {
                        write!(f, "; ")?;
                    }
                    write!(f, "r{} = {op} {}", group.inputs + k, args.join(" "))?;
                }
                write!(f, "}}")
            }
        }
    }
}

impl fmt::Display for Tape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for instruction in &self.instructions {
            let args: Vec<String> = instruction.args.iter().map(|s| format!("%{s}")).collect();
            writeln!(
                f,
                "%{} = {} {}  ; {}{}",
                instruction.out,
                instruction.op,
                args.join(" "),
                show(&instruction.shape),
                if instruction.single { " in f32" } else { "" }
            )?;
        }
        let outputs: Vec<String> = self.outputs.iter().map(|s| format!("%{s}")).collect();
        write!(f, "return {}", outputs.join(" "))
    }
}
