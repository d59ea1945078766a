//! testvisperf: flood bandwidth of non-contiguous (VIS) puts (GASNet-EX's
//! testvisperf, see BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/testvisperf [--quick] [--json PATH] [--reps N]`
//!
//! Rank 0 puts from its own segment to rank 1's (which sits in
//! `barrier()` meanwhile) 8-byte elements at 25% density (8 bytes of
//! payload, 24 of skip) on both sides,
//! total payload 16 B .. 2 MiB, described as Indexed metadata and as
//! Strided metadata of 3, 8 and 32 dimensions (the same bytes: the 1-d
//! pattern split into dimensions of extent 2 and 1), the 32-d shape also
//! compiled once (`CompiledStrided`), and compares, in the same run,
//! naive walkers of the 3-d, 8-d and 32-d metadata (nested loops of that
//! depth, one put per element, as GASNet-1's reference did: each strided
//! variant is set against the walker of its own dimensionality), a
//! contiguous put of the same byte count, and the memcpy floor. Each point is a flood of
//! implicit-handle puts ended by one sync, then checked with a VIS get.
//! The mechanism is the VIS default for the peer (`RGEX_VIS` to force one).
//!
//! Two more sets: the inter-node set (3-d strided, 64-byte elements at 25%
//! density, 128 B .. 2 MiB, against the naive walker and a contiguous put,
//! interleaved),
//! and the remote case: with the AM mechanism forced, the NP-based AM
//! pipeline against the FP-based one (`AmPayload::Fixed`: packed into a
//! client-side buffer, sent fixed-payload), 3-d, 8-byte and 64-byte
//! elements at 25% density, repetitions interleaved, speedup printed in %.
//!
//! Then local completion: Vector puts of 64 KiB fragments, each waited
//! for, with local completion at return (`put_nb`) against deferred
//! (`put_nb_defer`, the buffer handed back at local completion), paired.
//!
//! Last, shared copies: node-local 3-d strided puts of 64 KiB .. 2 MiB
//! from the default context (which shares copies of `SHARE_MIN` or more
//! with threads waiting on the endpoint) against one built with
//! `shared_copy(false)`, interleaved, first with rank 0 alone and then
//! with a second thread of rank 0 waiting in `poll` on the other CPU;
//! rank 1 sleeps between polls meanwhile, so that CPU is free.

use rgex::vis::AmPayload;
use rgex::{
    Client, CompiledStrided, Flags, GlobalAddr, Indexed, NbiCategory, Rank, Strided, Vector, Vis,
    VisMechanism, VisMeta,
};
use rgex_benches::affinity::{current_cpu, online_cpus, pin_current_thread};
use rgex_benches::cli::Opts;
use rgex_benches::floor::Floors;
use rgex_benches::report::{num, size as size_str, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::Stats;
use rgex_benches::timing::calibrate;
use std::error::Error;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: testvisperf [--quick] [--json PATH] [--reps N]

  --quick      short repetitions (a smoke run: well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/testvisperf.json);
               the SVG plot goes next to it
  --reps N     repetitions per point (default 5)";

/// Payload sizes: 16 B, then powers of 4 to 1 MiB, and 2 MiB.
const SIZES: [usize; 10] = [
    16,
    64,
    256,
    1 << 10,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    2 << 20,
];
const QUICK_SIZES: [usize; 5] = [16, 256, 4 << 10, 64 << 10, 2 << 20];

const ELEM: usize = 8;
/// Element pitch: 25% density.
const PITCH: usize = 32;

/// The inter-node set: 64-byte elements at 25% density, 128 B .. 2 MiB.
const ELEM64: usize = 64;
const PITCH64: usize = 256;
const SIZES64: [usize; 8] = [
    128,
    512,
    2 << 10,
    8 << 10,
    32 << 10,
    128 << 10,
    512 << 10,
    2 << 20,
];
const QUICK_SIZES64: [usize; 3] = [128, 8 << 10, 2 << 20];
const VARIANTS64: [&str; 3] = [
    "Strided 3-d, 64 B",
    "naive walker, 3-d, 64 B",
    "contiguous put, 64 B",
];

/// The remote case: AM forced, NP- vs FP-based pipeline, 3-d, 8- and
/// 64-byte elements at 25% density.
const SIZES_AM: [usize; 4] = [4 << 10, 64 << 10, 1 << 20, 2 << 20];
const QUICK_SIZES_AM: [usize; 2] = [4 << 10, 1 << 20];

/// The shared-copy set: node-local 3-d strided puts, 8-byte elements at
/// 25% density, from below `SHARE_MIN` (where sharing is off) to 2 MiB.
const SIZES_SHARED: [usize; 4] = [64 << 10, 256 << 10, 1 << 20, 2 << 20];
const QUICK_SIZES_SHARED: [usize; 2] = [256 << 10, 2 << 20];
/// Its variants: a context that never shares against the default one,
/// first with nobody else polling, then with a second thread of rank 0
/// waiting in `poll` (pinned to another CPU).
const SHARED: [&str; 4] = [
    "Strided 3-d, one thread, nobody waiting",
    "Strided 3-d, shared, nobody waiting",
    "Strided 3-d, one thread, a thread waiting",
    "Strided 3-d, shared, a thread waiting",
];
/// How long rank 1 sleeps between polls while the shared-copy set runs
/// (so that its CPU is free for rank 0's waiting thread).
const NAP: Duration = Duration::from_micros(500);
/// The local-completion set: Vector puts of 64 KiB fragments, each
/// waited for, with local completion at return (`put_nb`: over RMA all
/// chunks are in flight, then one wait for their local completion)
/// against deferred (`put_nb_defer`: that wait left to the caller). What
/// deferring costs; its gain is the overlap a caller makes of it.
const SIZES_LC: [usize; 2] = [256 << 10, 1 << 20];
const QUICK_SIZES_LC: [usize; 1] = [1 << 20];
const LC_FRAG: usize = 64 << 10;
const LC: [&str; 2] = [
    "Vector 64 KiB fragments, put_nb",
    "Vector 64 KiB fragments, put_nb_defer",
];
const NP: &str = "AM NP-based, Strided 3-d";
const FP: &str = "AM FP-based, Strided 3-d";
const NP64: &str = "AM NP-based, Strided 3-d, 64 B";
const FP64: &str = "AM FP-based, Strided 3-d, 64 B";
/// The remote case's two shapes: element size, pitch, NP and FP variants
/// (8-byte elements as in the intra-node set; 64-byte ones as in the
/// inter-node set, where a pack writes whole lines).
const AM_SHAPES: [(usize, usize, &str, &str); 2] =
    [(ELEM, PITCH, NP, FP), (ELEM64, PITCH64, NP64, FP64)];

const VARIANTS: [&str; 9] = [
    "Indexed",
    "Strided 3-d",
    "Strided 8-d",
    "Strided 32-d",
    "Strided 32-d, compiled",
    "naive walker, 3-d",
    "naive walker, 8-d",
    "naive walker, 32-d",
    "contiguous put",
];

/// The naive walker each variant of the 8-byte set is set against: the
/// one of its own metadata's dimensionality (3-d for the rest).
fn naive_for(variant: &str) -> &'static str {
    match variant {
        "Strided 8-d" | "naive walker, 8-d" => VARIANTS[6],
        "Strided 32-d" | "Strided 32-d, compiled" | "naive walker, 32-d" => VARIANTS[7],
        _ => VARIANTS[5],
    }
}

