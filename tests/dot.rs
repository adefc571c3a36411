//! `save-dot`: the graph of a gradient tape (or of the optimized tensor
//! program) as Graphviz DOT, and its SVG drawing.
//!
//! The DOT text is checked structurally: one `digraph` with balanced
//! braces, every edge endpoint declared as a node, one node per tape
//! instruction (inputs and constants included, as `tape-stats` counts them)
//! plus one per output. Errors are `EvalError`s naming what is wrong.

use epsilon::{Engine, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The parts of a DOT text these tests look at.
#[derive(Debug)]
struct Parsed {
    /// Node ids with their labels, in order.
    nodes: Vec<(String, String)>,
    /// Edges as (from, to).
    edges: Vec<(String, String)>,
}

impl Parsed {
    fn labels(&self) -> Vec<&str> {
        self.nodes.iter().map(|(_, l)| l.as_str()).collect()
    }

    fn outputs(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|(id, _)| id.starts_with("out"))
            .map(|(_, l)| l.as_str())
            .collect()
    }
}

/// Parses the DOT `save-dot` writes, asserting its structure: a single
/// `digraph { ... }`, braces balanced outside strings, each node declared
/// once, each edge between declared nodes.
fn parse(dot: &str) -> Parsed {
    assert!(dot.starts_with("digraph "), "not a digraph:\n{dot}");
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    for c in dot.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                assert!(depth >= 0, "unbalanced braces:\n{dot}");
            }
            _ => {}
        }
    }
    assert!(
        !in_string && depth == 0,
        "unbalanced braces or quotes:\n{dot}"
    );
    assert!(dot.trim_end().ends_with('}'));
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((from, rest)) = line.split_once(" -> ") {
            let to = rest.split([';', ' ']).next().unwrap_or_default();
            edges.push((from.to_string(), to.to_string()));
        } else if let Some((id, rest)) = line.split_once(" [label=\"") {
            let mut label = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => label.push('\n'),
                        Some(other) => label.push(other),
                        None => {}
                    },
                    '"' => break,
                    c => label.push(c),
                }
            }
            nodes.push((id.to_string(), label));
        }
    }
    let declared: HashSet<&str> = nodes.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        declared.len(),
        nodes.len(),
        "a node is declared twice:\n{dot}"
    );
    for (from, to) in &edges {
        assert!(
            declared.contains(from.as_str()) && declared.contains(to.as_str()),
            "edge {from} -> {to} has an undeclared end:\n{dot}"
        );
    }
    Parsed { nodes, edges }
}

struct Session {
    engine: Engine,
    dir: tempfile::TempDir,
}

