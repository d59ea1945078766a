//! rma_mt: put message rate and bandwidth from several threads of one
//! rank (the rma-mt bench of BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/rma_mt [--quick] [--json PATH] [--reps N]`
//!
//! Rank 0 runs 1, 2 and 4 threads (thread t pinned to CPU t mod CPUs),
//! in two modes interleaved: every thread on the primordial endpoint, and
//! each thread on an endpoint of its own (thread t on endpoint t, opened
//! by `Client::create_endpoint` on both ranks; a conduit with one
//! endpoint per process measures the first mode only, saying so),
//! each issuing NBI puts to rank 1 into its own slice of rank 1's segment
//! (offset = thread id x slice length) and syncing with `nbi_wait` at the
//! end: 8-byte puts for the message rate, 64 KiB puts for bandwidth. Each
//! repetition fills the sources with a fresh pattern; after it, rank 0
//! checksums the origin buffers, both ranks meet in a barrier, rank 0
//! broadcasts the checksum and rank 1 checksums the target slices and
//! compares; an allreduce tells everyone. A mismatch makes both ranks exit
//! non-zero. Rank 1 waits in a non-blocking barrier with 1 ms sleeps, so
//! it takes no CPU while rank 0 measures: runs with more threads than
//! CPUs are marked oversubscribed.

use rgex::{Client, Flags, GlobalAddr, NbiCategory, Rank, ReduceOp};
use rgex_benches::affinity::{load_average, online_cpus, pin_current_thread};
use rgex_benches::cli::Opts;
use rgex_benches::floor::Floors;
use rgex_benches::report::{num, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::Stats;
use rgex_benches::timing::calibrate;
use std::error::Error;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: rma_mt [--quick] [--json PATH] [--reps N]

  --quick      short repetitions (a smoke run: well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/rma_mt.json);
               the SVG plot goes next to it with extension .svg
  --reps N     repetitions per point (default 5)";

/// Threads per rank.
const THREADS: [usize; 3] = [1, 2, 4];

/// A workload: put size and puts in flight per slice.
#[derive(Clone, Copy, Debug)]
struct Work {
    name: &'static str,
    /// Bytes per put.
    put: usize,
    /// Slots per thread slice (each put writes one, in turn).
    slots: usize,
}

impl Work {
    fn slice(self) -> usize {
        self.put * self.slots
    }
}

const RATE: Work = Work {
    name: "message rate (8 B puts)",
    put: 8,
    slots: 512,
};
const BW: Work = Work {
    name: "bandwidth (64 KiB puts)",
    put: 64 << 10,
    slots: 4,
};

/// The byte at `i` of thread `t`'s source in repetition `seed`.
fn pattern(seed: u64, t: usize, i: usize) -> u8 {
    let x = (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((t as u64) << 40) ^ i as u64)
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x >> 56) as u8
}

/// A 64-bit checksum of `bytes` (FNV-1a over 8-byte words, position-sensitive).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Which endpoints the threads inject on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// All on the primordial endpoint.
    Shared,
    /// Thread t on endpoint t.
    Own,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Shared => "one shared endpoint",
            Mode::Own => "an endpoint per thread",
        }
    }
}

/// One measured point.
struct Point {
    work: Work,
    threads: usize,
    mode: Mode,
    /// Puts per second (millions) or GB/s, over all threads.
    s: Stats,
    /// Puts per thread per repetition.
    iters: u64,
    oversubscribed: bool,
}

impl Point {
    fn unit(&self) -> &'static str {
        if self.work.put == RATE.put {
            "Mputs/s"
        } else {
            "GB/s"
        }
    }
}

