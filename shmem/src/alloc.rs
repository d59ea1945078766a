//! The symmetric heap's routines (OpenSHMEM 1.5 section 9.3):
//! `shmem_malloc`, `shmem_calloc`, `shmem_align`, `shmem_realloc`,
//! `shmem_free`, `shmem_malloc_with_hints`.
//!
//! Each is collective: every PE allocates locally, deterministically
//! (see [`Heap`](crate::heap::Heap)), then one allreduce checks that the
//! PEs passed the same arguments and got the same offset, and is the
//! barrier the specification asks for (no PE returns before every PE
//! has its block). A mismatch ends the job naming the argument and the
//! range the PEs gave; so does running out of heap.

use crate::fatal::{fatal, OrDie};
use crate::state::{self, Shmem};
use rgex::ReduceOp;
use std::ffi::{c_long, c_void};

/// The largest alignment `shmem_align` gives: the one every PE's heap
/// base shares ([`rgex::segment::BASE_ALIGN`], 1 GiB).
pub const MAX_ALIGN: u64 = rgex::segment::BASE_ALIGN as u64;

/// Check that every PE passed the same `values` (named by `names`) to
/// `what`; the allreduce is also the call's barrier.
fn agree(s: &Shmem, what: &str, names: &[&str], values: &[u64]) {
    let mut both: Vec<u64> = values.iter().flat_map(|&v| [v, !v]).collect();
    both = s.world.allreduce(&both, ReduceOp::Max).or_die(s.me, what);
    for (i, (&name, &v)) in names.iter().zip(values).enumerate() {
        let (max, min) = (both[2 * i], !both[2 * i + 1]);
        if min != max {
            fatal(
                Some(s.me),
                what,
                format_args!(
                    "a collective with mismatched arguments: this PE's {name} is {v}, but the \
                     PEs' range from {min} to {max} (every PE must make the same call)"
                ),
            );
        }
    }
}

/// Allocate `size` bytes at `align` on every PE (collective).
fn allocate(s: &Shmem, what: &str, size: u64, align: u64) -> *mut c_void {
    if size == 0 {
        agree(s, what, &["size", "offset"], &[0, 0]);
        return std::ptr::null_mut();
    }
    if align > MAX_ALIGN {
        fatal(
            Some(s.me),
            what,
            format_args!(
                "alignment = {align} is more than the {MAX_ALIGN} bytes that every PE's heap \
                 base shares (the most shmem_align supports)"
            ),
        );
    }
    if align > crate::heap::MIN_ALIGN {
        // An address aligned on every PE needs one offset: the PEs' heap
        // bases must agree modulo the alignment. rgex maps every segment
        // at the same offset of a mapping aligned to MAX_ALIGN (on smp,
        // ofi and ibv), so they do; scc places segments in one chip,
        // where they may not. Said as such, not as a mismatch of offsets.
        let skew = s.base() as u64 % align;
        agree(
            s,
            what,
            &["size", "alignment", "heap base modulo the alignment"],
            &[size, align, skew],
        );
    }
    let off = match s.heap.alloc_from(size, align, s.base() as u64) {
        Ok(off) => off,
        Err(e) => fatal(Some(s.me), what, e),
    };
    agree(
        s,
        what,
        &["size", "alignment", "offset"],
        &[size, align, off],
    );
    // SAFETY: `off` is inside the heap, which is this PE's segment.
    unsafe { s.base().add(off as usize).cast() }
}

/// The offset of a block `ptr` names (from an earlier allocation), or
/// the end of the job naming `what` and the pointer.
fn block_of(s: &Shmem, what: &str, ptr: *mut c_void) -> (u64, u64) {
    let off = s.offset(what, "ptr", ptr.cast(), 1);
    match s.heap.block(off) {
        Some(len) => (off, len),
        None => fatal(
            Some(s.me),
            what,
            format_args!(
                "ptr = {ptr:p} is not a block shmem_malloc, shmem_calloc, shmem_align or \
                 shmem_realloc returned (or it was freed already)"
            ),
        ),
    }
}

entry! {
    /// `void *shmem_malloc(size_t size)`.
    pub extern "C" fn shmem_malloc / pshmem_malloc(size: usize) -> *mut c_void {
        let s = state::get("shmem_malloc");
        allocate(s, "shmem_malloc", size as u64, 1)
    }
}

