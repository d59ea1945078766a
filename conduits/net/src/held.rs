//! What an operation took and has not yet handed to the transport: a
//! guard that gives it back when dropped.
//!
//! An operation slot and a send buffer are taken together or not at all:
//! an RMA or an atomic takes a slot (and a bounce or operand buffer), a
//! prepared AM a send buffer (and, for a Long, its write's slot and
//! staging memory, kept with the buffer). Every way out before the
//! transport took the post (would-block, a failed registration, a
//! refused post, an AM cancelled or committed to a peer gone meanwhile)
//! drops the guard, and its drop is the one place that frees all of it.
//! Once the post is the transport's, [`Held::hand_over`] consumes the
//! guard and the operation's completion releases what it holds
//! (`State::finish`).

use crate::geometry::Geometry;
use crate::state::State;
use crate::transport::Transport;
use std::ops::{Deref, DerefMut};

/// An operation slot and a send buffer taken from `State` for one
/// operation, given back when dropped (see the module docs). It derefs to
/// the state, which stays usable meanwhile.
pub(crate) struct Held<'a, T: Transport> {
    st: &'a mut State<T>,
    geo: &'a Geometry,
    op: Option<u32>,
    slot: Option<u32>,
}

impl<'a, T: Transport> Held<'a, T> {
    /// Nothing held yet, in `st` with the buffer geometry `geo`.
    #[inline]
    pub fn new(st: &'a mut State<T>, geo: &'a Geometry) -> Self {
        Held {
            st,
            geo,
            op: None,
            slot: None,
        }
    }

    /// Send buffer `slot`, prepared for an AM and not sent (its Long
    /// write's slot and staging memory with it): dropping this gives it
    /// all back.
    #[inline]
    pub fn prepared(st: &'a mut State<T>, geo: &'a Geometry, slot: u32) -> Self {
        Held {
            st,
            geo,
            op: None,
            slot: Some(slot),
        }
    }

    /// Take a dynamic operation slot, or `None` if all are taken.
    #[inline]
    pub fn take_op(&mut self) -> Option<u32> {
        debug_assert!(self.op.is_none(), "one operation slot per guard");
        let id = self.st.ops.take()?;
        self.op = Some(id);
        Some(id)
    }

    /// Claim a free send buffer of `pool`, or `None` if all are taken.
    #[inline]
    pub fn claim_slot(&mut self, pool: usize) -> Option<u32> {
        debug_assert!(self.slot.is_none(), "one send buffer per guard");
        let slot = self.st.sends.claim(pool)?;
        self.slot = Some(slot);
        Some(slot)
    }

    /// The transport took the post (or the AM was prepared): what is held
    /// is the operation's now, released by its completion (or by commit
    /// or cancel). Consumes the guard without running its drop.
    #[inline]
    pub fn hand_over(self) {
        // Nothing of its own to free: it only borrows the state.
        std::mem::forget(self);
    }
}

impl<T: Transport> Deref for Held<'_, T> {
    type Target = State<T>;
    #[inline]
    fn deref(&self) -> &State<T> {
        self.st
    }
}

impl<T: Transport> DerefMut for Held<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<T> {
        self.st
    }
}

impl<T: Transport> Drop for Held<'_, T> {
    /// Free the operation slot, and the send buffer with what its Long
    /// reserved (write slot, staging memory): the kit's one
    /// free-and-release sequence.
    #[inline]
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            self.st.ops.free(op);
        }
        if let Some(slot) = self.slot.take() {
            self.st.unstage(slot as usize);
            self.st.sends.release(self.geo, slot as usize);
        }
    }
}

#[cfg(all(test, feature = "loopback"))]
mod tests {
    use super::*;
    use crate::geometry::{POOL_REQ, POOL_RMA};
    use crate::loopback::Loopback;
    use rgex_core::Rank;

    fn geo() -> Geometry {
        Geometry::small(4)
    }

    fn all_back(st: &State<Loopback>, g: &Geometry) -> bool {
        st.ops.all_back() && st.sends.all_back(g)
    }

    #[test]
    fn dropping_gives_everything_back() {
        let g = geo();
        let mut st = State::<Loopback>::new(
            &g,
            rgex_core::Locality::alone(Rank(0), g.size as u32).unwrap(),
            0,
        );
        {
            let mut held = Held::new(&mut st, &g);
            assert!(held.take_op().is_some());
            assert!(held.claim_slot(POOL_RMA).is_some());
            assert!(!all_back(&held, &g));
        }
        assert!(all_back(&st, &g));
    }

    #[test]
    fn handed_over_stays_taken_until_released() {
        let g = geo();
        let mut st = State::<Loopback>::new(
            &g,
            rgex_core::Locality::alone(Rank(0), g.size as u32).unwrap(),
            0,
        );
        let mut held = Held::new(&mut st, &g);
        let op = held.take_op().expect("a free slot");
        let slot = held.claim_slot(POOL_RMA).expect("a free buffer");
        held.hand_over();
        assert!(!st.ops.all_back() && !st.sends.all_back(&g));
        st.ops.free(op);
        st.sends.release(&g, slot as usize);
        assert!(all_back(&st, &g));
    }

    #[test]
    fn a_prepared_long_goes_back_whole() {
        let g = geo();
        let mut st = State::<Loopback>::new(
            &g,
            rgex_core::Locality::alone(Rank(0), g.size as u32).unwrap(),
            0,
        );
        let slot = st.sends.claim(POOL_REQ).expect("a free buffer");
        let op = st.ops.take().expect("a free slot");
        st.sends.set_long_op(slot as usize, op);
        st.sends.set_staging(
            slot as usize,
            crate::pools::Staging {
                mr: None,
                mem: vec![0u64; 4].into_boxed_slice(),
            },
        );
        drop(Held::prepared(&mut st, &g, slot));
        assert!(all_back(&st, &g));
        assert!(st.sends.staging(slot as usize).is_none());
        assert_eq!(st.sends.long_op(slot as usize), None);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "released twice")]
    fn releasing_a_handed_back_buffer_again_is_caught() {
        let g = geo();
        let mut st = State::<Loopback>::new(
            &g,
            rgex_core::Locality::alone(Rank(0), g.size as u32).unwrap(),
            0,
        );
        let slot = st.sends.claim(POOL_REQ).expect("a free buffer");
        drop(Held::prepared(&mut st, &g, slot));
        // A second cancel of the same AM.
        drop(Held::prepared(&mut st, &g, slot));
    }
}
