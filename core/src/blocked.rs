//! What each thread of this process is blocked on, ready to be reported
//! at any moment: `rgex-run --timeout` asks every rank still running for
//! it before it kills the job (by SIGUSR1, which `rgex::init` answers with
//! [`report`]).
//!
//! A blocking wait publishes a record of what it waits for ([`Waiting`]:
//! what, the peer, a number or two, and the source line) once it has
//! stopped making progress, and withdraws it when it ends. Every wait
//! built on [`Backoff`](crate::Backoff) does so when the backoff first
//! yields the CPU (after its spins; at once when polite): a wait that ends
//! while still spinning, the fast path, records nothing and costs nothing.
//! [`Backoff::new`](crate::Backoff::new) records the line that made it;
//! [`Backoff::waiting`](crate::Backoff::waiting) says more, and so may an
//! application's own poll loop:
//!
//! ```
//! use rgex_core::blocked::Waiting;
//! use rgex_core::{Backoff, Rank};
//! let mut backoff = Backoff::waiting(true, Waiting::new("the go AM from rank 1").peer(Rank(1)));
//! backoff.snooze(); // blocked: recorded (polite: at the first snooze)
//! let mut seen = Vec::new();
//! rgex_core::blocked::each(|text| seen.push(text.to_string()));
//! assert!(seen.iter().any(|t| t.starts_with("the go AM from rank 1, peer rank 1 at ")));
//! drop(backoff); // the wait ended: withdrawn
//! ```
//!
//! An outer operation names itself for the waits it makes with
//! [`within`] (`Client::barrier` does: its wait then reads `barrier of
//! the world team > a wait at endpoint/src/team/engine.rs:390`).
//!
//! The records live in a fixed table of [`THREADS`] slots, one per
//! thread that has ever blocked and still lives, each holding up to
//! [`LEVELS`] nested waits as text of at most [`TEXT_MAX`] bytes. A
//! thread writes only its own slot, each level under a sequence lock;
//! [`report`] reads every slot with atomic loads alone and writes with
//! `write(2)`, so it is async-signal-safe: a signal handler may call it
//! while any thread (itself included) is anywhere, publishing too (such a
//! level is reported as being written).

use crate::raw_line::RawLine;
use crate::Rank;
use std::cell::Cell;
use std::io::Write as _;
use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::panic::Location;
use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Threads whose waits can be recorded at once; a thread beyond them
/// blocks unrecorded (the report counts them).
pub const THREADS: usize = 256;
/// Nested waits recorded per thread (a wait within a wait: deeper ones
/// are counted only).
pub const LEVELS: usize = 4;
/// Longest text of one wait, in bytes (cut beyond).
pub const TEXT_MAX: usize = 320;
/// The end of a rank's report, as its last line says it: the launcher
/// waits for this line from each rank it asked.
pub const REPORT_END: &str = "end of the blocked-wait report";

const TEXT_WORDS: usize = TEXT_MAX / 8;
/// Linux thread names hold 15 bytes and a NUL.
const NAME_WORDS: usize = 2;
/// A slot index meaning none.
const NO_SLOT: usize = usize::MAX;
/// Reads of a level that is being written before the report gives up on
/// it (the writer may be the very thread the report interrupted).
const READ_TRIES: u32 = 4;

