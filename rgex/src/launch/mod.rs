//! Launching a job of N ranks on this node: the library behind `rgex-run`.
//!
//! A [`Job`] starts N processes of one program. Each gets its place in the
//! job through the environment (read by
//! [`JobEnv`](rgex_core::bootstrap::JobEnv)):
//!
//! | variable | value |
//! |---|---|
//! | `RGEX_RANK`, `RGEX_SIZE` | the rank, the number of ranks |
//! | `RGEX_BOOTSTRAP` | the launcher's bootstrap socket ([`BootstrapServer`]) |
//! | `RGEX_JOB` | a job id unique on the node, `[0-9a-z]` only |
//! | `RGEX_CONDUIT` | the conduit, when one was chosen |
//! | `RGEX_POLITE` | `1` when there are more ranks than CPUs |
//! | `IPATH_NO_BACKTRACE`, `HFI_NO_BACKTRACE` | `1` unless set already: the PSM libraries libfabric loads would otherwise turn a rank's SIGSEGV or SIGABRT into `exit(1)` |
//!
//! The launcher forwards every line the ranks write, prefixed with `[R] `,
//! stops the whole job at the first rank that fails (and reports it), and
//! afterwards removes the socket's directory and any `/dev/shm/rgex-<job>-*`
//! object the job left behind.
//!
//! ```no_run
//! use rgex::launch::Job;
//! let outcome = Job::new(4, "./my-program").args(["--size", "1M"]).run().unwrap();
//! std::process::exit(outcome.status);
//! ```

mod cleanup;
pub mod cli;
mod output;
mod server;
mod signals;
mod spawn;
pub mod stats_table;
mod supervise;

pub use server::BootstrapServer;
pub use signals::{catch_termination_signals, signal_name};

use output::{note, Forwarders, ReportEnds, Sink};
use rgex_core::{Error, Result};
use spawn::RankTemplate;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supervise::RankProc;

/// How long the ranks' pipes may stay open after the last rank exited
/// (held by something a rank started in the background) before their
/// remaining output is abandoned.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How a job ended.
///
/// ```
/// use rgex::launch::JobOutcome;
/// let ok = JobOutcome { status: 0, failure: None };
/// assert!(ok.success());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    /// The job's exit status: 0 if every rank exited 0; the status a rank
    /// asked the job to end with (OpenSHMEM's `shmem_global_exit`); else
    /// the first failing rank's exit status, or 128 + N if it was killed
    /// by signal N;
    /// 124 if the job timed out; 128 + N if the launcher got signal N.
    pub status: i32,
    /// What went wrong, naming the rank (for example `rank 2 (pid 4242)
    /// exited with status 3`); `None` on success.
    pub failure: Option<String>,
}

impl JobOutcome {
    /// Every rank exited with status 0.
    pub fn success(&self) -> bool {
        self.status == 0 && self.failure.is_none()
    }
}

/// A job to launch: N ranks of one program on this node.
///
/// ```
/// use rgex::launch::Job;
/// use std::time::Duration;
/// let (outcome, stdout, _stderr) = Job::new(2, "/bin/sh")
///     .args(["-c", "echo rank $RGEX_RANK"])
///     .conduit(Some("smp".into()))
///     .timeout(Some(Duration::from_secs(60)))
///     .run_captured()
///     .unwrap();
/// assert!(outcome.success());
/// assert!(stdout.contains("[1] rank 1\n"));
/// ```
#[derive(Clone, Debug)]
pub struct Job {
    size: u32,
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    conduit: Option<String>,
    bind: bool,
    timeout: Option<Duration>,
}

impl Job {
    /// `n` ranks of `program` (looked up in `PATH` if it has no `/`).
    ///
    /// ```no_run
    /// let job = rgex::launch::Job::new(8, "hostname");
    /// ```
    pub fn new(n: u32, program: impl Into<PathBuf>) -> Self {
        Job {
            size: n,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            conduit: None,
            bind: false,
            timeout: None,
        }
    }

    /// Append arguments for every rank, passed through untouched.
    ///
    /// ```no_run
    /// let job = rgex::launch::Job::new(2, "ls").args(["-l", "/"]);
    /// ```
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The conduit every rank uses (`RGEX_CONDUIT`); `None` leaves the
    /// choice to the ranks (and to an inherited `RGEX_CONDUIT`).
    ///
    /// ```no_run
    /// let job = rgex::launch::Job::new(2, "./app").conduit(Some("smp".to_string()));
    /// ```
    pub fn conduit(mut self, conduit: Option<String>) -> Self {
        self.conduit = conduit;
        self
    }

    /// Pin rank i to the (i mod count)-th of the CPUs the launcher may
    /// run on (Linux only).
    ///
    /// ```no_run
    /// let job = rgex::launch::Job::new(4, "./app").bind(true);
    /// ```
    pub fn bind(mut self, bind: bool) -> Self {
        self.bind = bind;
        self
    }

