//! The libfabric provider floor: `fi_pingpong` on loopback, for benches
//! run with `RGEX_CONDUIT=ofi`.
//!
//! A bench run over the ofi conduit compares its figures with the raw
//! provider, measured in the same run: `fi_pingpong` (Debian package
//! `libfabric-bin`) with a server and a client on 127.0.0.1, the provider
//! of `RGEX_OFI_PROVIDER` (default [`DEFAULT_PROVIDER`]), an RDM endpoint,
//! one transfer size and a given number of iterations:
//!
//! ```text
//! server: fi_pingpong -p PROV -e rdm -I ITERS -S SIZE -B PORT
//! client: fi_pingpong -p PROV -e rdm -I ITERS -S SIZE -P PORT 127.0.0.1
//! ```
//!
//! Both run with `FI_TCP_IFACE=lo` and `FI_SOCKETS_IFACE=lo` (forced, so
//! the providers only use the loopback interface) and, on a node with two
//! CPUs or more, pinned like `rgex-run --bind` pins two ranks: client on
//! CPU 0, server on CPU 1. Only 127.0.0.1 is contacted (the server's
//! control socket listens on every interface of PORT: `fi_pingpong` 1.17
//! has no option to narrow it). Every run has a deadline; the server is
//! killed on every path that abandons it, and both children get SIGKILL if
//! the bench dies first.
//!
//! # What `fi_pingpong` reports
//!
//! One row per size: `bytes #sent #ack total time MB/sec usec/xfer
//! Mxfers/sec`. In `util/pingpong.c` (libfabric 1.17) an iteration is a
//! round trip: the client sends `SIZE` bytes and waits for the server's
//! `SIZE`-byte reply. `show_perf` is called with `xfers_per_iter = 2`, so
//!
//! - `usec/xfer` = elapsed µs / iterations / 2: the **one-way** latency,
//!   half a round trip (a round trip is twice it);
//! - `MB/sec` = 2 x iterations x SIZE bytes / elapsed µs: 10^6 bytes per
//!   second, both directions counted, which is SIZE / one-way time (a
//!   ping-pong bandwidth, one message in flight, not a flood);
//! - `Mxfers/sec` = 1 / `usec/xfer`; `#sent` and `total` are abbreviated
//!   (`10k`, `156k`, 2^10 units for bytes).
//!
//! (Checked against its output: 10,000 iterations of 8 bytes took 0.13 s
//! and printed 6.35 usec/xfer = 0.127 s / 20,000; total 156k = 160,000 B.)
//!
//! `fi_pingpong` has no warm-up: it times every iteration, including the
//! first, which on an RDM endpoint opens the connection (`tcp;ofi_rxm`
//! connects on the first send) and sets up the protocol the size uses.
//! Here that first round trip costs 20 ms at 8 bytes and ~50 ms at 64 KiB
//! over `tcp;ofi_rxm` (against 12 µs and 60 µs for the ones after it),
//! varying by milliseconds from run to run; `fi_pingpong -S all` shows the
//! same ~14 ms again at the first size sent with `fi_send` rather than
//! `fi_inject` (64 B) and at the first rendezvous size (24 KiB). A
//! 20,000-iteration run at 8 bytes reports a one-way latency ~10% too high,
//! a short run several times too high. So [`measure`] takes the difference
//! of two runs: T(1), the median of three runs of one round trip, and
//! T(N) for N calibrated to the target duration; one-way = (T(N) - T(1)) /
//! (2 (N - 1)). Its error is the run-to-run variation of the first trip
//! over T(N) (a few % at 50 ms, `--quick`; ~1% at 250 ms). Both figures
//! are kept ([`Floor::one_way`], [`Floor::reported`]).
//!
//! # The `sockets` provider on a small node
//!
//! `fi_pingpong -p sockets -e rdm` works on loopback, but with the
//! provider's defaults each one-way transfer takes milliseconds on a
//! two-CPU node (7 ms here, against 6 µs for `tcp;ofi_rxm`). The sockets
//! provider makes progress in a thread per domain (`FI_PROGRESS_AUTO`),
//! which after every wake-up spins for `FI_SOCKETS_PE_WAITTIME` ms
//! (default 10) before sleeping in `epoll_wait`. Two processes each with
//! a busy-polling main thread (`fi_cq_read` in a loop) and a spinning
//! progress thread are four runnable threads on two CPUs: every hand-off
//! waits for a scheduler time slice. With `FI_SOCKETS_PE_WAITTIME=0` the
//! progress threads sleep at once and a one-way transfer takes ~80 µs.
//! `ci/bench.sh` sets it for the sockets runs (for rgex and the floor
//! alike: both inherit the bench's environment); [`provider_note`] warns
//! when it is unset on a node with fewer than four CPUs.
//!
//! The failure "`inject(): util/pingpong.c:1256, ret=-2`" followed by
//! silence is what a run cut short by a timeout looks like: 1,000
//! iterations take ~14 s at the default wait time, the peer killed by the
//! timeout closes its socket, the survivor's sockets provider fails to
//! reconnect (five retries) and its `fi_inject` returns `-FI_ENOENT`
//! (`sock_ep_get_conn`: "Unable to connect"), while the other side, had it
//! survived, waits for a completion forever (`fi_pingpong`'s receive has
//! no timeout). Neither `-d lo`, the address form, nor the endpoint type
//! (`msg`, `rdm`, `dgram` all behave alike) changes it; the wait time does.
//! Here each run has iterations calibrated to a target duration and a
//! deadline well above it, so a slow provider gives a slow floor, not a hang.
//!
//! # `fi_rma_bw`
//!
//! `fi_rma_bw` belongs to fabtests, which Debian (bookworm, libfabric
//! 1.17) does not package: `libfabric-bin` ships `fi_info`, `fi_pingpong`
//! and `fi_strerror` only. If a `fi_rma_bw` is on `PATH`, [`RmaBw`] runs
//! it (`-o write`, fabtests >= 1.10 options); otherwise the bandwidth floor
//! is `fi_pingpong`'s ping-pong bandwidth at the largest size, and the
//! report says so.

