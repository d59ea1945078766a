//! Helpers shared by the conformance programs in `src/bin/` (each runs as
//! every rank of a job started by the launcher) and by the cargo tests in
//! `tests/` that launch them.

use rgex::Client;
use std::time::{Duration, Instant};

pub mod executor;
pub mod stalled;

/// How long a conformance program waits for anything before it declares a
/// hang. Generous: this bounds loops, it does not measure speed.
pub const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Poll until `done()` holds; panic naming `what` after [`HANG_LIMIT`].
pub fn wait_until(client: &Client, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    let mut backoff = rgex::Backoff::new(client.endpoint().polite());
    while !done() {
        if client.endpoint().poll().expect("poll") == 0 {
            backoff.snooze();
        } else {
            backoff.reset();
        }
        assert!(
            start.elapsed() < HANG_LIMIT,
            "{}: still waiting for {what} after {HANG_LIMIT:?}",
            client.rank()
        );
    }
}

/// Run `f` while a second thread of this rank polls the client (as a
/// runtime's idle worker would, so it helps with shared copies); the
/// poller stops when `f` returns or panics, or after [`HANG_LIMIT`].
/// Returns `f`'s result and how many polls the second thread made.
pub fn with_poller<R>(
    client: &Client,
    f: impl FnOnce() -> rgex::Result<R>,
) -> rgex::Result<(R, u64)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Stops the poller however `f` ends.
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let poller = s.spawn(|| -> rgex::Result<u64> {
            let start = Instant::now();
            let mut polls = 0u64;
            while !stop.load(Ordering::Relaxed) && start.elapsed() < HANG_LIMIT {
                client.endpoint().poll()?;
                polls += 1;
            }
            Ok(polls)
        });
        let r = {
            let _stop = Stop(&stop);
            f()
        };
        let polls = poller.join().expect("the polling thread does not panic")?;
        Ok((r?, polls))
    })
}

/// A 32-bit mix of its inputs, for argument and payload patterns.
pub fn mix(a: u32, b: u32, c: u32) -> u32 {
    let mut x = a.wrapping_mul(0x9E37_79B1) ^ b.rotate_left(13) ^ c.wrapping_mul(0x85EB_CA77);
    x ^= x >> 15;
    x = x.wrapping_mul(0x2C1B_3C6D);
    x ^ (x >> 12)
}

/// Fill `buf` with the pattern for message `(src, seq)`.
pub fn fill_pattern(buf: &mut [u8], src: u32, seq: u32) {
    let base = mix(src, seq, 0x5eed);
    for (j, b) in buf.iter_mut().enumerate() {
        *b = (base.wrapping_add((j as u32).wrapping_mul(31)) >> 3) as u8;
    }
}

/// Index of the first byte of `buf` that differs from the pattern.
pub fn pattern_mismatch(buf: &[u8], src: u32, seq: u32) -> Option<usize> {
    let base = mix(src, seq, 0x5eed);
    buf.iter()
        .enumerate()
        .find(|&(j, &b)| b != (base.wrapping_add((j as u32).wrapping_mul(31)) >> 3) as u8)
        .map(|(j, _)| j)
}

/// The argument pattern for message `(src, seq)` with `n` arguments.
pub fn arg_pattern(src: u32, seq: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| mix(src, seq, i + 1)).collect()
}

/// The line that reports a passed check (see [`Checks`]).
pub const OK: &str = "ok: ";
/// The line that reports a check not made, and why (see [`Checks`]).
pub const SKIP: &str = "skip: ";
/// The line that names the conduit that carried the job; not a check.
pub const CONDUIT: &str = "conduit: ";

/// Leave the job at once with status 0, as `how` says: `"exit"` runs the
/// process's exit handlers (rgex's conduits tell their peers), `"_exit"`
/// ends it without them, as a process that dies without a word. For the
/// departure tests' departing rank.
pub fn leave_job(how: &str) -> ! {
    println!("rank 1: leaving the job with status 0 ({how})");
    if how == "_exit" {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: _exit ends the process at once; nothing runs after it.
        unsafe { libc::_exit(0) };
    }
    std::process::exit(0)
}

