//! Physical floors, measured in the same run as the bench they bound.
//!
//! - [`cache_line_rtt`]: two threads pinned to two CPUs bounce a counter
//!   through two cache lines; no message between two cores can make a
//!   round trip faster.
//! - [`memcpy_bandwidth`]: how fast this core copies `size` bytes; a
//!   payload that is copied cannot move faster.
//! - [`cross_copy_rtt`]: two pinned threads take turns copying `size`
//!   bytes out of the buffer the other one wrote last: a round trip of
//!   two cross-core copies, the floor of a large message's round trip.

use crate::affinity::pin_current_thread;
use crate::stats::{self, Stats};
use crate::timing::calibrate;
use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// A counter alone on its cache line (128 bytes: adjacent-line prefetch
/// pulls lines in pairs on x86).
#[repr(align(128))]
struct Line(AtomicU64);

/// Untimed round trips before each timed run (both threads pinned and hot).
const WARMUP: u64 = 10_000;

/// Spin until `line` holds `v`.
#[inline]
fn wait_for(line: &Line, v: u64) {
    while line.0.load(Ordering::Acquire) != v {
        std::hint::spin_loop();
    }
}

/// Pin the calling thread to `cpu`, publish the outcome in `mine`, wait
/// for the other thread's outcome in `theirs`; true if both pinned.
fn pin_and_meet(cpu: usize, mine: &AtomicU8, theirs: &AtomicU8) -> io::Result<bool> {
    let pinned = pin_current_thread(cpu);
    mine.store(if pinned.is_ok() { 1 } else { 2 }, Ordering::Release);
    let other = loop {
        match theirs.load(Ordering::Acquire) {
            0 => std::hint::spin_loop(),
            v => break v,
        }
    };
    pinned.map(|()| other == 1)
}

/// One timed run of `iters` turn round trips, after `warmup` untimed
/// ones, between a thread on `cpus[0]` and one on `cpus[1]`: in round `i`
/// the first runs `first()` then passes the turn through a cache line,
/// the second waits for it, runs `second()` and passes it back. Returns
/// the elapsed time of the timed round trips.
fn turns(
    cpus: [usize; 2],
    warmup: u64,
    iters: u64,
    mut first: impl FnMut(),
    mut second: impl FnMut() + Send,
) -> io::Result<Duration> {
    let ping = Line(AtomicU64::new(0));
    let pong = Line(AtomicU64::new(0));
    let ready = [AtomicU8::new(0), AtomicU8::new(0)];
    let total = warmup + iters;
    std::thread::scope(|s| {
        let responder = s.spawn(|| -> io::Result<()> {
            if pin_and_meet(cpus[1], &ready[1], &ready[0])? {
                for i in 1..=total {
                    wait_for(&ping, i);
                    second();
                    pong.0.store(i, Ordering::Release);
                }
            }
            Ok(())
        });
        let both = pin_and_meet(cpus[0], &ready[0], &ready[1]);
        let mut start = Instant::now();
        if let Ok(true) = both {
            for i in 1..=total {
                if i == warmup + 1 {
                    start = Instant::now();
                }
                first();
                ping.0.store(i, Ordering::Release);
                wait_for(&pong, i);
            }
        }
        let elapsed = start.elapsed();
        let responder = responder
            .join()
            .expect("the responding thread does not panic");
        match (both?, responder) {
            (true, Ok(())) => Ok(elapsed),
            (_, Err(e)) => Err(io::Error::new(
                e.kind(),
                format!("pin a thread to CPU {}: {e}", cpus[1]),
            )),
            (false, Ok(())) => Err(io::Error::other(format!(
                "could not pin a thread to CPU {}",
                cpus[1]
            ))),
        }
    })
}

/// One timed run: `iters` round trips between a thread on `cpus[0]` (ping,
/// timed) and one on `cpus[1]` (pong). Returns the elapsed time of the
/// timed round trips.
pub fn cache_line_run(cpus: [usize; 2], iters: u64) -> io::Result<Duration> {
    turns(cpus, WARMUP, iters, || {}, || {}).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cache-line round trip between CPUs {} and {}: {e}",
                cpus[0], cpus[1]
            ),
        )
    })
}

/// Cache-line round trip between `cpus[0]` and `cpus[1]` in nanoseconds:
/// each repetition runs about `target`, `reps` repetitions. Returns the
/// statistics and the iterations per repetition. Fails if the threads
/// cannot be pinned (for example on a one-CPU machine).
pub fn cache_line_rtt(cpus: [usize; 2], target: Duration, reps: usize) -> io::Result<(Stats, u64)> {
    let iters = calibrate(target, 1_000, 1 << 32, |n| cache_line_run(cpus, n))?;
    let s = stats::repeat(reps, || {
        cache_line_run(cpus, iters).map(|t| t.as_nanos() as f64 / iters as f64)
    })?;
    Ok((s, iters))
}

