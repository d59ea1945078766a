//! The send-buffer pools (requests, replies, RMA bounce and atomic
//! operands) and the staging memory of Longs larger than a send buffer.
//!
//! A send buffer is claimed from its pool in use once
//! (`SendPools::claim`), may gain a second use (a Long's header sent
//! behind its payload write: `SendPools::share`), and goes back to its
//! pool when its last use ends (`SendPools::release`). Releasing a
//! buffer with no use left is a bug, caught in debug builds; it never
//! lists a buffer in its pool twice. A buffer taken but not yet handed to
//! the transport is held by a `Held` guard, which gives it back when
//! dropped.

use crate::geometry::Geometry;
use crate::net::Net;
use crate::transport::Transport;
use rgex_core::Result;

/// Memory staged for a Long AM larger than a send buffer.
pub(crate) struct Staging<R> {
    // Dropped before `mem` (field order): the registration first.
    pub mr: Option<R>,
    pub mem: Box<[u64]>,
}

impl<R> Staging<R> {
    pub fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }
}

/// Staging memory of `len` bytes for a Long larger than a send buffer,
/// registered when the network needs local descriptors.
pub(crate) fn stage<T: Transport>(net: &Net<T>, len: usize) -> Result<Staging<T::Region>> {
    let mem: Box<[u64]> = vec![0u64; len.div_ceil(8)].into_boxed_slice();
    let mr = if net.transport.caps().local_registration {
        // SAFETY: `mem` moves into the Staging with its region, which
        // drops the region first (field order); moving a box does not
        // move its heap memory.
        Some(unsafe { net.transport.register(mem.as_ptr().cast(), len) }?)
    } else {
        None
    };
    Ok(Staging { mr, mem })
}

/// No Long write reserved (see [`SendPools::set_long_op`]).
const NO_OP: u32 = u32::MAX;

/// The send buffers: which are free, per pool, and what each one in use
/// holds (see the module docs).
pub(crate) struct SendPools<R> {
    /// Free buffers per pool; `pop` hands out the lowest first.
    free: [Vec<u32>; 3],
    /// Outstanding uses of each buffer (the header send, a Long's write).
    uses: Vec<u8>,
    /// Long staging memory, per buffer, from prepare to write completion.
    staging: Vec<Option<Staging<R>>>,
    /// The write operation reserved for a prepared Long, per buffer.
    long_op: Vec<u32>,
    /// Buffers held by operations given up on
    /// ([`Op::Abandoned`](crate::ops::Op::Abandoned)).
    abandoned: usize,
}

impl<R> SendPools<R> {
    /// Every buffer of `geo`'s pools free.
    pub fn new(geo: &Geometry) -> Self {
        let n = geo.n_send();
        let mut free: [Vec<u32>; 3] = Default::default();
        let mut s = 0u32;
        for (p, &k) in free.iter_mut().zip(&geo.pools) {
            // Reversed, so pop() hands out the lowest first.
            *p = (s..s + k as u32).rev().collect();
            s += k as u32;
        }
        SendPools {
            free,
            uses: vec![0; n],
            staging: (0..n).map(|_| None).collect(),
            long_op: vec![NO_OP; n],
            abandoned: 0,
        }
    }

    /// A free buffer of `pool`, in use once, or `None` if all are taken.
    #[inline]
    pub fn claim(&mut self, pool: usize) -> Option<u32> {
        let slot = self.free[pool].pop()?;
        debug_assert_eq!(self.uses[slot as usize], 0, "send buffer {slot} was free");
        self.uses[slot as usize] = 1;
        Some(slot)
    }

    /// Buffer `slot` gains a second use (a Long's header sent behind its
    /// payload write).
    #[inline]
    pub fn share(&mut self, slot: usize) {
        debug_assert_eq!(self.uses[slot], 1, "send buffer {slot} shared twice");
        self.uses[slot] = 2;
    }

    /// One use of buffer `slot` ended; back to its pool (`geo`'s) after
    /// the last. A buffer with no use left is a bug: debug builds panic,
    /// release builds leave it where it is (never in its pool twice).
    #[inline]
    pub fn release(&mut self, geo: &Geometry, slot: usize) {
        match self.uses[slot] {
            0 => debug_assert!(false, "send buffer {slot} released twice"),
            1 => {
                self.uses[slot] = 0;
                self.free[geo.pool_of(slot)].push(slot as u32);
            }
            n => self.uses[slot] = n - 1,
        }
    }