/// Report a passed check from rank 0 (one line per check keeps logs short).
/// Print it only for a check that was made: for one that was not, call
/// [`skip`].
pub fn ok(client: &Client, what: &str) {
    if client.rank().0 == 0 {
        println!("{OK}{what}");
    }
}

/// Report from rank 0 that the check `what` was not made here, and `why`
/// (one rank, a path this conduit does not have). Counted apart from the
/// passed checks, and listed by the cargo tests that run the program.
pub fn skip(client: &Client, what: &str, why: &str) {
    if client.rank().0 == 0 {
        println!("{SKIP}{what}: {why}");
    }
}

/// Report a skipped test whole (`line`: "skip on RGEX_CONDUIT=...:
/// TEST: the whole test: why"): on stdout, on stderr past the test
/// harness's capture (ci/test.sh counts those lines), and appended to
/// the conduit matrix's skip log (`RGEX_SKIP_LOG`), one write per line.
pub fn report_skip_line(line: &str) {
    use std::io::Write;
    println!("{line}");
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(path) = std::env::var_os("RGEX_SKIP_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            // One write of the whole line: tests on parallel threads (and
            // processes) append to the same file, and O_APPEND keeps each
            // write whole (writeln! may split it).
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Report which conduit carried the job (the conduit matrix checks it, so
/// a run meant for ofi or scc cannot pass on smp by mistake). Not a check.
pub fn conduit_banner(client: &Client) {
    if client.rank().0 == 0 {
        println!("{CONDUIT}{}", client.endpoint().conduit().name());
    }
}

/// What a job's output reports: the passed checks, the skipped ones and
/// the conduits named, each line without its kind (and without the
/// launcher's `[rank] ` prefix, if it has one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// The `ok: ` lines.
    pub oks: Vec<String>,
    /// The `skip: ` lines (what, then why).
    pub skips: Vec<String>,
    /// The `conduit: ` lines.
    pub conduits: Vec<String>,
}

impl Checks {
    /// Sort the lines of `out` by kind; other lines are ignored.
    ///
    /// ```
    /// let c = rgex_tests::Checks::parse("[0] conduit: smp\n[0] ok: a\nhello\nskip: b: one rank\n");
    /// assert_eq!((c.oks.len(), c.skips.len()), (1, 1));
    /// assert_eq!(c.conduits, ["smp"]);
    /// ```
    pub fn parse(out: &str) -> Self {
        let mut c = Checks::default();
        for line in out.lines() {
            let line = strip_rank_prefix(line);
            for (kind, list) in [
                (OK, &mut c.oks),
                (SKIP, &mut c.skips),
                (CONDUIT, &mut c.conduits),
            ] {
                if let Some(rest) = line.strip_prefix(kind) {
                    list.push(rest.to_string());
                }
            }
        }
        c
    }
}

/// `line` without the launcher's `[R] ` prefix, if it has one.
fn strip_rank_prefix(line: &str) -> &str {
    line.strip_prefix('[')
        .and_then(|rest| rest.split_once("] "))
        .filter(|(rank, _)| !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit()))
        .map_or(line, |(_, rest)| rest)
}

/// Names of `/dev/shm` entries belonging to job `job`.
pub fn shm_leftovers(job: &str) -> Vec<String> {
    let prefix = format!("rgex-{job}-");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Write to a page mapped without any access: the kernel kills the rank
/// with SIGSEGV at the write (a genuine fault, as a wild pointer makes).
#[inline(never)]
pub fn segfault() -> ! {
    // SAFETY: an anonymous private mapping of one page with no access
    // rights has no preconditions; failure is checked below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED, "mmap of a PROT_NONE page");
    // SAFETY: `page` is a live mapping this function owns and nothing
    // else refers to; the volatile write faults (PROT_NONE) before any
    // memory changes, and the kernel's SIGSEGV ends the process there.
    unsafe { std::ptr::write_volatile(page.cast::<u8>(), 1) };
    unreachable!("writing a PROT_NONE page must fault");
}
