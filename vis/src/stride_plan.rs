//! The strided-transfer plan: the stride optimizer, a pure function from
//! strided metadata to an execution plan (a loop nest), and the walks that
//! execute a plan.
//!
//! Passes, in order (GASNet-EX's VIS): null-dimension removal (count 1),
//! stride inversion (peer strides made non-negative, the local side
//! adjusted to match, base offsets moved), dimensional sort (peer strides
//! non-decreasing), dimensional folding (dimensions contiguous on both
//! sides folded into the element size; adjacent nestable loops merged).
//! The plan moves exactly the same (source byte, destination byte) pairs
//! as the naive N-d loop over the original metadata.

use std::mem::MaybeUninit;

/// One loop of a plan, innermost first: `count` iterations, advancing the
/// peer and local addresses by their strides (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim {
    /// Iterations (at least 2 in an optimized plan).
    pub count: u64,
    /// Peer-side stride in bytes (non-negative in an optimized plan).
    pub peer_stride: i64,
    /// Local-side stride in bytes.
    pub local_stride: i64,
}

/// Loops a plan keeps inline (without a heap allocation); longer plans
/// spill to the heap.
pub const INLINE_DIMS: usize = 8;

/// The loops of a plan, innermost first (see [`DimVec`]).
pub type Dims = DimVec<INLINE_DIMS>;

/// A vector of loops that keeps up to `N` inline (no allocation; making
/// one costs nothing, as the inline storage starts uninitialised) and
/// spills to the heap beyond. Dereferences to `[Dim]`.
#[derive(Clone)]
pub struct DimVec<const N: usize>(DimsRepr<N>);

#[derive(Clone)]
enum DimsRepr<const N: usize> {
    /// The first `len` entries of `buf` are initialised.
    Inline {
        len: usize,
        buf: [MaybeUninit<Dim>; N],
    },
    Heap(Vec<Dim>),
}

impl<const N: usize> DimVec<N> {
    /// No loops.
    #[inline]
    pub const fn new() -> Self {
        DimVec(DimsRepr::Inline {
            len: 0,
            buf: [MaybeUninit::uninit(); N],
        })
    }

    /// Append a loop (outermost).
    #[inline]
    pub fn push(&mut self, d: Dim) {
        match &mut self.0 {
            DimsRepr::Inline { len, buf } if *len < N => {
                buf[*len] = MaybeUninit::new(d);
                *len += 1;
            }
            DimsRepr::Inline { .. } => self.spill(d),
            DimsRepr::Heap(v) => v.push(d),
        }
    }

    /// Insert `d` after the last loop whose peer stride is not greater
    /// (a stable insertion sort by peer stride, one element at a time).
    #[inline]
    pub(crate) fn push_sorted(&mut self, d: Dim) {
        self.push(d);
        let w: &mut [Dim] = self;
        if w.len() < 2 || w[w.len() - 2].peer_stride <= d.peer_stride {
            return;
        }
        let mut j = w.len() - 1;
        while j > 0 && w[j - 1].peer_stride > d.peer_stride {
            w[j] = w[j - 1];
            j -= 1;
        }
        w[j] = d;
    }

    /// Keep the first `n` loops.
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        match &mut self.0 {
            DimsRepr::Inline { len, .. } => *len = n.min(*len),
            DimsRepr::Heap(v) => v.truncate(n),
        }
    }

    /// Move the inline loops to the heap, then append `d`.
    #[cold]
    fn spill(&mut self, d: Dim) {
        let mut v = Vec::with_capacity(2 * N.max(4));
        v.extend_from_slice(self);
        v.push(d);
        self.0 = DimsRepr::Heap(v);
    }
}

