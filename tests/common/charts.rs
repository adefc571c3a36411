//! Helpers shared by the chart tests (`tests/plot.rs`, `tests/charts.rs`):
//! an engine with a temporary directory for the files charts write, PNG
//! decoding and SVG inspection.

#![allow(dead_code)]

use epsilon::{Engine, EvalErrorKind};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// An engine whose `dir` variable names a fresh temporary directory.
pub struct Fixture {
    pub engine: Engine,
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let mut engine = Engine::new();
        engine
            .eval("(define xs (linspace 0 6 50)) (define ys (sin xs))")
            .unwrap();
        Fixture {
            engine,
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `source` with every `{name}` replaced by the quoted path of `name`
    /// in the temporary directory.
    pub fn source(&self, source: &str, names: &[&str]) -> String {
        names.iter().fold(source.to_string(), |source, name| {
            source.replace(
                &format!("{{{name}}}"),
                &format!("{:?}", self.path(name).display().to_string()),
            )
        })
    }

    /// Evaluates `source` (see [`Fixture::source`]) and returns the result's
    /// string.
    pub fn run(&mut self, source: &str, names: &[&str]) -> String {
        let source = self.source(source, names);
        let value = self
            .engine
            .eval(&source)
            .unwrap_or_else(|err| panic!("{source}\nfailed: {}", err.render()));
        String::try_from(value).expect("plot returns the path")
    }

    /// The message of the error `source` raises; checks that no file `name`
    /// was written.
    pub fn error(&mut self, source: &str, name: &str) -> String {
        let source = self.source(source, &[name]);
        let err = self
            .engine
            .eval(&source)
            .expect_err(&format!("{source} should fail"));
        assert_ne!(err.kind(), EvalErrorKind::Internal, "{}", err.render());
        assert!(!self.path(name).exists(), "{source} wrote a file");
        err.message().to_string()
    }
}

/// The RGB pixels of a PNG file, with its size.
pub fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::fs::File::open(path).expect("the PNG exists");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG header");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut buffer).expect("PNG image data");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let pixels = buffer[..info.buffer_size()]
        .chunks_exact(3)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

/// The text of every `<text>` element of an SVG document, trimmed.
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|element| {
            let (_, rest) = element.split_once('>')?;
            let (text, _) = rest.split_once("</text>")?;
            Some(text.trim().to_string())
        })
        .collect()
}

/// Whether `svg` has a text element reading `text`.
pub fn has_text(svg: &str, text: &str) -> bool {
    svg_texts(svg).iter().any(|t| t == text)
}

/// The first and second line colours (matplotlib's tab10 blue and orange).
pub const BLUE: [u8; 3] = [31, 119, 180];
pub const ORANGE: [u8; 3] = [255, 127, 14];

pub fn count(pixels: &[[u8; 3]], color: [u8; 3]) -> usize {
    pixels.iter().filter(|&&p| p == color).count()
}

/// The text of an SVG file the fixture wrote.
pub fn read_svg(f: &Fixture, name: &str) -> String {
    let svg = std::fs::read_to_string(f.path(name)).expect("the SVG exists");
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    svg
}

/// How many `<tag` elements `svg` has.
pub fn elements(svg: &str, tag: &str) -> usize {
    svg.matches(&format!("<{tag} ")).count() + svg.matches(&format!("<{tag}>")).count()
}

/// The size and RGBA pixels of the first image embedded in an SVG document
/// as a base64 PNG data URL.
pub fn embedded_image(svg: &str) -> (u32, u32, Vec<[u8; 4]>) {
    let marker = "href=\"data:image/png;base64,";
    let start = svg.find(marker).expect("an embedded PNG") + marker.len();
    let end = start + svg[start..].find('"').expect("a closing quote");
    let bytes = base64_decode(&svg[start..end]);
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .expect("a PNG header");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut buffer).expect("PNG image data");
    assert_eq!(info.color_type, png::ColorType::Rgba);
    let pixels = buffer[..info.buffer_size()]
        .chunks_exact(4)
        .map(|p| [p[0], p[1], p[2], p[3]])
        .collect();
    (info.width, info.height, pixels)
}

/// Decodes standard base64 with padding.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            other => panic!("not base64: {:?}", other as char),
        }
    };
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let digits: Vec<u32> = chunk
            .iter()
            .filter(|&&c| c != b'=')
            .map(|&c| value(c))
            .collect();
        let group = digits
            .iter()
            .enumerate()
            .fold(0u32, |acc, (k, d)| acc | (d << (18 - 6 * k)));
        for k in 0..digits.len().saturating_sub(1) {
            out.push((group >> (16 - 8 * k)) as u8);
        }
    }
    out
}

/// The viridis colours at 0, 1/2 and 1.
pub const VIRIDIS_LOW: [u8; 3] = [68, 1, 84];
pub const VIRIDIS_MID: [u8; 3] = [33, 144, 140];
pub const VIRIDIS_HIGH: [u8; 3] = [253, 231, 37];

/// The mean position (x, y) of the pixels of `color` in an image `width`
/// wide, and how many there are.
pub fn centroid(pixels: &[[u8; 3]], width: u32, color: [u8; 3]) -> (f64, f64, usize) {
    let (mut x, mut y, mut n) = (0.0, 0.0, 0);
    for (k, p) in pixels.iter().enumerate() {
        if *p == color {
            x += (k % width as usize) as f64;
            y += (k / width as usize) as f64;
            n += 1;
        }
    }
    (x / n.max(1) as f64, y / n.max(1) as f64, n)
}

/// How many lines of data (2 pixels wide, unlike the axes and ticks)
/// `svg` has.
pub fn data_lines(svg: &str) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter(|element| {
            element[..element.find("/>").unwrap_or(element.len())].contains("stroke-width=\"2\"")
        })
        .count()
}

/// Checks that each `(source, expected)` fails with a message containing
/// `expected` and writes nothing (the file named in the source as `{e.svg}`,
/// `{e.jpg}`, `{e}` or else `{e.png}`).
pub fn check_errors(f: &mut Fixture, cases: &[(&str, &str)]) {
    for (source, expected) in cases {
        let name = if source.contains("{e.svg}") {
            "e.svg"
        } else if source.contains("{e.jpg}") {
            "e.jpg"
        } else if source.contains("{e}") {
            "e"
        } else {
            "e.png"
        };
        let message = f.error(source, name);
        assert!(
            message.contains(expected),
            "{source}: expected {expected:?} in {message:?}"
        );
    }
}
