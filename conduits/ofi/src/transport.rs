//! The libfabric transport of the kit: one RDM endpoint, its completion
//! queue and address vector, the registered segment and kit buffers,
//! and one `fi_context2` per kit operation id.

use crate::fabric::{
    AddressVector, CompletionQueue, CqRead, Domain, Endpoint, Fabric, FiError, Info, MemoryRegion,
    Remote,
};
use crate::provider::{choose, Provider, MR_MODES};
use crate::{atomics, OfiConfig};
use libfabric_sys as sys;
use rgex_core::atomic::{AtomicRequest, AtomicType, OpSet};
use rgex_core::segment::CLIENT_SEGMENT_STRIDE;
use rgex_core::{Error, Rank, Result};
use rgex_net::{Area, Armed, Caps, OpEnd, Polled, PostError, Setup, Transport};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

/// A peer's segment as the network reaches it.
#[derive(Clone, Copy, Debug)]
struct PeerSeg {
    addr: sys::fi_addr_t,
    /// Base to add offsets to (its virtual address under FI_MR_VIRT_ADDR, else 0).
    base: u64,
    key: u64,
}

/// Completion-queue entries read at once.
const ENTRIES: usize = 16;

/// The libfabric network of the ofi conduit (see the crate docs).
/// Fields drop in order: regions before the endpoint.
pub struct Ofi {
    /// Client segments, by number less one (see [`ClientWindows`]).
    clients: parking_lot::RwLock<Vec<ClientWindows>>,
    seg_mr: MemoryRegion,
    send_mr: MemoryRegion,
    recv_mr: MemoryRegion,
    ep: std::sync::Arc<Endpoint>,
    prov: Provider,
    caps: Caps,
    peers: Vec<PeerSeg>,
    /// One fi_context2 per operation id; the provider may write them
    /// while an operation is in flight (FI_CONTEXT modes).
    ctx: Box<[UnsafeCell<sys::fi_context2>]>,
    /// Keys for on-the-fly registrations (without FI_MR_PROV_KEY).
    next_key: AtomicU64,
    rank: Rank,
}

/// One client segment as the network reaches it: this rank's region of
/// it (until closed), every peer's key and base (`None`: it has no
/// region; the endpoint sends it active messages). Written at
/// registration, read by posts: both under the kit's state lock, the
/// lock is for the type system.
#[derive(Default)]
struct ClientWindows {
    mine: Option<MemoryRegion>,
    peers: Vec<Option<(u64, u64)>>,
}

// SAFETY: the contexts are only touched by the provider for operations
// the kit posted, and by the kit under its state lock; the libfabric
// objects are Send + Sync wrappers used under that lock.
unsafe impl Send for Ofi {}
// SAFETY: as above.
unsafe impl Sync for Ofi {}

impl std::fmt::Debug for Ofi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ofi")
            .field("provider", &self.prov.name)
            .field("domain", &self.prov.domain)
            .finish()
    }
}

impl Ofi {
    /// What the provider granted (name, domain, mr_mode, caps, ordering).
    pub fn provider(&self) -> &Provider {
        &self.prov
    }

    /// Where `offset` of `peer`'s segment is, for RMA (of one of its
    /// client segments at their offsets).
    #[inline]
    fn remote(&self, peer: u32, offset: u64) -> Remote {
        if offset >= CLIENT_SEGMENT_STRIDE {
            return self.client_remote(peer, offset);
        }
        let p = &self.peers[peer as usize];
        Remote {
            addr: p.addr,
            raddr: p.base.wrapping_add(offset),
            key: p.key,
        }
    }

    /// Where `offset` of one of `peer`'s client segments is. The kit posts
    /// only to a segment [`connect_client`](Transport::connect_client)
    /// said it reaches; were it not (a bug), key and address 0, which the
    /// provider refuses at the target, never a write elsewhere.
    #[cold]
    #[inline(never)]
    fn client_remote(&self, peer: u32, offset: u64) -> Remote {
        let k = (offset / CLIENT_SEGMENT_STRIDE) as usize;
        let within = offset % CLIENT_SEGMENT_STRIDE;
        let (key, base) = self
            .clients
            .read()
            .get(k - 1)
            .and_then(|c| c.peers.get(peer as usize).copied().flatten())
            .unwrap_or((0, 0));
        Remote {
            addr: self.peers[peer as usize].addr,
            raddr: base.wrapping_add(within),
            key,
        }
    }

    /// The context pointer of operation `id`.
    #[inline]
    fn ctx(&self, id: u32) -> *mut c_void {
        self.ctx[id as usize].get().cast()
    }

