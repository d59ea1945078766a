//! Segments over client memory (GASNet-EX's `gex_Segment_Create` over
//! client memory, OpenSHMEM's symmetric static data): memory the client
//! owns, registered collectively, that peers reach by put, get and atomics
//! as they reach the primordial segment.
//!
//! **Addresses.** Client segment `k` (1, 2, ... in registration order, the
//! same on every rank) owns the offsets `k * CLIENT_SEGMENT_STRIDE ..` of
//! every rank's address space: [`ClientSegment::addr`] makes a
//! [`GlobalAddr`] into it, and every RMA and atomic entry point takes it.
//! The primordial segment keeps offsets below the stride, so its one-compare
//! range check is unchanged; only an address it refuses is looked up here
//! (out of line).
//!
//! **How it is reached** ([`ClientPath`], chosen per peer at
//! registration, which exchanges every rank's length, address, process id
//! and the conduit's card for the memory; [`ClientSegment::path`] says):
//! - this rank's own registration: a copy;
//! - a node-local peer's (its primordial segment mapped here: smp, or a
//!   network conduit with the bypass on): cross-memory attach
//!   ([`rgex_core::cma`]: `process_vm_writev`/`readv` into its process),
//!   for puts and gets of at least [`CMA_MIN`] bytes, after a one-byte
//!   probe read at registration; where the kernel refuses (Yama's
//!   `ptrace_scope` 2 or 3, seccomp, a container's policy) the reference,
//!   said once as a `tracing` warning;
//! - a remote peer's, where the conduit registered the memory with the
//!   network ([`Conduit::register_client_segment`](rgex_core::Conduit::register_client_segment):
//!   ofi's `fi_mr_reg`, ibv's `ibv_reg_mr`): the conduit's RMA, its
//!   `try_put`/`try_get` at the segment's offsets;
//! - otherwise (`RGEX_RMA=reference`, a conduit that does not register):
//!   rgex's active-message reference: the target's handler copies, after
//!   checking the range against what it registered.
//!
//! Atomics and VIS take the active-message reference on every path (the
//! target applies the atomic, or unpacks the VIS fragments).
//!
//! **Deregistration** ([`ClientSegment::deregister`]) is collective and
//! never lets a write reach memory handed back. Handlers, copies and
//! cross-memory attach writers work, and native operations are posted,
//! under their own rank's table read lock. Each rank first closes its
//! entry under the write lock, which waits for them; from then on
//! operations it starts on the segment are refused before anything is
//! sent, naming the rank and the segment. It then waits for its native
//! operations on the segment to finish, meets the others in a barrier,
//! closes the conduit's registration and hands the memory back. What an
//! operation issued after its *target* closed (but before its initiator
//! did) meets depends on the path: by active messages the target refuses
//! it and it fails at the initiator, naming both; by cross-memory attach
//! or RDMA it lands, since the memory (and its registration) stay the
//! target's until that barrier, which the initiator reaches only after
//! its own close.

mod direct;

pub(crate) use direct::Local;
pub use direct::{ClientPath, CMA_MIN, CMA_MIN_WHY};

use crate::Endpoint;
use direct::Peer;
use parking_lot::RwLock;
use rgex_core::{Error, GlobalAddr, Rank, Result};
use std::sync::Arc;

pub use rgex_core::segment::CLIENT_SEGMENT_STRIDE;

/// The memory behind a registration.
enum Memory {
    /// A buffer rgex holds until deregistration hands it back.
    Owned(Vec<u8>),
    /// Memory the client keeps valid until deregistration returns.
    Raw,
}

/// One registration, as this rank sees it.
struct Entry {
    /// This rank's memory.
    base: *mut u8,
    /// Its length.
    len: u64,
    /// Every rank's registration as exchanged (the initiator's range
    /// check, and the direct path to it).
    peers: Box<[Peer]>,
    memory: Memory,
    /// Closed by deregistration: refused both ways.
    open: bool,
    /// The completion counters of native operations this rank started on
    /// it (deregistration waits for them before the conduit closes its
    /// registration).
    inflight: parking_lot::Mutex<Vec<Arc<rgex_core::OpCounter>>>,
}

/// Every client segment of this endpoint, indexed by `k - 1`.
#[derive(Default)]
pub(crate) struct ClientSegments {
    table: RwLock<Vec<Entry>>,
}

// SAFETY: `base` points at memory the entry owns (`Memory::Owned`) or the
// client keeps valid until deregistration (`register_segment_raw`'s
// contract); it is read and written only under the table's lock, by range-
// checked copies and atomics, as remotely accessible memory is.
unsafe impl Send for ClientSegments {}
// SAFETY: as above.
unsafe impl Sync for ClientSegments {}

