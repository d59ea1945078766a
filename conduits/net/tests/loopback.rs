//! The kit's logic on its loopback transport (feature `loopback`): ranks
//! are threads of this process, each a whole `NetConduit<Loopback>`,
//! driven through the Conduit SPI from the test's thread. No network.
//!
//! Credits, the backlog, IMMEDIATE (would-block from `try_prepare`),
//! local and remote completion (read-back included), dead peers and the
//! exit drain. Every loop is bounded: a test that cannot reach its state
//! within its bound fails, saying what it was waiting for.

use rgex_core::{Category, Conduit, Direction, Error, OpCounter, PollSet, Prepare, Rank};
use rgex_net::loopback::{self, Fate, LoopConfig, Loopback};
use rgex_net::readback::PutCompletion;
use rgex_net::{NetConduit, Transport};
use std::time::Duration;

type C = NetConduit<Loopback>;

/// Segment bytes per rank.
const SEG: usize = 1 << 20;
/// Handler index of the test's messages.
const H: u8 = 77;
/// Tries a test loop makes before it gives up.
const TRIES: usize = 20_000;

/// One delivered message.
#[derive(Debug, PartialEq, Eq)]
struct Got {
    src: u32,
    category: Category,
    args: Vec<u32>,
    payload: Vec<u8>,
}

fn job(cfg: &LoopConfig) -> Vec<C> {
    loopback::start(cfg, SEG).expect("in-process loopback job")
}

/// What every message `seq` carries.
fn payload_of(seq: u32) -> Vec<u8> {
    (0..(seq % 7) * 37 + 1)
        .map(|i| (i as u8).wrapping_mul(31) ^ seq as u8)
        .collect()
}

/// Message `seq` to `peer`: a Short (injected: its header fits) every
/// third, else a Medium with [`payload_of`].
fn send(c: &C, peer: u32, seq: u32) -> rgex_core::Result<()> {
    let (category, payload) = if seq.is_multiple_of(3) {
        (Category::Short, Vec::new())
    } else {
        (Category::Medium, payload_of(seq))
    };
    let spec = Prepare {
        peer: Rank(peer),
        dir: Direction::Request,
        category,
        nargs: 2,
        least: payload.len(),
        most: payload.len(),
        long_offset: 0,
    };
    c.try_send(&spec, H, &[seq, c.rank().0], &payload)
}

/// Check `got` is messages `0..n` from `src`, in order, each once.
fn check_in_order(got: &[Got], src: u32, n: u32) {
    let seqs: Vec<u32> = got.iter().map(|g| g.args[0]).collect();
    assert_eq!(
        seqs,
        (0..n).collect::<Vec<_>>(),
        "every message once, in order"
    );
    for g in got {
        let seq = g.args[0];
        assert_eq!((g.src, g.args[1]), (src, src), "message {seq}'s sender");
        let want = if seq.is_multiple_of(3) {
            vec![]
        } else {
            payload_of(seq)
        };
        assert_eq!(g.payload, want, "message {seq}'s payload");
    }
}

/// Poll `c` once; what it delivered.
fn poll(c: &C) -> Vec<Got> {
    let mut got = Vec::new();
    c.poll(PollSet::All, &mut |d| {
        assert_eq!(d.handler, H);
        got.push(Got {
            src: d.src.0,
            category: d.category,
            args: d.args.to_vec(),
            payload: d.payload.to_vec(),
        })
    });
    got
}

/// Send messages `from..` to `peer` until the first refusal (polling the
/// sender between sends, never the receiver); how many went and the
/// refusal.
fn send_until_refused(c: &C, peer: u32, from: u32) -> (u32, Error) {
    for k in 0..TRIES as u32 {
        if let Err(e) = send(c, peer, from + k) {
            return (k, e);
        }
        assert!(poll(c).is_empty(), "nothing is sent to the sender");
    }
    panic!("{TRIES} sends to rank {peer} and none was refused: no flow control");
}

fn assert_credit_block(e: &Error, peer: u32) {
    match e {
        Error::WouldBlock { peer: p, resource } => {
            assert_eq!(*p, Rank(peer));
            assert_eq!(
                *resource, "request credits",
                "blocked for credits, not {resource}"
            );
        }
        other => panic!("expected would-block for credits, got {other}"),
    }
}

