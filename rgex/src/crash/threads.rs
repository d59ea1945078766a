//! A backtrace of every thread: gdb's, or, without gdb, the calling
//! thread's unwound in the process and symbolized in a child process (see
//! the [module docs](super) for what is async-signal-safe and what is
//! not). Called from a fatal signal's handler and from the panic hook.

use super::{nap, Armed};
use crate::rank_line;
use rgex_core::bootstrap::protocol::monotonic_ns;
use rgex_core::raw_line::RawLine;
use rgex_core::Result;
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long gdb may take to attach and print (a large binary's debug
/// information takes it seconds to read) before it is killed.
pub(super) const GDB_LIMIT: Duration = Duration::from_secs(60);
/// How long the symbolizing child may take before it is killed.
pub(super) const SYMBOLIZE_LIMIT: Duration = Duration::from_secs(30);
/// Frames unwound at most.
const MAX_FRAMES: usize = 128;
/// The least signal stack the in-process unwinding runs on.
const UNWIND_STACK_MIN: usize = 64 << 10;
/// The symbolizing child's stack.
const CHILD_STACK: usize = 8 << 20;

/// Memory written only by the thread that holds the crash turn
/// ([`HANDLING`](super::HANDLING)).
struct TurnOnly<T>(UnsafeCell<T>);

// SAFETY: only the thread holding the crash turn touches the contents
// (taking the turn is an Acquire, giving it back a Release), so no two
// threads access them at once.
unsafe impl<T: Send> Sync for TurnOnly<T> {}

impl<T> TurnOnly<T> {
    /// # Safety
    /// The caller holds the crash turn, and no other reference from this
    /// call is alive.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> &mut T {
        // SAFETY: the caller's contract: one thread, one reference.
        unsafe { &mut *self.0.get() }
    }
}

/// The return addresses unwound, for the child that symbolizes them.
static FRAMES: TurnOnly<([usize; MAX_FRAMES], usize)> =
    TurnOnly(UnsafeCell::new(([0; MAX_FRAMES], 0)));
/// The pid argument of gdb's command line, written at each crash (a
/// process forked after install has another pid).
static PID_ARG: TurnOnly<[u8; 24]> = TurnOnly(UnsafeCell::new([0; 24]));
/// Set in the symbolizing child: a panic there prints nothing more.
pub(super) static IN_CHILD: AtomicBool = AtomicBool::new(false);

/// gdb's command line, ready for `execve` (built at install: nothing is
/// allocated at a crash).
pub(super) struct Gdb {
    path: CString,
    /// Kept alive for `argv` (and the pid argument, which is `PID_ARG`).
    _args: Vec<CString>,
    argv: Vec<*const c_char>,
    _env: Vec<CString>,
    envp: Vec<*const c_char>,
}

// SAFETY: the pointers point into the CStrings kept beside them (and into
// the static PID_ARG); nothing changes them after `find`, and a crash reads
// them on one thread at a time.
unsafe impl Send for Gdb {}
// SAFETY: as for Send: read-only after construction.
unsafe impl Sync for Gdb {}

impl Gdb {
    /// gdb as `name` says (a path, or a name looked up in `PATH`), if it
    /// is there and executable.
    pub(super) fn find(name: &str) -> Option<Self> {
        let path = if name.contains('/') {
            Some(PathBuf::from(name)).filter(|p| executable(p))
        } else {
            std::env::var_os("PATH").and_then(|dirs| {
                std::env::split_paths(&dirs)
                    .map(|d| d.join(name))
                    .find(|p| executable(p))
            })
        }?;
        let path = CString::new(path.as_os_str().as_bytes()).ok()?;
        let args: Vec<CString> = [
            "gdb",
            "-nx",
            "-q",
            "-batch",
            // Rust binaries name a pretty-printer script gdb would warn of.
            "-iex",
            "set auto-load python-scripts off",
            "-ex",
            "set print frame-arguments scalars",
            // Bounded: a thread that recursed without end has millions.
            "-ex",
            "thread apply all bt 256",
            "-p",
        ]
        .iter()
        .map(|a| CString::new(*a).expect("no NUL in gdb's arguments"))
        .collect();
        let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: installing, before any handler can hold the turn.
        argv.push(unsafe { PID_ARG.get() }.as_ptr().cast());
        argv.push(std::ptr::null());
        let env: Vec<CString> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        let mut envp: Vec<*const c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        Some(Gdb {
            path,
            _args: args,
            argv,
            _env: env,
            envp,
        })
    }

