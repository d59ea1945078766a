//! Statistics conformance (`RGEX_STATS`), run as every rank of a job.
//!
//! A known workload, each rank to the next (itself when alone): N AMs of
//! each kind and size class (Short; Medium of 0, 64, 1024 bytes and the
//! Medium limit; N negotiated-payload Mediums of 100 bytes; Long of 4 KiB),
//! each answered by a Short reply; M puts and M gets of 8 bytes; K
//! fetch-adds; B barriers. `Client::stats()` must then count exactly
//! those, by kind, size class, FP or NP, path and implementation, both as
//! totals of the client's own AMs and as the difference across the
//! workload. The cargo driver (tests/tests/stats.rs) checks the JSON each
//! rank wrote to `RGEX_STATS_FILE` against the same counts.
//!
//! Rank 0 prints each exact total it checked as `expect: KEY=VALUE`, for
//! the driver. Usage: `stats_conformance on N M K | off`

use rgex::observe::{size_class, Stats, SIZE_CLASSES};
use rgex::{
    AtomicDomain, AtomicFlags, AtomicImplementation, AtomicOp, Category, Client, Flags, GlobalAddr,
    NbiCategory, OpSet, Rank, RmaPath, Signal, SignalPath,
};
use rgex_tests::{conduit_banner, ok, wait_until};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

type Res<T = ()> = Result<T, String>;

