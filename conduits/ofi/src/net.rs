//! Setting up the network side: choosing the provider, opening the
//! libfabric objects, registering memory, exchanging addresses and keys.

use crate::fabric::{
    AddressVector, CompletionQueue, Domain, Endpoint, Fabric, FiError, Hints, Info, MemoryRegion,
    Remote,
};
use crate::{OfiConfig, PutCompletion};
use libfabric_sys as sys;
use rgex_core::{Bootstrap, Error, Result, Segment};
use std::cell::UnsafeCell;
use std::sync::Arc;

/// Memory-registration modes rgex knows how to handle. `FI_MR_RAW`
/// (keys longer than 64 bits) is refused.
pub(crate) const MR_MODES: u64 = sys::FI_MR_LOCAL
    | sys::FI_MR_VIRT_ADDR
    | sys::FI_MR_ALLOCATED
    | sys::FI_MR_PROV_KEY
    | sys::FI_MR_ENDPOINT;

/// Send-buffer pools: requests, replies (and credit messages), RMA
/// bounce buffers and atomic operands.
pub(crate) const POOL_REQ: usize = 0;
pub(crate) const POOL_REP: usize = 1;
pub(crate) const POOL_RMA: usize = 2;

/// Operation contexts beyond the receive and send buffers: RMA, atomics
/// and Long writes in flight at once.
pub(crate) const DYNAMIC_OPS: usize = 1024;

/// What the provider granted, as the conduit uses it.
#[derive(Clone, Debug)]
pub struct Provider {
    /// Provider name (`tcp;ofi_rxm`, ...).
    pub name: Arc<str>,
    /// Domain name.
    pub domain: String,
    /// Capabilities granted.
    pub caps: u64,
    /// Memory-registration modes required.
    pub mr_mode: u64,
    /// Transmit ordering offered.
    pub tx_order: u64,
    /// Puts and Long writes may request `FI_DELIVERY_COMPLETE`.
    pub delivery_complete: bool,
    /// How non-blocking puts learn they landed (always
    /// [`ReadBack`](PutCompletion::ReadBack) without delivery-complete).
    pub put_completion: PutCompletion,
    /// Largest transfer in one operation.
    pub max_msg: usize,
    /// Largest AM message sent with `fi_inject` (0: none): the provider's
    /// inject size, capped by `RGEX_OFI_INJECT`.
    pub inject_size: usize,
    /// Thread safety the provider itself gives.
    pub threading: sys::fi_threading,
    /// `FI_PROGRESS_MANUAL` or `FI_PROGRESS_AUTO` for data.
    pub data_progress: sys::fi_progress,
}

impl Provider {
    /// True if local buffers need a registration descriptor (`FI_MR_LOCAL`).
    pub fn mr_local(&self) -> bool {
        self.mr_mode & sys::FI_MR_LOCAL != 0
    }

    /// True if atomics were granted (`FI_ATOMIC`).
    pub fn atomics(&self) -> bool {
        self.caps & sys::FI_ATOMIC != 0
    }

    /// True if a send posted after a write reaches the target after it
    /// (`FI_ORDER_SAW`), so a Long's header need not wait for the write.
    pub fn send_after_write(&self) -> bool {
        self.tx_order & sys::FI_ORDER_SAW != 0
    }
}

/// Geometry of the buffers, the same on every rank.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub size: usize,
    pub window: usize,
    pub max_medium: usize,
    /// Bytes per send or receive buffer (header + max Medium, 64-aligned).
    pub slot: usize,
    /// Send buffers per pool.
    pub pools: [usize; 3],
    /// Receive buffers posted (per sender: two windows and
    /// [`CREDIT_SLOTS`] credit messages).
    pub n_recv: usize,
}

