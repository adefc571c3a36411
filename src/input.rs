//! Where `read-line` reads: standard input, or the [`LineInput`] a front
//! end installs (`Engine::set_input`; the Jupyter kernel asks the
//! notebook with an input request).

/// A source of input lines for `read-line`.
pub trait LineInput {
    /// Shows `prompt` and gives the line typed, without its line end;
    /// `Ok(None)` at the end of input. The error is a sentence saying why
    /// no line can be read (the front end does not accept input, the wait
    /// was interrupted).
    fn read_line(&mut self, prompt: &str) -> Result<Option<String>, String>;
}

/// Reads a line of standard input (what `read-line` does without a
/// [`LineInput`], its prompt written as program output first).
pub fn read_stdin_line() -> Result<Option<String>, String> {
    use std::io::BufRead;
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(strip_line_end(line))),
        Err(err) => Err(format!("cannot read standard input: {err}")),
    }
}

/// `line` without its final `\n` or `\r\n`.
pub fn strip_line_end(mut line: String) -> String {
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_are_removed_once() {
        assert_eq!(strip_line_end("abc\n".into()), "abc");
        assert_eq!(strip_line_end("abc\r\n".into()), "abc");
        assert_eq!(strip_line_end("abc".into()), "abc");
        assert_eq!(strip_line_end("a\n\n".into()), "a\n");
    }
}
