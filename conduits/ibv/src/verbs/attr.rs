//! Device, port and queue-pair attributes, with verbs' codes.

use bitflags::bitflags;

bitflags! {
    /// Memory-region access (`IBV_ACCESS_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Access: u32 {
        /// The HCA may write the region for local operations (receives, reads).
        const LOCAL_WRITE = 1;
        /// Peers may RDMA-write it.
        const REMOTE_WRITE = 2;
        /// Peers may RDMA-read it.
        const REMOTE_READ = 4;
        /// Peers may perform atomics on it.
        const REMOTE_ATOMIC = 8;
    }
}

/// A port's GID (128 bits).
pub type Gid = [u8; 16];

/// The device limits the conduit sizes itself by (`ibv_device_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Largest registered region.
    pub max_mr_size: u64,
    /// Queue pairs.
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// Completion-queue entries.
    pub max_cqe: u32,
    /// Receives per SRQ.
    pub max_srq_wr: u32,
    /// RDMA reads and atomics a QP may have outstanding as initiator.
    pub max_qp_init_rd_atom: u32,
    /// ... and as target.
    pub max_qp_rd_atom: u32,
    /// The device performs 8-byte atomics (`IBV_ATOMIC_HCA` or better).
    pub atomics: bool,
}

/// A port's state (`IBV_PORT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// Down, initialising, armed or unknown: not usable.
    NotActive(u32),
    /// Active: usable.
    Active,
}

impl PortState {
    /// The state of `enum ibv_port_state`'s `code`.
    pub const fn from_code(code: u32) -> PortState {
        if code == 4 {
            PortState::Active
        } else {
            PortState::NotActive(code)
        }
    }

    /// Its name in verbs.h (`ACTIVE`, `DOWN`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            PortState::Active => "ACTIVE",
            PortState::NotActive(0) => "NOP",
            PortState::NotActive(1) => "DOWN",
            PortState::NotActive(2) => "INIT",
            PortState::NotActive(3) => "ARMED",
            PortState::NotActive(5) => "ACTIVE_DEFER",
            PortState::NotActive(_) => "unknown state",
        }
    }
}

/// The port's link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: peers are addressed by LID.
    InfiniBand,
    /// Ethernet (RoCE): peers are addressed by GID.
    Ethernet,
}

/// Path MTU (`IBV_MTU_*`: 256 to 4096 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mtu {
    /// 256 bytes.
    M256 = 1,
    /// 512 bytes.
    M512 = 2,
    /// 1024 bytes.
    M1024 = 3,
    /// 2048 bytes.
    M2048 = 4,
    /// 4096 bytes.
    M4096 = 5,
}

impl Mtu {
    /// The MTU of `bytes` (256, 512, 1024, 2048 or 4096).
    pub fn from_bytes(bytes: usize) -> Option<Mtu> {
        Some(match bytes {
            256 => Mtu::M256,
            512 => Mtu::M512,
            1024 => Mtu::M1024,
            2048 => Mtu::M2048,
            4096 => Mtu::M4096,
            _ => return None,
        })
    }

    /// Its size in bytes.
    pub fn bytes(self) -> usize {
        128 << (self as usize)
    }
}

/// A port's attributes (`ibv_port_attr`, the parts used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// State.
    pub state: PortState,
    /// Largest MTU the port supports.
    pub max_mtu: Mtu,
    /// MTU in use.
    pub active_mtu: Mtu,
    /// Local identifier (InfiniBand).
    pub lid: u16,
    /// Link layer.
    pub link_layer: LinkLayer,
}

/// Queue sizes of a QP (`ibv_qp_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// Send work requests outstanding.
    pub max_send_wr: u32,
    /// Receive work requests outstanding (0 with an SRQ).
    pub max_recv_wr: u32,
    /// Largest inline payload.
    pub max_inline_data: u32,
}

/// A QP's state (`IBV_QPS_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Just created or reset: nothing may be posted.
    Reset = 0,
    /// Receives may be posted; nothing is sent or received.
    Init = 1,
    /// Ready to receive.
    Rtr = 2,
    /// Ready to send.
    Rts = 3,
    /// Send queue drain.
    Sqd = 4,
    /// Send queue error.
    Sqe = 5,
    /// Error: outstanding and new work requests complete flushed.
    Err = 6,
}

/// RESET to INIT, INIT to RTR, RTR to RTS, or any to ERR or RESET
/// (`ibv_modify_qp` with the attributes each transition requires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpTransition {
    /// RESET to INIT on the opened port, with the remote access it grants.
    Init {
        /// Remote access granted to the peer.
        access: Access,
    },
    /// INIT to RTR: the peer's address and QP.
    Rtr(RtrAttr),
    /// RTR to RTS: timers and retries.
    Rts(RtsAttr),
    /// Any state to ERR: outstanding work requests complete flushed.
    Err,
    /// Any state to RESET: queues emptied without completions.
    Reset,
}

/// INIT to RTR attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrAttr {
    /// Path MTU.
    pub mtu: Mtu,
    /// The peer's QP number.
    pub dest_qp_num: u32,
    /// First PSN expected from the peer.
    pub rq_psn: u32,
    /// The peer's LID (InfiniBand).
    pub dlid: u16,
    /// The peer's GID (RoCE, or `None` on InfiniBand).
    pub dgid: Option<Gid>,
    /// RDMA reads and atomics the peer may have outstanding here.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code (`IBV_RNR_*`, 0-31) the peer waits before a retry.
    pub min_rnr_timer: u8,
}

/// RTR to RTS attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsAttr {
    /// First PSN sent.
    pub sq_psn: u32,
    /// Local ACK timeout code: 4.096 us x 2^timeout (0: infinite).
    pub timeout: u8,
    /// Transport retries before `IBV_WC_RETRY_EXC_ERR` (0-7).
    pub retry_cnt: u8,
    /// RNR retries before `IBV_WC_RNR_RETRY_EXC_ERR` (0-6; 7: infinite).
    pub rnr_retry: u8,
    /// RDMA reads and atomics outstanding as initiator.
    pub max_rd_atomic: u8,
}