/// What a blocking wait waits for: what (in words), the peer, up to two
/// numbers, and the source line that waits.
///
/// ```
/// use rgex_core::blocked::Waiting;
/// use rgex_core::Rank;
/// let w = Waiting::new("a blocking put").peer(Rank(2)).value("bytes", 64);
/// assert!(w.to_string().starts_with("a blocking put, peer rank 2, bytes 64 at "));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    what: &'static str,
    detail: &'static str,
    peer: Option<Rank>,
    values: [Option<(&'static str, u64)>; 2],
    at: &'static Location<'static>,
}

impl Waiting {
    /// A wait for `what`, at the caller's line.
    #[track_caller]
    #[inline]
    pub fn new(what: &'static str) -> Self {
        Waiting {
            what,
            detail: "",
            peer: None,
            values: [None; 2],
            at: Location::caller(),
        }
    }

    /// The same, at source line `at` instead of the caller's (for a wait
    /// described only once it blocks, by a closure that cannot track its
    /// caller).
    #[inline]
    pub fn at(mut self, at: &'static Location<'static>) -> Self {
        self.at = at;
        self
    }

    /// The same, `detail` following `what` (`a send waiting for` +
    /// `registered send buffers`).
    #[inline]
    pub fn detail(mut self, detail: &'static str) -> Self {
        self.detail = detail;
        self
    }

    /// The same, waiting on `peer`.
    #[inline]
    pub fn peer(mut self, peer: Rank) -> Self {
        self.peer = Some(peer);
        self
    }

    /// The same, with a number named `label` (two at most; a third
    /// replaces the second).
    #[inline]
    pub fn value(mut self, label: &'static str, v: u64) -> Self {
        let i = usize::from(self.values[0].is_some());
        self.values[i] = Some((label, v));
        self
    }
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.what.is_empty() {
            "a wait"
        } else {
            self.what
        })?;
        if !self.detail.is_empty() {
            write!(f, " {}", self.detail)?;
        }
        if let Some(p) = self.peer {
            write!(f, ", peer rank {}", p.0)?;
        }
        for (label, v) in self.values.iter().flatten() {
            write!(f, ", {label} {v}")?;
        }
        write!(f, " at {}:{}", self.at.file(), self.at.line())
    }
}

/// One recorded wait: its text and since when, under a sequence lock
/// (odd while its owner writes it).
struct Level {
    seq: AtomicU32,
    since_ns: AtomicU64,
    len: AtomicU32,
    text: [AtomicU64; TEXT_WORDS],
}

/// One thread's record.
struct Slot {
    /// The owner's thread id; 0 while free.
    tid: AtomicI32,
    /// Waits in progress (published and not withdrawn), nested.
    depth: AtomicU32,
    name_len: AtomicU32,
    name: [AtomicU64; NAME_WORDS],
    levels: [Level; LEVELS],
}

impl Level {
    const fn new() -> Self {
        Level {
            seq: AtomicU32::new(0),
            since_ns: AtomicU64::new(0),
            len: AtomicU32::new(0),
            text: [const { AtomicU64::new(0) }; TEXT_WORDS],
        }
    }
}

impl Slot {
    const fn new() -> Self {
        Slot {
            tid: AtomicI32::new(0),
            depth: AtomicU32::new(0),
            name_len: AtomicU32::new(0),
            name: [const { AtomicU64::new(0) }; NAME_WORDS],
            levels: [const { Level::new() }; LEVELS],
        }
    }
}

static TABLE: [Slot; THREADS] = [const { Slot::new() }; THREADS];
/// Waits in progress that found no free slot.
static UNRECORDED: AtomicU32 = AtomicU32::new(0);

/// This thread's slot, claimed at its first recorded wait and freed when
/// it ends.
struct Claim(Cell<usize>);

impl Drop for Claim {
    fn drop(&mut self) {
        let i = self.0.get();
        if i != NO_SLOT {
            TABLE[i].depth.store(0, Ordering::Relaxed);
            // Release: the next owner's claim (an Acquire CAS) comes after
            // this thread's last writes to the slot.
            TABLE[i].tid.store(0, Ordering::Release);
        }
    }
}

thread_local! {
    static MINE: Claim = const { Claim(Cell::new(NO_SLOT)) };
    /// The innermost [`within`] of this thread, or null.
    static CONTEXT: Cell<*const Waiting> = const { Cell::new(std::ptr::null()) };
}

/// This thread's slot, claimed now if it has none; `None` when every slot
/// is taken, or the thread is ending.
fn my_slot() -> Option<&'static Slot> {
    MINE.try_with(|c| {
        if c.0.get() == NO_SLOT {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            // Acquire: see the release of the slot's last owner.
            let i = (0..THREADS).find(|&i| {
                TABLE[i]
                    .tid
                    .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })?;
            name_slot(&TABLE[i]);
            c.0.set(i);
        }
        Some(&TABLE[c.0.get()])
    })
    .ok()
    .flatten()
}

/// Store this thread's name (the kernel's, as `ps -L` shows it) in `slot`.
fn name_slot(slot: &Slot) {
    let mut name = [0u8; 16];
    // SAFETY: pthread_self has no preconditions, and the name written
    // (NUL included) fits the 16 bytes passed.
    let ok = unsafe {
        libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr().cast(), name.len())
    } == 0;
    let len = if ok {
        name.iter().position(|&b| b == 0).unwrap_or(15)
    } else {
        0
    };
    store_bytes(&slot.name, &name[..len]);
    slot.name_len.store(len as u32, Ordering::Relaxed);
}

