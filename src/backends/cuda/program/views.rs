//! Index maps not yet materialized. A `slice`, `broadcast`, `transpose`,
//! `roll` or `pad` of device memory is planned as a [`View`]: the
//! coordinate, along each axis of the memory it reads, of the element at
//! given coordinates of its result, and the bounds a coordinate must keep
//! for the element to be read rather than be 0 (a pad's zeros). A fused group reading a view reads the
//! memory through it (one kernel instead of one per index map and one
//! for the group, and no intermediate array); a view of a view composes;
//! any other operation gets the view materialized first, by one kernel.

use crate::ir::{Shape, TOp};

/// A coordinate along one axis of the memory read, as an expression of
/// the result's coordinates `c0, c1, ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coord {
    /// The result's coordinate along this axis.
    Out(usize),
    /// Always 0 (an axis of length 1).
    Zero,
    /// An expression plus a constant.
    Shift(Box<Coord>, i64),
    /// An expression modulo a length.
    Wrap(Box<Coord>, usize),
}

impl Coord {
    /// This coordinate with each `Out(j)` replaced by `outer[j]`.
    fn substitute(&self, outer: &[Coord]) -> Coord {
        match self {
            Coord::Out(j) => outer.get(*j).cloned().unwrap_or(Coord::Zero),
            Coord::Zero => Coord::Zero,
            Coord::Shift(inner, by) => Coord::Shift(Box::new(inner.substitute(outer)), *by),
            Coord::Wrap(inner, len) => Coord::Wrap(Box::new(inner.substitute(outer)), *len),
        }
    }

    /// The C expression, over coordinates named `c{k}`.
    fn expression(&self) -> String {
        match self {
            Coord::Out(j) => format!("c{j}"),
            Coord::Zero => "0LL".to_string(),
            Coord::Shift(inner, by) if *by < 0 => format!("({} - {}LL)", inner.expression(), -by),
            Coord::Shift(inner, by) => format!("({} + {by}LL)", inner.expression()),
            Coord::Wrap(inner, len) => format!("({} % {len}LL)", inner.expression()),
        }
    }
}

/// An index map of memory holding `source`'s elements row-major, giving
/// an array of `shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// The shape of the memory read.
    pub source: Shape,
    /// The shape of the result.
    pub shape: Shape,
    /// Per axis of `source`, its coordinate for result coordinates.
    pub coords: Vec<Coord>,
    /// Coordinates (of the memory read, before any later map) that must
    /// lie in `0..len` for the element to be read; where one does not,
    /// the element is 0.
    pub bounds: Vec<(Coord, usize)>,
}

impl View {
    /// The identity map of memory of `shape`.
    pub fn of(shape: &[usize]) -> View {
        View {
            source: shape.into(),
            shape: shape.into(),
            coords: (0..shape.len()).map(Coord::Out).collect(),
            bounds: Vec::new(),
        }
    }

