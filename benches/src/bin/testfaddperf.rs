//! testfaddperf: remote atomic FADD latency, throughput and hot-spot
//! (GASNet-EX's testfadd, see BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/testfaddperf [--quick] [--json PATH] [--reps N]`
//!
//! - Latency: rank 0 injects one FADD on a word of rank 1, waits for it,
//!   repeats; per data type, for each implementation available (the one
//!   the domain picks, shared memory on one node, and the forced AM
//!   reference).
//! - Throughput: rank 0 injects 100,000 FADDs (10,000 with `--quick`),
//!   then waits for all; ns per op.
//! - Hot-spot: k ranks (1, 2, 4, as the job allows) each FADD one `u64` on
//!   rank 0, weak-scaled (the same count per rank); aggregate ns per op.
//!   Points with more ranks than CPUs are marked oversubscribed. Run with
//!   `-n 4` for the 4-rank point.
//!
//! The floor is the cache-line round trip between two cores, measured in
//! the same run; the ratio column compares shared memory with the reference.

use rgex::{
    AtomicDomain, AtomicFlags, AtomicImplementation, AtomicOp, AtomicValue, Client, GlobalAddr,
    OpSet, Rank, ReduceOp,
};
use rgex_benches::affinity::online_cpus;
use rgex_benches::cli::Opts;
use rgex_benches::floor::Floors;
use rgex_benches::report::{num, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::{self, Stats};
use std::error::Error;
use std::process::ExitCode;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: testfaddperf [--quick] [--json PATH] [--reps N]

  --quick      short runs (well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/testfaddperf.json);
               the SVG plot goes next to it with extension .svg
  --reps N     repetitions per point (default 5)

Run through rgex-run -n 2 --bind (or -n 4 for the 4-rank hot-spot point).";

/// The word every measurement uses (in the target's segment).
const WORD: u64 = 4096;

/// One measured point, as rank 0 reports it.
struct Point {
    imp: AtomicImplementation,
    forced: bool,
    ty: &'static str,
    lat: Stats,
    lat_iters: u64,
    thr: Stats,
    thr_iters: u64,
}

fn label(imp: AtomicImplementation, forced: bool) -> String {
    if forced {
        format!("{imp:?} (forced)")
    } else {
        format!("{imp:?}")
    }
}

/// Latency and throughput of FADD for `T` (`one` is its unit), rank 0 to
/// rank 1; every rank calls it (domain creation is collective).
fn measure<T: AtomicValue>(
    client: &Client,
    forced: bool,
    ty: &'static str,
    one: T,
    opts: &Opts,
) -> Res<Option<Point>> {
    let ad = AtomicDomain::<T>::builder(OpSet::of(&[AtomicOp::Fadd, AtomicOp::Set]))
        .force_reference(forced)
        .build(client.endpoint(), client.world_team())?;
    let at = GlobalAddr::new(Rank(1), WORD);
    let f = AtomicFlags::empty();
    let (lat_iters, thr_iters) = if opts.quick {
        (2_000u64, 10_000u64)
    } else {
        (20_000, 100_000)
    };
    client.barrier()?;
    let mut out = None;
    if client.rank().0 == 0 {
        ad.set(at, T::from_bits64(0), f)?;
        // Warm up both paths.
        for _ in 0..200 {
            ad.fetch_add(at, one, f)?;
        }
        let lat = stats::repeat(opts.reps, || -> Res<f64> {
            let t = Instant::now();
            for _ in 0..lat_iters {
                ad.op_nb(at, AtomicOp::Fadd, one, one, f)?.wait();
            }
            Ok(t.elapsed().as_nanos() as f64 / lat_iters as f64)
        })?;
        let mut evs = Vec::with_capacity(thr_iters as usize);
        let thr = stats::repeat(opts.reps, || -> Res<f64> {
            let t = Instant::now();
            for _ in 0..thr_iters {
                evs.push(ad.op_nb(at, AtomicOp::Fadd, one, one, f)?);
            }
            for e in evs.drain(..) {
                e.wait();
            }
            Ok(t.elapsed().as_nanos() as f64 / thr_iters as f64)
        })?;
        out = Some(Point {
            imp: ad.implementation(),
            forced,
            ty,
            lat,
            lat_iters,
            thr,
            thr_iters,
        });
    }
    client.barrier()?;
    Ok(out)
}

/// Hot-spot: the first `k` ranks FADD one u64 on rank 0, `per` each;
/// returns (aggregate ns per op, implementation) at rank 0.
fn hotspot(
    client: &Client,
    forced: bool,
    k: u32,
    per: u64,
    reps: usize,
) -> Res<(Stats, AtomicImplementation)> {
    let ad = AtomicDomain::<u64>::builder(OpSet::of(&[AtomicOp::Fadd]))
        .force_reference(forced)
        .build(client.endpoint(), client.world_team())?;
    let at = GlobalAddr::new(Rank(0), WORD + 64);
    let me = client.rank().0;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        client.barrier()?;
        let t = Instant::now();
        if me < k {
            for _ in 0..per {
                ad.fetch_add(at, 1, AtomicFlags::empty())?;
            }
        }
        let mine = if me < k {
            t.elapsed().as_nanos() as f64
        } else {
            0.0
        };
        // The slowest participant sets the aggregate rate. The allreduce
        // polls, so rank 0 keeps serving reference requests meanwhile.
        let slowest = client.world_team().allreduce(&[mine], ReduceOp::Max)?[0];
        samples.push(slowest / (f64::from(k) * per as f64));
    }
    let s = Stats::from_samples(&samples).ok_or("no hot-spot samples")?;
    Ok((s, ad.implementation()))
}

