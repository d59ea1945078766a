//! Operations in flight on an active-message protocol (the reference RMA,
//! atomics and VIS paths): each request carries a 64-bit id in its first
//! two arguments, and the reply finds the operation's completion counter
//! and data by that id, whichever thread runs the reply handler.

use parking_lot::Mutex;
use rgex_core::Completion;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A table of operations in flight, each with data of type `T`.
///
/// ```
/// use rgex_am::InFlight;
/// use rgex_core::Completion;
/// let t: InFlight<&str> = InFlight::default();
/// let done = Completion::new(0);
/// let id = t.start(&done, "dest");     // counted on `done`, id for the args
/// assert!(!done.is_done());
/// let (c, data) = t.finish(&id).unwrap();
/// assert_eq!(data, "dest");
/// c.done();
/// assert!(done.is_done() && t.finish(&id).is_none());
/// ```
pub struct InFlight<T> {
    next: AtomicU64,
    ops: Mutex<HashMap<u64, (Arc<Completion>, T)>>,
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight {
            next: AtomicU64::new(0),
            ops: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> std::fmt::Debug for InFlight<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("ops", &self.ops.lock().len())
            .finish()
    }
}

fn id_of(args: &[u32]) -> Option<u64> {
    Some(u64::from(*args.first()?) | u64::from(*args.get(1)?) << 32)
}

impl<T> InFlight<T> {
    /// Count one operation on `done`, remember `data`, and return the id
    /// as the two argument words to send.
    pub fn start(&self, done: &Arc<Completion>, data: T) -> [u32; 2] {
        // Relaxed: ids only need to be unique.
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        done.add(1);
        self.ops.lock().insert(id, (done.clone(), data));
        [id as u32, (id >> 32) as u32]
    }

    /// Remove the operation whose id starts `args`; the caller finishes
    /// its work, then calls `done()` on the returned counter.
    pub fn finish(&self, args: &[u32]) -> Option<(Arc<Completion>, T)> {
        self.ops.lock().remove(&id_of(args)?)
    }

    /// Undo [`start`](Self::start) for an operation that was never sent.
    pub fn abandon(&self, id: &[u32; 2]) {
        if let Some((done, _)) = self.finish(id) {
            done.done();
        }
    }
}
