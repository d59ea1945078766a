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

/// True if every word of `v` is 1 (the counts of null dimensions). Plain
/// code: the long tails of many-dimensional metadata are checked inside
/// [`key_matches`], in AVX2.
#[inline(always)]
pub(crate) fn all_ones(v: &[u64]) -> bool {
    // Branch-free (no early exit), so it vectorizes.
    v.iter().fold(0, |acc, &c| acc | (c ^ 1)) == 0
}

/// How the key of a many-dimensional cache entry compares with metadata
/// (see [`key_matches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyMatch {
    /// The counts are the key's live counts, then all 1.
    pub(crate) counts: bool,
    /// Both sides' strides of the live dimensions are the key's.
    pub(crate) strides: bool,
}

/// Compare the key of a many-dimensional cache entry with metadata:
/// `key` holds the counts of the live dimensions (the first `n`), then the
/// peer strides of those, then the local strides; the metadata's `counts`
/// must begin with the first part and be all 1 after it, and its strides
/// begin with the other two. One pass with no early exit, and one call
/// into AVX2 where the CPU has it (rather than one per part).
///
/// ```text
/// key    = [c0 .. cn) [p0 .. pn) [l0 .. ln)
/// counts = [c0 .. cn) 1 1 1 .. 1
/// ```
///
/// # Panics
/// If `key` is not three times `n` words, or `n` exceeds the length of
/// `counts` or of a stride slice.
#[inline(always)]
pub(crate) fn key_matches(key: &[u64], counts: &[u64], peer: &[i64], local: &[i64]) -> KeyMatch {
    let n = key.len() / 3;
    assert!(key.len() == 3 * n && n <= counts.len() && n <= peer.len() && n <= local.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2; every slice holds the words read
        // (asserted above); an i64 has the size, alignment and validity of
        // a u64.
        return unsafe {
            key_matches_avx2(
                key.as_ptr(),
                n,
                counts.as_ptr(),
                counts.len(),
                peer.as_ptr().cast(),
                local.as_ptr().cast(),
            )
        };
    }
    key_matches_plain(key, counts, peer, local)
}

/// [`key_matches`] without vectors (`key` is `3 * n` words, and `n` is
/// at most the other lengths).
fn key_matches_plain(key: &[u64], counts: &[u64], peer: &[i64], local: &[i64]) -> KeyMatch {
    let n = key.len() / 3;
    let same = |k: &[u64], s: &[i64]| k.iter().zip(s).all(|(&k, &s)| k == s as u64);
    KeyMatch {
        counts: key[..n] == counts[..n] && all_ones(&counts[n..]),
        strides: same(&key[n..2 * n], peer) && same(&key[2 * n..], local),
    }
}

