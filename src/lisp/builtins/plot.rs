//! The Lisp side of charts: `plot` and `plot-lines` (lines, markers, error
//! bands), and what every chart built-in shares (`charts.rs` holds
//! `histogram`, `heatmap` and `contour`): reading vectors and options into
//! a `plot::Chart`, then writing the file (a temporary file renamed over
//! the target) and showing the chart inline when a notebook listens. A
//! chart's last argument is its path when it is a string; without one, the
//! chart is only shown inline, which needs a notebook.

use super::{builtin, string_option, with_options};
use crate::data::tree::write_atomically;
use crate::display::Rich;
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use crate::plot::{
    Body, Chart, Format, Frame, LineChart, PlotError, PlotErrorKind, Series, Style, render,
};

/// Accepted image sides in pixels: room for labels, and at most 48 MiB of
/// pixels.
const MIN_SIDE: i64 = 200;
const MAX_SIDE: i64 = 4096;

impl From<PlotError> for EvalError {
    fn from(err: PlotError) -> EvalError {
        let kind = match err.kind {
            PlotErrorKind::Data => EvalErrorKind::Range,
            PlotErrorKind::Drawing => EvalErrorKind::Io,
            PlotErrorKind::Internal => EvalErrorKind::Internal,
        };
        EvalError::new(kind, err.message)
    }
}

/// Where a chart goes.
pub(super) enum Target {
    /// Written to this path (and shown in a notebook).
    File(String, Format),
    /// Shown in the notebook only.
    Inline,
}

/// Splits the path off the positional arguments of `name`, which takes at
/// most `most` data arguments: a string last argument is the path; without
/// one the chart is shown inline, which needs a notebook.
pub(super) fn target<'a>(
    interp: &Interp,
    name: &str,
    values: &'a [Value],
    most: usize,
) -> EvalResult<(&'a [Value], Target)> {
    match values.split_last() {
        Some((last, _)) if values.len() > most && !matches!(last, Value::Str(_)) => {
            Err(path_must_be_a_string(last))
        }
        Some((Value::Str(path), rest)) => {
            let format = Format::of(path).ok_or_else(|| {
                EvalError::range(format!(
                    "cannot tell the image format of {path:?}: the file name must end in .png or .svg"
                ))
            })?;
            Ok((rest, Target::File(path.to_string(), format)))
        }
        _ if interp.shows_rich() => Ok((values, Target::Inline)),
        _ => Err(EvalError::new(
            EvalErrorKind::Arity,
            format!(
                "{name} needs a file path ending in .png or .svg as its last argument outside a notebook (only a notebook shows a chart without writing it)"
            ),
        )),
    }
}

/// Draws `chart` to its target: writes the file through a temporary file
/// renamed over it, and shows the chart inline when a notebook listens.
/// Returns the path, or void for a chart only shown.
pub(super) fn output(interp: &mut Interp, target: Target, chart: &Chart) -> EvalResult<Value> {
    match target {
        Target::File(path, format) => {
            let bytes = render(chart, format)?;
            write_atomically(&path, &bytes).map_err(EvalError::io)?;
            if interp.shows_rich() {
                show_inline(interp, chart, Some((format, bytes)))?;
            }
            Ok(Value::string(path))
        }
        Target::Inline => {
            show_inline(interp, chart, None)?;
            Ok(Value::Void)
        }
    }
}

/// Offers the chart to the rich front end as PNG and SVG (reusing the
/// file's bytes, when written, for its format).
fn show_inline(
    interp: &mut Interp,
    chart: &Chart,
    written: Option<(Format, Vec<u8>)>,
) -> EvalResult<()> {
    let (png, svg) = match written {
        Some((Format::Png, png)) => (png, render(chart, Format::Svg)?),
        Some((Format::Svg, svg)) => (render(chart, Format::Png)?, svg),
        None => (render(chart, Format::Png)?, render(chart, Format::Svg)?),
    };
    let svg = String::from_utf8(svg).map_err(|err| {
        EvalError::new(EvalErrorKind::Internal, format!("SVG is not text: {err}"))
    })?;
    interp.show(Rich::Image {
        png,
        svg,
        width: chart.frame.width,
        height: chart.frame.height,
    });
    Ok(())
}

