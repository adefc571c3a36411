//! REPL commands: lines starting with `:`.

use crate::lisp::eval::format_duration;
use crate::{Engine, Notation};
use std::time::Instant;

/// The commands with a one-line description each.
pub const COMMANDS: &[(&str, &str)] = &[
    (":help", "this help"),
    (
        ":doc",
        ":doc NAME - the documentation of a function, macro or special form",
    ),
    (
        ":time",
        ":time EXPR - evaluate EXPR and print the time it took",
    ),
    (":load", ":load FILE - evaluate a file"),
    (
        ":infix",
        "show symbolic results as infix text (x^2 + sin(y))",
    ),
    (":latex", "show symbolic results as LaTeX"),
    (
        ":sexp",
        "show symbolic results as s-expressions again (the default)",
    ),
    (":quit", "leave the REPL (Ctrl-D does too)"),
];

/// What the REPL does after a command.
pub enum Outcome {
    /// Read the next line.
    Continue,
    /// Leave with this exit status.
    Quit(i32),
}

fn help_text() -> String {
    let mut text = String::from(
        "Type an expression to evaluate it; input continues over lines until brackets balance.\n\
         Tab completes names, Ctrl-C interrupts a running evaluation, Ctrl-D leaves.\n\nCommands:\n",
    );
    for (name, description) in COMMANDS {
        text.push_str(&format!("  {name:<7} {description}\n"));
    }
    text.push_str("\nTry: (doc 'map)  (define (f x) (* x x))  (f 3)  (sum (* [1 2 3] [4 5 6]))");
    text
}

/// Runs the command line `line` (which starts with ':'); `notation` is
/// how the session shows symbolic results; `name` names the entry in
/// error locations.
pub fn run_command(
    engine: &mut Engine,
    notation: &mut Notation,
    line: &str,
    name: &str,
) -> Outcome {
    let line = line.trim();
    let (command, argument) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let argument = argument.trim();
    match command {
        ":help" | ":h" => return super::print_line(&help_text()),
        ":quit" | ":q" | ":exit" => return Outcome::Quit(0),
        ":infix" => *notation = Notation::Infix,
        ":latex" => *notation = Notation::Latex,
        ":sexp" => *notation = Notation::Sexp,
        ":doc" if !argument.is_empty() => match engine.doc(argument) {
            Some(text) => return super::print_line(&wrap(&text, DOC_WIDTH)),
            None => eprintln!("error: {argument} is not defined"),
        },
        ":time" if !argument.is_empty() => {
            let started = Instant::now();
            let result = engine.eval_named(argument, name);
            let elapsed = started.elapsed().as_secs_f64();
            let outcome = super::show_result(engine, *notation, result);
            eprintln!("time: {}", format_duration(elapsed));
            return outcome;
        }
        ":load" if !argument.is_empty() => {
            let path = argument.trim_matches('"');
            let result = engine.run_file(path);
            return super::show_result(engine, *notation, result);
        }
        ":doc" | ":time" | ":load" => eprintln!("error: {command} needs an argument; see :help"),
        other => eprintln!("error: unknown command {other}; :help lists the commands"),
    }
    Outcome::Continue
}

/// The width `:doc` wraps its text to.
const DOC_WIDTH: usize = 78;

/// `text` with each line broken between words so none is longer than
/// `width` (a word longer than that stands alone); a continued line keeps
/// the indentation of the line it continues.
fn wrap(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut current = String::from(indent);
        for word in line.split_whitespace() {
            let empty = current.len() == indent.len();
            if !empty && current.len() + 1 + word.len() > width {
                out.push(std::mem::replace(&mut current, String::from(indent)));
            }
            if current.len() > indent.len() {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push(current);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn doc_text_wraps_between_words_keeping_the_indentation() {
        let text = "(f x)\n  one two three four five six seven";
        assert_eq!(
            wrap(text, 16),
            "(f x)\n  one two three\n  four five six\n  seven"
        );
        assert_eq!(
            wrap("  averyveryverylongword x", 8),
            "  averyveryverylongword\n  x"
        );
        let long = "word ".repeat(50);
        for line in wrap(&long, 78).lines() {
            assert!(line.chars().count() <= 78, "{line}");
        }
    }
}