#[test]
fn a_receiver_that_never_polls_blocks_the_sender_and_nothing_is_lost() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let window = cfg.settings.window as u32;
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    // The receiver never polls: the sender has exactly a window of credits.
    let (sent, refusal) = send_until_refused(a, 1, 0);
    assert_eq!(sent, window, "sent before the first would-block");
    assert_credit_block(&refusal, 1);
    // Still blocked however often the sender polls and retries, and
    // after the receiver's progress ticker has had time to run (it reads
    // completions but runs no handler, so consumes nothing).
    for _ in 0..50 {
        assert!(poll(a).is_empty());
        assert_credit_block(&send(a, 1, sent).unwrap_err(), 1);
    }
    std::thread::sleep(Duration::from_millis(20));
    poll(a);
    assert_credit_block(&send(a, 1, sent).unwrap_err(), 1);

    // Once the receiver polls, the rest goes: all arrive, once, in order.
    let n = 60;
    let mut sent = sent;
    let mut got = Vec::new();
    for _ in 0..TRIES {
        if sent == n && got.len() == n as usize {
            break;
        }
        if sent < n {
            match send(a, 1, sent) {
                Ok(()) => sent += 1,
                Err(e @ Error::WouldBlock { .. }) => assert_credit_block(&e, 1),
                Err(e) => panic!("send {sent}: {e}"),
            }
        }
        assert!(poll(a).is_empty());
        got.extend(poll(b));
    }
    assert_eq!(sent, n, "the sender got its credits back");
    check_in_order(&got, 0, n);
    assert_eq!(
        fabric.overruns(),
        0,
        "no message found the receive buffers full"
    );
}

#[test]
fn credits_come_back_in_a_credit_only_message_when_the_receiver_sends_nothing() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let window = cfg.settings.window as u32;
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    let (sent, e) = send_until_refused(a, 1, 0);
    assert_eq!(sent, window);
    assert_credit_block(&e, 1);
    // The receiver delivers (never sending an AM); its credit report is
    // the only thing that can unblock the sender.
    let mut got = Vec::new();
    let mut resumed = false;
    for _ in 0..TRIES {
        got.extend(poll(b));
        poll(a);
        if got.len() == window as usize && send(a, 1, sent).is_ok() {
            resumed = true;
            break;
        }
    }
    assert!(resumed, "the sender never got its credits back");
    check_in_order(&got, 0, window);
    assert!(
        fabric.sends(1, 0) >= 1,
        "the credits came in a message from the receiver"
    );
    // All `window` were consumed and reported: a whole window again.
    let (more, e) = send_until_refused(a, 1, sent + 1);
    assert_eq!(more + 1, window, "the whole window came back");
    assert_credit_block(&e, 1);
    assert_eq!(fabric.overruns(), 0);
}

