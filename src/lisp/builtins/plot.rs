//! Line plots written to PNG or SVG files with `plotters`: `plot` (one line)
//! and `plot-lines` (several, with a legend). Charts are drawn in memory
//! (the bitmap backend into a pixel buffer, encoded with `png`; the SVG
//! backend into a string) and then written, so a bad path is one clear I/O
//! error. Text is drawn with DejaVu Sans, bundled under `assets/fonts/` and
//! registered with plotters' `ab_glyph` font table once: no system font
//! library is involved.

use super::{builtin, string_option, with_options};
use crate::display::Rich;
use crate::lisp::error::{EvalError, EvalErrorKind, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::tensor::format_shape;
use crate::lisp::value::Value;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::register_font;
use std::ops::Range;
use std::sync::OnceLock;

/// DejaVu Sans (Bitstream Vera license; see assets/fonts/DejaVuSans-LICENSE.txt).
static DEJAVU_SANS: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Default image size in pixels.
const DEFAULT_WIDTH: u32 = 800;
const DEFAULT_HEIGHT: u32 = 600;
/// Accepted image sides in pixels: room for labels, and at most 48 MiB of
/// pixels.
const MIN_SIDE: i64 = 200;
const MAX_SIDE: i64 = 4096;

/// Line colours: matplotlib's "tab10", cycled.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Registers the bundled font under the generic family names plotters asks
/// for, once per process.
fn ensure_font() -> EvalResult<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        ["sans-serif", "serif", "monospace"]
            .iter()
            .all(|family| register_font(family, FontStyle::Normal, DEJAVU_SANS).is_ok())
    });
    if ok {
        Ok(())
    } else {
        Err(EvalError::new(
            EvalErrorKind::Internal,
            "the bundled font could not be loaded",
        ))
    }
}

/// The file format, from the path's extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Png,
    Svg,
}

fn format_of(path: &str) -> EvalResult<Format> {
    let extension = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => Ok(Format::Png),
        Some("svg") => Ok(Format::Svg),
        _ => Err(EvalError::range(format!(
            "cannot tell the image format of {path:?}: the file name must end in .png or .svg"
        ))),
    }
}

/// One line: its legend label and its points.
struct Series {
    label: String,
    xs: Vec<f64>,
    ys: Vec<f64>,
}

/// Everything a chart needs.
struct Chart {
    series: Vec<Series>,
    legend: bool,
    title: Option<String>,
    xlabel: Option<String>,
    ylabel: Option<String>,
    log_y: bool,
    /// A power of ten the linear y values are divided by before layout:
    /// plotters' tick search fails on spans far below 1 (values around
    /// 1e-20), so such data is laid out in units of `y_scale` and labelled
    /// with its true values.
    y_scale: f64,
    width: u32,
    height: u32,
}

/// The power of ten to lay out linear values of largest magnitude
/// `magnitude` in: 1 unless they are all tiny.
fn layout_scale(magnitude: f64) -> f64 {
    if magnitude > 0.0 && magnitude < 1e-8 {
        10f64.powi(magnitude.log10().floor() as i32)
    } else {
        1.0
    }
}

impl Chart {
    /// Whether point (x, y) is drawn: finite, and y positive on a log axis.
    fn drawn(&self, x: f64, y: f64) -> bool {
        x.is_finite() && y.is_finite() && (!self.log_y || y > 0.0)
    }

    /// Where y sits on the vertical axis: y itself, or log10 y with :log-y.
    /// (Log axes are drawn as linear axes of decades with 10^t tick labels:
    /// plotters' own log axis drops ticks under 2.2e-16 and never finishes
    /// its tick search past ~300 decades.)
    fn y_axis(&self, y: f64) -> f64 {
        if self.log_y {
            y.log10()
        } else {
            y / self.y_scale
        }
    }

    /// The label of tick `t` on the vertical axis spanning `span`.
    fn y_tick(&self, t: f64, span: f64) -> String {
        if !self.log_y {
            return tick_label(t * self.y_scale, span * self.y_scale);
        }
        let y = 10f64.powf(t);
        if y > 0.0 && y.is_finite() {
            // Labelled to its own magnitude; on an axis narrower than about
            // half a decade, to the spacing of y between ticks.
            tick_label(y, y * (span * std::f64::consts::LN_10).min(1.0))
        } else {
            format!("1e{}", trim_zeros(&format!("{t:.2}")))
        }
    }

