//! The software verbs device (`RGEX_IBV_DEVICE=soft`): an RC-only HCA
//! emulated over shared memory between the processes of one machine
//! (and between contexts of one process, including a QP connected to
//! itself), so the ibv conduit is tested where there is no RDMA device.
//!
//! # How it works
//! - **Addressing.** The port is RoCE-like ([`LinkLayer::Ethernet`]): its
//!   GID encodes a magic, the uid, the pid and the context number. At
//!   RTR, [`RtrAttr::dgid`](crate::verbs::RtrAttr::dgid) and
//!   `dest_qp_num` name the peer QP, whose inbound ring the device maps.
//! - **Rings.** Each QP owns one inbound packet ring, a POSIX
//!   shared-memory object (`/dev/shm/rgex-ibv-soft-<uid>-<pid>-<ctx>-<qpn>`)
//!   written only by the one QP connected to it (RC is one to one) and
//!   read by the owner's engine: single producer, single consumer.
//!   Requests and their responses (ACK, NAK, READ data, atomic results)
//!   travel on the receiving QP's ring. The name is removed as soon as the
//!   peer maps it (or when the QP is destroyed), and [`SoftVerbs::open`]
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
//!   [`poll_cq`](Verbs::poll_cq) returns [`VerbsError::CqOverrun`] from then
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
//!   too small → `IBV_WC_LOC_LEN_ERR` on the receiver (which moves to ERR)
//!   and `IBV_WC_REM_INV_REQ_ERR` at the sender; a receive buffer outside
//!   its lkey → `IBV_WC_LOC_PROT_ERR` there and `IBV_WC_REM_OP_ERR` at the
//!   sender. Local checks: an SGE outside its lkey's region, or a READ or
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
//! (the trait has neither); SRQ limit events, async events and completion
//! channels; the SQD and SQE states; `max_rd_atomic` limits (any number
//! of READs and atomics may be outstanding); P_Keys, path migration,
//! multicast; a READ consuming one PSN per response packet (here a READ
//! request is one PSN); the responder QP moving to ERR on a remote access
//! error (it stays usable here); deregistering a region while a peer
//! uses it is not detected beyond the key check.

mod cq;
mod faults;
mod ident;
mod mr;
mod packet;
mod progress;
mod qp;
mod recvq;
mod requester;
mod responder;
mod ring;

pub use faults::{Faults, FAULTS_ENV};
pub use progress::Stats;

use crate::verbs::{
    Access, DeviceAttr, DeviceChoice, Gid, LinkLayer, Mtu, PortAttr, PortState, QpCaps, QpState,
    QpTransition, RecvWr, SendWr, Verbs, VerbsError, VerbsResult, Wc,
};
use cq::Cq;
use faults::FaultState;
use ident::Ident;
use mr::MrEntry;
use parking_lot::{Mutex, MutexGuard};
use progress::Engine;
use qp::{Qp, Remote};
use recvq::{RecvQueue, Srq};
use ring::Ring;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Largest inline payload a QP may ask for.
pub const MAX_INLINE: u32 = 1024;

/// Contexts opened by this process (their number is in the GID).
static NEXT_CTX: AtomicU32 = AtomicU32::new(0);

/// Set to `0` to run a device without its service thread (the engine
/// then runs only inside verbs and [`SoftVerbs::progress`]).
pub const SERVICE_ENV: &str = "RGEX_IBV_SOFT_SERVICE";
/// The service thread's nap after a pass that moved packets.
const SERVICE_BUSY: Duration = Duration::from_micros(50);
/// Its longest nap, reached by doubling while the device is idle.
const SERVICE_IDLE: Duration = Duration::from_millis(5);

/// A context's state, shared by its handles.
#[derive(Debug)]
pub(crate) struct Device {
    engine: Mutex<Engine>,
}

impl Device {
    /// The engine, for a handle's destruction or the service thread.
    fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock()
    }

    /// The engine, for a verb (the service thread then stays away).
    fn lock_verb(&self) -> MutexGuard<'_, Engine> {
        let mut e = self.engine.lock();
        e.last_call = Instant::now();
        e
    }
}

/// The service thread: runs the engine when no verb has for a while, so
/// a process that does not call into its device still answers its peers
/// (as an HCA does without the CPU). It naps 50 us after a pass that
/// moved packets, doubling to 5 ms while idle (at most 200 wake-ups a
/// second), never waits for the lock, and ends with the context.
fn spawn_service(dev: Weak<Device>) {
    let run = move || {
        let mut nap = SERVICE_BUSY;
        loop {
            std::thread::sleep(nap);
            let Some(d) = dev.upgrade() else { return };
            let moved = match d.engine.try_lock() {
                Some(mut e) if e.last_call.elapsed() >= nap => e.progress(),
                _ => false, // a verb is running the engine
            };
            nap = if moved {
                SERVICE_BUSY
            } else {
                (nap * 2).min(SERVICE_IDLE)
            };
        }
    };
    // Without the thread the device still works, inside verbs.
    let _ = std::thread::Builder::new()
        .name("rgex-ibv-soft".into())
        .spawn(run);
}

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