#[test]
fn credits_come_back_piggybacked_on_the_receivers_own_messages() {
    let mut cfg = LoopConfig::new(2);
    // Credit-only messages go once half a window (4) is unreported: with
    // 3 consumed, only a piggybacked count can return them.
    cfg.settings.window = 8;
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    for seq in 0..3 {
        send(a, 1, seq).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..TRIES {
        if got.len() == 3 {
            break;
        }
        poll(a); // carries its sends
        got.extend(poll(b));
    }
    check_in_order(&got, 0, 3);
    // The receiver sends a message of its own: its header carries the 3.
    send(b, 0, 0).unwrap();
    let mut back = Vec::new();
    for _ in 0..TRIES {
        if !back.is_empty() {
            break;
        }
        assert!(poll(b).is_empty());
        back.extend(poll(a));
    }
    assert_eq!(back.len(), 1, "the receiver's message arrived");
    assert_eq!(
        fabric.sends(1, 0),
        1,
        "one message back, no credit-only one"
    );
    // 3 sent, 3 returned: a whole window of 8 (5 without the piggyback).
    let (more, e) = send_until_refused(a, 1, 3);
    assert_eq!(more, 8, "credits returned by the piggybacked count");
    assert_credit_block(&e, 1);
}

#[test]
fn posts_the_transport_refuses_wait_in_order_and_nothing_is_half_sent() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let window = cfg.settings.window as u32;
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    // Rank 0's queue takes nothing: every post answers "again".
    fabric.set_capacity(0, Some(0));
    for seq in 0..window - 1 {
        send(a, 1, seq).expect("a refused post is the kit's to retry, not the caller's");
    }
    // A Long: its write and its header (ordered behind it) both wait.
    let long: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    let spec = Prepare {
        peer: Rank(1),
        dir: Direction::Request,
        category: Category::Long,
        nargs: 2,
        least: long.len(),
        most: long.len(),
        long_offset: 4096,
    };
    a.try_send(&spec, H, &[window - 1, 0], &long).unwrap();
    // A put the transport refuses at once is would-block, nothing counted.
    let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
    let src = [5u8; 100];
    // SAFETY: `src` outlives the call, and nothing was counted on `lc`
    // (checked below), so nothing reads it after.
    let put = unsafe { a.try_put(Rank(1), 0, src.as_ptr(), src.len(), &lc, &rc) };
    match put {
        Err(Error::WouldBlock { peer, resource }) => {
            assert_eq!(peer, Rank(1));
            assert_eq!(resource, "the provider's transmit queue");
        }
        other => panic!("expected would-block from the refused put, got {other:?}"),
    }
    assert_eq!(
        (lc.outstanding(), rc.outstanding()),
        (0, 0),
        "nothing counted"
    );
    for _ in 0..20 {
        assert!(poll(a).is_empty());
        assert!(poll(b).is_empty());
    }
    assert!(fabric.refused(0) > 0, "the transport did refuse");
    assert_eq!(fabric.in_flight(0), 0, "nothing reached the fabric");
    assert_eq!(fabric.sends(0, 1), 0);
    assert_eq!(
        fabric.peek(1, 4096, long.len()).unwrap(),
        vec![0; long.len()]
    );
    // One post at a time from now on: the backlog drains in order.
    fabric.set_capacity(0, Some(1));
    let mut got = Vec::new();
    for _ in 0..TRIES {
        if got.len() == window as usize {
            break;
        }
        assert!(poll(a).is_empty());
        got.extend(poll(b));
    }
    let last = got.pop().expect("the Long arrived");
    assert_eq!(last.category, Category::Long);
    assert_eq!(last.args, vec![window - 1, 0]);
    assert_eq!(last.payload, long, "the Long's header came after its write");
    check_in_order(&got, 0, window - 1);
    assert_eq!(fabric.peek(1, 4096, long.len()).unwrap(), long);
    assert_eq!(fabric.overruns(), 0);
}

/// Send `n` messages to `peer` (polling the sender and `receivers`
/// between sends) until `stop(i)` says to stop; the first error.
fn flood_until_error(c: &C, peer: u32, receivers: &[&C], mut each: impl FnMut(u32)) -> Error {
    let mut seq = 0;
    for _ in 0..TRIES {
        each(seq);
        match send(c, peer, seq) {
            Ok(()) => seq += 1,
            Err(Error::WouldBlock { .. }) => std::thread::sleep(Duration::from_micros(500)),
            Err(e) => return e,
        }
        poll(c);
        for r in receivers {
            poll(r);
        }
    }
    panic!("{TRIES} tries to flood rank {peer} and no error");
}

fn assert_names(e: &Error, me: u32, peer: u32, why: &str) {
    match e {
        Error::PeerUnreachable {
            from, rank, why: w, ..
        } => {
            assert_eq!((*from, *rank), (Rank(me), Rank(peer)), "{e}");
            assert!(w.contains(why), "{e}: the cause says {why:?}");
        }
        other => panic!("expected rank {peer} unreachable, got {other}"),
    }
    assert!(e.to_string().contains(&format!("rank {peer}")), "{e}");
}

#[test]
fn a_peer_that_dies_mid_flood_is_named_on_the_survivor_which_goes_on_with_the_others() {
    let cfg = LoopConfig::new(3);
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let (a, b, c) = (&job[0], &job[1], &job[2]);
    let mut dead = false;
    let e = flood_until_error(a, 1, &[], |seq| {
        if seq == 25 && !dead {
            fabric.set_fate(1, Fate::Dead);
            dead = true;
        }
        if !dead {
            poll(b);
        }
    });
    assert!(dead, "the error came after the peer died");
    assert_names(&e, 0, 1, "loopback: rank 1 is dead");
    let gone = a
        .peer_gone(Rank(1))
        .expect("the survivor knows the peer is gone");
    assert!(gone.contains("rank 1"), "{gone}");
    // Rank 2 is unaffected.
    let mut sent = 0;
    let mut got = Vec::new();
    for _ in 0..TRIES {
        if got.len() == 10 {
            break;
        }
        if sent < 10 && send(a, 2, sent).is_ok() {
            sent += 1;
        }
        poll(a);
        got.extend(poll(c));
    }
    check_in_order(&got, 0, 10);
    assert!(a.peer_gone(Rank(2)).is_none());
}

