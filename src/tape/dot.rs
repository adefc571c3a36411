//! Tapes and tensor programs as Graphviz DOT (`save-dot`), and DOT as SVG.
//!
//! One node per tape instruction (inputs and constants included, as
//! `tape-stats` counts them) or per program node, plus one per output;
//! edges run from each operand's producer to its user. A slot reused by
//! several values is followed instruction by instruction, so an edge
//! always names the value actually read. Node kinds have their own shape
//! and colour: inputs, constants, operations, fused elementwise groups (one
//! node listing their steps), loops (one node) and outputs.
//!
//! `Graph::svg` lays the graph out with the pure-Rust `layout-rs` crate
//! when its size allows, and turns a panic of that crate into an error.

use super::{Kernel, Tape};
use crate::ir::loops::Scan;
use crate::ir::shape::show;
use crate::ir::{Shape, TNode, TOp};
use egg::Id;
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// Display names of a program's run-time inputs (by input index) and of its
/// outputs (in order), e.g. `arg0`, `arg1.2`, `captured0`; `value`,
/// `gradient arg0`.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// One per run-time input.
    pub inputs: Vec<String>,
    /// One per output.
    pub outputs: Vec<String>,
}

impl Names {
    fn input(&self, index: u32) -> String {
        self.inputs
            .get(index as usize)
            .cloned()
            .unwrap_or_else(|| format!("input{index}"))
    }

    fn output(&self, k: usize) -> String {
        self.outputs
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("output{k}"))
    }
}

/// What a node is; each kind has its own look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Input,
    Constant,
    Op,
    Fused,
    Loop,
    Output,
}

impl Kind {
    /// Attributes understood by Graphviz and by `layout-rs` alike
    /// (`layout-rs` draws boxes and ellipses; it ignores rounded corners,
    /// bold lines and double borders, so colours tell kinds apart there).
    fn style(self) -> &'static str {
        match self {
            Kind::Input => {
                r##"shape=box, style="filled,rounded", fillcolor="#cfe2ff", color="#1c4f9c""##
            }
            Kind::Constant => {
                r##"shape=ellipse, style=filled, fillcolor="#eeeeee", color="#888888", fontsize=10"##
            }
            Kind::Op => r##"shape=box, style=filled, fillcolor="#fff8dc", color="#8a6d00""##,
            Kind::Fused => {
                r##"shape=box, style="filled,bold", fillcolor="#d3f9d8", color="#2b8a3e""##
            }
            Kind::Loop => {
                r##"shape=box, style="filled,bold", fillcolor="#e5dbff", color="#5f3dc4""##
            }
            Kind::Output => {
                r##"shape=box, peripheries=2, style="filled,bold", fillcolor="#ffe066", color="#b35c00""##
            }
        }
    }
}

/// Fused steps listed at most in a node's label (the rest are counted).
const LISTED_STEPS: usize = 12;

/// A graph written as DOT, with what its layout will cost.
#[derive(Clone, Debug)]
pub struct Graph {
    text: String,
    nodes: usize,
    layout_elements: usize,
}

impl Graph {
    /// The DOT text.
    pub fn dot(&self) -> &str {
        &self.text
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The graph drawn as SVG by `layout-rs`: with crossing minimization up
    /// to `SVG_OPTIMIZED_ELEMENTS` layout elements, plainly up to
    /// `SVG_MAX_ELEMENTS`; a larger graph, a parse error or a panic inside
    /// the layout is an error (never a panic).
    pub fn svg(&self) -> Result<String, String> {
        if self.layout_elements > SVG_MAX_ELEMENTS {
            return Err(format!(
                "the graph is too large to draw here ({} nodes, {} layout elements with \
                 the bends of its long edges; at most {SVG_MAX_ELEMENTS}): render the DOT \
                 file with Graphviz (dot -Tsvg)",
                self.nodes, self.layout_elements
            ));
        }
        svg(&self.text, self.layout_elements <= SVG_OPTIMIZED_ELEMENTS)
    }
}

/// A DOT text being written.
struct Dot {
    text: String,
    /// Each node's rank (layer) in a longest-path layering, in order of
    /// declaration (a node is declared after its operands).
    ranks: Vec<usize>,
    /// Node ids to positions in `ranks`.
    ids: FxHashMap<String, usize>,
    /// Edges as (from, to, labelled) positions in `ranks`.
    edges: Vec<(usize, usize, bool)>,
}

impl Dot {
    fn new(title: &str) -> Dot {
        let mut text = String::from("digraph epsilon {\n");
        let _ = writeln!(
            text,
            "  graph [rankdir=TB, label=\"{}\", labelloc=t, fontname=\"Helvetica\"];",
            escape(title)
        );
        text.push_str("  node [fontname=\"Helvetica\", fontsize=12];\n");
        text.push_str(
            "  edge [color=\"#555555\", fontname=\"Helvetica\", fontsize=9, arrowsize=0.7];\n",
        );
        Dot {
            text,
            ranks: Vec::new(),
            ids: FxHashMap::default(),
            edges: Vec::new(),
        }
    }

