//! The Conduit SPI's descriptors for active messages: what to prepare
//! ([`Prepare`]), the resources a prepare claimed ([`Claim`], [`SendSlot`]),
//! and what a poll delivers ([`Delivery`]). They describe a message to a
//! conduit; how it travels (its wire format) is each conduit's own.

use crate::Rank;
use std::fmt;
use std::ptr::NonNull;

/// The most `u32` arguments an active message carries.
pub const MAX_ARGS: usize = 16;

/// AM category: how the payload travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Arguments only.
    Short,
    /// A payload delivered into a buffer rgex owns, valid during the handler.
    Medium,
    /// A payload written to an offset of the target's segment before the
    /// handler runs.
    Long,
}

impl Category {
    /// "Short", "Medium" or "Long".
    pub fn name(self) -> &'static str {
        match self {
            Category::Short => "Short",
            Category::Medium => "Medium",
            Category::Long => "Long",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Request or reply. Replies travel on resources of their own so that a
/// request handler can always reply without waiting on requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Sent by a client; its handler may reply once.
    Request,
    /// Sent from a request handler; its handler may not send anything.
    Reply,
}

/// An AM's category and direction in the one byte a conduit's message
/// header carries for them: bits 0-1 the category, bit 2 set for a reply,
/// and bit 3 ([`Kind::MARK`]) left to the conduit (smp and scc mark a
/// cancelled message with it, ofi a credit-only one).
///
/// ```
/// use rgex_core::descriptor::Kind;
/// use rgex_core::{Category, Direction};
/// let k = Kind::new(Category::Long, Direction::Reply);
/// assert_eq!((k.category(), k.direction()), (Category::Long, Direction::Reply));
/// assert!(!k.is_marked() && k.marked().is_marked());
/// assert_eq!(Kind(k.marked().0).category(), Category::Long);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Kind(pub u8);

impl Kind {
    const REPLY: u8 = 1 << 2;
    /// The bit whose meaning each conduit chooses.
    pub const MARK: u8 = 1 << 3;

    /// The kind of a message of category `c` going direction `d`.
    #[inline]
    pub const fn new(c: Category, d: Direction) -> Kind {
        let c = match c {
            Category::Short => 0,
            Category::Medium => 1,
            Category::Long => 2,
        };
        Kind(
            c | if matches!(d, Direction::Reply) {
                Self::REPLY
            } else {
                0
            },
        )
    }

    /// The same kind with [`MARK`](Self::MARK) set.
    #[inline]
    pub const fn marked(self) -> Kind {
        Kind(self.0 | Self::MARK)
    }

    /// True if [`MARK`](Self::MARK) is set.
    #[inline]
    pub const fn is_marked(self) -> bool {
        self.0 & Self::MARK != 0
    }

    /// The category (3 in the category bits reads as Long).
    #[inline]
    pub const fn category(self) -> Category {
        match self.0 & 3 {
            0 => Category::Short,
            1 => Category::Medium,
            _ => Category::Long,
        }
    }