/// The segment an offset belongs to: `Some(k)` for a client segment.
pub(crate) use rgex_core::segment::client_segment_of as segment_of;

impl ClientSegments {
    /// Check `[offset, +len)` against `rank`'s registration of the client
    /// segment `offset` lies in: `Ok(true)` if it is one and the range
    /// fits, an error naming the rank, the range and the limit if it does
    /// not or the segment is deregistered, `Ok(false)` if `offset` is no
    /// registered client segment's (the caller's error for the primordial
    /// segment then says it best).
    pub(crate) fn check_remote(&self, rank: Rank, offset: u64, len: usize) -> Result<bool> {
        let Some(k) = segment_of(offset) else {
            return Ok(false);
        };
        let table = self.table.read();
        let Some(entry) = table.get(k - 1) else {
            return Ok(false);
        };
        if !entry.open {
            return Err(closed(rank, offset, k));
        }
        let limit = entry.peers.get(rank.index()).map_or(0, |p| p.len);
        check_in(rank, offset, len, k, limit)?;
        Ok(true)
    }

    /// Run `f` on this rank's bytes `[offset, +len)` of a client segment,
    /// under the read lock (deregistration waits for it). The error says
    /// why not: no such segment, closed, or out of range (named from
    /// `me`'s side: the initiator adds its own context).
    pub(crate) fn with_local<R>(
        &self,
        me: Rank,
        offset: u64,
        len: usize,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R> {
        let k = segment_of(offset).ok_or_else(|| no_such(me, offset, 0))?;
        // Recursive: a handler's reply may poll while this is held, and a
        // waiting deregistration must not block a second read meanwhile.
        let table = self.table.read_recursive();
        let entry = table.get(k - 1).ok_or_else(|| no_such(me, offset, k))?;
        if !entry.open {
            return Err(closed(me, offset, k));
        }
        check_in(me, offset, len, k, entry.len)?;
        let at = offset - k as u64 * CLIENT_SEGMENT_STRIDE;
        // `wrapping_add`: inside the entry's memory (checked just above).
        Ok(f(entry.base.wrapping_add(at as usize)))
    }
}

fn check_in(rank: Rank, offset: u64, len: usize, k: usize, limit: u64) -> Result<()> {
    let base = k as u64 * CLIENT_SEGMENT_STRIDE;
    if u128::from(offset - base) + len as u128 > u128::from(limit) {
        return Err(Error::OutOfClientSegment {
            rank,
            offset,
            len: len as u64,
            segment: k,
            base,
            limit,
        });
    }
    Ok(())
}

#[cold]
fn no_such(rank: Rank, offset: u64, k: usize) -> Error {
    Error::SegmentUnavailable {
        rank,
        offset,
        segment: k,
        why: "was never registered (client segments are numbered from 1, in registration order; \
              the primordial segment's offsets are below 1 << 40)",
    }
}

#[cold]
fn closed(rank: Rank, offset: u64, k: usize) -> Error {
    Error::SegmentUnavailable {
        rank,
        offset,
        segment: k,
        why: "is deregistered",
    }
}

/// A registered client segment (see the [module docs](self)): its handle
/// on this rank. Made by [`Endpoint::register_segment`] or
/// [`register_segment_raw`](Endpoint::register_segment_raw); ended by
/// [`deregister`](Self::deregister), collectively. Dropping it leaves the
/// segment registered for the rest of the job (its memory is then never
/// handed back).
///
/// ```no_run
/// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
/// use rgex_core::{Flags, Rank};
/// let ep = client.endpoint();
/// let seg = ep.register_segment(client.world(), vec![0u8; 4096])?;
/// let right = Rank((client.rank().0 + 1) % client.size());
/// ep.put(seg.addr(right, 64), b"hello", Flags::empty())?;
/// client.barrier()?;
/// let mine = seg.deregister(client.world())?.expect("a Vec was registered");
/// # let _ = mine; Ok(()) }
/// ```
#[derive(Debug)]
pub struct ClientSegment {
    ep: Arc<Endpoint>,
    k: usize,
    lens: Arc<[u64]>,
}

impl ClientSegment {
    /// Its number: 1 for the first registered, the same on every rank.
    pub fn id(&self) -> usize {
        self.k
    }

    /// The offset it starts at in every rank's address space.
    pub fn base(&self) -> u64 {
        self.k as u64 * CLIENT_SEGMENT_STRIDE
    }

