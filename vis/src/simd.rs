//! Whole-list passes over indexed metadata (offset lists), written as
//! plain loops the compiler vectorizes, and compiled a second time with
//! AVX2 enabled, taken when the CPU has it (the baseline x86-64 target has
//! no 64-bit vector compare, so the plain build stays scalar).

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

/// True if every word of `v` is 1 (the counts of null dimensions).
#[inline(always)]
pub(crate) fn all_ones(v: &[u64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if v.len() >= 16 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 and `v` holds 16 words or more
        // (both checked just above).
        return unsafe { all_ones_avx2(v) };
    }
    all_ones_plain(v)
}

#[inline(always)]
fn all_ones_plain(v: &[u64]) -> bool {
    // Branch-free (no early exit), so it vectorizes.
    v.iter().fold(0, |acc, &c| acc | (c ^ 1)) == 0
}

/// Sixteen words per step, as four independent vectors; the last sixteen
/// words close the tail, overlapping the steps, so there is no scalar
/// remainder loop (the compiler's own vectorization of the plain loop spent
/// as long on its remainder, at 31 words, as on the vector part). Up to 32
/// words (metadata of up to 32 dimensions) there is no loop at all: the
/// first sixteen words and the last sixteen, overlapping, in straight-line
/// code. The 29 null counts of the benchmark's 32-d metadata are then 8
/// loads folded into 8 XORs, 7 ORs and one test: 26 instructions under
/// callgrind with the call, against 56 for the loop (its index arithmetic
/// and exit test cost as much as the loads).
///
/// # Safety
/// The CPU must support AVX2, and `v` must hold at least 16 words.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn all_ones_avx2(v: &[u64]) -> bool {
    use std::arch::x86_64::*;
    debug_assert!(v.len() >= 16);
    let p = v.as_ptr();
    let ones = _mm256_set1_epi64x(1);
    // SAFETY: every call below passes `at + 4 <= v.len()` (checked where
    // each `at` is made); unaligned loads are allowed.
    let not_one =
        |at: usize| _mm256_xor_si256(unsafe { _mm256_loadu_si256(p.add(at).cast()) }, ones);
    // Sixteen words from `at` (`at + 16 <= v.len()`), ORed into one vector
    // as two independent pairs.
    let sixteen = |at: usize| {
        _mm256_or_si256(
            _mm256_or_si256(not_one(at), not_one(at + 4)),
            _mm256_or_si256(not_one(at + 8), not_one(at + 12)),
        )
    };
    let last = v.len() - 16;
    let mut acc = sixteen(last);
    let mut at = 0;
    // `at < last` keeps every block inside `v`; the last block (above)
    // covers whatever the stepping leaves.
    while at < last {
        acc = _mm256_or_si256(acc, sixteen(at));
        at += 16;
    }
    _mm256_testz_si256(acc, acc) == 1
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
