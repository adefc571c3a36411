//! The language's own services: loading code, reading and evaluating data,
//! raising errors, exiting, time, and documentation.

use super::builtin;
use crate::lisp::analyze::SPECIAL_FORMS;
use crate::lisp::convert::sexp_to_value;
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::memory;
use crate::lisp::printer::{display_string, write_string};
use crate::lisp::procedure::{Args, Builtin, Procedure};
use crate::lisp::symbol::Symbol;
use crate::lisp::value::Value;
use crate::reader;
use std::path::Path;

fn load(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?.to_string();
    interp.load_file(Path::new(&path))?;
    Ok(Value::Void)
}

fn exit(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let code = match args.first() {
        None => 0,
        Some(Value::Bool(ok)) => i32::from(!ok),
        Some(code) => i32::try_from(code.as_i64()?).unwrap_or(1),
    };
    Err(EvalError::new(
        EvalErrorKind::Exit(code),
        format!("exit {code}"),
    ))
}

fn source_directory(interp: &mut Interp, _: &Args) -> EvalResult<Value> {
    let dir = interp
        .sources
        .directory_of(interp.call_span)
        .map(|dir| dir.display().to_string())
        .filter(|dir| !dir.is_empty())
        .unwrap_or_else(|| ".".to_string());
    Ok(Value::string(dir))
}

