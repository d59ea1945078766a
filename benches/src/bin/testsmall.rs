//! testsmall: RMA put/get latency and put/get flood bandwidth (GASNet-EX's
//! testsmall/testlarge, see BENCHMARKS.md), 1 B to 8 MiB.
//!
//! Run: `rgex-run -n 2 --bind target/release/testsmall [--quick] [--json PATH] [--reps N]`
//!
//! Rank 0 first measures the floor (cache-line round trip between CPUs 0
//! and 1, memcpy bandwidth at every size) and, if installed, UCX's
//! `ucp_put_lat` and `ucp_put_bw` over shared memory, while rank 1 waits
//! in the bootstrap. Then, over rgex, both ranks run a put ping-pong
//! (rank 0 puts, rank 1 polls the data's last word and puts back: what
//! `ucp_put_lat` times); then rank 0 measures against rank 1
//! (which sits in `barrier()` meanwhile): blocking put and get latency,
//! put flood bandwidth for NB with local completion NOW, NB with DEFER,
//! and NBI, and get flood bandwidth for NB and NBI, each with the local
//! buffer (a put's source, a get's destination) inside rank 0's segment
//! and in a heap buffer. NB floods keep up to [`WINDOW`] operations
//! outstanding before they sync (the paper's setting). Each flood point
//! is checked: a put flood's destination is read back and compared with
//! the source, a get flood's destination (zeroed first) with what the
//! peer holds. A report: it fails only if something breaks.
//!
//! Over the ofi conduit (`RGEX_CONDUIT=ofi`) the provider floor replaces
//! UCX: `fi_pingpong` on `RGEX_OFI_PROVIDER` at every size (8 B, 64 KiB and
//! 4 MiB with `--quick`), see `rgex_benches::fabric`. Blocking put and get
//! latency are compared with the provider's round trip at the same size
//! (twice its one-way latency: a blocking put waits for its remote
//! completion; the target is within 1.15x), flood bandwidth with its
//! ping-pong bandwidth (and `fi_rma_bw`, if installed).

use rgex::{Client, Event, Flags, GlobalAddr, Lc, NbiCategory, Rank};
use rgex_benches::affinity::{load_average, online_cpus};
use rgex_benches::cli::Opts;
use rgex_benches::fabric::{self, run_target, ProviderFloor, LATENCY_TARGET};
use rgex_benches::floor::Floors;
use rgex_benches::mpi::{self, MpiRun, Osc, Test};
use rgex_benches::report::{num, size as size_str, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::{self, Stats};
use rgex_benches::timing::calibrate;
use rgex_benches::ucx::{find_perftest, mbs_to_gbs, Perftest};
use std::error::Error;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: testsmall [--quick] [--json PATH] [--reps N]

  --quick      short repetitions (a smoke run: well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/testsmall.json);
               the SVG plots go next to it (.svg: flood bandwidth, -latency.svg)
  --reps N     repetitions per point (default 5)";

/// Transfer sizes: 1 B and 8 B, then powers of 4 from 64 B to 4 MiB, with
/// 2 MiB (testsmall's largest) and 8 MiB (testlarge's).
const SIZES: [usize; 13] = [
    1,
    8,
    64,
    256,
    1 << 10,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
    8 << 20,
];

/// Sizes of the provider floor with `--quick` (all of [`SIZES`] otherwise).
const FABRIC_QUICK_SIZES: [usize; 3] = [8, 64 << 10, 4 << 20];

/// Sizes of the UCX comparison.
const UCX_SIZES: [usize; 3] = [8, 64 << 10, 4 << 20];

/// Operations outstanding in an NB flood before their events are waited on
/// together: the paper's setting for the local-completion figure (50,000
/// back-to-back puts, then one sync). A flood shorter than this syncs once.
const WINDOW: usize = 50_000;

/// Heap buffers a DEFER flood from the heap keeps in flight (each owned by
/// its put until local completion hands it back, reused oldest first),
/// at most this many and [`DEFER_BYTES`] together, and at least two:
/// enough to hide a network's local completion, few enough that the
/// sources stay in cache where NB+NOW's one buffer does (50,000 scattered
/// 8-byte buffers cost the flood two thirds of its rate in cache misses
/// on the source alone). From 2 MiB, where two buffers exceed that, both
/// variants copy from beyond the L2 cache anyway.
const DEFER_BUFFERS: usize = 64;

/// See [`DEFER_BUFFERS`].
const DEFER_BYTES: usize = 256 << 10;

/// How a flood operation is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `put_nb` (local completion NOW), remote events waited per window.
    Now,
    /// Local completion deferred: `put_nb_defer` (heap) or `put_nb_raw`
    /// with `Lc::Defer` (segment), events waited per window.
    Defer,
    /// `put_nbi`, one `nbi_wait` at the end.
    Nbi,
    /// `get_nb_raw`, events waited per window.
    GetNb,
    /// `get_nbi`, one `nbi_wait` at the end.
    GetNbi,
}

impl Mode {
    const ALL: [Mode; 5] = [Mode::Now, Mode::Defer, Mode::Nbi, Mode::GetNb, Mode::GetNbi];

    fn is_get(self) -> bool {
        matches!(self, Mode::GetNb | Mode::GetNbi)
    }

    /// The operation and how it is issued, as in the table's columns.
    fn name(self) -> &'static str {
        match self {
            Mode::Now => "put NB+NOW",
            Mode::Defer => "put NB+DEFER",
            Mode::Nbi => "put NBI",
            Mode::GetNb => "get NB",
            Mode::GetNbi => "get NBI",
        }
    }

    /// The name of a flood record: `put flood NB+NOW, src in segment`.
    fn record(self, local: Local) -> String {
        let (op, how) = self
            .name()
            .split_once(' ')
            .expect("an operation and a mode");
        format!("{op} flood {how}, {}", local.name(self))
    }
}

/// Where a flood's local buffer (a put's source, a get's destination) lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Local {
    /// In rank 0's own segment.
    Segment,
    /// In a heap `Vec`.
    Heap,
}

impl Local {
    const ALL: [Local; 2] = [Local::Segment, Local::Heap];

    fn name(self, mode: Mode) -> &'static str {
        match (self, mode.is_get()) {
            (Local::Segment, false) => "src in segment",
            (Local::Heap, false) => "src on heap",
            (Local::Segment, true) => "dst in segment",
            (Local::Heap, true) => "dst on heap",
        }
    }

    /// For a table's title.
    fn title(self) -> &'static str {
        match self {
            Local::Segment => "local buffer in rank 0's segment",
            Local::Heap => "local buffer on the heap",
        }
    }
}

/// One measured point: the statistics and iterations per repetition.
#[derive(Clone, Copy, Debug)]
struct Point {
    s: Stats,
    iters: u64,
}

