//! Tidy checks on the source tree: the layers of ARCHITECTURE.md (the
//! import graph between top-level modules has no cycle, and imports only
//! run down the layers), folder boundaries, module docs on every file, no
//! stubs.

#[path = "tidy/module_graph.rs"]
mod module_graph;

use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules of `src/` by layer, bottom to top. A module may
/// import modules of lower rows only.
const LAYERS: &[&[&str]] = &[
    // Leaves: numbers, dtypes, memory, source text, rich output, input.
    &[
        "scalar",
        "dtype",
        "host_memory",
        "allocator",
        "reader",
        "display",
        "input",
    ],
    &["simd", "distributed", "plot"],
    // The languages programs are written in.
    &["ir"],
    // Rewriting and extraction; data files.
    &["egraph", "data"],
    // Differentiation; formulas as text and code.
    &["ad", "formula"],
    &["tape"],
    &["backends"],
    // Traced programs compiled, cached and run, with no Lisp values.
    &["driver"],
    // The Lisp: reading, evaluating, tracing, the built-ins.
    &["lisp"],
    &["error"],
    &["compiled", "symbolic"],
    &["engine"],
    // Front ends, and unit tests that span the layers.
    &["repl", "lsp", "jupyter", "tests"],
];

/// Imports forbidden although they run down: tapes and backends run
/// programs of the IR and know nothing of e-graphs.
const FORBIDDEN: &[(&str, &str)] = &[("tape", "egraph"), ("backends", "egraph")];

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let graph = module_graph::imports(&source_root());
    let cycles = module_graph::cycles(&graph);
    let described: Vec<String> = cycles
        .iter()
        .map(|cycle| {
            let edges: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|i| cycle.contains(&i.to))
                        .map(move |i| format!("  {from} -> {} at {}", i.to, i.at))
                })
                .collect();
            format!("{}:\n{}", cycle.join(", "), edges.join("\n"))
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between top-level modules:\n{}",
        described.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let graph = module_graph::imports(&source_root());
    for module in graph.keys() {
        assert!(
            layer_of(module).is_some(),
            "src/{module} is in no row of LAYERS (tests/tidy.rs): give it a layer"
        );
    }
}

#[test]
fn imports_run_down_the_layers() {
    let graph = module_graph::imports(&source_root());
    let mut wrong = Vec::new();
    for (from, imports) in &graph {
        let Some(from_layer) = layer_of(from) else {
            continue;
        };
        for import in imports {
            let to_layer = layer_of(&import.to).unwrap_or(usize::MAX);
            if to_layer >= from_layer {
                wrong.push(format!(
                    "{from} (layer {from_layer}) imports {} (layer {to_layer}) at {}",
                    import.to, import.at
                ));
            } else if FORBIDDEN.contains(&(from.as_str(), import.to.as_str())) {
                wrong.push(format!(
                    "{from} must not import {} (at {})",
                    import.to, import.at
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_module_graph_sees_use_groups_inline_paths_and_super_chains() {
    // The reader of the graph itself, on known imports of the tree: a
    // grouped `use`, an inline path, and a root re-export.
    let graph = module_graph::imports(&source_root());
    let imports_of = |from: &str, to: &str| graph[from].iter().any(|i| i.to == to);
    assert!(imports_of("engine", "lisp"), "engine uses the Lisp layer");
    assert!(imports_of("tape", "ad"), "tapes take loop adjoints from ad");
    assert!(imports_of("backends", "tape"));
    assert!(!imports_of("ir", "egraph"));
}

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
fn backends_know_nothing_of_lisp() {
    // They know the IR (`TOp`, the scalar `Math` operators) and tapes; the
    // layer table forbids e-graphs (`FORBIDDEN`).
    assert_no_use(
        "backends",
        &["crate::lisp", "crate::reader", "Value::", "crate::Value"],
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
    assert_no_use(
        "ad",
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
fn the_module_graph_reads_paths_not_comments_or_strings() {
    let code = module_graph::strip_comments_and_strings(concat!(
        "use crate::{ir::op, egraph::Level};\n",
        "// crate::lisp in a comment\n",
        "let s = \"crate::tape in a string\";\n",
        "let c = '\"'; let r = r#\"crate::engine\"#;\n",
        "fn f() { super::super::backends::run(); super::sibling(); }\n",
        "mod tests { use super::super::super::data::x; }\n",
        "let v: crate::Value;\n",
    ));
    let module = ["ad".to_string(), "vmap".to_string()];
    let tops = [
        "ir", "egraph", "lisp", "tape", "engine", "backends", "data", "ad",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let found: Vec<(usize, String)> = module_graph::references(&code, &module, &tops);
    let names: std::collections::BTreeSet<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        ["backends", "data", "egraph", "ir", "lisp"]
            .into_iter()
            .collect(),
        "{found:?}"
    );
    // `crate::Value` is the Lisp layer's, on line 7.
    assert!(found.contains(&(7, "lisp".to_string())), "{found:?}");
}