fn set_backend(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let name = match &args[0] {
        Value::Symbol(name) => name.name().to_string(),
        Value::Str(name) => name.to_string(),
        other => {
            return Err(EvalError::type_error(format!(
                "expected 'cpu, 'cuda or 'auto, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    crate::backends::select(&name)
        .map(|chosen| Value::Symbol(Symbol::intern(chosen)))
        .map_err(EvalError::range)
}

/// What the device did since the last call, as an association list.
fn device_stats(_: &mut Interp, _: &Args) -> EvalResult<Value> {
    let stats = crate::backends::device_stats::take();
    let entry = |name: &str, value: Value| Value::list([Value::symbol(name), value]);
    let int = |n: u64| Value::Int(n as i64);
    Ok(Value::list([
        entry("kernel-launches", int(stats.kernel_launches)),
        entry("library-calls", int(stats.library_calls)),
        entry("graph-launches", int(stats.graph_launches)),
        entry("programs-planned", int(stats.programs_planned)),
        entry(
            "planning-ms",
            Value::Float(stats.planning.as_secs_f64() * 1e3),
        ),
        entry("bytes-to-device", int(stats.bytes_to_device)),
        entry("bytes-to-host", int(stats.bytes_to_host)),
        entry("device-memory-bytes", int(stats.memory_held)),
    ]))
}

fn dynamic_wind(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    interp.apply(&args[0], Vec::new())?;
    let result = interp.apply(&args[1], Vec::new());
    let after = interp.apply(&args[2], Vec::new());
    match (result, after) {
        (Err(error), _) => Err(error),
        (Ok(_), Err(error)) => Err(error),
        (Ok(value), Ok(_)) => Ok(value),
    }
}

fn clock(interp: &mut Interp, _: &Args) -> EvalResult<Value> {
    Ok(Value::Float(interp.started.elapsed().as_secs_f64()))
}

fn sync(_: &mut Interp, _: &Args) -> EvalResult<Value> {
    Ok(Value::Void)
}

fn read(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let text = args[0].as_str()?.to_string();
    let file = interp.sources.add("<read>", None, &text);
    let data = reader::read_all(&text, file)?;
    match data.as_slice() {
        [] => Err(EvalError::syntax("the string holds no datum")),
        [first, ..] => Ok(sexp_to_value(first)),
    }
}

fn eval(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let span = interp.call_span;
    interp.eval_top(args[0].clone(), span)
}

fn error(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let mut message = display_string(&args[0]);
    for irritant in &args[1..] {
        message.push(' ');
        message.push_str(&write_string(irritant));
    }
    Err(EvalError::new(EvalErrorKind::User, message))
}

fn void(_: &mut Interp, _: &Args) -> EvalResult<Value> {
    Ok(Value::Void)
}

fn type_of(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    Ok(Value::symbol(args[0].type_name()))
}

/// The documentation of a global name or special form, if it has any.
pub fn doc_text(interp: &Interp, name: &str) -> Option<String> {
    if let Some((_, usage, doc)) = SPECIAL_FORMS.iter().find(|(form, _, _)| *form == name) {
        return Some(format!("{usage}\n  special form: {doc}"));
    }
    let value = interp.global(Symbol::intern(name))?;
    Some(doc_of_value(&value, name))
}

fn doc_of_value(value: &Value, name: &str) -> String {
    match value {
        Value::Procedure(proc) => match &**proc {
            Procedure::Builtin(builtin) => format!("{}\n  {}", builtin.usage, builtin.doc),
            Procedure::Closure(closure) => format!(
                "{}\n  {}",
                closure.def.signature(),
                closure.def.doc.as_deref().unwrap_or("(no docstring)")
            ),
            Procedure::Host(_) => format!("({name} ...)\n  a function registered from Rust"),
            Procedure::Native(native) => match &native.doc {
                Some(doc) => doc.clone(),
                None => format!("({name} ...)\n  a function made by a differentiation form"),
            },
        },
        Value::Macro(closure) => format!(
            "{}\n  macro: {}",
            closure.def.signature(),
            closure.def.doc.as_deref().unwrap_or("(no docstring)")
        ),
        other => format!(
            "{} is a value of type {}, not a documented function",
            other.short(),
            other.type_name()
        ),
    }
}

fn doc(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let text = match &args[0] {
        Value::Symbol(name) => doc_text(interp, name.name()).ok_or_else(|| {
            EvalError::new(
                EvalErrorKind::Unbound,
                format!("no documentation: {name} is not defined"),
            )
        })?,
        Value::Str(name) => doc_text(interp, name).ok_or_else(|| {
            EvalError::new(
                EvalErrorKind::Unbound,
                format!("no documentation: {name} is not defined"),
            )
        })?,
        other => doc_of_value(other, "it"),
    };
    interp.write_output(&format!("{text}\n"))?;
    Ok(Value::Void)
}

fn set_recursion_limit(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let limit = args[0].as_i64()?;
    if !(100..=10_000_000).contains(&limit) {
        return Err(EvalError::range(
            "the recursion limit must be between 100 and 10000000",
        ));
    }
    let most = most_nested_calls();
    if limit as usize > most {
        return Err(EvalError::range(format!(
            "{limit} nested calls need about {:.1} GB of stack, more than this machine has free; the most is {most}",
            limit as f64 * BYTES_PER_CALL as f64 / 1e9
        )));
    }
    interp.max_depth = limit as usize;
    Ok(Value::Void)
}

fn set_memory_limit(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let previous = memory::limit_bytes();
    let bytes = match &args[0] {
        Value::Bool(false) => None,
        limit => {
            let bytes = limit.as_f64()?;
            if !(bytes >= 1e6 && bytes.is_finite()) {
                return Err(EvalError::range(format!(
                    "the memory limit must be at least 1000000 bytes, or #f for none; got {limit}"
                )));
            }
            Some(bytes as usize)
        }
    };
    memory::set_limit_bytes(bytes);
    Ok(previous.map_or(Value::Bool(false), |bytes| Value::Int(bytes as i64)))
}

/// Stack bytes one nested call of the evaluator takes (measured: 10^7
/// nested calls of `(+ 1 (f (- n 1)))` peaked at 14.4 GB), rounded up.
const BYTES_PER_CALL: usize = 1536;

/// The deepest recursion the stack can grow to here: three quarters of
/// the memory the system says is available (Linux's MemAvailable), at
/// [`BYTES_PER_CALL`]; 10^7 where that cannot be read.
fn most_nested_calls() -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemAvailable:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .map(|kb| kb * 1024)
        });
    match available {
        Some(bytes) => (bytes / 4 * 3 / BYTES_PER_CALL).min(10_000_000),
        None => 10_000_000,
    }
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("load", "(load path)", "Evaluates the file at path; a relative path is taken from the directory of the file calling load.", 1, Some(1), load),
    builtin("exit", "(exit [code])", "Ends the program with status code (0 by default).", 0, Some(1), exit),
    builtin("source-directory", "(source-directory)", "The directory of the file this call is written in (\".\" at the REPL and in eval), so a script finds files beside it: (str (source-directory) \"/data/digits.csv\").", 0, Some(0), source_directory),
    builtin("set-backend!", "(set-backend! 'cpu) or 'cuda or 'auto", "Chooses where numeric tapes run and gives the backend chosen. 'auto is CUDA where a GPU can be used, else the CPU; 'cuda says what is missing here (driver library, device, NVRTC, cuBLAS).", 1, Some(1), set_backend),
    builtin("dynamic-wind", "(dynamic-wind before thunk after)", "Calls before, thunk and after (functions of no arguments) in turn and gives thunk's value; after runs even when thunk raises an error, which then goes on unchanged. For cleanup such as finishing a progress bar.", 3, Some(3), dynamic_wind),
    builtin("clock", "(clock)", "Monotonic time in seconds, as a float.", 0, Some(0), clock),
    builtin("device-stats", "(device-stats)", "What the device did since the last call, as an association list: kernel-launches, library-calls (cuBLAS), graph-launches, programs-planned (a tape's first run on the device for the kinds of its inputs; later runs replay the program), planning-ms (host time spent planning), bytes-to-device, bytes-to-host, and device-memory-bytes held now. All zero on the CPU.", 0, Some(0), device_stats),
    builtin("sync", "(sync)", "Waits for queued device work to finish (nothing to wait for on the CPU).", 0, Some(0), sync),
    builtin("read", "(read string)", "The first datum written in string, unevaluated: (read \"(+ 1 2)\") is the list (+ 1 2).", 1, Some(1), read),
    builtin("eval", "(eval datum)", "Evaluates a datum as code, at the top level.", 1, Some(1), eval),
    builtin("error", "(error message irritant...)", "Raises an error with the message followed by the irritants; try can catch it.", 1, None, error),
    builtin("void", "(void)", "The value of forms evaluated only for their effect; the REPL does not print it.", 0, Some(0), void),
    builtin("type-of", "(type-of x)", "The type of x as a symbol: integer, float, string, list, tensor, procedure, ...", 1, Some(1), type_of),
    builtin("doc", "(doc 'name)", "Prints the documentation of a function, macro or special form.", 1, Some(1), doc),
    builtin("set-memory-limit!", "(set-memory-limit! bytes) or #f", "Sets how much memory the program's lists may hold before a call or loop pass stops with an error (default: half the machine's or container's memory); #f for no limit. Gives the previous limit.", 1, Some(1), set_memory_limit),
    builtin("set-recursion-limit!", "(set-recursion-limit! n)", "Sets how deeply non-tail calls may nest before an error (default 100000).", 1, Some(1), set_recursion_limit),
];
