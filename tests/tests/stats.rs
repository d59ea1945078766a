//! Statistics and tracing (`RGEX_STATS`, `RGEX_TRACE`) on the conduit
//! under test: stats_conformance's known workload gives exactly its
//! counts in `Client::stats()` and in every rank's stats JSON, its trace
//! holds one event per AM and RMA operation, and nothing is counted or
//! written when they are off.

mod common;
use common::{job, run, run_ok};
use std::path::PathBuf;

const ST: &str = env!("CARGO_BIN_EXE_stats_conformance");

/// The checks stats_conformance reports with `on`, on any conduit.
const ON: (usize, usize) = (7, 0);
/// The workload: N AMs of each kind, M puts and M gets, K fetch-adds.
const WORK: [&str; 4] = ["on", "10", "20", "30"];

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rgex-stats-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a scratch directory");
    d
}

/// The `expect: KEY=VALUE` lines of rank 0.
fn expectations(out: &str) -> Vec<(String, u64)> {
    out.lines()
        .filter_map(|l| l.split_once("expect: ").map(|(_, kv)| kv))
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn counts_in_files(n: u32, name: &str) {
    counts_in_files_with(n, name, &[]);
}

fn counts_in_files_with(n: u32, name: &str, env: &[(&str, &str)]) -> String {
    let d = scratch(name);
    let mut j = job(n, ST, &WORK);
    for (k, v) in env {
        j = j.env(k, v);
    }
    let out = run_ok(
        &j.env("RGEX_STATS", "1")
            .env("RGEX_STATS_FILE", d.join("stats-%r.json")),
        ON,
    );
    let want = expectations(&out);
    assert!(want.len() > 10, "too few expectations: {want:?}");
    for r in 0..n {
        let path = d.join(format!("stats-{r}.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let (rank, got) = rgex::observe::parse_json(&text).expect("the JSON parses");
        assert_eq!(rank, r, "{path:?}");
        for (key, v) in &want {
            let found = got.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
            assert_eq!(found, Some(*v), "rank {r}: {key} in {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
    out
}

#[test]
fn exact_counts_on_the_reference_paths() {
    let out = counts_in_files_with(
        2,
        "reference",
        &[("RGEX_RMA", "reference"), ("RGEX_ATOMICS", "reference")],
    );
    assert!(out.contains("expect: rma.put.reference.ops=60"), "{out}");
    assert!(out.contains("expect: rma.put.blocking=20"), "{out}");
    assert!(out.contains("expect: atomics.reference.fadd=30"), "{out}");
}

#[test]
fn exact_counts_one_rank() {
    counts_in_files(1, "one");
}

#[test]
fn exact_counts_two_ranks() {
    counts_in_files(2, "two");
}

#[test]
fn exact_counts_three_ranks() {
    counts_in_files(3, "three");
}

#[test]
fn a_trace_has_an_event_per_operation() {
    let d = scratch("trace");
    let out = run_ok(
        &job(2, ST, &WORK)
            .env("RGEX_STATS", "1")
            .env("RGEX_TRACE", "am,rma,coll")
            .env("RGEX_TRACE_FILE", d.join("trace-%r.jsonl")),
        ON,
    );
    for r in 0..2 {
        let path = d.join(format!("trace-{r}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let handler = |l: &str| -> Option<u32> {
            let (_, rest) = l.split_once("\"handler\":")?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        let client = |ev: &str| {
            text.lines()
                .filter(|l| l.contains(&format!("\"cat\":\"am\",\"ev\":\"{ev}\"")))
                .filter(|l| handler(l).is_some_and(|h| h >= 64))
                .count()
        };
        // 7 requests of each of 10 rounds, each answered: 140 each way.
        assert_eq!(client("inject"), 140, "rank {r}: {text}");
        assert_eq!(client("deliver"), 140, "rank {r}");
        // Each client AM names its handler, as stats_conformance
        // registered it: 70 requests and 70 replies each way.
        for name in ["stats.request", "stats.reply"] {
            for ev in ["inject", "deliver"] {
                let named = text
                    .lines()
                    .filter(|l| l.contains(&format!("\"cat\":\"am\",\"ev\":\"{ev}\"")))
                    .filter(|l| l.contains(&format!("\"name\":\"{name}\"")))
                    .count();
                assert_eq!(named, 70, "rank {r}: {ev} of {name}");
            }
        }
        let rma = |ev: &str| {
            text.lines()
                .filter(|l| l.contains(&format!("\"cat\":\"rma\",\"ev\":\"{ev}\"")))
                .count()
        };
        // M = 20 of each form: blocking, with an event, implicit (puts),
        // and puts-with-signal; each line numbered.
        assert_eq!(
            (rma("put"), rma("get"), rma("put_signal")),
            (60, 40, 20),
            "rank {r}"
        );
        // Completions: every operation with its own counter (blocking and
        // with an event: 80), and on the mapped path, which finishes
        // during injection, the implicit puts and the puts-with-signal too.
        let mapped = out.contains("rma path: mapped");
        let want = if mapped { 120 } else { 80 };
        assert_eq!(rma("complete"), want, "rank {r}: {text}");
        let numbered = |l: &&str| l.contains("\"cat\":\"rma\"") && l.contains("\"op\":");
        assert_eq!(
            text.lines().filter(numbered).count(),
            120 + want,
            "rank {r}"
        );
        // Every line is one object with its time.
        assert!(text
            .lines()
            .all(|l| l.starts_with("{\"t\":") && l.ends_with('}')));
        // The barriers' spans: each one that began ended.
        let spans = |ev: &str| {
            text.lines()
                .filter(|l| l.contains(&format!("\"cat\":\"coll\",\"ev\":\"{ev}\"")))
                .count()
        };
        assert!(spans("begin") >= 4, "rank {r}");
        assert_eq!(spans("begin"), spans("end"), "rank {r}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_trace_filter_at_debug_keeps_the_spans_alone() {
    let d = scratch("filter");
    run_ok(
        &job(2, ST, &WORK)
            .env("RGEX_STATS", "1")
            .env("RGEX_TRACE", "rgex=debug,rgex::rma=trace")
            .env("RGEX_TRACE_FILE", d.join("trace-%r.jsonl")),
        ON,
    );
    for r in 0..2 {
        let path = d.join(format!("trace-{r}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let count = |needle: &str| text.lines().filter(|l| l.contains(needle)).count();
        // AMs at debug: no events; RMA at trace: every one.
        assert_eq!(count("\"cat\":\"am\""), 0, "rank {r}: {text}");
        assert_eq!(count("\"cat\":\"rma\",\"ev\":\"put\""), 60, "rank {r}");
        // Collectives at debug: their spans, not their start events.
        assert!(count("\"cat\":\"coll\",\"ev\":\"begin\"") >= 4, "rank {r}");
        assert_eq!(count("\"cat\":\"coll\",\"ev\":\"start\""), 0, "rank {r}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_trace_filter_is_refused_by_name() {
    let (outcome, out, err) = run(&job(1, ST, &WORK).env("RGEX_TRACE", "rgex::am=loud"));
    assert_ne!(outcome.status, 0, "{out}");
    assert!(
        err.contains("RGEX_TRACE") && err.contains("\"loud\"") && err.contains("debug"),
        "{err}"
    );
}

#[test]
fn nothing_is_counted_when_off() {
    let d = scratch("off");
    run_ok(
        &job(2, ST, &["off"]).env("RGEX_STATS_FILE", d.join("stats-%r.json")),
        (1, 0),
    );
    let left: Vec<_> = std::fs::read_dir(&d).expect("the directory").collect();
    assert!(left.is_empty(), "files written while off: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_unknown_category_is_refused_by_name() {
    let (outcome, out, err) = run(&job(1, ST, &WORK).env("RGEX_STATS", "am,rmaa"));
    assert_ne!(outcome.status, 0, "{out}");
    assert!(
        err.contains("RGEX_STATS") && err.contains("\"rmaa\""),
        "{err}"
    );
}
