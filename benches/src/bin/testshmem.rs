//! testshmem: rgex-shmem beside Open MPI's OpenSHMEM (issue 41), 2 PEs
//! bound to two CPUs, the same C program (`shmem/bench/shmem_bench.c`)
//! built twice.
//!
//! Run: `target/release/testshmem [--quick] [--rounds R] [--reps N]
//! [--json PATH]` (not under `rgex-run`: it starts the jobs itself).
//! `ci/bench.sh` builds the program with rgex's `shmem/bin/oshcc` into
//! `shmem_bench_rgex` and with Open MPI's `oshcc` into
//! `shmem_bench_ompi`, next to this one (or name them with
//! `RGEX_SHMEM_BENCH` and `OMPI_SHMEM_BENCH`).
//!
//! Two transports, each its own JSON file and plot:
//!
//! | file | rgex | Open MPI (`--mca spml ucx`) |
//! |---|---|---|
//! | PATH | smp conduit | `UCX_TLS=posix,self` |
//! | PATH with `-tcp` | ofi conduit, `tcp;ofi_rxm`, `RGEX_SHM_BYPASS=0`, `FI_TCP_IFACE=lo` | `UCX_TLS=tcp,self`, `UCX_NET_DEVICES=lo` |
//!
//! In each round (3 by default, 1 with `--quick`) and per transport, an
//! rgex job and an Open MPI job run back to back, then the cache-line
//! round trip between CPUs 0 and 1 (`rgex_benches::floor`) is measured:
//! the floor of every latency, in the same run. A row's figure is its
//! best round (lowest time, highest bandwidth or rate; each round's
//! figure is the program's median over `--reps` repetitions), the range
//! over the rounds beside it. A record's `median` holds that best round.
//!
//! Open MPI 4.1 with UCX 1.13 dies of SIGSEGV in `shmem_finalize` here;
//! the program prints and flushes every row, then `shmem_bench done`,
//! before finalizing, so a job that printed that line and then failed is
//! counted as measured and the defect is reported as the peer's.

use rgex_benches::affinity::online_cpus;
use rgex_benches::cli::{positive, Opts};
use rgex_benches::floor::cache_line_rtt;
use rgex_benches::proc::{child_setup, find_exe, last_line, Running};
use rgex_benches::report::{Job, Plot, Record, Series};
use rgex_benches::stats::Stats;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const USAGE: &str = "usage: testshmem [--quick] [--rounds R] [--reps N] [--json PATH]";

/// The rows, in the order the program prints them: name, size, unit,
/// and what the page calls it.
const ROWS: [(&str, u64, &str, &str); 15] = [
    ("put_lat", 8, "ns", "put latency (putmem + quiet)"),
    ("get_lat", 8, "ns", "get latency (getmem)"),
    ("put_bw", 4096, "MB/s", "put bandwidth (putmem_nbi)"),
    ("put_bw", 65536, "MB/s", "put bandwidth (putmem_nbi)"),
    ("put_bw", 1 << 20, "MB/s", "put bandwidth (putmem_nbi)"),
    ("get_bw", 4096, "MB/s", "get bandwidth (getmem_nbi)"),
    ("get_bw", 65536, "MB/s", "get bandwidth (getmem_nbi)"),
    ("get_bw", 1 << 20, "MB/s", "get bandwidth (getmem_nbi)"),
    ("put_nbi_rate", 8, "Mmsg/s", "put_nbi message rate"),
    ("fadd_lat", 8, "ns", "fetch-add latency"),
    ("cswap_lat", 8, "ns", "compare-swap latency"),
    ("barrier_all", 0, "ns", "barrier_all"),
    ("broadcast", 8, "ns", "broadcast64"),
    ("fcollect", 8, "ns", "fcollect64"),
    ("alltoall", 1024, "ns", "alltoall64 (per pair)"),
];

/// One transport: the file suffix, rgex's conduit, provider and
/// environment, Open MPI's label and UCX environment.
struct Transport {
    suffix: &'static str,
    conduit: &'static str,
    provider: Option<&'static str>,
    rgex_env: &'static [(&'static str, &'static str)],
    ompi: &'static str,
    ompi_env: &'static [(&'static str, &'static str)],
}