/// The UCX comparison at one size.
#[derive(Clone, Debug)]
struct UcxRow {
    size: usize,
    /// One-way put latency in ns (`ucp_put_lat` overall_lat).
    lat: Result<(Stats, u64), String>,
    /// Put bandwidth in GB/s (`ucp_put_bw` overall_bw).
    bw: Result<(Stats, u64), String>,
}

/// Everything rank 0 measured.
struct Results {
    job: Job,
    reps: usize,
    target: Duration,
    load: Option<f64>,
    floors: Floors,
    ucx: Result<Vec<UcxRow>, String>,
    /// The Open MPI peer per [`Osc::ALL`]: its figures or why not.
    mpi: [Result<Vec<mpi::Figure>, String>; 2],
    /// Over the ofi conduit: the provider floor.
    fabric: Option<ProviderFloor>,
    path: String,
    /// Per size: blocking put and get latency (ns).
    lat: Vec<(usize, Point, Point)>,
    /// Blocking 8-byte put and get in the peers' mode and the realistic one.
    lat8: [(Lat8, Point); 4],
    /// Per size, per [`Local::ALL`] x [`Mode::ALL`]: flood GB/s.
    flood: Vec<(usize, [[Point; 5]; 2])>,
    /// Per [`UCX_SIZES`] size: put ping-pong one-way latency (ns) and
    /// round trips per repetition.
    pingpong: Vec<(usize, Stats, u64)>,
}

impl Results {
    /// The put ping-pong's one-way latency at `size`.
    fn pingpong_at(&self, size: usize) -> Option<&Stats> {
        self.pingpong.iter().find(|p| p.0 == size).map(|p| &p.1)
    }

    fn flood_at(&self, size: usize, local: Local, mode: Mode) -> Option<Point> {
        let si = Local::ALL.iter().position(|&s| s == local)?;
        let mi = Mode::ALL.iter().position(|&m| m == mode)?;
        self.flood
            .iter()
            .find(|(s, _)| *s == size)
            .map(|(_, p)| p[si][mi])
    }

    /// The provider floor at `size`, if measured.
    fn fabric_at(&self, size: usize) -> Option<&fabric::Floor> {
        self.fabric.as_ref()?.at(size as u64)
    }

    /// The bandwidth floor (GB/s) a flood at `size` is compared with, and
    /// its name: `fi_rma_bw` if it ran, else `fi_pingpong`'s ping-pong
    /// bandwidth.
    fn bw_floor_at(&self, size: usize) -> Option<(f64, String)> {
        let f = self.fabric.as_ref()?;
        if let Some(st) = f.rma_bw_at(size as u64) {
            return Some((
                st.median,
                format!("fi_rma_bw write {} {}", f.provider, size_str(size as u64)),
            ));
        }
        let p = f.at(size as u64)?;
        Some((p.gbs.median, format!("{} ping-pong bandwidth", p.name())))
    }

    fn lat_at(&self, size: usize) -> Option<(Point, Point)> {
        self.lat
            .iter()
            .find(|(s, _, _)| *s == size)
            .map(|(_, p, g)| (*p, *g))
    }
}

fn progress(what: &str) {
    eprintln!("testsmall: measuring {what}");
}

/// UCX's put latency and bandwidth at [`UCX_SIZES`].
fn ucx(quick: bool, reps: usize) -> Result<Vec<UcxRow>, String> {
    let exe = find_perftest().ok_or("not installed")?;
    let pin = |mut t: Perftest| {
        if online_cpus() >= 2 {
            t.cpus = Some([0, 1]);
        }
        t
    };
    let scale = if quick { 20 } else { 1 };
    Ok(UCX_SIZES
        .iter()
        .map(|&size| {
            // About 0.1-0.2 s per run at full length.
            let lat_iters = match size {
                s if s <= 4096 => 1_000_000,
                s if s <= 1 << 20 => 100_000,
                _ => 1_000,
            } / scale;
            let bw_iters = match size {
                s if s <= 4096 => 4_000_000,
                s if s <= 1 << 20 => 100_000,
                _ => 2_000,
            } / scale;
            let lat = pin(Perftest::new(exe.clone(), "ucp_put_lat", lat_iters))
                .size(size as u64)
                .repeat(reps, &["overall_lat"])
                .map(|v| (v[0].scale(1000.0), lat_iters));
            let bw = pin(Perftest::new(exe.clone(), "ucp_put_bw", bw_iters))
                .size(size as u64)
                .repeat(reps, &["overall_bw"])
                .map(|v| (v[0].scale(mbs_to_gbs(1.0)), bw_iters));
            UcxRow { size, lat, bw }
        })
        .collect())
}

/// The blocking 8-byte latencies measured in two modes each (BENCHMARKS.md:
/// compare like with like).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lat8 {
    /// The peers' mode (GASNet testsmall, osu_put_latency): one static
    /// 8-byte source nobody writes.
    PutStatic,
    /// A static 8-byte destination whose contents nobody reads.
    GetStatic,
    /// The realistic mode: a fresh 8-byte value stored into the source
    /// before each put.
    PutGenerated,
    /// Each get's value read (folded into a checksum) before the next.
    GetRead,
}

impl Lat8 {
    const ALL: [Lat8; 4] = [
        Lat8::PutStatic,
        Lat8::GetStatic,
        Lat8::PutGenerated,
        Lat8::GetRead,
    ];

    /// The record's name.
    fn name(self) -> &'static str {
        match self {
            Lat8::PutStatic => "put latency (blocking, 8 B static source: peer-comparable)",
            Lat8::GetStatic => "get latency (blocking, 8 B static destination: peer-comparable)",
            Lat8::PutGenerated => "put latency (blocking, 8 B generated source)",
            Lat8::GetRead => "get latency (blocking, 8 B, each value read)",
        }
    }
}

/// The static source of [`Lat8::PutStatic`].
static SRC8: [u8; 8] = *b"rgex-8B!";

/// Rank 0's measurements against `peer`.
struct Bench<'a> {
    client: &'a Client,
    peer: Rank,
    target: Duration,
    reps: usize,
    heap: Vec<u8>,
    back: Vec<u8>,
    /// A get flood's destination on the heap ([`SIZES`]' largest bytes).
    sink: Vec<u8>,
}

