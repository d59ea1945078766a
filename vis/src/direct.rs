//! The direct mechanism: node-local peers, whose segment is mapped in this
//! process, are copied to and from in place, following the metadata
//! straight from the caller's arrays.
//!
//! This is the per-call fast path, so nothing is allocated for the common
//! shapes: strided metadata found in the per-thread plan cache (see
//! `cache`) is copied straight from the cached loops; other strided
//! metadata is validated and optimized in one O(dims) scan into a plan
//! kept on the stack (up to 64 loops); the kernel walks either
//! with the element-size dispatch hoisted out of the loops (0-, 1- and
//! 2-loop plans are straight-line code); indexed metadata with the same
//! fragment length on both sides is bounds-checked with one max per side
//! and copied in a tight loop, specialised by fragment length, that
//! coalesces fragments contiguous on both sides (when a vectorized pass
//! finds any); vector metadata (and
//! indexed with different lengths) streams its runs into `memcpy`.

use crate::kernel::{copy_all, run, with_loops, Loop};
use crate::meta::{
    cached, check_indexed, check_vector, compile_place, for_each_run, place_strided, Indexed, Meta,
    Run, Vector,
};
use crate::stride_plan::{Dim, StridePlan, Work};
use crate::{helped_copy, simd};
use rgex_core::{Rank, Result};
use rgex_endpoint::Endpoint;

/// The local side of one transfer.
#[derive(Clone, Copy)]
pub(crate) enum Local {
    /// A put's source.
    Src(*const u8),
    /// A get's destination.
    Dst(*mut u8),
}

/// Validate `meta` against `peer`'s mapped segment (at `base`, of which
/// the first `seg_len` bytes are the peer's) and a local buffer of
/// `local_len` bytes, then copy. On error nothing has moved.
///
/// # Safety
/// `base..base + seg_len` must be mapped and writable; `local` must be
/// valid for `local_len` bytes (readable for a put, writable for a get);
/// the two must not overlap.
pub(crate) unsafe fn transfer(
    meta: &Meta<'_>,
    peer: Rank,
    base: *mut u8,
    seg_len: u64,
    local: Local,
    local_len: usize,
    share: Share<'_>,
) -> Result<()> {
    match meta {
        Meta::Strided(s) => {
            s.check_dims()?;
            // A cached shape is copied straight from the cache's loops.
            let hit = cached(s, |rel, folded, dims| {
                let (elem, pb, lb) = place_strided(rel, folded, s, peer, seg_len, local_len)?;
                // SAFETY: the plan was validated against both sides.
                unsafe { nest(elem, dims, pb, lb, base, local, share) };
                Ok(())
            });
            if let Some(done) = hit {
                return done;
            }
            let mut work = Work::new();
            let (elem, pb, lb) = compile_place(s, peer, seg_len, local_len, &mut work)?;
            // SAFETY: as above (`elem` 0, nothing to move, copies nothing).
            unsafe { nest(elem, &work, pb, lb, base, local, share) };
            Ok(())
        }
        Meta::Compiled(c) => {
            let (elem, pb, lb) = c.place(peer, seg_len, local_len)?;
            // SAFETY: the plan was validated against both sides.
            unsafe { nest(elem, c.shape.loops(), pb, lb, base, local, share) };
            Ok(())
        }
        Meta::Indexed(x) => {
            check_indexed(x, peer, seg_len, local_len)?;
            // SAFETY: every fragment was bounds-checked on both sides.
            unsafe { indexed(x, base, local) }
        }
        Meta::Vector(v) => {
            check_vector(v, peer, seg_len, local_len)?;
            // SAFETY: as above.
            unsafe { vector(v, base, local) }
        }
    }
}

/// Copy a validated strided plan between the local buffer and the
/// segment at `seg`.
///
/// # Safety
/// Every element of the plan must be inside the segment and inside the
/// local buffer (readable for a put, writable for a get); the two must not
/// overlap.
pub(crate) unsafe fn strided(p: &StridePlan, seg: *mut u8, local: Local, share: Share<'_>) {
    // SAFETY: forwarded caller contract.
    unsafe {
        nest(
            p.elem,
            &p.dims,
            p.peer_base,
            p.local_base,
            seg,
            local,
            share,
        )
    }
}

