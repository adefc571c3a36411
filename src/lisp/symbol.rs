//! Interned symbols: a `Symbol` is a small integer naming a string.
//!
//! The table is global and only grows; symbols are names, shared by every
//! engine. The symbols the evaluator needs by name are interned first, in a
//! fixed order, so they are constants (`sym::QUOTE`, ...).

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, RwLock};

/// An interned name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol(pub(crate) u32);

struct Interner {
    names: Vec<&'static str>,
    ids: HashMap<&'static str, u32>,
}

macro_rules! known_symbols {
    ($($konst:ident = $text:literal,)*) => {
        /// Symbols the evaluator refers to by name.
        pub mod sym {
            use super::Symbol;
            known_symbols!(@consts 0u32; $($konst,)*);
        }
        const KNOWN: &[&str] = &[$($text,)*];
    };
    (@consts $n:expr; $konst:ident, $($rest:ident,)*) => {
        #[allow(missing_docs)]
        pub const $konst: Symbol = Symbol($n);
        known_symbols!(@consts $n + 1u32; $($rest,)*);
    };
    (@consts $n:expr;) => {};
}

known_symbols! {
    QUOTE = "quote",
    QUASIQUOTE = "quasiquote",
    UNQUOTE = "unquote",
    UNQUOTE_SPLICING = "unquote-splicing",
    DEFINE = "define",
    SET = "set!",
    LAMBDA = "lambda",
    FN = "fn",
    LET = "let",
    LET_STAR = "let*",
    LETREC = "letrec",
    IF = "if",
    COND = "cond",
    WHEN = "when",
    UNLESS = "unless",
    AND = "and",
    OR = "or",
    BEGIN = "begin",
    WHILE = "while",
    DEFMACRO = "defmacro",
    TRY = "try",
    CATCH = "catch",
    TIME = "time",
    ELSE = "else",
    ARROW = "=>",
    DOT = ".",
    AMP_REST = "&rest",
    TENSOR_LITERAL = "tensor-literal",
    ARGS = "*args*",
}

static INTERNER: LazyLock<RwLock<Interner>> = LazyLock::new(|| {
    let mut interner = Interner {
        names: Vec::new(),
        ids: HashMap::new(),
    };
    for name in KNOWN {
        interner.insert(name);
    }
    RwLock::new(interner)
});

impl Interner {
    fn insert(&mut self, name: &str) -> u32 {
        let id = self.names.len() as u32;
        // Names live as long as the program: the table only grows.
        let stored: &'static str = Box::leak(name.to_owned().into_boxed_str());
        self.names.push(stored);
        self.ids.insert(stored, id);
        id
    }
}

impl Symbol {
    /// The symbol named `name`, interning it on first use.
    pub fn intern(name: &str) -> Symbol {
        if let Some(&id) = INTERNER
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .ids
            .get(name)
        {
            return Symbol(id);
        }
        let mut interner = INTERNER.write().unwrap_or_else(|p| p.into_inner());
        match interner.ids.get(name) {
            Some(&id) => Symbol(id),
            None => Symbol(interner.insert(name)),
        }
    }

    /// The symbol's name.
    pub fn name(self) -> &'static str {
        INTERNER.read().unwrap_or_else(|p| p.into_inner()).names[self.0 as usize]
    }

    /// The dense index of this symbol (used to index global tables).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Symbol({})", self.name())
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_symbols_are_constants() {
        assert_eq!(Symbol::intern("quote"), sym::QUOTE);
        assert_eq!(sym::ARGS.name(), "*args*");
    }

    #[test]
    fn interning_twice_gives_the_same_symbol() {
        let a = Symbol::intern("a-fresh-name");
        assert_eq!(a, Symbol::intern("a-fresh-name"));
        assert_eq!(a.name(), "a-fresh-name");
    }
}
