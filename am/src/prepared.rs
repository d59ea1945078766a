//! Negotiated payload: a send whose buffer was reserved first, filled in
//! place, then committed (or cancelled).

use crate::token::ReplyState;
use crate::{Endpoint, HandlerId};
use rgex_core::{Error, Flags, Prepare, Result, SendSlot};
use std::cell::Cell;

/// A prepared negotiated-payload message (the "source descriptor").
///
/// Holds the conduit resources for one message: exactly one of
/// [`commit`](Self::commit) or [`cancel`](Self::cancel) releases them;
/// dropping it cancels.
///
/// ```no_run
/// # fn demo(ep: &rgex_am::Endpoint, h: rgex_am::HandlerId) -> rgex_core::Result<()> {
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
    slot: Option<SendSlot>,
    client: Option<&'a mut [u8]>,
    granted: usize,
    reply: Option<&'a Cell<ReplyState>>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("granted", &self.granted)
            .field("client_buffer", &self.client.is_some())
            .finish()
    }
}

impl<'a> Prepared<'a> {
    #[inline]
    pub(crate) fn new(
        ep: &'a Endpoint,
        mut spec: Prepare,
        client: Option<&'a mut [u8]>,
        flags: Flags,
        reply: Option<&'a Cell<ReplyState>>,
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
        let slot = ep.claim(&spec, flags)?;
        let granted = slot.granted;
        debug_assert!(spec.least <= granted && granted <= spec.most);
        if let Some(r) = reply {
            r.set(ReplyState::Prepared);
        }
        Ok(Prepared {
            ep,
            slot: Some(slot),
            client,
            granted,
            reply,
        })
    }

    /// Bytes granted: `least <= len() <= most`.
    #[inline]
    pub fn len(&self) -> usize {
        self.granted
    }

    /// True if nothing was granted (`most` was 0).
    pub fn is_empty(&self) -> bool {
        self.granted == 0
    }

    /// True if the buffer is the client's own (copied at commit), false if
    /// it is rgex's (assembled in place, never copied again).
    pub fn is_client_buffer(&self) -> bool {
        self.client.is_some()
    }

    /// The granted buffer, `len()` bytes, to assemble the payload in.
    #[inline]
    pub fn buf(&mut self) -> &mut [u8] {
        let granted = self.granted;
        match &mut self.client {
            Some(b) => &mut b[..granted],
            None => {
                let slot = self.slot.as_ref().expect("a live Prepared holds its slot");
                // Even when nothing is granted, the slice starts at the
                // real buffer (no special case on the hot path).
                // SAFETY: the conduit reserved `granted` writable bytes at
                // `slot.buf` (non-null) for this message alone until commit
                // or cancel, and `&mut self` keeps this the only live view.
                unsafe { std::slice::from_raw_parts_mut(slot.buf.as_ptr(), granted) }
            }
        }
    }

    /// Send the first `len` bytes of the buffer to handler `h` with `args`
    /// (at most the `nargs` given at prepare). On error nothing is sent and
    /// the resources are released.
    #[inline]
    pub fn commit(mut self, h: HandlerId, args: &[u32], len: usize) -> Result<()> {
        let slot = self.slot.take().expect("a live Prepared holds its slot");
        let problem = if len > self.granted {
            Some(Error::BadLength {
                what: "commit: length exceeds the granted size",
                len,
                limit: self.granted,
            })
        } else if args.len() > slot.nargs as usize {
            Some(Error::BadLength {
                what: "commit: more arguments than declared at prepare",
                len: args.len(),
                limit: slot.nargs as usize,
            })
        } else {
            self.ep.check_handler(h.0).err()
        };
        if let Some(e) = problem {
            self.release(slot);
            return Err(e);
        }
        if let Some(b) = &self.client {
            if len > 0 {
                // SAFETY: the conduit reserved `granted >= len` bytes at
                // slot.buf for this message; the client buffer is a distinct
                // Rust slice, so the two do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), slot.buf.as_ptr(), len) };
            }
        }
        self.ep.conduit().commit(slot, h.0, args, len);
        if let Some(r) = self.reply {
            r.set(ReplyState::Done);
        }
        Ok(())
    }

    /// Give the resources back; nothing reaches the peer's handlers.
    #[inline]
    pub fn cancel(mut self) {
        if let Some(slot) = self.slot.take() {
            self.release(slot);
        }
    }

    #[inline]
    fn release(&mut self, slot: SendSlot) {
        self.ep.conduit().cancel(slot);
        if let Some(r) = self.reply {
            r.set(ReplyState::None);
        }
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.release(slot);
        }
    }
}
