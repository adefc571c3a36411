//! Progress bars for long loops: `progress` makes one and returns its
//! handle (an integer), `progress-inc!` advances it, `progress-finish!`
//! ends it and releases the handle. The engine keeps each bar's position;
//! `terminal` draws the bars on standard error (builds with the `cli` or
//! `repl` feature, through `indicatif`), and program output is written
//! with the bars lifted out of the way (`Interp::write_output`).
//!
//! Nothing is drawn unless standard error is a terminal (and `TERM` is not
//! `dumb`), so a script whose output goes to files stays silent.
//!
//! Where a rich front end listens (the Jupyter kernel), each bar is also
//! offered to it as a [`Rich::Progress`] item: when it starts, at most
//! every [`RICH_INTERVAL`] as it advances, and when it finishes, so a
//! notebook shows one line that updates in place.

#[cfg_attr(not(any(feature = "cli", feature = "repl")), path = "headless.rs")]
mod terminal;

use super::{builtin, string_option, with_options};
use crate::display::{ProgressState as RichProgress, Rich};
use crate::lisp::error::{EvalError, EvalResult};
use crate::lisp::interp::Interp;
use crate::lisp::procedure::{Args, Builtin};
use crate::lisp::value::Value;
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};
use terminal::{Terminal, TerminalBar};

/// The shortest time between two updates offered to a rich front end.
const RICH_INTERVAL: Duration = Duration::from_millis(200);

/// The live progress bars of an interpreter, by handle.
#[derive(Default)]
pub struct ProgressBars {
    /// Where the bars draw.
    terminal: Terminal,
    /// Unfinished bars.
    bars: FxHashMap<i64, Bar>,
    /// The last handle given out (handles are never reused).
    last: i64,
}

/// An unfinished bar: where it stands, its drawing, and what a rich front
/// end was last shown of it.
struct Bar {
    position: u64,
    total: u64,
    drawn: TerminalBar,
    label: Option<String>,
    message: String,
    started: Instant,
    /// When the front end was last sent this bar.
    sent: Instant,
}

impl ProgressBars {
    /// Runs `f` (which writes to the terminal) with the bars cleared, and
    /// redraws them afterwards.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.terminal.suspend(!self.bars.is_empty(), f)
    }

    fn get(&mut self, handle: &Value) -> EvalResult<(i64, &mut Bar)> {
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
        self.bars.get_mut(&id).map(|bar| (id, bar)).ok_or_else(|| {
            EvalError::range(format!(
                "no active progress bar {id} (it was finished, or never made by progress)"
            ))
        })
    }
}

/// Offers bar `id` to the rich front end (if any): always when `force`,
/// else only if [`RICH_INTERVAL`] has passed since the last offer.
fn offer(interp: &mut Interp, id: i64, force: bool, finished: bool) {
    if !interp.shows_rich() {
        return;
    }
    let Some(bar) = interp.progress.bars.get_mut(&id) else {
        return;
    };
    let now = Instant::now();
    if !force && now.duration_since(bar.sent) < RICH_INTERVAL {
        return;
    }
    bar.sent = now;
    let item = Rich::Progress(RichProgress {
        id,
        label: bar.label.clone(),
        position: bar.position,
        total: bar.total,
        message: bar.message.clone(),
        elapsed: now.duration_since(bar.started).as_secs_f64(),
        finished,
    });
    interp.show(item);
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
    let drawn = state.terminal.add(total, label.as_deref());
    state.last += 1;
    let id = state.last;
    let now = Instant::now();
    state.bars.insert(
        id,
        Bar {
            position: 0,
            total,
            drawn,
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
    if let Some(message) = message {
        bar.drawn.set_message(&message);
        bar.message = message;
    }
    bar.drawn.inc(step);
    bar.position = bar.position.saturating_add(step);
    let position = bar.position;
    offer(interp, id, false, false);
    Ok(Value::Int(i64::try_from(position).unwrap_or(i64::MAX)))
}

fn progress_finish(interp: &mut Interp, args: &Args) -> EvalResult<Value> {
    let (id, bar) = interp.progress.get(&args[0])?;
    let message = string_option(args, "message")?;
    let clear = args.option("clear").is_some_and(Value::is_truthy);
    bar.drawn.finish(clear, message.as_deref());
    if let Some(message) = message {
        bar.message = message;
    }
    offer(interp, id, true, true);
    interp.progress.bars.remove(&id);
    Ok(Value::Void)
}

/// The built-ins of this family, with their docstrings.
#[rustfmt::skip]
pub const BUILTINS: &[Builtin] = &[
    with_options(builtin("progress", "(progress total :label s)", "Starts a progress bar counting to total and returns its handle (an integer). The bar shows the label, the bar, position/total, the rate (steps per second, or seconds per step when slower), the time left and a message; it is drawn on standard error only when that is a terminal.", 1, Some(1), progress), &["label"]),
    with_options(builtin("progress-inc!", "(progress-inc! bar [n] :message s)", "Advances the progress bar by n (default 1, may be 0), sets its message if given, and returns the new position.", 1, Some(2), progress_inc), &["message"]),
    with_options(builtin("progress-finish!", "(progress-finish! bar :message s :clear #t)", "Finishes the progress bar, leaving it drawn with the final message (or erasing it with :clear #t), and releases the handle.", 1, Some(1), progress_finish), &["message", "clear"]),
];
