//! Charts drawn in memory and returned as the bytes of a PNG or SVG file:
//! line and scatter charts with error bands, histograms, heatmaps and
//! contour plots. This module knows numbers, colours and `plotters`, and
//! nothing of Lisp values, files or front ends: `lisp/builtins/plot.rs`
//! and `lisp/builtins/charts.rs` turn arguments into a [`Chart`], write
//! the bytes [`render`] returns and show them in a notebook.
//!
//! - `chart.rs`: what a chart is (`Chart`, `Frame`, `Body`), `Format`,
//!   `PlotError`;
//! - `render.rs`: the bundled font, the backends, PNG encoding, the title;
//! - `axis.rs`: axis ranges, log and tiny-value scaling, tick labels;
//! - `frame.rs`: the axes and labels every cartesian chart shares;
//! - `lines.rs`: lines, markers, bands and the legend;
//! - `histogram.rs`: binning (NumPy's rules) and bars;
//! - `grid.rs`: heatmaps and contour plots of a 2-D grid, the colour bar;
//! - `contour.rs`: marching squares; `colormap.rs`: viridis;
//! - `raster.rs`: a heatmap's cells as an image embedded in SVG.

mod axis;
mod chart;
pub(crate) mod colormap;
pub(crate) mod contour;
mod frame;
mod grid;
pub(crate) mod histogram;
mod lines;
mod raster;
mod render;

pub(crate) use chart::{Body, Chart, Format, Frame, PlotError, PlotErrorKind};
pub(crate) use grid::{ContourChart, Grid, HeatmapChart};
pub(crate) use histogram::{Bins, HistogramChart};
pub(crate) use lines::{LineChart, Series, Style};
pub(crate) use render::render;
