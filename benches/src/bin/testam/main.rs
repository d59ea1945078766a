//! testam: AM latency and bandwidth (GASNet-EX's testam, see BENCHMARKS.md).
//!
//! Run: `rgex-run -n 2 --bind target/release/testam [--quick] [--json PATH] [--reps N]`
//! (without the launcher it is a job of one rank sending AMs to itself).
//!
//! Rank 0 first measures the physical floor (cache-line round trip between
//! CPUs 0 and 1, memcpy bandwidth) and, if installed, UCX's `ucp_am_lat`
//! over shared memory, while the other ranks wait in the bootstrap. Over
//! the ofi conduit (`RGEX_CONDUIT=ofi`) the provider floor replaces UCX:
//! `fi_pingpong` of 8 bytes on `RGEX_OFI_PROVIDER`, and the AM Short round
//! trip is compared with twice its one-way latency (the target: within
//! 1.15x; see `rgex_benches::fabric`). Then,
//! over rgex: AM Short ping-pong round trip, Short one-way flood, and
//! Medium ping-pong from 0 bytes to max Medium for the FP, NP-rgex and
//! NP-client variants (the realistic mode: payloads generated and
//! checked) and FP-static (the peers' mode: a static payload nobody
//! reads). Last, on node-local conduits, `--rounds` rounds of rgex's AM
//! Short and 8-byte FP-static round trips, `ucp_am_lat` and Open MPI's
//! Send/Recv ping-pong, interleaved, the floor measured before and after
//! each point (see `rounds`). Rank 1 only runs handlers. Rank 0 prints a table
//! and writes JSON records and an SVG plot. A report, never a pass/fail on
//! timing: it fails only if something breaks (or a payload arrives damaged).

mod baseline;
mod handlers;
mod measure;
mod output;
mod rounds;

use rgex::Rank;
use rgex_benches::affinity::online_cpus;
use rgex_benches::report::{write_json, Job};
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: testam [--quick] [--json PATH] [--reps N] [--rounds N]

  --quick      short repetitions (a smoke run: well under 20 s)
  --json PATH  where to write the JSON records (default bench-results/testam.json);
               the SVG plot goes next to it with extension .svg
  --reps N     repetitions per point (default 5; fewer makes the median less robust)
  --rounds N   rounds of rgex's and the peers' headline latencies, interleaved, the floor
               before and after each point (default 3, 2 with --quick; smp and other
               node-local conduits only)";

/// Command-line options.
struct Opts {
    quick: bool,
    json: PathBuf,
    reps: usize,
    rounds: Option<usize>,
}

impl Opts {
    /// Parse the arguments; `Ok(None)` for `--help`.
    fn parse() -> Result<Option<Opts>, String> {
        let mut o = Opts {
            quick: false,
            json: PathBuf::from("bench-results/testam.json"),
            reps: 5,
            rounds: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => o.quick = true,
                "--json" => o.json = args.next().ok_or("--json needs a path")?.into(),
                "--reps" => {
                    let n = args.next().ok_or("--reps needs a number")?;
                    o.reps = n
                        .parse()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or(format!("--reps {n:?}: not a positive number"))?;
                }
                "--rounds" => {
                    o.rounds = Some(rgex_benches::cli::positive("--rounds", args.next())? as usize)
                }
                "-h" | "--help" => return Ok(None),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        Ok(Some(o))
    }

    /// Target duration of one repetition of one point.
    fn target(&self) -> Duration {
        if self.quick {
            Duration::from_millis(10)
        } else {
            Duration::from_millis(200)
        }
    }

    /// How testam's rounds run.
    fn plan(&self) -> rounds::Plan {
        rounds::Plan {
            rounds: self.rounds.unwrap_or(if self.quick { 2 } else { 3 }),
            reps: self.reps.min(3),
            floor_target: if self.quick {
                Duration::from_millis(5)
            } else {
                Duration::from_millis(20)
            },
            ucx_iters: self.ucx_iters(),
            mpi_iters: if self.quick { 20_000 } else { 200_000 },
        }
    }

    /// UCX iterations per run.
    fn ucx_iters(&self) -> u64 {
        if self.quick {
            20_000
        } else {
            300_000
        }
    }
}

fn progress(what: &str) {
    eprintln!("testam: measuring {what}");
}

fn run() -> Result<(), Box<dyn Error>> {
    let Some(opts) = Opts::parse()? else {
        println!("{USAGE}");
        return Ok(());
    };
    let first = rgex::launcher_rank()? == 0;
    let (target, reps) = (opts.target(), opts.reps);

    // Before rgex starts: the other ranks block in the bootstrap meanwhile,
    // leaving both CPUs to the floor threads and to UCX.
    let provider = rgex_benches::fabric::ofi_provider();
    let before = first.then(|| {
        let load = rgex_benches::affinity::load_average();
        progress("the physical floor (cache-line round trip, memcpy)");
        let floors = baseline::floors(target, reps);
        let (ucx, fabric) = match &provider {
            None => {
                progress("the UCX peer (ucx_perftest ucp_am_lat)");
                (baseline::ucx(opts.ucx_iters(), reps), None)
            }
            Some(p) => (
                baseline::Ucx::Skipped(
                    "RGEX_CONDUIT=ofi: the provider floor (fi_pingpong) is the peer here".into(),
                ),
                Some(baseline::fabric(p, opts.quick, reps)),
            ),
        };
        (floors, ucx, fabric, load)
    });

    let (client, ids, state) = handlers::init()?;
    if let Some((floors, ucx, fabric, load)) = before {
        let peer = Rank(1 % client.size());
        let mut bench = measure::Bench::new(&client, &state, ids, peer, target, reps);
        bench.progress = progress;
        let am = bench.run_all()?;
        let rounds = if provider.is_some() {
            Err("RGEX_CONDUIT=ofi: the provider floor (fi_pingpong) is the peer here".to_owned())
        } else if client.size() < 2 {
            Err("one rank: no peer to serve the round trips".to_owned())
        } else {
            progress("rounds: rgex, UCX and Open MPI interleaved, the floor around each point");
            rounds::run(&mut bench, &opts.plan())
        };
        handlers::stop_others(&client, &ids)?;
        if let Some(n) = rgex_benches::label::note() {
            println!("{n}");
        }
        let job = Job {
            bench: "testam".into(),
            conduit: client.endpoint().conduit().name().to_owned(),
            provider: rgex_benches::label::provider(),
            ranks: client.size(),
            oversubscribed: client.endpoint().polite() || client.size() as usize > online_cpus(),
        };
        let run = output::Run {
            job,
            reps,
            target,
            floors,
            ucx,
            fabric,
            am,
            load,
            rounds,
        };
        print!("{}", output::table(&run));
        write_json(&opts.json, &output::records(&run))
            .map_err(|e| format!("write {}: {e}", opts.json.display()))?;
        let svg = opts.json.with_extension("svg");
        output::plot(&run)
            .write(&svg)
            .map_err(|e| format!("write {}: {e}", svg.display()))?;
        println!(
            "\nJSON records: {}\nSVG plot:     {}",
            opts.json.display(),
            svg.display()
        );
    } else {
        handlers::serve(&client, &state)?;
    }
    client.barrier()?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testam: error: {e}");
            ExitCode::FAILURE
        }
    }
}