fn einval(verb: &'static str, detail: String) -> VerbsError {
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

impl Verbs for SoftVerbs {
    const NAME: &'static str = "soft";
    type Pd = SoftPd;
    type Mr = SoftMr;
    type Cq = SoftCq;
    type Srq = SoftSrq;
    type Qp = SoftQp;

    fn open(choice: &DeviceChoice) -> VerbsResult<Self> {
        if let Some(n) = &choice.name {
            if n != "soft0" {
                return Err(VerbsError::NoDevice {
                    why: format!("the soft verbs backend has one device, soft0, not {n:?}"),
                });
            }
        }
        if choice.port.is_some_and(|p| p != 1) || choice.gid_index != 0 {
            return Err(VerbsError::NoDevice {
                why: format!(
                    "soft0 has one port (1) with one GID (index 0); asked port {:?}, GID index {}",
                    choice.port, choice.gid_index
                ),
            });
        }
        let (faults, kill_after) = match std::env::var(FAULTS_ENV) {
            Ok(s) => Faults::parse(&s)?,
            Err(_) => (Faults::default(), None),
        };
        // Relaxed: the counter only has to hand out distinct numbers.
        let ident = Ident::local(NEXT_CTX.fetch_add(1, Ordering::Relaxed));
        ident::sweep_stale(ident.uid);
        let engine = Engine::new(ident, FaultState::new(faults, kill_after));
        let dev = Arc::new(Device {
            engine: Mutex::new(engine),
        });
        if std::env::var(SERVICE_ENV).as_deref() != Ok("0") {
            spawn_service(Arc::downgrade(&dev));
        }
        Ok(SoftVerbs {
            dev,
            attr: DeviceAttr {
                max_mr_size: 1 << 40,
                max_qp: 1 << 16,
                max_qp_wr: 1 << 14,
                max_cqe: 1 << 20,
                max_srq_wr: 1 << 14,
                max_qp_init_rd_atom: 16,
                max_qp_rd_atom: 16,
                atomics: true,
            },
            port: PortAttr {
                state: PortState::Active,
                max_mtu: Mtu::M4096,
                active_mtu: Mtu::M4096,
                lid: ident.lid(),
                link_layer: LinkLayer::Ethernet,
            },
            gid: ident.gid(),
        })
    }

    fn device_name(&self) -> &str {
        "soft0"
    }

    fn device_attr(&self) -> &DeviceAttr {
        &self.attr
    }

    fn port_attr(&self) -> &PortAttr {
        &self.port
    }

    fn port(&self) -> u8 {
        1
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn alloc_pd(&self) -> VerbsResult<SoftPd> {
        let mut e = self.dev.lock();
        let id = e.fresh_id();
        e.sh.pds.insert(id);
        Ok(SoftPd {
            dev: self.dev.clone(),
            id,
        })
    }

    unsafe fn reg_mr(
        &self,
        pd: &SoftPd,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> VerbsResult<SoftMr> {
        const VERB: &str = "ibv_reg_mr";
        self.check(&pd.dev, VERB)?;
        if len as u64 > self.attr.max_mr_size {
            return Err(einval(
                VERB,
                format!("{len} bytes exceed max_mr_size {}", self.attr.max_mr_size),
            ));
        }
        if addr.is_null() && len > 0 {
            return Err(einval(VERB, format!("null address for {len} bytes")));
        }
        if access.intersects(Access::REMOTE_WRITE | Access::REMOTE_ATOMIC)
            && !access.contains(Access::LOCAL_WRITE)
        {
            return Err(einval(
                VERB,
                format!("access {access:?}: remote write or atomic needs LOCAL_WRITE"),
            ));
        }
        let key = self.dev.lock().sh.mrs.insert(MrEntry {
            pd: pd.id,
            addr: addr as u64,
            len: len as u64,
            access,
        });
        Ok(SoftMr {
            dev: self.dev.clone(),
            key,
        })
    }

    fn lkey(mr: &SoftMr) -> u32 {
        mr.key
    }

    fn rkey(mr: &SoftMr) -> u32 {
        mr.key
    }

    fn create_cq(&self, depth: u32) -> VerbsResult<SoftCq> {
        if depth == 0 || depth > self.attr.max_cqe {
            return Err(einval(
                "ibv_create_cq",
                format!("depth {depth} outside 1..={}", self.attr.max_cqe),
            ));
        }
        let mut e = self.dev.lock();
        let id = e.fresh_id();
        e.sh.cqs.map.insert(
            id,
            Cq {
                depth,
                q: VecDeque::new(),
                overrun: false,
            },
        );
        Ok(SoftCq {
            dev: self.dev.clone(),
            id,
        })
    }

    fn create_srq(&self, pd: &SoftPd, max_wr: u32) -> VerbsResult<SoftSrq> {
        const VERB: &str = "ibv_create_srq";
        self.check(&pd.dev, VERB)?;
        if max_wr == 0 || max_wr > self.attr.max_srq_wr {
            return Err(einval(
                VERB,
                format!("max_wr {max_wr} outside 1..={}", self.attr.max_srq_wr),
            ));
        }
        let mut e = self.dev.lock();
        let id = e.fresh_id();
        e.sh.srqs.insert(
            id,
            Srq {
                pd: pd.id,
                rq: RecvQueue::new(max_wr),
            },
        );
        Ok(SoftSrq {
            dev: self.dev.clone(),
            id,
        })
    }

    fn create_qp(
        &self,
        pd: &SoftPd,
        send_cq: &SoftCq,
        recv_cq: &SoftCq,
        srq: Option<&SoftSrq>,
        caps: &QpCaps,
    ) -> VerbsResult<SoftQp> {
        const VERB: &str = "ibv_create_qp";
        self.check(&pd.dev, VERB)?;
        self.check(&send_cq.dev, VERB)?;
        self.check(&recv_cq.dev, VERB)?;
        if let Some(s) = srq {
            self.check(&s.dev, VERB)?;
        }
        let max = self.attr.max_qp_wr;
        // 0 is allowed, as on an HCA: a receive-only or send-only QP.
        if caps.max_send_wr > max {
            return Err(einval(
                VERB,
                format!("max_send_wr {} exceeds max_qp_wr {max}", caps.max_send_wr),
            ));
        }
        if srq.is_none() && caps.max_recv_wr > max {
            return Err(einval(
                VERB,
                format!("max_recv_wr {} exceeds max_qp_wr {max}", caps.max_recv_wr),
            ));
        }
        if caps.max_inline_data > MAX_INLINE {
            return Err(einval(
                VERB,
                format!(
                    "max_inline_data {} exceeds the soft device's {MAX_INLINE}",
                    caps.max_inline_data
                ),
            ));
        }
        let granted = QpCaps {
            max_recv_wr: if srq.is_some() { 0 } else { caps.max_recv_wr },
            ..*caps
        };
        let mut e = self.dev.lock();
        if srq.is_some_and(|s| e.sh.srqs.get(&s.id).is_none_or(|s| s.pd != pd.id)) {
            return Err(einval(VERB, "the SRQ belongs to another PD".into()));
        }
        let qpn = e.fresh_id();
        let ring_name = e.sh.ident.ring_name(qpn);
        let inbound = Ring::create(&ring_name)?;
        if e.sh.faults.faults.killed {
            inbound.set_dead();
        }
        let qp = Qp {
            qpn,
            pd: pd.id,
            send_cq: send_cq.id,
            recv_cq: recv_cq.id,
            srq: srq.map(|s| s.id),
            caps: granted,
            state: QpState::Reset,
            access: Access::empty(),
            inbound,
            ring_name,
            remote: None,
            mtu: 1024,
            min_rnr_timer: 0,
            sq: VecDeque::new(),
            first_unacked: 0,
            tx_idx: 0,
            tx_pkt: 0,
            next_psn: 0,
            timeout: None,
            retry_cnt: 0,
            rnr_retry: 0,
            retries: 0,
            rnr_retries: 0,
            last_progress: Instant::now(),
            rnr_wait: None,
            rq: RecvQueue::new(granted.max_recv_wr),
            epsn: 0,
            nak_sent: false,
            rx: None,
            atomic_cache: VecDeque::new(),
            out_q: VecDeque::new(),
        };
        e.qps.insert(qpn, qp);
        Ok(SoftQp {
            dev: self.dev.clone(),
            qpn,
            caps: granted,
        })
    }

    fn qp_num(qp: &SoftQp) -> u32 {
        qp.qpn
    }

    fn qp_caps(qp: &SoftQp) -> QpCaps {
        qp.caps
    }

    fn qp_state(&self, qp: &SoftQp) -> VerbsResult<QpState> {
        self.check(&qp.dev, "ibv_query_qp")?;
        let e = self.lock_progressed();
        Ok(e.qps[&qp.qpn].state)
    }

    fn modify_qp(&self, qp: &SoftQp, to: &QpTransition) -> VerbsResult<()> {
        const VERB: &str = "ibv_modify_qp";
        self.check(&qp.dev, VERB)?;
        let mut e = self.lock_progressed();
        let e = &mut *e;
        let q = e.qps.get_mut(&qp.qpn).expect("a live handle's QP exists");
        let bad = |from: QpState| {
            einval(
                VERB,
                format!("QP {}: {to:?} is not allowed from {from:?}", q.qpn),
            )
        };
        match to {
            QpTransition::Init { access } => {
                if q.state != QpState::Reset {
                    return Err(bad(q.state));
                }
                q.access = *access;
                q.state = QpState::Init;
            }
            QpTransition::Rtr(a) => {
                if q.state != QpState::Init {
                    return Err(bad(q.state));
                }
                let gid = a.dgid.ok_or_else(|| {
                    einval(
                        VERB,
                        format!("QP {}: the soft port is RoCE-like: RTR needs dgid", q.qpn),
                    )
                })?;
                let peer = Ident::from_gid(&gid).ok_or_else(|| {
                    einval(
                        VERB,
                        format!("QP {}: dgid {gid:02x?} is not a soft device's", q.qpn),
                    )
                })?;
                // A ring that cannot be mapped (the peer is gone, or its QP
                // was already connected) makes an unreachable peer, as on a
                // fabric: requests time out.
                let ring = Ring::open(&peer.ring_name(a.dest_qp_num)).ok();
                q.remote = Some(Remote {
                    ring,
                    peer,
                    qpn: a.dest_qp_num,
                });
                q.mtu = a.mtu.bytes().min(ring::MAX_PAYLOAD) as u32;
                q.epsn = a.rq_psn & packet::PSN_MASK;
                q.min_rnr_timer = a.min_rnr_timer & 31;
                q.state = QpState::Rtr;
            }
            QpTransition::Rts(a) => {
                if q.state != QpState::Rtr {
                    return Err(bad(q.state));
                }
                if a.retry_cnt > 7 || a.rnr_retry > 7 || a.timeout > 31 {
                    return Err(einval(
                        VERB,
                        format!(
                            "QP {}: retry_cnt {} and rnr_retry {} must be 0-7, timeout {} 0-31",
                            q.qpn, a.retry_cnt, a.rnr_retry, a.timeout
                        ),
                    ));
                }
                q.next_psn = a.sq_psn & packet::PSN_MASK;
                q.timeout = qp::ack_timeout(a.timeout);
                q.retry_cnt = a.retry_cnt;
                q.rnr_retry = a.rnr_retry;
                q.last_progress = Instant::now();
                q.state = QpState::Rts;
            }
            QpTransition::Err => {
                if q.state != QpState::Err {
                    q.enter_err(&mut e.sh.cqs);
                }
            }
            QpTransition::Reset => q.reset()?,
        }
        e.cascade_overruns();
        Ok(())
    }

    unsafe fn post_send(&self, qp: &SoftQp, wr: &SendWr) -> VerbsResult<()> {
        self.check(&qp.dev, "ibv_post_send")?;
        let mut g = self.dev.lock_verb();
        let e = &mut *g;
        let q = e.qps.get_mut(&qp.qpn).expect("a live handle's QP exists");
        // SAFETY: forwarded from the caller.
        unsafe { requester::post_send(q, &mut e.sh, wr) }?;
        e.progress();
        Ok(())
    }

    unsafe fn post_recv(&self, qp: &SoftQp, wr: &RecvWr) -> VerbsResult<()> {
        self.check(&qp.dev, "ibv_post_recv")?;
        let mut g = self.dev.lock_verb();
        let e = &mut *g;
        let q = e.qps.get_mut(&qp.qpn).expect("a live handle's QP exists");
        responder::post_recv(q, &mut e.sh, wr)?;
        e.progress();
        Ok(())
    }

    unsafe fn post_srq_recv(&self, srq: &SoftSrq, wr: &RecvWr) -> VerbsResult<()> {
        const VERB: &str = "ibv_post_srq_recv";
        self.check(&srq.dev, VERB)?;
        let mut e = self.dev.lock_verb();
        let s =
            e.sh.srqs
                .get_mut(&srq.id)
                .expect("a live handle's SRQ exists");
        if !s.rq.post(*wr) {
            return Err(VerbsError::call(
                VERB,
                libc::ENOMEM,
                format!("SRQ {} is full ({} receives posted)", srq.id, s.rq.max),
            ));
        }
        e.progress();
        Ok(())
    }

    fn poll_cq(&self, cq: &SoftCq, out: &mut [Wc]) -> VerbsResult<usize> {
        self.check(&cq.dev, "ibv_poll_cq")?;
        let mut e = self.lock_progressed();
        let c =
            e.sh.cqs
                .map
                .get_mut(&cq.id)
                .expect("a live handle's CQ exists");
        if c.overrun {
            return Err(VerbsError::CqOverrun { depth: c.depth });
        }
        let n = out.len().min(c.q.len());
        for (slot, wc) in out.iter_mut().zip(c.q.drain(..n)) {
            *slot = wc;
        }
        Ok(n)
    }
}
