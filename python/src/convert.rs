//! Python values to Lisp values and back.
//!
//! In: `bool`, `int`, `float`, `complex`, `str`, `None` (the empty list),
//! lists and tuples (Lisp lists), NumPy arrays of float64 and float32
//! (tensors of the same type; integer and boolean arrays become float64,
//! complex128 and complex64 arrays complex tensors), and `Function`s.
//! Other objects are refused with an error naming their type.
//!
//! Out: numbers, strings and booleans as Python's; lists as lists; symbols
//! and quoted expressions as their printed text; tensors as NumPy arrays
//! (handed over without a copy when Epsilon holds the only reference);
//! procedures as `Function`s, callable from Python.

use crate::engine::{Engine, Function};
use crate::lending::{Lendable, Loans, lend};
use epsilon::Value;
use ndarray::ArrayD;
use numpy::{
    Complex64, Element, IntoPyArray, PyArrayDescrMethods, PyArrayDyn, PyReadonlyArrayDyn,
    PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use std::rc::Rc;

/// Lists nested deeper than this are refused (a list that holds itself
/// would otherwise recurse until the stack overflows).
const MAX_DEPTH: usize = 256;

/// The Lisp value of a Python object.
pub fn to_value(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    value_at(object, 0, None)
}

/// `loans`: where arrays read in place are recorded; `None` copies every
/// array (a value the engine stores).
fn value_at(
    object: &Bound<'_, PyAny>,
    depth: usize,
    mut loans: Option<&mut Loans>,
) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "lists nested more than {MAX_DEPTH} deep (or a list that holds itself) cannot be passed to epsilon"
        )));
    }
    if object.is_none() {
        return Ok(Value::Nil);
    }
    if object.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(object.extract()?));
    }
    if object.is_instance_of::<PyInt>() {
        return match object.extract::<i64>() {
            Ok(n) => Ok(Value::Int(n)),
            // Beyond 64 bits: a float, as NumPy converts it.
            Err(_) => Ok(Value::Float(object.extract()?)),
        };
    }
    if object.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(object.extract()?));
    }
    if let Ok(z) = object.cast::<PyComplex>() {
        return Ok(Value::complex(
            Value::Float(z.real()),
            Value::Float(z.imag()),
        ));
    }
    if object.is_instance_of::<PyString>() {
        return Ok(Value::string(object.extract::<String>()?));
    }
    if object.is_instance_of::<PyList>() || object.is_instance_of::<PyTuple>() {
        let items = object
            .try_iter()?
            .map(|item| value_at(&item?, depth + 1, loans.as_deref_mut()))
            .collect::<PyResult<Vec<Value>>>()?;
        return Ok(Value::list(items));
    }
    if let Ok(function) = object.cast::<Function>() {
        return function.get().value();
    }
    if let Ok(array) = object.cast::<PyUntypedArray>() {
        return array_value(array, loans);
    }
    // NumPy scalars (numpy.float64, numpy.int64, numpy.bool_, ...): by
    // their kind, as the Python numbers they stand for.
    let generic = object.py().import("numpy")?.getattr("generic")?;
    if object.is_instance(&generic)? {
        let dtype = object.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        let item = object.call_method0("item")?;
        return match kind.as_str() {
            "b" | "i" | "u" | "f" | "c" => value_at(&item, depth, None),
            _ => Err(PyTypeError::new_err(format!(
                "epsilon cannot take a NumPy scalar of dtype {}",
                dtype.str()?
            ))),
        };
    }
    Err(PyTypeError::new_err(format!(
        "epsilon cannot take a value of type {}: pass numbers, strings, lists, NumPy arrays or epsilon functions",
        object.get_type().name()?
    )))
}

/// A NumPy array as a tensor of its own precision: lent (read in place)
/// when `loans` is given and the layout allows, else copied.
fn array_value(array: &Bound<'_, PyUntypedArray>, loans: Option<&mut Loans>) -> PyResult<Value> {
    let dtype = array.dtype();
    if !dtype.is_native_byteorder().unwrap_or(true) {
        // Swapped to this machine's byte order first.
        let native = dtype.call_method1("newbyteorder", ("=",))?;
        let swapped = array.call_method1("astype", (native,))?;
        return array_value(swapped.cast::<PyUntypedArray>()?, loans);
    }
    let kind = dtype.kind();
    let size = dtype.itemsize();
    let object = array.as_any();
    match (kind, size) {
        (b'f', 8) => Ok(Value::Tensor(float_tensor::<f64>(object, loans)?)),
        (b'f', 4) => Ok(Value::TensorF32(float_tensor::<f32>(object, loans)?)),
        (b'c', 16) => {
            let view: PyReadonlyArrayDyn<'_, Complex64> = object.extract()?;
            let z = view.as_array();
            Ok(Value::complex(
                Value::tensor(z.mapv(|c| c.re)),
                Value::tensor(z.mapv(|c| c.im)),
            ))
        }
        (b'c', 8) => {
            let view: PyReadonlyArrayDyn<'_, numpy::Complex32> = object.extract()?;
            let z = view.as_array();
            Ok(Value::complex(
                Value::TensorF32(Rc::new(z.mapv(|c| c.re))),
                Value::TensorF32(Rc::new(z.mapv(|c| c.im))),
            ))
        }
        (b'i' | b'u' | b'b', _) => {
            let widened = object.call_method1("astype", ("float64",))?;
            array_value(widened.cast::<PyUntypedArray>()?, loans)
        }
        _ => Err(PyTypeError::new_err(format!(
            "epsilon takes float64, float32, complex and integer arrays, not dtype {}",
            dtype.str()?
        ))),
    }
}