    /// The direction.
    #[inline]
    pub const fn direction(self) -> Direction {
        if self.0 & Self::REPLY != 0 {
            Direction::Reply
        } else {
            Direction::Request
        }
    }
}

/// What a split-phase injection asks the conduit for.
#[derive(Clone, Copy, Debug)]
pub struct Prepare {
    /// Destination.
    pub peer: Rank,
    /// Request or reply.
    pub dir: Direction,
    /// Short, Medium or Long.
    pub category: Category,
    /// Arguments the commit will carry (they may lower the size limits).
    pub nargs: usize,
    /// Least payload bytes acceptable (0 for Short).
    pub least: usize,
    /// Most payload bytes wanted. The AM layer clamps it to what the peer
    /// accepts (max Medium, max Long, the segment's end) before the conduit
    /// sees it, and the conduit then grants exactly this many.
    pub most: usize,
    /// Long only: destination offset in the peer's segment. The conduit has
    /// already been told the range is inside the segment.
    pub long_offset: u64,
}

impl Prepare {
    /// For a conduit's `try_prepare`, before it claims anything: refuse a
    /// Medium asking for more than `max` (the conduit's own buffer size).
    /// The AM layer's validation means this never fires there; it keeps a
    /// direct call through the SPI from being granted less than `most`.
    ///
    /// ```
    /// use rgex_core::{Category, Direction, Prepare, Rank};
    /// let p = Prepare { peer: Rank(1), dir: Direction::Request, category: Category::Medium,
    ///                   nargs: 2, least: 0, most: 5000, long_offset: 0 };
    /// assert!(p.check_medium(65536).is_ok());
    /// assert!(p.check_medium(4096).unwrap_err().to_string().contains("4096"));
    /// ```
    #[inline(always)]
    pub fn check_medium(&self, max: usize) -> crate::Result<()> {
        if self.category == Category::Medium && self.most > max {
            Err(self.too_large(self.most, max))
        } else {
            Ok(())
        }
    }

