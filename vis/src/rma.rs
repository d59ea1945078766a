//! The RMA mechanism: one RMA operation per contiguous chunk, all in
//! flight at once, counted on one local- and one remote-completion counter.

use crate::direct::Local;
use crate::engine::Track;
use crate::{Shape, Vis};
use rgex_core::{Error, Event, Flags, GlobalAddr, OpCounter, Rank, Result};
use std::sync::Arc;

impl Vis {
    /// An IMMEDIATE transfer of several chunks over RMA is refused unless
    /// the segment is mapped: all or nothing would need every chunk's
    /// injection resources at once.
    fn rma_immediate(&self, peer: Rank, shape: &Shape, flags: Flags) -> Result<()> {
        if flags.contains(Flags::IMMEDIATE)
            && shape.chunks() > 1
            && self.ep.rma_path(peer) != rgex_endpoint::rma::RmaPath::Mapped
        {
            return Err(Error::WouldBlock {
                peer,
                resource: "RMA injection (an IMMEDIATE VIS transfer over RMA is limited to one chunk unless the segment is mapped)",
            });
        }
        Ok(())
    }

    /// A put of one RMA operation per chunk, all counted on one local- and
    /// one remote-completion counter: the events `(lc, rc)`.
    ///
    /// # Safety
    /// The source must stay readable and unmodified at every local offset
    /// of `shape` until the returned `lc` fires.
    pub(crate) unsafe fn rma_deferred(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        flags: Flags,
    ) -> Result<(Event, Event)> {
        self.rma_immediate(peer, shape, flags)?;
        let (lc, rc) = (OpCounter::new(0), OpCounter::new(0));
        // SAFETY: forwarded caller contract.
        unsafe { self.rma_chunks(peer, shape, local, &lc, &rc, flags)? };
        Ok((self.event(lc), self.event(rc)))
    }

    /// One RMA operation per chunk of `shape`, all in flight at once: a
    /// put's remote completion counted on `rc` and its local completion on
    /// `lc`, a get's completion on `rc`. On an error the chunks already
    /// started are waited for (they may still read or write the buffer).
    ///
    /// # Safety
    /// The local buffer must stay valid at every local offset of `shape`
    /// (a source unmodified until `lc` is done, a destination untouched
    /// until `rc` is).
    unsafe fn rma_chunks(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
        flags: Flags,
    ) -> Result<()> {
        let mut err = None;
        shape.for_each(|p, l, len| {
            if err.is_some() {
                return;
            }
            let at = GlobalAddr::new(peer, p);
            // SAFETY: the chunk is inside the validated local side, which
            // the caller keeps as this function requires.
            let r = unsafe {
                match local {
                    Local::Src(s) => self
                        .ep
                        .put_counted(at, s.add(l as usize), len, lc, rc, flags),
                    Local::Dst(d) => self.ep.get_counted(d.add(l as usize), len, at, rc, flags),
                }
            };
            err = r.err();
        });
        match err {
            Some(e) => {
                // The injection error is the one reported.
                self.event(lc.clone()).wait_unchecked();
                self.event(rc.clone()).wait_unchecked();
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// One RMA operation per chunk, all in flight, then one event (or the
    /// NBI counter): a put waits for its local completion before return,
    /// its source being borrowed for the call only.
    ///
    /// # Safety
    /// As [`start`](Self::start).
    pub(crate) unsafe fn rma(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        self.rma_immediate(peer, shape, flags)?;
        let (lc, rc) = self.counters(track);
        // SAFETY: forwarded caller contract.
        unsafe { self.rma_chunks(peer, shape, local, &lc, &rc, flags)? };
        self.finish(lc, rc, track)
    }

    /// The local- and remote-completion counters of a transfer tracked by
    /// `track`: fresh ones, or a fresh `lc` and this thread's NBI counter.
    pub(crate) fn counters(&self, track: Track) -> (Arc<OpCounter>, Arc<OpCounter>) {
        match track {
            Track::Event => (OpCounter::new(0), OpCounter::new(0)),
            Track::Nbi(cat) => (OpCounter::new(0), self.ep.nbi_counter(cat)),
        }
    }

    /// Wait for local completion (`lc`: the source is the caller's again),
    /// then the transfer's event, or nothing more to wait on for NBI.
    pub(crate) fn finish(
        &self,
        lc: Arc<OpCounter>,
        rc: Arc<OpCounter>,
        track: Track,
    ) -> Result<Event> {
        self.event(lc).wait()?;
        Ok(match track {
            Track::Event => self.event(rc),
            Track::Nbi(_) => Event::done(),
        })
    }
}
