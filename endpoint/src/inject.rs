//! The one injection path: validate, claim conduit resources (stalling or
//! failing fast), assemble, commit. Fixed payload is claim + copy + commit
//! ([`Conduit::try_send`](rgex_core::Conduit::try_send), one call);
//! negotiated payload hands the claimed buffer to the client in between.

use crate::context::in_handler;
use crate::handler::Target;
use crate::{Endpoint, CLIENT_MIN};
use rgex_core::blocked::Waiting;
use rgex_core::segment::check_range;
use rgex_core::{
    Backoff, Category, Claim, Direction, Error, Flags, PollSet, Prepare, Result, MAX_ARGS,
};

impl Endpoint {
    /// Check `spec` against the job and the size limits, and clamp `most`
    /// to what can be sent. `fixed` marks a fixed-payload send
    /// (`least == most == len`), whose overflow is reported as such.
    ///
    /// The checks here only decide; the error is built out of line by
    /// [`refusal`](Self::refusal), so the path every send takes stays short.
    #[inline(always)]
    pub(crate) fn validate(&self, spec: &mut Prepare, fixed: bool) -> Result<()> {
        match self.payload_limit(spec) {
            Some(max) if spec.least <= max && spec.least <= spec.most => {
                spec.most = spec.most.min(max);
                Ok(())
            }
            _ => Err(self.refusal(spec, fixed)),
        }
    }

    /// The most payload bytes `spec` may carry, or `None` when its peer,
    /// argument count or Long range is out of bounds.
    #[inline(always)]
    fn payload_limit(&self, spec: &Prepare) -> Option<usize> {
        if spec.peer.0 >= self.size() || spec.nargs > MAX_ARGS {
            return None;
        }
        let c = self.conduit();
        match spec.category {
            Category::Short => Some(0),
            Category::Medium => Some(c.max_medium(spec.peer, spec.nargs)),
            Category::Long => {
                let seg = c.segment_len(spec.peer);
                let end = spec.long_offset.checked_add(spec.least as u64)?;
                (end <= seg).then(|| {
                    c.max_long(spec.peer, spec.nargs)
                        .min((seg - spec.long_offset) as usize)
                })
            }
        }
    }

    /// Why [`validate`](Self::validate) refused `spec`: the first limit it
    /// breaks, named.
    #[cold]
    #[inline(never)]
    fn refusal(&self, spec: &Prepare, fixed: bool) -> Error {
        let size = self.size();
        if spec.peer.0 >= size {
            return Error::RankOutOfRange {
                rank: spec.peer.0,
                size,
            };
        }
        if spec.nargs > MAX_ARGS {
            return Error::TooManyArgs {
                nargs: spec.nargs,
                max: MAX_ARGS,
            };
        }
        if spec.least > spec.most {
            return Error::BadLength {
                what: "prepare: least exceeds most",
                len: spec.least,
                limit: spec.most,
            };
        }
        if spec.category == Category::Long {
            let seg = self.conduit().segment_len(spec.peer);
            if let Err(e) = check_range(spec.peer, seg, spec.long_offset, spec.least as u64) {
                return e;
            }
        }
        // Peer, argument count and Long range are in bounds (checked
        // above), so only the size limit is left: the one validate used.
        let max = self
            .payload_limit(spec)
            .expect("peer, argument count and Long range were checked above");
        let category = spec.category.name();
        if fixed {
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
        }
    }

    /// Claim conduit resources for `spec`. Without IMMEDIATE, polls while it
    /// waits: everything when sending a request from client code, replies
    /// only when replying from inside a handler (reply handlers send nothing,
    /// so that always drains and never recurses into another wait).
    #[inline(always)]
    pub(crate) fn claim(&self, spec: &Prepare, flags: Flags) -> Result<Claim> {
        let mut refused = None;
        match self.conduit().try_prepare(spec, &mut refused) {
            Some(claim) => Ok(claim),
            None => self.claim_refused(spec, flags, refused),
        }
    }

