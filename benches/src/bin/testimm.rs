//! testimm: what `Flags::IMMEDIATE` buys a sender facing inattentive
//! receivers (GASNet-EX's testimm, see BENCHMARKS.md).
//!
//! Run: `RGEX_SMP_QUEUE_DEPTH=4 rgex-run -n N --bind target/release/testimm [--quick] [--json PATH] [--reps N] [--messages TOTAL]`
//!
//! Rank 0 sends AM Mediums of 4 KiB to every other rank; the receivers
//! alternate 500 us sleeps with a poll and a test of a non-blocking
//! barrier, which rank 0 joins once it has sent everything (the paper's
//! receiver); each then checks it received the M messages it expects
//! (M = TOTAL / receivers, TOTAL 20,000 by default).
//! Static schedule with block B: for k in 0..M step B, for each receiver,
//! send B messages (blocking sends: they stall, polling, on a full queue).
//! Dynamic: the same schedule with IMMEDIATE; on WouldBlock poll once and
//! retry once; on a second failure defer the rest of that block and move
//! on; then loop over the deferred blocks until everything is sent.
//! Reported: 100 * (T_static - T_dynamic) / T_static for B = M (Full
//! Block), 5 and 1 (Cyclic), T being rank 0's time to send everything.
//!
//! Small receive queues make the backpressure: run with
//! `RGEX_SMP_QUEUE_DEPTH=4` (room for about three messages plus one).
//! With two ranks there is one receiver, so there is nobody to move on
//! to and the dynamic schedule cannot win; three or more ranks show the
//! effect (and oversubscribe a 2-core node; the receivers mostly sleep).
//!
//! Every message must be delivered exactly once: receivers keep a bitmap
//! per run and check payloads; any loss, duplicate or damage makes every
//! rank exit non-zero after the report.

use rgex::{Client, Flags, HandlerId, Rank, ReduceOp};
use rgex_benches::affinity::{load_average, online_cpus};
use rgex_benches::cli::{positive, Opts};
use rgex_benches::floor::Floors;
use rgex_benches::payload;
use rgex_benches::report::{num, spread, Job, Plot, Record, Series, Table};
use rgex_benches::stats::Stats;
use std::collections::VecDeque;
use std::error::Error;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: testimm [--quick] [--json PATH] [--reps N] [--messages TOTAL]

  --quick           TOTAL 2,000 instead of 20,000 (a smoke run: well under 20 s)
  --json PATH       where to write the JSON records (default bench-results/testimm.json);
                    the SVG plot goes next to it with extension .svg
  --reps N          repetitions per point (default 5)
  --messages TOTAL  messages per run over all receivers (M = TOTAL / receivers)

Set RGEX_SMP_QUEUE_DEPTH=4 in the environment for the small queues the method asks for.";

/// Payload of every message.
const MSG_BYTES: usize = 4096;

/// A receiver's sleep between polls.
const NAP: Duration = Duration::from_micros(500);

/// How long a receiver keeps polling for messages still on their way once
/// the barrier is done (a conduit that does not keep a pair's messages in
/// order could deliver some after it), before it counts them missing.
const STRAGGLERS: Duration = Duration::from_secs(10);

/// What a receiver's handler updates.
#[derive(Debug, Default)]
struct Recv {
    /// The run being received (arg 0 of every message).
    run: AtomicU32,
    /// Messages of this run received (first delivery of each).
    count: AtomicU64,
    /// Damaged payloads, messages of another run, duplicates, indices out of range.
    errors: AtomicU64,
    /// Which message indices arrived this run.
    seen: Mutex<Vec<bool>>,
}

impl Recv {
    fn reset(&self, run: u32, m: usize) {
        let mut s = self.seen.lock().expect("no handler panics");
        s.clear();
        s.resize(m, false);
        self.count.store(0, Ordering::Relaxed);
        self.run.store(run, Ordering::Release);
    }