use crate::affinity::online_cpus;
use crate::proc::{child_setup, find_exe, free_port, last_line, Running};
use crate::report::{num, size as size_str, spread, Job, Record, Table};
use crate::stats::Stats;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// libfabric's ping-pong program (Debian: `libfabric-bin`).
pub const PINGPONG: &str = "fi_pingpong";

/// fabtests' RMA bandwidth program (not packaged by Debian).
pub const RMA_BW: &str = "fi_rma_bw";

/// The provider when `RGEX_OFI_PROVIDER` is unset.
pub const DEFAULT_PROVIDER: &str = "tcp;ofi_rxm";

/// The requirement's latency target: rgex within this factor of the
/// provider's round trip (twice `fi_pingpong`'s one-way latency).
pub const LATENCY_TARGET: f64 = 1.15;

/// The endpoint type every run uses (the ofi conduit's).
pub const ENDPOINT: &str = "rdm";

/// Most iterations of one run (`fi_pingpong -I` takes an `int`).
const MAX_ITERS: u64 = 10_000_000;

/// Runs of one round trip whose median is the first round trip.
const FIRST_RUNS: usize = 3;

/// Iterations of the first calibration run.
const PROBE_ITERS: u64 = 4;

/// Fewest iterations of a timed run: the difference T(N) - T(1) needs two;
/// a slow provider (or a busy node) gets few long trips, not a long run.
const MIN_ITERS: u64 = 2;

/// How long one timed `fi_pingpong` run lasts: 50 ms for a `--quick`
/// smoke run, 250 ms otherwise. Shorter runs would drown in the noise of
/// the first round trip (milliseconds from run to run).
pub fn run_target(quick: bool) -> Duration {
    Duration::from_millis(if quick { 50 } else { 250 })
}

/// The libfabric provider of a bench run over the ofi conduit:
/// `RGEX_OFI_PROVIDER` (default [`DEFAULT_PROVIDER`]) when `RGEX_CONDUIT`
/// is `ofi`, `None` for any other conduit.
pub fn ofi_provider() -> Option<String> {
    match std::env::var("RGEX_CONDUIT").ok().as_deref() {
        Some("ofi") => Some(
            std::env::var("RGEX_OFI_PROVIDER")
                .ok()
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned()),
        ),
        _ => None,
    }
}

/// `fi_pingpong` on `PATH`, if installed.
pub fn find_pingpong() -> Option<PathBuf> {
    find_exe(PINGPONG)
}

/// `fi_rma_bw` on `PATH`, if installed.
pub fn find_rma_bw() -> Option<PathBuf> {
    find_exe(RMA_BW)
}

