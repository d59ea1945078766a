//! The deprecated active-set collectives (OpenSHMEM 1.5 section 9.9,
//! kept for old programs): `shmem_barrier`, `shmem_sync` (active set),
//! `shmem_broadcast32`/`64`, `shmem_collect32`/`64`, `shmem_fcollect32`/
//! `64`, `shmem_alltoall32`/`64`, `shmem_alltoalls32`/`64` and the
//! `shmem_TYPE_OP_to_all` reductions.
//!
//! An active set is the world PEs `PE_start + i * 2^logPE_stride` for
//! `i` below `PE_size`; only its members call. When it is the whole world
//! in order, the world team's collectives serve. Otherwise it has no rgex
//! team (a split is collective over its parent, and the other PEs do not
//! call), so the routine runs over RMA and AMOs on the caller's symmetric
//! `pSync`, as the specification intends:
//! - the barrier: each member adds 1 to `pSync[0]` of the set's first PE,
//!   which waits for `PE_size - 1`, takes them back, then adds 1 to
//!   `pSync[1]` of every other member, which each waits for and takes
//!   back (so `pSync` is back to `SHMEM_SYNC_VALUE` on return, and the
//!   next call may reuse it at once: every access is a fetching AMO, and
//!   counts are added and subtracted, never overwritten);
//! - the data moves by puts into the members' symmetric `dest` (a
//!   reduction gets every member's `source`), then a quiet and that
//!   barrier; collect passes the running offset member to member in
//!   `pSync[2]`.

use crate::amo;
use crate::fatal::fatal;
use crate::state::{self, Shmem};
use rgex::{AtomicOp, Backoff};
use std::ffi::{c_int, c_long};

/// `SHMEM_*_SYNC_SIZE`: the longs of `pSync` the routines use (three; 4
/// leaves room).
pub const SYNC_SIZE: usize = 4;

/// An active set, checked.
#[derive(Clone, Copy, Debug)]
pub struct Set {
    /// The first world PE.
    pub start: u32,
    /// The distance between members.
    pub stride: u32,
    /// The members.
    pub size: u32,
    /// This PE's index in it.
    pub me: u32,
}

impl Set {
    /// The world PE of member `i`.
    pub fn pe(&self, i: u32) -> c_int {
        (self.start + i * self.stride) as c_int
    }

    /// True when the set is the whole world in order.
    fn is_world(&self, n: u32) -> bool {
        self.start == 0 && self.size == n && (self.stride == 1 || n == 1)
    }
}

/// The active set of a call, or the end of the job naming the argument
/// and the job's size.
pub fn set_of(s: &Shmem, what: &str, start: c_int, log_stride: c_int, size: c_int) -> Set {
    let bad = |why: String| -> ! { fatal(Some(s.me), what, why) };
    if !(0..31).contains(&log_stride) {
        bad(format!(
            "logPE_stride = {log_stride} is not between 0 and 30"
        ));
    }
    let stride = 1i64 << log_stride;
    let (st, sz) = (i64::from(start), i64::from(size));
    let n = i64::from(s.n);
    if st < 0 || sz < 1 || st + stride * (sz - 1) >= n {
        bad(format!(
            "the active set PE_start = {start}, logPE_stride = {log_stride}, PE_size = {size} \
             is not within the job's PEs 0..={}",
            n - 1
        ));
    }
    let me = i64::from(s.me);
    if me < st || (me - st) % stride != 0 || (me - st) / stride >= sz {
        bad(format!(
            "this PE is not in the active set PE_start = {start}, logPE_stride = {log_stride}, \
             PE_size = {size} (only its members call)"
        ));
    }
    Set {
        start: st as u32,
        stride: stride as u32,
        size: sz as u32,
        me: ((me - st) / stride) as u32,
    }
}

/// Wait until this PE's `word` (of `pSync`) satisfies `done`, reading it
/// by AMO (the word is written by peers' AMOs), with progress.
fn wait_word(s: &Shmem, what: &str, word: *const i64, done: impl Fn(i64) -> bool) -> i64 {
    let mut backoff = Backoff::new(s.ep.polite());
    loop {
        let v = amo::op(what, word, AtomicOp::Get, 0, 0, s.me as c_int);
        if done(v) {
            return v;
        }
        if crate::fatal::OrDie::or_die(s.ep.poll(), s.me, what) == 0 {
            backoff.snooze();
        } else {
            backoff.reset();
        }
    }
}