/// Pack `bytes` into `words`, 8 per word, little-endian.
fn store_bytes(words: &[AtomicU64], bytes: &[u8]) {
    for (w, chunk) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        w.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
}

/// Unpack `len` bytes of `words` into `out`.
fn load_bytes(words: &[AtomicU64], len: usize, out: &mut [u8]) -> usize {
    let len = len.min(out.len()).min(words.len() * 8);
    for (i, w) in words.iter().enumerate().take(len.div_ceil(8)) {
        let b = w.load(Ordering::Relaxed).to_le_bytes();
        let n = (len - i * 8).min(8);
        out[i * 8..i * 8 + n].copy_from_slice(&b[..n]);
    }
    len
}

/// A published wait: withdrawn when dropped, on the thread that published
/// it (which is why it is neither `Send` nor `Sync`).
#[derive(Debug)]
#[must_use = "the record is withdrawn when this is dropped"]
pub struct Published {
    /// It has a level in a slot (else it is counted in UNRECORDED).
    recorded: bool,
    /// The wait's span for `RGEX_STATS`/`RGEX_TRACE` (time blocked in
    /// waits), inert unless they observe polls.
    _span: crate::observe::Span,
    _this_thread: PhantomData<*const ()>,
}

/// Publish `w` now as this thread's innermost wait, until the returned
/// guard is dropped: for a wait that blocks from its start (a read from
/// the launcher's socket). A wait that may end at once uses a
/// [`Backoff`](crate::Backoff), which publishes only once it yields.
///
/// ```
/// use rgex_core::blocked::{self, Waiting};
/// let rec = blocked::publish(Waiting::new("the bootstrap's allgather"));
/// let mut n = 0;
/// blocked::each(|t| n += usize::from(t.starts_with("the bootstrap's allgather at ")));
/// assert_eq!(n, 1);
/// drop(rec);
/// ```
#[cold]
pub fn publish(w: Waiting) -> Published {
    let Some(slot) = my_slot() else {
        // Relaxed: a count the report reads, ordering nothing.
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
        return Published {
            recorded: false,
            _span: crate::observe::Span::start("poll", "wait"),
            _this_thread: PhantomData,
        };
    };
    // Only this thread writes its slot's depth: a plain read of its own.
    let depth = slot.depth.load(Ordering::Relaxed);
    if let Some(level) = slot.levels.get(depth as usize) {
        let mut text = [0u8; TEXT_MAX];
        let len = render(&w, &mut text);
        // The writer's half of the sequence lock: odd, a Release fence,
        // the data, then even with Release. A reader that saw the same
        // even value before and after (its Acquire fence between) read
        // data written by one publication alone.
        let s = level.seq.load(Ordering::Relaxed);
        level.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        level.since_ns.store(monotonic_ns(), Ordering::Relaxed);
        store_bytes(&level.text, &text[..len]);
        level.len.store(len as u32, Ordering::Relaxed);
        level.seq.store(s.wrapping_add(2), Ordering::Release);
    }
    // Release: a report that sees the new depth (Acquire) sees the level.
    slot.depth.store(depth + 1, Ordering::Release);
    Published {
        recorded: true,
        _span: crate::observe::Span::start("poll", "wait"),
        _this_thread: PhantomData,
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        if !self.recorded {
            UNRECORDED.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        if let Some(slot) = my_slot() {
            let depth = slot.depth.load(Ordering::Relaxed);
            // Release: pairs with the report's Acquire load (a withdrawn
            // level is not read as current).
            slot.depth.store(depth.saturating_sub(1), Ordering::Release);
        }
    }
}

/// `w`'s text, within this thread's innermost [`within`] if any, into
/// `out`; its length.
fn render(w: &Waiting, out: &mut [u8; TEXT_MAX]) -> usize {
    let context = CONTEXT.with(Cell::get);
    let mut cur = &mut out[..];
    if !context.is_null() {
        // SAFETY: CONTEXT is set only by `within`, to a Waiting it
        // borrows for the whole time it stays set (it restores the
        // previous value before returning, on unwinding too), and only
        // this thread reads it.
        let outer = unsafe { &*context };
        let _ = write!(cur, "{outer} > ");
    }
    let _ = write!(cur, "{w}");
    TEXT_MAX - cur.len()
}

/// Run `f`, naming what it does for the waits it makes: their records
/// read `outer > wait`. Nests (the innermost names the waits).
///
/// ```
/// use rgex_core::blocked::{self, Waiting};
/// use rgex_core::Backoff;
/// blocked::within(&Waiting::new("barrier of the world team"), || {
///     let mut b = Backoff::new(true);
///     b.snooze();
///     let mut seen = Vec::new();
///     blocked::each(|t| seen.push(t.to_string()));
///     assert!(seen.iter().any(|t| t.starts_with("barrier of the world team at ") && t.contains(" > a wait at ")));
/// });
/// ```
pub fn within<R>(outer: &Waiting, f: impl FnOnce() -> R) -> R {
    /// Puts the previous context back, however `f` ends.
    struct Restore(*const Waiting);
    impl Drop for Restore {
        fn drop(&mut self) {
            CONTEXT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CONTEXT.with(|c| c.replace(outer)));
    f()
}

/// `CLOCK_MONOTONIC` in nanoseconds (async-signal-safe: clock_gettime is).
fn monotonic_ns() -> u64 {
    crate::bootstrap::protocol::monotonic_ns()
}

/// One recorded wait as a report reads it.
struct Seen<'a> {
    tid: i32,
    name: &'a [u8],
    level: usize,
    depth: u32,
    since_ns: u64,
    /// `None`: it was being written each time it was read.
    text: Option<&'a [u8]>,
}

/// Read every recorded wait, calling `f` for each (async-signal-safe: atomic
/// loads and stack buffers only). Returns the waits in progress that have
/// no slot.
fn read_all(mut f: impl FnMut(&Seen<'_>)) -> u32 {
    let mut name = [0u8; 16];
    let mut text = [0u8; TEXT_MAX];
    for slot in &TABLE {
        // Acquire: the slot's levels as of its depth's last store.
        let tid = slot.tid.load(Ordering::Acquire);
        let depth = slot.depth.load(Ordering::Acquire);
        if tid == 0 || depth == 0 {
            continue;
        }
        let name_len = slot.name_len.load(Ordering::Relaxed) as usize;
        let name_len = load_bytes(&slot.name, name_len, &mut name);
        for (i, level) in slot.levels.iter().enumerate().take(depth as usize) {
            let mut got = None;
            for _ in 0..READ_TRIES {
                let s1 = level.seq.load(Ordering::Acquire);
                if s1 % 2 == 1 {
                    continue;
                }
                let since = level.since_ns.load(Ordering::Relaxed);
                let len = level.len.load(Ordering::Relaxed) as usize;
                let n = load_bytes(&level.text, len, &mut text);
                fence(Ordering::Acquire);
                if level.seq.load(Ordering::Relaxed) == s1 {
                    got = Some((since, n));
                    break;
                }
            }
            f(&Seen {
                tid,
                name: &name[..name_len],
                level: i,
                depth,
                since_ns: got.map_or(0, |(s, _)| s),
                text: got.map(|(_, n)| &text[..n]),
            });
        }
    }
    UNRECORDED.load(Ordering::Relaxed)
}

/// Call `f` with the text of every wait recorded now, in every thread
/// (for tests and for a program's own diagnostics; [`report`] is the
/// signal-safe form).
///
/// ```
/// let mut n = 0;
/// rgex_core::blocked::each(|_| n += 1);
/// assert_eq!(n, 0); // nothing blocks here
/// ```
pub fn each(mut f: impl FnMut(&str)) {
    read_all(|s| {
        if let Some(t) = s.text {
            f(&String::from_utf8_lossy(t));
        }
    });
}

/// Write every thread's recorded waits to `fd`, a line each, each line
/// starting with `prefix` (the rank's `[rank 3] `), then a last line with
/// [`REPORT_END`]. Async-signal-safe: what a signal handler calls.
///
/// ```text
/// [rank 1] thread main (tid 4242), blocked 5.02 s: barrier of the world team at endpoint/src/client.rs:291 > a wait at endpoint/src/team/engine.rs:390
/// [rank 1] end of the blocked-wait report (pid 4242): 1 wait in 1 thread
/// ```
pub fn report(fd: RawFd, prefix: &[u8]) {
    let now = monotonic_ns();
    let mut line = RawLine::new(fd, prefix);
    let (mut waits, mut threads, mut last_tid) = (0u64, 0u64, 0i32);
    let unrecorded = read_all(|s| {
        waits += 1;
        if s.tid != last_tid {
            threads += 1;
            last_tid = s.tid;
        }
        line.put(b"thread ")
            .put(s.name)
            .put(b" (tid ")
            .num(s.tid as u64)
            .put(b")");
        if s.depth > 1 {
            line.put(b", wait ")
                .num(s.level as u64 + 1)
                .put(b" of ")
                .num(u64::from(s.depth));
        }
        match s.text {
            Some(text) => {
                line.put(b", blocked ")
                    .secs(now.saturating_sub(s.since_ns))
                    .put(b" s: ")
                    .put(text);
            }
            None => {
                line.put(b": (its record was being written)");
            }
        }
        line.end();
        if s.level + 1 == LEVELS && s.depth as usize > LEVELS {
            line.put(b"thread ")
                .put(s.name)
                .put(b": and ")
                .num(u64::from(s.depth) - LEVELS as u64)
                .put(b" deeper waits, not recorded");
            line.end();
        }
    });
    if waits == 0 && unrecorded == 0 {
        line.put(b"no thread is in a wait rgex records (computing, or waiting outside rgex)");
        line.end();
    }
    if unrecorded > 0 {
        line.num(u64::from(unrecorded))
            .put(b" more waits in threads beyond the ")
            .num(THREADS as u64)
            .put(b" recorded, not described");
        line.end();
    }
    // SAFETY: getpid has no preconditions (async-signal-safe).
    let pid = unsafe { libc::getpid() };
    line.put(REPORT_END.as_bytes())
        .put(b" (pid ")
        .num(pid as u64)
        .put(b"): ")
        .num(waits)
        .put(if waits == 1 {
            b" wait in "
        } else {
            b" waits in "
        })
        .num(threads)
        .put(if threads == 1 {
            b" thread"
        } else {
            b" threads"
        });
    line.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mine() -> Vec<String> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let mut out = Vec::new();
        read_all(|s| {
            if s.tid == tid {
                out.push(String::from_utf8_lossy(s.text.unwrap()).into_owned());
            }
        });
        out
    }

    #[test]
    fn nested_waits_are_levels_withdrawn_in_order() {
        let a = publish(Waiting::new("outer").peer(Rank(3)));
        let b = publish(Waiting::new("inner").value("offset", 64).value("words", 2));
        let seen = mine();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].starts_with("outer, peer rank 3 at core/src/blocked.rs:"));
        assert!(seen[1].starts_with("inner, offset 64, words 2 at "));
        drop(b);
        assert_eq!(mine().len(), 1);
        drop(a);
        assert!(mine().is_empty());
    }

    #[test]
    fn waits_deeper_than_the_levels_are_counted() {
        let held: Vec<Published> = (0..LEVELS + 2)
            .map(|_| publish(Waiting::new("deep")))
            .collect();
        assert_eq!(mine().len(), LEVELS);
        drop(held);
        assert!(mine().is_empty());
    }

    #[test]
    fn a_long_text_is_cut() {
        static LONG: [u8; 2 * TEXT_MAX] = [b'x'; 2 * TEXT_MAX];
        let long: &'static str = std::str::from_utf8(&LONG).unwrap();
        let _p = publish(Waiting::new(long));
        let seen = mine();
        assert_eq!(seen[0].len(), TEXT_MAX);
    }

    #[test]
    fn the_report_names_the_thread_and_ends_with_its_marker() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let me = std::thread::Builder::new()
            .name("reporter".into())
            .spawn(move || {
                let _p = publish(Waiting::new("the report test's wait"));
                report(fds[1], b"[rank 7] ");
                // SAFETY: the write end is this test's, closed once.
                unsafe { libc::close(fds[1]) };
            })
            .unwrap();
        me.join().unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        // SAFETY: the read end is this test's, closed once.
        unsafe { libc::close(fds[0]) };
        let text = String::from_utf8(out).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("the report test's wait"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.starts_with("[rank 7] thread reporter (tid "), "{line}");
        assert!(line.contains(", blocked 0."), "{line}");
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("[rank 7] {REPORT_END} (pid ")),
            "{last}"
        );
    }
}