/// Copy the plan `elem` (0: nothing), `dims`, `pb`, `lb` between the local
/// buffer and the segment at `seg`. Plans of 0 and 1 loops (what folding
/// leaves of most metadata) are straight-line code; deeper ones go to the
/// kernel's nest walker. With `share`, a large copy is split into blocks
/// the rank's waiting threads help with (see `helped_copy`).
///
/// # Safety
/// As [`strided`].
#[inline(always)]
unsafe fn nest(
    elem: usize,
    dims: &[Dim],
    pb: u64,
    lb: u64,
    seg: *mut u8,
    local: Local,
    share: Share<'_>,
) {
    if elem == 0 {
        return;
    }
    let put = matches!(local, Local::Src(_));
    // SAFETY: the caller vouches for every element of both sides; the
    // bases are the plan's first element.
    unsafe {
        let pp = seg.add(pb as usize);
        let (src, dst) = match local {
            Local::Src(s) => (s.add(lb as usize), pp),
            Local::Dst(d) => (pp.cast_const(), d.add(lb as usize)),
        };
        if let Some(ep) = share {
            let elems = dims.iter().map(|d| d.count).product::<u64>();
            if elems.saturating_mul(elem as u64) >= helped_copy::SHARE_MIN
                && plan_loops(dims, put, |loops| {
                    helped_copy::try_copy(ep, elem, loops, elems, src, dst)
                })
            {
                return;
            }
        }
        match dims {
            [] => std::ptr::copy_nonoverlapping(src, dst, elem),
            [d] => {
                let l = to_loop(d, put);
                run(elem, src, l.src, dst, l.dst, l.count as usize)
            }
            [a, b] => copy_all(elem, &[to_loop(a, put), to_loop(b, put)], src, dst),
            _ => plan_loops(dims, put, |loops| copy_all(elem, loops, src, dst)),
        }
    }
}

/// Where a direct copy may be shared: the endpoint whose waiting threads
/// help, or `None` to copy on this thread alone.
pub(crate) type Share<'a> = Option<&'a Endpoint>;

/// A plan's loop as the kernel walks it, from source to destination.
#[inline(always)]
fn to_loop(d: &Dim, put: bool) -> Loop {
    let (ps, ls) = (d.peer_stride as isize, d.local_stride as isize);
    Loop {
        count: d.count,
        src: if put { ls } else { ps },
        dst: if put { ps } else { ls },
    }
}

/// Call `f` with the plan's loops as the kernel walks them.
#[inline]
fn plan_loops<R>(dims: &[Dim], put: bool, f: impl FnOnce(&[Loop]) -> R) -> R {
    with_loops(dims.len(), dims.iter().map(|d| to_loop(d, put)), f)
}

/// Copy validated runs between the local buffer and the segment at `seg`.
///
/// # Safety
/// Every run must be inside the segment and the local buffer (readable
/// for a put, writable for a get); the two must not overlap.
pub(crate) unsafe fn runs(runs: &[Run], seg: *mut u8, local: Local) {
    for &r in runs {
        // SAFETY: forwarded caller contract, per run.
        unsafe { copy_run(r, seg, local) };
    }
}

/// Copy one run.
///
/// # Safety
/// As [`runs`] for this run.
#[inline(always)]
unsafe fn copy_run(r: Run, seg: *mut u8, local: Local) {
    // SAFETY: forwarded caller contract.
    unsafe {
        let pp = seg.add(r.peer as usize);
        match local {
            Local::Src(s) => {
                std::ptr::copy_nonoverlapping(s.add(r.local as usize), pp, r.len as usize)
            }
            Local::Dst(d) => {
                std::ptr::copy_nonoverlapping(pp, d.add(r.local as usize), r.len as usize)
            }
        }
    }
}

/// Vector metadata, bounds-checked: match the two lists into runs (the
/// totals checked first) and copy each as it comes.
///
/// # Safety
/// Every fragment must have been checked against both sides (readable for
/// a put, writable for a get), which must not overlap.
unsafe fn vector(v: &Vector<'_>, seg: *mut u8, local: Local) -> Result<()> {
    for_each_run(v.peer.iter().copied(), v.local.iter().copied(), |r| {
        // SAFETY: the run is made of checked fragments of both sides.
        unsafe { copy_run(r, seg, local) }
    })
}

/// Indexed metadata, bounds-checked.
///
/// # Safety
/// As [`vector`].
unsafe fn indexed(x: &Indexed<'_>, seg: *mut u8, local: Local) -> Result<()> {
    let same = x.peer_len == x.local_len
        && x.peer.len() == x.local.len()
        && (x.peer.len() as u64).checked_mul(x.peer_len).is_some();
    if !same {
        // Different fragment lengths (or an overflowing total, which is
        // an error): the general run matching.
        return for_each_run(
            x.peer.iter().map(|&o| (o, x.peer_len)),
            x.local.iter().map(|&o| (o, x.local_len)),
            // SAFETY: the run is made of checked fragments of both sides.
            |r| unsafe { copy_run(r, seg, local) },
        );
    }
    let len = x.peer_len as usize;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: every fragment was checked on both sides (caller).
    unsafe {
        match local {
            Local::Src(s) => fragments(len, x.local, s, x.peer, seg),
            Local::Dst(d) => fragments(len, x.peer, seg, x.local, d),
        }
    }
    Ok(())
}

/// Copy fragment `i` of `len` bytes from `src + src_offs[i]` to
/// `dst + dst_offs[i]`, for every `i`, dispatching on the length once.
///
/// # Safety
/// Every fragment must be inside both buffers; they must not overlap.
unsafe fn fragments(len: usize, src_offs: &[u64], src: *const u8, dst_offs: &[u64], dst: *mut u8) {
    // SAFETY: forwarded caller contract (every arm).
    unsafe {
        match len {
            1 => fragments_n::<1>(len, src_offs, src, dst_offs, dst),
            2 => fragments_n::<2>(len, src_offs, src, dst_offs, dst),
            4 => fragments_n::<4>(len, src_offs, src, dst_offs, dst),
            8 => fragments_n::<8>(len, src_offs, src, dst_offs, dst),
            16 => fragments_n::<16>(len, src_offs, src, dst_offs, dst),
            32 => fragments_n::<32>(len, src_offs, src, dst_offs, dst),
            64 => fragments_n::<64>(len, src_offs, src, dst_offs, dst),
            _ => fragments_n::<0>(len, src_offs, src, dst_offs, dst),
        }
    }
}