impl Bench<'_> {
    /// ns per operation of `op` run `n` times.
    fn per_op(&self, mut op: impl FnMut(u64) -> Res<Duration>) -> Res<Point> {
        let iters = calibrate(self.target, 8, 1 << 34, &mut op)?;
        let s = stats::repeat(self.reps, || {
            op(iters).map(|t| t.as_nanos() as f64 / iters as f64)
        })?;
        Ok(Point { s, iters })
    }

    fn dst(&self) -> GlobalAddr {
        GlobalAddr::new(self.peer, 0)
    }

    fn latency(&mut self, size: usize) -> Res<(Point, Point)> {
        let ep = self.client.endpoint().clone();
        let dst = self.dst();
        let src = self.heap[..size].to_vec();
        let put = self.per_op(|n| {
            let t = Instant::now();
            for _ in 0..n {
                ep.put(dst, &src, Flags::empty())?;
            }
            Ok(t.elapsed())
        })?;
        let mut back = vec![0u8; size];
        let get = self.per_op(|n| {
            let t = Instant::now();
            for _ in 0..n {
                ep.get(&mut back, dst, Flags::empty())?;
            }
            Ok(t.elapsed())
        })?;
        if back != src {
            return Err(format!("a {size}-byte get returned other bytes than were put").into());
        }
        Ok((put, get))
    }

    /// Blocking 8-byte put and get to the peer at offset 0, each
    /// [`Lat8`] mode; fails if a get of the realistic mode does not
    /// return the last value put.
    fn latency8(&mut self) -> Res<[(Lat8, Point); 4]> {
        let ep = self.client.endpoint().clone();
        let dst = self.dst();
        let mut out = Vec::new();
        let mut last = 0u64;
        for mode in Lat8::ALL {
            let p = match mode {
                Lat8::PutStatic => self.per_op(|n| {
                    let t = Instant::now();
                    for _ in 0..n {
                        ep.put(dst, &SRC8, Flags::empty())?;
                    }
                    Ok(t.elapsed())
                })?,
                Lat8::GetStatic => {
                    let mut d = [0u8; 8];
                    self.per_op(|n| {
                        let t = Instant::now();
                        for _ in 0..n {
                            ep.get(&mut d, dst, Flags::empty())?;
                        }
                        Ok(t.elapsed())
                    })?
                }
                Lat8::PutGenerated => self.per_op(|n| {
                    let t = Instant::now();
                    for i in 0..n {
                        last = last.wrapping_add(i | 1);
                        ep.put(dst, &last.to_le_bytes(), Flags::empty())?;
                    }
                    Ok(t.elapsed())
                })?,
                Lat8::GetRead => {
                    let mut d = [0u8; 8];
                    let mut sum = 0u64;
                    let p = self.per_op(|n| {
                        let t = Instant::now();
                        for _ in 0..n {
                            ep.get(&mut d, dst, Flags::empty())?;
                            sum = sum.wrapping_add(u64::from_le_bytes(d));
                        }
                        Ok(t.elapsed())
                    })?;
                    std::hint::black_box(sum);
                    if u64::from_le_bytes(d) != last {
                        return Err(format!(
                            "an 8-byte get returned {:#x}, not the last value put ({last:#x})",
                            u64::from_le_bytes(d)
                        )
                        .into());
                    }
                    p
                }
            };
            out.push((mode, p));
        }
        Ok(out.try_into().expect("one point per mode"))
    }

    /// `n` flood operations of `size` bytes the way `mode` says, the local
    /// buffer where `local` says (a get's destination is `sink`).
    fn flood_run(
        &self,
        local: Local,
        mode: Mode,
        size: usize,
        n: u64,
        sink: *mut u8,
    ) -> Res<Duration> {
        let ep = self.client.endpoint();
        let dst = self.dst();
        let f = Flags::empty();
        let seg_ptr = self.client.endpoint().segment().as_ptr().cast_const();
        let mut evs: Vec<Event> = Vec::with_capacity((2 * n).min(2 * WINDOW as u64) as usize);
        // DEFER from the heap: buffers handed to `put_nb_defer` and back
        // at local completion (see DEFER_BUFFERS), copied before the clock
        // starts.
        let mut owned = (local == Local::Heap && mode == Mode::Defer).then(|| {
            let k = (DEFER_BYTES / size.max(1)).clamp(2, DEFER_BUFFERS);
            vec![self.heap[..size].to_vec(); k]
        });
        // Wait for the window's events once it holds `per` operations'.
        let window = |evs: &mut Vec<Event>, per: usize| -> rgex::Result<()> {
            if evs.len() >= per * WINDOW {
                Event::wait_all(evs)?;
                evs.clear();
            }
            Ok(())
        };
        let t = Instant::now();
        match (local, mode) {
            (Local::Heap, Mode::Now) => {
                let b = &self.heap[..size];
                for _ in 0..n {
                    evs.push(ep.put_nb(dst, b, f)?);
                    window(&mut evs, 1)?;
                }
            }
            (Local::Segment, Mode::Now) => {
                for _ in 0..n {
                    // SAFETY: the first `size` bytes of our own segment
                    // (checked against its length in `run`) are not written
                    // by anyone during the flood; LC is reached on return.
                    let e = unsafe { ep.put_nb_raw(dst, seg_ptr, size, Lc::Now, f)? };
                    evs.push(e.rc);
                    window(&mut evs, 1)?;
                }
            }
            (Local::Heap, Mode::Defer) => {
                // A buffer is reused only once its local completion has
                // handed it back: the oldest in flight is waited for when
                // none is free.
                let mut free = owned.take().expect("heap buffers for DEFER");
                let mut flight: std::collections::VecDeque<rgex::LocalCompletion<Vec<u8>>> =
                    std::collections::VecDeque::with_capacity(free.len());
                for _ in 0..n {
                    let b = match free.pop() {
                        Some(b) => b,
                        None => flight.pop_front().expect("a buffer in flight").wait()?,
                    };
                    let p = ep.put_nb_defer(dst, b, f)?;
                    flight.push_back(p.lc);
                    evs.push(p.rc);
                    window(&mut evs, 1)?;
                }
                for lc in flight {
                    free.push(lc.wait()?);
                }
                owned = Some(free);
            }
            (Local::Segment, Mode::Defer) => {
                for _ in 0..n {
                    // SAFETY: as for NOW; the source is never modified, and
                    // every local-completion event is waited on below
                    // before the function returns.
                    let e = unsafe { ep.put_nb_raw(dst, seg_ptr, size, Lc::Defer, f)? };
                    evs.push(e.lc);
                    evs.push(e.rc);
                    window(&mut evs, 2)?;
                }
            }
            (Local::Heap, Mode::Nbi) => {
                let b = &self.heap[..size];
                for _ in 0..n {
                    ep.put_nbi(dst, b, f)?;
                }
                ep.nbi_wait(NbiCategory::Put)?;
            }
            (Local::Segment, Mode::Nbi) => {
                // SAFETY: our own segment's first `size` bytes, not written
                // by anyone while this slice lives (see NOW).
                let b = unsafe { std::slice::from_raw_parts(seg_ptr, size) };
                for _ in 0..n {
                    ep.put_nbi(dst, b, f)?;
                }
                ep.nbi_wait(NbiCategory::Put)?;
            }
            (_, Mode::GetNb) => {
                for _ in 0..n {
                    // SAFETY: `sink..sink + size` is valid (see `flood`) and
                    // nothing reads it until every event of the flood is
                    // waited on, below, before this returns. Strictly,
                    // `get_nb_raw` asks that nothing else write it while a
                    // get is in flight; here the only other writers are
                    // this flood's gets, all writing the same bytes (the
                    // peer's, unchanged during the flood), as GASNet's
                    // testsmall does with its one destination buffer.
                    evs.push(unsafe { ep.get_nb_raw(sink, size, dst, f)? });
                    window(&mut evs, 1)?;
                }
            }
            (_, Mode::GetNbi) => {
                for _ in 0..n {
                    // SAFETY: as for NB; the sync is the `nbi_wait` below.
                    unsafe { ep.get_nbi(sink, size, dst, f)? };
                }
                ep.nbi_wait(NbiCategory::Get)?;
            }
        }
        Event::wait_all(&mut evs)?;
        let elapsed = t.elapsed();
        drop(owned);
        Ok(elapsed)
    }

    fn flood(&mut self, local: Local, mode: Mode, size: usize) -> Res<Point> {
        let ep = self.client.endpoint().clone();
        // A get flood's destination: our segment past the put sources (the
        // length is checked in `run`), or the heap sink.
        let sink = match local {
            Local::Segment => self
                .client
                .endpoint()
                .segment()
                .as_ptr()
                .wrapping_add(self.heap.len()),
            Local::Heap => self.sink.as_mut_ptr(),
        };
        // Zero what the flood writes, so a flood that moved nothing fails
        // the check; a get flood reads the pattern, put there first.
        if mode.is_get() {
            ep.put(self.dst(), &self.heap[..size], Flags::empty())?;
            // SAFETY: `sink..sink + size` is ours (segment or heap, see
            // above) and nothing else touches it now.
            unsafe { std::ptr::write_bytes(sink, 0, size) };
        } else {
            ep.put(self.dst(), &vec![0u8; size], Flags::empty())?;
        }
        let p = self.per_op(|n| self.flood_run(local, mode, size, n, sink))?;
        let ok = if mode.is_get() {
            // SAFETY: every get of the flood completed before `flood_run`
            // returned; `sink..sink + size` is valid (see above).
            unsafe { std::slice::from_raw_parts(sink, size) == &self.heap[..size] }
        } else {
            let mut back = std::mem::take(&mut self.back);
            back.resize(size, 0);
            ep.get(&mut back, self.dst(), Flags::empty())?;
            let ok = back == self.heap[..size];
            self.back = back;
            ok
        };
        if !ok {
            return Err(format!(
                "{} flood of {size} B: the destination does not hold the source",
                mode.record(local)
            )
            .into());
        }
        // ns per operation -> GB/s.
        let gbs = Stats {
            median: size as f64 / p.s.median,
            min: size as f64 / p.s.max,
            max: size as f64 / p.s.min,
            reps: p.s.reps,
        };
        Ok(Point {
            s: gbs,
            iters: p.iters,
        })
    }
}