/// A buffer two threads take turns on: one copies into it, hands over
/// through a ping-pong line, the other copies out of it.
struct Turns(std::cell::UnsafeCell<Vec<u8>>);

// SAFETY: the threads of `cross_copy_run` touch a `Turns` only in their
// own turn, and turns hand over through a Release store and the Acquire
// load that sees it (`wait_for`), so no two accesses are concurrent.
unsafe impl Sync for Turns {}

/// One timed run of `iters` copy round trips between a thread on
/// `cpus[0]` and one on `cpus[1]`, each `size` bytes a way. In its turn
/// a thread copies the other's buffer (whose lines sit in the other
/// core's cache, just written) into its own (whose lines the other core
/// just read), then passes the turn by a cache line: a round trip is two
/// cross-core copies and two hand-overs. Returns the elapsed time of the
/// timed round trips.
pub fn cross_copy_run(cpus: [usize; 2], size: usize, iters: u64) -> io::Result<Duration> {
    let size = size.max(1);
    let bufs = [Turns(vec![1u8; size].into()), Turns(vec![2u8; size].into())];
    // Copy `from` into `to` in this thread's turn.
    let copy = |to: usize, from: usize| {
        // SAFETY: only the thread whose turn it is runs this (see `Turns`),
        // and the two buffers are distinct.
        unsafe {
            let src = &*bufs[from].0.get();
            let dst = &mut *bufs[to].0.get();
            black_box(dst).copy_from_slice(black_box(src));
        }
    };
    turns(cpus, WARMUP.min(1_000), iters, || copy(0, 1), || copy(1, 0)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cross-core copy round trip of {size} bytes between CPUs {} and {}: {e}",
                cpus[0], cpus[1]
            ),
        )
    })
}

/// Round trips of two cross-core copies of `size` bytes
/// ([`cross_copy_run`]) in nanoseconds: each repetition about `target`,
/// `reps` repetitions; the statistics and round trips per repetition.
pub fn cross_copy_rtt(
    cpus: [usize; 2],
    size: usize,
    target: Duration,
    reps: usize,
) -> io::Result<(Stats, u64)> {
    let iters = calibrate(target, 10, 1 << 32, |n| cross_copy_run(cpus, size, n))?;
    let s = stats::repeat(reps, || {
        cross_copy_run(cpus, size, iters).map(|t| t.as_nanos() as f64 / iters as f64)
    })?;
    Ok((s, iters))
}

/// Time `copies` copies of `src` into `dst`.
fn copy_run(dst: &mut [u8], src: &[u8], copies: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..copies {
        black_box(&mut *dst).copy_from_slice(black_box(src));
    }
    black_box(&*dst);
    start.elapsed()
}

/// memcpy bandwidth in GB/s (10^9 bytes per second) for `size`-byte copies
/// on the calling thread: each repetition runs about `target`. Use a size
/// well inside the caches for the in-cache figure and several times the
/// last-level cache for the out-of-cache one. Returns the statistics and
/// the copies per repetition.
pub fn memcpy_bandwidth(size: usize, target: Duration, reps: usize) -> (Stats, u64) {
    let size = size.max(1);
    let src = vec![0x5au8; size];
    let mut dst = vec![0u8; size];
    // Fault the destination in before any timing.
    copy_run(&mut dst, &src, 1);
    copy_bandwidth(size, target, reps, |n| copy_run(&mut dst, &src, n))
}

/// GB/s of `size`-byte copies, `run(n)` timing `n` of them: calibrated to
/// about `target` per repetition; the statistics and the copies per
/// repetition.
fn copy_bandwidth(
    size: usize,
    target: Duration,
    reps: usize,
    mut run: impl FnMut(u64) -> Duration,
) -> (Stats, u64) {
    let never: Result<_, std::convert::Infallible> = calibrate(target, 1, 1 << 40, |n| Ok(run(n)));
    let Ok(copies) = never;
    let gbs = |t: Duration| (size as f64 * copies as f64) / t.as_nanos().max(1) as f64;
    let never: Result<_, std::convert::Infallible> = stats::repeat(reps, || Ok(gbs(run(copies))));
    let Ok(s) = never;
    (s, copies)
}

/// Bytes of each arena the out-of-cache memcpy walks (source and
/// destination alike): several times any last-level cache here (this
/// machine's L3 is 32 MiB), so every copy starts cold.
pub const COLD_ARENA: usize = 256 << 20;

