//! The source map: the texts the engine has read, so errors can quote the
//! offending line and `load` can resolve paths relative to the calling file.

use crate::reader::{FileId, Span};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One registered text.
pub struct SourceFile {
    /// The name shown in error messages (a path, `<repl 3>`, `<eval>`).
    pub name: String,
    /// The file on disk it came from, if any.
    pub path: Option<PathBuf>,
    /// The text.
    pub text: Rc<str>,
}

/// All texts read so far, indexed by [`FileId`].
#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

/// At most this many characters of a source line are quoted in an error.
const MAX_QUOTED_LINE: usize = 120;

impl SourceMap {
    /// Registers a text and returns its id.
    pub fn add(&mut self, name: impl Into<String>, path: Option<PathBuf>, text: &str) -> FileId {
        self.files.push(SourceFile {
            name: name.into(),
            path,
            text: Rc::from(text),
        });
        FileId((self.files.len() - 1) as u32)
    }

    /// The file a span points into.
    pub fn file(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// The name of the file a span points into.
    pub fn name(&self, span: Span) -> Option<&str> {
        self.file(span.file).map(|f| f.name.as_str())
    }

    /// The directory of the file a span points into, for relative `load`.
    pub fn directory_of(&self, span: Span) -> Option<&Path> {
        self.file(span.file)?.path.as_deref()?.parent()
    }

    /// The source line under `span` and a caret line marking the span, cut to
    /// a window around the span when the line is very long.
    pub fn excerpt(&self, span: Span) -> Option<(String, String)> {
        let file = self.file(span.file)?;
        let text = &file.text;
        let start = (span.start as usize).min(text.len());
        let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |at| start + at);
        let line = text[line_start..line_end].trim_end_matches('\r');
        let chars: Vec<char> = line.chars().collect();
        let col = (span.col as usize).saturating_sub(1).min(chars.len());
        let span_chars = text[start..(span.end() as usize).min(line_end).max(start)]
            .chars()
            .count()
            .max(1);
        let (window_start, prefix) = if chars.len() > MAX_QUOTED_LINE && col > MAX_QUOTED_LINE / 2 {
            (col - MAX_QUOTED_LINE / 2, "...")
        } else {
            (0, "")
        };
        let window_end = (window_start + MAX_QUOTED_LINE).min(chars.len());
        let suffix = if window_end < chars.len() { "..." } else { "" };
        let quoted: String = chars[window_start..window_end].iter().collect();
        let caret_len = span_chars.min(window_end.saturating_sub(col)).max(1);
        // Tabs before the caret are copied so it lines up under any tab width.
        let indent: String = " ".repeat(prefix.len())
            + &chars[window_start..col]
                .iter()
                .map(|c| if *c == '\t' { '\t' } else { ' ' })
                .collect::<String>();
        Some((
            format!("{prefix}{quoted}{suffix}"),
            format!("{indent}{}", "^".repeat(caret_len)),
        ))
    }
}