/// Receive buffers per sender for credit-only messages. A receiver owes
/// one once [`Geometry::credit_every`] (half a window, rounded up) of the
/// sender's messages are consumed and unreported. Those messages need no
/// credits of their own because few can be unread at once: a sender that
/// has read reports up to `p` can have sent at most `p + 2 x window`
/// messages (both directions), each unread credit message reports at
/// least `credit_every` more than the one before it, and the first at
/// least `credit_every` more than `p`; so at most `2 x window /
/// credit_every <= 4` are unread, and five buffers leave one spare.
pub(crate) const CREDIT_SLOTS: usize = 5;

impl Geometry {
    pub fn new(size: usize, cfg: &OfiConfig) -> Self {
        let slot = (crate::wire::MAX_HEADER + cfg.max_medium + 63) & !63;
        let rep = (cfg.send_buffers / 2).max(2);
        Geometry {
            size,
            window: cfg.window,
            max_medium: cfg.max_medium,
            slot,
            pools: [cfg.send_buffers, rep, 32],
            n_recv: size * (2 * cfg.window + CREDIT_SLOTS),
        }
    }

    /// Consumed, unreported messages after which a receiver sends a
    /// credit message: half a window, rounded up, so that a sender
    /// flooding one direction gets credits back while it still has half
    /// a window to send (at a whole window it stopped and waited for
    /// each report: an AM flood over shm ran no faster than a ping-pong).
    pub fn credit_every(&self) -> usize {
        self.window.div_ceil(2)
    }

    pub fn n_send(&self) -> usize {
        self.pools.iter().sum()
    }

    pub fn n_ops(&self) -> usize {
        self.n_recv + self.n_send() + DYNAMIC_OPS
    }

    /// The pool a send slot belongs to.
    pub fn pool_of(&self, slot: usize) -> usize {
        if slot < self.pools[0] {
            POOL_REQ
        } else if slot < self.pools[0] + self.pools[1] {
            POOL_REP
        } else {
            POOL_RMA
        }
    }
}

/// A peer's segment as the network reaches it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerSeg {
    pub addr: sys::fi_addr_t,
    /// Base to add offsets to (its virtual address under FI_MR_VIRT_ADDR, else 0).
    pub base: u64,
    pub key: u64,
}

/// Memory the provider may touch: 64-byte aligned, zeroed, fixed in place.
pub(crate) struct Buffer {
    mem: Box<[UnsafeCell<[u64; 8]>]>,
}

impl Buffer {
    fn new(bytes: usize) -> Self {
        let n = bytes.div_ceil(64).max(1);
        Buffer {
            mem: (0..n).map(|_| UnsafeCell::new([0u64; 8])).collect(),
        }
    }
    pub fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }
    pub fn len(&self) -> usize {
        self.mem.len() * 64
    }
}

/// The network side, immutable after setup (the mutable state lives in
/// `State`, under the conduit's lock). Fields drop in order: regions
/// before the endpoint, the endpoint before the memory it used.
pub(crate) struct Net {
    pub seg_mr: MemoryRegion,
    pub send_mr: MemoryRegion,
    pub recv_mr: MemoryRegion,
    pub ep: Arc<Endpoint>,
    pub prov: Provider,
    pub geo: Geometry,
    pub peers: Vec<PeerSeg>,
    /// One fi_context2 per operation slot; the provider may write them
    /// while an operation is in flight (FI_CONTEXT modes).
    pub ctx: Box<[UnsafeCell<sys::fi_context2>]>,
    pub send_mem: Buffer,
    pub recv_mem: Buffer,
}

// SAFETY: the raw memory (contexts, buffers) is only touched by the
// provider for operations we posted and by us under the State lock or for
// slots we own exclusively (see State); the libfabric objects are Send +
// Sync wrappers used under that lock.
unsafe impl Send for Net {}
// SAFETY: as above.
unsafe impl Sync for Net {}