/// A warning when `provider`'s settings make its figures a scheduling
/// artefact rather than a floor (see the module documentation), if any.
pub fn provider_note(provider: &str) -> Option<String> {
    let sockets = provider.split(';').next() == Some("sockets");
    if sockets && std::env::var_os("FI_SOCKETS_PE_WAITTIME").is_none() && online_cpus() < 4 {
        Some(format!(
            "FI_SOCKETS_PE_WAITTIME is unset: the sockets provider's progress threads spin 10 ms after every wake-up, \
             and with the two processes' polling main threads they share {} CPU(s), so a transfer waits for time slices \
             (milliseconds); set FI_SOCKETS_PE_WAITTIME=0 (ci/bench.sh does) for rgex and the floor alike",
            online_cpus()
        ))
    } else {
        None
    }
}

/// The libfabric settings of this process that change a provider's
/// figures, as `NAME=value` (empty if none is set).
pub fn provider_settings(provider: &str) -> String {
    let mut v = Vec::new();
    if provider.split(';').next() == Some("sockets") {
        let w = std::env::var("FI_SOCKETS_PE_WAITTIME").unwrap_or_else(|_| "unset (10)".into());
        v.push(format!("FI_SOCKETS_PE_WAITTIME={w}"));
    }
    v.join(" ")
}

/// One row of a `fi_pingpong` (or fabtests) result table.
#[derive(Clone, Debug, PartialEq)]
pub struct PingpongRow {
    /// The size column as printed (`8`, `1.5k`, `4m`).
    pub bytes: String,
    /// Elapsed time in seconds, as printed (two decimals).
    pub time_s: f64,
    /// `MB/sec`: 10^6 bytes per second (both directions for `fi_pingpong`).
    pub mb_per_s: f64,
    /// `usec/xfer`: for `fi_pingpong` the one-way latency in µs.
    pub usec_per_xfer: f64,
    /// `Mxfers/sec`: 1 / `usec_per_xfer`.
    pub mxfers_per_s: f64,
}

impl PingpongRow {
    /// Parse the result rows of a `fi_pingpong` run (the header line naming
    /// `usec/xfer`, then one row per size; other lines are skipped). Also
    /// reads fabtests' tables, whose rows end in the same four columns.
    ///
    /// Captured from `fi_pingpong -p 'tcp;ofi_rxm' -e rdm -I 10000 -S 8`
    /// and `fi_pingpong -p sockets -e rdm -I 20 -S 4194304` (libfabric
    /// 1.17, loopback, `FI_SOCKETS_PE_WAITTIME=0`):
    ///
    /// ```
    /// use rgex_benches::fabric::PingpongRow;
    /// let out = "\
    /// bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
    /// 8       10k     =10k     156k        0.13s      1.21       6.62       0.15
    /// ";
    /// let rows = PingpongRow::parse(out).unwrap();
    /// assert_eq!(rows.len(), 1);
    /// let r = &rows[0];
    /// assert_eq!((r.bytes.as_str(), r.time_s, r.mb_per_s), ("8", 0.13, 1.21));
    /// assert_eq!((r.usec_per_xfer, r.mxfers_per_s), (6.62, 0.15));
    /// assert_eq!(r.one_way_ns(), 6620.0);
    /// // usec/xfer is half a round trip: 2 x 10,000 x 6.62 us = 0.1324 s.
    /// assert!((r.elapsed_us(10_000) - 132_400.0).abs() < 1e-6);
    ///
    /// let big = "\
    /// bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
    /// 4m      20      =20      160m        0.40s    419.83    9990.47       0.00
    /// ";
    /// let r = &PingpongRow::parse(big).unwrap()[0];
    /// assert_eq!((r.bytes.as_str(), r.mb_per_s, r.usec_per_xfer), ("4m", 419.83, 9990.47));
    ///
    /// // What a failed client prints: no table.
    /// let err = PingpongRow::parse("").unwrap_err();
    /// assert!(err.contains("usec/xfer"));
    /// ```
    pub fn parse(stdout: &str) -> Result<Vec<PingpongRow>, String> {
        let mut lines = stdout.lines();
        lines
            .by_ref()
            .find(|l| l.contains("usec/xfer") && l.contains("MB/sec"))
            .ok_or_else(|| {
                "no result table (a header naming MB/sec and usec/xfer) in its output".to_owned()
            })?;
        let rows: Vec<PingpongRow> = lines.filter_map(Self::parse_row).collect();
        if rows.is_empty() {
            return Err("its result table has a header but no rows".to_owned());
        }
        Ok(rows)
    }

