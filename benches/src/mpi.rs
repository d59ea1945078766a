//! The Open MPI peer: `benches/peers/mpi_peer.c` (built with `mpicc` by
//! `ci/bench.sh`) run by `mpirun` on two ranks over shared memory.
//!
//! `mpirun` is started with `--bind-to core` (rank 0 on CPU 0, rank 1 on
//! CPU 1, as `rgex-run --bind` places rgex's ranks), `--mca pml ob1
//! --mca btl self,vader` (loopback and shared memory only; its runtime's
//! own TCP wiring is held to `lo`), and `--mca osc sm` or `--mca osc
//! rdma` for the one-sided tests (Open MPI 4.1 picks rdma by default; the
//! two are reported in columns of their own). As root it adds
//! `--allow-run-as-root` and the two `OMPI_ALLOW_RUN_AS_ROOT` variables.
//! Each repetition prints a line `mpi TEST SIZE VALUE UNIT ITERS`.

use crate::proc::{child_setup, find_exe, last_line, Running};
use crate::stats::Stats;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The peer program's file name.
pub const PEER: &str = "mpi_peer";

/// The peer program: `$RGEX_MPI_PEER`, else `mpi_peer` next to this
/// bench's executable (where `ci/bench.sh` builds it), else on `PATH`.
pub fn find_peer() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RGEX_MPI_PEER") {
        return Some(PathBuf::from(p));
    }
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(PEER)))
        .filter(|p| p.is_file())
        .or_else(|| find_exe(PEER))
}

/// Open MPI's one-sided component (`--mca osc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Osc {
    /// Shared-memory windows: a put is a memcpy into the mapped target.
    Sm,
    /// The RDMA component over the btl (vader here): Open MPI 4.1's default.
    Rdma,
}

impl Osc {
    /// Both, in column order.
    pub const ALL: [Osc; 2] = [Osc::Sm, Osc::Rdma];

    /// The component's name.
    pub fn name(self) -> &'static str {
        match self {
            Osc::Sm => "sm",
            Osc::Rdma => "rdma",
        }
    }
}

/// One test of the peer program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `MPI_Send`/`MPI_Recv` ping-pong of 8 bytes: ns per round trip.
    PingPong,
    /// 8-byte `MPI_Put` from a static source + `MPI_Win_flush`: ns per op.
    PutLat,
    /// `MPI_Put` flood (a flush every 64 puts): GB/s at 8 B, 4 KiB, 64 KiB, 4 MiB.
    PutBw,
    /// `MPI_Fetch_and_op` (sum, uint64) + flush: ns per op.
    FopLat,
    /// Every rank fetch-and-adds one uint64 of rank 0: aggregate ops/s.
    FopHot,
}

impl Test {
    /// The program's name for it (also [`Figure::test`]).
    pub fn arg(self) -> &'static str {
        match self {
            Test::PingPong => "pingpong",
            Test::PutLat => "put_lat",
            Test::PutBw => "put_bw",
            Test::FopLat => "fop_lat",
            Test::FopHot => "fop_hot",
        }
    }

    /// What a record of it is called under `osc` (the ping-pong does not
    /// use one): every name starts with `mpi`.
    ///
    /// ```
    /// use rgex_benches::mpi::{Osc, Test};
    /// assert_eq!(Test::PutLat.variant(Osc::Rdma), "mpi MPI_Put+MPI_Win_flush latency (osc rdma)");
    /// assert_eq!(Test::PingPong.variant(Osc::Sm), "mpi MPI_Send/MPI_Recv ping-pong round trip");
    /// ```
    pub fn variant(self, osc: Osc) -> String {
        let what = match self {
            Test::PingPong => return "mpi MPI_Send/MPI_Recv ping-pong round trip".into(),
            Test::PutLat => "MPI_Put+MPI_Win_flush latency",
            Test::PutBw => "MPI_Put flood",
            Test::FopLat => "MPI_Fetch_and_op latency",
            Test::FopHot => "MPI_Fetch_and_op hot-spot",
        };
        format!("mpi {what} (osc {})", osc.name())
    }
}

/// One figure of a run: a test at one size over its repetitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The test's name ([`Test::arg`]).
    pub test: String,
    /// Bytes per message.
    pub size: u64,
    /// Unit of the statistics (`ns`, `GB/s`, `ops/s`).
    pub unit: String,
    /// Iterations per repetition.
    pub iters: u64,
    /// Over the repetitions.
    pub stats: Stats,
}

