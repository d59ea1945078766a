//! scc_epochs: modelled cycles of the scc conduit's one-sided epochs
//! (post / start / complete / wait) against the number of targets (1..47),
//! and of puts and gets by size, compared with a naive protocol that
//! flushes and invalidates the whole cache at every synchronisation.
//!
//! Modelled cycles come from the emulation's counters and cost table: they
//! do not depend on timing or on how busy this machine is, so one run is
//! exact and the 48-core chip runs in this one process, the cores stepped
//! round-robin by the bench (every per-op figure is what that core spent
//! in that call; waits are entered once every origin has completed, so they
//! measure the call, not idle spinning).
//!
//! Scenarios:
//! - **neighbours**: all 48 cores at once; core `i` exposes to `i-1..i-k`
//!   and accesses `i+1..i+k` (mod 48), one 8-byte put per target; figures
//!   are the mean (and max) over cores of the last of three epochs;
//! - **hot spot**: `k` origins complete towards one target at the same
//!   time (its lock contended): the slowest origin's complete;
//! - **put / get by size**: one origin, one posted target: latency until
//!   remote completion, and bandwidth of a stream of puts.
//!
//! ```text
//! cargo run --release -p rgex-benches --bin scc_epochs -- [--quick] [--json PATH]
//! ```

use rgex::{Error, Result};
use rgex_benches::cli::Opts;
use rgex_benches::report::{num, size, Job, Plot, Record, Series, Table};
use rgex_benches::stats::Stats;
use rgex_scc::address_plan::{Plan, PlanOptions};
use rgex_scc::emu::{CheckMode, Chip, Core, CoreConfig, MemType};
use rgex_scc::epoch::{Coherence, Epochs, Step};

const CORES: u32 = 48;
/// Core clock of the reference configuration (MHz), for MB/s.
const MHZ: f64 = 533.0;
const SEGMENT: u64 = 512 << 10;
/// Bound on round-robin rounds of one phase (a hang is an error).
const ROUNDS: usize = 100_000;

struct Sim {
    plan: Plan,
    _chip: Chip,
    cores: Vec<Core>,
    ep: Vec<Epochs>,
}

impl Sim {
    fn new(mode: Coherence) -> Result<Sim> {
        let opts = PlanOptions {
            segment_type: match mode {
                Coherence::Targeted => MemType::Mpbt,
                Coherence::WholeCache => MemType::WriteBack,
            },
            check: false,
            ..PlanOptions::default()
        };
        let plan = Plan::new(CORES, 1, 512, &[SEGMENT; CORES as usize], opts)?;
        let chip = Chip::in_process(plan.layout()?)?;
        let cfg = CoreConfig::default().check(CheckMode::Off);
        let cores = (0..CORES)
            .map(|r| chip.core_with(r, cfg))
            .collect::<Result<Vec<_>>>()?;
        let ep = (0..CORES).map(|r| Epochs::new(r, CORES, mode)).collect();
        Ok(Sim {
            plan,
            _chip: chip,
            cores,
            ep,
        })
    }

    /// Cycles core `i` spends in `f`.
    fn timed<T>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut Epochs, &mut Core, &Plan) -> Result<T>,
    ) -> Result<(T, u64)> {
        let c0 = self.cores[i].cycles();
        let v = f(&mut self.ep[i], &mut self.cores[i], &self.plan)?;
        Ok((v, self.cores[i].cycles() - c0))
    }

    /// Step `complete` on every core of `who` round-robin until all are
    /// done; cycles per core.
    fn complete_all(&mut self, who: &[u32]) -> Result<Vec<u64>> {
        let mut cyc = vec![0u64; who.len()];
        let mut done = vec![false; who.len()];
        for _ in 0..ROUNDS {
            for (j, &r) in who.iter().enumerate() {
                if done[j] {
                    continue;
                }
                let (s, c) = self.timed(r as usize, |e, core, p| e.complete_step(core, p))?;
                cyc[j] += c;
                done[j] = s == Step::Done;
            }
            if done.iter().all(|&d| d) {
                return Ok(cyc);
            }
        }
        Err(Error::Config(
            "complete did not finish: a protocol hang".into(),
        ))
    }

    /// `wait` on every core of `who` (each polls until its epoch closes).
    fn wait_all(&mut self, who: &[u32]) -> Result<Vec<u64>> {
        let mut cyc = vec![0u64; who.len()];
        for (j, &r) in who.iter().enumerate() {
            let mut ok = false;
            for _ in 0..ROUNDS {
                let (t, c) = self.timed(r as usize, |e, core, p| e.test(core, p))?;
                cyc[j] += c;
                if t {
                    ok = true;
                    break;
                }
            }
            if !ok {
                return Err(Error::Config(format!("wait on rank {r} did not finish")));
            }
        }
        Ok(cyc)
    }
}

