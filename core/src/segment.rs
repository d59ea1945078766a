//! Segments: the memory a rank exposes to remote access.

use crate::{Error, Rank, Result};
use std::ptr::NonNull;

/// The alignment of the address of every mapping that holds a segment
/// on the conduits whose segments smp maps (smp, ofi, ibv): 1 GiB, the
/// same on every rank. Each rank's segment lies at the same offset of its
/// mapping, so the ranks' segment bases agree modulo any power of two up
/// to this, and an allocator over the segment (OpenSHMEM's `shmem_align`)
/// can give every rank the same offset for an aligned block. It costs
/// address space only: the slack is reserved while mapping, then given
/// back. (scc places segments inside one chip; its bases agree modulo
/// less.)
///
/// ```
/// assert!(rgex_core::segment::BASE_ALIGN.is_power_of_two());
/// ```
pub const BASE_ALIGN: usize = 1 << 30;

/// The offsets each client segment owns (segments over client memory,
/// registered by rgex-endpoint): client segment `k` starts at
/// `k * CLIENT_SEGMENT_STRIDE` (1 TiB apart) of every rank's address
/// space; the primordial segment, smaller, keeps the offsets below.
///
/// ```
/// use rgex_core::segment::{client_segment_of, CLIENT_SEGMENT_STRIDE};
/// assert_eq!(client_segment_of(3 * CLIENT_SEGMENT_STRIDE + 7), Some(3));
/// assert_eq!(client_segment_of(4096), None);
/// ```
pub const CLIENT_SEGMENT_STRIDE: u64 = 1 << 40;

/// The client segment an offset belongs to: `Some(k)` for one, `None` for
/// the primordial segment's offsets.
#[inline]
pub fn client_segment_of(offset: u64) -> Option<usize> {
    let k = offset / CLIENT_SEGMENT_STRIDE;
    (k > 0).then_some(k as usize)
}

/// Check that `[offset, offset + len)` lies inside a segment of `seg_len`
/// bytes on `rank`. Every remote access goes through this (or a conduit's
/// equivalent) before a byte moves.
///
/// ```
/// use rgex_core::{segment::check_range, Rank};
/// assert!(check_range(Rank(0), 100, 0, 100).is_ok());
/// assert!(check_range(Rank(0), 100, 90, 11).is_err());
/// assert!(check_range(Rank(0), 100, u64::MAX, 2).is_err()); // overflow
/// ```
#[inline]
pub fn check_range(rank: Rank, seg_len: u64, offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= seg_len => Ok(()),
        _ => Err(Error::OutOfSegment {
            rank,
            offset,
            len,
            seg_len,
        }),
    }
}

/// This rank's segment as mapped in this process: a base pointer and a length.
///
/// Remote ranks may write any byte of it at any time (that is its purpose),
/// so rgex never hands out a long-lived `&[u8]` to it; reads and writes are
/// copies, bounds-checked against the length.
///
/// ```
/// # let mut backing = vec![0u8; 64];
/// # let seg = unsafe { rgex_core::Segment::from_raw(rgex_core::Rank(0), std::ptr::NonNull::new(backing.as_mut_ptr()).unwrap(), 64) };
/// seg.write(8, b"hello").unwrap();
/// let mut out = [0u8; 5];
/// seg.read(8, &mut out).unwrap();
/// assert_eq!(&out, b"hello");
/// assert!(seg.write(62, b"abc").is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    rank: Rank,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a Segment is a (pointer, length) pair describing shared memory
// that every thread of the process may access; all access is through raw
// copies, never through references that could alias a concurrent writer.
unsafe impl Send for Segment {}
// SAFETY: as above; the type itself holds no interior state.
unsafe impl Sync for Segment {}

impl Segment {
    /// Describe `len` bytes at `base`, owned by `rank`.
    ///
    /// # Safety
    /// `base..base+len` must stay mapped, readable and writable for as long
    /// as this value (and its copies) are used.
    pub unsafe fn from_raw(rank: Rank, base: NonNull<u8>, len: usize) -> Self {
        Segment { rank, base, len }
    }

    /// The rank that owns this segment.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length segment.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Base address in this process.
    pub fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Bounds-check `[offset, offset+len)`.
    pub fn check(&self, offset: u64, len: u64) -> Result<()> {
        check_range(self.rank, self.len as u64, offset, len)
    }

    /// Pointer to `offset` after checking `[offset, offset+len)` is inside.
    pub fn ptr_at(&self, offset: u64, len: usize) -> Result<*mut u8> {
        self.check(offset, len as u64)?;
        // SAFETY: offset + len <= self.len was just checked, so the result
        // stays inside the mapping.
        Ok(unsafe { self.base.as_ptr().add(offset as usize) })
    }

    /// Copy `data` into the segment at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let dst = self.ptr_at(offset, data.len())?;
        // SAFETY: dst..dst+len is inside the mapping (checked above) and
        // cannot overlap `data`, a Rust slice the caller owns.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Copy from the segment at `offset` into `out`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let src = self.ptr_at(offset, out.len())?;
        // SAFETY: src..src+len is inside the mapping (checked above); `out`
        // is an exclusive Rust slice, so the two cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Read a native-endian `u64` at `offset`.
    pub fn read_u64(&self, offset: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(offset, &mut b)?;
        Ok(u64::from_ne_bytes(b))
    }

    /// Write a native-endian `u64` at `offset`.
    pub fn write_u64(&self, offset: u64, v: u64) -> Result<()> {
        self.write(offset, &v.to_ne_bytes())
    }
}
