//! docs/reference.md is generated from the built-in tables and the special
//! form table; this test fails when it is out of date. Regenerate with
//! `UPDATE_DOCS=1 cargo test --release --test docs`.

use epsilon::lisp::analyze::SPECIAL_FORMS;
use epsilon::lisp::builtins::TABLES;

fn reference() -> String {
    let mut out = String::from(
        "# Epsilon language reference\n\n\
         Generated from the docstrings in the source (`UPDATE_DOCS=1 cargo test --release --test docs`).\n\
         In the REPL, `:doc NAME` or `(doc 'NAME)` shows the same text.\n\n## Special forms\n\n",
    );
    for (name, usage, doc) in SPECIAL_FORMS {
        out.push_str(&format!("- **{name}** `{usage}`: {doc}\n"));
    }
    out.push_str("\n## Built-in functions\n\n| name | usage | description |\n|---|---|---|\n");
    let mut builtins: Vec<_> = TABLES.iter().flat_map(|t| t.iter()).collect();
    builtins.sort_by_key(|b| b.name);
    for builtin in builtins {
        let usage = builtin.usage.replace('|', "\\|");
        let doc = builtin.doc.replace('|', "\\|");
        out.push_str(&format!("| `{}` | `{usage}` | {doc} |\n", builtin.name));
    }
    out.push_str(
        "\n## Constants and variables\n\n- `pi`: 3.141592653589793\n- `*args*`: the script arguments, a list of strings\n\n\
         ## Prelude (stdlib/prelude.lisp)\n\n`dotimes`, `dolist`, `->`, `->>`, `assert`, `defrule` (macros), `identity`, `compose`.\n",
    );
    out
}

#[test]
fn reference_is_up_to_date() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md");
    let expected = reference();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(path, &expected).expect("docs/reference.md is writable");
    }
    let actual = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/reference.md is out of date: run UPDATE_DOCS=1 cargo test --release --test docs"
    );
}

/// The REPL transcripts of a page: each `ε> input` line with the printed
/// lines that follow it, up to the next prompt or the end of the block.
fn transcripts(page: &str) -> Vec<(String, String)> {
    let mut cases: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    for line in page.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(input) = line.strip_prefix("ε> ") {
            cases.push((input.to_string(), String::new()));
        } else if let Some((_, output)) = cases.last_mut().filter(|_| !line.is_empty()) {
            if !output.is_empty() {
                output.push('\n');
            }
            output.push_str(line);
        }
    }
    cases
}

/// Runs every `ε>` line of the page in one engine and compares the first
/// printed line with the page.
fn check_transcripts(name: &str) {
    let path = format!("{}/docs/{name}", env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(&path).expect("the guide exists");
    let cases = transcripts(&page);
    assert!(cases.len() >= 10, "found {} transcript lines", cases.len());
    let mut engine = epsilon::Engine::new();
    for (input, expected) in cases {
        let input = input.split("   ;").next().unwrap_or(&input).trim_end();
        let printed = match engine.eval(input) {
            Ok(epsilon::Value::Void) => String::new(),
            Ok(value) => epsilon::lisp::printer::write_string(&value),
            Err(error) => error.to_string().replace("<eval>", "<repl>"),
        };
        let expected = expected.lines().next().unwrap_or("").to_string();
        let matches = printed == expected
            || (expected.ends_with("...") && printed.starts_with(expected.trim_end_matches("...")));
        assert!(
            matches,
            "{input}\n  shows:  {expected}\n  prints: {printed}"
        );
    }
}

#[test]
fn the_symbolic_guide_transcripts_run_as_shown() {
    check_transcripts("symbolic.md");
}

#[test]
fn the_numeric_guide_transcripts_run_as_shown() {
    check_transcripts("numeric.md");
}

#[test]
fn the_differentiation_guide_transcripts_run_as_shown() {
    check_transcripts("differentiation.md");
}
