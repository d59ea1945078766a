//! testcoll: rgex's collectives beside Open MPI's (issue 40), on 2, 4 and
//! 8 ranks of one node.
//!
//! Run: `target/release/testcoll [--rounds R] [--iters N] [--reps N]`
//! (not under `rgex-run`: it starts the jobs itself; `ci/bench.sh` builds
//! the MPI peer, `benches/peers/mpi_coll.c`, next to it).
//!
//! Per round and per job size, one rgex job (`rgex-run -n N`, bound to
//! CPUs where the ranks fit) and one Open MPI job (`mpirun -np N`, ob1
//! over shared memory) run the same tests back to back, so the two are
//! measured minutes apart at most (this VM's placement drifts). Each test
//! is ITERS calls back to back per repetition (a tenth at 64 KiB), after
//! one repetition of warm-up; a repetition's figure is the slowest rank's
//! time per call; a round's figure is the median over its repetitions,
//! and the table shows each row's best round:
//!
//! | row | rgex | Open MPI |
//! |---|---|---|
//! | barrier | `barrier_nb().wait()` | `MPI_Ibarrier` + `MPI_Wait` |
//! | barrier (blocking) | `barrier()` | compared with the `MPI_Ibarrier` row |
//! | broadcast 8 B, 64 KiB | `broadcast` from 0 | `MPI_Bcast` from 0 |
//! | allreduce 8 B, 64 KiB | `allreduce` of `u64` sums | `MPI_Allreduce(MPI_SUM)` |
//! | alltoall 1 KiB per pair | `alltoall` of bytes | `MPI_Alltoall` |
//!
//! Jobs with more ranks than CPUs are marked oversubscribed.
//! With `--worker` it is one rank of the rgex job and prints, on rank 0,
//! `rgex TEST SIZE NS_PER_CALL ns ITERS` per repetition (the MPI peer
//! prints the same with `mpi`).

use rgex::{Client, ReduceOp};
use rgex_benches::affinity::online_cpus;
use rgex_benches::proc::{child_setup, find_exe, last_line, Running};
use rgex_benches::report::{write_json, CollRecord};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tests: name and size in bytes, in the order both programs run
/// them.
const TESTS: [(&str, u64); 7] = [
    ("barrier", 0),
    ("barrier-blocking", 0),
    ("bcast", 8),
    ("bcast", 65536),
    ("allreduce", 8),
    ("allreduce", 65536),
    ("alltoall", 1024),
];

const JOB_SIZES: [u32; 3] = [2, 4, 8];

struct Opts {
    worker: bool,
    /// Where to write the table as JSON.
    json: Option<PathBuf>,
    rounds: usize,
    iters: u64,
    reps: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        worker: false,
        json: None,
        rounds: 3,
        iters: 2000,
        reps: 5,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| -> u64 {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("testcoll: {} wants a number", args[i]))
        };
        match args[i].as_str() {
            "--worker" => o.worker = true,
            "--rounds" => {
                o.rounds = val(i) as usize;
                i += 1;
            }
            "--iters" => {
                o.iters = val(i).max(10);
                i += 1;
            }
            "--reps" => {
                o.reps = val(i).max(1) as usize;
                i += 1;
            }
            "--json" => {
                let p = args.get(i + 1).expect("testcoll: --json wants a path");
                o.json = Some(PathBuf::from(p));
                i += 1;
            }
            "--quick" => {
                o.rounds = 1;
                o.iters = 200;
                o.reps = 2;
            }
            other => panic!("testcoll: unknown argument {other:?}"),
        }
        i += 1;
    }
    o
}

