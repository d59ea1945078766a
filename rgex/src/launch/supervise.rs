//! Supervising the ranks: wait for all of them; at the first failure (a
//! non-zero exit, a signal, the timeout, a signal to the launcher) kill
//! the others and report it.

use super::output::{note, ReportEnds, Sink};
use super::server::BootstrapServer;
use super::signals::{received, signal_name};
use super::JobOutcome;
use rgex_core::liveness::Owner;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// How often the ranks are polled for exit.
const POLL: Duration = Duration::from_millis(5);
/// How long a failure waits to be judged while a rank that said it was
/// leaving earlier is still ending (see `supervise`). Only a job that is
/// ending anyway waits it, and only while such a rank runs: generous,
/// since a rank that panicked prints its backtrace, unwinds and runs its
/// exit hooks in that time, which took over 2 s on a loaded machine
/// (the faults test's blame of a panicking rank failed once at 2 s).
const BLAME_GRACE: Duration = Duration::from_secs(6);

/// How long the timeout waits for the ranks it asked to report what they
/// wait on (each that does ends it sooner).
const REPORT_WAIT: Duration = Duration::from_secs(3);

/// Status when the job outlived its timeout (as `timeout(1)` reports).
pub(crate) const TIMEOUT_STATUS: i32 = 124;

/// One started rank.
#[derive(Debug)]
pub(crate) struct RankProc {
    pub(crate) rank: u32,
    pub(crate) child: Child,
    /// Not yet reaped: its pid (and process group) still belongs to it.
    pub(crate) running: bool,
}

impl RankProc {
    pub(crate) fn new(rank: u32, child: Child) -> Self {
        RankProc {
            rank,
            child,
            running: true,
        }
    }

    /// SIGKILL the rank and its process group (anything it started).
    fn kill(&mut self) {
        if !self.running {
            // Reaped: the pid may belong to someone else by now.
            return;
        }
        let Ok(pid) = libc::pid_t::try_from(self.child.id()) else {
            return;
        };
        // SAFETY: kill(2) has no memory-safety preconditions. The rank is
        // not reaped yet, so `pid` and the group `-pid` (the rank leads its
        // own group) still refer to it and what it started.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        // The rank may have left its group; reach it directly as well.
        let _ = self.child.kill();
    }
}

/// Kill every rank not yet reaped and wait for them.
pub(crate) fn kill_and_reap(procs: &mut [RankProc]) {
    for p in procs.iter_mut() {
        p.kill();
    }
    for p in procs.iter_mut().filter(|p| p.running) {
        let _ = p.child.wait();
        p.running = false;
    }
}

/// The job's status and message for a rank's exit, `None` for success.
fn describe(rank: u32, pid: u32, status: ExitStatus) -> Option<(i32, String)> {
    if let Some(code) = status.code() {
        return (code != 0).then(|| {
            (
                code,
                format!("rank {rank} (pid {pid}) exited with status {code}"),
            )
        });
    }
    let sig = status.signal()?;
    let name = signal_name(sig)
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let core = if status.core_dumped() {
        ", dumping core"
    } else {
        ""
    };
    Some((
        128 + sig,
        format!("rank {rank} (pid {pid}) was killed by signal {sig}{name}{core}"),
    ))
}

/// Whether process `pid` catches signal `sig` (its `SigCgt` mask in
/// /proc): one that does not would be killed by it.
fn catches(pid: u32, sig: libc::c_int) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| sig >= 1 && mask & (1 << (sig - 1)) != 0)
}

/// Ask every rank still running what it waits on (SIGUSR1, to those that
/// catch it: the ranks past `rgex::init`), and wait up to [`REPORT_WAIT`]
/// for each to finish its report on stderr; say which did not.
fn ask_what_they_wait_on(procs: &[RankProc], ends: &ReportEnds, notes: &Sink) {
    let mut asked = Vec::new();
    for p in procs.iter().filter(|p| p.running) {
        let pid = p.child.id();
        if !catches(pid, crate::blocked_report::SIGNAL) {
            note(
                notes,
                &format!(
                    "rank {} (pid {pid}) does not answer SIGUSR1 (it has not reached rgex::init, \
                     or is not an rgex program): it cannot say what it waits on",
                    p.rank
                ),
            );
            continue;
        }
        let before = ends.count(p.rank);
        let Ok(pid_t) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: kill(2) has no memory-safety preconditions; the rank is
        // not reaped, so its pid is still its.
        if unsafe { libc::kill(pid_t, crate::blocked_report::SIGNAL) } == 0 {
            asked.push((p.rank, before));
        }
    }
    let until = Instant::now() + REPORT_WAIT;
    while Instant::now() < until && asked.iter().any(|&(r, b)| ends.count(r) <= b) {
        std::thread::sleep(POLL);
    }
    for (rank, _) in asked.iter().filter(|&&(r, b)| ends.count(r) <= b) {
        note(
            notes,
            &format!(
                "rank {rank} did not finish its report of what it waits on in {} s",
                REPORT_WAIT.as_secs()
            ),
        );
    }
}