/// Rank 0: `threads` threads each put `n` times; the elapsed time from
/// the first thread starting to the last one's `nbi_wait` returning.
fn run_threads(
    client: &Client,
    w: Work,
    threads: usize,
    mode: Mode,
    n: u64,
    srcs: &[Vec<u8>],
) -> Res<Duration> {
    let peer = Rank(1 % client.size());
    let eps: Vec<std::sync::Arc<rgex::Endpoint>> = (0..threads)
        .map(|t| match mode {
            Mode::Shared => client.endpoint_at(0),
            Mode::Own => client.endpoint_at(t as u32),
        })
        .collect::<rgex::Result<_>>()?;
    let cpus = online_cpus();
    let gate = Barrier::new(threads + 1);
    std::thread::scope(|s| -> Res<Duration> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (gate, src, ep) = (&gate, &srcs[t], &eps[t]);
                s.spawn(move || -> rgex::Result<(Instant, Instant)> {
                    // Best effort: on a one-CPU node the threads share it.
                    let _ = pin_current_thread(t % cpus);
                    let base = (t * w.slice()) as u64;
                    gate.wait();
                    let start = Instant::now();
                    let mut slot = 0;
                    let mut res = Ok(());
                    for _ in 0..n {
                        let off = slot * w.put;
                        let dst = GlobalAddr::new(peer, base + off as u64);
                        if let Err(e) = ep.put_nbi(dst, &src[off..off + w.put], Flags::empty()) {
                            res = Err(e);
                            break;
                        }
                        slot += 1;
                        if slot == w.slots {
                            slot = 0;
                        }
                    }
                    let synced = ep.nbi_wait(NbiCategory::Put);
                    let end = Instant::now();
                    res.and(synced).map(|()| (start, end))
                })
            })
            .collect();
        gate.wait();
        // Timed by the threads themselves (from the first start to the
        // last end): this thread may not run as soon as they are released.
        let mut span: Option<(Instant, Instant)> = None;
        for h in handles {
            let (a, b) = h.join().expect("a put thread does not panic")?;
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        let (a, b) = span.ok_or("no threads")?;
        Ok(b - a)
    })
}

/// What rank 0 broadcasts after each repetition: [more, offset, length, checksum].
type Verify = [u64; 4];

/// Rank 0's side of one verification: barrier, broadcast, allreduce.
fn verify_with_peer(client: &Client, v: Verify) -> Res<u64> {
    client.barrier()?;
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    client.world().broadcast(0, &bytes)?;
    let bad = client.world().allreduce(&[0u64], ReduceOp::Sum)?;
    Ok(bad.first().copied().unwrap_or(u64::MAX))
}

/// Rank 1 (and others): sleep in a non-blocking barrier, then check what
/// rank 0 asks; until it says there is no more.
fn serve(client: &Client) -> Res<u64> {
    let mut failures = 0;
    loop {
        let ev = client.world().barrier_nb()?;
        while !ev.test() {
            std::thread::sleep(Duration::from_millis(1));
            // Every endpoint: puts on one that takes the AM reference
            // need this rank's handlers.
            for e in 0..client.endpoint_count() {
                client.endpoint_at(e)?.poll()?;
            }
        }
        let got = client.world().broadcast(0, &[])?;
        let mut v: Verify = [0; 4];
        for (x, c) in v.iter_mut().zip(got.chunks_exact(8)) {
            *x = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        let [more, off, len, want] = v;
        let mut bad = 0u64;
        if more != 0 && client.rank() == Rank(1) {
            let mut target = vec![0u8; len as usize];
            client.endpoint().segment().read(off, &mut target)?;
            let have = checksum(&target);
            if have != want {
                eprintln!(
                    "rma_mt: rank 1: target checksum {have:#018x} != origin checksum {want:#018x} ({len} B at offset {off})"
                );
                bad = 1;
            }
        }
        failures += client.world().allreduce(&[bad], ReduceOp::Sum)?[0];
        if more == 0 {
            return Ok(failures);
        }
    }
}

struct Bench<'a> {
    client: &'a Client,
    target: Duration,
    reps: usize,
    seed: u64,
}