/// Time `copies` copies of `size` bytes between slots of `src` and `dst`,
/// so that no copy finds its bytes cached: a slot is `size` rounded up to
/// a cache line, so a pass over the slots touches the whole arena, several
/// times the last-level cache, even for 1-byte copies (each of which then
/// touches a line of its own, as a transfer of fresh data would). Slots
/// are visited a golden-ratio step apart (co-prime with their count, so a
/// pass visits each once), an order in which neither the stride nor the
/// stream prefetchers find a pattern to run ahead of.
fn cold_copy_run(dst: &mut [u8], src: &[u8], size: usize, copies: u64) -> Duration {
    let slot = size.div_ceil(64) * 64;
    let slots = (src.len().min(dst.len()) / slot).max(1) as u64;
    let step = coprime_step(slots);
    let start = Instant::now();
    let mut k = 0u64;
    for _ in 0..copies {
        let at = k as usize * slot;
        black_box(&mut dst[at..at + size]).copy_from_slice(black_box(&src[at..at + size]));
        k = (k + step) % slots;
    }
    black_box(&*dst);
    start.elapsed()
}

/// A step near `n` over the golden ratio that is co-prime with `n` (so
/// `k -> (k + step) % n` visits all of `0..n` before repeating).
fn coprime_step(n: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if n <= 2 {
        return 1;
    }
    let mut step = ((n as f64 * 0.618_033_988_75) as u64).max(1);
    while gcd(step, n) != 1 {
        step += 1;
    }
    step
}

/// memcpy bandwidth in GB/s for `size`-byte copies whose source and
/// destination are out of cache (see [`COLD_ARENA`]); as
/// [`memcpy_bandwidth`] otherwise. `arenas` are reused between sizes
/// (allocating and faulting in 512 MiB costs a noticeable fraction of a
/// second).
pub fn memcpy_cold_bandwidth(
    size: usize,
    target: Duration,
    reps: usize,
    arenas: &mut (Vec<u8>, Vec<u8>),
) -> (Stats, u64) {
    let size = size.clamp(1, COLD_ARENA);
    if arenas.0.len() < COLD_ARENA {
        *arenas = (vec![0x5au8; COLD_ARENA], vec![0u8; COLD_ARENA]);
        // Fault the destination in before any timing.
        arenas.1.fill(1);
    }
    let (src, dst) = (&arenas.0, &mut arenas.1);
    copy_bandwidth(size, target, reps, |n| cold_copy_run(dst, src, size, n))
}

/// One memcpy figure: the size, GB/s, and copies per repetition.
pub type MemcpyPoint = (usize, Stats, u64);

/// The figure measured at `size` in a list of memcpy points.
fn at_size(v: &[MemcpyPoint], size: usize) -> Option<Stats> {
    v.iter().find(|(s, _, _)| *s == size).map(|(_, st, _)| *st)
}

/// The floors one bench measures before its own figures: the cache-line
/// round trip between two CPUs and memcpy bandwidth at the bench's sizes,
/// in cache and out of cache.
#[derive(Clone, Debug)]
pub struct Floors {
    /// The two CPUs the cache line bounced between.
    pub cpus: [usize; 2],
    /// Cache-line round trip in ns and iterations per repetition, or why
    /// it could not be measured.
    pub cache_rtt: Result<(Stats, u64), String>,
    /// memcpy bandwidth in GB/s per size, with copies per repetition
    /// (source and destination in cache: the same two buffers each time).
    pub memcpy: Vec<MemcpyPoint>,
    /// The same out of cache ([`memcpy_cold_bandwidth`]).
    pub memcpy_cold: Vec<MemcpyPoint>,
    /// Round trips of two cross-core copies ([`cross_copy_rtt`]) in ns
    /// per size, with round trips per repetition: measured only by the
    /// benches that ask ([`Floors::measure_cross_copies`]).
    pub cross_copy: Vec<MemcpyPoint>,
}

impl Floors {
    /// Measure the cache-line round trip between CPUs 0 and 1 (if the
    /// node has two) and memcpy bandwidth at each of `sizes`, each
    /// repetition about `target`, `reps` repetitions.
    pub fn measure(sizes: &[usize], target: Duration, reps: usize) -> Floors {
        let cpus = [0, 1];
        let cache_rtt = if crate::affinity::online_cpus() < 2 {
            Err("this node has one CPU".to_owned())
        } else {
            cache_line_rtt(cpus, target, reps).map_err(|e| e.to_string())
        };
        let memcpy = sizes
            .iter()
            .map(|&size| {
                let (s, copies) = memcpy_bandwidth(size, target, reps);
                (size, s, copies)
            })
            .collect();
        let mut arenas = (Vec::new(), Vec::new());
        let memcpy_cold = sizes
            .iter()
            .map(|&size| {
                let (s, copies) = memcpy_cold_bandwidth(size, target, reps, &mut arenas);
                (size, s, copies)
            })
            .collect();
        Floors {
            cpus,
            cache_rtt,
            memcpy,
            memcpy_cold,
            cross_copy: Vec::new(),
        }
    }

