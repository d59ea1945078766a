//! Work requests: one scatter-gather element each.

use bitflags::bitflags;

/// One local buffer (`ibv_sge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key of the region it lies in (ignored for inline sends).
    pub lkey: u32,
}

/// Where an RDMA operation or atomic lands (`wr.rdma`, `wr.atomic`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteAddr {
    /// Virtual address in the peer's region.
    pub addr: u64,
    /// The region's remote key.
    pub rkey: u32,
}

/// A send-queue operation (`IBV_WR_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// Write to `remote`; no completion at the target.
    RdmaWrite,
    /// Write to `remote`, then consume a receive at the target carrying `imm`.
    RdmaWriteWithImm {
        /// Immediate data (host order here; the wire is big-endian).
        imm: u32,
    },
    /// Consume a receive at the target.
    Send,
    /// Consume a receive at the target, delivering `imm`.
    SendWithImm {
        /// Immediate data.
        imm: u32,
    },
    /// Read from `remote` into the SGE.
    RdmaRead,
    /// 8-byte compare-and-swap at `remote` (8-aligned); the old value
    /// lands in the SGE (8 bytes).
    AtomicCmpAndSwp {
        /// Compared with the remote value.
        compare: u64,
        /// Stored if equal.
        swap: u64,
    },
    /// 8-byte fetch-and-add at `remote` (8-aligned); the old value lands
    /// in the SGE (8 bytes).
    AtomicFetchAndAdd {
        /// Added (wrapping).
        add: u64,
    },
}

bitflags! {
    /// Send flags (`IBV_SEND_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SendFlags: u32 {
        /// Wait for earlier reads and atomics of this QP before starting.
        const FENCE = 1;
        /// Generate a completion on success (errors always complete).
        const SIGNALED = 2;
        /// Ask for a solicited event at the target.
        const SOLICITED = 4;
        /// Copy the payload at post time; the lkey is not checked.
        const INLINE = 8;
    }
}

/// A send work request (`ibv_send_wr` with one SGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub opcode: Opcode,
    /// Flags.
    pub flags: SendFlags,
    /// The local buffer (`length` 0: none).
    pub sge: Sge,
    /// The remote side of RDMA and atomics (ignored by sends).
    pub remote: RemoteAddr,
}

/// A receive work request (`ibv_recv_wr` with one SGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where a message lands.
    pub sge: Sge,
}
