//! testam's rounds: rgex's headline latencies and the peers' (UCX
//! `ucp_am_lat`, Open MPI's Send/Recv ping-pong) measured in turn, the
//! floor before and after each point (`rgex_benches::rounds`). The peer
//! rank sleeps between polls while rank 0 measures the floor or a peer
//! tool, so neither competes with a spinning rank.

use crate::baseline::{self, Ucx};
use crate::handlers::Variant;
use crate::measure::Bench;
use rgex_benches::floor::cache_line_rtt;
use rgex_benches::mpi::{self, MpiRun, Osc, Test};
use rgex_benches::report::Job;
use rgex_benches::rounds::Rounds;
use std::time::Duration;

/// The points, in round order; the first is rgex's (the ratios' base).
const POINTS: [&str; 4] = [
    "rgex AM Short round trip",
    "rgex AM Medium 8 B round trip FP-static",
    "ucx_perftest ucp_am_lat 8 B round trip (2 x overall one-way)",
    "mpi MPI_Send/MPI_Recv ping-pong round trip",
];

/// Payload of the Medium, UCX and MPI points.
const SIZE: usize = 8;

/// How each round is run.
pub struct Plan {
    /// Rounds.
    pub rounds: usize,
    /// Repetitions per point.
    pub reps: usize,
    /// Target duration of one floor repetition.
    pub floor_target: Duration,
    /// UCX iterations per run.
    pub ucx_iters: u64,
    /// MPI ping-pong round trips per repetition.
    pub mpi_iters: u64,
}

/// Run the rounds against `bench`'s peer (which must be serving).
pub fn run(bench: &mut Bench<'_>, plan: &Plan) -> Result<Rounds, String> {
    let names = POINTS.iter().map(|s| (*s).to_owned()).collect();
    let park = |b: &mut Bench<'_>| b.park_peer().map_err(|e| format!("park the peer: {e}"));
    park(bench)?;
    let floor_reps = plan.reps.min(3);
    let rounds = Rounds::run(
        names,
        "ns",
        plan.rounds,
        || {
            cache_line_rtt([0, 1], plan.floor_target, floor_reps)
                .map(|(s, _)| s.median)
                .map_err(|e| e.to_string())
        },
        |k| match k {
            0 | 1 => {
                bench.unpark_peer().map_err(|e| e.to_string())?;
                let p = if k == 0 {
                    bench.short_point()
                } else {
                    bench.medium_point(Variant::FpStatic, SIZE)
                };
                park(bench)?;
                let p = p.map_err(|e| e.to_string())?;
                Ok((p.ns, p.iters))
            }
            2 => match baseline::ucx(plan.ucx_iters, plan.reps) {
                Ucx::Measured { rtt, iters, .. } => Ok((rtt, iters)),
                Ucx::NotInstalled => Err("ucx_perftest not installed".into()),
                Ucx::Failed(e) | Ucx::Skipped(e) => Err(e),
            },
            _ => {
                let figs =
                    MpiRun::new(Osc::Sm, plan.mpi_iters, plan.reps, &[Test::PingPong])?.run()?;
                let f = mpi::at(&figs, Test::PingPong, SIZE as u64)
                    .ok_or("no ping-pong figure in its output")?;
                Ok((f.stats, f.iters))
            }
        },
    );
    bench
        .unpark_peer()
        .map_err(|e| format!("unpark the peer: {e}"))?;
    rounds
}

/// Point `k`'s job: rgex's own, or the peer tool's.
pub fn job(rgex: &Job, k: usize) -> Job {
    match k {
        2 => Job {
            conduit: "ucx".into(),
            provider: Some("posix,self".into()),
            ranks: 2,
            ..rgex.clone()
        },
        3 => Job {
            conduit: "mpi".into(),
            provider: Some("Open MPI, pml ob1, btl self,vader".into()),
            ranks: 2,
            ..rgex.clone()
        },
        _ => rgex.clone(),
    }
}

/// Point `k`'s payload size (the Short carries none).
pub fn size(k: usize) -> Option<u64> {
    (k > 0).then_some(SIZE as u64)
}
