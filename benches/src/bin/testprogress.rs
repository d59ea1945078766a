//! testprogress: what the progress thread (issue 28 point 6) does to AM
//! Short round-trip latency.
//!
//! Run: `rgex-run -n 2 --bind target/release/testprogress [--quick]`
//!
//! Rank 0 pings rank 1 (an AM Short request, answered by a Short reply)
//! and polls for the reply; rank 1 serves in four ways, one after the
//! other:
//! - inattentive: its main thread sleeps 1 ms between polls, no thread;
//! - inattentive + thread: the same, with a progress thread
//!   (`Endpoint::start_progress_thread`), with back-to-back pings (the
//!   thread is still spinning when the next comes) and with pings 1 ms
//!   apart (it has gone to sleep: the cost of its wake-up);
//! - busy: its main thread polls without pause, no thread;
//! - busy + thread: the same with a progress thread beside it (what the
//!   thread costs a busy-polling job).
//!
//! Reported per mode: median and mean round trip. A report, never a
//! pass/fail on timing; it fails only if a reply is lost.

use rgex::{Client, Flags, HandlerId, Rank};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The ways rank 1 serves: (name, sleeps between polls, thread, and
/// whether rank 0 pauses 1 ms before each ping, so the thread has gone
/// to sleep when the ping comes: the wake-up's cost).
const MODES: [(&str, bool, bool, bool); 5] = [
    ("inattentive (1 ms sleeps)", true, false, false),
    ("inattentive + progress thread", true, true, false),
    ("same, pings 1 ms apart (wakes)", true, true, true),
    ("busy polling", false, false, false),
    ("busy polling + progress thread", false, true, false),
];

#[derive(Default)]
struct State {
    pongs: AtomicU64,
    stop: AtomicBool,
}

struct Ids {
    ping: HandlerId,
    stop: HandlerId,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testprogress: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let st = Arc::new(State::default());
    let (s1, s2) = (st.clone(), st.clone());
    let (client, ids) = rgex::init_with(|t| {
        let pong = t.register("tp.pong", move |_tok, _msg| {
            s1.pongs.fetch_add(1, Ordering::Release);
        })?;
        let ping = t.register("tp.ping", move |tok, msg| {
            tok.reply_short(pong, msg.args(), Flags::empty())
        })?;
        let stop = t.register("tp.stop", move |_tok, _msg| {
            s2.stop.store(true, Ordering::Release);
        })?;
        Ok(Ids { ping, stop })
    })?;
    if client.size() != 2 {
        return Err("testprogress needs two ranks (rgex-run -n 2)".into());
    }
    if client.rank() == Rank(0) {
        println!(
            "testprogress on {} (unvalidated: a shared machine gives rough numbers)",
            client.endpoint().conduit().name()
        );
        println!(
            "{:<34} {:>8} {:>12} {:>12}",
            "rank 1 serves", "pings", "median us", "mean us"
        );
    }
    for (name, sleeps, thread, gaps) in MODES {
        client.barrier()?;
        if client.rank() == Rank(0) {
            let n = match (quick, sleeps || gaps) {
                (true, true) => 100,
                (true, false) => 5_000,
                (false, true) => 1_000,
                (false, false) => 100_000,
            };
            let times = ping(&client, &st, ids.ping, n, gaps)?;
            client
                .endpoint()
                .request_short(Rank(1), ids.stop, &[], Flags::empty())?;
            let (median, mean) = summary(times);
            println!("{name:<34} {n:>8} {median:>12.2} {mean:>12.2}");
        } else {
            serve(&client, &st, sleeps, thread)?;
        }
    }
    client.barrier()?;
    Ok(())
}

/// Rank 0: `n` round trips (after a tenth as many unmeasured), each timed
/// (`gaps`: with a 1 ms pause before each).
fn ping(
    client: &Client,
    st: &State,
    h: HandlerId,
    n: usize,
    gaps: bool,
) -> rgex::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        if gaps {
            std::thread::sleep(Duration::from_millis(1));
        }
        let want = st.pongs.load(Ordering::Acquire) + 1;
        let t = Instant::now();
        client
            .endpoint()
            .request_short(Rank(1), h, &[i as u32], Flags::empty())?;
        let give_up = t + Duration::from_secs(60);
        while st.pongs.load(Ordering::Acquire) < want {
            client.endpoint().poll()?;
            if Instant::now() > give_up {
                return Err(rgex::Error::Failed(format!("ping {i}: no reply in 60 s")));
            }
        }
        if i >= n / 10 {
            times.push(t.elapsed());
        }
    }
    Ok(times)
}

/// Rank 1: serve until rank 0's stop message.
fn serve(client: &Client, st: &State, sleeps: bool, thread: bool) -> rgex::Result<()> {
    let progress = thread
        .then(|| client.endpoint().start_progress_thread())
        .transpose()?;
    while !st.stop.load(Ordering::Acquire) {
        client.endpoint().poll()?;
        if sleeps {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    st.stop.store(false, Ordering::Relaxed);
    if let Some(p) = progress {
        p.stop()?;
    }
    Ok(())
}

/// Median and mean, in microseconds.
fn summary(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let median = times.get(times.len() / 2).map_or(0.0, |&d| us(d));
    let mean = times.iter().map(|&d| us(d)).sum::<f64>() / times.len().max(1) as f64;
    (median, mean)
}
