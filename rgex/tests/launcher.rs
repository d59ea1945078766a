//! The `rgex-run` launcher and its library, `rgex::launch`: output
//! forwarding, failure propagation, cleanup, the command line, and the
//! bootstrap server. Ranks are `/bin/sh` scripts; every job that sleeps
//! runs under the launcher's own `--timeout`, so no test can hang.

use rgex::launch::{BootstrapServer, Job};
use rgex_core::bootstrap::{Bootstrap, UnixBootstrap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RGEX_RUN: &str = env!("CARGO_BIN_EXE_rgex-run");

fn rgex_run(args: &[&str]) -> Output {
    rgex_run_env(args, &[])
}

fn rgex_run_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(RGEX_RUN);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run rgex-run")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `(stdout, stderr)`, printed so a failing assertion shows them.
fn streams(out: &Output) -> (String, String) {
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    println!(
        "status: {:?}\n--- stdout\n{o}--- stderr\n{e}---",
        out.status
    );
    (o, e)
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("rgex-launcher-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Wait (bounded) until `pid` no longer exists.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        match stat {
            Err(_) => return true,
            // A zombie waiting for its reaper is dead too.
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn every_rank_line_is_prefixed() {
    let out = rgex_run(&[
        "-n",
        "4",
        "--timeout",
        "20",
        "sh",
        "-c",
        "echo hello from $RGEX_RANK of $RGEX_SIZE; echo oops $RGEX_RANK >&2",
    ]);
    let (stdout, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(0));
    for r in 0..4 {
        assert!(stdout.contains(&format!("[{r}] hello from {r} of 4\n")));
        assert!(stderr.contains(&format!("[{r}] oops {r}\n")));
    }
    assert_eq!(stdout.lines().count(), 4);
}

#[test]
fn ranks_get_their_environment() {
    let script = r#"
        case "$RGEX_JOB" in *[!0-9a-z]*|"") echo "bad job id $RGEX_JOB"; exit 1;; esac
        test -S "$RGEX_BOOTSTRAP" || { echo "no socket at $RGEX_BOOTSTRAP"; exit 1; }
        echo "conduit=$RGEX_CONDUIT job=$RGEX_JOB boot=$RGEX_BOOTSTRAP"
    "#;
    let out = rgex_run(&["-n", "2", "--conduit", "smp", "sh", "-c", script]);
    let (stdout, _) = streams(&out);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    let tail = |l: &str| l.split_once("] ").unwrap().1.to_string();
    assert_eq!(
        tail(lines[0]),
        tail(lines[1]),
        "one job id and socket for all ranks"
    );
    assert!(lines[0].contains("conduit=smp"));
    // The socket's private directory is gone after the job.
    let boot = tail(lines[0]).rsplit_once("boot=").unwrap().1.to_string();
    assert!(
        !Path::new(&boot).parent().unwrap().exists(),
        "{boot} left behind"
    );
}

#[test]
fn first_failure_ends_the_job() {
    let out = rgex_run(&[
        "-n",
        "4",
        "--timeout",
        "20",
        "sh",
        "-c",
        r#"if [ "$RGEX_RANK" = 2 ]; then exit 3; fi; sleep 30"#,
    ]);
    let (_, stderr) = streams(&out);
    // Not 124: the failure ended the job well before the timeout.
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr.contains("rgex-run: rank 2 (pid "), "{stderr}");
    assert!(stderr.contains("exited with status 3; ending the job"));
}

#[test]
fn a_killed_rank_kills_the_job() {
    let ready = scratch("killed");
    let script = r#"
        if [ "$RGEX_RANK" = 1 ]; then
            i=0
            while [ "$(ls "$READY_DIR" | wc -l)" -lt 3 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
            kill -9 $$
        fi
        sleep 30 &
        echo "child $!"
        touch "$READY_DIR/$RGEX_RANK"
        wait
    "#;
    let out = rgex_run_env(
        &["-n", "4", "--timeout", "20", "sh", "-c", script],
        &[("READY_DIR", &ready)],
    );
    let (stdout, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(137));
    assert!(
        stderr.contains("rank 1 (pid ") && stderr.contains("was killed by signal 9 (SIGKILL)"),
        "{stderr}"
    );
    // The other ranks' background sleeps died with them.
    let children: Vec<u32> = stdout
        .lines()
        .filter_map(|l| l.split_once("] child ")?.1.trim().parse().ok())
        .collect();
    assert_eq!(children.len(), 3, "{stdout}");
    for pid in children {
        assert!(gone(pid), "sleep {pid} survived the job");
    }
    let _ = std::fs::remove_dir_all(&ready);
}

#[test]
fn one_rank() {
    let out = rgex_run(&["-n1", "sh", "-c", "echo solo $RGEX_RANK $RGEX_SIZE"]);
    let (stdout, _) = streams(&out);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout, "[0] solo 0 1\n");

    let out = rgex_run(&["--np", "1", "sh", "-c", "exit 5"]);
    let (_, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(5));
    assert!(stderr.contains("rank 0 (pid "), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["-n", "0", "sh", "-c", "true"][..],
        &["-n", "2"][..],
        &["sh", "-c", "true"][..],
        &["-n", "2", "--no-such-option", "sh"][..],
        &[][..],
    ] {
        let out = rgex_run(args);
        let (_, stderr) = streams(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr.contains("usage: rgex-run"), "{args:?}: {stderr}");
    }
    let out = rgex_run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("usage: rgex-run"));
}

