//! put_signal_lat: put-with-signal latency (issue 40): an 8-byte put plus
//! its signal, waited for by the target, one round trip, beside a plain
//! put plus its completion.
//!
//! Run: `rgex-run -n 2 --bind target/release/put_signal_lat [--quick] [--rounds N]`
//! (any conduit: `RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER='tcp;ofi_rxm'
//! RGEX_SHM_BYPASS=0 FI_TCP_IFACE=lo` for ofi over tcp).
//!
//! Three points, measured once each per round, in the same order, for
//! several rounds (this machine's speed moves between rounds: each
//! point's best round is reported, with the median of the rounds):
//!
//! - **signal ping-pong**: rank 0 `put_signal`s 8 B and adds 1 to rank
//!   1's signal word; rank 1 `wait_until`s the word, then does the same
//!   back; rank 0 `wait_until`s its own. Time per round trip.
//! - **put + completion**: rank 0 `put_nb`s 8 B to rank 1 and waits for
//!   its event (remote completion) while rank 1 polls. Time per put. On a
//!   network this is a round trip too (the completion comes back); on
//!   smp a put is a copy, complete on return, so the next point is the
//!   comparison there.
//! - **put ping-pong**: as the signal ping-pong with a plain 8-byte put
//!   of the round number, waited for on the data word itself. What the
//!   signal costs beyond a put its target sees.
//! - **AM round trip**: an AM Medium request of 8 bytes whose handler
//!   replies with a Short: the floor the active-message reference
//!   (network peers) rides on.
//!
//! A report: it fails only if something breaks (a wait that sees the
//! wrong value).

use rgex::{Client, Cmp, Flags, GlobalAddr, HandlerId, Rank, Signal};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The signal words (in each rank's own segment).
const SIG: u64 = 0;
/// The plain ping-pong's data word.
const DATA: u64 = 64;
/// The put-with-signal's data (8 bytes).
const PAYLOAD: u64 = 128;
/// Where rank 0 tells rank 1 that a put + completion point is over.
const STOP: u64 = 192;

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let rounds: usize = match args.iter().position(|a| a == "--rounds") {
        Some(i) => args.get(i + 1).ok_or("--rounds N")?.parse()?,
        None => 7,
    };
    let answers = Arc::new(AtomicU64::new(0));
    let a = answers.clone();
    let (client, echo) = rgex::init_with(move |t| {
        let back = t.register("psl.back", move |_tok, _msg| {
            // Relaxed: a count the requester polls for, guarding nothing.
            a.fetch_add(1, Ordering::Relaxed);
        })?;
        t.register("psl.echo", move |tok, _msg| {
            tok.reply_short(back, &[], Flags::empty())
        })
    })?;
    if client.size() != 2 {
        return Err("put_signal_lat runs on two ranks".into());
    }
    let network = client.endpoint().conduit().name() != "smp"
        && client.endpoint().put_signal_path(Rank(1)) != rgex::SignalPath::Mapped;
    let iters: u64 = match (quick, network) {
        (true, _) => 200,
        (false, true) => 3000,
        (false, false) => 30000,
    };
    let names = [
        "signal ping-pong",
        "put + completion",
        "put ping-pong",
        "AM round trip",
    ];
    let unit = [
        "ns per round trip",
        "ns per put",
        "ns per round trip",
        "ns per round trip",
    ];
    let mut got: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for round in 0..rounds as u64 {
        // Each point's words count on from where its last round left them.
        client.barrier()?;
        got[0].push(signal_pingpong(&client, round * iters, iters)?);
        client.barrier()?;
        got[1].push(put_completion(&client, round + 1, iters)?);
        client.barrier()?;
        got[2].push(put_pingpong(&client, round * iters, iters)?);
        client.barrier()?;
        got[3].push(am_round_trip(&client, echo, &answers, iters)?);
    }
    client.barrier()?;
    if client.rank() == Rank(0) {
        println!(
            "put_signal_lat on {} (put-with-signal path: {:?}), {rounds} rounds of {iters}",
            client.endpoint().conduit().name(),
            client.endpoint().put_signal_path(Rank(1))
        );
        let best: Vec<f64> = got
            .iter()
            .map(|v| v.iter().copied().fold(f64::INFINITY, f64::min))
            .collect();
        for (k, v) in got.iter().enumerate() {
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            println!(
                "  {:<18} best {:>9.0}  median {:>9.0}  {}",
                names[k],
                best[k],
                s[s.len() / 2],
                unit[k]
            );
        }
        println!(
            "  signal ping-pong / put + completion: {:.2}x (goal: within 1.2x)",
            best[0] / best[1]
        );
        println!(
            "  signal ping-pong / put ping-pong:    {:.2}x",
            best[0] / best[2]
        );
    }
    Ok(())
}

