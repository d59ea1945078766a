//! Whether a peer rank is still in the job, for conduits whose ranks are
//! processes on one node sharing memory: each rank's shared state records
//! its process ([`Owner`]) and a departure word ([`PRESENT`], then
//! [`LEFT`] or [`DIED`]).
//!
//! A rank that leaves (its conduit is dropped, or its process exits
//! through `exit`: see [`leave_at_exit`]) sets its own departure word. A
//! rank that dies without exiting (a signal, `_exit`) sets nothing: a
//! sender whose operation to it stalls looks at its process
//! ([`Owner::gone`]), at most every [`PROCESS_CHECK_EVERY`] per peer
//! ([`PeerWatch`]), and if it is gone records [`DIED`] on its behalf.
//!
//! Where the word and the owner live is the conduit's business (a
//! [`Presence`]); nothing here is on a fast path.

use crate::Rank;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The departure word of a rank that is there.
pub const PRESENT: u64 = 0;
/// The departure word of a rank that left: its conduit was dropped or its
/// process exited.
pub const LEFT: u64 = 1;
/// The departure word of a rank whose process was found gone without
/// having left (set by the peer that found it).
pub const DIED: u64 = 2;

/// How often a stalled sender looks at a peer's process (reading
/// `/proc/<pid>/stat`, some microseconds): a peer that died is found
/// within this of the stall.
pub const PROCESS_CHECK_EVERY: Duration = Duration::from_millis(10);

/// Why a departure word says a rank of the `conduit` conduit (its name,
/// e.g. "smp") is gone, for an error message; `None` while it is there.
pub fn reason(word: u64, conduit: &str) -> Option<String> {
    match word {
        PRESENT => None,
        LEFT => Some(format!(
            "it left the job (its {conduit} conduit was closed or its process exited)"
        )),
        _ => Some("its process is gone (it died without leaving the job)".to_string()),
    }
}

/// Record in a departure word that its rank is gone (`how`: [`LEFT`] or
/// [`DIED`]); the first verdict stands. True if this call set it.
///
/// Relaxed: the word is a verdict on its own, read by peers that find an
/// operation stalled and ask; it orders nothing else. A conduit that must
/// carry it with other stores (smp closes the rank's rings after it)
/// publishes those with Release.
pub fn depart(word: &AtomicU64, how: u64) -> bool {
    debug_assert_ne!(how, PRESENT);
    word.compare_exchange(PRESENT, how, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}

/// The process that runs a rank, as recorded in shared state by that
/// rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Owner {
    /// Its process id (0: not recorded).
    pub pid: u64,
    /// When it started (`/proc/<pid>/stat` field 22, clock ticks since
    /// boot): a later process that reuses the id started later. 0 when
    /// unknown.
    pub start: u64,
    /// The inode of its pid namespace (`/proc/self/ns/pid`): ids are
    /// compared only between processes of one namespace. 0 when unknown.
    pub pid_ns: u64,
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        let pid = u64::from(std::process::id());
        Owner {
            pid,
            start: start_time(&format!("/proc/{pid}/stat")).unwrap_or(0),
            pid_ns: pid_namespace(),
        }
    }

    /// The process `pid` of this pid namespace as it is now (a child not
    /// yet reaped, whose id cannot have been reused).
    ///
    /// ```
    /// let me = rgex_core::liveness::Owner::of(std::process::id());
    /// assert!(me.gone().is_none());
    /// ```
    pub fn of(pid: u32) -> Owner {
        Owner {
            pid: u64::from(pid),
            start: start_time(&format!("/proc/{pid}/stat")).unwrap_or(0),
            pid_ns: pid_namespace(),
        }
    }

    /// Why the owner's process is gone, or `None` if it is there (or this
    /// process cannot tell: nothing recorded, another pid namespace, no
    /// `/proc`).
    pub fn gone(&self) -> Option<String> {
        if self.pid == 0 || self.pid_ns == 0 || self.pid_ns != pid_namespace() {
            return None;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return None;
        };
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let fields = stat_fields(&stat)?;
                let state = fields.first().copied().unwrap_or("");
                let start: Option<u64> = fields.get(19).and_then(|s| s.parse().ok());
                if state == "Z" || state == "X" {
                    Some(format!("its process {pid} has exited (a zombie)"))
                } else if self.start != 0 && start.is_some_and(|s| s != self.start) {
                    Some(format!(
                        "its process {pid} has exited (the id now names another process)"
                    ))
                } else {
                    None
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some(format!("its process {pid} has exited"))
            }
            // No /proc to read: ask the kernel whether the id is in use.
            // SAFETY: kill with signal 0 sends nothing; it only checks.
            Err(_) => (unsafe { libc::kill(pid, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH))
            .then(|| format!("its process {pid} has exited")),
        }
    }
}

