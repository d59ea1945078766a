//! The AM measurements rank 0 runs against its peer.

use crate::handlers::{request_medium, Ids, State, Variant};
use rgex::{Client, Flags, Rank};
use rgex_benches::stats::{self, Stats};
use rgex_benches::timing::calibrate;
use std::error::Error;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

/// One measured point: statistics in ns and iterations per repetition.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// ns per iteration (round trip, or message in a flood).
    pub ns: Stats,
    /// Iterations per repetition.
    pub iters: u64,
}

/// The Medium round trips at one size, one point per [`Variant::ALL`].
#[derive(Clone, Debug)]
pub struct MediumRow {
    /// Payload bytes (each way).
    pub size: usize,
    /// Per variant, in [`Variant::ALL`] order.
    pub points: [Point; Variant::ALL.len()],
    /// NP-rgex and NP-client against FP, in percent (`100 * (FP / NP - 1)`),
    /// one ratio per repetition between the variants' back-to-back runs:
    /// a machine that changes speed between repetitions moves all three
    /// runs of a repetition together, so the paired ratio does not drift.
    pub paired: [Stats; 2],
}

/// Repetitions of a Medium row per configured repetition.
pub const MEDIUM_SPLIT: u64 = stats::PAIR_SPLIT as u64;

/// Everything rank 0 measured over rgex.
#[derive(Clone, Debug)]
pub struct AmResults {
    /// AM Short ping-pong round trip.
    pub short_rtt: Point,
    /// AM Short one-way flood, per message.
    pub flood: Point,
    /// AM Medium ping-pong round trips by size.
    pub medium: Vec<MediumRow>,
    /// Largest Medium payload to the peer with testam's arguments.
    pub max_medium: usize,
}

/// Rank 0's side of the measurements.
pub struct Bench<'a> {
    client: &'a Client,
    state: &'a State,
    ids: Ids,
    peer: Rank,
    target: Duration,
    reps: usize,
    buf: Vec<u8>,
    seed: u32,
    /// Called with a line of progress (to stderr).
    pub progress: fn(&str),
}

impl<'a> Bench<'a> {
    /// Measure against `peer`, aiming each repetition at `target`.
    pub fn new(
        client: &'a Client,
        state: &'a State,
        ids: Ids,
        peer: Rank,
        target: Duration,
        reps: usize,
    ) -> Self {
        Bench {
            client,
            state,
            ids,
            peer,
            target,
            reps,
            buf: Vec::new(),
            seed: 0,
            progress: |_| {},
        }
    }

    /// Poll until `n` replies have arrived in total.
    fn wait_pongs(&self, n: u64) -> rgex::Result<()> {
        // Acquire: pairs with the handlers' Release increment.
        while self.state.pongs.load(Ordering::Acquire) < n {
            self.client.endpoint().poll()?;
        }
        Ok(())
    }

    /// Fail if a payload check failed anywhere.
    fn check(&self) -> Res<()> {
        match self.state.bad.load(Ordering::Relaxed) {
            0 => Ok(()),
            n => Err(format!(
                "{n} AM payload check(s) failed: the benchmark measured damaged messages"
            )
            .into()),
        }
    }

    /// Calibrate `run` to the target, then repeat it; ns per iteration.
    fn point(
        &mut self,
        max_iters: u64,
        mut run: impl FnMut(&mut Self, u64) -> Res<Duration>,
    ) -> Res<Point> {
        let target = self.target;
        let iters = calibrate(target, 16, max_iters, |n| run(self, n))?;
        let ns = stats::repeat(self.reps, || {
            run(self, iters).map(|t| t.as_nanos() as f64 / iters as f64)
        })?;
        self.check()?;
        Ok(Point { ns, iters })
    }

    /// `n` Short round trips.
    fn short_run(&mut self, n: u64) -> Res<Duration> {
        let base = self.state.pongs.load(Ordering::Acquire);
        let start = Instant::now();
        for i in 1..=n {
            self.client
                .endpoint()
                .request_short(self.peer, self.ids.ping, &[], Flags::empty())?;
            self.wait_pongs(base + i)?;
        }
        Ok(start.elapsed())
    }

    /// `n` Short requests back to back, then the one reply.
    fn flood_run(&mut self, n: u64) -> Res<Duration> {
        let base = self.state.pongs.load(Ordering::Acquire);
        let args = [u32::try_from(n)?];
        let start = Instant::now();
        for _ in 0..n {
            self.client.endpoint().request_short(
                self.peer,
                self.ids.flood,
                &args,
                Flags::empty(),
            )?;
        }
        self.wait_pongs(base + 1)?;
        Ok(start.elapsed())
    }

