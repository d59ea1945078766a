//! The send-buffer pools (requests, replies, RMA bounce and atomic
//! operands) and the staging memory of Longs larger than a send buffer.

use crate::net::Net;
use crate::state::State;
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

impl<T: Transport> State<T> {
    /// A free send buffer of `pool`, in use once (see
    /// [`release_slot`](Self::release_slot)), or `None` if all are taken.
    #[inline]
    pub(crate) fn claim_slot(&mut self, pool: usize) -> Option<u32> {
        let slot = self.pools[pool].pop()?;
        self.slot_pending[slot as usize] = 1;
        Some(slot)
    }

    /// One use of send buffer `slot` ended; back to its pool after the last.
    #[inline]
    pub(crate) fn release_slot(&mut self, net: &Net<T>, slot: usize) {
        let p = &mut self.slot_pending[slot];
        *p = p.saturating_sub(1);
        if *p == 0 {
            self.pools[net.geo.pool_of(slot)].push(slot as u32);
        }
    }

    /// Staging memory of `len` bytes for a Long larger than a send buffer,
    /// registered when the network needs local descriptors.
    pub(crate) fn stage(&mut self, net: &Net<T>, len: usize) -> Result<Staging<T::Region>> {
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
}