    /// Buffers in use, of `geo`'s pools.
    pub fn lent(&self, geo: &Geometry) -> usize {
        let free: usize = self.free.iter().map(Vec::len).sum();
        geo.n_send() - free
    }

    /// True when every buffer is back in its pool, or held by an
    /// operation given up on.
    pub fn all_back(&self, geo: &Geometry) -> bool {
        self.lent(geo) == self.abandoned
    }

    /// `n` more buffers are held by operations given up on.
    pub fn abandoned(&mut self, n: usize) {
        self.abandoned += n;
    }

    /// An abandoned operation's buffer `slot` came back: release it.
    pub fn reclaim(&mut self, geo: &Geometry, slot: usize) {
        debug_assert!(self.abandoned > 0, "send buffer {slot} was not abandoned");
        self.abandoned -= 1;
        self.release(geo, slot);
    }

    /// Reserve write operation `op` for the Long prepared in buffer `slot`.
    #[inline]
    pub fn set_long_op(&mut self, slot: usize, op: u32) {
        debug_assert_eq!(
            self.long_op[slot], NO_OP,
            "send buffer {slot} has a Long op"
        );
        self.long_op[slot] = op;
    }

    /// The write operation reserved for buffer `slot`'s Long, if any.
    #[inline]
    pub fn long_op(&self, slot: usize) -> Option<u32> {
        let op = self.long_op[slot];
        (op != NO_OP).then_some(op)
    }

    /// Take back the write operation reserved for buffer `slot`, if any.
    #[inline]
    pub fn take_long_op(&mut self, slot: usize) -> Option<u32> {
        let op = std::mem::replace(&mut self.long_op[slot], NO_OP);
        (op != NO_OP).then_some(op)
    }

    /// Keep `s` as buffer `slot`'s Long staging memory.
    #[inline]
    pub fn set_staging(&mut self, slot: usize, s: Staging<R>) {
        self.staging[slot] = Some(s);
    }

    /// Buffer `slot`'s Long staging memory, if any.
    #[inline]
    pub fn staging(&self, slot: usize) -> Option<&Staging<R>> {
        self.staging[slot].as_ref()
    }

    /// Free buffer `slot`'s Long staging memory, if any.
    #[inline]
    pub fn clear_staging(&mut self, slot: usize) {
        self.staging[slot] = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{POOL_REP, POOL_REQ, POOL_RMA};

    fn geo() -> Geometry {
        Geometry::small(4)
    }

    #[test]
    fn claims_lowest_first_and_returns_to_its_pool() {
        let g = geo();
        let mut p = SendPools::<()>::new(&g);
        let a = p.claim(POOL_REQ).expect("a request buffer");
        let b = p.claim(POOL_REP).expect("a reply buffer");
        assert_eq!((a, b), (0, g.pools[0] as u32));
        assert_eq!(p.lent(&g), 2);
        p.release(&g, a as usize);
        p.release(&g, b as usize);
        assert!(p.all_back(&g));
        assert_eq!(p.claim(POOL_REP), Some(b), "back in its own pool");
    }

    #[test]
    fn a_shared_buffer_returns_after_its_last_use() {
        let g = geo();
        let mut p = SendPools::<()>::new(&g);
        let a = p.claim(POOL_RMA).expect("an RMA buffer") as usize;
        p.share(a);
        p.release(&g, a);
        assert_eq!(p.lent(&g), 1, "one use left");
        p.release(&g, a);
        assert!(p.all_back(&g));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "released twice")]
    fn double_release_is_caught() {
        let g = geo();
        let mut p = SendPools::<()>::new(&g);
        let a = p.claim(POOL_REQ).expect("a request buffer") as usize;
        p.release(&g, a);
        p.release(&g, a);
    }

    #[test]
    fn long_op_is_taken_once() {
        let g = geo();
        let mut p = SendPools::<()>::new(&g);
        p.set_long_op(3, 77);
        assert_eq!(p.long_op(3), Some(77));
        assert_eq!(p.take_long_op(3), Some(77));
        assert_eq!(p.take_long_op(3), None);
    }
}
