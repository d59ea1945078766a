//! The UCX peer tool: `ucx_perftest` over shared memory on loopback.
//!
//! A run starts a server (`ucx_perftest -p PORT`) and a client
//! (`ucx_perftest 127.0.0.1 -p PORT -t TEST -n ITERS -f -v`), both with
//! `UCX_TLS` limiting UCX to shared-memory transports, and parses the
//! client's CSV summary. Only 127.0.0.1 is ever contacted.
//!
//! `ucx_perftest` latency tests report one-way latency (half a round trip)
//! in microseconds; callers comparing with a round trip must double it.

use crate::proc::{find_exe, free_port, last_line, Running};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The name of UCX's benchmark program.
pub const PERFTEST: &str = "ucx_perftest";

/// `ucx_perftest` on `PATH`, if installed (Debian: `ucx-utils`).
pub fn find_perftest() -> Option<PathBuf> {
    find_exe(PERFTEST)
}

/// The final summary of a `ucx_perftest -f -v` run: its CSV columns.
#[derive(Clone, Debug, PartialEq)]
pub struct PerfResult {
    fields: Vec<(String, f64)>,
}

impl PerfResult {
    /// Parse the CSV summary (a header line starting `iterations,` and the
    /// line of values after it) from `ucx_perftest -f -v` output.
    ///
    /// ```
    /// let out = "iterations,50.0_percentile_lat,avg_lat,overall_lat\n300000,0.101,0.308,0.308\n";
    /// let r = rgex_benches::ucx::PerfResult::parse(out).unwrap();
    /// assert_eq!(r.get("overall_lat"), Some(0.308));
    /// assert_eq!(r.get("iterations"), Some(300000.0));
    /// ```
    pub fn parse(stdout: &str) -> Result<PerfResult, String> {
        let mut lines = stdout.lines().map(str::trim);
        let header = lines
            .by_ref()
            .find(|l| l.starts_with("iterations,"))
            .ok_or_else(|| {
                "no CSV summary (a line starting \"iterations,\") in its output".to_owned()
            })?;
        let values = lines
            .find(|l| !l.is_empty())
            .ok_or_else(|| "the CSV summary has a header but no values".to_owned())?;
        let fields: Vec<(String, f64)> = header
            .split(',')
            .zip(values.split(','))
            .filter_map(|(k, v)| v.trim().parse().ok().map(|v| (k.trim().to_owned(), v)))
            .collect();
        if fields.is_empty() {
            return Err(format!("could not parse the CSV values {values:?}"));
        }
        Ok(PerfResult { fields })
    }

