//! Editing help: completion, whether input is complete, the word under
//! the cursor.
//!
//! A name completes from the session's bound names and the special
//! forms. A keyword (`:lo`) completes from the keywords the documentation
//! of the call it is written in names (`(plot xs ys :lo` offers `:log-x`
//! and `:log-y`), or from every documented keyword when that call names
//! none; at the start of a cell the cell commands (`:doc`, `:time`) are
//! offered too.

use crate::Engine;
use crate::reader::{FileId, read_all};
use jupyter_protocol::IsCompleteReplyStatus;
use std::collections::BTreeSet;

/// The commands a cell may start with.
pub const CELL_COMMANDS: &[&str] = &[":doc", ":time"];

/// Whether `code` can run as it is: `incomplete` while a bracket, string
/// or comment is open, `invalid` when no more text can make it read (a
/// closing bracket too many), `complete` otherwise. A cell command is
/// judged by its argument; `?NAME` is complete.
pub fn completeness(code: &str) -> IsCompleteReplyStatus {
    let trimmed = code.trim_start();
    let forms = match trimmed.strip_prefix(':') {
        Some(command) => command
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest),
        None if trimmed.starts_with('?') => return IsCompleteReplyStatus::Complete,
        None => code,
    };
    match read_all(forms, FileId::NONE) {
        Ok(_) => IsCompleteReplyStatus::Complete,
        Err(error) if error.is_incomplete() => IsCompleteReplyStatus::Incomplete,
        Err(_) => IsCompleteReplyStatus::Invalid,
    }
}

/// Completion of the word before `cursor` (in characters): its start,
/// its end and the candidates it begins, sorted.
pub fn complete(engine: &Engine, code: &str, cursor: usize) -> (usize, usize, Vec<String>) {
    let chars: Vec<char> = code.chars().collect();
    let end = cursor.min(chars.len());
    let start = (0..end)
        .rev()
        .take_while(|&i| is_word_char(chars[i]))
        .last()
        .unwrap_or(end);
    let prefix: String = chars[start..end].iter().collect();
    let candidates: BTreeSet<String> = if prefix.starts_with(':') {
        let mut found = keywords(engine, enclosing_head(&chars, start).as_deref(), &prefix);
        if chars[..start].iter().all(|c| c.is_whitespace()) {
            found.extend(CELL_COMMANDS.iter().map(|c| c.to_string()));
        }
        found
    } else {
        engine
            .global_names()
            .into_iter()
            .map(str::to_string)
            .chain(
                crate::lisp::analyze::SPECIAL_FORMS
                    .iter()
                    .map(|(name, _, _)| name.to_string()),
            )
            .collect()
    };
    let matches = candidates
        .into_iter()
        .filter(|name| name.starts_with(&prefix))
        .collect();
    (start, end, matches)
}

/// The keywords beginning with `prefix` that the documentation of `head`
/// names, or, when it names none, that any documentation names.
fn keywords(engine: &Engine, head: Option<&str>, prefix: &str) -> BTreeSet<String> {
    let starting = |doc: &str| -> BTreeSet<String> {
        keywords_in(doc)
            .filter(|k| k.starts_with(prefix))
            .map(str::to_string)
            .collect()
    };
    if let Some(doc) = head.and_then(|head| engine.doc(head)) {
        let own = starting(&doc);
        if !own.is_empty() {
            return own;
        }
    }
    engine
        .global_names()
        .into_iter()
        .filter_map(|name| engine.doc(name))
        .flat_map(|doc| starting(&doc))
        .collect()
}

/// The keywords (`:name`, a letter first) written in `doc`.
fn keywords_in(doc: &str) -> impl Iterator<Item = &str> {
    doc.match_indices(':').filter_map(move |(at, _)| {
        let before = doc[..at].chars().next_back();
        if before.is_some_and(|c| !c.is_whitespace() && !"([`'".contains(c)) {
            return None;
        }
        let rest = &doc[at + 1..];
        if !rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '?' || c == '!'))
            .unwrap_or(rest.len());
        Some(doc[at..at + 1 + len].trim_end_matches('-'))
    })
}

