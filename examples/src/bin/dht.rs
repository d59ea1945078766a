//! A distributed hash table over active messages: every key lives on the
//! rank its hash names. An insert is a Medium request carrying the value
//! (acknowledged by a Short reply); a lookup is a Short request answered
//! by a negotiated-payload Medium reply that the owner assembles straight
//! in rgex's buffer (or a Short "absent" reply).
//!
//! Each rank inserts `K` keys of its own (values of 0..=200 bytes derived
//! from the key), waits for every acknowledgement, then looks up the keys
//! of its right neighbour and as many keys nobody inserted, and checks
//! every answer. Rank 0 reports the total, which an allreduce of the
//! per-rank table sizes confirms.
//!
//! With `rate` as the second argument, rank 0 also prints the inserts and
//! lookups per second (each rank's rate from its first request to its
//! last answer, summed over the ranks), for comparison with rgex-pgas's
//! DHT in pgas/bench-lamellar/run.sh.
//!
//! Run: `rgex-run -n 4 target/release/dht [K] [rate]`

use rgex::{Client, Flags, HandlerId, Rank, ReduceOp, Token};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The value stored under `key`: 0..=200 bytes, a pattern of the key.
fn value_of(key: u64) -> Vec<u8> {
    let len = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % 201;
    (0..len)
        .map(|i| (key as u8).wrapping_add(i as u8))
        .collect()
}

/// The rank that owns `key` (a mixing hash, so consecutive keys spread).
fn owner(key: u64, ranks: u32) -> Rank {
    let h = (key ^ (key >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    Rank(((h >> 32) % u64::from(ranks)) as u32)
}

fn split(key: u64) -> [u32; 2] {
    [key as u32, (key >> 32) as u32]
}

fn join(a: &[u32]) -> u64 {
    u64::from(a[0]) | u64::from(a[1]) << 32
}

/// The rank's share of the table and the answers to its own requests.
#[derive(Default)]
struct Shared {
    table: Mutex<HashMap<u64, Vec<u8>>>,
    /// Inserts acknowledged by their owner.
    acked: AtomicU64,
    /// Lookup answers by key: `Some(value)` or `None` for absent.
    answers: Mutex<HashMap<u64, Option<Vec<u8>>>>,
}

/// The handlers, registered in the same order on every rank.
struct Handlers {
    insert: HandlerId,
    lookup: HandlerId,
}

fn register(t: &rgex::HandlerTable, sh: &Arc<Shared>) -> rgex::Result<Handlers> {
    let s = sh.clone();
    let ack = t.register("dht.ack", move |_tok, _msg| {
        s.acked.fetch_add(1, Ordering::Release);
    })?;
    let s = sh.clone();
    let found = t.register("dht.found", move |_tok, msg| {
        let key = join(msg.args());
        let v = Some(msg.payload().to_vec());
        s.answers.lock().unwrap().insert(key, v);
    })?;
    let s = sh.clone();
    let absent = t.register("dht.absent", move |_tok, msg| {
        s.answers.lock().unwrap().insert(join(msg.args()), None);
    })?;
    let s = sh.clone();
    let insert = t.register("dht.insert", move |tok, msg| {
        let key = join(msg.args());
        s.table.lock().unwrap().insert(key, msg.payload().to_vec());
        // A failed reply is returned: rgex reports it with the handler's
        // name and the sender's rank from this rank's next poll.
        tok.reply_short(ack, msg.args(), Flags::empty())
    })?;
    let s = sh.clone();
    let lookup = t.register("dht.lookup", move |tok, msg| {
        let key = join(msg.args());
        // Copied out so the reply is sent without holding the table.
        let v = s.table.lock().unwrap().get(&key).cloned();
        match v {
            Some(v) => reply_value(tok, found, msg.args(), &v),
            None => tok.reply_short(absent, msg.args(), Flags::empty()),
        }
    })?;
    Ok(Handlers { insert, lookup })
}

/// Answer with `v`, assembled in rgex's own buffer (no client copy).
fn reply_value(tok: &Token<'_>, h: HandlerId, args: &[u32], v: &[u8]) -> rgex::Result<()> {
    let mut sd = tok.prepare_reply_medium(None, v.len(), v.len(), 2, Flags::empty())?;
    sd.buf()[..v.len()].copy_from_slice(v);
    sd.commit(h, args, v.len())
}

/// Poll until `done` holds.
fn poll_until(client: &Client, mut done: impl FnMut() -> bool) -> rgex::Result<()> {
    while !done() {
        client.endpoint().poll()?;
    }
    Ok(())
}

fn main() -> rgex::Result<()> {
    let k: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let timed = std::env::args().nth(2).as_deref() == Some("rate");
    let sh = Arc::new(Shared::default());
    let (client, h) = rgex::init_with(|t| register(t, &sh))?;
    let (me, n) = (client.rank().0, client.size());
    let key = |r: u32, i: u64| u64::from(r) * k + i;

    // Insert this rank's keys; each owner acknowledges.
    let t0 = Instant::now();
    for i in 0..k {
        let key = key(me, i);
        client.endpoint().request_medium(
            owner(key, n),
            h.insert,
            &split(key),
            &value_of(key),
            Flags::empty(),
        )?;
    }
    poll_until(&client, || sh.acked.load(Ordering::Acquire) == k)?;
    let inserts = t0.elapsed();
    client.barrier()?;

    // Look up the right neighbour's keys, and keys nobody inserted.
    let right = (me + 1) % n;
    let absent_base = u64::from(n) * k;
    let t1 = Instant::now();
    for i in 0..k {
        for key in [key(right, i), absent_base + key(me, i)] {
            client.endpoint().request_short(
                owner(key, n),
                h.lookup,
                &split(key),
                Flags::empty(),
            )?;
        }
    }
    poll_until(&client, || sh.answers.lock().unwrap().len() as u64 == 2 * k)?;
    let lookups = t1.elapsed();
    let answers = sh.answers.lock().unwrap();
    for i in 0..k {
        let present = key(right, i);
        assert_eq!(
            answers[&present].as_deref(),
            Some(&value_of(present)[..]),
            "{}: key {present} came back wrong",
            client.rank()
        );
        let missing = absent_base + key(me, i);
        assert_eq!(
            answers[&missing],
            None,
            "{}: key {missing} was never inserted but was found",
            client.rank()
        );
    }
    drop(answers);
    client.barrier()?;
    let stored = sh.table.lock().unwrap().len() as u64;
    let total = client.world().allreduce(&[stored], ReduceOp::Sum)?[0];
    assert_eq!(total, k * u64::from(n), "keys stored across the table");
    if me == 0 {
        println!(
            "dht: {total} keys on {n} ranks ({k} inserted by each), every lookup exact, {} absent keys reported absent",
            k * u64::from(n)
        );
    }
    if timed {
        let rate = |ops: u64, d: Duration| ops as f64 / d.as_secs_f64();
        let rates = [rate(k, inserts), rate(2 * k, lookups)];
        let sum = client.world().allreduce(&rates, ReduceOp::Sum)?;
        if me == 0 {
            println!(
                "dht: {:.0} inserts/s, {:.0} lookups/s (all ranks)",
                sum[0], sum[1]
            );
        }
    }
    Ok(())
}
