//! NumPy arrays lent to Epsilon for a call, read where they lie.
//!
//! A C-contiguous, aligned float64 or float32 argument is not copied: its
//! tensor's storage is the NumPy array's own memory. Epsilon's tensors
//! own their storage (a `Vec`), so the loan is a `Vec` over memory this
//! allocator never gave out, and three rules keep that sound:
//!
//! - The `Vec` is never freed, grown or written by Epsilon. A [`Loan`]
//!   keeps a reference to the tensor for as long as anything else holds
//!   one, so the engine never sees it as its only holder: it neither
//!   writes into it in place nor takes its storage for reuse (both need
//!   the only reference). When the loan is the last holder, it takes the
//!   `Vec` apart without freeing it.
//! - The NumPy array is kept alive (and so its memory) by the loan.
//! - A tensor the call keeps (stored in a global, captured by a closure)
//!   stays on loan with the engine until it is dropped; it reads the
//!   array's memory, as a NumPy view would.
//!
//! A result that is a lent tensor itself goes back as a view of the array
//! it came from.

use ndarray::{ArrayD, IxDyn};
use numpy::{Element, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// One lent array: the tensor over its memory and the array.
pub struct Loan {
    tensor: Lent,
    array: Py<PyAny>,
}

/// The tensor of a loan, by precision.
pub enum Lent {
    F64(ManuallyDrop<Rc<ArrayD<f64>>>),
    F32(ManuallyDrop<Rc<ArrayD<f32>>>),
}

/// The arrays lent for one call.
#[derive(Default)]
pub struct Loans(Vec<Loan>);

/// A tensor of `T` whose storage is the memory of `array`, when its
/// layout allows (C-contiguous, aligned, not empty); the loan is added
/// to `loans`.
pub fn lend<T: Element + Lendable>(
    array: &Bound<'_, PyArrayDyn<T>>,
    loans: &mut Loans,
) -> Option<Rc<ArrayD<T>>> {
    let len = array.len();
    let data = array.data();
    if len == 0 || !array.is_c_contiguous() || !(data as usize).is_multiple_of(align_of::<T>()) {
        return None;
    }
    let shape = IxDyn(array.shape());
    // SAFETY: `data` points at `len` initialised, aligned elements of `T`
    // (a C-contiguous array of `shape`, so `len` is the product of
    // `shape`), kept alive by the loan's reference to the array. The
    // allocator that `Vec::from_raw_parts` names is only ever involved
    // when a `Vec` is freed or grown, and this one never is, nor written
    // through (module docs): `Loan` keeps a second reference to the
    // tensor until it is the last holder, and then takes the `Vec` apart
    // without freeing it.
    let tensor = unsafe {
        let storage = Vec::from_raw_parts(data, len, len);
        Rc::new(ArrayD::from_shape_vec_unchecked(shape, storage))
    };
    loans.0.push(Loan {
        tensor: T::lent(Rc::clone(&tensor)),
        array: array.clone().into_any().unbind(),
    });
    Some(tensor)
}

/// Float types that can be lent.
pub trait Lendable: Sized {
    fn lent(tensor: Rc<ArrayD<Self>>) -> Lent;
}

impl Lendable for f64 {
    fn lent(tensor: Rc<ArrayD<f64>>) -> Lent {
        Lent::F64(ManuallyDrop::new(tensor))
    }
}

impl Lendable for f32 {
    fn lent(tensor: Rc<ArrayD<f32>>) -> Lent {
        Lent::F32(ManuallyDrop::new(tensor))
    }
}

impl Loans {
    /// The array `tensor` was lent from, if it was.
    pub fn array_of<T>(&self, tensor: &Rc<ArrayD<T>>) -> Option<&Py<PyAny>> {
        let address = Rc::as_ptr(tensor).cast::<()>();
        self.0
            .iter()
            .find(|loan| loan.address() == address)
            .map(|loan| &loan.array)
    }

    /// Moves the loans whose tensors the engine kept to `kept` and gives
    /// back the others, for the caller to drop (ending them) once it no
    /// longer borrows `kept`: dropping one may run Python code (a
    /// finalizer) that calls the engine again. The loans kept before are
    /// looked at again once there are as many calls since the last look as
    /// loans kept, or twice as many loans as then: O(1) a call on average
    /// however many the engine keeps, and a kept tensor the engine has
    /// dropped holds its array for at most that many calls more.
    pub fn settle(self, kept: &mut Kept) -> Vec<Loan> {
        let (now_kept, mut ended): (Vec<Loan>, Vec<Loan>) =
            self.0.into_iter().partition(Loan::is_held_elsewhere);
        kept.loans.extend(now_kept);
        kept.calls_since_look += 1;
        if !kept.loans.is_empty()
            && (kept.calls_since_look >= kept.loans.len()
                || kept.loans.len() >= 2 * kept.after_last_look.max(8))
        {
            kept.calls_since_look = 0;
            let (still, done): (Vec<Loan>, Vec<Loan>) = std::mem::take(&mut kept.loans)
                .into_iter()
                .partition(Loan::is_held_elsewhere);
            kept.loans = still;
            kept.after_last_look = kept.loans.len();
            ended.extend(done);
        }
        ended
    }
}

/// The loans an engine's values still hold (tensors it kept).
#[derive(Default)]
pub struct Kept {
    loans: Vec<Loan>,
    /// How many were left the last time they were looked at.
    after_last_look: usize,
    /// Calls settled since then.
    calls_since_look: usize,
}

impl Loan {
    fn address(&self) -> *const () {
        match &self.tensor {
            Lent::F64(t) => Rc::as_ptr(t).cast(),
            Lent::F32(t) => Rc::as_ptr(t).cast(),
        }
    }

    fn is_held_elsewhere(&self) -> bool {
        match &self.tensor {
            Lent::F64(t) => Rc::strong_count(t) > 1,
            Lent::F32(t) => Rc::strong_count(t) > 1,
        }
    }
}

/// Takes a lent tensor's `Vec` apart without freeing the memory under it.
fn give_back<T>(tensor: Rc<ArrayD<T>>) {
    match Rc::try_unwrap(tensor) {
        Ok(array) => std::mem::forget(array.into_raw_vec_and_offset().0),
        // Still held elsewhere (an engine dropped with values left over):
        // the tensor and the array are both left alive.
        Err(still_held) => std::mem::forget(still_held),
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let still_held = self.is_held_elsewhere();
        // SAFETY: each tensor is taken once, here, and not used after.
        match &mut self.tensor {
            Lent::F64(t) => give_back(unsafe { ManuallyDrop::take(t) }),
            Lent::F32(t) => give_back(unsafe { ManuallyDrop::take(t) }),
        }
        if still_held {
            // The memory must outlive the tensor left alive: a reference
            // to the array is leaked.
            Python::attach(|py| std::mem::forget(self.array.clone_ref(py)));
        }
    }
}
