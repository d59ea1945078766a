//! testvisperf: flood bandwidth of non-contiguous (VIS) puts (GASNet-EX's
//! testvisperf, see BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/testvisperf [--quick] [--json PATH] [--reps N]`
//!
//! Rank 0 puts to rank 1 (which sits in `barrier()` meanwhile) 8-byte
//! elements at 25% density (8 bytes of payload, 24 of skip) on both sides,
//! total payload 16 B .. 2 MiB, described as Indexed metadata and as
//! Strided metadata of 3, 8 and 32 dimensions (the same bytes: the 1-d
//! pattern split into dimensions of extent 2 and 1), and compares, in the
//! same run, a naive N-d walker (one put per element), a contiguous put of
//! the same byte count, and the memcpy floor. Each point is a flood of
//! implicit-handle puts ended by one sync, then checked with a VIS get.
//! The mechanism is the VIS default for the peer (`RGEX_VIS` to force one).

use rgex::{Client, Flags, GlobalAddr, Indexed, NbiCategory, Rank, Strided, Vis, VisMeta};
use rgex_benches::affinity::online_cpus;
use rgex_benches::cli::Opts;
use rgex_benches::floor::Floors;
use rgex_benches::report::{num, size as size_str, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::{self, Stats};
use rgex_benches::timing::calibrate;
use std::error::Error;
use std::process::ExitCode;
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

const VARIANTS: [&str; 6] = [
    "Indexed",
    "Strided 3-d",
    "Strided 8-d",
    "Strided 32-d",
    "naive N-d walker",
    "contiguous put",
];

/// Split `m = 2^k` elements into `d` dimensions (extents 2 and 1, and
/// one larger extent where k > d); strides of the 25%-density pattern.
fn dims(m: usize, d: usize) -> (Vec<u64>, Vec<i64>) {
    let k = m.trailing_zeros() as usize;
    let mut counts = vec![1u64; d];
    for i in 0..k {
        counts[i % d] *= 2;
    }
    let mut strides = Vec::with_capacity(d);
    let mut s = PITCH as i64;
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
}

/// Flood `iters` transfers with `op`, one NBI sync; GB/s of payload.
fn flood(
    client: &Client,
    size: usize,
    target: Duration,
    reps: usize,
    mut op: impl FnMut() -> rgex::Result<()>,
) -> Res<(Stats, u64)> {
    let max = ((4u64 << 30) / size as u64).max(4);
    let mut run = |n: u64| -> rgex::Result<Duration> {
        let t = Instant::now();
        for _ in 0..n {
            op()?;
        }
        client.nbi_wait(NbiCategory::Put);
        Ok(t.elapsed())
    };
    let iters = calibrate(target, 1, max, &mut run)?;
    let s = stats::repeat(reps, || -> Res<f64> {
        let t = run(iters)?;
        Ok((size as u64 * iters) as f64 / t.as_nanos().max(1) as f64)
    })?;
    Ok((s, iters))
}

fn measure(client: &Client, vis: &Vis, opts: &Opts) -> Res<Vec<Point>> {
    let peer = Rank(1);
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(100));
    let sizes: &[usize] = if opts.quick { &QUICK_SIZES } else { &SIZES };
    let f = Flags::empty();
    let mut out = Vec::new();
    for &size in sizes {
        let m = size / ELEM;
        let span = m * PITCH;
        let mut src = vec![0u8; span];
        rgex_benches::payload::generate(&mut src, size as u32);
        let offsets: Vec<u64> = (0..m as u64).map(|i| i * PITCH as u64).collect();
        eprintln!("testvisperf: {}", size_str(size as u64));
        for variant in VARIANTS {
            let (bw, iters) = match variant {
                "Indexed" => {
                    let x = Indexed {
                        peer: &offsets,
                        peer_len: 8,
                        local: &offsets,
                        local_len: 8,
                    };
                    let r = flood(client, size, target, opts.reps, || {
                        vis.put_nbi(peer, x, &src, f)
                    })?;
                    check(vis, peer, x.into(), &src, span)?;
                    r
                }
                "contiguous put" => {
                    let at = GlobalAddr::new(peer, 0);
                    flood(client, size, target, opts.reps, || {
                        client.put_nbi(at, &src[..size], f)
                    })?
                }
                "naive N-d walker" => {
                    // GASNet-1 style: nested loops over the 3-d metadata,
                    // one put per element.
                    let (c, s) = dims(m, 3);
                    flood(client, size, target, opts.reps, || {
                        for k in 0..c[2] {
                            for j in 0..c[1] {
                                for i in 0..c[0] {
                                    let o = (i as i64 * s[0] + j as i64 * s[1] + k as i64 * s[2])
                                        as usize;
                                    client.put_nbi(
                                        GlobalAddr::new(peer, o as u64),
                                        &src[o..o + ELEM],
                                        f,
                                    )?;
                                }
                            }
                        }
                        Ok(())
                    })?
                }
                _ => {
                    let d: usize = variant["Strided ".len()..variant.len() - 2].parse()?;
                    let (c, s) = dims(m, d);
                    let st = Strided {
                        elem_size: ELEM,
                        counts: &c,
                        peer_offset: 0,
                        peer_strides: &s,
                        local_offset: 0,
                        local_strides: &s,
                    };
                    let r = flood(client, size, target, opts.reps, || {
                        vis.put_nbi(peer, st, &src, f)
                    })?;
                    check(vis, peer, st.into(), &src, span)?;
                    r
                }
            };
            out.push(Point {
                size,
                variant,
                bw,
                iters,
            });
        }
    }
    Ok(out)
}

