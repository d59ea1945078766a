//! The PMIx bootstrap: conformance programs started by `mpirun` (Open MPI's
//! launcher runs a PMIx server; rgex finds it through the environment, as
//! under `srun --mpi=pmix` or `prterun`). Loopback only: mpirun's own
//! out-of-band traffic is pinned to `lo`. Skipped, saying so, where mpirun
//! is not installed (Debian: openmpi-bin; ci/deps.sh installs it).

mod common;
use common::{check_counts, conduit, counts, skip_unless};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const JOB_INFO: &str = env!("CARGO_BIN_EXE_job_info");
const AM: &str = env!("CARGO_BIN_EXE_am_conformance");
const RMA: &str = env!("CARGO_BIN_EXE_rma_conformance");
const COLL: &str = env!("CARGO_BIN_EXE_coll_conformance");
const ATOMICS: &str = env!("CARGO_BIN_EXE_atomics_conformance");
const FLOOD: &str = env!("CARGO_BIN_EXE_am_flood");
const LIBS: &str = env!("CARGO_BIN_EXE_job_libraries");

fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn skipped() -> bool {
    skip_unless(
        have_mpirun(),
        "mpirun (Debian openmpi-bin) is not installed, so no PMIx launcher to start the job",
    )
}

/// Run `exe args` on `n` ranks under mpirun, bounded by 180 s; returns
/// (success, stdout, stderr).
fn mpirun(n: u32, exe: &str, args: &[&str]) -> (bool, String, String) {
    mpirun_env(n, exe, args, &[])
}

/// [`mpirun`] with `env` set for every rank.
fn mpirun_env(n: u32, exe: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--bind-to", "none", "-n"])
        .arg(n.to_string());
    for (k, v) in env {
        cmd.env(k, v).args(["-x", k]);
    }
    // Forward the conduit matrix's settings to every rank.
    for (k, _) in std::env::vars() {
        if k.starts_with("RGEX_") || k.starts_with("FI_") {
            cmd.args(["-x", &k]);
        }
    }
    cmd.arg(exe)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Network rule: the launcher's own traffic stays on loopback.
        .env("OMPI_MCA_oob_tcp_if_include", "lo")
        .env("OMPI_MCA_btl_tcp_if_include", "lo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mpirun starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default());
    let e = std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for mpirun") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (o.join().unwrap(), e.join().unwrap());
    println!("status {status:?}\n--- stdout\n{out}--- stderr\n{err}---");
    (status.is_some_and(|s| s.success()), out, err)
}

/// Run `exe` on `n` ranks and require success with exactly `checks`
/// (passed, skipped) and nothing of the job left in /dev/shm. One job at a time (the tests of
/// this file run on parallel threads), so whatever appeared in /dev/shm
/// while it ran is this job's.
fn run_ok(n: u32, exe: &str, args: &[&str], checks: (usize, usize)) -> String {
    static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let before = shm_entries();
    let (ok, out, _) = mpirun(n, exe, args);
    assert!(ok, "the job failed (output above)");
    check_counts(&out, checks);
    let left: Vec<String> = shm_entries()
        .into_iter()
        .filter(|e| e.contains("rgex-pmix") && !before.contains(e))
        .collect();
    assert!(left.is_empty(), "shared memory left behind: {left:?}");
    out
}

fn shm_entries() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn job_of_two_and_four_ranks() {
    if skipped() {
        return;
    }
    for n in [2, 4] {
        let out = run_ok(n, JOB_INFO, &[], (n as usize + 1, 0));
        assert!(
            out.contains(&format!("ok: {n} ranks via pmix")),
            "the ranks must find each other through PMIx"
        );
        for r in 0..n {
            assert!(out.contains(&format!("ok: rank {r} of {n}")));
        }
    }
}

#[test]
fn active_messages_on_two_ranks() {
    if skipped() {
        return;
    }
    // mpirun names no rgex job: no leftovers by job id to look for.
    let out = run_ok(2, AM, &[], counts::am(2, false));
    assert!(out.contains(&format!("conduit: {}", conduit())));
}

#[test]
fn rma_on_two_ranks() {
    if skipped() {
        return;
    }
    run_ok(2, RMA, &[], counts::rma(2, false));
}

#[test]
fn collectives_and_atomics_on_four_ranks() {
    if skipped() {
        return;
    }
    run_ok(4, COLL, &[], counts::coll(4));
    // Every check of the program, with the counter races of
    // three_ranks_odd_split (2 threads x 300 ops per rank): what PMIx
    // changes is how the job starts, and the atomics suite races 4
    // threads x 2000 on each conduit under rgex-run (over tcp the default
    // 4 x 2000 here made this test 16 s instead of 10).
    run_ok(4, ATOMICS, &["2", "300"], counts::atomics(4));
}

#[test]
fn flood_on_four_ranks() {
    if skipped() {
        return;
    }
    run_ok(4, FLOOD, &["100000"], (1, 0));
}

#[test]
fn a_pmix_job_loads_libpmix_at_run_time() {
    if skipped() {
        return;
    }
    let out = run_ok(2, LIBS, &[], (0, 0));
    for r in 0..2 {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("rank {r}: mapped: ")))
            .unwrap_or_else(|| panic!("no line from rank {r}: {out}"));
        assert!(line.contains("libpmix"), "{line}");
    }
}

#[test]
fn a_pmix_job_without_libpmix_names_the_library_and_the_packages() {
    if skipped() {
        return;
    }
    let (ok, _out, err) = mpirun_env(
        1,
        LIBS,
        &[],
        &[("RGEX_PMIX_LIBRARY", "/nonexistent/libpmix.so.2")],
    );
    assert!(!ok, "the job must fail without libpmix");
    for needle in [
        "PMIx bootstrap (this process was started by a PMIx launcher",
        "cannot load libpmix (/nonexistent/libpmix.so.2)",
        "at the path /nonexistent/libpmix.so.2 (RGEX_PMIX_LIBRARY names it)",
        "Debian/Ubuntu package libpmix2",
        "RHEL/Fedora/SUSE package pmix",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
}