fn rank_list(ranks: &[u32]) -> String {
    ranks
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Wait for every rank. The first failure ends the job: the message goes
/// to `notes`, the ranks still running are killed, and its status is the
/// job's.
pub(crate) fn supervise(
    procs: &mut [RankProc],
    server: &BootstrapServer,
    timeout: Option<Duration>,
    notes: &Sink,
    ends: &ReportEnds,
) -> JobOutcome {
    let deadline = timeout.map(|t| (t, Instant::now() + t));
    let mut outcome: Option<JobOutcome> = None;
    // The failures found and not yet judged, with when each rank began to
    // leave: several ranks may have ended since the last poll, or a rank
    // that began to leave first may still be ending (its exit hooks
    // drain the network), and the first to leave is the one to blame
    // (the others most likely failed because it had gone, and found out
    // fast). Judged at once, or within BLAME_GRACE of the first failure.
    let mut failures = Vec::new();
    let mut judge_by: Option<Instant> = None;
    loop {
        for p in procs.iter_mut().filter(|p| p.running) {
            let pid = p.child.id();
            let mut killed = false;
            let status = match p.child.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) => {
                    killed = status.signal().is_some();
                    describe(p.rank, pid, status)
                }
                Err(e) => Some((
                    1,
                    format!("cannot wait for rank {} (pid {pid}): {e}", p.rank),
                )),
            };
            p.running = false;
            server.rank_exited(p.rank);
            if let Some(s) = status {
                failures.push((killed, p.rank, s));
            }
        }
        // A rank killed by a signal first: it did not choose to end, while
        // ranks that exit with a status after it are most likely reporting
        // its loss (and its end is known only when the server gets to its
        // closed connection, later than it happened). Then the first to
        // leave by its own word; a rank whose leaving was not seen (it
        // never connected, or the server has not looked yet) after those
        // whose was; then by rank.
        // (Asked again at each poll: the server may learn of a leaving
        // after the launcher reaped the rank.)
        let first = failures
            .iter()
            .map(|(killed, rank, s)| (*killed, server.left_at(*rank), *rank, s))
            .min_by_key(|&(killed, at, rank, _)| (!killed, at.is_none(), at, rank));
        // A rank still running that said it was leaving before the first
        // failure (or before one whose leaving was not seen) may be the
        // one to blame: wait for it, a while.
        let earlier_leaver = first.as_ref().is_some_and(|&(killed, at, _, _)| {
            !killed
                && procs.iter().filter(|p| p.running).any(|p| {
                    server
                        .left_at(p.rank)
                        .is_some_and(|l| at.is_none_or(|at| l < at))
                })
        });
        // A rank still running by the launcher's account whose process
        // has died: a killed process with several threads is a zombie
        // while its other threads exit, and is reaped only after them.
        // Its peers see the zombie and may exit with a status first, to
        // report its loss: wait for it, a while, so the signal is blamed.
        let dying = first.as_ref().is_some_and(|&(killed, ..)| !killed)
            && procs
                .iter()
                .filter(|p| p.running)
                .any(|p| Owner::of(p.child.id()).gone().is_some());
        // The server may not have read yet what the ranks wrote it (a
        // leaving said before the failed rank could find its sender gone,
        // but read by a server thread that has not run since): wait for
        // it, a while, so that the leaving counts.
        let unsettled = first.is_some() && !server.settled();
        let now = Instant::now();
        let judge = first.is_some()
            && !((earlier_leaver || dying || unsettled)
                && now < *judge_by.get_or_insert(now + BLAME_GRACE));
        let failed = if judge && outcome.is_none() {
            first.map(|(_, _, _, s)| s.clone())
        } else {
            None
        };
        let still: Vec<u32> = procs.iter().filter(|p| p.running).map(|p| p.rank).collect();
        if outcome.is_none() {
            let end = if let Some((rank, status)) = server.exit_requested() {
                // A rank asked to end the job (shmem_global_exit): its
                // status is the job's, whatever the others are doing or
                // how they end once it is gone.
                let what =
                    format!("rank {rank} ended the job with status {status} (a global exit)");
                let tail = if still.is_empty() {
                    ""
                } else {
                    "; ending the other ranks"
                };
                Some((status, what.clone(), format!("{what}{tail}")))
            } else if let Some((status, what)) = failed {
                let tail = if still.is_empty() {
                    ""
                } else {
                    "; ending the job"
                };
                Some((status, what.clone(), format!("{what}{tail}")))
            } else if still.is_empty() {
                None
            } else if let Some(sig) = received() {
                let what = format!(
                    "the launcher received {}",
                    signal_name(sig).unwrap_or("a termination signal")
                );
                Some((128 + sig, what.clone(), format!("{what}; ending the job")))
            } else if let Some((t, _)) = deadline.filter(|&(_, at)| Instant::now() >= at) {
                let what = format!(
                    "the job timed out after {} s with rank{} {} still running",
                    t.as_secs_f64(),
                    if still.len() == 1 { "" } else { "s" },
                    rank_list(&still)
                );
                note(
                    notes,
                    &format!("{what}; asking them what they wait on (SIGUSR1)"),
                );
                ask_what_they_wait_on(procs, ends, notes);
                Some((TIMEOUT_STATUS, what, "ending the job".to_string()))
            } else {
                None
            };
            if let Some((status, failure, message)) = end {
                note(notes, &message);
                outcome = Some(JobOutcome {
                    status,
                    failure: Some(failure),
                });
                for p in procs.iter_mut() {
                    p.kill();
                }
            }
        }
        // Every rank has ended: done, unless a failure is still waiting
        // to be judged (its blame deferred for the server to settle,
        // within BLAME_GRACE); ending now would report the job a success.
        if still.is_empty() && (outcome.is_some() || failures.is_empty()) {
            break;
        }
        std::thread::sleep(POLL);
    }
    outcome.unwrap_or(JobOutcome {
        status: 0,
        failure: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let ok = ExitStatus::from_raw(0);
        assert_eq!(describe(0, 10, ok), None);
        let three = ExitStatus::from_raw(3 << 8);
        assert_eq!(
            describe(2, 11, three),
            Some((3, "rank 2 (pid 11) exited with status 3".into()))
        );
        let killed = ExitStatus::from_raw(9);
        assert_eq!(
            describe(1, 12, killed),
            Some((
                137,
                "rank 1 (pid 12) was killed by signal 9 (SIGKILL)".into()
            ))
        );
    }
}