    /// One row: the size first, then `time` (ending in `s`), `MB/sec`,
    /// `usec/xfer`, `Mxfers/sec` last.
    fn parse_row(line: &str) -> Option<PingpongRow> {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 5 {
            return None;
        }
        let n = t.len();
        let f = |s: &str| s.parse::<f64>().ok();
        Some(PingpongRow {
            bytes: t[0].to_owned(),
            time_s: f(t[n - 4].strip_suffix('s')?)?,
            mb_per_s: f(t[n - 3])?,
            usec_per_xfer: f(t[n - 2])?,
            mxfers_per_s: f(t[n - 1])?,
        })
    }

    /// `usec/xfer` in nanoseconds (for `fi_pingpong`: one-way latency).
    pub fn one_way_ns(&self) -> f64 {
        self.usec_per_xfer * 1000.0
    }

    /// The elapsed µs of a `fi_pingpong` run of `iters` round trips,
    /// recovered from `usec/xfer` (more digits than the `time` column).
    pub fn elapsed_us(&self, iters: u64) -> f64 {
        2.0 * iters as f64 * self.usec_per_xfer
    }
}

/// What makes a failed run's messages readable: a provider libfabric does
/// not offer says so in the server's `fi_getinfo` error.
fn explain(provider: &str, said: &str) -> Option<String> {
    (said.contains("fi_getinfo") && said.contains("-61")).then(|| {
        format!(
            "libfabric offers no {ENDPOINT} endpoint of provider {provider:?} here \
             (fi_getinfo: -FI_ENODATA); `fi_info -l` lists the providers it found"
        )
    })
}

/// A client/server peer tool run on loopback: `fi_pingpong` or `fi_rma_bw`.
#[derive(Clone, Debug)]
struct PeerRun {
    name: &'static str,
    exe: PathBuf,
    provider: String,
    /// Arguments of both sides (provider, endpoint, iterations, size, ...).
    args: Vec<String>,
    /// Server's option for its control port, client's for the server's.
    server_port_opt: &'static str,
    client_port_opt: &'static str,
    /// Client and server CPUs.
    cpus: Option<[usize; 2]>,
    timeout: Duration,
}

impl PeerRun {
    fn command(&self, cpu: Option<usize>) -> Result<Command, String> {
        let mut c = Command::new(&self.exe);
        // The network rule: the providers use the loopback interface only.
        c.env("FI_TCP_IFACE", "lo")
            .env("FI_SOCKETS_IFACE", "lo")
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        child_setup(&mut c, cpu.as_slice()).map_err(|e| format!("prepare {}: {e}", self.name))?;
        Ok(c)
    }

    /// Run server and client; the client's stdout, or why it failed.
    fn run(&self) -> Result<String, String> {
        let port = free_port()
            .map_err(|e| format!("find a free loopback port: {e}"))?
            .to_string();
        let deadline = Instant::now() + self.timeout;
        let mut server = self.command(self.cpus.map(|c| c[1]))?;
        server.args([self.server_port_opt, &port]);
        let mut server = Running::spawn(self.name, server)
            .map_err(|e| format!("start the {} server: {e}", self.name))?;
        let mut client_failure = String::new();
        // The server needs a moment to listen: retry a refused client.
        for _ in 0..100 {
            let mut client = self.command(self.cpus.map(|c| c[0]))?;
            client.args([self.client_port_opt, &port, "127.0.0.1"]);
            let left = deadline.saturating_duration_since(Instant::now());
            let done = Running::spawn(self.name, client)
                .map_err(|e| format!("start the {} client: {e}", self.name))?
                .finish(left);
            match done {
                Ok(f) if f.status.success() => {
                    // The server prints its table and exits right after.
                    let _ = server.finish(Duration::from_secs(5));
                    return Ok(f.stdout);
                }
                Ok(f) => {
                    client_failure =
                        format!("client {}: {}", f.status, last_line(&f.stderr, &f.stdout));
                    let refused = f.stderr.contains("refused") || f.stdout.contains("refused");
                    if !refused || server.exited() || Instant::now() >= deadline {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    client_failure = format!("client {e}");
                    break;
                }
            }
        }
        let server_said = if server.exited() {
            match server.finish(Duration::ZERO) {
                Ok(f) => {
                    let said = format!("{}\n{}", f.stderr, f.stdout);
                    if let Some(why) = explain(&self.provider, &said) {
                        return Err(why);
                    }
                    format!("server {}: {}", f.status, last_line(&f.stderr, &f.stdout))
                }
                Err(e) => format!("server: {e}"),
            }
        } else {
            // Dropping it kills it (our own child, by its handle).
            drop(server);
            "the server was still waiting and was stopped".to_owned()
        };
        Err(format!("{}: {client_failure}; {server_said}", self.name))
    }
}

/// `fi_pingpong` runs of one provider and size on loopback.
#[derive(Clone, Debug)]
pub struct Pingpong {
    /// The program.
    pub exe: PathBuf,
    /// The provider (`-p`), e.g. `tcp;ofi_rxm`.
    pub provider: String,
    /// Transfer size in bytes (`-S`).
    pub size: u64,
    /// CPUs of the client and the server; `None` leaves them to inherit
    /// this process's affinity.
    pub cpus: Option<[usize; 2]>,
    /// Give up on one run (and kill both processes) after this long.
    pub timeout: Duration,
}

impl Pingpong {
    /// Runs of `size` bytes over `provider`, pinned to CPUs 0 (client) and
    /// 1 (server) if the node has two, with a 60 s deadline per run.
    pub fn new(exe: PathBuf, provider: &str, size: u64) -> Self {
        Pingpong {
            exe,
            provider: provider.to_owned(),
            size,
            cpus: (online_cpus() >= 2).then_some([0, 1]),
            timeout: Duration::from_secs(60),
        }
    }

