//! Cross-memory attach: copies into and out of another process's memory by
//! `process_vm_writev`/`process_vm_readv` (Linux 3.2), one system call per
//! copy, the way a node-local peer reaches memory it cannot map (a client
//! segment over the peer's heap or static data).
//!
//! The kernel allows it where the caller may ptrace the target
//! (`PTRACE_MODE_ATTACH_REALCREDS`: same user, and Yama's
//! `/proc/sys/kernel/yama/ptrace_scope` permitting). Under Yama's scope 1
//! only a descendant may be attached, so sibling ranks need the target to
//! name its ptracer: [`allow_peers`] does (`PR_SET_PTRACER_ANY`, as Open
//! MPI's CMA component does). Scopes 2 and 3, seccomp filters and
//! container policies refuse it (`EPERM`, `ENOSYS`): the caller finds out
//! by a first copy ([`read`] of one byte is the probe) and keeps another
//! path.
//!
//! ```no_run
//! # fn demo(pid: u32, remote: u64) -> std::io::Result<()> {
//! rgex_core::cma::allow_peers().map_err(std::io::Error::other)?;
//! let mut byte = [0u8; 1];
//! // SAFETY: `byte` is ours for the call; `remote` is the peer's.
//! unsafe { rgex_core::cma::read(pid, remote, byte.as_mut_ptr(), 1)? };
//! # Ok(()) }
//! ```

use std::io;

/// Where Yama keeps its ptrace policy (absent without Yama).
const YAMA_SCOPE: &str = "/proc/sys/kernel/yama/ptrace_scope";

/// Let this process's node-local peers attach to it, where Yama asks for
/// it: under `ptrace_scope` 1 it names any process as its ptracer
/// (`prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`, which only widens what
/// Yama's scope 1 narrowed: the kernel's same-user check still holds).
/// Without Yama, or at scope 0, nothing is needed. Scopes 2 and 3 forbid
/// attaching a sibling whatever this process does: an error saying so.
pub fn allow_peers() -> Result<(), String> {
    match yama_scope().as_deref() {
        // No Yama, or scope 0: the kernel's own check alone.
        None | Some("0") => Ok(()),
        Some("1") => set_ptracer_any(),
        Some(other) => Err(yama_forbids(other)),
    }
}

/// Yama's `ptrace_scope`, if Yama is there.
fn yama_scope() -> Option<String> {
    std::fs::read_to_string(YAMA_SCOPE)
        .ok()
        .map(|s| s.trim().to_string())
}

fn yama_forbids(scope: &str) -> String {
    format!(
        "{YAMA_SCOPE} is {scope}: Yama forbids attaching a non-descendant process (needs scope \
         0, or 1 with PR_SET_PTRACER)"
    )
}

/// Whether sibling processes of this user may attach to each other here,
/// and why, without changing anything: Yama's policy, then a one-byte
/// [`read`] of this process's own memory (which a seccomp filter or a
/// container's policy refuses with `EPERM`). For reports (rgex-info).
pub fn available_here() -> Result<String, String> {
    let yama = match yama_scope().as_deref() {
        None => "no Yama".to_string(),
        Some("0") => "Yama's ptrace_scope 0".to_string(),
        Some("1") => {
            "Yama's ptrace_scope 1: each rank names any process its ptracer (PR_SET_PTRACER_ANY)"
                .to_string()
        }
        Some(other) => return Err(yama_forbids(other)),
    };
    let here = 7u8;
    let mut back = 0u8;
    // SAFETY: one byte of a local into another local of this process.
    match unsafe { read(std::process::id(), &here as *const u8 as u64, &mut back, 1) } {
        Ok(()) if back == here => Ok(yama),
        Ok(()) => Err("process_vm_readv of this process read back another byte".into()),
        Err(e) => Err(format!(
            "process_vm_readv of this process refused ({e}: seccomp or a container's policy)"
        )),
    }
}