/// The active set's barrier over `psync` (no quiet): see the module docs.
fn barrier(s: &Shmem, what: &str, set: Set, psync: *mut c_long) {
    if set.is_world(s.n) {
        crate::fatal::OrDie::or_die(s.teams.world.team.barrier(), s.me, what);
        return;
    }
    if psync.is_null() {
        fatal(Some(s.me), what, "pSync is NULL");
    }
    let count = psync.cast::<i64>();
    let release = psync.cast::<i64>().wrapping_add(1);
    let me = s.me as c_int;
    // Every access is a fetching AMO: it has happened when it returns
    // (a non-fetching one may complete later), so the steps keep their
    // order across PEs. The counts are added and taken back, never set:
    // a member's add for the next barrier, arriving early, is kept.
    if set.me == 0 {
        let want = i64::from(set.size) - 1;
        wait_word(s, what, count, |v| v >= want);
        amo::op(what, count, AtomicOp::Fadd, -want, 0, me);
        for i in 1..set.size {
            amo::op(what, release, AtomicOp::Fadd, 1, 0, set.pe(i));
        }
    } else {
        amo::op(what, count, AtomicOp::Fadd, 1, 0, set.pe(0));
        wait_word(s, what, release, |v| v != 0);
        amo::op(what, release, AtomicOp::Fadd, -1, 0, me);
    }
}

entry! {
    /// `void shmem_barrier(int PE_start, int logPE_stride, int PE_size,
    /// long *pSync)`: quiet, then the active set's barrier.
    pub extern "C" fn shmem_barrier / pshmem_barrier(start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
        let what = "shmem_barrier";
        let s = state::get(what);
        let set = set_of(s, what, start, log_stride, size);
        crate::order::quiet(s, what);
        barrier(s, what, set, psync);
    }
}

entry! {
    /// `void shmem_sync(int PE_start, int logPE_stride, int PE_size, long
    /// *pSync)`: the active set's barrier, without quiet (`shmem.h` sends a
    /// one-argument `shmem_sync(team)` to `shmem_team_sync`).
    pub extern "C" fn shmem_sync / pshmem_sync(start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) {
        let what = "shmem_sync";
        let s = state::get(what);
        let set = set_of(s, what, start, log_stride, size);
        barrier(s, what, set, psync);
    }
}

/// Quiet, then the barrier: what ends every data routine below.
fn finish(s: &Shmem, what: &str, set: Set, psync: *mut c_long) {
    crate::order::quiet(s, what);
    barrier(s, what, set, psync);
}

/// Put `bytes` from `source` into member `i`'s `dest` at `at`.
///
/// # Safety
/// `source` readable for `bytes`.
unsafe fn put_to(
    what: &str,
    set: Set,
    i: u32,
    dest: *mut u8,
    at: usize,
    source: *const u8,
    bytes: usize,
) {
    // SAFETY: forwarded; dest is checked symmetric by the put.
    unsafe { crate::rma::put(what, dest.wrapping_add(at), source, bytes, set.pe(i)) }
}

/// `shmem_broadcast32`/`64`: member `root`'s `source` into every other
/// member's `dest` (the root's own `dest` is not written).
///
/// # Safety
/// `source` readable and `dest` symmetric and writable for `bytes`.
#[allow(clippy::too_many_arguments)] // the C routine's, plus the name
pub unsafe fn broadcast(
    what: &str,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    root: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
) {
    let s = state::get(what);
    let set = set_of(s, what, start, log_stride, size);
    if root < 0 || root as u32 >= set.size {
        fatal(
            Some(s.me),
            what,
            format_args!(
                "PE_root = {root} is not a member's index: the active set has {} PEs",
                set.size
            ),
        );
    }
    if set.is_world(s.n) {
        let world = crate::team::world_handle();
        let mut tmp = vec![0u8; bytes];
        let into = if set.me == root as u32 {
            tmp.as_mut_ptr()
        } else {
            dest
        };
        // SAFETY: forwarded; the root's result goes to a scratch buffer.
        unsafe { crate::coll::broadcast(what, world, into, source, bytes, root) };
        return;
    }
    if set.me == root as u32 {
        for i in (0..set.size).filter(|&i| i != set.me) {
            // SAFETY: forwarded.
            unsafe { put_to(what, set, i, dest, 0, source, bytes) };
        }
    }
    finish(s, what, set, psync);
}

/// `shmem_fcollect32`/`64` (`fixed`) and `shmem_collect32`/`64`: every
/// member's `bytes` of `source`, in member order, into every member's
/// `dest`.
///
/// # Safety
/// `source` readable for `bytes`; `dest` symmetric and writable for all.
#[allow(clippy::too_many_arguments)] // the C routine's, plus the name
pub unsafe fn collect(
    what: &str,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    fixed: bool,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
) {
    let s = state::get(what);
    let set = set_of(s, what, start, log_stride, size);
    if set.is_world(s.n) {
        // SAFETY: forwarded.
        unsafe {
            crate::coll::collect(
                what,
                crate::team::world_handle(),
                dest,
                source,
                bytes,
                fixed,
            )
        };
        return;
    }
    if psync.is_null() {
        fatal(Some(s.me), what, "pSync is NULL");
    }
    let token = psync.cast::<i64>().wrapping_add(2);
    let at = if fixed {
        set.me as usize * bytes
    } else if set.me == 0 {
        0
    } else {
        let v = wait_word(s, what, token, |v| v != 0);
        amo::op(what, token, AtomicOp::Fadd, -v, 0, s.me as c_int);
        (v - 1) as usize
    };
    for i in 0..set.size {
        // SAFETY: forwarded.
        unsafe { put_to(what, set, i, dest, at, source, bytes) };
    }
    if !fixed && set.me + 1 < set.size {
        let next = (at + bytes) as i64 + 1;
        amo::op(what, token, AtomicOp::Fadd, next, 0, set.pe(set.me + 1));
    }
    finish(s, what, set, psync);
}