    /// One run of `iters` round trips; its result row.
    pub fn run(&self, iters: u64) -> Result<PingpongRow, String> {
        let iters = iters.clamp(1, MAX_ITERS);
        let run = PeerRun {
            name: PINGPONG,
            exe: self.exe.clone(),
            provider: self.provider.clone(),
            args: vec![
                "-p".into(),
                self.provider.clone(),
                "-e".into(),
                ENDPOINT.into(),
                "-I".into(),
                iters.to_string(),
                "-S".into(),
                self.size.to_string(),
            ],
            server_port_opt: "-B",
            client_port_opt: "-P",
            cpus: self.cpus,
            timeout: self.timeout,
        };
        let out = run.run()?;
        let rows = PingpongRow::parse(&out).map_err(|e| format!("{PINGPONG}: {e}"))?;
        match rows.as_slice() {
            [r] => Ok(r.clone()),
            _ => Err(format!(
                "{PINGPONG}: {} result rows for one size",
                rows.len()
            )),
        }
    }
}

/// The provider's figures at one size.
#[derive(Clone, Debug)]
pub struct Floor {
    /// The provider.
    pub provider: String,
    /// Transfer size in bytes.
    pub size: u64,
    /// One-way latency in ns with the first round trip (the connection
    /// set-up) excluded: (T(N) - T(1)) / (2 (N - 1)).
    pub one_way: Stats,
    /// One-way latency in ns as `fi_pingpong` reports it (`usec/xfer`, the
    /// first round trip included).
    pub reported: Stats,
    /// Ping-pong bandwidth in GB/s (10^9 B/s): size / [`one_way`](Self::one_way).
    pub gbs: Stats,
    /// Round trips per timed run.
    pub iters: u64,
    /// The first round trip in ns (median of three runs of one iteration).
    pub first_trip_ns: f64,
}

impl Floor {
    /// The round trip in ns: twice the one-way latency.
    pub fn round_trip(&self) -> Stats {
        self.one_way.scale(2.0)
    }

