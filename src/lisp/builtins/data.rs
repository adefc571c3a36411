//! Data files: CSV (via the `csv` crate) and NumPy `.npy` (via `ndarray-npy`).
//! Paths are relative to the working directory.

use super::builtin;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::printer::format_float;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};

/// Parses CSV text into a matrix; a first row that is not all numbers is a
/// header and is skipped.
pub fn parse_csv(text: &str, name: &str) -> EvalResult<ArrayD<f64>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut values = Vec::new();
    let mut columns: Option<usize> = None;
    let mut rows = 0;
    for (line_index, record) in reader.records().enumerate() {
        let record = record.map_err(|err| EvalError::io(format!("{name}: {err}")))?;
        if record.iter().all(str::is_empty) {
            continue;
        }
        let parsed: Result<Vec<f64>, _> = record.iter().map(str::parse::<f64>).collect();
        let row = match parsed {
            Ok(row) => row,
            Err(_) if line_index == 0 => continue,
            Err(_) => {
                return Err(EvalError::io(format!(
                    "{name}:{}: a field is not a number: {:?}",
                    line_index + 1,
                    record.iter().collect::<Vec<_>>()
                )));
            }
        };
        match columns {
            None => columns = Some(row.len()),
            Some(expected) if expected != row.len() => {
                return Err(EvalError::io(format!(
                    "{name}:{}: {} fields where earlier rows have {expected}",
                    line_index + 1,
                    row.len()
                )));
            }
            Some(_) => {}
        }
        values.extend(row);
        rows += 1;
    }
    ArrayD::from_shape_vec(IxDyn(&[rows, columns.unwrap_or(0)]), values)
        .map_err(|err| EvalError::io(format!("{name}: {err}")))
}

fn read_csv(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let text = std::fs::read_to_string(path)
        .map_err(|err| EvalError::io(format!("cannot read {path}: {err}")))?;
    parse_csv(&text, path).map(Value::tensor)
}

fn write_csv(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let path = args[1].as_str()?;
    let (rows, cols) = match t.shape() {
        [n] => (*n, 1),
        [r, c] => (*r, *c),
        other => {
            return Err(EvalError::shape(format!(
                "write-csv needs a vector or a matrix, got shape {}",
                format_shape(other)
            )));
        }
    };
    let values: Vec<f64> = t.iter().copied().collect();
    let mut text = String::new();
    for row in 0..rows {
        let fields: Vec<String> = values[row * cols..(row + 1) * cols]
            .iter()
            .map(|x| format_float(*x))
            .collect();
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    std::fs::write(path, text)
        .map_err(|err| EvalError::io(format!("cannot write {path}: {err}")))?;
    Ok(Value::Void)
}

fn load_npy(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let array: ArrayD<f64> = ndarray_npy::read_npy(path)
        .map_err(|err| EvalError::io(format!("cannot load {path}: {err}")))?;
    Ok(Value::tensor(array))
}

fn save_npy(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let t = args[0].as_tensor()?;
    let path = args[1].as_str()?;
    ndarray_npy::write_npy(path, &*t)
        .map_err(|err| EvalError::io(format!("cannot save {path}: {err}")))?;
    Ok(Value::Void)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    builtin("read-csv", "(read-csv path)", "A matrix of the numbers in a CSV file; a first line that is not numbers is a header and is skipped.", 1, Some(1), read_csv),
    builtin("write-csv", "(write-csv t path)", "Writes a vector (one value a line) or a matrix as CSV.", 2, Some(2), write_csv),
    builtin("load-npy", "(load-npy path)", "Reads a NumPy .npy file of float64 values.", 1, Some(1), load_npy),
    builtin("save-npy", "(save-npy t path)", "Writes a tensor as a NumPy .npy file.", 2, Some(2), save_npy),
];