fn run() -> Res<bool> {
    let Some(opts) = Opts::parse("testfaddperf", std::env::args().skip(1), |_, _| Ok(false))?
    else {
        println!("{USAGE}");
        return Ok(true);
    };
    let env = rgex::bootstrap::JobEnv::read()?;
    let floor_target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let floors = (env.rank == 0).then(|| {
        eprintln!("testfaddperf: measuring the floor (cache-line round trip)");
        Floors::measure(&[], floor_target, opts.reps)
    });
    let client = rgex::init()?;
    let n = client.size();
    if n < 2 {
        return Err("testfaddperf needs at least two ranks (rgex-run -n 2 --bind ...)".into());
    }
    let cpus = online_cpus();
    let me = client.rank().0;

    let mut points = Vec::new();
    for forced in [false, true] {
        if me == 0 {
            eprintln!(
                "testfaddperf: latency and throughput, {}",
                if forced { "forced reference" } else { "auto" }
            );
        }
        points.extend(measure::<i32>(&client, forced, "i32", 1, &opts)?);
        points.extend(measure::<u32>(&client, forced, "u32", 1, &opts)?);
        points.extend(measure::<i64>(&client, forced, "i64", 1, &opts)?);
        points.extend(measure::<u64>(&client, forced, "u64", 1, &opts)?);
        points.extend(measure::<f32>(&client, forced, "f32", 1.0, &opts)?);
        points.extend(measure::<f64>(&client, forced, "f64", 1.0, &opts)?);
    }
    let per = if opts.quick { 2_000 } else { 20_000 };
    let mut hot = Vec::new();
    for forced in [false, true] {
        for k in [1u32, 2, 4].into_iter().filter(|&k| k <= n) {
            if me == 0 {
                eprintln!(
                    "testfaddperf: hot-spot, {k} rank(s){}",
                    if forced { ", forced reference" } else { "" }
                );
            }
            let (s, imp) = hotspot(&client, forced, k, per, opts.reps)?;
            hot.push((forced, imp, k, s));
        }
    }
    client.barrier()?;
    let Some(floors) = floors else {
        return Ok(true);
    };

    let job = Job {
        bench: "testfaddperf".into(),
        conduit: client.conduit().name().into(),
        provider: None,
        ranks: n,
        oversubscribed: n as usize > cpus,
    };
    let rtt = floors.rtt_ns();
    println!(
        "testfaddperf: {n} ranks on {cpus} CPUs, conduit {}",
        job.conduit
    );
    println!("\nFloor:\n{}", floors.table());
    let mut records: Vec<Record> = floors.records(&job);
    let mut t = Table::new([
        "type",
        "implementation",
        "latency ns median [min .. max]",
        "x floor",
        "throughput ns/op median [min .. max]",
        "Mops/s",
        "ref/shm latency",
        "ref/shm throughput",
    ]);
    for p in &points {
        let twin = points
            .iter()
            .find(|q| q.ty == p.ty && q.forced != p.forced)
            .filter(|_| !p.forced);
        let (rl, rt) = match twin {
            Some(r) if p.imp == AtomicImplementation::SharedMemory => (
                num(r.lat.median / p.lat.median),
                num(r.thr.median / p.thr.median),
            ),
            _ => (String::new(), String::new()),
        };
        t.row([
            p.ty.to_string(),
            label(p.imp, p.forced),
            spread(&p.lat),
            rtt.map_or_else(String::new, |r| num(p.lat.median / r)),
            spread(&p.thr),
            num(1e3 / p.thr.median),
            rl,
            rt,
        ]);
        let v = format!("FADD {} {}", p.ty, label(p.imp, p.forced));
        records.push(job.record(&format!("{v} latency"), None, &p.lat, "ns", p.lat_iters));
        records.push(job.record(
            &format!("{v} throughput"),
            None,
            &p.thr,
            "ns/op",
            p.thr_iters,
        ));
    }
    println!("\nFADD, rank 0 -> rank 1 word:\n{t}");
    let mut h = Table::new([
        "implementation",
        "ranks",
        "aggregate ns/op median [min .. max]",
        "Mops/s",
        "note",
    ]);
    for (forced, imp, k, s) in &hot {
        let over = *k as usize > cpus;
        h.row([
            label(*imp, *forced),
            k.to_string(),
            spread(s),
            num(1e3 / s.median),
            if over {
                "oversubscribed".into()
            } else {
                String::new()
            },
        ]);
        let mut r = job.record(
            &format!(
                "hot-spot FADD u64 on rank 0, {k} ranks, {}",
                label(*imp, *forced)
            ),
            Some(u64::from(*k)),
            s,
            "ns/op",
            per,
        );
        r.oversubscribed = over;
        records.push(r);
    }
    println!("\nHot-spot: every rank FADDs one u64 on rank 0 ({per} each, weak-scaled):\n{h}");
    if n < 4 {
        println!("(the 4-rank hot-spot point needs a job of 4 ranks: rgex-run -n 4 --bind ...)");
    }

    let types: Vec<String> = ["i32", "u32", "i64", "u64", "f32", "f64"]
        .map(String::from)
        .to_vec();
    let mut plot = Plot::new("FADD latency by type", "type", "ns", types.clone());
    for forced in [false, true] {
        let pts: Vec<(usize, f64, f64, f64)> = types
            .iter()
            .enumerate()
            .filter_map(|(i, ty)| {
                points
                    .iter()
                    .find(|p| p.ty == ty && p.forced == forced)
                    .map(|p| (i, p.lat.median, p.lat.min, p.lat.max))
            })
            .collect();
        let name = points
            .iter()
            .find(|p| p.forced == forced)
            .map_or_else(String::new, |p| label(p.imp, p.forced));
        plot.series.push(Series { name, points: pts });
    }
    if let Some(r) = rtt {
        plot.reference("cache-line round trip", r);
    }
    opts.write(&records, &[("", plot)])?;
    Ok(true)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("testfaddperf: error: {e}");
            ExitCode::FAILURE
        }
    }
}