    /// `fi_pingpong PROV rdm SIZE`, for tables and records.
    pub fn name(&self) -> String {
        format!(
            "{PINGPONG} {} {ENDPOINT} {}",
            self.provider,
            size_label(self.size)
        )
    }
}

/// Measure `fi_pingpong` at `size`: three runs of one round trip (the
/// connection set-up; their median is T(1)), calibration runs, then
/// `reps` runs of about `target` each (see the module documentation).
pub fn measure(pp: &Pingpong, target: Duration, reps: usize) -> Result<Floor, String> {
    // The first round trip: the median of three runs of one (it varies by
    // milliseconds from run to run, and one slow run must not skew all).
    let mut firsts = Vec::with_capacity(FIRST_RUNS);
    for _ in 0..FIRST_RUNS {
        firsts.push(pp.run(1)?.elapsed_us(1));
    }
    let first = Stats::from_samples(&firsts)
        .ok_or("no usable first round trip")?
        .median;
    // One round trip in µs, the connection excluded if the difference is
    // usable (noise can make it non-positive).
    let trip = |t: f64, n: u64| {
        let d = (t - first) / (n.max(2) - 1) as f64;
        if n > 1 && d > 0.0 {
            d
        } else {
            t / n as f64
        }
    };
    // Calibrate: grow the run until the trips after the first clearly
    // outweigh the noise of the first one (the connection set-up varies by
    // milliseconds from run to run), then aim at `target`.
    let target_us = target.as_secs_f64() * 1e6;
    let enough = (target_us / 4.0).max(5_000.0);
    let mut n = PROBE_ITERS;
    let per = loop {
        let t = pp.run(n)?.elapsed_us(n);
        let d = t - first;
        if d >= enough || n >= MAX_ITERS {
            break trip(t, n);
        }
        // Aim at twice `enough`, growing at least 4x, at most 100x.
        let grow = if d > 0.0 {
            (2.0 * enough / d).clamp(4.0, 100.0)
        } else {
            100.0
        };
        n = ((n as f64 * grow) as u64).min(MAX_ITERS);
    }
    .max(1e-3);
    let iters = ((target_us / per).ceil() as u64).clamp(MIN_ITERS, MAX_ITERS);
    let (mut one_way, mut reported, mut gbs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let row = pp.run(iters)?;
        let ow = 1000.0 * trip(row.elapsed_us(iters), iters) / 2.0;
        one_way.push(ow);
        reported.push(row.one_way_ns());
        gbs.push(pp.size as f64 / ow);
    }
    let st = |v: &[f64]| Stats::from_samples(v).ok_or_else(|| "no usable samples".to_owned());
    Ok(Floor {
        provider: pp.provider.clone(),
        size: pp.size,
        one_way: st(&one_way)?,
        reported: st(&reported)?,
        gbs: st(&gbs)?,
        iters,
        first_trip_ns: 1000.0 * first,
    })
}

/// fabtests' `fi_rma_bw` (RMA write flood), if installed. Untested on
/// Debian, which does not package it: its options are those of fabtests
/// 1.10 and later (`-p PROV -e rdm -o write -S SIZE -I N`, ports `-B`/`-P`).
#[derive(Clone, Debug)]
pub struct RmaBw {
    /// The program.
    pub exe: PathBuf,
    /// The provider.
    pub provider: String,
    /// CPUs of the client and the server.
    pub cpus: Option<[usize; 2]>,
    /// Deadline of one run.
    pub timeout: Duration,
}

impl RmaBw {
    /// Bandwidth in GB/s (10^9 B/s) of `iters` RMA writes of `size` bytes.
    pub fn run(&self, size: u64, iters: u64) -> Result<f64, String> {
        let run = PeerRun {
            name: RMA_BW,
            exe: self.exe.clone(),
            provider: self.provider.clone(),
            args: [
                "-p",
                &self.provider,
                "-e",
                ENDPOINT,
                "-o",
                "write",
                "-S",
                &size.to_string(),
                "-I",
                &iters.clamp(1, MAX_ITERS).to_string(),
            ]
            .map(String::from)
            .to_vec(),
            server_port_opt: "-B",
            client_port_opt: "-P",
            cpus: self.cpus,
            timeout: self.timeout,
        };
        let out = run.run()?;
        let rows = PingpongRow::parse(&out).map_err(|e| format!("{RMA_BW}: {e}"))?;
        rows.last()
            .map(|r| r.mb_per_s / 1000.0)
            .ok_or_else(|| format!("{RMA_BW}: no result row"))
    }
}

/// `fi_rma_bw` at one size: (size, GB/s and writes per run, or why not).
pub type RmaBwPoint = (u64, Result<(Stats, u64), String>);

/// Everything a bench measured of its provider.
#[derive(Clone, Debug)]
pub struct ProviderFloor {
    /// The provider.
    pub provider: String,
    /// Why nothing was measured (`fi_pingpong` missing), if so.
    pub missing: Option<String>,
    /// Per size: the floor, or why it failed.
    pub points: Vec<(u64, Result<Floor, String>)>,
    /// `fi_rma_bw` per size, if asked: or why not.
    pub rma_bw: Option<Result<Vec<RmaBwPoint>, String>>,
}

impl ProviderFloor {
    /// Measure `provider` with `fi_pingpong` at each of `sizes`, each run
    /// about `target`, `reps` runs per size; `progress` is told each size.
    pub fn measure(
        provider: &str,
        sizes: &[u64],
        target: Duration,
        reps: usize,
        progress: impl Fn(&str),
    ) -> ProviderFloor {
        let mut f = ProviderFloor {
            provider: provider.to_owned(),
            missing: None,
            points: Vec::new(),
            rma_bw: None,
        };
        let Some(exe) = find_pingpong() else {
            f.missing = Some(format!(
                "{PINGPONG} is not on PATH (Debian: apt-get install libfabric-bin), so there is no provider floor"
            ));
            return f;
        };
        for &size in sizes {
            progress(&format!(
                "the provider floor ({PINGPONG} -p '{provider}' -e {ENDPOINT} -S {size})"
            ));
            let pp = Pingpong::new(exe.clone(), provider, size);
            let r = measure(&pp, target, reps);
            // A provider that is missing fails the same way at every size.
            let stop = matches!(&r, Err(e) if e.contains("fi_getinfo"));
            f.points.push((size, r));
            if stop {
                break;
            }
        }
        f
    }

