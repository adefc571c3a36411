//! The analysed program: what the evaluator runs.
//!
//! [`super::analyze`] turns code (a [`Value`]) into a [`Node`] tree once,
//! resolving special forms, expanding macros and giving every local variable
//! a lexical address (frames up, slot index), so evaluation does no symbol
//! lookup for locals and no re-parsing of forms.

use super::primitive::Primitive;
use super::procedure::Builtin;
use super::symbol::Symbol;
use super::value::Value;
use crate::reader::Span;
use std::rc::Rc;

/// One analysed expression.
pub enum Node {
    /// A literal or quoted datum.
    Const(Value),
    /// A local variable `depth` frames up, in slot `index`.
    Local {
        /// Frames to walk up (0 = the current frame).
        depth: u32,
        /// Slot in that frame.
        index: u32,
        /// The variable's name, for error messages.
        name: Symbol,
        /// Where the variable was referenced.
        span: Span,
    },
    /// A global variable.
    Global {
        /// The variable's name.
        name: Symbol,
        /// Where it was referenced.
        span: Span,
    },
    /// `set!` (or an internal `define`) of a local slot.
    SetLocal {
        /// Frames to walk up.
        depth: u32,
        /// Slot in that frame.
        index: u32,
        /// The new value.
        value: Box<Node>,
    },
    /// `set!` of a global that must already be bound.
    SetGlobal {
        /// The variable.
        name: Symbol,
        /// The new value.
        value: Box<Node>,
        /// The `set!` form.
        span: Span,
    },
    /// A top-level `define`.
    DefineGlobal {
        /// The variable.
        name: Symbol,
        /// Its value.
        value: Box<Node>,
    },
    /// `(if test then else)`.
    If {
        /// The condition.
        test: Box<Node>,
        /// Evaluated when the condition is true.
        then: Box<Node>,
        /// Evaluated otherwise.
        otherwise: Box<Node>,
    },
    /// A `lambda` expression: makes a closure over the current frame.
    Lambda(Rc<LambdaDef>),
    /// A sequence; the last node's value is the result.
    Seq(Box<[Node]>),
    /// `let`, `let*` and `letrec`: a new frame of `size` slots.
    Let {
        /// Slots in the new frame (bindings plus internal defines).
        size: u32,
        /// True for `let*`/`letrec`: initialisers run inside the new frame.
        sequential: bool,
        /// (slot, initialiser) pairs, in order.
        inits: Box<[(u32, Node)]>,
        /// The body.
        body: Box<Node>,
    },
    /// `and`: the first false value, or the last value.
    And(Box<[Node]>),
    /// `or`: the first true value, or the last value.
    Or(Box<[Node]>),
    /// `cond`.
    Cond(Box<[Clause]>),
    /// `while`.
    While {
        /// Loop condition.
        test: Box<Node>,
        /// Loop body.
        body: Box<Node>,
    },
    /// A procedure call.
    Call {
        /// The procedure.
        callee: Box<Node>,
        /// The arguments.
        args: Box<[Node]>,
        /// The whole call form.
        span: Span,
    },
    /// A call of a built-in with an inline path for plain numbers
    /// ([`Primitive`]): `(+ a b)`, `(< n 2)`.
    Primitive {
        /// Which one.
        primitive: Primitive,
        /// The built-in the head was bound to when analysed; the inline
        /// path runs only while it still is.
        builtin: &'static Builtin,
        /// The head's name.
        name: Symbol,
        /// The two arguments.
        args: Box<[Node; 2]>,
        /// Whether both arguments are constants or variables: then
        /// the call cannot recurse, and runs without the depth count and
        /// stack check of a general node.
        leaves: bool,
        /// The whole call form.
        span: Span,
    },
    /// A quasiquoted template.
    Quasi {
        /// The template.
        template: Box<Template>,
        /// The quasiquote form.
        span: Span,
    },
    /// A bracket form whose elements are evaluated: `[x (+ y 1)]`.
    TensorLiteral {
        /// The elements.
        items: Box<[Node]>,
        /// The bracket form.
        span: Span,
    },
    /// `(try body... (catch (e) handler...))`.
    Try {
        /// The protected body.
        body: Box<Node>,
        /// Slots of the handler's frame (the error variable first).
        handler_size: u32,
        /// The handler, run in a new frame holding the error message.
        handler: Box<Node>,
    },
    /// `(time expr)`.
    Time {
        /// The timed expression.
        expr: Box<Node>,
        /// The form, for the report.
        span: Span,
    },
    /// `(defmacro name params body...)`.
    DefMacro {
        /// The macro's name.
        name: Symbol,
        /// The expander.
        def: Rc<LambdaDef>,
    },
}

/// One clause of `cond`.
pub struct Clause {
    /// The condition (`else` is the constant `#t`).
    pub test: Node,
    /// What to do when it holds.
    pub action: ClauseAction,
}

/// What a `cond` clause does with a true test.
pub enum ClauseAction {
    /// `(test)`: return the test's value.
    Value,
    /// `(test body...)`.
    Body(Node),
    /// `(test => f)`: call f with the test's value.
    Apply(Node),
}

/// The static part of a `lambda`: parameters, body and documentation.
pub struct LambdaDef {
    /// The name it was defined under, if any.
    pub name: Option<Symbol>,
    /// Parameter names, the rest parameter last when `rest` is true.
    pub params: Vec<Symbol>,
    /// Whether the last parameter collects the remaining arguments.
    pub rest: bool,
    /// Slots in a call frame: parameters plus internal defines.
    pub frame_size: u32,
    /// The body.
    pub body: Node,
    /// The docstring.
    pub doc: Option<String>,
    /// Where the lambda was written.
    pub span: Span,
}

impl LambdaDef {
    /// How many arguments are required.
    pub fn required(&self) -> usize {
        self.params.len() - usize::from(self.rest)
    }

    /// The parameter list as written: `(x y . rest)`.
    pub fn signature(&self) -> String {
        let Some(name) = self.name else {
            let params = self.params.iter().map(|p| p.name()).collect::<Vec<_>>();
            let rest = if self.rest { " (last is rest)" } else { "" };
            return format!("(lambda ({}){rest} ...)", params.join(" "));
        };
        let mut text = format!("({name}");
        for (position, param) in self.params.iter().enumerate() {
            if self.rest && position + 1 == self.params.len() {
                text.push_str(" . ");
            } else {
                text.push(' ');
            }
            text.push_str(param.name());
        }
        text.push(')');
        text
    }
}

/// A quasiquote template: constant parts with holes.
pub enum Template {
    /// A part with no unquotes inside.
    Const(Value),
    /// `,expr`.
    Unquote(Node),
    /// A list whose elements are templates or `,@` splices.
    List {
        /// The elements.
        items: Vec<Piece>,
        /// The tail after a dot, if any.
        tail: Option<Box<Template>>,
    },
}

/// An element of a list template.
pub enum Piece {
    /// One element.
    One(Template),
    /// `,@expr`: the elements of a list.
    Splice(Node),
}
