//! Stale reads at exit: with checking on, a process whose conduit saw a
//! stale read prints them to stderr and exits with status 1, so a
//! conformance run cannot pass with one.
//!
//! Reports are printed when the conduit is dropped or
//! [`check_report`](crate::SccConduit::check_report) is called, and, for
//! conduits still alive when the process exits (a client is often never
//! dropped), by an `atexit` hook registered with the first checked
//! conduit. The hook runs after `main` returned and Rust flushed stdout; it
//! ends the process with `_exit(1)` if any stale read was seen.

use crate::conduit::Inner;
use parking_lot::Mutex;
use rgex_core::Rank;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once, Weak};
use std::time::Duration;

/// Reports printed per rank; the rest are only counted.
const PRINT_LIMIT: usize = 50;

/// Stale reads seen by every conduit of this process.
static SEEN: AtomicU64 = AtomicU64::new(0);
/// Conduits with checking on, for the exit hook.
static LIVE: std::sync::Mutex<Vec<(Rank, Weak<Mutex<Inner>>)>> = std::sync::Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Watch `inner` (rank `rank`) at exit.
pub(crate) fn register(rank: Rank, inner: &Arc<Mutex<Inner>>) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((rank, Arc::downgrade(inner)));
    HOOK.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the
        // whole program; atexit only records the pointer.
        unsafe { libc::atexit(at_exit) };
    });
}

/// Print the stale reads of `inner` not printed yet; returns how many this
/// rank has seen in total.
pub(crate) fn flush(rank: Rank, inner: &Mutex<Inner>) -> u64 {
    let Some(mut g) = inner.try_lock_for(Duration::from_secs(2)) else {
        tracing::error!(
            rank = rank.0,
            "could not look at its stale reads (its core stayed locked)"
        );
        return 0;
    };
    let total = g.core.counters().stale_reads;
    let new = total.saturating_sub(g.reported);
    if new > 0 {
        let reports = g.core.take_stale_reads();
        for r in reports.iter().take(PRINT_LIMIT) {
            tracing::error!(rank = rank.0, "{r}");
        }
        if new as usize > PRINT_LIMIT {
            tracing::error!(
                rank = rank.0,
                "... and {} more stale read(s)",
                new as usize - PRINT_LIMIT.min(reports.len())
            );
        }
        g.reported = total;
        // Relaxed: a plain counter, read by the exit hook on this thread or
        // after every other thread's last report (exit is ordered after).
        SEEN.fetch_add(new, Ordering::Relaxed);
    }
    total
}

extern "C" fn at_exit() {
    let live = LIVE
        .lock()
        .map(|l| l.clone())
        .unwrap_or_else(|e| e.into_inner().clone());
    for (rank, w) in live {
        if let Some(inner) = w.upgrade() {
            flush(rank, &inner);
        }
    }
    // Relaxed: see `flush`.
    let n = SEEN.load(Ordering::Relaxed);
    if n > 0 {
        tracing::error!(
            "the stale-read checker saw {n} stale read(s) in this process: failing it (exit status 1)"
        );
        // SAFETY: `_exit` ends the process at once, which is what we want
        // from inside an exit hook (calling `exit` again is undefined).
        unsafe { libc::_exit(1) };
    }
}