/// [`fragments`] for fragments of `N` bytes (`N == 0`: `len` bytes, one
/// `memcpy` each). If some fragment continues the previous one on both
/// sides (one vectorized pass finds out), such runs are coalesced into one
/// `memcpy`; else every fragment is copied by a plain loop.
///
/// # Safety
/// As [`fragments`].
#[inline(always)]
unsafe fn fragments_n<const N: usize>(
    len: usize,
    src_offs: &[u64],
    src: *const u8,
    dst_offs: &[u64],
    dst: *mut u8,
) {
    debug_assert!(N == 0 || N == len);
    let n = src_offs.len().min(dst_offs.len());
    let (so, dof) = (&src_offs[..n], &dst_offs[..n]);
    let step = len as u64;
    if !simd::any_contiguous(so, dof, step) {
        for (&s, &d) in so.iter().zip(dof) {
            // SAFETY: the fragment is checked on both sides (caller).
            unsafe {
                let (ps, pd) = (src.add(s as usize), dst.add(d as usize));
                if N != 0 {
                    pd.cast::<[u8; N]>()
                        .write_unaligned(ps.cast::<[u8; N]>().read_unaligned());
                } else {
                    std::ptr::copy_nonoverlapping(ps, pd, len);
                }
            }
        }
        return;
    }
    let mut i = 0;
    while i < n {
        let (s, d) = (so[i], dof[i]);
        // Checked fragments end inside their buffers: no overflow.
        let (mut se, mut de) = (s + step, d + step);
        let mut j = i + 1;
        while j < n && so[j] == se && dof[j] == de {
            se += step;
            de += step;
            j += 1;
        }
        // SAFETY: fragments i..j are checked and contiguous on both sides,
        // so the block `s..se` / `d..de` is inside both buffers.
        unsafe {
            let (ps, pd) = (src.add(s as usize), dst.add(d as usize));
            if N != 0 && j == i + 1 {
                pd.cast::<[u8; N]>()
                    .write_unaligned(ps.cast::<[u8; N]>().read_unaligned());
            } else {
                std::ptr::copy_nonoverlapping(ps, pd, (se - s) as usize);
            }
        }
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fragments` against a byte loop, for fragment lengths with and
    /// without a fixed-size kernel, with runs that coalesce (contiguous on
    /// both sides), runs contiguous on one side only, and lists long
    /// enough for the vectorized contiguity pass.
    #[test]
    fn fragments_copy_like_a_byte_loop() {
        for len in [1usize, 3, 8, 16, 64] {
            for n in [1usize, 2, 5, 16, 40] {
                for pattern in 0..4 {
                    let step = len as u64;
                    // Source: pitch 3 * len, with pairs made contiguous
                    // (pattern 1: on both sides; 2: source only; 3: all).
                    let mut so: Vec<u64> = (0..n as u64).map(|i| i * 3 * step).collect();
                    let mut dof: Vec<u64> = (0..n as u64)
                        .map(|i| (n as u64 - 1 - i) * 2 * step + 1)
                        .collect();
                    match pattern {
                        1 => {
                            for i in (1..n).step_by(3) {
                                so[i] = so[i - 1] + step;
                                dof[i] = dof[i - 1] + step;
                            }
                        }
                        2 => {
                            for i in (1..n).step_by(2) {
                                so[i] = so[i - 1] + step;
                            }
                        }
                        3 => {
                            so = (0..n as u64).map(|i| i * step).collect();
                            dof = (0..n as u64).map(|i| 7 + i * step).collect();
                        }
                        _ => {}
                    }
                    // Keep destinations disjoint (pattern 1 may collide).
                    let mut seen = std::collections::HashSet::new();
                    if !dof.iter().all(|&d| (d..d + step).all(|b| seen.insert(b))) {
                        continue;
                    }
                    let src: Vec<u8> = (0..(n * 3 + 2) * len).map(|i| (i * 31 + 7) as u8).collect();
                    let mut dst = vec![0u8; (n * 2 + 2) * len + 8];
                    let mut expect = dst.clone();
                    for (&s, &d) in so.iter().zip(&dof) {
                        let (s, d) = (s as usize, d as usize);
                        expect[d..d + len].copy_from_slice(&src[s..s + len]);
                    }
                    // SAFETY: every fragment is inside both vectors (built
                    // above), distinct allocations.
                    unsafe { fragments(len, &so, src.as_ptr(), &dof, dst.as_mut_ptr()) };
                    assert_eq!(dst, expect, "len {len}, n {n}, pattern {pattern}");
                }
            }
        }
    }
}
