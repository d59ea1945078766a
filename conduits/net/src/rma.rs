//! Native RMA: the transport's writes and reads on the peers' registered
//! segments.
//!
//! Local buffers:
//! - a put's source of up to one send buffer (the conduit's max Medium,
//!   `RGEX_OFI_MAX_MEDIUM` or `RGEX_IBV_MAX_MEDIUM`, +
//!   header, 8 KiB by default), inside the segment or not: bounced through
//!   a registered RMA buffer while one is free, so its local completion is
//!   immediate (nothing counted on `lc`). A put with local completion at
//!   return (NOW, and NBI from a borrowed slice) would otherwise wait for
//!   the write's completion, a network round trip on tcp;ofi_rxm: a flood
//!   of 8-byte NBI puts from the segment ran at one put per round trip
//!   (7 us), against 3 us from the heap, which was bounced already;
//! - otherwise inside this rank's segment: its registration's descriptor;
//! - larger, when the network needs local registration (`FI_MR_LOCAL`):
//!   registered for the operation and closed at its completion;
//! - larger, without `FI_MR_LOCAL`: passed as is (null descriptor).
//!
//! Remote completion of a put: with delivery completion asked, the
//! write's completion means the bytes are visible in the target's
//! segment. Without it the write's completion only means the transfer
//! left this rank (`FI_TRANSMIT_COMPLETE`), and the put waits for a
//! 1-byte read back, issued after the write completed, which returns
//! after the write is placed at the target; one read serves every put to
//! that peer waiting then, and it is asked only when someone waits
//! ([`readback`]). Which of the two a put uses:
//! [`PutCompletion`]: delivery-complete on NIC providers; on software
//! ones, read back for implicit-handle puts (a batched counter, whose
//! completion is asked for together) of up to
//! [`MAX_BYTES`](readback::MAX_BYTES) and delivery-complete for the rest
//! (blocking, or with an event of their own, which may be waited for at
//! once). Without delivery-complete, always read back. Local completion
//! is the write's completion in both cases.
//!
//! Transfers larger than the network's largest message
//! ([`Caps::max_msg`](crate::Caps::max_msg)) are split; the first piece
//! is posted directly (would-block there is
//! [`Error::WouldBlock`] with nothing counted), the others go to the
//! backlog that poll retries, so once anything was issued all of it is.

use crate::conduit::NetConduit;
use crate::geometry::POOL_RMA;
use crate::held::Held;
use crate::net::Net;
use crate::ops::{Op, Post};
use crate::readback::{self, PutCompletion};
use crate::send::would_block_or;
use crate::transport::Transport;
use rgex_core::{Error, OpCounter, Rank, Result};
use std::sync::Arc;

impl<T: Transport> NetConduit<T> {
    /// Pick the descriptor for a local buffer of an RMA: its region, a
    /// bounce buffer (claimed into `held`), an on-the-fly registration
    /// or none.
    /// `put`: the buffer is a put's source (a get's destination is never
    /// bounced when it is registered: it waits for its data anyway).
    fn local_side(
        &self,
        held: &mut Held<'_, T>,
        p: *const u8,
        len: usize,
        peer: Rank,
        put: bool,
    ) -> Result<Local<T::Region>> {
        let net = &self.net;
        let caps = net.transport.caps();
        let small = len <= net.geo.slot.min(caps.max_msg);
        if net.in_segment(p, len) {
            // A small put from the segment is bounced too, if a buffer is
            // free (see the module docs); if none is, it goes zero-copy.
            if put && small {
                if let Some(s) = held.claim_slot(POOL_RMA) {
                    return Ok(Local::Bounce(s));
                }
            }
            return Ok(Local::Registered(net.seg_desc));
        }
        if small {
            return held
                .claim_slot(POOL_RMA)
                .map(Local::Bounce)
                .ok_or(Error::WouldBlock {
                    peer,
                    resource: "RMA bounce buffers",
                });
        }
        if caps.local_registration {
            // SAFETY: the region lives in the operation (`Op::Put`'s or
            // `Op::Get`'s `mr`) and is dropped at its completion, before
            // which the caller keeps `p .. p + len` (try_put's and
            // try_get's contracts).
            let mr = Arc::new(unsafe { net.transport.register(p, len) }?);
            return Ok(Local::OnTheFly(mr));
        }
        Ok(Local::Unregistered)
    }

