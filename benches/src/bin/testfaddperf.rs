//! testfaddperf: remote atomic FADD latency, throughput and hot-spot
//! (GASNet-EX's testfadd, see BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/testfaddperf [--quick] [--json PATH] [--reps N]`
//!
//! - Latency: rank 0 injects one FADD on a word of rank 1, waits for it,
//!   repeats, 100,000 times in all (10,000 with `--quick`), split evenly
//!   over the repetitions (at least 1,000 each); per data type, for each implementation
//!   available (the one the domain picks, shared memory on one node, and
//!   the forced AM reference).
//! - Throughput: rank 0 injects 100,000 FADDs (10,000 with `--quick`),
//!   then waits for all; ns per op.
//! - Hot-spot: k ranks (1, 2, 4, as the job allows) each FADD one `u64` on
//!   rank 0, weak-scaled (the same count per rank); aggregate ns per op,
//!   timed from a barrier to the end of the barrier that follows the
//!   FADDs (so it includes the last FADD's arrival everywhere).
//!   Points with more ranks than CPUs are marked oversubscribed. Run with
//!   `-n 4` for the 4-rank point.
//!
//! The floor is the cache-line round trip between two cores, measured in
//! the same run; the ratio column compares shared memory with the reference.
//!
//! Over the ofi conduit (`RGEX_CONDUIT=ofi`) the floor of the latency
//! column is the provider's round trip (twice `fi_pingpong`'s one-way
//! latency of 8 bytes on `RGEX_OFI_PROVIDER`, see `rgex_benches::fabric`),
//! the ratio columns compare the implementation the domain picked
//! (offload, if the conduit offers it) with the forced AM reference, and a
//! summary says which ran and whether offload beats the reference (the
//! requirement).

