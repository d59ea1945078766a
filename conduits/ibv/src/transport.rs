//! The verbs transport of the kit: one RC QP per rank (this rank's own
//! included, connected to itself), all on one shared receive queue and
//! one completion queue, the segment and the kit's buffers registered in
//! one protection domain. See the crate docs for the design.

use crate::atomics::{self, Atomic, Plan};
use crate::card::Card;
use crate::error::IbvError;
use crate::verbs::{
    Access, LinkLayer, Mtu, Opcode, PortState, QpCaps, QpTransition, RecvWr, RemoteAddr, RtrAttr,
    RtsAttr, SendFlags, SendWr, Sge, Verbs, VerbsError, Wc, WcStatus,
};
use crate::wr_id::{Kind, WrId, MAX_PEERS};
use crate::IbvConfig;
use parking_lot::Mutex;
use rgex_core::atomic::{AtomicRequest, AtomicType, OpSet};
use rgex_core::segment::CLIENT_SEGMENT_STRIDE;
use rgex_core::{Error, Rank, Result};
use rgex_net::{Area, Armed, Caps, OpEnd, Polled, PutCompletion, Setup, Transport};
use std::collections::HashMap;

/// Completions read at once.
const ENTRIES: usize = 16;

/// The RNR NAK timer code a receiver asks for (`IBV_RNR_TIMER_2_56`:
/// 2.56 ms). Credits keep a receive posted for every message, so it
/// only matters if that ever fails.
const MIN_RNR_TIMER: u8 = 16;

/// Largest RDMA message: verbs' 2^31 bytes.
const MAX_MSG: u64 = 1 << 31;

/// A peer's segment as RDMA reaches it.
#[derive(Clone, Copy, Debug)]
struct PeerSeg {
    base: u64,
    rkey: u32,
}

/// One client segment as RDMA reaches it: this rank's region of it
/// (until closed), every peer's base and rkey (`None`: it has none; the
/// endpoint sends it active messages). Written at registration, read by
/// posts, both under the kit's state lock.
struct ClientWindows<M> {
    mine: Option<M>,
    peers: Vec<Option<PeerSeg>>,
}

impl<M> Default for ClientWindows<M> {
    fn default() -> Self {
        ClientWindows {
            mine: None,
            peers: Vec::new(),
        }
    }
}

/// What the transport tracks under its own lock (the kit calls it under
/// the kit's, so this one is never contended; it exists because the
/// trait's methods take `&self`).
#[derive(Debug)]
struct Inner {
    /// Send work requests posted and not yet completed, per peer's QP.
    sq_used: Vec<u32>,
    /// The first failure on each peer's QP: later posts to it fail with
    /// it, and flushed requests name it.
    broken: Vec<Option<String>>,
    /// CAS loops in flight, by the kit's operation id.
    loops: HashMap<u32, Atomic>,
    /// CAS loops whose next step the send queue refused for now.
    retry: Vec<u32>,
    /// The completion queue overran (completions were lost).
    overrun: Option<String>,
}

/// The verbs network of the ibv conduit over backend `V` (see the crate
/// docs). Fields drop in order: QPs before the queues they use, regions
/// before their protection domain, the device last.
pub struct Ibv<V: Verbs> {
    /// Client segments, by number less one (see [`ClientWindows`]).
    clients: parking_lot::RwLock<Vec<ClientWindows<V::Mr>>>,
    qps: Vec<V::Qp>,
    srq: V::Srq,
    cq: V::Cq,
    seg_mr: V::Mr,
    send_mr: V::Mr,
    recv_mr: V::Mr,
    pd: V::Pd,
    dev: V,
    cfg: IbvConfig,
    caps: Caps,
    mtu: Mtu,
    sq_depth: u32,
    cq_depth: u32,
    peers: Vec<PeerSeg>,
    inner: Mutex<Inner>,
    rank: Rank,
}

