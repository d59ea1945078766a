//! Whole-list passes over indexed metadata (offset lists), written as
//! plain loops the compiler vectorizes, and compiled a second time with
//! AVX2 enabled, taken when the CPU has it (the baseline x86-64 target has
//! no 64-bit vector compare, so the plain build stays scalar); and the
//! plan cache's comparison of many-dimensional metadata with an entry's
//! key, written with AVX2 intrinsics.

/// The largest offset of `v` (0 if empty).
#[inline]
pub(crate) fn max(v: &[u64]) -> u64 {
    if v.len() < 16 {
        return v.iter().copied().fold(0, u64::max);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { max_avx2(v) };
    }
    max_plain(v)
}

#[inline(always)]
fn max_plain(v: &[u64]) -> u64 {
    // Four accumulators: independent compare chains.
    let mut m = [0u64; 4];
    let mut chunks = v.chunks_exact(4);
    for c in &mut chunks {
        for k in 0..4 {
            m[k] = m[k].max(c[k]);
        }
    }
    let r = chunks.remainder().iter().copied().fold(0, u64::max);
    m.into_iter().fold(r, u64::max)
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_avx2(v: &[u64]) -> u64 {
    max_plain(v)
}

/// True if some fragment `i + 1` continues fragment `i` on both sides:
/// `a[i + 1] == a[i] + step` and `b[i + 1] == b[i] + step` (so the copy
/// can coalesce them).
#[inline]
pub(crate) fn any_contiguous(a: &[u64], b: &[u64], step: u64) -> bool {
    if a.len() < 16 {
        return a
            .windows(2)
            .zip(b.windows(2))
            .any(|(x, y)| x[1] == x[0].wrapping_add(step) && y[1] == y[0].wrapping_add(step));
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { any_contiguous_avx2(a, b, step) };
    }
    any_contiguous_plain(a, b, step)
}

#[inline(always)]
fn any_contiguous_plain(a: &[u64], b: &[u64], step: u64) -> bool {
    let n = a.len().min(b.len());
    if n < 2 {
        return false;
    }
    let (a0, a1, b0, b1) = (&a[..n - 1], &a[1..n], &b[..n - 1], &b[1..n]);
    // Branch-free, so it vectorizes; a few bits of state per lane.
    a0.iter()
        .zip(a1)
        .zip(b0.iter().zip(b1))
        .fold(0u64, |acc, ((&x0, &x1), (&y0, &y1))| {
            acc | u64::from((x1 == x0.wrapping_add(step)) & (y1 == y0.wrapping_add(step)))
        })
        != 0
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn any_contiguous_avx2(a: &[u64], b: &[u64], step: u64) -> bool {
    any_contiguous_plain(a, b, step)
}

/// How a many-dimensional cache entry compares with metadata (see
/// [`key_matches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyMatch {
    /// The counts are the entry's.
    pub(crate) counts: bool,
    /// Both sides' strides of the first `w` dimensions (see
    /// [`key_widths`]) are the entry's.
    pub(crate) strides: bool,
}

/// The parts of a many-dimensional cache entry's key, for metadata of
/// `len > 4` dimensions of which the first `live` reach the last count
/// that is not 1: `(cw, w)`, the counts kept and the strides kept per
/// side. `w` is `live`, at least four, so that every part is compared in
/// whole vectors (a stride compared there that only a null dimension has
/// may differ without the metadata differing; the caller then checks the
/// live ones alone). The counts after `cw` are all 1 and are compared
/// with 1, not with a stored copy (half the loads), unless fewer than four
/// of them would be left: then `cw = len`.
#[inline(always)]
pub(crate) fn key_widths(len: usize, live: usize) -> (usize, usize) {
    let w = live.max(4);
    let cw = if len - w < 4 { len } else { w };
    (cw, w)
}

/// Compare a many-dimensional cache entry's `key` with metadata: the key
/// holds the first `cw` counts, then the peer strides of the first `w`
/// dimensions, then the local ones ([`key_widths`]); the metadata's
/// `len` counts after `cw` must be 1. One pass with no early exit, and
/// one call into AVX2 where the CPU has it (rather than one per part).
///
/// ```text
/// key    = [c0 .. c_cw) [p0 .. p_w) [l0 .. l_w)
/// counts = [c0 .. c_cw) 1 1 .. 1 (to len)
/// peer   = [p0 .. p_w) ..      local = [l0 .. l_w) ..
/// ```
///
/// An `unsafe fn` whose contract the cache entry keeps by construction,
/// rather than a safe one that asserts it: on the 32-d flood the
/// assertion's seven comparisons were a third of this call's cost.
///
/// # Safety
/// `(cw, w) == key_widths(len, _)` for `len > 4` (so `cw, w >= 4`, and
/// `len == cw` or `len >= cw + 4`); `key` must be readable for
/// `cw + 2 * w` words, `counts` for `len`, `peer` and `local` for `w`.
#[inline(always)]
pub(crate) unsafe fn key_matches(
    key: *const u64,
    (cw, w): (usize, usize),
    counts: *const u64,
    len: usize,
    peer: *const i64,
    local: *const i64,
) -> KeyMatch {
    debug_assert!(cw >= 4 && w >= 4 && (len == cw || len >= cw + 4));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2; the ranges are the caller's; an
        // i64 has the size, alignment and validity of a u64.
        return unsafe { key_matches_avx2(key, cw, w, counts, len, [peer.cast(), local.cast()]) };
    }
    // SAFETY: the caller's ranges, as slices.
    unsafe {
        key_matches_plain(
            std::slice::from_raw_parts(key, cw + 2 * w),
            cw,
            std::slice::from_raw_parts(counts, len),
            std::slice::from_raw_parts(peer, w),
            std::slice::from_raw_parts(local, w),
        )
    }
}