    /// Set an environment variable for every rank.
    ///
    /// ```no_run
    /// let job = rgex::launch::Job::new(2, "./app").env("RGEX_SEGMENT_SIZE", "64M");
    /// ```
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Kill the whole job if it runs longer than this; the job then fails
    /// with status 124, naming the ranks still running. Before the kill,
    /// each rank still running that has reached `rgex::init` is asked
    /// (by SIGUSR1) what its threads are blocked on, and prints it (see
    /// [`rgex_core::blocked`]); the launcher waits a few seconds at most
    /// for those lines.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let job = rgex::launch::Job::new(2, "./app").timeout(Some(Duration::from_secs(30)));
    /// ```
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Run the job to its end, forwarding the ranks' output to this
    /// process's stdout and stderr. `Err` only if it could not be started
    /// (no rank is left running then); a failing rank is an `Ok` outcome
    /// with a non-zero status.
    ///
    /// ```no_run
    /// let outcome = rgex::launch::Job::new(2, "true").run().unwrap();
    /// assert_eq!(outcome.status, 0);
    /// ```
    pub fn run(&self) -> Result<JobOutcome> {
        let out: Sink = Arc::new(Mutex::new(std::io::stdout()));
        let err: Sink = Arc::new(Mutex::new(std::io::stderr()));
        self.run_with(&out, &err)
    }

    /// [`run`](Self::run), but collect what would have gone to stdout and
    /// stderr (the ranks' prefixed lines and the launcher's messages).
    ///
    /// ```
    /// let (outcome, out, _err) = rgex::launch::Job::new(1, "echo").args(["hi"]).run_captured().unwrap();
    /// assert_eq!(out, "[0] hi\n");
    /// ```
    pub fn run_captured(&self) -> Result<(JobOutcome, String, String)> {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let err = Arc::new(Mutex::new(Vec::<u8>::new()));
        let (out_sink, err_sink): (Sink, Sink) = (out.clone(), err.clone());
        let outcome = self.run_with(&out_sink, &err_sink)?;
        let take = |buf: &Mutex<Vec<u8>>| {
            let bytes = std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()));
            String::from_utf8_lossy(&bytes).into_owned()
        };
        Ok((outcome, take(&out), take(&err)))
    }

    fn check(&self) -> Result<()> {
        if self.size == 0 {
            return Err(Error::Config(
                "a job needs at least 1 rank; 0 were asked for".into(),
            ));
        }
        if self.program.as_os_str().is_empty() {
            return Err(Error::Config("no program to launch (empty name)".into()));
        }
        if self.conduit.as_deref().is_some_and(str::is_empty) {
            return Err(Error::Config("the conduit name is empty".into()));
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::Config(
                "a job timeout must be longer than 0 s".into(),
            ));
        }
        Ok(())
    }

    fn run_with(&self, out: &Sink, err: &Sink) -> Result<JobOutcome> {
        self.check()?;
        let cpus = if self.bind {
            spawn::allowed_cpus()?
        } else {
            Vec::new()
        };
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let job = cleanup::job_id();
        let (socket, server) = BootstrapServer::start(self.size)?;
        let template = RankTemplate {
            program: &self.program,
            args: &self.args,
            env: &self.env,
            size: self.size,
            socket: &socket,
            job: &job,
            conduit: self.conduit.as_deref(),
            polite: self.size as usize > ncpus,
            cpus: &cpus,
        };
        let mut procs = Vec::with_capacity(self.size as usize);
        let mut forwarders = Forwarders::new();
        let ends = ReportEnds::new(self.size);
        let mut start_error = None;
        for rank in 0..self.size {
            match template.spawn(rank) {
                Ok(mut child) => {
                    if let Some(pipe) = child.stdout.take() {
                        forwarders.forward(rank, "stdout", pipe, out, err, None);
                    }
                    if let Some(pipe) = child.stderr.take() {
                        let ends = Some(ends.clone());
                        forwarders.forward(rank, "stderr", pipe, err, err, ends);
                    }
                    procs.push(RankProc::new(rank, child));
                }
                Err(e) => {
                    start_error = Some(e);
                    break;
                }
            }
        }
        let outcome = match start_error {
            Some(e) => {
                supervise::kill_and_reap(&mut procs);
                Err(e)
            }
            None => Ok(supervise::supervise(
                &mut procs,
                &server,
                self.timeout,
                err,
                &ends,
            )),
        };
        server.close();
        forwarders.finish(OUTPUT_GRACE);
        // libfabric's shm provider files of ranks that could not remove
        // their own (killed): the provider's, not rgex's, so not reported
        // as rgex's leftovers below.
        let pids: Vec<u32> = procs.iter().map(|p| p.child.id()).collect();
        let theirs = cleanup::sweep_rank_files(&pids);
        note_removed(
            err,
            &format!("libfabric shared-memory files of job {job}'s ranks"),
            &theirs,
        );
        let removed = cleanup::sweep_shm(&job);
        note_removed(
            err,
            &format!("shared memory left behind by job {job}"),
            &removed,
        );
        outcome
    }
}

/// Tell `err` which of `what` the launcher removed, if any.
fn note_removed(err: &Sink, what: &str, paths: &[std::path::PathBuf]) {
    if !paths.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        note(err, &format!("removed {what}: {}", names.join(", ")));
    }
}
