//! Settings are read once at init, and a mistyped `RGEX_` variable is
//! reported: one warning for the job, naming the closest variable rgex
//! reads; a job started normally (the launcher's own `RGEX_` variables
//! set) warns about nothing (see `rgex_core::config`).

mod common;
use common::job;

const JOB_INFO: &str = env!("CARGO_BIN_EXE_job_info");

/// The warning lines of a job's stderr (each after the launcher's
/// `[rank] ` prefix).
fn warnings(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.contains("rgex: warning: "))
        .collect()
}

#[test]
fn a_mistyped_variable_gets_one_warning_naming_the_closest() {
    let j = job(2, JOB_INFO, &[]).env("RGEX_SEGMNET_SIZE", "1G");
    let (outcome, out, err) = common::run(&j);
    assert_eq!(outcome.status, 0, "job failed: {:?}", outcome.failure);
    common::check_counts(&out, (3, 0));
    assert_eq!(
        warnings(&err),
        [
            "[0] rgex: warning: RGEX_SEGMNET_SIZE=\"1G\" is not a variable rgex reads, so it is \
             ignored: did you mean RGEX_SEGMENT_SIZE? (rgex-info lists every one)"
        ],
        "stderr: {err}"
    );
}

#[test]
fn a_normal_job_warns_about_nothing() {
    // The launcher sets RGEX_RANK, RGEX_SIZE, RGEX_BOOTSTRAP and RGEX_JOB
    // (and the matrix its own RGEX_ settings): all are known.
    let j = job(2, JOB_INFO, &[]);
    let (outcome, out, err) = common::run(&j);
    assert_eq!(outcome.status, 0, "job failed: {:?}", outcome.failure);
    common::check_counts(&out, (3, 0));
    assert_eq!(warnings(&err), Vec::<&str>::new(), "stderr: {err}");
}

#[test]
fn a_bad_value_fails_init_naming_the_variable() {
    // Read once at init: the job fails there, before any domain or VIS
    // context is made.
    let j = job(1, JOB_INFO, &[]).env("RGEX_VIS", "fast");
    let (outcome, _out, err) = common::run(&j);
    assert_ne!(outcome.status, 0);
    // main returns the error, printed with Debug: its quotes escaped.
    assert!(
        err.contains(
            r#"RGEX_VIS=\"fast\": expected \"auto\", \"direct\", \"rma\", \"am\" or \"native\""#
        ),
        "stderr: {err}"
    );
}