fn e2s(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Where each rank's Longs land in its peer's segment (its own window).
fn long_at(client: &Client) -> u64 {
    u64::from(client.rank().0) * 8192
}

/// Where each rank's puts go, and the fetch-added word, past the Longs.
fn words_at(client: &Client) -> u64 {
    u64::from(client.size()) * 8192 + u64::from(client.rank().0) * 64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let replies = Arc::new(AtomicU64::new(0));
    let seen = replies.clone();
    let (client, request) = rgex::init_with(move |t| {
        let reply = t.register("stats.reply", move |_, _| {
            // Relaxed: a count the sender polls for, ordering nothing.
            seen.fetch_add(1, Ordering::Relaxed);
        })?;
        t.register("stats.request", move |tok, _| {
            tok.reply_short(reply, &[], Flags::empty())
        })
    })
    .unwrap_or_else(|e| {
        eprintln!("stats_conformance: init: {e}");
        std::process::exit(1)
    });
    conduit_banner(&client);
    let num = |i: usize| -> u64 { args.get(i).and_then(|a| a.parse().ok()).unwrap_or(10) };
    let r = match args.first().map(String::as_str) {
        Some("on") => on(&client, request, &replies, num(1), num(2), num(3)),
        Some("off") => off(&client),
        _ => Err(format!(
            "usage: stats_conformance on N M K | off (got {args:?})"
        )),
    };
    if let Err(e) = r {
        eprintln!("{}: {e}", client.rank());
        std::process::exit(1);
    }
    if let Err(e) = client.finalize() {
        eprintln!("finalize: {e}");
        std::process::exit(1);
    }
}

/// Nothing asked: nothing counted, and no file.
fn off(client: &Client) -> Res {
    if client.stats().is_some() {
        return Err("RGEX_STATS unset, yet Client::stats() counts".into());
    }
    ok(client, "off: Client::stats() is None");
    Ok(())
}

fn stats(client: &Client) -> Res<Stats> {
    client
        .stats()
        .ok_or_else(|| "RGEX_STATS is set, yet Client::stats() is None".to_string())
}

/// `after - before` of counter `key`.
fn diff(before: &Stats, after: &Stats, key: &str) -> Res<u64> {
    match (before.get(key), after.get(key)) {
        (Some(b), Some(a)) => Ok(a - b),
        _ => Err(format!("no counter {key}")),
    }
}

/// Require `got == want` of counter `key`, and tell the driver (rank 0
/// prints `expect: KEY=VALUE`, which every rank's JSON must hold too).
fn expect(stats: &Stats, key: &str, want: u64) -> Res {
    if stats.rank == 0 {
        println!("expect: {key}={want}");
    }
    match stats.get(key) {
        Some(got) if got == want => Ok(()),
        got => Err(format!(
            "rank {}: counter {key} is {got:?}, expected {want}",
            stats.rank
        )),
    }
}

/// The client AM counts the workload makes (totals: the client sends
/// nothing else), by key.
fn expected_ams(n: u64, max_medium: usize) -> Vec<(String, u64)> {
    let mut want: Vec<(String, u64)> = Vec::new();
    let mut add = |dir: &str, kind: &str, class: usize, k: u64| {
        let key = format!("am.client.{dir}.{kind}.{}", SIZE_CLASSES[class]);
        match want.iter_mut().find(|(w, _)| *w == key) {
            Some((_, v)) => *v += k,
            None => want.push((key, k)),
        }
    };
    add("request", "short", 0, n);
    for len in [0, 64, 1024, max_medium, 100] {
        add("request", "medium", size_class(Category::Medium, len), n);
    }
    add("request", "long", 4, n);
    add("reply", "short", 0, 7 * n);
    // 6N fixed-payload requests and 7N replies, N negotiated-payload;
    // delivered here: the peer's 7N requests and the 7N replies.
    want.push(("am.client.fp".into(), 13 * n));
    want.push(("am.client.np".into(), n));
    want.push(("am.client.delivered.request".into(), 7 * n));
    want.push(("am.client.delivered.reply".into(), 7 * n));
    want
}

fn on(
    client: &Client,
    request: rgex::HandlerId,
    replies: &AtomicU64,
    n: u64,
    m: u64,
    k: u64,
) -> Res {
    let ep = client.endpoint();
    let me = client.rank();
    let peer = Rank((me.0 + 1) % client.size());
    let max_medium = ep.max_medium(peer, 0);
    let dom =
        AtomicDomain::<u64>::new(ep, client.world(), OpSet::of(&[AtomicOp::Fadd])).map_err(e2s)?;
    let barriers = 3u64;
    client.barrier().map_err(e2s)?;

    let before = stats(client)?;
    let medium = vec![7u8; max_medium];
    let long = vec![9u8; 4096];
    for _ in 0..n {
        let f = Flags::empty();
        ep.request_short(peer, request, &[1], f).map_err(e2s)?;
        for len in [0, 64, 1024, max_medium] {
            ep.request_medium(peer, request, &[], &medium[..len], f)
                .map_err(e2s)?;
        }
        let mut p = ep
            .prepare_request_medium(peer, None, 100, 100, 0, f)
            .map_err(e2s)?;
        p.buf()[..100].fill(3);
        p.commit(request, &[], 100).map_err(e2s)?;
        ep.request_long(peer, request, &[], &long, long_at(client), f)
            .map_err(e2s)?;
    }
    // Relaxed: a count this thread's polls raise.
    wait_until(client, "the replies", || {
        replies.load(Ordering::Relaxed) == 7 * n
    });
    let at = GlobalAddr::new(peer, words_at(client));
    let mut back = [0u8; 8];
    // M of each: blocking puts and gets, puts and gets with an event,
    // implicit puts, and puts-with-signal (data at +16, the word at +24).
    let data = GlobalAddr::new(peer, words_at(client) + 16);
    let signal = Signal::add(words_at(client) + 24, 1);
    for i in 0..m {
        let bytes = i.to_ne_bytes();
        ep.put(at, &bytes, Flags::empty()).map_err(e2s)?;
        ep.get(&mut back, at, Flags::empty()).map_err(e2s)?;
        ep.put_nb(at, &bytes, Flags::empty())
            .and_then(|e| e.wait())
            .map_err(e2s)?;
        ep.get_nb(vec![0u8; 8], at, Flags::empty())
            .map_err(|e| e2s(e.error))?
            .wait()
            .map_err(e2s)?;
        ep.put_nbi(at, &bytes, Flags::empty()).map_err(e2s)?;
        ep.put_signal(data, &bytes, signal, Flags::empty())
            .map_err(e2s)?;
    }
    ep.nbi_wait(NbiCategory::Put).map_err(e2s)?;
    let word = GlobalAddr::new(peer, words_at(client) + 8);
    for _ in 0..k {
        dom.fetch_add(word, 1, AtomicFlags::empty()).map_err(e2s)?;
    }
    let after_ops = stats(client)?;
    for _ in 0..barriers {
        client.barrier().map_err(e2s)?;
    }
    let after = stats(client)?;

    // The client's AMs: exact totals once every rank has passed the
    // barriers (each entered them with all its replies in, so every
    // reply it owed was sent); its requests all inside the workload
    // (its replies to the peer's requests may come before or after).
    let wants = expected_ams(n, max_medium);
    for (key, want) in &wants {
        expect(&after, key, *want)?;
        if key.starts_with("am.client.request.") && diff(&before, &after_ops, key)? != *want {
            return Err(format!("{key}: counted outside the workload"));
        }
    }
    ok(
        client,
        "client AMs by kind, direction and payload size class",
    );
    let sent: u64 = after
        .iter()
        .filter(|(key, _)| key.starts_with("am.client.re"))
        .map(|(_, v)| v)
        .sum();
    if sent != 14 * n {
        return Err(format!(
            "{sent} client AMs sent in all, expected {}",
            14 * n
        ));
    }
    ok(client, "FP against NP, and deliveries");

    let path = match ep.rma_path(peer) {
        RmaPath::Mapped => "mapped",
        RmaPath::Native => "native",
        RmaPath::Reference => "reference",
    };
    if me.0 == 0 {
        println!("rma path: {path}");
    }
    for (op, ops) in [("put", 3 * m), ("get", 2 * m)] {
        expect(&after, &format!("rma.{op}.{path}.ops"), ops)?;
        expect(&after, &format!("rma.{op}.{path}.bytes"), 8 * ops)?;
        for other in ["mapped", "native", "reference", "cma"]
            .iter()
            .filter(|o| **o != path)
        {
            expect(&after, &format!("rma.{op}.{other}.ops"), 0)?;
        }
        expect(&after, &format!("rma.{op}.blocking"), m)?;
        expect(&after, &format!("rma.{op}.event"), m)?;
        expect(&after, &format!("rma.{op}.counted"), 0)?;
    }
    expect(&after, "rma.put.nbi", m)?;
    expect(&after, "rma.get.nbi", 0)?;
    let signal_path = match ep.put_signal_path(peer) {
        SignalPath::Mapped => "mapped",
        SignalPath::Native => "native",
        SignalPath::Reference => "reference",
    };
    if me.0 == 0 {
        println!("put-with-signal path: {signal_path}");
    }
    expect(&after, &format!("rma.put_signal.{signal_path}.ops"), m)?;
    expect(
        &after,
        &format!("rma.put_signal.{signal_path}.bytes"),
        8 * m,
    )?;
    let signals: u64 = after
        .iter()
        .filter(|(key, _)| key.starts_with("rma.put_signal.") && key.ends_with(".ops"))
        .map(|(_, v)| v)
        .sum();
    if signals != m {
        return Err(format!("{signals} puts-with-signal counted, expected {m}"));
    }
    ok(
        client,
        "puts and gets, ops and bytes, by path and by completion; puts-with-signal",
    );

    let imp = match dom.implementation() {
        AtomicImplementation::SharedMemory => "shared",
        AtomicImplementation::Offload => "offload",
        AtomicImplementation::Reference if peer == me => "shared",
        AtomicImplementation::Reference => "reference",
    };
    if me.0 == 0 {
        println!("atomics implementation: {imp}");
    }
    expect(&after, &format!("atomics.{imp}.fadd"), k)?;
    let all: u64 = after
        .iter()
        .filter(|(key, _)| key.starts_with("atomics."))
        .map(|(_, v)| v)
        .sum();
    if all != k {
        return Err(format!("{all} atomics counted, expected {k}"));
    }
    ok(client, "atomics by implementation and op");

    if diff(&after_ops, &after, "coll.barrier")? != barriers {
        return Err("the barriers were not counted once each".into());
    }
    ok(client, "collectives by kind");
    let (polls, empty) = (
        diff(&before, &after_ops, "poll.polls")?,
        diff(&before, &after_ops, "poll.empty_polls")?,
    );
    if polls == 0 || empty > polls {
        return Err(format!("{polls} polls, {empty} empty"));
    }
    ok(client, "polls and empty polls");
    let json = after.to_json();
    match rgex::observe::parse_json(&json) {
        Some((rank, values)) if rank == me.0 && values.len() == after.iter().count() => {}
        _ => return Err(format!("the JSON does not read back: {json}")),
    }
    ok(client, "the stats JSON reads back");
    Ok(())
}