/// Split `m = 2^k` elements into `d` dimensions (extents 2 and 1, and
/// one larger extent where k > d); strides of the 25%-density pattern.
fn dims(m: usize, d: usize, pitch: usize) -> (Vec<u64>, Vec<i64>) {
    let k = m.trailing_zeros() as usize;
    let mut counts = vec![1u64; d];
    for i in 0..k {
        counts[i % d] *= 2;
    }
    let mut strides = Vec::with_capacity(d);
    let mut s = pitch as i64;
    for &c in &counts {
        strides.push(s);
        s *= c as i64;
    }
    (counts, strides)
}

struct Point {
    size: usize,
    variant: &'static str,
    bw: Stats,
    iters: u64,
    /// GB/s of each repetition, in order (repetitions of the variants of
    /// one interleaved set line up: see [`paired`]).
    samples: Vec<f64>,
}

/// One interleaved measurement: statistics, iterations per repetition,
/// and the repetitions' GB/s in order.
type Flood = (Stats, u64, Vec<f64>);

/// `a`'s bandwidth over `b`'s, one ratio per repetition of an interleaved
/// set (the two ran back to back, so a machine changing speed between
/// repetitions moves both): median [min .. max] of those ratios.
fn paired(a: &Point, b: &Point) -> Option<Stats> {
    rgex_benches::stats::paired(&a.samples, &b.samples)
}

/// The points of one size's interleaved floods, one per variant, in order.
fn points(
    size: usize,
    variants: impl IntoIterator<Item = &'static str>,
    floods: Vec<Flood>,
) -> impl Iterator<Item = Point> {
    variants
        .into_iter()
        .zip(floods)
        .map(move |(variant, (bw, iters, samples))| Point {
            size,
            variant,
            bw,
            iters,
            samples,
        })
}

/// Flood each op's transfers (calibrated to `target`), one NBI sync per
/// run; GB/s of payload per op. The ops' repetitions are interleaved (so
/// a drifting machine biases none of them) in a rotating order.
fn flood_interleaved(
    client: &Client,
    size: usize,
    target: Duration,
    reps: usize,
    ops: &mut [Box<dyn FnMut() -> rgex::Result<()> + '_>],
) -> Res<Vec<Flood>> {
    let max = ((4u64 << 30) / size as u64).max(4);
    let run =
        |op: &mut Box<dyn FnMut() -> rgex::Result<()> + '_>, n: u64| -> rgex::Result<Duration> {
            let t = Instant::now();
            for _ in 0..n {
                op()?;
            }
            client.endpoint().nbi_wait(NbiCategory::Put)?;
            Ok(t.elapsed())
        };
    let mut iters = Vec::with_capacity(ops.len());
    for op in ops.iter_mut() {
        iters.push(calibrate(target, 1, max, |n| run(op, n))?);
    }
    let mut samples = vec![Vec::with_capacity(reps.max(1)); ops.len()];
    // Each repetition starts one variant later, so that no variant always
    // follows the same one (a variant that leaves the caches cold, such
    // as Indexed at 2 MiB, would otherwise bias its successor every time).
    let n = ops.len();
    for rep in 0..reps.max(1) {
        for k in 0..n {
            let i = (rep + k) % n;
            let t = run(&mut ops[i], iters[i])?;
            samples[i].push((size as u64 * iters[i]) as f64 / t.as_nanos().max(1) as f64);
        }
    }
    Ok(samples
        .into_iter()
        .zip(iters)
        .map(|(v, n)| {
            (
                Stats::from_samples(&v).expect("timings are never NaN"),
                n,
                v,
            )
        })
        .collect())
}

fn measure(client: &Client, vis: &Vis, opts: &Opts) -> Res<Vec<Point>> {
    let mut out = measure8(client, vis, opts)?;
    out.extend(measure64(client, vis, opts)?);
    out.extend(measure_am(client, opts)?);
    out.extend(measure_lc(client, opts)?);
    // Rank 1 stops polling (see `nap_until_done`) for the last set.
    client.barrier()?;
    out.extend(measure_shared(client, opts)?);
    client.barrier()?;
    Ok(out)
}

