//! The Jupyter kernel as Jupyter runs it: installed with `epsilon kernel
//! install`, started by Python's jupyter_client over loopback, and driven
//! through every channel (tests/jupyter/check_kernel.py: values, output, an
//! error, a LaTeX formula, a tensor table, a plot, fit's progress, an
//! interrupt by message and by signal, completion, inspection, history,
//! `read-line` input, the pager, a forged message, shutdown); the Jupyter
//! project's conformance suite, jupyter_kernel_test
//! (tests/jupyter/conformance.py); a kernel embedding a Rust function that
//! prints; and the example notebooks executed by nbclient. Each skips,
//! saying so, where Python lacks the package it needs (`.ci/run` installs
//! them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EPSILON: &str = env!("CARGO_BIN_EXE_epsilon");

fn python_has(modules: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A Jupyter data directory holding the installed kernelspec, with the
/// environment that makes Jupyter look only there.
struct Jupyter {
    dir: tempfile::TempDir,
}

impl Jupyter {
    fn install() -> Jupyter {
        let dir = tempfile::tempdir().unwrap();
        let jupyter = Jupyter { dir };
        let out = jupyter
            .command(EPSILON)
            .args(["kernel", "install"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("installed the Epsilon kernel in"), "{said}");
        assert!(jupyter.data().join("kernels/epsilon/kernel.json").exists());
        jupyter
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("JUPYTER_DATA_DIR", self.data())
            .env("JUPYTER_PATH", self.data())
            .env("JUPYTER_RUNTIME_DIR", self.dir.path().join("runtime"))
            .env("JUPYTER_CONFIG_DIR", self.dir.path().join("config"))
            .env("JUPYTER_PLATFORM_DIRS", "1");
        command
    }
}

fn report(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn jupyter_client_drives_every_channel_of_the_kernel() {
    if !python_has("jupyter_client") {
        eprintln!("skipped: python3 with jupyter_client is not available (.ci/run installs it)");
        return;
    }
    let jupyter = Jupyter::install();
    let plots = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jupyter/check_kernel.py");
    let out = jupyter
        .command("python3")
        .arg(script)
        .arg(plots.path())
        .arg(jupyter.data())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all kernel checks passed"),
        "{}",
        report(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rejected a message on the shell channel: its signature does not match"),
        "the forged message is logged: {stderr}"
    );
    assert!(
        !stderr.contains("did not stop"),
        "the kernel leaves on its own when asked to shut down: {stderr}"
    );
}

#[test]
fn jupyter_kernel_test_passes() {
    if !python_has("jupyter_kernel_test") {
        eprintln!(
            "skipped: python3 with jupyter_kernel_test is not available (.ci/run installs it)"
        );
        return;
    }
    let jupyter = Jupyter::install();
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jupyter/conformance.py");
    let out = jupyter.command("python3").arg(suite).output().unwrap();
    // unittest reports on standard error: one line per test, then a summary.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", report(&out));
    let ran: usize = said
        .lines()
        .find_map(|line| line.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {}", report(&out)));
    let skipped: Vec<&str> = said
        .lines()
        .filter(|line| line.contains(" ... skipped"))
        .collect();
    assert!(
        ran >= 13,
        "the whole suite ran, iopub_welcome included: {said}"
    );
    assert!(
        skipped.len() == 1 && skipped[0].starts_with("test_clear_output "),
        "only test_clear_output (no function clears output) is skipped: {skipped:?}"
    );
}

/// The test binary serves as a kernel whose engine has a Rust function
/// that prints: the kernelspec written by
/// `a_registered_rust_function_prints_into_its_cell` starts this test
/// (ignored otherwise) with the connection file as the last argument.
#[test]
#[ignore = "a kernel process started by a_registered_rust_function_prints_into_its_cell"]
fn kernel_with_a_printing_rust_function() {
    let Some(file) = std::env::args()
        .next_back()
        .filter(|arg| arg.ends_with(".json") && Path::new(arg).exists())
    else {
        eprintln!("skipped: started without a connection file");
        return;
    };
    let mut engine = epsilon::Engine::new();
    engine
        .register_fn("shout", |args: &[epsilon::Value]| {
            let times = args[0].as_f64()? as usize;
            for i in 0..times {
                println!("rust says {i}");
            }
            Ok(epsilon::Value::Void)
        })
        .unwrap();
    epsilon::jupyter::serve(engine, Path::new(&file)).unwrap();
}

#[test]
fn a_registered_rust_function_prints_into_its_cell() {
    if !python_has("jupyter_client") {
        eprintln!("skipped: python3 with jupyter_client is not available (.ci/run installs it)");
        return;
    }
    let jupyter = Jupyter::install();
    let spec_dir = jupyter.data().join("kernels/epsilon-host");
    std::fs::create_dir_all(&spec_dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let spec = serde_json::json!({
        "argv": [exe, "--ignored", "--exact", "--nocapture", "--test-threads=1",
                 "kernel_with_a_printing_rust_function", "{connection_file}"],
        "display_name": "Epsilon with a Rust function",
        "language": "epsilon",
    });
    std::fs::write(spec_dir.join("kernel.json"), spec.to_string()).unwrap();
    let out = jupyter
        .command("python3")
        .args(["-c", CHECK_HOST_OUTPUT])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("host output ok"),
        "{}",
        report(&out)
    );
}

/// Runs a cell mixing Lisp output and a Rust function's `println!`, and
/// checks that the cell's stdout stream has both, in order, before its
/// result.
const CHECK_HOST_OUTPUT: &str = r#"
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="epsilon-host", startup_timeout=60)
try:
    msg_id = kc.execute('(println "before") (shout 2) (display "after") 7')
    reply = kc.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    kinds, text = [], ""
    while True:
        msg = kc.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kinds.append(msg["msg_type"])
        if msg["msg_type"] == "stream":
            assert msg["content"]["name"] == "stdout", msg["content"]
            text += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    assert text == "before\nrust says 0\nrust says 1\nafter", repr(text)
    assert kinds.index("execute_result") > max(i for i, k in enumerate(kinds) if k == "stream"), kinds
    print("host output ok")
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=False)
"#;

#[test]
fn nbclient_runs_the_example_notebooks() {
    if !python_has("nbclient, nbformat, jupyter_client") {
        eprintln!("skipped: python3 with nbclient is not available (.ci/run installs it)");
        return;
    }
    let jupyter = Jupyter::install();
    let notebooks = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/notebooks");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&notebooks)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "ipynb"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no notebooks in {}", notebooks.display());
    let work = tempfile::tempdir().unwrap();
    for path in paths {
        let out = jupyter
            .command("python3")
            .current_dir(work.path())
            .args(["-c", RUN_NOTEBOOK])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", path.display(), report(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("cells with output:"), "{}", report(&out));
    }
}

/// Executes the notebook given as argv[1] with the epsilon kernel (any
/// error output fails) and checks that every code cell that shows
/// something produced its kind of output, and that the language_info the
/// notebook is stored with (what nbconvert highlights by, without a
/// kernel) is what the kernel says, Pygments lexer included.
const RUN_NOTEBOOK: &str = r#"
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
stored = dict(nb.metadata.language_info)
NotebookClient(nb, kernel_name="epsilon", timeout=300).execute()
told = dict(nb.metadata.language_info)
told.pop("version")
assert stored == told, ("stored language_info", stored, "the kernel's", told)
with_output = 0
for cell in nb.cells:
    if cell.cell_type != "code":
        continue
    for out in cell.outputs:
        assert out.output_type != "error", (cell.source, out)
    expected = cell.metadata.get("expect")
    if expected:
        kinds = set()
        for out in cell.outputs:
            kinds.add(out.output_type)
            kinds.update(out.get("data", {}).keys())
        missing = set(expected) - kinds
        assert not missing, (cell.source, missing, kinds)
    with_output += bool(cell.outputs)
print("cells with output:", with_output)
"#;

#[test]
fn a_malformed_connection_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kernel-1.json");
    std::fs::write(&file, r#"{"ip": "127.0.0.1", "transport": "tcp"}"#).unwrap();
    let out = Command::new(EPSILON)
        .args(["kernel", "--connection-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", report(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: the connection file {} is not a Jupyter connection file",
            file.display()
        )) && stderr.contains("shell_port"),
        "{stderr}"
    );
    let out = Command::new(EPSILON)
        .args(["kernel", "--connection-file", "/nonexistent/kernel.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("error: cannot read the connection file /nonexistent/kernel.json"),
        "{}",
        report(&out)
    );
}

#[test]
fn install_with_a_prefix_writes_the_kernelspec_there() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(EPSILON)
        .args(["kernel", "install", "--name", "eps-test", "--prefix"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", report(&out));
    let spec = std::fs::read_to_string(
        dir.path()
            .join("share/jupyter/kernels/eps-test/kernel.json"),
    )
    .unwrap();
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    assert_eq!(spec["argv"][0], EPSILON);
    assert_eq!(spec["argv"][3], "{connection_file}");
}