/// One rank of the rgex job.
fn worker(o: &Opts) -> rgex::Result<()> {
    let client: Client = rgex::init()?;
    let t = client.world().clone();
    let n = t.size() as usize;
    let small = vec![1u64];
    let big: Vec<u64> = (0..8192).map(|i| i + u64::from(t.my_rank())).collect();
    let b8 = vec![7u8; 8];
    let b64k = vec![7u8; 65536];
    let a2a = vec![3u8; 1024 * n];
    // One test alone (for a profile): `TESTCOLL_ONLY=NAME`.
    let only = std::env::var("TESTCOLL_ONLY").ok();
    for (name, size) in TESTS {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let iters = if size == 65536 { o.iters / 10 } else { o.iters };
        let one = |t: &rgex::team::Team| -> rgex::Result<()> {
            match (name, size) {
                ("barrier", _) => t.barrier_nb()?.wait(),
                ("barrier-blocking", _) => t.barrier(),
                ("bcast", 8) => t.broadcast(0, &b8).map(drop),
                ("bcast", _) => t.broadcast(0, &b64k).map(drop),
                ("allreduce", 8) => t.allreduce(&small, ReduceOp::Sum).map(drop),
                ("allreduce", _) => t.allreduce(&big, ReduceOp::Sum).map(drop),
                ("reduce0", _) => t.reduce(0, &big, ReduceOp::Sum).map(drop),
                ("reduce1", _) => t.reduce(1, &big, ReduceOp::Sum).map(drop),
                ("bcast1", _) => t.broadcast(1, &b64k[..big.len() * 8]).map(drop),
                ("bcast0", _) => t.broadcast(0, &b64k[..big.len() * 8]).map(drop),
                _ => t.alltoall(&a2a).map(drop),
            }
        };
        for rep in 0..=o.reps {
            t.barrier()?;
            let start = Instant::now();
            for _ in 0..iters {
                one(&t)?;
            }
            let mine = start.elapsed().as_nanos() as f64 / iters as f64;
            let worst = t.allreduce(&[mine], ReduceOp::Max)?[0];
            if rep > 0 && t.my_rank() == 0 {
                println!("rgex {name} {size} {worst:.1} ns {iters}");
            }
        }
    }
    client.finalize()
}

/// A program next to this one (where cargo and `ci/bench.sh` put them),
/// else on `PATH`.
fn sibling(name: &str) -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.exists())
        .or_else(|| find_exe(name))
}

