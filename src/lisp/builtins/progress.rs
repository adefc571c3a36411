//! Progress bars for long loops, drawn by `indicatif` on standard error:
//! `progress` makes one and returns its handle (an integer),
//! `progress-inc!` advances it, `progress-finish!` ends it and releases the
//! handle. The bars of an interpreter share one `MultiProgress`, so nested
//! bars (epochs and batches) stack, and program output is written with the
//! bars lifted out of the way (`Interp::write_output`).
//!
//! Nothing is drawn unless standard error is a terminal (and `TERM` is not
//! `dumb`): indicatif's stderr target hides itself otherwise, so a script
//! whose output goes to files stays silent.
//!
//! Where a rich front end listens (the Jupyter kernel), each bar is also
//! offered to it as a [`Rich::Progress`] item: when it starts, at most
//! every [`RICH_INTERVAL`] as it advances, and when it finishes, so a
//! notebook shows one line that updates in place.

use super::{builtin, string_option, with_options};
use crate::display::{ProgressState as RichProgress, Rich};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

/// The shortest time between two updates offered to a rich front end.
const RICH_INTERVAL: Duration = Duration::from_millis(200);

/// The layout of a bar: label, bar, position/length, rate, ETA, message
/// (cut to the terminal's width).
const TEMPLATE: &str = "{prefix} [{bar:30}] {pos}/{len} {rate} ETA {eta} {wide_msg}";
/// The same without a label.
const TEMPLATE_UNLABELLED: &str = "[{bar:30}] {pos}/{len} {rate} ETA {eta} {wide_msg}";

/// The live progress bars of an interpreter, by handle.
#[derive(Default)]
pub struct ProgressBars {
    /// Where the bars draw; made with the first bar.
    multi: Option<MultiProgress>,
    /// Unfinished bars.
    bars: FxHashMap<i64, ProgressBar>,
    /// What a rich front end was last shown of each unfinished bar.
    shown: FxHashMap<i64, Shown>,
    /// The last handle given out (handles are never reused).
    last: i64,
}

impl ProgressBars {
    /// Runs `f` (which writes to the terminal) with the bars cleared, and
    /// redraws them afterwards.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.multi {
            Some(multi) if !self.bars.is_empty() => multi.suspend(f),
            _ => f(),
        }
    }

    fn get(&self, handle: &Value) -> EvalResult<(i64, &ProgressBar)> {
        let id = match handle {
            Value::Int(id) => *id,
            other => {
                return Err(EvalError::type_error(format!(
                    "expected a progress bar (the integer progress returned), got {} {}",
                    other.type_name(),
                    other.short()
                )));
            }
        };
        self.bars.get(&id).map(|bar| (id, bar)).ok_or_else(|| {
            EvalError::range(format!(
                "no active progress bar {id} (it was finished, or never made by progress)"
            ))
        })
    }
}

/// A bar as offered to a rich front end.
struct Shown {
    label: Option<String>,
    message: String,
    started: Instant,
    /// When the front end was last sent this bar.
    sent: Instant,
}

/// Offers bar `id` to the rich front end (if any): always when `force`,
/// else only if [`RICH_INTERVAL`] has passed since the last offer.
fn offer(interp: &mut Interp, id: i64, force: bool, finished: bool) {
    if !interp.shows_rich() {
        return;
    }
    let state = &mut interp.progress;
    let (Some(bar), Some(shown)) = (state.bars.get(&id), state.shown.get_mut(&id)) else {
        return;
    };
    let now = Instant::now();
    if !force && now.duration_since(shown.sent) < RICH_INTERVAL {
        return;
    }
    shown.sent = now;
    let item = Rich::Progress(RichProgress {
        id,
        label: shown.label.clone(),
        position: bar.position(),
        total: bar.length().unwrap_or(0),
        message: shown.message.clone(),
        elapsed: now.duration_since(shown.started).as_secs_f64(),
        finished,
    });
    interp.show(item);
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

fn non_negative(value: &Value, what: &str) -> EvalResult<u64> {
    let n = value.as_i64().map_err(|_| {
        EvalError::type_error(format!(
            "{what} must be a non-negative integer, got {} {}",
            value.type_name(),
            value.short()
        ))
    })?;
    u64::try_from(n)
        .map_err(|_| EvalError::range(format!("{what} must be a non-negative integer, got {n}")))
}

fn progress(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let total = non_negative(&args[0], "the total")?;
    let label = string_option(args, "label")?;
    let state = &mut interp.progress;
    let multi = state.multi.get_or_insert_with(MultiProgress::new);
    let bar = multi.add(ProgressBar::new(total).with_style(style(label.is_some())));
    if let Some(label) = &label {
        bar.set_prefix(label.clone());
    }
    state.last += 1;
    let id = state.last;
    state.bars.insert(id, bar);
    let now = Instant::now();
    state.shown.insert(
        id,
        Shown {
            label,
            message: String::new(),
            started: now,
            sent: now,
        },
    );
    offer(interp, id, true, false);
    Ok(Value::Int(id))
}

fn progress_inc(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (id, bar) = interp.progress.get(&args[0])?;
    let step = match args.get(1) {
        Some(n) => non_negative(n, "the step")?,
        None => 1,
    };
    let message = string_option(args, "message")?;
    if let Some(message) = &message {
        bar.set_message(message.clone());
    }
    bar.inc(step);
    let position = bar.position();
    if let (Some(message), Some(shown)) = (message, interp.progress.shown.get_mut(&id)) {
        shown.message = message;
    }
    offer(interp, id, false, false);
    Ok(Value::Int(i64::try_from(position).unwrap_or(i64::MAX)))
}

fn progress_finish(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (id, bar) = interp.progress.get(&args[0])?;
    let message = string_option(args, "message")?;
    if args.option("clear").is_some_and(Value::is_truthy) {
        bar.finish_and_clear();
    } else if let Some(message) = &message {
        bar.finish_with_message(message.clone());
    } else {
        bar.finish();
    }
    if let (Some(message), Some(shown)) = (message, interp.progress.shown.get_mut(&id)) {
        shown.message = message;
    }
    offer(interp, id, true, true);
    interp.progress.bars.remove(&id);
    interp.progress.shown.remove(&id);
    Ok(Value::Void)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("progress", "(progress total :label s)", "Starts a progress bar counting to total and returns its handle (an integer). The bar shows the label, the bar, position/total, the rate (steps per second, or seconds per step when slower), the time left and a message; it is drawn on standard error only when that is a terminal.", 1, Some(1), progress), &["label"]),
    with_options(builtin("progress-inc!", "(progress-inc! bar [n] :message s)", "Advances the progress bar by n (default 1, may be 0), sets its message if given, and returns the new position.", 1, Some(2), progress_inc), &["message"]),
    with_options(builtin("progress-finish!", "(progress-finish! bar :message s :clear #t)", "Finishes the progress bar, leaving it drawn with the final message (or erasing it with :clear #t), and releases the handle.", 1, Some(1), progress_finish), &["message", "clear"]),
];

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
