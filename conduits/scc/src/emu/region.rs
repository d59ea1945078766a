//! The shared region that stands for the chip's memories: a POSIX
//! shared-memory object (several processes) or an anonymous shared mapping
//! (one process, or a process and its forked children).
//!
//! The whole region is only ever accessed as `AtomicU64` words. Other
//! processes write it concurrently, so plain loads/stores (or `ptr::copy`)
//! would be data races and undefined behaviour in Rust's model; atomics of a
//! single size are defined whatever the other side does, and on x86-64 a
//! relaxed/acquire load or release store of an aligned word is an ordinary
//! `mov`, so the price is small. Sub-word writes are compare-and-swap loops
//! on the containing word (never a racing mixed-size access).
//!
//! Ordering of the emulated memory itself: every data load is `Acquire` and
//! every data store `Release`. The emulated cores are in-order P54Cs whose
//! memory transactions leave in program order, so a protocol may rely on
//! "data that reached memory before my flag reached memory is visible to
//! whoever sees the flag" (message passing). Release/acquire gives exactly
//! that causality between the host processes; it does not give sequential
//! consistency (store-buffer litmus tests), which the P54C with its posted
//! write buffers does not give either.

use rgex_core::{Error, Result};
use rgex_smp::shm::ShmMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

enum Backing {
    /// An anonymous `MAP_SHARED` mapping we made and unmap on drop.
    Anon,
    /// A named object, unmapped by `ShmMap`'s drop.
    Shm(#[allow(dead_code)] ShmMap),
}

/// A mapped region of `len` bytes (a multiple of 8, page aligned base).
pub(crate) struct Region {
    base: NonNull<u8>,
    len: usize,
    backing: Backing,
}

// SAFETY: the region is shared memory reached only through `&AtomicU64`
// (see `words`); the pointer itself is immutable after construction.
unsafe impl Send for Region {}
// SAFETY: as above: all access is through atomics, which are Sync.
unsafe impl Sync for Region {}

impl Region {
    /// An anonymous shared mapping of `len` zero bytes.
    pub(crate) fn anon(len: usize) -> Result<Region> {
        // SAFETY: a fresh anonymous mapping; the kernel picks the address and
        // no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(format!(
                "mmap of an anonymous {len}-byte region for the emulated scc chip"
            )));
        }
        let base = NonNull::new(p.cast::<u8>()).expect("mmap returned a null mapping");
        Ok(Region {
            base,
            len,
            backing: Backing::Anon,
        })
    }

    /// Create the named object `name` of `len` zero bytes and map it.
    pub(crate) fn create(name: &str, len: usize) -> Result<Region> {
        let m = ShmMap::create(name, len)?;
        Ok(Region {
            base: m.base(),
            len,
            backing: Backing::Shm(m),
        })
    }

    /// Map the existing named object `name`, which is at least `len` bytes.
    pub(crate) fn open(name: &str, len: usize) -> Result<Region> {
        let m = ShmMap::open(name, len)?;
        Ok(Region {
            base: m.base(),
            len,
            backing: Backing::Shm(m),
        })
    }

    /// The whole region as words.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        debug_assert_eq!(self.base.as_ptr() as usize % 8, 0);
        // SAFETY: `base` is page aligned (mmap) and the mapping is valid for
        // `len` bytes for as long as `self` lives (unmapped only on drop);
        // `AtomicU64` has the size and alignment of `u64` and every bit
        // pattern is valid; we never hand out non-atomic references to it,
        // so concurrent writes by other processes are atomic accesses too.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().cast::<AtomicU64>(), self.len / 8) }
    }

    /// Raw pointer to byte offset `off` (`off <= len`), for callers that
    /// hand chip memory to code outside the emulation (a rank's own
    /// segment as an rgex `Segment`). Nothing is dereferenced here.
    #[inline]
    pub(crate) fn ptr(&self, off: usize) -> *mut u8 {
        assert!(
            off <= self.len,
            "offset {off} past the {}-byte region",
            self.len
        );
        // SAFETY: `off <= len`, so the result is inside the mapping or one
        // past its end, which `add` allows.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// The word at byte offset `off` (8-aligned).
    #[inline]
    pub(crate) fn w(&self, off: usize) -> &AtomicU64 {
        debug_assert_eq!(off % 8, 0);
        &self.words()[off / 8]
    }

    /// Copy `out.len()` bytes starting at byte offset `off` out of memory.
    pub(crate) fn load_bytes(&self, off: usize, out: &mut [u8]) {
        let words = self.words();
        let mut i = 0;
        while i < out.len() {
            let a = off + i;
            let wi = a / 8;
            let sh = a % 8;
            let n = (8 - sh).min(out.len() - i);
            // Acquire: see the module doc (message-passing order of the
            // emulated memory).
            let v = words[wi].load(Ordering::Acquire).to_ne_bytes();
            out[i..i + n].copy_from_slice(&v[sh..sh + n]);
            i += n;
        }
    }

    /// Store `data` at byte offset `off`, touching no other byte.
    pub(crate) fn store_bytes(&self, off: usize, data: &[u8]) {
        let words = self.words();
        let mut i = 0;
        while i < data.len() {
            let a = off + i;
            let wi = a / 8;
            let sh = a % 8;
            let n = (8 - sh).min(data.len() - i);
            let mut val = [0u8; 8];
            let mut mask = [0u8; 8];
            val[sh..sh + n].copy_from_slice(&data[i..i + n]);
            mask[sh..sh + n].fill(0xff);
            store_masked(
                &words[wi],
                u64::from_ne_bytes(val),
                u64::from_ne_bytes(mask),
            );
            i += n;
        }
    }
}

/// Store the bytes of `val` selected by `mask` into `w`, leaving the others.
#[inline]
pub(crate) fn store_masked(w: &AtomicU64, val: u64, mask: u64) {
    if mask == u64::MAX {
        // Release: see the module doc.
        w.store(val, Ordering::Release);
    } else if mask != 0 {
        // AcqRel on success: the store half is a data store (Release), the
        // load half a data load (Acquire). The failure load is only the
        // retry value, Relaxed is enough for it. Bytes outside `mask` that
        // another process writes concurrently are preserved by the CAS.
        let _ = w.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |old| {
            Some((old & !mask) | (val & mask))
        });
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Backing::Anon = self.backing {
            // SAFETY: base/len are exactly the anonymous mapping made in
            // `anon`, and no reference into it outlives `self`.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_at_any_alignment() {
        let r = Region::anon(4096).unwrap();
        let data: Vec<u8> = (1..=29).collect();
        r.store_bytes(3, &data);
        let mut out = vec![0u8; 29];
        r.load_bytes(3, &mut out);
        assert_eq!(out, data);
        let mut edge = [9u8; 4];
        r.load_bytes(0, &mut edge);
        assert_eq!(edge, [0, 0, 0, 1]);
        r.load_bytes(32, &mut edge);
        assert_eq!(edge, [0, 0, 0, 0]);
    }
}