fn run() -> Res<()> {
    let Some(opts) = Opts::parse("testsmall", std::env::args().skip(1), |_, _| Ok(false))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let first = rgex::launcher_rank()? == 0;
    let target = opts.target(Duration::from_millis(4), Duration::from_millis(80));
    let reps = opts.reps;

    // Before rgex starts: rank 1 blocks in the bootstrap meanwhile.
    let provider = fabric::ofi_provider();
    let before = first.then(|| {
        let load = load_average();
        progress("the floor (cache-line round trip, memcpy at every size)");
        let floors = Floors::measure(&SIZES, target, reps);
        let (ucx, fabric) = match &provider {
            None => {
                progress("the UCX peer (ucx_perftest ucp_put_lat, ucp_put_bw)");
                (ucx(opts.quick, reps), None)
            }
            Some(p) => {
                let sizes: Vec<u64> = if opts.quick {
                    FABRIC_QUICK_SIZES.map(|s| s as u64).to_vec()
                } else {
                    SIZES.map(|s| s as u64).to_vec()
                };
                let mut f =
                    ProviderFloor::measure(p, &sizes, run_target(opts.quick), reps, progress);
                let big = *SIZES.last().expect("sizes") as u64;
                f.measure_rma_bw(&[big], reps, |_| if opts.quick { 100 } else { 1000 });
                (
                    Err(
                        "RGEX_CONDUIT=ofi: the provider floor (fi_pingpong) is the peer here"
                            .to_owned(),
                    ),
                    Some(f),
                )
            }
        };
        let mpi = Osc::ALL.map(|osc| match &provider {
            None => {
                progress(&format!(
                    "the Open MPI peer (MPI_Put + flush, MPI_Put flood; osc {})",
                    osc.name()
                ));
                let iters = if opts.quick { 20_000 } else { 200_000 };
                MpiRun::new(osc, iters, reps, &[Test::PutLat, Test::PutBw])?.run()
            }
            Some(_) => Err("RGEX_CONDUIT=ofi: the provider floor is the peer here".to_owned()),
        });
        (floors, ucx, mpi, fabric, load)
    });

    let client = rgex::init()?;
    // Both ranks: the put ping-pong (UCX's ucp_put_lat, done the same way),
    // before anything else is written to the segments.
    if first {
        progress("put ping-pong (the peer sees the data, puts back)");
    }
    let pingpong = pingpong(&client, opts.quick, reps)?;
    let Some((floors, ucx, mpi, fabric, load)) = before else {
        // Rank 1 (and any other): wait in the barrier while rank 0 measures.
        client.barrier()?;
        return Ok(());
    };
    if client.size() < 2 {
        return Err(
            "testsmall needs two ranks (rgex-run -n 2 --bind ...): rank 0 measures against rank 1"
                .into(),
        );
    }
    let peer = Rank(1);
    let max = *SIZES.last().expect("sizes");
    // The put sources, then a get flood's destination.
    if client.endpoint().segment().len() < 2 * max {
        return Err(format!(
            "the segment ({} B) is smaller than twice the largest transfer ({max} B): raise RGEX_SEGMENT_SIZE",
            client.endpoint().segment().len()
        )
        .into());
    }
    // Source pattern, in the heap buffer and in our segment (offset 0).
    let heap: Vec<u8> = (0..max).map(|i| (i * 131 % 251) as u8).collect();
    client.endpoint().segment().write(0, &heap)?;
    let mut b = Bench {
        client: &client,
        peer,
        target,
        reps,
        heap,
        back: Vec::new(),
        sink: vec![0; max],
    };
    let path = format!("{:?}", client.endpoint().rma_path(peer));
    progress("blocking 8-byte put and get, static and generated");
    let lat8 = b.latency8()?;
    let mut lat = Vec::new();
    let mut flood = Vec::new();
    for &size in &SIZES {
        progress(&format!(
            "put/get latency and put/get floods at {}",
            size_str(size as u64)
        ));
        let (p, g) = b.latency(size)?;
        lat.push((size, p, g));
        let mut row = [[Point {
            s: Stats::from_samples(&[0.0]).expect("one sample"),
            iters: 0,
        }; 5]; 2];
        for (si, &src) in Local::ALL.iter().enumerate() {
            for (mi, &mode) in Mode::ALL.iter().enumerate() {
                row[si][mi] = b.flood(src, mode, size)?;
            }
        }
        flood.push((size, row));
    }
    if let Some(n) = rgex_benches::label::note() {
        println!("{n}");
    }
    let r = Results {
        job: Job {
            bench: "testsmall".into(),
            conduit: client.endpoint().conduit().name().to_owned(),
            provider: rgex_benches::label::provider(),
            ranks: client.size(),
            oversubscribed: client.endpoint().polite() || client.size() as usize > online_cpus(),
        },
        reps,
        target,
        load,
        floors,
        ucx,
        mpi,
        fabric,
        path,
        lat,
        lat8,
        flood,
        pingpong,
    };
    print!("{}", table(&r));
    opts.write(
        &records(&r),
        &[("", flood_plot(&r)), ("-latency", latency_plot(&r))],
    )?;
    client.barrier()?;
    Ok(())
}