impl<V: Verbs> std::fmt::Debug for Ibv<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ibv")
            .field("backend", &V::NAME)
            .field("device", &self.dev.device_name())
            .field("port", &self.dev.port())
            .field("rank", &self.rank)
            .finish()
    }
}

/// A setup verb's error, naming what was done, on which rank and device.
fn setup_error<V: Verbs>(dev: &V, rank: Rank, what: &str, e: VerbsError) -> Error {
    Error::Failed(format!(
        "rgex-ibv: {rank}: {what} on {} ({}): {e}",
        dev.device_name(),
        V::NAME
    ))
}

/// The PSN a QP starts sending at (its peer expects the same).
fn first_psn(qpn: u32) -> u32 {
    qpn.wrapping_mul(0x9e37_79b9) >> 8
}

impl<V: Verbs> Ibv<V> {
    /// The opened device.
    pub fn device(&self) -> &V {
        &self.dev
    }

    /// The path MTU this rank asked for (each pair uses the smaller of
    /// its two).
    pub fn mtu(&self) -> Mtu {
        self.mtu
    }

    /// Send-queue depth per QP, and the completion queue's depth.
    pub fn depths(&self) -> (u32, u32) {
        (self.sq_depth, self.cq_depth)
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &IbvConfig {
        &self.cfg
    }

    /// Post one send work request of `kind` to `peer`, counting it in the
    /// peer's send queue; a full queue is [`IbvError::Again`], a QP that
    /// failed before fails the post naming that failure.
    ///
    /// # Safety
    /// The SGE's memory stays valid until the completion (inline: until
    /// return) and lies in the region its lkey names.
    #[inline]
    unsafe fn post(&self, kind: Kind, peer: u32, wr: &SendWr) -> std::result::Result<(), IbvError> {
        let p = peer as usize;
        let mut g = self.inner.lock();
        if let Some(why) = g.overrun.as_ref().or(g.broken[p].as_ref()) {
            return Err(IbvError::Peer {
                what: kind.what(),
                from: self.rank,
                peer: Rank(peer),
                why: format!("its QP is in error since: {why}"),
            });
        }
        if g.sq_used[p] >= self.sq_depth {
            return Err(IbvError::Again { peer: Rank(peer) });
        }
        // SAFETY: forwarded from the caller's contract.
        match unsafe { self.dev.post_send(&self.qps[p], wr) } {
            Ok(()) => {
                g.sq_used[p] += 1;
                Ok(())
            }
            Err(e) if e.is_queue_full() => Err(IbvError::Again { peer: Rank(peer) }),
            Err(e) => Err(IbvError::Peer {
                what: kind.what(),
                from: self.rank,
                peer: Rank(peer),
                why: e.to_string(),
            }),
        }
    }

    /// Where `offset` of `peer`'s segment is (of one of its client
    /// segments at their offsets).
    #[inline]
    fn remote(&self, peer: u32, offset: u64) -> RemoteAddr {
        if offset >= CLIENT_SEGMENT_STRIDE {
            return self.client_remote(peer, offset);
        }
        let s = self.peers[peer as usize];
        RemoteAddr {
            addr: s.base.wrapping_add(offset),
            rkey: s.rkey,
        }
    }

    /// Where `offset` of one of `peer`'s client segments is. The kit posts
    /// only to a segment [`connect_client`](Transport::connect_client)
    /// said it reaches; were it not (a bug), rkey and address 0, which the
    /// target refuses, never a write elsewhere.
    #[cold]
    #[inline(never)]
    fn client_remote(&self, peer: u32, offset: u64) -> RemoteAddr {
        let k = (offset / CLIENT_SEGMENT_STRIDE) as usize;
        let within = offset % CLIENT_SEGMENT_STRIDE;
        let s = self
            .clients
            .read()
            .get(k - 1)
            .and_then(|c| c.peers.get(peer as usize).copied().flatten())
            .unwrap_or(PeerSeg { base: 0, rkey: 0 });
        RemoteAddr {
            addr: s.base.wrapping_add(within),
            rkey: s.rkey,
        }
    }

    /// Why the work request `id` completed with `wc`'s error status; the
    /// first failure on a QP is remembered for the requests after it.
    fn failure(&self, g: &mut Inner, id: WrId, wc: &Wc) -> String {
        let mut why = format!(
            "{} from {} to rank {} failed: {}",
            id.kind.what(),
            self.rank,
            id.peer,
            wc.status.name()
        );
        if wc.vendor_err != 0 {
            why.push_str(&format!(" (vendor error {:#x})", wc.vendor_err));
        }
        let first = &mut g.broken[id.peer as usize];
        match first {
            Some(f) if wc.status == WcStatus::WrFlushErr => {
                why.push_str(&format!(", after: {f}"));
            }
            Some(_) => {}
            None => *first = Some(why.clone()),
        }
        why
    }

    /// Post the next step of CAS loop `op`; `Ok(false)` if the send
    /// queue is full for now (it is retried by the next poll).
    fn loop_step(&self, op: u32) -> std::result::Result<bool, String> {
        let Some(a) = self.inner.lock().loops.get(&op).copied() else {
            return Ok(true);
        };
        let peer = a.req.target.0;
        let id = WrId {
            kind: Kind::CasLoop,
            peer,
            op,
        };
        // SAFETY: the result word lies in the kit's operand buffer,
        // registered and held until the operation's completion is reported.
        match unsafe { self.post(Kind::CasLoop, peer, &a.wr(Plan::Loop, id.encode())) } {
            Ok(()) => Ok(true),
            Err(IbvError::Again { .. }) => Ok(false),
            Err(e) => {
                self.inner.lock().loops.remove(&op);
                Err(e.to_string())
            }
        }
    }

    /// Hand one completion over (or consume it: inline sends, CAS loop
    /// steps). Never called with the inner lock held: `each` may post.
    fn completion(&self, wc: &Wc, each: &mut impl FnMut(OpEnd)) {
        let Some(id) = WrId::decode(wc.wr_id) else {
            tracing::error!(
                rank = self.rank.0,
                wr_id = wc.wr_id,
                "a completion for a work request that is not ours (wr_id {:#x}, {})",
                wc.wr_id,
                wc.status.name()
            );
            return;
        };
        if id.kind == Kind::Recv {
            each(if wc.status == WcStatus::Success {
                OpEnd::Done {
                    op: id.op,
                    len: wc.byte_len as usize,
                }
            } else {
                OpEnd::Failed {
                    op: id.op,
                    cancelled: false,
                    why: format!("a receive on {} failed: {}", self.rank, wc.status.name()),
                }
            });
            return;
        }
        let mut g = self.inner.lock();
        let used = &mut g.sq_used[id.peer as usize];
        *used = used.saturating_sub(1);
        if wc.status != WcStatus::Success {
            let why = self.failure(&mut g, id, wc);
            let tell = match id.kind {
                Kind::Inject => false,
                Kind::CasLoop => {
                    g.loops.remove(&id.op);
                    true
                }
                _ => true,
            };
            drop(g);
            if tell {
                each(OpEnd::Failed {
                    op: id.op,
                    cancelled: false,
                    why,
                });
            }
            return;
        }
        match id.kind {
            Kind::Inject => {}
            Kind::CasLoop => {
                let Some(a) = g.loops.get_mut(&id.op) else {
                    return;
                };
                // SAFETY: the completed CMP_AND_SWP wrote the old value (8
                // bytes, 8-aligned) into the kit's operand buffer, which
                // stays ours until we report the operation.
                let old = unsafe { std::ptr::read_volatile(a.result.addr as *const u64) };
                if a.step(old) {
                    g.loops.remove(&id.op);
                    drop(g);
                    each(OpEnd::Done { op: id.op, len: 8 });
                    return;
                }
                drop(g);
                match self.loop_step(id.op) {
                    Ok(true) => {}
                    Ok(false) => self.inner.lock().retry.push(id.op),
                    Err(why) => each(OpEnd::Failed {
                        op: id.op,
                        cancelled: false,
                        why,
                    }),
                }
            }
            _ => {
                drop(g);
                each(OpEnd::Done {
                    op: id.op,
                    len: wc.byte_len as usize,
                });
            }
        }
    }
}

impl<V: Verbs> Transport for Ibv<V>
where
    V::Pd: 'static,
    V::Mr: 'static,
    V::Cq: 'static,
    V::Srq: 'static,
    V::Qp: 'static,
{
    const NAME: &'static str = "ibv";
    const NETWORK: &'static str = V::NAME;
    const TIMEOUT_VAR: &'static str = "RGEX_IBV_TIMEOUT";
    type Config = IbvConfig;
    type Region = V::Mr;
    type Error = IbvError;
    type AtomicPlan = Plan;

    /// Open the device, register the segment (remote read, write and
    /// atomics) and the kit's buffers, create the CQ, the SRQ and one QP
    /// per rank; the card carries the port's address, the segment's
    /// address and rkey, and this rank's QP number for each rank.
    unsafe fn open(cfg: &IbvConfig, setup: &Setup<'_>) -> Result<(Self, Vec<u8>)> {
        let rank = setup.rank;
        let geo = setup.geo;
        let size = geo.size;
        let soft = <crate::soft::SoftVerbs as Verbs>::NAME;
        if cfg.soft() != (V::NAME == soft) {
            return Err(Error::Config(format!(
                "rgex-ibv: {rank}: RGEX_IBV_DEVICE={:?} but this conduit runs the {} backend: \
                 the software device is SoftIbvConduit, libibverbs IbvConduit",
                cfg.device.as_deref().unwrap_or(""),
                V::NAME
            )));
        }
        let dev = V::open(&cfg.choice()).map_err(|e| match e {
            VerbsError::NoDevice { .. } | VerbsError::Library { .. } => Error::Config(format!(
                "rgex-ibv: {rank}: {e} (set RGEX_IBV_DEVICE=soft for the software device)"
            )),
            e => Error::Failed(format!("rgex-ibv: {rank}: opening the device: {e}")),
        })?;
        if size > MAX_PEERS {
            return Err(Error::Config(format!(
                "rgex-ibv: {size} ranks: the ibv conduit connects at most {MAX_PEERS}"
            )));
        }
        let attr = *dev.device_attr();
        let port = *dev.port_attr();
        let name = dev.device_name().to_string();
        if let PortState::NotActive(s) = port.state {
            return Err(Error::Config(format!(
                "rgex-ibv: {rank}: port {} of {name} is not active (state {s}); choose another with RGEX_IBV_PORT",
                dev.port()
            )));
        }
        let limit = |var: &str, value: u64, max: u64, what: &str| -> Result<()> {
            if value > max {
                return Err(Error::Config(format!(
                    "rgex-ibv: {rank}: {what} is {value}, but {name} allows at most {max}{var}"
                )));
            }
            Ok(())
        };
        limit(
            " (lower RGEX_IBV_SQ_DEPTH)",
            cfg.sq_depth.into(),
            attr.max_qp_wr.into(),
            "RGEX_IBV_SQ_DEPTH (send work requests per QP)",
        )?;
        limit(
            " (lower RGEX_IBV_WINDOW)",
            geo.n_recv as u64,
            attr.max_srq_wr.into(),
            &format!(
                "the shared receive queue for {size} ranks x (2 x RGEX_IBV_WINDOW={} + 5)",
                geo.window
            ),
        )?;
        limit(
            " (lower RGEX_IBV_SQ_DEPTH or RGEX_IBV_WINDOW)",
            geo.n_recv as u64 + size as u64 * u64::from(cfg.sq_depth),
            attr.max_cqe.into(),
            "the completion queue (every receive and every send-queue slot)",
        )?;
        limit(
            "",
            size as u64,
            attr.max_qp.into(),
            "the number of QPs (one per rank)",
        )?;
        let mtu = cfg.mtu.unwrap_or(port.active_mtu);
        if mtu > port.active_mtu {
            return Err(Error::Config(format!(
                "rgex-ibv: {rank}: RGEX_IBV_MTU={} exceeds the active MTU of port {} of {name} ({} bytes)",
                mtu.bytes(),
                dev.port(),
                port.active_mtu.bytes()
            )));
        }
        let err = |what: &str, e| setup_error(&dev, rank, what, e);
        let pd = dev
            .alloc_pd()
            .map_err(|e| err("allocating the protection domain", e))?;
        let seg = setup.segment;
        let remote = Access::LOCAL_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_WRITE
            | Access::REMOTE_ATOMIC;
        // SAFETY: the segment is smp's shared mapping and the kit keeps the
        // send and receive buffers until the transport is dropped (the
        // contract of `open`); the regions are dropped with it.
        let (seg_mr, send_mr, recv_mr) = unsafe {
            (
                dev.reg_mr(&pd, seg.as_ptr(), seg.len(), remote)
                    .map_err(|e| err("registering the segment (ulimit -l?)", e))?,
                dev.reg_mr(&pd, setup.send.0, setup.send.1, Access::LOCAL_WRITE)
                    .map_err(|e| err("registering the send buffers", e))?,
                dev.reg_mr(&pd, setup.recv.0, setup.recv.1, Access::LOCAL_WRITE)
                    .map_err(|e| err("registering the receive buffers", e))?,
            )
        };
        let cq_depth = (geo.n_recv + size * cfg.sq_depth as usize) as u32;
        let cq = dev
            .create_cq(cq_depth)
            .map_err(|e| err("creating the completion queue", e))?;
        let srq = dev
            .create_srq(&pd, geo.n_recv as u32)
            .map_err(|e| err("creating the shared receive queue", e))?;
        let ask = QpCaps {
            max_send_wr: cfg.sq_depth,
            max_recv_wr: 0,
            max_inline_data: cfg.inline,
        };
        let mut qps = Vec::with_capacity(size);
        for p in 0..size {
            let qp = dev
                .create_qp(&pd, &cq, &cq, Some(&srq), &ask)
                .map_err(|e| {
                    err(
                        &format!(
                            "creating the QP for rank {p} (RGEX_IBV_INLINE={})",
                            cfg.inline
                        ),
                        e,
                    )
                })?;
            qps.push(qp);
        }
        let inline = qps
            .iter()
            .map(|q| V::qp_caps(q).max_inline_data)
            .min()
            .unwrap_or(0)
            .min(cfg.inline);
        let card = Card {
            lid: port.lid,
            gid: dev.gid(),
            mtu,
            base: seg.as_ptr() as u64,
            rkey: V::rkey(&seg_mr),
            qpns: qps.iter().map(V::qp_num).collect(),
        };
        let caps = Caps {
            inject_size: inline as usize,
            max_msg: MAX_MSG.min(attr.max_mr_size).max(4096) as usize,
            // RC performs a QP's requests in order: a SEND after a WRITE
            // is received after the write's data is placed.
            send_after_write: true,
            delivery_complete: false,
            // Local buffers need an lkey.
            local_registration: true,
            // A READ after a WRITE's completion, on the same QP, returns
            // after the write is placed at the target.
            put_completion: PutCompletion::ReadBack,
        };
        let inner = Inner {
            sq_used: vec![0; size],
            broken: vec![None; size],
            loops: HashMap::new(),
            retry: Vec::new(),
            overrun: None,
        };
        Ok((
            Ibv {
                qps,
                srq,
                cq,
                seg_mr,
                send_mr,
                recv_mr,
                pd,
                dev,
                cfg: cfg.clone(),
                caps,
                mtu,
                sq_depth: cfg.sq_depth,
                cq_depth,
                peers: Vec::new(),
                clients: Default::default(),
                inner: Mutex::new(inner),
                rank,
            },
            card.encode(),
        ))
    }

    /// Move every QP through INIT, RTR (to the QP the peer created for
    /// this rank) and RTS, and learn every segment's address and rkey.
    fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()> {
        let size = self.qps.len();
        let me = self.rank.index();
        let attr = *self.dev.device_attr();
        let ethernet = self.dev.port_attr().link_layer == LinkLayer::Ethernet;
        let mut peers = Vec::with_capacity(size);
        for (p, bytes) in cards.iter().enumerate() {
            let card = Card::decode(p, size, bytes)?;
            let qp = &self.qps[p];
            let dest = card.qpns[me];
            let steps = [
                QpTransition::Init {
                    access: Access::REMOTE_READ | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC,
                },
                QpTransition::Rtr(RtrAttr {
                    mtu: self.mtu.min(card.mtu),
                    dest_qp_num: dest,
                    rq_psn: first_psn(dest),
                    dlid: card.lid,
                    dgid: ethernet.then_some(card.gid),
                    max_dest_rd_atomic: attr.max_qp_rd_atom.min(16) as u8,
                    min_rnr_timer: MIN_RNR_TIMER,
                }),
                QpTransition::Rts(RtsAttr {
                    sq_psn: first_psn(V::qp_num(qp)),
                    timeout: self.cfg.qp_timeout,
                    retry_cnt: self.cfg.retry_count,
                    rnr_retry: self.cfg.rnr_retry,
                    max_rd_atomic: attr.max_qp_init_rd_atom.min(16) as u8,
                }),
            ];
            for step in &steps {
                self.dev.modify_qp(qp, step).map_err(|e| {
                    setup_error(
                        &self.dev,
                        self.rank,
                        &format!("connecting the QP for rank {p} (its QP {dest})"),
                        e,
                    )
                })?;
            }
            peers.push(PeerSeg {
                base: card.base,
                rkey: card.rkey,
            });
        }
        self.peers = peers;
        Ok(())
    }

    #[inline]
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn desc(&self, area: Area) -> usize {
        V::lkey(match area {
            Area::Segment => &self.seg_mr,
            Area::Send => &self.send_mr,
            Area::Recv => &self.recv_mr,
        }) as usize
    }

    unsafe fn register(&self, p: *const u8, len: usize) -> Result<V::Mr> {
        // SAFETY: the caller keeps `p .. p + len` allocated until the
        // region is dropped; LOCAL_WRITE lets gets land in it.
        unsafe {
            self.dev
                .reg_mr(&self.pd, p as *mut u8, len, Access::LOCAL_WRITE)
        }
        .map_err(|e| {
            setup_error(
                &self.dev,
                self.rank,
                &format!("registering {len} bytes at {p:p} for one operation"),
                e,
            )
        })
    }

    #[inline]
    fn region_desc(&self, r: &V::Mr) -> usize {
        V::lkey(r) as usize
    }

    /// `ibv_reg_mr` with remote read and write (the soft device: its own
    /// registration), the card its address and rkey.
    unsafe fn register_client(&self, k: usize, p: *mut u8, len: usize) -> Result<Option<Vec<u8>>> {
        if len == 0 {
            // Nothing to reach: every access is refused by its range check.
            return Ok(None);
        }
        let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
        // SAFETY: the caller keeps `p .. p + len` allocated until
        // `close_client(k)`, which drops the region.
        let mr = unsafe { self.dev.reg_mr(&self.pd, p, len, access) }.map_err(|e| {
            setup_error(
                &self.dev,
                self.rank,
                &format!("registering client segment {k} ({len} bytes at {p:p})"),
                e,
            )
        })?;
        let card = [
            (p as u64).to_le_bytes(),
            u64::from(V::rkey(&mr)).to_le_bytes(),
        ]
        .concat();
        let mut clients = self.clients.write();
        if clients.len() < k {
            clients.resize_with(k, ClientWindows::default);
        }
        clients[k - 1].mine = Some(mr);
        Ok(Some(card))
    }

    fn connect_client(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let peers: Vec<_> = rgex_net::transport::client_cards(cards, k, self.rank, "ibv")?
            .into_iter()
            .map(|c| {
                c.map(|[base, rkey]| PeerSeg {
                    base,
                    rkey: rkey as u32,
                })
            })
            .collect();
        let native = peers.iter().map(Option::is_some).collect();
        let mut clients = self.clients.write();
        if clients.len() < k {
            clients.resize_with(k, ClientWindows::default);
        }
        clients[k - 1].peers = peers;
        Ok(native)
    }

    fn close_client(&self, k: usize) {
        if let Some(c) = self.clients.write().get_mut(k - 1) {
            // ibv_dereg_mr: the rkey is dead from now on.
            c.mine = None;
        }
    }

    #[inline]
    unsafe fn post_recv(
        &self,
        op: u32,
        buf: *mut u8,
        len: usize,
        desc: usize,
    ) -> std::result::Result<(), IbvError> {
        let wr = RecvWr {
            wr_id: WrId {
                kind: Kind::Recv,
                peer: 0,
                op,
            }
            .encode(),
            sge: Sge {
                addr: buf as u64,
                length: len as u32,
                lkey: desc as u32,
            },
        };
        // SAFETY: forwarded from the caller's contract.
        match unsafe { self.dev.post_srq_recv(&self.srq, &wr) } {
            Ok(()) => Ok(()),
            Err(e) if e.is_queue_full() => Err(IbvError::Again { peer: self.rank }),
            Err(err) => Err(IbvError::Verbs {
                what: "posting a receive",
                from: self.rank,
                err,
            }),
        }
    }

    #[inline]
    unsafe fn inject(
        &self,
        peer: u32,
        buf: *const u8,
        len: usize,
    ) -> std::result::Result<(), IbvError> {
        let wr = SendWr {
            wr_id: WrId {
                kind: Kind::Inject,
                peer,
                op: 0,
            }
            .encode(),
            opcode: Opcode::Send,
            // Signalled too: its completion frees its send-queue slot (see
            // the crate docs).
            flags: SendFlags::INLINE | SendFlags::SIGNALED,
            sge: Sge {
                addr: buf as u64,
                length: len as u32,
                lkey: 0,
            },
            remote: RemoteAddr::default(),
        };
        // SAFETY: inline: the bytes are copied before the post returns.
        unsafe { self.post(Kind::Inject, peer, &wr) }
    }

    #[inline]
    unsafe fn post_send(
        &self,
        op: u32,
        peer: u32,
        buf: *const u8,
        len: usize,
        desc: usize,
    ) -> std::result::Result<(), IbvError> {
        let wr = SendWr {
            wr_id: WrId {
                kind: Kind::Send,
                peer,
                op,
            }
            .encode(),
            opcode: Opcode::Send,
            flags: SendFlags::SIGNALED,
            sge: Sge {
                addr: buf as u64,
                length: len as u32,
                lkey: desc as u32,
            },
            remote: RemoteAddr::default(),
        };
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.post(Kind::Send, peer, &wr) }
    }

