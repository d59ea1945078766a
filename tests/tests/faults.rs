//! Faults and exit: a rank killed mid-job, a rank exiting early. The
//! launcher must end the job with the right status, name the rank, leave
//! nothing in /dev/shm, and no rank may hang (the launcher's timeout would
//! turn a hang into status 124 and fail the test).

mod common;
use common::{job, report_skip, run};

const FAULTS: &str = env!("CARGO_BIN_EXE_job_faults");

/// Run `job` alone (this file's tests run on parallel threads) and return
/// what it left in /dev/shm besides its outcome: the entries that
/// appeared while it ran and are still there once the launcher is done.
fn run_alone(j: &rgex::launch::Job) -> (rgex::launch::JobOutcome, String, String, Vec<String>) {
    static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let shm = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = shm();
    let (outcome, out, err) = run(j);
    let left = shm().into_iter().filter(|e| !before.contains(e)).collect();
    (outcome, out, err, left)
}

#[test]
fn a_killed_rank_ends_the_job_and_is_named() {
    let (outcome, _out, err, left) = run_alone(&job(4, FAULTS, &["die"]));
    assert!(left.is_empty(), "/dev/shm after the job: {left:?}");
    assert_eq!(outcome.status, 128 + 9, "status {}", outcome.status);
    let failure = outcome.failure.expect("a failure message");
    assert!(
        failure.contains("rank 3") && failure.contains("signal 9"),
        "{failure}"
    );
    assert!(err.contains("rank 3") && err.contains("SIGKILL"), "{err}");
    assert!(
        !err.contains("removed shared memory left behind"),
        "the conduit left shared memory behind"
    );
}

/// Run `fault` (a job_faults mode in which the last of 3 ranks dies by
/// `signal`, named `name`) and require the job to report that signal:
/// status 128 + signal, and a failure naming the rank and the signal.
/// A library that catches the signal and exits 1 instead (PSM's backtrace
/// handler, loaded with libfabric) fails this.
fn killed_by(fault: &str, signal: i32, name: &str) {
    let (outcome, _out, err, left) = run_alone(&job(3, FAULTS, &[fault]));
    assert!(left.is_empty(), "/dev/shm after the job: {left:?}");
    assert_eq!(
        outcome.status,
        128 + signal,
        "{fault}: status {}",
        outcome.status
    );
    let failure = outcome.failure.expect("a failure message");
    assert!(
        failure.contains("rank 2")
            && failure.contains(&format!("killed by signal {signal} ({name})")),
        "{fault}: {failure}"
    );
    assert!(
        err.contains(&failure),
        "{fault}: the launcher's message: {err}"
    );
    assert!(
        !err.contains("removed shared memory left behind"),
        "the conduit left shared memory behind"
    );
}

#[test]
fn an_aborting_rank_is_reported_as_sigabrt() {
    killed_by("abort", 6, "SIGABRT");
}

#[test]
fn a_segfaulting_rank_is_reported_as_sigsegv() {
    killed_by("segv", 11, "SIGSEGV");
}

#[test]
fn an_abort_from_a_helper_thread_is_reported_as_sigabrt() {
    killed_by("thread-abort", 6, "SIGABRT");
}

#[test]
fn an_abort_before_init_is_reported_as_sigabrt() {
    killed_by("abort-before-init", 6, "SIGABRT");
}

#[test]
fn a_rank_exiting_3_makes_the_job_exit_3() {
    let (outcome, _out, err, left) = run_alone(&job(2, FAULTS, &["exit3"]));
    assert!(left.is_empty(), "/dev/shm after the job: {left:?}");
    assert_eq!(outcome.status, 3);
    assert!(err.contains("rank 1") && err.contains("status 3"), "{err}");
    assert!(!err.contains("removed shared memory left behind"));
}

