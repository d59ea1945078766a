//! The `[rank R] ` that starts every line a rank writes from a signal
//! handler (a crash's backtrace, a freeze, a report of its waits), so
//! that a rank's lines are told apart under any launcher (rgex-run adds
//! its own `[R] ` in front).

use rgex_core::raw_line::{RawLine, PREFIX_MAX};
use std::sync::OnceLock;

/// The prefix, set once before any handler that uses it is installed.
static PREFIX: OnceLock<([u8; PREFIX_MAX], usize)> = OnceLock::new();

/// Set this process's rank for the prefix (the first call wins).
pub(crate) fn set(rank: u32) {
    let mut p = RawLine::new(-1, b"");
    p.put(b"[rank ").num(u64::from(rank)).put(b"] ");
    let mut bytes = [0u8; PREFIX_MAX];
    let text = p.text();
    let n = text.len().min(PREFIX_MAX);
    bytes[..n].copy_from_slice(&text[..n]);
    let _ = PREFIX.set((bytes, n));
}

/// The prefix (`[rank ?] ` before [`set`]). Async-signal-safe: an
/// atomic load and a read of memory that never changes after it is set.
pub(crate) fn prefix() -> &'static [u8] {
    match PREFIX.get() {
        Some((bytes, n)) => &bytes[..*n],
        None => b"[rank ?] ",
    }
}

/// A line on stderr that starts with the prefix.
pub(crate) fn stderr() -> RawLine {
    RawLine::new(libc::STDERR_FILENO, prefix())
}