    /// `op` applied to this view, giving `shape`; `None` where `op` is no
    /// index map of one operand.
    pub fn then(&self, op: &TOp, shape: &[usize]) -> Option<View> {
        let operand = &self.shape;
        // Per axis of the operand, its coordinate for result coordinates.
        let step: Vec<Coord> = match op {
            TOp::Slice { axis, start, .. } => (0..operand.len())
                .map(|k| match k == usize::from(*axis) {
                    true if *start > 0 => Coord::Shift(Box::new(Coord::Out(k)), *start as i64),
                    _ => Coord::Out(k),
                })
                .collect(),
            TOp::Pad { axis, before, .. } => {
                let axis = usize::from(*axis);
                let len = *operand.get(axis)?;
                let padded = match *before {
                    0 => Coord::Out(axis),
                    before => Coord::Shift(Box::new(Coord::Out(axis)), -(before as i64)),
                };
                let step: Vec<Coord> = (0..operand.len())
                    .map(|k| {
                        if k == axis {
                            padded.clone()
                        } else {
                            Coord::Out(k)
                        }
                    })
                    .collect();
                let mut bounds: Vec<(Coord, usize)> = self
                    .bounds
                    .iter()
                    .map(|(c, len)| (c.substitute(&step), *len))
                    .collect();
                bounds.push((padded, len));
                return Some(View {
                    source: self.source.clone(),
                    shape: shape.into(),
                    coords: self.coords.iter().map(|c| c.substitute(&step)).collect(),
                    bounds,
                });
            }
            TOp::Broadcast(_) => {
                let lead = shape.len().checked_sub(operand.len())?;
                operand
                    .iter()
                    .enumerate()
                    .map(|(k, &dim)| {
                        if dim == 1 {
                            Coord::Zero
                        } else {
                            Coord::Out(k + lead)
                        }
                    })
                    .collect()
            }
            TOp::Transpose(perm) => (0..operand.len())
                .map(|k| Coord::Out(perm.iter().position(|&p| usize::from(p) == k).unwrap_or(k)))
                .collect(),
            TOp::Roll { axis, shift } => {
                let axis = usize::from(*axis);
                let len = *operand.get(axis)?;
                (0..operand.len())
                    .map(|k| {
                        if k == axis && len > 1 && shift % len != 0 {
                            Coord::Wrap(
                                Box::new(Coord::Shift(
                                    Box::new(Coord::Out(k)),
                                    (len - shift % len) as i64,
                                )),
                                len,
                            )
                        } else {
                            Coord::Out(k)
                        }
                    })
                    .collect()
            }
            _ => return None,
        };
        Some(View {
            source: self.source.clone(),
            shape: shape.into(),
            coords: self.coords.iter().map(|c| c.substitute(&step)).collect(),
            bounds: self
                .bounds
                .iter()
                .map(|(c, len)| (c.substitute(&step), *len))
                .collect(),
        })
    }

    /// The result's coordinates as coordinates of `over`, into which it is
    /// broadcast (right-aligned).
    fn outer(&self, over: &[usize]) -> Vec<Coord> {
        let lead = over.len().saturating_sub(self.shape.len());
        self.shape
            .iter()
            .enumerate()
            .map(|(k, &dim)| {
                if dim > 1 {
                    Coord::Out(k + lead)
                } else {
                    Coord::Zero
                }
            })
            .collect()
    }

    /// The C condition under which the element at coordinates `c0, c1,
    /// ...` of `over` is read (`None`: always).
    pub fn condition(&self, over: &[usize]) -> Option<String> {
        if self.bounds.is_empty() {
            return None;
        }
        let outer = self.outer(over);
        let terms: Vec<String> = self
            .bounds
            .iter()
            .map(|(coord, len)| {
                let e = coord.substitute(&outer).expression();
                format!("{e} >= 0LL && {e} < {len}LL")
            })
            .collect();
        Some(terms.join(" && "))
    }

    /// The C expression of the offset read for the element at coordinates
    /// `c0, c1, ...` of `over`, into which the view's result is broadcast
    /// (right-aligned).
    pub fn offset(&self, over: &[usize]) -> String {
        let outer = self.outer(over);
        let mut stride = 1usize;
        let mut terms = Vec::new();
        for (coord, dim) in self.coords.iter().zip(&self.source).rev() {
            if *dim > 1 {
                let coord = coord.substitute(&outer);
                if coord != Coord::Zero {
                    terms.push(format!("{} * {stride}LL", coord.expression()));
                }
            }
            stride *= dim;
        }
        if terms.is_empty() {
            "0LL".to_string()
        } else {
            terms.join(" + ")
        }
    }
}

