//! A client's life: `rgex::init` once per process (a second init is a
//! clear error, sequential or concurrent), `Client::finalize`
//! (collective, Ok when all is idle, reporting what was left in flight),
//! and an endpoint that refuses work once its client was finalized or
//! dropped, even through a clone of its `Arc` (see
//! `tests/src/bin/job_lifecycle.rs`).

mod common;
use common::{job, run_ok};

const LIFECYCLE: &str = env!("CARGO_BIN_EXE_job_lifecycle");

#[test]
fn a_second_init_is_a_clear_error_while_the_client_lives_and_after() {
    run_ok(&job(2, LIFECYCLE, &["init_twice"]), (2, 0));
}

#[test]
fn of_four_concurrent_inits_exactly_one_makes_a_client() {
    run_ok(&job(2, LIFECYCLE, &["init_concurrent"]), (1, 0));
}

#[test]
fn a_cloned_endpoint_refuses_work_after_finalize() {
    run_ok(&job(2, LIFECYCLE, &["finalize_then_op"]), (1, 0));
}

#[test]
fn a_cloned_endpoint_refuses_work_after_the_client_is_dropped() {
    run_ok(&job(2, LIFECYCLE, &["drop_then_op"]), (1, 0));
}

#[test]
fn finalize_is_ok_on_every_rank_when_all_is_idle() {
    run_ok(&job(3, LIFECYCLE, &["finalize_idle"]), (1, 0));
}

#[test]
fn finalize_reports_an_operation_left_in_flight() {
    run_ok(
        &job(2, LIFECYCLE, &["finalize_unfinished"]).env("RGEX_RMA", "reference"),
        (2, 0),
    );
}