/// Rank 1's part in the shared-copy set: sleep between polls until rank 0
/// joins a barrier (so that rank 0's waiting thread has a CPU). Bounded.
fn nap_until_done(client: &Client) -> Res<()> {
    client.barrier()?;
    let done = client.world().barrier_nb()?;
    let deadline = Instant::now() + Duration::from_secs(1800);
    while !done.test() {
        if Instant::now() > deadline {
            return Err(
                "testvisperf: rank 0 did not finish the shared-copy set in 30 minutes".into(),
            );
        }
        std::thread::sleep(NAP);
        client.endpoint().poll()?;
    }
    Ok(())
}

/// Why no copy to rank 1 can be shared here.
fn no_sharing(client: &Client) -> String {
    format!(
        "conduit {}: rank 1's segment is not mapped in rank 0, so no copy to it is node-local",
        client.endpoint().conduit().name()
    )
}

/// The shared-copy set: large node-local strided puts from a context that
/// never shares (`shared_copy(false)`) and from the default one, each pair
/// interleaved, first with rank 0 alone (what sharing costs when nobody
/// helps), then with a second thread of rank 0 waiting in `poll` on
/// another CPU (what a waiting thread's help gains).
fn measure_shared(client: &Client, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let sizes: &[usize] = sized(opts, &SIZES_SHARED, &QUICK_SIZES_SHARED);
    if client.endpoint().locality().mapped_segment(peer).is_none() {
        eprintln!(
            "testvisperf: shared copies: skipped ({})",
            no_sharing(client)
        );
        return Ok(Vec::new());
    }
    let reps = opts.reps.max(1) * SPLIT as usize;
    let f = Flags::empty();
    let one = Vis::builder().shared_copy(false).build(client.endpoint())?;
    let shared = Vis::new(client.endpoint())?;
    let mut out = Vec::new();
    let stop = &AtomicBool::new(false);
    // Rank 0's thread stays on its CPU and the waiter takes the next one;
    // with one CPU there is nothing to help with, so that half is skipped.
    let cpus = online_cpus();
    let here = current_cpu().unwrap_or(0);
    let other = (here + 1) % cpus;
    if let Err(e) = pin_current_thread(here) {
        eprintln!("testvisperf: shared copies: could not pin rank 0 to CPU {here}: {e}");
    }
    let halves: &[bool] = if cpus > 1 {
        &[false, true]
    } else {
        eprintln!("testvisperf: shared copies: one CPU, so no waiting-thread half");
        &[false]
    };
    for &waiting in halves {
        std::thread::scope(|s| -> Res<()> {
            let waiter = waiting.then(|| {
                eprintln!("testvisperf: shared copies: rank 0 on CPU {here}, its waiting thread on CPU {other}");
                s.spawn(move || -> rgex::Result<()> {
                    if let Err(e) = pin_current_thread(other) {
                        eprintln!("testvisperf: shared copies: could not pin the waiting thread to CPU {other}: {e}");
                    }
                    while !stop.load(Ordering::Relaxed) {
                        client.endpoint().poll()?;
                    }
                    Ok(())
                })
            });
            let r = (|| -> Res<()> {
                for &size in sizes {
                    let m = size / ELEM;
                    let span = m * PITCH;
                    // SAFETY: nothing writes rank 0's segment during the benchmark (rank 1
                    // only polls or sleeps; checks read into local buffers), and this
                    // size's slice is dropped before the next call.
                    let src = unsafe { source(client, span, size as u32 ^ 0x5e) }?;
                    let (c, st) = dims(m, 3, PITCH);
                    let meta = strided(ELEM, &c, &st);
                    eprintln!(
                        "testvisperf: {}, shared copy, {}",
                        size_str(size as u64),
                        if waiting {
                            "a thread waiting"
                        } else {
                            "nobody waiting"
                        }
                    );
                    for v in [&one, &shared] {
                        verify(client, v, meta.into(), src, ELEM, PITCH)?;
                    }
                    let mut ops: [Box<dyn FnMut() -> rgex::Result<()> + '_>; 2] = [
                        Box::new(|| one.put_nbi(peer, meta, src, f)),
                        Box::new(|| shared.put_nbi(peer, meta, src, f)),
                    ];
                    let r = flood_interleaved(client, size, target, reps, &mut ops)?;
                    let names = if waiting { &SHARED[2..] } else { &SHARED[..2] };
                    out.extend(points(size, names.iter().copied(), r));
                }
                Ok(())
            })();
            stop.store(true, Ordering::Relaxed);
            if let Some(w) = waiter {
                w.join().map_err(|_| "the waiting thread panicked")??;
            }
            stop.store(false, Ordering::Relaxed);
            r
        })?;
    }
    Ok(out)
}

/// `len` bytes of the benchmark's pattern (`seed`) in rank 0's own
/// segment from offset 0: the source of the sets' puts (all but the
/// local-completion set's, whose `put_nb_defer` takes an owned buffer),
/// so that the payload lies in the segment on both sides (BENCHMARKS.md).
///
/// # Safety
/// Nothing may write rank 0's segment while the slice lives (another
/// `source` call included): drop it first.
unsafe fn source(client: &Client, len: usize, seed: u32) -> Res<&[u8]> {
    let mut v = vec![0u8; len];
    rgex_benches::payload::generate(&mut v, seed);
    let seg = client.endpoint().segment();
    seg.write(0, &v)?;
    // SAFETY: `write` checked that the segment holds `len` bytes, and it
    // stays mapped for the client's life; the caller keeps writers away
    // while the slice lives.
    Ok(unsafe { std::slice::from_raw_parts(seg.as_ptr(), len) })
}

