//! Whether a rank is still there: the departure word of its region, and
//! its process.
//!
//! A rank that leaves (its conduit is dropped, or its process exits
//! through `exit`) sets the departure word in its own region and closes
//! its rings ([`Ring::close`](crate::ring::Ring::close)), so every later
//! claim to it is refused as if its queue were full. A rank that dies
//! without exiting (a signal, `_exit`) sets nothing: a sender whose claim
//! is refused looks at its process ([`Owner::gone`]), and if it is gone
//! sets the word and closes the rings on its behalf.
//!
//! Nothing here is on the fast path: a sender looks only once a claim to
//! the peer is refused, and at the process only every
//! [`PROCESS_CHECK_EVERY`] per peer.

use std::sync::Mutex;
use std::time::Duration;

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

/// Why a departure word says a rank is gone, for an error message; `None`
/// while it is there.
pub fn reason(word: u64) -> Option<&'static str> {
    match word {
        PRESENT => None,
        LEFT => Some("it left the job (its smp conduit was closed or its process exited)"),
        _ => Some("its process is gone (it died without leaving the job)"),
    }
}

/// The process that owns a region, as recorded in the region's header by
/// its creator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Its process id.
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

    /// Why the owner's process is gone, or `None` if it is there (or this
    /// process cannot tell: another pid namespace, no `/proc`).
    pub fn gone(&self) -> Option<String> {
        if self.pid_ns == 0 || self.pid_ns != pid_namespace() {
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

/// What a rank does when it leaves: a function and its argument (the
/// address of its region), run once.
type Leave = (fn(usize), usize);

/// The regions of this process still to be left when it exits.
static AT_EXIT: Mutex<Vec<Leave>> = Mutex::new(Vec::new());

/// Run `leave(arg)` when the process exits through `exit` (a return from
/// `main` included), unless [`forget_at_exit`] takes it back first.
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

/// Take back a [`leave_at_exit`] (the region is being left, and unmapped,
/// now).
pub fn forget_at_exit(arg: usize) {
    lock().retain(|&(_, a)| a != arg);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Leave>> {
    AT_EXIT.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn run_at_exit() {
    // The lock is held while the regions are left, so a Drop on another
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
    fn this_process_is_there_and_a_finished_child_is_gone() {
        let me = Owner::me();
        assert!(me.pid_ns != 0 && me.start != 0, "{me:?}");
        assert_eq!(me.gone(), None);
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = u64::from(child.id());
        let owner = Owner {
            pid,
            start: start_time(&format!("/proc/{pid}/stat")).unwrap_or(0),
            pid_ns: me.pid_ns,
        };
        child.wait().expect("wait for true");
        let why = owner.gone().expect("a reaped child is gone");
        assert!(why.contains(&pid.to_string()), "{why}");
        // Another start time under a live id: the id was reused.
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        assert!(reused.gone().expect("reused").contains("another process"));
        // Another namespace: no verdict.
        let far = Owner {
            pid_ns: me.pid_ns + 1,
            ..owner
        };
        assert_eq!(far.gone(), None);
    }

    #[test]
    fn reasons_name_the_departure() {
        assert_eq!(reason(PRESENT), None);
        assert!(reason(LEFT).unwrap().contains("left"));
        assert!(reason(DIED).unwrap().contains("gone"));
    }
}