/// The tensor of a float64 or float32 array: lent when `loans` is given
/// and the layout allows, else a copy.
fn float_tensor<T: Element + Lendable + Clone>(
    object: &Bound<'_, PyAny>,
    loans: Option<&mut Loans>,
) -> PyResult<Rc<ArrayD<T>>> {
    if let Some(loans) = loans
        && let Some(tensor) = lend(object.cast::<PyArrayDyn<T>>()?, loans)
    {
        return Ok(tensor);
    }
    let view: PyReadonlyArrayDyn<'_, T> = object.extract()?;
    Ok(Rc::new(view.as_array().to_owned()))
}

/// An array handed to NumPy: without a copy when this is the only
/// reference to it.
fn owned<T: Clone>(array: Rc<ArrayD<T>>) -> ArrayD<T> {
    Rc::try_unwrap(array).unwrap_or_else(|shared| (*shared).clone())
}

/// The Python object of a Lisp value (`engine` makes procedures callable).
pub fn to_python(py: Python<'_>, value: Value, engine: &Py<Engine>) -> PyResult<Py<PyAny>> {
    python_at(py, value, engine, &Loans::default(), 0)
}

/// The Python object of a call's result: a tensor lent by an argument
/// goes back as a view of that argument's array.
pub fn result_to_python(
    py: Python<'_>,
    value: Value,
    engine: &Py<Engine>,
    loans: &Loans,
) -> PyResult<Py<PyAny>> {
    python_at(py, value, engine, loans, 0)
}

fn python_at(
    py: Python<'_>,
    value: Value,
    engine: &Py<Engine>,
    loans: &Loans,
    depth: usize,
) -> PyResult<Py<PyAny>> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "a list nested more than {MAX_DEPTH} deep cannot be given to Python"
        )));
    }
    Ok(match value {
        Value::Nil | Value::Void => py.None(),
        Value::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Value::Int(n) => n.into_pyobject(py)?.into_any().unbind(),
        Value::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        Value::Str(text) => text.as_str().into_pyobject(py)?.into_any().unbind(),
        Value::Tensor(t) => match loans.array_of(&t) {
            Some(array) => tensor_view(array.bind(py))?,
            None => tensor_view(owned(t).into_pyarray(py).as_any())?,
        },
        Value::TensorF32(t) => match loans.array_of(&t) {
            Some(array) => tensor_view(array.bind(py))?,
            None => tensor_view(owned(t).into_pyarray(py).as_any())?,
        },
        Value::Complex(z) => complex_to_python(py, &z.re, &z.im)?,
        Value::Procedure(_) => Py::new(py, Function::new(engine.clone_ref(py), value))?.into_any(),
        Value::Pair(_) if value.is_list() && !is_expression(&value) => {
            let items = value
                .iter()
                .map(|(item, _)| python_at(py, item.clone(), engine, loans, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        // Symbols, keywords and quoted expressions: their text.
        other => other.to_string().into_pyobject(py)?.into_any().unbind(),
    })
}

/// Whether a list is a quoted expression (its head a symbol), given back
/// as its text rather than as a list of parts.
fn is_expression(value: &Value) -> bool {
    matches!(value.iter().next(), Some((Value::Symbol(_), _)))
}

/// A complex number, or a complex NumPy array, from its parts.
fn complex_to_python(py: Python<'_>, re: &Value, im: &Value) -> PyResult<Py<PyAny>> {
    let part = |v: &Value| -> PyResult<ArrayD<f64>> {
        match v {
            Value::TensorF32(t) => Ok(t.mapv(f64::from)),
            other => Ok((*other
                .as_tensor()
                .map_err(|e| PyTypeError::new_err(e.to_string()))?)
            .clone()),
        }
    };
    if let (Ok(x), Ok(y)) = (re.as_f64(), im.as_f64())
        && !matches!(re, Value::Tensor(_) | Value::TensorF32(_))
    {
        return Ok(PyComplex::from_doubles(py, x, y).into_any().unbind());
    }
    let single = matches!(re, Value::TensorF32(_));
    let (r, i) = (part(re)?, part(im)?);
    let z = ndarray::Zip::from(&r)
        .and(&i)
        .map_collect(|&a, &b| Complex64::new(a, b));
    let array = z.into_pyarray(py);
    match single {
        true => tensor_view(&array.call_method1("astype", ("complex64",))?),
        false => tensor_view(array.as_any()),
    }
}

/// `array` seen as an `epsilon.Tensor` (a NumPy subclass shown as a
/// table by Jupyter): a new view of the same memory.
fn tensor_view(array: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    static TENSOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let tensor = TENSOR.import(array.py(), "epsilon", "Tensor")?;
    Ok(array
        .call_method1(intern!(array.py(), "view"), (tensor,))?
        .unbind())
}

/// Arguments from Python as Lisp values, their arrays lent where their
/// layout allows (`lending`).
pub fn arguments(args: &Bound<'_, PyTuple>) -> PyResult<(Vec<Value>, Loans)> {
    let mut loans = Loans::default();
    let values = args
        .iter()
        .map(|a| value_at(&a, 0, Some(&mut loans)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((values, loans))
}
