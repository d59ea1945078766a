//! pgas/examples/dht.rs written against lamellar: every key lives on PE
//! `key % n` in a `HashMap` inside a `Darc`; inserts and finds are
//! lamellar active messages that run there and return their result.
//! Same keys, same values (1 byte to 100 KB), same window, same checks
//! and the same kind of throughput line as the rgex-pgas example.
//!
//! Usage (one process per PE, see run.sh): `lamellar_dht [KEYS_PER_RANK] [WINDOW]`

use lamellar::active_messaging::prelude::*;
use lamellar::darc::prelude::*;
use rgex_bench_lamellar::{arg, value_of};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// This PE's part of the table, and its rates once measured.
#[derive(Default)]
struct Table {
    map: Mutex<HashMap<u64, Vec<u8>>>,
    /// (keys held, inserts/s, finds/s) of this PE, for rank 0's report.
    report: Mutex<(u64, f64, f64)>,
}

/// Insert at the owner: true if the key was new.
#[lamellar::AmData(Clone)]
struct Insert {
    table: Darc<Table>,
    key: u64,
    value: Vec<u8>,
}

#[lamellar::am]
impl LamellarAM for Insert {
    async fn exec(self) -> bool {
        let v = self.value.clone();
        let fresh = self.table.map.lock().expect("table").insert(self.key, v);
        fresh.is_none()
    }
}

/// Find at the owner.
#[lamellar::AmData(Clone)]
struct Find {
    table: Darc<Table>,
    key: u64,
}

#[lamellar::am]
impl LamellarAM for Find {
    async fn exec(self) -> Option<Vec<u8>> {
        let v = self
            .table
            .map
            .lock()
            .expect("table")
            .get(&self.key)
            .cloned();
        v
    }
}

/// A PE's report (keys held and its two rates), fetched by rank 0.
#[lamellar::AmData(Clone)]
struct Report {
    table: Darc<Table>,
}

#[lamellar::am]
impl LamellarAM for Report {
    async fn exec(self) -> (u64, f64, f64) {
        let r = *self.table.report.lock().expect("report");
        r
    }
}

/// Wait for every pending AM in order; check each with `check`.
fn drain<R>(pending: &mut Vec<(u64, AmHandle<R>)>, check: impl Fn(u64, R))
where
    R: AmDist,
{
    for (key, h) in pending.drain(..) {
        check(key, h.block());
    }
}

fn main() {
    let k: u64 = arg(1, 2000);
    let window: usize = arg(2, 64);
    let world = lamellar::LamellarWorldBuilder::new().build();
    let table = Darc::new(&world, Table::default())
        .block()
        .expect("the table is created on every PE");
    world.barrier();
    let (me, n) = (world.my_pe() as u64, world.num_pes() as u64);
    let owner = |key: u64| (key % n) as usize;
    let key = |r: u64, i: u64| r * k + i;

    let t0 = Instant::now();
    let mut pending = Vec::with_capacity(window);
    let fresh = |kk: u64, fresh: bool| assert!(fresh, "key {kk} inserted twice");
    for i in 0..k {
        let kk = key(me, i);
        let am = Insert {
            table: table.clone(),
            key: kk,
            value: value_of(kk),
        };
        pending.push((kk, world.spawn_am_pe(owner(kk), am)));
        if pending.len() == window {
            drain(&mut pending, fresh);
        }
    }
    drain(&mut pending, fresh);
    let inserts = t0.elapsed();
    world.barrier();

    // Find the keys of the next PE, and as many that nobody inserted.
    let other = (me + 1) % n;
    let t1 = Instant::now();
    let check = |kk: u64, got: Option<Vec<u8>>| {
        if kk >= n * k {
            assert!(got.is_none(), "rank {me}: missing key {kk} was found");
        } else {
            assert_eq!(
                got.as_deref(),
                Some(&value_of(kk)[..]),
                "rank {me}: key {kk}"
            );
        }
    };
    let mut pending = Vec::with_capacity(window);
    for i in 0..k {
        for kk in [key(other, i), n * k + me * k + i] {
            let am = Find {
                table: table.clone(),
                key: kk,
            };
            pending.push((kk, world.spawn_am_pe(owner(kk), am)));
        }
        if pending.len() >= window {
            drain(&mut pending, check);
        }
    }
    drain(&mut pending, check);
    let finds = t1.elapsed();
    let rate = |ops: u64, d: Duration| ops as f64 / d.as_secs_f64();
    let held = table.map.lock().expect("table").len() as u64;
    *table.report.lock().expect("report") = (held, rate(k, inserts), rate(2 * k, finds));
    world.barrier();
    if me == 0 {
        let all = world
            .spawn_am_all(Report {
                table: table.clone(),
            })
            .block();
        let total: u64 = all.iter().map(|r| r.0).sum();
        assert_eq!(total, n * k, "keys held by the owners");
        let ins: f64 = all.iter().map(|r| r.1).sum();
        let fnd: f64 = all.iter().map(|r| r.2).sum();
        println!(
            "lamellar dht: {} keys on {n} ranks ({k} inserted by each), every find exact, {} missing keys absent",
            n * k,
            n * k
        );
        println!("lamellar dht: {ins:.0} inserts/s, {fnd:.0} finds/s (all ranks, window {window})");
    }
    world.barrier();
}
