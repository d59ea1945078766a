//! The [`Verbs`] implementation of a soft device context: object
//! creation with its checks, the QP state machine's transitions, posts
//! and polls (each running the engine).

use super::cq::Cq;
use super::device::{spawn_service, Device};
use super::faults::{FaultState, Faults, FAULTS_ENV};
use super::ident::{self, Ident};
use super::inbound::Inbound;
use super::mr::MrEntry;
use super::progress::Engine;
use super::qp::{self, Qp, Remote};
use super::recvq::{RecvQueue, Srq};
use super::ring::{self, Ring};
use super::udp::{UdpWire, WireKind, WIRE_ENV};
use super::{
    einval, packet, requester, responder, SoftCq, SoftMr, SoftPd, SoftQp, SoftSrq, SoftVerbs,
    MAX_INLINE, NEXT_CTX, SERVICE_ENV,
};
use crate::verbs::{
    Access, DeviceAttr, DeviceChoice, Gid, LinkLayer, Mtu, PortAttr, PortState, QpCaps, QpState,
    QpTransition, RecvWr, SendWr, Verbs, VerbsError, VerbsResult, Wc,
};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

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
        let wire = WireKind::from_env()?;
        // Relaxed: the counter only has to hand out distinct numbers.
        let mut ident = Ident::local(NEXT_CTX.fetch_add(1, Ordering::Relaxed));
        ident::sweep_stale(ident.uid);
        let udp = match wire {
            WireKind::Shm => None,
            WireKind::Udp(ip) => {
                let w = UdpWire::bind(ip)?;
                ident.udp = Some(w.local());
                Some(w)
            }
        };
        let waker = udp.as_ref().and_then(UdpWire::waker);
        let mut engine = Engine::new(ident, FaultState::new(faults, kill_after), udp);
        engine.sh.cqs.wake.udp = waker;
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
                armed: false,
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
        let inbound = if e.sh.udp.is_some() {
            Inbound::Queue(VecDeque::new())
        } else {
            Inbound::Ring(Ring::create(&ring_name)?)
        };
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
            resume: None,
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
                let wire = |i: &Ident| if i.udp.is_some() { "udp" } else { "shm" };
                if peer.udp.is_some() != e.sh.ident.udp.is_some() {
                    return Err(einval(
                        VERB,
                        format!(
                            "QP {}: dgid is a soft device on the {} wire and this one uses \
                             {}: give every process the same {WIRE_ENV}",
                            q.qpn,
                            wire(&peer),
                            wire(&e.sh.ident)
                        ),
                    ));
                }
                // A ring that cannot be mapped (the peer is gone, or its QP
                // was already connected) makes an unreachable peer, as on a
                // fabric: requests time out. The UDP wire maps nothing.
                let ring = match peer.udp {
                    Some(_) => None,
                    None => Ring::open(&peer.ring_name(a.dest_qp_num)).ok(),
                };
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

    fn arm_cq(&self, cq: &SoftCq) -> Option<RawFd> {
        self.check(&cq.dev, "ibv_req_notify_cq").ok()?;
        self.dev.lock().arm_wait(cq.id)
    }

    fn cq_events_taken(&self, cq: &SoftCq) {
        if self.check(&cq.dev, "ibv_get_cq_event").is_ok() {
            self.dev.lock().disarm_wait(cq.id);
        }
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
