//! Progress bars drawn on standard error by `indicatif` (builds with the
//! `cli` or `repl` feature). The bars of an interpreter share one
//! `MultiProgress`, so nested bars stack. Nothing is drawn unless standard
//! error is a terminal (and `TERM` is not `dumb`): indicatif's stderr
//! target hides itself otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};

/// The layout of a bar: label, bar, position/length, rate, ETA, message
/// (cut to the terminal's width).
const TEMPLATE: &str = "{prefix} [{bar:30}] {pos}/{len} {rate} ETA {eta} {wide_msg}";
/// The same without a label.
const TEMPLATE_UNLABELLED: &str = "[{bar:30}] {pos}/{len} {rate} ETA {eta} {wide_msg}";

/// Where an interpreter's bars draw; the shared `MultiProgress` is made
/// with the first bar.
#[derive(Default)]
pub struct Terminal {
    multi: Option<MultiProgress>,
}

/// One bar on the terminal.
pub struct TerminalBar(ProgressBar);

impl Terminal {
    /// Adds a bar counting to `total`, labelled if `label` is given.
    pub fn add(&mut self, total: u64, label: Option<&str>) -> TerminalBar {
        let multi = self.multi.get_or_insert_with(MultiProgress::new);
        let bar = multi.add(ProgressBar::new(total).with_style(style(label.is_some())));
        if let Some(label) = label {
            bar.set_prefix(label.to_string());
        }
        TerminalBar(bar)
    }

    /// Runs `f` (which writes to the terminal) with the bars cleared, and
    /// redraws them afterwards; `live` says whether any bar is unfinished.
    pub fn suspend<R>(&self, live: bool, f: impl FnOnce() -> R) -> R {
        match &self.multi {
            Some(multi) if live => multi.suspend(f),
            _ => f(),
        }
    }
}

impl TerminalBar {
    pub fn set_message(&self, message: &str) {
        self.0.set_message(message.to_string());
    }

    pub fn inc(&self, step: u64) {
        self.0.inc(step);
    }

    /// Ends the bar: erased if `clear`, else left drawn (with `message`).
    pub fn finish(&self, clear: bool, message: Option<&str>) {
        if clear {
            self.0.finish_and_clear();
        } else if let Some(message) = message {
            self.0.finish_with_message(message.to_string());
        } else {
            self.0.finish();
        }
    }
}

fn style(labelled: bool) -> ProgressStyle {
    let template = if labelled {
        TEMPLATE
    } else {
        TEMPLATE_UNLABELLED
    };
    ProgressStyle::with_template(template)
        .expect("the progress templates are valid (a unit test parses them)")
        .progress_chars("=> ")
        .with_key(
            "rate",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = out.write_str(&rate(state.per_sec()));
            },
        )
}

/// Steps per second, or seconds per step when steps are slow (as tqdm).
fn rate(per_sec: f64) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        "?/s".to_string()
    } else if per_sec >= 100.0 {
        format!("{per_sec:.0}/s")
    } else if per_sec >= 1.0 {
        format!("{per_sec:.1}/s")
    } else {
        format!("{:.1}s/step", 1.0 / per_sec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_templates_parse() {
        for template in [TEMPLATE, TEMPLATE_UNLABELLED] {
            ProgressStyle::with_template(template).expect("a valid template");
        }
    }

    #[test]
    fn rates_read_well_fast_and_slow() {
        assert_eq!(rate(0.0), "?/s");
        assert_eq!(rate(f64::NAN), "?/s");
        assert_eq!(rate(5831.44), "5831/s");
        assert_eq!(rate(12.345), "12.3/s");
        assert_eq!(rate(0.25), "4.0s/step");
    }
}