#[cfg(target_os = "linux")]
fn set_ptracer_any() -> Result<(), String> {
    // SAFETY: prctl with these arguments changes only this process's Yama
    // ptracer exception; it reads no memory of ours.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_PTRACER,
            libc::PR_SET_PTRACER_ANY,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "{YAMA_SCOPE} is 1 and prctl(PR_SET_PTRACER_ANY) failed: {}",
            io::Error::last_os_error()
        ))
    }
}

#[cfg(not(target_os = "linux"))]
fn set_ptracer_any() -> Result<(), String> {
    Err("cross-memory attach is Linux's".into())
}

/// Copy `len` bytes from `src` in this process to `remote` in process
/// `pid`, looping over partial copies. An error is the kernel's (`EPERM`:
/// not allowed to attach; `ESRCH`: no such process; `EFAULT`: `remote` not
/// mapped there); bytes before the failing one may have been written.
///
/// # Safety
/// `src..src+len` must be readable for the call. What `remote` names in
/// the peer is the caller's to have agreed with it.
pub unsafe fn write(pid: u32, remote: u64, src: *const u8, len: usize) -> io::Result<()> {
    // SAFETY: forwarded caller contract.
    unsafe { copy(pid, remote, src.cast_mut(), len, Dir::Write) }
}

/// Copy `len` bytes from `remote` in process `pid` to `dst` here; as
/// [`write()`] for errors.
///
/// # Safety
/// `dst..dst+len` must be writable, and unaliased, for the call.
pub unsafe fn read(pid: u32, remote: u64, dst: *mut u8, len: usize) -> io::Result<()> {
    // SAFETY: forwarded caller contract.
    unsafe { copy(pid, remote, dst, len, Dir::Read) }
}

#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
}

#[cfg(target_os = "linux")]
unsafe fn copy(pid: u32, remote: u64, local: *mut u8, len: usize, dir: Dir) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let here = libc::iovec {
            // `wrapping_add`: inside the caller's range (done < len).
            iov_base: local.wrapping_add(done).cast(),
            iov_len: len - done,
        };
        let there = libc::iovec {
            iov_base: (remote as usize).wrapping_add(done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: one iovec each side; the local one is the caller's
        // readable (write) or writable (read) range; the remote one is
        // checked by the kernel against the peer's mappings.
        let n = unsafe {
            match dir {
                Dir::Write => libc::process_vm_writev(pid as libc::pid_t, &here, 1, &there, 1, 0),
                Dir::Read => libc::process_vm_readv(pid as libc::pid_t, &here, 1, &there, 1, 0),
            }
        };
        match n {
            n if n > 0 => done += n as usize,
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("no byte moved at {done} of {len}"),
                ))
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
unsafe fn copy(_: u32, _: u64, _: *mut u8, _: usize, _: Dir) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "cross-memory attach is Linux's",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "system calls, which Miri cannot run (natively it runs)"
    )]
    fn this_process_reaches_its_own_memory_and_a_bad_address_is_refused() {
        allow_peers().unwrap();
        available_here().unwrap();
        let pid = std::process::id();
        let mut there = vec![0u8; 100_000];
        let here: Vec<u8> = (0..there.len()).map(|i| (i * 7) as u8).collect();
        // SAFETY: both buffers live for the calls; `there` is written by
        // the kernel only while no reference to it is used.
        unsafe { write(pid, there.as_mut_ptr() as u64, here.as_ptr(), here.len()) }.unwrap();
        assert!(there == here);
        let mut back = vec![0u8; 5];
        // SAFETY: as above.
        unsafe { read(pid, there.as_ptr() as u64 + 7, back.as_mut_ptr(), 5) }.unwrap();
        assert_eq!(back, here[7..12]);
        // SAFETY: address 8 is never mapped: the kernel refuses.
        let e = unsafe { write(pid, 8, here.as_ptr(), 8) }.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT), "{e}");
    }
}
