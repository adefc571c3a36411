//! Charts of a 2-D grid of values: heatmaps (each cell filled with its
//! viridis colour) and contour plots (iso-lines by marching squares, each
//! level in its viridis colour), with an optional colour bar. Row 0 of the
//! grid is drawn at the bottom (matplotlib's `origin="lower"`). NaN cells
//! are left blank; infinite cells of a heatmap take the colour of the end
//! they lie beyond.

use super::axis::Axis;
use super::chart::{Frame, PlotError};
use super::colormap::{normalized, viridis};
use super::contour;
use super::frame::{AxisRange, Context, MARGIN, cartesian, label_font, widest_tick, x_label_area};
use super::raster::Image;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Values on a grid, row-major; row 0 is the lowest y.
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
}

impl Grid {
    /// The smallest and largest finite values, if there are any.
    pub fn finite_extent(&self) -> Option<(f64, f64)> {
        let (lo, hi) = self
            .values
            .iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        (lo <= hi).then_some((lo, hi))
    }
}

/// A heatmap.
pub struct HeatmapChart {
    pub grid: Grid,
    /// The outer edges of the first and last column, and of the first
    /// (bottom) and last row.
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    /// The values shown in the first and the last colour of the map.
    pub colors: (f64, f64),
    pub colorbar: bool,
}

/// A contour plot.
pub struct ContourChart {
    pub grid: Grid,
    /// Where the first and last column, and the first and last row, are.
    pub x_range: (f64, f64),
    pub y_range: (f64, f64),
    /// The values lines are drawn at.
    pub levels: Vec<f64>,
    pub colorbar: bool,
}

/// Most line pieces a contour plot draws.
const MAX_SEGMENTS: usize = 2_000_000;

/// The colour bar's strip width in pixels.
const STRIP: u32 = 20;
/// The gap between the plot and the colour bar.
const GAP: u32 = 12;

impl HeatmapChart {
    /// Draws the heatmap on `area`. With `embed` (SVG), the cells are
    /// returned as an image to lay under the drawing; otherwise they are
    /// drawn pixel by pixel.
    pub fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        frame: &Frame,
        embed: bool,
    ) -> Result<Option<Image>, PlotError> {
        let main = with_colorbar(area, frame, self.colorbar.then_some(self.colors))?;
        let context = axes(&main, frame, self.x_range, self.y_range)?;
        let (xs, ys) = context.plotting_area().get_pixel_range();
        let (width, height) = (xs.len() as u32, ys.len() as u32);
        let image = if embed {
            // One image pixel per cell, unless the cells outnumber the
            // screen pixels.
            let size = (
                width.min(self.grid.cols as u32).max(1),
                height.min(self.grid.rows as u32).max(1),
            );
            let pixels = self.pixels(size);
            Some(Image::new(
                (xs.start, ys.start, width, height),
                &pixels,
                size,
            )?)
        } else {
            let (origin_x, origin_y) = {
                let (x, y) = main.get_pixel_range();
                (x.start, y.start)
            };
            let pixels = self.pixels((width, height));
            for (k, pixel) in pixels.iter().enumerate() {
                if let Some([r, g, b]) = *pixel {
                    let x = xs.start - origin_x + (k % width as usize) as i32;
                    let y = ys.start - origin_y + (k / width as usize) as i32;
                    main.draw_pixel((x, y), &RGBColor(r, g, b))
                        .map_err(PlotError::drawing)?;
                }
            }
            None
        };
        border(&context, self.x_range, self.y_range)?;
        Ok(image)
    }

    /// The colours of an image of `width` × `height` pixels over the cells
    /// (rows from the top; `None` for NaN), each pixel the cell under its
    /// centre.
    fn pixels(&self, (width, height): (u32, u32)) -> Vec<Option<[u8; 3]>> {
        let Grid { rows, cols, .. } = self.grid;
        let (lo, hi) = self.colors;
        let mut out = Vec::with_capacity(width as usize * height as usize);
        for i in 0..height as usize {
            let from_bottom = (height as usize - 1 - i) as f64 + 0.5;
            let row = ((from_bottom / height as f64 * rows as f64) as usize).min(rows - 1);
            for j in 0..width as usize {
                let col = (((j as f64 + 0.5) / width as f64 * cols as f64) as usize).min(cols - 1);
                let v = self.grid.values[row * cols + col];
                out.push((!v.is_nan()).then(|| viridis(normalized(v, lo, hi))));
            }
        }
        out
    }
}

impl ContourChart {
    /// Draws the iso-lines on `area`.
    pub fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        frame: &Frame,
    ) -> Result<(), PlotError> {
        let level_range = self
            .levels
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &level| {
                (lo.min(level), hi.max(level))
            });
        let bar = (self.colorbar && !self.levels.is_empty()).then_some(level_range);
        let main = with_colorbar(area, frame, bar)?;
        let mut context = axes(&main, frame, self.x_range, self.y_range)?;
        let Grid { rows, cols, .. } = self.grid;
        let (x0, x1) = self.x_range;
        let (y0, y1) = self.y_range;
        let (x, y) = (
            Axis::for_values(false, &[x0, x1]),
            Axis::for_values(false, &[y0, y1]),
        );
        // Grid coordinates to axis positions: column 0 at x0, the last at x1.
        let place = |(c, r): contour::Point| {
            (
                x.position(x0 + (x1 - x0) * (c / (cols - 1) as f64)),
                y.position(y0 + (y1 - y0) * (r / (rows - 1) as f64)),
            )
        };
        let mut lines = Vec::with_capacity(self.levels.len());
        let mut n_segments = 0;
        for &level in &self.levels {
            let segments = contour::segments(&self.grid.values, rows, cols, level);
            n_segments += segments.len();
            if n_segments > MAX_SEGMENTS {
                return Err(PlotError::data(format!(
                    "the contour lines have more than {MAX_SEGMENTS} pieces: use fewer levels or a smoother or smaller grid"
                )));
            }
            lines.push((level, segments));
        }
        for (level, segments) in lines {
            let [r, g, b] = viridis(normalized(level, level_range.0, level_range.1));
            let style = RGBColor(r, g, b).stroke_width(2);
            let paths = segments
                .into_iter()
                .map(|(p, q)| PathElement::new(vec![place(p), place(q)], style));
            context.draw_series(paths).map_err(PlotError::drawing)?;
        }
        border(&context, self.x_range, self.y_range)
    }
}