const TRANSPORTS: [Transport; 2] = [
    Transport {
        suffix: "",
        conduit: "smp",
        provider: None,
        rgex_env: &[("RGEX_CONDUIT", "smp")],
        ompi: "openmpi-oshmem (ucx posix)",
        ompi_env: &[("UCX_TLS", "posix,self")],
    },
    Transport {
        suffix: "-tcp",
        conduit: "ofi",
        provider: Some("tcp;ofi_rxm"),
        rgex_env: &[
            ("RGEX_CONDUIT", "ofi"),
            ("RGEX_OFI_PROVIDER", "tcp;ofi_rxm"),
            ("RGEX_SHM_BYPASS", "0"),
            ("FI_TCP_IFACE", "lo"),
        ],
        ompi: "openmpi-oshmem (ucx tcp)",
        ompi_env: &[("UCX_TLS", "tcp,self"), ("UCX_NET_DEVICES", "lo")],
    },
];

/// (name, size) -> this job's figure.
type Figures = BTreeMap<(String, u64), f64>;

/// The `shmem_bench NAME SIZE VALUE UNIT` lines of `stdout` (rgex-run
/// prefixes rank 0's with `[0] `), and whether `shmem_bench done` came.
fn parse(stdout: &str) -> (Figures, bool) {
    let mut out = Figures::new();
    let mut done = false;
    for l in stdout.lines() {
        let l = l.strip_prefix("[0] ").unwrap_or(l).trim();
        let w: Vec<&str> = l.split_whitespace().collect();
        match w[..] {
            ["shmem_bench", "done"] => done = true,
            ["shmem_bench", name, size, value, _unit] => {
                if let (Ok(size), Ok(value)) = (size.parse(), value.parse::<f64>()) {
                    out.insert((name.to_owned(), size), value);
                }
            }
            _ => {}
        }
    }
    (out, done)
}

/// Run one job (at most 10 minutes). A job that printed every row and
/// `done`, then failed, is measured; its failure is returned beside the
/// figures as a peer defect.
fn job(name: &str, mut cmd: Command) -> Result<(Figures, Option<String>), String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cpus: Vec<usize> = (0..online_cpus()).collect();
    child_setup(&mut cmd, &cpus).map_err(|e| format!("prepare {name}: {e}"))?;
    let done = Running::spawn(name, cmd)
        .map_err(|e| format!("start {name}: {e}"))?
        .finish(Duration::from_secs(600))?;
    let (figs, finished) = parse(&done.stdout);
    let complete = finished
        && ROWS
            .iter()
            .all(|(n, s, ..)| figs.contains_key(&(n.to_string(), *s)));
    let why = || {
        format!(
            "{name} {}: {}",
            done.status,
            last_line(&done.stderr, &done.stdout)
        )
    };
    match (done.status.success(), complete) {
        (true, true) => Ok((figs, None)),
        (false, true) => Ok((figs, Some(why()))),
        _ => Err(why()),
    }
}

/// A program next to this one, else `None`.
fn sibling(name: &str) -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.exists())
}

fn program(var: &str, name: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| sibling(name))
}

/// Higher is better for this unit.
fn rising(unit: &str) -> bool {
    unit.ends_with("/s")
}

/// Each row's figures over the rounds, per side.
#[derive(Default)]
struct Rounds(BTreeMap<(String, u64), Vec<f64>>);

impl Rounds {
    fn add(&mut self, figs: &Figures) {
        for (k, v) in figs {
            self.0.entry(k.clone()).or_default().push(*v);
        }
    }

    /// (best, min, max) of a row.
    fn best(&self, name: &str, size: u64, unit: &str) -> Option<(f64, f64, f64)> {
        let v = self.0.get(&(name.to_owned(), size))?;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((if rising(unit) { max } else { min }, min, max))
    }

    fn rounds(&self) -> usize {
        self.0.values().map(Vec::len).max().unwrap_or(0)
    }
}

fn record(
    job: &Job,
    label: &str,
    size: u64,
    unit: &str,
    (best, min, max): (f64, f64, f64),
    rounds: usize,
) -> Record {
    let s = Stats::from_samples(&[best]).expect("one finite figure");
    let mut r = job.record(label, Some(size), &s, unit, 0);
    r.min = min;
    r.max = max;
    r.repetitions = rounds;
    r
}

