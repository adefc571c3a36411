//! Runs the evaluator test table in `tests/lisp/*.lisp` (mal's `;=>` format).
//!
//! Each file is a sequence of forms. The comment lines that follow a form,
//! before the next one, say what it should do:
//!
//! ```text
//! (+ 1 2)
//! ;=> 3                        the echo (`format!("{value}")`) of its value
//! (car '())
//! ;!! car of the empty list    a substring of the error's one-line message
//! (println "hi")
//! ;>> hi                       one line of expected output, in order
//! ```
//!
//! A form with none of these is only evaluated (it must not fail), so its
//! definitions can be used by later cases: the forms of one file run in order
//! in one engine. Other `;` comments are ignored. Every file is one `#[test]`
//! that reports all its failing cases with `file:line`, not just the first.
//! The global `*tmp*` holds a fresh temporary directory for files a case
//! writes; `tests/lisp/data/` holds the files cases read.

use epsilon::Engine;
use epsilon::reader::{FileId, read_all};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The fewest cases (forms with an expectation) the table must hold.
const MIN_CASES: usize = 170;

/// What a form is expected to do.
#[derive(Debug, Default)]
struct Expectation {
    /// The echo of its value (`;=>`).
    value: Option<String>,
    /// A substring of its error message (`;!!`).
    error: Option<String>,
    /// The lines it writes to the output (`;>>`).
    output: Vec<String>,
    /// Problems with the expectation lines themselves.
    malformed: Vec<String>,
}

impl Expectation {
    fn is_case(&self) -> bool {
        self.value.is_some() || self.error.is_some() || !self.output.is_empty()
    }
}

/// One form of a test file with what follows it.
struct Form {
    line: u32,
    col: u32,
    source: String,
    expect: Expectation,
}

/// A `Write` whose bytes can be read back by the test.
#[derive(Clone, Default)]
struct SharedBuffer(Rc<RefCell<Vec<u8>>>);

impl SharedBuffer {
    fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.borrow_mut());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn table_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("lisp")
}

/// Parses the expectation comments in `region` (the text between two forms).
fn parse_expectation(region: &str) -> Expectation {
    let mut expect = Expectation::default();
    for line in region.lines() {
        let line = line.trim();
        if let Some(text) = line.strip_prefix(";=>") {
            if expect.value.replace(text.trim().to_string()).is_some() {
                expect.malformed.push("more than one ;=> line".to_string());
            }
        } else if let Some(text) = line.strip_prefix(";!!") {
            if expect.error.replace(text.trim().to_string()).is_some() {
                expect.malformed.push("more than one ;!! line".to_string());
            }
        } else if let Some(text) = line.strip_prefix(";>>") {
            let text = text.strip_prefix(' ').unwrap_or(text);
            expect.output.push(text.trim_end().to_string());
        }
    }
    if expect.value.is_some() && expect.error.is_some() {
        expect.malformed.push("both ;=> and ;!! given".to_string());
    }
    if matches!(&expect.error, Some(e) if e.is_empty()) {
        expect
            .malformed
            .push(";!! needs a message substring".to_string());
    }
    expect
}

/// Splits a test file into its forms and their expectations.
fn parse_file(text: &str) -> Result<Vec<Form>, String> {
    let data = read_all(text, FileId(0)).map_err(|error| format!("cannot read: {error:?}"))?;
    let mut forms = Vec::with_capacity(data.len());
    for (position, datum) in data.iter().enumerate() {
        let start = datum.span.start as usize;
        let end = datum.span.end() as usize;
        let next = data
            .get(position + 1)
            .map_or(text.len(), |d| d.span.start as usize);
        let source = text
            .get(start..end)
            .ok_or_else(|| format!("bad span {start}..{end}"))?;
        let region = text.get(end..next).unwrap_or("");
        forms.push(Form {
            line: datum.span.line,
            col: datum.span.col,
            source: source.to_string(),
            expect: parse_expectation(region),
        });
    }
    Ok(forms)
}

/// The lines of captured output (a last line without a newline counts).
fn output_lines(output: &str) -> Vec<String> {
    if output.is_empty() {
        return Vec::new();
    }
    let body = output.strip_suffix('\n').unwrap_or(output);
    body.split('\n').map(|l| l.trim_end().to_string()).collect()
}