#[test]
fn arguments_after_the_program_pass_through() {
    let out = rgex_run(&[
        "-n",
        "1",
        "sh",
        "-c",
        "printf '<%s>' \"$@\"",
        "sh",
        "-n",
        "5",
        "--help",
    ]);
    let (stdout, _) = streams(&out);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout, "[0] <-n><5><--help>\n");
}

#[test]
fn missing_program_is_reported() {
    let out = rgex_run(&["-n", "2", "/no/such/program"]);
    let (_, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr.contains("/no/such/program"), "{stderr}");
}

#[test]
fn leftover_shared_memory_is_removed() {
    let out = rgex_run(&[
        "-n",
        "2",
        "sh",
        "-c",
        r#"touch /dev/shm/rgex-$RGEX_JOB-x; echo "job $RGEX_JOB"; exit 1"#,
    ]);
    let (stdout, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(1));
    let job = stdout
        .lines()
        .find_map(|l| l.split_once("] job ").map(|(_, j)| j.to_string()))
        .expect("a rank printed the job id");
    let leftover = format!("/dev/shm/rgex-{job}-x");
    assert!(!Path::new(&leftover).exists(), "{leftover} is still there");
    assert!(stderr.contains("removed shared memory"), "{stderr}");
    assert!(stderr.contains(&leftover), "{stderr}");
}

#[test]
fn the_launcher_times_out() {
    let out = rgex_run(&["-n", "2", "--timeout", "0.3", "sh", "-c", "sleep 30"]);
    let (_, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(124));
    assert!(stderr.contains("ranks 0, 1 still running"), "{stderr}");
}

#[test]
fn library_run_captured() {
    let (outcome, stdout, stderr) = Job::new(3, "/bin/sh")
        .args(["-c", "printf 'a%s\\nno newline' $RGEX_RANK; echo e$X >&2"])
        .env("X", "yz")
        .timeout(Some(Duration::from_secs(20)))
        .run_captured()
        .unwrap();
    assert!(outcome.success(), "{outcome:?}");
    for r in 0..3 {
        assert!(stdout.contains(&format!("[{r}] a{r}\n")), "{stdout}");
        assert!(stdout.contains(&format!("[{r}] no newline\n")), "{stdout}");
        assert!(stderr.contains(&format!("[{r}] eyz\n")), "{stderr}");
    }

    let (outcome, _, stderr) = Job::new(2, "/bin/sh")
        .args(["-c", "sleep 30"])
        .timeout(Some(Duration::from_millis(200)))
        .run_captured()
        .unwrap();
    assert_eq!(outcome.status, 124);
    assert!(outcome.failure.unwrap().contains("ranks 0, 1"));
    assert!(stderr.contains("timed out"));

    assert!(Job::new(0, "true").run_captured().is_err());
}

#[test]
fn lines_never_interleave() {
    let script = r#"
        line="$RGEX_RANK-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
        i=0
        while [ $i -lt 300 ]; do echo "$line"; i=$((i+1)); done
    "#;
    let (outcome, stdout, _) = Job::new(4, "/bin/sh")
        .args(["-c", script])
        .timeout(Some(Duration::from_secs(20)))
        .run_captured()
        .unwrap();
    assert!(outcome.success());
    assert_eq!(stdout.lines().count(), 1200);
    for line in stdout.lines() {
        let (prefix, rest) = line.split_once(' ').unwrap();
        let rank = prefix.trim_start_matches('[').trim_end_matches(']');
        assert_eq!(
            rest,
            format!(
                "{rank}-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
            )
        );
    }
}