/// The numbers of a vector argument: a 1-D tensor, a tensor with one axis
/// longer than 1 (an n×1 column or 1×n row), or a list of numbers.
pub(super) fn numbers(value: &Value, what: &str) -> EvalResult<Vec<f64>> {
    match value {
        Value::Tensor(_) | Value::TensorF32(_) => {
            let t = value.as_tensor()?;
            let long_axes = t.shape().iter().filter(|&&d| d != 1).count();
            if t.ndim() == 0 || t.ndim() > 2 || long_axes > 1 {
                return Err(EvalError::shape(format!(
                    "{what} must be a vector (a 1-D tensor or a list of numbers), got a tensor of shape {}",
                    format_shape(t.shape())
                )));
            }
            Ok(t.iter().copied().collect())
        }
        Value::Nil | Value::Pair(_) => list_numbers(value, what),
        other => Err(EvalError::type_error(format!(
            "{what} must be a vector (a 1-D tensor or a list of numbers), got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
}

/// The numbers of a list.
pub(super) fn list_numbers(list: &Value, what: &str) -> EvalResult<Vec<f64>> {
    list.list_to_vec()?
        .iter()
        .enumerate()
        .map(|(k, item)| match item {
            Value::Int(n) => Ok(*n as f64),
            Value::Float(x) => Ok(*x),
            other => Err(EvalError::type_error(format!(
                "{what}: element {k} is {} {}, not a number",
                other.type_name(),
                other.short()
            ))),
        })
        .collect()
}

/// An image side option, if given.
fn side_option(args: &Args, name: &str, default: u32) -> EvalResult<u32> {
    let Some(value) = args.option(name) else {
        return Ok(default);
    };
    let side = value.as_i64().map_err(|_| {
        EvalError::type_error(format!(
            ":{name} must be an integer number of pixels, got {} {}",
            value.type_name(),
            value.short()
        ))
    })?;
    if !(MIN_SIDE..=MAX_SIDE).contains(&side) {
        return Err(EvalError::range(format!(
            ":{name} must be between {MIN_SIDE} and {MAX_SIDE} pixels, got {side}"
        )));
    }
    Ok(side as u32)
}

/// The options every chart takes: title, axis labels, size.
pub(super) fn frame(args: &Args) -> EvalResult<Frame> {
    let defaults = Frame::default();
    Ok(Frame {
        title: string_option(args, "title")?,
        xlabel: string_option(args, "xlabel")?,
        ylabel: string_option(args, "ylabel")?,
        width: side_option(args, "width", defaults.width)?,
        height: side_option(args, "height", defaults.height)?,
    })
}

/// Whether a yes/no option is given and true.
pub(super) fn flag(args: &Args, name: &str) -> bool {
    args.option(name).is_some_and(Value::is_truthy)
}

/// An option of two increasing finite numbers, `(list lo hi)`.
pub(super) fn bounds_option(args: &Args, name: &str) -> EvalResult<Option<(f64, f64)>> {
    let Some(value) = args.option(name) else {
        return Ok(None);
    };
    let bad = || {
        EvalError::type_error(format!(
            ":{name} must be (list lo hi), two finite numbers with lo < hi, got {}",
            value.short()
        ))
    };
    let pair = match value {
        Value::Pair(_) => list_numbers(value, &format!(":{name}")).map_err(|_| bad())?,
        Value::Tensor(_) | Value::TensorF32(_) => numbers(value, &format!(":{name}"))?,
        _ => return Err(bad()),
    };
    match pair[..] {
        [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => Ok(Some((lo, hi))),
        [_, _] => Err(EvalError::range(format!(
            ":{name} must be two finite numbers with lo < hi, got {}",
            value.short()
        ))),
        _ => Err(bad()),
    }
}

/// The one data argument of a chart of one argument, after its path.
pub(super) fn one_argument<'a>(name: &str, rest: &'a [Value]) -> EvalResult<&'a Value> {
    match rest {
        [data] => Ok(data),
        [] => Err(EvalError::new(
            EvalErrorKind::Arity,
            format!("{name} needs data before the path"),
        )),
        [_, extra, ..] => Err(path_must_be_a_string(extra)),
    }
}

pub(super) fn path_must_be_a_string(value: &Value) -> EvalError {
    EvalError::type_error(format!(
        "the path must be a string, got {} {}",
        value.type_name(),
        value.short()
    ))
}

/// xs (if given) and the data argument, from `[xs] data` (the path split off).
fn xs_and_data<'a>(name: &str, rest: &'a [Value]) -> EvalResult<(Option<Vec<f64>>, &'a Value)> {
    let (xs, data) = match rest {
        [data] => (None, data),
        [xs, data] => (Some(numbers(xs, "xs")?), data),
        [] => {
            return Err(EvalError::new(
                EvalErrorKind::Arity,
                format!("{name} needs data before the path"),
            ));
        }
        [_, _, extra, ..] => return Err(path_must_be_a_string(extra)),
    };
    if xs.as_ref().is_some_and(Vec::is_empty) {
        return Err(EvalError::range("xs is empty: nothing to plot"));
    }
    Ok((xs, data))
}

/// The xs of a series: the given ones (of the series' length) or 0, 1, ...
fn xs_for(xs: Option<&[f64]>, n: usize, what: &str) -> EvalResult<Vec<f64>> {
    match xs {
        Some(xs) if xs.len() != n => Err(EvalError::shape(format!(
            "xs has {} values but {what} has {n}",
            xs.len()
        ))),
        Some(xs) => Ok(xs.to_vec()),
        None => Ok((0..n).map(|i| i as f64).collect()),
    }
}

/// A style by name.
fn style(value: &Value, what: &str) -> EvalResult<Style> {
    let name = match value {
        Value::Str(text) => Some(text.as_str()),
        _ => None,
    };
    name.and_then(Style::parse).ok_or_else(|| {
        EvalError::type_error(format!(
            "{what} must be \"line\", \"scatter\" or \"both\", got {}",
            value.short()
        ))
    })
}

/// A band `(list lo hi)` for a series of `n` points.
fn band(value: &Value, n: usize, what: &str) -> EvalResult<(Vec<f64>, Vec<f64>)> {
    let items = match value {
        Value::Pair(_) => value.list_to_vec()?,
        _ => Vec::new(),
    };
    let [lo, hi] = &items[..] else {
        return Err(EvalError::type_error(format!(
            "{what} must be (list lo hi), two vectors of the series' length, got {}",
            value.short()
        )));
    };
    let lo = numbers(lo, &format!("{what}'s lo"))?;
    let hi = numbers(hi, &format!("{what}'s hi"))?;
    for (edge, name) in [(&lo, "lo"), (&hi, "hi")] {
        if edge.len() != n {
            return Err(EvalError::shape(format!(
                "{what}'s {name} has {} values but the series has {n}",
                edge.len()
            )));
        }
    }
    Ok((lo, hi))
}

/// The chart of line series from the options every line chart takes.
fn line_chart(args: &Args, series: Vec<Series>, legend: bool) -> EvalResult<Chart> {
    Ok(Chart {
        frame: frame(args)?,
        body: Body::Lines(LineChart {
            series,
            legend,
            log_x: flag(args, "log-x"),
            log_y: flag(args, "log-y"),
        }),
    })
}

fn plot(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (rest, target) = target(interp, "plot", args.values, 2)?;
    let (xs, ys) = xs_and_data("plot", rest)?;
    let ys = numbers(ys, "ys")?;
    if ys.is_empty() {
        return Err(EvalError::range("ys is empty: nothing to plot"));
    }
    let xs = xs_for(xs.as_deref(), ys.len(), "ys")?;
    let style = match args.option("style") {
        Some(value) => style(value, ":style")?,
        None => Style::Line,
    };
    let band = match args.option("band") {
        Some(value) => Some(band(value, ys.len(), ":band")?),
        None => None,
    };
    let line = Series {
        label: String::new(),
        xs,
        ys,
        style,
        band,
    };
    let chart = line_chart(args, vec![line], false)?;
    output(interp, target, &chart)
}

/// One series of `plot-lines`: a vector of ys (against the shared xs, or
/// 0, 1, ...), or an `(xs ys)` pair: a list whose first element is not a
/// number.
fn line_series(item: &Value, xs: Option<&[f64]>, k: usize) -> EvalResult<(Vec<f64>, Vec<f64>)> {
    let what = format!("series {k}");
    let pair = match item {
        Value::Pair(pair) if !matches!(pair.car, Value::Int(_) | Value::Float(_)) => {
            Some(item.list_to_vec()?)
        }
        _ => None,
    };
    let (xs, ys) = match pair.as_deref() {
        None => {
            let ys = numbers(item, &what)?;
            (xs_for(xs, ys.len(), &what)?, ys)
        }
        Some([own_xs, ys]) => {
            let own_xs = numbers(own_xs, &format!("{what}'s xs"))?;
            let ys = numbers(ys, &format!("{what}'s ys"))?;
            if own_xs.len() != ys.len() {
                return Err(EvalError::shape(format!(
                    "{what}'s xs has {} values but its ys has {}",
                    own_xs.len(),
                    ys.len()
                )));
            }
            (own_xs, ys)
        }
        Some(items) => {
            return Err(EvalError::type_error(format!(
                "{what} must be a vector of ys or a pair (list xs ys), got a list of {} non-numbers {}",
                items.len(),
                item.short()
            )));
        }
    };
    if ys.is_empty() {
        return Err(EvalError::range(format!(
            "{what} is empty: nothing to plot"
        )));
    }
    Ok((xs, ys))
}

/// A per-series option: `None` when not given, else one value per series
/// (a list of `n`, or with `single` one value for all).
fn per_series(
    args: &Args,
    name: &str,
    n: usize,
    single: impl Fn(&Value) -> bool,
) -> EvalResult<Option<Vec<Value>>> {
    let Some(value) = args.option(name) else {
        return Ok(None);
    };
    if single(value) {
        return Ok(Some(vec![value.clone(); n]));
    }
    let items = match value {
        Value::Nil | Value::Pair(_) => value.list_to_vec()?,
        other => {
            return Err(EvalError::type_error(format!(
                ":{name} must be a list with one entry per series, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    if items.len() != n {
        return Err(EvalError::shape(format!(
            ":{name} has {} entr{} for {n} series",
            items.len(),
            if items.len() == 1 { "y" } else { "ies" }
        )));
    }
    Ok(Some(items))
}

fn labels(args: &Args, n: usize) -> EvalResult<Vec<String>> {
    let Some(value) = args.option("labels") else {
        return Ok((1..=n).map(|k| format!("line {k}")).collect());
    };
    let not_strings = |found: &Value| {
        EvalError::type_error(format!(
            ":labels must be a list of strings, found {} {}",
            found.type_name(),
            found.short()
        ))
    };
    let labels = match value {
        Value::Nil | Value::Pair(_) => value
            .list_to_vec()?
            .iter()
            .map(|label| match label {
                Value::Str(text) => Ok(text.to_string()),
                other => Err(not_strings(other)),
            })
            .collect::<EvalResult<Vec<String>>>()?,
        other => return Err(not_strings(other)),
    };
    if labels.len() != n {
        return Err(EvalError::shape(format!(
            ":labels has {} label{} for {n} series",
            labels.len(),
            if labels.len() == 1 { "" } else { "s" },
        )));
    }
    Ok(labels)
}

fn plot_lines(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (rest, target) = target(interp, "plot-lines", args.values, 2)?;
    let (xs, data) = xs_and_data("plot-lines", rest)?;
    let items = match data {
        Value::Nil | Value::Pair(_) => data.list_to_vec()?,
        other => {
            return Err(EvalError::type_error(format!(
                "plot-lines takes a list of series (each a vector or a pair (list xs ys)), got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    if items.is_empty() {
        return Err(EvalError::range(
            "the list of series is empty: nothing to plot",
        ));
    }
    if matches!(items[0], Value::Int(_) | Value::Float(_)) {
        return Err(EvalError::type_error(
            "plot-lines takes a list of series, each a vector, and got a list of numbers (for one line use plot)",
        ));
    }
    let n = items.len();
    let labels = labels(args, n)?;
    let styles = per_series(args, "style", n, |v| matches!(v, Value::Str(_)))?;
    let bands = per_series(args, "band", n, |_| false)?;
    let mut lines = Vec::with_capacity(n);
    for (k, (item, label)) in items.iter().zip(labels).enumerate() {
        let (series_xs, ys) = line_series(item, xs.as_deref(), k + 1)?;
        let style = match &styles {
            Some(styles) => style(&styles[k], &format!(":style entry {}", k + 1))?,
            None => Style::Line,
        };
        let band = match bands.as_ref().map(|bands| &bands[k]) {
            None | Some(Value::Nil | Value::Bool(false)) => None,
            Some(value) => Some(band(value, ys.len(), &format!(":band entry {}", k + 1))?),
        };
        lines.push(Series {
            label,
            xs: series_xs,
            ys,
            style,
            band,
        });
    }
    let chart = line_chart(args, lines, true)?;
    output(interp, target, &chart)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("plot", "(plot [xs] ys [path] :style \"line\"|\"scatter\"|\"both\" :band (list lo hi) :title s :xlabel s :ylabel s :log-x #t :log-y #t :width px :height px)", "Draws ys against xs (default 0, 1, ...) as a line (or markers, :style) and writes the chart to path, a .png or .svg file (800x600 pixels unless :width/:height say otherwise), written to a temporary file and renamed; returns path. Without a path (the last argument not a string) a notebook shows the chart and the call returns nothing; elsewhere that is an error. xs, ys and the band's lo and hi are vectors: 1-D tensors, n×1 or 1×n tensors, or lists of numbers. :band shades the area between lo and hi. Axes span the data with a 5% margin. Points with a non-finite coordinate (and, on a log axis, values <= 0) are skipped, leaving a gap; it is an error if no point remains.", 1, Some(3), plot), &["style", "band", "title", "xlabel", "ylabel", "log-x", "log-y", "width", "height"]),
    with_options(builtin("plot-lines", "(plot-lines [xs] (list s1 s2 ...) [path] :labels (list l1 l2 ...) :style st-or-list :band (list b1 b2 ...) :title s :xlabel s :ylabel s :log-x #t :log-y #t :width px :height px)", "Draws each series as its own coloured line, with a legend of :labels (default line 1, line 2, ...), and writes the chart to path (.png or .svg); returns path. A series is a vector of ys, drawn against the shared xs (default 0, 1, ...), or a pair (list xs ys) with its own xs: a list whose first element is not a number is a pair. :style is one style for all or a list of one per series; :band is a list of one (list lo hi) or #f per series. Path, options and skipped points as for plot.", 1, Some(3), plot_lines), &["labels", "style", "band", "title", "xlabel", "ylabel", "log-x", "log-y", "width", "height"]),
];
