//! `histogram`, `heatmap` and `contour`: their arguments and options read
//! into a `plot::Chart`, drawn and written (or shown in a notebook) as
//! `plot.rs` does for line charts.

use super::plot::{bounds_option, flag, frame, list_numbers, one_argument, output, target};
use super::{builtin, tensor_make::array_from, with_options};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use crate::plot::contour::even_levels;
use crate::plot::{Bins, Body, Chart, ContourChart, Grid, HeatmapChart, HistogramChart};

/// Most bins a histogram may have.
const MAX_BINS: i64 = 100_000;
/// Most contour levels.
const MAX_LEVELS: i64 = 1_000;

/// A count option between 1 and `most`, or `default`.
fn count_option(args: &Args, name: &str, default: usize, most: i64) -> EvalResult<usize> {
    let Some(value) = args.option(name) else {
        return Ok(default);
    };
    let count = value.as_i64().map_err(|_| {
        EvalError::type_error(format!(
            ":{name} must be a whole number, got {} {}",
            value.type_name(),
            value.short()
        ))
    })?;
    if !(1..=most).contains(&count) {
        return Err(EvalError::range(format!(
            ":{name} must be between 1 and {most}, got {count}"
        )));
    }
    Ok(count as usize)
}

/// An optional finite number option.
fn number_option(args: &Args, name: &str) -> EvalResult<Option<f64>> {
    let Some(value) = args.option(name) else {
        return Ok(None);
    };
    match value.as_f64() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(EvalError::type_error(format!(
            ":{name} must be a finite number, got {}",
            value.short()
        ))),
    }
}

