//! The native mechanism: the whole chunk list handed to the conduit in one
//! call (`Conduit::try_putv`/`try_getv`), for a conduit whose network
//! gathers and scatters itself (the VIS override point of the SPI).

use crate::direct::Local;
use crate::engine::Track;
use crate::{Shape, Vis};
use rgex_core::conduit::Chunk;
use rgex_core::{Completion, Error, Event, Flags, Rank, Result};

impl Vis {
    /// One vector transfer of every chunk of `shape` by the conduit, then
    /// one event (or the NBI counter); a put waits for its local completion
    /// before return, as the RMA mechanism's does. A busy conduit is polled
    /// and asked again, unless the transfer is IMMEDIATE.
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
        let (lc, rc) = match track {
            Track::Event => (Completion::new(0), Completion::new(0)),
            Track::Nbi(cat) => (Completion::new(0), self.ep.nbi_counter(cat)),
        };
        let conduit = self.ep.conduit();
        loop {
            // SAFETY: every chunk's local side is valid as `start`'s caller
            // guarantees: a source until return (we wait for `lc` below), a
            // destination until the event does.
            let r = unsafe {
                if put {
                    conduit.try_putv(peer, &chunks, &lc, &rc)
                } else {
                    conduit.try_getv(peer, &chunks, &rc)
                }
            };
            match r {
                Ok(()) => break,
                Err(Error::WouldBlock { .. }) if !flags.contains(Flags::IMMEDIATE) => {
                    self.ep.poll()?;
                }
                Err(e) => return Err(e),
            }
        }
        self.event(lc).wait()?;
        Ok(match track {
            Track::Event => self.event(rc),
            Track::Nbi(_) => Event::done(),
        })
    }
}