#[test]
fn bad_conduit_setting_is_a_clear_error() {
    // An smp setting: the smp conduit (and ofi, whose bypass is smp) check it.
    // Alone, as every job here: its shared memory would otherwise show
    // in another test's count of what its job left behind.
    let (outcome, _out, err, _) = run_alone(
        &job(2, FAULTS, &["die"])
            .conduit(Some("smp".into()))
            .env("RGEX_SMP_QUEUE_DEPTH", "3"),
    );
    assert_ne!(outcome.status, 0);
    assert!(
        err.contains("RGEX_SMP_QUEUE_DEPTH=3 must be a power of two"),
        "{err}"
    );
}

#[test]
fn ibv_without_an_rdma_device_or_with_a_bad_setting_is_a_clear_error() {
    // A bad ibv setting names the variable, the value and the limit.
    let (outcome, _out, err, _) = run_alone(
        &job(2, FAULTS, &["die"])
            .conduit(Some("ibv".into()))
            .env("RGEX_IBV_DEVICE", "soft")
            .env("RGEX_IBV_RETRY_COUNT", "9"),
    );
    assert_ne!(outcome.status, 0);
    assert!(
        err.contains("RGEX_IBV_RETRY_COUNT=9 must be in 0..=7"),
        "{err}"
    );
    // Without RGEX_IBV_DEVICE=soft the conduit takes libibverbs, which
    // finds no device here: it says so, and how to get the software one.
    if std::path::Path::new("/sys/class/infiniband").exists() {
        report_skip("no-device error: this machine has an RDMA device");
        return;
    }
    let (outcome, _out, err, _) = run_alone(
        &job(2, FAULTS, &["die"])
            .conduit(Some("ibv".into()))
            .env("RGEX_IBV_DEVICE", ""),
    );
    assert_ne!(outcome.status, 0);
    assert!(
        err.contains("no RDMA device") && err.contains("set RGEX_IBV_DEVICE=soft"),
        "{err}"
    );
}

#[test]
fn smp_with_ranks_on_two_hosts_is_a_clear_error() {
    // Each rank claims another host (RGEX_HOST), so they share no memory:
    // the smp conduit must refuse, naming a rank, not hang or crash.
    let script = format!("RGEX_HOST=node$RGEX_RANK exec {FAULTS} exit3");
    let (outcome, _out, err, _) =
        run_alone(&job(2, "sh", &["-c", &script]).conduit(Some("smp".into())));
    assert_ne!(outcome.status, 0);
    assert!(
        err.contains("needs every rank on one node") && err.contains("on another host"),
        "{err}"
    );
    assert!(!err.contains("removed shared memory left behind"), "{err}");
}

/// Run a job_faults mode of 2 ranks in which rank 1 leaves first and
/// rank 0, finding it gone mid-flood, exits 9: the job's status must be
/// rank 1's, `status`, with the failure naming rank 1. Several times:
/// which of the two ends first is a race, and the blame must not depend
/// on it (a launcher that blames by exit order fails one run or more).
fn survivor_not_blamed(fault: &str, status: i32) {
    for run in 0..4 {
        let (outcome, _out, err, left) = run_alone(&job(2, FAULTS, &[fault]));
        assert!(left.is_empty(), "/dev/shm after the job: {left:?}");
        let failure = outcome.failure.clone().unwrap_or_default();
        assert_eq!(
            outcome.status, status,
            "{fault}, run {run}: status {} ({failure}): the launcher blamed the survivor",
            outcome.status
        );
        assert!(
            failure.contains("rank 1") && failure.contains(&format!("status {status}")),
            "{fault}, run {run}: {failure}"
        );
        assert!(!err.contains("removed shared memory left behind"), "{err}");
    }
}

#[test]
fn a_rank_that_drops_its_client_then_exits_3_is_blamed_not_its_survivor() {
    survivor_not_blamed("drop_then_exit3", 3);
}

#[test]
fn a_rank_whose_handler_panics_mid_flood_is_blamed_with_status_101() {
    survivor_not_blamed("panic_handler", 101);
}
