//! Launching conformance programs from cargo tests.

use rgex::launch::{Job, JobOutcome};
use std::time::Duration;

/// A job of `n` ranks of the conformance program at `exe`, bounded by a
/// generous launcher timeout so a hang fails the test instead of the CI.
#[allow(dead_code)] // not every test file uses it
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

/// The conduit these tests run on (`RGEX_CONDUIT`, smp when unset): the
/// conduit matrix (ci/conduits.sh) runs the same tests on each.
#[allow(dead_code)] // not every test file uses it
pub fn conduit() -> String {
    std::env::var("RGEX_CONDUIT")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "smp".into())
}

/// True if node-local peers' segments are mapped (smp, or ofi with its
/// shared-memory bypass on): what the direct VIS mechanism and the
/// shared-memory atomics need.
#[allow(dead_code)] // not every test file uses it
pub fn shares_memory() -> bool {
    match conduit().as_str() {
        "smp" => true,
        "ofi" => std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0"),
        _ => false,
    }
}

/// Print why a test does nothing on this conduit (shown with --nocapture
/// and in the matrix log) and return true, when `applies` is false.
#[allow(dead_code)] // not every test file uses it
pub fn skip_unless(applies: bool, why: &str) -> bool {
    if !applies {
        let line = format!("skipped on RGEX_CONDUIT={}: {why}", conduit());
        println!("{line}");
        // cargo hides a passing test's output: the matrix collects skips
        // in a file of its own and prints them.
        if let Some(path) = std::env::var_os("RGEX_SKIP_LOG") {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{line}");
            }
        }
    }
    !applies
}