/// [`key_matches`] in AVX2: the counts' differences ORed into one
/// accumulator and the strides' into another, each tested once at the end.
///
/// # Safety
/// The CPU must support AVX2; `key` must be readable for `3 * n` words,
/// `counts` for `len >= n`, `peer` and `local` for `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn key_matches_avx2(
    key: *const u64,
    n: usize,
    counts: *const u64,
    len: usize,
    peer: *const u64,
    local: *const u64,
) -> KeyMatch {
    use std::arch::x86_64::*;
    // SAFETY: all four ranges are the caller's, as documented.
    let (c, s) = unsafe {
        (
            _mm256_or_si256(
                diff_avx2::<false>(key, counts, n),
                diff_avx2::<true>(counts.add(n), counts, len - n),
            ),
            _mm256_or_si256(
                diff_avx2::<false>(key.add(n), peer, n),
                diff_avx2::<false>(key.add(2 * n), local, n),
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
/// Sixteen words a step in four independent vectors, then four a step; the
/// last four words close the tail, overlapping what came before, so there
/// is no scalar remainder (the compiler's own vectorization of a plain
/// loop spent as long on its remainder, at 31 words, as on the vector
/// part).
///
/// Under callgrind, a 64-byte put with the benchmark's 32-d metadata (3
/// live dimensions, 29 null) took 61 instructions more than with 3-d
/// metadata when the null counts were a separate call looping in steps
/// of sixteen; with one call and this loop it takes 27 more (at 256 B,
/// 5 live dimensions: 72 then, 34 now).
///
/// # Safety
/// The CPU must support AVX2; `a` (and `b`, without `ONES`) must be
/// readable for `n` words.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn diff_avx2<const ONES: bool>(
    a: *const u64,
    b: *const u64,
    n: usize,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    if n < 4 {
        let mut x = 0;
        for k in 0..n {
            // SAFETY: k < n, within both ranges.
            x |= unsafe { a.add(k).read() ^ if ONES { 1 } else { b.add(k).read() } };
        }
        return _mm256_set1_epi64x(x as i64);
    }
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
    let mut acc = at4(n - 4);
    let mut at = 0;
    while at + 16 <= n {
        acc = _mm256_or_si256(
            acc,
            _mm256_or_si256(
                _mm256_or_si256(at4(at), at4(at + 4)),
                _mm256_or_si256(at4(at + 8), at4(at + 12)),
            ),
        );
        at += 16;
    }
    while at + 4 < n {
        acc = _mm256_or_si256(acc, at4(at));
        at += 4;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_ones_finds_any_other_word() {
        for n in [0usize, 1, 3, 4, 5, 15, 16, 17, 20, 29, 31, 32, 33, 47, 64] {
            let mut v = vec![1u64; n];
            assert!(all_ones(&v), "n = {n}");
            for k in 0..n {
                for x in [0, 2, u64::MAX, 1 << 63 | 1] {
                    v[k] = x;
                    assert!(!all_ones(&v), "n = {n}, v[{k}] = {x}");
                }
                v[k] = 1;
            }
        }
    }

    /// Every word the key covers is compared (a change anywhere in the
    /// live counts, their strides or the null counts is a miss), and the
    /// null dimensions' strides are not; the vector and the plain code
    /// agree.
    #[test]
    fn key_matches_compares_exactly_the_key() {
        // Fewer shapes under Miri (it checks every load of the AVX2 code
        // when run with `-Ctarget-feature=+avx2`: see ci/test.sh).
        let (lens, ns): (&[usize], &[usize]) = if cfg!(miri) {
            (&[5, 20, 33], &[0, 3, 4, 5, 17])
        } else {
            (
                &[5, 6, 7, 8, 9, 16, 17, 20, 29, 32, 33, 47, 64, 65, 100],
                &[0, 1, 3, 4, 5, 7, 8, 16, 17, 20, 31, 64],
            )
        };
        for &len in lens {
            for n in ns.iter().copied().chain([len]) {
                if n > len {
                    continue;
                }
                let mut counts: Vec<u64> = (0..len as u64)
                    .map(|i| if (i as usize) < n { i * 7 + 3 } else { 1 })
                    .collect();
                let mut peer: Vec<i64> = (0..len as i64).map(|i| i * 40 - 17).collect();
                let mut local: Vec<i64> = (0..len as i64).map(|i| -i * 24 + 5).collect();
                let mut key = counts[..n].to_vec();
                key.extend(peer[..n].iter().map(|&x| x as u64));
                key.extend(local[..n].iter().map(|&x| x as u64));
                let check =
                    |c: &[u64], p: &[i64], l: &[i64], counts: bool, strides: bool, what: &str| {
                        let want = KeyMatch { counts, strides };
                        assert_eq!(key_matches(&key, c, p, l), want, "{what}: len {len}, n {n}");
                        assert_eq!(key_matches_plain(&key, c, p, l), want, "{what} (plain)");
                    };
                check(&counts, &peer, &local, true, true, "unchanged");
                for k in 0..len {
                    let c = counts[k];
                    counts[k] = c ^ 0x10;
                    check(&counts, &peer, &local, false, true, "a count changed");
                    counts[k] = c;
                    peer[k] += 8;
                    check(
                        &counts,
                        &peer,
                        &local,
                        true,
                        k >= n,
                        "a peer stride changed",
                    );
                    peer[k] -= 8;
                    local[k] -= 8;
                    check(
                        &counts,
                        &peer,
                        &local,
                        true,
                        k >= n,
                        "a local stride changed",
                    );
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
