//! Number types of tensors: `f64` (the default), `f32`, and the weak type
//! of Lisp numbers and constants.
//!
//! Promotion is NumPy's (and JAX's): two strong types give the wider one,
//! and a weak value — a Lisp number, a constant of a program, a comparison's
//! 0/1 — takes the type of the strong value it meets, so `(* 0.5 x)` of an
//! f32 `x` stays f32. `DType` is ordered `Weak < F32 < F64`, so promotion is
//! the maximum.
//!
//! An f32 operation means: the operands' f32 values, the operation computed
//! in f64, the result rounded once to f32. For `+ - * /`, `sqrt`, negation,
//! comparisons and selection this is exactly IEEE single precision (double
//! rounding through f64 is innocuous for these, as 53 >= 2*24 + 2); for the
//! transcendental functions it is the f64 function correctly rounded to f32,
//! so every path (eager, interpreted, compiled) gives the same bits.

use ndarray::ArrayD;
use std::fmt;

/// The number type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum DType {
    /// A Lisp number or a program's constant: stored as f64, it never
    /// widens a strong type.
    Weak,
    /// IEEE single precision.
    F32,
    /// IEEE double precision (the default).
    #[default]
    F64,
}

impl DType {
    /// The type of an operation over values of types `self` and `other`.
    pub fn promote(self, other: DType) -> DType {
        self.max(other)
    }

    /// The type of an operation over values of `types` (weak when there
    /// are none).
    pub fn promote_all(types: impl IntoIterator<Item = DType>) -> DType {
        types.into_iter().max().unwrap_or(DType::Weak)
    }

    /// The Lisp name: `f32` or `f64` (a weak value is stored as `f64`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::Weak | DType::F64 => "f64",
        }
    }

    /// The type a Lisp name denotes (`f32`, `float32`, `f64`, `float64`).
    pub fn from_name(name: &str) -> Option<DType> {
        match name {
            "f32" | "float32" => Some(DType::F32),
            "f64" | "float64" => Some(DType::F64),
            _ => None,
        }
    }

    /// Bytes per element of a value of this type.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::Weak | DType::F64 => 8,
        }
    }

    /// The strong type a value of this type is returned as (weak values
    /// come back as f64).
    pub fn strong(self) -> DType {
        match self {
            DType::Weak => DType::F64,
            other => other,
        }
    }

    /// `x` rounded to this type (f64 values are unchanged).
    #[inline(always)]
    pub fn round(self, x: f64) -> f64 {
        match self {
            DType::F32 => round32(x),
            DType::Weak | DType::F64 => x,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `x` rounded to the nearest f32 (ties to even), as an f64.
#[inline(always)]
pub fn round32(x: f64) -> f64 {
    x as f32 as f64
}

/// Rounds every element of `values` to f32 in place.
pub fn round32_slice(values: &mut [f64]) {
    for x in values {
        *x = round32(*x);
    }
}

/// An f32 array as f64 (exact).
pub fn widen(array: &ArrayD<f32>) -> ArrayD<f64> {
    array.mapv(f64::from)
}

/// An f64 array rounded to f32.
pub fn narrow(array: &ArrayD<f64>) -> ArrayD<f32> {
    array.mapv(|x| x as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_is_the_wider_strong_type() {
        assert_eq!(DType::F32.promote(DType::Weak), DType::F32);
        assert_eq!(DType::Weak.promote(DType::F32), DType::F32);
        assert_eq!(DType::F32.promote(DType::F64), DType::F64);
        assert_eq!(DType::Weak.promote(DType::Weak), DType::Weak);
        assert_eq!(DType::promote_all([]), DType::Weak);
        assert_eq!(DType::promote_all([DType::F32, DType::Weak]), DType::F32);
    }

    #[test]
    fn rounding_through_f64_is_single_precision_arithmetic() {
        // Double rounding is innocuous for + - * / and sqrt.
        let pairs = [
            (1.1f32, 3.3f32),
            (1e-30, 7.0),
            (16777217.0, 1.0),
            (0.1, 0.2),
            (3.0e38, 3.0e38),
            (1.0e-45, 0.5),
        ];
        for (a, b) in pairs {
            let (x, y) = (f64::from(a), f64::from(b));
            assert_eq!(round32(x + y), f64::from(a + b));
            assert_eq!(round32(x - y), f64::from(a - b));
            assert_eq!(round32(x * y), f64::from(a * b));
            assert_eq!(round32(x / y), f64::from(a / b));
            assert_eq!(round32(x.sqrt()), f64::from(a.sqrt()));
        }
    }

    #[test]
    fn names_round_trip() {
        for dtype in [DType::F32, DType::F64] {
            assert_eq!(DType::from_name(dtype.name()), Some(dtype));
        }
        assert_eq!(DType::from_name("float32"), Some(DType::F32));
        assert_eq!(DType::from_name("int8"), None);
    }
}
