//! rgex-pgas's error: rgex's own errors, plus what the PGAS layer adds
//! (the heap, types, serialization, RPC identity).

use rgex::Rank;

/// Everything that can go wrong in rgex-pgas. Each variant names the rank
/// and what was asked; rgex's errors (a dead peer, an address out of the
/// segment, a mismatched collective) come through unchanged.
///
/// ```
/// use rgex_pgas::Error;
/// let e = Error::from(rgex::Error::Failed("example".into()));
/// assert!(e.to_string().contains("example"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error of rgex itself.
    #[error(transparent)]
    Rgex(#[from] rgex::Error),
    /// The shared heap has no free range large enough.
    #[error("rgex-pgas: {rank}: the shared heap cannot allocate {len} bytes (align {align}) for {what}: {free} bytes free in all, largest free range {largest} bytes, heap {heap} bytes")]
    OutOfHeap {
        /// The rank whose heap was asked.
        rank: Rank,
        /// What the bytes were for ("values of u64", "staging the
        /// arguments of an rpc ...").
        what: String,
        /// Bytes asked for.
        len: u64,
        /// Alignment asked for.
        align: u64,
        /// Free bytes in all.
        free: u64,
        /// The largest free range.
        largest: u64,
        /// The heap's size.
        heap: u64,
    },
    /// A global pointer that does not point at a live allocation of its
    /// type (freed twice, never allocated, another rank's, or another
    /// type's).
    #[error("rgex-pgas: {rank}: {what} of a global pointer to {at:#x} on rank {owner}: {why}")]
    BadPointer {
        /// The rank that made the call.
        rank: Rank,
        /// The call ("delete_", "local").
        what: &'static str,
        /// The pointer's rank.
        owner: Rank,
        /// The pointer's offset in its rank's segment.
        at: u64,
        /// What is wrong with it.
        why: String,
    },
    /// Arguments or a result could not be serialized or deserialized.
    #[error("rgex-pgas: {rank}: {what}: {why}")]
    Serialization {
        /// The rank where it failed.
        rank: Rank,
        /// What was being (de)serialized, and for whom.
        what: String,
        /// postcard's or the value's own reason.
        why: String,
    },
    /// An RPC (or a dist_object fetch) failed at its target, reported at
    /// the caller: its body panicked, its arguments did not decode there,
    /// or its result could not be sent back (it did not serialize, or it
    /// was too large for a message and the target's heap had no room to
    /// stage it). `why` is the target's reason, naming the target. Any
    /// error a target meets while answering a call comes back here; it
    /// never surfaces in the target's own `progress` or barrier.
    #[error("rgex-pgas: an rpc from {from} to {target} failed: {why}")]
    Remote {
        /// The caller.
        from: Rank,
        /// The target.
        target: Rank,
        /// The target's reason.
        why: String,
    },
    /// The ranks of this job do not run the same program, so functions
    /// cannot be named across them.
    #[error("rgex-pgas: {rank}: {why}")]
    NotSameProgram {
        /// The rank that found it.
        rank: Rank,
        /// What differs.
        why: String,
    },
}

/// The result of rgex-pgas's calls.
pub type Result<T> = std::result::Result<T, Error>;

/// A non-blocking rgex transfer that could not start hands its buffer
/// back inside the error; rgex-pgas's own buffers are temporary, so only
/// the error is kept.
impl<B> From<rgex::rma::BufError<B>> for Error {
    fn from(e: rgex::rma::BufError<B>) -> Self {
        Error::Rgex(e.into_parts().0)
    }
}
