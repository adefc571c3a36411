//! Environments: frames of local slots chained to their lexical parent.
//!
//! Globals live in the interpreter (a table indexed by symbol), so an empty
//! chain (`None`) is the top level. Slot positions are fixed by analysis.

use super::value::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// A chain of frames; `None` is the global environment.
pub type Env = Option<Rc<Frame>>;

/// One frame of local variables.
pub struct Frame {
    /// The slots, in the order analysis assigned them.
    pub slots: RefCell<Vec<Value>>,
    /// The enclosing frame.
    pub parent: Env,
}

impl Frame {
    /// A frame holding `slots`, inside `parent`.
    pub fn new(slots: Vec<Value>, parent: &Env) -> Env {
        Some(Rc::new(Frame {
            slots: RefCell::new(slots),
            parent: parent.clone(),
        }))
    }

    /// The frame `depth` levels up from `env`.
    pub fn ancestor(env: &Env, depth: u32) -> Option<&Rc<Frame>> {
        let mut frame = env.as_ref()?;
        for _ in 0..depth {
            frame = frame.parent.as_ref()?;
        }
        Some(frame)
    }
}
