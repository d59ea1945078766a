//! The software verbs device (`RGEX_IBV_DEVICE=soft`): an RC-only HCA
//! emulated over shared memory between the processes of one machine
//! (and between contexts of one process, including a QP connected to
//! itself), so the ibv conduit is tested where there is no RDMA device.
//!
//! Its packets travel on one of two wires ([`WIRE_ENV`]): rings in
//! shared memory (`shm`, the default, described below), or UDP datagrams
//! between hosts (`udp`, bound to [`ADDR_ENV`]'s address, as Linux's rxe
//! carries RoCEv2; see the `udp` module). The transport above the wire is
//! the same: PSNs, ACKs, NAKs, go-back-N, the ACK timer, the faults. On
//! the UDP wire a QP's inbound packets wait in a queue the engine fills
//! from the device's one socket, the GID holds the socket's address, and
//! a silent peer is lost after its retries (the wire cannot tell a slow
//! process from a dead one). Every process of a job uses the same wire:
//! a QP given a GID of the other wire is refused at RTR.
//!
//! # How it works
//! - **Addressing.** The port is RoCE-like ([`LinkLayer::Ethernet`](crate::verbs::LinkLayer::Ethernet)): its
//!   GID encodes a magic, the uid, the pid and the context number. At
//!   RTR, [`RtrAttr::dgid`](crate::verbs::RtrAttr::dgid) and
//!   `dest_qp_num` name the peer QP, whose inbound ring the device maps.
//! - **Rings.** Each QP owns one inbound packet ring, a POSIX
//!   shared-memory object (`/dev/shm/rgex-ibv-soft-<uid>-<pid>-<ctx>-<qpn>`)
//!   written only by the one QP connected to it (RC is one to one) and
//!   read by the owner's engine: single producer, single consumer.
//!   Requests and their responses (ACK, NAK, READ data, atomic results)
//!   travel on the receiving QP's ring. The name is removed as soon as the
//!   peer maps it (or when the QP is destroyed), and [`SoftVerbs::open`](crate::verbs::Verbs::open)
//!   sweeps names left by dead processes, so a crash leaves nothing.
//! - **Packets.** A 64-byte header and up to one path MTU of payload;
//!   larger messages are segmented. A full ring is back-pressure.
//! - **Progress.** The target's memory is written, and its answers sent,
//!   by the *target* process's engine (one per context, under one lock).
//!   It runs inside every verb called on the context (posts, `poll_cq`,
//!   `qp_state`, `modify_qp`) and in [`SoftVerbs::progress`], so a busy
//!   process drives it with no thread switch; and a small service thread
//!   runs it when no verb has for a while, so a process that does not
//!   call into its device (blocked in a bootstrap barrier, computing)
//!   still answers RDMA, as an HCA would. The thread naps 50 us after
//!   work and backs off to 5 ms while idle (no spinning core: the CI
//!   machine has two cores for up to eight ranks); [`SERVICE_ENV`]`=0`
//!   turns it off. While a peer lives but has not yet taken our packets
//!   from its ring, the ACK timer does not count retries (below).
//!
//! # Semantics modelled
//! - RC QPs and their state machine: RESET, INIT, RTR, RTS, ERR; only
//!   RESET→INIT→RTR→RTS, any→ERR and any→RESET are allowed (`EINVAL`
//!   otherwise). `post_send` outside RTS is `EINVAL`, `post_recv` in RESET
//!   is `EINVAL`; in ERR both are accepted and complete
//!   `IBV_WC_WR_FLUSH_ERR` at once, as on an HCA.
//! - Queue depths: a full send, receive or shared receive queue is
//!   `ENOMEM`; a CQ that receives a completion while full has overrun:
//!   [`poll_cq`](crate::verbs::Verbs::poll_cq) returns [`VerbsError::CqOverrun`] from then
//!   on and every QP using it moves to ERR.
//! - `max_inline_data` (an inline payload over it is `EINVAL` at post; at
//!   most [`MAX_INLINE`]).
//! - Unsignalled work requests complete silently on success, always on
//!   error. Their send-queue slots are freed, **as on hardware**, only when
//!   a later signalled work request completes (or the QP moves to ERR or
//!   RESET): a conduit that never signals fills its send queue here too.
//! - RNR: a SEND or WRITE_WITH_IMM arriving with no receive posted is
//!   NAKed RNR; the requester waits the responder's `min_rnr_timer` delay
//!   (IB's table) and resends, up to `rnr_retry` times (7: forever), then
//!   completes `IBV_WC_RNR_RETRY_EXC_ERR` and moves to ERR.
//! - Remote checks at the target: rkey, PD, bounds, the region's access
//!   and the QP's granted access → `IBV_WC_REM_ACCESS_ERR` at the
//!   initiator; a misaligned atomic → `IBV_WC_REM_INV_REQ_ERR`; a receive
//!   too small → `IBV_WC_LOC_LEN_ERR` on the receiver and
//!   `IBV_WC_REM_INV_REQ_ERR` at the sender; a receive buffer outside its
//!   lkey → `IBV_WC_LOC_PROT_ERR` there and `IBV_WC_REM_OP_ERR` at the
//!   sender. In each case the *responder's* QP moves to ERR too, after
//!   its NAK (as an RC responder does, e.g. Linux's rxe): one bad request
//!   breaks the connection both ways. Local checks: an SGE outside its lkey's region, or a READ or
//!   atomic target without `LOCAL_WRITE`, → `IBV_WC_LOC_PROT_ERR`. After
//!   an error the QP is in ERR and every later or outstanding work request
//!   completes `IBV_WC_WR_FLUSH_ERR`, signalled or not.
//! - In-order delivery per QP, and an RDMA WRITE's data in place before a
//!   later SEND's receive completes (one engine performs both, in PSN order).
//! - 8-byte FETCH_AND_ADD and CMP_AND_SWP, performed with the CPU's atomic
//!   instructions on the target word by the target's engine: atomic
//!   against each other from any QP or process, not against plain CPU
//!   stores. A retransmitted atomic is answered from a cache, not redone.
//! - SEND_WITH_IMM and WRITE_WITH_IMM deliver the immediate; WRITE_WITH_IMM
//!   consumes a receive (`IBV_WC_RECV_RDMA_WITH_IMM`, `byte_len` the
//!   write's length).
//! - Transport: PSNs (24 bits), cumulative ACKs, sequence NAKs and
//!   go-back-N retransmission; the ACK timeout (`4.096 us × 2^timeout`, 0
//!   infinite) and `retry_cnt`: a peer that answers nothing (dead, killed,
//!   its QP destroyed or reset, or every packet dropped) ends in
//!   `IBV_WC_RETRY_EXC_ERR` and ERR. A peer that lives but has not yet
//!   taken our packets from its ring is *slow*, not lost (an HCA would
//!   have answered for it): the timer then does not count a retry.
//! - FENCE: a fenced request waits for every earlier request to complete
//!   (stricter than an HCA, which waits only for READs and atomics).
//! - Fault injection ([`Faults`], or [`FAULTS_ENV`] at open): drop every
//!   Nth packet, or all to one peer; delay delivery; kill the device.
//!
//! # Not modelled
//! UD, UC and XRC transports; memory windows; SGE lists and WR chains
//! (the trait has neither); SRQ limit events, async events and
//! completion channels (a CQ's wait object is the context's wake socket
//! instead, see `wait`); the SQD and SQE states; `max_rd_atomic` limits (any number
//! of READs and atomics may be outstanding); P_Keys, path migration,
//! multicast; a READ consuming one PSN per response packet (here a READ
//! request is one PSN); deregistering a region while a peer
//! uses it is not detected beyond the key check.

