//! Drawing a [`Chart`] into the bytes of a file: the bitmap backend into a
//! pixel buffer encoded with `png`, or the SVG backend into a string. Text
//! is drawn with DejaVu Sans, bundled under `assets/fonts/` and registered
//! with plotters' `ab_glyph` font table once: no system font library is
//! involved.

use super::chart::{Body, Chart, Format, PlotError};
use super::raster;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use std::sync::OnceLock;

/// DejaVu Sans (Bitstream Vera license; see assets/fonts/DejaVuSans-LICENSE.txt).
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Series colours: matplotlib's "tab10", cycled.
pub const COLORS: [RGBColor; 10] = [
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
fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        ["sans-serif", "serif", "monospace"]
            .iter()
            .all(|family| register_font(family, FontStyle::Normal, DEJAVU_SANS).is_ok())
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::internal("the bundled font could not be loaded"))
    }
}

/// The chart as the bytes of a file in `format`.
pub fn render(chart: &Chart, format: Format) -> Result<Vec<u8>, PlotError> {
    ensure_font()?;
    let size = (chart.frame.width, chart.frame.height);
    match format {
        Format::Svg => {
            let mut text = String::new();
            let image = {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                draw(&root, chart, format)?
            };
            if let Some(image) = image {
                raster::embed(&mut text, &image)?;
            }
            Ok(text.into_bytes())
        }
        Format::Png => {
            let mut pixels =
                vec![255u8; 3 * chart.frame.width as usize * chart.frame.height as usize];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
                draw(&root, chart, format)?;
            }
            encode_png(&pixels, size, png::ColorType::Rgb)
        }
    }
}

/// Draws the whole chart on `root`; returns the raster image an SVG
/// heatmap embeds.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    format: Format,
) -> Result<Option<raster::Image>, PlotError> {
    root.fill(&WHITE).map_err(PlotError::drawing)?;
    let area = match &chart.frame.title {
        Some(title) => root
            .titled(title, ("sans-serif", 24))
            .map_err(PlotError::drawing)?,
        None => root.clone(),
    };
    let frame = &chart.frame;
    let image = match &chart.body {
        Body::Lines(lines) => lines.draw(&area, frame).map(|()| None)?,
        Body::Histogram(histogram) => histogram.draw(&area, frame).map(|()| None)?,
        Body::Heatmap(heatmap) => heatmap.draw(&area, frame, format == Format::Svg)?,
        Body::Contour(contour) => contour.draw(&area, frame).map(|()| None)?,
    };
    root.present().map_err(PlotError::drawing)?;
    Ok(image)
}

/// `pixels` (rows of RGB or RGBA bytes, as `color` says) as a PNG file.
pub fn encode_png(
    pixels: &[u8],
    (width, height): (u32, u32),
    color: png::ColorType,
) -> Result<Vec<u8>, PlotError> {
    let failed = |err: png::EncodingError| {
        PlotError::internal(format!("cannot encode the PNG image: {err}"))
    };
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_font_registers() {
        ensure_font().expect("DejaVu Sans parses");
    }
}
