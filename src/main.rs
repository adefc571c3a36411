//! The `epsilon` command: the REPL, `run FILE`, `eval EXPR`.
//!
//! Exit status: 0 on success, 1 for an error in the program (printed as
//! `FILE:LINE:COL: error: message` with the source line and a caret), 2 for
//! bad usage, 130 when Ctrl-C (SIGINT) stopped it (reported as
//! "interrupted" where it was); `(exit n)` exits with n. When standard
//! output is closed by its reader (`epsilon eval ... | head`), the command
//! stops quietly with status 0, as Unix filters do. Under `mpirun` (a build with the
//! feature `mpi`), only rank 0 prints unless `--all-ranks` is given, and
//! an error on any rank aborts every rank after printing it.

use clap::{Parser, Subcommand, ValueEnum};
use epsilon::{Engine, Error, Value};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// The interpreter makes and frees many small objects (frames, argument
/// vectors, closures); mimalloc serves them faster than the system
/// allocator (`(fib 30)`: see BENCHMARKS.md, "Interpreter speed"). Arrays
/// of a few kilobytes go to the system allocator (`epsilon::allocator`
/// says why).
#[global_allocator]
static ALLOCATOR: epsilon::allocator::BySize<mimalloc::MiMalloc> =
    epsilon::allocator::BySize(mimalloc::MiMalloc);

/// Epsilon: a differentiation engine inside a small Lisp.
#[derive(Parser)]
#[command(name = "epsilon", version, about, long_about = None)]
struct Cli {
    /// Where numeric tapes run (default: $EPSILON_BACKEND, else auto).
    #[arg(long, value_enum, global = true)]
    backend: Option<BackendChoice>,
    /// Under mpirun, every rank prints (by default only rank 0 does).
    #[arg(long, global = true)]
    all_ranks: bool,
    /// Error reports list every place inside the standard library an
    /// error passed through (by default only the innermost).
    #[arg(long, global = true)]
    backtrace: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a script; the remaining arguments are in *args*. FILE "-" reads standard input.
    Run {
        /// The script.
        file: PathBuf,
        /// Arguments passed to the script as *args*.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Evaluate the forms given and print the value of the last.
    Eval {
        /// Source text (several arguments are joined with spaces).
        #[arg(required = true, allow_hyphen_values = true)]
        exprs: Vec<String>,
    },
    /// The Jupyter kernel: `kernel install` registers it, `kernel
    /// --connection-file F` serves a notebook (Jupyter runs this).
    #[cfg(feature = "jupyter")]
    #[command(subcommand_negates_reqs = true)]
    Kernel {
        /// The connection file Jupyter wrote (ports and signing key).
        #[arg(long, value_name = "FILE", required = true)]
        connection_file: Option<PathBuf>,
        #[command(subcommand)]
        action: Option<KernelAction>,
    },
    /// The language server, on standard input and output (for editors).
    #[cfg(feature = "lsp")]
    Lsp,
}

#[cfg(feature = "jupyter")]
#[derive(Subcommand)]
enum KernelAction {
    /// Register the kernel with Jupyter (a kernelspec in the user's Jupyter
    /// data directory, or under --prefix).
    Install {
        /// Install under PREFIX/share/jupyter/kernels (e.g. a virtual environment).
        #[arg(long, value_name = "PREFIX")]
        prefix: Option<PathBuf>,
        /// The kernel's name (default: epsilon).
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendChoice {
    /// The CPU (ndarray + rayon).
    Cpu,
    /// An NVIDIA GPU through CUDA.
    Cuda,
    /// CUDA where a device exists, else the CPU.
    Auto,
}

impl BackendChoice {
    fn name(self) -> &'static str {
        match self {
            BackendChoice::Cpu => "cpu",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Auto => "auto",
        }
    }
}

/// The process status for `(exit code)`: 0 to 255 as given, anything else
/// 255 (so a negative code never reads as success).
fn exit_status(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(255))
}

/// Prints an error report and gives the exit status it calls for.
fn failure(error: Error) -> ExitCode {
    if let Some(code) = error.exit_code() {
        return exit_status(code);
    }
    if error.kind() == epsilon::EvalErrorKind::OutputClosed {
        // Whoever read the output has all they wanted.
        return ExitCode::SUCCESS;
    }
    let interrupted = error.kind() == epsilon::EvalErrorKind::Interrupted;
    if epsilon::distributed::is_distributed() {
        // One rank's error ends the whole job, with the message.
        // One write, so ranks' reports do not interleave within a line.
        let rank = epsilon::distributed::rank().unwrap_or(0);
        let report = format!("rank {rank}: {}\n", error.render());
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), report.as_bytes());
        // A moment for ranks failing at the same time (a mismatch is seen
        // by every rank in the collective) to report too.
        std::thread::sleep(std::time::Duration::from_millis(250));
        epsilon::distributed::abort(1);
    }
    eprintln!("{}", error.render());
    // Stopped by Ctrl-C: the shell's convention for SIGINT.
    ExitCode::from(if interrupted { 130 } else { 1 })
}

/// Ctrl-C (SIGINT) stops a script between two steps of the evaluator,
/// which then reports "interrupted" where it was; a second Ctrl-C, for a
/// kernel that does not reach the next step soon, ends the process.
fn stop_on_interrupt(engine: &Engine) {
    let flag = engine.interrupt_handle();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
}