/// Parse the program's output: every `mpi TEST SIZE VALUE UNIT ITERS`
/// line, grouped by test and size in the order they first appear.
///
/// ```
/// let out = "mpi put_lat 8 20.5 ns 1000\nnoise\nmpi put_lat 8 19.5 ns 1000\nmpi put_bw 4096 60 GB/s 64\n";
/// let f = rgex_benches::mpi::parse(out).unwrap();
/// assert_eq!(f.len(), 2);
/// assert_eq!((f[0].stats.median, f[0].stats.reps, f[0].iters), (20.0, 2, 1000));
/// assert_eq!((f[1].test.as_str(), f[1].size, f[1].unit.as_str()), ("put_bw", 4096, "GB/s"));
/// assert!(rgex_benches::mpi::parse("nothing\n").is_err());
/// ```
pub fn parse(stdout: &str) -> Result<Vec<Figure>, String> {
    let mut groups: Vec<(String, u64, String, u64, Vec<f64>)> = Vec::new();
    for line in stdout.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [tag, test, size, value, unit, iters] = w[..] else {
            continue;
        };
        if tag != "mpi" {
            continue;
        }
        let bad = || format!("a malformed line from {PEER}: {line:?}");
        let size: u64 = size.parse().map_err(|_| bad())?;
        let value: f64 = value.parse().map_err(|_| bad())?;
        let iters: u64 = iters.parse().map_err(|_| bad())?;
        match groups.iter_mut().find(|g| g.0 == test && g.1 == size) {
            Some(g) => g.4.push(value),
            None => groups.push((test.into(), size, unit.into(), iters, vec![value])),
        }
    }
    if groups.is_empty() {
        return Err(format!(
            "no figures (lines \"mpi TEST ...\") in {PEER}'s output"
        ));
    }
    groups
        .into_iter()
        .map(|(test, size, unit, iters, v)| {
            let stats = Stats::from_samples(&v).ok_or_else(|| format!("{test}: NaN figures"))?;
            Ok(Figure {
                test,
                size,
                unit,
                iters,
                stats,
            })
        })
        .collect()
}

/// One `mpirun` of the peer program.
#[derive(Clone, Debug)]
pub struct MpiRun {
    /// The peer program.
    pub exe: PathBuf,
    /// The one-sided component.
    pub osc: Osc,
    /// Iterations (`-n`; the put flood derives its own per size).
    pub iters: u64,
    /// Repetitions (`-r`).
    pub reps: usize,
    /// The tests, in order.
    pub tests: Vec<Test>,
    /// Kill the run (mpirun and, through it, its ranks) after this long.
    pub timeout: Duration,
}

impl MpiRun {
    /// A run of `tests` with the program found by [`find_peer`].
    pub fn new(osc: Osc, iters: u64, reps: usize, tests: &[Test]) -> Result<MpiRun, String> {
        let exe = find_peer().ok_or_else(|| {
            format!("{PEER} not built (ci/bench.sh builds it with mpicc from benches/peers/mpi_peer.c; or set RGEX_MPI_PEER)")
        })?;
        find_exe("mpirun").ok_or("mpirun is not installed (Debian: openmpi-bin)")?;
        Ok(MpiRun {
            exe,
            osc,
            iters,
            reps,
            tests: tests.to_vec(),
            timeout: Duration::from_secs(120),
        })
    }

    fn command(&self) -> Command {
        let mut c = Command::new("mpirun");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            c.arg("--allow-run-as-root")
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        }
        c.args(["-np", "2", "--bind-to", "core", "--map-by", "core"])
            .args(["--mca", "pml", "ob1", "--mca", "btl", "self,vader"])
            .args(["--mca", "osc", self.osc.name()])
            .args(["--mca", "oob_tcp_if_include", "lo"])
            .args(["--mca", "btl_tcp_if_include", "lo"])
            .arg(&self.exe)
            .args(["-n", &self.iters.to_string(), "-r", &self.reps.to_string()])
            .args(self.tests.iter().map(|t| t.arg()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Run it: its figures, or why it failed.
    pub fn run(&self) -> Result<Vec<Figure>, String> {
        let mut c = self.command();
        // mpirun binds its ranks to CPUs 0 and 1: give it both (a rank of
        // `rgex-run --bind` that starts it holds only its own).
        let cpus: Vec<usize> = (0..crate::affinity::online_cpus().min(2)).collect();
        child_setup(&mut c, &cpus).map_err(|e| format!("prepare mpirun: {e}"))?;
        let done = Running::spawn("mpirun", c)
            .map_err(|e| format!("start mpirun: {e}"))?
            .finish(self.timeout)?;
        if !done.status.success() {
            return Err(format!(
                "mpirun {}: {}",
                done.status,
                last_line(&done.stderr, &done.stdout)
            ));
        }
        parse(&done.stdout)
    }
}

/// The figure of `test` at `size` in a run's figures.
pub fn at(figures: &[Figure], test: Test, size: u64) -> Option<&Figure> {
    figures
        .iter()
        .find(|f| f.test == test.arg() && f.size == size)
}
