//! Runs generated kernels on the host, for tests on machines without a
//! GPU: the source is compiled as C++ under a header that gives CUDA's
//! names plain meanings (one block of one thread, so each grid-stride
//! loop covers every element), then run on given inputs. This checks what
//! the generated code computes (index maps, operations, NaN and infinity
//! handling), not how a device runs it. Kernels with warp shuffles
//! (summing groups, reductions) are not run this way.

use super::kernels::prelude;
use std::fmt::Write as _;
use std::process::Command;

/// Makes CUDA C compile as host C++.
const HOST_HEADER: &str = r#"#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
using std::isnan;
using std::signbit;
struct Dim3 { long long x; };
static const Dim3 blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
static inline double __longlong_as_double(long long bits) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}
"#;

/// One kernel to run: its source (as generated, prelude included), its
/// name, the element count, its array inputs and how many outputs of `n`
/// elements it writes.
pub struct HostRun<'a> {
    pub source: &'a str,
    pub name: &'a str,
    pub n: usize,
    pub inputs: Vec<Vec<f64>>,
    pub outputs: usize,
}

/// The host C++ compiler, if there is one.
pub fn host_compiler() -> Option<&'static str> {
    ["g++", "c++", "clang++"].into_iter().find(|cc| {
        Command::new(cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn bits_array(name: &str, values: &[f64]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| format!("0x{:016x}ull", v.to_bits()))
        .collect();
    format!(
        "static const uint64_t {name}_bits[] = {{{}}};\n",
        items.join(", ")
    )
}

/// Compiles and runs `runs` in one program; gives each run's outputs, or
/// the compiler's or program's error text.
pub fn run_on_host(
    compiler: &str,
    runs: &[HostRun<'_>],
    dir: &std::path::Path,
) -> Result<Vec<Vec<Vec<f64>>>, String> {
    let mut program = String::from(HOST_HEADER);
    program.push_str(prelude());
    let special = super::special::prelude();
    program.push_str(special);
    for run in runs {
        let source = run.source.strip_prefix(prelude()).unwrap_or(run.source);
        program.push_str(source.strip_prefix(special).unwrap_or(source));
    }
    program.push_str("\nint main() {\n");
    for (r, run) in runs.iter().enumerate() {
        let _ = writeln!(program, "  {{");
        let mut args = vec![format!("{}LL", run.n)];
        for (k, input) in run.inputs.iter().enumerate() {
            program.push_str(&bits_array(&format!("in{r}_{k}"), input));
            let _ = writeln!(
                program,
                "    static double in{r}_{k}[{len}]; std::memcpy(in{r}_{k}, in{r}_{k}_bits, sizeof in{r}_{k});",
                len = input.len().max(1)
            );
            args.push(format!("in{r}_{k}"));
        }
        for k in 0..run.outputs {
            let _ = writeln!(program, "    static double out{r}_{k}[{}];", run.n.max(1));
            args.push(format!("out{r}_{k}"));
        }
        let _ = writeln!(program, "    {}({});", run.name, args.join(", "));
        for k in 0..run.outputs {
            let _ = writeln!(
                program,
                "    for (long long i = 0; i < {n}; ++i) {{ uint64_t b; std::memcpy(&b, &out{r}_{k}[i], 8); std::printf(\"%d %d %016llx\\n\", {r}, {k}, (unsigned long long)b); }}",
                n = run.n
            );
        }
        let _ = writeln!(program, "  }}");
    }
    program.push_str("  return 0;\n}\n");
    let source_path = dir.join("kernels.cpp");
    let binary = dir.join("kernels");
    std::fs::write(&source_path, &program).map_err(|e| e.to_string())?;
    let compiled = Command::new(compiler)
        .args(["-O1", "-std=c++17", "-o"])
        .arg(&binary)
        .arg(&source_path)
        .output()
        .map_err(|e| e.to_string())?;
    if !compiled.status.success() {
        return Err(String::from_utf8_lossy(&compiled.stderr).into_owned());
    }
    let ran = Command::new(&binary).output().map_err(|e| e.to_string())?;
    if !ran.status.success() {
        return Err(format!("the program failed: {:?}", ran.status));
    }
    let mut results: Vec<Vec<Vec<f64>>> = runs
        .iter()
        .map(|run| vec![Vec::new(); run.outputs])
        .collect();
    for line in String::from_utf8_lossy(&ran.stdout).lines() {
        let mut parts = line.split_whitespace();
        let (Some(r), Some(k), Some(bits)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("unexpected output line {line:?}"));
        };
        let parse = |t: &str| t.parse::<usize>().map_err(|e| e.to_string());
        let bits = u64::from_str_radix(bits, 16).map_err(|e| e.to_string())?;
        results[parse(r)?][parse(k)?].push(f64::from_bits(bits));
    }
    Ok(results)
}