/// Run `f(rank, bootstrap)` on `n` threads connected to `path`; results in
/// rank order, each within 20 s (a hang fails the test instead).
fn on_threads<T: Send + 'static>(
    path: &Path,
    n: u32,
    f: impl Fn(u32, UnixBootstrap) -> T + Send + Sync + Clone + 'static,
) -> Vec<T> {
    let (tx, rx) = mpsc::channel();
    for rank in 0..n {
        let (tx, f, path) = (tx.clone(), f.clone(), path.to_path_buf());
        std::thread::spawn(move || {
            let boot = UnixBootstrap::connect(&path, rank, n).expect("connect");
            let _ = tx.send((rank, f(rank, boot)));
        });
    }
    let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let (rank, value) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a bootstrap client hung");
        results[rank as usize] = Some(value);
    }
    results.into_iter().map(Option::unwrap).collect()
}

#[test]
fn bootstrap_collectives() {
    let (path, server) = BootstrapServer::start(4).unwrap();
    let results = on_threads(&path, 4, |rank, boot| {
        let all = boot.allgather(format!("r{rank}").as_bytes()).unwrap();
        boot.barrier().unwrap();
        let b = boot.broadcast(2, b"from two").unwrap();
        // Contributions of different lengths, including empty ones.
        let mixed = boot.allgather(&vec![rank as u8; rank as usize]).unwrap();
        (all, b, mixed)
    });
    for (all, b, mixed) in results {
        assert_eq!(
            all,
            vec![
                b"r0".to_vec(),
                b"r1".to_vec(),
                b"r2".to_vec(),
                b"r3".to_vec()
            ]
        );
        assert_eq!(b, b"from two");
        assert_eq!(mixed, vec![vec![], vec![1], vec![2, 2], vec![3, 3, 3]]);
    }
    let dir = path.parent().unwrap().to_path_buf();
    server.close();
    assert!(!dir.exists(), "the socket directory is removed at close");
}

#[test]
fn bootstrap_rank_leaving_fails_the_others() {
    let (path, server) = BootstrapServer::start(3).unwrap();
    let results = on_threads(&path, 3, |rank, boot| {
        boot.barrier().unwrap();
        if rank == 2 {
            drop(boot);
            return None;
        }
        Some(boot.allgather(b"x").unwrap_err().to_string())
    });
    for msg in results.into_iter().flatten() {
        assert!(
            msg.contains("rank 2 left the job before collective #2"),
            "{msg}"
        );
    }
    server.close();
}

#[test]
fn bootstrap_rank_that_never_connects() {
    let (path, server) = BootstrapServer::start(3).unwrap();
    let results = on_threads(&path, 2, move |_, boot| {
        boot.barrier().unwrap_err().to_string()
    });
    // Connected as ranks 0 and 1 of 2: the server rejects the wrong size.
    for msg in results {
        assert!(msg.contains("the launcher started 3"), "{msg}");
    }
    // Ranks 0 and 1 of 3 wait; rank 2's process exits without connecting.
    let (tx, rx) = mpsc::channel();
    for rank in 0..2 {
        let (tx, path) = (tx.clone(), path.clone());
        std::thread::spawn(move || {
            let boot = UnixBootstrap::connect(&path, rank, 3).unwrap();
            let _ = tx.send(boot.barrier().unwrap_err().to_string());
        });
    }
    std::thread::sleep(Duration::from_millis(100));
    server.rank_exited(2);
    for _ in 0..2 {
        let msg = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a rank hung");
        assert!(msg.contains("rank 2 left the job"), "{msg}");
    }
    server.close();
}

#[test]
fn bootstrap_rejects_a_duplicate_rank() {
    let (path, server) = BootstrapServer::start(2).unwrap();
    // Once a barrier completed, both hellos have been taken.
    let boots = on_threads(&path, 2, |_, boot| {
        boot.barrier().unwrap();
        boot
    });
    let again = UnixBootstrap::connect(&path, 0, 2).unwrap();
    let msg = again.barrier().unwrap_err().to_string();
    assert!(
        msg.contains("rank 0 connected to the launcher twice"),
        "{msg}"
    );
    drop(boots);
    server.close();
}
