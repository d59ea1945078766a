//! The operation-slot table: what each posted operation is doing, and
//! the posts themselves as the transport receives them.
//!
//! Slot ids: one per receive buffer (`0 .. n_recv`, id = buffer index),
//! one per send buffer (`n_recv + slot`: the AM sent from it), then
//! [`DYNAMIC_OPS`](crate::geometry::DYNAMIC_OPS) taken and freed as
//! RMA, atomics and Long writes come and go.

use crate::readback::Counters;
use crate::state::State;
use crate::transport::Transport;
use rgex_core::Completion;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What an operation slot is doing; `R` is the transport's registration.
pub(crate) enum Op<R> {
    /// Not in use (dynamic slots only).
    Idle,
    /// A posted receive buffer (slot id = buffer index).
    Recv,
    /// An AM (or control message) sent from send buffer `id - n_recv`.
    AmSend { peer: u32 },
    /// A [`PING`](crate::wire::PING) sent from send buffer `id - n_recv`:
    /// an `AmSend` whose completion is no sign of life of the peer (on
    /// some networks a send completes once the local stack took it), so
    /// it does not touch the peer's liveness clock.
    Ping { peer: u32 },
    /// A Long's payload write; the header goes after it unless it was
    /// already posted behind it (send-after-write ordering).
    LongWrite {
        slot: u32,
        peer: u32,
        header_after: Option<usize>,
    },
    /// One put (or one piece of a large one).
    Put {
        peer: u32,
        rc: Arc<Completion>,
        lc: Option<Arc<Completion>>,
        bounce: Option<u32>,
        mr: Option<Arc<R>>,
        /// Its source is the caller's own memory (not the segment, not a
        /// bounce buffer): see `State::abandon_ops`.
        caller: bool,
        /// Written without delivery completion: the last byte's offset;
        /// the put then waits for a read back ([`readback`](crate::readback)).
        flush_at: Option<u64>,
    },
    /// The 1-byte read confirming that a batch of puts landed.
    Flush { peer: u32, counters: Counters },
    /// One get (or one piece of a large one).
    Get {
        peer: u32,
        done: Arc<Completion>,
        /// Bounce buffer, destination and length to copy at completion.
        bounce: Option<(u32, usize, usize)>,
        mr: Option<Arc<R>>,
        /// It reads into the caller's own memory (not the segment, not a
        /// bounce buffer): see `State::abandon_ops`.
        caller: bool,
    },
    /// One offloaded atomic; operands and result in send buffer `slot`.
    Atomic {
        peer: u32,
        slot: u32,
        size: u8,
        fetched: Arc<AtomicU64>,
        done: Arc<Completion>,
    },
    /// Given up on: its peer's process can no longer act (it left the
    /// job, or it is gone from this node), so its completions already
    /// fired with the error ([`State::abandon_ops_to`]). The transport
    /// still owns the post; what it held (a send buffer, a registration)
    /// is released when the transport hands it back, or at close.
    Abandoned {
        peer: u32,
        slot: Option<u32>,
        mr: Option<Arc<R>>,
    },
}

impl<R> Op<R> {
    /// The peer the operation works with (`None`: a receive or idle).
    #[inline]
    pub(crate) fn peer(&self) -> Option<u32> {
        match self {
            Op::AmSend { peer }
            | Op::Ping { peer }
            | Op::LongWrite { peer, .. }
            | Op::Put { peer, .. }
            | Op::Flush { peer, .. }
            | Op::Get { peer, .. }
            | Op::Atomic { peer, .. }
            | Op::Abandoned { peer, .. } => Some(*peer),
            Op::Recv | Op::Idle => None,
        }
    }
}

/// A post for the transport; kept in the backlog while it refuses.
pub(crate) enum Post {
    Recv {
        op: u32,
    },
    Send {
        op: u32,
        peer: u32,
        buf: usize,
        len: usize,
        /// Sent with [`Transport::inject`]: no completion comes, so the
        /// operation is finished as soon as the transport takes it.
        inject: bool,
    },
    Write {
        op: u32,
        peer: u32,
        src: usize,
        len: usize,
        desc: usize,
        offset: u64,
        /// Ask for delivery completion.
        delivery: bool,
    },
    Read {
        op: u32,
        peer: u32,
        dst: usize,
        len: usize,
        desc: usize,
        offset: u64,
    },
}

impl Post {
    /// The operation it is for.
    pub(crate) fn op(&self) -> u32 {
        match *self {
            Post::Recv { op }
            | Post::Send { op, .. }
            | Post::Write { op, .. }
            | Post::Read { op, .. } => op,
        }
    }

    /// The peer it goes to (`None`: a receive).
    pub(crate) fn peer(&self) -> Option<u32> {
        match *self {
            Post::Send { peer, .. } | Post::Write { peer, .. } | Post::Read { peer, .. } => {
                Some(peer)
            }
            Post::Recv { .. } => None,
        }
    }
}

impl<T: Transport> State<T> {
    /// Take a dynamic operation slot.
    #[inline]
    pub(crate) fn take_op(&mut self) -> Option<u32> {
        self.free_ops.pop()
    }

    /// Give dynamic operation slot `id` back.
    #[inline]
    pub(crate) fn free_op(&mut self, id: usize) {
        self.ops[id] = Op::Idle;
        self.free_ops.push(id as u32);
    }
}
