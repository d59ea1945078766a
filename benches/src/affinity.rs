//! CPUs: pin the calling thread, count the node's CPUs, read the load.

use std::io;

/// Pin the calling thread to `cpu` (the other threads are unaffected).
///
/// Fails if `cpu` is not a CPU this process may use (for example a
/// cgroup cpuset excludes it, or the node has fewer CPUs).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond what a cpu_set_t holds"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so CPU_SET writes inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe
    // `set`, which lives across the call and is only read.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread is running on now, if the OS says.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the caller's
    // scheduling state.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// CPUs online on this node (not the calling thread's affinity mask,
/// which `rgex-run --bind` narrows to one CPU). At least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf only reads a system parameter; it has no
    // memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 {
        1
    } else {
        n as usize
    }
}

/// The 1-minute load average (`/proc/loadavg`), if readable: a bench
/// prints it, since processes outside the job disturb every figure.
pub fn load_average() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next()?.parse().ok()
}