/// Whether `op` can be planned as a view of its one operand.
pub fn is_view(op: &TOp) -> bool {
    matches!(
        op,
        TOp::Slice { .. }
            | TOp::Broadcast(_)
            | TOp::Transpose(_)
            | TOp::Roll { .. }
            | TOp::Pad { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element a view reads at each result position (`None`: a 0),
    /// by evaluating its condition and offset expressions.
    fn read(view: &View) -> Vec<Option<i64>> {
        let n: usize = view.shape.iter().product();
        let strides: Vec<usize> = (0..view.shape.len())
            .map(|k| view.shape[k + 1..].iter().product())
            .collect();
        let substituted = |expression: &str, i: usize| {
            let mut text = expression.replace("LL", "");
            for k in (0..view.shape.len()).rev() {
                let c = (i / strides[k]) % view.shape[k];
                text = text.replace(&format!("c{k}"), &c.to_string());
            }
            text
        };
        let offset = view.offset(&view.shape);
        let condition = view.condition(&view.shape);
        (0..n)
            .map(|i| {
                let inside = condition.as_ref().is_none_or(|c| {
                    c.split("&&").collect::<Vec<_>>().chunks(2).all(|pair| {
                        let low = pair[0].replace(">= 0", "");
                        let (value, len) = pair[1].split_once('<').unwrap();
                        let value = evaluate(&substituted(value, i));
                        evaluate(&substituted(&low, i)) >= 0
                            && value < evaluate(&len.replace("LL", ""))
                    })
                });
                inside.then(|| evaluate(&substituted(&offset, i)))
            })
            .collect()
    }

    /// The offsets read, where every element is read.
    fn reads(view: &View) -> Vec<i64> {
        read(view).into_iter().map(Option::unwrap).collect()
    }

    /// Evaluates `+`, `-`, `*`, `%` and parentheses over integers.
    fn evaluate(text: &str) -> i64 {
        fn sum(tokens: &[&str], at: &mut usize) -> i64 {
            let mut value = product(tokens, at);
            while let Some(&op) = tokens.get(*at).filter(|t| **t == "+" || **t == "-") {
                *at += 1;
                let rhs = product(tokens, at);
                value = if op == "+" { value + rhs } else { value - rhs };
            }
            value
        }
        fn product(tokens: &[&str], at: &mut usize) -> i64 {
            let mut value = atom(tokens, at);
            while let Some(&op) = tokens.get(*at).filter(|t| **t == "*" || **t == "%") {
                *at += 1;
                let rhs = atom(tokens, at);
                value = if op == "*" { value * rhs } else { value % rhs };
            }
            value
        }
        fn atom(tokens: &[&str], at: &mut usize) -> i64 {
            let token = tokens[*at];
            *at += 1;
            if token == "(" {
                let value = sum(tokens, at);
                *at += 1;
                value
            } else {
                token.parse().unwrap()
            }
        }
        let spaced = text.replace('(', " ( ").replace(')', " ) ");
        let tokens: Vec<&str> = spaced.split_whitespace().collect();
        sum(&tokens, &mut 0)
    }

    #[test]
    fn composed_views_read_what_the_operations_would_give() {
        // [[0 1 2] [3 4 5]]: transpose, roll along the first axis by 1,
        // slice rows 1..3, broadcast to [2 2 2].
        let base = View::of(&[2, 3]);
        let transposed = base
            .then(&TOp::Transpose(vec![1, 0].into()), &[3, 2])
            .unwrap();
        assert_eq!(reads(&transposed), [0, 3, 1, 4, 2, 5]);
        let rolled = transposed
            .then(&TOp::Roll { axis: 0, shift: 1 }, &[3, 2])
            .unwrap();
        assert_eq!(reads(&rolled), [2, 5, 0, 3, 1, 4]);
        let sliced = rolled
            .then(
                &TOp::Slice {
                    axis: 0,
                    start: 1,
                    end: 3,
                },
                &[2, 2],
            )
            .unwrap();
        assert_eq!(reads(&sliced), [0, 3, 1, 4]);
        let broadcast = sliced
            .then(&TOp::Broadcast(vec![2, 2, 2].into()), &[2, 2, 2])
            .unwrap();
        assert_eq!(reads(&broadcast), [0, 3, 1, 4, 0, 3, 1, 4]);
        // A column broadcast along rows reads its one element per row.
        let column = View::of(&[3, 1])
            .then(&TOp::Broadcast(vec![3, 4].into()), &[3, 4])
            .unwrap();
        assert_eq!(reads(&column), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
        assert!(
            base.then(&TOp::Reshape(vec![3, 2].into()), &[3, 2])
                .is_none()
        );
        // A pad reads inside its operand and gives 0 outside; a slice of
        // a padded roll keeps both.
        let padded = View::of(&[3])
            .then(
                &TOp::Pad {
                    axis: 0,
                    before: 2,
                    after: 1,
                },
                &[6],
            )
            .unwrap();
        assert_eq!(read(&padded), [None, None, Some(0), Some(1), Some(2), None]);
        let rolled = padded.then(&TOp::Roll { axis: 0, shift: 1 }, &[6]).unwrap();
        let sliced = rolled
            .then(
                &TOp::Slice {
                    axis: 0,
                    start: 2,
                    end: 6,
                },
                &[4],
            )
            .unwrap();
        assert_eq!(read(&sliced), [None, Some(0), Some(1), Some(2)]);
    }
}