    /// The value of column `name` (e.g. `overall_lat`, `avg_lat`,
    /// `50.0_percentile_lat` in microseconds, `overall_bw` in MB/s).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// One `ucx_perftest` client/server run on loopback.
#[derive(Clone, Debug)]
pub struct Perftest {
    /// The program.
    pub exe: PathBuf,
    /// The test (`ucp_am_lat`, `ucp_put_lat`, `ucp_put_bw`, ...).
    pub test: String,
    /// Iterations (`-n`).
    pub iters: u64,
    /// Further client arguments (e.g. `["-s", "4096"]`).
    pub extra: Vec<String>,
    /// `UCX_TLS`: the transports UCX may use (shared memory only).
    pub tls: String,
    /// CPUs for the client and the server (`-c`); `None` leaves them to
    /// inherit this process's affinity.
    pub cpus: Option<[usize; 2]>,
    /// Give up (and kill both processes) after this long.
    pub timeout: Duration,
}

impl Perftest {
    /// A run of `test` with `iters` iterations over `posix,self`.
    pub fn new(exe: PathBuf, test: &str, iters: u64) -> Self {
        Perftest {
            exe,
            test: test.to_owned(),
            iters,
            extra: Vec::new(),
            tls: "posix,self".to_owned(),
            cpus: None,
            timeout: Duration::from_secs(60),
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.exe);
        c.env("UCX_TLS", &self.tls)
            .env("UCX_NET_DEVICES", "lo")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Run server and client; the client's summary, or why it failed.
    pub fn run(&self) -> Result<PerfResult, String> {
        let port = free_port().map_err(|e| format!("find a free loopback port: {e}"))?;
        let port = port.to_string();
        let mut server = self.command();
        server.args(["-p", &port]);
        if let Some([_, cpu]) = self.cpus {
            server.args(["-c", &cpu.to_string()]);
        }
        let mut server =
            Running::spawn(PERFTEST, server).map_err(|e| format!("start the server: {e}"))?;
        let deadline = Instant::now() + self.timeout;
        let mut client_failure = String::new();
        // The server needs a moment to listen: retry a refused client.
        for _ in 0..50 {
            let mut client = self.command();
            client
                .arg("127.0.0.1")
                .args([
                    "-p",
                    &port,
                    "-t",
                    &self.test,
                    "-n",
                    &self.iters.to_string(),
                    "-f",
                    "-v",
                ])
                .args(&self.extra);
            if let Some([cpu, _]) = self.cpus {
                client.args(["-c", &cpu.to_string()]);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let done = Running::spawn(PERFTEST, client)
                .map_err(|e| format!("start the client: {e}"))?
                .finish(left);
            match done {
                Ok(f) if f.status.success() => {
                    let _ = server.finish(Duration::from_secs(5));
                    return PerfResult::parse(&f.stdout);
                }
                Ok(f) => {
                    client_failure =
                        format!("client {}: {}", f.status, last_line(&f.stderr, &f.stdout));
                    // UCX logs to stdout by default.
                    let refused = f.stderr.contains("refused") || f.stdout.contains("refused");
                    if !refused || server.exited() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    client_failure = e;
                    break;
                }
            }
        }
        let server_said = if server.exited() {
            match server.finish(Duration::ZERO) {
                Ok(f) => format!("server {}: {}", f.status, last_line(&f.stderr, &f.stdout)),
                Err(e) => format!("server: {e}"),
            }
        } else {
            // Dropping it kills it (our own child, by its handle).
            drop(server);
            "the server was still waiting and was stopped".to_owned()
        };
        Err(format!("{client_failure}; {server_said}"))
    }
}

impl Perftest {
    /// Set the message size (`-s SIZE`), replacing any earlier one.
    pub fn size(mut self, size: u64) -> Self {
        if let Some(i) = self.extra.iter().position(|a| a == "-s") {
            self.extra.drain(i..(i + 2).min(self.extra.len()));
        }
        self.extra.extend(["-s".to_owned(), size.to_string()]);
        self
    }

    /// Run `reps` times (at least once) and summarise each of `columns`
    /// of the CSV summaries (as reported: microseconds, MB/s, ...), in
    /// the order asked. Fails on the first run that fails or lacks a column.
    pub fn repeat(
        &self,
        reps: usize,
        columns: &[&str],
    ) -> Result<Vec<crate::stats::Stats>, String> {
        let mut samples = vec![Vec::new(); columns.len()];
        for _ in 0..reps.max(1) {
            let r = self.run()?;
            for (c, v) in columns.iter().zip(samples.iter_mut()) {
                v.push(
                    r.get(c)
                        .ok_or_else(|| format!("no {c} column in its summary"))?,
                );
            }
        }
        samples
            .iter()
            .map(|v| {
                crate::stats::Stats::from_samples(v).ok_or_else(|| "no usable samples".to_owned())
            })
            .collect()
    }
}

/// `ucx_perftest` bandwidth (MB/s, where its MB is 2^20 bytes) in GB/s
/// (10^9 bytes per second).
///
/// ```
/// assert!((rgex_benches::ucx::mbs_to_gbs(1000.0) - 1.048576).abs() < 1e-12);
/// ```
pub fn mbs_to_gbs(mbs: f64) -> f64 {
    mbs * 1_048_576.0 / 1e9
}
