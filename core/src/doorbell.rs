//! Mapped send queues: a conduit whose outgoing message slots are cells of
//! plain memory (smp's cells in the receiver's region) says so once per
//! peer with a [`MappedQueue`], and the protocol layer then publishes each
//! message itself through the claimed cell's [`Doorbell`] (write the
//! [`Header`], advance the turn word) instead of making a second call into
//! the conduit. A negotiated-payload send is then one conduit call, like a
//! fixed-payload one.

use crate::wire::Kind;
use crate::{Rank, MAX_ARGS};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// The fixed part of a message as it sits in a mapped queue slot: written
/// by the sender between claim and publish, read by the receiver in place.
///
/// ```
/// use rgex_core::doorbell::Header;
/// // One cache line holds the turn word, the header's fixed fields and the
/// // first eight arguments.
/// assert_eq!(std::mem::offset_of!(Header, args), 24);
/// assert_eq!(std::mem::size_of::<Header>(), 24 + 4 * rgex_core::MAX_ARGS);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    /// Handler index.
    pub handler: u8,
    /// Category and direction; the conduit may mark it (smp marks a
    /// cancelled message, which the receiver skips).
    pub kind: Kind,
    /// Arguments used in `args`.
    pub nargs: u8,
    _pad: u8,
    /// Sending rank.
    pub src: u32,
    /// Payload length.
    pub len: u32,
    _pad2: u32,
    /// Long: offset in the receiver's segment.
    pub long_offset: u64,
    /// The arguments.
    pub args: [u32; MAX_ARGS],
}

impl Header {
    /// Fill in every field of a message (the arguments beyond `args.len()`
    /// are left as they were: the receiver reads `nargs` of them).
    ///
    /// ```
    /// use rgex_core::doorbell::Header;
    /// use rgex_core::wire::Kind;
    /// use rgex_core::{Category, Direction, Rank};
    /// let mut h = Header::default();
    /// h.write(Rank(3), Kind::new(Category::Medium, Direction::Request), 9, &[1, 2, 3, 4, 5], 100, 0);
    /// assert_eq!((h.src, h.handler, h.nargs, h.len), (3, 9, 5, 100));
    /// assert_eq!(h.args[..5], [1, 2, 3, 4, 5]);
    /// ```
    #[inline(always)]
    pub fn write(
        &mut self,
        src: Rank,
        kind: Kind,
        handler: u8,
        args: &[u32],
        len: usize,
        long_offset: u64,
    ) {
        self.handler = handler;
        self.kind = kind;
        self.nargs = args.len() as u8;
        self.src = src.0;
        self.len = len as u32;
        self.long_offset = long_offset;
        copy_args(&mut self.args, args);
    }
}

/// Copy up to [`MAX_ARGS`] words without a library call.
#[inline(always)]
fn copy_args(dst: &mut [u32; MAX_ARGS], src: &[u32]) {
    let mut blocks = src.chunks_exact(4);
    let mut at = 0;
    for b in &mut blocks {
        dst[at..at + 4].copy_from_slice(b);
        at += 4;
    }
    // The last 0-3 words, spelled out: a loop here gets vectorised into
    // more set-up than the copy itself.
    match *blocks.remainder() {
        [] => {}
        [a] => dst[at] = a,
        [a, b] => dst[at..at + 2].copy_from_slice(&[a, b]),
        [a, b, c, ..] => dst[at..at + 3].copy_from_slice(&[a, b, c]),
    }
}

/// One slot of a mapped queue, as the sender sees it: a turn word, then
/// the [`Header`]. A conduit's own cell may carry more after these (smp's
/// is padded to two cache lines), as long as it starts with this layout.
#[repr(C)]
#[derive(Debug, Default)]
pub struct MappedCell {
    /// Whose turn it is. Publishing a claimed cell advances it by one.
    pub turn: AtomicU64,
    /// The message header, written by the claimer before publishing.
    pub header: UnsafeCell<Header>,
}

/// A conduit's word that every claim it makes to one peer is a
/// [`MappedCell`]: the claim's ticket is the cell's address, and the cell
/// is published by writing its header, then storing its turn word plus one
/// with Release ([`Doorbell::ring`]). The protocol layer asks once per peer
/// ([`Conduit::mapped_queue`](crate::Conduit::mapped_queue)) and then
/// publishes negotiated-payload messages without a second call into the
/// conduit.
#[derive(Clone, Copy, Debug)]
pub struct MappedQueue(());