/// Splits a colour bar for values `bar` off the right of `area` (when
/// given) and draws it; returns the area left for the chart.
fn with_colorbar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    bar: Option<(f64, f64)>,
) -> Result<DrawingArea<DB, Shift>, PlotError> {
    let Some((lo, hi)) = bar else {
        return Ok(area.clone());
    };
    let axis = Axis::for_values(false, &[lo, hi]);
    let range = axis.exact_range(lo, hi, "colour")?;
    let labels = widest_tick(&axis, &range)? + 16;
    let bar_width = GAP + STRIP + labels + MARGIN;
    let (width, _) = area.dim_in_pixel();
    let (main, bar_area) = area.split_horizontally(width.saturating_sub(bar_width));
    let mut context = ChartBuilder::on(&bar_area)
        .margin_top(MARGIN)
        .margin_bottom(MARGIN + x_label_area(frame))
        .margin_left(GAP)
        .margin_right(MARGIN)
        .right_y_label_area_size(labels)
        .build_cartesian_2d(0.0..1.0, range.clone())
        .map_err(PlotError::drawing)?;
    // The strip: thin bands of the map from the lowest value to the highest.
    const STEPS: usize = 128;
    let (start, span) = (range.start, range.end - range.start);
    let bands = (0..STEPS).map(|k| {
        let below = start + span * (k as f64 / STEPS as f64);
        let above = start + span * ((k + 1) as f64 / STEPS as f64);
        let middle = (below + above) / 2.0 * axis.scale;
        let [r, g, b] = viridis(normalized(middle, lo, hi));
        Rectangle::new([(0.0, below), (1.0, above)], RGBColor(r, g, b).filled())
    });
    context.draw_series(bands).map_err(PlotError::drawing)?;
    let tick = |t: &f64| axis.tick(*t, span);
    context
        .configure_mesh()
        .disable_mesh()
        .set_all_tick_mark_size(5)
        .x_labels(0)
        .y_labels(axis.tick_count(span))
        .y_label_formatter(&tick)
        .label_style(label_font())
        .draw()
        .map_err(PlotError::drawing)?;
    context
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, range.start), (1.0, range.end)],
            BLACK.stroke_width(1),
        )))
        .map_err(PlotError::drawing)?;
    Ok(main)
}

/// The axes of a grid chart: exactly the extent, no grid lines.
fn axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    frame: &Frame,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Result<Context<'a, DB>, PlotError> {
    let x = Axis::for_values(false, &[x0, x1]);
    let y = Axis::for_values(false, &[y0, y1]);
    cartesian(
        area,
        frame,
        &AxisRange {
            axis: x,
            range: x.exact_range(x0, x1, "x")?,
        },
        &AxisRange {
            axis: y,
            range: y.exact_range(y0, y1, "y")?,
        },
        false,
    )
}

/// A frame around the plot area, as matplotlib draws around images.
fn border<DB: DrawingBackend>(
    context: &Context<'_, DB>,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Result<(), PlotError> {
    let x = Axis::for_values(false, &[x0, x1]);
    let y = Axis::for_values(false, &[y0, y1]);
    context
        .plotting_area()
        .draw(&Rectangle::new(
            [
                (x.position(x0), y.position(y0)),
                (x.position(x1), y.position(y1)),
            ],
            BLACK.stroke_width(1),
        ))
        .map_err(PlotError::drawing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(rows: usize, cols: usize) -> HeatmapChart {
        HeatmapChart {
            grid: Grid {
                rows,
                cols,
                values: (0..rows * cols).map(|k| k as f64).collect(),
            },
            x_range: (0.0, cols as f64),
            y_range: (0.0, rows as f64),
            colors: (0.0, (rows * cols - 1) as f64),
            colorbar: false,
        }
    }

    #[test]
    fn pixels_put_row_zero_at_the_bottom() {
        let chart = ramp(2, 3);
        let pixels = chart.pixels((3, 2));
        // The top row of the image is the grid's last row.
        let expected: Vec<_> = [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
            .iter()
            .map(|&v| Some(viridis(v / 5.0)))
            .collect();
        assert_eq!(pixels, expected);
        // Scaled up, each cell covers a block of pixels.
        let big = chart.pixels((6, 4));
        assert_eq!(big[0], Some(viridis(0.6)));
        assert_eq!(big[6 * 4 - 1], Some(viridis(0.4)));
    }

    #[test]
    fn nan_cells_are_blank() {
        let mut chart = ramp(1, 2);
        chart.grid.values[1] = f64::NAN;
        assert_eq!(chart.pixels((2, 1)), vec![Some(viridis(0.0)), None]);
    }

    #[test]
    fn the_finite_extent_skips_nan_and_infinities() {
        let grid = Grid {
            rows: 1,
            cols: 4,
            values: vec![f64::NAN, 2.0, f64::INFINITY, -1.0],
        };
        assert_eq!(grid.finite_extent(), Some((-1.0, 2.0)));
        let empty = Grid {
            rows: 1,
            cols: 1,
            values: vec![f64::NAN],
        };
        assert_eq!(empty.finite_extent(), None);
    }
}