    /// The axis ranges: the drawn points with a 5% margin (on the log scale,
    /// 5% of the decades spanned).
    fn ranges(&self) -> EvalResult<(Range<f64>, Range<f64>)> {
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = (f64::INFINITY, f64::NEG_INFINITY);
        for series in &self.series {
            for (&px, &py) in series.xs.iter().zip(&series.ys) {
                if self.drawn(px, py) {
                    x = (x.0.min(px), x.1.max(px));
                    y = (y.0.min(py), y.1.max(py));
                }
            }
        }
        if x.0 > x.1 {
            return Err(EvalError::range(if self.log_y {
                "nothing to plot: no point has a finite x and a positive finite y (:log-y skips y <= 0)"
            } else {
                "nothing to plot: no point has finite x and y values"
            }));
        }
        let x_range = padded(x.0, x.1).ok_or_else(|| too_wide("x"))?;
        let y_range = padded(self.y_axis(y.0), self.y_axis(y.1)).ok_or_else(|| too_wide("y"))?;
        Ok((x_range, y_range))
    }
}

fn too_wide(axis: &str) -> EvalError {
    EvalError::range(format!(
        "the {axis} values are too large in magnitude to lay out an axis"
    ))
}

/// `lo..hi` widened by 5% on each side; a single value, or a span under
/// 1e-10 of the values' magnitude (which plotters' tick search cannot
/// resolve), gets ±10% of its magnitude, or ±1 at zero. `None` when the
/// result does not fit in finite floats.
fn padded(lo: f64, hi: f64) -> Option<Range<f64>> {
    let span = hi - lo;
    let magnitude = lo.abs().max(hi.abs());
    let (lo, hi) = if span <= magnitude * 1e-10 {
        let center = lo / 2.0 + hi / 2.0;
        let half = if center == 0.0 {
            1.0
        } else {
            center.abs() * 0.1
        };
        (center - half, center + half)
    } else {
        (lo - span * 0.05, hi + span * 0.05)
    };
    (lo.is_finite() && hi.is_finite() && (hi - lo).is_finite() && lo < hi).then_some(lo..hi)
}

/// A tick label for `v` on an axis spanning `span`: as many decimals as
/// tell ticks apart, trailing zeros dropped, scientific notation outside
/// [1e-4, 1e6), and "0" for zero (no "-0.0" from rounding).
fn tick_label(v: f64, span: f64) -> String {
    let magnitude = v.abs();
    if magnitude <= span * 1e-9 || magnitude == 0.0 {
        return "0".to_string();
    }
    let step_digits = (-span.log10()).ceil() as i32 + 2;
    if !(1e-4..1e6).contains(&magnitude) {
        let digits = (magnitude.log10().floor() as i32 + step_digits).clamp(0, 15) as usize;
        let text = format!("{v:.digits$e}");
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
            None => text,
        };
    }
    let decimals = step_digits.clamp(0, 15) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// "2.50" → "2.5", "3.000" → "3".
fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// The numbers of a vector argument: a 1-D tensor, a tensor with one axis
/// longer than 1 (an n×1 column or 1×n row), or a list of numbers.
fn numbers(value: &Value, what: &str) -> EvalResult<Vec<f64>> {
    match value {
        Value::Tensor(t) => {
            let long_axes = t.shape().iter().filter(|&&d| d != 1).count();
            if t.ndim() == 0 || t.ndim() > 2 || long_axes > 1 {
                return Err(EvalError::shape(format!(
                    "{what} must be a vector (a 1-D tensor or a list of numbers), got a tensor of shape {}",
                    format_shape(t.shape())
                )));
            }
            Ok(t.iter().copied().collect())
        }
        Value::Nil | Value::Pair(_) => value
            .list_to_vec()?
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
            .collect(),
        other => Err(EvalError::type_error(format!(
            "{what} must be a vector (a 1-D tensor or a list of numbers), got {} {}",
            other.type_name(),
            other.short()
        ))),
    }
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

/// Checks one series against its xs (or numbers it 0, 1, ... when xs is
/// not given).
fn series(xs: Option<&[f64]>, ys: Vec<f64>, what: &str, label: String) -> EvalResult<Series> {
    if ys.is_empty() {
        return Err(EvalError::range(format!(
            "{what} is empty: nothing to plot"
        )));
    }
    let xs = match xs {
        Some(xs) if xs.len() != ys.len() => {
            return Err(EvalError::shape(format!(
                "xs has {} values but {what} has {}",
                xs.len(),
                ys.len()
            )));
        }
        Some(xs) => xs.to_vec(),
        None => (0..ys.len()).map(|i| i as f64).collect(),
    };
    Ok(Series { label, xs, ys })
}

/// xs (if given), the remaining positional argument and the path, for a call
/// with `[xs] data path`.
fn split_positional<'a>(args: &'a Args) -> EvalResult<(Option<Vec<f64>>, &'a Value, &'a str)> {
    let (xs, data, path) = match args.values {
        [data, path] => (None, data, path),
        [xs, data, path] => (Some(numbers(xs, "xs")?), data, path),
        _ => unreachable!("call_builtin checked the arity (2 or 3)"),
    };
    let path = path.as_str().map_err(|_| {
        EvalError::type_error(format!(
            "the path must be a string, got {} {}",
            path.type_name(),
            path.short()
        ))
    })?;
    if xs.as_ref().is_some_and(Vec::is_empty) {
        return Err(EvalError::range("xs is empty: nothing to plot"));
    }
    Ok((xs, data, path))
}

/// The shared options, then draws and writes the chart, and shows it in
/// a notebook when one listens.
fn finish(
    interp: &mut Interp,
    args: &Args,
    path: &str,
    series: Vec<Series>,
    legend: bool,
) -> EvalResult<Value> {
    let format = format_of(path)?;
    let log_y = args.option("log-y").is_some_and(Value::is_truthy);
    let largest = series
        .iter()
        .flat_map(|s| s.ys.iter())
        .filter(|y| y.is_finite())
        .fold(0.0f64, |m, y| m.max(y.abs()));
    let chart = Chart {
        series,
        legend,
        title: string_option(args, "title")?,
        xlabel: string_option(args, "xlabel")?,
        ylabel: string_option(args, "ylabel")?,
        log_y,
        y_scale: if log_y { 1.0 } else { layout_scale(largest) },
        width: side_option(args, "width", DEFAULT_WIDTH)?,
        height: side_option(args, "height", DEFAULT_HEIGHT)?,
    };
    let bytes = render(&chart, format)?;
    std::fs::write(path, bytes)
        .map_err(|err| EvalError::io(format!("cannot write {path}: {err}")))?;
    if interp.shows_rich() {
        show_inline(interp, &chart)?;
    }
    Ok(Value::string(path))
}

/// Offers the chart to the rich front end as PNG and SVG.
fn show_inline(interp: &mut Interp, chart: &Chart) -> EvalResult<()> {
    let png = render(chart, Format::Png)?;
    let svg = String::from_utf8(render(chart, Format::Svg)?).map_err(|err| {
        EvalError::new(EvalErrorKind::Internal, format!("SVG is not text: {err}"))
    })?;
    interp.show(Rich::Image {
        png,
        svg,
        width: chart.width,
        height: chart.height,
    });
    Ok(())
}

fn plot(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (xs, ys, path) = split_positional(args)?;
    let ys = numbers(ys, "ys")?;
    let line = series(xs.as_deref(), ys, "ys", String::new())?;
    finish(interp, args, path, vec![line], false)
}

