//! Inputs at the extremes end in an error with a location and exit
//! status 1, never a crash: tensors of more axes than NumPy allows (64),
//! lists and literals nested deeper than that made into tensors, and a
//! recursion deeper than the memory the stack can grow into. (Ctrl-C is
//! in tests/cli.rs.)

use std::process::Command;

fn run(source: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extreme.lisp");
    std::fs::write(&path, source).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_epsilon"))
        .arg("run")
        .arg(&path)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn fails_with(source: &str, needle: &str) {
    let (code, stderr) = run(source);
    assert_eq!(code, Some(1), "{source}: {stderr}");
    assert!(stderr.contains(needle), "{source}: {stderr}");
    assert!(stderr.contains("extreme.lisp:"), "no location: {stderr}");
}

#[test]
fn more_axes_than_sixty_four_are_an_error_where_they_are_asked_for() {
    let ones = "(map (lambda (i) 1) (range 0 100000))";
    fails_with(
        &format!("(+ (ones {ones}) 1)\n"),
        "at most 64 axes, got 100000",
    );
    fails_with(
        &format!("(reshape 1.0 {ones})\n"),
        "at most 64 axes, got 100000",
    );
    fails_with(
        "(expand-dims (ones (map (lambda (i) 1) (range 0 64))) 0)\n",
        "at most 64 axes, got 65",
    );
    // 64 axes are fine.
    let (code, stderr) = run("(println (rank (+ (ones (map (lambda (i) 1) (range 0 64))) 1)))\n");
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn literals_and_lists_nested_too_deep_for_a_tensor_are_an_error() {
    let literal = format!("(println {}1{})\n", "[".repeat(9000), "]".repeat(9000));
    fails_with(&literal, "at most 64 axes, got 65");
    let list = format!(
        "(define l '{}1{})\n(tensor l)\n",
        "(".repeat(9000),
        ")".repeat(9000)
    );
    fails_with(&list, "a list nested more than 64 deep cannot be a tensor");
}

#[test]
fn recursion_the_stack_cannot_grow_into_is_an_error_at_the_call() {
    if !cfg!(target_os = "linux") || Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: needs bash's ulimit on Linux");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.lisp");
    std::fs::write(
        &path,
        "(set-recursion-limit! 5000000)\n(define (f n) (if (= n 0) 0 (+ 1 (f (- n 1)))))\n(println (f 4000000))\n",
    )
    .unwrap();
    // 4 GB of address space: the stack's segments run out of it.
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000; exec '{}' run '{}'",
            env!("CARGO_BIN_EXE_epsilon"),
            path.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "deep.lisp:2:34: error: recursion deeper than this machine's memory can hold"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Runs `source` with the address space limited to `kb` kilobytes (bash's
/// `ulimit -v`), so allocation fails long before the machine's memory runs
/// out; `None` where that cannot be done.
fn run_limited(source: &str, kb: usize) -> Option<(Option<i32>, String)> {
    if !cfg!(target_os = "linux") || Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: needs bash's ulimit on Linux");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extreme.lisp");
    std::fs::write(&path, source).unwrap();
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kb}; exec '{}' run '{}'",
            env!("CARGO_BIN_EXE_epsilon"),
            path.display()
        ))
        .output()
        .unwrap();
    Some((
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Runs `source` in a 3 GB address space and checks that it exits 1 with
/// one of `messages` at `location`; false where that cannot be run.
fn fails_in_3_gb(source: &str, messages: &[&str], location: &str) -> bool {
    let Some((code, stderr)) = run_limited(source, 3_000_000) else {
        return false;
    };
    assert_eq!(code, Some(1), "{source}: {stderr}");
    assert!(
        messages.iter().any(|message| stderr.contains(message)),
        "{source}: {stderr}"
    );
    assert!(stderr.contains(location), "{source}: {stderr}");
    true
}

#[test]
fn strings_and_tensors_grown_past_memory_are_an_error_not_an_abort() {
    for source in [
        "(define s \"abcdefgh\")\n(let loop () (set! s (str s s)) (loop))\n",
        "(define s \"abcdefgh\")\n(let loop () (set! s (format \"{}{}\" s s)) (loop))\n",
        "(define t (ones 8))\n(let loop () (set! t (concat (list t t))) (loop))\n",
    ] {
        if !fails_in_3_gb(
            source,
            &["too large", "not enough memory"],
            "extreme.lisp:2:",
        ) {
            return;
        }
    }
}

/// Cons cells cannot ask the allocator first, so lists are held to a
/// limit (half the memory, here of the 3 GB address space) checked at
/// every call and loop pass; `set-memory-limit!` moves it.
#[test]
fn lists_grown_past_memory_are_an_error_not_an_abort() {
    for source in [
        "(define (grow l) (grow (cons 1 l)))\n(grow '())\n",
        "(define l (list 1 2 3 4 5 6 7 8))\n(let loop () (set! l (append l l)) (loop))\n",
        "(define big (ones 100000000))\n(length (to-list big))\n",
        "(define n 100000000)\n(length (range n))\n",
    ] {
        if !fails_in_3_gb(source, &["memory limit"], "extreme.lisp:") {
            return;
        }
    }
    // The limit set by the program; the error can be caught, and the
    // program goes on once the list is let go of.
    let (code, stderr) = run("(set-memory-limit! 20000000)\n\
         (define (grow l n) (if (= n 0) (length l) (grow (cons n l) (- n 1))))\n\
         (define caught (try (grow '() 10000000) (catch (e) e)))\n\
         (if (> (length (string-split caught \"memory limit of 0.02 GB\")) 1) (grow '() 1000) (exit 3))\n\
         (grow '() 10000000)\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("memory limit"), "{stderr}");
    assert!(stderr.contains("extreme.lisp:2:43"), "{stderr}");
}

/// Found by tests/grammar_fuzz.rs (as `(one-hot labels 4294967296)`):
/// `arange` of as many elements as a tensor may have, but more than memory
/// holds, aborted on the failed allocation.
#[test]
fn arange_past_memory_is_an_error_not_an_abort() {
    let Some((code, stderr)) = run_limited("(arange 4294967296)\n", 3_000_000) else {
        return;
    };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("not enough memory"), "{stderr}");
    assert!(stderr.contains("extreme.lisp:1:1"), "{stderr}");
}

/// The gradient of a loop whose reverse keeps every state: 100,000 states
/// of 800 kB (80 GB), more than any machine running the tests holds.
const STORE_ALL_80_GB: &str = "((grad (lambda (x) (sum (scan (lambda (s i) (* s 1.0001)) x 100000 :checkpoint 'store-all)))) (ones '(100000)))\n";

/// A loop's memory plan is checked before it runs: in a 3 GB address
/// space, the 80 GB plan is an error naming the loop, the bytes and the
/// remedy, not a run that fills memory until the allocator aborts.
#[test]
fn a_loop_whose_states_cannot_fit_is_refused_before_it_runs() {
    let Some((code, stderr)) = run_limited(STORE_ALL_80_GB, 3_000_000) else {
        return;
    };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "not enough memory: the reverse of a scan of 100000 steps under :checkpoint 'store-all \
             needs 80."
        ),
        "{stderr}"
    );
    assert!(stderr.contains("99999 states of 800.0 kB"), "{stderr}");
    assert!(stderr.contains("this process can get"), "{stderr}");
    assert!(stderr.contains("'revolve"), "{stderr}");
    assert!(stderr.contains(":memory-budget"), "{stderr}");
    assert!(stderr.contains("extreme.lisp:1:"), "{stderr}");
}

/// Without an address-space limit the plan is held against the memory
/// the machine has free: 8 PB fits nowhere. (The data segment is limited
/// to 4 GB all the same, so a plan that went unchecked could not take the
/// machine's memory.)
#[test]
fn a_plan_larger_than_the_machine_is_refused() {
    if !cfg!(target_os = "linux") || Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: needs bash's ulimit on Linux");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extreme.lisp");
    std::fs::write(
        &path,
        "(define (f x) (sum (scan (lambda (s i) (* s 1.0001)) x 1000000000 :checkpoint 'store-all)))\n\
         (println (tape-stats f (list (ones '(1000000)))))\n",
    )
    .unwrap();
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -d 4000000; exec '{}' run '{}'",
            env!("CARGO_BIN_EXE_epsilon"),
            path.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("scan of 1000000000 steps under :checkpoint 'store-all needs 8000000."),
        "{stderr}"
    );
    assert!(stderr.contains("extreme.lisp:2:"), "{stderr}");
}

/// `'auto` without a budget keeps as many states as half the memory the
/// process can get holds: the loop that store-all cannot fit in 3 GB
/// (3.2 GB of states) runs, with the gradient every strategy gives.
#[test]
fn auto_checkpointing_picks_the_snapshots_that_fit() {
    let source = "(define (f x) (sum (scan (lambda (s i) (* s 1.0001)) x 40000 :checkpoint 'auto)))\n\
                  (define g ((grad f) (ones '(10000))))\n\
                  (unless (< (abs (- (/ (item (index g 7)) (pow 1.0001 40000)) 1)) 1e-9) (exit 3))\n";
    let Some((code, stderr)) = run_limited(source, 3_000_000) else {
        return;
    };
    assert_eq!(code, Some(0), "{stderr}");
}

/// Results derived from a tensor that fits (1.36 GB of a 3 GB address
/// space) but that do not fit beside it are an error at the call, where
/// their allocation aborted the process.
#[test]
fn derived_results_past_memory_are_an_error_not_an_abort() {
    let x = "(define x (zeros '(170000000)))\n";
    let m = "(define m (zeros '(13000 13000)))\n";
    for (setup, call) in [
        (x, "(sin x)"),
        (x, "(exp x)"),
        (x, "(sort x)"),
        (x, "(astype (list x x x) 'f32)"),
        (m, "(transpose m)"),
        (m, "(inv m)"),
        (x, "(zeros '(170000000) :dtype 'f32)"),
        (
            x,
            "(list (ones '(100000000) :dtype 'f32) (ones '(100000000) :dtype 'f32))",
        ),
    ] {
        if !fails_in_3_gb(
            &format!("{setup}{call}\n"),
            &["not enough memory", "out of memory"],
            "extreme.lisp:2:",
        ) {
            return;
        }
    }
}