    #[inline]
    unsafe fn post_write(
        &self,
        op: u32,
        peer: u32,
        src: *const u8,
        len: usize,
        desc: usize,
        offset: u64,
        _delivery: bool,
    ) -> std::result::Result<(), IbvError> {
        let wr = SendWr {
            wr_id: WrId {
                kind: Kind::Write,
                peer,
                op,
            }
            .encode(),
            opcode: Opcode::RdmaWrite,
            flags: SendFlags::SIGNALED,
            sge: Sge {
                addr: src as u64,
                length: len as u32,
                lkey: desc as u32,
            },
            remote: self.remote(peer, offset),
        };
        // SAFETY: forwarded from the caller's contract (`len` is at most
        // `caps().max_msg`, 2^31).
        unsafe { self.post(Kind::Write, peer, &wr) }
    }

    #[inline]
    unsafe fn post_read(
        &self,
        op: u32,
        peer: u32,
        dst: *mut u8,
        len: usize,
        desc: usize,
        offset: u64,
    ) -> std::result::Result<(), IbvError> {
        let wr = SendWr {
            wr_id: WrId {
                kind: Kind::Read,
                peer,
                op,
            }
            .encode(),
            opcode: Opcode::RdmaRead,
            flags: SendFlags::SIGNALED,
            sge: Sge {
                addr: dst as u64,
                length: len as u32,
                lkey: desc as u32,
            },
            remote: self.remote(peer, offset),
        };
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.post(Kind::Read, peer, &wr) }
    }

    /// Up to 16 completions, after retrying CAS-loop steps the send
    /// queue refused. A CQ overrun is reported once as an error; from
    /// then on every post fails naming it (completions were lost).
    fn poll(&self, mut each: impl FnMut(OpEnd)) -> std::result::Result<Polled, IbvError> {
        let retry = std::mem::take(&mut self.inner.lock().retry);
        for op in retry {
            match self.loop_step(op) {
                Ok(true) => {}
                Ok(false) => self.inner.lock().retry.push(op),
                Err(why) => each(OpEnd::Failed {
                    op,
                    cancelled: false,
                    why,
                }),
            }
        }
        let mut wcs = [Wc::EMPTY; ENTRIES];
        let n = match self.dev.poll_cq(&self.cq, &mut wcs) {
            Ok(n) => n,
            Err(err) => {
                let mut g = self.inner.lock();
                if g.overrun.is_some() {
                    return Ok(Polled {
                        events: 0,
                        again: false,
                    });
                }
                g.overrun = Some(err.to_string());
                return Err(IbvError::Verbs {
                    what: "polling the completion queue",
                    from: self.rank,
                    err,
                });
            }
        };
        for wc in &wcs[..n] {
            self.completion(wc, &mut each);
        }
        Ok(Polled {
            events: n,
            again: n == ENTRIES,
        })
    }

    /// The CQ's wait object ([`Verbs::arm_cq`]: a completion channel, or
    /// the software device's wake socket).
    fn wait_arm(&self) -> Armed {
        match self.dev.arm_cq(&self.cq) {
            Some(fd) => Armed::Fd(fd),
            None => Armed::Unsupported,
        }
    }

    fn wait_done(&self) {
        self.dev.cq_events_taken(&self.cq);
    }

    fn atomics_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        atomics::offloadable(self.dev.device_attr().atomics, ty, ops)
    }

    fn atomic_plan(&self, req: &AtomicRequest) -> Result<Plan> {
        atomics::plan(req)
    }

    unsafe fn post_atomic(
        &self,
        op: u32,
        req: &AtomicRequest,
        plan: Plan,
        buf: *mut u8,
        desc: usize,
    ) -> std::result::Result<(), IbvError> {
        let peer = req.target.0;
        let result = buf.wrapping_add(16);
        // SAFETY: the caller's contract: `buf` is 24 writable bytes,
        // 8-aligned, ours until the completion; the fetched value lands at
        // +16 (zero until then, as the kit expects of a failed op).
        unsafe { std::ptr::write(result.cast::<u64>(), 0) };
        let a = Atomic {
            req: *req,
            remote: self.remote(peer, req.offset),
            result: Sge {
                addr: result as u64,
                length: 8,
                lkey: desc as u32,
            },
            guess: 0,
        };
        let kind = if plan == Plan::Loop {
            self.inner.lock().loops.insert(op, a);
            Kind::CasLoop
        } else {
            Kind::Atomic
        };
        let id = WrId { kind, peer, op };
        // SAFETY: the result word is registered (`desc`) and held until
        // the completion; the target word was bounds- and
        // alignment-checked by the atomics layer.
        let posted = unsafe { self.post(kind, peer, &a.wr(plan, id.encode())) };
        if posted.is_err() && plan == Plan::Loop {
            self.inner.lock().loops.remove(&op);
        }
        posted
    }
}