    /// See the module docs; the SPI's `try_put`.
    ///
    /// # Safety
    /// As `Conduit::try_put`.
    pub(crate) unsafe fn put(
        &self,
        peer: Rank,
        offset: u64,
        src: *const u8,
        len: usize,
        lc: &Arc<OpCounter>,
        rc: &Arc<OpCounter>,
    ) -> Result<()> {
        let net = &self.net;
        let mut guard = self.state.lock();
        let st = &mut *guard;
        st.check_alive(peer, "put")?;
        let caps = net.transport.caps();
        let pieces = len.div_ceil(caps.max_msg).max(1);
        if st.ops.available() < pieces {
            return Err(Error::WouldBlock {
                peer,
                resource: "RMA operation slots",
            });
        }
        // The bounce buffer and the first piece's slot: given back by its
        // drop if the first piece is refused.
        let mut held = Held::new(st, &net.geo);
        let local = self.local_side(&mut held, src, len, peer, true)?;
        let caller = local.is_callers();
        let (src, desc, bounce, mr) = match &local {
            Local::Registered(d) => (src as usize, *d, None, None),
            Local::Unregistered => (src as usize, 0, None, None),
            Local::Bounce(s) => {
                let b = net.send_buf(*s as usize);
                // SAFETY: `len <= slot` bytes into bounce buffer `s`, which
                // we hold; the caller's `src` is readable (its contract).
                unsafe { std::ptr::copy_nonoverlapping(src, b, len) };
                (b as usize, net.send_desc, Some(*s), None)
            }
            Local::OnTheFly(m) => (
                src as usize,
                net.transport.region_desc(m),
                None,
                Some(m.clone()),
            ),
        };
        // Delivery-complete where chosen, and for a put with a counter of
        // its own (its caller may wait at once: one answer beats
        // write-then-read) or a large one; else the read back (`readback`).
        let delivery = caps.delivery_complete
            && (caps.put_completion == PutCompletion::Delivery
                || !rc.is_batched()
                || len > readback::MAX_BYTES);
        let max = caps.max_msg;
        // Piece `i` as operation `id`: its post and its slot's record (the
        // bounce buffer, if any, goes back with the last piece).
        let piece = |i: usize, id: u32| {
            let at = i * max;
            let n = (len - at).min(max);
            let post = Post::Write {
                op: id,
                peer: peer.0,
                src: src + at,
                len: n,
                desc,
                offset: offset + at as u64,
                delivery,
            };
            let op = Op::Put {
                peer: peer.0,
                rc: rc.clone(),
                lc: (bounce.is_none()).then(|| lc.clone()),
                bounce: if i + 1 == pieces { bounce } else { None },
                mr: mr.clone(),
                caller,
                flush_at: (!delivery).then_some(offset + (at + n - 1) as u64),
            };
            (post, op)
        };
        post_pieces(held, net, peer, pieces, piece)?;
        rc.add(pieces as u64);
        if bounce.is_none() {
            lc.add(pieces as u64);
        }
        Ok(())
    }

    /// See the module docs; the SPI's `try_get`.
    ///
    /// # Safety
    /// As `Conduit::try_get`.
    pub(crate) unsafe fn get(
        &self,
        dst: *mut u8,
        peer: Rank,
        offset: u64,
        len: usize,
        done: &Arc<OpCounter>,
    ) -> Result<()> {
        let net = &self.net;
        let mut guard = self.state.lock();
        let st = &mut *guard;
        st.check_alive(peer, "get")?;
        let max = net.transport.caps().max_msg;
        let pieces = len.div_ceil(max).max(1);
        if st.ops.available() < pieces {
            return Err(Error::WouldBlock {
                peer,
                resource: "RMA operation slots",
            });
        }
        // As for a put: given back by its drop if the first piece is refused.
        let mut held = Held::new(st, &net.geo);
        let local = self.local_side(&mut held, dst, len, peer, false)?;
        let caller = local.is_callers();
        let (to, desc, bounce, mr) = match &local {
            Local::Registered(d) => (dst as usize, *d, None, None),
            Local::Unregistered => (dst as usize, 0, None, None),
            Local::Bounce(s) => (
                net.send_buf(*s as usize) as usize,
                net.send_desc,
                Some(*s),
                None,
            ),
            Local::OnTheFly(m) => (
                dst as usize,
                net.transport.region_desc(m),
                None,
                Some(m.clone()),
            ),
        };
        let piece = |i: usize, id: u32| {
            let at = i * max;
            let post = Post::Read {
                op: id,
                peer: peer.0,
                dst: to + at,
                len: (len - at).min(max),
                desc,
                offset: offset + at as u64,
            };
            let op = Op::Get {
                peer: peer.0,
                done: done.clone(),
                bounce: bounce.map(|s| (s, dst as usize, len)),
                mr: mr.clone(),
                caller,
            };
            (post, op)
        };
        post_pieces(held, net, peer, pieces, piece)?;
        done.add(pieces as u64);
        Ok(())
    }
}

/// Post the `pieces` pieces of one RMA to `peer` (`piece(i, id)`: piece
/// `i`'s post as operation `id`, and the operation's record). The first
/// is posted directly, its operation slot taken into `held` beside the
/// bounce buffer it may hold: refused, nothing was issued, and dropping
/// `held` gives both back (would-block as [`Error::WouldBlock`]). The
/// others follow it, through the backlog if need be (see the module docs).
#[inline]
fn post_pieces<T: Transport>(
    mut held: Held<'_, T>,
    net: &Net<T>,
    peer: Rank,
    pieces: usize,
    piece: impl Fn(usize, u32) -> (Post, Op<T::Region>),
) -> Result<()> {
    for i in 0..pieces {
        let id = if i == 0 {
            held.take_op()
        } else {
            held.ops.take()
        };
        let id = id.expect("slots counted before");
        let (post, op) = piece(i, id);
        held.ops[id as usize] = op;
        if i > 0 {
            held.post(net, post);
        } else if let Err(e) = held.issue(net, &post) {
            return Err(would_block_or(e, peer));
        }
    }
    // The first piece was issued: its slot and buffer are its own now (a
    // later piece's failure finishes only that piece).
    held.hand_over();
    Ok(())
}

/// How an RMA's local buffer is reached.
enum Local<R> {
    /// Inside a registered area (descriptor, possibly 0).
    Registered(usize),
    /// Bounce buffer (send slot).
    Bounce(u32),
    /// Registered for this operation.
    OnTheFly(Arc<R>),
    /// The caller's memory outside the registered areas, on a network
    /// that needs no local registration (descriptor 0).
    Unregistered,
}

impl<R> Local<R> {
    /// The network reads or writes the caller's own memory (not the
    /// segment, not a buffer of ours) until the operation completes.
    fn is_callers(&self) -> bool {
        matches!(self, Local::OnTheFly(_) | Local::Unregistered)
    }
}
