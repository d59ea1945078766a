//! Collectives on teams (OpenSHMEM 1.5 section 9.9): `shmem_team_sync`,
//! broadcast, collect, fcollect, alltoall, alltoalls and the reductions,
//! each mapped onto the rgex collective of the team's rgex [`Team`](rgex::Team):
//! broadcast, allgather, allgatherv, alltoall and allreduce with the
//! element type's operator. Each PE's `source` is read here and the
//! result written to its own `dest`: the collectives move data through
//! rgex's collective engine, not through RMA on `dest`, so `dest` and
//! `source` need not be in the symmetric heap. Each returns 0 (a failure
//! ends the job naming the call and rgex's error, which names the
//! disagreement of mismatched arguments).

use crate::fatal::{fatal, OrDie};
use crate::state::{self, Shmem};
use crate::team::{valid, TeamObj};
use rgex::Element;
use std::ffi::c_int;

/// A plain C value carried by a collective as its bytes.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Val<T>(pub T);

impl<T: Copy + Send + Sync + 'static> Element for Val<T> {
    const SIZE: usize = size_of::<T>();
    fn write(&self, out: &mut Vec<u8>) {
        // SAFETY: T is a plain C type (no padding read as uninitialised:
        // long double's padding bytes are copied as they are, which
        // every platform's ABI allows for a memcpy of the object).
        let b =
            unsafe { std::slice::from_raw_parts((&self.0 as *const T).cast::<u8>(), Self::SIZE) };
        out.extend_from_slice(b);
    }
    fn read(b: &[u8]) -> Self {
        // SAFETY: `b` holds SIZE bytes (Element's contract); every bit
        // pattern is a value of a plain C type; unaligned read.
        Val(unsafe { b.as_ptr().cast::<T>().read_unaligned() })
    }
}

/// The team, for a collective call.
fn team_of<'a>(what: &str, team: *const TeamObj) -> (&'static Shmem, &'a TeamObj) {
    let s = state::get(what);
    (s, valid(s, what, team))
}

/// `len` bytes at `p` (empty for no bytes, whatever `p` is).
///
/// # Safety
/// `p` is readable for `len` bytes when `len` is not 0.
unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// Copy `from` to `dest` (which may overlap the caller's source).
///
/// # Safety
/// `dest` is writable for `from.len()` bytes.
unsafe fn store(dest: *mut u8, from: &[u8]) {
    if !from.is_empty() {
        // SAFETY: the caller's contract; copy handles overlap.
        unsafe { std::ptr::copy(from.as_ptr(), dest, from.len()) };
    }
}

entry! {
    /// `int shmem_team_sync(shmem_team_t team)`: a barrier of the team's PEs
    /// (no quiet).
    pub extern "C" fn shmem_team_sync / pshmem_team_sync(team: *const TeamObj) -> c_int {
        let what = "shmem_team_sync";
        let (s, t) = team_of(what, team);
        t.team.barrier().or_die(s.me, what);
        0
    }
}

/// Broadcast `bytes` from the team's PE `root`'s `source` to every PE's
/// `dest`, the root's included.
///
/// # Safety
/// `source` readable and `dest` writable for `bytes` bytes.
pub unsafe fn broadcast(
    what: &str,
    team: *const TeamObj,
    dest: *mut u8,
    source: *const u8,
    bytes_n: usize,
    root: c_int,
) -> c_int {
    let (s, t) = team_of(what, team);
    crate::team::world_pe(s, what, t, root);
    // SAFETY: the caller's contract.
    let mine = unsafe { bytes(source, bytes_n) };
    let me_root = t.team.my_rank() as c_int == root;
    let got = t
        .team
        .broadcast(root as u32, if me_root { mine } else { &[] })
        .or_die(s.me, what);
    if got.len() != bytes_n {
        fatal(
            Some(s.me),
            what,
            format_args!(
                "a collective with mismatched arguments: this PE asked for {bytes_n} bytes, the \
                 root (team PE {root}) sent {}",
                got.len()
            ),
        );
    }
    // SAFETY: the caller's contract.
    unsafe { store(dest, &got) };
    0
}

/// Every team PE's `bytes` of `source`, in team order, into every PE's
/// `dest`: the same size on every PE (`fcollect`) or not (`collect`).
///
/// # Safety
/// `source` readable for `bytes` bytes, `dest` writable for all of them.
pub unsafe fn collect(
    what: &str,
    team: *const TeamObj,
    dest: *mut u8,
    source: *const u8,
    bytes_n: usize,
    fixed: bool,
) -> c_int {
    let (s, t) = team_of(what, team);
    // SAFETY: the caller's contract.
    let mine = unsafe { bytes(source, bytes_n) };
    let all: Vec<u8> = if fixed {
        t.team.allgather(mine).or_die(s.me, what)
    } else {
        t.team.allgatherv(mine).or_die(s.me, what).concat()
    };
    // SAFETY: the caller's contract.
    unsafe { store(dest, &all) };
    0
}

