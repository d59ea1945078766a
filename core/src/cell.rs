//! The node-local message cell, and the doorbell that publishes a
//! claimed one: the format every conduit's node-local transport (rgex-smp's
//! per-receiver rings) keeps its messages in, shared by that transport and
//! the AM layer, as GASNet-EX keeps its shared-memory AM transport (PSHM)
//! in its core.
//!
//! A cell is a turn word, then the message's fixed part, [`Header`]. The
//! turn word is the ring's sequence number: a producer claims the cell when
//! the word says it is the producer's turn for that position, and a
//! consumer takes it when the word is one more (the ring's protocol lives
//! with the ring, in rgex-smp). A sender that claimed a cell writes the
//! header and then advances the turn word by one: that is the whole
//! publish, and [`Doorbell`] does it from the cell's address alone (the
//! ticket of a node-local claim). So the AM layer, told by the conduit that
//! a peer's claims are such cells
//! ([`Conduit::mapped_queue`](crate::Conduit::mapped_queue)), publishes a
//! negotiated-payload message itself, inlined, without a second call into
//! the conduit.

use crate::descriptor::Kind;
use crate::sync::{AtomicU64, Ordering, Slot};
use crate::{Rank, MAX_ARGS};
use std::ptr::NonNull;

/// The turn number of a closed cell (a ring whose receiver left closes
/// every cell):
/// below it by more than half the counter space for every position a ring
/// reaches (2^63), so claims read it as a lap behind for producers and
/// consumers alike. A doorbell rung on a cell closed since its claim leaves
/// it closed.
pub const CLOSED: u64 = u64::MAX;

/// The fixed part of a message as it sits in a cell: written by the
/// sender between claim and publish, read by the receiver in place.
///
/// ```
/// use rgex_core::cell::Header;
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
    /// Category and direction; marked for a cancelled message, which the
    /// receiver skips.
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
    /// use rgex_core::cell::Header;
    /// use rgex_core::descriptor::Kind;
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

/// One message cell: the turn counter and the fixed part of the message.
#[repr(C, align(128))]
pub struct Cell {
    /// Whose turn it is (the ring's sequence number). Publishing a claimed
    /// cell advances it by one.
    pub seq: AtomicU64,
    /// The fixed part of the message, written by the producer between
    /// claim and publish (in place, through the cell's doorbell), read by
    /// the consumer between take and release. Its first eight arguments
    /// share the cache line with `seq`, so a short message with few
    /// arguments moves one line.
    pub body: Slot<Header>,
}

impl Cell {
    /// A cell for a fresh ring (heap use: tests).
    pub fn new() -> Self {
        Cell {
            seq: AtomicU64::new(0),
            body: Slot::new(Header::default()),
        }
    }
}

impl Default for Cell {
    fn default() -> Self {
        Self::new()
    }
}

/// The right to publish one claimed [`Cell`]: ringing it writes the
/// header and advances the turn word, which makes the message visible to
/// the receiver.
#[derive(Debug)]
pub struct Doorbell {
    cell: NonNull<Cell>,
}

// SAFETY: a Doorbell names a cell reserved for the one message it
// publishes; nothing else writes the header until the turn is stored, so
// handing it to another thread is fine.
unsafe impl Send for Doorbell {}

impl Doorbell {
    /// The doorbell of a claimed cell.
    ///
    /// # Safety
    /// `cell` is claimed by the holder of this doorbell (its turn word says
    /// so and stays put until published), valid until published, its
    /// header written by the holder alone; storing the turn plus one
    /// (Release) publishes it.
    #[inline]
    pub unsafe fn new(cell: *const Cell) -> Self {
        // SAFETY: the caller passes a valid, hence non-null, pointer.
        let cell = unsafe { NonNull::new_unchecked(cell.cast_mut()) };
        Doorbell { cell }
    }

    /// The doorbell of a node-local claim, from its ticket (the claimed
    /// cell's address).
    ///
    /// # Safety
    /// `ticket` is the ticket of a claim whose ticket is a claimed cell's
    /// address (a conduit vouched so for the peer with
    /// [`MappedQueue::vouch`](crate::doorbell::MappedQueue::vouch)), neither committed,
    /// cancelled nor rung; the doorbell is then rung at most once and the
    /// claim not used otherwise.
    #[inline(always)]
    pub unsafe fn of_ticket(ticket: u64) -> Self {
        // SAFETY: an smp ticket is the address of the claimed cell, which
        // lives in a mapped region for the job's lifetime, is ours to write
        // until published, and whose turn word moves on exactly when the
        // ring publishes it (the caller's contract).
        unsafe { Self::new(ticket as *const Cell) }
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
        self.cell().body.with_mut(|h| {
            // SAFETY: `new`'s contract: the header is ours alone to write
            // until `advance`, which consumes the doorbell.
            let h = unsafe { &mut *h };
            h.write(src, kind, handler, args, len, long_offset);
        });
        self.advance();
    }