    /// Also run `fi_rma_bw` at `sizes` (`reps` runs of `iters(size)`
    /// writes each), if it is installed; the report says why not otherwise.
    pub fn measure_rma_bw(&mut self, sizes: &[u64], reps: usize, iters: impl Fn(u64) -> u64) {
        let Some(exe) = find_rma_bw() else {
            self.rma_bw = Some(Err(
                "not on PATH: it is part of fabtests, which Debian does not package (libfabric-bin has fi_pingpong only)"
                    .to_owned(),
            ));
            return;
        };
        let t = RmaBw {
            exe,
            provider: self.provider.clone(),
            cpus: (online_cpus() >= 2).then_some([0, 1]),
            timeout: Duration::from_secs(60),
        };
        let pts = sizes
            .iter()
            .map(|&size| {
                let n = iters(size);
                let r = (0..reps.max(1))
                    .map(|_| t.run(size, n))
                    .collect::<Result<Vec<f64>, String>>()
                    .and_then(|v| Stats::from_samples(&v).ok_or_else(|| "no samples".to_owned()))
                    .map(|s| (s, n));
                (size, r)
            })
            .collect();
        self.rma_bw = Some(Ok(pts));
    }

    /// The floor at `size`, if measured.
    pub fn at(&self, size: u64) -> Option<&Floor> {
        self.points
            .iter()
            .find(|(s, _)| *s == size)
            .and_then(|(_, r)| r.as_ref().ok())
    }

    /// `fi_rma_bw` GB/s at `size`, if measured.
    pub fn rma_bw_at(&self, size: u64) -> Option<Stats> {
        match &self.rma_bw {
            Some(Ok(v)) => v
                .iter()
                .find(|(s, _)| *s == size)
                .and_then(|(_, r)| r.as_ref().ok().map(|(st, _)| *st)),
            _ => None,
        }
    }

    /// The report: a heading, a table of the sizes measured, and what
    /// failed or needs a warning.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let settings = provider_settings(&self.provider);
        let _ = writeln!(
            s,
            "Provider floor: {PINGPONG} -p '{}' -e {ENDPOINT} on 127.0.0.1 (measured in this run{}{})",
            self.provider,
            if settings.is_empty() { "" } else { "; " },
            settings
        );
        if let Some(why) = &self.missing {
            let _ = writeln!(s, "skipped: {why}");
            return s;
        }
        let mut t = Table::new([
            "size",
            "one-way ns",
            "round trip ns (2 x one-way)",
            "reported one-way ns",
            "GB/s (size / one-way)",
            "first trip ns",
            "trips/run",
        ]);
        for (size, r) in &self.points {
            match r {
                Ok(f) => t.row([
                    size_str(*size),
                    spread(&f.one_way),
                    spread(&f.round_trip()),
                    spread(&f.reported),
                    spread(&f.gbs),
                    num(f.first_trip_ns),
                    f.iters.to_string(),
                ]),
                Err(e) => t.row([size_str(*size), format!("failed: {e}")]),
            };
        }
        s.push_str(&t.to_string());
        let _ = writeln!(
            s,
            "one-way = (T(N) - T(1)) / 2(N - 1): fi_pingpong's usec/xfer (\"reported\") is half a round trip, but it also \
             counts the first trip, which opens the connection."
        );
        match &self.rma_bw {
            None => {}
            Some(Err(why)) => {
                let _ = writeln!(s, "{RMA_BW}: skipped ({why})");
            }
            Some(Ok(v)) => {
                for (size, r) in v {
                    match r {
                        Ok((st, n)) => {
                            let _ = writeln!(
                                s,
                                "{RMA_BW} -o write {}: {} GB/s ({n} writes per run)",
                                size_str(*size),
                                spread(st)
                            );
                        }
                        Err(e) => {
                            let _ = writeln!(s, "{RMA_BW} {}: failed: {e}", size_str(*size));
                        }
                    }
                }
            }
        }
        if let Some(note) = provider_note(&self.provider) {
            let _ = writeln!(s, "warning: {note}");
        }
        s
    }