/// The fields of a `/proc/<pid>/stat` line from the third (the state) on:
/// the second, the command name, is in parentheses and may hold spaces.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// Field 22 of a stat file (start time), if it can be read.
fn start_time(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    stat_fields(&stat)?.get(19)?.parse().ok()
}

/// This process's pid namespace inode, 0 if unknown.
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid")
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// Where a conduit keeps one rank's departure word and owner.
pub trait Presence {
    /// The rank's departure word ([`PRESENT`] while it is in the job).
    fn departure(&self) -> u64;
    /// The process the rank recorded as its own.
    fn owner(&self) -> Owner;
    /// Record that the rank is gone (`how`: [`LEFT`] or [`DIED`]), for
    /// every rank; the first verdict stands.
    fn depart(&self, how: u64);
}

/// One rank's watch over its peers: when it may next look at each peer's
/// process, so that a stalled operation retried in a loop reads `/proc`
/// at most every [`PROCESS_CHECK_EVERY`] per peer.
#[derive(Debug)]
pub struct PeerWatch {
    /// Per peer: when (nanoseconds after `epoch`) its process may next be
    /// looked at.
    next: Box<[AtomicU64]>,
    /// Per peer: how often it was asked about (only every
    /// [`CLOCK_EVERY`]th question reads the clock).
    asked: Box<[AtomicU32]>,
    epoch: Instant,
}

/// A refused send asks about its peer on every retry; the clock is read
/// for every this-many questions about one peer only (reading it was 3%
/// of a flood's time where the ring was full). At a retry's ~100 ns,
/// this delays a check that is due by a few microseconds at most.
const CLOCK_EVERY: u32 = 16;

impl PeerWatch {
    /// A watch over `ranks` ranks, every process check due now.
    pub fn new(ranks: usize) -> PeerWatch {
        PeerWatch {
            next: (0..ranks).map(|_| AtomicU64::new(0)).collect(),
            asked: (0..ranks).map(|_| AtomicU32::new(0)).collect(),
            epoch: Instant::now(),
        }
    }

    /// Whether the caller may look at `peer`'s process now: true at most
    /// once per [`PROCESS_CHECK_EVERY`] for each peer, across threads
    /// (false for a rank outside the watch).
    pub fn process_check_due(&self, peer: Rank) -> bool {
        let (Some(next), Some(asked)) = (self.next.get(peer.index()), self.asked.get(peer.index()))
        else {
            return false;
        };
        // Relaxed load and store, not a read-modify-write: a throttle,
        // where a count lost to a race between threads only moves the
        // next clock read by a question.
        let k = asked.load(Ordering::Relaxed);
        asked.store(k.wrapping_add(1), Ordering::Relaxed);
        if k % CLOCK_EVERY != 0 {
            return false;
        }
        let now = self.epoch.elapsed().as_nanos() as u64;
        // Relaxed: a schedule, private to this process; the CAS only keeps
        // two threads from both looking in one period.
        let due = next.load(Ordering::Relaxed);
        let every = PROCESS_CHECK_EVERY.as_nanos() as u64;
        now >= due
            && next
                .compare_exchange(due, now + every, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Why `peer` of the `conduit` conduit, whose shared state is `at`, is
    /// gone, or `None` if it is still in the job as far as this rank can
    /// tell now: its departure word first (one load), then, when due
    /// ([`process_check_due`](Self::process_check_due)), its process; a
    /// process found gone is recorded ([`DIED`]) for every rank.
    #[cold]
    pub fn gone(&self, peer: Rank, conduit: &str, at: &impl Presence) -> Option<String> {
        if let Some(why) = reason(at.departure(), conduit) {
            return Some(why);
        }
        if !self.process_check_due(peer) {
            return None;
        }
        let why = at.owner().gone()?;
        at.depart(DIED);
        Some(why)
    }
}

/// What a rank does when it leaves: a function and its argument (the
/// address of its shared state), run once.
type Leave = (fn(usize), usize);

/// The ranks of this process still to be left when it exits.
static AT_EXIT: Mutex<Vec<Leave>> = Mutex::new(Vec::new());

/// Run `leave(arg)` when the process exits through `exit` (a return from
/// `main` included), unless [`forget_at_exit`] takes it back first. A
/// conduit registers the departure of its rank here when it is made, and
/// takes it back when it is dropped (leaving then).
pub fn leave_at_exit(leave: fn(usize), arg: usize) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        // SAFETY: `run_at_exit` is a plain function that takes no
        // arguments and does not unwind (it catches nothing because it
        // calls nothing that panics: a poisoned lock is entered anyway).
        unsafe { libc::atexit(run_at_exit) };
    });
    lock().push((leave, arg));
}