#[test]
fn a_peer_that_stops_answering_is_named_once_the_timeout_passes() {
    let mut cfg = LoopConfig::new(2);
    cfg.settings.timeout_secs = 1;
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    let mut silent = false;
    let e = flood_until_error(a, 1, &[], |seq| {
        if seq == 25 && !silent {
            fabric.set_fate(1, Fate::Silent);
            silent = true;
        }
        if !silent {
            poll(b);
        }
    });
    assert!(silent);
    // Named, and for silence past the timeout (not a failed operation).
    assert_names(&e, 0, 1, "nothing heard from it for 1 s");
    assert!(e.to_string().contains(Loopback::TIMEOUT_VAR), "{e}");
    // Its posts held on the wire fail now, so the exit drain need not wait.
    fabric.set_fate(1, Fate::Dead);
}

#[test]
fn the_exit_drain_sends_what_was_still_in_flight_then_says_goodbye() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let window = cfg.settings.window as u32;
    let mut job = job(&cfg);
    // Narrow and slow: one post at a time, carried 3 polls after it was
    // posted; and held on the wire (rank 1 not answering) until the drain.
    fabric.set_capacity(0, Some(1));
    fabric.set_delay(3);
    fabric.set_fate(1, Fate::Silent);
    for seq in 0..window {
        send(&job[0], 1, seq).unwrap();
    }
    let b = job.pop().expect("rank 1");
    let a = job.pop().expect("rank 0");
    for _ in 0..10 {
        assert!(poll(&a).is_empty());
    }
    assert_eq!(
        fabric.in_flight(0),
        1,
        "one on the wire, the rest in the backlog"
    );
    assert_eq!(fabric.sends(0, 1), 0, "nothing arrived before the drain");
    fabric.set_fate(1, Fate::Alive);
    // Dropping it drains (bounded by the kit's drain limit): every
    // message was carried before the endpoint closed, the goodbye last.
    drop(a);
    assert_eq!(fabric.sends(0, 1), u64::from(window) + 1);
    let mut got = Vec::new();
    let mut gone = None;
    for _ in 0..TRIES {
        got.extend(poll(&b));
        gone = b.peer_gone(Rank(0));
        if gone.is_some() {
            break;
        }
    }
    check_in_order(&got, 0, window);
    let gone = gone.expect("rank 1 learned that rank 0 left");
    assert!(gone.contains("rank 0 left the job"), "{gone}");
}

/// Poll `c` until `done` completes (bounded); `each` looks after each poll.
fn wait(c: &C, done: &OpCounter, mut each: impl FnMut()) {
    for _ in 0..TRIES {
        poll(c);
        if done.is_done() {
            return;
        }
        each();
    }
    panic!("an operation did not complete in {TRIES} polls");
}

fn data(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ salt)
        .collect()
}

#[test]
fn a_put_completes_locally_and_remotely_by_delivery() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let a = &job[0];
    fabric.set_delay(2);
    // Held on the wire until rank 1 answers again.
    fabric.set_fate(1, Fate::Silent);
    // Larger than a send buffer (not bounced) and than the largest
    // message (two writes).
    let src = data(100_000, 1);
    let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
    // SAFETY: `src` stays alive and unmodified until `lc` completes
    // (waited for below).
    unsafe { a.try_put(Rank(1), 8, src.as_ptr(), src.len(), &lc, &rc) }.unwrap();
    for _ in 0..10 {
        poll(a);
    }
    assert!(!rc.peek_done() && !lc.peek_done(), "nothing carried yet");
    assert_ne!(fabric.peek(1, 8, src.len()).unwrap(), src);
    fabric.set_fate(1, Fate::Alive);
    wait(a, &rc, || {});
    assert_eq!(fabric.peek(1, 8, src.len()).unwrap(), src);
    assert!(lc.peek_done(), "local completion by the write's completion");
    assert!(rc.failure().is_none() && lc.failure().is_none());
    assert_eq!(
        fabric.reads(0, 1),
        0,
        "delivery completion needs no read back"
    );
}

