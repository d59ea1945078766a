//! The write-combine buffer (WCB): one per core, one line deep.
//!
//! Every store to an MPBT page goes through it (write-through from L1, or
//! straight through on an L1 write miss). Consecutive stores to the same
//! 32-byte line merge into it; it drains to memory (only the bytes actually
//! written, with a byte mask) when a store to another line arrives, or on an
//! explicit drain (on the real chip: a dummy store to another line, RCCE's
//! "fool the write combine buffer"). Nothing else drains it: not uncached
//! stores, not lock register accesses, not a flush. This is what makes the
//! "flag set before the data left the WCB" bug possible.
//!
//! Reads by the owning core see the WCB's bytes (store-to-load forwarding):
//! a core always observes its own program order, as every x86 core does for
//! its own stores; without it, a core that writes a message and reads it back
//! before draining would see garbage, a behaviour no protocol relies on and
//! that would only add noise to the checker, whose job is inter-core
//! visibility. Other cores never see WCB contents.

use super::line::{LineData, LineIds, LINE};

/// What a drain hands to memory.
pub(crate) struct Pending {
    pub line: u64,
    pub data: LineData,
    /// Byte mask of the bytes written.
    pub mask: u32,
    pub ids: LineIds,
}

/// The buffer.
pub(crate) struct Wcb {
    line: Option<u64>,
    data: LineData,
    mask: u32,
    ids: LineIds,
}

impl Wcb {
    pub(crate) fn new() -> Wcb {
        Wcb {
            line: None,
            data: [0; LINE],
            mask: 0,
            ids: [0; LINE],
        }
    }

    /// The line it holds, if any.
    pub(crate) fn line(&self) -> Option<u64> {
        self.line
    }

    /// Merge a store into the buffer. The buffer must be empty or hold `line`.
    pub(crate) fn put(&mut self, line: u64, off: usize, bytes: &[u8], id: u64) {
        debug_assert!(self.line.is_none() || self.line == Some(line));
        self.line = Some(line);
        self.data[off..off + bytes.len()].copy_from_slice(bytes);
        self.ids[off..off + bytes.len()].fill(id);
        self.mask |= super::line::byte_mask(off, bytes.len());
    }

    /// Take the contents for draining, leaving the buffer empty.
    pub(crate) fn take(&mut self) -> Option<Pending> {
        let line = self.line.take()?;
        let p = Pending {
            line,
            data: self.data,
            mask: self.mask,
            ids: self.ids,
        };
        self.mask = 0;
        Some(p)
    }

    /// Overlay the buffered bytes of `line` onto `data`/`ids` (which hold
    /// the whole line); returns the mask of bytes overlaid.
    pub(crate) fn forward(&self, line: u64, data: &mut LineData, ids: &mut LineIds) -> u32 {
        if self.line != Some(line) {
            return 0;
        }
        for i in 0..LINE {
            if self.mask & (1 << i) != 0 {
                data[i] = self.data[i];
                ids[i] = self.ids[i];
            }
        }
        self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_forward_take() {
        let mut w = Wcb::new();
        assert!(w.take().is_none());
        w.put(5, 0, &[1, 2], 10);
        w.put(5, 4, &[3], 11);
        assert_eq!(w.line(), Some(5));
        let mut d = [0u8; LINE];
        let mut ids = [0u64; LINE];
        assert_eq!(w.forward(6, &mut d, &mut ids), 0);
        assert_eq!(w.forward(5, &mut d, &mut ids), 0b10011);
        assert_eq!(&d[..5], &[1, 2, 0, 0, 3]);
        assert_eq!(ids[4], 11);
        let p = w.take().unwrap();
        assert_eq!((p.line, p.mask), (5, 0b10011));
        assert_eq!(w.line(), None);
    }
}