/// Round trips per repetition of the put ping-pong at `size`: about
/// 0.05-0.2 s on the smp conduit; the peer follows the same schedule.
fn pingpong_rounds(size: usize, quick: bool) -> u64 {
    let n = match size {
        s if s <= 4096 => 100_000,
        s if s <= 1 << 20 => 20_000,
        _ => 200,
    };
    if quick {
        (n / 20).max(10)
    } else {
        n
    }
}

/// How long a ping-pong waits for its peer's put before it gives up.
const PINGPONG_PATIENCE: Duration = Duration::from_secs(60);

/// The put ping-pong, on ranks 0 and 1 (others only join its barriers): at each
/// of [`UCX_SIZES`], rank 0 puts `size` bytes (NBI) into rank 1's segment
/// at offset 0, their last 8 bytes the round's number; rank 1 polls that
/// word until it holds the number, then puts the same way back, and rank
/// 0 polls its own word likewise. One-way latency = half a round trip,
/// as `ucx_perftest ucp_put_lat` reports it. Round numbers grow over the
/// whole run, so a word never shows a later round's number early. Rank
/// 0 gets the figures; rank 1 an empty list.
fn pingpong(client: &Client, quick: bool, reps: usize) -> Res<Vec<(usize, Stats, u64)>> {
    let me = client.rank().0;
    let max = *UCX_SIZES.iter().max().expect("sizes");
    let seg = client.endpoint().segment();
    if client.size() < 2 {
        return Ok(Vec::new());
    }
    if seg.len() < max {
        return Err(format!(
            "the segment ({} B) is smaller than the largest ping-pong ({max} B)",
            seg.len()
        )
        .into());
    }
    seg.write(0, &vec![0u8; max])?;
    client.barrier()?;
    if me > 1 {
        // Not in the ping-pong: only in its two barriers.
        client.barrier()?;
        return Ok(Vec::new());
    }
    let peer = Rank(1 - me);
    let mut buf = vec![0u8; max];
    let mut round = 0u64;
    let mut out = Vec::new();
    for &size in &UCX_SIZES {
        let flag = size - 8;
        // SAFETY: `flag` is 8-aligned (sizes are multiples of 8, the
        // segment is page-aligned) and within the segment (checked above),
        // which stays mapped while `client` lives. The word is written
        // only by the peer's puts: a memcpy by another process (smp) or by
        // the network provider (ofi), outside what Rust's memory model can
        // see, as with any memory shared with a device or process. An
        // aligned 8-byte load is one access on every target rgex runs on,
        // so it sees the old value or the new one, never a mix.
        let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(seg.as_ptr().add(flag).cast()) };
        let wait = |n: u64| -> Res<()> {
            let start = Instant::now();
            // Relaxed: only the word itself is read (the payload is not
            // checked here; the floods check theirs).
            while word.load(std::sync::atomic::Ordering::Relaxed) != n {
                client.endpoint().poll()?;
                if start.elapsed() > PINGPONG_PATIENCE {
                    return Err(format!(
                        "put ping-pong: round {n} from {peer} did not arrive in {PINGPONG_PATIENCE:?}"
                    )
                    .into());
                }
            }
            Ok(())
        };
        let rounds = pingpong_rounds(size, quick);
        let mut samples = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            for _ in 0..rounds {
                round += 1;
                if me == 1 {
                    wait(round)?;
                }
                buf[flag..size].copy_from_slice(&round.to_le_bytes());
                client.endpoint().put_nbi(
                    GlobalAddr::new(peer, 0),
                    &buf[..size],
                    Flags::empty(),
                )?;
                if me == 0 {
                    wait(round)?;
                }
            }
            client.endpoint().nbi_wait(NbiCategory::Put)?;
            samples.push(t.elapsed().as_nanos() as f64 / (2 * rounds) as f64);
        }
        out.push((
            size,
            Stats::from_samples(&samples).expect("timings are never NaN"),
            rounds,
        ));
    }
    client.barrier()?;
    Ok(if me == 0 { out } else { Vec::new() })
}

