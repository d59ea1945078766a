//! Starting one rank: its environment, its own process group, its pipes,
//! and (with `--bind`) its CPU.

use rgex_core::{Error, Result};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Settings that keep libraries loaded into every rank from catching the
/// signal that kills it: each rank gets them unless the user set them
/// (in the launcher's environment or with [`Job::env`](super::Job::env)).
///
/// libfabric links the PSM libraries, whose constructors run at load,
/// before `main`. PSM (libinfinipath, Intel True Scale) then installs a
/// handler for SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT and SIGTERM that
/// prints a backtrace, writes a `.btr` file into the working directory and
/// calls `exit(1)`, unless `IPATH_NO_BACKTRACE` is set (to anything). So a
/// rank that aborted or segfaulted would reach the launcher as "exited with
/// status 1", not as killed by its signal. PSM2 (libpsm2, Omni-Path) does
/// the same unless `HFI_NO_BACKTRACE` is set in its older releases; newer
/// ones install it only when `HFI_BACKTRACE` is set, which is left alone.
/// (Open MPI sets the same two variables for the same reason.)
pub(crate) const KEEP_SIGNALS: [(&str, &str); 2] =
    [("IPATH_NO_BACKTRACE", "1"), ("HFI_NO_BACKTRACE", "1")];

/// Everything about a rank that does not depend on which rank it is.
#[derive(Debug)]
pub(crate) struct RankTemplate<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: &'a [OsString],
    pub(crate) env: &'a [(OsString, OsString)],
    pub(crate) size: u32,
    pub(crate) socket: &'a Path,
    pub(crate) job: &'a str,
    pub(crate) conduit: Option<&'a str>,
    pub(crate) polite: bool,
    /// The CPUs ranks are bound to, in order (`--bind`); empty: no binding.
    pub(crate) cpus: &'a [usize],
}

impl RankTemplate<'_> {
    /// Start rank `rank` with stdout and stderr piped and stdin closed.
    pub(crate) fn spawn(&self, rank: u32) -> Result<Child> {
        let mut cmd = Command::new(self.program);
        for (key, value) in KEEP_SIGNALS {
            if std::env::var_os(key).is_none() {
                // Before the job's own settings, which may override it.
                cmd.env(key, value);
            }
        }
        cmd.args(self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("RGEX_RANK", rank.to_string())
            .env("RGEX_SIZE", self.size.to_string())
            .env("RGEX_BOOTSTRAP", self.socket)
            .env("RGEX_JOB", self.job)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: the launcher can kill the rank together
            // with anything it started, and a terminal's ^C reaches only the
            // launcher, which then ends the job in order.
            .process_group(0);
        if let Some(c) = self.conduit {
            cmd.env("RGEX_CONDUIT", c);
        }
        if self.polite {
            cmd.env("RGEX_POLITE", "1");
        }
        let cpu = (!self.cpus.is_empty()).then(|| self.cpus[rank as usize % self.cpus.len()]);
        child_setup(&mut cmd, cpu)?;
        cmd.spawn().map_err(|source| Error::Os {
            op: format!(
                "start rank {rank} of {}: {}",
                self.size,
                self.program.display()
            ),
            source,
        })
    }
}

/// The CPUs this process may run on, in increasing order (what `--bind`
/// distributes the ranks over).
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: all-zero bytes are a valid, empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(Error::last_os("read the launcher's CPU affinity"));
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, within `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    if cpus.is_empty() {
        return Err(Error::Config(
            "--bind: the launcher's CPU affinity mask is empty".into(),
        ));
    }
    Ok(cpus)
}

/// `--bind` needs sched_setaffinity, which only Linux has.
#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> Result<Vec<usize>> {
    Err(Error::Config("--bind is supported on Linux only".into()))
}

/// Work done in the child between fork and exec: bind it to `cpu`, and ask
/// for SIGKILL if the launcher dies first (so a killed launcher leaves no
/// orphaned ranks).
#[cfg(target_os = "linux")]
fn child_setup(cmd: &mut Command, cpu: Option<usize>) -> Result<()> {
    let set = match cpu {
        None => None,
        Some(cpu) => {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(Error::Config(format!(
                    "--bind: CPU {cpu} is beyond the {} CPUs a cpu_set_t holds",
                    libc::CPU_SETSIZE
                )));
            }
            // SAFETY: all-zero bytes are a valid, empty cpu_set_t.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: `cpu` was checked to be below CPU_SETSIZE.
            unsafe { libc::CPU_SET(cpu, &mut set) };
            Some(set)
        }
    };
    // SAFETY: getpid has no preconditions.
    let launcher = unsafe { libc::getpid() };
    let hook = move || -> std::io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) is a plain system call
        // (async-signal-safe) with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: getppid is async-signal-safe and has no preconditions.
        if unsafe { libc::getppid() } != launcher {
            // The launcher died before the death signal was armed.
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(set) = &set {
            // SAFETY: sched_setaffinity is a system call (async-signal-safe);
            // `set` is a valid cpu_set_t of the size passed, owned by this
            // closure (no allocation happens here).
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, sched_setaffinity) on
    // data it owns; it neither allocates nor takes locks.
    unsafe { cmd.pre_exec(hook) };
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn child_setup(_cmd: &mut Command, cpu: Option<usize>) -> Result<()> {
    match cpu {
        None => Ok(()),
        Some(_) => Err(Error::Config("--bind is supported on Linux only".into())),
    }
}
