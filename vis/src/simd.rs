//! Whole-list passes over metadata (indexed offset lists, and the
//! comparison of high-dimensional strided metadata with a cached shape),
//! written as plain loops the compiler vectorizes, and compiled a second
//! time with AVX2 enabled, taken when the CPU has it (the baseline x86-64
//! target has no 64-bit vector compare, so the plain build stays scalar,
//! and its vectors are half as wide).

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

/// Word types the shape comparison reads (counts and strides), as bits.
pub(crate) trait Word: Copy {
    /// The word's 64 bits.
    fn bits(self) -> u64;
}
impl Word for u64 {
    #[inline(always)]
    fn bits(self) -> u64 {
        self
    }
}
impl Word for i64 {
    #[inline(always)]
    fn bits(self) -> u64 {
        self as u64
    }
}

/// True if `counts` is `live` followed by 1s, and `peer`/`local` begin
/// with `live_peer`/`live_local` (all three `live` slices the same
/// length). The hit test of the strided shape cache for metadata of many
/// dimensions, most of them null: every word is read once, into one
/// accumulator reduced once, no early exit.
#[inline]
pub(crate) fn same_shape(
    live: &[u64],
    counts: &[u64],
    live_peer: &[i64],
    peer: &[i64],
    live_local: &[i64],
    local: &[i64],
) -> bool {
    let n = live.len();
    if n > counts.len() || n != live_peer.len() || n != live_local.len() {
        return false;
    }
    if peer.len() < n || local.len() < n {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if counts.len() >= 16 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { same_shape_avx2(live, counts, live_peer, peer, live_local, local) };
    }
    same_shape_plain(live, counts, live_peer, peer, live_local, local)
}

#[inline(always)]
fn same_shape_plain(
    live: &[u64],
    counts: &[u64],
    live_peer: &[i64],
    peer: &[i64],
    live_local: &[i64],
    local: &[i64],
) -> bool {
    let n = live.len();
    let mut acc = [0; LANES];
    fold_ones(&mut acc, &counts[n..]);
    fold_diff(&mut acc, live, &counts[..n]);
    fold_diff(&mut acc, live_peer, &peer[..n]);
    fold_diff(&mut acc, live_local, &local[..n]);
    reduce(acc) == 0
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn same_shape_avx2(
    live: &[u64],
    counts: &[u64],
    live_peer: &[i64],
    peer: &[i64],
    live_local: &[i64],
    local: &[i64],
) -> bool {
    same_shape_plain(live, counts, live_peer, peer, live_local, local)
}

/// Lanes per pass: four words, one AVX2 vector (two SSE2 ones).
const LANES: usize = 4;

/// Per-lane OR of differences (all zero: everything compared was equal).
type Acc = [u64; LANES];

/// The OR of `a[i] ^ b[i]` over equal-length slices (0: equal).
#[inline(always)]
pub(crate) fn diff_mask<T: Word>(a: &[T], b: &[T]) -> u64 {
    let mut acc = [0; LANES];
    fold_diff(&mut acc, a, b);
    reduce(acc)
}

/// The OR of `v[i] ^ 1` (0: every word is 1).
#[inline(always)]
pub(crate) fn ones_mask(v: &[u64]) -> u64 {
    let mut acc = [0; LANES];
    fold_ones(&mut acc, v);
    reduce(acc)
}

/// OR `x[i] ^ y[i]` into the lanes of `acc`, for the first
/// `min(len)` words, four at a time. A slice of at least four words whose
/// length is not a multiple of four ends with one more pass over its last
/// four (overlapping the pass before: harmless for equality), so no
/// scalar tail is left for the compiler to unroll.
#[inline(always)]
fn fold_diff<T: Word>(acc: &mut Acc, x: &[T], y: &[T]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let lanes = |acc: &mut Acc, x: &[T], y: &[T]| {
        for k in 0..LANES {
            acc[k] |= x[k].bits() ^ y[k].bits();
        }
    };
    if n < LANES {
        // One scalar word (lane-indexed stores would put the accumulator
        // in memory, and its vector reload would wait on them).
        acc[0] |= x
            .iter()
            .zip(y)
            .fold(0, |a, (x, y)| a | (x.bits() ^ y.bits()));
        return;
    }
    for (x, y) in x.chunks_exact(LANES).zip(y.chunks_exact(LANES)) {
        lanes(acc, x, y);
    }
    if !n.is_multiple_of(LANES) {
        lanes(acc, &x[n - LANES..], &y[n - LANES..]);
    }
}

/// OR `v[i] ^ 1` into the lanes of `acc`: [`fold_diff`] against 1s.
#[inline(always)]
fn fold_ones(acc: &mut Acc, v: &[u64]) {
    static ONES: [u64; 64] = [1; 64];
    for v in v.chunks(ONES.len()) {
        fold_diff(acc, v, &ONES[..v.len()]);
    }
}

#[inline(always)]
fn reduce(acc: Acc) -> u64 {
    acc.into_iter().fold(0, |x, y| x | y)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The reference: counts are `live` then 1s, strides begin with the
    /// live ones.
    fn naive(live: &[u64], counts: &[u64], lp: &[i64], p: &[i64], ll: &[i64], l: &[i64]) -> bool {
        let n = live.len();
        counts.len() >= n
            && counts[..n] == *live
            && counts[n..].iter().all(|&c| c == 1)
            && p.get(..n) == Some(lp)
            && l.get(..n) == Some(ll)
    }

    proptest::proptest! {
        #[test]
        fn same_shape_is_the_reference(
            dims in 0usize..40,
            live in 0usize..40,
            seed in proptest::prelude::any::<u64>(),
            flip in 0usize..4,
            at in 0usize..40,
        ) {
            let live = live.min(dims);
            let counts: Vec<u64> = (0..dims)
                .map(|i| if i < live { 2 + (seed >> (i % 48)) % 5 } else { 1 })
                .collect();
            let peer: Vec<i64> = (0..dims as i64).map(|i| 8 << (i % 20)).collect();
            let local: Vec<i64> = (0..dims as i64).map(|i| -(16 << (i % 20))).collect();
            let (lc, lp, ll) = (counts[..live].to_vec(), peer[..live].to_vec(), local[..live].to_vec());
            // Change one word of one array (or none): a count anywhere,
            // or a stride of a live dimension.
            let (mut c, mut p, mut l) = (counts.clone(), peer.clone(), local.clone());
            match flip {
                1 if dims > 0 => c[at % dims] ^= 1 << (seed % 64),
                2 if live > 0 => p[at % live] ^= 1 << (seed % 64),
                3 if live > 0 => l[at % live] = l[at % live].wrapping_add(1),
                _ => {}
            }
            let want = naive(&lc, &c, &lp, &p, &ll, &l);
            proptest::prop_assert_eq!(same_shape(&lc, &c, &lp, &p, &ll, &l), want);
            proptest::prop_assert_eq!(same_shape_plain(&lc, &c, &lp, &p, &ll, &l), want);
        }
    }
}
