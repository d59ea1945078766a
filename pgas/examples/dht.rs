//! A distributed hash table through rgex-pgas: every key lives on rank
//! `key % n` in a local `HashMap`; inserts and finds are RPCs that run
//! there. Values have mixed sizes (from 1 byte to 100 KB, so some calls
//! are staged and read by their target); a find of a missing key is
//! reported as absent. Checks every result exactly and prints
//! throughput.
//!
//! With `raw` as the third argument it runs raw rgex's workload instead
//! (`examples/src/bin/dht.rs`: values of 0..=200 bytes, the same hashed
//! owner, every request issued before any answer is awaited), so the two
//! can be compared in one run. As raw rgex counts its inserts'
//! acknowledgements, the inserts are counted by one [`Promise`]; with
//! `raw-futures` each insert has its own future, as in the default mode.
//! Either way every insert's `fresh` is checked: a key inserted twice is
//! counted at its owner and fails the run.
//!
//! Values travel as `serde_bytes::ByteBuf`: serde writes a plain
//! `Vec<u8>` one element at a time, a byte buffer as one slice.
//!
//! Usage: `dht [KEYS_PER_RANK] [WINDOW] [raw | raw-futures]`

use rgex::Rank;
use rgex_pgas::{Pgas, Promise, RpcFuture};
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// This rank's part of the table, and how many of its keys were
/// inserted twice.
#[derive(Default)]
struct Table(Mutex<HashMap<u64, ByteBuf>>, AtomicU64);

/// The value stored for `key`: its length varies with the key, and every
/// 500th is 100 KB.
fn value_of(key: u64) -> Vec<u8> {
    let len = if key % 500 == 7 {
        100_000
    } else {
        (key % 13) as usize * 37 + 1
    };
    (0..len)
        .map(|i| (key as usize).wrapping_mul(31).wrapping_add(i) as u8)
        .collect()
}

/// Raw rgex's DHT's value for `key` (examples/src/bin/dht.rs).
fn raw_value_of(key: u64) -> Vec<u8> {
    let len = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % 201;
    (0..len)
        .map(|i| (key as u8).wrapping_add(i as u8))
        .collect()
}

/// Raw rgex's DHT's owner of `key`.
fn raw_owner(key: u64, ranks: u32) -> Rank {
    let h = (key ^ (key >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    Rank(((h >> 32) % u64::from(ranks)) as u32)
}

/// Insert at the owner: true if the key was new.
fn insert(pg: &Pgas, (key, value): (u64, ByteBuf)) -> bool {
    let t = pg
        .state::<Table>()
        .expect("the table is set before any insert");
    let fresh = t.0.lock().expect("table").insert(key, value).is_none();
    if !fresh {
        t.1.fetch_add(1, Ordering::Relaxed);
    }
    fresh
}

/// Find at the owner.
fn find(pg: &Pgas, key: u64) -> Option<ByteBuf> {
    let t = pg
        .state::<Table>()
        .expect("the table is set before any find");
    t.0.lock().expect("table").get(&key).cloned()
}

/// Wait for `window` futures at a time; check each with `check`.
fn drain<R: serde::de::DeserializeOwned>(
    pg: &Pgas,
    pending: &mut Vec<(u64, RpcFuture<R>)>,
    check: impl Fn(u64, R),
) -> rgex_pgas::Result<()> {
    for (key, f) in pending.drain(..) {
        check(key, pg.wait(f)?);
    }
    Ok(())
}

fn main() -> rgex_pgas::Result<()> {
    let mut args = std::env::args().skip(1);
    let k: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let window: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let mode = args.next();
    let raw = matches!(mode.as_deref(), Some("raw" | "raw-futures"));
    let promised = mode.as_deref() == Some("raw");
    let value_of: fn(u64) -> Vec<u8> = if raw { raw_value_of } else { value_of };
    // Raw's workload awaits nothing until every request is out.
    let window = if raw { usize::MAX } else { window };
    let pg = rgex_pgas::init()?;
    pg.set_state(Table::default());
    pg.barrier()?;
    let (me, n) = (u64::from(pg.rank().0), u64::from(pg.size()));
    let owner = |key: u64| {
        if raw {
            raw_owner(key, n as u32)
        } else {
            Rank((key % n) as u32)
        }
    };
    let key = |r: u64, i: u64| r * k + i;

    let t0 = Instant::now();
    if promised {
        let mut inserted: Promise = pg.promise()?;
        for i in 0..k {
            let kk = key(me, i);
            inserted.rpc(owner(kk), insert, (kk, ByteBuf::from(value_of(kk))))?;
        }
        assert_eq!(pg.wait(inserted.finalize())?, k, "inserts completed");
    } else {
        let mut pending = Vec::with_capacity(window.min(2 * k as usize));
        for i in 0..k {
            let kk = key(me, i);
            pending.push((
                kk,
                pg.rpc(owner(kk), insert, (kk, ByteBuf::from(value_of(kk))))?,
            ));
            if pending.len() == window {
                drain(&pg, &mut pending, |kk, fresh| {
                    assert!(fresh, "key {kk} inserted twice")
                })?;
            }
        }
        drain(&pg, &mut pending, |kk, fresh| {
            assert!(fresh, "key {kk} inserted twice")
        })?;
    }
    let inserts = t0.elapsed();
    pg.barrier()?;

    // Find the keys of the next rank, and as many that nobody inserted.
    let other = (me + 1) % n;
    let t1 = Instant::now();
    let mut pending = Vec::with_capacity(window.min(2 * k as usize));
    let check = |kk: u64, got: Option<ByteBuf>| {
        if kk >= n * k {
            assert!(got.is_none(), "rank {me}: missing key {kk} was found");
        } else {
            assert_eq!(
                got.as_ref().map(|b| &b[..]),
                Some(&value_of(kk)[..]),
                "rank {me}: key {kk}"
            );
        }
    };
    for i in 0..k {
        for kk in [key(other, i), n * k + me * k + i] {
            pending.push((kk, pg.rpc(owner(kk), find, kk)?));
        }
        if pending.len() >= window {
            drain(&pg, &mut pending, check)?;
        }
    }
    drain(&pg, &mut pending, check)?;
    let finds = t1.elapsed();
    pg.barrier()?;
    let table = pg.state::<Table>()?;
    assert_eq!(
        table.1.load(Ordering::Relaxed),
        0,
        "rank {me}: keys inserted twice"
    );
    let held = table.0.lock().expect("table").len() as u64;
    let total = pg
        .client()
        .world()
        .allreduce(&[held], rgex::ReduceOp::Sum)?;
    assert_eq!(total[0], n * k, "keys held by the owners");
    let rate = |ops: u64, d: std::time::Duration| ops as f64 / d.as_secs_f64();
    let ins = pg
        .client()
        .world()
        .allreduce(&[rate(k, inserts)], rgex::ReduceOp::Sum)?;
    let fnd = pg
        .client()
        .world()
        .allreduce(&[rate(2 * k, finds)], rgex::ReduceOp::Sum)?;
    if me == 0 {
        println!(
            "pgas dht: {} keys on {n} ranks ({k} inserted by each), every find exact, {} missing keys absent",
            n * k,
            n * k
        );
        let how = if promised {
            "raw rgex's workload, inserts counted by a promise".to_string()
        } else if raw {
            "raw rgex's workload, a future per insert".to_string()
        } else {
            format!("window {window}")
        };
        println!(
            "pgas dht: {:.0} inserts/s, {:.0} finds/s (all ranks, {how})",
            ins[0], fnd[0]
        );
    }
    pg.barrier()?;
    Ok(())
}