    /// The path gdb was found at.
    fn path(&self) -> &[u8] {
        self.path.as_bytes()
    }
}

/// Whether `p` is a file this process may execute.
fn executable(p: &Path) -> bool {
    let Ok(c) = CString::new(OsStr::as_bytes(p.as_os_str())) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// The stack the symbolizing child starts on: mapped at install, never
/// touched by this process (the child gets a copy).
pub(super) struct ChildStack {
    top: usize,
}

impl ChildStack {
    pub(super) fn new() -> Result<Self> {
        // SAFETY: an anonymous private mapping with no address hint has no
        // preconditions; failure is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHILD_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(super::os_error("map the symbolizing child's stack"));
        }
        // The mapping is kept for the process's life: a crash may come at
        // any time.
        Ok(ChildStack {
            top: base as usize + CHILD_STACK,
        })
    }
}

/// Run the unwinder once at install, so that whatever it sets up on
/// first use (libgcc's caches) is not set up in a signal handler.
pub(super) fn warm_up() {
    let mut n = 0;
    // SAFETY: no other thread is unwinding through this call's frames; the
    // closure only counts.
    unsafe {
        backtrace::trace_unsynchronized(|_| {
            n += 1;
            n < 4
        })
    };
}

/// Print a backtrace of every thread (or the calling thread's, without
/// gdb) on `line`'s descriptor, a line each.
///
/// # Safety
/// The caller holds the crash turn.
pub(super) unsafe fn print(armed: &Armed, line: &mut RawLine) {
    if let Some(gdb) = &armed.gdb {
        line.put(b"backtrace of every thread, by gdb (")
            .put(gdb.path())
            .put(b"):");
        line.end();
        // SAFETY: the caller holds the turn.
        match unsafe { by_gdb(gdb, line) } {
            Ok(()) => return,
            Err(why) => {
                line.put(b"gdb (")
                    .put(gdb.path())
                    .put(b") gave no backtrace: ")
                    .put(why);
                line.end();
                line.put(b"falling back to unwinding in the process");
                line.end();
            }
        }
    } else {
        line.put(b"unwinding in the process (")
            .put(armed.no_gdb.as_bytes())
            .put(b")");
        line.end();
    }
    // SAFETY: the caller holds the turn.
    unsafe { by_unwinding(armed, line) };
}

/// Fork without running the process's fork handlers (glibc's `fork`
/// runs them, and they take locks): the raw system call, as
/// async-signal-safe as `fork` is meant to be. The child is a copy of the
/// calling thread alone.
fn raw_fork() -> libc::pid_t {
    // SAFETY: clone with SIGCHLD and no other flag (and no stack: the child
    // continues on a copy of this one) is fork; the argument order that
    // differs between architectures only matters for the zeros.
    unsafe {
        libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) as libc::pid_t
    }
}

/// Wait for `child` until `deadline` (monotonic ns), then kill it; true
/// if it exited with status 0 by itself. Async-signal-safe.
fn reap(child: libc::pid_t, deadline: u64) -> (bool, c_int) {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int to write; WNOHANG never blocks.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r == child {
            return (
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                status,
            );
        }
        if r < 0 {
            // ECHILD: reaped by someone else (SIGCHLD ignored).
            return (false, -1);
        }
        if monotonic_ns() >= deadline {
            // SAFETY: `child` is this process's unreaped child, so the pid
            // is still its.
            unsafe {
                libc::kill(child, libc::SIGKILL);
                libc::waitpid(child, &mut status, 0);
            }
            return (false, -1);
        }
        nap(Duration::from_millis(10));
    }
}

