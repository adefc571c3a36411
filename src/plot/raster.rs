//! A heatmap's cells in an SVG file: one image (a PNG, base64-encoded in a
//! data URL) laid over the plot area, instead of one `<rect>` per cell,
//! so a large grid stays a small file. plotters' SVG backend draws images
//! pixel by pixel (its own encoder needs the `image` crate), so the
//! element is inserted into its output, right after the white background:
//! everything else (axes, labels, the colour bar) is drawn over it.

use super::chart::PlotError;
use super::render::encode_png;

/// An image placed at a pixel rectangle of the chart.
pub struct Image {
    /// Top-left corner in pixels.
    pub x: i32,
    pub y: i32,
    /// The size it is shown at, in pixels (the PNG may be smaller, then
    /// scaled up without smoothing).
    pub width: u32,
    pub height: u32,
    /// The PNG file.
    pub png: Vec<u8>,
}

impl Image {
    /// An image of `pixels` (rows from the top, `None` transparent) of
    /// size `size`, shown at `(x, y, width, height)`.
    pub fn new(
        (x, y, width, height): (i32, i32, u32, u32),
        pixels: &[Option<[u8; 3]>],
        size: (u32, u32),
    ) -> Result<Image, PlotError> {
        let rgba: Vec<u8> = pixels
            .iter()
            .flat_map(|pixel| match pixel {
                Some([r, g, b]) => [*r, *g, *b, 255],
                None => [0, 0, 0, 0],
            })
            .collect();
        Ok(Image {
            x,
            y,
            width,
            height,
            png: encode_png(&rgba, size, png::ColorType::Rgba)?,
        })
    }

    /// The SVG element.
    fn element(&self) -> String {
        format!(
            "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" \
             style=\"image-rendering:pixelated\" href=\"data:image/png;base64,{}\"/>\n",
            self.x,
            self.y,
            self.width,
            self.height,
            base64(&self.png)
        )
    }
}

/// Inserts `image` into `svg` after its first element (the background).
pub fn embed(svg: &mut String, image: &Image) -> Result<(), PlotError> {
    let after_background = svg
        .find("<rect")
        .and_then(|start| svg[start..].find("/>").map(|end| start + end + 2))
        .ok_or_else(|| PlotError::internal("the SVG document has no background to draw over"))?;
    let at = match svg[after_background..].strip_prefix('\n') {
        Some(_) => after_background + 1,
        None => after_background,
    };
    svg.insert_str(at, &image.element());
    Ok(())
}

/// `bytes` in base64 (RFC 4648, with padding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (k, &b)| acc | (u32::from(b) << (16 - 8 * k)));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((group >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_examples() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (text, encoded) in cases {
            assert_eq!(base64(text.as_bytes()), encoded);
        }
        assert_eq!(base64(&[255, 254, 253]), "//79");
    }

    #[test]
    fn the_image_goes_after_the_background() {
        let mut svg = String::from(
            "<svg width=\"10\" height=\"10\">\n<rect x=\"0\" y=\"0\" fill=\"#FFFFFF\"/>\n<line/>\n</svg>\n",
        );
        let image = Image::new((1, 2, 4, 4), &[Some([1, 2, 3]), None], (2, 1)).unwrap();
        embed(&mut svg, &image).unwrap();
        let rect = svg.find("<rect").unwrap();
        let img = svg
            .find("<image x=\"1\" y=\"2\" width=\"4\" height=\"4\"")
            .unwrap();
        let line = svg.find("<line").unwrap();
        assert!(rect < img && img < line, "{svg}");
        assert!(svg.contains("href=\"data:image/png;base64,iVBORw0KGgo"));
        assert!(embed(&mut String::from("<svg></svg>"), &image).is_err());
    }
}
