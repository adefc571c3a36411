//! docs/reference.md is generated from the built-in tables and the special
//! form table; this test fails when it is out of date. Regenerate with
//! `UPDATE_DOCS=1 cargo test --release --test docs`.

use epsilon::lisp::analyze::SPECIAL_FORMS;
use epsilon::lisp::builtins::TABLES;
use epsilon::lisp::interp::STDLIB;
use epsilon::reader::{FileId, Sexp, SexpKind, read_all};

/// The name and docstring of a top-level `(define (name ...) "doc" ...)` or
/// `(defmacro name (...) "doc" ...)`, if the form is one.
fn documented_definition(form: &Sexp) -> Option<Definition> {
    let SexpKind::List(items, _) = &form.kind else {
        return None;
    };
    let head = match items.first().map(|s| &s.kind) {
        Some(SexpKind::Symbol(head)) => head.as_str(),
        _ => return None,
    };
    let name = match (head, items.get(1).map(|s| &s.kind)) {
        ("define", Some(SexpKind::List(signature, _))) => {
            match signature.first().map(|s| &s.kind) {
                Some(SexpKind::Symbol(name)) => name.clone(),
                _ => return None,
            }
        }
        ("defmacro", Some(SexpKind::Symbol(name))) => name.clone(),
        _ => return None,
    };
    let body_start = if head == "define" { 2 } else { 3 };
    let doc = match items.get(body_start).map(|s| &s.kind) {
        Some(SexpKind::Str(doc)) if items.len() > body_start + 1 => Some(doc.clone()),
        _ => None,
    };
    Some((name, doc))
}

/// A defined name with its docstring, if it has one.
type Definition = (String, Option<String>);

/// Every function and macro the stdlib files define, file by file.
fn stdlib_definitions() -> Vec<(&'static str, Vec<Definition>)> {
    STDLIB
        .iter()
        .map(|(file, source)| {
            let forms = read_all(source, FileId(0)).expect("the stdlib reads");
            (
                *file,
                forms.iter().filter_map(documented_definition).collect(),
            )
        })
        .collect()
}

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
         ## Standard library\n\nWritten in Epsilon (`stdlib/`), loaded at start. Functions that take options read them as keyword arguments; each docstring starts with the call and its defaults.\n",
    );
    for (file, definitions) in stdlib_definitions() {
        out.push_str(&format!("\n### {file}\n\n"));
        for (name, doc) in definitions {
            let doc = doc.unwrap_or_default();
            out.push_str(&format!("- **{name}**: {doc}\n"));
        }
    }
    out
}

#[test]
fn every_stdlib_function_has_a_docstring() {
    let engine = epsilon::Engine::new();
    for (file, definitions) in stdlib_definitions() {
        assert!(!definitions.is_empty(), "{file} defines nothing");
        for (name, doc) in definitions {
            let doc = doc.unwrap_or_else(|| panic!("{file}: {name} has no docstring"));
            assert!(
                doc.starts_with(&format!("({name}")) || doc.len() > 20,
                "{file}: {name}'s docstring is too short: {doc:?}"
            );
            // The engine shows the same docstring under that name.
            let shown = engine
                .doc(&name)
                .unwrap_or_else(|| panic!("{file}: (doc '{name}) finds nothing"));
            assert!(
                shown.contains(&doc),
                "{file}: (doc '{name}) shows {shown:?}"
            );
        }
    }
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
/// lines that follow it, up to the next prompt or the end of the block,
/// and its entry number in the block (a block reads as a session from its
/// start, so its third entry's errors say `<repl 3>`).
fn transcripts(page: &str) -> Vec<(String, String, usize)> {
    let mut cases: Vec<(String, String, usize)> = Vec::new();
    let mut in_block = false;
    let mut entry = 0;
    for line in page.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            entry = 0;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(input) = line.strip_prefix("ε> ") {
            entry += 1;
            cases.push((input.to_string(), String::new(), entry));
        } else if let Some((_, output, _)) = cases.last_mut().filter(|_| !line.is_empty()) {
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
    for (input, expected, entry) in cases {
        let input = input.split("   ;").next().unwrap_or(&input).trim_end();
        let printed = match engine.eval(input) {
            Ok(epsilon::Value::Void) => String::new(),
            Ok(value) => epsilon::lisp::printer::write_string(&value),
            Err(error) => error
                .render()
                .lines()
                .next()
                .unwrap_or("")
                .replace("<eval>", &format!("<repl {entry}>")),
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

#[test]
fn the_stdlib_guide_transcripts_run_as_shown() {
    check_transcripts("stdlib.md");
}

#[test]
fn the_arrays_guide_transcripts_run_as_shown() {
    check_transcripts("arrays.md");
}

#[test]
fn the_linear_algebra_guide_transcripts_run_as_shown() {
    check_transcripts("linear-algebra.md");
}

#[test]
fn the_taylor_guide_transcripts_run_as_shown() {
    check_transcripts("taylor.md");
}

/// Every relative link in the documentation names a file inside the
/// repository that exists (a `#fragment` is not checked); links to web
/// addresses are left alone.
#[test]
fn links_stay_inside_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = root.canonicalize().expect("the crate root exists");
    let mut pages: Vec<std::path::PathBuf> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/ exists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut bad = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            rest = &rest[end..];
            let file = target.split('#').next().unwrap_or("");
            if file.is_empty()
                || file.contains("://")
                || file.starts_with("mailto:")
                || file.contains(' ')
            {
                continue;
            }
            let resolved = page.parent().expect("pages sit in a directory").join(file);
            let inside = resolved
                .canonicalize()
                .is_ok_and(|path| path.starts_with(&root));
            if !inside {
                bad.push(format!(
                    "{}: {target}",
                    page.strip_prefix(&root).unwrap_or(&page).display()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "links to missing files or outside the repository:\n{}",
        bad.join("\n")
    );
}