/// Run gdb on this process, its output forwarded line by line with the
/// prefix; an error if it printed no frame (it could not start or attach).
///
/// # Safety
/// The caller holds the crash turn.
unsafe fn by_gdb(gdb: &Gdb, line: &mut RawLine) -> std::result::Result<(), &'static [u8]> {
    // SAFETY: the turn is the caller's; no other reference to PID_ARG.
    let arg = unsafe { PID_ARG.get() };
    let mut pid = RawLine::new(-1, b"");
    // SAFETY: getpid has no preconditions.
    pid.num(unsafe { libc::getpid() } as u64);
    let n = pid.text().len().min(arg.len() - 1);
    arg[..n].copy_from_slice(&pid.text()[..n]);
    arg[n] = 0;
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(b"no pipe for its output");
    }
    let child = raw_fork();
    if child == 0 {
        // The child: only async-signal-safe system calls until exec.
        // SAFETY: all on this process's own descriptors and on the
        // NUL-terminated, null-ended arrays built at install.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            // gdb gets no signal blocked (the handler's is, here).
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::dup2(fds[1], libc::STDOUT_FILENO);
            libc::dup2(fds[1], libc::STDERR_FILENO);
            libc::execve(gdb.path.as_ptr(), gdb.argv.as_ptr(), gdb.envp.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: the write end is the child's now; close this process's.
    unsafe { libc::close(fds[1]) };
    if child < 0 {
        // SAFETY: the read end is this function's.
        unsafe { libc::close(fds[0]) };
        return Err(b"it could not be started (fork failed)");
    }
    // Let the child attach under Yama's ptrace_scope 1 (an error without
    // Yama, which needs nothing).
    // SAFETY: prctl with integer arguments has no memory preconditions.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, child as libc::c_ulong, 0, 0, 0) };
    let deadline = monotonic_ns() + GDB_LIMIT.as_nanos() as u64;
    let frames = forward(fds[0], line, deadline);
    // SAFETY: the read end is this function's.
    unsafe { libc::close(fds[0]) };
    let (_, status) = reap(child, deadline);
    if frames > 0 {
        Ok(())
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 127 {
        Err(b"it could not be executed")
    } else {
        Err(b"it printed no frame (could it attach? ptrace may be forbidden here)")
    }
}

/// Forward what arrives on `fd` as prefixed lines until its end or
/// `deadline`; the number of frame lines (`#N ...`). Async-signal-safe.
fn forward(fd: c_int, line: &mut RawLine, deadline: u64) -> usize {
    let mut frames = 0;
    let mut start = true;
    let mut buf = [0u8; 256];
    loop {
        let now = monotonic_ns();
        if now >= deadline {
            if !line.is_blank() {
                line.end();
            }
            line.put(b"gdb did not finish in ")
                .num(GDB_LIMIT.as_secs())
                .put(b" s: killed");
            line.end();
            return frames;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let wait_ms = ((deadline - now) / 1_000_000).clamp(1, 1000) as c_int;
        // SAFETY: `pfd` is one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if r <= 0 {
            continue; // a timeout or an interruption: look at the clock again
        }
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 {
            break;
        }
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        for &b in &buf[..n as usize] {
            if start && b == b'#' {
                frames += 1;
            }
            start = b == b'\n';
            if start {
                line.end();
            } else {
                line.put(&[b]);
            }
        }
    }
    if !start {
        line.end();
    }
    frames
}

/// What the symbolizing child is given (pointers into this process's
/// memory, which the child has a copy of).
struct ChildArgs {
    frames: *const usize,
    n: usize,
}

/// Unwind the calling thread, then symbolize its frames in a child.
///
/// # Safety
/// The caller holds the crash turn.
unsafe fn by_unwinding(armed: &Armed, line: &mut RawLine) {
    // SAFETY: a zeroed stack_t is valid; sigaltstack only writes it.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new stack only queries.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut cur) };
    if cur.ss_flags & libc::SS_ONSTACK != 0 && cur.ss_size < UNWIND_STACK_MIN {
        line.put(b"this thread's signal stack holds ")
            .num(cur.ss_size as u64)
            .put(b" bytes, too few to unwind on (")
            .num(UNWIND_STACK_MIN as u64)
            .put(b" needed): no backtrace (gdb needs none)");
        line.end();
        return;
    }
    // SAFETY: the turn is the caller's; no other reference to FRAMES.
    let (ips, n) = unsafe { FRAMES.get() };
    *n = 0;
    // SAFETY: this thread alone unwinds its own stack here; the closure
    // only stores addresses into memory the turn owns.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            ips[*n] = frame.ip() as usize;
            *n += 1;
            *n < MAX_FRAMES
        })
    };
    line.put(b"backtrace of this thread only (")
        .num(*n as u64)
        .put(b" frames; the other threads are not reached without gdb):");
    line.end();
    let mut args = ChildArgs {
        frames: ips.as_ptr(),
        n: *n,
    };
    // SAFETY: `symbolize` runs in a child process (no CLONE_VM: a copy of
    // this memory) on the stack mapped for it at install, which this
    // process never uses; `args` is valid in the copy.
    let child = unsafe {
        libc::clone(
            symbolize,
            armed.child_stack.top as *mut c_void,
            libc::SIGCHLD,
            (&mut args as *mut ChildArgs).cast(),
        )
    };
    let ok = child > 0 && reap(child, monotonic_ns() + SYMBOLIZE_LIMIT.as_nanos() as u64).0;
    if !ok {
        line.put(b"the symbols could not be read (the child that reads them failed or hung): raw return addresses follow");
        line.end();
        for (i, ip) in ips[..*n].iter().enumerate() {
            line.put(b"  #").num(i as u64).put(b" ").hex(*ip as u64);
            line.end();
        }
    }
}

