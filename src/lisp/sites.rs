//! Call sites of the operations of the table (`crate::ir::ops`): a recorded
//! operation carries an opaque `Site` number so that a failure when its
//! tape runs (a singular matrix, an index out of range) points at the call
//! in the user's source, not only at the call of `grad` or `jit`. This
//! table turns spans into those numbers and back (one number per distinct
//! span, per thread).

use super::error::EvalError;
use crate::backends::BackendError;
use crate::ir::ops::Site;
use crate::reader::Span;
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// The most sites remembered; later calls get no site (their failures
/// point at the enclosing call only).
const MAX_SITES: usize = 1 << 20;

#[derive(Default)]
struct Sites {
    spans: Vec<Span>,
    numbers: FxHashMap<Span, u32>,
}

thread_local! {
    static SITES: RefCell<Sites> = RefCell::new(Sites::default());
}

/// The site number of `span` (0 for an unknown span).
pub fn site(span: Span) -> Site {
    if !span.is_known() {
        return Site::default();
    }
    SITES.with(|sites| {
        let mut sites = sites.borrow_mut();
        if let Some(&number) = sites.numbers.get(&span) {
            return Site(number);
        }
        if sites.spans.len() >= MAX_SITES {
            return Site::default();
        }
        sites.spans.push(span);
        let number = sites.spans.len() as u32;
        sites.numbers.insert(span, number);
        Site(number)
    })
}

/// The span of site number `number`, if it has one.
pub fn span(number: u32) -> Option<Span> {
    let index = usize::try_from(number).ok()?.checked_sub(1)?;
    SITES.with(|sites| sites.borrow().spans.get(index).copied())
}

/// A tape's failure as an evaluation error: at the failing operation's
/// call when it is known (the caller adds its own call site).
pub fn eval_error(error: BackendError) -> EvalError {
    if error.program {
        return EvalError::new(crate::lisp::error::EvalErrorKind::User, error.message);
    }
    match span(error.site) {
        Some(span) => EvalError::range(error.message).at(span),
        None if error.site != 0 => EvalError::range(error.message),
        None => EvalError::type_error(error.message),
    }
}
