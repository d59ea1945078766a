//! The one injection path: validate, claim conduit resources (stalling or
//! failing fast), assemble, commit. Fixed payload is claim + copy + commit;
//! negotiated payload hands the claimed buffer to the client in between.

use crate::context::in_handler;
use crate::Endpoint;
use rgex_core::segment::check_range;
use rgex_core::{
    Backoff, Category, Direction, Error, Flags, PollSet, Prepare, Result, SendSlot, MAX_ARGS,
};

impl Endpoint {
    /// Check `spec` against the job, the handler table and the size limits,
    /// and clamp `most` to what can be sent. `fixed` marks a fixed-payload
    /// send (`least == most == len`), whose overflow is reported as such.
    #[inline]
    pub(crate) fn validate(&self, spec: &mut Prepare, fixed: bool) -> Result<()> {
        let size = self.size();
        if spec.peer.0 >= size {
            return Err(Error::RankOutOfRange {
                rank: spec.peer.0,
                size,
            });
        }
        if spec.nargs > MAX_ARGS {
            return Err(Error::TooManyArgs {
                nargs: spec.nargs,
                max: MAX_ARGS,
            });
        }
        if spec.least > spec.most {
            return Err(Error::BadLength {
                what: "prepare: least exceeds most",
                len: spec.least,
                limit: spec.most,
            });
        }
        let c = self.conduit();
        let max = match spec.category {
            Category::Short => 0,
            Category::Medium => c.max_medium(spec.peer, spec.nargs),
            Category::Long => {
                let seg = c.segment_len(spec.peer);
                check_range(spec.peer, seg, spec.long_offset, spec.least as u64)?;
                c.max_long(spec.peer, spec.nargs)
                    .min((seg - spec.long_offset) as usize)
            }
        };
        if spec.least > max {
            let category = spec.category.name();
            return Err(if fixed {
                if spec.category == Category::Long {
                    // Only the segment bound can be below least here when
                    // max_long is not: report whichever limit was hit.
                    let max_long = c.max_long(spec.peer, spec.nargs);
                    if spec.least <= max_long {
                        return check_range(
                            spec.peer,
                            c.segment_len(spec.peer),
                            spec.long_offset,
                            spec.least as u64,
                        );
                    }
                }
                Error::PayloadTooLarge {
                    category,
                    peer: spec.peer,
                    len: spec.least,
                    max,
                    nargs: spec.nargs,
                }
            } else {
                Error::LeastTooLarge {
                    category,
                    peer: spec.peer,
                    least: spec.least,
                    max,
                    nargs: spec.nargs,
                }
            });
        }
        spec.most = spec.most.min(max);
        Ok(())
    }

    /// Claim conduit resources for `spec`. Without IMMEDIATE, polls while it
    /// waits: everything when sending a request from client code, replies
    /// only when replying from inside a handler (reply handlers send nothing,
    /// so that always drains and never recurses into another wait).
    #[inline]
    pub(crate) fn claim(&self, spec: &Prepare, flags: Flags) -> Result<SendSlot> {
        match self.conduit().try_prepare(spec) {
            Err(e) if e.is_would_block() && !flags.contains(Flags::IMMEDIATE) => {
                self.claim_slow(spec)
            }
            other => other,
        }
    }

    #[cold]
    fn claim_slow(&self, spec: &Prepare) -> Result<SendSlot> {
        let set = if spec.dir == Direction::Reply || in_handler() {
            PollSet::RepliesOnly
        } else {
            PollSet::All
        };
        self.retry_while_blocked(set, || self.conduit().try_prepare(spec))
    }

    /// Run one conduit injection (`attempt`: a native put, an offloaded
    /// atomic, ...): when it says would-block, hand that back under
    /// IMMEDIATE, else poll and retry until it goes through. For rgex's
    /// layers that call the Conduit SPI themselves.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_am::Endpoint) -> rgex_core::Result<()> {
    /// use rgex_core::Flags;
    /// let mut tries = 0;
    /// ep.inject_or_wait(Flags::empty(), || {
    ///     tries += 1;
    ///     if tries < 3 { Err(rgex_core::Error::WouldBlock { peer: rgex_core::Rank(1), resource: "demo" }) } else { Ok(()) }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn inject_or_wait<T>(
        &self,
        flags: Flags,
        mut attempt: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        match attempt() {
            Err(e) if e.is_would_block() && !flags.contains(Flags::IMMEDIATE) => {
                let set = if in_handler() {
                    PollSet::RepliesOnly
                } else {
                    PollSet::All
                };
                self.retry_while_blocked(set, attempt)
            }
            other => other,
        }
    }

    /// Poll `set` (backing off when nothing arrives) and retry `attempt`
    /// until it stops saying would-block.
    #[cold]
    fn retry_while_blocked<T>(
        &self,
        set: PollSet,
        mut attempt: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        let mut backoff = Backoff::new(self.polite());
        loop {
            if self.progress(set) == 0 {
                backoff.snooze();
            } else {
                backoff.reset();
            }
            match attempt() {
                Err(e) if e.is_would_block() => continue,
                other => return other,
            }
        }
    }

    /// Fixed payload: claim, copy `payload` into the granted buffer, commit.
    #[inline]
    pub(crate) fn send_fixed(
        &self,
        mut spec: Prepare,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        spec.nargs = args.len();
        spec.least = payload.len();
        spec.most = payload.len();
        self.validate(&mut spec, true)?;
        self.check_handler(handler)?;
        let slot = self.claim(&spec, flags)?;
        if !payload.is_empty() {
            // SAFETY: the conduit granted `slot.granted >= least == len`
            // writable bytes at `slot.buf`, reserved for this message, which
            // cannot overlap the client's `payload` slice.
            unsafe {
                std::ptr::copy_nonoverlapping(payload.as_ptr(), slot.buf.as_ptr(), payload.len())
            };
        }
        self.conduit().commit(slot, handler, args, payload.len());
        Ok(())
    }

    /// The sender-side check that `handler` names something (tables are
    /// symmetric across ranks, so an unknown index here is unknown there).
    #[inline]
    pub(crate) fn check_handler(&self, handler: u8) -> Result<()> {
        match self.handlers().get(handler) {
            Some(_) => Ok(()),
            None => Err(Error::UnknownHandler {
                rank: self.rank(),
                index: handler,
            }),
        }
    }
}
