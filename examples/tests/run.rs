//! The examples run as real jobs through the launcher (on the conduit
//! `RGEX_CONDUIT` names; smp by default), each checking its own results.

use rgex::launch::Job;
use std::time::Duration;

/// Run `exe` on `n` ranks with `args`; require success and return rank
/// 0's output.
fn run(n: u32, exe: &str, args: &[&str]) -> String {
    let (outcome, out, err) = Job::new(n, exe)
        .args(args.iter().copied())
        .timeout(Some(Duration::from_secs(240)))
        .run_captured()
        .expect("the launcher starts the job");
    println!(
        "status {}\n--- stdout\n{out}--- stderr\n{err}---",
        outcome.status
    );
    assert_eq!(outcome.status, 0, "the job failed: {:?}", outcome.failure);
    out
}

#[test]
fn pingpong_on_two_ranks() {
    let out = run(2, env!("CARGO_BIN_EXE_pingpong"), &["2000"]);
    assert!(
        out.contains("rank 0 -> rank 1: AM Short round trip")
            && out.contains("(2000 iterations each)"),
        "rank 0 reports its round trips: {out}"
    );
}

#[test]
fn counter_on_four_ranks_is_exact() {
    let out = run(4, env!("CARGO_BIN_EXE_counter"), &["5000"]);
    assert!(out.contains("counter = 20000 after 5000 fetch-and-adds from each of 4 ranks: exact"));
}

#[test]
fn dht_on_one_two_and_four_ranks() {
    for n in [1u32, 2, 4] {
        let out = run(n, env!("CARGO_BIN_EXE_dht"), &["3000"]);
        let total = 3000 * n;
        assert!(
            out.contains(&format!(
                "dht: {total} keys on {n} ranks (3000 inserted by each), every lookup exact"
            )),
            "{out}"
        );
    }
}

#[test]
fn dht_with_rate_still_checks_and_reports_both_rates() {
    let out = run(2, env!("CARGO_BIN_EXE_dht"), &["2000", "rate"]);
    assert!(
        out.contains("dht: 4000 keys on 2 ranks (2000 inserted by each), every lookup exact"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.ends_with("lookups/s (all ranks)"))
        .unwrap_or_else(|| panic!("no rate line: {out}"));
    let rates: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        rates.len() == 2 && rates.iter().all(|r| r.is_finite() && *r > 0.0),
        "two positive rates: {line}"
    );
}

#[test]
fn halo_on_one_two_and_three_ranks_matches_the_whole_grid() {
    for n in [1u32, 2, 3] {
        let out = run(n, env!("CARGO_BIN_EXE_halo"), &["24", "8", "12"]);
        assert!(
            out.contains(&format!(
                "halo: {n} ranks, 24 x {} grid, 12 Jacobi steps",
                8 * n
            )) && out.contains("every block matches the whole-grid reference bit for bit"),
            "{out}"
        );
    }
}

#[test]
fn async_dht_on_one_two_and_three_ranks() {
    for n in [1u32, 2, 3] {
        let out = run(n, env!("CARGO_BIN_EXE_async_dht"), &["2000"]);
        let total = 2000 * n;
        assert!(
            out.contains(&format!(
                "async_dht: {total} keys on {n} ranks (2000 inserted by each, one task a key), every lookup exact"
            )),
            "{out}"
        );
    }
}