impl<const N: usize> Default for DimVec<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> std::ops::Deref for DimVec<N> {
    type Target = [Dim];
    #[inline]
    fn deref(&self) -> &[Dim] {
        match &self.0 {
            // SAFETY: the first `len` entries are initialised (`push` writes
            // an entry before counting it, `truncate` only shortens), and
            // `MaybeUninit<Dim>` has `Dim`'s layout.
            DimsRepr::Inline { len, buf } => unsafe {
                std::slice::from_raw_parts(buf.as_ptr().cast::<Dim>(), *len)
            },
            DimsRepr::Heap(v) => v,
        }
    }
}

impl<const N: usize> std::ops::DerefMut for DimVec<N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Dim] {
        match &mut self.0 {
            // SAFETY: as in `deref`.
            DimsRepr::Inline { len, buf } => unsafe {
                std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<Dim>(), *len)
            },
            DimsRepr::Heap(v) => v,
        }
    }
}

impl<const N: usize> PartialEq for DimVec<N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<const N: usize> Eq for DimVec<N> {}

impl<const N: usize> std::fmt::Debug for DimVec<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<const N: usize> FromIterator<Dim> for DimVec<N> {
    fn from_iter<I: IntoIterator<Item = Dim>>(it: I) -> Self {
        let mut d = Self::new();
        for x in it {
            d.push(x);
        }
        d
    }
}

impl<const N: usize> From<Vec<Dim>> for DimVec<N> {
    fn from(v: Vec<Dim>) -> Self {
        v.into_iter().collect()
    }
}

impl<'a, const N: usize> IntoIterator for &'a DimVec<N> {
    type Item = &'a Dim;
    type IntoIter = std::slice::Iter<'a, Dim>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// An execution plan: copy `elem` contiguous bytes per point of the loop
/// nest `dims` (innermost first), starting at the two base offsets.
///
/// An empty plan (`elem == 0`) moves nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridePlan {
    /// Bytes per element after folding (0: nothing to move).
    pub elem: usize,
    /// Loops, innermost first.
    pub dims: Dims,
    /// Byte offset of the first element on the peer side.
    pub peer_base: u64,
    /// Byte offset of the first element on the local side.
    pub local_base: u64,
}

impl StridePlan {
    /// True if the plan moves nothing.
    pub fn is_empty(&self) -> bool {
        self.elem == 0
    }