/// `shmem_alltoall32`/`64` and `alltoalls32`/`64`: element `k` of block
/// `j` (`nelems` elements of `size` bytes, at stride `sst` here) to member
/// `j`'s `dest`, as element `k` of its block `me` (at stride `dst`).
///
/// # Safety
/// The strided elements of `source` are readable; `dest` symmetric.
#[allow(clippy::too_many_arguments)] // the C routine's, plus the name and size
pub unsafe fn alltoall(
    what: &str,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    start: c_int,
    log_stride: c_int,
    npes: c_int,
    psync: *mut c_long,
) {
    let s = state::get(what);
    let set = set_of(s, what, start, log_stride, npes);
    if dst < 1 || sst < 1 {
        fatal(
            Some(s.me),
            what,
            format_args!("dst = {dst} and sst = {sst}: strides must be at least 1"),
        );
    }
    if set.is_world(s.n) {
        let w = crate::team::world_handle();
        // SAFETY: forwarded.
        unsafe {
            if dst == 1 && sst == 1 {
                crate::coll::alltoall(what, w, dest, source, nelems * size);
            } else {
                crate::coll::alltoalls(what, w, dest, source, dst, sst, nelems, size);
            }
        }
        return;
    }
    let (dst, sst) = (dst as usize, sst as usize);
    for j in 0..set.size as usize {
        for k in 0..nelems {
            let from = source.wrapping_add((j * nelems + k) * sst * size);
            let at = (set.me as usize * nelems + k) * dst * size;
            // SAFETY: forwarded.
            unsafe { put_to(what, set, j as u32, dest, at, from, size) };
        }
    }
    finish(s, what, set, psync);
}

/// `shmem_TYPE_OP_to_all`: `op` over every member's `nreduce` elements
/// of `source`, into every member's `dest` (`pWrk` is not needed).
///
/// # Safety
/// `source` symmetric and readable, `dest` writable, for `nreduce`
/// elements.
#[allow(clippy::too_many_arguments)] // the C routine's, plus the name and op
pub unsafe fn to_all<T: Copy + Send + Sync + 'static>(
    what: &str,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    psync: *mut c_long,
    op: impl Fn(&mut [T], &[T]),
) {
    let s = state::get(what);
    let set = set_of(s, what, start, log_stride, size);
    if set.is_world(s.n) {
        // SAFETY: forwarded.
        unsafe {
            crate::coll::reduce(what, crate::team::world_handle(), dest, source, nreduce, op)
        };
        return;
    }
    let bytes = crate::rma::bytes(what, nreduce, size_of::<T>());
    // Every member's source is ready.
    barrier(s, what, set, psync);
    let mut acc: Vec<T> = Vec::with_capacity(nreduce);
    let mut x: Vec<T> = Vec::with_capacity(nreduce);
    for i in 0..set.size {
        let into = if i == 0 { &mut acc } else { &mut x };
        // SAFETY: `into` has room for nreduce elements, all written by
        // the get (which returns once they are there) before set_len.
        unsafe {
            crate::rma::get(
                what,
                into.as_mut_ptr().cast(),
                source.cast(),
                bytes,
                set.pe(i),
            );
            into.set_len(nreduce);
        }
        if i > 0 {
            op(&mut acc, &x);
            x.clear();
        }
    }
    // Every member has read every source before any dest (which may be
    // the source) is written.
    barrier(s, what, set, psync);
    if nreduce > 0 {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), dest, nreduce) };
    }
}

/// `rgex_shmem_to_all_with`: [`to_all`] of 16-byte elements combined by
/// C (`shmem.h`'s long double `_to_all` forms).
///
/// # Safety
/// As [`to_all`]; `combine` folds `n` elements of `x` into `acc`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C routine's, plus size and combiner
pub unsafe extern "C" fn rgex_shmem_to_all_with(
    dest: *mut std::ffi::c_void,
    source: *const std::ffi::c_void,
    nreduce: usize,
    size: usize,
    start: c_int,
    log_stride: c_int,
    npes: c_int,
    psync: *mut c_long,
    combine: crate::coll::CCombine,
) {
    let what = "shmem_longdouble_to_all";
    if size != size_of::<crate::LongDouble>() {
        fatal(
            state::running().map(|s| s.me),
            what,
            format_args!("size = {size}: only 16-byte elements are combined in C"),
        );
    }
    // SAFETY: forwarded.
    unsafe {
        to_all::<crate::LongDouble>(
            what,
            dest.cast(),
            source.cast(),
            nreduce,
            start,
            log_stride,
            npes,
            psync,
            |a, b| combine(a.as_mut_ptr().cast(), b.as_ptr().cast(), a.len()),
        )
    }
}
