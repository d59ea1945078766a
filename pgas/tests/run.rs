//! rgex-pgas's examples and checks as real jobs through the launcher (on
//! the conduit `RGEX_CONDUIT` names; smp by default). Each program checks
//! its own results exactly; these tests require success and the lines
//! that say so.

use rgex::launch::Job;
use std::path::PathBuf;
use std::time::Duration;

/// An example's executable (cargo builds the examples for the tests,
/// next to the test binaries' `deps` folder).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let p = dir.join("examples").join(name);
    assert!(
        p.exists(),
        "{} not built (cargo test builds the examples)",
        p.display()
    );
    p
}

/// Run example `name` on `n` ranks with `args`; require status 0 and
/// return rank 0's output.
fn run(n: u32, name: &str, args: &[&str]) -> String {
    run_with(n, name, args, &[])
}

/// As [`run`], with `env` set for every rank.
fn run_with(n: u32, name: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let exe = example(name);
    let mut job = Job::new(n, exe.to_str().expect("a UTF-8 path"));
    for (k, v) in env {
        job = job.env(k, v);
    }
    let (outcome, out, err) = job
        .args(args.iter().copied())
        .timeout(Some(Duration::from_secs(240)))
        .run_captured()
        .expect("the launcher starts the job");
    println!(
        "{name} on {n}: status {}\n--- stdout\n{out}--- stderr\n{err}---",
        outcome.status
    );
    assert_eq!(
        outcome.status, 0,
        "{name} on {n} ranks failed: {:?}",
        outcome.failure
    );
    out
}

/// The checks the conformance program reports passed (its `ok:` lines,
/// rank 0's) on `n` ranks: two of them need a peer (held results, the
/// answers of a heap-full target).
fn conformance_checks(n: u32) -> usize {
    if n == 1 {
        11
    } else {
        13
    }
}

/// Require exactly the `ok:` lines the conformance program makes on `n`
/// ranks: a check that stopped reporting (or reported twice) fails.
fn check_count(out: &str, n: u32) {
    let oks = out
        .lines()
        .filter(|l| l.starts_with("[0] ok: ") || l.starts_with("ok: "))
        .count();
    assert_eq!(
        oks,
        conformance_checks(n),
        "{n} ranks: {oks} checks reported passed: {out}"
    );
}

#[test]
fn every_piece_checks_on_one_two_and_four_ranks() {
    for n in [1u32, 2, 4] {
        let out = run(n, "conformance", &["all"]);
        check_count(&out, n);
        for what in [
            "heap:",
            "raw range: offsets 0..65536 left to raw rgex RMA",
            "rma:",
            "rpc:",
            "promises:",
            "dist_object:",
            "atomics:",
            "executor:",
        ] {
            assert!(
                out.contains(&format!("ok: {what}")),
                "{n} ranks: no {what} line: {out}"
            );
        }
        assert!(
            n < 2 || out.contains("ok: held results:"),
            "{n} ranks: no held-results line: {out}"
        );
        assert!(
            n < 2 || out.contains("ok: answers: a target that cannot stage a result"),
            "{n} ranks: no answers line: {out}"
        );
        assert!(
            out.contains(&format!("ok: all checks on {n} ranks")),
            "{out}"
        );
    }
}

/// On a network conduit with the bypass on (the matrix's rows that mix
/// node-local and remote peers), the checks on four ranks over two
/// emulated nodes (`RGEX_HOST` per rank): rank 1 is node-local to rank 0,
/// ranks 2 and 3 remote.
#[test]
fn every_piece_checks_on_two_nodes() {
    let conduit = std::env::var("RGEX_CONDUIT").unwrap_or_default();
    let bypass = std::env::var("RGEX_SHM_BYPASS").as_deref() != Ok("0");
    if !(matches!(conduit.as_str(), "ofi" | "ibv") && bypass) {
        rgex_tests::report_skip_line(&format!(
            "skip on RGEX_CONDUIT={conduit}: run::every_piece_checks_on_two_nodes: the whole test: \
             only a network conduit with its bypass on mixes node-local and remote peers"
        ));
        return;
    }
    let exe = example("conformance");
    let script = format!(
        "RGEX_HOST=node$((RGEX_RANK / 2)) exec '{}' all",
        exe.display()
    );
    let (outcome, out, err) = Job::new(4, "/bin/sh")
        .args(["-c", script.as_str()])
        .timeout(Some(Duration::from_secs(240)))
        .run_captured()
        .expect("the launcher starts the job");
    println!("--- stdout\n{out}--- stderr\n{err}---");
    assert_eq!(outcome.status, 0, "two nodes: {:?}", outcome.failure);
    check_count(&out, 4);
    for what in [
        "answers: a target that cannot stage a result",
        "all checks on 4 ranks",
    ] {
        assert!(
            out.contains(&format!("ok: {what}")),
            "no {what} line: {out}"
        );
    }
}

#[test]
fn every_piece_checks_with_rgex_s_progress_thread_running() {
    // The thread polls rgex (handlers queue work); RPC bodies still run
    // in user-level progress, on the threads that make it. (And a raw
    // range of another size: the checks read RGEX_PGAS_RAW too.)
    let env = [("RGEX_PROGRESS_THREAD", "1"), ("RGEX_PGAS_RAW", "300K")];
    let out = run_with(3, "conformance", &["all"], &env);
    check_count(&out, 3);
    assert!(out.contains("ok: all checks on 3 ranks"), "{out}");
    assert!(
        out.contains("ok: raw range: offsets 0..307200 left to raw rgex RMA")
            && out.contains("ok: answers:"),
        "{out}"
    );
}

