//! The `rgex-run` command line.
//!
//! ```text
//! rgex-run -n N [--conduit C] [--bind] [--timeout SECS] [--stats] PROGRAM [ARGS...]
//! ```
//!
//! Everything after PROGRAM goes to the program untouched, even arguments
//! that look like options. Exit status: the job's (see
//! [`JobOutcome::status`](super::JobOutcome::status)); 2 for a usage error;
//! 127 if the program cannot be found, 126 if it cannot be executed, 1 for
//! other launch errors.

use super::{catch_termination_signals, Job};
use rgex_core::Error;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Exit status of a usage error.
pub const USAGE_STATUS: i32 = 2;

/// The conduits `--conduit` accepts.
pub const CONDUITS: [&str; 4] = ["smp", "ofi", "ibv", "scc"];

const USAGE: &str =
    "usage: rgex-run -n N [--conduit C] [--bind] [--timeout SECS] [--stats] PROGRAM [ARGS...]";

const HELP: &str = "\
Start N ranks of PROGRAM on this node, forward their output with [rank]
prefixes, and end the whole job at the first rank that fails.

options:
  -n N, -nN, --np N   number of ranks (at least 1)
  --conduit C         the ranks' conduit: smp, ofi, ibv or scc (sets RGEX_CONDUIT)
  --bind              pin rank i to the (i mod count)-th CPU the launcher may use
  --timeout SECS      kill the job if it runs longer than SECS seconds (status 124),
                      after each rank still running has said what it waits on
  --stats             count (RGEX_STATS, all categories unless set) and print the
                      job's table on stderr at its end: totals, each rank's share
  -h, --help          print this help

Everything after PROGRAM is passed to it untouched (use -- before a
PROGRAM whose name starts with '-').

Settings that help when a job is stuck or a rank dies (rgex-info lists them):
RGEX_BACKTRACE=1 (a backtrace of every thread at a crash), RGEX_FREEZE=1 and
RGEX_FREEZE_ON_ERROR=1 (stop for gdb -p PID first), RGEX_FREEZE_SECS.
When it is slow: --stats, RGEX_STATS, RGEX_TRACE=am,rma,... (RGEX_TRACE_FILE).

Exit status: 0 if every rank exited 0; otherwise the first failing rank's
status (128+N if it was killed by signal N), 124 on timeout, 128+N if the
launcher got signal N, 2 for a usage error, 127 if PROGRAM was not found.";

/// A parsed command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `-h` / `--help`.
    Help,
    /// Launch a job.
    Run(Options),
}

/// What `rgex-run` was asked to launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Number of ranks.
    pub ranks: u32,
    /// `--conduit`.
    pub conduit: Option<String>,
    /// `--bind`.
    pub bind: bool,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--stats`.
    pub stats: bool,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Options {
    /// The job these options describe.
    ///
    /// ```
    /// use rgex::launch::cli::{parse, Command};
    /// let Command::Run(opts) = parse(["-n", "2", "true"]).unwrap() else { unreachable!() };
    /// let job = opts.job();
    /// ```
    pub fn job(&self) -> Job {
        Job::new(self.ranks, self.program.clone())
            .args(self.args.iter().cloned())
            .conduit(self.conduit.clone())
            .bind(self.bind)
            .timeout(self.timeout)
    }
}

/// A usage error: what was wrong with the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

fn parse_ranks(v: &str) -> Result<u32, UsageError> {
    match v.parse::<u32>() {
        Ok(0) => Err(usage("-n must be at least 1")),
        Ok(n) => Ok(n),
        Err(_) => Err(usage(format!("-n expects a number of ranks, not {v:?}"))),
    }
}

fn parse_timeout(v: &str) -> Result<Duration, UsageError> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(usage(format!(
            "--timeout expects a positive number of seconds, not {v:?}"
        ))),
    }
}

fn parse_conduit(v: &str) -> Result<String, UsageError> {
    if CONDUITS.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(usage(format!(
            "unknown conduit {v:?} (expected one of: {})",
            CONDUITS.join(", ")
        )))
    }
}

