//! A waker slot that a poller fills and any thread empties: the one task
//! awaiting a completion is stored here by the future's `poll` and woken
//! by whichever thread's progress finishes the operation.
//!
//! The protocol is futures' `AtomicWaker`: a small lock in `state` guards
//! the slot, and a registration and a wake that meet never lose the
//! wake-up (the registration finds the wake under way and wakes its own
//! task). A second registration racing the first (two futures awaiting
//! one completion, which rgex's handles do not make) wakes its own task
//! at once, so it polls again rather than sleep unwoken.

use crate::sync::{AtomicUsize, Ordering, Slot};
use std::task::Waker;

/// No registration or wake is under way.
const IDLE: usize = 0;
/// A registration holds the slot.
const REGISTERING: usize = 0b01;
/// A wake holds (or waits for) the slot.
const WAKING: usize = 0b10;

/// One task's waker, registered by `poll` and taken by a wake.
///
/// ```
/// use rgex_core::waker::AtomicWaker;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::task::{Wake, Waker};
/// struct Flag(AtomicBool);
/// impl Wake for Flag {
///     fn wake(self: Arc<Self>) { self.0.store(true, Ordering::SeqCst) }
/// }
/// let flag = Arc::new(Flag(AtomicBool::new(false)));
/// let slot = AtomicWaker::new();
/// slot.register(&Waker::from(flag.clone()));
/// slot.wake();
/// assert!(flag.0.load(Ordering::SeqCst));
/// ```
pub struct AtomicWaker {
    state: AtomicUsize,
    waker: Slot<Option<Waker>>,
}

// SAFETY: the slot is only touched by the thread that moved `state` from
// IDLE to REGISTERING or WAKING (the lock), and `Waker` is Send + Sync.
unsafe impl Send for AtomicWaker {}
// SAFETY: as for Send.
unsafe impl Sync for AtomicWaker {}

impl std::fmt::Debug for AtomicWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicWaker").finish_non_exhaustive()
    }
}

impl Default for AtomicWaker {
    fn default() -> Self {
        Self::new()
    }
}

impl AtomicWaker {
    /// An empty slot.
    pub fn new() -> Self {
        AtomicWaker {
            state: AtomicUsize::new(IDLE),
            waker: Slot::new(None),
        }
    }

    /// Store `waker` (replacing an earlier one unless it wakes the same
    /// task). A wake that comes during the registration wakes `waker`
    /// (the registration does it, on its way out), so a caller that
    /// registers and then looks at its condition cannot miss one.
    pub fn register(&self, waker: &Waker) {
        // Acquire: the slot as the last holder left it (its Release below
        // or in `take`) is what this thread reads and writes.
        match self
            .state
            .compare_exchange(IDLE, REGISTERING, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: REGISTERING is held: nobody else touches the slot.
                self.waker.with_mut(|w| unsafe {
                    match &*w {
                        Some(old) if old.will_wake(waker) => {}
                        _ => *w = Some(waker.clone()),
                    }
                });
                // Release: the stored waker happens before a wake that
                // takes the slot after this (its Acquire in `take`).
                // Acquire on failure: the failure means a wake set WAKING
                // meanwhile and gave up the slot to us; we take it next.
                if self
                    .state
                    .compare_exchange(REGISTERING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // A wake came while we held the slot: it left the
                    // waker to us. Take it, free the slot, then wake.
                    // SAFETY: REGISTERING is still held (only we clear it).
                    let w = self.waker.with_mut(|w| unsafe { (*w).take() });
                    // AcqRel: releases the slot (emptied) to the next holder.
                    self.state.swap(IDLE, Ordering::AcqRel);
                    if let Some(w) = w {
                        w.wake();
                    }
                }
            }
            Err(WAKING) => {
                // A wake is taking the slot now; it may take the old waker.
                // Wake this task so it polls again.
                waker.wake_by_ref();
            }
            Err(_) => {
                // Another registration holds the slot (two pollers of one
                // completion): ours is not stored, so poll again soon.
                waker.wake_by_ref();
            }
        }
    }

    /// Take the registered waker, if one is there and no registration or
    /// other wake holds the slot (a registration holding it sees this
    /// wake and wakes its own waker).
    pub fn take(&self) -> Option<Waker> {
        // AcqRel: Acquire pairs with a registration's Release, so the
        // waker it stored is the one read; Release orders nothing extra
        // but makes WAKING visible to a registration that fails its CAS.
        match self.state.fetch_or(WAKING, Ordering::AcqRel) {
            IDLE => {
                // SAFETY: WAKING taken from IDLE: the slot is ours.
                let w = self.waker.with_mut(|w| unsafe { (*w).take() });
                // Release: the emptied slot happens before the next
                // holder's Acquire.
                self.state.fetch_and(!WAKING, Ordering::Release);
                w
            }
            // A registration holds it (and will wake), or another wake does.
            _ => None,
        }
    }

    /// Wake the registered task, if any (see [`take`](Self::take)).
    pub fn wake(&self) {
        if let Some(w) = self.take() {
            w.wake();
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Registration against wake under the model checker.

    use super::AtomicWaker;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn loom_register_then_check_never_misses_a_wake() {
        // The waiter registers, then looks at the condition; the waker
        // sets the condition, then wakes. Either the look sees it or the
        // registered waker is woken.
        loom::model(|| {
            let slot = Arc::new(AtomicWaker::new());
            let ready = Arc::new(AtomicBool::new(false));
            let (s2, r2) = (slot.clone(), ready.clone());
            let t = loom::thread::spawn(move || {
                r2.store(true, Ordering::SeqCst);
                s2.wake();
            });
            let count = Arc::new(Count(AtomicUsize::new(0)));
            slot.register(&Waker::from(count.clone()));
            let seen = ready.load(Ordering::SeqCst);
            t.join().unwrap();
            assert!(seen || count.0.load(Ordering::SeqCst) == 1, "lost wake-up");
        });
    }
}
