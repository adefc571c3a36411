//! What a chart is: its frame (title, axis labels, size) and its body (the
//! kind of chart with its data), the file formats, and the one error type
//! of this module.

use super::grid::{ContourChart, HeatmapChart};
use super::histogram::HistogramChart;
use super::lines::LineChart;

/// Default image size in pixels.
pub const DEFAULT_WIDTH: u32 = 800;
/// Default image size in pixels.
pub const DEFAULT_HEIGHT: u32 = 600;

/// A chart ready to draw.
pub struct Chart {
    /// Title, labels and size.
    pub frame: Frame,
    /// What is drawn inside.
    pub body: Body,
}

/// What every chart has around its data.
pub struct Frame {
    pub title: Option<String>,
    pub xlabel: Option<String>,
    pub ylabel: Option<String>,
    /// Size in pixels.
    pub width: u32,
    pub height: u32,
}

impl Default for Frame {
    fn default() -> Frame {
        Frame {
            title: None,
            xlabel: None,
            ylabel: None,
            width: DEFAULT_WIDTH,
            height: DEFAULT_HEIGHT,
        }
    }
}

/// The kinds of chart.
pub enum Body {
    Lines(LineChart),
    Histogram(HistogramChart),
    Heatmap(HeatmapChart),
    Contour(ContourChart),
}

/// The file formats.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Png,
    Svg,
}

impl Format {
    /// The format a path's extension names (case-insensitive), if any.
    pub fn of(path: &str) -> Option<Format> {
        let extension = std::path::Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("png") => Some(Format::Png),
            Some("svg") => Some(Format::Svg),
            _ => None,
        }
    }
}

/// Why a chart could not be drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PlotErrorKind {
    /// The data leaves nothing to draw or cannot be laid out.
    Data,
    /// plotters failed while drawing.
    Drawing,
    /// Something that should not happen (the bundled font, PNG encoding).
    Internal,
}

/// An error of this module, with a message for the user.
#[derive(Clone, Debug)]
pub struct PlotError {
    pub kind: PlotErrorKind,
    pub message: String,
}

impl PlotError {
    /// A data error.
    pub fn data(message: impl Into<String>) -> PlotError {
        PlotError {
            kind: PlotErrorKind::Data,
            message: message.into(),
        }
    }

    /// An internal error.
    pub fn internal(message: impl Into<String>) -> PlotError {
        PlotError {
            kind: PlotErrorKind::Internal,
            message: message.into(),
        }
    }

    /// A plotters error.
    pub fn drawing(err: impl std::fmt::Display) -> PlotError {
        PlotError {
            kind: PlotErrorKind::Drawing,
            message: format!("cannot draw the plot: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(Format::of("a/b.png"), Some(Format::Png));
        assert_eq!(Format::of("b.SVG"), Some(Format::Svg));
        assert_eq!(Format::of("b.jpg"), None);
        assert_eq!(Format::of("png"), None);
    }
}