/// The naive walker: nested loops over the metadata as given (every
/// dimension, none folded or removed; the first innermost), one put per
/// element, as GASNet-1's reference walked it; `base` is the byte the
/// loops start at (0 for a whole transfer; each loop calls the next
/// with its own position).
fn naive(
    client: &Client,
    peer: Rank,
    src: &[u8],
    elem: usize,
    c: &[u64],
    s: &[i64],
    base: i64,
) -> rgex::Result<()> {
    let Some((&outer, inner)) = c.split_last() else {
        return Ok(());
    };
    let (&step, inner_s) = s.split_last().expect("a stride per count");
    for k in 0..outer as i64 {
        let o = base + k * step;
        if inner.is_empty() {
            let o = o as usize;
            let at = GlobalAddr::new(peer, o as u64);
            client
                .endpoint()
                .put_nbi(at, &src[o..o + elem], Flags::empty())?;
        } else {
            naive(client, peer, src, elem, inner, inner_s, o)?;
        }
    }
    Ok(())
}

fn strided<'a>(elem: usize, c: &'a [u64], s: &'a [i64]) -> Strided<'a> {
    Strided {
        elem_size: elem,
        counts: c,
        peer_offset: 0,
        peer_strides: s,
        local_offset: 0,
        local_strides: s,
    }
}

/// Repetitions of an interleaved set per configured repetition.
const SPLIT: u32 = rgex_benches::stats::PAIR_SPLIT;

/// The intra-node set: 8-byte elements, every metadata form (and 32-d
/// compiled once). The nine variants of one size run interleaved (a drifting machine biases none of
/// them: the dimensionality comparison is a few %), [`SPLIT`] times the
/// configured repetitions of a third of the target each.
fn measure8(client: &Client, vis: &Vis, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100)) / SPLIT;
    let reps = opts.reps.max(1) * SPLIT as usize;
    let sizes: &[usize] = sized(opts, &SIZES, &QUICK_SIZES);
    let f = Flags::empty();
    let mut out = Vec::new();
    for &size in sizes {
        let m = size / ELEM;
        let span = m * PITCH;
        // SAFETY: nothing writes rank 0's segment during the benchmark (rank 1
        // only polls or sleeps; checks read into local buffers), and this
        // size's slice is dropped before the next call.
        let src = unsafe { source(client, span, size as u32) }?;
        let offsets: Vec<u64> = (0..m as u64).map(|i| i * PITCH as u64).collect();
        let indexed = Indexed {
            peer: &offsets,
            peer_len: 8,
            local: &offsets,
            local_len: 8,
        };
        // Strided metadata of 3, 8 and 32 dimensions, in VARIANTS order.
        let md: Vec<(Vec<u64>, Vec<i64>)> = [3, 8, 32].map(|d| dims(m, d, PITCH)).into();
        let [s3d, s8d, s32d]: [Strided<'_>; 3] =
            std::array::from_fn(|i| strided(ELEM, &md[i].0, &md[i].1));
        let [(c3, s3), (c8, s8), (c32, s32)] = [&md[0], &md[1], &md[2]];
        let shape32 = CompiledStrided::new(ELEM, c32, s32, s32)?;
        let compiled = shape32.at(0, 0);
        let at = GlobalAddr::new(peer, 0);
        eprintln!("testvisperf: {}", size_str(size as u64));
        let metas = [
            indexed.into(),
            s3d.into(),
            s8d.into(),
            s32d.into(),
            compiled.into(),
        ];
        for meta in metas {
            verify(client, vis, meta, src, ELEM, PITCH)?;
        }
        for (c, s) in [(c3, s3), (c8, s8), (c32, s32)] {
            verify_by(client, src, ELEM, PITCH, || {
                naive(client, peer, src, ELEM, c, s, 0)?;
                client.endpoint().nbi_wait(NbiCategory::Put)?;
                Ok(())
            })?;
        }
        let r = {
            let src = &src;
            let mut ops: Vec<Box<dyn FnMut() -> rgex::Result<()> + '_>> = vec![
                Box::new(move || vis.put_nbi(peer, indexed, src, f)),
                Box::new(move || vis.put_nbi(peer, s3d, src, f)),
                Box::new(move || vis.put_nbi(peer, s8d, src, f)),
                Box::new(move || vis.put_nbi(peer, s32d, src, f)),
                // The same shape compiled once (no per-call comparison).
                Box::new(move || vis.put_nbi(peer, compiled, src, f)),
                // GASNet-1 style: nested loops over each metadata, one
                // put per element.
                Box::new(move || naive(client, peer, src, ELEM, c3, s3, 0)),
                Box::new(move || naive(client, peer, src, ELEM, c8, s8, 0)),
                Box::new(move || naive(client, peer, src, ELEM, c32, s32, 0)),
                Box::new(move || client.endpoint().put_nbi(at, &src[..size], f)),
            ];
            flood_interleaved(client, size, target, reps, &mut ops)?
        };
        out.extend(points(size, VARIANTS, r));
    }
    Ok(out)
}