#[test]
fn without_delivery_completion_a_put_is_remotely_complete_only_after_a_read_back() {
    let mut cfg = LoopConfig::new(2);
    cfg.caps.delivery_complete = false;
    cfg.caps.put_completion = PutCompletion::ReadBack;
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let a = &job[0];
    // Writes land 4 polls after they were posted (or, held, when rank 1
    // answers again), and their transmit completion comes at the first.
    fabric.set_delay(3);
    for (len, at, salt, rc) in [
        (200, 0u64, 2, OpCounter::new(0)), // bounced, its own counter
        (100_000, 4096, 3, OpCounter::batched(0)), // two writes, batched
    ] {
        let src = data(len, salt);
        let lc = OpCounter::new(0);
        let reads = fabric.reads(0, 1);
        // Not bounced: the source is free once the writes complete,
        // which they do while their bytes are held on the wire; the put
        // is not remotely complete then.
        let hold = len > 8192;
        if hold {
            fabric.set_fate(1, Fate::Silent);
        }
        // SAFETY: `src` stays alive and unmodified until `lc` completes
        // (waited for below).
        unsafe { a.try_put(Rank(1), at, src.as_ptr(), len, &lc, &rc) }.unwrap();
        if hold {
            wait(a, &lc, || {});
            for _ in 0..10 {
                poll(a);
            }
            assert_ne!(fabric.peek(1, at, len).unwrap(), src, "held");
            assert!(!rc.peek_done(), "remotely complete before it landed");
            fabric.set_fate(1, Fate::Alive);
        }
        wait(a, &rc, || {});
        // The moment it says complete, the bytes are there.
        assert_eq!(fabric.peek(1, at, len).unwrap(), src, "{len} bytes landed");
        assert!(fabric.reads(0, 1) > reads, "a read proved it");
        wait(a, &lc, || {});
        assert!(rc.failure().is_none());
    }
}

#[test]
fn a_get_reads_the_peers_segment_small_and_split() {
    let mut cfg = LoopConfig::new(2);
    cfg.caps.max_msg = 32 << 10;
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let (a, b) = (&job[0], &job[1]);
    fabric.set_delay(1);
    for (len, at, salt) in [(100usize, 64u64, 4u8), (150_000, 8192, 5)] {
        let want = data(len, salt);
        b.segment().write(at, &want).unwrap();
        let mut dst = vec![0u8; len];
        let done = OpCounter::new(0);
        // SAFETY: `dst` stays alive and untouched until `done` completes
        // (waited for below).
        unsafe { a.try_get(dst.as_mut_ptr(), Rank(1), at, len, &done) }.unwrap();
        wait(a, &done, || {});
        assert!(done.failure().is_none());
        assert_eq!(dst, want, "{len} bytes got");
    }
    // A get from a dead peer fails, naming it.
    fabric.set_fate(1, Fate::Dead);
    let mut dst = vec![0u8; 10];
    let done = OpCounter::new(0);
    // SAFETY: as above.
    unsafe { a.try_get(dst.as_mut_ptr(), Rank(1), 0, 10, &done) }.unwrap();
    wait(a, &done, || {});
    let why = done.failure().expect("the get failed");
    assert!(why.contains("rank 1"), "{why}");
}

