//! Put-with-signal's vocabulary: the update of a 64-bit signal word in the
//! target's segment that follows a put's data (OpenSHMEM 1.5's
//! `shmem_put_signal`), never visible before it.
//!
//! The signal word is a `u64` at an 8-byte-aligned offset of the target's
//! segment; its update is atomic with respect to other signals and to
//! rgex's CPU atomics on that word (it is one on every path: a release
//! store or `fetch_add` by whoever writes it).

// std's atomics (not `crate::sync`'s): the word is in a segment that the
// layers above view through `AtomicU64::from_ptr`.
use std::sync::atomic::{AtomicU64, Ordering};

/// How a put-with-signal updates its signal word.
///
/// ```
/// use rgex_core::signal::SignalOp;
/// assert_eq!(SignalOp::Add.apply(5, 2), 7);
/// assert_eq!(SignalOp::Set.apply(5, 2), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalOp {
    /// Store the value (`SHMEM_SIGNAL_SET`).
    Set,
    /// Add the value, wrapping (`SHMEM_SIGNAL_ADD`).
    Add,
}

impl SignalOp {
    /// The word after this op with `value` on a word holding `old`.
    #[inline]
    pub fn apply(self, old: u64, value: u64) -> u64 {
        match self {
            SignalOp::Set => value,
            SignalOp::Add => old.wrapping_add(value),
        }
    }

    /// The op's number on the wire (the AM reference's argument).
    ///
    /// ```
    /// use rgex_core::signal::SignalOp;
    /// for op in [SignalOp::Set, SignalOp::Add] {
    ///     assert_eq!(SignalOp::from_code(op.code()), Some(op));
    /// }
    /// assert_eq!(SignalOp::from_code(7), None);
    /// ```
    pub fn code(self) -> u32 {
        match self {
            SignalOp::Set => 0,
            SignalOp::Add => 1,
        }
    }

    /// The op numbered `code` by [`code`](Self::code), if any.
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(SignalOp::Set),
            1 => Some(SignalOp::Add),
            _ => None,
        }
    }
}

/// One signal: which word of the target's segment, how, and by what.
///
/// ```
/// use rgex_core::signal::{Signal, SignalOp};
/// let s = Signal::add(64, 1);
/// assert_eq!((s.offset, s.op, s.value), (64, SignalOp::Add, 1));
/// assert_eq!(Signal::set(8, 3).op, SignalOp::Set);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signal {
    /// The word's offset in the target's segment (a multiple of 8).
    pub offset: u64,
    /// Set or add.
    pub op: SignalOp,
    /// The value stored or added.
    pub value: u64,
}

impl Signal {
    /// Store `value` at `offset`.
    ///
    /// ```
    /// use rgex_core::signal::{Signal, SignalOp};
    /// assert_eq!(Signal::set(16, 1).op, SignalOp::Set);
    /// ```
    pub fn set(offset: u64, value: u64) -> Self {
        Signal {
            offset,
            op: SignalOp::Set,
            value,
        }
    }

    /// Add `value` to the word at `offset`.
    ///
    /// ```
    /// use rgex_core::signal::Signal;
    /// assert_eq!(Signal::add(16, 2).value, 2);
    /// ```
    pub fn add(offset: u64, value: u64) -> Self {
        Signal {
            offset,
            op: SignalOp::Add,
            value,
        }
    }

    /// Update `word` as this signal says, with Release: every store made
    /// (or made visible to this thread) before the call, the signal's data
    /// among them, happens before the reads of a thread whose Acquire load
    /// reads this update's value or any later one: both ops are
    /// read-modify-writes (a `Set` is a swap), so the updates of one word
    /// form one release sequence, and a waiter that reads the latest
    /// signal synchronises with every earlier signaller too (a plain store
    /// would have cut the sequence). Returns the value before.
    ///
    /// ```
    /// use rgex_core::signal::Signal;
    /// use std::sync::atomic::AtomicU64;
    /// let w = AtomicU64::new(1);
    /// assert_eq!(Signal::add(0, 2).apply_to(&w), 1);
    /// assert_eq!(Signal::set(0, 9).apply_to(&w), 3);
    /// assert_eq!(w.into_inner(), 9);
    /// ```
    #[inline]
    pub fn apply_to(&self, word: &AtomicU64) -> u64 {
        match self.op {
            SignalOp::Set => word.swap(self.value, Ordering::Release),
            SignalOp::Add => word.fetch_add(self.value, Ordering::Release),
        }
    }
}