    fn deliver(&self, run: u32, k: u32, payload: &[u8]) {
        let ok = run == self.run.load(Ordering::Acquire) && payload::check(payload, k, MSG_BYTES);
        let mut s = self.seen.lock().expect("no handler panics");
        match s.get_mut(k as usize) {
            Some(b) if ok && !*b => {
                *b = true;
                self.count.fetch_add(1, Ordering::Release);
            }
            _ => {
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The two ways of sending the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Static,
    Dynamic,
}

/// Counters of one dynamic run.
#[derive(Clone, Copy, Debug, Default)]
struct DynCounts {
    /// IMMEDIATE sends that returned WouldBlock.
    would_block: u64,
    /// Blocks (or their rests) deferred.
    deferred: u64,
}

/// Rank 0's sender.
struct Sender<'a> {
    client: &'a Client,
    h: HandlerId,
    receivers: Vec<Rank>,
    m: usize,
    buf: Vec<u8>,
}

impl Sender<'_> {
    fn send(&mut self, to: Rank, run: u32, k: usize, flags: Flags) -> rgex::Result<()> {
        payload::generate(&mut self.buf, k as u32);
        self.client
            .endpoint()
            .request_medium(to, self.h, &[run, k as u32], &self.buf, flags)
    }

    /// The static schedule: blocking sends.
    fn run_static(&mut self, run: u32, b: usize) -> Res<Duration> {
        let t = Instant::now();
        for k in (0..self.m).step_by(b) {
            for j in 0..self.receivers.len() {
                for i in k..(k + b).min(self.m) {
                    self.send(self.receivers[j], run, i, Flags::empty())?;
                }
            }
        }
        Ok(t.elapsed())
    }

    /// One IMMEDIATE attempt with the single poll-and-retry; `Ok(false)`
    /// if both attempts found the queue full.
    fn try_send(&mut self, to: Rank, run: u32, k: usize, c: &mut DynCounts) -> Res<bool> {
        for attempt in 0..2 {
            match self.send(to, run, k, Flags::IMMEDIATE) {
                Ok(()) => return Ok(true),
                Err(e) if e.is_would_block() => {
                    c.would_block += 1;
                    if attempt == 0 {
                        self.client.endpoint().poll()?;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// Send messages `s..e` to receiver `j`; the unsent rest if a message
    /// failed twice.
    fn try_block(
        &mut self,
        run: u32,
        (j, s, e): (usize, usize, usize),
        c: &mut DynCounts,
    ) -> Res<Option<(usize, usize, usize)>> {
        for i in s..e {
            if !self.try_send(self.receivers[j], run, i, c)? {
                c.deferred += 1;
                return Ok(Some((j, i, e)));
            }
        }
        Ok(None)
    }

    /// The dynamic schedule.
    fn run_dynamic(&mut self, run: u32, b: usize) -> Res<(Duration, DynCounts)> {
        let mut c = DynCounts::default();
        let mut deferred = VecDeque::new();
        let t = Instant::now();
        for k in (0..self.m).step_by(b) {
            for j in 0..self.receivers.len() {
                if let Some(rest) = self.try_block(run, (j, k, (k + b).min(self.m)), &mut c)? {
                    deferred.push_back(rest);
                }
            }
        }
        while let Some(blk) = deferred.pop_front() {
            if let Some(rest) = self.try_block(run, blk, &mut c)? {
                deferred.push_back(rest);
            }
        }
        Ok((t.elapsed(), c))
    }
}

/// One block size's results.
struct Row {
    name: &'static str,
    b: usize,
    /// Rank 0's send time, ms.
    stat: Stats,
    dynamic: Stats,
    /// Paired per-repetition reductions, percent.
    paired: Stats,
    counts: Vec<DynCounts>,
}

fn run() -> Res<bool> {
    let mut total: Option<u64> = None;
    let Some(opts) = Opts::parse("testimm", std::env::args().skip(1), |a, rest| {
        if a == "--messages" {
            total = Some(positive(a, rest.next())?);
            Ok(true)
        } else {
            Ok(false)
        }
    })?
    else {
        println!("{USAGE}");
        return Ok(true);
    };
    let total = total.unwrap_or(if opts.quick { 2_000 } else { 20_000 }) as usize;
    let first = rgex::launcher_rank()? == 0;
    let reps = opts.reps;
    let floor_target = opts.target(Duration::from_millis(4), Duration::from_millis(100));

    let before = first.then(|| {
        let load = load_average();
        eprintln!("testimm: measuring the floor (cache-line round trip, memcpy 4K)");
        (Floors::measure(&[MSG_BYTES], floor_target, reps), load)
    });

    let recv = Arc::new(Recv::default());
    let (client, h) = rgex::init_with(|t| {
        let r = recv.clone();
        t.register("testimm.msg", move |_tok, msg| {
            r.deliver(msg.arg(0), msg.arg(1), msg.payload());
        })
    })?;
    let n_recv = client.size() as usize - 1;
    if n_recv == 0 {
        return Err(
            "testimm needs at least two ranks (run it through rgex-run -n 2 or more)".into(),
        );
    }
    let m = (total / n_recv).max(1);
    let me = client.rank().0;
    let blocks: [(&'static str, usize); 3] = [("Full Block", m), ("Block=5", 5), ("Cyclic", 1)];
    let peer = Rank(1);
    if client.endpoint().max_medium(peer, 2) < MSG_BYTES {
        return Err(format!(
            "the largest Medium ({} B) is below the {MSG_BYTES} B message",
            client.endpoint().max_medium(peer, 2)
        )
        .into());
    }

    let mut sender = (me == 0).then(|| Sender {
        client: &client,
        h,
        receivers: (1..client.size()).map(Rank).collect(),
        m,
        buf: vec![0u8; MSG_BYTES],
    });
    // times[block][kind][rep] in ms; dynamic counters per block.
    let mut times = vec![[Vec::new(), Vec::new()]; blocks.len()];
    let mut counts = vec![Vec::new(); blocks.len()];
    let mut run_id = 0u32;
    for rep in 0..reps {
        for (bi, &(name, b)) in blocks.iter().enumerate() {
            for kind in [Kind::Static, Kind::Dynamic] {
                run_id += 1;
                if let Some(s) = sender.as_mut() {
                    if rep == 0 && kind == Kind::Static {
                        eprintln!("testimm: measuring {name} (B = {b})");
                    }
                    client.barrier()?;
                    let t = match kind {
                        Kind::Static => s.run_static(run_id, b)?,
                        Kind::Dynamic => {
                            let (t, c) = s.run_dynamic(run_id, b)?;
                            counts[bi].push(c);
                            t
                        }
                    };
                    times[bi][kind as usize].push(t.as_secs_f64() * 1e3);
                    // The barrier the receivers test: everything is sent.
                    client.barrier()?;
                } else {
                    recv.reset(run_id, m);
                    client.barrier()?;
                    let sent = client.world().barrier_nb()?;
                    loop {
                        std::thread::sleep(NAP);
                        client.endpoint().poll()?;
                        if sent.test() {
                            break;
                        }
                    }
                    let late = Instant::now();
                    while (recv.count.load(Ordering::Acquire) as usize) < m
                        && late.elapsed() < STRAGGLERS
                    {
                        client.endpoint().poll()?;
                    }
                    let missing = recv
                        .seen
                        .lock()
                        .expect("no handler panics")
                        .iter()
                        .filter(|&&x| !x)
                        .count();
                    recv.errors.fetch_add(missing as u64, Ordering::Relaxed);
                }
                client.barrier()?;
            }
        }
    }
    // Late duplicates would arrive before this barrier's messages.
    client.endpoint().poll()?;
    let mine = recv.errors.load(Ordering::Relaxed) + client.endpoint().dropped_messages();
    let errors = client
        .world()
        .allreduce(&[mine], ReduceOp::Sum)?
        .first()
        .copied()
        .unwrap_or(u64::MAX);
    if mine > 0 {
        eprintln!("testimm: rank {me}: {mine} delivery errors (lost, duplicated, damaged or stray messages)");
    }

    if let Some((floors, load)) = before {
        let rows: Vec<Row> = blocks
            .iter()
            .enumerate()
            .map(|(bi, &(name, b))| {
                let [st, dy] = &times[bi];
                let paired: Vec<f64> = st
                    .iter()
                    .zip(dy)
                    .map(|(s, d)| 100.0 * (s - d) / s)
                    .collect();
                Row {
                    name,
                    b,
                    stat: Stats::from_samples(st).expect("reps >= 1"),
                    dynamic: Stats::from_samples(dy).expect("reps >= 1"),
                    paired: Stats::from_samples(&paired).expect("reps >= 1"),
                    counts: counts[bi].clone(),
                }
            })
            .collect();
        let job = Job {
            bench: "testimm".into(),
            conduit: client.endpoint().conduit().name().to_owned(),
            provider: None,
            ranks: client.size(),
            oversubscribed: client.endpoint().polite() || client.size() as usize > online_cpus(),
        };
        let depth = std::env::var("RGEX_SMP_QUEUE_DEPTH").unwrap_or_else(|_| "64 (default)".into());
        print!(
            "{}",
            table(&job, &floors, load, &rows, reps, m, n_recv, &depth, errors)
        );
        opts.write(
            &records(&job, &floors, &rows, m, n_recv),
            &[("", plot(&job, &rows))],
        )?;
    }
    client.barrier()?;
    Ok(errors == 0)
}

/// `100 * (static - dynamic) / static` of the medians.
fn reduction(r: &Row) -> f64 {
    100.0 * (r.stat.median - r.dynamic.median) / r.stat.median
}

#[allow(clippy::too_many_arguments)]
fn table(
    job: &Job,
    floors: &Floors,
    load: Option<f64>,
    rows: &[Row],
    reps: usize,
    m: usize,
    n_recv: usize,
    depth: &str,
    errors: u64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "testimm: {} rank(s) ({n_recv} receiver(s)), conduit {}, M = {m} messages of {MSG_BYTES} B per receiver, RGEX_SMP_QUEUE_DEPTH={depth}, {reps} repetitions; figures are median [min .. max]{}",
        job.ranks,
        job.conduit,
        if job.oversubscribed { "; OVERSUBSCRIBED (more ranks than CPUs)" } else { "" }
    );
    if let Some(l) = load {
        let _ = writeln!(
            s,
            "node load average (1 min) at start: {l:.2} on {} CPUs",
            online_cpus()
        );
    }
    if n_recv == 1 {
        let _ = writeln!(
            s,
            "one receiver: the dynamic schedule has nobody to move on to, so expect no reduction; run with -n 3 or more to see the effect (oversubscribes a 2-core node)"
        );
    }
    let _ = writeln!(s, "\nFloor (measured in this run)");
    s.push_str(&floors.table().to_string());
    if let Some(mc) = floors.memcpy_at(MSG_BYTES) {
        let _ = writeln!(
            s,
            "copying all {} payloads once would take {} ms at memcpy speed; a receiver draining ~4 messages per {} us nap needs ~{} ms",
            m * n_recv,
            num((m * n_recv * MSG_BYTES) as f64 / mc.median / 1e6),
            NAP.as_micros(),
            num(m as f64 / 4.0 * NAP.as_secs_f64() * 1e3)
        );
    }
    let _ = writeln!(s, "\nRank 0's time to send everything (ms)");
    let mut t = Table::new([
        "schedule",
        "B",
        "static (blocking)",
        "dynamic (IMMEDIATE)",
        "reduction",
        "paired reduction %",
        "WouldBlock/run",
        "deferrals/run",
    ]);
    for r in rows {
        let per_run = |f: fn(&DynCounts) -> u64| {
            let v: Vec<f64> = r.counts.iter().map(|c| f(c) as f64).collect();
            Stats::from_samples(&v).map_or("-".into(), |s| num(s.median))
        };
        t.row([
            r.name.to_owned(),
            r.b.to_string(),
            spread(&r.stat),
            spread(&r.dynamic),
            format!("{:.1}%", reduction(r)),
            spread(&r.paired),
            per_run(|c| c.would_block),
            per_run(|c| c.deferred),
        ]);
    }
    s.push_str(&t.to_string());
    let _ = writeln!(
        s,
        "reduction = 100 * (T_static - T_dynamic) / T_static of the medians (paper, Aries: Full Block up to 93%, Block=5 up to 81%, Cyclic ~3%)"
    );
    let _ = writeln!(
        s,
        "delivery: {}",
        if errors == 0 {
            "every message arrived exactly once, undamaged".to_owned()
        } else {
            format!("{errors} ERRORS (lost, duplicated, damaged or stray messages)")
        }
    );
    s
}

fn records(job: &Job, floors: &Floors, rows: &[Row], m: usize, n_recv: usize) -> Vec<Record> {
    let mut v = floors.records(job);
    let iters = (m * n_recv) as u64;
    for r in rows {
        let size = Some(MSG_BYTES as u64);
        v.push(job.record(
            &format!("{} (B={}) static, send time", r.name, r.b),
            size,
            &r.stat,
            "ms",
            iters,
        ));
        v.push(job.record(
            &format!("{} (B={}) dynamic IMMEDIATE, send time", r.name, r.b),
            size,
            &r.dynamic,
            "ms",
            iters,
        ));
        v.push(job.record(
            &format!("{} (B={}) reduction, paired per repetition", r.name, r.b),
            size,
            &r.paired,
            "%",
            iters,
        ));
    }
    v
}

fn plot(job: &Job, rows: &[Row]) -> Plot {
    let mut p = Plot::new(
        &format!(
            "testimm: send time, {} rank(s), conduit {}{}",
            job.ranks,
            job.conduit,
            if job.oversubscribed {
                " (oversubscribed)"
            } else {
                ""
            }
        ),
        "schedule",
        "rank 0 send time (ms, median; whiskers min..max)",
        rows.iter()
            .map(|r| format!("{} (B={})", r.name, r.b))
            .collect(),
    );
    for (name, pick) in [("static (blocking)", 0), ("dynamic (IMMEDIATE)", 1)] {
        p.series.push(Series {
            name: name.into(),
            points: rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let s = if pick == 0 { r.stat } else { r.dynamic };
                    (i, s.median, s.min, s.max)
                })
                .collect(),
        });
    }
    p
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("testimm: error: {e}");
            ExitCode::FAILURE
        }
    }
}