/// `a / b` as `0.87x`, or `-`.
fn ratio(a: f64, b: Option<f64>) -> String {
    match b {
        Some(b) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

fn table(r: &Results) -> String {
    let mut s = String::new();
    let j = &r.job;
    let _ = writeln!(
        s,
        "testsmall: {} rank(s), conduit {}, RMA path to rank 1: {}, {} repetitions per point of >= {:.2} s; figures are median [min .. max]{}",
        j.ranks,
        j.conduit,
        r.path,
        r.reps,
        r.target.as_secs_f64(),
        if j.oversubscribed { "; OVERSUBSCRIBED (more ranks than CPUs)" } else { "" }
    );
    if let Some(l) = r.load {
        let _ = writeln!(
            s,
            "node load average (1 min) at start: {l:.2} on {} CPUs{}",
            online_cpus(),
            if l >= 0.5 {
                " -- expect noisy figures (see min/max)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(s, "\nFloor (measured in this run)");
    s.push_str(&r.floors.table().to_string());
    let rtt = r.floors.rtt_ns();
    if let Some(f) = &r.fabric {
        s.push('\n');
        s.push_str(&f.report());
    }

    let _ = writeln!(
        s,
        "\nBlocking latency (ns per operation; rank 1 sits in barrier())"
    );
    let mut t = Table::new([
        "size",
        "put",
        "get",
        "put / cache RTT",
        "memcpy time",
        "put / memcpy time",
    ]);
    for (size, p, g) in &r.lat {
        let mc = r.floors.memcpy_at(*size).map(|m| *size as f64 / m.median);
        t.row([
            size_str(*size as u64),
            spread(&p.s),
            spread(&g.s),
            ratio(p.s.median, rtt),
            mc.map_or("-".into(), num),
            ratio(p.s.median, mc),
        ]);
    }
    s.push_str(&t.to_string());
    if let (Some((p, _)), Some(f)) = (r.lat_at(8), rtt) {
        let why = if r.path == "Mapped" {
            " (a mapped put is a local store, no round trip)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "8-byte put latency {} ns vs cache-line round trip {} ns: {:.2}x{why}",
            num(p.s.median),
            num(f),
            p.s.median / f
        );
    }
    s.push_str(&lat8_table(r, rtt));
    if let Some(f) = &r.fabric {
        s.push_str(&provider_latency(r, f));
    }
    s.push_str(&pingpong_table(r, rtt));

    for local in Local::ALL {
        let _ = writeln!(
            s,
            "\nFlood bandwidth, {} (a put's source, a get's destination) (GB/s)",
            local.title()
        );
        let mut header: Vec<String> = vec!["size".into()];
        header.extend(Mode::ALL.iter().map(|m| m.name().to_owned()));
        header.push("memcpy".into());
        header.extend(Mode::ALL.iter().map(|m| format!("{} / memcpy", m.name())));
        let mut t = Table::new(header);
        for &(size, _) in &r.flood {
            let mc = r.floors.memcpy_at(size);
            let pts: Vec<Point> = Mode::ALL
                .iter()
                .filter_map(|&m| r.flood_at(size, local, m))
                .collect();
            let mut row = vec![size_str(size as u64)];
            row.extend(pts.iter().map(|p| spread(&p.s)));
            row.push(mc.map_or("-".into(), |m| spread(&m)));
            row.extend(pts.iter().map(|p| ratio(p.s.median, mc.map(|m| m.median))));
            t.row(row);
        }
        s.push_str(&t.to_string());
    }
    // Deferred local completion against completion at return, heap
    // source (GASNet-EX's non-bulk vs bulk put), beside the published gain.
    let gains: Vec<(usize, f64)> = r
        .flood
        .iter()
        .filter_map(|&(size, _)| {
            let now = r.flood_at(size, Local::Heap, Mode::Now)?.s.median;
            let defer = r.flood_at(size, Local::Heap, Mode::Defer)?.s.median;
            (now > 0.0).then(|| (size, 100.0 * (defer / now - 1.0)))
        })
        .collect();
    if let Some(&(best_at, best)) = gains.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        let mut v: Vec<f64> = gains.iter().map(|g| g.1).collect();
        v.sort_by(f64::total_cmp);
        let _ = writeln!(
            s,
            "\nput NB+DEFER over NB+NOW, heap source: {:+.1}% median over sizes, {:+.1}% at best ({}); published (Aries): up to +32% with a real local-completion event",
            v[v.len() / 2],
            best,
            size_str(best_at as u64)
        );
    }
    // The large puts against memcpy in cache and out of cache (what a put
    // of fresh data, or to a cold destination, meets).
    for size in [2 << 20, *SIZES.last().expect("sizes")] {
        let (Some(p), Some(m), Some(c)) = (
            r.flood_at(size, Local::Heap, Mode::Now),
            r.floors.memcpy_at(size),
            r.floors.memcpy_cold_at(size),
        ) else {
            continue;
        };
        let _ = writeln!(
            s,
            "{} put flood (NB+NOW, source on the heap) {} GB/s vs memcpy at the same size: in cache {} GB/s ({:.2}x), out of cache {} GB/s ({:.2}x)",
            size_str(size as u64),
            num(p.s.median),
            num(m.median),
            p.s.median / m.median,
            num(c.median),
            p.s.median / c.median
        );
    }
    if r.fabric.is_some() {
        s.push_str(&provider_bandwidth(r));
    }

    let _ = writeln!(
        s,
        "\nUCX peer: ucx_perftest over shared memory (UCX_TLS=posix,self, loopback)"
    );
    match &r.ucx {
        Err(e) => {
            let _ = writeln!(s, "ucx_perftest: skipped ({e})");
        }
        Ok(rows) => {
            let mut t = Table::new([
                "test",
                "size",
                "UCX",
                "rgex",
                "unit",
                "rgex / UCX",
                "rgex figure",
            ]);
            for u in rows {
                let size = size_str(u.size as u64);
                match &u.lat {
                    Ok((st, _)) => {
                        let p = r.pingpong_at(u.size).map(|s| s.median);
                        t.row([
                            "ucp_put_lat (one-way)".to_owned(),
                            size.clone(),
                            spread(st),
                            p.map_or("-".into(), num),
                            "ns".into(),
                            p.map_or("-".into(), |p| format!("{:.2}", p / st.median)),
                            "put ping-pong, half a round trip".into(),
                        ]);
                    }
                    Err(e) => {
                        t.row([
                            "ucp_put_lat".to_owned(),
                            size.clone(),
                            format!("failed: {e}"),
                        ]);
                    }
                }
                match &u.bw {
                    Ok((st, _)) => {
                        let p = r
                            .flood_at(u.size, Local::Segment, Mode::Nbi)
                            .map(|p| p.s.median);
                        t.row([
                            "ucp_put_bw".to_owned(),
                            size,
                            spread(st),
                            p.map_or("-".into(), num),
                            "GB/s".into(),
                            p.map_or("-".into(), |p| format!("{:.2}", p / st.median)),
                            "NBI flood, src in segment".into(),
                        ]);
                    }
                    Err(e) => {
                        t.row(["ucp_put_bw".to_owned(), size, format!("failed: {e}")]);
                    }
                }
            }
            s.push_str(&t.to_string());
            let _ = writeln!(
                s,
                "ucp_put_lat and rgex's figure are both half a put ping-pong (the peer polls for the data's last word, then puts back)."
            );
        }
    }
    if r.fabric.is_none() {
        s.push_str(&mpi_table(r));
    }
    s
}

/// The blocking 8-byte latencies, the peers' mode beside the realistic one.
fn lat8_table(r: &Results, rtt: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nBlocking 8-byte latency: the peers' mode (static source or destination, as GASNet testsmall and osu_put_latency) and the realistic one"
    );
    let mut t = Table::new([
        "variant",
        "median [min .. max]",
        "unit",
        "x cache RTT",
        "per rep",
    ]);
    for (mode, p) in &r.lat8 {
        t.row([
            mode.name().to_owned(),
            spread(&p.s),
            "ns".into(),
            ratio(p.s.median, rtt),
            format!("{} ops", p.iters),
        ]);
    }
    s.push_str(&t.to_string());
    s
}

/// The Open MPI peer beside rgex: 8-byte put latency (rgex's static
/// source) and put flood bandwidth (rgex's NBI flood from the heap: MPI's
/// puts are implicit-handle, their source a heap buffer), per osc.
fn mpi_table(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nOpen MPI peer (mpi_peer: pml ob1, btl self,vader, passive target on MPI_Win_allocate; osc sm and osc rdma)"
    );
    let [sm, rdma] = &r.mpi;
    let mut t = Table::new([
        "test",
        "size",
        "rgex",
        "MPI osc sm",
        "MPI osc rdma",
        "unit",
        "rgex / sm",
        "rgex / rdma",
        "rgex figure",
    ]);
    let cell = |m: &Result<Vec<mpi::Figure>, String>, test, size| match m {
        Ok(f) => mpi::at(f, test, size).map(|f| f.stats),
        Err(_) => None,
    };
    let mut row = |test: Test, size: u64, ours: Option<f64>, unit: &str, what: &str| {
        let (a, b) = (cell(sm, test, size), cell(rdma, test, size));
        let show = |x: Option<Stats>| x.map_or("-".into(), |x| spread(&x));
        let rat = |x: Option<Stats>| match (ours, x) {
            (Some(o), Some(x)) if x.median > 0.0 => format!("{:.2}", o / x.median),
            _ => "-".into(),
        };
        t.row([
            test.variant(Osc::Sm)
                .replace(" (osc sm)", "")
                .trim_start_matches("mpi ")
                .to_owned(),
            size_str(size),
            ours.map_or("-".into(), num),
            show(a),
            show(b),
            unit.into(),
            rat(a),
            rat(b),
            what.into(),
        ]);
    };
    let put8 = r
        .lat8
        .iter()
        .find(|(m, _)| *m == Lat8::PutStatic)
        .map(|(_, p)| p.s.median);
    row(
        Test::PutLat,
        8,
        put8,
        "ns",
        "blocking put, 8 B static source",
    );
    for size in [8usize, 4 << 10, 64 << 10, 4 << 20] {
        let ours = r.flood_at(size, Local::Heap, Mode::Nbi).map(|p| p.s.median);
        row(
            Test::PutBw,
            size as u64,
            ours,
            "GB/s",
            "put NBI flood, src on heap",
        );
    }
    s.push_str(&t.to_string());
    for (osc, m) in Osc::ALL.iter().zip(&r.mpi) {
        if let Err(e) = m {
            let _ = writeln!(s, "MPI osc {}: skipped ({e})", osc.name());
        }
    }
    let _ = writeln!(
        s,
        "a time: rgex / MPI below 1 is rgex faster; a bandwidth: above 1 is rgex faster"
    );
    s
}

/// Over the ofi conduit: blocking latency against the provider's round
/// trip at the same size.
fn provider_latency(r: &Results, f: &ProviderFloor) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nBlocking latency vs the provider ({}; RTT = 2 x fi_pingpong one-way at the same size; target: put and get <= {LATENCY_TARGET} x RTT)",
        f.provider
    );
    let mut t = Table::new([
        "size",
        "put ns",
        "get ns",
        "provider one-way ns",
        "put / one-way",
        "put / RTT",
        "get / RTT",
        "target",
    ]);
    let mut no_floor = false;
    for (size, p, g) in &r.lat {
        let Some(fl) = r.fabric_at(*size) else {
            continue;
        };
        let ow = fl.one_way.median;
        let rt = fl.round_trip().median;
        let verdicts = [
            fabric::verdict(p.s.median, rt),
            fabric::verdict(g.s.median, rt),
        ];
        let verdict = if verdicts.contains(&fabric::NO_FLOOR) {
            no_floor = true;
            fabric::NO_FLOOR
        } else if verdicts == ["met"; 2] {
            "met"
        } else {
            "MISSED"
        };
        t.row([
            size_str(*size as u64),
            num(p.s.median),
            num(g.s.median),
            num(ow),
            fabric::ratio(p.s.median, Some(ow)),
            fabric::ratio(p.s.median, Some(rt)),
            fabric::ratio(g.s.median, Some(rt)),
            verdict.into(),
        ]);
    }
    s.push_str(&t.to_string());
    if no_floor {
        let _ = writeln!(s, "({})", fabric::NO_FLOOR_NOTE);
    }
    if r.lat.len() > f.points.len() {
        let _ = writeln!(
            s,
            "(the provider floor was measured at {} only{})",
            f.points
                .iter()
                .map(|(sz, _)| size_str(*sz))
                .collect::<Vec<_>>()
                .join(", "),
            if f.points.len() == FABRIC_QUICK_SIZES.len() {
                ": --quick"
            } else {
                ""
            }
        );
    }
    s
}