fn fmt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.1}"))
}

/// The table, the records and the bandwidth plot of one transport.
fn report(t: &Transport, rgex: &Rounds, ompi: &Rounds, floor: Option<f64>) -> (Vec<Record>, Plot) {
    let rgex_job = Job {
        bench: "testshmem".into(),
        conduit: t.conduit.into(),
        provider: t.provider.map(str::to_owned),
        ranks: 2,
        oversubscribed: false,
    };
    let ompi_job = Job {
        bench: "testshmem".into(),
        conduit: t.ompi.into(),
        provider: None,
        ranks: 2,
        oversubscribed: false,
    };
    let mut recs = Vec::new();
    let mut peer = Vec::new();
    println!(
        "\ntestshmem: rgex-shmem over {}{} beside {}, 2 PEs, best of {} round(s)",
        t.conduit,
        t.provider.map_or_else(String::new, |p| format!(" ({p})")),
        t.ompi,
        rgex.rounds().max(ompi.rounds())
    );
    println!("| row | size | unit | rgex | Open MPI | rgex / MPI | floor (cache line) | verdict |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, size, unit, label) in ROWS {
        let r = rgex.best(name, size, unit);
        let m = ompi.best(name, size, unit);
        let latency = unit == "ns";
        let fl = floor.filter(|_| latency);
        let (ratio, verdict) = match (r, m) {
            (Some((r, ..)), Some((m, ..))) if m > 0.0 => {
                let wins = if rising(unit) { r >= m } else { r <= m };
                (
                    format!("{:.2}", r / m),
                    if wins { "rgex wins" } else { "rgex loses" },
                )
            }
            _ => ("-".to_owned(), "-"),
        };
        println!(
            "| {name} | {size} | {unit} | {} | {} | {ratio} | {} | {verdict} |",
            fmt(r.map(|x| x.0)),
            fmt(m.map(|x| x.0)),
            fmt(fl)
        );
        if let Some(r) = r {
            let mut rec = record(&rgex_job, label, size, unit, r, rgex.rounds());
            if let Some(f) = fl {
                rec = rec.with_floor("cache-line round trip", f, None);
            }
            recs.push(rec);
        }
        if let Some(m) = m {
            // The page keys its columns by variant: the peer's are its own.
            let variant = format!("openmpi {label}");
            peer.push(record(&ompi_job, &variant, size, unit, m, ompi.rounds()));
        }
    }
    if let Some(f) = floor {
        let s = Stats::from_samples(&[f]).expect("a finite floor");
        recs.push(rgex_job.record("floor: cache-line round trip", Some(8), &s, "ns", 0));
    }
    recs.extend(peer);
    let sizes = [4096u64, 65536, 1 << 20];
    let mut plot = Plot::new(
        &format!(
            "testshmem: bandwidth, rgex over {} beside {}",
            t.conduit, t.ompi
        ),
        "size (bytes)",
        "MB/s",
        sizes.iter().map(|s| s.to_string()).collect(),
    );
    for (who, rounds) in [("rgex", rgex), ("Open MPI", ompi)] {
        for (name, what) in [("put_bw", "put"), ("get_bw", "get")] {
            let points = sizes
                .iter()
                .enumerate()
                .filter_map(|(i, &s)| {
                    rounds
                        .best(name, s, "MB/s")
                        .map(|(b, lo, hi)| (i, b, lo, hi))
                })
                .collect();
            plot.series.push(Series {
                name: format!("{who} {what}"),
                points,
            });
        }
    }
    (recs, plot)
}