    /// Also measure the round trip of two cross-core copies at each of
    /// `sizes` (where the node has two CPUs to pin to).
    pub fn measure_cross_copies(&mut self, sizes: &[usize], target: Duration, reps: usize) {
        if crate::affinity::online_cpus() < 2 {
            return;
        }
        self.cross_copy = sizes
            .iter()
            .filter_map(|&size| {
                let (s, n) = cross_copy_rtt(self.cpus, size, target, reps).ok()?;
                Some((size, s, n))
            })
            .collect();
    }

    /// The round trip of two cross-core copies of `size` bytes (ns), if
    /// measured.
    pub fn cross_copy_at(&self, size: usize) -> Option<Stats> {
        at_size(&self.cross_copy, size)
    }

    /// Median cache-line round trip in ns, if measured.
    pub fn rtt_ns(&self) -> Option<f64> {
        self.cache_rtt.as_ref().ok().map(|(s, _)| s.median)
    }

    /// Both memcpy lists, each with what its rows add to "memcpy SIZE".
    fn memcpy_lists(&self) -> [(&[MemcpyPoint], &'static str); 2] {
        [(&self.memcpy, ""), (&self.memcpy_cold, ", out of cache")]
    }

    /// memcpy bandwidth (GB/s) at `size`, in cache, if measured.
    pub fn memcpy_at(&self, size: usize) -> Option<Stats> {
        at_size(&self.memcpy, size)
    }

    /// memcpy bandwidth (GB/s) at `size`, out of cache, if measured.
    pub fn memcpy_cold_at(&self, size: usize) -> Option<Stats> {
        at_size(&self.memcpy_cold, size)
    }

    /// The floors as a table (metric, median [min .. max], unit, per rep).
    pub fn table(&self) -> crate::report::Table {
        use crate::report::{size as size_str, spread, Table};
        let mut t = Table::new(["metric", "median [min .. max]", "unit", "per rep"]);
        let [a, b] = self.cpus;
        match &self.cache_rtt {
            Ok((st, it)) => t.row([
                format!("cache-line round trip, CPU {a} <-> CPU {b}"),
                spread(st),
                "ns".into(),
                format!("{it} trips"),
            ]),
            Err(e) => t.row([
                format!("cache-line round trip: not measured ({e})"),
                String::new(),
                String::new(),
                String::new(),
            ]),
        };
        for (list, how) in self.memcpy_lists() {
            for (size, st, copies) in list {
                t.row([
                    format!("memcpy {}{how}", size_str(*size as u64)),
                    spread(st),
                    "GB/s".into(),
                    format!("{copies} copies"),
                ]);
            }
        }
        for (size, st, trips) in &self.cross_copy {
            t.row([
                format!(
                    "two cross-core copies of {}, round trip CPU {a} <-> CPU {b}",
                    size_str(*size as u64)
                ),
                spread(st),
                "ns".into(),
                format!("{trips} trips"),
            ]);
        }
        t
    }

    /// One JSON record per floor figure.
    pub fn records(&self, job: &crate::report::Job) -> Vec<crate::report::Record> {
        let mut v = Vec::new();
        if let Ok((st, it)) = &self.cache_rtt {
            let [a, b] = self.cpus;
            v.push(job.record(
                &format!("floor: cache-line round trip CPU {a} <-> {b}"),
                None,
                st,
                "ns",
                *it,
            ));
        }
        for (list, how) in self.memcpy_lists() {
            let name = format!("floor: memcpy{}", how.replace(',', ""));
            for (size, st, copies) in list {
                v.push(job.record(&name, Some(*size as u64), st, "GB/s", *copies));
            }
        }
        for (size, st, trips) in &self.cross_copy {
            let name = "floor: two cross-core copies, round trip";
            v.push(job.record(name, Some(*size as u64), st, "ns", *trips));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::coprime_step;

    #[test]
    fn the_cold_walk_visits_every_slot_once_a_pass() {
        for n in [1u64, 2, 3, 4, 6, 7, 10, 12, 24, 64, 100, 128, 4096] {
            let step = coprime_step(n);
            let mut seen = vec![false; n as usize];
            let mut k = 0;
            for _ in 0..n {
                assert!(!seen[k as usize], "n = {n}, step = {step}: {k} twice");
                seen[k as usize] = true;
                k = (k + step) % n;
            }
        }
    }
}