    /// The operation a context pointer names (`None` if it is not ours).
    #[inline]
    fn op_of(&self, ctx: *mut c_void) -> Option<u32> {
        let base = self.ctx.as_ptr() as usize;
        let size = std::mem::size_of::<sys::fi_context2>();
        let off = (ctx as usize).checked_sub(base)?;
        let id = off / size;
        (id * size == off && id < self.ctx.len()).then_some(id as u32)
    }

    /// Descriptor for a local buffer in registered region `mr`, or null
    /// when the provider does not need one.
    #[inline]
    fn desc_of(&self, mr: &MemoryRegion) -> usize {
        if self.prov.mr_local() {
            mr.desc() as usize
        } else {
            0
        }
    }
}

impl PostError for FiError {
    #[inline]
    fn is_again(&self) -> bool {
        FiError::is_again(self)
    }
}

impl Transport for Ofi {
    const NAME: &'static str = "ofi";
    const NETWORK: &'static str = "libfabric";
    const TIMEOUT_VAR: &'static str = "RGEX_OFI_TIMEOUT";
    type Config = OfiConfig;
    type Region = MemoryRegion;
    type Error = FiError;
    type AtomicPlan = atomics::Plan;

    /// Choose the provider, open everything and register the segment,
    /// the send and the receive buffers; the card is this rank's segment
    /// key, base address and endpoint name.
    unsafe fn open(cfg: &OfiConfig, setup: &Setup<'_>) -> Result<(Self, Vec<u8>)> {
        let geo = setup.geo;
        // libfabric is opened here, when the ofi conduit is chosen, and
        // not before: a program that never chooses it never loads it (nor
        // the PSM or verbs libraries its providers pull in).
        sys::Library::system().map_err(|e| Error::Os {
            op: "RGEX_CONDUIT=ofi: loading libfabric".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, e.why),
        })?;
        let mut info = choose(cfg, geo.n_recv)?;
        let prov = Provider::granted(&info, cfg);
        if prov.mr_mode & sys::FI_MR_RAW != 0 {
            return Err(Error::Config(format!(
                "libfabric provider {} needs FI_MR_RAW (raw memory keys), which rgex does not support; \
                 choose another provider with RGEX_OFI_PROVIDER",
                prov.name
            )));
        }
        if prov.mr_mode & !MR_MODES & !(sys::FI_MR_MMU_NOTIFY | sys::FI_MR_RMA_EVENT) != 0 {
            return Err(Error::Config(format!(
                "libfabric provider {} requires memory-registration modes {:?} that rgex does not handle",
                prov.name,
                Info::mr_mode_names(prov.mr_mode & !MR_MODES)
            )));
        }
        if info.rx_size() < geo.n_recv {
            return Err(Error::Config(format!(
                "libfabric provider {} posts at most {} receives, but {} ranks with RGEX_OFI_WINDOW={} need {} \
                 (lower RGEX_OFI_WINDOW)",
                prov.name,
                info.rx_size(),
                geo.size,
                geo.window,
                geo.n_recv
            )));
        }
        // Delivery-complete was asked for to learn whether puts can have it
        // (they pass the flag themselves); active messages need only
        // transmit-complete (credits bound what is in flight), and as a
        // default it would make tcp;ofi_rxm acknowledge every message.
        let flags = info.tx_op_flags();
        info.set_tx_op_flags(flags & !sys::FI_DELIVERY_COMPLETE);
        let fabric = Fabric::open(info)?;
        let domain = Domain::open(&fabric)?;
        let cq = CompletionQueue::open(&domain, geo.n_ops())?;
        let av = AddressVector::open(&domain, geo.size)?;
        let ep = Endpoint::open(&domain, &cq, &av)?;
        let bind = (prov.mr_mode & sys::FI_MR_ENDPOINT != 0).then_some(&ep);
        let local = sys::FI_SEND | sys::FI_RECV | sys::FI_READ | sys::FI_WRITE;
        let seg = setup.segment;
        // SAFETY: the segment is smp's shared mapping, which outlives the
        // transport (the kit's contract for `open`).
        let seg_mr = unsafe {
            MemoryRegion::register(
                &domain,
                seg.as_ptr(),
                seg.len(),
                local | sys::FI_REMOTE_READ | sys::FI_REMOTE_WRITE,
                1,
                bind,
            )
        }?;
        let (send, send_len) = setup.send;
        let (recv, recv_len) = setup.recv;
        // SAFETY: the kit keeps both buffers until the transport is
        // dropped (its contract for `open`), which closes the regions.
        let send_mr = unsafe { MemoryRegion::register(&domain, send, send_len, local, 2, bind) }?;
        // SAFETY: as above.
        let recv_mr = unsafe { MemoryRegion::register(&domain, recv, recv_len, local, 3, bind) }?;
        let ctx = (0..geo.n_ops())
            .map(|_| UnsafeCell::new(sys::fi_context2::default()))
            .collect();
        let name = ep.name()?;
        // This rank's card: key, base address, name.
        let base = if prov.mr_mode & sys::FI_MR_VIRT_ADDR != 0 {
            seg.as_ptr() as u64
        } else {
            0
        };
        let card = [&seg_mr.key().to_le_bytes()[..], &base.to_le_bytes(), &name].concat();
        let caps = Caps {
            inject_size: prov.inject_size,
            max_msg: prov.max_msg,
            send_after_write: prov.send_after_write(),
            delivery_complete: prov.delivery_complete,
            local_registration: prov.mr_local(),
            put_completion: prov.put_completion,
        };
        Ok((
            Ofi {
                seg_mr,
                send_mr,
                recv_mr,
                ep,
                prov,
                caps,
                peers: Vec::new(),
                ctx,
                next_key: AtomicU64::new(1 << 20),
                rank: setup.rank,
                clients: Default::default(),
            },
            card,
        ))
    }

    /// Fill the peer table from every rank's card (in rank order).
    fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()> {
        let mut names = Vec::with_capacity(cards.len());
        let mut segs = Vec::with_capacity(cards.len());
        for (r, c) in cards.iter().enumerate() {
            if c.len() < 17 {
                return Err(Error::Bootstrap(format!(
                    "rank {r} sent a malformed ofi address card ({} bytes)",
                    c.len()
                )));
            }
            let key = u64::from_le_bytes(c[0..8].try_into().expect("8 bytes"));
            let base = u64::from_le_bytes(c[8..16].try_into().expect("8 bytes"));
            names.push(c[16..].to_vec());
            segs.push((key, base));
        }
        let addrs = self.ep.av().insert(&names)?;
        self.peers = addrs
            .into_iter()
            .zip(segs)
            .map(|(addr, (key, base))| PeerSeg { addr, base, key })
            .collect();
        Ok(())
    }

    #[inline]
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn desc(&self, area: Area) -> usize {
        self.desc_of(match area {
            Area::Segment => &self.seg_mr,
            Area::Send => &self.send_mr,
            Area::Recv => &self.recv_mr,
        })
    }

    unsafe fn register(&self, p: *const u8, len: usize) -> Result<MemoryRegion> {
        // Relaxed: the keys only need to differ.
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let bind = (self.prov.mr_mode & sys::FI_MR_ENDPOINT != 0).then_some(&self.ep);
        let access = sys::FI_SEND | sys::FI_RECV | sys::FI_READ | sys::FI_WRITE;
        // SAFETY: the caller keeps `p..p+len` allocated until the region is
        // dropped (at the operation's completion, under the state lock).
        Ok(unsafe { MemoryRegion::register(self.ep.domain(), p, len, access, key, bind) }?)
    }

    #[inline]
    fn region_desc(&self, r: &MemoryRegion) -> usize {
        self.desc_of(r)
    }

    /// `fi_mr_reg` with remote read and write, the card its key and the
    /// base peers add offsets to (its address under `FI_MR_VIRT_ADDR`,
    /// else 0), as for the segment. A provider that refuses says why (the
    /// endpoint then keeps the reference for this segment).
    unsafe fn register_client(&self, k: usize, p: *mut u8, len: usize) -> Result<Option<Vec<u8>>> {
        if len == 0 {
            // Nothing to reach: every access is refused by its range check.
            return Ok(None);
        }
        // Relaxed: the keys only need to differ.
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let bind = (self.prov.mr_mode & sys::FI_MR_ENDPOINT != 0).then_some(&self.ep);
        let access = sys::FI_SEND
            | sys::FI_RECV
            | sys::FI_READ
            | sys::FI_WRITE
            | sys::FI_REMOTE_READ
            | sys::FI_REMOTE_WRITE;
        // SAFETY: the caller keeps `p..p+len` allocated until
        // `close_client(k)`, which drops the region.
        let mr = unsafe { MemoryRegion::register(self.ep.domain(), p, len, access, key, bind) }?;
        let base = if self.prov.mr_mode & sys::FI_MR_VIRT_ADDR != 0 {
            p as u64
        } else {
            0
        };
        let card = [mr.key().to_le_bytes(), base.to_le_bytes()].concat();
        let mut clients = self.clients.write();
        if clients.len() < k {
            clients.resize_with(k, ClientWindows::default);
        }
        clients[k - 1].mine = Some(mr);
        Ok(Some(card))
    }

    fn connect_client(&self, k: usize, cards: &[Option<Vec<u8>>]) -> Result<Vec<bool>> {
        let peers: Vec<_> = rgex_net::transport::client_cards(cards, k, self.rank, "ofi")?
            .into_iter()
            .map(|c| c.map(|[key, base]| (key, base)))
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
            // fi_close: peers' operations on it fail from now on.
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
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract; one context per op.
        unsafe { self.ep.recv(buf, len, desc as *mut c_void, self.ctx(op)) }
    }

    #[inline]
    unsafe fn inject(&self, peer: u32, buf: *const u8, len: usize) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract (`len` within the
        // inject size).
        unsafe { self.ep.inject(buf, len, self.peers[peer as usize].addr) }
    }

    #[inline]
    unsafe fn post_send(
        &self,
        op: u32,
        peer: u32,
        buf: *const u8,
        len: usize,
        desc: usize,
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.ep.send(
                buf,
                len,
                desc as *mut c_void,
                self.peers[peer as usize].addr,
                self.ctx(op),
            )
        }
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
        delivery: bool,
    ) -> Result<(), FiError> {
        let flags = if delivery {
            sys::FI_DELIVERY_COMPLETE
        } else {
            0
        };
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.ep.write(
                src,
                len,
                desc as *mut c_void,
                self.remote(peer, offset),
                self.ctx(op),
                flags,
            )
        }
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
    ) -> Result<(), FiError> {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.ep.read(
                dst,
                len,
                desc as *mut c_void,
                self.remote(peer, offset),
                self.ctx(op),
                0,
            )
        }
    }

    /// One `fi_cq_read` of up to 16 entries (or the waiting error
    /// completion), which also drives manual progress.
    #[inline]
    fn poll(&self, mut each: impl FnMut(OpEnd)) -> Result<Polled, FiError> {
        let mut buf = [MaybeUninit::uninit(); ENTRIES];
        match self.ep.cq().read(&mut buf)? {
            CqRead::Entries(done) => {
                for e in done {
                    match self.op_of(e.op_context) {
                        Some(op) => each(OpEnd::Done { op, len: e.len }),
                        None => tracing::error!(
                            rank = self.rank.0,
                            "completion for an unknown context {:p}",
                            e.op_context
                        ),
                    }
                }
                Ok(Polled {
                    events: done.len(),
                    again: done.len() == ENTRIES,
                })
            }
            CqRead::Empty => Ok(Polled {
                events: 0,
                again: false,
            }),
            CqRead::Error => {
                let Some(err) = self.ep.cq().read_error() else {
                    return Ok(Polled {
                        events: 0,
                        again: true,
                    });
                };
                match self.op_of(err.context) {
                    Some(op) => each(OpEnd::Failed {
                        op,
                        cancelled: err.error.code == sys::FI_ECANCELED,
                        why: err.error.to_string(),
                    }),
                    None => tracing::error!(
                        rank = self.rank.0,
                        "error completion for an unknown operation: {}",
                        err.error
                    ),
                }
                Ok(Polled {
                    events: 1,
                    again: true,
                })
            }
        }
    }

    /// The CQ's `FI_WAIT_FD`, armed by `fi_trywait` (which says
    /// `-FI_EAGAIN` while completions wait: poll first). A provider
    /// that gave no fd has no wait object.
    fn wait_arm(&self) -> Armed {
        let cq = self.ep.cq();
        match cq.wait_fd() {
            None => Armed::Unsupported,
            Some(fd) if cq.trywait() => Armed::Fd(fd),
            Some(_) => Armed::Busy,
        }
    }

    fn atomics_offload(&self, ty: AtomicType, ops: OpSet) -> bool {
        atomics::offloadable(&self.prov, &self.ep, ty, ops)
    }

    fn atomic_plan(&self, req: &AtomicRequest) -> Result<atomics::Plan> {
        atomics::plan(req)
    }

    unsafe fn post_atomic(
        &self,
        op: u32,
        req: &AtomicRequest,
        plan: atomics::Plan,
        buf: *mut u8,
        desc: usize,
    ) -> Result<(), FiError> {
        let to = self.remote(req.target.0, req.offset);
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            atomics::post(
                &self.ep,
                req,
                plan,
                buf,
                desc as *mut c_void,
                to,
                self.ctx(op),
            )
        }
    }
}
