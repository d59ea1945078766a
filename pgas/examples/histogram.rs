//! A distributed histogram (GUPS-style random-access update): every rank
//! owns `BINS` counters in its shared heap and makes `UPDATES` increments
//! of pseudo-random bins anywhere, in one of three ways:
//! - `rpc_ff`: one `rpc_ff` per update, the owner adds to its own table;
//! - `atomics`: one remote atomic add per update on the heap's counters;
//! - `batched`: the updates are grouped per owner, [`BATCH`] bins to one
//!   `rpc_ff`, and the owner adds them to its own table (the aggregation
//!   lamellar's `batch_add` does inside the library, written here in the
//!   program, as a UPC++ program would).
//!
//! Each rank recomputes every rank's update stream and checks its own
//! bins exactly; prints updates per second.
//!
//! Usage: `histogram [rpc_ff|atomics|batched] [UPDATES_PER_RANK] [BINS_PER_RANK]`

use rgex::{AtomicOp, OpSet, Rank};
use rgex_pgas::{AtomicDomain, DistObject, Pgas};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Rank `r`'s `i`-th update: a global bin (splitmix64 of both).
fn bin(r: u64, i: u64, total_bins: u64) -> u64 {
    let mut z = (r << 40 ^ i).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % total_bins
}

/// This rank's bins as the rpc_ff variant keeps them, and how many
/// updates it has applied.
struct Bins {
    counts: Mutex<Vec<u64>>,
    served: AtomicU64,
}

/// The owner adds `k` to its bin `i` (run by rpc_ff at the owner).
fn bump(pg: &Pgas, (i, k): (u32, u64)) {
    let b = pg.state::<Bins>().expect("set at start");
    b.counts.lock().expect("bins")[i as usize] += k;
    b.served.fetch_add(1, Ordering::Relaxed);
}

/// The owner adds one to each of its bins in `bins` (run by rpc_ff at
/// the owner, for the batched variant).
fn bump_all(pg: &Pgas, bins: Vec<u32>) {
    let b = pg.state::<Bins>().expect("set at start");
    let mut counts = b.counts.lock().expect("bins");
    for &i in &bins {
        counts[i as usize] += 1;
    }
    b.served.fetch_add(bins.len() as u64, Ordering::Relaxed);
}

/// Updates sent to one owner in one call by the batched variant.
const BATCH: usize = 1024;

fn main() -> rgex_pgas::Result<()> {
    let mut args = std::env::args().skip(1);
    let how = args.next().unwrap_or_else(|| "rpc_ff".into());
    let updates: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let bins: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let pg = rgex_pgas::init()?;
    let (me, n) = (u64::from(pg.rank().0), u64::from(pg.size()));
    let total = bins * n;
    pg.set_state(Bins {
        counts: Mutex::new(vec![0; bins as usize]),
        served: AtomicU64::new(0),
    });
    let mine = pg.new_array::<u64>(bins as usize, 0)?;
    let tables = DistObject::new(&pg, mine)?;
    let mut bases = Vec::new();
    for r in 0..n {
        bases.push(pg.wait(tables.fetch(Rank(r as u32))?)?);
    }
    let ad = AtomicDomain::<u64>::new(&pg, OpSet::of(&[AtomicOp::Add]))?;
    let at = |g: u64| bases[(g / bins) as usize].plus((g % bins) as i64);
    pg.barrier()?;
    let t0 = Instant::now();
    match how.as_str() {
        "rpc_ff" => {
            for i in 0..updates {
                let g = bin(me, i, total);
                pg.rpc_ff(Rank((g / bins) as u32), bump, ((g % bins) as u32, 1))?;
                if i % 64 == 0 {
                    pg.progress()?;
                }
            }
        }
        "batched" => {
            let mut pending: Vec<Vec<u32>> = vec![Vec::with_capacity(BATCH); n as usize];
            for i in 0..updates {
                let g = bin(me, i, total);
                let owner = (g / bins) as usize;
                pending[owner].push((g % bins) as u32);
                if pending[owner].len() == BATCH {
                    let full = std::mem::replace(&mut pending[owner], Vec::with_capacity(BATCH));
                    pg.rpc_ff(Rank(owner as u32), bump_all, full)?;
                    pg.progress()?;
                }
            }
            for (owner, rest) in pending.into_iter().enumerate() {
                if !rest.is_empty() {
                    pg.rpc_ff(Rank(owner as u32), bump_all, rest)?;
                }
            }
        }
        "atomics" => {
            let mut window = Vec::with_capacity(256);
            for i in 0..updates {
                window.push(ad.add(at(bin(me, i, total))?, 1)?);
                if window.len() == 256 {
                    for f in window.drain(..) {
                        pg.wait(f)?;
                    }
                }
            }
            for f in window.drain(..) {
                pg.wait(f)?;
            }
        }
        other => panic!("histogram: {other:?}: rpc_ff, atomics or batched"),
    }
    // The updates this rank owns, from every rank's stream.
    let mut want = vec![0u64; bins as usize];
    for r in 0..n {
        for i in 0..updates {
            let g = bin(r, i, total);
            if g / bins == me {
                want[(g % bins) as usize] += 1;
            }
        }
    }
    if how != "atomics" {
        // Serve until every update meant for this rank has run (an
        // rpc_ff has no completion at its sender to wait for).
        let expected: u64 = want.iter().sum();
        let b = pg.state::<Bins>()?;
        let start = Instant::now();
        while b.served.load(Ordering::Relaxed) < expected {
            pg.progress()?;
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "rank {me}: updates lost"
            );
        }
        assert_eq!(
            b.served.load(Ordering::Relaxed),
            expected,
            "rank {me}: updates served"
        );
    }
    pg.barrier()?;
    let secs = t0.elapsed().as_secs_f64();
    let got = match how.as_str() {
        "atomics" => pg.wait(pg.rget_slice(mine, bins as usize)?)?,
        _ => pg.state::<Bins>()?.counts.lock().expect("bins").clone(),
    };
    assert_eq!(got, want, "rank {me}: bins");
    let rate = pg.allreduce(&[updates as f64 / secs], rgex::ReduceOp::Sum)?;
    if me == 0 {
        println!(
            "pgas histogram ({how}): {} updates into {total} bins on {n} ranks, every bin exact",
            updates * n
        );
        println!(
            "pgas histogram ({how}): {:.0} updates/s (all ranks)",
            rate[0]
        );
    }
    pg.barrier()?;
    Ok(())
}
