//! MIME bundles: how values and rich items look in a notebook.
//!
//! Every value has `text/plain` (its printed form, as the REPL shows it);
//! a symbolic formula adds `text/latex`; a tensor of one or two axes adds
//! an HTML table (large ones elided in the middle, as NumPy prints them);
//! a chart is `image/png` and `image/svg+xml`; a progress bar is a line of
//! text and an HTML `<progress>` bar.

use crate::display::ProgressState;
use crate::lisp::printer::format_float;
use crate::{Engine, Notation, Value};
use data_encoding::BASE64;
use jupyter_protocol::{Media, MediaType};
use ndarray::{ArrayD, Axis};

/// Rows and columns of a table shown in full; longer axes show their first
/// and last [`EDGE`] entries around an ellipsis.
const FULL: usize = 20;
const EDGE: usize = 5;

/// The bundle for a cell's value.
pub fn value_bundle(engine: &Engine, value: &Value) -> Media {
    let mut items = vec![MediaType::Plain(value.to_string())];
    if let Some(latex) = engine.show_formula(value, Notation::Latex) {
        items.push(MediaType::Latex(format!("$\\displaystyle {latex}$")));
    }
    let table = match value {
        Value::Tensor(array) => html_table(array),
        Value::TensorF32(_) => value.as_tensor().ok().and_then(|array| html_table(&array)),
        _ => None,
    };
    if let Some(table) = table {
        items.push(MediaType::Html(table));
    }
    Media::new(items)
}

/// The bundle for a chart.
pub fn image_bundle(png: &[u8], svg: &str, (width, height): (u32, u32)) -> Media {
    Media::new(vec![
        MediaType::Plain(format!("<chart {width}x{height}>")),
        MediaType::Png(BASE64.encode(png)),
        MediaType::Svg(svg.to_string()),
    ])
}

/// The bundle for a progress bar's state.
pub fn progress_bundle(state: &ProgressState) -> Media {
    let label = state
        .label
        .as_deref()
        .map(|label| format!("{} ", escape(label)))
        .unwrap_or_default();
    let html = format!(
        "<div style=\"font-family: monospace\">{label}<progress value=\"{}\" max=\"{}\" style=\"width: 20em; vertical-align: middle\"></progress> {}/{} {}</div>",
        state.position,
        state.total.max(1),
        state.position,
        state.total,
        escape(&state.message),
    );
    Media::new(vec![MediaType::Plain(state.text()), MediaType::Html(html)])
}

/// An HTML table of a tensor with one or two axes, its shape in the caption.
fn html_table(array: &ArrayD<f64>) -> Option<String> {
    let matrix = match array.ndim() {
        1 => array.view().insert_axis(Axis(0)),
        2 => array.view(),
        _ => return None,
    };
    let (rows, cols) = matrix.dim_pair()?;
    let shape: Vec<String> = array.shape().iter().map(usize::to_string).collect();
    let mut html = format!(
        "<table class=\"epsilon-tensor\"><caption>tensor ({})</caption>",
        shape.join(" ")
    );
    for row in shown(rows) {
        html.push_str("<tr>");
        for col in shown(cols) {
            html.push_str("<td style=\"text-align: right; font-family: monospace\">");
            match (row, col) {
                (Some(r), Some(c)) => html.push_str(&format_float(matrix[[r, c]])),
                _ => html.push('…'),
            }
            html.push_str("</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    Some(html)
}

/// The indices shown along an axis of `n`: all, or the edges with `None`
/// for the elided middle.
fn shown(n: usize) -> Vec<Option<usize>> {
    if n <= FULL {
        (0..n).map(Some).collect()
    } else {
        (0..EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE..n).map(Some))
            .collect()
    }
}

/// A 2-D view's rows and columns.
trait DimPair {
    fn dim_pair(&self) -> Option<(usize, usize)>;
}

impl DimPair for ndarray::ArrayViewD<'_, f64> {
    fn dim_pair(&self) -> Option<(usize, usize)> {
        match self.shape() {
            [rows, cols] => Some((*rows, *cols)),
            _ => None,
        }
    }
}

/// Text made safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tensors_are_tables_of_every_entry() {
        let array =
            ArrayD::from_shape_vec(vec![2, 3], vec![1.0, 2.5, -3.0, 4.0, 5.0, 6.0]).unwrap();
        let html = html_table(&array).unwrap();
        assert!(html.contains("<caption>tensor (2 3)</caption>"), "{html}");
        assert_eq!(html.matches("<tr>").count(), 2);
        assert_eq!(html.matches("<td").count(), 6);
        assert!(
            html.contains(">2.5</td>") && html.contains(">-3.0</td>"),
            "{html}"
        );
        let vector = ArrayD::from_shape_vec(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
        assert_eq!(html_table(&vector).unwrap().matches("<tr>").count(), 1);
        assert!(html_table(&ArrayD::zeros(vec![2, 2, 2])).is_none());
    }

    #[test]
    fn large_tensors_are_elided_in_the_middle() {
        let array = ArrayD::from_shape_fn(vec![100, 30], |i| (i[0] * 1000 + i[1]) as f64);
        let html = html_table(&array).unwrap();
        assert_eq!(html.matches("<tr>").count(), 2 * EDGE + 1);
        assert_eq!(html.matches("<td").count(), (2 * EDGE + 1) * (2 * EDGE + 1));
        assert!(html.contains(">99029.0</td>"), "the last entry is shown");
        assert!(!html.contains(">50000.0</td>"), "a middle entry is not");
    }

    #[test]
    fn progress_html_escapes_the_message() {
        let state = ProgressState {
            id: 3,
            label: Some("fit".into()),
            position: 4,
            total: 8,
            message: "loss <0.1>".into(),
            elapsed: 1.0,
            finished: false,
        };
        let bundle = serde_json::to_value(progress_bundle(&state)).unwrap();
        let html = bundle["text/html"].as_str().unwrap();
        assert!(html.contains("value=\"4\" max=\"8\""), "{html}");
        assert!(html.contains("loss &lt;0.1&gt;"), "{html}");
        assert!(bundle["text/plain"].as_str().unwrap().starts_with("fit ["));
    }
}
