//! Mapped send queues: a conduit whose outgoing message slots are plain
//! memory (smp's cells in the receiver's region; a NIC's mapped work-queue
//! entries would be another) can hand the protocol layer a [`Doorbell`] with
//! each prepared slot, and the protocol layer then publishes the message
//! itself (write the [`Header`], store the turn word) instead of making a
//! second call into the conduit. A negotiated-payload send is then one
//! conduit call, like a fixed-payload one.

use crate::wire::Kind;
use crate::{Rank, MAX_ARGS};
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

/// The right to publish one claimed slot of a mapped queue: where its
/// [`Header`] goes, and which word to store which value into (Release)
/// to make it visible to the receiver.
///
/// ```
/// use rgex_core::doorbell::{Doorbell, Header};
/// use rgex_core::wire::Kind;
/// use rgex_core::{Category, Direction, Rank};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// let mut header = Header::default();
/// let turn = AtomicU64::new(0);
/// // SAFETY: both live past the ring below and nobody else touches them.
/// let bell = unsafe { Doorbell::new(&mut header, &turn, 1) };
/// bell.ring(Rank(0), Kind::new(Category::Short, Direction::Request), 7, &[42], 0, 0);
/// assert_eq!(turn.load(Ordering::Acquire), 1);
/// assert_eq!((header.handler, header.args[0]), (7, 42));
/// ```
#[derive(Debug)]
pub struct Doorbell {
    header: NonNull<Header>,
    turn: NonNull<AtomicU64>,
    value: u64,
}

// SAFETY: a Doorbell names a slot reserved for the one message it
// publishes; nothing else writes the header until the turn is stored, so
// handing it to another thread is fine.
unsafe impl Send for Doorbell {}

impl Doorbell {
    /// The doorbell of a claimed slot.
    ///
    /// # Safety
    /// Until the doorbell is rung (or dropped unrung, which the conduit's
    /// `cancel` must then handle), `header` must be valid for writes and
    /// written by its holder alone, and `turn` valid for the slot's
    /// lifetime; storing `value` into `turn` with Release must be exactly
    /// what publishes the slot under the conduit's queue protocol.
    #[inline]
    pub unsafe fn new(header: *mut Header, turn: *const AtomicU64, value: u64) -> Self {
        // SAFETY: the caller passes valid, hence non-null, pointers (the
        // contract above).
        let (header, turn) = unsafe {
            (
                NonNull::new_unchecked(header),
                NonNull::new_unchecked(turn.cast_mut()),
            )
        };
        Doorbell {
            header,
            turn,
            value,
        }
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
        // SAFETY: `new`'s contract: the header is ours alone to write
        // until the turn store below.
        let h = unsafe { &mut *self.header.as_ptr() };
        h.write(src, kind, handler, args, len, long_offset);
        // SAFETY: `turn` is valid for the slot's lifetime (`new`).
        let turn = unsafe { self.turn.as_ref() };
        // Release: the header written above and the payload the sender
        // assembled since the claim become visible to the receiver whose
        // Acquire load of the turn word sees `value` (the queue protocol
        // the conduit vouched for in `new`).
        turn.store(self.value, Ordering::Release);
    }
}
