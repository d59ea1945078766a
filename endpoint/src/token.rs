//! Tokens: what a handler knows about the message it runs for, and its one
//! way to answer.

use crate::handler::Target;
use crate::{Endpoint, HandlerId, Prepared, CLIENT_MIN};
use rgex_core::{Category, Direction, Error, Flags, Prepare, Rank, Result};
use std::cell::Cell;

/// Where a token is in its one-reply life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplyState {
    /// No reply yet.
    None,
    /// A negotiated-payload reply is prepared, not yet committed.
    Prepared,
    /// Replied.
    Done,
}

/// Handed to a handler: who sent the message, which handler runs, and
/// (for requests) the way to reply, once.
///
/// ```no_run
/// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
/// use rgex_core::Flags;
/// let pong = ep.handlers().register("pong", |_tok, _msg| {})?;
/// ep.handlers().register("ping", move |tok, msg| {
///     assert!(tok.is_request());
///     tok.reply_short(pong, msg.args(), Flags::empty()).expect("one reply");
/// })?;
/// # Ok(()) }
/// ```
pub struct Token<'a> {
    ep: &'a Endpoint,
    src: Rank,
    handler: u8,
    dir: Direction,
    state: Cell<ReplyState>,
    /// The sender's endpoint index, for an AM from another index than
    /// this endpoint's (see [`crossing`](crate::crossing)).
    crossing: Option<u32>,
}

impl<'a> Token<'a> {
    pub(crate) fn new(ep: &'a Endpoint, src: Rank, handler: u8, dir: Direction) -> Self {
        Token {
            ep,
            src,
            handler,
            dir,
            state: Cell::new(ReplyState::None),
            crossing: None,
        }
    }

    /// The token of an AM from endpoint `from` of `src`, another index
    /// than `ep`'s: its replies go back there.
    pub(crate) fn crossing(
        ep: &'a Endpoint,
        src: Rank,
        handler: u8,
        dir: Direction,
        from: u32,
    ) -> Self {
        Token {
            crossing: Some(from),
            ..Token::new(ep, src, handler, dir)
        }
    }

    /// The index of the sender's endpoint on its rank: this endpoint's own
    /// but for an AM from another index
    /// ([`Endpoint::request_short_at`] and the others), whose reply goes
    /// back to that endpoint.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint) -> rgex_core::Result<()> {
    /// ep.handlers().register("who", |tok, _msg| {
    ///     println!("from endpoint {} of {}", tok.src_endpoint(), tok.src());
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn src_endpoint(&self) -> u32 {
        self.crossing.unwrap_or_else(|| self.ep.index())
    }

    /// The rank that sent the message.
    pub fn src(&self) -> Rank {
        self.src
    }

    /// The handler running.
    pub fn handler(&self) -> HandlerId {
        HandlerId::new(self.handler)
    }

    /// True for a request (which may reply), false for a reply.
    pub fn is_request(&self) -> bool {
        self.dir == Direction::Request
    }

    /// Largest Medium reply payload with `nargs` arguments.
    pub fn max_reply_medium(&self, nargs: usize) -> usize {
        self.ep.max_medium(self.src, nargs)
    }

