//! Progress bars in a build without a terminal front end (neither the
//! `cli` nor the `repl` feature): the engine keeps each bar's position and
//! offers it to a rich front end, and nothing is drawn on standard error.

/// Where bars would draw: nowhere.
#[derive(Default)]
pub struct Terminal;

/// A bar that is not drawn.
pub struct TerminalBar;

impl Terminal {
    pub fn add(&mut self, _total: u64, _label: Option<&str>) -> TerminalBar {
        TerminalBar
    }

    pub fn suspend<R>(&self, _live: bool, f: impl FnOnce() -> R) -> R {
        f()
    }
}

impl TerminalBar {
    pub fn set_message(&self, _message: &str) {}

    pub fn inc(&self, _step: u64) {}

    pub fn finish(&self, _clear: bool, _message: Option<&str>) {}
}