    /// The address of byte `offset` of `rank`'s registration (checked
    /// when an operation uses it, as every address is).
    pub fn addr(&self, rank: Rank, offset: u64) -> GlobalAddr {
        GlobalAddr::new(rank, self.base() + offset)
    }

    /// How many bytes `rank` registered (0 for a rank out of range).
    pub fn len(&self, rank: Rank) -> u64 {
        self.lens.get(rank.index()).copied().unwrap_or(0)
    }

    /// True if `rank` registered no bytes.
    pub fn is_empty(&self, rank: Rank) -> bool {
        self.len(rank) == 0
    }

    /// How this rank's puts and gets of at least [`CMA_MIN`] bytes reach
    /// `peer`'s registration (chosen when it was registered; the
    /// reference for a rank out of range).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client, seg: &rgex_endpoint::ClientSegment) {
    /// use rgex_endpoint::ClientPath;
    /// assert_eq!(seg.path(client.rank()), ClientPath::Local);
    /// # }
    /// ```
    pub fn path(&self, peer: Rank) -> ClientPath {
        self.ep.client_segments().path(self.k, peer)
    }

    /// Deregister, collectively over `world` (every rank of the job calls
    /// it, in the same order as the other registrations): close it here
    /// (this rank's later operations on it are refused), wait for this
    /// rank's RDMA on it, wait for the others, close the conduit's
    /// registration, hand the memory back (see the [module
    /// docs](self) for what a peer's operation meets meanwhile). Returns
    /// the `Vec` that
    /// [`register_segment`](Endpoint::register_segment) took, `None` for
    /// raw memory (the client may free it on return).
    pub fn deregister(self, world: &crate::Team) -> Result<Option<Vec<u8>>> {
        let (memory, inflight) = {
            let mut table = self.ep.client_segments().table.write();
            let entry = &mut table[self.k - 1];
            entry.open = false;
            let inflight = std::mem::take(entry.inflight.get_mut());
            (std::mem::replace(&mut entry.memory, Memory::Raw), inflight)
        };
        // No handler, copy or cross-memory attach of this rank's is in it
        // now (the write lock waited for them) and none starts; this
        // rank's RDMA on it finishes (failed or not: its owner learns).
        for c in inflight {
            rgex_core::Event::pending(c, self.ep.progress_handle()).wait_unchecked();
        }
        // Every rank has closed its entry, and finished its own
        // operations on the segment, once this returns: nothing is in
        // flight into this rank's memory.
        world.barrier()?;
        self.ep.conduit().close_client_segment(self.k);
        Ok(match memory {
            Memory::Owned(v) => Some(v),
            Memory::Raw => None,
        })
    }
}

impl Endpoint {
    /// Whether `[offset, +len)` at `rank` lies in a client segment `rank`
    /// registered (`Ok(true)`; the layers above route such an operation
    /// to their active-message reference), in none (`Ok(false)`: the
    /// primordial segment's check says why not), or is refused: outside
    /// what `rank` registered, or deregistered, naming both.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, seg: &rgex_endpoint::ClientSegment) {
    /// use rgex_core::Rank;
    /// let at = seg.addr(Rank(1), 0);
    /// assert!(ep.check_client_range(at.rank, at.offset, 8).unwrap());
    /// assert!(!ep.check_client_range(Rank(1), 0, 8).unwrap());
    /// # }
    /// ```
    pub fn check_client_range(&self, rank: Rank, offset: u64, len: usize) -> Result<bool> {
        self.client_segments().check_remote(rank, offset, len)
    }

