//! The operation-slot table: what each posted operation is doing, and
//! the posts themselves as the transport receives them.
//!
//! Slot ids: one per receive buffer (`0 .. n_recv`, id = buffer index),
//! one per send buffer (`n_recv + slot`: the AM sent from it), then
//! [`DYNAMIC_OPS`](crate::geometry::DYNAMIC_OPS) taken and freed as
//! RMA, atomics and Long writes come and go.
//!
//! [`Ops`] owns the table and the free list of the dynamic slots; a slot
//! is taken with [`Ops::take`] and given back with [`Ops::free`] (or by
//! dropping the [`Held`](crate::held::Held) guard that took it), once.

use crate::geometry::DYNAMIC_OPS;
use crate::readback::Counters;
use rgex_core::OpCounter;
use std::ops::{Index, IndexMut};
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
        rc: Arc<OpCounter>,
        lc: Option<Arc<OpCounter>>,
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
        done: Arc<OpCounter>,
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
        done: Arc<OpCounter>,
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

/// The operation-slot table (see the module docs).
pub(crate) struct Ops<R> {
    table: Vec<Op<R>>,
    /// Free dynamic slots; `pop` hands out the lowest first.
    free: Vec<u32>,
    /// The first dynamic slot's id.
    first_dynamic: u32,
    /// Dynamic slots given up on ([`Op::Abandoned`]): not free, not
    /// waited for.
    abandoned: usize,
    /// Per dynamic slot: taken (debug builds check every free against it).
    #[cfg(debug_assertions)]
    taken: Vec<bool>,
}

impl<R> Ops<R> {
    /// `n_recv` receive slots, `n_send` AM slots and [`DYNAMIC_OPS`]
    /// free dynamic ones.
    pub fn new(n_recv: usize, n_send: usize) -> Self {
        let mut table = Vec::with_capacity(n_recv + n_send + DYNAMIC_OPS);
        table.extend((0..n_recv).map(|_| Op::Recv));
        table.extend((0..n_send + DYNAMIC_OPS).map(|_| Op::Idle));
        let first_dynamic = (n_recv + n_send) as u32;
        Ops {
            table,
            free: (first_dynamic..first_dynamic + DYNAMIC_OPS as u32)
                .rev()
                .collect(),
            first_dynamic,
            abandoned: 0,
            #[cfg(debug_assertions)]
            taken: vec![false; DYNAMIC_OPS],
        }
    }

    /// Take a free dynamic slot (idle until set), or `None` if all are taken.
    #[inline]
    pub fn take(&mut self) -> Option<u32> {
        let id = self.free.pop()?;
        #[cfg(debug_assertions)]
        {
            self.taken[(id - self.first_dynamic) as usize] = true;
        }
        Some(id)
    }

    /// Give dynamic slot `id` back (idle again). Freeing a slot that is
    /// not taken is a bug, caught in debug builds (a panic naming it).
    #[inline]
    pub fn free(&mut self, id: u32) {
        debug_assert!(
            id >= self.first_dynamic,
            "operation slot {id} is not a dynamic slot"
        );
        #[cfg(debug_assertions)]
        {
            let k = (id - self.first_dynamic) as usize;
            assert!(
                std::mem::replace(&mut self.taken[k], false),
                "operation slot {id} freed twice (or never taken)"
            );
        }
        self.table[id as usize] = Op::Idle;
        self.free.push(id);
    }

    /// Free dynamic slots.
    #[inline]
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// True when every dynamic slot is free or given up on.
    pub fn all_back(&self) -> bool {
        self.free.len() + self.abandoned == DYNAMIC_OPS
    }

    /// `n` more slots were given up on ([`Op::Abandoned`]).
    pub fn abandoned(&mut self, n: usize) {
        self.abandoned += n;
    }

    /// Abandoned slot `id` came back from the transport: free it.
    pub fn reclaim(&mut self, id: u32) {
        debug_assert!(self.abandoned > 0, "operation slot {id} was not abandoned");
        self.abandoned -= 1;
        self.free(id);
    }

    /// Every slot, by id.
    pub fn iter(&self) -> std::slice::Iter<'_, Op<R>> {
        self.table.iter()
    }

    /// Every slot, by id, to change.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Op<R>> {
        self.table.iter_mut()
    }
}

impl<R> Index<usize> for Ops<R> {
    type Output = Op<R>;
    #[inline]
    fn index(&self, id: usize) -> &Op<R> {
        &self.table[id]
    }
}

impl<R> IndexMut<usize> for Ops<R> {
    #[inline]
    fn index_mut(&mut self, id: usize) -> &mut Op<R> {
        &mut self.table[id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_and_free_round_trip() {
        let mut ops = Ops::<()>::new(2, 3);
        assert_eq!(ops.available(), DYNAMIC_OPS);
        let a = ops.take().expect("a free slot");
        assert_eq!(a, 5, "the lowest dynamic slot first");
        ops[a as usize] = Op::AmSend { peer: 1 };
        assert!(!ops.all_back());
        ops.free(a);
        assert!(matches!(ops[a as usize], Op::Idle));
        assert!(ops.all_back());
        assert_eq!(ops.take(), Some(a));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "freed twice")]
    fn double_free_is_caught() {
        let mut ops = Ops::<()>::new(0, 0);
        let a = ops.take().expect("a free slot");
        ops.free(a);
        ops.free(a);
    }

    #[test]
    fn abandoned_slots_count_as_back() {
        let mut ops = Ops::<()>::new(0, 0);
        let a = ops.take().expect("a free slot");
        ops.abandoned(1);
        assert!(ops.all_back());
        ops.reclaim(a);
        assert!(ops.all_back());
        assert_eq!(ops.available(), DYNAMIC_OPS);
    }
}