/// The inter-node set: 3-d strided, 64-byte elements, its three variants
/// interleaved as in [`measure8`].
fn measure64(client: &Client, vis: &Vis, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100)) / SPLIT;
    let reps = opts.reps.max(1) * SPLIT as usize;
    let sizes: &[usize] = sized(opts, &SIZES64, &QUICK_SIZES64);
    let f = Flags::empty();
    let mut out = Vec::new();
    for &size in sizes {
        let m = size / ELEM64;
        let span = m * PITCH64;
        // SAFETY: nothing writes rank 0's segment during the benchmark (rank 1
        // only polls or sleeps; checks read into local buffers), and this
        // size's slice is dropped before the next call.
        let src = unsafe { source(client, span, size as u32 ^ 0x64) }?;
        let (c, s) = dims(m, 3, PITCH64);
        let st = strided(ELEM64, &c, &s);
        let at = GlobalAddr::new(peer, 0);
        eprintln!("testvisperf: {}, 64 B elements", size_str(size as u64));
        verify(client, vis, st.into(), src, ELEM64, PITCH64)?;
        // Interleaved, in VARIANTS64 order, as the 8-byte set (run one
        // after the other, the first variant met the machine as the
        // previous set left it).
        let r = {
            let (src, c, s) = (&src, &c, &s);
            let mut ops: [Box<dyn FnMut() -> rgex::Result<()> + '_>; 3] = [
                Box::new(move || vis.put_nbi(peer, st, src, f)),
                Box::new(move || naive(client, peer, src, ELEM64, c, s, 0)),
                Box::new(move || client.endpoint().put_nbi(at, &src[..size], f)),
            ];
            flood_interleaved(client, size, target, reps, &mut ops)?
        };
        out.extend(points(size, VARIANTS64, r));
    }
    Ok(out)
}

/// The remote case: AM forced, NP- vs FP-based pipeline, interleaved.
fn measure_am(client: &Client, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let sizes: &[usize] = sized(opts, &SIZES_AM, &QUICK_SIZES_AM);
    // More repetitions than elsewhere: the difference sought is a few %.
    let reps = opts.reps.max(3) * 2 - 1;
    let f = Flags::empty();
    let am = |p| {
        Vis::builder()
            .mechanism(VisMechanism::Am)
            .am_payload(p)
            .build(client.endpoint())
    };
    let (np, fp) = (am(AmPayload::Negotiated)?, am(AmPayload::Fixed)?);
    let mut out = Vec::new();
    for &size in sizes {
        for (elem, pitch, np_name, fp_name) in AM_SHAPES {
            let m = size / elem;
            let span = m * pitch;
            // SAFETY: nothing writes rank 0's segment during the benchmark
            // (rank 1 only polls or sleeps; checks read into local buffers),
            // and this shape's slice is dropped before the next call.
            let src = unsafe { source(client, span, size as u32 ^ 0xa3) }?;
            let (c, s) = dims(m, 3, pitch);
            let st = strided(elem, &c, &s);
            eprintln!(
                "testvisperf: {}, {elem} B elements, AM NP vs FP",
                size_str(size as u64)
            );
            for v in [&np, &fp] {
                verify(client, v, st.into(), src, elem, pitch)?;
            }
            let mut ops: [Box<dyn FnMut() -> rgex::Result<()> + '_>; 2] = [
                Box::new(|| np.put_nbi(peer, st, src, f)),
                Box::new(|| fp.put_nbi(peer, st, src, f)),
            ];
            let r = flood_interleaved(client, size, target, reps, &mut ops)?;
            out.extend(points(size, [np_name, fp_name], r));
        }
    }
    Ok(out)
}

/// The local-completion set, interleaved (see [`LC`]).
fn measure_lc(client: &Client, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let vis = Vis::new(client.endpoint())?;
    let f = Flags::empty();
    let mut out = Vec::new();
    for &size in sized(opts, &SIZES_LC, &QUICK_SIZES_LC) {
        let n = (size / LC_FRAG) as u64;
        let frag = LC_FRAG as u64;
        let peer_frags: Vec<(u64, u64)> = (0..n).map(|k| (2 * k * frag, frag)).collect();
        let whole = [(0, size as u64)];
        let meta = Vector {
            peer: &peer_frags,
            local: &whole,
        };
        let mut src = vec![0u8; size];
        rgex_benches::payload::generate(&mut src, size as u32 ^ 0x1c);
        eprintln!("testvisperf: {}, local completion", size_str(size as u64));
        // Checked before it is timed: zeroed fragments, one deferred put,
        // each fragment read back with a plain get.
        client
            .endpoint()
            .put(GlobalAddr::new(peer, 0), &vec![0u8; 2 * size], f)?;
        let p = vis.put_nb_defer(peer, meta, src, f)?;
        let src = p.lc.wait()?;
        p.rc.wait()?;
        for (k, &(off, len)) in peer_frags.iter().enumerate() {
            let mut back = vec![0u8; len as usize];
            client
                .endpoint()
                .get(&mut back, GlobalAddr::new(peer, off), f)?;
            if back[..] != src[k * LC_FRAG..(k + 1) * LC_FRAG] {
                return Err(
                    format!("VIS put check failed (local-completion set, fragment {k})").into(),
                );
            }
        }
        let held = std::cell::RefCell::new(src);
        let r = {
            let (vis, held) = (&vis, &held);
            let mut ops: [Box<dyn FnMut() -> rgex::Result<()> + '_>; 2] = [
                Box::new(move || {
                    vis.put_nb(peer, meta, &held.borrow(), f)?.rc.wait()?;
                    Ok(())
                }),
                Box::new(move || {
                    let buf = std::mem::take(&mut *held.borrow_mut());
                    let p = vis.put_nb_defer(peer, meta, buf, f)?;
                    *held.borrow_mut() = p.lc.wait()?;
                    p.rc.wait()?;
                    Ok(())
                }),
            ];
            flood_interleaved(client, size, target, opts.reps.max(3) * 2 - 1, &mut ops)?
        };
        out.extend(points(size, LC, r));
    }
    Ok(out)
}

/// Check one VIS put of `meta` before it is timed: rank 1's span is
/// zeroed, the put made, and the span read back with a plain contiguous
/// get (no VIS), every element compared with the source (the layout is
/// the same on both sides here). Checked after the floods instead, the
/// naive walker and the contiguous put would have left the same bytes.
fn verify(
    client: &Client,
    vis: &Vis,
    meta: VisMeta<'_>,
    src: &[u8],
    elem: usize,
    pitch: usize,
) -> Res<()> {
    verify_by(client, src, elem, pitch, || {
        vis.put(Rank(1), meta, src, Flags::empty())
    })
}

