//! Launching conformance programs from cargo tests.

use rgex::launch::{Job, JobOutcome};
use std::time::Duration;

/// A job of `n` ranks of the conformance program at `exe`, bounded by a
/// generous launcher timeout so a hang fails the test instead of the CI.
pub fn job(n: u32, exe: &str, args: &[&str]) -> Job {
    Job::new(n, exe)
        .args(args.iter().copied())
        .timeout(Some(Duration::from_secs(240)))
}

/// Run `job`, print its output (shown when a test fails), return it.
pub fn run(job: &Job) -> (JobOutcome, String, String) {
    let (outcome, out, err) = job
        .run_captured()
        .expect("the launcher could start the job");
    println!(
        "status {} failure {:?}\n--- stdout\n{out}--- stderr\n{err}---",
        outcome.status, outcome.failure
    );
    (outcome, out, err)
}

/// Run `job` and require success, with at least `expect_oks` `ok:` lines.
#[allow(dead_code)] // not every test file uses it
pub fn run_ok(job: &Job, expect_oks: usize) -> String {
    let (outcome, out, err) = run(job);
    assert_eq!(outcome.status, 0, "job failed: {:?}", outcome.failure);
    assert!(
        !err.contains("removed shared memory left behind"),
        "the conduit left shared memory behind"
    );
    if let Some(c) = std::env::var("RGEX_CONDUIT").ok().filter(|c| !c.is_empty()) {
        // Under the conduit matrix every conformance program must say it ran
        // on the conduit asked for (those that print a banner at all).
        let banners: Vec<&str> = out.lines().filter(|l| l.contains("ok: conduit ")).collect();
        assert!(
            banners
                .iter()
                .all(|l| l.ends_with(&format!("ok: conduit {c}"))),
            "RGEX_CONDUIT={c} but the job reports {banners:?}"
        );
    }
    let oks = out.lines().filter(|l| l.contains("ok: ")).count();
    assert!(
        oks >= expect_oks,
        "expected {expect_oks} ok lines, saw {oks}"
    );
    out
}
