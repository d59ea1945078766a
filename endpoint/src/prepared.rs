//! Negotiated payload: a send whose buffer was reserved first, filled in
//! place, then committed (or cancelled).

use crate::handler::Target;
use crate::token::ReplyState;
use crate::{Endpoint, Token};
use rgex_core::cell::Doorbell;
use rgex_core::descriptor::Kind;
use rgex_core::{Error, Flags, Prepare, Result, SendSlot};
use std::mem::ManuallyDrop;

/// The flags [`Prepared::commit_with`] accepts: [`Flags::IMMEDIATE`].
pub const COMMIT_FLAGS: Flags = Flags::IMMEDIATE;

/// A prepared negotiated-payload message (the "source descriptor").
///
/// Holds the conduit resources for one message: exactly one of
/// [`commit`](Self::commit) (or [`commit_with`](Self::commit_with)) or
/// [`cancel`](Self::cancel) releases them; dropping it cancels.
///
/// **Flags.** Everything a message needs (its queue slot, its payload
/// buffer, its credit) is claimed at prepare, so that is where
/// [`Flags::IMMEDIATE`] acts: a prepare with it returns
/// [`Error::WouldBlock`] at once instead of polling for a resource. A
/// commit never waits and never returns `WouldBlock`, on every conduit
/// (it publishes what the claim holds; the conduit's commit never
/// waits), so [`commit_with`](Self::commit_with) accepts IMMEDIATE and
/// holds to it by construction. A flag that cannot apply at commit is an
/// [`Error::FlagsNotApplicable`], with the resources released and
/// nothing sent, never silently ignored.
///
/// ```no_run
/// # fn demo(ep: &rgex_endpoint::Endpoint, h: rgex_endpoint::HandlerId) -> rgex_core::Result<()> {
/// use rgex_core::{Flags, Rank};
/// let mut sd = ep.prepare_request_medium(Rank(1), None, 16, 4096, 1, Flags::empty())?;
/// let buf = sd.buf();                 // rgex's buffer: assemble in place
/// let n = buf.len().min(100);
/// buf[..n].fill(7);
/// sd.commit(h, &[n as u32], n)?;      // send the first n bytes
/// # Ok(()) }
/// ```
pub struct Prepared<'a> {
    ep: &'a Endpoint,
    /// The claim and what it was claimed for, field by field (plain
    /// scalars, so the whole struct can live in registers). Live until
    /// `commit` or `cancel` consumes `self` (both take it out and skip
    /// `Drop`) or `Drop` cancels it. Kept out of an `Option`: the hot path
    /// moves this struct, so it stays small and check-free.
    slot: ManuallyDrop<SendSlot>,
    client: Option<&'a mut [u8]>,
    /// The token replying, for a reply.
    reply: Option<&'a Token<'a>>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("granted", &self.slot.granted)
            .field("client_buffer", &self.client.is_some())
            .finish()
    }
}

impl<'a> Prepared<'a> {
    #[inline(always)]
    pub(crate) fn new(
        ep: &'a Endpoint,
        mut spec: Prepare,
        client: Option<&'a mut [u8]>,
        flags: Flags,
        reply: Option<&'a Token<'a>>,
    ) -> Result<Self> {
        if let Some(b) = &client {
            if spec.least > b.len() {
                return Err(Error::BadLength {
                    what: "prepare: least exceeds the client buffer",
                    len: spec.least,
                    limit: b.len(),
                });
            }
            spec.most = spec.most.min(b.len());
        }
        ep.validate(&mut spec, false)?;
        let claim = ep.claim(&spec, flags)?;
        if let Some(r) = reply {
            r.set_state(ReplyState::Prepared);
        }
        Ok(Prepared {
            ep,
            slot: ManuallyDrop::new(SendSlot::new(&spec, claim)),
            client,
            reply,
        })
    }