/// Take back a [`leave_at_exit`] of `arg` (the rank is being left, and
/// its shared state unmapped, now). Waits for a running exit hook, so
/// the state is not unmapped under it.
pub fn forget_at_exit(arg: usize) {
    lock().retain(|&(_, a)| a != arg);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Leave>> {
    AT_EXIT.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn run_at_exit() {
    // The lock is held while the ranks are left, so a Drop on another
    // thread (which takes it in `forget_at_exit`) cannot unmap one meanwhile.
    let mut list = lock();
    for (leave, arg) in list.drain(..) {
        leave(arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "starts a child process, which Miri cannot run (natively it runs)"
    )]
    fn this_process_is_there_and_a_finished_child_is_gone() {
        let me = Owner::me();
        assert!(me.pid_ns != 0 && me.start != 0, "{me:?}");
        assert_eq!(me.gone(), None);
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = u64::from(child.id());
        let owner = Owner::of(child.id());
        assert_eq!(owner.pid_ns, me.pid_ns);
        // Ended and not yet reaped: a zombie, gone already (as the
        // launcher asks of a rank it has not reaped).
        let start = std::time::Instant::now();
        let why = loop {
            if let Some(why) = owner.gone() {
                break why;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "`true` never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        assert!(why.contains("zombie"), "{why}");
        child.wait().expect("wait for true");
        let why = owner.gone().expect("a reaped child is gone");
        assert!(why.contains(&pid.to_string()), "{why}");
        // Another start time under a live id: the id was reused.
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        assert!(reused.gone().expect("reused").contains("another process"));
        // Another namespace, or nothing recorded: no verdict.
        let far = Owner {
            pid_ns: me.pid_ns + 1,
            ..owner
        };
        assert_eq!(far.gone(), None);
        assert_eq!(Owner::default().gone(), None);
    }

    #[test]
    fn reasons_name_the_departure() {
        assert_eq!(reason(PRESENT, "smp"), None);
        assert!(reason(LEFT, "smp").unwrap().contains("its smp conduit"));
        assert!(reason(DIED, "smp").unwrap().contains("gone"));
    }

    #[test]
    fn the_first_verdict_stands() {
        let w = AtomicU64::new(PRESENT);
        assert!(depart(&w, LEFT));
        assert!(!depart(&w, DIED));
        assert_eq!(w.load(Ordering::Relaxed), LEFT);
    }

    /// A rank's shared state, as a test stands it in.
    struct Here {
        word: AtomicU64,
        owner: Owner,
    }

    impl Presence for Here {
        fn departure(&self) -> u64 {
            self.word.load(Ordering::Relaxed)
        }
        fn owner(&self) -> Owner {
            self.owner
        }
        fn depart(&self, how: u64) {
            depart(&self.word, how);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "starts a child process, which Miri cannot run (natively it runs)"
    )]
    fn a_watch_reads_the_word_then_the_process_rate_limited() {
        let watch = PeerWatch::new(2);
        let peer = Rank(1);
        let live = Here {
            word: AtomicU64::new(PRESENT),
            owner: Owner::me(),
        };
        assert_eq!(watch.gone(peer, "scc", &live), None);
        live.depart(LEFT);
        assert!(watch
            .gone(peer, "scc", &live)
            .unwrap()
            .contains("scc conduit"));

        // A dead process, found once the check is due, and recorded.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = u64::from(child.id());
        child.wait().expect("wait for true");
        let dead = Here {
            word: AtomicU64::new(PRESENT),
            owner: Owner { pid, ..Owner::me() },
        };
        let fresh = PeerWatch::new(2);
        assert!(fresh.process_check_due(peer));
        // Just checked: not due again within the period (the period is
        // 10 ms; this follows at once, and a check that came late would
        // only make the assertion below about `gone` hold sooner).
        let early = fresh.gone(peer, "scc", &dead);
        if early.is_none() {
            assert_eq!(dead.departure(), PRESENT, "no process check, no verdict");
        }
        let mut found = early;
        for _ in 0..1000 {
            if found.is_some() {
                break;
            }
            std::thread::sleep(PROCESS_CHECK_EVERY / 4);
            found = fresh.gone(peer, "scc", &dead);
        }
        let why = found.expect("the dead process is found once the check is due");
        assert!(why.contains(&pid.to_string()), "{why}");
        assert_eq!(dead.departure(), DIED);
        assert!(!watch.process_check_due(Rank(7)), "outside the watch");
    }

    #[test]
    fn a_due_check_waits_for_the_questions_that_read_the_clock() {
        let watch = PeerWatch::new(2);
        let peer = Rank(1);
        assert!(
            watch.process_check_due(peer),
            "the first question reads the clock"
        );
        std::thread::sleep(PROCESS_CHECK_EVERY * 2);
        // Due by the clock now, but only every CLOCK_EVERYth question
        // reads it.
        for k in 1..CLOCK_EVERY {
            assert!(
                !watch.process_check_due(peer),
                "question {k} read the clock"
            );
        }
        assert!(
            watch.process_check_due(peer),
            "question {CLOCK_EVERY} did not"
        );
        // Another peer's questions are counted apart.
        assert!(watch.process_check_due(Rank(0)));
    }
}