#[test]
fn operations_held_by_the_network_fail_when_their_peer_leaves() {
    let cfg = LoopConfig::new(2);
    let fabric = cfg.fabric.clone();
    let mut job = job(&cfg);
    // Everything to rank 1 stays on the wire, never completed: as
    // libfabric's shm provider does with a post to a process that left.
    fabric.set_fate(1, Fate::Silent);
    let b = job.pop().expect("rank 1");
    let a = job.pop().expect("rank 0");
    let small = data(200, 6);
    let large = data(100_000, 7);
    let mut dst = vec![0u8; 100];
    let puts: Vec<_> = (0..2)
        .map(|_| (OpCounter::new(0), OpCounter::new(0)))
        .collect();
    let got = OpCounter::new(0);
    for (src, (lc, rc)) in [&small, &large].into_iter().zip(&puts) {
        // SAFETY: the sources stay alive and unmodified until their local
        // completions (checked below, before they are dropped).
        unsafe { a.try_put(Rank(1), 0, src.as_ptr(), src.len(), lc, rc) }.unwrap();
    }
    // SAFETY: `dst` stays alive until `got` completes (checked below).
    unsafe { a.try_get(dst.as_mut_ptr(), Rank(1), 0, dst.len(), &got) }.unwrap();
    for _ in 0..10 {
        poll(&a);
    }
    assert!(!got.peek_done() && puts.iter().all(|(_, rc)| !rc.peek_done()));
    // Rank 1 closes: its goodbye reaches rank 0, whose operations to it
    // are still held by the network.
    drop(b);
    for (_, rc) in &puts {
        wait(&a, rc, || {});
        let why = rc.failure().expect("a put to a rank that left failed");
        assert!(why.contains("rank 1 left the job"), "{why}");
    }
    wait(&a, &got, || {});
    let why = got.failure().expect("a get from a rank that left failed");
    assert!(why.contains("rank 1 left the job"), "{why}");
    assert!(
        puts.iter().all(|(lc, _)| lc.peek_done()),
        "sources are free"
    );
    assert!(
        dst.iter().all(|&b| b == 0),
        "nothing written after the failure"
    );
    // Later operations to it are refused at the start, naming it.
    let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
    // SAFETY: as above.
    let e = unsafe { a.try_put(Rank(1), 0, small.as_ptr(), small.len(), &lc, &rc) }.unwrap_err();
    assert!(e.to_string().contains("rank 1"), "{e}");
}

/// Poll `c` (and let it check its operations in flight, as the endpoint
/// does when its polls stall) until `done` holds or `limit` passes;
/// returns whether it held.
fn poll_checking(c: &C, limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        poll(c);
        c.check_in_flight();
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

#[test]
fn operations_held_by_the_network_fail_when_their_peer_stays_silent_past_the_timeout() {
    let mut cfg = LoopConfig::new(2);
    cfg.settings.timeout_secs = 1;
    let fabric = cfg.fabric.clone();
    let job = job(&cfg);
    let a = &job[0];
    // Rank 1 stops answering: its process may still be there (stopped),
    // so nothing fails on its own.
    fabric.set_fate(1, Fate::Silent);
    let mut small = vec![0u8; 100];
    let mut large = vec![0u8; 100_000];
    let (got_small, got_large) = (OpCounter::new(0), OpCounter::new(0));
    // SAFETY: both destinations stay alive and untouched until their
    // completions (checked below, before they are dropped).
    unsafe {
        a.try_get(small.as_mut_ptr(), Rank(1), 0, small.len(), &got_small)
            .unwrap();
        a.try_get(large.as_mut_ptr(), Rank(1), 0, large.len(), &got_large)
            .unwrap();
    }
    let start = std::time::Instant::now();
    assert!(
        poll_checking(a, Duration::from_secs(10), || got_small.peek_done()),
        "the get from the silent rank never failed"
    );
    let secs = start.elapsed().as_secs_f64();
    assert!(secs >= 1.0, "declared dead before the timeout: {secs} s");
    let why = got_small
        .failure()
        .expect("the get from a silent rank failed");
    assert!(
        why.contains("rank 1 stopped answering") && why.contains(Loopback::TIMEOUT_VAR),
        "{why}"
    );
    assert!(a.peer_gone(Rank(1)).is_some(), "rank 1 is gone now");
    // The large get reads into the caller's own memory, which a rank that
    // is only stopped may yet write: it stays with the network.
    assert!(!got_large.peek_done(), "the caller's memory was given back");
    // Its peer dead for good, the network fails it.
    fabric.set_fate(1, Fate::Dead);
    wait(a, &got_large, || {});
    assert!(got_large.failure().is_some());
    assert!(small.iter().chain(&large).all(|&b| b == 0));
}

#[test]
fn a_peer_waited_on_that_does_not_poll_answers_pings_and_is_not_declared_dead() {
    let mut cfg = LoopConfig::new(2);
    cfg.settings.timeout_secs = 1;
    let job = job(&cfg);
    let a = &job[0];
    // Rank 1 never polls (the test never drives it): its progress ticker
    // answers rank 0's pings. Rank 0 asks about it for three timeouts, as
    // a wait on it does.
    let gone = poll_checking(a, Duration::from_secs(3), || a.peer_gone(Rank(1)).is_some());
    assert!(
        !gone,
        "a live rank was declared dead: {:?}",
        a.peer_gone(Rank(1))
    );
}
