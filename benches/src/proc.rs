//! Child processes of the peer tools (`ucx_perftest`, `fi_pingpong`): run
//! one with its output drained, wait for it with a deadline, kill it on
//! every path that abandons it, find a free loopback port.

use std::io::{self, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `name` in a directory of `PATH`, if it is an executable file there.
pub fn find_exe(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The last non-empty line of `err`, else of `out`.
pub fn last_line(err: &str, out: &str) -> String {
    let pick = |s: &str| {
        s.lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_owned)
    };
    pick(err)
        .or_else(|| pick(out))
        .unwrap_or_else(|| "(no output)".to_owned())
}

/// A port on 127.0.0.1 nothing listens on right now.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Work done in a peer tool's child between fork and exec: ask for SIGKILL
/// when the spawning thread dies (so a bench killed half-way, for example
/// by the launcher's timeout, leaves no server waiting for a client), and
/// bind it to `cpus` unless empty (a rank bound by `rgex-run --bind` would
/// otherwise hand its single CPU to both of the tool's processes; a
/// launcher such as `mpirun` is given every CPU its ranks bind to).
///
/// The death signal follows the *thread* that spawned the child: spawn
/// and wait from the same thread, as [`Running`] does.
#[cfg(target_os = "linux")]
pub fn child_setup(cmd: &mut Command, cpus: &[usize]) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let set = if cpus.is_empty() {
        None
    } else {
        // SAFETY: all-zero bytes are a valid, empty cpu_set_t.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {cpu} is beyond what a cpu_set_t holds"),
                ));
            }
            // SAFETY: `cpu` was checked to be below CPU_SETSIZE.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        Some(set)
    };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let hook = move || -> io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) is a plain system call
        // (async-signal-safe) with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid is async-signal-safe and has no preconditions.
        if unsafe { libc::getppid() } != parent {
            // The bench died before the death signal was armed.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(set) = &set {
            // SAFETY: sched_setaffinity is a system call (async-signal-safe);
            // `set` is a valid cpu_set_t of the size passed, owned by this
            // closure (nothing is allocated here).
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, sched_setaffinity) on
    // data it owns; it allocates nothing and takes no lock.
    unsafe { cmd.pre_exec(hook) };
    Ok(())
}

/// Elsewhere: only the CPU binding is unavailable.
#[cfg(not(target_os = "linux"))]
pub fn child_setup(_cmd: &mut Command, cpus: &[usize]) -> io::Result<()> {
    match cpus {
        [] => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "binding a peer tool to a CPU is supported on Linux only",
        )),
    }
}

/// A finished process and what it printed.
pub struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

/// A child process whose output is drained by two threads (so a chatty
/// child never blocks on a full pipe). Dropping it kills the child if it
/// still runs (by its handle: no broad kill).
pub struct Running {
    name: String,
    child: Child,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
}

fn drain(r: Option<impl Read + Send + 'static>) -> Option<JoinHandle<String>> {
    r.map(|mut r| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    })
}

impl Running {
    /// Start `cmd` (its stdout and stderr should be piped); `name` names
    /// it in errors.
    pub fn spawn(name: &str, mut cmd: Command) -> io::Result<Running> {
        let mut child = cmd.spawn()?;
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        Ok(Running {
            name: name.to_owned(),
            child,
            out,
            err,
        })
    }

    /// True once the child has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Wait up to `timeout` for the child to exit; kill it after that.
    pub fn finish(mut self, timeout: Duration) -> Result<Finished, String> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => break None,
                Err(e) => return Err(format!("wait for {}: {e}", self.name)),
            }
        };
        let status = match status {
            Some(st) => st,
            None => {
                // Our own child, by its handle (no broad kill).
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = self
                    .err
                    .take()
                    .and_then(|h| h.join().ok())
                    .unwrap_or_default();
                return Err(format!(
                    "timed out after {:.1} s and was killed ({})",
                    timeout.as_secs_f64(),
                    last_line(&err, "")
                ));
            }
        };
        let join =
            |h: Option<JoinHandle<String>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
        Ok(Finished {
            status,
            stdout: join(self.out.take()),
            stderr: join(self.err.take()),
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A run abandoned half-way (an error path) must not leave its
        // child behind: kill it by its handle if it still runs.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
