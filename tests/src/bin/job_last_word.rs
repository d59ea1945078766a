//! A rank that leaves right after its last message: what it sent must
//! still count. Two ranks; rank 0 waits for something from rank 1, and
//! rank 1 sends it and leaves the job at once. Rank 0's wait has been
//! idle for a while, so its endpoint is about to ask the conduit whether
//! rank 1 has gone (the in-flight sweep of `rgex_endpoint::abandon`): it must
//! run the message that came first, and succeed, not fail the wait
//! because the peer is gone by now.
//!
//! The test runs it with the sweep's fault-injection pause
//! (`RGEX_FAULT_SWEEP_PAUSE_MS`), which opens that window every time:
//! rank 0's poll finds nothing, the sweep pauses, rank 1 sends and leaves
//! meanwhile, and the sweep then sees it gone.
//!
//! The first argument picks what rank 0 waits for:
//! - `barrier`: the world team's barrier, which rank 0 enters first;
//!   rank 1 enters it later, finishes (rank 0's message is there), and
//!   leaves, its own message to rank 0 in rank 0's queue;
//! - `get`: a blocking get from rank 1's segment through the AM
//!   (reference) RMA; rank 1 polls later, answers it, and leaves.
//!
//! Rank 0 prints one `ok:` line when its wait succeeded with the right
//! data; any error fails the job.

use rgex::{GlobalAddr, Rank};
use rgex_tests::{conduit_banner, ok};
use std::time::{Duration, Instant};

/// How long rank 1 waits (without polling) before it answers: long
/// enough for rank 0 to be in its sweep's pause, well inside that pause.
const LATE: Duration = Duration::from_millis(150);
/// How long rank 1 polls before it leaves, in the `get` scenario.
const ANSWERING: Duration = Duration::from_millis(50);

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    if !["barrier", "get"].contains(&what.as_str()) {
        eprintln!("usage: job_last_word barrier|get (got {what:?})");
        std::process::exit(2);
    }
    let client = rgex::init()?;
    assert_eq!(client.size(), 2, "job_last_word runs on two ranks");
    conduit_banner(&client);
    let me = client.rank();
    let pattern: Vec<u8> = (0..256u32).map(|i| (i * 7 + 3) as u8).collect();
    if me == Rank(1) {
        client
            .endpoint()
            .put(GlobalAddr::new(me, 0), &pattern, rgex::Flags::empty())?;
    }
    // Out of band: no AM runs in it, so both ranks start from here with
    // nothing in flight.
    client.endpoint().conduit().bootstrap().barrier()?;
    if me == Rank(1) {
        std::thread::sleep(LATE);
        match what.as_str() {
            "barrier" => client.barrier()?,
            _ => {
                let until = Instant::now() + ANSWERING;
                while Instant::now() < until {
                    client.endpoint().poll()?;
                }
            }
        }
        rgex_tests::leave_job("exit");
    }
    match what.as_str() {
        "barrier" => {
            client.barrier()?;
            ok(&client, "barrier with a member that left right after it");
        }
        _ => {
            let mut got = vec![0u8; pattern.len()];
            client
                .endpoint()
                .get(&mut got, GlobalAddr::new(Rank(1), 0), rgex::Flags::empty())?;
            assert_eq!(got, pattern, "the get's bytes");
            ok(&client, "get answered by a rank that left right after");
        }
    }
    Ok(())
}