/// The symbolizing child: print each frame of `arg` (a [`ChildArgs`])
/// with its function, file and line, then exit. It runs in a copy of the
/// crashed process, so it may allocate and read files; if a lock it needs
/// was held at the crash it hangs, and the parent kills it.
extern "C" fn symbolize(arg: *mut c_void) -> c_int {
    IN_CHILD.store(true, Ordering::Relaxed);
    // SAFETY: `arg` is the ChildArgs the parent passed, in this copy of
    // its memory; its frames are `n` initialised addresses.
    let frames = unsafe {
        let a = &*(arg as *const ChildArgs);
        std::slice::from_raw_parts(a.frames, a.n)
    };
    let done = std::panic::catch_unwind(|| {
        let mut line = rank_line::stderr();
        for (i, &ip) in frames.iter().enumerate() {
            let mut named = false;
            // SAFETY: this process is single-threaded (a child of clone).
            unsafe {
                backtrace::resolve_unsynchronized(ip as *mut c_void, |sym| {
                    named = true;
                    line.put(b"  #")
                        .num(i as u64)
                        .put(b" ")
                        .hex(ip as u64)
                        .put(b" ");
                    match sym.name() {
                        Some(name) => {
                            let text = format!("{name:#}");
                            line.put(text.as_bytes());
                        }
                        None => {
                            line.put(b"??");
                        }
                    }
                    if let (Some(file), Some(no)) = (sym.filename(), sym.lineno()) {
                        line.put(b" at ")
                            .put(file.as_os_str().as_bytes())
                            .put(b":")
                            .num(u64::from(no));
                    }
                    line.end();
                })
            };
            if !named {
                line.put(b"  #")
                    .num(i as u64)
                    .put(b" ")
                    .hex(ip as u64)
                    .put(b" ??");
                line.end();
            }
        }
    });
    // SAFETY: _exit ends this child without running the parent's exit
    // hooks (which are the parent's to run).
    unsafe { libc::_exit(if done.is_ok() { 0 } else { 1 }) }
}
