//! Values nested far deeper than any program writes by hand (lists built
//! by a loop, 30,000 levels) given to every form that walks its arguments
//! as trees: each is an error naming the nesting limit, never a stack
//! overflow; and the stdlib's tree functions walk a deep chain in linear
//! time, giving the right leaves. Each case runs in its own process, so a
//! crash is seen as the process's death.

use std::process::Command;

/// A list nested 30,000 deep around the number 1.0, and a chain nested
/// as deep whose every level holds a leaf beside the deeper list.
const DEEP: &str = "(define (nest n) (let loop ((k 0) (t 1.0)) (if (= k n) t (loop (+ k 1) (list t)))))\n\
     (define deep (nest 30000))\n\
     (define (chain n) (let loop ((k 1) (t 0.0)) (if (= k n) t (loop (+ k 1) (list t (* 1.0 k))))))\n\
     (define (f x) 1.0)\n";

fn run(source: &str) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.lisp");
    std::fs::write(&path, format!("{DEEP}{source}\n")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_epsilon"))
        .current_dir(dir.path())
        .arg("run")
        .arg(&path)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn every_form_that_walks_its_arguments_refuses_a_list_nested_too_deep() {
    for source in [
        "((grad f) deep)",
        "((value-and-grad f) deep)",
        "((jit (lambda (x) x)) deep)",
        "((vmap (lambda (x) x)) deep)",
        "(jvp f (list deep) (list deep))",
        "(vjp f (list deep) 1.0)",
        "((hessian f) deep)",
        "((jacfwd f) deep)",
        "((jacrev f) deep)",
        "(astype deep 'f32)",
        "(scan (lambda (s i) s) deep 3)",
        "(while-loop (lambda (s) (< 1 0)) (lambda (s) s) deep)",
        "(minimize (lambda (x) 1.0) deep :max-iter 2)",
    ] {
        let (code, _, stderr) = run(source);
        assert_eq!(code, Some(1), "{source}: {stderr}");
        assert!(
            stderr.contains("nested deeper than 10000 levels"),
            "{source}: {stderr}"
        );
        assert!(stderr.contains("deep.lisp:5:"), "{source}: {stderr}");
    }
}

#[test]
fn save_refuses_a_tree_deeper_than_load_tree_reads_back() {
    for (source, limit) in [
        ("(save \"t.npz\" deep)", "more than 1000 deep"),
        ("(save \"t.json\" deep)", "more than 120 deep"),
        ("(save \"t.json\" (nest 121))", "more than 120 deep"),
    ] {
        let (code, _, stderr) = run(source);
        assert_eq!(code, Some(1), "{source}: {stderr}");
        assert!(stderr.contains(limit), "{source}: {stderr}");
        assert!(
            stderr.contains("deeper than load-tree reads back"),
            "{source}: {stderr}"
        );
    }
    // At the limit, what is saved loads back equal.
    let (code, stdout, stderr) = run("(save \"t.json\" (nest 120))\n\
         (println (equal? (load-tree \"t.json\") (nest 120)))\n\
         (save \"t.npz\" (nest 1000))\n\
         (println (equal? (load-tree \"t.npz\") (nest 1000)))");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "#t\n#t\n", "{stderr}");
}

#[test]
fn tree_functions_walk_a_deep_left_nested_chain_in_one_pass() {
    // The chain's leaves in order: 0.0, 1.0, ..., 29999.0.
    let (code, stdout, stderr) = run("(define c (chain 30000))\n\
         (define leaves (tree-leaves c))\n\
         (println (length leaves) (first leaves) (last leaves))\n\
         (println (equal? leaves (map (lambda (k) (* 1.0 k)) (range 30000))))\n\
         (println (size (tree-flatten c)) (item (sum (tree-flatten c))))\n\
         (println (tree-norm (chain 4)))\n\
         (define stepped ((adam :lr 0.5) c c))\n\
         (println (length (tree-leaves stepped)) (second stepped))");
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "30000 0.0 29999.0", "{stdout}");
    assert_eq!(lines[1], "#t", "{stdout}");
    assert_eq!(lines[2], "30000 449985000.0", "{stdout}");
    // sqrt(0 + 1 + 4 + 9)
    assert_eq!(lines[3], format!("{}", 14f64.sqrt()), "{stdout}");
    // Adam's first step moves every leaf by lr against its gradient's sign
    // (the leaf 29999 is its own gradient, positive).
    assert_eq!(lines[4], "30000 29998.5", "{stdout}");
}
