//! The background progress ticker.
//!
//! Many providers progress data only when the application calls into them
//! (`FI_PROGRESS_MANUAL`: tcp;ofi_rxm, shm; connection set-up on first
//! contact needs both sides to progress too). A rank that sent the last
//! message of a barrier and went on to compute, or to wait in a bootstrap
//! collective, would then leave that message unsent and its peer waiting.
//! The ticker is a thread that wakes every [`TICK`] and, if nobody polled
//! the conduit since its last look, reaps completions and pushes the
//! backlog once. Messages it receives are only queued: handlers still run
//! in the client's own polls. While the client polls, the ticker costs one
//! wake-up per tick and nothing else.

use crate::net::Net;
use crate::state::State;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the ticker looks. Long enough to cost nothing measurable,
/// short enough that a peer waiting on an unprogressed message waits
/// about a millisecond, not forever.
pub const TICK: Duration = Duration::from_millis(1);

/// What the ticker and the conduit share.
pub(crate) struct Shared {
    /// Bumped by every client-driven progress call (Relaxed: a hint; a
    /// stale read only makes the ticker progress once more or once less).
    pub polls: AtomicU64,
    /// Set at drop; the ticker exits at its next wake-up (Relaxed, with
    /// the join giving the happens-before the drop needs).
    stop: AtomicBool,
}

/// The running ticker; stops and joins when dropped.
pub(crate) struct Ticker {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start ticking over `state` and `net`.
    pub fn start(state: Arc<Mutex<State>>, net: Arc<Net>) -> std::io::Result<Ticker> {
        let shared = Arc::new(Shared {
            polls: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("rgex-ofi-progress".into())
            .spawn(move || {
                let mut seen = u64::MAX;
                while !s.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(TICK);
                    let now = s.polls.load(Ordering::Relaxed);
                    if now == seen {
                        // Nobody polled for a whole tick: progress once,
                        // unless a client thread holds the lock right now.
                        if let Some(mut st) = state.try_lock() {
                            st.progress(&net);
                        }
                    }
                    seen = now;
                }
            })?;
        Ok(Ticker {
            shared,
            handle: Some(handle),
        })
    }

    /// Note a client-driven progress call.
    #[inline]
    pub fn polled(&self) {
        self.shared.polls.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}