/// [`key_matches`] without vectors (lengths as asserted there).
fn key_matches_plain(
    key: &[u64],
    cw: usize,
    counts: &[u64],
    peer: &[i64],
    local: &[i64],
) -> KeyMatch {
    let w = (key.len() - cw) / 2;
    let same = |k: &[u64], s: &[i64]| k.iter().zip(s).all(|(&k, &s)| k == s as u64);
    KeyMatch {
        counts: key[..cw] == counts[..cw] && counts[cw..].iter().all(|&c| c == 1),
        strides: same(&key[cw..cw + w], peer) && same(&key[cw + w..], local),
    }
}

/// [`key_matches`] in AVX2: the counts' differences ORed into one
/// accumulator and the strides' into another, each tested once at the end.
///
/// # Safety
/// The CPU must support AVX2; `key` must be readable for `cw + 2 * w`
/// words, `counts` for `len`, both stride pointers for `w`, with
/// `cw >= 4`, `w >= 4`, and `len == cw` or `len >= cw + 4`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn key_matches_avx2(
    key: *const u64,
    cw: usize,
    w: usize,
    counts: *const u64,
    len: usize,
    [peer, local]: [*const u64; 2],
) -> KeyMatch {
    use std::arch::x86_64::*;
    // SAFETY: all ranges are the caller's, as documented.
    let (c, s) = unsafe {
        let mut c = diff_avx2::<false>(key, counts, cw);
        if len > cw {
            c = _mm256_or_si256(c, diff_avx2::<true>(counts.add(cw), counts, len - cw));
        }
        (
            c,
            _mm256_or_si256(
                diff_avx2::<false>(key.add(cw), peer, w),
                diff_avx2::<false>(key.add(cw + w), local, w),
            ),
        )
    };
    KeyMatch {
        counts: _mm256_testz_si256(c, c) == 1,
        strides: _mm256_testz_si256(s, s) == 1,
    }
}