fn run() -> Result<(), String> {
    let mut rounds: Option<usize> = None;
    let opts = Opts::parse("testshmem", std::env::args().skip(1), |a, rest| {
        if a == "--rounds" {
            rounds = Some(positive("--rounds", rest.next())? as usize);
            Ok(true)
        } else {
            Ok(false)
        }
    })?;
    let Some(opts) = opts else {
        println!("{USAGE}");
        return Ok(());
    };
    let rounds = rounds.unwrap_or(if opts.quick { 1 } else { 3 });
    let run = sibling("rgex-run")
        .ok_or("rgex-run is built next to testshmem (cargo build --release -p rgex)")?;
    let rgex_bench = program("RGEX_SHMEM_BENCH", "shmem_bench_rgex").ok_or(
        "shmem_bench_rgex is not next to testshmem: ci/bench.sh builds it with shmem/bin/oshcc",
    )?;
    let ompi_bench = program("OMPI_SHMEM_BENCH", "shmem_bench_ompi");
    // Open MPI's launcher: OMPI_OSHRUN, else oshrun on PATH (rgex's own,
    // shmem/bin/oshrun, is not on it).
    let oshrun = std::env::var_os("OMPI_OSHRUN")
        .map(PathBuf::from)
        .or_else(|| find_exe("oshrun"));
    if ompi_bench.is_none() || oshrun.is_none() {
        println!("Open MPI: no shmem_bench_ompi or oshrun (ci/bench.sh builds it with Open MPI's oshcc): rgex alone");
    }
    let mut bench_args: Vec<String> = Vec::new();
    if opts.quick {
        bench_args.push("--quick".into());
    } else {
        bench_args.extend(["--reps".to_owned(), opts.reps.to_string()]);
    }
    let cpus = online_cpus();
    let n = TRANSPORTS.len();
    let mut rgex: Vec<Rounds> = (0..n).map(|_| Rounds::default()).collect();
    let mut ompi: Vec<Rounds> = (0..n).map(|_| Rounds::default()).collect();
    let mut floor: Option<f64> = None;
    let mut defects: Vec<String> = Vec::new();
    let mut rgex_failed = Vec::new();
    for round in 0..rounds {
        for (i, t) in TRANSPORTS.iter().enumerate() {
            let mut c = Command::new(&run);
            c.args(["-n", "2", "--timeout", "600"]);
            if cpus >= 2 {
                c.arg("--bind");
            }
            c.arg(&rgex_bench)
                .args(&bench_args)
                .envs(t.rgex_env.iter().copied());
            match job("rgex-run", c) {
                Ok((f, None)) => rgex[i].add(&f),
                Ok((f, Some(e))) => {
                    rgex[i].add(&f);
                    rgex_failed.push(format!("rgex over {}: {e}", t.conduit));
                }
                // A build without the ofi conduit skips its transport.
                Err(e) if e.contains("this build offers") => {
                    println!("rgex over {}: skipped ({e})", t.conduit)
                }
                Err(e) => rgex_failed.push(format!("rgex over {}: {e}", t.conduit)),
            }
            if let (Some(b), Some(o)) = (&ompi_bench, &oshrun) {
                let mut c = Command::new(o);
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    c.arg("--allow-run-as-root")
                        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                }
                c.args(["-np", "2"]);
                if cpus >= 2 {
                    c.args(["--bind-to", "core", "--map-by", "core"]);
                }
                c.args(["--mca", "spml", "ucx", "--mca", "oob_tcp_if_include", "lo"]);
                for (k, v) in t.ompi_env {
                    c.args(["-x", &format!("{k}={v}")]);
                }
                c.arg(b).args(&bench_args);
                match job("oshrun", c) {
                    Ok((f, defect)) => {
                        ompi[i].add(&f);
                        if let Some(d) = defect {
                            defects.push(format!("{} (round {}): {d}", t.ompi, round + 1));
                        }
                    }
                    Err(e) => println!("{}: {e}", t.ompi),
                }
            }
        }
        if cpus >= 2 {
            let target = opts.target(Duration::from_millis(20), Duration::from_millis(200));
            match cache_line_rtt([0, 1], target, opts.reps) {
                Ok((s, _)) => floor = Some(floor.map_or(s.median, |f: f64| f.min(s.median))),
                Err(e) => println!("floor: {e}"),
            }
        }
        eprintln!("testshmem: round {} of {rounds} done", round + 1);
    }
    for d in &defects {
        println!("known peer defect, measured before it (every row and 'done' printed): {d}");
    }
    for (i, t) in TRANSPORTS.iter().enumerate() {
        let (recs, plot) = report(t, &rgex[i], &ompi[i], floor);
        let stem = opts
            .json
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let o = Opts {
            json: opts.json.with_file_name(format!("{stem}{}.json", t.suffix)),
            ..opts.clone()
        };
        o.write(&recs, &[("", plot)])?;
    }
    if !rgex_failed.is_empty() {
        return Err(rgex_failed.join("; "));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testshmem: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
