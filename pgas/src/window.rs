//! The flow-control window: how much work (rpc, rpc_ff, rput_then's
//! call, dist_object fetches) this rank may have waiting at each target,
//! sent but not yet served there.
//!
//! A target runs work only in user-level progress, so without a limit a
//! target that computes for a while would queue whatever its peers send
//! meanwhile (rgex's own IMMEDIATE back-pressure holds senders only while
//! the network is full, and the target's internal progress empties the
//! network into its queue). With the window the target's queue holds at
//! most `limit` pieces of work from each sender that waits for room at
//! top level (see [`Pgas::reserve`](crate::runtime::Pgas)).
//!
//! Credits come back in batches: a target counts the work it served per
//! sender and, at `limit / 2` (at least 1), sends the count back in one
//! message. So a sender that has `limit` pieces outstanding has at least
//! `limit - limit / 2` of them still unserved or on their way, and their
//! serving returns the next batch: a sender waiting for room is never
//! left waiting for credits the target holds back.
//!
//! Every counter here is a count, not a publication: no data is read
//! through it, the messages carry the work and the credits, so Relaxed
//! is enough on each of them (read-modify-writes on one counter are
//! totally ordered whatever the ordering argument).

use rgex::Rank;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The window's default size (`RGEX_PGAS_WINDOW` overrides it).
pub const DEFAULT_WINDOW: u32 = 256;

/// Per-peer counts of outstanding and served work.
pub(crate) struct Window {
    limit: u32,
    /// Per target: work sent there and not yet credited back.
    sent: OnceLock<Box<[AtomicU32]>>,
    /// Per source: work from it served here and not yet credited back.
    served: OnceLock<Box<[AtomicU32]>>,
}

impl Window {
    /// A window of `limit` pieces of work per target (at least 1).
    pub fn new(limit: u32) -> Self {
        Window {
            limit: limit.max(1),
            sent: OnceLock::new(),
            served: OnceLock::new(),
        }
    }

    /// The limit `RGEX_PGAS_WINDOW` sets in `settings`, or the default;
    /// an unreadable value is an error naming it.
    pub fn read(settings: &rgex::config::Environment) -> Result<Self, String> {
        Self::from_setting(settings.get(&rgex::config::vars::PGAS_WINDOW))
    }

    /// The window a setting of `RGEX_PGAS_WINDOW` asks for (None: unset).
    fn from_setting(s: Option<&str>) -> Result<Self, String> {
        match s {
            None => Ok(Window::new(DEFAULT_WINDOW)),
            Some(s) => match s.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(Window::new(n)),
                _ => Err(format!(
                    "RGEX_PGAS_WINDOW={s:?}: expected a whole number of calls per target, from 1 to {}",
                    u32::MAX
                )),
            },
        }
    }

    /// Size the tables for a job of `ranks` ranks (once, at init).
    pub fn size(&self, ranks: u32) {
        let table = || (0..ranks).map(|_| AtomicU32::new(0)).collect();
        let _ = self.sent.set(table());
        let _ = self.served.set(table());
    }

    /// The window's size.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    fn sent(&self, r: Rank) -> Option<&AtomicU32> {
        self.sent.get()?.get(r.0 as usize)
    }

    /// Take room for one piece of work to `target`: false if the window
    /// to it is full. (A rank outside the job has no window: the send
    /// that follows reports it.)
    pub fn try_take(&self, target: Rank) -> bool {
        let Some(c) = self.sent(target) else {
            return true;
        };
        // Relaxed: a count (see the module's note).
        c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < self.limit).then_some(n + 1)
        })
        .is_ok()
    }

    /// Take room past the limit (a call made where waiting for room
    /// could deadlock: inside user-level progress).
    pub fn overdraw(&self, target: Rank) {
        if let Some(c) = self.sent(target) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Give back room taken for work that was not sent after all.
    pub fn give_back(&self, target: Rank) {
        self.credited(target, 1);
    }

    /// `n` pieces of work sent to `target` were served there. False if
    /// that is more than are outstanding (a damaged credit: the count
    /// stops at zero).
    pub fn credited(&self, target: Rank, n: u32) -> bool {
        let Some(c) = self.sent(target) else {
            return false;
        };
        let mut fits = true;
        // Relaxed: a count (see the module's note).
        let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |have| {
            fits = n <= have;
            Some(have.saturating_sub(n))
        });
        fits
    }

    /// One piece of work from `src` was served here: the credits to send
    /// it back now, if a batch is full.
    pub fn served(&self, src: Rank) -> Option<u32> {
        let c = self.served.get()?.get(src.0 as usize)?;
        let batch = (self.limit / 2).max(1);
        // Relaxed: a count (see the module's note). The swap takes the
        // whole batch for one sender even when two threads serve at once.
        if c.fetch_add(1, Ordering::Relaxed) + 1 >= batch {
            let n = c.swap(0, Ordering::Relaxed);
            (n > 0).then_some(n)
        } else {
            None
        }
    }

    /// Work sent to `target` and not yet credited back (for tests and
    /// diagnostics).
    pub fn outstanding(&self, target: Rank) -> u32 {
        self.sent(target).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_fills_at_its_limit_and_credits_reopen_it() {
        let w = Window::new(4);
        w.size(2);
        let t = Rank(1);
        assert!((0..4).all(|_| w.try_take(t)));
        assert!(!w.try_take(t), "full at 4");
        assert!(w.try_take(Rank(0)), "each target has its own window");
        assert!(w.credited(t, 2));
        assert_eq!(w.outstanding(t), 2);
        assert!(w.try_take(t) && w.try_take(t) && !w.try_take(t));
        w.overdraw(t);
        assert_eq!(w.outstanding(t), 5, "overdrawn past the limit");
    }

    #[test]
    fn served_work_is_credited_back_in_batches_of_half_the_window() {
        let w = Window::new(8);
        w.size(2);
        let s = Rank(0);
        let batches: Vec<Option<u32>> = (0..9).map(|_| w.served(s)).collect();
        assert_eq!(batches.iter().flatten().sum::<u32>(), 8);
        assert_eq!(batches[3], Some(4));
        assert_eq!(batches[7], Some(4));
        assert_eq!(batches[8], None, "one served, batch not full");
        // A window of one credits every piece at once.
        let one = Window::new(1);
        one.size(1);
        assert_eq!(one.served(Rank(0)), Some(1));
    }

    #[test]
    fn a_credit_for_more_than_was_sent_is_refused_and_stops_at_zero() {
        let w = Window::new(4);
        w.size(1);
        assert!(w.try_take(Rank(0)));
        assert!(!w.credited(Rank(0), 2));
        assert_eq!(w.outstanding(Rank(0)), 0);
        assert!(!w.credited(Rank(7), 1), "no such rank");
        w.give_back(Rank(0));
        assert_eq!(w.outstanding(Rank(0)), 0);
    }

    #[test]
    fn the_limit_comes_from_the_setting_or_is_refused_clearly() {
        assert_eq!(Window::from_setting(None).unwrap().limit(), DEFAULT_WINDOW);
        assert_eq!(Window::from_setting(Some("16")).unwrap().limit(), 16);
        for bad in ["0", "-3", "many", ""] {
            let e = Window::from_setting(Some(bad)).err().expect(bad);
            assert!(e.contains("RGEX_PGAS_WINDOW") && e.contains(bad), "{e}");
        }
        assert_eq!(Window::new(0).limit(), 1);
    }
}