fn plot_lines(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (xs, data, path) = split_positional(args)?;
    let items = match data {
        Value::Nil | Value::Pair(_) => data.list_to_vec()?,
        other => {
            return Err(EvalError::type_error(format!(
                "plot-lines takes a list of series (each a vector), got {} {}",
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
    let labels = match args.option("labels") {
        None => (1..=items.len()).map(|k| format!("line {k}")).collect(),
        Some(value @ (Value::Nil | Value::Pair(_))) => {
            let labels = value
                .list_to_vec()?
                .iter()
                .map(|label| match label {
                    Value::Str(text) => Ok(text.to_string()),
                    other => Err(EvalError::type_error(format!(
                        ":labels must be a list of strings, found {} {}",
                        other.type_name(),
                        other.short()
                    ))),
                })
                .collect::<EvalResult<Vec<String>>>()?;
            if labels.len() != items.len() {
                return Err(EvalError::shape(format!(
                    ":labels has {} label{} for {} series",
                    labels.len(),
                    if labels.len() == 1 { "" } else { "s" },
                    items.len()
                )));
            }
            labels
        }
        Some(other) => {
            return Err(EvalError::type_error(format!(
                ":labels must be a list of strings, got {} {}",
                other.type_name(),
                other.short()
            )));
        }
    };
    let lines = items
        .iter()
        .zip(labels)
        .enumerate()
        .map(|(k, (item, label))| {
            let what = format!("series {}", k + 1);
            series(xs.as_deref(), numbers(item, &what)?, &what, label)
        })
        .collect::<EvalResult<Vec<Series>>>()?;
    finish(interp, args, path, lines, true)
}

/// The chart as the bytes of a file in `format`.
fn render(chart: &Chart, format: Format) -> EvalResult<Vec<u8>> {
    ensure_font()?;
    let (x_range, y_range) = chart.ranges()?;
    let size = (chart.width, chart.height);
    match format {
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                draw(&root, chart, x_range, y_range)?;
            }
            Ok(text.into_bytes())
        }
        Format::Png => {
            let mut pixels = vec![255u8; 3 * chart.width as usize * chart.height as usize];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
                draw(&root, chart, x_range, y_range)?;
            }
            encode_png(&pixels, size)
        }
    }
}

fn encode_png(pixels: &[u8], (width, height): (u32, u32)) -> EvalResult<Vec<u8>> {
    let failed = |err: png::EncodingError| {
        EvalError::new(
            EvalErrorKind::Internal,
            format!("cannot encode the PNG image: {err}"),
        )
    };
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(bytes)
}

/// A plotters error as an Epsilon error.
fn drawing_error(err: impl std::fmt::Display) -> EvalError {
    EvalError::new(EvalErrorKind::Io, format!("cannot draw the plot: {err}"))
}

/// Most tick labels an axis gets.
const MAX_TICKS: usize = 10;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x_range: Range<f64>,
    y_range: Range<f64>,
) -> EvalResult<()> {
    root.fill(&WHITE).map_err(drawing_error)?;
    let label_font = ("sans-serif", 14).into_font();
    let x_span = x_range.end - x_range.start;
    let y_span = y_range.end - y_range.start;
    // A log axis of several decades gets whole-decade ticks.
    let decades = y_span.floor() as usize;
    let y_ticks = if chart.log_y && decades >= 2 {
        (decades + 1).min(MAX_TICKS)
    } else {
        MAX_TICKS
    };
    // The vertical axis is as wide as its longest tick label.
    let widest = RangedCoordf64::from(y_range.clone())
        .key_points(y_ticks)
        .iter()
        .map(|&t| {
            label_font
                .box_size(&chart.y_tick(t, y_span))
                .map(|(w, _)| w)
                .map_err(drawing_error)
        })
        .try_fold(0, |widest, w| w.map(|w| widest.max(w)))?;
    let y_area = widest + if chart.ylabel.is_some() { 40 } else { 15 };

    let mut builder = ChartBuilder::on(root);
    builder
        .margin(16)
        .x_label_area_size(if chart.xlabel.is_some() { 50 } else { 30 })
        .y_label_area_size(y_area);
    if let Some(title) = &chart.title {
        builder.caption(title, ("sans-serif", 24));
    }
    let mut context = builder
        .build_cartesian_2d(x_range, y_range)
        .map_err(drawing_error)?;
    let x_label = |x: &f64| tick_label(*x, x_span);
    let y_label = |t: &f64| chart.y_tick(*t, y_span);
    let mut mesh = context.configure_mesh();
    mesh.x_labels(MAX_TICKS)
        .y_labels(y_ticks)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(label_font.clone())
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235));
    if let Some(label) = &chart.xlabel {
        mesh.x_desc(label);
    }
    if let Some(label) = &chart.ylabel {
        mesh.y_desc(label);
    }
    mesh.draw().map_err(drawing_error)?;

    for (index, series) in chart.series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        // Runs of consecutive drawn points: skipped points leave gaps.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (&x, &y) in series.xs.iter().zip(&series.ys) {
            if chart.drawn(x, y) {
                runs.last_mut()
                    .expect("runs starts non-empty")
                    .push((x, chart.y_axis(y)));
            } else if runs.last().is_some_and(|run| !run.is_empty()) {
                runs.push(Vec::new());
            }
        }
        let mut labelled = false;
        for run in runs.into_iter().filter(|run| !run.is_empty()) {
            let annotation = if run.len() == 1 {
                context
                    .draw_series(std::iter::once(Circle::new(run[0], 3, color.filled())))
                    .map_err(drawing_error)?
            } else {
                context
                    .draw_series(LineSeries::new(run, color.stroke_width(2)))
                    .map_err(drawing_error)?
            };
            if chart.legend && !labelled {
                labelled = true;
                annotation
                    .label(series.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
        }
    }
    if chart.legend {
        context
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(label_font)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(drawing_error)?;
    }
    root.present().map_err(drawing_error)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("plot", "(plot [xs] ys path :title s :xlabel s :ylabel s :log-y #t :width px :height px)", "Draws ys against xs (default 0, 1, ...) as one line and writes the chart to path, a .png or .svg file (800x600 pixels unless :width/:height say otherwise); returns path. xs and ys are vectors: 1-D tensors, n×1 or 1×n tensors, or lists of numbers. Axes span the data with a 5% margin. Points with a non-finite coordinate (and, with :log-y, y <= 0) are skipped, leaving a gap; it is an error if no point remains.", 2, Some(3), plot), &["title", "xlabel", "ylabel", "log-y", "width", "height"]),
    with_options(builtin("plot-lines", "(plot-lines [xs] (list ys1 ys2 ...) path :labels (list s1 s2 ...) :title s :xlabel s :ylabel s :log-y #t :width px :height px)", "Draws each series against the shared xs (default 0, 1, ... for each) as its own coloured line, with a legend of :labels (default line 1, line 2, ...), and writes the chart to path (.png or .svg); returns path. Options and skipped points as for plot.", 2, Some(3), plot_lines), &["labels", "title", "xlabel", "ylabel", "log-y", "width", "height"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_font_registers() {
        ensure_font().expect("DejaVu Sans parses");
    }

    #[test]
    fn padding_widens_ranges_and_handles_single_values() {
        let r = padded(0.0, 10.0).unwrap();
        assert_eq!((r.start, r.end), (-0.5, 10.5));
        let r = padded(5.0, 5.0).unwrap();
        assert_eq!((r.start, r.end), (4.5, 5.5));
        let r = padded(0.0, 0.0).unwrap();
        assert_eq!((r.start, r.end), (-1.0, 1.0));
        assert!(padded(-f64::MAX, f64::MAX).is_none());
        assert!(padded(f64::MAX, f64::MAX).is_none());
    }

    #[test]
    fn tick_labels_are_short_and_distinct() {
        assert_eq!(tick_label(-0.0, 2.0), "0");
        assert_eq!(tick_label(1e-17, 2.0), "0");
        assert_eq!(tick_label(0.30000000000000004, 2.0), "0.3");
        assert_eq!(tick_label(0.25, 1.1), "0.25");
        assert_eq!(tick_label(2.0, 10.0), "2");
        assert_eq!(tick_label(10000.0, 10000.0), "10000");
        assert_eq!(tick_label(1.0000000002, 2e-9), "1.0000000002");
        assert_eq!(tick_label(1e6, 1e6), "1e6");
        assert_eq!(tick_label(2.5e-5, 2.5e-5), "2.5e-5");
        assert_eq!(tick_label(0.1, 0.1), "0.1");
        assert_eq!(tick_label(-3.5e7, 1e8), "-3.5e7");
    }

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(format_of("a/b.png").unwrap(), Format::Png);
        assert_eq!(format_of("b.SVG").unwrap(), Format::Svg);
        assert!(format_of("b.jpg").is_err());
        assert!(format_of("png").is_err());
    }
}