/// The hints for one attempt of [`choose`]: each flag is a wish that may
/// be dropped.
fn hints_for(
    cfg: &OfiConfig,
    geo: &Geometry,
    atomic: bool,
    saw: bool,
    dc: bool,
    manual: bool,
) -> Hints {
    let mut caps = sys::FI_MSG
        | sys::FI_RMA
        | sys::FI_READ
        | sys::FI_WRITE
        | sys::FI_SEND
        | sys::FI_RECV
        | sys::FI_REMOTE_READ
        | sys::FI_REMOTE_WRITE;
    if atomic {
        caps |= sys::FI_ATOMIC;
    }
    Hints {
        caps,
        mode: sys::FI_CONTEXT | sys::FI_CONTEXT2,
        ep_type: sys::FI_EP_RDM,
        provider: cfg.provider.clone(),
        domain: cfg.domain.clone(),
        node: None,
        mr_mode: MR_MODES,
        threading: sys::FI_THREAD_DOMAIN,
        av_type: sys::FI_AV_TABLE,
        tx_msg_order: sys::FI_ORDER_SAS | if saw { sys::FI_ORDER_SAW } else { 0 },
        rx_msg_order: sys::FI_ORDER_SAS,
        tx_op_flags: if dc { sys::FI_DELIVERY_COMPLETE } else { 0 },
        data_progress: if manual {
            sys::FI_PROGRESS_MANUAL
        } else {
            sys::FI_PROGRESS_UNSPEC
        },
        tx_size: 0,
        rx_size: geo.n_recv,
    }
}

