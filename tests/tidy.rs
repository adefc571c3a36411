//! Tidy checks on the source tree: layer boundaries (ARCHITECTURE.md
//! invariants), module docs on every file, no stubs.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("source folder is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn src(folder: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    rust_files(&root)
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).expect("source file is readable");
            (path, text)
        })
        .collect()
}

fn assert_no_use(folder: &str, forbidden: &[&str]) {
    for (path, text) in src(folder) {
        for needle in forbidden {
            assert!(!text.contains(needle), "{} uses {needle}", path.display());
        }
    }
}

#[test]
fn the_reader_knows_nothing_of_evaluation() {
    assert_no_use(
        "reader",
        &[
            "crate::lisp",
            "crate::engine",
            "crate::repl",
            "crate::Engine",
        ],
    );
}

#[test]
fn the_egraph_knows_nothing_of_lisp_or_text() {
    assert_no_use(
        "egraph",
        &[
            "crate::lisp",
            "crate::reader",
            "crate::engine",
            "crate::repl",
            "crate::Engine",
            "Value",
        ],
    );
}

#[test]
fn scalar_kernels_depend_on_nothing() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scalar.rs"))
        .expect("src/scalar.rs exists");
    assert!(
        !text.contains("use "),
        "src/scalar.rs must stay free of imports"
    );
    for (path, text) in src("scalar") {
        assert!(
            !text.contains("use "),
            "{} must stay free of imports",
            path.display()
        );
    }
}

#[test]
fn charts_know_nothing_of_lisp_files_or_front_ends() {
    assert_no_use(
        "plot",
        &[
            "crate::lisp",
            "crate::display",
            "crate::data",
            "crate::engine",
            "crate::Value",
            "std::fs",
        ],
    );
}

#[test]
fn the_language_knows_nothing_of_its_front_ends() {
    assert_no_use(
        "lisp",
        &[
            "crate::repl",
            "crate::engine",
            "crate::Engine",
            "rustyline",
            "clap",
        ],
    );
}

#[test]
fn the_repl_uses_the_public_api_only() {
    for (path, text) in src("repl") {
        for line in text.lines().filter(|l| l.contains("crate::lisp")) {
            let allowed = [
                "crate::lisp::analyze::SPECIAL_FORMS",
                "crate::lisp::eval::format_duration",
            ];
            assert!(
                allowed.iter().any(|a| line.contains(a)),
                "{}: {line}",
                path.display()
            );
        }
    }
}

#[test]
fn every_source_file_starts_with_module_docs_and_has_no_stubs() {
    for (path, text) in src("") {
        assert!(
            text.starts_with("//!"),
            "{} has no //! module docs",
            path.display()
        );
        for stub in ["todo!(", "unimplemented!(", "dbg!("] {
            assert!(!text.contains(stub), "{} contains {stub}", path.display());
        }
    }
}

#[test]
fn tapes_know_neither_lisp_nor_backends() {
    assert_no_use(
        "tape",
        &[
            "crate::lisp",
            "crate::backends",
            "crate::reader",
            "Value::",
            "crate::Value",
            "EGraph",
            "Runner",
        ],
    );
}

#[test]
fn backends_know_neither_lisp_nor_e_graphs() {
    // They know the operation vocabulary (`TOp`, the scalar `Math`
    // operators) and tapes; not e-graphs, rules, extraction or Lisp.
    assert_no_use(
        "backends",
        &[
            "crate::lisp",
            "crate::reader",
            "Value::",
            "crate::Value",
            "EGraph",
            "Runner",
            "egraph::rules",
            "egraph::extract",
            "tensor::optimize",
            "crate::ad",
        ],
    );
}

#[test]
fn the_ir_imports_only_leaf_modules() {
    // The languages programs are written in: rewriting, differentiation,
    // tapes, backends and the Lisp layer import them, never the reverse.
    assert_no_use(
        "ir",
        &[
            "crate::egraph",
            "crate::ad",
            "crate::lisp",
            "crate::reader",
            "crate::backends",
            "crate::tape",
            "crate::engine",
            "crate::formula",
            "crate::data",
            "Value::",
            "crate::Value",
        ],
    );
}

#[test]
fn tensor_programs_know_nothing_of_lisp_or_execution() {
    assert_no_use(
        "egraph/tensor",
        &[
            "crate::lisp",
            "crate::reader",
            "crate::backends",
            "crate::tape",
            "Value::",
            "crate::Value",
        ],
    );
}

#[test]
fn the_operation_table_knows_nothing_of_lisp_tapes_or_executors() {
    // Each operation says everything about itself in terms of shapes,
    // arrays and the tensor language; executors and the Lisp layer call it.
    assert_no_use(
        "ir/ops",
        &[
            "crate::lisp",
            "crate::reader",
            "crate::tape",
            "crate::backends",
            "crate::engine",
            "Value::",
            "crate::Value",
        ],
    );
}

#[test]
fn the_distributed_layer_knows_nothing_of_lisp_tapes_or_operations() {
    // MPI over buffers and shapes; the table's collectives call it.
    assert_no_use(
        "distributed",
        &[
            "crate::lisp",
            "crate::reader",
            "crate::tape",
            "crate::backends",
            "crate::ir::ops",
            "crate::egraph",
            "crate::engine",
            "Value::",
            "crate::Value",
        ],
    );
}

#[test]
fn differentiation_knows_nothing_of_lisp_tapes_or_executors() {
    // The sweeps, vmap's rewriting and the sparse patterns work on tensor
    // programs; the Lisp layer traces functions and hands the programs over.
    for folder in ["ad"] {
        assert_no_use(
            folder,
            &[
                "crate::lisp",
                "crate::reader",
                "crate::tape",
                "crate::backends",
                "crate::engine",
                "Value::",
                "crate::Value",
            ],
        );
    }
}