    /// Run `f` on this rank's bytes `[offset, +len)` of a client segment,
    /// which stays registered meanwhile (deregistration waits): for the
    /// protocol handlers of the layers above, which apply what a peer
    /// asked. An error if there is no such open segment or range here.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, seg: &rgex_endpoint::ClientSegment) -> rgex_core::Result<()> {
    /// let at = seg.addr(ep.rank(), 16);
    /// // SAFETY: 8 bytes inside this rank's registration (checked).
    /// let word = ep.with_client_memory(at.offset, 8, |p| unsafe { p.cast::<u64>().read_unaligned() })?;
    /// # let _ = word; Ok(()) }
    /// ```
    pub fn with_client_memory<R>(
        &self,
        offset: u64,
        len: usize,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R> {
        self.client_segments()
            .with_local(self.rank(), offset, len, f)
    }

    /// Where the client segment holding `offset` ends in `rank`'s address
    /// space (its base plus what `rank` registered), if one is registered
    /// and open: the limit a multi-fragment transfer (VIS) into it is
    /// validated against before the target checks each fragment again.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, seg: &rgex_endpoint::ClientSegment) {
    /// use rgex_core::Rank;
    /// assert_eq!(ep.client_segment_end(Rank(1), seg.base()), Some(seg.base() + seg.len(Rank(1))));
    /// # }
    /// ```
    pub fn client_segment_end(&self, rank: Rank, offset: u64) -> Option<u64> {
        let k = segment_of(offset)?;
        let table = self.client_segments().table.read();
        let entry = table.get(k - 1).filter(|e| e.open)?;
        Some(k as u64 * CLIENT_SEGMENT_STRIDE + entry.peers.get(rank.index())?.len)
    }

    /// Run `f` on this rank's registration of the client segment holding
    /// `offset`, as a [`Segment`](rgex_core::Segment) over the client's
    /// memory, with the offset it starts at (subtract it from an address
    /// to index the view). It stays registered meanwhile. An error if no
    /// such segment is open here.
    ///
    /// # Safety
    /// `f` must not keep the view, or a copy of it, past its return: the
    /// memory may be handed back to the client after.
    ///
    /// ```no_run
    /// # fn demo(ep: &rgex_endpoint::Endpoint, seg: &rgex_endpoint::ClientSegment) -> rgex_core::Result<()> {
    /// let at = seg.addr(ep.rank(), 8);
    /// // SAFETY: the view is used inside the closure only.
    /// let word = unsafe { ep.with_client_segment(at.offset, |view, base| view.read_u64(at.offset - base)) }??;
    /// # let _ = word; Ok(()) }
    /// ```
    pub unsafe fn with_client_segment<R>(
        &self,
        offset: u64,
        f: impl FnOnce(&rgex_core::Segment, u64) -> R,
    ) -> Result<R> {
        let me = self.rank();
        let k = segment_of(offset).ok_or_else(|| no_such(me, offset, 0))?;
        // Recursive: as in `with_local`.
        let table = self.client_segments().table.read_recursive();
        let entry = table.get(k - 1).ok_or_else(|| no_such(me, offset, k))?;
        if !entry.open {
            return Err(closed(me, offset, k));
        }
        let base = std::ptr::NonNull::new(entry.base).unwrap_or(std::ptr::NonNull::dangling());
        // SAFETY: `base..base+len` is this rank's registration, valid while
        // the entry is open, which the read lock held across `f` keeps it.
        let view = unsafe { rgex_core::Segment::from_raw(me, base, entry.len as usize) };
        Ok(f(&view, k as u64 * CLIENT_SEGMENT_STRIDE))
    }

    /// Register `memory` as a client segment, collectively over `world`
    /// (the job's world team; every rank calls it, in the same order; each
    /// rank's buffer may have its own length). Peers reach it by put, get
    /// and atomics at [`ClientSegment::addr`]; rgex holds the buffer until
    /// [`deregister`](ClientSegment::deregister) hands it back.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let seg = client.endpoint().register_segment(client.world(), vec![0u8; 1 << 16])?;
    /// assert_eq!(seg.len(client.rank()), 1 << 16);
    /// # Ok(()) }
    /// ```
    pub fn register_segment(
        self: &Arc<Self>,
        world: &crate::Team,
        mut memory: Vec<u8>,
    ) -> Result<ClientSegment> {
        let (ptr, len) = (memory.as_mut_ptr(), memory.len());
        self.register(world, ptr, len, Memory::Owned(memory))
    }

    /// Register `len` bytes at `ptr` (a page-aligned allocation, the
    /// executable's data and bss, any memory the client keeps) as a client
    /// segment, as [`register_segment`](Self::register_segment) does.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes until
    /// [`deregister`](ClientSegment::deregister) returns (for ever if the
    /// handle is dropped), and the client must not access it in ways that
    /// race with peers' operations (as with the primordial segment).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// static mut TABLE: [u64; 512] = [0; 512];
    /// // SAFETY: a static lives for the program; it is accessed only
    /// // through rgex while registered.
    /// let seg = unsafe {
    ///     client.endpoint().register_segment_raw(
    ///         client.world(),
    ///         std::ptr::addr_of_mut!(TABLE).cast(),
    ///         std::mem::size_of::<[u64; 512]>(),
    ///     )?
    /// };
    /// # let _ = seg; Ok(()) }
    /// ```
    pub unsafe fn register_segment_raw(
        self: &Arc<Self>,
        world: &crate::Team,
        ptr: *mut u8,
        len: usize,
    ) -> Result<ClientSegment> {
        self.register(world, ptr, len, Memory::Raw)
    }

    fn register(
        self: &Arc<Self>,
        world: &crate::Team,
        ptr: *mut u8,
        len: usize,
        memory: Memory,
    ) -> Result<ClientSegment> {
        if world.size() != self.size() {
            return Err(Error::Config(format!(
                "rank {}: a client segment is registered over the world team ({} ranks), not a \
                 team of {}",
                self.rank().0,
                self.size(),
                world.size()
            )));
        }
        let primordial = self.segment().len() as u64;
        if primordial >= CLIENT_SEGMENT_STRIDE {
            return Err(Error::Config(format!(
                "rank {}: the primordial segment ({primordial} bytes) reaches the client \
                 segments' offsets ({CLIENT_SEGMENT_STRIDE:#x})",
                self.rank().0
            )));
        }
        if len as u64 >= CLIENT_SEGMENT_STRIDE {
            return Err(Error::Config(format!(
                "rank {}: a client segment of {len} bytes exceeds the {CLIENT_SEGMENT_STRIDE} \
                 bytes each may have",
                self.rank().0
            )));
        }
        // Attachable before any peer's probe (after the exchange).
        direct::prepare();
        // Everyone arrives polling (peers' operations still in flight are
        // answered) before the bootstrap's exchange, which does not poll.
        world.barrier()?;
        // Registrations are collective and in order: the next number.
        let k = self.client_segments().table.read().len() + 1;
        // SAFETY: the memory stays valid until deregistration, which
        // closes the conduit's registration before handing it back (the
        // callers' contracts: a Vec rgex holds, or the raw contract).
        let net = match unsafe { self.conduit().register_client_segment(k, ptr, len) } {
            Ok(card) => card,
            Err(e) => {
                tracing::warn!(
                    rank = self.rank().0,
                    "client segment {k}: the {} conduit could not register it with the network, \
                     so peers reach it by active messages: {e}",
                    self.conduit().name()
                );
                None
            }
        };
        let all = self
            .conduit()
            .bootstrap()
            .allgather(&direct::card(ptr, len, net.as_deref()))?;
        let cards: Vec<Option<Vec<u8>>> = all.iter().map(|c| direct::net_card(c)).collect();
        let native = self.conduit().connect_client_segment(k, &cards)?;
        let peers = direct::peers(self, &all, &native)?;
        let lens: Arc<[u64]> = peers.iter().map(|p| p.len).collect();
        {
            let mut table = self.client_segments().table.write();
            table.push(Entry {
                base: ptr,
                len: len as u64,
                peers,
                memory,
                open: true,
                inflight: Default::default(),
            });
            debug_assert_eq!(table.len(), k);
        }
        // Every rank has its entry before any peer may use the segment.
        world.barrier()?;
        Ok(ClientSegment {
            ep: self.clone(),
            k,
            lens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_below_the_stride_are_the_primordial_segments() {
        assert_eq!(segment_of(0), None);
        assert_eq!(segment_of(CLIENT_SEGMENT_STRIDE - 1), None);
        assert_eq!(segment_of(CLIENT_SEGMENT_STRIDE), Some(1));
        assert_eq!(segment_of(3 * CLIENT_SEGMENT_STRIDE + 7), Some(3));
    }

    #[test]
    fn ranges_are_checked_against_each_ranks_registration() {
        let segs = ClientSegments::default();
        let mut mem = vec![0u8; 64];
        segs.table.write().push(Entry {
            base: mem.as_mut_ptr(),
            len: 64,
            peers: [64, 16]
                .map(|len| Peer {
                    len,
                    addr: 0,
                    pid: 0,
                    path: ClientPath::Reference,
                })
                .into(),
            memory: Memory::Raw,
            open: true,
            inflight: Default::default(),
        });
        let b = CLIENT_SEGMENT_STRIDE;
        assert!(segs.check_remote(Rank(0), b + 56, 8).unwrap());
        assert!(!segs.check_remote(Rank(0), 8, 8).unwrap());
        let e = segs
            .check_remote(Rank(1), b + 12, 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rank 1") && e.contains("0x10 bytes"), "{e}");
        assert!(!segs.check_remote(Rank(0), 2 * b, 1).unwrap());
        let e = segs
            .with_local(Rank(0), 2 * b, 1, |_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("never registered"), "{e}");
        let got = segs
            .with_local(Rank(0), b + 4, 4, |p| {
                // SAFETY: inside `mem` (checked by `with_local`).
                unsafe { p.write(9) };
                7
            })
            .unwrap();
        assert_eq!((got, mem[4]), (7, 9));
        segs.table.write()[0].open = false;
        let e = segs
            .with_local(Rank(0), b, 1, |_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("deregistered"), "{e}");
    }
}