/// The name at the head of the innermost form still open before `at`.
fn enclosing_head(chars: &[char], at: usize) -> Option<String> {
    let mut depth = 0usize;
    for i in (0..at).rev() {
        match chars[i] {
            ')' | ']' => depth += 1,
            '(' | '[' if depth > 0 => depth -= 1,
            '(' | '[' => {
                let head: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| is_word_char(**c))
                    .collect();
                return (!head.is_empty()).then_some(head);
            }
            _ => {}
        }
    }
    None
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !"()[]{}\"';`,".contains(c)
}

/// The word around `cursor` (in characters): start, end and text.
pub fn word_at(code: &str, cursor: usize) -> Option<(usize, usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let cursor = cursor.min(chars.len());
    let mut start = cursor;
    while start > 0 && is_word_char(chars[start - 1]) {
        start -= 1;
    }
    let mut end = cursor;
    while end < chars.len() && is_word_char(chars[end]) {
        end += 1;
    }
    (start < end).then(|| (start, end, chars[start..end].iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_the_cursor_is_found_inside_and_at_the_end() {
        assert_eq!(word_at("(grad f)", 3), Some((1, 5, "grad".into())));
        assert_eq!(word_at("(grad f)", 5), Some((1, 5, "grad".into())));
        assert_eq!(word_at("(λx 1)", 2), Some((1, 3, "λx".into())));
        assert_eq!(word_at("( )", 1), None);
    }

    #[test]
    fn input_is_complete_incomplete_or_invalid() {
        use IsCompleteReplyStatus::*;
        let status = |code| completeness(code);
        assert!(matches!(status("(+ 1 2)"), Complete));
        assert!(matches!(status("(+ 1"), Incomplete));
        assert!(matches!(status("\"open"), Incomplete));
        assert!(matches!(status("(+ 1 2))"), Invalid));
        assert!(matches!(status(")"), Invalid));
        assert!(matches!(status("(+ 1 2]"), Invalid));
        assert!(matches!(status(":time (+ 1"), Incomplete));
        assert!(matches!(status(":time (+ 1))"), Invalid));
        assert!(matches!(status(":doc map"), Complete));
        assert!(matches!(status("?map"), Complete));
    }

    #[test]
    fn keywords_are_read_from_documentation() {
        let doc = "(plot xs ys :log-x #t :width px) :lr {:.3} a:b (f :dtype) `:axis`";
        let found: Vec<&str> = keywords_in(doc).collect();
        assert_eq!(found, [":log-x", ":width", ":lr", ":dtype", ":axis"]);
    }

    #[test]
    fn keywords_complete_from_the_enclosing_call() {
        let engine = Engine::new();
        let (start, end, matches) = complete(&engine, ":lo", 3);
        assert_eq!((start, end), (0, 3));
        assert!(matches.contains(&":log-x".to_string()), "{matches:?}");
        let code = "(plot xs ys :lo";
        let (start, _, matches) = complete(&engine, code, code.len());
        assert_eq!(start, 12);
        assert_eq!(matches, [":log-x", ":log-y"]);
        let code = "(fit loss w data :epochs 3 :optimizer (adam :l";
        let (_, _, matches) = complete(&engine, code, code.chars().count());
        assert!(matches.iter().all(|m| m.starts_with(":l")), "{matches:?}");
        assert!(matches.contains(&":lr".to_string()), "{matches:?}");
        let (_, _, matches) = complete(&engine, ":ti", 3);
        assert!(matches.contains(&":time".to_string()), "{matches:?}");
        let (_, _, matches) = complete(&engine, "(f :ti", 6);
        assert!(!matches.contains(&":time".to_string()), "{matches:?}");
    }
}