/// Alltoall: block `j` (`bytes` bytes) of `source` to team PE `j`, whose
/// `dest` gets it as its block `me`.
///
/// # Safety
/// `source` readable and `dest` writable for `bytes` times the team's size.
pub unsafe fn alltoall(
    what: &str,
    team: *const TeamObj,
    dest: *mut u8,
    source: *const u8,
    bytes_n: usize,
) -> c_int {
    let (s, t) = team_of(what, team);
    let n = t.team.size() as usize;
    let total = crate::rma::bytes(what, bytes_n, n);
    // SAFETY: the caller's contract.
    let mine = unsafe { bytes(source, total) };
    let got = t.team.alltoall(mine).or_die(s.me, what);
    // SAFETY: the caller's contract.
    unsafe { store(dest, &got) };
    0
}

/// Strided alltoall: element `i` of block `j` is `source[(j * nelems + i)
/// * sst]` here and lands at `dest[(me * nelems + i) * dst]` of team PE
/// `j` (elements of `size` bytes).
///
/// # Safety
/// `source`'s and `dest`'s strided elements are readable and writable.
#[allow(clippy::too_many_arguments)] // the C routine's, plus the name and size
pub unsafe fn alltoalls(
    what: &str,
    team: *const TeamObj,
    dest: *mut u8,
    source: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
) -> c_int {
    let (s, t) = team_of(what, team);
    if dst < 1 || sst < 1 {
        fatal(
            Some(s.me),
            what,
            format_args!("dst = {dst} and sst = {sst}: strides must be at least 1"),
        );
    }
    let n = t.team.size() as usize;
    let count = crate::rma::bytes(what, nelems, n);
    let mut packed = Vec::with_capacity(crate::rma::bytes(what, count, size));
    for k in 0..count {
        // SAFETY: the caller's contract: element k at stride sst.
        let e = unsafe { bytes(source.wrapping_add(k * sst as usize * size), size) };
        packed.extend_from_slice(e);
    }
    let got = t.team.alltoall(&packed).or_die(s.me, what);
    for (k, e) in got.chunks_exact(size.max(1)).enumerate() {
        // SAFETY: the caller's contract: element k at stride dst.
        unsafe { store(dest.wrapping_add(k * dst as usize * size), e) };
    }
    0
}

/// Reduce `nreduce` elements of every team PE's `source` with `op`
/// (elementwise, in team order), into every PE's `dest`.
///
/// # Safety
/// `source` readable and `dest` writable for `nreduce` elements.
pub unsafe fn reduce<T: Copy + Send + Sync + 'static>(
    what: &str,
    team: *const TeamObj,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
    op: impl Fn(&mut [T], &[T]),
) -> c_int {
    let (s, t) = team_of(what, team);
    let n = crate::rma::bytes(what, nreduce, size_of::<T>()) / size_of::<T>().max(1);
    let mine: Vec<Val<T>> = if n == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(source.cast::<Val<T>>(), n) }.to_vec()
    };
    let got = t
        .team
        .allreduce_with(&mine, |acc: &mut [Val<T>], x: &[Val<T>]| {
            // SAFETY: Val<T> is repr(transparent) over T.
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts_mut(acc.as_mut_ptr().cast::<T>(), acc.len()),
                    std::slice::from_raw_parts(x.as_ptr().cast::<T>(), x.len()),
                )
            };
            op(a, b);
        })
        .or_die(s.me, what);
    if n > 0 {
        // SAFETY: the caller's contract; `got` has n elements.
        unsafe { std::ptr::copy(got.as_ptr().cast::<T>(), dest, n) };
    }
    0
}

/// A C combiner: `acc[i] = acc[i] op x[i]` for `n` elements.
pub type CCombine =
    unsafe extern "C" fn(acc: *mut std::ffi::c_void, x: *const std::ffi::c_void, n: usize);

/// `int rgex_shmem_reduce_with(shmem_team_t team, void *dest, const void
/// *source, size_t nreduce, size_t size, combine)`: a team reduction of
/// elements of `size` (16: long double) bytes combined by C code
/// (`shmem.h`'s long double reductions, which Rust cannot compute).
///
/// # Safety
/// `source` readable and `dest` writable for `nreduce` elements;
/// `combine` folds `n` elements of `x` into `acc`.
#[no_mangle]
pub unsafe extern "C" fn rgex_shmem_reduce_with(
    team: *const TeamObj,
    dest: *mut std::ffi::c_void,
    source: *const std::ffi::c_void,
    nreduce: usize,
    size: usize,
    combine: CCombine,
) -> c_int {
    let what = "shmem_longdouble_reduce";
    if size != size_of::<crate::LongDouble>() {
        fatal(
            state::running().map(|s| s.me),
            what,
            format_args!("size = {size}: only 16-byte elements are combined in C"),
        );
    }
    // SAFETY: forwarded.
    unsafe {
        reduce::<crate::LongDouble>(what, team, dest.cast(), source.cast(), nreduce, |a, b| {
            combine(a.as_mut_ptr().cast(), b.as_ptr().cast(), a.len())
        })
    }
}

/// A C `int` count as a `size_t`, or the end of the job for a negative one.
pub fn count(what: &str, n: c_int) -> usize {
    usize::try_from(n).unwrap_or_else(|_| {
        fatal(
            state::running().map(|s| s.me),
            what,
            format_args!("nreduce = {n} is negative"),
        )
    })
}
