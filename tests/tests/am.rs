//! Active messages on the smp conduit: the conformance program on 1 rank
//! (no launcher), 2, 4 and 8 ranks (8 oversubscribed on small machines),
//! and the flood.

mod common;
use common::{check_counts, conduit, counts, job, run_ok};
use std::process::Command;

const AM: &str = env!("CARGO_BIN_EXE_am_conformance");
const FLOOD: &str = env!("CARGO_BIN_EXE_am_flood");

#[test]
fn one_rank_without_launcher() {
    let out = Command::new(AM)
        .env_remove("RGEX_BOOTSTRAP")
        .env_remove("RGEX_RANK")
        .env_remove("RGEX_SIZE")
        .env_remove("RGEX_JOB")
        .output()
        .expect("run am_conformance");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
    let checks = check_counts(&text, counts::am(1, false));
    assert!(
        text.contains("ok: all active-message checks passed"),
        "{text}"
    );
    // Alone, without a launcher, it still runs on the conduit asked for.
    assert_eq!(checks.conduits, [conduit()], "{text}");
}

#[test]
fn two_ranks() {
    run_ok(&job(2, AM, &[]), counts::am(2, true));
}

#[test]
fn four_ranks() {
    run_ok(&job(4, AM, &[]), counts::am(4, true));
}

/// Ranks whose limit settings differ (rank 1 asks for 2 KiB Mediums, the
/// others for 4 KiB, set per rank by a shell around the program): rank 0's
/// settings rule on every rank, so the limits stay symmetric (the program
/// checks every pair both ways).
#[test]
fn unequal_limit_settings_three_ranks() {
    let vars = [
        "RGEX_SMP_MAX_MEDIUM",
        "RGEX_OFI_MAX_MEDIUM",
        "RGEX_IBV_MAX_MEDIUM",
        "RGEX_SCC_MAX_MEDIUM",
    ];
    let rank1: Vec<String> = vars.iter().map(|v| format!("{v}=2K")).collect();
    let wrapped = format!(
        "if [ \"$RGEX_RANK\" = 1 ]; then export {}; fi; exec '{AM}'",
        rank1.join(" ")
    );
    let mut j = job(3, "/bin/sh", &["-c", &wrapped]);
    for v in vars {
        j = j.env(v, "4K");
    }
    run_ok(&j, counts::am(3, true));
}

#[test]
fn eight_ranks_oversubscribed() {
    run_ok(&job(8, AM, &[]), counts::am(8, true));
}

#[test]
fn four_ranks_flood_a_million_each() {
    // A million each through shared memory; a network provider on
    // loopback (sockets: ~20 us a message) gets a tenth, which still
    // wraps every credit window thousands of times.
    let n = if conduit() == "smp" {
        "1000000"
    } else {
        "100000"
    };
    let out = run_ok(&job(4, FLOOD, &[n]), (1, 0));
    assert!(out.contains(&format!("{n} AMs from each of 4 ranks")));
}

#[test]
fn two_ranks_flood_with_tiny_queues() {
    // Two-cell queues (and, on ofi and ibv, two-message credit windows
    // and four send buffers; on ibv, two-request send queues too): nearly every send meets a full queue.
    let n = if conduit() == "smp" {
        "200000"
    } else {
        "20000"
    };
    let out = run_ok(
        &job(2, FLOOD, &[n])
            .env("RGEX_SMP_QUEUE_DEPTH", "2")
            .env("RGEX_OFI_WINDOW", "2")
            .env("RGEX_OFI_SEND_BUFFERS", "4")
            .env("RGEX_IBV_WINDOW", "2")
            .env("RGEX_IBV_SEND_BUFFERS", "4")
            .env("RGEX_IBV_SQ_DEPTH", "2"),
        (1, 0),
    );
    assert!(out.contains(&format!("{n} AMs from each of 2 ranks")));
}