/// The put ping-pong: one-way latency (half a round trip) against the
/// cache-line round trip and, over ofi, the provider's one-way latency at
/// the same size (`fi_pingpong`, a send/receive ping-pong).
fn pingpong_table(r: &Results, rtt: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPut ping-pong, one-way latency (half a round trip: rank 0 puts, rank 1 polls the last word and puts back; NBI puts, ns)"
    );
    let mut t = Table::new([
        "size",
        "one-way ns median [min .. max]",
        "x cache-line RTT",
        "provider one-way",
        "x provider",
        "round trips/rep",
    ]);
    for (size, st, rounds) in &r.pingpong {
        let prov = r
            .fabric
            .as_ref()
            .and_then(|f| f.at(*size as u64))
            .map(|f| f.one_way.median);
        t.row([
            size_str(*size as u64),
            spread(st),
            ratio(st.median, rtt),
            prov.map_or("-".into(), num),
            ratio(st.median, prov),
            rounds.to_string(),
        ]);
    }
    s.push_str(&t.to_string());
    s
}

/// Over the ofi conduit: flood bandwidth against the provider's.
fn provider_bandwidth(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPut flood bandwidth vs the provider (GB/s; fi_pingpong's is a ping-pong, one message in flight; fi_rma_bw's a flood)"
    );
    let mut t = Table::new([
        "size",
        "NB+NOW heap",
        "NBI segment",
        "provider",
        "NB+NOW / provider",
        "NBI / provider",
        "provider figure",
    ]);
    for &(size, _) in &r.flood {
        let Some((bw, name)) = r.bw_floor_at(size) else {
            continue;
        };
        let now = r.flood_at(size, Local::Heap, Mode::Now).map(|p| p.s.median);
        let nbi = r
            .flood_at(size, Local::Segment, Mode::Nbi)
            .map(|p| p.s.median);
        t.row([
            size_str(size as u64),
            now.map_or("-".into(), num),
            nbi.map_or("-".into(), num),
            num(bw),
            now.map_or("-".into(), |x| fabric::ratio(x, Some(bw))),
            nbi.map_or("-".into(), |x| fabric::ratio(x, Some(bw))),
            name,
        ]);
    }
    s.push_str(&t.to_string());
    s
}

