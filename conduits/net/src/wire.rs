//! The header every AM of a kit conduit carries, in front of its payload.
//!
//! ```text
//! 0  kind      u8   category (2 bits) | reply (bit 2) | control (bit 3)
//! 1  handler   u8   a control message: what it says (CREDIT_ONLY, GOODBYE, PING, PONG)
//! 2  nargs     u8   arguments carried
//! 3  hlen      u8   header length in 8-byte words (payload starts there)
//! 4  src       u32  sender's rank
//! 8  len       u32  payload bytes (Medium: after the header; Long: in the segment)
//! 12 ack_req   u32  requests of the receiver the sender has consumed (cumulative, wrapping)
//! 16 ack_rep   u32  replies of the receiver the sender has consumed (cumulative, wrapping)
//! 20 pad       u32
//! 24 long_off  u64  Long: where the payload landed in the receiver's segment
//! 32 args      u32 x nargs, then padding to 8 bytes
//! ```
//!
//! The header length follows the argument count declared at prepare, so a
//! Medium's payload sits right behind it and goes out in the same send.
//!
//! A control message (kind [`CONTROL`]) runs no handler: it carries the
//! credit counts every header carries, and its handler byte says what
//! else it means: nothing ([`CREDIT_ONLY`]), that the sender is
//! leaving the job ([`GOODBYE`], its last message to this receiver), or
//! a liveness probe ([`PING`], answered by a [`PONG`]: see
//! [`health`](crate::health)).

use rgex_core::descriptor::Kind;
use rgex_core::{Category, Direction, Rank, MAX_ARGS};

/// Fixed part of the header.
pub const FIXED: usize = 32;
/// The longest header (16 arguments).
pub const MAX_HEADER: usize = header_len(MAX_ARGS);

/// The kind of a control message (no handler runs): marked.
pub const CONTROL: Kind = Kind(Kind::MARK);

/// A control message's handler byte: a credit report, nothing more.
pub const CREDIT_ONLY: u8 = 0;
/// A control message's handler byte: the sender is leaving the job (it
/// is closing its endpoint) and sends this receiver nothing more.
pub const GOODBYE: u8 = 1;
/// A control message's handler byte: the sender waits on this receiver
/// and has heard nothing from it for a while; the receiver's progress
/// (its own polls, or the [`ticker`](crate::ticker) while it computes)
/// answers with a [`PONG`].
pub const PING: u8 = 2;
/// A control message's handler byte: the answer to a [`PING`].
pub const PONG: u8 = 3;

/// Header bytes for `nargs` arguments (a multiple of 8).
#[inline]
pub const fn header_len(nargs: usize) -> usize {
    (FIXED + 4 * nargs + 7) & !7
}

/// Decoded header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Category and direction, or [`CONTROL`].
    pub kind: Kind,
    /// Handler index.
    pub handler: u8,
    /// Arguments carried.
    pub nargs: u8,
    /// Header length in bytes.
    pub hlen: usize,
    /// Sender.
    pub src: u32,
    /// Payload length.
    pub len: u32,
    /// Credits returned: requests consumed.
    pub ack_req: u32,
    /// Credits returned: replies consumed.
    pub ack_rep: u32,
    /// Long destination offset.
    pub long_offset: u64,
}

impl Header {
    /// True for a control message (credits, goodbye): no handler runs.
    #[inline]
    pub fn is_control(&self) -> bool {
        self.kind.is_marked()
    }

    /// True for a control message saying its sender is leaving the job.
    #[inline]
    pub fn is_goodbye(&self) -> bool {
        self.is_control() && self.handler == GOODBYE
    }

    /// Category.
    #[inline]
    pub fn category(&self) -> Category {
        self.kind.category()
    }

    /// Direction.
    #[inline]
    pub fn direction(&self) -> Direction {
        self.kind.direction()
    }

