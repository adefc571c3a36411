//! Whole text files: `write-file` (atomic: a temporary file beside the
//! target, renamed over it once written), `append-file`, `read-file`, and
//! `temp-path` (a place in the system's temporary folder for files a
//! script should not leave in the working directory). Paths are relative
//! to the working directory; every failure is an error naming the file.

use super::builtin;
use crate::data::files;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;

/// The text argument of a writing built-in.
fn text<'a>(value: &'a Value, what: &str) -> EvalResult<&'a str> {
    match value {
        Value::Str(text) => Ok(text.as_str()),
        other => Err(EvalError::type_error(format!(
            "{what} writes a string, got {} {} (str or format makes one)",
            other.type_name(),
            other.short()
        ))),
    }
}

fn write_file(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let text = text(&args[1], "write-file")?;
    files::write_atomically(path, text.as_bytes()).map_err(EvalError::io)?;
    Ok(Value::Void)
}

fn append_file(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let text = text(&args[1], "append-file")?;
    files::append(path, text.as_bytes()).map_err(EvalError::io)?;
    Ok(Value::Void)
}

fn read_file(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    files::read_text(path)
        .map(Value::string)
        .map_err(EvalError::io)
}

fn temp_path(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let folder = std::env::temp_dir();
    let path = match args.first() {
        None => folder,
        Some(name) => folder.join(name.as_str()?),
    };
    path.to_str().map(Value::string).ok_or_else(|| {
        EvalError::io(format!(
            "the temporary path {} is not UTF-8 text",
            path.display()
        ))
    })
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("write-file", "(write-file path string)", "Writes string to the file at path, replacing it atomically: the text goes to a temporary file beside it, which is renamed over path once written, so a reader never sees half a file and a failed write leaves the old file whole.", 2, Some(2), write_file),
    builtin("append-file", "(append-file path string)", "Adds string at the end of the file at path (made if missing), in one write to the file opened for appending.", 2, Some(2), append_file),
    builtin("read-file", "(read-file path)", "The text of the file at path as a string (the file must be UTF-8).", 1, Some(1), read_file),
    builtin("temp-path", "(temp-path [name])", "The path of name in the system's temporary folder ($TMPDIR, else /tmp on Unix), or the folder itself: where a script writes files that should not land in the working directory.", 0, Some(1), temp_path),
];
