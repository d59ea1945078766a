//! The background progress ticker.
//!
//! Many networks progress data only when the application calls into them
//! (libfabric's `FI_PROGRESS_MANUAL` providers, tcp;ofi_rxm and shm;
//! connection set-up on first
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
use crate::transport::Transport;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the ticker looks. Long enough to cost nothing measurable,
/// short enough that a peer waiting on an unprogressed message waits
/// about a millisecond, not forever.
pub const TICK: Duration = Duration::from_millis(1);

/// A clock that advances once a tick: reading it is one load, where a
/// clock read (`Instant::now`) on every progress call cost more than the
/// rest of an idle one. What waits for a tick or two (a read back's age,
/// see [`readback`](crate::readback)) reads this.
#[derive(Default)]
pub struct Ticks(AtomicU64);

impl Ticks {
    /// Ticks so far.
    #[inline]
    pub fn now(&self) -> u64 {
        // Relaxed: a coarse clock; a stale value is an older time.
        self.0.load(Ordering::Relaxed)
    }

    fn advance(&self) {
        // Relaxed: as for `now`; only the ticker writes it.
        self.0
            .store(self.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// What the ticker and the conduit share.
struct Shared {
    /// Set by every client-driven progress call, cleared by the ticker
    /// (Relaxed: a hint; a stale read only makes the ticker progress
    /// once more or once less). A store, not a count: a locked increment
    /// on every poll cost more than the flag's purpose is worth.
    polled: AtomicBool,
    /// Set at drop; the ticker exits at its next wake-up (Relaxed, with
    /// the join giving the happens-before the drop needs).
    stop: AtomicBool,
}

/// The running ticker; stops and joins when dropped.
pub struct Ticker {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start ticking over `state` and `net`.
    pub(crate) fn start<T: Transport>(
        state: Arc<Mutex<State<T>>>,
        net: Arc<Net<T>>,
    ) -> std::io::Result<Ticker> {
        let shared = Arc::new(Shared {
            polled: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let ticks = state.lock().ticks.clone();
        let handle = std::thread::Builder::new()
            .name(format!("rgex-{}-progress", T::NAME))
            .spawn(move || {
                while !s.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(TICK);
                    ticks.advance();
                    // Relaxed: see `Shared::polled`.
                    if !s.polled.swap(false, Ordering::Relaxed) {
                        // Nobody polled for a whole tick: progress once,
                        // unless a client thread holds the lock right now.
                        if let Some(mut st) = state.try_lock() {
                            st.progress(&net);
                        }
                    }
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
        // Read first: a poller spinning here stores only when the ticker
        // has cleared the flag, not on every poll.
        if !self.shared.polled.load(Ordering::Relaxed) {
            self.shared.polled.store(true, Ordering::Relaxed);
        }
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