/// Parse the arguments after the program name.
///
/// ```
/// use rgex::launch::cli::{parse, Command};
/// let Command::Run(o) = parse(["-n4", "--bind", "./app", "-n", "9"]).unwrap() else { panic!() };
/// assert_eq!((o.ranks, o.bind), (4, true));
/// assert_eq!(o.args, ["-n", "9"]);
/// assert!(parse(["-n", "0", "./app"]).is_err());
/// ```
pub fn parse<I, S>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut it = args.into_iter().map(Into::into);
    let mut ranks = None;
    let mut conduit = None;
    let mut bind = false;
    let mut timeout = None;
    let mut stats = false;
    let program = loop {
        let Some(arg) = it.next() else {
            return Err(usage("no PROGRAM given"));
        };
        let Some(text) = arg.to_str() else {
            if arg.to_string_lossy().starts_with('-') {
                return Err(usage(format!("unknown option {arg:?}")));
            }
            break arg;
        };
        if !text.starts_with('-') || text == "-" {
            break arg;
        }
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (text, None),
        };
        let mut value = |what: &str| -> Result<String, UsageError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            match it.next() {
                Some(v) => v
                    .into_string()
                    .map_err(|v| usage(format!("{what}: {v:?} is not valid UTF-8"))),
                None => Err(usage(format!("{what} needs a value"))),
            }
        };
        match name {
            "--" => match it.next() {
                Some(p) => break p,
                None => return Err(usage("no PROGRAM given after --")),
            },
            "-h" | "--help" => return Ok(Command::Help),
            "-n" | "--np" => ranks = Some(parse_ranks(&value(name)?)?),
            "--conduit" => conduit = Some(parse_conduit(&value(name)?)?),
            "--timeout" => timeout = Some(parse_timeout(&value(name)?)?),
            "--bind" if inline.is_none() => bind = true,
            "--stats" if inline.is_none() => stats = true,
            _ if name.starts_with("-n") && !name.starts_with("--") => {
                ranks = Some(parse_ranks(&name[2..])?);
            }
            _ => return Err(usage(format!("unknown option {text:?}"))),
        }
    };
    let ranks = ranks.ok_or_else(|| usage("the number of ranks is missing (-n N)"))?;
    Ok(Command::Run(Options {
        ranks,
        conduit,
        bind,
        timeout,
        stats,
        program: PathBuf::from(program),
        args: it.collect(),
    }))
}

/// Exit status for a job that could not be started.
fn launch_error_status(e: &Error) -> i32 {
    match e {
        Error::Os { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => 127,
            std::io::ErrorKind::PermissionDenied => 126,
            _ => 1,
        },
        _ => 1,
    }
}

/// Run `rgex-run` with this process's arguments and return its exit status.
///
/// ```no_run
/// std::process::exit(rgex::launch::cli::main());
/// ```
pub fn main() -> i32 {
    let command = match parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rgex-run: {e}\n{USAGE}\nTry 'rgex-run --help' for more.");
            return USAGE_STATUS;
        }
    };
    let opts = match command {
        Command::Help => {
            println!("{USAGE}\n\n{HELP}");
            return 0;
        }
        Command::Run(opts) => opts,
    };
    if let Err(e) = catch_termination_signals() {
        eprintln!("rgex-run: {e}");
        return 1;
    }
    let mut job = opts.job();
    // --stats: every rank writes its counts into a directory of this
    // launcher's, read back into one table at the end.
    let stats_dir = opts.stats.then(|| {
        let d = std::env::temp_dir().join(format!("rgex-run-stats-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    });
    if let Some(d) = &stats_dir {
        if std::env::var_os("RGEX_STATS").is_none() {
            job = job.env("RGEX_STATS", "1");
        }
        job = job.env("RGEX_STATS_FILE", d.join("%r.json"));
    }
    let status = match job.run() {
        Ok(outcome) => outcome.status,
        Err(e) => {
            eprintln!("rgex-run: {e}");
            launch_error_status(&e)
        }
    };
    if let Some(d) = &stats_dir {
        let (ranks, missing) = super::stats_table::read(d, opts.ranks);
        eprint!("{}", super::stats_table::render(&ranks));
        if !missing.is_empty() {
            eprintln!("rgex-run --stats: no counts from ranks {missing:?} (they did not reach finalize or exit)");
        }
        let _ = std::fs::remove_dir_all(d);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Options {
        match parse(args.iter().copied()) {
            Ok(Command::Run(o)) => o,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    fn err(args: &[&str]) -> String {
        match parse(args.iter().copied()) {
            Err(UsageError(m)) => m,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    #[test]
    fn forms_of_n() {
        assert_eq!(run(&["-n", "3", "p"]).ranks, 3);
        assert_eq!(run(&["-n3", "p"]).ranks, 3);
        assert_eq!(run(&["--np", "5", "p"]).ranks, 5);
        assert_eq!(run(&["--np=6", "p"]).ranks, 6);
    }

    #[test]
    fn options() {
        let o = run(&[
            "--conduit",
            "smp",
            "--bind",
            "-n",
            "2",
            "--timeout",
            "1.5",
            "prog",
            "--bind",
            "-x",
        ]);
        assert_eq!(o.conduit.as_deref(), Some("smp"));
        assert!(o.bind);
        assert!(!o.stats);
        assert!(run(&["--stats", "-n", "1", "p"]).stats);
        assert_eq!(o.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(o.program, PathBuf::from("prog"));
        assert_eq!(o.args, ["--bind", "-x"]);
        assert_eq!(
            run(&["-n", "1", "--", "-weird"]).program,
            PathBuf::from("-weird")
        );
    }

    #[test]
    fn usage_errors() {
        assert!(err(&["-n", "0", "p"]).contains("at least 1"));
        assert!(err(&["-n", "x", "p"]).contains("number of ranks"));
        assert!(err(&["-n", "2"]).contains("no PROGRAM"));
        assert!(err(&["p"]).contains("-n N"));
        assert!(err(&["-n", "2", "--frob", "p"]).contains("--frob"));
        assert!(err(&["-n", "2", "--conduit", "udp", "p"]).contains("udp"));
        assert!(err(&["-n", "2", "--timeout", "-1", "p"]).contains("--timeout"));
        assert!(err(&["-n"]).contains("needs a value"));
        assert_eq!(parse(["--help"]), Ok(Command::Help));
    }
}