mod context;
mod cq;
mod device;
mod faults;
mod ident;
mod inbound;
mod mr;
mod packet;
mod progress;
mod qp;
mod recvq;
mod requester;
mod responder;
mod ring;
mod udp;
mod wait;

pub use faults::{Faults, FAULTS_ENV};
pub use progress::Stats;
pub use udp::{ADDR_ENV, WIRE_ENV};

use crate::verbs::{DeviceAttr, Gid, PortAttr, QpCaps, VerbsError, VerbsResult};
use device::Device;
use parking_lot::MutexGuard;
use progress::Engine;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Instant;

/// Largest inline payload a QP may ask for.
pub const MAX_INLINE: u32 = 1024;

/// Contexts opened by this process (their number is in the GID).
pub(crate) static NEXT_CTX: AtomicU32 = AtomicU32::new(0);

/// Set to `0` to run a device without its service thread (the engine
/// then runs only inside verbs and [`SoftVerbs::progress`]).
pub const SERVICE_ENV: &str = "RGEX_IBV_SOFT_SERVICE";

/// One opened software verbs device (a context of `soft0`, port 1).
#[derive(Debug)]
pub struct SoftVerbs {
    dev: Arc<Device>,
    attr: DeviceAttr,
    port: PortAttr,
    gid: Gid,
}

