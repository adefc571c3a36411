//! The rustyline helper: multi-line input decided by Epsilon's reader, Tab
//! completion of bound names, and matching-bracket highlighting.

use super::brackets::{BracketMatch, match_at_cursor};
use super::commands::COMMANDS;
use crate::lisp::analyze::SPECIAL_FORMS;
use crate::reader::{FileId, read_all};
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use std::borrow::Cow;

/// The editor helper. `names` is refreshed before each prompt.
pub struct EpsilonHelper {
    /// Names offered by Tab completion.
    pub names: Vec<String>,
}

impl EpsilonHelper {
    /// A helper completing `names` (special forms are added).
    pub fn new(names: Vec<String>) -> Self {
        let mut helper = EpsilonHelper { names: Vec::new() };
        helper.set_names(names);
        helper
    }

    /// Replaces the completion names.
    pub fn set_names(&mut self, mut names: Vec<String>) {
        names.extend(SPECIAL_FORMS.iter().map(|(name, _, _)| name.to_string()));
        names.sort_unstable();
        names.dedup();
        self.names = names;
    }
}

/// True when `text` needs more lines: an unclosed bracket, string or comment.
pub fn needs_more_input(text: &str) -> bool {
    let code = match text.trim_start().strip_prefix(':') {
        Some(command) => command
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest),
        None => text,
    };
    matches!(read_all(code, FileId::NONE), Err(error) if error.is_incomplete())
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !"()[]\"';`,".contains(c)
}

impl Completer for EpsilonHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !is_word_char(*c))
            .map_or(0, |(at, c)| at + c.len_utf8());
        let prefix = &before[start..];
        let pool: Box<dyn Iterator<Item = &str>> = if start == 0 && prefix.starts_with(':') {
            Box::new(COMMANDS.iter().map(|(name, _)| *name))
        } else {
            Box::new(self.names.iter().map(String::as_str))
        };
        let candidates = pool
            .filter(|name| name.starts_with(prefix))
            .map(|name| Pair {
                display: name.to_string(),
                replacement: name.to_string(),
            })
            .collect();
        Ok((start, candidates))
    }
}

impl Hinter for EpsilonHelper {
    type Hint = String;
}

const MATCH_STYLE: &str = "\x1b[1;36m";
const UNMATCHED_STYLE: &str = "\x1b[1;31m";
const RESET: &str = "\x1b[0m";

impl Highlighter for EpsilonHelper {
    fn highlight<'l>(&self, line: &'l str, pos: usize) -> Cow<'l, str> {
        let marks: Vec<(usize, &str)> = match match_at_cursor(line, pos) {
            Some(BracketMatch::Pair(a, b)) => {
                vec![(a.max(b), MATCH_STYLE), (a.min(b), MATCH_STYLE)]
            }
            Some(BracketMatch::Unmatched(a)) => vec![(a, UNMATCHED_STYLE)],
            None => return Cow::Borrowed(line),
        };
        let mut out = line.to_string();
        for (offset, style) in marks {
            if out.is_char_boundary(offset) && offset < out.len() {
                out.replace_range(
                    offset..offset + 1,
                    &format!("{style}{}{RESET}", &line[offset..offset + 1]),
                );
            }
        }
        Cow::Owned(out)
    }

    fn highlight_char(&self, line: &str, pos: usize, kind: CmdKind) -> bool {
        kind != CmdKind::ForcedRefresh && match_at_cursor(line, pos).is_some()
    }
}

impl Validator for EpsilonHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if needs_more_input(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for EpsilonHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_brackets_and_strings_need_more_input() {
        assert!(needs_more_input("(define (f x)"));
        assert!(needs_more_input("(display \"a)"));
        assert!(needs_more_input(":time (fib"));
        assert!(!needs_more_input("(+ 1 2)"));
        assert!(!needs_more_input("(f \"(\")"));
        assert!(
            !needs_more_input("(+ 1 2))"),
            "an extra ')' is an error, not more input"
        );
    }
}
