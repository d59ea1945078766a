//! Teams and collectives on the smp conduit: the conformance program on 1
//! rank (no launcher), 2, 3, 4, 5, 7 and 8 ranks (more than the CPUs are
//! oversubscribed on small machines; 5 and 7 give trees with uneven
//! subtrees and odd team splits), and on 3 ranks with the smallest Medium size, so broadcasts
//! and reductions travel in many fragments.

mod common;
use common::{check_counts, counts, job, run_ok};
use std::process::Command;

const COLL: &str = env!("CARGO_BIN_EXE_coll_conformance");

#[test]
fn one_rank_without_launcher() {
    let out = Command::new(COLL)
        .env_remove("RGEX_BOOTSTRAP")
        .env_remove("RGEX_RANK")
        .env_remove("RGEX_SIZE")
        .env_remove("RGEX_JOB")
        .output()
        .expect("run coll_conformance");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
    check_counts(&text, counts::coll(1));
    assert!(text.contains("ok: all collective checks passed"));
}

#[test]
fn two_ranks() {
    run_ok(&job(2, COLL, &[]), counts::coll(2));
}

/// Node-local world teams run their collectives on the shared-memory
/// board (smp, the bypass): the same program with it off, over active
/// messages, which the network rows run anyway.
#[test]
fn three_ranks_over_active_messages() {
    run_ok(
        &job(3, COLL, &[]).env("RGEX_COLL_BOARD", "0"),
        counts::coll(3),
    );
}

#[test]
fn three_ranks() {
    run_ok(&job(3, COLL, &[]), counts::coll(3));
}

#[test]
fn four_ranks() {
    run_ok(&job(4, COLL, &[]), counts::coll(4));
}

#[test]
fn five_ranks_oversubscribed() {
    run_ok(&job(5, COLL, &[]), counts::coll(5));
}

#[test]
fn six_ranks_oversubscribed() {
    run_ok(&job(6, COLL, &[]), counts::coll(6));
}

#[test]
fn seven_ranks_oversubscribed() {
    run_ok(&job(7, COLL, &[]), counts::coll(7));
}

#[test]
fn eight_ranks_oversubscribed() {
    run_ok(&job(8, COLL, &[]), counts::coll(8));
}

#[test]
fn three_ranks_small_mediums() {
    run_ok(
        &job(3, COLL, &[]).env("RGEX_SMP_MAX_MEDIUM", "512"),
        counts::coll(3),
    );
}
