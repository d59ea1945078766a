//! pgas/examples/histogram.rs written against lamellar: every PE owns
//! `BINS` counters and makes `UPDATES` increments of pseudo-random bins
//! anywhere (the same splitmix64 streams as the rgex-pgas example), by
//! one of:
//! - `am`: a lamellar active message per update, launched without waiting
//!   (the owner adds to its own table in a `Darc`), then `wait_all`;
//! - `atomics`: `AtomicArray::add` per update, in windows of 256 handles
//!   as the rgex-pgas atomics variant waits on its futures;
//! - `batch_add`: lamellar's own GUPS idiom, one `AtomicArray::batch_add`
//!   of the whole stream.
//!
//! Each PE recomputes every PE's stream and checks its own bins exactly;
//! the timing covers the same span as the rgex-pgas example (updates,
//! recomputation, completion, barrier). Prints updates per second.
//!
//! Usage (one process per PE, see run.sh):
//! `lamellar_histogram [am|atomics|batch_add] [UPDATES_PER_RANK] [BINS_PER_RANK]`

use lamellar::active_messaging::prelude::*;
use lamellar::array::prelude::*;
use lamellar::darc::prelude::*;
use rgex_bench_lamellar::{arg, bin};
use std::sync::Mutex;
use std::time::Instant;

/// This PE's bins as the AM variant keeps them, and its rate once measured.
struct Bins {
    counts: Mutex<Vec<u64>>,
    rate: Mutex<f64>,
}

/// The owner adds `k` to its bin `i`.
#[lamellar::AmData(Clone)]
struct Bump {
    bins: Darc<Bins>,
    i: u32,
    k: u64,
}

#[lamellar::am]
impl LamellarAM for Bump {
    async fn exec(self) {
        self.bins.counts.lock().expect("bins")[self.i as usize] += self.k;
    }
}

/// A PE's update rate, fetched by rank 0.
#[lamellar::AmData(Clone)]
struct Rate {
    bins: Darc<Bins>,
}

#[lamellar::am]
impl LamellarAM for Rate {
    async fn exec(self) -> f64 {
        let r = *self.bins.rate.lock().expect("rate");
        r
    }
}

fn main() {
    let how: String = arg(1, "am".to_string());
    let updates: u64 = arg(2, 20_000);
    let bins: u64 = arg(3, 1024);
    assert!(
        matches!(how.as_str(), "am" | "atomics" | "batch_add"),
        "lamellar_histogram: {how:?}: am, atomics or batch_add"
    );
    let world = lamellar::LamellarWorldBuilder::new().build();
    let (me, n) = (world.my_pe() as u64, world.num_pes() as u64);
    let total = bins * n;
    let state = Darc::new(
        &world,
        Bins {
            counts: Mutex::new(vec![0; bins as usize]),
            rate: Mutex::new(0.0),
        },
    )
    .block()
    .expect("the bins are created on every PE");
    // Block distribution: global bin g lives on PE g / bins, as in ours.
    let array = AtomicArray::<u64>::new(&world, total as usize, Distribution::Block).block();
    world.barrier();
    let t0 = Instant::now();
    match how.as_str() {
        "am" => {
            for i in 0..updates {
                let g = bin(me, i, total);
                let am = Bump {
                    bins: state.clone(),
                    i: (g % bins) as u32,
                    k: 1,
                };
                // Launched now (spawn_am_pe submits it; dropping the
                // handle does not cancel it); wait_all below awaits it.
                drop(world.spawn_am_pe((g / bins) as usize, am));
            }
        }
        "atomics" => {
            let mut window = Vec::with_capacity(256);
            for i in 0..updates {
                window.push(array.add(bin(me, i, total) as usize, 1));
                if window.len() == 256 {
                    for h in window.drain(..) {
                        h.block();
                    }
                }
            }
            for h in window.drain(..) {
                h.block();
            }
        }
        _ => {
            let idx: Vec<usize> = (0..updates).map(|i| bin(me, i, total) as usize).collect();
            array.batch_add(idx, 1).block();
        }
    }
    // The updates this PE owns, from every PE's stream.
    let mut want = vec![0u64; bins as usize];
    for r in 0..n {
        for i in 0..updates {
            let g = bin(r, i, total);
            if g / bins == me {
                want[(g % bins) as usize] += 1;
            }
        }
    }
    world.wait_all();
    world.barrier();
    let secs = t0.elapsed().as_secs_f64();
    let got: Vec<u64> = match how.as_str() {
        "am" => state.counts.lock().expect("bins").clone(),
        _ => array.local_data().iter().map(|e| e.load()).collect(),
    };
    assert_eq!(got, want, "rank {me}: bins");
    *state.rate.lock().expect("rate") = updates as f64 / secs;
    world.barrier();
    if me == 0 {
        let rate: f64 = world
            .spawn_am_all(Rate {
                bins: state.clone(),
            })
            .block()
            .iter()
            .sum();
        println!(
            "lamellar histogram ({how}): {} updates into {total} bins on {n} ranks, every bin exact",
            updates * n
        );
        println!("lamellar histogram ({how}): {rate:.0} updates/s (all ranks)");
    }
    world.barrier();
}