/// Run `cmd` (at most 10 minutes); its `PREFIX TEST SIZE VALUE ...`
/// lines as (test, size) -> values.
fn figures(
    name: &str,
    mut cmd: Command,
    cpus: usize,
) -> Result<BTreeMap<(String, u64), Vec<f64>>, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let all: Vec<usize> = (0..cpus).collect();
    child_setup(&mut cmd, &all).map_err(|e| format!("prepare {name}: {e}"))?;
    let done = Running::spawn(name, cmd)
        .map_err(|e| format!("start {name}: {e}"))?
        .finish(Duration::from_secs(600))?;
    if !done.status.success() {
        return Err(format!(
            "{name} {}: {}",
            done.status,
            last_line(&done.stderr, &done.stdout)
        ));
    }
    let mut out: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for l in done.stdout.lines() {
        // rgex-run prefixes each line with its rank ("[0] ").
        let l = l.strip_prefix("[0] ").unwrap_or(l);
        let w: Vec<&str> = l.split_whitespace().collect();
        if let [_, test, size, value, "ns", _] = w[..] {
            if let (Ok(size), Ok(value)) = (size.parse(), value.parse()) {
                out.entry((test.to_owned(), size)).or_default().push(value);
            }
        }
    }
    Ok(out)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let o = opts();
    if o.worker {
        if let Err(e) = worker(&o) {
            eprintln!("testcoll: {e}");
            std::process::exit(1);
        }
        return;
    }
    let cpus = online_cpus();
    let run = sibling("rgex-run")
        .expect("rgex-run is built next to testcoll (cargo build --release -p rgex)");
    let me = std::env::current_exe().expect("this program's path");
    let peer = std::env::var_os("RGEX_MPI_COLL")
        .map(PathBuf::from)
        .or_else(|| sibling("mpi_coll"));
    let mpirun = find_exe("mpirun");
    if peer.is_none() || mpirun.is_none() {
        println!(
            "Open MPI: no mpi_coll or mpirun (ci/bench.sh builds mpi_coll with mpicc): rgex alone"
        );
    }
    // (impl, n, test, size) -> best round's median.
    let mut best: BTreeMap<(&str, u32, String, u64), f64> = BTreeMap::new();
    let mut keep =
        |who: &'static str, n: u32, got: Result<BTreeMap<(String, u64), Vec<f64>>, String>| {
            match got {
                Ok(m) => {
                    for ((test, size), mut v) in m {
                        let x = median(&mut v);
                        let e = best.entry((who, n, test, size)).or_insert(f64::INFINITY);
                        *e = e.min(x);
                    }
                }
                Err(e) => println!("{who} on {n} ranks: {e}"),
            }
        };
    let args = [
        "--worker".to_owned(),
        "--iters".to_owned(),
        o.iters.to_string(),
        "--reps".to_owned(),
        o.reps.to_string(),
    ];
    for round in 0..o.rounds {
        for n in JOB_SIZES {
            let fits = n as usize <= cpus;
            let mut c = Command::new(&run);
            c.args(["-n", &n.to_string(), "--timeout", "600"]);
            if fits {
                c.arg("--bind");
            }
            c.arg(&me).args(&args);
            keep("rgex", n, figures("rgex-run", c, cpus));
            if let (Some(peer), Some(mpirun)) = (&peer, &mpirun) {
                let mut c = Command::new(mpirun);
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    c.arg("--allow-run-as-root")
                        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                }
                c.args(["-np", &n.to_string()]);
                if fits {
                    c.args(["--bind-to", "core", "--map-by", "core"]);
                } else {
                    c.args(["--oversubscribe", "--bind-to", "none"]);
                }
                c.args(["--mca", "pml", "ob1", "--mca", "btl", "self,vader"])
                    .args(["--mca", "oob_tcp_if_include", "lo"])
                    .arg(peer)
                    .args(["-n", &o.iters.to_string(), "-r", &o.reps.to_string()]);
                keep("mpi", n, figures("mpirun", c, cpus));
            }
        }
        eprintln!("testcoll: round {} of {} done", round + 1, o.rounds);
    }
    println!(
        "\ntestcoll: ns per call, slowest rank, best of {} rounds (median of {} repetitions each); \
         {cpus} CPUs",
        o.rounds, o.reps
    );
    let mut json = Vec::new();
    println!("| ranks | test | size | rgex ns | Open MPI ns | rgex / MPI |");
    println!("|---|---|---|---|---|---|");
    for n in JOB_SIZES {
        for (test, size) in TESTS {
            let get = |who| best.get(&(who, n, test.to_owned(), size)).copied();
            let r = get("rgex");
            // The blocking barrier is compared with MPI's Ibarrier row.
            let m = get("mpi").or_else(|| {
                (test == "barrier-blocking")
                    .then(|| best.get(&("mpi", n, "barrier".to_owned(), 0)).copied())
                    .flatten()
            });
            let f = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.0}"));
            let ratio = match (r, m) {
                (Some(r), Some(m)) => format!("{:.2}", r / m),
                _ => "-".to_owned(),
            };
            let over = if n as usize > cpus {
                " (oversubscribed)"
            } else {
                ""
            };
            println!(
                "| {n}{over} | {test} | {size} | {} | {} | {ratio} |",
                f(r),
                f(m)
            );
            json.push(CollRecord::new(n, n as usize > cpus, test, size, r, m));
        }
    }
    if let Some(p) = &o.json {
        if let Err(e) = write_json(p, &json) {
            eprintln!("testcoll: write {}: {e}", p.display());
            std::process::exit(1);
        }
    }
}
