//! The stride optimizer: a pure function from strided metadata to an
//! execution plan, and the walks that execute a plan.
//!
//! Passes, in order (GASNet-EX's VIS): null-dimension removal (count 1),
//! stride inversion (peer strides made non-negative, the local side
//! adjusted to match, base offsets moved), dimensional sort (peer strides
//! non-decreasing), dimensional folding (dimensions contiguous on both
//! sides folded into the element size; adjacent nestable loops merged).
//! The plan moves exactly the same (source byte, destination byte) pairs
//! as the naive N-d loop over the original metadata.

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

/// An execution plan: copy `elem` contiguous bytes per point of the loop
/// nest `dims` (innermost first), starting at the two base offsets.
///
/// An empty plan (`elem == 0`) moves nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridePlan {
    /// Bytes per element after folding (0: nothing to move).
    pub elem: usize,
    /// Loops, innermost first.
    pub dims: Vec<Dim>,
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
        for d in &self.dims {
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
        let mut idx = vec![0u64; n];
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

/// Optimize strided metadata into a plan.
///
/// `counts[i]`, `peer_strides[i]` and `local_strides[i]` describe
/// dimension `i` (the order is free: the optimizer sorts). The metadata
/// must have been validated (equal lengths, every element inside both
/// sides, no overflow: see [`crate::validate`]), so every offset the plan
/// computes is a real element's.
///
/// ```
/// use rgex_vis::plan::optimize;
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
    debug_assert!(counts.len() == peer_strides.len() && counts.len() == local_strides.len());
    let empty = StridePlan {
        elem: 0,
        dims: Vec::new(),
        peer_base,
        local_base,
    };
    if elem == 0 || counts.contains(&0) {
        return empty;
    }
    // Pass 1: null dimensions.
    let mut dims: Vec<Dim> = counts
        .iter()
        .zip(peer_strides.iter().zip(local_strides))
        .filter(|(&c, _)| c != 1)
        .map(|(&count, (&peer_stride, &local_stride))| Dim {
            count,
            peer_stride,
            local_stride,
        })
        .collect();
    // Pass 2: stride inversion (walk reflected peer dimensions backwards).
    let (mut pb, mut lb) = (i128::from(peer_base), i128::from(local_base));
    for d in &mut dims {
        if d.peer_stride < 0 {
            let last = i128::from(d.count - 1);
            pb += last * i128::from(d.peer_stride);
            lb += last * i128::from(d.local_stride);
            d.peer_stride = -d.peer_stride;
            d.local_stride = -d.local_stride;
        }
    }
    // Pass 3: dimensional sort (stable: equal peer strides keep their order).
    dims.sort_by_key(|d| d.peer_stride);
    // Pass 4: folding, to a fixed point.
    let mut elem = elem as i64;
    loop {
        let mut changed = false;
        while let Some(d) = dims.first() {
            if d.peer_stride == elem && d.local_stride == elem {
                elem *= d.count as i64;
                dims.remove(0);
                changed = true;
            } else {
                break;
            }
        }
        let mut i = 0;
        while i + 1 < dims.len() {
            let (a, b) = (dims[i], dims[i + 1]);
            let c = a.count as i64;
            if a.peer_stride.checked_mul(c) == Some(b.peer_stride)
                && a.local_stride.checked_mul(c) == Some(b.local_stride)
            {
                dims[i].count = a.count * b.count;
                dims.remove(i + 1);
                changed = true;
            } else {
                i += 1;
            }
        }
        if !changed {
            break;
        }
    }
    debug_assert!(
        pb >= 0 && lb >= 0,
        "validated metadata keeps bases in range"
    );
    StridePlan {
        elem: elem as usize,
        dims,
        peer_base: pb as u64,
        local_base: lb as u64,
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