impl Bench<'_> {
    fn sources(&mut self, w: Work, threads: usize) -> Vec<Vec<u8>> {
        self.seed += 1;
        let seed = self.seed;
        (0..threads)
            .map(|t| (0..w.slice()).map(|i| pattern(seed, t, i)).collect())
            .collect()
    }

    fn point(&mut self, w: Work, threads: usize, mode: Mode) -> Res<Point> {
        let client = self.client;
        let srcs = self.sources(w, threads);
        let iters = calibrate(self.target, w.slots as u64, 1 << 34, |n| {
            run_threads(client, w, threads, mode, n, &srcs)
        })?;
        let mut samples = Vec::new();
        for _ in 0..self.reps {
            let srcs = self.sources(w, threads);
            let t = run_threads(client, w, threads, mode, iters, &srcs)?;
            let puts = (threads as u64 * iters) as f64;
            samples.push(if w.put == RATE.put {
                puts / t.as_secs_f64() / 1e6
            } else {
                puts * w.put as f64 / t.as_nanos() as f64
            });
            // Origin checksum: the thread slices in order, as they should
            // lie in the target.
            let origin: Vec<u8> = srcs.concat();
            let v = [1, 0, origin.len() as u64, checksum(&origin)];
            let bad = verify_with_peer(client, v)?;
            if bad != 0 {
                return Err(format!(
                    "{} with {threads} thread(s): the target's checksum differs from the origin's",
                    w.name
                )
                .into());
            }
        }
        let s = Stats::from_samples(&samples).ok_or("no repetitions")?;
        Ok(Point {
            work: w,
            threads,
            mode,
            s,
            iters,
            oversubscribed: threads > online_cpus(),
        })
    }
}

fn run() -> Res<()> {
    let Some(opts) = Opts::parse("rma_mt", std::env::args().skip(1), |_, _| Ok(false))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let first = rgex::launcher_rank()? == 0;
    let target = opts.target(Duration::from_millis(10), Duration::from_millis(200));
    let reps = opts.reps;
    let before = first.then(|| {
        let load = load_average();
        eprintln!("rma_mt: measuring the floor (cache-line round trip, memcpy 8 B and 64K)");
        let floors = Floors::measure(
            &[RATE.put, BW.put],
            opts.target(Duration::from_millis(4), Duration::from_millis(100)),
            reps,
        );
        (floors, load)
    });
    let client = rgex::init()?;
    // One endpoint per thread of the largest run, on both ranks (the
    // primordial one is thread 0's); a conduit with one per process
    // leaves the shared mode alone.
    let most = THREADS.iter().max().copied().unwrap_or(1);
    let mut modes = vec![Mode::Shared, Mode::Own];
    for _ in 1..most {
        if let Err(e) = client.create_endpoint() {
            if first {
                eprintln!("rma_mt: one endpoint per process here, so only the shared mode: {e}");
            }
            modes.pop();
            break;
        }
    }
    let Some((floors, load)) = before else {
        let failures = serve(&client)?;
        client.barrier()?;
        return if failures == 0 {
            Ok(())
        } else {
            Err(format!("{failures} checksum mismatch(es)").into())
        };
    };
    let need = THREADS.iter().max().copied().unwrap_or(1) * RATE.slice().max(BW.slice());
    if client.size() < 2 {
        return Err("rma_mt needs two ranks (run it through rgex-run -n 2)".into());
    }
    if (client.endpoint().conduit().segment_len(Rank(1)) as usize) < need {
        return Err(
            format!("rank 1's segment is smaller than the {need} B the slices need").into(),
        );
    }
    let mut b = Bench {
        client: &client,
        target,
        reps,
        seed: 0,
    };
    let mut points = Vec::new();
    let result = (|| -> Res<()> {
        for w in [RATE, BW] {
            for &t in &THREADS {
                // Interleaved: the modes of one point back to back.
                for &m in &modes {
                    eprintln!(
                        "rma_mt: measuring {} with {t} thread(s), {}",
                        w.name,
                        m.name()
                    );
                    points.push(b.point(w, t, m)?);
                }
            }
        }
        Ok(())
    })();
    // Release rank 1 whatever happened.
    let bye = verify_with_peer(&client, [0; 4]);
    if result.is_err() || bye.is_err() {
        let _ = client.barrier();
        result?;
        bye?;
    }
    let job = Job {
        bench: "rma_mt".into(),
        conduit: client.endpoint().conduit().name().to_owned(),
        provider: None,
        ranks: client.size(),
        oversubscribed: client.endpoint().polite() || client.size() as usize > online_cpus(),
    };
    print!("{}", table(&job, &floors, load, &points, reps));
    opts.write(
        &records(&job, &floors, &points),
        &[("", plot(&job, &points))],
    )?;
    client.barrier()?;
    Ok(())
}

