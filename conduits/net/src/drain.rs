//! Finishing what was sent before the process ends.
//!
//! A message still in the provider's queue (or our backlog) when the
//! process ends never reaches a peer that may be waiting for it: the last
//! message of the final barrier, say. Under `FI_PROGRESS_MANUAL` a posted
//! send may not even have been written to the wire (sockets queues it
//! until the next progress call), so the sender must keep progressing
//! until its sends complete.
//!
//! Dropping the conduit drains it, but a client is often never dropped:
//! it is leaked, or kept alive by a reference cycle (a handler's state
//! holding a team that holds the endpoint), and `main` returning does not
//! run the destructors of what it leaked. So every conduit is also
//! registered with an `atexit` hook that drains the ones still alive when
//! the process exits (found when a 4-rank collectives job over sockets
//! hung at exit: the ranks that left the final barrier first exited with
//! their last barrier message unsent, and the conduit's `Drop` never ran).

use crate::net::Net;
use crate::state::State;
use crate::transport::Transport;
use parking_lot::Mutex;
use rgex_core::Rank;
use std::sync::{Arc, Once, Weak};
use std::time::{Duration, Instant};

/// How long draining waits for the sends to complete.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// One live conduit, as the exit hook sees it: drained if still there.
trait Live: Send {
    /// Drain it if it is still alive.
    fn drain_if_alive(&self);
    /// True if it is the conduit whose state lies at `state`.
    fn is(&self, state: *const ()) -> bool;
}

/// A conduit over transport `T`, as the exit hook holds it.
struct LiveConduit<T: Transport> {
    rank: Rank,
    state: Weak<Mutex<State<T>>>,
    net: Weak<Net<T>>,
}

impl<T: Transport> Live for LiveConduit<T> {
    fn drain_if_alive(&self) {
        if let (Some(state), Some(net)) = (self.state.upgrade(), self.net.upgrade()) {
            drain(self.rank, &state, &net);
        }
    }

    fn is(&self, state: *const ()) -> bool {
        self.state.as_ptr().cast::<()>() == state
    }
}

/// Conduits alive in this process. Held by the exit hook while it drains,
/// so a conduit dropped meanwhile on another thread (which unregisters
/// first) cannot free its memory under the hook.
static LIVE: std::sync::Mutex<Vec<Box<dyn Live>>> = std::sync::Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Drain `state` and `net` (rank `rank`) at exit if still alive then.
pub(crate) fn register<T: Transport>(rank: Rank, state: &Arc<Mutex<State<T>>>, net: &Arc<Net<T>>) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(LiveConduit {
            rank,
            state: Arc::downgrade(state),
            net: Arc::downgrade(net),
        }));
    HOOK.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the
        // whole program; atexit only records the pointer.
        unsafe { libc::atexit(at_exit) };
    });
}

/// Forget `state` (its conduit is being dropped and drains itself).
pub(crate) fn unregister<T: Transport>(state: &Arc<Mutex<State<T>>>) {
    let p = Arc::as_ptr(state).cast::<()>();
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|l| !l.is(p));
}

/// Progress until nothing we posted is outstanding and every network peer
/// still there was told goodbye (`farewell.rs`), at most [`DRAIN_LIMIT`]
/// (a tenth of it if a peer was known dead, not departed, before closing:
/// operations to it may never complete). Warns when giving up.
pub(crate) fn drain<T: Transport>(rank: Rank, state: &Mutex<State<T>>, net: &Net<T>) {
    let start = Instant::now();
    // Whether a peer was dead before closing began. Peers found dead while
    // closing (a credit report or a goodbye to a rank that has already
    // left), and peers that said goodbye, do not shorten the wait: the
    // sends to ranks still running, which may be slow to progress
    // (oversubscribed), must still be seen out.
    let mut dead_before: Option<bool> = None;
    loop {
        // Bounded: at exit, another thread may be stuck holding the lock.
        if let Some(mut st) = state.try_lock_for(Duration::from_millis(100)) {
            let dead = *dead_before
                .get_or_insert_with(|| st.peers.iter().any(|p| p.dead.is_some() && !p.departed));
            st.closing = true;
            st.progress(net);
            st.say_goodbyes(net);
            if st.quiet(net) {
                return;
            }
            let limit = if dead { DRAIN_LIMIT / 10 } else { DRAIN_LIMIT };
            if start.elapsed() > limit {
                tracing::warn!(
                    conduit = T::NAME,
                    rank = rank.0,
                    "closing with operations still in flight after {limit:?} (a peer stopped responding?)"
                );
                return;
            }
        } else if start.elapsed() > DRAIN_LIMIT {
            tracing::warn!(
                conduit = T::NAME,
                rank = rank.0,
                "could not finish its operations before closing (the conduit stayed locked)"
            );
            return;
        }
        std::thread::yield_now();
    }
}

extern "C" fn at_exit() {
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    for l in live.iter() {
        l.drain_if_alive();
    }
}