fn finish(result: Result<Value, Error>, echo: bool) -> ExitCode {
    match result {
        Ok(value) => {
            if echo && !matches!(value, Value::Void) {
                return print_value(&value);
            }
            ExitCode::SUCCESS
        }
        Err(error) => failure(error),
    }
}

/// Prints the value `eval` gives. A reader that closed standard output
/// (`| head`) took what it wanted: that ends the command quietly.
fn print_value(value: &Value) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{value}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: cannot write output: {err}");
            ExitCode::from(1)
        }
    }
}

fn main() -> ExitCode {
    keep_freed_memory();
    quiet_stack_growth_panics();
    let cli = Cli::parse();
    epsilon::show_library_frames(cli.backtrace);
    // Under mpirun, MPI starts on this (the main) thread and ends here.
    if let Err(message) = epsilon::distributed::init() {
        eprintln!("error: {message}");
        return ExitCode::from(1);
    }
    // Kernels called from a pool worker start without a hand-off.
    let status = epsilon::backends::cpu::on_pool(move || command(cli));
    epsilon::distributed::finalize();
    status
}

/// Keeps freed memory in the process for the next allocation. Numeric
/// runs allocate and free arrays of the same sizes call after call; by
/// default glibc gives the top of its heap back to the kernel once 128 KiB
/// of it are free (and maps larger arrays afresh), so every call faulted
/// its pages in again: a jitted 1000-state ODE solve took 0.63 ms instead
/// of 0.51. Up to 128 MiB of free heap stay; arrays over 32 MiB are
/// still mapped (and unmapped) on their own.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters, before any thread
    // starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

/// The stack-growing crate panics when the system refuses memory for
/// another segment of a deep recursion; the engine reports that as an
/// error with its location, so the default hook's backtrace message is
/// not printed for it (every other panic still is).
fn quiet_stack_growth_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !(message.contains("failed to allocate stack")
            || message.contains("mprotect/mmap failed"))
        {
            default(info);
        }
    }));
}

/// Runs the command line's command.
fn command(cli: Cli) -> ExitCode {
    let (backend, source) = match cli.backend {
        Some(choice) => (choice.name().to_string(), "--backend"),
        None => match std::env::var("EPSILON_BACKEND") {
            Ok(name) if !name.is_empty() => (name.to_lowercase(), "EPSILON_BACKEND"),
            // The default: auto, decided when the first tape runs.
            _ => (String::new(), "--backend"),
        },
    };
    if backend.is_empty() {
        epsilon::backends::prefer_auto();
    } else if let Err(message) = epsilon::backends::select(&backend) {
        eprintln!("error: {source} {backend}: {message}");
        // An unknown name is bad usage; a known backend that is missing here
        // is a failure.
        let unknown = !["cpu", "cuda", "auto"].contains(&backend.as_str());
        return ExitCode::from(if unknown { 2 } else { 1 });
    }
    let mut engine = Engine::new();
    if !cli.all_ranks && epsilon::distributed::rank().is_ok_and(|rank| rank > 0) {
        // Ranks other than 0 print nothing unless asked (errors aside).
        engine.set_output(Box::new(std::io::sink()));
        engine.set_error_output(Box::new(std::io::sink()));
    }
    match cli.command {
        Some(Command::Run { file, args }) => {
            engine.set_args(&args);
            stop_on_interrupt(&engine);
            if file.as_os_str() == "-" {
                return run_stdin(&mut engine);
            }
            finish(engine.run_file(&file), false)
        }
        Some(Command::Eval { exprs }) => {
            stop_on_interrupt(&engine);
            finish(engine.eval(&exprs.join(" ")), true)
        }
        #[cfg(feature = "jupyter")]
        Some(Command::Kernel {
            connection_file,
            action,
        }) => kernel(engine, connection_file, action),
        #[cfg(feature = "lsp")]
        Some(Command::Lsp) => match epsilon::lsp::serve_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::from(1)
            }
        },
        #[cfg(feature = "repl")]
        None if std::io::IsTerminal::is_terminal(&std::io::stdin()) => {
            exit_status(epsilon::repl::run(&mut engine))
        }
        None => run_stdin(&mut engine),
    }
}

/// `epsilon kernel ...`: installs the kernelspec or serves a notebook.
#[cfg(feature = "jupyter")]
fn kernel(
    engine: Engine,
    connection_file: Option<PathBuf>,
    action: Option<KernelAction>,
) -> ExitCode {
    let outcome = match (action, connection_file) {
        (Some(KernelAction::Install { prefix, name }), _) => std::env::current_exe()
            .map_err(|err| format!("cannot tell where this executable is: {err}"))
            .and_then(|exe| {
                epsilon::jupyter::install(&exe, &epsilon::jupyter::InstallOptions { prefix, name })
            })
            .map(|dir| {
                println!("installed the Epsilon kernel in {}", dir.display());
            }),
        (None, Some(file)) => epsilon::jupyter::serve(engine, &file),
        (None, None) => unreachable!("clap requires --connection-file without a subcommand"),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

/// Runs standard input as a script.
fn run_stdin(engine: &mut Engine) -> ExitCode {
    stop_on_interrupt(engine);
    let mut source = String::new();
    if let Err(err) = std::io::stdin().read_to_string(&mut source) {
        eprintln!("error: cannot read standard input: {err}");
        return ExitCode::from(1);
    }
    finish(engine.eval_named(&source, "<stdin>"), false)
}