    /// The conduit refused a claim: hand the error back, or (would-block
    /// without IMMEDIATE) poll and retry until it goes through.
    #[cold]
    #[inline(never)]
    fn claim_refused(&self, spec: &Prepare, flags: Flags, refused: Option<Error>) -> Result<Claim> {
        let c = self.conduit();
        let e = Claim::refusal(refused, c.name());
        if !e.is_would_block() || flags.contains(Flags::IMMEDIATE) {
            return Err(e);
        }
        let set = self.claim_poll_set(spec);
        self.retry_while_blocked(set, &e, || {
            let mut refused = None;
            c.try_prepare(spec, &mut refused)
                .ok_or_else(|| Claim::refusal(refused, c.name()))
        })
    }

    /// What a send waiting for resources may poll (see [`claim`](Self::claim)).
    fn claim_poll_set(&self, spec: &Prepare) -> PollSet {
        if spec.dir == Direction::Reply || in_handler() {
            PollSet::RepliesOnly
        } else {
            PollSet::All
        }
    }

    /// Run one conduit injection (`attempt`: a native put, an offloaded
    /// atomic, ...): when it says would-block, hand that back under
    /// IMMEDIATE, else poll and retry until it goes through. For rgex's
    /// layers that call the Conduit SPI themselves.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
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
                self.retry_while_blocked(set, &e, attempt)
            }
            other => other,
        }
    }

    /// Poll `set` (backing off when nothing arrives) and retry `attempt`
    /// until it stops saying would-block (as `first` did; a record of
    /// the wait names its peer and resource).
    #[cold]
    fn retry_while_blocked<T>(
        &self,
        set: PollSet,
        first: &Error,
        mut attempt: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        let waiting = match first {
            Error::WouldBlock { peer, resource } => Waiting::new("a send waiting for")
                .detail(resource)
                .peer(*peer),
            _ => Waiting::new("a send waiting for its resources"),
        };
        let mut backoff = Backoff::waiting(self.polite(), waiting);
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
    pub(crate) fn send_fixed<H: Target>(
        &self,
        mut spec: Prepare,
        h: H,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.validate_fixed(&mut spec, args, payload)?;
        let handler = self.check_target(h)?;
        self.inject_fixed(&spec, handler, args, payload, flags)
    }

    /// Complete and [`validate`](Self::validate) the spec of a
    /// fixed-payload send of `args` and `payload`.
    #[inline(always)]
    pub(crate) fn validate_fixed(
        &self,
        spec: &mut Prepare,
        args: &[u32],
        payload: &[u8],
    ) -> Result<()> {
        spec.nargs = args.len();
        spec.least = payload.len();
        spec.most = payload.len();
        self.validate(spec, true)
    }

    /// The injection under [`send_fixed`](Self::send_fixed), after every
    /// check: try, and retry while blocked unless IMMEDIATE.
    #[inline]
    pub(crate) fn inject_fixed(
        &self,
        spec: &Prepare,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        let c = self.conduit();
        match c.try_send(spec, handler, args, payload) {
            Err(e) if e.is_would_block() && !flags.contains(Flags::IMMEDIATE) => {
                let set = self.claim_poll_set(spec);
                self.retry_while_blocked(set, &e, || c.try_send(spec, handler, args, payload))
            }
            other => other,
        }
    }

    /// The sender-side checks of a send's target: a client's
    /// [`HandlerId`](crate::HandlerId) may not name a reserved index, and
    /// the index must name something (tables are symmetric across ranks,
    /// so an unknown index here is unknown there). Returns the raw index.
    #[inline(always)]
    pub(crate) fn check_target<H: Target>(&self, h: H) -> Result<u8> {
        let index = h.raw();
        // A protocol id is good only on the endpoint whose table made it
        // (one made on a scratch table names nothing here); a client id
        // never names a reserved index.
        let reserved = if H::PROTOCOL {
            h.table() != self.handlers().id()
        } else {
            index < CLIENT_MIN
        };
        if reserved {
            return Err(self.reserved_handler(index));
        }
        match self.handlers().get(index) {
            Some(_) => Ok(index),
            None => Err(self.unknown_handler(index)),
        }
    }

    #[cold]
    #[inline(never)]
    fn reserved_handler(&self, index: u8) -> Error {
        Error::ReservedHandler {
            rank: self.rank(),
            index,
            client_min: CLIENT_MIN,
        }
    }

    #[cold]
    #[inline(never)]
    fn unknown_handler(&self, index: u8) -> Error {
        Error::UnknownHandler {
            rank: self.rank(),
            index,
        }
    }
}
