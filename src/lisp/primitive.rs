//! Arithmetic and comparisons the evaluator runs inline on plain numbers.
//!
//! A call such as `(+ a b)` or `(< n 2)` whose head names one of these
//! built-ins is analysed into [`super::node::Node::Primitive`]. When it
//! runs, the head must still be bound to the same built-in (a program may
//! rebind `+`), and both arguments must be integers or floats; then the
//! result is computed here, without the general built-in call (keyword
//! options, dtype conversions, tracing, error decoration). Anything else —
//! tensors, traced values, integer overflow, division by the integer 0 —
//! returns `None` and goes through the built-in itself, which gives the
//! same value or error it always did. So this module changes speed, never
//! results.

use super::value::Value;

/// A plain number, unpacked from its [`Value`] (nothing to drop).
#[derive(Clone, Copy, Debug)]
pub enum Number {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl Number {
    /// The number `value` holds, if it is a plain integer or float.
    #[inline(always)]
    pub fn of(value: &Value) -> Option<Number> {
        match value {
            Value::Int(n) => Some(Number::Int(*n)),
            Value::Float(x) => Some(Number::Float(*x)),
            _ => None,
        }
    }
}

/// A built-in with an inline path for two plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `<`
    Less,
    /// `>`
    Greater,
    /// `<=`
    LessEq,
    /// `>=`
    GreaterEq,
    /// `=`
    Equal,
}

impl Primitive {
    /// The primitive behind the built-in `name`, if it has one.
    pub fn named(name: &str) -> Option<Primitive> {
        Some(match name {
            "+" => Primitive::Add,
            "-" => Primitive::Sub,
            "*" => Primitive::Mul,
            "/" => Primitive::Div,
            "<" => Primitive::Less,
            ">" => Primitive::Greater,
            "<=" => Primitive::LessEq,
            ">=" => Primitive::GreaterEq,
            "=" => Primitive::Equal,
            _ => return None,
        })
    }

    /// The value of the call on `a` and `b`, when both are plain numbers
    /// and the result needs none of the built-in's special cases.
    #[inline(always)]
    pub fn apply(self, a: &Value, b: &Value) -> Option<Value> {
        self.on_numbers(Number::of(a)?, Number::of(b)?)
    }

    /// [`Primitive::apply`] on numbers already unpacked.
    #[inline(always)]
    pub fn on_numbers(self, a: Number, b: Number) -> Option<Value> {
        match (a, b) {
            (Number::Int(x), Number::Int(y)) => self.on_integers(x, y),
            (Number::Float(x), Number::Float(y)) => Some(self.on_floats(x, y)),
            (Number::Int(x), Number::Float(y)) => Some(self.on_floats(x as f64, y)),
            (Number::Float(x), Number::Int(y)) => match (self, y) {
                (Primitive::Div, 0) => None,
                _ => Some(self.on_floats(x, y as f64)),
            },
        }
    }

    /// Integers stay integers under `+ - *` (overflow goes to the built-in,
    /// which reports it); `/` gives a float; comparisons are exact.
    #[inline(always)]
    fn on_integers(self, x: i64, y: i64) -> Option<Value> {
        Some(match self {
            Primitive::Add => Value::Int(x.checked_add(y)?),
            Primitive::Sub => Value::Int(x.checked_sub(y)?),
            Primitive::Mul => Value::Int(x.checked_mul(y)?),
            Primitive::Div if y == 0 => return None,
            Primitive::Div => Value::Float(x as f64 / y as f64),
            Primitive::Less => Value::Bool(x < y),
            Primitive::Greater => Value::Bool(x > y),
            Primitive::LessEq => Value::Bool(x <= y),
            Primitive::GreaterEq => Value::Bool(x >= y),
            Primitive::Equal => Value::Bool(x == y),
        })
    }

    #[inline(always)]
    fn on_floats(self, x: f64, y: f64) -> Value {
        match self {
            Primitive::Add => Value::Float(x + y),
            Primitive::Sub => Value::Float(x - y),
            Primitive::Mul => Value::Float(x * y),
            Primitive::Div => Value::Float(x / y),
            Primitive::Less => Value::Bool(x < y),
            Primitive::Greater => Value::Bool(x > y),
            Primitive::LessEq => Value::Bool(x <= y),
            Primitive::GreaterEq => Value::Bool(x >= y),
            Primitive::Equal => Value::Bool(x == y),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Primitive;
    use crate::lisp::Interp;
    use crate::lisp::value::Value;
    use proptest::prelude::*;

    const NAMES: [&str; 9] = ["+", "-", "*", "/", "<", ">", "<=", ">=", "="];

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            (-5i64..5).prop_map(Value::Int),
            any::<i64>().prop_map(Value::Int),
            prop_oneof![
                Just(0.0),
                Just(-0.0),
                Just(f64::NAN),
                Just(f64::INFINITY),
                -1e3f64..1e3
            ]
            .prop_map(Value::Float),
        ]
    }

    proptest! {
        /// The inline path agrees with the built-in on every pair of
        /// numbers it accepts (same type, same bits), and declines exactly
        /// where the built-in has a special case.
        #[test]
        fn inline_results_are_the_builtins(which in 0..9usize, a in number(), b in number()) {
            let name = NAMES[which];
            let primitive = Primitive::named(name).expect("every name has a primitive");
            let mut interp = Interp::new().expect("prelude loads");
            let builtin = interp.global(crate::lisp::symbol::Symbol::intern(name)).expect("bound");
            let general = interp.apply(&builtin, vec![a.clone(), b.clone()]);
            match (primitive.apply(&a, &b), general) {
                (Some(inline), Ok(value)) => {
                    prop_assert_eq!(inline.type_name(), value.type_name());
                    prop_assert_eq!(format!("{inline:?}"), format!("{value:?}"));
                }
                (Some(inline), Err(error)) => {
                    prop_assert!(false, "({name} {a:?} {b:?}): inline {inline:?}, built-in error {error}");
                }
                (None, Ok(value)) => {
                    // Declining is only for the built-in's special cases.
                    let special = matches!((&a, &b), (Value::Int(_), Value::Int(_))) || matches!(b, Value::Int(0));
                    prop_assert!(special, "({name} {a:?} {b:?}) declined, built-in gave {value:?}");
                }
                (None, Err(_)) => {}
            }
        }
    }
}
