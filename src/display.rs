//! Rich output: what a front end that can show more than text (the Jupyter
//! kernel) receives from a running program besides its printed output.
//!
//! The interpreter holds at most one [`RichDisplay`]; built-ins offer it
//! items ([`Rich`]) through `Interp::show` and carry on as before when no
//! front end listens (the command line and the REPL install none). This
//! module knows nothing of Lisp values or of any protocol: it is the
//! meeting point between the two.

/// One item for a rich front end.
#[derive(Clone, Debug, PartialEq)]
pub enum Rich {
    /// A chart, drawn both as a PNG and as SVG (the front end picks).
    Image {
        /// The PNG file's bytes.
        png: Vec<u8>,
        /// The same chart as an SVG document.
        svg: String,
        /// Size in pixels.
        width: u32,
        /// Size in pixels.
        height: u32,
    },
    /// The state of a progress bar. Items with the same `id` describe one
    /// bar: the first shows it, later ones replace it in place.
    Progress(ProgressState),
}

/// A progress bar as a front end draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressState {
    /// The bar's handle (unique within a session).
    pub id: i64,
    /// Its label, if it has one.
    pub label: Option<String>,
    /// Steps done.
    pub position: u64,
    /// Steps in all.
    pub total: u64,
    /// The latest message.
    pub message: String,
    /// Seconds since the bar started.
    pub elapsed: f64,
    /// True for the final state.
    pub finished: bool,
}

impl ProgressState {
    /// The fraction done, in [0, 1] (1 for an empty bar).
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            (self.position as f64 / self.total as f64).min(1.0)
        }
    }

    /// One line of text: `label [=====>    ] 52/100 8.3/s message`.
    pub fn text(&self) -> String {
        const WIDTH: usize = 30;
        let filled = (self.fraction() * WIDTH as f64).round() as usize;
        let mut bar = "=".repeat(filled);
        if filled < WIDTH {
            bar.push('>');
            bar.push_str(&" ".repeat(WIDTH - filled - 1));
        }
        let mut line = String::new();
        if let Some(label) = &self.label {
            line.push_str(label);
            line.push(' ');
        }
        line.push_str(&format!("[{bar}] {}/{}", self.position, self.total));
        if self.elapsed > 0.0 && self.position > 0 {
            let rate = self.position as f64 / self.elapsed;
            if rate >= 1.0 {
                line.push_str(&format!(" {rate:.1}/s"));
            } else {
                line.push_str(&format!(" {:.1}s/step", 1.0 / rate));
            }
        }
        if !self.message.is_empty() {
            line.push(' ');
            line.push_str(&self.message);
        }
        line
    }
}

/// A front end that shows rich items as they come.
pub trait RichDisplay {
    /// Shows `item` (or updates what an earlier item showed).
    fn show(&mut self, item: Rich);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(position: u64, total: u64) -> ProgressState {
        ProgressState {
            id: 1,
            label: Some("fit".into()),
            position,
            total,
            message: "loss 0.5".into(),
            elapsed: 2.0,
            finished: false,
        }
    }

    #[test]
    fn progress_text_shows_the_bar_the_count_the_rate_and_the_message() {
        assert_eq!(
            state(15, 30).text(),
            "fit [===============>              ] 15/30 7.5/s loss 0.5"
        );
        assert_eq!(
            state(30, 30).text(),
            "fit [==============================] 30/30 15.0/s loss 0.5"
        );
        assert!(state(1, 30).text().contains(" 1/30 2.0s/step "));
        assert_eq!(state(0, 0).fraction(), 1.0);
        assert_eq!(state(50, 10).fraction(), 1.0);
    }
}
