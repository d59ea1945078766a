//! The network side, immutable after setup: the transport and the
//! registered send and receive buffers it works on (the mutable state
//! lives in [`State`](crate::state::State), under the conduit's lock).

use crate::geometry::Geometry;
use crate::transport::{Area, Setup, Transport};
use rgex_core::{Rank, Result, Segment};
use std::cell::UnsafeCell;

/// Memory the network may touch: 64-byte aligned, zeroed, fixed in place.
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
    fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }
    fn len(&self) -> usize {
        self.mem.len() * 64
    }
}

/// The transport and its buffers. Fields drop in order: the transport
/// (its registrations, its endpoint) before the memory it used.
pub struct Net<T: Transport> {
    /// The network.
    pub transport: T,
    /// Buffer sizes and counts.
    pub geo: Geometry,
    /// Descriptors of the registered areas (0 where none is needed).
    pub(crate) send_desc: usize,
    pub(crate) recv_desc: usize,
    pub(crate) seg_desc: usize,
    /// The segment's range (start, length): what `seg_desc` covers.
    seg: (usize, usize),
    send_mem: Buffer,
    recv_mem: Buffer,
}

// SAFETY: the buffers are only touched by the network for operations we
// posted and by us under the State lock or for slots we own exclusively
// (see State); the transport is Send + Sync.
unsafe impl<T: Transport> Send for Net<T> {}
// SAFETY: as above.
unsafe impl<T: Transport> Sync for Net<T> {}

impl<T: Transport> Net<T> {
    /// Allocate the buffers and open the transport on them and `seg`.
    /// Local only: [`connect`](Self::connect) reads the peers' cards.
    pub(crate) fn open(
        cfg: &T::Config,
        geo: Geometry,
        rank: Rank,
        seg: &Segment,
    ) -> Result<(Self, Vec<u8>)> {
        let send_mem = Buffer::new(geo.n_send() * geo.slot + 64);
        let recv_mem = Buffer::new(geo.n_recv * geo.slot);
        let setup = Setup {
            rank,
            geo: &geo,
            segment: seg,
            send: (send_mem.ptr(), send_mem.len()),
            recv: (recv_mem.ptr(), recv_mem.len()),
        };
        // SAFETY: both buffers become fields of Net declared after the
        // transport, so they are freed after it; the segment is smp's
        // mapping, which the conduit drops after Net.
        let (transport, card) = unsafe { T::open(cfg, &setup) }?;
        Ok((
            Net {
                send_desc: transport.desc(Area::Send),
                recv_desc: transport.desc(Area::Recv),
                seg_desc: transport.desc(Area::Segment),
                seg: (seg.as_ptr() as usize, seg.len()),
                transport,
                geo,
                send_mem,
                recv_mem,
            },
            card,
        ))
    }

    /// Learn every rank's card (in rank order).
    pub(crate) fn connect(&mut self, cards: &[Vec<u8>]) -> Result<()> {
        self.transport.connect(cards)
    }

    /// True if `p .. p + len` lies in this rank's segment.
    #[inline]
    pub(crate) fn in_segment(&self, p: *const u8, len: usize) -> bool {
        let ((b, n), p) = (self.seg, p as usize);
        p >= b && p.checked_add(len).is_some_and(|end| end <= b + n)
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
    pub(crate) fn scratch(&self) -> *mut u8 {
        // SAFETY: send_mem has 64 bytes past the last slot.
        unsafe { self.send_mem.ptr().add(self.geo.n_send() * self.geo.slot) }
    }

    /// Receive buffer `i`.
    #[inline]
    pub fn recv_buf(&self, i: usize) -> *mut u8 {
        // SAFETY: i < n_recv, so the offset stays inside recv_mem.
        unsafe { self.recv_mem.ptr().add(i * self.geo.slot) }
    }
}