    fn node(&mut self, id: &str, kind: Kind, label: &str) {
        self.ids.insert(id.to_string(), self.ranks.len());
        self.ranks.push(0);
        let _ = writeln!(
            self.text,
            "  {id} [label=\"{}\", {}];",
            escape(label),
            kind.style()
        );
    }

    fn edge(&mut self, from: &str, to: &str, label: Option<&str>) {
        if let (Some(&a), Some(&b)) = (self.ids.get(from), self.ids.get(to)) {
            // A labelled edge passes through a label node: one layer more.
            let length = 1 + usize::from(label.is_some());
            self.ranks[b] = self.ranks[b].max(self.ranks[a] + length);
            self.edges.push((a, b, label.is_some()));
        }
        match label {
            Some(label) => {
                let _ = writeln!(self.text, "  {from} -> {to} [label=\"{}\"];", escape(label));
            }
            None => {
                let _ = writeln!(self.text, "  {from} -> {to};");
            }
        }
    }

    fn finish(mut self) -> Graph {
        self.text.push_str("}\n");
        // A layered layout gives an edge one bend node per layer it
        // crosses (and a labelled edge a label node).
        let bends: usize = self
            .edges
            .iter()
            .map(|&(a, b, labelled)| {
                let length = 1 + usize::from(labelled);
                self.ranks[b].saturating_sub(self.ranks[a] + length)
            })
            .sum();
        let labels = self.edges.iter().filter(|e| e.2).count();
        Graph {
            text: self.text,
            nodes: self.ranks.len(),
            layout_elements: self.ranks.len() + bends + labels,
        }
    }
}

/// A DOT string literal's contents: quotes and backslashes escaped, line
/// breaks as `\n` (a centred line in Graphviz).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Edge labels for the operands of a user: each distinct operand once,
/// with the positions it takes (`r0`, `a`, `1`, ...). A single operand
/// gets no label.
fn operand_edges<T: PartialEq + Copy>(
    operands: &[T],
    name: impl Fn(usize) -> String,
) -> Vec<(T, Option<String>)> {
    let mut edges: Vec<(T, Vec<String>)> = Vec::new();
    for (position, &operand) in operands.iter().enumerate() {
        match edges.iter_mut().find(|(o, _)| *o == operand) {
            Some((_, names)) => names.push(name(position)),
            None => edges.push((operand, vec![name(position)])),
        }
    }
    let labelled = operands.len() > 1;
    edges
        .into_iter()
        .map(|(operand, names)| (operand, labelled.then(|| names.join(","))))
        .collect()
}

/// The label of a fused group: a header, then one line per step.
fn fused_label(group: &super::FusedGroup, shape: &Shape) -> String {
    let mut label = match &group.sum_over {
        Some(over) => format!(
            "fused, {} steps, summed over {}\n{}",
            group.steps.len(),
            show(over),
            show(shape)
        ),
        None => format!("fused, {} steps\n{}", group.steps.len(), show(shape)),
    };
    for (k, (op, args)) in group.steps.iter().enumerate().take(LISTED_STEPS) {
        let args: Vec<String> = args.iter().map(|r| format!("r{r}")).collect();
        let _ = write!(label, "\nr{} = {op} {}", group.inputs + k, args.join(" "));
    }
    if group.steps.len() > LISTED_STEPS {
        let _ = write!(label, "\n... {} more", group.steps.len() - LISTED_STEPS);
    }
    label
}

/// What operand `p` of a loop (or of its reverse) is: the initial state
/// (`init`, or `init.k` for a state of several leaves), a value the step
/// reads from outside (`capture.k`), or the result's cotangent.
fn loop_operand(spec: &Scan, p: usize) -> String {
    let (leaves, xs, captures) = (spec.leaves.len(), spec.xs.len(), spec.captures.len());
    if p < leaves {
        if leaves == 1 {
            "init".to_string()
        } else {
            format!("init.{p}")
        }
    } else if p < leaves + xs {
        format!("xs.{}", p - leaves)
    } else if p < leaves + xs + captures {
        format!("capture.{}", p - leaves - xs)
    } else {
        "cotangent".to_string()
    }
}

/// The label of a loop: which loop, its schedule, its bodies' sizes.
fn loop_label(tapes: &super::loops::LoopTapes, shape: &Shape) -> String {
    let spec = &tapes.spec;
    let what = if tapes.reverse { "scan-vjp" } else { "scan" };
    let body = tapes.body.instructions.len();
    let bodies = match &tapes.adjoint {
        Some(adjoint) => format!(
            "step {body} + reverse step {} instructions",
            adjoint.instructions.len()
        ),
        None => format!("step {body} instructions"),
    };
    format!(
        "{what} {}, {:?}\n{bodies}\n{}",
        spec.steps_label(),
        spec.strategy,
        show(shape)
    )
}

/// The tape as a DOT graph titled `title`.
pub fn tape_graph(tape: &Tape, names: &Names, title: &str) -> Graph {
    let mut dot = Dot::new(title);
    // The instruction that last wrote each slot.
    let mut writer: Vec<Option<usize>> = vec![None; tape.slots];
    for (k, instruction) in tape.instructions.iter().enumerate() {
        let shape = &instruction.shape;
        let (kind, label) = match &instruction.op {
            Kernel::Op(TOp::Input { index, .. }) => (
                Kind::Input,
                format!("{} {}", names.input(*index), show(shape)),
            ),
            Kernel::Op(op @ TOp::Scalar(_)) => (Kind::Constant, op.to_string()),
            Kernel::Fused(group) => (Kind::Fused, fused_label(group, shape)),
            Kernel::Loop(tapes) => (Kind::Loop, loop_label(tapes, shape)),
            op @ (Kernel::Op(_) | Kernel::Gemm { .. }) => {
                (Kind::Op, format!("{op}\n{}", show(shape)))
            }
        };
        let id = format!("n{k}");
        dot.node(&id, kind, &label);
        let position = |p: usize| match &instruction.op {
            Kernel::Fused(_) => format!("r{p}"),
            Kernel::Gemm { .. } => ["a", "b"].get(p).map_or(p.to_string(), |s| s.to_string()),
            Kernel::Loop(tapes) => loop_operand(&tapes.spec, p),
            _ => p.to_string(),
        };
        for (slot, label) in operand_edges(&instruction.args, position) {
            if let Some(Some(from)) = writer.get(slot as usize) {
                dot.edge(&format!("n{from}"), &id, label.as_deref());
            }
        }
        if let Some(entry) = writer.get_mut(instruction.out as usize) {
            *entry = Some(k);
        }
    }
    for (k, (&slot, shape)) in tape.outputs.iter().zip(&tape.output_shapes).enumerate() {
        let id = format!("out{k}");
        dot.node(
            &id,
            Kind::Output,
            &format!("{}\n{}", names.output(k), show(shape)),
        );
        if let Some(Some(from)) = writer.get(slot as usize) {
            dot.edge(&format!("n{from}"), &id, None);
        }
    }
    dot.finish()
}

/// A tensor program (`nodes` in topological order, with their `shapes`) as
/// a DOT graph of the nodes `roots` reach, titled `title`.
pub fn program_graph(
    nodes: &[TNode],
    shapes: &[Shape],
    roots: &[Id],
    names: &Names,
    title: &str,
) -> Graph {
    let mut reached = vec![false; nodes.len()];
    for &root in roots {
        if let Some(r) = reached.get_mut(usize::from(root)) {
            *r = true;
        }
    }
    for index in (0..nodes.len()).rev() {
        if reached[index] {
            for &child in &nodes[index].children {
                if let Some(r) = reached.get_mut(usize::from(child)) {
                    *r = true;
                }
            }
        }
    }
    let mut dot = Dot::new(title);
    let empty = Shape::new();
    for (index, node) in nodes.iter().enumerate().filter(|(i, _)| reached[*i]) {
        let shape = shapes.get(index).unwrap_or(&empty);
        let (kind, label) = match &node.op {
            TOp::Input { index, .. } => (
                Kind::Input,
                format!("{} {}", names.input(*index), show(shape)),
            ),
            op @ TOp::Scalar(_) => (Kind::Constant, op.to_string()),
            TOp::Scan(spec) => (
                Kind::Loop,
                format!(
                    "scan {}, {:?}\nstep {} nodes\n{}",
                    spec.steps_label(),
                    spec.strategy,
                    spec.body.nodes.len(),
                    show(shape)
                ),
            ),
            TOp::ScanVjp(spec) => (
                Kind::Loop,
                format!(
                    "scan-vjp {}, {:?}\nstep {} + reverse step {} nodes\n{}",
                    spec.steps_label(),
                    spec.strategy,
                    spec.body.nodes.len(),
                    crate::ad::loops::adjoint(spec).nodes.len(),
                    show(shape)
                ),
            ),
            op => (Kind::Op, format!("{op}\n{}", show(shape))),
        };
        let id = format!("n{index}");
        dot.node(&id, kind, &label);
        let position = |p: usize| match &node.op {
            TOp::MatMul => ["a", "b"].get(p).map_or(p.to_string(), |s| s.to_string()),
            TOp::Scan(spec) | TOp::ScanVjp(spec) => loop_operand(spec, p),
            _ => p.to_string(),
        };
        for (child, label) in operand_edges(&node.children, position) {
            dot.edge(&format!("n{}", usize::from(child)), &id, label.as_deref());
        }
    }
    for (k, &root) in roots.iter().enumerate() {
        let id = format!("out{k}");
        let shape = shapes.get(usize::from(root)).unwrap_or(&empty);
        dot.node(
            &id,
            Kind::Output,
            &format!("{}\n{}", names.output(k), show(shape)),
        );
        dot.edge(&format!("n{}", usize::from(root)), &id, None);
    }
    dot.finish()
}

/// Graphs of at most this many layout elements (nodes, edge bends and
/// edge labels) are laid out with crossing minimization (half a second at
/// this size; larger ones get the plain layout).
pub const SVG_OPTIMIZED_ELEMENTS: usize = 2_500;

/// Graphs of more layout elements than this are not drawn: `layout-rs`'s
/// time grows quickly with them (about a second at this size).
pub const SVG_MAX_ELEMENTS: usize = 8_000;

/// Lays out a DOT text and draws it as SVG with `layout-rs` (with crossing
/// minimization when `optimize`). Fails, without panicking, on a parse
/// error, an empty graph, or a panic inside the layout.
fn svg(dot: &str, optimize: bool) -> Result<String, String> {
    use layout::backends::svg::SVGWriter;
    use layout::gv::{DotParser, GraphBuilder};
    // `layout-rs` asserts its own invariants; a failed one must not take
    // the session down (nor print a panic message). The hook is
    // process-wide: a panic on another thread meanwhile goes unprinted too.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let drawn = std::panic::catch_unwind(|| {
        let graph = DotParser::new(dot)
            .process()
            .map_err(|e| format!("the layout cannot read the graph: {e}"))?;
        let mut builder = GraphBuilder::new();
        builder.visit_graph(&graph);
        let mut visual = builder.get();
        if visual.num_nodes() == 0 {
            return Err("the graph has no nodes".to_string());
        }
        let mut writer = SVGWriter::new();
        visual.do_it(false, !optimize, false, &mut writer);
        Ok(writer.finalize())
    });
    std::panic::set_hook(previous);
    drawn.unwrap_or_else(|_| Err("the layout failed on this graph".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape("a \"b\" \\c\nd"), "a \\\"b\\\" \\\\c\\nd");
    }

    #[test]
    fn repeated_operands_share_one_labelled_edge() {
        let edges = operand_edges(&[3u32, 3, 5], |p| format!("r{p}"));
        assert_eq!(
            edges,
            vec![(3, Some("r0,r1".to_string())), (5, Some("r2".to_string()))]
        );
        assert_eq!(operand_edges(&[7u32], |p| p.to_string()), vec![(7, None)]);
    }

    #[test]
    fn svg_renders_a_small_graph_and_refuses_bad_ones() {
        let mut dot = Dot::new("t");
        dot.node("n0", Kind::Input, "arg0 [3]");
        dot.node("n1", Kind::Op, "tanh\n[3]");
        dot.node("out0", Kind::Output, "value\n[3]");
        dot.edge("n0", "n1", None);
        dot.edge("n1", "out0", Some("0"));
        let graph = dot.finish();
        assert_eq!(graph.nodes(), 3);
        assert_eq!(graph.layout_elements, 4);
        let drawn = graph.svg().expect("renders");
        assert!(drawn.contains("<svg"));
        assert!(drawn.contains("tanh"));
        assert!(svg("digraph { }", true).is_err());
        assert!(svg("digraph { a -> }", true).is_err());
        assert!(svg("digraph { a [label=\"unterminated }", true).is_err());
    }
}