/// Get the pattern back with VIS and compare the payload bytes.
fn check(vis: &Vis, peer: Rank, meta: VisMeta<'_>, src: &[u8], span: usize) -> Res<()> {
    let mut back = vec![0u8; span];
    vis.get(peer, meta, &mut back, Flags::empty())?;
    for i in (0..span).step_by(PITCH) {
        if back[i..i + ELEM] != src[i..i + ELEM] {
            return Err(format!("VIS put check failed at byte {i} of {span}").into());
        }
    }
    Ok(())
}

fn run() -> Res<bool> {
    let Some(opts) = Opts::parse("testvisperf", std::env::args().skip(1), |_, _| Ok(false))? else {
        println!("{USAGE}");
        return Ok(true);
    };
    let env = rgex::bootstrap::JobEnv::read()?;
    let sizes: &[usize] = if opts.quick { &QUICK_SIZES } else { &SIZES };
    let floor_target = opts.target(Duration::from_millis(2), Duration::from_millis(50));
    let floors = (env.rank == 0).then(|| {
        eprintln!("testvisperf: measuring the floor (memcpy bandwidth)");
        Floors::measure(sizes, floor_target, opts.reps)
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
        Vec::new()
    };
    client.barrier()?;
    let Some(floors) = floors else {
        return Ok(true);
    };
    let cpus = online_cpus();
    let job = Job {
        bench: "testvisperf".into(),
        conduit: client.conduit().name().into(),
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
    let mut t = Table::new([
        "payload",
        "variant",
        "GB/s median [min .. max]",
        "x naive",
        "/ contiguous",
        "/ memcpy",
    ]);
    for p in &points {
        let at = |v: &str| {
            points
                .iter()
                .find(|q| q.size == p.size && q.variant == v)
                .map(|q| q.bw.median)
        };
        let naive = at("naive N-d walker");
        let contig = at("contiguous put");
        let mc = floors.memcpy_at(p.size).map(|s| s.median);
        t.row([
            size_str(p.size as u64),
            p.variant.to_string(),
            spread(&p.bw),
            naive.map_or_else(String::new, |x| num(p.bw.median / x)),
            contig.map_or_else(String::new, |x| num(p.bw.median / x)),
            mc.map_or_else(String::new, |x| num(p.bw.median / x)),
        ]);
        records.push(job.record(
            &format!("put {}", p.variant),
            Some(p.size as u64),
            &p.bw,
            "GB/s",
            p.iters,
        ));
    }
    println!(
        "\nFlood put bandwidth, 8 B elements at 25% density, rank 0 -> rank 1 (payload GB/s):\n{t}"
    );
    // Average speedup over the naive walker, by dimensionality.
    for v in ["Indexed", "Strided 3-d", "Strided 8-d", "Strided 32-d"] {
        let r: Vec<f64> = points
            .iter()
            .filter(|p| p.variant == v)
            .filter_map(|p| {
                let nv = points
                    .iter()
                    .find(|q| q.size == p.size && q.variant == "naive N-d walker")?;
                Some(p.bw.median / nv.bw.median)
            })
            .collect();
        if !r.is_empty() {
            let avg = r.iter().sum::<f64>() / r.len() as f64;
            let peak = r.iter().cloned().fold(0.0, f64::max);
            println!(
                "{v}: {}x average, {}x peak over the naive walker",
                num(avg),
                num(peak)
            );
        }
    }
    let ticks: Vec<String> = sizes.iter().map(|&s| size_str(s as u64)).collect();
    let mut plot = Plot::new(
        "VIS put flood bandwidth (8 B elements, 25% density)",
        "payload",
        "GB/s",
        ticks,
    );
    for v in VARIANTS {
        plot.series.push(Series {
            name: v.into(),
            points: points
                .iter()
                .filter(|p| p.variant == v)
                .filter_map(|p| {
                    let i = sizes.iter().position(|&s| s == p.size)?;
                    Some((i, p.bw.median, p.bw.min, p.bw.max))
                })
                .collect(),
        });
    }
    plot.series.push(Series {
        name: "memcpy floor".into(),
        points: sizes
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| floors.memcpy_at(s).map(|m| (i, m.median, m.min, m.max)))
            .collect(),
    });
    opts.write(&records, &[("", plot)])?;
    Ok(true)
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