entry! {
    /// `void *shmem_malloc_with_hints(size_t size, long hints)`: hints are
    /// accepted and change nothing yet.
    pub extern "C" fn shmem_malloc_with_hints / pshmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
        let s = state::get("shmem_malloc_with_hints");
        allocate(s, "shmem_malloc_with_hints", size as u64, 1)
    }
}

entry! {
    /// `void *shmem_calloc(size_t count, size_t size)`: zeroed.
    pub extern "C" fn shmem_calloc / pshmem_calloc(count: usize, size: usize) -> *mut c_void {
        let what = "shmem_calloc";
        let s = state::get(what);
        let Some(bytes) = count.checked_mul(size) else {
            fatal(
                Some(s.me),
                what,
                format_args!("count = {count} times size = {size} overflows a size_t"),
            );
        };
        if bytes == 0 {
            agree(s, what, &["size", "offset"], &[0, 0]);
            return std::ptr::null_mut();
        }
        let off = s
            .heap
            .alloc(bytes as u64, 1)
            .unwrap_or_else(|e| fatal(Some(s.me), what, e));
        // SAFETY: the block `off..off + bytes` is inside this PE's heap and
        // no PE can reach it before the allreduce below.
        let p = unsafe { s.base().add(off as usize) };
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(p, 0, bytes) };
        agree(s, what, &["count * size", "offset"], &[bytes as u64, off]);
        p.cast()
    }
}

entry! {
    /// `void *shmem_align(size_t alignment, size_t size)`.
    pub extern "C" fn shmem_align / pshmem_align(alignment: usize, size: usize) -> *mut c_void {
        let what = "shmem_align";
        let s = state::get(what);
        if !alignment.is_power_of_two() {
            fatal(
                Some(s.me),
                what,
                format_args!("alignment = {alignment} is not a power of two"),
            );
        }
        allocate(s, what, size as u64, alignment as u64)
    }
}

entry! {
    /// `void shmem_free(void *ptr)`: a barrier first, then the block is free
    /// on every PE. NULL frees nothing (the barrier still runs).
    pub extern "C" fn shmem_free / pshmem_free(ptr: *mut c_void) {
        let what = "shmem_free";
        let s = state::get(what);
        crate::order::quiet(s, what);
        if ptr.is_null() {
            agree(s, what, &["ptr's offset"], &[u64::MAX]);
            return;
        }
        let (off, _) = block_of(s, what, ptr);
        agree(s, what, &["ptr's offset"], &[off]);
        s.heap.free(off);
    }
}

entry! {
    /// `void *shmem_realloc(void *ptr, size_t size)`: the block grown or
    /// shrunk, its first `min(old, size)` bytes kept; NULL `ptr` is
    /// `shmem_malloc(size)`, size 0 is `shmem_free(ptr)`.
    pub extern "C" fn shmem_realloc / pshmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
        let what = "shmem_realloc";
        let s = state::get(what);
        if ptr.is_null() {
            return allocate(s, what, size as u64, 1);
        }
        crate::order::quiet(s, what);
        let (old, old_len) = block_of(s, what, ptr);
        // Every PE is done with the old block before it moves.
        agree(s, what, &["ptr's offset", "size"], &[old, size as u64]);
        if size == 0 {
            s.heap.free(old);
            return std::ptr::null_mut();
        }
        if size as u64 <= old_len {
            return ptr; // it fits where it is, on every PE alike
        }
        s.heap.free(old);
        // First fit from the freed block on: it may land at the same offset
        // (when the block after it is free), else elsewhere; either way the
        // same on every PE. The copy is a memmove (the ranges may overlap).
        let new = s
            .heap
            .alloc(size as u64, 1)
            .unwrap_or_else(|e| fatal(Some(s.me), what, e));
        // SAFETY: both ranges lie in this PE's heap; `old_len` bytes of the
        // old block are still there (a free changes no bytes).
        unsafe {
            std::ptr::copy(
                s.base().add(old as usize),
                s.base().add(new as usize),
                old_len.min(size as u64) as usize,
            )
        };
        agree(s, what, &["the new offset"], &[new]);
        // SAFETY: inside the heap.
        unsafe { s.base().add(new as usize).cast() }
    }
}