    /// Elements (loop points) in the plan.
    pub fn elements(&self) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.dims.iter().map(|d| d.count).product()
    }

    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        self.elements() * self.elem as u64
    }

    /// Peer and local byte offsets of element number `i` (in loop order).
    pub fn offsets_of(&self, mut i: u64) -> (u64, u64) {
        let (mut p, mut l) = (i128::from(self.peer_base), i128::from(self.local_base));
        for d in self.dims.iter() {
            let k = i128::from(i % d.count);
            i /= d.count;
            p += k * i128::from(d.peer_stride);
            l += k * i128::from(d.local_stride);
        }
        (p as u64, l as u64)
    }

    /// Call `f(peer_offset, local_offset, len)` for every element in order.
    pub fn for_each(&self, mut f: impl FnMut(u64, u64, usize)) {
        if self.is_empty() {
            return;
        }
        let n = self.dims.len();
        let mut stack = [0u64; 16];
        let mut heap;
        let idx: &mut [u64] = if n <= stack.len() {
            &mut stack[..n]
        } else {
            heap = vec![0u64; n];
            &mut heap
        };
        let (mut p, mut l) = (self.peer_base as i64, self.local_base as i64);
        loop {
            f(p as u64, l as u64, self.elem);
            let mut k = 0;
            loop {
                if k == n {
                    return;
                }
                let d = &self.dims[k];
                idx[k] += 1;
                p = p.wrapping_add(d.peer_stride);
                l = l.wrapping_add(d.local_stride);
                if idx[k] < d.count {
                    break;
                }
                p = p.wrapping_sub(d.peer_stride.wrapping_mul(d.count as i64));
                l = l.wrapping_sub(d.local_stride.wrapping_mul(d.count as i64));
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

/// Non-null dimensions the optimizer works on without allocating (more
/// spill to the heap; validated metadata has at most 63, as the product
/// of counts of at least 2 fits 64 bits).
pub(crate) const WORK_DIMS: usize = 64;

/// The optimizer's working loops.
pub(crate) type Work = DimVec<WORK_DIMS>;

/// What one scan of strided metadata gives: what validation needs (the
/// byte count, each side's extent relative to its offset) and the local
/// base's shift by stride inversion. Independent of the two offsets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scanned {
    /// `elem * product(counts)`, `None` on overflow (of a partial product,
    /// even if a later count is 0).
    pub(crate) bytes: Option<u64>,
    /// Relative extents and shift; meaningful only when `bytes` is a
    /// non-zero count.
    pub(crate) rel: Rel,
}

/// Where strided metadata reaches relative to its offsets: each side's
/// lowest byte and highest byte (exclusive), and how far stride inversion
/// moves the local base (the peer base moves to the peer side's lowest
/// byte). Bounded by 2^127 in magnitude when the byte count fits 64 bits.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rel {
    pub(crate) peer_lo: i128,
    pub(crate) peer_hi: i128,
    pub(crate) local_lo: i128,
    pub(crate) local_hi: i128,
    pub(crate) local_shift: i128,
}

/// [`Rel`] placed at two offsets.
pub(crate) struct Placed {
    /// Lowest and highest (exclusive) byte of each side, `None` on
    /// overflow.
    pub(crate) peer: Option<(i128, i128)>,
    pub(crate) local: Option<(i128, i128)>,
    /// The plan's bases, valid when both sides are in range.
    pub(crate) peer_base: u64,
    pub(crate) local_base: u64,
}

impl Rel {
    /// Absolute extents and bases for these offsets.
    #[inline(always)]
    pub(crate) fn place(&self, peer_offset: u64, local_offset: u64) -> Placed {
        let (pb, lb) = (i128::from(peer_offset), i128::from(local_offset));
        let side =
            |base: i128, lo: i128, hi: i128| Some((base.checked_add(lo)?, base.checked_add(hi)?));
        let peer = side(pb, self.peer_lo, self.peer_hi);
        let local = side(lb, self.local_lo, self.local_hi);
        // Clamped: only meaningful (and then in range) for valid metadata.
        let c = |b: i128| b.clamp(0, u64::MAX.into()) as u64;
        Placed {
            peer,
            local,
            peer_base: c(peer.map_or(pb, |x| x.0)),
            local_base: c(lb.wrapping_add(self.local_shift)),
        }
    }
}

/// Passes 1 to 3 in one O(dims) scan of strided metadata (whose three
/// arrays have the same length), with what validation needs on the way:
/// null dimensions are skipped, the others stride-inverted and
/// insertion-sorted (stably) by peer stride into `work` (empty on entry).
///
/// The extents are summed in 64 bits; if a span or a sum leaves that
/// range (huge counts or strides: validation will refuse them, but must
/// say why), they are recomputed exactly in 128 bits.
#[inline(always)]
pub(crate) fn scan<const N: usize>(
    elem: usize,
    counts: &[u64],
    peer_strides: &[i64],
    local_strides: &[i64],
    work: &mut DimVec<N>,
) -> Scanned {
    debug_assert!(counts.len() == peer_strides.len() && counts.len() == local_strides.len());
    let n = counts
        .len()
        .min(peer_strides.len())
        .min(local_strides.len());
    let (counts, peer_strides, local_strides) =
        (&counts[..n], &peer_strides[..n], &local_strides[..n]);
    // The byte count: `ovf` records an overflow of a partial product
    // before any zero count (after one, the product stays 0).
    let (mut b, mut ovf, mut zero) = (elem as u64, false, elem == 0);
    // Extents relative to the offsets (before adding the element) and the
    // local base's shift by inversion; `wide` if any left 64 bits.
    let (mut plo, mut phi, mut llo, mut lhi, mut shift) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut wide = false;
    for i in 0..n {
        let c = counts[i];
        if c <= 1 {
            zero |= c == 0;
            continue;
        }
        let (r, o) = b.overflowing_mul(c);
        b = r;
        ovf |= o & !zero;
        let (p, l) = (peer_strides[i], local_strides[i]);
        let last = (c - 1) as i64;
        let (sp, o1) = last.overflowing_mul(p);
        let (sl, o2) = last.overflowing_mul(l);
        wide |= (last < 0) | o1 | o2;
        let d = if p < 0 {
            let (x, o) = plo.overflowing_add(sp);
            plo = x;
            wide |= o;
            // Stride inversion: walk this dimension backwards, from its
            // last element on both sides.
            let (x, o) = shift.overflowing_add(sl);
            shift = x;
            wide |= o;
            Dim {
                count: c,
                peer_stride: p.wrapping_neg(),
                local_stride: l.wrapping_neg(),
            }
        } else {
            let (x, o) = phi.overflowing_add(sp);
            phi = x;
            wide |= o;
            Dim {
                count: c,
                peer_stride: p,
                local_stride: l,
            }
        };
        let (x, o) = if sl < 0 {
            llo.overflowing_add(sl)
        } else {
            lhi.overflowing_add(sl)
        };
        if sl < 0 {
            llo = x;
        } else {
            lhi = x;
        }
        wide |= o;
        work.push_sorted(d);
    }
    let bytes = if ovf {
        None
    } else if zero {
        Some(0)
    } else {
        Some(b)
    };
    let rel = if wide {
        rel_wide(elem, counts, peer_strides, local_strides)
    } else {
        let e = elem as i128;
        Rel {
            peer_lo: plo.into(),
            peer_hi: i128::from(phi) + e,
            local_lo: llo.into(),
            local_hi: i128::from(lhi) + e,
            local_shift: shift.into(),
        }
    };
    Scanned { bytes, rel }
}

/// [`Rel`] in 128 bits, for metadata whose spans leave 64. While the byte
/// count fits 64 bits these sums cannot overflow (sum of (c - 1) <=
/// product of c < 2^64, |stride| <= 2^63), so they wrap freely and are
/// trusted only then.
#[cold]
#[inline(never)]
fn rel_wide(elem: usize, counts: &[u64], peer_strides: &[i64], local_strides: &[i64]) -> Rel {
    let mut r = Rel::default();
    for ((&c, &p), &l) in counts.iter().zip(peer_strides).zip(local_strides) {
        if c <= 1 {
            continue;
        }
        // |(c - 1) * stride| < 2^127: the products cannot overflow.
        let last = i128::from(c - 1);
        let (sp, sl) = (last * i128::from(p), last * i128::from(l));
        if p < 0 {
            r.peer_lo = r.peer_lo.wrapping_add(sp);
            r.local_shift = r.local_shift.wrapping_add(sl);
        } else {
            r.peer_hi = r.peer_hi.wrapping_add(sp);
        }
        if sl < 0 {
            r.local_lo = r.local_lo.wrapping_add(sl);
        } else {
            r.local_hi = r.local_hi.wrapping_add(sl);
        }
    }
    let e = elem as i128;
    r.peer_hi = r.peer_hi.wrapping_add(e);
    r.local_hi = r.local_hi.wrapping_add(e);
    r
}

/// Pass 4, in place over the sorted loops `work`: one sweep folds the
/// innermost loops contiguous on both sides into the element and merges
/// a loop that continues the previous one on both sides into it. One
/// sweep reaches the fixed point: merging only grows the count of the
/// loop merged into, which changes nothing but whether the next loop
/// continues it, and the next is looked at after. The folded element
/// size.
#[inline(always)]
pub(crate) fn fold<const N: usize>(elem: usize, work: &mut DimVec<N>) -> usize {
    let mut elem = elem as i64;
    let w: &mut [Dim] = work;
    let mut out = 0;
    for r in 0..w.len() {
        let d = w[r];
        if out > 0 {
            let last = &mut w[out - 1];
            let c = last.count as i64;
            if last.peer_stride.checked_mul(c) == Some(d.peer_stride)
                && last.local_stride.checked_mul(c) == Some(d.local_stride)
            {
                last.count = last.count.wrapping_mul(d.count);
                continue;
            }
        } else if d.peer_stride == elem && d.local_stride == elem {
            elem = elem.wrapping_mul(d.count as i64);
            continue;
        }
        w[out] = d;
        out += 1;
    }
    work.truncate(out);
    elem as usize
}

/// Optimize strided metadata into a plan.
///
/// `counts[i]`, `peer_strides[i]` and `local_strides[i]` describe
/// dimension `i` (the order is free: the optimizer sorts). The metadata
/// must have been validated (equal lengths, every element inside both
/// sides, no overflow: see [`crate::validate`]), so every offset the plan
/// computes is a real element's.
///
/// Runs in O(dims) (plus an insertion sort of the non-null dimensions,
/// linear when they come sorted) and allocates nothing unless more than
/// 64 dimensions are non-null or more than 8 loops remain after folding.
///
/// ```
/// use rgex_vis::stride_plan::optimize;
/// // A 4 x 3 block of u32 in a row-major array of rows of 10, reflected
/// // on the peer side, onto a dense local array: folds to 4 rows of 12 bytes.
/// let p = optimize(4, &[3, 4], 120, &[4, -40], 0, &[4, 12]);
/// assert_eq!(p.elem, 12);
/// assert_eq!(p.dims.len(), 1);
/// assert!(p.dims[0].peer_stride >= 0);
/// ```
pub fn optimize(
    elem: usize,
    counts: &[u64],
    peer_base: u64,
    peer_strides: &[i64],
    local_base: u64,
    local_strides: &[i64],
) -> StridePlan {
    if elem == 0 || counts.contains(&0) {
        return StridePlan {
            elem: 0,
            dims: Dims::new(),
            peer_base,
            local_base,
        };
    }
    let mut work = Work::new();
    let sc = scan(elem, counts, peer_strides, local_strides, &mut work);
    let elem = fold(elem, &mut work);
    let at = sc.rel.place(peer_base, local_base);
    debug_assert!(
        at.peer.is_some_and(|p| p.0 >= 0)
            && i128::from(local_base).wrapping_add(sc.rel.local_shift) >= 0,
        "validated metadata keeps bases in range"
    );
    StridePlan {
        elem,
        dims: work.iter().copied().collect(),
        peer_base: at.peer_base,
        local_base: at.local_base,
    }
}

/// The (peer byte, local byte) pairs the naive N-d loop over the original
/// metadata moves, in loop order (dimension 0 innermost). For tests.
pub fn naive_mapping(
    elem: usize,
    counts: &[u64],
    peer_base: u64,
    peer_strides: &[i64],
    local_base: u64,
    local_strides: &[i64],
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if elem == 0 || counts.contains(&0) {
        return out;
    }
    let n = counts.len();
    let mut idx = vec![0u64; n];
    loop {
        let (mut p, mut l) = (i128::from(peer_base), i128::from(local_base));
        for i in 0..n {
            p += i128::from(idx[i]) * i128::from(peer_strides[i]);
            l += i128::from(idx[i]) * i128::from(local_strides[i]);
        }
        for b in 0..elem as i128 {
            out.push(((p + b) as u64, (l + b) as u64));
        }
        let mut k = 0;
        loop {
            if k == n {
                return out;
            }
            idx[k] += 1;
            if idx[k] < counts[k] {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
    }
}

/// The (peer byte, local byte) pairs a plan moves, in its loop order.
pub fn plan_mapping(plan: &StridePlan) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    plan.for_each(|p, l, len| {
        for b in 0..len as u64 {
            out.push((p + b, l + b));
        }
    });
    out
}
