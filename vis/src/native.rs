//! The native mechanism: the whole chunk list handed to the conduit in one
//! call (`Conduit::try_putv`/`try_getv`), for a conduit whose network
//! gathers and scatters itself (the VIS override point of the SPI).

use crate::direct::Local;
use crate::engine::Track;
use crate::{Shape, Vis};
use rgex_core::conduit::Chunk;
use rgex_core::{Event, Flags, Rank, Result};

impl Vis {
    /// One vector transfer of every chunk of `shape` by the conduit, then
    /// one event (or the NBI counter); a put waits for its local completion
    /// before return, as the RMA mechanism's does. A busy conduit is polled
    /// and asked again, unless the transfer is IMMEDIATE
    /// (`Endpoint::inject_or_wait`).
    ///
    /// # Safety
    /// As [`start`](Self::start).
    pub(crate) unsafe fn native(
        &self,
        peer: Rank,
        shape: &Shape,
        local: Local,
        track: Track,
        flags: Flags,
    ) -> Result<Event> {
        let (base, put) = match local {
            Local::Src(p) => (p.cast_mut(), true),
            Local::Dst(p) => (p, false),
        };
        let mut chunks = Vec::with_capacity(shape.chunks() as usize);
        shape.for_each(|offset, l, len| {
            chunks.push(Chunk {
                offset,
                // SAFETY: the chunk is inside the validated local side.
                local: unsafe { base.add(l as usize) },
                len,
            })
        });
        let (lc, rc) = self.counters(track);
        let conduit = self.ep.conduit();
        self.ep.inject_or_wait(flags, || {
            // SAFETY: every chunk's local side is valid as `start`'s caller
            // guarantees: a source until return (we wait for `lc` below), a
            // destination until the event does.
            unsafe {
                if put {
                    conduit.try_putv(peer, &chunks, &lc, &rc)
                } else {
                    conduit.try_getv(peer, &chunks, &rc)
                }
            }
        })?;
        self.finish(lc, rc, track)
    }
}
