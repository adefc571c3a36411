//! The distributed built-ins. With the feature `mpi`: the scripts of
//! tests/mpi/ run as one process and under `mpirun -np 2` and `-np 4`
//! (oversubscribed; they check values and gradients against the
//! one-process result and central differences themselves), the heat
//! equation's decomposed gradient against the one-process gradient,
//! mismatched shapes and one rank's error ending every rank with the
//! message, and only rank 0 printing. Without it: the error saying how
//! to build with it. Where `mpirun` is missing, the MPI runs say they
//! skipped.

use std::process::{Command, Output};

fn epsilon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_epsilon"))
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[cfg(not(feature = "mpi"))]
#[test]
fn without_the_feature_each_builtin_says_how_to_build_it() {
    for call in [
        "(mpi-rank)",
        "(mpi-size)",
        "(allreduce 1.0)",
        "(allgather (ones 2))",
        "(halo-exchange (ones 4) 1)",
        "(mpi-traffic)",
    ] {
        let output = epsilon().args(["eval", call]).output().unwrap();
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{call}: {stderr}");
        assert!(
            stderr.contains("built without MPI") && stderr.contains("--features mpi"),
            "{call}: {stderr}"
        );
    }
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// `mpirun` with what a container or CI needs: running as root,
    /// more ranks than cores.
    fn mpirun(ranks: usize) -> Option<Command> {
        let probe = Command::new("mpirun").arg("--version").output();
        if !probe.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: mpirun is not installed");
            return None;
        }
        let mut command = Command::new("mpirun");
        command
            .args(["--allow-run-as-root", "--oversubscribe", "-np"])
            .arg(ranks.to_string())
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .arg(env!("CARGO_BIN_EXE_epsilon"));
        Some(command)
    }

    /// Runs `command`, killing it after two minutes (a hang is a failure).
    fn run(mut command: Command) -> Output {
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("the MPI job did not finish within two minutes (a hang)");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn script(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(name)
            .display()
            .to_string()
    }

    /// The script passes as one process and on 2 and 4 ranks; every
    /// `ok` line is printed once (by rank 0).
    fn passes(name: &str, oks: &[&str]) {
        let mut single = epsilon();
        single.args(["run", &script(name)]);
        let mut runs = vec![(1, single)];
        for ranks in [2, 4] {
            match mpirun(ranks) {
                Some(mut command) => {
                    command.args(["run", &script(name)]);
                    runs.push((ranks, command));
                }
                None => return,
            }
        }
        for (ranks, command) in runs {
            let output = run(command);
            let (stdout, stderr) = text(&output);
            assert!(
                output.status.success(),
                "{name} on {ranks} ranks failed:\n{stdout}\n{stderr}"
            );
            for ok in oks {
                let line = format!("ok {ok}");
                assert_eq!(
                    stdout.lines().filter(|l| *l == line).count(),
                    1,
                    "{name} on {ranks} ranks: `{line}` once in\n{stdout}"
                );
            }
        }
    }

    #[test]
    fn collectives_and_their_adjoints_match_one_process() {
        passes(
            "tests/mpi/collectives.lisp",
            &["values", "reverse", "forward", "scan", "vmap"],
        );
    }

    #[test]
    fn halo_exchanges_and_their_adjoints_match_one_process() {
        passes(
            "tests/mpi/halo.lisp",
            &[
                "values",
                "gradients",
                "scan",
                "vmap",
                "errors",
                "adjoint pairs",
            ],
        );
    }

    #[test]
    fn a_distributed_fit_follows_the_one_process_loss_curve() {
        passes("tests/mpi/fit.lisp", &["fit"]);
    }

    #[test]
    fn the_decomposed_heat_equation_gradient_equals_one_process() {
        for ranks in [2, 4] {
            let Some(mut command) = mpirun(ranks) else {
                return;
            };
            command.args([
                "run",
                &script("bench/distributed/heat.lisp"),
                "check",
                "32",
                "150",
            ]);
            let output = run(command);
            let (stdout, stderr) = text(&output);
            assert!(output.status.success(), "{stdout}\n{stderr}");
            let line = stdout
                .lines()
                .find(|l| l.starts_with("relative difference"))
                .unwrap_or_else(|| panic!("no comparison in\n{stdout}"));
            let numbers: Vec<f64> = line
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(numbers.len(), 2, "{line}");
            assert!(numbers.iter().all(|&d| d <= 1e-12), "{ranks} ranks: {line}");
            // Bytes sent per step: measured and the model's count agree.
            let bytes = stdout
                .lines()
                .find(|l| l.starts_with("halo bytes"))
                .unwrap_or_else(|| panic!("no bytes in\n{stdout}"));
            let counts: Vec<f64> = bytes
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(counts.len(), 2, "{bytes}");
            assert!(counts[0] > 0.0 && counts[0] == counts[1], "{bytes}");
        }
    }

    fn failing(ranks: usize, source: &str) -> Option<(String, String)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.lisp");
        std::fs::write(&path, source).unwrap();
        let mut command = mpirun(ranks)?;
        command.arg("run").arg(&path);
        let output = run(command);
        assert!(!output.status.success(), "the job should fail");
        Some(text(&output))
    }

    #[test]
    fn mismatched_shapes_are_reported_not_hung() {
        let Some((_, stderr)) = failing(2, "(allreduce (zeros (+ 2 (mpi-rank))))\n") else {
            return;
        };
        assert!(
            stderr.contains("the ranks disagree")
                && stderr.contains("rank 0 is in allreduce 'sum with shape [2]")
                && stderr.contains("rank 1 is in allreduce 'sum with shape [3]")
                && stderr.contains("job.lisp:1:1"),
            "{stderr}"
        );
        let Some((_, stderr)) = failing(3, "(halo-exchange (zeros (list 2 (+ 2 (mpi-rank)))) 1)\n")
        else {
            return;
        };
        // Each rank names the neighbour whose slab does not fit; which
        // ranks print before the job is aborted is a race.
        let pairs = [
            "rank 1 sent a boundary slab of shape [1 3] where rank 0 expects [1 2]",
            "rank 0 sent a boundary slab of shape [1 2] where rank 1 expects [1 3]",
            "rank 2 sent a boundary slab of shape [1 4] where rank 1 expects [1 3]",
            "rank 1 sent a boundary slab of shape [1 3] where rank 2 expects [1 4]",
        ];
        assert!(pairs.iter().any(|p| stderr.contains(p)), "{stderr}");
        let Some((_, stderr)) = failing(2, "(allgather (ones (list 2 (+ 1 (mpi-rank)))))\n") else {
            return;
        };
        assert!(stderr.contains("allgather with shape [2 1]"), "{stderr}");
    }

    #[test]
    fn an_error_on_one_rank_ends_every_rank_with_its_message() {
        let source = "(println \"start\" (mpi-rank))\n(when (= (mpi-rank) 1) (error \"rank one fails\"))\n(allreduce 1.0)\n(println \"not reached\")\n";
        let Some((stdout, stderr)) = failing(2, source) else {
            return;
        };
        assert!(
            stderr.contains("rank 1: ") && stderr.contains("error: rank one fails"),
            "{stderr}"
        );
        assert!(!stdout.contains("not reached"), "{stdout}");
        // Only rank 0 prints.
        assert!(
            stdout.contains("start 0") && !stdout.contains("start 1"),
            "{stdout}"
        );
    }

    #[test]
    fn every_rank_prints_when_asked() {
        let Some(mut command) = mpirun(2) else {
            return;
        };
        command.args([
            "--all-ranks",
            "eval",
            "(println \"rank\" (mpi-rank) \"of\" (mpi-size))",
        ]);
        let output = run(command);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        assert!(
            stdout.contains("rank 0 of 2") && stdout.contains("rank 1 of 2"),
            "{stdout}"
        );
    }

    /// How many GPUs `nvidia-smi` lists (0 without it).
    #[cfg(feature = "nccl")]
    fn gpus() -> usize {
        Command::new("nvidia-smi")
            .arg("-L")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter(|l| l.starts_with("GPU "))
                    .count()
            })
            .unwrap_or(0)
    }

    #[cfg(feature = "nccl")]
    #[test]
    fn allreduce_on_two_gpus_goes_through_nccl() {
        let count = gpus();
        if count < 2 {
            eprintln!("skipped: NCCL needs two GPUs, this machine has {count}");
            return;
        }
        let Some(mut command) = mpirun(2) else {
            return;
        };
        command.args(["--backend", "cuda", "run", &script("tests/mpi/nccl.lisp")]);
        let output = run(command);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("ok nccl"), "{stdout}");
        let nccl_library = Command::new("ldconfig")
            .arg("-p")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libnccl.so"));
        if nccl_library {
            assert!(
                !stdout.contains("nccl allreduces 0"),
                "NCCL was not used:\n{stdout}"
            );
        } else {
            eprintln!("NCCL's library is not installed: the allreduces ran on the host");
        }
    }

    #[test]
    fn without_mpirun_a_build_with_the_feature_is_one_rank() {
        let output = epsilon()
            .args([
                "eval",
                "(list (mpi-rank) (mpi-size) (allreduce 2.0) (halo-exchange [1 2] 1 :periodic #t))",
            ])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        assert_eq!(stdout.trim(), "(0 1 2.0 [2.0 1.0 2.0 1.0])");
    }
}