/// As [`verify`], for a put made (and completed) by `put`.
fn verify_by(
    client: &Client,
    src: &[u8],
    elem: usize,
    pitch: usize,
    put: impl FnOnce() -> rgex::Result<()>,
) -> Res<()> {
    let at = GlobalAddr::new(Rank(1), 0);
    client
        .endpoint()
        .put(at, &vec![0u8; src.len()], Flags::empty())?;
    put()?;
    let mut back = vec![0u8; src.len()];
    client.endpoint().get(&mut back, at, Flags::empty())?;
    for i in (0..src.len()).step_by(pitch) {
        if back[i..i + elem] != src[i..i + elem] {
            return Err(format!("VIS put check failed at byte {i} of {}", src.len()).into());
        }
    }
    Ok(())
}

fn run() -> Res<bool> {
    let Some(opts) = Opts::parse("testvisperf", std::env::args().skip(1), |_, _| Ok(false))? else {
        println!("{USAGE}");
        return Ok(true);
    };
    let first = rgex::launcher_rank()? == 0;
    let sizes: &[usize] = sized(&opts, &SIZES, &QUICK_SIZES);
    let sizes64: &[usize] = sized(&opts, &SIZES64, &QUICK_SIZES64);
    let sizes_am: &[usize] = sized(&opts, &SIZES_AM, &QUICK_SIZES_AM);
    let sizes_shared = sized(&opts, &SIZES_SHARED, &QUICK_SIZES_SHARED);
    let sizes_lc: &[usize] = sized(&opts, &SIZES_LC, &QUICK_SIZES_LC);
    let mut all_sizes: Vec<usize> = [sizes, sizes64, sizes_am, sizes_shared, sizes_lc].concat();
    all_sizes.sort_unstable();
    all_sizes.dedup();
    let floor_target = opts.target(Duration::from_millis(2), Duration::from_millis(50));
    let floors = first.then(|| {
        eprintln!("testvisperf: measuring the floor (memcpy bandwidth)");
        Floors::measure(&all_sizes, floor_target, opts.reps)
    });
    let client = rgex::init()?;
    let vis = Vis::new(client.endpoint())?;
    client.barrier()?;
    let n = client.size();
    if n < 2 {
        return Err("testvisperf needs two ranks (rgex-run -n 2 --bind ...)".into());
    }
    let points = if client.rank().0 == 0 {
        measure(&client, &vis, &opts)?
    } else {
        nap_until_done(&client)?;
        Vec::new()
    };
    client.barrier()?;
    let Some(floors) = floors else {
        return Ok(true);
    };
    let cpus = online_cpus();
    let job = Job {
        bench: "testvisperf".into(),
        conduit: client.endpoint().conduit().name().into(),
        provider: None,
        ranks: n,
        oversubscribed: n as usize > cpus,
    };
    let probe = vis.shape(
        Rank(1),
        &VisMeta::Indexed(Indexed {
            peer: &[0],
            peer_len: 8,
            local: &[0],
            local_len: 8,
        }),
        8,
    )?;
    println!(
        "testvisperf: {n} ranks on {cpus} CPUs, conduit {}, VIS mechanism {:?} (configured {:?})",
        job.conduit,
        vis.mechanism_for(Rank(1), &probe),
        vis.mechanism()
    );
    println!("\nFloor:\n{}", floors.table());
    let mut records: Vec<Record> = floors.records(&job);
    for p in &points {
        records.push(job.record(
            &format!("put {}", p.variant),
            Some(p.size as u64),
            &p.bw,
            "GB/s",
            p.iters,
        ));
    }
    let in_set = |vs: &[&str]| -> Vec<&Point> {
        points.iter().filter(|p| vs.contains(&p.variant)).collect()
    };
    let set8 = in_set(&VARIANTS);
    let set64 = in_set(&VARIANTS64);
    println!(
        "\nFlood put bandwidth, 8 B elements at 25% density, rank 0 -> rank 1 (payload GB/s):\n{}",
        table(&set8, naive_for, "contiguous put", &floors)
    );
    // Average speedup over the naive walker of the same dimensionality.
    for v in &VARIANTS[..5] {
        speedup_line(&set8, v, naive_for(v));
    }
    println!(
        "published (Aries, GASNet-EX 2018.3.0 over GASNet-1's nested loops): 1.9x / 2.6x / 3.9x average for 3-d / 8-d / 32-d, 8.6x peak"
    );
    // Dimensionality: 8-d, 32-d and compiled 32-d against 3-d, paired by
    // repetition.
    let mut t = Table::new(["payload", "8-d / 3-d", "32-d / 3-d", "compiled 32-d / 3-d"]);
    let (mut worst32, mut worst_c) = (f64::INFINITY, f64::INFINITY);
    for &size in sizes {
        let at = |v: &str| point(set8.iter().copied(), size, v);
        let (Some(d3), Some(d8), Some(d32), Some(dc)) = (
            at(VARIANTS[1]),
            at(VARIANTS[2]),
            at(VARIANTS[3]),
            at(VARIANTS[4]),
        ) else {
            continue;
        };
        let (Some(r8), Some(r32), Some(rc)) = (paired(d8, d3), paired(d32, d3), paired(dc, d3))
        else {
            continue;
        };
        worst32 = worst32.min(r32.median);
        worst_c = worst_c.min(rc.median);
        for (d, r) in [("8-d", &r8), ("32-d", &r32), ("32-d, compiled,", &rc)] {
            records.push(job.record(
                &format!("put Strided {d} over 3-d (paired)"),
                Some(size as u64),
                r,
                "ratio",
                d3.iters,
            ));
        }
        t.row([size_str(size as u64), ratio(&r8), ratio(&r32), ratio(&rc)]);
    }
    println!(
        "\nDimensionality: bandwidth over 3-d's for the same data, median [min .. max] of the repetitions' ratios (each repetition runs the variants back to back):\n{t}"
    );
    if worst32.is_finite() {
        println!(
            "Strided 32-d / 3-d: {:.2} at worst (target: within 10%, >= 0.90); compiled once: {:.2} at worst",
            worst32, worst_c
        );
    }
    println!(
        "\nFlood put bandwidth, 3-d strided, 64 B elements at 25% density (64 B payload, 192 skip), rank 0 -> rank 1 (payload GB/s):\n{}",
        table(&set64, |_| VARIANTS64[1], VARIANTS64[2], &floors)
    );
    speedup_line(&set64, VARIANTS64[0], VARIANTS64[1]);
    // The remote case: NP- vs FP-based AM pipeline.
    let mut t = Table::new([
        "payload",
        "elements",
        "NP GB/s median [min .. max]",
        "FP GB/s median [min .. max]",
        "NP vs FP",
    ]);
    // Gains per shape (8-byte elements, 64-byte elements).
    let mut gains = [Vec::new(), Vec::new()];
    for &size in sizes_am {
        for ((elem, _, np_name, fp_name), gains) in AM_SHAPES.iter().zip(&mut gains) {
            let at = |v: &str| point(points.iter(), size, v);
            let (Some(np), Some(fp)) = (at(np_name), at(fp_name)) else {
                continue;
            };
            let Some(r) = paired(np, fp) else {
                continue;
            };
            let pct = |x: f64| 100.0 * (x - 1.0);
            let gain = pct(r.median);
            gains.push(gain);
            // The 8-byte shape keeps the record name it had alone.
            let name = match elem {
                8 => "put AM NP-based over FP-based (paired)".to_owned(),
                _ => format!("put AM NP-based over FP-based, {elem} B elements (paired)"),
            };
            records.push(job.record(&name, Some(size as u64), &r, "ratio", np.iters));
            t.row([
                size_str(size as u64),
                format!("{elem} B"),
                spread(&np.bw),
                spread(&fp.bw),
                format!("{gain:+.1}% [{:+.0} .. {:+.0}]", pct(r.min), pct(r.max)),
            ]);
        }
    }
    println!(
        "\nRemote case: AM mechanism forced, 3-d strided, 8 B and 64 B elements at 25% density; NP-based vs FP-based pipeline (payload GB/s, {} interleaved repetitions; NP vs FP: median [min .. max] of the repetitions' ratios):\n{t}",
        points.iter().find(|p| p.variant == NP).map_or(0, |p| p.bw.reps)
    );
    if !gains[0].is_empty() {
        let summary = |g: &[f64]| {
            if g.is_empty() {
                return "no result".to_owned();
            }
            let avg = g.iter().sum::<f64>() / g.len() as f64;
            let lo = g.iter().cloned().fold(f64::INFINITY, f64::min);
            format!("{avg:+.1}% average, {lo:+.1}% smallest")
        };
        println!(
            "NP-based over FP-based: {} with 8 B elements (target: at least +5%); {} with 64 B elements (published, inter-node: +6.2%)",
            summary(&gains[0]),
            summary(&gains[1])
        );
        let rtt = floors.rtt_ns().filter(|_| job.conduit == "smp");
        if let Some(rtt) = rtt {
            // Each payload line is written by rank 0's core and read by
            // rank 1's, so both variants pay a line transfer per line;
            // what NP saves, the pack into a local buffer, does not.
            println!(
                "(over shared memory both variants move every payload line between the two cores, whose cache-line round trip was {rtt:.0} ns in this run: the slower that is, the smaller the share of NP's saving, a local copy)"
            );
        }
    }
    // Local completion at return vs deferred, paired by repetition.
    let mut t = Table::new([
        "payload",
        "put_nb GB/s",
        "put_nb_defer GB/s",
        "deferred / at return",
    ]);
    for &size in sizes_lc {
        let at = |v: &str| point(points.iter(), size, v);
        let (Some(now), Some(later)) = (at(LC[0]), at(LC[1])) else {
            continue;
        };
        let Some(r) = paired(later, now) else {
            continue;
        };
        records.push(job.record(
            "put Vector deferred over at-return local completion (paired)",
            Some(size as u64),
            &r,
            "ratio",
            later.iters,
        ));
        t.row([
            size_str(size as u64),
            spread(&now.bw),
            spread(&later.bw),
            ratio(&r),
        ]);
    }
    let frag = [(0, LC_FRAG as u64)];
    let one_frag = VisMeta::from(Vector {
        peer: &frag,
        local: &frag,
    });
    let lc_mechanism = vis.mechanism_for(Rank(1), &vis.shape(Rank(1), &one_frag, LC_FRAG)?);
    println!(
        "\nLocal completion: Vector puts of 64 KiB fragments to rank 1 (mechanism {lc_mechanism:?}), each waited for; local completion at return (put_nb) against deferred (put_nb_defer, the buffer handed back at local completion); ratios: median [min .. max] of paired repetitions:\n{t}"
    );
    // Shared copies: the default context over one that never shares,
    // paired by repetition, with nobody waiting and with a waiting thread.
    let mut t = Table::new([
        "payload",
        "one thread GB/s",
        "shared GB/s",
        "shared / one thread",
        "one thread GB/s (waiter)",
        "shared GB/s (waiter)",
        "shared / one thread (waiter)",
        "shared (waiter) / memcpy",
    ]);
    for &size in sizes_shared {
        let at = |v: &str| point(points.iter(), size, v);
        let (Some(a1), Some(as_), Some(w1), Some(ws)) =
            (at(SHARED[0]), at(SHARED[1]), at(SHARED[2]), at(SHARED[3]))
        else {
            continue;
        };
        let (Some(idle), Some(help)) = (paired(as_, a1), paired(ws, w1)) else {
            continue;
        };
        for (what, r) in [("nobody waiting", &idle), ("a thread waiting", &help)] {
            records.push(job.record(
                &format!("put Strided 3-d shared over one thread, {what} (paired)"),
                Some(size as u64),
                r,
                "ratio",
                a1.iters,
            ));
        }
        t.row([
            size_str(size as u64),
            spread(&a1.bw),
            spread(&as_.bw),
            ratio(&idle),
            spread(&w1.bw),
            spread(&ws.bw),
            ratio(&help),
            floors
                .memcpy_at(size)
                .map_or_else(String::new, |m| num(ws.bw.median / m.median)),
        ]);
    }
    if points.iter().all(|p| !SHARED.contains(&p.variant)) {
        println!("\nShared copies: skipped ({})", no_sharing(&client));
    } else {
        println!(
        "\nShared copies: node-local 3-d strided puts (8 B elements, 25% density) from the default context, which splits copies of {} or more into 64 KiB blocks that threads waiting on the endpoint help with, against one that never shares; first with nobody else polling, then with a second thread of rank 0 waiting in poll on another CPU (rank 1 sleeps meanwhile). Ratios: median [min .. max] of paired repetitions:\n{t}",
        size_str(rgex::vis::SHARE_MIN)
    );
    }
    let plot_of = |title: &str, sz: &[usize], vs: &[&'static str]| {
        let ticks: Vec<String> = sz.iter().map(|&s| size_str(s as u64)).collect();
        let mut plot = Plot::new(title, "payload", "GB/s", ticks);
        for &v in vs {
            plot.series.push(Series {
                name: v.into(),
                points: points
                    .iter()
                    .filter(|p| p.variant == v)
                    .filter_map(|p| {
                        let i = sz.iter().position(|&s| s == p.size)?;
                        Some((i, p.bw.median, p.bw.min, p.bw.max))
                    })
                    .collect(),
            });
        }
        plot.series.push(Series {
            name: "memcpy floor".into(),
            points: sz
                .iter()
                .enumerate()
                .filter_map(|(i, &s)| floors.memcpy_at(s).map(|m| (i, m.median, m.min, m.max)))
                .collect(),
        });
        plot
    };
    let plot = plot_of(
        "VIS put flood bandwidth (8 B elements, 25% density)",
        sizes,
        &VARIANTS,
    );
    let plot64 = plot_of(
        "VIS put flood bandwidth (3-d strided, 64 B elements, 25% density)",
        sizes64,
        &VARIANTS64,
    );
    let plot_am = plot_of(
        "VIS put flood bandwidth, AM pipeline NP- vs FP-based (3-d, 25% density; 8 B elements unless marked 64 B)",
        sizes_am,
        &[NP, FP, NP64, FP64],
    );
    let plot_shared = plot_of(
        "VIS shared copies: node-local put flood bandwidth (3-d, 8 B elements, 25% density)",
        sizes_shared,
        &SHARED,
    );
    opts.write(
        &records,
        &[
            ("", plot),
            ("-64", plot64),
            ("-am-np-fp", plot_am),
            ("-shared", plot_shared),
        ],
    )?;
    Ok(true)
}