/// Per-op cycles of one epoch, per core: post, start, access, complete, wait.
type Phases = [Vec<u64>; 5];

fn neighbours(sim: &mut Sim, k: u32) -> Result<Phases> {
    let n = CORES;
    let all: Vec<u32> = (0..n).collect();
    let mut ph: Phases = Default::default();
    for i in 0..n {
        let origins: Vec<u32> = (1..=k).map(|d| (i + n - d) % n).collect();
        let (_, c) = sim.timed(i as usize, |e, core, p| e.post(core, p, &origins))?;
        ph[0].push(c);
    }
    for i in 0..n {
        let targets: Vec<u32> = (1..=k).map(|d| (i + d) % n).collect();
        let (_, c) = sim.timed(i as usize, |e, core, p| e.start(core, p, &targets))?;
        ph[1].push(c);
    }
    for i in 0..n {
        let mut total = 0;
        for d in 1..=k {
            let t = (i + d) % n;
            let v = (i as u64) << 32 | d as u64;
            let (ok, c) = sim.timed(i as usize, |e, core, p| {
                e.put(core, p, t, i as u64 * 8, &v.to_le_bytes())
            })?;
            if !ok {
                return Err(Error::Config(format!("rank {i}: target {t} not posted")));
            }
            total += c;
        }
        ph[2].push(total);
    }
    ph[3] = sim.complete_all(&all)?;
    ph[4] = sim.wait_all(&all)?;
    Ok(ph)
}

/// `k` origins (1..=k) towards target 0: the target's post and wait, and
/// the slowest origin's complete (all completing at once).
fn hot_spot(sim: &mut Sim, k: u32) -> Result<(u64, u64, u64)> {
    let origins: Vec<u32> = (1..=k).collect();
    let (_, post) = sim.timed(0, |e, core, p| e.post(core, p, &origins))?;
    for &o in &origins {
        sim.timed(o as usize, |e, core, p| {
            e.start(core, p, &[0])?;
            e.put(core, p, 0, o as u64 * 8, &[o as u8; 8])
        })?;
    }
    let c = sim.complete_all(&origins)?;
    let w = sim.wait_all(&[0])?;
    Ok((post, c.into_iter().max().unwrap_or(0), w[0]))
}

/// Latency of one put of `len` bytes until remote completion, of one cold
/// get, and the bandwidth (bytes per cycle) of a stream of puts.
fn by_size(sim: &mut Sim, len: usize) -> Result<(u64, u64, f64)> {
    let (o, t) = (0u32, 1u32);
    let data = vec![0xA5u8; len];
    sim.timed(t as usize, |e, core, p| e.post(core, p, &[o]))?;
    sim.timed(o as usize, |e, core, p| {
        e.start(core, p, &[t])?;
        // The first access (it waits for the post and acquires).
        e.put(core, p, t, SEGMENT - 8, &[0; 8])
    })?;
    let whole = sim.ep[o as usize].mode() == Coherence::WholeCache;
    // Remote completion: targeted puts drain; whole-cache puts need the
    // flush that `complete` would do.
    let release = |core: &mut Core| {
        core.drain();
        if whole {
            core.flush();
        }
    };
    let (_, put) = sim.timed(o as usize, |e, core, p| {
        e.put(core, p, t, 0, &data)?;
        release(core);
        Ok(())
    })?;
    let (_, get) = sim.timed(o as usize, |e, core, p| {
        if whole {
            core.flush();
        } else {
            core.invalidate_mpbt();
        }
        let mut out = vec![0u8; len];
        e.get(core, p, t, 0, &mut out)
    })?;
    let count = ((256 << 10) / len).clamp(1, 4096);
    let span = (SEGMENT - 64) as usize;
    let (_, stream) = sim.timed(o as usize, |e, core, p| {
        for i in 0..count {
            e.put(core, p, t, ((i * len) % (span - len + 1)) as u64, &data)?;
        }
        release(core);
        Ok(())
    })?;
    sim.complete_all(&[o])?;
    sim.wait_all(&[t])?;
    Ok((put, get, (count * len) as f64 / stream as f64))
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
}