/// Ask for the best offer first: atomics, then send-after-write ordering,
/// then delivery-complete, then manual data progress; drop wishes (the
/// last first) until a provider answers.
///
/// Manual progress: the conduit drives progress itself (every poll reads
/// the CQ, and the [`ticker`](crate::ticker) does when nobody polls), so a
/// provider's own progress thread only competes with the polling threads
/// for the CPU. With the sockets provider's default `FI_PROGRESS_AUTO`,
/// its progress thread is the only thing that moves data (`fi_cq_read`
/// merely reads what that thread queued), and on a node with more busy
/// threads than cores every message waited for that thread to be
/// scheduled, twice per round trip. On a loaded 2-core host that was
/// about 200 Short round trips a second against about 19,000 with manual
/// progress (`ofi_check` reports the rate), so the AM-carried atomics
/// conformance test, a long chain of round trips, looked hung, and floods
/// ran at a sixth to a tenth of tcp;ofi_rxm's rate. Providers that cannot
/// progress manually answer the hint-less retry.
fn choose(cfg: &OfiConfig, geo: &Geometry) -> std::result::Result<Info, FiError> {
    let mut first_err = None;
    for atomic in [true, false] {
        for saw in [true, false] {
            for dc in [true, false] {
                for manual in [true, false] {
                    match Info::get(&hints_for(cfg, geo, atomic, saw, dc, manual)) {
                        Ok(i) => return Ok(i),
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
            }
        }
    }
    Err(first_err.expect("at least one attempt"))
}

impl Net {
    /// Open everything and register the segment, the send and the receive
    /// buffers. Local only: the exchange with peers is [`connect`](Self::connect).
    pub fn open(cfg: &OfiConfig, geo: Geometry, seg: &Segment) -> Result<(Self, Vec<u8>)> {
        let mut info = choose(cfg, &geo)?;
        let prov = Provider {
            name: info.provider().into(),
            domain: info.domain_name(),
            caps: info.caps(),
            mr_mode: info.mr_mode(),
            tx_order: info.tx_msg_order(),
            delivery_complete: info.tx_op_flags() & sys::FI_DELIVERY_COMPLETE != 0,
            put_completion: if info.tx_op_flags() & sys::FI_DELIVERY_COMPLETE == 0 {
                PutCompletion::ReadBack
            } else {
                cfg.put_completion
                    .unwrap_or_else(|| PutCompletion::default_for(&info.provider()))
            },
            max_msg: info.max_msg_size().max(4096),
            inject_size: info.inject_size().min(cfg.inject.unwrap_or(usize::MAX)),
            threading: info.threading(),
            data_progress: info.data_progress(),
        };
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
        // SAFETY: the segment is smp's shared mapping, which outlives the
        // conduit (the conduit owns the SmpConduit and drops Net first).
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
        let send_mem = Buffer::new(geo.n_send() * geo.slot + 64);
        let recv_mem = Buffer::new(geo.n_recv * geo.slot);
        // SAFETY: both buffers are fields of Net declared after the
        // regions, so they are freed after the regions are closed.
        let send_mr = unsafe {
            MemoryRegion::register(&domain, send_mem.ptr(), send_mem.len(), local, 2, bind)
        }?;
        // SAFETY: as above.
        let recv_mr = unsafe {
            MemoryRegion::register(&domain, recv_mem.ptr(), recv_mem.len(), local, 3, bind)
        }?;
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
        Ok((
            Net {
                seg_mr,
                send_mr,
                recv_mr,
                ep,
                prov,
                geo,
                peers: Vec::new(),
                ctx,
                send_mem,
                recv_mem,
            },
            card,
        ))
    }

    /// Fill the peer table from every rank's card (in rank order).
    pub fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()> {
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

    /// Where `offset` of `peer`'s segment is, for RMA.
    #[inline]
    pub fn remote(&self, peer: usize, offset: u64) -> Remote {
        let p = &self.peers[peer];
        Remote {
            addr: p.addr,
            raddr: p.base.wrapping_add(offset),
            key: p.key,
        }
    }

    /// The context pointer of operation `id`.
    #[inline]
    pub fn ctx(&self, id: usize) -> *mut std::ffi::c_void {
        self.ctx[id].get().cast()
    }

    /// The operation a context pointer names (`None` if it is not ours).
    #[inline]
    pub fn op_of(&self, ctx: *mut std::ffi::c_void) -> Option<usize> {
        let base = self.ctx.as_ptr() as usize;
        let size = std::mem::size_of::<sys::fi_context2>();
        let off = (ctx as usize).checked_sub(base)?;
        let id = off / size;
        (id * size == off && id < self.ctx.len()).then_some(id)
    }

    /// Send buffer `slot`.
    #[inline]
    pub fn send_buf(&self, slot: usize) -> *mut u8 {
        // SAFETY: slot < n_send, so the offset stays inside send_mem.
        unsafe { self.send_mem.ptr().add(slot * self.geo.slot) }
    }

    /// A scratch area (64 bytes) after the send buffers, for the 1-byte
    /// reads that confirm remote completion.
    #[inline]
    pub fn scratch(&self) -> *mut u8 {
        // SAFETY: send_mem has 64 bytes past the last slot.
        unsafe { self.send_mem.ptr().add(self.geo.n_send() * self.geo.slot) }
    }

    /// Receive buffer `i`.
    #[inline]
    pub fn recv_buf(&self, i: usize) -> *mut u8 {
        // SAFETY: i < n_recv, so the offset stays inside recv_mem.
        unsafe { self.recv_mem.ptr().add(i * self.geo.slot) }
    }

    /// Descriptor for a local buffer in registered region `mr`, or null
    /// when the provider does not need one.
    #[inline]
    pub fn desc(&self, mr: &MemoryRegion) -> *mut std::ffi::c_void {
        if self.prov.mr_local() {
            mr.desc()
        } else {
            std::ptr::null_mut()
        }
    }
}

/// Exchange every rank's card through the bootstrap, each rank reporting
/// success or its error so no rank waits for one that failed.
pub(crate) fn exchange(
    boot: &dyn Bootstrap,
    mine: std::result::Result<&[u8], String>,
) -> Result<Vec<Vec<u8>>> {
    let msg = match mine {
        Ok(card) => [&[0u8][..], card].concat(),
        Err(e) => [&[1u8][..], e.as_bytes()].concat(),
    };
    let all = boot.allgather(&msg)?;
    let mut cards = Vec::with_capacity(all.len());
    for (r, m) in all.into_iter().enumerate() {
        match m.split_first() {
            Some((0, rest)) => cards.push(rest.to_vec()),
            _ => {
                return Err(Error::Bootstrap(format!(
                    "rank {r} could not open its libfabric endpoint: {}",
                    String::from_utf8_lossy(m.get(1..).unwrap_or_default())
                )))
            }
        }
    }
    Ok(cards)
}
