//! Lisp output (`print`, `println`, `display`, warnings) written to
//! Python's `sys.stdout` and `sys.stderr`, so that notebooks and
//! `contextlib.redirect_stdout` capture it.

use pyo3::prelude::*;
use std::io::{self, Write};

/// A writer to `sys.<name>`.
pub struct PythonStream {
    name: &'static str,
}

impl PythonStream {
    pub fn stdout() -> Self {
        PythonStream { name: "stdout" }
    }

    pub fn stderr() -> Self {
        PythonStream { name: "stderr" }
    }

    fn call(&self, method: &str, text: Option<&str>) -> io::Result<()> {
        Python::attach(|py| -> PyResult<()> {
            let stream = py.import("sys")?.getattr(self.name)?;
            match text {
                Some(text) => stream.call_method1(method, (text,))?,
                None => stream.call_method0(method)?,
            };
            Ok(())
        })
        .map_err(|e| io::Error::other(e.to_string()))
    }
}

impl Write for PythonStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.call("write", Some(&String::from_utf8_lossy(buf)))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.call("flush", None)
    }
}