/// The values of histogram data: a tensor of any shape (flattened) or a
/// list of numbers.
fn sample(value: &Value) -> EvalResult<Vec<f64>> {
    match value {
        Value::Tensor(_) | Value::TensorF32(_) => Ok(value.as_tensor()?.iter().copied().collect()),
        Value::Nil | Value::Pair(_) => list_numbers(value, "the data"),
        other => Err(EvalError::type_error(format!(
            "histogram takes a tensor or a list of numbers, got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

fn histogram(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (rest, target) = target(interp, "histogram", args.values, 1)?;
    let data = sample(one_argument("histogram", rest)?)?;
    let n_bins = count_option(args, "bins", 10, MAX_BINS)?;
    let bins = Bins::new(&data, n_bins, bounds_option(args, "range")?)?;
    let chart = Chart {
        frame: frame(args)?,
        body: Body::Histogram(HistogramChart {
            bins,
            density: flag(args, "density"),
        }),
    };
    output(interp, target, &chart)
}

/// The grid of a 2-D tensor (or a list of rows) given to `name`, with at
/// least `least` rows and columns.
fn grid(value: &Value, name: &str, least: usize) -> EvalResult<Grid> {
    let array = match value {
        Value::Tensor(_) | Value::TensorF32(_) => (*value.as_tensor()?).clone(),
        Value::Pair(_) => array_from(value)?,
        other => {
            return Err(EvalError::type_error(format!(
                "{name} takes a 2-D tensor, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    let shape = array.shape();
    if shape.len() != 2 {
        return Err(EvalError::shape(format!(
            "{name} takes a 2-D tensor (rows are y, columns x), got a tensor of shape {}",
            format_shape(shape)
        )));
    }
    let (rows, cols) = (shape[0], shape[1]);
    if rows < least || cols < least {
        return Err(EvalError::shape(format!(
            "{name} needs at least {least} row{s} and {least} column{s}, got a tensor of shape {}",
            format_shape(shape),
            s = if least == 1 { "" } else { "s" }
        )));
    }
    Ok(Grid {
        rows,
        cols,
        values: array.iter().copied().collect(),
    })
}

fn no_finite_value(name: &str) -> EvalError {
    EvalError::range(format!(
        "nothing to plot: the tensor given to {name} has no finite value"
    ))
}

fn heatmap(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (rest, target) = target(interp, "heatmap", args.values, 1)?;
    let grid = grid(one_argument("heatmap", rest)?, "heatmap", 1)?;
    let extent = grid.finite_extent();
    let lo = match (number_option(args, "vmin")?, extent) {
        (Some(v), _) => v,
        (None, Some((lo, _))) => lo,
        (None, None) => return Err(no_finite_value("heatmap")),
    };
    let hi = match (number_option(args, "vmax")?, extent) {
        (Some(v), _) => v,
        (None, Some((_, hi))) => hi,
        (None, None) => return Err(no_finite_value("heatmap")),
    };
    if lo > hi {
        return Err(EvalError::range(format!(
            "the colour range is empty: :vmin {lo} is above :vmax {hi}"
        )));
    }
    let chart = Chart {
        frame: frame(args)?,
        body: Body::Heatmap(HeatmapChart {
            x_range: bounds_option(args, "x-range")?.unwrap_or((0.0, grid.cols as f64)),
            y_range: bounds_option(args, "y-range")?.unwrap_or((0.0, grid.rows as f64)),
            grid,
            colors: (lo, hi),
            colorbar: args.option("colorbar").is_none_or(Value::is_truthy),
        }),
    };
    output(interp, target, &chart)
}

/// The levels of a contour plot: `:levels n` evenly spaced inside the
/// data's range (default 10), or a list of values.
fn levels(args: &Args, extent: (f64, f64)) -> EvalResult<Vec<f64>> {
    match args.option("levels") {
        Some(list @ (Value::Pair(_) | Value::Nil)) => {
            let levels = list_numbers(list, ":levels")?;
            if levels.is_empty() || levels.len() > MAX_LEVELS as usize {
                return Err(EvalError::range(format!(
                    ":levels must list between 1 and {MAX_LEVELS} values, got {}",
                    levels.len()
                )));
            }
            if let Some(bad) = levels.iter().find(|v| !v.is_finite()) {
                return Err(EvalError::range(format!(
                    ":levels must be finite numbers, got {bad}"
                )));
            }
            Ok(levels)
        }
        _ => Ok(even_levels(
            extent.0,
            extent.1,
            count_option(args, "levels", 10, MAX_LEVELS)?,
        )),
    }
}

fn contour(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (rest, target) = target(interp, "contour", args.values, 1)?;
    let grid = grid(one_argument("contour", rest)?, "contour", 2)?;
    let extent = grid
        .finite_extent()
        .ok_or_else(|| no_finite_value("contour"))?;
    let chart = Chart {
        frame: frame(args)?,
        body: Body::Contour(ContourChart {
            levels: levels(args, extent)?,
            x_range: bounds_option(args, "x-range")?.unwrap_or((0.0, (grid.cols - 1) as f64)),
            y_range: bounds_option(args, "y-range")?.unwrap_or((0.0, (grid.rows - 1) as f64)),
            grid,
            colorbar: flag(args, "colorbar"),
        }),
    };
    output(interp, target, &chart)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("histogram", "(histogram data [path] :bins 10 :range (list lo hi) :density #t :title s :xlabel s :ylabel s :width px :height px)", "Draws a histogram of data (a tensor of any shape, flattened, or a list of numbers): :bins equal bins over :range (default the smallest to the largest finite value), bars of counts or, with :density #t, of count / (total * bin width). Bins are half-open except the last, which holds its right edge, as in NumPy; NaN, infinite and out-of-range values are left out. Path and the other options as for plot.", 1, Some(2), histogram), &["bins", "range", "density", "title", "xlabel", "ylabel", "width", "height"]),
    with_options(builtin("heatmap", "(heatmap t [path] :x-range (list x0 x1) :y-range (list y0 y1) :vmin v :vmax v :colorbar #t :title s :xlabel s :ylabel s :width px :height px)", "Draws a 2-D tensor (or a list of rows) as coloured cells, viridis from :vmin (default the smallest finite value) to :vmax (default the largest), with a colour bar unless :colorbar #f. Row 0 is at the bottom (rows are y, columns x); the cells fill :x-range and :y-range (default 0 to the number of columns and of rows). NaN cells are left blank; values beyond :vmin/:vmax take the end colours. Path and the other options as for plot.", 1, Some(2), heatmap), &["x-range", "y-range", "vmin", "vmax", "colorbar", "title", "xlabel", "ylabel", "width", "height"]),
    with_options(builtin("contour", "(contour t [path] :levels 10 :x-range (list x0 x1) :y-range (list y0 y1) :colorbar #t :title s :xlabel s :ylabel s :width px :height px)", "Draws the iso-lines of a 2-D tensor (at least 2×2; row 0 at the bottom), found by marching squares: :levels n values evenly spaced strictly between the smallest and largest finite value (default 10), or a list of values; each line coloured by its level (viridis), with a colour bar if :colorbar #t. The first and last columns lie at :x-range's ends (default 0 and columns - 1), the rows likewise. Squares with a NaN corner get no line. Path and the other options as for plot.", 1, Some(2), contour), &["levels", "x-range", "y-range", "colorbar", "title", "xlabel", "ylabel", "width", "height"]),
];
