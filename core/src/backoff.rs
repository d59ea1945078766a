//! Spin-then-yield backoff for the loops that wait on another process.

/// Spins a little, then yields the CPU.
///
/// On an oversubscribed node (more ranks than cores) the rank we wait for
/// may be descheduled; spinning would only burn its time slice. After a few
/// spins we call `sched_yield` so it can run. In "polite" mode (the launcher
/// sets `RGEX_POLITE=1` when ranks outnumber cores) we yield at once.
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
}

const SPIN_LIMIT: u32 = 64;

impl Backoff {
    /// A fresh backoff; `polite` yields on every call.
    pub fn new(polite: bool) -> Self {
        Backoff { step: 0, polite }
    }

    /// Wait a little; longer (a yield) after repeated calls.
    #[inline]
    pub fn snooze(&mut self) {
        if self.polite || self.step >= SPIN_LIMIT {
            std::thread::yield_now();
        } else {
            self.step += 1;
            std::hint::spin_loop();
        }
    }

    /// Start over after progress was made.
    #[inline]
    pub fn reset(&mut self) {
        self.step = 0;
    }
}