    /// Write the header and `args` at `buf`.
    ///
    /// # Safety
    /// `buf` must be 8-byte aligned with `self.hlen` writable bytes, and
    /// `self.hlen >= header_len(args.len())`.
    #[inline]
    pub unsafe fn write(&self, buf: *mut u8, args: &[u32]) {
        debug_assert!(self.hlen >= header_len(args.len()) && self.hlen <= MAX_HEADER);
        let mut fixed = [0u8; FIXED];
        fixed[0] = self.kind.0;
        fixed[1] = self.handler;
        fixed[2] = self.nargs;
        fixed[3] = (self.hlen / 8) as u8;
        fixed[4..8].copy_from_slice(&self.src.to_le_bytes());
        fixed[8..12].copy_from_slice(&self.len.to_le_bytes());
        fixed[12..16].copy_from_slice(&self.ack_req.to_le_bytes());
        fixed[16..20].copy_from_slice(&self.ack_rep.to_le_bytes());
        fixed[24..32].copy_from_slice(&self.long_offset.to_le_bytes());
        // SAFETY: the caller guarantees hlen >= FIXED + 4 * nargs writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(fixed.as_ptr(), buf, FIXED);
            for (i, a) in args.iter().enumerate() {
                std::ptr::copy_nonoverlapping(a.to_le_bytes().as_ptr(), buf.add(FIXED + 4 * i), 4);
            }
        }
    }

    /// Parse the header at the start of `msg` (`None` if malformed) and
    /// copy its arguments into `args`.
    #[inline]
    pub fn read(msg: &[u8], args: &mut [u32; MAX_ARGS]) -> Option<Header> {
        if msg.len() < FIXED {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(msg[o..o + 4].try_into().expect("4 bytes"));
        let h = Header {
            kind: Kind(msg[0]),
            handler: msg[1],
            nargs: msg[2],
            hlen: msg[3] as usize * 8,
            src: u32_at(4),
            len: u32_at(8),
            ack_req: u32_at(12),
            ack_rep: u32_at(16),
            long_offset: u64::from_le_bytes(msg[24..32].try_into().expect("8 bytes")),
        };
        let n = h.nargs as usize;
        if n > MAX_ARGS || h.hlen < header_len(n) || h.hlen > msg.len() {
            return None;
        }
        for (i, a) in args.iter_mut().take(n).enumerate() {
            *a = u32_at(FIXED + 4 * i);
        }
        Some(h)
    }
}

/// The header of a control message from `me` saying `what`
/// ([`CREDIT_ONLY`], [`GOODBYE`]): it reports what was consumed (the
/// sender stamps the counts) and runs no handler.
#[inline]
pub fn control_header(me: Rank, what: u8) -> Header {
    Header {
        kind: CONTROL,
        handler: what,
        nargs: 0,
        hlen: header_len(0),
        src: me.0,
        len: 0,
        ack_req: 0,
        ack_rep: 0,
        long_offset: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut buf = [0u64; MAX_HEADER / 8];
        let args: Vec<u32> = (0..5).map(|i| i * 1000 + 7).collect();
        let h = Header {
            kind: Kind::new(Category::Long, Direction::Reply),
            handler: 200,
            nargs: 5,
            hlen: header_len(16),
            src: 3,
            len: 4096,
            ack_req: u32::MAX,
            ack_rep: 9,
            long_offset: 0xdead_beef_0000,
        };
        // SAFETY: buf is 8-aligned with MAX_HEADER bytes.
        unsafe { h.write(buf.as_mut_ptr().cast(), &args) };
        // SAFETY: viewing the u64 array as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), MAX_HEADER) };
        let mut out = [0u32; MAX_ARGS];
        let back = Header::read(bytes, &mut out).unwrap();
        assert_eq!(back, h);
        assert_eq!(&out[..5], &args[..]);
        assert_eq!(back.category(), Category::Long);
        assert_eq!(back.direction(), Direction::Reply);
        assert!(!back.is_control());
        assert!(!back.is_goodbye());
        assert_eq!(header_len(0), 32);
        assert_eq!(header_len(1), 40);
        assert_eq!(MAX_HEADER, 96);
    }

    #[test]
    fn a_goodbye_is_a_control_message_and_a_credit_report_is_not_a_goodbye() {
        let mut buf = [0u64; MAX_HEADER / 8];
        let mut out = [0u32; MAX_ARGS];
        for (handler, goodbye) in [
            (CREDIT_ONLY, false),
            (GOODBYE, true),
            (PING, false),
            (PONG, false),
        ] {
            let h = Header {
                kind: CONTROL,
                handler,
                nargs: 0,
                hlen: header_len(0),
                src: 1,
                len: 0,
                ack_req: 5,
                ack_rep: 6,
                long_offset: 0,
            };
            // SAFETY: buf is 8-aligned with MAX_HEADER bytes.
            unsafe { h.write(buf.as_mut_ptr().cast(), &[]) };
            // SAFETY: viewing the u64 array as bytes.
            let bytes =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), MAX_HEADER) };
            let back = Header::read(bytes, &mut out).unwrap();
            assert!(back.is_control());
            assert_eq!(back.is_goodbye(), goodbye);
            assert_eq!((back.ack_req, back.ack_rep), (5, 6));
        }
        // A message that is not a control message is never a goodbye,
        // whatever its handler index.
        let am = Header {
            kind: Kind::new(Category::Short, Direction::Request),
            handler: GOODBYE,
            nargs: 0,
            hlen: header_len(0),
            src: 1,
            len: 0,
            ack_req: 0,
            ack_rep: 0,
            long_offset: 0,
        };
        assert!(!am.is_goodbye());
    }

    #[test]
    fn malformed_is_refused() {
        let mut out = [0u32; MAX_ARGS];
        assert!(Header::read(&[0u8; 8], &mut out).is_none());
        let mut b = [0u8; 40];
        b[2] = 17; // too many arguments
        b[3] = 5;
        assert!(Header::read(&b, &mut out).is_none());
    }
}
