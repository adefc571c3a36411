//! Data files: CSV tables (`crate::data::table`, via the `csv` crate),
//! NumPy `.npy` arrays of every number kind (`crate::data::npy`), and
//! parameter trees (`crate::data::tree`).
//! Paths are relative to the working directory.

use super::{builtin, with_options};
use crate::data::npy;
use crate::data::table::{Column, TableOptions, read_table};
use crate::data::tree::{Contents, Tree, write_atomically};
use crate::dtype::DType;
use crate::lisp::builtins::dtype::dtype_named;
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::printer::format_float;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::{check_rank, format_shape};
use crate::lisp::value::Value;
use ndarray::{ArrayD, IxDyn};

fn read_csv(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let header = args.option("header").map(Value::is_truthy);
    let delimiter = match args.option("delimiter") {
        None => b',',
        Some(value) => match value.as_str()?.as_bytes() {
            [byte] => *byte,
            _ => {
                return Err(EvalError::type_error(format!(
                    "read-csv: :delimiter is one character, like \";\" or \"\\t\", got {}",
                    value.short()
                )));
            }
        },
    };
    let text = std::fs::read_to_string(path)
        .map_err(|err| EvalError::io(format!("cannot read {path}: {err}")))?;
    let options = TableOptions {
        header,
        delimiter,
        text: header == Some(true),
    };
    let table = read_table(&text, path, options).map_err(EvalError::io)?;
    let mut values = Vec::with_capacity(table.rows * table.columns.len());
    for row in 0..table.rows {
        values.extend(table.columns.iter().map(|column| match column {
            Column::Numbers(numbers) => numbers[row],
            Column::Text(_) => f64::NAN,
        }));
    }
    let matrix = ArrayD::from_shape_vec(IxDyn(&[table.rows, table.columns.len()]), values)
        .map_err(|err| EvalError::io(format!("{path}: {err}")))?;
    let Some(names) = table.names else {
        return Ok(Value::tensor(matrix));
    };
    let text_columns: Vec<Value> = names
        .iter()
        .zip(&table.columns)
        .filter_map(|(name, column)| match column {
            Column::Text(fields) => Some(Value::list(
                std::iter::once(Value::string(name.as_str()))
                    .chain(fields.iter().map(|f| Value::string(f.as_str())))
                    .collect::<Vec<_>>(),
            )),
            Column::Numbers(_) => None,
        })
        .collect();
    let names = Value::list(
        names
            .iter()
            .map(|n| Value::string(n.as_str()))
            .collect::<Vec<_>>(),
    );
    let mut result = vec![names, Value::tensor(matrix)];
    if !text_columns.is_empty() {
        result.push(Value::list(text_columns));
    }
    Ok(Value::list(result))
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
    write_atomically(path, text.as_bytes()).map_err(EvalError::io)?;
    Ok(Value::Void)
}

fn load_npy(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let target = match args.option("dtype").map(dtype_named).transpose()? {
        None => npy::Target::Natural,
        Some(DType::F32) => npy::Target::F32,
        Some(_) => npy::Target::F64,
    };
    let bytes = crate::data::files::read_bytes(path).map_err(EvalError::io)?;
    let (_, array) = npy::read(&bytes, target)
        .map_err(|err| EvalError::io(format!("cannot load {path}: {err}")))?;
    let rank = array.shape().len();
    check_rank(rank).map_err(|err| EvalError::io(format!("cannot load {path}: {err}")))?;
    let part = |a: ndarray::ArrayD<f64>| match a.ndim() {
        0 => Value::Float(a.iter().next().copied().unwrap_or(f64::NAN)),
        _ => Value::tensor(a),
    };
    let part32 = |a: ndarray::ArrayD<f32>| match a.ndim() {
        0 => Value::Float(a.iter().next().map_or(f64::NAN, |&x| f64::from(x))),
        _ => Value::from(a),
    };
    Ok(match array {
        npy::Array::F64(a) => Value::tensor(a),
        npy::Array::F32(a) => Value::from(a),
        npy::Array::Complex128(re, im) => Value::complex(part(re), part(im)),
        npy::Array::Complex64(re, im) => Value::complex(part32(re), part32(im)),
    })
}

fn save_npy(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[1].as_str()?;
    let array = match &args[0] {
        Value::TensorF32(t) => npy::Array::F32((**t).clone()),
        Value::Complex(z) => match (&z.re, &z.im) {
            (Value::TensorF32(re), Value::TensorF32(im)) => {
                npy::Array::Complex64((**re).clone(), (**im).clone())
            }
            (re, im) => {
                npy::Array::Complex128((*re.as_tensor()?).clone(), (*im.as_tensor()?).clone())
            }
        },
        other => npy::Array::F64((*other.as_tensor()?).clone()),
    };
    let bytes =
        npy::write(&array).map_err(|err| EvalError::io(format!("cannot save {path}: {err}")))?;
    write_atomically(path, &bytes).map_err(EvalError::io)?;
    Ok(Value::Void)
}

