//! Symmetric addresses: a pointer into this PE's symmetric heap is an
//! offset of its rgex segment, and the same offset on another PE is the
//! same object there. Anything else is refused, naming the call, the
//! argument, the address and the heap's bounds.

use crate::fatal::fatal;
use crate::state::Shmem;
use rgex::{GlobalAddr, Rank};
use std::ffi::c_int;

impl Shmem {
    /// The base of this PE's heap in this process.
    #[inline]
    pub fn base(&self) -> *mut u8 {
        self.ep.segment().as_ptr()
    }

    /// `pe` as a rank, or the end of the job naming `what` and the range.
    #[inline]
    pub fn rank(&self, what: &str, pe: c_int) -> Rank {
        match u32::try_from(pe) {
            Ok(p) if p < self.n => Rank(p),
            _ => fatal(
                Some(self.me),
                what,
                format_args!(
                    "PE {pe} is out of range: the job has PEs 0..={}",
                    self.n - 1
                ),
            ),
        }
    }

    /// The rgex offset of `len` bytes at `ptr`, if they lie in the heap
    /// (below the heap's length) or the static data (its client segment's
    /// offsets, see [`is_static`](Self::is_static)).
    #[inline]
    pub fn try_offset(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let heap = (ptr as usize)
            .checked_sub(self.base() as usize)
            .map(|o| o as u64)
            .and_then(|off| (off.checked_add(len as u64)? <= self.heap.len()).then_some(off));
        heap.or_else(|| self.statics.as_ref()?.offset(ptr, len))
    }

    /// True for an offset of the static data (not the heap).
    #[inline]
    pub fn is_static(&self, offset: u64) -> bool {
        offset >= self.heap.len()
    }

    /// The heap offset of `len` bytes at `ptr` (the argument `arg` of
    /// `what`), or the end of the job naming them and the heap's bounds.
    #[inline]
    pub fn offset(&self, what: &str, arg: &str, ptr: *const u8, len: usize) -> u64 {
        match self.try_offset(ptr, len) {
            Some(off) => off,
            None => self.not_symmetric(what, arg, ptr, len),
        }
    }

    #[cold]
    fn not_symmetric(&self, what: &str, arg: &str, ptr: *const u8, len: usize) -> ! {
        let base = self.base() as usize;
        fatal(
            Some(self.me),
            what,
            format_args!(
                "{arg} = {ptr:p} ({len} bytes) is not symmetric: the symmetric heap is \
                 {base:#x}..{:#x} ({} bytes) and the static data {:#x}..{:#x} (memory from \
                 shmem_malloc, shmem_calloc, shmem_align and shmem_realloc, and the \
                 program's global and static variables, are symmetric)",
                base + self.heap.len() as usize,
                self.heap.len(),
                self.statics.as_ref().map_or(0, |t| t.start),
                self.statics.as_ref().map_or(0, |t| t.start + t.len),
            ),
        )
    }

    /// The object of `len` bytes at the symmetric `ptr` on `pe`.
    #[inline]
    pub fn remote(
        &self,
        what: &str,
        arg: &str,
        ptr: *const u8,
        len: usize,
        pe: c_int,
    ) -> GlobalAddr {
        let rank = self.rank(what, pe);
        GlobalAddr::new(rank, self.offset(what, arg, ptr, len))
    }

    /// The local address, on this PE, of the symmetric object at `ptr`
    /// of `pe`, if this process can load and store it (`shmem_ptr`).
    pub fn local_address(&self, ptr: *const u8, pe: c_int) -> Option<*mut u8> {
        let rank = Rank(u32::try_from(pe).ok().filter(|&p| p < self.n)?);
        let off = self.try_offset(ptr, 1)?;
        if rank.0 == self.me {
            return Some(ptr.cast_mut());
        }
        if self.is_static(off) {
            return None; // peers' static data is not mapped here
        }
        let seg = self.ep.locality().mapped_segment(rank)?;
        (off < seg.len() as u64).then(|| {
            // SAFETY: `off` is inside the peer's mapped segment (checked
            // just above), which stays mapped for the conduit's life.
            unsafe { seg.as_ptr().add(off as usize) }
        })
    }
}
