//! Spin-then-yield backoff for the loops that wait on another process.

use crate::blocked::{self, Published, Waiting};

/// Spins a little, then yields the CPU.
///
/// On an oversubscribed node (more ranks than cores) the rank we wait for
/// may be descheduled; spinning would only burn its time slice. After a few
/// spins we call `sched_yield` so it can run. In "polite" mode (the launcher
/// sets `RGEX_POLITE=1` when ranks outnumber cores) we yield at once.
///
/// The first yield also publishes what the loop waits for (see
/// [`blocked`]): the line that made the backoff
/// ([`new`](Self::new)), or the description given to
/// [`waiting`](Self::waiting). It is withdrawn when the backoff is
/// dropped. A wait that ends while it still spins publishes nothing;
/// a backoff that is never snoozed costs what it always did.
///
/// ```
/// let mut b = rgex_core::Backoff::new(false);
/// for _ in 0..100 { b.snooze(); }
/// b.reset();
/// ```
#[derive(Debug)]
pub struct Backoff {
    step: u32,
    polite: bool,
    waiting: Waiting,
    /// This wait's record, once it has yielded; withdrawn on drop. It
    /// makes the backoff belong to its thread (not `Send`).
    published: Option<Published>,
}

const SPIN_LIMIT: u32 = 64;

impl Backoff {
    /// A fresh backoff; `polite` yields on every call. Its record, if it
    /// comes to yield, names the caller's line.
    #[track_caller]
    #[inline]
    pub fn new(polite: bool) -> Self {
        Self::waiting(polite, Waiting::new(""))
    }

    /// A fresh backoff whose record, if it comes to yield, is `waiting`.
    ///
    /// ```
    /// use rgex_core::blocked::Waiting;
    /// use rgex_core::{Backoff, Rank};
    /// let mut b = Backoff::waiting(false, Waiting::new("a reply from rank 2").peer(Rank(2)));
    /// b.snooze();
    /// ```
    #[inline]
    pub fn waiting(polite: bool, waiting: Waiting) -> Self {
        Backoff {
            step: 0,
            polite,
            waiting,
            published: None,
        }
    }

    /// Wait a little; longer (a yield) after repeated calls.
    #[inline]
    pub fn snooze(&mut self) {
        if self.polite || self.step >= SPIN_LIMIT {
            if self.published.is_none() {
                self.publish();
            }
            std::thread::yield_now();
        } else {
            self.step += 1;
            std::hint::spin_loop();
        }
    }

    /// Publish this wait's record now, if it has not been (for a loop
    /// that blocks some other way than [`snooze`](Self::snooze), a sleep
    /// on a futex say).
    pub fn blocked(&mut self) {
        if self.published.is_none() {
            self.publish();
        }
    }

    #[cold]
    #[inline(never)]
    fn publish(&mut self) {
        self.published = Some(blocked::publish(self.waiting));
    }

    /// Start over after progress was made.
    #[inline]
    pub fn reset(&mut self) {
        self.step = 0;
    }
}
