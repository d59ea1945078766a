//! The soft device's wire format: a fixed header and up to one MTU of
//! payload, as one ring slot.

/// A request: SEND, RDMA WRITE or READ, or an atomic.
pub(crate) const K_REQ: u8 = 1;
/// A cumulative ACK of every request up to `psn`.
pub(crate) const K_ACK: u8 = 2;
/// A NAK of request `psn` (implicitly acking those before it).
pub(crate) const K_NAK: u8 = 3;
/// One segment of an RDMA READ response for request `psn`.
pub(crate) const K_READ_RESP: u8 = 4;
/// An atomic's response (the original value in `a`) for request `psn`.
pub(crate) const K_ATOMIC_RESP: u8 = 5;

/// SEND.
pub(crate) const OP_SEND: u8 = 1;
/// RDMA WRITE.
pub(crate) const OP_WRITE: u8 = 2;
/// RDMA READ.
pub(crate) const OP_READ: u8 = 3;
/// ATOMIC_CMP_AND_SWP (`a` compare, `b` swap).
pub(crate) const OP_CAS: u8 = 4;
/// ATOMIC_FETCH_AND_ADD (`a` added).
pub(crate) const OP_FADD: u8 = 5;

/// The first packet of a message.
pub(crate) const F_FIRST: u8 = 1;
/// The last packet of a message.
pub(crate) const F_LAST: u8 = 2;
/// The message carries `imm` (SEND_WITH_IMM, RDMA_WRITE_WITH_IMM).
pub(crate) const F_IMM: u8 = 4;

/// NAK syndromes.
pub(crate) const NAK_RNR: u8 = 1;
/// Out of sequence: resend from `psn`.
pub(crate) const NAK_SEQ: u8 = 2;
/// Remote access error (rkey, bounds, access flags).
pub(crate) const NAK_REM_ACCESS: u8 = 3;
/// Remote invalid request (receive too small, misaligned atomic).
pub(crate) const NAK_REM_INV: u8 = 4;
/// Remote operational error (the receive's buffer is not writable).
pub(crate) const NAK_REM_OP: u8 = 5;

/// A packet's header: plain integers, so any bytes a peer left in the
/// ring are a valid (if meaningless) header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PktHdr {
    pub kind: u8,
    pub op: u8,
    pub flags: u8,
    pub syndrome: u8,
    /// Packet sequence number (24 bits).
    pub psn: u32,
    pub src_qpn: u32,
    pub dst_qpn: u32,
    pub imm: u32,
    pub rkey: u32,
    /// The message's remote address (RDMA, atomics).
    pub raddr: u64,
    /// The whole message's length.
    pub total_len: u32,
    /// This packet's payload offset in the message.
    pub offset: u32,
    /// This packet's payload length.
    pub len: u32,
    /// NAK: the responder's RNR timer code.
    pub aux: u32,
    /// Atomic operand (compare, add) or response (original value).
    pub a: u64,
    /// Atomic operand (swap).
    pub b: u64,
}

/// The header's size in a ring slot.
pub(crate) const HDR_BYTES: usize = std::mem::size_of::<PktHdr>();
const _: () = assert!(HDR_BYTES == 64);

/// A packet waiting to be written to the peer's ring.
#[derive(Debug)]
pub(crate) struct OutPkt {
    pub hdr: PktHdr,
    pub payload: Vec<u8>,
    /// Not before (a delay fault).
    pub ready_at: Option<std::time::Instant>,
}

/// PSNs are 24 bits, as on the wire.
pub(crate) const PSN_MASK: u32 = 0x00ff_ffff;

/// `a + n` in PSN space.
pub(crate) fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space, as a signed distance (within 2^23).
pub(crate) fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(5, 9), -4);
    }
}