    /// One JSON record per floor figure, under conduit `libfabric` and the
    /// provider, two ranks (the tool's two processes).
    pub fn records(&self, job: &Job) -> Vec<Record> {
        let peer = Job {
            conduit: "libfabric".into(),
            provider: Some(self.provider.clone()),
            ranks: 2,
            ..job.clone()
        };
        let mut v = Vec::new();
        for (size, r) in &self.points {
            let Ok(f) = r else { continue };
            let sz = Some(*size);
            v.push(peer.record(
                "floor: fi_pingpong one-way (first trip excluded)",
                sz,
                &f.one_way,
                "ns",
                f.iters,
            ));
            v.push(peer.record(
                "floor: fi_pingpong round trip (2 x one-way)",
                sz,
                &f.round_trip(),
                "ns",
                f.iters,
            ));
            v.push(peer.record(
                "floor: fi_pingpong one-way as reported (usec/xfer)",
                sz,
                &f.reported,
                "ns",
                f.iters,
            ));
            v.push(peer.record(
                "floor: fi_pingpong bandwidth (size / one-way)",
                sz,
                &f.gbs,
                "GB/s",
                f.iters,
            ));
        }
        if let Some(Ok(pts)) = &self.rma_bw {
            for (size, r) in pts {
                if let Ok((st, n)) = r {
                    v.push(peer.record("floor: fi_rma_bw write", Some(*size), st, "GB/s", *n));
                }
            }
        }
        v
    }
}

/// A size for people: `8 B`, `64K`, `4M`.
///
/// ```
/// use rgex_benches::fabric::size_label;
/// assert_eq!((size_label(8), size_label(65536)), ("8 B".to_owned(), "64K".to_owned()));
/// ```
pub fn size_label(n: u64) -> String {
    let s = size_str(n);
    if s.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{s} B")
    } else {
        s
    }
}

/// `x / floor` as `1.07x`, or `-` without a floor.
pub fn ratio(x: f64, floor: Option<f64>) -> String {
    match floor {
        Some(f) if f > 0.0 => format!("{:.2}x", x / f),
        _ => "-".into(),
    }
}

/// A latency against [`LATENCY_TARGET`] times `floor`: `met` or
/// `MISSED`; or [`NO_FLOOR`] when `x` is under [`SUSPECT_BELOW`] times
/// it (the raw tool then measured something slower than a floor).
///
/// ```
/// use rgex_benches::fabric::{verdict, NO_FLOOR};
/// assert_eq!(verdict(110.0, 100.0), "met");
/// assert_eq!(verdict(120.0, 100.0), "MISSED");
/// assert_eq!(verdict(30.0, 100.0), NO_FLOOR);
/// ```
pub fn verdict(x: f64, floor: f64) -> &'static str {
    if x < SUSPECT_BELOW * floor {
        NO_FLOOR
    } else if x <= LATENCY_TARGET * floor {
        "met"
    } else {
        "MISSED"
    }
}

/// Below this fraction of the provider's own figure, that figure is no
/// floor: rgex runs over the same provider, so it cannot be twice as
/// fast as the provider's raw latency. It happens with `sockets`, whose
/// fi_pingpong runs with automatic progress (a provider thread moves
/// every message, and fi_pingpong has no option to progress manually, as
/// rgex does): 140 us round trips against rgex's 14 us.
pub const SUSPECT_BELOW: f64 = 0.5;

/// What [`verdict`] says when the floor is suspect.
pub const NO_FLOOR: &str = "no floor";

/// The explanation printed under a table with a [`NO_FLOOR`] verdict.
pub const NO_FLOOR_NOTE: &str = "no floor: rgex ran in under half the provider tool's time over the same provider, so the tool measured something slower than the provider itself (sockets: fi_pingpong runs with the provider's automatic progress thread, and has no option for the manual progress rgex asks for); no target verdict";
