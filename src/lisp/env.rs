//! Environments: frames of local slots chained to their lexical parent.
//!
//! Globals live in the interpreter (a table indexed by symbol), so an empty
//! chain (`None`) is the top level. Slot positions are fixed by analysis.

use super::procedure::{Closure, Procedure};
use super::value::Value;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::rc::Rc;

/// A chain of frames; `None` is the global environment.
pub type Env = Option<Rc<Frame>>;

/// A frame's slots: up to four live inside the frame itself, so a call of
/// a small function allocates once.
pub type Slots = SmallVec<[Value; 4]>;

/// One frame of local variables.
pub struct Frame {
    /// The slots, in the order analysis assigned them.
    pub slots: RefCell<Slots>,
    /// The enclosing frame.
    pub parent: Env,
    /// Frames are numbered as they are made (`next_frame_serial`), so a
    /// replayable trace tells its own frames from older ones.
    pub serial: u64,
    /// Whether a closure was made over this frame or one inside it: only
    /// then can code outside the call read its variables later (which
    /// replays must know of when they change).
    pub captured: std::cell::Cell<bool>,
}

thread_local! {
    static NEXT_SERIAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The serial the next frame made gets.
pub fn next_frame_serial() -> u64 {
    NEXT_SERIAL.with(std::cell::Cell::get)
}

/// The serial of a frame being made now.
fn take_serial() -> u64 {
    NEXT_SERIAL.with(|next| {
        let serial = next.get();
        next.set(serial + 1);
        serial
    })
}

impl Frame {
    /// A frame holding `slots`, inside `parent`.
    pub fn new(slots: Slots, parent: &Env) -> Env {
        Some(Frame::made(slots, parent))
    }

    fn made(slots: Slots, parent: &Env) -> Rc<Frame> {
        #[cfg(test)]
        tests::LIVE_FRAMES.with(|live| live.set(live.get() + 1));
        Rc::new(Frame {
            slots: RefCell::new(slots),
            parent: parent.clone(),
            serial: take_serial(),
            captured: std::cell::Cell::new(false),
        })
    }

    /// A frame for a call of a closure over `parent`, taken from `pool`
    /// when it has one (the arguments are pushed into its slots).
    #[inline]
    pub fn for_call(pool: &mut FramePool, capacity: usize, parent: &Env) -> Rc<Frame> {
        if let Some(mut frame) = pool.frames.pop()
            && let Some(fresh) = Rc::get_mut(&mut frame)
        {
            fresh.parent = parent.clone();
            fresh.serial = take_serial();
            fresh.captured.set(false);
            fresh.slots.get_mut().reserve(capacity);
            return frame;
        }
        Frame::made(Slots::with_capacity(capacity), parent)
    }

    /// Stores `value` in slot `index`. A closure over this very frame (an
    /// internal `define`, `letrec`, named `let`) is stored as its code only,
    /// so the frame is freed when the last outside reference goes.
    pub fn store(self: &Rc<Self>, index: usize, value: Value) {
        let value = match value {
            Value::Procedure(procedure) => match &*procedure {
                Procedure::Closure(closure)
                    if closure
                        .env
                        .as_ref()
                        .is_some_and(|env| Rc::ptr_eq(env, self)) =>
                {
                    Value::FrameClosure(Rc::clone(&closure.def))
                }
                _ => Value::Procedure(procedure),
            },
            other => other,
        };
        if let Some(slot) = self.slots.borrow_mut().get_mut(index) {
            *slot = value;
        }
    }

    /// The value in slot `index`, rebuilding a closure over this frame.
    pub fn load(self: &Rc<Self>, index: usize) -> Option<Value> {
        match self.slots.borrow().get(index)? {
            Value::FrameClosure(def) => {
                Some(Value::Procedure(Rc::new(Procedure::Closure(Closure {
                    def: Rc::clone(def),
                    env: Some(Rc::clone(self)),
                }))))
            }
            other => Some(other.clone()),
        }
    }

    /// Marks `env`'s frames as captured by a closure made in it.
    pub fn capture(env: &Env) {
        let mut frame = env.as_ref();
        while let Some(f) = frame {
            if f.captured.replace(true) {
                // Its parents were marked with it.
                return;
            }
            frame = f.parent.as_ref();
        }
    }

    /// The frame `depth` levels up from `env`.
    #[inline]
    pub fn ancestor(env: &Env, depth: u32) -> Option<&Rc<Frame>> {
        let mut frame = env.as_ref()?;
        for _ in 0..depth {
            frame = frame.parent.as_ref()?;
        }
        Some(frame)
    }
}

/// Call frames kept for reuse: a closure call takes one
/// ([`Frame::for_call`]) and gives it back when the call returns, unless
/// a closure made in the call still holds it. Saves an allocation and a
/// free per call.
#[derive(Default)]
pub struct FramePool {
    frames: Vec<Rc<Frame>>,
}

/// Frames a pool keeps at most.
const POOL_LIMIT: usize = 64;

impl FramePool {
    /// Takes back the frame of a finished call: emptied and kept if
    /// nothing else holds it, else let go.
    #[inline]
    pub fn give_back(&mut self, env: Env) {
        let Some(mut frame) = env else { return };
        if self.frames.len() >= POOL_LIMIT {
            return;
        }
        if let Some(unique) = Rc::get_mut(&mut frame) {
            unique.slots.get_mut().clear();
            unique.parent = None;
            self.frames.push(frame);
        }
    }

    /// Frees the frames kept.
    pub fn clear(&mut self) {
        self.frames.clear();
    }
}

#[cfg(test)]
impl Drop for Frame {
    fn drop(&mut self) {
        tests::LIVE_FRAMES.with(|live| live.set(live.get() - 1));
    }
}

#[cfg(test)]
mod tests {
    use crate::lisp::Interp;
    use std::cell::Cell;

    thread_local! {
        pub static LIVE_FRAMES: Cell<i64> = const { Cell::new(0) };
    }

    fn frames_left_after(code: &str) -> i64 {
        let mut interp = Interp::new().expect("prelude loads");
        // Frames kept for reuse are alive on purpose: counted out.
        interp.frame_pool.clear();
        let before = LIVE_FRAMES.with(Cell::get);
        interp.eval_source(code, "<test>", None).expect("code runs");
        interp.frame_pool.clear();
        LIVE_FRAMES.with(Cell::get) - before
    }

    #[test]
    fn local_functions_named_lets_and_dotimes_free_their_frames() {
        let code = "(define (step x)
                      (define (helper y) (* y 2))
                      (let loop ((i 0) (acc 0))
                        (if (< i 3) (loop (+ i 1) (+ acc (helper x))) acc)))
                    (define (run n) (dotimes (i n) (step i)))
                    (run 1000)
                    (letrec ((even? (lambda (n) (if (= n 0) #t (odd? (- n 1)))))
                             (odd? (lambda (n) (if (= n 0) #f (even? (- n 1))))))
                      (even? 100))";
        assert_eq!(frames_left_after(code), 0);
    }

    #[test]
    fn frames_held_by_closures_are_not_reused() {
        // Each call's frame is captured by the lambda it returns; had the
        // pool taken them back, later calls would overwrite their `x`.
        let mut interp = Interp::new().expect("prelude loads");
        let code = "(define (keep x) (lambda () x))
                    (define kept (map keep (list 1 2 3 4 5 6 7 8)))
                    (define (burn n) (if (= n 0) 0 (+ 1 (burn (- n 1)))))
                    (burn 200)
                    (map (lambda (f) (f)) kept)";
        let value = interp.eval_source(code, "<test>", None).expect("code runs");
        assert_eq!(value.to_string(), "(1 2 3 4 5 6 7 8)");
    }

    #[test]
    fn closures_that_escape_keep_their_frame_alive() {
        let mut interp = Interp::new().expect("prelude loads");
        let code = "(define (make-counter)
                      (define count 0)
                      (define (tick) (set! count (+ count 1)) count)
                      tick)
                    (define c (make-counter))
                    (c) (c)
                    (list (c) (eq? c c))";
        let value = interp.eval_source(code, "<test>", None).expect("code runs");
        assert_eq!(value.to_string(), "(3 #t)");
    }
}