    /// For a conduit's `try_send`, before it claims anything: refuse a
    /// payload longer than `most` (the AM layer sends `least == most ==
    /// payload.len()`), or any payload for a Short (whose claim has no
    /// buffer), so the copy cannot overrun the granted buffer.
    ///
    /// ```
    /// use rgex_core::{Category, Direction, Prepare, Rank};
    /// let mut p = Prepare { peer: Rank(1), dir: Direction::Request, category: Category::Medium,
    ///                       nargs: 0, least: 8, most: 8, long_offset: 0 };
    /// assert!(p.check_payload(8).is_ok());
    /// assert!(p.check_payload(9).is_err());
    /// p.category = Category::Short;
    /// assert!(p.check_payload(0).is_ok());
    /// assert!(p.check_payload(8).unwrap_err().to_string().contains("Short"));
    /// ```
    #[inline(always)]
    pub fn check_payload(&self, len: usize) -> crate::Result<()> {
        let most = if self.category == Category::Short {
            0
        } else {
            self.most
        };
        if len > most {
            Err(self.too_large(len, most))
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn too_large(&self, len: usize, max: usize) -> crate::Error {
        crate::Error::PayloadTooLarge {
            category: self.category.name(),
            peer: self.peer,
            len,
            max,
            nargs: self.nargs,
        }
    }
}

/// What a conduit claimed for one message, as
/// [`Conduit::try_prepare`](crate::Conduit::try_prepare) hands it back: the
/// payload buffer and a conduit-private ticket naming the claimed slot.
/// The buffer holds exactly the `most` bytes the (validated) [`Prepare`]
/// asked for.
///
/// Two words, so `Option<Claim>` (which uses `buf`'s non-null niche) comes
/// back in two registers. That matters: a claim written to memory just
/// after the conduit's queue claim is read back before the queue's cache
/// line arrives, and a reload with wider loads than the stores cannot be
/// forwarded from the store buffer, so the whole send would wait for that
/// miss.
///
/// ```
/// use rgex_core::descriptor::Claim;
/// assert_eq!(std::mem::size_of::<Option<Claim>>(), 16);
/// let c = Claim::new(std::ptr::null_mut(), 7); // nothing granted: dangling
/// assert_eq!(c.ticket, 7);
/// ```
#[derive(Debug)]
#[must_use = "a claim holds conduit resources until committed or cancelled"]
pub struct Claim {
    /// Where the payload is assembled (dangling when nothing is granted).
    /// For Long on a node-local peer this is the destination in the peer's
    /// segment itself.
    pub buf: NonNull<u8>,
    /// Conduit-private identification of the claimed slot, opaque to
    /// core. For a peer whose queue is mapped
    /// ([`Conduit::mapped_queue`](crate::Conduit::mapped_queue)) it is the
    /// claimed node-local cell's address, which its
    /// [`Doorbell`](crate::cell::Doorbell) publishes.
    pub ticket: u64,
}

impl Claim {
    /// A claim of the buffer at `buf` (null when nothing is granted).
    #[inline]
    pub fn new(buf: *mut u8, ticket: u64) -> Self {
        Claim {
            buf: NonNull::new(buf).unwrap_or(NonNull::dangling()),
            ticket,
        }
    }

    /// Hand a claim across the SPI in `try_prepare`'s form: the claim, or
    /// `None` with the reason stored in `refused`.
    ///
    /// ```
    /// use rgex_core::descriptor::Claim;
    /// use rgex_core::{Error, Rank};
    /// let mut why = None;
    /// let busy = Err(Error::WouldBlock { peer: Rank(1), resource: "demo" });
    /// assert!(Claim::hand_over(busy, &mut why).is_none());
    /// assert!(why.is_some_and(|e: Error| e.is_would_block()));
    /// ```
    #[inline(always)]
    pub fn hand_over(r: crate::Result<Claim>, refused: &mut Option<crate::Error>) -> Option<Claim> {
        match r {
            Ok(c) => Some(c),
            Err(e) => {
                *refused = Some(e);
                None
            }
        }
    }

    /// The reason a `try_prepare` that returned `None` left in `refused`
    /// (or, if it left none, an error saying the `conduit` broke the SPI).
    #[cold]
    #[inline(never)]
    pub fn refusal(refused: Option<crate::Error>, conduit: &str) -> crate::Error {
        refused.unwrap_or_else(|| {
            crate::Error::Failed(format!(
                "the {conduit} conduit refused a prepare without saying why"
            ))
        })
    }
}

// SAFETY: a Claim names memory the conduit reserved for this message;
// nothing else writes it until commit or cancel, so moving it to another
// thread is fine.
unsafe impl Send for Claim {}

/// A claimed message as the conduit's `commit` and `cancel` see it: the
/// request it was claimed for, and the claim.
#[derive(Debug)]
#[must_use = "a prepared send holds conduit resources until committed or cancelled"]
pub struct SendSlot {
    /// Destination.
    pub peer: Rank,
    /// Request or reply.
    pub dir: Direction,
    /// Short, Medium or Long.
    pub category: Category,
    /// Arguments declared at prepare (the most the commit may carry).
    pub nargs: u8,
    /// Long only: destination offset in the peer's segment.
    pub long_offset: u64,
    /// Where the payload is assembled (dangling when nothing is granted).
    pub buf: NonNull<u8>,
    /// Bytes granted at `buf`: the `most` of the prepare.
    pub granted: usize,
    /// The claim's ticket.
    pub cookie: u64,
}

impl SendSlot {
    /// The slot `claim` holds for `spec`.
    #[inline]
    pub fn new(spec: &Prepare, claim: Claim) -> Self {
        SendSlot {
            peer: spec.peer,
            dir: spec.dir,
            category: spec.category,
            nargs: spec.nargs.min(crate::MAX_ARGS) as u8,
            long_offset: spec.long_offset,
            buf: claim.buf,
            granted: spec.most,
            cookie: claim.ticket,
        }
    }
}

// SAFETY: as for Claim.
unsafe impl Send for SendSlot {}

/// An incoming active message, as a conduit hands it to the AM layer.
#[derive(Debug)]
pub struct Delivery<'a> {
    /// The sender.
    pub src: Rank,
    /// Request or reply.
    pub dir: Direction,
    /// Short, Medium or Long.
    pub category: Category,
    /// Handler index.
    pub handler: u8,
    /// The arguments.
    pub args: &'a [u32],
    /// The payload: empty for Short, the message buffer for Medium, the
    /// landed bytes in this rank's segment for Long.
    pub payload: &'a [u8],
    /// Long only: where the payload landed in this rank's segment.
    pub long_offset: u64,
}