impl MappedQueue {
    /// The conduit's word for one peer.
    ///
    /// # Safety
    /// Every claim the conduit hands out for that peer must have as ticket
    /// the address of a [`MappedCell`] that stays valid while claimed and
    /// whose header the claimer alone writes until publishing it; while
    /// claimed, its turn word must not change, and storing that value plus
    /// one (Release) must be exactly what publishes the message under the
    /// conduit's queue protocol. The conduit's `commit` and `cancel` must
    /// accept such a claim too (`cancel` is never replaced by a doorbell).
    #[inline]
    pub unsafe fn vouch() -> Self {
        MappedQueue(())
    }

    /// The doorbell of a claim made to this queue's peer, from its
    /// [`ticket`](crate::wire::Claim::ticket).
    ///
    /// # Safety
    /// `ticket` is that of a claim the conduit made to this queue's peer,
    /// neither committed, cancelled nor rung; the doorbell is then rung at
    /// most once and the claim not used otherwise.
    #[inline(always)]
    pub unsafe fn doorbell(self, ticket: u64) -> Doorbell {
        // SAFETY: the conduit vouched (in `vouch`) that this peer's tickets
        // are addresses of valid cells, and the caller that this one is
        // claimed and ours.
        let cell = unsafe { NonNull::new_unchecked(ticket as *mut MappedCell) };
        Doorbell { cell }
    }
}

/// The right to publish one claimed [`MappedCell`]: ringing it writes the
/// header and advances the turn word, which makes the message visible to
/// the receiver.
///
/// ```
/// use rgex_core::doorbell::{Doorbell, MappedCell};
/// use rgex_core::wire::Kind;
/// use rgex_core::{Category, Direction, Rank};
/// use std::sync::atomic::Ordering;
/// let cell = MappedCell::default();
/// // SAFETY: the cell outlives the ring below and nobody else touches it.
/// let bell = unsafe { Doorbell::new(&cell) };
/// bell.ring(Rank(0), Kind::new(Category::Short, Direction::Request), 7, &[42], 0, 0);
/// assert_eq!(cell.turn.load(Ordering::Acquire), 1);
/// // SAFETY: published; nothing writes the header any more.
/// let h = unsafe { &*cell.header.get() };
/// assert_eq!((h.handler, h.args[0]), (7, 42));
/// ```
#[derive(Debug)]
pub struct Doorbell {
    cell: NonNull<MappedCell>,
}

// SAFETY: a Doorbell names a cell reserved for the one message it
// publishes; nothing else writes the header until the turn is stored, so
// handing it to another thread is fine.
unsafe impl Send for Doorbell {}

impl Doorbell {
    /// The doorbell of a claimed cell.
    ///
    /// # Safety
    /// As [`MappedQueue::vouch`] says of every cell: `cell` is claimed by
    /// the holder of this doorbell, valid until published, its header
    /// written by the holder alone, its turn word steady until published,
    /// and storing that plus one (Release) publishes it.
    #[inline]
    pub unsafe fn new(cell: *const MappedCell) -> Self {
        // SAFETY: the caller passes a valid, hence non-null, pointer.
        let cell = unsafe { NonNull::new_unchecked(cell.cast_mut()) };
        Doorbell { cell }
    }

    /// Write the message's header and publish it.
    #[inline(always)]
    pub fn ring(
        self,
        src: Rank,
        kind: Kind,
        handler: u8,
        args: &[u32],
        len: usize,
        long_offset: u64,
    ) {
        // (Spelled out rather than through `ring_with`: the closure there
        // is not reliably inlined, and this is every send's path.)
        self.header()
            .write(src, kind, handler, args, len, long_offset);
        self.advance();
    }

    /// Let `fill` write the header (a conduit's cancel marks it instead of
    /// writing a message), then publish the cell.
    #[inline]
    pub fn ring_with(self, fill: impl FnOnce(&mut Header)) {
        fill(self.header());
        self.advance();
    }

    /// The claimed cell's header.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn header(&self) -> &mut Header {
        // SAFETY: `new`'s contract: the cell is valid and its header ours
        // alone to write until `advance`, which consumes the doorbell; the
        // two callers use the reference before that and hold no other.
        unsafe { &mut *self.cell.as_ref().header.get() }
    }

    /// Publish the cell: advance its turn word by one.
    #[inline(always)]
    fn advance(self) {
        // SAFETY: valid until published (`new`).
        let turn = unsafe { &self.cell.as_ref().turn };
        // Relaxed: the turn word has not changed since our claim read it
        // (with Acquire) and found it ours, and nobody stores it while we
        // hold the cell, so this reads that same value.
        let now = turn.load(Ordering::Relaxed);
        // Release: the header written before and the payload the sender
        // assembled since the claim become visible to the receiver whose
        // Acquire load of the turn word sees `now + 1` (the queue protocol
        // the conduit vouched for).
        turn.store(now + 1, Ordering::Release);
    }
}