/// The OR of `a[k] ^ b[k]` over `k < n` (of `a[k] ^ 1` with `ONES`, `b`
/// unread), folded into one vector: zero if and only if the words match.
/// The first and the last four words (overlapping when `n < 8`), then the
/// whole vectors between them, so there is no scalar remainder and, for
/// the usual widths of a key part (4 to 8 words), no loop: the compiler's
/// own vectorization of a plain loop spent as long on its remainder, at
/// 31 words, as on the vector part, and a loop of four vectors a step
/// cost a 5-word part (5 live dimensions) more than the whole comparison
/// of a 4-word one. `n >= 4` always ([`key_widths`] sees to it): a
/// shorter comparison needs masked loads and a horizontal fold, which
/// cost more than a whole 32-dimension comparison.
///
/// # Safety
/// The CPU must support AVX2; `a` (and `b`, without `ONES`) must be
/// readable for `n >= 4` words.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn diff_avx2<const ONES: bool>(
    a: *const u64,
    b: *const u64,
    n: usize,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    debug_assert!(n >= 4);
    let ones = _mm256_set1_epi64x(1);
    // SAFETY: every `at` passed is at most `n - 4`, so four words from it
    // are within both ranges; unaligned loads are allowed.
    let at4 = |at: usize| unsafe {
        let x = _mm256_loadu_si256(a.add(at).cast());
        let y = if ONES {
            ones
        } else {
            _mm256_loadu_si256(b.add(at).cast())
        };
        _mm256_xor_si256(x, y)
    };
    if n == 4 {
        // The usual width of a stride part: one vector.
        return at4(0);
    }
    let mut acc = _mm256_or_si256(at4(0), at4(n - 4));
    let mut at = 4;
    while at + 4 < n {
        acc = _mm256_or_si256(acc, at4(at));
        at += 4;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word the entry covers is compared (a change in any count, or
    /// in a stride of the first `w` dimensions, is a miss), and no stride
    /// past them is; the vector and the plain code agree.
    #[test]
    fn key_matches_compares_exactly_the_key() {
        // Fewer shapes under Miri (it checks every load of the AVX2 code
        // when run with `-Ctarget-feature=+avx2`: see ci/test.sh).
        let (lens, lives): (&[usize], &[usize]) = if cfg!(miri) {
            (&[5, 20, 33], &[0, 3, 4, 5, 17])
        } else {
            (
                &[5, 6, 7, 8, 9, 16, 17, 20, 29, 32, 33, 47, 64, 65, 100],
                &[0, 1, 3, 4, 5, 7, 8, 16, 17, 20, 31, 64],
            )
        };
        for &len in lens {
            for live in lives.iter().copied().chain([len]) {
                if live > len {
                    continue;
                }
                let (cw, w) = key_widths(len, live);
                let mut counts: Vec<u64> = (0..len as u64)
                    .map(|i| if (i as usize) < live { i * 7 + 3 } else { 1 })
                    .collect();
                let mut peer: Vec<i64> = (0..len as i64).map(|i| i * 40 - 17).collect();
                let mut local: Vec<i64> = (0..len as i64).map(|i| -i * 24 + 5).collect();
                let mut key = counts[..cw].to_vec();
                key.extend(peer[..w].iter().map(|&x| x as u64));
                key.extend(local[..w].iter().map(|&x| x as u64));
                let check =
                    |c: &[u64], p: &[i64], l: &[i64], counts: bool, strides: bool, what: &str| {
                        let want = KeyMatch { counts, strides };
                        // SAFETY: `(cw, w)` are `key_widths(len, live)`, and
                        // each slice is as long as the call reads.
                        let got = unsafe {
                            key_matches(
                                key.as_ptr(),
                                (cw, w),
                                c.as_ptr(),
                                len,
                                p.as_ptr(),
                                l.as_ptr(),
                            )
                        };
                        assert_eq!(got, want, "{what}: len {len}, live {live}");
                        let plain = key_matches_plain(&key, cw, c, p, l);
                        assert_eq!(plain, want, "{what} (plain)");
                    };
                check(&counts, &peer, &local, true, true, "unchanged");
                for k in 0..len {
                    let c = counts[k];
                    counts[k] = c ^ 0x10;
                    check(&counts, &peer, &local, false, true, "a count changed");
                    counts[k] = c;
                    peer[k] += 8;
                    let s = k >= w;
                    check(&counts, &peer, &local, true, s, "a peer stride changed");
                    peer[k] -= 8;
                    local[k] -= 8;
                    check(&counts, &peer, &local, true, s, "a local stride changed");
                    local[k] += 8;
                }
            }
        }
    }

    #[test]
    fn max_and_contiguity() {
        for n in [0usize, 1, 3, 15, 16, 17, 64, 100] {
            let v: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 1000).collect();
            assert_eq!(max(&v), v.iter().copied().max().unwrap_or(0), "n = {n}");
            let a: Vec<u64> = (0..n as u64).map(|i| i * 32).collect();
            assert!(!any_contiguous(&a, &a, 8), "n = {n}");
            if n >= 2 {
                let mut b = a.clone();
                let k = n / 2;
                b[k] = b[k - 1] + 8;
                let mut c = b.clone();
                assert!(any_contiguous(&b, &b, 8), "n = {n}");
                // Contiguous on one side only: no.
                c[k] += 1;
                assert!(!any_contiguous(&b, &c, 8), "n = {n}");
            }
        }
    }
}