    /// `n` Medium round trips of `size` bytes each way, variant `v`.
    fn medium_run(&mut self, v: Variant, size: usize, n: u64) -> Res<Duration> {
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        let base = self.state.pongs.load(Ordering::Acquire);
        let start = Instant::now();
        for i in 1..=n {
            self.seed = self.seed.wrapping_add(1);
            request_medium(
                self.client.endpoint(),
                self.peer,
                self.ids.med_ping,
                v,
                size,
                self.seed,
                &mut self.buf,
            )?;
            self.wait_pongs(base + i)?;
        }
        Ok(start.elapsed())
    }

    /// The AM Short round trip, one point.
    pub fn short_point(&mut self) -> Res<Point> {
        self.point(1 << 32, Self::short_run)
    }

    /// The Medium round trip of `v` at `size`, one point.
    pub fn medium_point(&mut self, v: Variant, size: usize) -> Res<Point> {
        self.point(1 << 32, |b, n| b.medium_run(v, size, n))
    }

    /// Ask the peer to sleep between polls (rank 0 is about to measure
    /// the floor or a peer tool), and wait until it says it does.
    pub fn park_peer(&mut self) -> Res<()> {
        let base = self.state.pongs.load(Ordering::Acquire);
        self.client
            .endpoint()
            .request_short(self.peer, self.ids.park, &[], Flags::empty())?;
        self.wait_pongs(base + 1)?;
        self.check()
    }

    /// Let the parked peer spin on its polls again.
    pub fn unpark_peer(&mut self) -> Res<()> {
        self.client
            .endpoint()
            .request_short(self.peer, self.ids.unpark, &[], Flags::empty())?;
        Ok(())
    }

    /// Medium sizes: 0, then powers of two up to `max`, then `max` itself
    /// if it is not a power of two.
    pub fn medium_sizes(max: usize) -> Vec<usize> {
        let mut v = vec![0];
        let mut s = 1;
        while s <= max {
            v.push(s);
            s *= 2;
        }
        if !max.is_power_of_two() && max > 0 {
            v.push(max);
        }
        v
    }

    /// Run every measurement.
    pub fn run_all(&mut self) -> Res<AmResults> {
        (self.progress)("AM Short round trip");
        let short_rtt = self.point(1 << 32, Self::short_run)?;
        (self.progress)("AM Short flood");
        let flood = self.point(u32::MAX as u64, Self::flood_run)?;
        let max_medium = self
            .client
            .endpoint()
            .max_medium(self.peer, crate::handlers::MEDIUM_NARGS);
        let mut medium = Vec::new();
        for size in Self::medium_sizes(max_medium) {
            (self.progress)(&format!("AM Medium round trip, {size} bytes"));
            medium.push(self.medium_row(size)?);
        }
        Ok(AmResults {
            short_rtt,
            flood,
            medium,
            max_medium,
        })
    }

    /// Every variant at one size: one calibration (on FP) so every
    /// variant runs the same iterations, then [`MEDIUM_SPLIT`] times the
    /// configured repetitions of a third of that, interleaved (FP,
    /// NP-rgex, NP-client, FP-static, FP, ...) so drift on a noisy machine
    /// hits them alike and each repetition gives one paired ratio.
    fn medium_row(&mut self, size: usize) -> Res<MediumRow> {
        let target = self.target;
        let calibrated = calibrate(target, 16, 1 << 32, |n| {
            self.medium_run(Variant::Fp, size, n)
        })?;
        let iters = (calibrated / MEDIUM_SPLIT).max(1);
        // Warm the other variants' paths too.
        for v in &Variant::ALL[1..] {
            self.medium_run(*v, size, (calibrated / 20).max(1))?;
        }
        let reps = self.reps.max(1) * MEDIUM_SPLIT as usize;
        let mut samples: [Vec<f64>; Variant::ALL.len()] = Default::default();
        for _ in 0..reps {
            for (k, v) in Variant::ALL.into_iter().enumerate() {
                let t = self.medium_run(v, size, iters)?;
                samples[k].push(t.as_nanos() as f64 / iters as f64);
            }
        }
        self.check()?;
        let point = |s: &Vec<f64>| Point {
            ns: Stats::from_samples(s).expect("at least one repetition"),
            iters,
        };
        // FP time over NP time, as a percentage gain (an increasing map:
        // median, min and max carry over).
        let paired = |np: &Vec<f64>| {
            let r = stats::paired(&samples[0], np).expect("one time per repetition each");
            let pct = |x: f64| 100.0 * (x - 1.0);
            Stats {
                median: pct(r.median),
                min: pct(r.min),
                max: pct(r.max),
                reps: r.reps,
            }
        };
        Ok(MediumRow {
            size,
            points: std::array::from_fn(|k| point(&samples[k])),
            paired: [paired(&samples[1]), paired(&samples[2])],
        })
    }
}