use rgex::{
    AtomicDomain, AtomicFlags, AtomicImplementation, AtomicOp, AtomicValue, Client, GlobalAddr,
    OpSet, Rank, ReduceOp,
};
use rgex_benches::affinity::online_cpus;
use rgex_benches::cli::Opts;
use rgex_benches::fabric::{self, run_target, ProviderFloor};
use rgex_benches::floor::Floors;
use rgex_benches::mpi::{self, MpiRun, Osc, Test};
use rgex_benches::report::{num, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::{self, Stats};
use std::error::Error;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: testfaddperf [--quick] [--json PATH] [--reps N]

  --quick      short runs (well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/testfaddperf.json);
               the SVG plot goes next to it with extension .svg
  --reps N     repetitions per point (default 5)

Run through rgex-run -n 2 --bind (or -n 4 for the 4-rank hot-spot point).";

/// The provider floor's transfer size: a FADD carries an 8-byte operand.
const FABRIC_SIZE: u64 = 8;

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
        .build(client.endpoint(), client.world())?;
    let at = GlobalAddr::new(Rank(1), WORD);
    let f = AtomicFlags::empty();
    let (lat_total, thr_iters) = if opts.quick {
        (10_000u64, 10_000u64)
    } else {
        (100_000, 100_000)
    };
    let lat_iters = (lat_total / opts.reps.max(1) as u64).max(1_000);
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
                ad.op_nb(at, AtomicOp::Fadd, one, one, f)?.wait()?;
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
                e.wait()?;
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
        .build(client.endpoint(), client.world())?;
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
        // Every rank's clock stops after the closing barrier (which polls,
        // so rank 0 keeps serving reference requests meanwhile); the
        // slowest, the last out of it, sets the aggregate rate.
        client.barrier()?;
        let mine = t.elapsed().as_nanos() as f64;
        let slowest = client.world().allreduce(&[mine], ReduceOp::Max)?[0];
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
    let first = rgex::launcher_rank()? == 0;
    let floor_target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let provider = fabric::ofi_provider();
    let floors = first.then(|| {
        eprintln!("testfaddperf: measuring the floor (cache-line round trip)");
        let floors = Floors::measure(&[], floor_target, opts.reps);
        let fabric = provider.as_ref().map(|p| {
            ProviderFloor::measure(p, &[FABRIC_SIZE], run_target(opts.quick), opts.reps, |w| {
                eprintln!("testfaddperf: measuring {w}")
            })
        });
        // The Open MPI peer, while the other ranks wait in the bootstrap.
        let mpi = Osc::ALL.map(|osc| {
            if provider.is_some() {
                return Err("RGEX_CONDUIT=ofi: the provider floor is the peer here".to_owned());
            }
            eprintln!(
                "testfaddperf: measuring the Open MPI peer (MPI_Fetch_and_op latency, hot-spot; osc {})",
                osc.name()
            );
            let iters = if opts.quick { 10_000 } else { 100_000 };
            MpiRun::new(osc, iters, opts.reps, &[Test::FopLat, Test::FopHot])?.run()
        });
        (floors, fabric, mpi)
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
    let Some((floors, fabric, mpi)) = floors else {
        return Ok(true);
    };

    if let Some(n) = rgex_benches::label::note() {
        println!("{n}");
    }
    let job = Job {
        bench: "testfaddperf".into(),
        conduit: client.endpoint().conduit().name().into(),
        provider: rgex_benches::label::provider(),
        ranks: n,
        oversubscribed: n as usize > cpus,
    };
    // The latency floor: the provider's round trip over ofi, else the
    // cache-line round trip.
    let provider_rtt = fabric
        .as_ref()
        .and_then(|f| f.at(FABRIC_SIZE))
        .map(|f| (f.round_trip().median, format!("2 x {} one-way", f.name())));
    let rtt = match &fabric {
        Some(_) => provider_rtt.as_ref().map(|(r, _)| *r),
        None => floors.rtt_ns(),
    };
    println!(
        "testfaddperf: {n} ranks on {cpus} CPUs, conduit {}",
        job.conduit
    );
    println!("\nFloor:\n{}", floors.table());
    let mut records: Vec<Record> = floors.records(&job);
    if let Some(f) = &fabric {
        print!("\n{}", f.report());
        records.extend(f.records(&job));
    }
    // What the domain picked (without forcing), for the ratio columns.
    let auto = points.iter().find(|p| !p.forced).map(|p| p.imp);
    let vs = match auto {
        Some(AtomicImplementation::SharedMemory) => "shm",
        Some(AtomicImplementation::Offload) => "offload",
        _ => "auto",
    };
    let mut t = Table::new([
        "type".to_owned(),
        "implementation".to_owned(),
        "latency ns median [min .. max]".to_owned(),
        if fabric.is_some() {
            "x provider RTT"
        } else {
            "x floor"
        }
        .to_owned(),
        "throughput ns/op median [min .. max]".to_owned(),
        "Mops/s".to_owned(),
        format!("ref/{vs} latency"),
        format!("ref/{vs} throughput"),
    ]);
    for p in &points {
        let twin = points
            .iter()
            .find(|q| q.ty == p.ty && q.forced != p.forced)
            .filter(|_| !p.forced);
        let (rl, rt) = match twin {
            Some(r) if p.imp != AtomicImplementation::Reference => (
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
        let mut lat = job.record(&format!("{v} latency"), None, &p.lat, "ns", p.lat_iters);
        if let Some((r, name)) = &provider_rtt {
            lat = lat.with_floor(name, *r, None);
        }
        records.push(lat);
        records.push(job.record(
            &format!("{v} throughput"),
            None,
            &p.thr,
            "ns/op",
            p.thr_iters,
        ));
    }
    println!("\nFADD, rank 0 -> rank 1 word:\n{t}");
    println!(
        "published (Aries, GASNet-EX 2018.3.0, offload vs AM reference): latency 2.8-2.9 vs 4.9 us (1.7x), throughput 742-745 vs 424-429 kop/s (1.75x)"
    );
    if fabric.is_some() {
        print!("{}", offload_summary(&points));
    }
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
    println!("\nHot-spot: every rank FADDs one u64 on rank 0 ({per} each, weak-scaled; timed to the end of the closing barrier):\n{h}");
    if n < 4 {
        println!("(the 4-rank hot-spot point needs a job of 4 ranks: rgex-run -n 4 --bind ...)");
    }
    if fabric.is_none() {
        let lat = points
            .iter()
            .find(|p| p.ty == "u64" && !p.forced)
            .map(|p| p.lat.median);
        let hot2 = hot
            .iter()
            .find(|(forced, _, k, _)| !forced && *k == 2)
            .map(|h| h.3.median);
        print!("{}", mpi_table(&mpi, lat, hot2));
        records.extend(mpi_records(&mpi, &job));
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
        plot.reference(
            if fabric.is_some() {
                "provider round trip (2 x fi_pingpong one-way)"
            } else {
                "cache-line round trip"
            },
            r,
        );
    }
    opts.write(&records, &[("", plot)])?;
    Ok(true)
}

/// A hot-spot's aggregate ops/s as ns per op (a decreasing map: min and
/// max swap).
fn ns_per_op(ops: &Stats) -> Stats {
    Stats {
        median: 1e9 / ops.median,
        min: 1e9 / ops.max,
        max: 1e9 / ops.min,
        reps: ops.reps,
    }
}

/// The Open MPI peer's figures in testfaddperf's units (ns, ns/op).
fn mpi_figure(m: &Result<Vec<mpi::Figure>, String>, test: Test) -> Option<(Stats, u64)> {
    let f = mpi::at(m.as_ref().ok()?, test, 8)?;
    Some(match test {
        Test::FopHot => (ns_per_op(&f.stats), f.iters),
        _ => (f.stats, f.iters),
    })
}

/// The Open MPI peer beside rgex's u64 FADD (the domain's pick) latency
/// and its 2-rank hot-spot.
fn mpi_table(
    mpi: &[Result<Vec<mpi::Figure>, String>; 2],
    lat: Option<f64>,
    hot: Option<f64>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nOpen MPI peer (mpi_peer: MPI_Fetch_and_op MPI_SUM uint64 + MPI_Win_flush, passive target on MPI_Win_allocate; pml ob1, btl self,vader):"
    );
    let mut t = Table::new([
        "test",
        "rgex",
        "MPI osc sm",
        "MPI osc rdma",
        "unit",
        "rgex / sm",
        "rgex / rdma",
    ]);
    for (test, ours, unit) in [(Test::FopLat, lat, "ns"), (Test::FopHot, hot, "ns/op")] {
        let [a, b] = [&mpi[0], &mpi[1]].map(|m| mpi_figure(m, test).map(|f| f.0));
        let show = |x: Option<Stats>| x.map_or("-".into(), |x| spread(&x));
        let rat = |x: Option<Stats>| match (ours, x) {
            (Some(o), Some(x)) if x.median > 0.0 => format!("{:.2}", o / x.median),
            _ => "-".into(),
        };
        let name = match test {
            Test::FopLat => "FADD u64 latency",
            _ => "hot-spot, 2 ranks, aggregate",
        };
        t.row([
            name.into(),
            ours.map_or("-".into(), num),
            show(a),
            show(b),
            unit.into(),
            rat(a),
            rat(b),
        ]);
    }
    let _ = write!(s, "{t}");
    for (osc, m) in Osc::ALL.iter().zip(mpi) {
        if let Err(e) = m {
            let _ = writeln!(s, "MPI osc {}: skipped ({e})", osc.name());
        }
    }
    let _ = writeln!(s, "rgex / MPI below 1: rgex is faster");
    s
}

/// Records of the Open MPI peer (names start with `mpi`).
fn mpi_records(mpi: &[Result<Vec<mpi::Figure>, String>; 2], job: &Job) -> Vec<Record> {
    let peer = Job {
        conduit: "mpi".into(),
        provider: Some("Open MPI, pml ob1, btl self,vader".into()),
        ranks: 2,
        ..job.clone()
    };
    let mut v = Vec::new();
    for (osc, m) in Osc::ALL.iter().zip(mpi) {
        for (test, unit, size) in [(Test::FopLat, "ns", None), (Test::FopHot, "ns/op", Some(2))] {
            if let Some((st, iters)) = mpi_figure(m, test) {
                v.push(peer.record(&test.variant(*osc), size, &st, unit, iters));
            }
        }
    }
    v
}

/// Over the ofi conduit: which implementation ran, and whether offload
/// beats the AM reference (the requirement), per type.
fn offload_summary(points: &[Point]) -> String {
    let mut s = String::new();
    let auto: Vec<&Point> = points.iter().filter(|p| !p.forced).collect();
    let mut uniq: Vec<String> = auto.iter().map(|p| format!("{:?}", p.imp)).collect();
    uniq.sort();
    uniq.dedup();
    let _ = writeln!(
        s,
        "Implementation the domain picked (no forcing): {} (the other rows force the AM reference)",
        uniq.join(", ")
    );
    for p in &auto {
        let Some(r) = points.iter().find(|q| q.forced && q.ty == p.ty) else {
            continue;
        };
        let _ = match p.imp {
            AtomicImplementation::Offload => writeln!(
                s,
                "  {}: offload latency {} ns vs reference {} ns ({:.2}x), throughput {} vs {} ns/op ({:.2}x): offload faster than the reference: {}",
                p.ty,
                num(p.lat.median),
                num(r.lat.median),
                r.lat.median / p.lat.median,
                num(p.thr.median),
                num(r.thr.median),
                r.thr.median / p.thr.median,
                if p.lat.median < r.lat.median && p.thr.median < r.thr.median { "met" } else { "MISSED" }
            ),
            AtomicImplementation::Reference => writeln!(
                s,
                "  {}: the domain picked the AM reference (no offload for this type here): target not testable",
                p.ty
            ),
            other => writeln!(
                s,
                "  {}: {other:?} {} ns vs reference {} ns ({:.2}x)",
                p.ty,
                num(p.lat.median),
                num(r.lat.median),
                r.lat.median / p.lat.median
            ),
        };
    }
    s
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
