//! Work-request ids: what a completion is for, read back from its
//! `wr_id` alone (on an error completion verbs guarantees only `wr_id`,
//! `status`, `qp_num` and `vendor_err`).
//!
//! Bits 0..32 hold the kit's operation id, 32..56 the peer's rank, and
//! 56..64 the [`Kind`] of work request.

/// What a work request does, for completions and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A receive posted on the shared receive queue (no peer).
    Recv = 1,
    /// An AM send with a completion for the kit.
    Send = 2,
    /// An inline AM send whose completion only frees its send-queue slot.
    Inject = 3,
    /// An RDMA write.
    Write = 4,
    /// An RDMA read.
    Read = 5,
    /// One FETCH_AND_ADD or CMP_AND_SWP that completes a kit atomic.
    Atomic = 6,
    /// One CMP_AND_SWP of a CAS loop (see `atomics`).
    CasLoop = 7,
}

impl Kind {
    /// The kind whose code is `c`.
    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::Recv,
            2 => Kind::Send,
            3 => Kind::Inject,
            4 => Kind::Write,
            5 => Kind::Read,
            6 => Kind::Atomic,
            7 => Kind::CasLoop,
            _ => return None,
        })
    }

    /// The operation, as error messages name it.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Kind::Recv => "receive",
            Kind::Send => "AM send",
            Kind::Inject => "inline AM send",
            Kind::Write => "RDMA write",
            Kind::Read => "RDMA read",
            Kind::Atomic => "atomic",
            Kind::CasLoop => "atomic (compare-and-swap loop)",
        }
    }
}

/// Ranks a work-request id can name.
pub(crate) const MAX_PEERS: usize = 1 << 24;

/// A work request's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WrId {
    /// Its kind.
    pub kind: Kind,
    /// The peer (0 for receives).
    pub peer: u32,
    /// The kit's operation id (0 for inline sends).
    pub op: u32,
}

impl WrId {
    /// As a `wr_id`.
    #[inline]
    pub fn encode(self) -> u64 {
        debug_assert!((self.peer as usize) < MAX_PEERS);
        (self.kind as u64) << 56 | u64::from(self.peer) << 32 | u64::from(self.op)
    }

    /// The id a `wr_id` holds, or `None` if it is none of ours.
    #[inline]
    pub fn decode(w: u64) -> Option<WrId> {
        Some(WrId {
            kind: Kind::from_code((w >> 56) as u8)?,
            peer: ((w >> 32) & 0xff_ffff) as u32,
            op: w as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_foreign_ids() {
        for kind in [
            Kind::Recv,
            Kind::Send,
            Kind::Inject,
            Kind::Write,
            Kind::Read,
            Kind::Atomic,
            Kind::CasLoop,
        ] {
            let w = WrId {
                kind,
                peer: (MAX_PEERS - 1) as u32,
                op: u32::MAX,
            };
            assert_eq!(WrId::decode(w.encode()), Some(w));
        }
        assert_eq!(WrId::decode(0), None);
        assert_eq!(WrId::decode(0xff << 56), None);
    }
}