/// `iters` round trips of put-with-signal; the signal words count on from
/// `base`. Rank 0's ns per round trip (rank 1's figure is not used).
fn signal_pingpong(client: &Client, base: u64, iters: u64) -> Res<f64> {
    let ep = client.endpoint();
    let me = client.rank();
    let peer = Rank(1 - me.0);
    let f = Flags::empty();
    let mut answers = Vec::new();
    let start = Instant::now();
    for i in base..base + iters {
        let v = i.to_ne_bytes();
        let to = GlobalAddr::new(peer, PAYLOAD);
        let sent = if me == Rank(0) {
            Some(ep.put_signal_nb(to, &v, Signal::add(SIG, 1), f)?)
        } else {
            None
        };
        ep.wait_until::<u64>(SIG, Cmp::Ge, i + 1)?;
        // Done by now (the answer came after the data); a blocking
        // put_signal would wait for the acknowledgement before listening.
        if let Some(e) = sent {
            e.wait()?;
        }
        // Read before answering: the next one may overwrite it after.
        let got = ep.segment().read_u64(PAYLOAD)?;
        if got != i {
            return Err(format!("{me}: round trip {i} brought {got}").into());
        }
        if me == Rank(1) {
            answers.push(ep.put_signal_nb(to, &v, Signal::add(SIG, 1), f)?);
            if answers.len() >= 64 {
                rgex::Event::wait_all(&mut answers)?;
                answers.clear();
            }
        }
    }
    rgex::Event::wait_all(&mut answers)?;
    Ok(start.elapsed().as_nanos() as f64 / iters as f64)
}

/// `iters` puts from rank 0, each waited for; rank 1 polls until told
/// (`STOP` set to `round`).
fn put_completion(client: &Client, round: u64, iters: u64) -> Res<f64> {
    let ep = client.endpoint();
    let f = Flags::empty();
    if client.rank() == Rank(1) {
        while !ep.test::<u64>(STOP, Cmp::Eq, round)? {}
        return Ok(0.0);
    }
    let to = GlobalAddr::new(Rank(1), DATA + 8);
    let start = Instant::now();
    for i in 0..iters {
        ep.put_nb(to, &i.to_ne_bytes(), f)?.wait()?;
    }
    let ns = start.elapsed().as_nanos() as f64 / iters as f64;
    ep.put_val(GlobalAddr::new(Rank(1), STOP), round, f)?;
    Ok(ns)
}

/// `iters` round trips of a plain 8-byte put, each waited for on the data
/// word by the target.
fn put_pingpong(client: &Client, base: u64, iters: u64) -> Res<f64> {
    let ep = client.endpoint();
    let me = client.rank();
    let peer = GlobalAddr::new(Rank(1 - me.0), DATA);
    let f = Flags::empty();
    let start = Instant::now();
    for i in base..base + iters {
        if me == Rank(0) {
            ep.put_val(peer, i + 1, f)?;
            ep.wait_until::<u64>(DATA, Cmp::Eq, i + 1)?;
        } else {
            ep.wait_until::<u64>(DATA, Cmp::Eq, i + 1)?;
            ep.put_val(peer, i + 1, f)?;
        }
    }
    Ok(start.elapsed().as_nanos() as f64 / iters as f64)
}

/// `iters` AM round trips from rank 0 (an 8-byte Medium request, a Short
/// reply), rank 1 answering from its barrier's polls.
fn am_round_trip(client: &Client, echo: HandlerId, answers: &AtomicU64, iters: u64) -> Res<f64> {
    let ep = client.endpoint();
    if client.rank() == Rank(1) {
        return Ok(0.0);
    }
    let start = Instant::now();
    for i in 0..iters {
        let before = answers.load(Ordering::Relaxed);
        ep.request_medium(Rank(1), echo, &[], &i.to_ne_bytes(), Flags::empty())?;
        while answers.load(Ordering::Relaxed) == before {
            ep.poll()?;
        }
    }
    Ok(start.elapsed().as_nanos() as f64 / iters as f64)
}