/// A least-squares line `y = a + b x` through the points, and how well it
/// fits.
struct Fit {
    a: f64,
    b: f64,
    /// Coefficient of determination.
    r2: f64,
    /// Largest |y - fit|, as a fraction of the largest y.
    resid: f64,
    /// Smallest and largest y / x (cost per target at each point).
    per: (f64, f64),
}

fn fit(xs: &[f64], ys: &[f64]) -> Fit {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let syy: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let a = my - b * mx;
    let top = ys.iter().fold(0.0f64, |m, y| m.max(y.abs())).max(1.0);
    let resid = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - (a + b * x)).abs() / top)
        .fold(0.0, f64::max);
    let sse: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - (a + b * x)).powi(2))
        .sum();
    let r2 = if syy > 0.0 { 1.0 - sse / syy } else { 1.0 };
    let per = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| y / x)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    Fit {
        a,
        b,
        r2,
        resid,
        per,
    }
}

fn stat(v: f64) -> Stats {
    Stats::from_samples(&[v]).expect("a number")
}

fn main() {
    let opts = match Opts::parse("scc_epochs", std::env::args().skip(1), |_, _| Ok(false)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!(
                "usage: scc_epochs [--quick] [--json PATH]  (modelled cycles: --reps is ignored)"
            );
            return;
        }
        Err(e) => {
            eprintln!("scc_epochs: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&opts) {
        eprintln!("scc_epochs: {e}");
        std::process::exit(1);
    }
}

const OPS: [&str; 5] = ["post", "start", "access", "complete", "wait"];

fn run(opts: &Opts) -> Result<()> {
    let ks: Vec<u32> = if opts.quick {
        vec![1, 2, 4, 8, 16, 32, 47]
    } else {
        (1..CORES).collect()
    };
    let job = Job {
        bench: "scc_epochs".into(),
        conduit: "scc".into(),
        provider: Some("emulated SCC, modelled cycles".into()),
        ranks: CORES,
        oversubscribed: false,
    };
    let mut records: Vec<Record> = Vec::new();
    println!("scc_epochs: modelled core cycles on an emulated 48-core SCC (deterministic)");
    println!("floor: one MPB access 18 cycles + 5 per mesh hop; DRAM 101 + 5 per hop to its controller; whole-cache flush walks 8704 line slots\n");

    // ----- neighbours: every op vs k, both protocols -----
    let mut t = Table::new([
        "targets",
        "post",
        "start",
        "access",
        "complete",
        "wait",
        "sync",
        "max sync",
        "whole-cache sync",
        "ratio",
    ]);
    let mut sync_t = Vec::new();
    let mut per_op: Vec<Vec<f64>> = vec![Vec::new(); 5];
    let mut naive_sync = Vec::new();
    let mut min_ratio = f64::INFINITY;
    for &k in &ks {
        let mut res = Vec::new();
        for mode in [Coherence::Targeted, Coherence::WholeCache] {
            let mut sim = Sim::new(mode)?;
            let mut last = None;
            for _ in 0..3 {
                last = Some(neighbours(&mut sim, k)?);
            }
            res.push(last.expect("three epochs"));
        }
        let (tg, wc) = (&res[0], &res[1]);
        let m: Vec<f64> = tg.iter().map(|v| mean(v)).collect();
        let mw: Vec<f64> = wc.iter().map(|v| mean(v)).collect();
        // Synchronisation: post + start + complete + wait (not the puts).
        let sync = m[0] + m[1] + m[3] + m[4];
        let sync_w = mw[0] + mw[1] + mw[3] + mw[4];
        let max_sync = (0..CORES as usize)
            .map(|i| tg[0][i] + tg[1][i] + tg[3][i] + tg[4][i])
            .max()
            .unwrap_or(0);
        let ratio = sync_w / sync;
        min_ratio = min_ratio.min(ratio);
        t.row([
            k.to_string(),
            num(m[0]),
            num(m[1]),
            num(m[2]),
            num(m[3]),
            num(m[4]),
            num(sync),
            max_sync.to_string(),
            num(sync_w),
            format!("{ratio:.1}x"),
        ]);
        for (i, op) in OPS.iter().enumerate() {
            per_op[i].push(m[i]);
            let v = |s: &Vec<u64>| {
                Stats::from_samples(&s.iter().map(|&x| x as f64).collect::<Vec<_>>())
                    .expect("48 samples")
            };
            records.push(job.record(
                &format!("{op} (neighbours, targeted; median/min/max over cores)"),
                Some(k as u64),
                &v(&tg[i]),
                "cycles",
                1,
            ));
            records.push(job.record(
                &format!("{op} (neighbours, whole-cache; median/min/max over cores)"),
                Some(k as u64),
                &v(&wc[i]),
                "cycles",
                1,
            ));
        }
        records.push(
            job.record(
                "sync = post+start+complete+wait (neighbours, targeted, mean over cores)",
                Some(k as u64),
                &stat(sync),
                "cycles",
                1,
            )
            .with_floor("whole-cache protocol", sync_w, Some(1.0 / 3.0)),
        );
        sync_t.push(sync);
        naive_sync.push(sync_w);
    }
    println!("neighbours: all 48 cores, core i exposes to i-1..i-k and accesses i+1..i+k; mean cycles per core (last of 3 epochs)");
    println!("{t}");

    // Linear fits.
    let xs: Vec<f64> = ks.iter().map(|&k| k as f64).collect();
    let mut ft = Table::new([
        "op",
        "cycles at k=0",
        "cycles per added target",
        "R^2",
        "max residual",
        "cycles/target range",
    ]);
    let mut fits = Vec::new();
    let mut row = |name: &str, ys: &[f64], keep: bool| {
        let f = fit(&xs, ys);
        ft.row([
            name.to_string(),
            num(f.a),
            num(f.b),
            format!("{:.4}", f.r2),
            format!("{:.1}%", f.resid * 100.0),
            format!("{}..{}", num(f.per.0), num(f.per.1)),
        ]);
        if keep {
            fits.push((name.to_string(), f));
        }
    };
    for (i, op) in OPS.iter().enumerate() {
        row(op, &per_op[i], i != 1 && i != 4);
    }
    row("sync", &sync_t, true);
    row("whole-cache sync", &naive_sync, false);
    println!(
        "linear fit over k = {}..{} (R^2 and the largest residual as a share of the largest value; start and wait do not depend on k):",
        ks[0],
        ks[ks.len() - 1]
    );
    println!("{ft}");
    for (op, f) in &fits {
        records.push(job.record(
            &format!(
                "linear fit of {op}: cycles per added target (R^2 {:.4}, max residual {:.1}% of the largest, intercept {:.0})",
                f.r2,
                f.resid * 100.0,
                f.a
            ),
            None,
            &stat(f.b),
            "cycles/target",
            1,
        ));
    }

    // ----- hot spot -----
    let mut ht = Table::new(["origins", "target post", "slowest complete", "target wait"]);
    let mut hot = Vec::new();
    for &k in &ks {
        let mut sim = Sim::new(Coherence::Targeted)?;
        hot_spot(&mut sim, k)?;
        let (p, c, w) = hot_spot(&mut sim, k)?;
        ht.row([k.to_string(), p.to_string(), c.to_string(), w.to_string()]);
        hot.push(c as f64);
        records.push(job.record(
            "hot spot: slowest origin's complete, all origins at once towards one target",
            Some(k as u64),
            &stat(c as f64),
            "cycles",
            1,
        ));
    }
    let hf = fit(&xs, &hot);
    println!("hot spot: k origins complete towards one target at once (its lock contended)");
    println!("{ht}");
    println!(
        "hot spot fit: {} + {} cycles per added origin, R^2 {:.4}, max residual {:.1}%\n",
        num(hf.a),
        num(hf.b),
        hf.r2,
        hf.resid * 100.0
    );

    // ----- put / get by size -----
    let sizes: Vec<usize> = vec![8, 64, 256, 1024, 4096, 16384, 65536];
    let mut st = Table::new([
        "size",
        "put",
        "whole-cache put",
        "get",
        "whole-cache get",
        "put MB/s",
        "whole-cache MB/s",
    ]);
    let mut plot_bw = Plot::new(
        "scc put bandwidth (modelled, 533 MHz)",
        "size (bytes)",
        "MB/s",
        sizes.iter().map(|&s| size(s as u64)).collect(),
    );
    let (mut s_t, mut s_w) = (Vec::new(), Vec::new());
    for (i, &len) in sizes.iter().enumerate() {
        let (p, g, bw) = by_size(&mut Sim::new(Coherence::Targeted)?, len)?;
        let (pw, gw, bww) = by_size(&mut Sim::new(Coherence::WholeCache)?, len)?;
        let (mb, mbw) = (bw * MHZ, bww * MHZ);
        st.row([
            size(len as u64),
            p.to_string(),
            pw.to_string(),
            g.to_string(),
            gw.to_string(),
            num(mb),
            num(mbw),
        ]);
        s_t.push((i, mb, mb, mb));
        s_w.push((i, mbw, mbw, mbw));
        let l = len as u64;
        records.push(
            job.record(
                "put latency to remote completion (targeted)",
                Some(l),
                &stat(p as f64),
                "cycles",
                1,
            )
            .with_floor("whole-cache protocol", pw as f64, None),
        );
        records.push(job.record(
            "put latency to remote completion (whole-cache)",
            Some(l),
            &stat(pw as f64),
            "cycles",
            1,
        ));
        records.push(job.record(
            "get latency, cold (targeted)",
            Some(l),
            &stat(g as f64),
            "cycles",
            1,
        ));
        records.push(job.record(
            "get latency, cold (whole-cache)",
            Some(l),
            &stat(gw as f64),
            "cycles",
            1,
        ));
        records.push(job.record("put bandwidth (targeted)", Some(l), &stat(mb), "MB/s", 1));
        records.push(job.record(
            "put bandwidth (whole-cache)",
            Some(l),
            &stat(mbw),
            "MB/s",
            1,
        ));
    }
    println!("put / get by size (one origin, one posted target): cycles to remote completion; bandwidth of a put stream at 533 MHz");
    println!("{st}");
    plot_bw.series.push(Series {
        name: "targeted".into(),
        points: s_t,
    });
    plot_bw.series.push(Series {
        name: "whole-cache".into(),
        points: s_w,
    });

    let mut plot = Plot::new(
        "scc epoch synchronisation (modelled)",
        "targets",
        "cycles",
        ks.iter().map(|k| k.to_string()).collect(),
    );
    let series = |name: &str, v: &[f64]| Series {
        name: name.into(),
        points: v.iter().enumerate().map(|(i, &y)| (i, y, y, y)).collect(),
    };
    plot.series.push(series("post", &per_op[0]));
    plot.series.push(series("complete", &per_op[3]));
    plot.series.push(series("sync (targeted)", &sync_t));
    plot.series.push(series("sync (whole-cache)", &naive_sync));
    plot.series.push(series("hot-spot complete", &hot));

    let linear = fits.iter().all(|(_, f)| f.r2 >= 0.99);
    // Contention: the slowest origin waits for the others, one failed lock
    // attempt per round; a blow-up would show as a cost per origin that
    // keeps growing with the number of origins.
    let per_origin = |lo: f64, hi: f64| {
        xs.iter()
            .zip(&hot)
            .filter(|(x, _)| **x >= lo && **x <= hi)
            .map(|(x, y)| y / x)
            .fold(0.0f64, f64::max)
    };
    let half = xs[xs.len() - 1] / 2.0;
    let (low_half, high_half) = (per_origin(0.0, half), per_origin(half, f64::INFINITY));
    let last = hot[hot.len() - 1] / xs[xs.len() - 1];
    let no_blowup = high_half <= 1.5 * low_half;
    println!(
        "targets: >= 3x fewer cycles than the whole-cache protocol: {} (lowest ratio {min_ratio:.1}x); \
         synchronisation linear in the targets (R^2 >= 0.99): {}; \
         no blow-up under contention (hot spot: {}..{} cycles per origin, {} at {} origins; \
         most per origin above half the origins {} vs {} below): {}",
        if min_ratio >= 3.0 { "met" } else { "NOT met" },
        if linear { "met" } else { "NOT met" },
        num(hf.per.0),
        num(hf.per.1),
        num(last),
        ks[ks.len() - 1],
        num(high_half),
        num(low_half),
        if no_blowup { "met" } else { "NOT met" },
    );
    opts.write(&records, &[("", plot), ("-bandwidth", plot_bw)])
        .map_err(Error::Config)?;
    Ok(())
}
