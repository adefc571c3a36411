//! Parameter trees on disk: `save` / `load-tree` round trips in `.npz`
//! and JSON, the `.npz` read by NumPy and NumPy's `np.savez` read back
//! (by tree paths or by free names), `.npy` files of every number kind
//! between NumPy and `save-npy`/`load-npy`, bad files as clear errors, and
//! a failed save leaving the old file.

use epsilon::{Engine, Value};
use std::process::Command;

fn eval(engine: &mut Engine, source: &str) -> Value {
    engine
        .eval(source)
        .unwrap_or_else(|e| panic!("{source}\nfails: {e}"))
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

const TREE: &str = "(list (list (reshape (arange 6) '(2 3)) (tensor '(0.5 -1.0 2.0))) 0.125 7 (list (tensor '((1.0)))))";

#[test]
fn trees_round_trip_in_npz_and_json() {
    let dir = temp_dir();
    let mut engine = Engine::new();
    eval(&mut engine, &format!("(define params {TREE})"));
    for name in ["p.npz", "p.json"] {
        let path = dir.path().join(name);
        let path = path.to_str().expect("utf-8 path");
        eval(&mut engine, &format!("(save \"{path}\" params)"));
        let same = eval(
            &mut engine,
            &format!("(equal? (load-tree \"{path}\") params)"),
        );
        assert_eq!(same.to_string(), "#t", "{name}");
        // Whole numbers stay whole; tensors keep their shapes.
        let shown = eval(
            &mut engine,
            &format!(
                "(let ((t (load-tree \"{path}\"))) (list (nth t 2) (shape (first (first t)))))"
            ),
        );
        assert_eq!(shown.to_string(), "(7 (2 3))", "{name}");
    }
}

fn numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn numpy_reads_the_npz_and_its_savez_reads_back() {
    if !numpy() {
        eprintln!("skipped: python3 with NumPy is not available");
        return;
    }
    let dir = temp_dir();
    let ours = dir.path().join("ours.npz");
    let theirs = dir.path().join("theirs.npz");
    let mut engine = Engine::new();
    eval(
        &mut engine,
        &format!("(save \"{}\" {TREE})", ours.display()),
    );
    let script = format!(
        "import numpy as np\n\
         d = np.load('{ours}')\n\
         print(sorted(d.keys()))\n\
         print(d['tree.0.0'].tolist(), d['tree.0.1'].tolist(), float(d['tree.1']), int(d['tree.2']), d['tree.3.0'].shape)\n\
         np.savez('{theirs}', **{{'tree.0': np.arange(4.0).reshape(2, 2), 'tree.1.0': np.float64(2.5), 'tree.1.1': np.int64(3)}})\n",
        ours = ours.display(),
        theirs = theirs.display()
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        printed,
        "['tree.0.0', 'tree.0.1', 'tree.1', 'tree.2', 'tree.3.0']\n\
         [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] [0.5, -1.0, 2.0] 0.125 7 (1, 1)\n"
    );
    let read = eval(
        &mut engine,
        &format!("(load-tree \"{}\")", theirs.display()),
    );
    assert_eq!(read.to_string(), "([[0.0 1.0] [2.0 3.0]] (2.5 3))");
}

#[test]
fn numpy_files_of_every_kind_round_trip() {
    if !numpy() {
        eprintln!("skipped: python3 with NumPy is not available");
        return;
    }
    let dir = temp_dir();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let mut engine = Engine::new();
    eval(
        &mut engine,
        &format!(
            "(save-npy (astype [0.1 -2.5] 'f32) \"{}\") (save-npy [0.1 -2.5] \"{}\")",
            path("ours32.npy"),
            path("ours64.npy")
        ),
    );
    let kinds = [
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
        "float32", "float64",
    ];
    let script = format!(
        "import numpy as np\n\
         for name in ['ours32', 'ours64']:\n\
         \x20   a = np.load('{dir}/' + name + '.npy')\n\
         \x20   print(a.dtype.str, a.tolist())\n\
         for kind in {kinds:?}:\n\
         \x20   np.save('{dir}/' + kind + '.npy', np.array([[0, 1, 5], [7, 1, 0]]).astype(kind))\n\
         np.save('{dir}/swapped.npy', np.array([3, -4], dtype='>i4'))\n\
         np.savez('{dir}/named.npz', w=np.eye(2, dtype='float32'), b=np.array([True, False]))\n",
        dir = dir.path().display()
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "<f4 [0.10000000149011612, -2.5]\n<f8 [0.1, -2.5]\n"
    );
    for kind in kinds {
        let read = eval(
            &mut engine,
            &format!(
                "(let ((t (load-npy \"{}\"))) (list (dtype t) (astype t 'f64)))",
                path(&format!("{kind}.npy"))
            ),
        );
        let dtype = if kind == "float32" { "f32" } else { "f64" };
        let values = if kind == "bool" {
            "[[0.0 1.0 1.0] [1.0 1.0 0.0]]"
        } else {
            "[[0.0 1.0 5.0] [7.0 1.0 0.0]]"
        };
        assert_eq!(read.to_string(), format!("({dtype} {values})"), "{kind}");
    }
    let swapped = eval(
        &mut engine,
        &format!("(load-npy \"{}\")", path("swapped.npy")),
    );
    assert_eq!(swapped.to_string(), "[3.0 -4.0]");
    let named = eval(
        &mut engine,
        &format!("(load-tree \"{}\")", path("named.npz")),
    );
    assert_eq!(
        named.to_string(),
        "((\"w\" [[1.0 0.0] [0.0 1.0]]) (\"b\" [1.0 0.0]))"
    );
}

#[test]
fn bad_files_and_failed_saves_are_clear_errors() {
    let dir = temp_dir();
    let mut engine = Engine::new();
    let path = |name: &str| dir.path().join(name).display().to_string();
    // A truncated .npz.
    eval(
        &mut engine,
        &format!("(save \"{}\" {TREE})", path("whole.npz")),
    );
    let bytes = std::fs::read(path("whole.npz")).expect("saved");
    std::fs::write(path("cut.npz"), &bytes[..bytes.len() / 2]).expect("written");
    std::fs::write(path("bad.json"), "{\"shape\": [2, 2], \"data\": [1, 2, 3]}").expect("written");
    for (source, needle) in [
        (
            format!("(load-tree \"{}\")", path("cut.npz")),
            "cut.npz: not an .npz file",
        ),
        (
            format!("(load-tree \"{}\")", path("bad.json")),
            "a tensor of shape [2, 2] with 3 numbers",
        ),
        (
            format!("(load-tree \"{}\")", path("none.npz")),
            "cannot read",
        ),
        (
            format!("(save \"{}\" (list 1 \"x\"))", path("s.npz")),
            "save: a parameter tree holds tensors, numbers and lists; tree.1 is",
        ),
        (
            format!("(save \"{}\" (list 1))", path("p.csv")),
            "saved as .npz or .json",
        ),
        (
            format!("(save \"{}\" (list (list)))", path("e.npz")),
            "the empty list at tree.0",
        ),
        (
            format!("(save \"{}\" (list 1))", path("missing/dir.npz")),
            "cannot write",
        ),
    ] {
        let error = engine.eval(&source).expect_err(&source).to_string();
        assert!(error.contains(needle), "{source}: {error}");
    }
    // A failed save leaves the file that was there, and no temporary file.
    let before = std::fs::read(path("whole.npz")).expect("there");
    let error = engine.eval(&format!("(save \"{}\" (list (list)))", path("whole.npz")));
    assert!(error.is_err());
    assert_eq!(
        std::fs::read(path("whole.npz")).expect("still there"),
        before
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("listable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}
