//! What rank 0 measures before rgex starts (the other ranks then block in
//! the bootstrap, so nothing else competes for the CPUs): the physical
//! floors, the UCX peer, and over the ofi conduit the provider floor.

use rgex_benches::affinity::online_cpus;
use rgex_benches::fabric::{run_target, ProviderFloor};
use rgex_benches::floor::Floors;
use rgex_benches::stats::Stats;
use rgex_benches::ucx::{find_perftest, Perftest};
use std::time::Duration;

/// memcpy sizes: every Medium payload size up to 64 KiB (the largest
/// max Medium of the conduits: what a fixed-payload send copies), and
/// one well beyond the last-level cache.
pub fn memcpy_sizes() -> Vec<usize> {
    (0..=16).map(|k| 1usize << k).chain([64 << 20]).collect()
}

/// The large Medium sizes whose round trip is compared with two
/// cross-core copies of the payload.
pub const CROSS_COPY_SIZES: [usize; 3] = [4 << 10, 16 << 10, 64 << 10];

/// Measure the floors (the benches' shared measurement, and the round
/// trip of two cross-core copies at [`CROSS_COPY_SIZES`]).
pub fn floors(target: Duration, reps: usize) -> Floors {
    let mut f = Floors::measure(&memcpy_sizes(), target, reps);
    f.measure_cross_copies(&CROSS_COPY_SIZES, target, reps);
    f
}

/// The UCX peer's AM latency, as round trips.
#[derive(Clone, Debug)]
pub enum Ucx {
    /// `ucx_perftest` is not on PATH.
    NotInstalled,
    /// It ran and failed (why).
    Failed(String),
    /// Not run (why): over the ofi conduit it would measure shared memory.
    Skipped(String),
    /// Round trip in ns: twice the reported one-way latency.
    Measured {
        /// 2 x `overall_lat` (elapsed / iterations: rgex's method).
        rtt: Stats,
        /// 2 x the 50th percentile of per-iteration latency.
        rtt_p50: Stats,
        /// Iterations per run.
        iters: u64,
        /// `UCX_TLS`.
        tls: String,
        /// Message size in bytes.
        size: u64,
    },
}

/// The provider floor's transfer size: testam's Short ping carries no
/// payload and no arguments, so the provider's smallest messages compare
/// (8 bytes, as the UCX comparison uses).
pub const FABRIC_SIZE: u64 = 8;

/// Over the ofi conduit (`RGEX_CONDUIT=ofi`): `fi_pingpong` at
/// [`FABRIC_SIZE`] on the conduit's provider.
pub fn fabric(provider: &str, quick: bool, reps: usize) -> ProviderFloor {
    ProviderFloor::measure(provider, &[FABRIC_SIZE], run_target(quick), reps, |w| {
        eprintln!("testam: measuring {w}")
    })
}

/// Run `ucx_perftest -t ucp_am_lat` over shared memory `reps` times.
pub fn ucx(iters: u64, reps: usize) -> Ucx {
    let Some(exe) = find_perftest() else {
        return Ucx::NotInstalled;
    };
    let mut t = Perftest::new(exe, "ucp_am_lat", iters);
    let size = 8;
    t.extra = vec!["-s".into(), size.to_string()];
    if online_cpus() >= 2 {
        // Like rgex-run --bind: the pinger on CPU 0, the responder on CPU 1.
        t.cpus = Some([0, 1]);
    }
    let (mut overall, mut p50) = (Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let r = match t.run() {
            Ok(r) => r,
            Err(e) => return Ucx::Failed(e),
        };
        match (r.get("overall_lat"), r.get("50.0_percentile_lat")) {
            (Some(o), Some(p)) => {
                overall.push(2000.0 * o);
                p50.push(2000.0 * p);
            }
            _ => {
                return Ucx::Failed(
                    "no overall_lat / 50.0_percentile_lat column in its summary".into(),
                )
            }
        }
    }
    match (Stats::from_samples(&overall), Stats::from_samples(&p50)) {
        (Some(rtt), Some(rtt_p50)) => Ucx::Measured {
            rtt,
            rtt_p50,
            iters,
            tls: t.tls,
            size,
        },
        _ => Ucx::Failed("no usable samples".into()),
    }
}