fn table(job: &Job, floors: &Floors, load: Option<f64>, points: &[Point], reps: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "rma_mt: {} ranks, conduit {}, NBI puts from 1/2/4 threads of rank 0 to rank 1 (which sleeps in a barrier), {reps} repetitions per point; figures are median [min .. max]",
        job.ranks, job.conduit
    );
    if let Some(l) = load {
        let _ = writeln!(
            s,
            "node load average (1 min) at start: {l:.2} on {} CPUs",
            online_cpus()
        );
    }
    let _ = writeln!(s, "\nFloor (measured in this run)");
    s.push_str(&floors.table().to_string());
    for w in [RATE, BW] {
        let _ = writeln!(s, "\nPut {} (all threads together)", w.name);
        let mine: Vec<&Point> = points.iter().filter(|p| p.work.put == w.put).collect();
        let one = |m: Mode| {
            mine.iter()
                .find(|p| p.threads == 1 && p.mode == m)
                .map(|p| p.s.median)
        };
        let mut t = Table::new([
            "threads",
            "endpoints",
            "median [min .. max]",
            "unit",
            "vs 1 thread",
            "vs memcpy 1 core",
            "puts/thread/rep",
            "note",
        ]);
        let mc = floors.memcpy_at(w.put).map(|m| {
            if w.put == RATE.put {
                m.median * 1e3 / w.put as f64 // GB/s -> M copies/s
            } else {
                m.median
            }
        });
        for p in &mine {
            t.row([
                p.threads.to_string(),
                p.mode.name().into(),
                spread(&p.s),
                p.unit().into(),
                one(p.mode).map_or("-".into(), |o| format!("{:.2}x", p.s.median / o)),
                mc.map_or("-".into(), |m| format!("{:.2}x", p.s.median / m)),
                p.iters.to_string(),
                if p.oversubscribed {
                    format!(
                        "OVERSUBSCRIBED ({} threads on {} CPUs)",
                        p.threads,
                        online_cpus()
                    )
                } else {
                    String::new()
                },
            ]);
        }
        s.push_str(&t.to_string());
    }
    let _ = writeln!(
        s,
        "checksums: origin and target matched after every repetition ({} checks)",
        points.len() * reps
    );
    let _ = writeln!(
        s,
        "vs memcpy 1 core: against one core's memcpy of the same size (8 B: copies per second, {} M/s; 64 KiB: GB/s)",
        num(floors.memcpy_at(RATE.put).map_or(0.0, |m| m.median * 1e3 / RATE.put as f64))
    );
    s
}

fn records(job: &Job, floors: &Floors, points: &[Point]) -> Vec<Record> {
    let mut v = floors.records(job);
    for p in points {
        let mut r = job.record(
            &format!(
                "put {}, {} thread(s), {}",
                p.work.name,
                p.threads,
                p.mode.name()
            ),
            Some(p.work.put as u64),
            &p.s,
            p.unit(),
            p.iters,
        );
        r.oversubscribed |= p.oversubscribed;
        v.push(r);
    }
    v
}

fn plot(job: &Job, points: &[Point]) -> Plot {
    let mut p = Plot::new(
        &format!(
            "rma_mt: put rate and bandwidth vs threads, conduit {}",
            job.conduit
        ),
        "threads on rank 0 (4 = oversubscribed on 2 CPUs)",
        "Mputs/s (8 B) or GB/s (64 KiB); median, whiskers min..max",
        THREADS.iter().map(|t| t.to_string()).collect(),
    );
    for w in [RATE, BW] {
        for m in [Mode::Shared, Mode::Own] {
            p.series.push(Series {
                name: format!(
                    "{}, {} [{}]",
                    w.name,
                    m.name(),
                    if w.put == RATE.put { "Mputs/s" } else { "GB/s" }
                ),
                points: points
                    .iter()
                    .filter(|q| q.work.put == w.put && q.mode == m)
                    .filter_map(|q| {
                        let i = THREADS.iter().position(|&t| t == q.threads)?;
                        Some((i, q.s.median, q.s.min, q.s.max))
                    })
                    .collect(),
            });
        }
    }
    p
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rma_mt: error: {e}");
            ExitCode::FAILURE
        }
    }
}