/// A protection domain of a [`SoftVerbs`] context.
#[derive(Debug)]
pub struct SoftPd {
    dev: Arc<Device>,
    id: u32,
}

/// A registered memory region; deregistered on drop.
#[derive(Debug)]
pub struct SoftMr {
    dev: Arc<Device>,
    key: u32,
}

/// A completion queue; destroyed on drop.
#[derive(Debug)]
pub struct SoftCq {
    dev: Arc<Device>,
    id: u32,
}

/// A shared receive queue; destroyed on drop.
#[derive(Debug)]
pub struct SoftSrq {
    dev: Arc<Device>,
    id: u32,
}

/// An RC queue pair; destroyed on drop (its peer then sees it dead).
#[derive(Debug)]
pub struct SoftQp {
    dev: Arc<Device>,
    qpn: u32,
    caps: QpCaps,
}

impl Drop for SoftPd {
    fn drop(&mut self) {
        self.dev.lock().sh.pds.remove(&self.id);
    }
}

impl Drop for SoftMr {
    fn drop(&mut self) {
        self.dev.lock().sh.mrs.remove(self.key);
    }
}

impl Drop for SoftCq {
    fn drop(&mut self) {
        self.dev.lock().sh.cqs.map.remove(&self.id);
    }
}

impl Drop for SoftSrq {
    fn drop(&mut self) {
        self.dev.lock().sh.srqs.remove(&self.id);
    }
}

impl Drop for SoftQp {
    fn drop(&mut self) {
        if let Some(qp) = self.dev.lock().qps.remove(&self.qpn) {
            qp.inbound.set_dead();
            // The peer removed the name when it mapped it, unless it never
            // connected: then it is ours to remove.
            let _ = rgex_smp::shm::unlink(&qp.ring_name);
        }
    }
}

pub(crate) fn einval(verb: &'static str, detail: String) -> VerbsError {
    VerbsError::call(verb, libc::EINVAL, detail)
}

impl SoftVerbs {
    fn check(&self, dev: &Arc<Device>, verb: &'static str) -> VerbsResult<()> {
        if Arc::ptr_eq(dev, &self.dev) {
            Ok(())
        } else {
            Err(einval(
                verb,
                "the handle belongs to another soft-verbs context".into(),
            ))
        }
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        self.dev.lock().sh.faults.faults.clone()
    }

    /// Inject faults from now on (drop, delay, kill).
    pub fn set_faults(&self, faults: Faults) {
        let mut e = self.dev.lock();
        e.sh.faults.faults = faults;
        e.killed(Instant::now());
    }

    /// Kill the device: it stops answering, and its peers see it dead.
    pub fn kill(&self) {
        let mut f = self.faults();
        f.killed = true;
        self.set_faults(f);
    }

    /// Run the device's engine once: take arrived packets, perform them,
    /// answer, retransmit. Every verb does this, and the service thread
    /// does it when no verb has for a while.
    pub fn progress(&self) {
        self.dev.lock_verb().progress();
    }

    /// What the engine has done so far.
    pub fn stats(&self) -> Stats {
        self.dev.lock().sh.stats
    }

    fn lock_progressed(&self) -> MutexGuard<'_, Engine> {
        let mut e = self.dev.lock_verb();
        e.progress();
        e
    }
}