/// `value` as a parameter tree of at most `depth` more levels of lists;
/// `path` names where it is, for messages (`None` past the depth).
fn tree_of(value: &Value, path: &str, depth: usize) -> EvalResult<Option<Tree>> {
    if depth == 0 && matches!(value, Value::Nil | Value::Pair(_)) {
        return Ok(None);
    }
    Ok(Some(match value {
        Value::Int(n) => Tree::Int(*n),
        Value::Float(x) => Tree::Float(*x),
        Value::Tensor(_) | Value::TensorF32(_) => Tree::Tensor((*value.as_tensor()?).clone()),
        Value::Nil => Tree::List(Vec::new()),
        Value::Pair(_) if value.is_list() => {
            let mut items = Vec::new();
            for (index, item) in value.list_to_vec()?.iter().enumerate() {
                match tree_of(item, &format!("{path}.{index}"), depth - 1)? {
                    Some(tree) => items.push(tree),
                    None => return Ok(None),
                }
            }
            Tree::List(items)
        }
        other => {
            return Err(EvalError::type_error(format!(
                "save: a parameter tree holds tensors, numbers and lists; {path} is {}",
                other.short()
            )));
        }
    }))
}

fn value_of(tree: Tree) -> Value {
    match tree {
        Tree::Int(n) => Value::Int(n),
        Tree::Float(x) => Value::Float(x),
        Tree::Tensor(t) => Value::tensor(t),
        Tree::List(items) => Value::list(items.into_iter().map(value_of).collect::<Vec<_>>()),
    }
}

fn save(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    let format = crate::data::tree::Format::of(path).map_err(EvalError::io)?;
    let tree = tree_of(&args[1], "tree", format.max_depth())?.ok_or_else(|| {
        EvalError::range(format!(
            "save: {}",
            crate::data::tree::too_deep(path, format)
        ))
    })?;
    crate::data::tree::save(path, &tree).map_err(EvalError::io)?;
    Ok(Value::Void)
}

fn load_tree(_: &mut Interp, args: &Args) -> EvalResult<Value> {
    let path = args[0].as_str()?;
    Ok(
        match crate::data::tree::load(path).map_err(EvalError::io)? {
            Contents::Tree(tree) => value_of(tree),
            Contents::Named(arrays) => Value::list(
                arrays
                    .into_iter()
                    .map(|(name, leaf)| Value::list([Value::string(name), value_of(leaf)]))
                    .collect::<Vec<_>>(),
            ),
        },
    )
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("read-csv", "(read-csv path :header #t :delimiter \",\")", "A matrix of the numbers in a CSV file (empty, NA and null fields are NaN); a first line that is not numbers is skipped. With :header #t, (list column-names matrix), text columns NaN in the matrix and listed third as (name field ...) lists.", 1, Some(1), read_csv), &["header", "delimiter"]),
    builtin("write-csv", "(write-csv t path)", "Writes a vector (one value a line) or a matrix as CSV; written to a temporary file and renamed.", 2, Some(2), write_csv),
    with_options(builtin("load-npy", "(load-npy path :dtype 'f64)", "Reads a NumPy .npy array of float64, float32, complex128, complex64, int8 to int64, uint8 to uint64 or bool: float32 as an f32 tensor, complex kinds as complex tensors (c64 for complex64), the others as f64 tensors (bools as 0 and 1); :dtype 'f32 or 'f64 asks for that type (of the parts, for complex files). An integer the type cannot hold exactly (past 2^53 for f64, 2^24 for f32) is an error.", 1, Some(1), load_npy), &["dtype"]),
    builtin("save-npy", "(save-npy t path)", "Writes a tensor as a NumPy .npy file: <f8 for an f64 tensor, <f4 for an f32 one, <c16 and <c8 for c128 and c64 tensors; written to a temporary file and renamed.", 2, Some(2), save_npy),
    builtin("save", "(save \"f.npz\" tree)", "Writes a parameter tree (nested lists of tensors and numbers) as .npz, one array per leaf named by its path (tree.0.1), or as .json (tensors as {shape, data}); written to a temporary file and renamed.", 2, Some(2), save),
    builtin("load-tree", "(load-tree \"f.npz\")", "Reads a parameter tree saved by save (.npz or .json by the extension). An .npz whose arrays are named otherwise (np.savez(f, w=..., b=...)) gives an association list ((\"w\" tensor) (\"b\" tensor)) in the file's order. Arrays of any kind load-npy reads become f64 tensors; 0-d integer arrays whole numbers.", 1, Some(1), load_tree),
];