    /// Let `fill` write the header (cancel marks it instead of writing a
    /// message), then publish the cell.
    #[inline]
    pub fn ring_with(self, fill: impl FnOnce(&mut Header)) {
        self.cell().body.with_mut(|h| {
            // SAFETY: as in `ring`.
            fill(unsafe { &mut *h })
        });
        self.advance();
    }

    #[inline(always)]
    fn cell(&self) -> &Cell {
        // SAFETY: valid until published (`new`), and the doorbell is
        // consumed by publishing.
        unsafe { self.cell.as_ref() }
    }

    /// Publish the cell: advance its turn word by one.
    #[inline(always)]
    fn advance(self) {
        let turn = &self.cell().seq;
        // Relaxed: the turn word has not changed since our claim read it
        // (with Acquire) and found it ours, and nobody stores it while we
        // hold the cell, so this reads that same value.
        // Except when the receiver's ring was closed since our claim (its
        // rank left the job): then this reads the closed mark, and the cell
        // stays closed; the message goes nowhere, as `Ring::close` says.
        let now = turn.load(Ordering::Relaxed);
        if now == CLOSED {
            return;
        }
        // Release: the header written before and the payload the sender
        // assembled since the claim become visible to the receiver whose
        // Acquire load of the turn word sees `now + 1` (the ring's
        // protocol: `Ring::publish` is the same store).
        turn.store(now + 1, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{Category, Direction};

    /// The turn word and header of a cell nobody writes now.
    fn look(cell: &Cell) -> (u64, Header) {
        // SAFETY: the tests below have rung or not touched the cell, and
        // no thread writes it while this reads.
        let h = cell.body.with(|h| unsafe { *h });
        (cell.seq.load(Ordering::Acquire), h)
    }

    #[test]
    fn ringing_writes_the_header_then_advances_the_turn_once() {
        let cell = Cell::new();
        cell.seq.store(5, Ordering::Relaxed);
        // SAFETY: the cell outlives the doorbell and nobody else touches it.
        let bell = unsafe { Doorbell::new(&cell) };
        let kind = Kind::new(Category::Long, Direction::Reply);
        bell.ring(Rank(2), kind, 7, &[1, 2, 3, 4, 5, 6], 40, 128);
        let (turn, h) = look(&cell);
        assert_eq!(turn, 6, "published: the claimed turn plus one");
        assert_eq!((h.src, h.kind, h.handler, h.nargs), (2, kind, 7, 6));
        assert_eq!((h.len, h.long_offset), (40, 128));
        assert_eq!(h.args[..6], [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn ringing_a_cell_closed_since_its_claim_leaves_it_closed() {
        let cell = Cell::new();
        cell.seq.store(CLOSED, Ordering::Relaxed);
        // SAFETY: as above.
        let bell = unsafe { Doorbell::new(&cell) };
        let kind = Kind::new(Category::Short, Direction::Request);
        bell.ring(Rank(0), kind, 1, &[], 0, 0);
        assert_eq!(look(&cell).0, CLOSED, "the receiver left: still closed");
    }

    #[test]
    fn ring_with_lets_the_caller_mark_the_header() {
        let cell = Cell::new();
        // SAFETY: as above.
        let bell = unsafe { Doorbell::new(&cell) };
        let kind = Kind::new(Category::Short, Direction::Request).marked();
        bell.ring_with(|h| h.kind = kind);
        let (turn, h) = look(&cell);
        assert_eq!(turn, 1);
        assert!(h.kind.is_marked());
    }

    #[test]
    fn every_argument_count_is_copied_exactly() {
        for n in 0..=MAX_ARGS {
            let args: Vec<u32> = (1..=n as u32).collect();
            let mut h = Header {
                args: [u32::MAX; MAX_ARGS],
                ..Header::default()
            };
            h.write(Rank(0), Kind::default(), 0, &args, 0, 0);
            assert_eq!(h.args[..n], args[..], "{n} arguments");
            assert!(
                h.args[n..].iter().all(|&a| a == u32::MAX),
                "{n}: past the end"
            );
        }
    }
}