/// Runs one form and describes how it failed its expectation, if it did.
fn check_form(
    engine: &mut Engine,
    buffer: &SharedBuffer,
    name: &str,
    form: &Form,
) -> Option<String> {
    if !form.expect.malformed.is_empty() {
        return Some(format!(
            "malformed case: {}",
            form.expect.malformed.join("; ")
        ));
    }
    // Pad so that error locations point at the form's place in the file.
    let padded = format!(
        "{}{}{}",
        "\n".repeat(form.line.saturating_sub(1) as usize),
        " ".repeat(form.col.saturating_sub(1) as usize),
        form.source
    );
    buffer.take();
    let result = engine.eval_named(&padded, name);
    let output = output_lines(&buffer.take());
    let mut problems = Vec::new();
    match (&result, &form.expect.value, &form.expect.error) {
        (Ok(value), Some(expected), _) => {
            let actual = format!("{value}");
            if actual != *expected {
                problems.push(format!("expected {expected}\n      got      {actual}"));
            }
        }
        (Ok(value), None, Some(expected)) => {
            problems.push(format!(
                "expected an error containing {expected:?}\n      got the value {value}"
            ));
        }
        (Err(error), _, Some(expected)) => {
            if !error.message().contains(expected.as_str()) {
                problems.push(format!(
                    "expected an error containing {expected:?}\n      got the error {:?}",
                    error.message()
                ));
            }
        }
        (Err(error), _, None) => {
            problems.push(format!("unexpected error: {error}"));
        }
        (Ok(_), None, None) => {}
    }
    if !form.expect.output.is_empty() && output != form.expect.output {
        problems.push(format!(
            "expected output {:?}\n      got output      {:?}",
            form.expect.output, output
        ));
    }
    (!problems.is_empty()).then(|| problems.join("\n      "))
}

/// Runs every form of one table file; panics listing all failures.
fn run_file(file_name: &str) {
    let path = table_dir().join(file_name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let forms = parse_file(&text).unwrap_or_else(|error| panic!("{file_name}: {error}"));
    let mut engine = Engine::new();
    let buffer = SharedBuffer::default();
    engine.set_output(Box::new(buffer.clone()));
    let scratch = tempfile::tempdir().expect("a temporary directory can be made");
    engine.set(
        "*tmp*",
        scratch.path().to_string_lossy().into_owned().into(),
    );
    let name = format!("tests/lisp/{file_name}");
    let mut report = String::new();
    let mut failures = 0;
    let mut cases = 0;
    for form in &forms {
        if form.expect.is_case() {
            cases += 1;
        }
        if let Some(problem) = check_form(&mut engine, &buffer, &name, form) {
            failures += 1;
            let source = form.source.lines().next().unwrap_or("");
            let ellipsis = if form.source.contains('\n') {
                " ..."
            } else {
                ""
            };
            let _ = writeln!(
                report,
                "{name}:{}: {source}{ellipsis}\n      {problem}",
                form.line
            );
        }
    }
    assert!(cases > 0, "{name} holds no cases");
    assert!(
        failures == 0,
        "{failures} of {} forms failed in {name}:\n{report}",
        forms.len()
    );
}

/// The table files, each with its test below.
const FILES: &[&str] = &[
    "special_forms.lisp",
    "stdlib.lisp",
    "closures_and_tail_calls.lisp",
    "macros_quasiquote.lisp",
    "numbers.lisp",
    "lists.lisp",
    "strings_io.lisp",
    "tensors.lisp",
    "reductions.lisp",
    "errors.lisp",
    "data_files.lisp",
    "symbolic.lisp",
    "numeric.lisp",
    "special.lisp",
];

macro_rules! table_tests {
    ($($test:ident => $file:literal,)*) => {
        $(#[test]
        fn $test() {
            run_file($file);
        })*
    };
}

table_tests! {
    special_forms => "special_forms.lisp",
    stdlib => "stdlib.lisp",
    closures_and_tail_calls => "closures_and_tail_calls.lisp",
    macros_quasiquote => "macros_quasiquote.lisp",
    numbers => "numbers.lisp",
    lists => "lists.lisp",
    strings_io => "strings_io.lisp",
    tensors => "tensors.lisp",
    reductions => "reductions.lisp",
    errors => "errors.lisp",
    data_files => "data_files.lisp",
    symbolic => "symbolic.lisp",
    numeric => "numeric.lisp",
    special => "special.lisp",
}

#[test]
fn every_table_file_is_run() {
    let mut on_disk: Vec<String> = std::fs::read_dir(table_dir())
        .expect("tests/lisp exists")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".lisp"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "add new .lisp files to FILES and table_tests!"
    );
}

#[test]
fn table_has_enough_cases() {
    let mut total = 0;
    let mut counts = String::new();
    for file in FILES {
        let text = std::fs::read_to_string(table_dir().join(file)).expect("table file reads");
        let forms = parse_file(&text).unwrap_or_else(|error| panic!("{file}: {error}"));
        let cases = forms.iter().filter(|f| f.expect.is_case()).count();
        let _ = writeln!(counts, "  {file}: {cases}");
        println!("{file}: {cases} cases");
        total += cases;
    }
    println!("total: {total} cases");
    assert!(
        total >= MIN_CASES,
        "the table holds {total} cases, fewer than {MIN_CASES}:\n{counts}"
    );
}

#[test]
fn expectation_lines_parse() {
    let forms = parse_file("(+ 1 2)\n;=> 3\n; a comment\n(println \"a\")\n;>> a\n(car 1) ;!! expected a list\n(define x 1)\n").unwrap();
    assert_eq!(forms.len(), 4);
    assert_eq!(forms[0].expect.value.as_deref(), Some("3"));
    assert_eq!(forms[1].expect.output, vec!["a".to_string()]);
    assert_eq!(forms[2].expect.error.as_deref(), Some("expected a list"));
    assert!(!forms[3].expect.is_case());
    assert_eq!(forms[3].line, 7);
}
