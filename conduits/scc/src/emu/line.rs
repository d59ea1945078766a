//! Cache lines: the 32-byte unit of the P54C caches, the mesh packets and
//! the write-combine buffer.

/// Bytes per cache line.
pub const LINE: usize = 32;

/// The data of one line.
pub(crate) type LineData = [u8; LINE];

/// Per byte of a line, the store sequence number of the data it holds (see
/// [`check`](super::check)); all zero when checking is off.
pub(crate) type LineIds = [u64; LINE];

/// Index of the line holding chip address `addr`.
#[inline]
pub(crate) fn line_of(addr: u64) -> u64 {
    addr / LINE as u64
}

/// One piece of an access that stays inside one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Chip address of the first byte.
    pub addr: u64,
    /// Offset of the first byte in the caller's buffer.
    pub buf: usize,
    /// Length (1..=32).
    pub len: usize,
}

impl Chunk {
    /// The line this chunk lies in.
    #[inline]
    pub fn line(&self) -> u64 {
        line_of(self.addr)
    }

    /// Offset of the first byte inside its line.
    #[inline]
    pub fn off(&self) -> usize {
        (self.addr % LINE as u64) as usize
    }
}

/// Split `[addr, addr + len)` into pieces that do not cross a line boundary.
/// (Lines never cross a page, so each piece also has one memory type.)
pub(crate) fn chunks(addr: u64, len: usize) -> impl Iterator<Item = Chunk> {
    let mut a = addr;
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let room = LINE - (a % LINE as u64) as usize;
        let n = room.min(len - done);
        let c = Chunk {
            addr: a,
            buf: done,
            len: n,
        };
        a += n as u64;
        done += n;
        Some(c)
    })
}

/// Bit mask with bits `[off, off + len)` set (a byte mask over one line).
#[inline]
pub(crate) fn byte_mask(off: usize, len: usize) -> u32 {
    debug_assert!(off + len <= LINE);
    if len == LINE {
        u32::MAX
    } else {
        ((1u32 << len) - 1) << off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_line_boundaries() {
        let v: Vec<_> = chunks(30, 40).collect();
        assert_eq!(
            v,
            vec![
                Chunk {
                    addr: 30,
                    buf: 0,
                    len: 2
                },
                Chunk {
                    addr: 32,
                    buf: 2,
                    len: 32
                },
                Chunk {
                    addr: 64,
                    buf: 34,
                    len: 6
                },
            ]
        );
        assert_eq!(chunks(0, 0).count(), 0);
        assert_eq!(v[1].line(), 1);
        assert_eq!(v[0].off(), 30);
    }

    #[test]
    fn masks() {
        assert_eq!(byte_mask(0, 32), u32::MAX);
        assert_eq!(byte_mask(4, 2), 0b11_0000);
        assert_eq!(byte_mask(31, 1), 1 << 31);
    }
}
