//! The axes every cartesian chart shares: tick labels from [`Axis`], the
//! vertical label area as wide as its widest tick label, axis titles and
//! (optionally) light grid lines. Returns the plotters chart context the
//! chart kinds draw their data into.

use super::axis::Axis;
use super::chart::{Frame, PlotError};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

/// The chart context every chart kind draws into.
pub type Context<'a, DB> = ChartContext<'a, DB, Cartesian2d<Ticked, Ticked>>;

/// A linear coordinate with its ticks placed by [`Axis::key_points`]
/// (plotters' own `WithKeyPoints` takes no label formatter over floats).
pub struct Ticked {
    coordinate: RangedCoordf64,
    ticks: Vec<f64>,
    light: Vec<f64>,
}

/// `range` on `axis`, with the axis's ticks and light grid lines.
fn ticked(axis: &Axis, range: &Range<f64>) -> Ticked {
    let (ticks, light) = axis.key_points(range);
    Ticked {
        coordinate: RangedCoordf64::from(range.clone()),
        ticks,
        light,
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.coordinate.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.coordinate.range()
    }
}

/// The margin around a chart, in pixels.
pub const MARGIN: u32 = 16;

/// The font of tick labels.
pub fn label_font() -> FontDesc<'static> {
    ("sans-serif", 14).into_font()
}

/// The width of the widest tick label of `axis` over `range`, in pixels.
pub fn widest_tick(axis: &Axis, range: &Range<f64>) -> Result<u32, PlotError> {
    let span = range.end - range.start;
    let font = label_font();
    axis.key_points(range)
        .0
        .iter()
        .map(|&t| {
            font.box_size(&axis.tick(t, span))
                .map(|(w, _)| w)
                .map_err(PlotError::drawing)
        })
        .try_fold(0, |widest, w| w.map(|w| widest.max(w)))
}

/// One axis of a chart: how values map onto it and the positions it spans.
pub struct AxisRange {
    pub axis: Axis,
    pub range: Range<f64>,
}

/// Lays out the axes of `frame` on `area` and draws them, with light grid
/// lines when `grid_lines`.
pub fn cartesian<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    frame: &Frame,
    x: &AxisRange,
    y: &AxisRange,
    grid_lines: bool,
) -> Result<Context<'a, DB>, PlotError> {
    let x_span = x.range.end - x.range.start;
    let y_span = y.range.end - y.range.start;
    let y_area = widest_tick(&y.axis, &y.range)? + if frame.ylabel.is_some() { 40 } else { 15 };
    let mut context = ChartBuilder::on(area)
        .margin(MARGIN)
        .x_label_area_size(x_label_area(frame))
        .y_label_area_size(y_area)
        .build_cartesian_2d(ticked(&x.axis, &x.range), ticked(&y.axis, &y.range))
        .map_err(PlotError::drawing)?;
    let x_label = |t: &f64| x.axis.tick(*t, x_span);
    let y_label = |t: &f64| y.axis.tick(*t, y_span);
    let mut mesh = context.configure_mesh();
    mesh.x_labels(x.axis.tick_count(x_span))
        .y_labels(y.axis.tick_count(y_span))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(label_font())
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235));
    if !grid_lines {
        mesh.disable_mesh();
    }
    if let Some(label) = &frame.xlabel {
        mesh.x_desc(label);
    }
    if let Some(label) = &frame.ylabel {
        mesh.y_desc(label);
    }
    mesh.draw().map_err(PlotError::drawing)?;
    Ok(context)
}

/// The height of the horizontal label area: tick labels, and the axis
/// title when there is one.
pub fn x_label_area(frame: &Frame) -> u32 {
    if frame.xlabel.is_some() { 50 } else { 30 }
}