impl Session {
    fn new() -> Session {
        let mut engine = Engine::new();
        engine
            .eval(
                r"
(define (squares x) (sum (* x x)))
(define W (reshape (linspace -1 1 12) '(3 4)))
(define (mlp W x) (sum (tanh (matmul W x))))
(define (logistic r) (scan (lambda (x i) (* r x (- 1.0 x))) 0.3 100))
(define (heat alpha u0)
  (sum (scan (lambda (u i) (+ u (* alpha (- (+ (roll u 1) (roll u -1)) (* 2 u))))) u0 20)))
",
            )
            .expect("definitions");
        Session {
            engine,
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn eval(&mut self, source: &str) -> Value {
        self.engine
            .eval(source)
            .unwrap_or_else(|e| panic!("{source}: {}", e.render()))
    }

    fn error(&mut self, source: &str) -> String {
        match self.engine.eval(source) {
            Ok(value) => panic!("{source} gave {value:?}, not an error"),
            Err(error) => error.to_string(),
        }
    }

    /// `(save-dot f args path options)` into the temporary directory;
    /// returns the path written.
    fn save(&mut self, f: &str, args: &str, name: &str, options: &str) -> PathBuf {
        let path = self.path(name);
        let text = lisp_string(&path);
        let returned = self.eval(&format!("(save-dot {f} {args} {text} {options})"));
        assert_eq!(
            returned.as_str().expect("a string"),
            path.to_string_lossy(),
            "save-dot returns the path"
        );
        path
    }

    /// The `tape-stats` entry `key` of `f` at `args`.
    fn stat(&mut self, f: &str, args: &str, key: &str) -> i64 {
        match self.eval(&format!("(second (assoc '{key} (tape-stats {f} {args})))")) {
            Value::Int(n) => n,
            other => panic!("{key}: {other:?}"),
        }
    }
}

fn lisp_string(path: &Path) -> String {
    format!("{:?}", path.to_string_lossy())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts the SVG drawn beside a `.dot` file.
fn svg_beside(dot: &Path) -> String {
    let svg = read(&dot.with_extension("svg"));
    assert!(svg.contains("<svg") && svg.contains("</svg>"), "{svg}");
    svg
}

#[test]
fn sum_of_squares() {
    let mut s = Session::new();
    let args = "(list [1.0 2.0 3.0])";
    let path = s.save("squares", args, "squares.dot", "");
    let graph = parse(&read(&path));
    let instructions = s.stat("squares", args, "instructions") as usize;
    assert_eq!(graph.nodes.len(), instructions + 1, "{graph:?}");
    let labels = graph.labels();
    assert!(labels.contains(&"arg0 [3]"), "{labels:?}");
    assert_eq!(graph.outputs(), ["gradient arg0\n[3]"]);
    // The gradient 2x: the input and the constant 2 feed one product.
    assert!(labels.iter().any(|l| l.starts_with("*\n[3]")), "{labels:?}");
    assert_eq!(graph.edges.len(), 3, "{graph:?}");
    let svg = svg_beside(&path);
    assert!(svg.contains("arg0 [3]"), "{svg}");
}

#[test]
fn an_mlp_with_its_value() {
    let mut s = Session::new();
    let args = "(list W [1.0 2.0 3.0 4.0])";
    let path = s.save("mlp", args, "mlp.dot", "");
    let graph = parse(&read(&path));
    let instructions = s.stat("mlp", args, "instructions") as usize;
    assert_eq!(graph.nodes.len(), instructions + 1);
    let labels = graph.labels();
    for wanted in ["arg0 [3 4]", "arg1 [4]", "matmul\n[3]", "tanh\n[3]"] {
        assert!(labels.contains(&wanted), "{wanted} in {labels:?}");
    }
    // tanh's derivative 1 - t² is one fused node listing its steps.
    let fused = s.stat("mlp", args, "fused-groups");
    assert_eq!(
        labels.iter().filter(|l| l.starts_with("fused")).count() as i64,
        fused
    );
    assert!(
        labels.iter().any(|l| l.contains("r2 = * r0 r0")),
        "{labels:?}"
    );
    assert_eq!(graph.outputs(), ["gradient arg0\n[3 4]"]);
    svg_beside(&path);
    // With the value: the value-and-grad tape, one more output.
    let path = s.save("mlp", args, "mlp-value.dot", ":value #t");
    let graph = parse(&read(&path));
    assert_eq!(graph.outputs(), ["value\n[]", "gradient arg0\n[3 4]"]);
}

#[test]
fn a_scan_loop_is_one_node() {
    let mut s = Session::new();
    for (f, args) in [
        ("logistic", "(list 2.9)"),
        ("heat", "(list 0.1 [0.0 1.0 0.0 0.0])"),
    ] {
        let path = s.save(f, args, &format!("{f}.dot"), "");
        let dot = read(&path);
        let graph = parse(&dot);
        let instructions = s.stat(f, args, "instructions") as usize;
        assert_eq!(graph.nodes.len(), instructions + 1, "{dot}");
        let loops: Vec<&str> = graph
            .labels()
            .into_iter()
            .filter(|l| l.starts_with("scan"))
            .collect();
        assert!(!loops.is_empty(), "{dot}");
        assert!(
            loops.iter().any(|l| l.starts_with("scan-vjp")
                && l.contains("reverse step")
                && l.contains("Revolve")),
            "{loops:?}"
        );
        // The loop's operands are named: its initial state, the value it
        // reads from outside (r, alpha), the cotangent of its result.
        assert!(dot.contains("[label=\"init\"]"), "{dot}");
        assert!(dot.contains("[label=\"capture.0\"]"), "{dot}");
        svg_beside(&path);
    }
}

#[test]
fn the_optimized_program() {
    let mut s = Session::new();
    let args = "(list W [1.0 2.0 3.0 4.0])";
    let path = s.save("mlp", args, "program.dot", ":graph 'program");
    let dot = read(&path);
    assert!(dot.contains("optimized program of mlp"), "{dot}");
    let graph = parse(&dot);
    let nodes = s.stat("mlp", args, "optimized-nodes") as usize;
    assert_eq!(graph.nodes.len(), nodes + 1, "{dot}");
    // Before compilation: no fused groups, and tanh's derivative in
    // separate operations.
    assert!(!graph.labels().iter().any(|l| l.starts_with("fused")));
    assert!(graph.labels().contains(&"tanh\n[3]"));
    svg_beside(&path);
    // A loop in a program.
    let path = s.save("logistic", "(list 2.9)", "loop.dot", ":graph 'program");
    let graph = parse(&read(&path));
    assert!(
        graph
            .labels()
            .iter()
            .any(|l| l.starts_with("scan-vjp 100 steps"))
    );
}

#[test]
fn argument_and_output_names() {
    let mut s = Session::new();
    // A list argument: each leaf is named by its position in the list; a
    // closed-over tensor is a captured input.
    s.eval("(define offsets [0.5 0.25])");
    let f = "(lambda (p) (* (sum (+ offsets (car p))) (second p)))";
    let path = s.save(f, "(list (list [1.0 2.0] 3.0))", "list.dot", ":value #t");
    let graph = parse(&read(&path));
    let labels = graph.labels();
    for wanted in ["arg0.0 [2]", "arg0.1 []", "captured0 [2]"] {
        assert!(labels.contains(&wanted), "{wanted} in {labels:?}");
    }
    assert_eq!(
        graph.outputs(),
        ["value\n[]", "gradient arg0.0\n[2]", "gradient arg0.1\n[]"]
    );
    // A function that does not return a number: its own tape, as
    // show-tape shows it.
    let path = s.save("(lambda (x) (* x 2))", "(list [1.0 2.0])", "vector.dot", "");
    let graph = parse(&read(&path));
    assert_eq!(graph.outputs(), ["value\n[2]"]);
    let instructions = s.stat("(lambda (x) (* x 2))", "(list [1.0 2.0])", "instructions");
    assert_eq!(graph.nodes.len(), instructions as usize + 1);
}

#[test]
fn file_kinds_by_extension() {
    let mut s = Session::new();
    let args = "(list [1.0 2.0 3.0])";
    // .svg: the drawing only.
    let path = s.save("squares", args, "only.svg", "");
    assert!(read(&path).contains("<svg"));
    assert!(!path.with_extension("dot").exists());
    // Any other name: DOT only.
    let path = s.save("squares", args, "plain.gv", "");
    parse(&read(&path));
    assert!(!path.with_extension("svg").exists());
}

#[test]
fn a_graph_too_large_to_draw_is_still_written() {
    let mut s = Session::new();
    // An unrolled Lisp loop: a few hundred instructions whose forward
    // values reach far into the backward pass.
    let f = "(lambda (x) (let loop ((i 0) (y x)) (if (= i 60) (sum y) (loop (+ i 1) (sin (* y (+ 1.0 (* 0.001 i))))))))";
    let args = "(list [1.0 2.0])";
    let path = s.save(f, args, "large.dot", "");
    let graph = parse(&read(&path));
    let instructions = s.stat(f, args, "instructions") as usize;
    assert_eq!(graph.nodes.len(), instructions + 1);
    assert!(!path.with_extension("svg").exists());
    // Asked for the drawing alone, it is an error naming the file.
    let svg = s.path("large.svg");
    let error = s.error(&format!("(save-dot {f} {args} {})", lisp_string(&svg)));
    assert!(
        error.contains("cannot draw") && error.contains("large.svg") && error.contains("dot -Tsvg"),
        "{error}"
    );
    assert!(!svg.exists());
}

#[test]
fn errors_are_clear() {
    let mut s = Session::new();
    let ok = lisp_string(&s.path("ok.dot"));
    let cases = [
        (
            format!("(save-dot 3 (list 1.0) {ok})"),
            "expected a function",
        ),
        (
            format!("(save-dot squares [1.0 2.0] {ok})"),
            "must be a list of arguments",
        ),
        (
            "(save-dot squares (list [1.0 2.0]))".to_string(),
            "arguments",
        ),
        (
            "(save-dot squares (list [1.0 2.0]) 'graph.dot)".to_string(),
            "the path must be a string",
        ),
        (
            "(save-dot squares (list [1.0 2.0]) \"/nonexistent-epsilon-dir/g.dot\")".to_string(),
            "cannot write /nonexistent-epsilon-dir/g.dot",
        ),
        (
            format!("(save-dot (lambda (x) \"text\") (list 1.0) {ok})"),
            "must be numbers, tensors or lists of them",
        ),
        (
            format!("(save-dot squares (list [1.0 2.0]) {ok} :graph 'egraph)"),
            ":graph takes 'tape or 'program",
        ),
        (
            format!("(save-dot squares (list [1.0 2.0]) {ok} :value 1)"),
            ":value takes #t or #f",
        ),
    ];
    for (source, message) in cases {
        let error = s.error(&source);
        assert!(error.contains("save-dot"), "{source}: {error}");
        assert!(error.contains(message), "{source}: {error}");
    }
    // Arguments f does not take: f's own error.
    let error = s.error(&format!(
        "(save-dot (lambda (x y) (* x y)) (list 1.0) {ok})"
    ));
    assert!(error.contains("expects 2 arguments, got 1"), "{error}");
    assert!(!s.path("ok.dot").exists());
    // Inside a traced function there is no tape to draw.
    let inner = format!("((grad (lambda (x) (save-dot squares (list x) {ok}) x)) 1.0)");
    assert!(s.error(&inner).contains("inside a traced function"));
}
