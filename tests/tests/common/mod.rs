//! Launching conformance programs from cargo tests.

pub mod counts;

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

/// Run `job` and require success, with exactly `oks` passed checks and
/// `skips` skipped ones reported (the counts of [`counts`]) (see [`rgex_tests::Checks`]): a check
/// that went missing, one that ran where it should have been skipped, or
/// one skipped where it should have run fails the test. Under the conduit
/// matrix the job must name the conduit asked for. The skips are shown
/// (see [`report_skip`]).
#[allow(dead_code)] // not every test file uses it
pub fn run_ok(job: &Job, (oks, skips): (usize, usize)) -> String {
    let (outcome, out, err) = run(job);
    assert_eq!(outcome.status, 0, "job failed: {:?}", outcome.failure);
    assert!(
        !err.contains("removed shared memory left behind"),
        "the conduit left shared memory behind"
    );
    check_counts(&out, (oks, skips));
    out
}

/// Require `out` to report exactly `oks` passed and `skips` skipped
/// checks, and (under the conduit matrix) to name only the conduit asked
/// for; show its skips. Returns them.
#[allow(dead_code)] // not every test file uses it
pub fn check_counts(out: &str, (oks, skips): (usize, usize)) -> rgex_tests::Checks {
    let checks = rgex_tests::Checks::parse(out);
    if let Some(c) = std::env::var("RGEX_CONDUIT").ok().filter(|c| !c.is_empty()) {
        // Under the conduit matrix every conformance program must say it ran
        // on the conduit asked for (those that print a banner at all).
        assert!(
            checks.conduits.iter().all(|named| *named == c),
            "RGEX_CONDUIT={c} but the job reports {:?}",
            checks.conduits
        );
    }
    for s in &checks.skips {
        report_skip(s);
    }
    assert_eq!(
        (checks.oks.len(), checks.skips.len()),
        (oks, skips),
        "expected {oks} passed and {skips} skipped checks; passed: {:#?}, skipped: {:#?}",
        checks.oks,
        checks.skips
    );
    checks
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

/// True if node-local peers' segments are mapped (smp, or a network
/// conduit, ofi or ibv, with its shared-memory bypass on): what the direct VIS mechanism and the
/// shared-memory atomics need.
#[allow(dead_code)] // not every test file uses it
pub fn shares_memory() -> bool {
    match conduit().as_str() {
        "smp" => true,
        "ofi" | "ibv" => std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0"),
        _ => false,
    }
}

/// Print why a test does nothing on this conduit (see [`report_skip`])
/// and return true, when `applies` is false.
#[allow(dead_code)] // not every test file uses it
pub fn skip_unless(applies: bool, why: &str) -> bool {
    if !applies {
        report_skip(&format!("the whole test: {why}"));
    }
    !applies
}

/// Show a skip (`what: why`), naming the conduit and the test: in the
/// test's captured output (shown when it fails or with --nocapture),
/// straight on stderr (libtest captures only the print macros, so the
/// line shows in `cargo test`'s output even when the test passes), and
/// appended to the file `RGEX_SKIP_LOG` names, which the conduit matrix
/// (ci/conduits.sh) counts and prints.
#[allow(dead_code)] // not every test file uses it
pub fn report_skip(skip: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let file = module_path!().split("::").next().unwrap_or("tests");
    rgex_tests::report_skip_line(&format!(
        "skip on RGEX_CONDUIT={}: {file}::{test}: {skip}",
        conduit()
    ));
}