    /// Bytes granted: `least <= len() <= most`.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.slot.granted
    }

    /// True if nothing was granted (`most` was 0).
    pub fn is_empty(&self) -> bool {
        self.slot.granted == 0
    }

    /// True if the buffer is the client's own (copied at commit), false if
    /// it is rgex's (assembled in place, never copied again).
    pub fn is_client_buffer(&self) -> bool {
        self.client.is_some()
    }

    /// The granted buffer, `len()` bytes, to assemble the payload in.
    #[inline(always)]
    pub fn buf(&mut self) -> &mut [u8] {
        let granted = self.slot.granted;
        match &mut self.client {
            Some(b) => &mut b[..granted],
            // SAFETY: the conduit reserved `granted` (the validated `most`)
            // writable bytes at `slot.buf` (non-null) for this message
            // alone until commit or cancel, and `&mut self` keeps this the
            // only live view.
            None => unsafe { std::slice::from_raw_parts_mut(self.slot.buf.as_ptr(), granted) },
        }
    }

    /// Take the slot out and forget `self` (so `Drop` does not cancel).
    #[inline(always)]
    fn into_parts(
        self,
    ) -> (
        &'a Endpoint,
        SendSlot,
        Option<&'a mut [u8]>,
        Option<&'a Token<'a>>,
    ) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again, so the slot is taken
        // exactly once; the other fields are plain references.
        let slot = unsafe { ManuallyDrop::take(&mut me.slot) };
        (me.ep, slot, me.client.take(), me.reply)
    }

    /// Send the first `len` bytes of the buffer to handler `h` with `args`
    /// (at most the `nargs` given at prepare). On error nothing is sent and
    /// the resources are released.
    #[inline(always)]
    pub fn commit<H: Target>(self, h: H, args: &[u32], len: usize) -> Result<()> {
        let (ep, slot, client, reply) = self.into_parts();
        let checked = match reply {
            Some(t) if H::PROTOCOL => t.may_answer_protocol(h.raw()),
            _ => Ok(()),
        };
        let handler = match checked.and_then(|()| ep.check_target(h)) {
            Ok(i) if len <= slot.granted && args.len() <= slot.nargs as usize => i,
            checked => return Err(refuse_commit(ep, slot, reply, checked, args.len(), len)),
        };
        if let Some(b) = client {
            if len > 0 {
                // SAFETY: the conduit reserved `granted >= len` bytes at
                // slot.buf for this message; the client buffer is a distinct
                // Rust slice, so the two do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), slot.buf.as_ptr(), len) };
            }
        }
        // SAFETY: the slot's claim came from this conduit (`new`) and is
        // consumed here: `into_parts` took it out, so neither `cancel` nor
        // `Drop` sees it again.
        unsafe { publish(ep, slot, handler, args, len) };
        if let Some(r) = reply {
            r.set_state(ReplyState::Done);
        }
        Ok(())
    }

    /// [`commit`](Self::commit) with `flags`: those in [`COMMIT_FLAGS`]
    /// (IMMEDIATE: the commit returns at once, as every commit does; see
    /// [`Prepared`] on flags). Any other flag is refused with
    /// [`Error::FlagsNotApplicable`] naming it; the resources are then
    /// released and nothing is sent, as for any refused commit.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, h: rgex_endpoint::HandlerId) -> rgex_core::Result<()> {
    /// use rgex_core::{Flags, Rank};
    /// // IMMEDIATE at prepare: WouldBlock instead of polling for a buffer.
    /// let mut sd = ep.prepare_request_medium(Rank(1), None, 8, 64, 1, Flags::IMMEDIATE)?;
    /// sd.buf()[..8].fill(1);
    /// sd.commit_with(h, &[8], 8, Flags::IMMEDIATE)?;
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn commit_with(self, h: impl Target, args: &[u32], len: usize, flags: Flags) -> Result<()> {
        if !COMMIT_FLAGS.contains(flags) {
            return Err(self.refuse_flags(flags));
        }
        self.commit(h, args, len)
    }

    /// Refuse flags that do not apply at commit, releasing the resources.
    #[cold]
    #[inline(never)]
    fn refuse_flags(self, flags: Flags) -> Error {
        let (ep, slot, _, reply) = self.into_parts();
        let e = Error::FlagsNotApplicable {
            what: "commit of a prepared message",
            from: ep.rank(),
            peer: slot.peer,
            flags: flags.difference(COMMIT_FLAGS).bits(),
            accepted: "IMMEDIATE, which every commit honours: resources are claimed at prepare",
        };
        release(ep, slot, reply);
        e
    }

    /// Give the resources back; nothing reaches the peer's handlers.
    pub fn cancel(self) {
        let (ep, slot, _, reply) = self.into_parts();
        release(ep, slot, reply);
    }
}

/// Publish a claimed message: ring its cell's doorbell when the peer's
/// queue is mapped (the claim is the node-local transport's, and its
/// header is written in place: no call into the conduit), else
/// [`Conduit::commit`](rgex_core::Conduit::commit).
///
/// # Safety
/// As for `Conduit::commit`: `slot` holds a claim from `ep`'s conduit,
/// neither committed nor cancelled, consumed here.
#[inline(always)]
unsafe fn publish(ep: &Endpoint, slot: SendSlot, handler: u8, args: &[u32], len: usize) {
    if ep.mapped_queue(slot.peer).is_some() {
        // SAFETY: the conduit vouched (`MappedQueue::vouch`, cached by the
        // endpoint) that its claims to this peer are smp's, and this one is
        // live and ours (this function's contract).
        let bell = unsafe { Doorbell::of_ticket(slot.cookie) };
        let kind = Kind::new(slot.category, slot.dir);
        bell.ring(ep.rank(), kind, handler, args, len, slot.long_offset);
    } else {
        // SAFETY: as above.
        unsafe { ep.conduit().commit(slot, handler, args, len) };
    }
}

/// Why a commit was refused (the first problem, named), with the slot
/// released: out of line, so the commit every send makes stays short.
#[cold]
#[inline(never)]
fn refuse_commit(
    ep: &Endpoint,
    slot: SendSlot,
    reply: Option<&Token<'_>>,
    checked: Result<u8>,
    nargs: usize,
    len: usize,
) -> Error {
    let e = if let Err(e) = checked {
        e
    } else if len > slot.granted {
        Error::BadLength {
            what: "commit: length exceeds the granted size",
            len,
            limit: slot.granted,
        }
    } else if nargs > slot.nargs as usize {
        Error::BadLength {
            what: "commit: more arguments than declared at prepare",
            len: nargs,
            limit: slot.nargs as usize,
        }
    } else {
        Error::Failed("commit refused without a reason".into())
    };
    release(ep, slot, reply);
    e
}

/// Cancel a claimed slot and free the token to reply again.
fn release(ep: &Endpoint, slot: SendSlot, reply: Option<&Token<'_>>) {
    // SAFETY: every caller passes the slot of a `Prepared` it has taken
    // apart (or is dropping), so the claim is live and used once, here.
    unsafe { ep.conduit().cancel(slot) };
    if let Some(r) = reply {
        r.set_state(ReplyState::None);
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        // SAFETY: Drop runs only if neither commit nor cancel consumed
        // `self` (they forget it), so the claim is still live; it is taken
        // once, here.
        let slot = unsafe { ManuallyDrop::take(&mut self.slot) };
        release(self.ep, slot, self.reply);
    }
}