    /// The endpoint the message arrived on (for its segment and queries;
    /// requests and polls are refused inside a handler).
    pub fn endpoint(&self) -> &'a Endpoint {
        self.ep
    }

    /// Set where this token is in its one-reply life (a prepared reply's).
    #[inline(always)]
    pub(crate) fn set_state(&self, state: ReplyState) {
        self.state.set(state)
    }

    /// `Ok` if this token may answer with a message to protocol index
    /// `index`: only the token of a protocol's own request (an index
    /// below [`CLIENT_MIN`]) may, so a client handler can never answer
    /// for rgex (say, with a forged get reply), whatever id it holds.
    #[inline(always)]
    pub(crate) fn may_answer_protocol(&self, index: u8) -> Result<()> {
        if self.handler < CLIENT_MIN {
            Ok(())
        } else {
            Err(self.protocol_reply_refusal(index))
        }
    }

    #[cold]
    #[inline(never)]
    fn protocol_reply_refusal(&self, index: u8) -> Error {
        Error::ReservedHandler {
            rank: self.ep.rank(),
            index,
            client_min: CLIENT_MIN,
        }
    }

    /// Check this token may reply now.
    #[inline(always)]
    fn may_reply(&self) -> Result<()> {
        if self.dir == Direction::Request && self.state.get() == ReplyState::None {
            Ok(())
        } else {
            Err(self.reply_refusal())
        }
    }

    /// Why [`may_reply`](Self::may_reply) refused (out of line: a reply
    /// only branches to it).
    #[cold]
    #[inline(never)]
    fn reply_refusal(&self) -> Error {
        let handler = self.ep.handlers().name(self.handler);
        if self.dir == Direction::Reply {
            Error::ReplyFromReply {
                handler,
                index: self.handler,
                src: self.src,
            }
        } else {
            Error::ReplyTwice {
                handler,
                index: self.handler,
                src: self.src,
            }
        }
    }

    #[inline]
    fn reply_fixed<H: Target>(
        &self,
        category: Category,
        h: H,
        args: &[u32],
        payload: &[u8],
        off: u64,
        flags: Flags,
    ) -> Result<()> {
        if H::PROTOCOL {
            self.may_answer_protocol(h.raw())?;
        }
        if let Some(from) = self.crossing {
            return self.reply_crossing(from, category, h.raw(), args, payload, off, flags);
        }
        self.reply_with(category, off, |ep, spec| {
            ep.send_fixed(spec, h, args, payload, flags)
        })
    }

    /// Reply to an AM from endpoint `from` (another index than this
    /// endpoint's), keeping the one-reply rule.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn reply_crossing(
        &self,
        from: u32,
        category: Category,
        h: u8,
        args: &[u32],
        payload: &[u8],
        off: u64,
        flags: Flags,
    ) -> Result<()> {
        self.may_reply()?;
        let to = crate::EndpointAddr::new(self.src, from);
        self.ep
            .send_crossing(to, Direction::Reply, category, h, args, payload, off, flags)?;
        self.state.set(ReplyState::Done);
        Ok(())
    }

    /// Reply with what `send` sends for the reply's `spec`, keeping the
    /// one-reply rule: refused unless this token may reply, and used up
    /// only if `send` succeeds.
    #[inline(always)]
    pub(crate) fn reply_with(
        &self,
        category: Category,
        off: u64,
        send: impl FnOnce(&Endpoint, Prepare) -> Result<()>,
    ) -> Result<()> {
        self.may_reply()?;
        let spec = Prepare {
            category,
            long_offset: off,
            ..self.reply_spec()
        };
        send(self.ep, spec)?;
        self.state.set(ReplyState::Done);
        Ok(())
    }

    /// Report the message this token came with as malformed, saying
    /// `why` (see [`Endpoint::malformed`]): for protocol handlers that
    /// find something wrong in what a peer sent.
    #[cold]
    pub fn malformed(&self, why: &str) {
        self.ep.malformed(self.src, self.handler, why)
    }

    /// Reply with a Short.
    #[inline]
    pub fn reply_short(&self, h: impl Target, args: &[u32], flags: Flags) -> Result<()> {
        self.reply_fixed(Category::Short, h, args, &[], 0, flags)
    }

    /// Reply with a Medium (payload copied into rgex's buffer).
    pub fn reply_medium(
        &self,
        h: impl Target,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.reply_fixed(Category::Medium, h, args, payload, 0, flags)
    }

    /// Reply with a Long landing at `dest_offset` in the requester's segment.
    pub fn reply_long(
        &self,
        h: impl Target,
        args: &[u32],
        payload: &[u8],
        dest_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        self.reply_fixed(Category::Long, h, args, payload, dest_offset, flags)
    }

    /// Negotiated-payload Medium reply (see
    /// [`Endpoint::prepare_request_medium`]). Committing it is the reply;
    /// cancelling it leaves the token free to reply again.
    #[inline(always)]
    pub fn prepare_reply_medium<'t>(
        &'t self,
        client_buf: Option<&'t mut [u8]>,
        least: usize,
        most: usize,
        nargs: usize,
        flags: Flags,
    ) -> Result<Prepared<'t>> {
        let spec = Prepare {
            category: Category::Medium,
            nargs,
            least,
            most,
            ..self.reply_spec()
        };
        self.prepare_reply(spec, client_buf, flags)
    }

    /// Negotiated-payload Long reply: as
    /// [`prepare_reply_medium`](Self::prepare_reply_medium), the payload
    /// landing at `dest_offset` in the requester's segment (assembled in
    /// place where the conduit can: on smp, in that segment itself).
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, done: rgex_endpoint::HandlerId) -> rgex_core::Result<()> {
    /// use rgex_core::Flags;
    /// ep.handlers().register("fetch", move |tok, msg| {
    ///     let at = u64::from(msg.arg(0));
    ///     let mut p = tok
    ///         .prepare_reply_long(None, 64, 4096, 1, at, Flags::empty())
    ///         .expect("a reply");
    ///     let n = p.len();
    ///     p.buf()[..n].fill(7);
    ///     p.commit(done, &[n as u32], n).expect("committed");
    /// })?;
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn prepare_reply_long<'t>(
        &'t self,
        client_buf: Option<&'t mut [u8]>,
        least: usize,
        most: usize,
        nargs: usize,
        dest_offset: u64,
        flags: Flags,
    ) -> Result<Prepared<'t>> {
        let spec = Prepare {
            category: Category::Long,
            nargs,
            least,
            most,
            long_offset: dest_offset,
            ..self.reply_spec()
        };
        self.prepare_reply(spec, client_buf, flags)
    }

    /// A reply to this token's requester; the caller sets the rest.
    #[inline(always)]
    fn reply_spec(&self) -> Prepare {
        Prepare {
            peer: self.src,
            dir: Direction::Reply,
            category: Category::Short,
            nargs: 0,
            least: 0,
            most: 0,
            long_offset: 0,
        }
    }

    /// Prepare the reply `spec` describes, if this token may reply.
    #[inline(always)]
    fn prepare_reply<'t>(
        &'t self,
        spec: Prepare,
        client_buf: Option<&'t mut [u8]>,
        flags: Flags,
    ) -> Result<Prepared<'t>> {
        self.may_reply()?;
        if let Some(from) = self.crossing {
            return Err(crate::crossing::no_prepared_reply(self.ep, self.src, from));
        }
        Prepared::new(self.ep, spec, client_buf, flags, Some(self))
    }
}