#[test]
fn a_raw_range_that_is_not_a_size_or_does_not_fit_the_segment_is_refused_by_name() {
    let exe = example("conformance");
    for (raw, why) in [
        ("lots", "expected a size in bytes"),
        ("1G", "does not fit the segment"),
    ] {
        let (outcome, _, err) = Job::new(1, exe.to_str().expect("a UTF-8 path"))
            .args(["all"])
            .env("RGEX_PGAS_RAW", raw)
            .env("RGEX_SEGMENT_SIZE", "32M")
            .timeout(Some(Duration::from_secs(60)))
            .run_captured()
            .expect("the launcher starts the job");
        assert_ne!(outcome.status, 0, "RGEX_PGAS_RAW={raw} accepted");
        assert!(
            err.contains("RGEX_PGAS_RAW=") && err.contains(raw) && err.contains(why),
            "{err}"
        );
    }
}

#[test]
fn an_rpc_to_a_rank_that_left_is_an_error_naming_it() {
    let out = run(2, "conformance", &["departure"]);
    assert!(
        out.contains("ok: an rpc to a rank that left fails naming it"),
        "{out}"
    );
    assert!(
        out.contains("ok: calls held for a rank that left fail naming it"),
        "{out}"
    );
    assert!(
        out.contains("ok: a promise's calls to a rank that left fail naming it"),
        "{out}"
    );
}

#[test]
fn the_calls_a_rank_makes_just_before_it_ends_are_sent() {
    let out = run(2, "conformance", &["farewell"]);
    assert!(
        out.contains("ok: farewell: the 40 calls rank 0 made just before it ended were all served"),
        "{out}"
    );
}

#[test]
fn a_target_that_computes_holds_one_window_per_sender_and_floods_drain() {
    // (With rgex's progress thread the target's network is emptied into
    // its queue while it computes: only the window holds the senders.)
    for (n, w, thread) in [
        (3u32, "8", "0"),
        (2, "1", "0"),
        (4, "256", "0"),
        (3, "32", "1"),
    ] {
        let env = [("RGEX_PGAS_WINDOW", w), ("RGEX_PROGRESS_THREAD", thread)];
        let out = run_with(n, "conformance", &["window"], &env);
        assert!(
            out.contains("ok: window: every rank sent"),
            "{n} ranks, window {w}: {out}"
        );
    }
    // A window that is not a number is refused by name.
    let exe = example("conformance");
    let (outcome, _, err) = Job::new(1, exe.to_str().expect("a UTF-8 path"))
        .args(["window"])
        .env("RGEX_PGAS_WINDOW", "lots")
        .timeout(Some(Duration::from_secs(60)))
        .run_captured()
        .expect("the launcher starts the job");
    assert_ne!(outcome.status, 0);
    assert!(
        err.contains("RGEX_PGAS_WINDOW=") && err.contains("lots") && err.contains("whole number"),
        "{err}"
    );
}

#[test]
fn the_dht_on_one_two_four_and_eight_ranks() {
    for n in [1u32, 2, 4, 8] {
        let out = run(n, "dht", &["600"]);
        assert!(
            out.contains(&format!(
                "pgas dht: {} keys on {n} ranks (600 inserted by each), every find exact",
                600 * n
            )),
            "{out}"
        );
    }
}

#[test]
fn the_dht_on_raw_rgex_s_workload() {
    // Every request is out before any answer is awaited: with a window of
    // 4 each rank serves the others' calls while it waits for room. The
    // inserts counted by one promise, or with a future each.
    for (n, w, mode, how) in [
        (1u32, "256", "raw", "inserts counted by a promise"),
        (3, "256", "raw", "inserts counted by a promise"),
        (3, "4", "raw", "inserts counted by a promise"),
        (3, "4", "raw-futures", "a future per insert"),
    ] {
        let out = run_with(n, "dht", &["500", "64", mode], &[("RGEX_PGAS_WINDOW", w)]);
        assert!(
            out.contains(&format!(
                "pgas dht: {} keys on {n} ranks (500 inserted by each), every find exact",
                500 * n
            )) && out.contains(&format!("raw rgex's workload, {how}")),
            "{out}"
        );
    }
}

#[test]
fn the_histogram_by_rpc_ff_by_atomics_and_batched_on_one_two_four_and_eight_ranks() {
    for how in ["rpc_ff", "atomics", "batched"] {
        for n in [1u32, 2, 4, 8] {
            let out = run(n, "histogram", &[how, "3000", "256"]);
            assert!(
                out.contains(&format!(
                    "pgas histogram ({how}): {} updates into {} bins on {n} ranks, every bin exact",
                    3000 * n,
                    256 * n
                )),
                "{out}"
            );
        }
    }
}

#[test]
fn the_jacobi_stencil_on_one_two_four_and_eight_ranks() {
    for n in [1u32, 2, 4, 8] {
        let out = run(n, "jacobi", &["32", "6", "20"]);
        assert!(
            out.contains(&format!(
                "pgas jacobi: {n} ranks, {} x 32 grid, 20 steps, every band matches the whole-grid reference bit for bit",
                6 * n
            )),
            "{out}"
        );
    }
}