fn records(r: &Results) -> Vec<Record> {
    let j = &r.job;
    let mut v = r.floors.records(j);
    for (size, st, rounds) in &r.pingpong {
        v.push(j.record(
            "put ping-pong one-way (half a round trip)",
            Some(*size as u64),
            st,
            "ns",
            *rounds,
        ));
    }
    if let Some(f) = &r.fabric {
        v.extend(f.records(j));
    }
    for (size, p, g) in &r.lat {
        let sz = Some(*size as u64);
        let mut put = j.record("put latency (blocking)", sz, &p.s, "ns", p.iters);
        let mut get = j.record("get latency (blocking)", sz, &g.s, "ns", g.iters);
        if let Some(fl) = r.fabric_at(*size) {
            let name = format!("2 x {} one-way", fl.name());
            let rt = fl.round_trip().median;
            put = put.with_floor(&name, rt, Some(LATENCY_TARGET));
            get = get.with_floor(&name, rt, Some(LATENCY_TARGET));
        }
        v.push(put);
        v.push(get);
    }
    for (mode, p) in &r.lat8 {
        v.push(j.record(mode.name(), Some(8), &p.s, "ns", p.iters));
    }
    let peer = Job {
        conduit: "mpi".into(),
        provider: Some("Open MPI, pml ob1, btl self,vader".into()),
        ranks: 2,
        ..j.clone()
    };
    for (osc, m) in Osc::ALL.iter().zip(&r.mpi) {
        for f in m.iter().flatten() {
            let test = [Test::PutLat, Test::PutBw]
                .into_iter()
                .find(|t| t.arg() == f.test);
            if let Some(t) = test {
                v.push(peer.record(&t.variant(*osc), Some(f.size), &f.stats, &f.unit, f.iters));
            }
        }
    }
    for (size, row) in &r.flood {
        let floor = r.bw_floor_at(*size);
        for (si, &local) in Local::ALL.iter().enumerate() {
            for (mi, mode) in Mode::ALL.iter().enumerate() {
                let p = row[si][mi];
                let name = mode.record(local);
                let mut rec = j.record(&name, Some(*size as u64), &p.s, "GB/s", p.iters);
                if let Some((bw, fname)) = &floor {
                    rec = rec.with_floor(fname, *bw, None);
                }
                v.push(rec);
            }
        }
    }
    if let Ok(rows) = &r.ucx {
        let peer = Job {
            conduit: "ucx".into(),
            provider: Some("posix,self".into()),
            ranks: 2,
            ..j.clone()
        };
        for u in rows {
            let sz = Some(u.size as u64);
            if let Ok((st, it)) = &u.lat {
                v.push(peer.record("ucx_perftest ucp_put_lat (one-way)", sz, st, "ns", *it));
            }
            if let Ok((st, it)) = &u.bw {
                v.push(peer.record("ucx_perftest ucp_put_bw", sz, st, "GB/s", *it));
            }
        }
    }
    v
}

fn ticks(r: &Results) -> Vec<String> {
    r.flood.iter().map(|(s, _)| size_str(*s as u64)).collect()
}

fn title(r: &Results, what: &str) -> String {
    format!(
        "testsmall: {what}, {} rank(s), conduit {}{}",
        r.job.ranks,
        r.job.conduit,
        if r.job.oversubscribed {
            " (oversubscribed)"
        } else {
            ""
        }
    )
}

fn flood_plot(r: &Results) -> Plot {
    let mut p = Plot::new(
        &title(r, "put and get flood bandwidth"),
        "transfer size (bytes)",
        "GB/s (median; whiskers min..max)",
        ticks(r),
    );
    for (si, &local) in Local::ALL.iter().enumerate() {
        for (mi, mode) in Mode::ALL.iter().enumerate() {
            p.series.push(Series {
                name: mode.record(local),
                points: r
                    .flood
                    .iter()
                    .enumerate()
                    .map(|(i, (_, row))| {
                        let s = row[si][mi].s;
                        (i, s.median, s.min, s.max)
                    })
                    .collect(),
            });
        }
    }
    p.series.push(Series {
        name: "memcpy (floor)".into(),
        points: r
            .flood
            .iter()
            .enumerate()
            .filter_map(|(i, (size, _))| {
                r.floors
                    .memcpy_at(*size)
                    .map(|m| (i, m.median, m.min, m.max))
            })
            .collect(),
    });
    if let Ok(rows) = &r.ucx {
        let pts = rows
            .iter()
            .filter_map(|u| {
                let i = r.flood.iter().position(|(s, _)| *s == u.size)?;
                let (st, _) = u.bw.as_ref().ok()?;
                Some((i, st.median, st.min, st.max))
            })
            .collect();
        p.series.push(Series {
            name: "UCX ucp_put_bw".into(),
            points: pts,
        });
    }
    if r.fabric.is_some() {
        p.series.push(Series {
            name: "fi_pingpong ping-pong bandwidth".into(),
            points: r
                .flood
                .iter()
                .enumerate()
                .filter_map(|(i, (size, _))| {
                    let g = r.fabric_at(*size)?.gbs;
                    Some((i, g.median, g.min, g.max))
                })
                .collect(),
        });
    }
    p
}

fn latency_plot(r: &Results) -> Plot {
    let mut p = Plot::new(
        &title(r, "blocking put/get latency"),
        "transfer size (bytes)",
        "ns per operation (median; whiskers min..max)",
        ticks(r),
    );
    for (name, k) in [("put", 0), ("get", 1)] {
        p.series.push(Series {
            name: name.into(),
            points: r
                .lat
                .iter()
                .enumerate()
                .map(|(i, (_, a, b))| {
                    let s = if k == 0 { a.s } else { b.s };
                    (i, s.median, s.min, s.max)
                })
                .collect(),
        });
    }
    if r.fabric.is_some() {
        p.series.push(Series {
            name: "fi_pingpong round trip (2 x one-way)".into(),
            points: r
                .lat
                .iter()
                .enumerate()
                .filter_map(|(i, (size, _, _))| {
                    let t = r.fabric_at(*size)?.round_trip();
                    Some((i, t.median, t.min, t.max))
                })
                .collect(),
        });
    }
    if let Some(f) = r.floors.rtt_ns() {
        p.reference(&format!("cache-line RTT {} ns", num(f)), f);
    }
    p
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testsmall: error: {e}");
            ExitCode::FAILURE
        }
    }
}