/// The table of one set, with ratios to the naive walker `walker` names
/// for each variant, to its contiguous put and to the memcpy floor.
fn table(
    set: &[&Point],
    walker: impl Fn(&str) -> &'static str,
    contig: &str,
    floors: &Floors,
) -> Table {
    let mut t = Table::new([
        "payload",
        "variant",
        "GB/s median [min .. max]",
        "x naive",
        "/ contiguous",
        "/ memcpy",
    ]);
    for p in set {
        let at = |v: &str| point(set.iter().copied(), p.size, v).map(|q| q.bw.median);
        let mc = floors.memcpy_at(p.size).map(|s| s.median);
        t.row([
            size_str(p.size as u64),
            p.variant.to_string(),
            spread(&p.bw),
            at(walker(p.variant)).map_or_else(String::new, |x| num(p.bw.median / x)),
            at(contig).map_or_else(String::new, |x| num(p.bw.median / x)),
            mc.map_or_else(String::new, |x| num(p.bw.median / x)),
        ]);
    }
    t
}

/// The sizes of a set: `full`, or `quick` under `--quick`.
fn sized(opts: &Opts, full: &'static [usize], quick: &'static [usize]) -> &'static [usize] {
    if opts.quick {
        quick
    } else {
        full
    }
}

/// The point of `variant` at `size` among `points`.
fn point<'a>(
    mut points: impl Iterator<Item = &'a Point>,
    size: usize,
    variant: &str,
) -> Option<&'a Point> {
    points.find(|q| q.size == size && q.variant == variant)
}

/// A ratio's median and range, two decimals.
fn ratio(r: &Stats) -> String {
    format!("{:.2} [{:.2} .. {:.2}]", r.median, r.min, r.max)
}

/// Print the average and peak speedup of `v` over `naive` in `set`.
fn speedup_line(set: &[&Point], v: &str, naive: &str) {
    let r: Vec<f64> = set
        .iter()
        .filter(|p| p.variant == v)
        .filter_map(|p| {
            let nv = point(set.iter().copied(), p.size, naive)?;
            Some(p.bw.median / nv.bw.median)
        })
        .collect();
    if !r.is_empty() {
        let avg = r.iter().sum::<f64>() / r.len() as f64;
        let peak = r.iter().cloned().fold(0.0, f64::max);
        println!(
            "{v}: {}x average, {}x peak over the {naive}",
            num(avg),
            num(peak)
        );
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("testvisperf: {e}");
            ExitCode::FAILURE
        }
    }
}
