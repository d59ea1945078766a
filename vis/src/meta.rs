//! VIS metadata and its validation: everything is checked (bounds of every
//! element on both sides, overflow, matching totals) before any byte moves,
//! and compiled into an owned [`Shape`], so the caller's metadata arrays
//! are consumed before the call returns.

use crate::cache;
use crate::compiled::StridedAt;
use crate::simd;
use crate::stride_plan::{fold, optimize, scan, Dim, Rel, StridePlan, Work};
use rgex_core::segment::check_range;
use rgex_core::{Error, Rank, Result};

/// Strided metadata: a rectangular section of an N-d array on each side.
///
/// Element `(i_0, .., i_{n-1})` (each `i_k < counts[k]`) is `elem_size`
/// bytes at `peer_offset + sum(i_k * peer_strides[k])` in the peer's
/// segment and at `local_offset + sum(i_k * local_strides[k])` in the local
/// buffer. Strides are signed bytes: translations, transposes (permuted
/// strides) and reflections (negative strides) are all expressible.
///
/// ```
/// use rgex_vis::Strided;
/// // Column 2 of a 4 x 8 row-major array of u64 on the peer, to a dense
/// // local vector of 4.
/// let s = Strided { elem_size: 8, counts: &[4], peer_offset: 16, peer_strides: &[64],
///                   local_offset: 0, local_strides: &[8] };
/// assert_eq!(s.bytes().unwrap(), 32);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    /// Bytes per element.
    pub elem_size: usize,
    /// Elements per dimension (dimension 0 is walked innermost).
    pub counts: &'a [u64],
    /// Byte offset in the peer's segment of element (0, .., 0).
    pub peer_offset: u64,
    /// Peer-side stride of each dimension, in bytes.
    pub peer_strides: &'a [i64],
    /// Byte offset in the local buffer of element (0, .., 0).
    pub local_offset: u64,
    /// Local-side stride of each dimension, in bytes.
    pub local_strides: &'a [i64],
}

impl Strided<'_> {
    /// Bytes the transfer moves (an error on overflow or bad metadata).
    pub fn bytes(&self) -> Result<u64> {
        self.check_dims()?;
        let mut n = self.elem_size as u64;
        for &c in self.counts {
            n = n.checked_mul(c).ok_or_else(|| {
                Error::Config(format!(
                    "VIS strided: {} x {:?} bytes overflows 64 bits",
                    self.elem_size, self.counts
                ))
            })?;
        }
        Ok(n)
    }

    pub(crate) fn check_dims(&self) -> Result<()> {
        let n = self.counts.len();
        if self.peer_strides.len() != n || self.local_strides.len() != n {
            return Err(Error::Config(format!(
                "VIS strided: {n} counts but {} peer strides and {} local strides (one of each per dimension)",
                self.peer_strides.len(),
                self.local_strides.len()
            )));
        }
        Ok(())
    }
}

/// Vector metadata: lists of `(offset, length)` fragments on each side; the
/// totals must be equal, the list lengths may differ. Bytes are matched in
/// order: the k-th byte of the peer fragments with the k-th local byte.
#[derive(Clone, Copy, Debug)]
pub struct Vector<'a> {
    /// `(offset, len)` fragments in the peer's segment.
    pub peer: &'a [(u64, u64)],
    /// `(offset, len)` fragments in the local buffer.
    pub local: &'a [(u64, u64)],
}

/// Indexed metadata: a list of offsets with one fragment length per side;
/// totals (`peer.len() * peer_len == local.len() * local_len`) must match.
#[derive(Clone, Copy, Debug)]
pub struct Indexed<'a> {
    /// Fragment offsets in the peer's segment.
    pub peer: &'a [u64],
    /// Length of every peer fragment.
    pub peer_len: u64,
    /// Fragment offsets in the local buffer.
    pub local: &'a [u64],
    /// Length of every local fragment.
    pub local_len: u64,
}

/// Any VIS metadata.
#[derive(Clone, Copy, Debug)]
pub enum Meta<'a> {
    /// Strided.
    Strided(Strided<'a>),
    /// Vector.
    Vector(Vector<'a>),
    /// Indexed.
    Indexed(Indexed<'a>),
    /// Strided metadata compiled once, at two offsets.
    Compiled(StridedAt<'a>),
}

impl<'a> From<Strided<'a>> for Meta<'a> {
    fn from(s: Strided<'a>) -> Self {
        Meta::Strided(s)
    }
}
impl<'a> From<Vector<'a>> for Meta<'a> {
    fn from(v: Vector<'a>) -> Self {
        Meta::Vector(v)
    }
}
impl<'a> From<StridedAt<'a>> for Meta<'a> {
    fn from(c: StridedAt<'a>) -> Self {
        Meta::Compiled(c)
    }
}
impl<'a> From<Indexed<'a>> for Meta<'a> {
    fn from(i: Indexed<'a>) -> Self {
        Meta::Indexed(i)
    }
}

/// A contiguous piece on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Offset in the peer's segment.
    pub peer: u64,
    /// Offset in the local buffer.
    pub local: u64,
    /// Bytes.
    pub len: u64,
}

/// Validated, owned metadata: what a mechanism executes.
// A strided plan keeps its loops inline (no allocation for up to 8), which
// makes that variant large; a shape is built once per transfer by the
// mechanisms other than the direct one (which builds none), so its size
// costs a copy at most, where boxing would cost an allocation per call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// An optimized strided plan.
    Strided(StridePlan),
    /// Pieces contiguous on both sides (vector and indexed).
    Runs(Vec<Run>),
}

impl Shape {
    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        match self {
            Shape::Strided(p) => p.bytes(),
            Shape::Runs(r) => r.iter().map(|r| r.len).sum(),
        }
    }

    /// Contiguous chunks.
    pub fn chunks(&self) -> u64 {
        match self {
            Shape::Strided(p) => p.elements(),
            Shape::Runs(r) => r.len() as u64,
        }
    }

    /// Call `f(peer, local, len)` for every chunk, in order.
    pub fn for_each(&self, mut f: impl FnMut(u64, u64, usize)) {
        match self {
            Shape::Strided(p) => p.for_each(f),
            Shape::Runs(r) => r.iter().for_each(|r| f(r.peer, r.local, r.len as usize)),
        }
    }
}

#[cold]
fn local_err(what: &str, lo: i128, hi: i128, limit: usize) -> Error {
    Error::Config(format!(
        "VIS {what}: local range [{lo}, {hi}) falls outside the local buffer of {limit} bytes"
    ))
}

/// The first remote offset `meta` names (a strided or compiled shape's
/// element (0, .., 0), the first fragment's): which segment it addresses
/// (0, the primordial segment, if it names none).
pub(crate) fn first_remote(meta: &Meta<'_>) -> u64 {
    match meta {
        Meta::Strided(s) => s.peer_offset,
        Meta::Compiled(c) => c.peer_offset,
        Meta::Vector(v) => v.peer.first().map_or(0, |f| f.0),
        Meta::Indexed(x) => x.peer.first().copied().unwrap_or(0),
    }
}

/// Check `peer` is a rank of a job of `size`.
pub(crate) fn check_rank(peer: Rank, size: u32) -> Result<()> {
    if peer.0 >= size {
        return Err(Error::RankOutOfRange { rank: peer.0, size });
    }
    Ok(())
}

/// Validate `meta` for a transfer with `peer` (whose segment is `seg_len`
/// bytes) and a local buffer of `local_len` bytes; compile it.
///
/// ```
/// use rgex_core::Rank;
/// use rgex_vis::{validate, Meta, Vector};
/// let v = Vector { peer: &[(0, 4), (8, 4)], local: &[(0, 8)] };
/// assert_eq!(validate(&Meta::Vector(v), Rank(1), 64, 8).unwrap().bytes(), 8);
/// let bad = Vector { peer: &[(60, 8)], local: &[(0, 8)] };
/// assert!(validate(&Meta::Vector(bad), Rank(1), 64, 8).is_err());
/// ```
pub fn validate(meta: &Meta<'_>, peer: Rank, seg_len: u64, local_len: usize) -> Result<Shape> {
    match meta {
        Meta::Strided(s) => Ok(Shape::Strided(validate_strided(
            s, peer, seg_len, local_len,
        )?)),
        Meta::Compiled(c) => Ok(Shape::Strided(plan_of(
            c.place(peer, seg_len, local_len)?,
            c.shape.loops(),
        ))),
        Meta::Vector(v) => {
            check_vector(v, peer, seg_len, local_len)?;
            collect_runs(v.peer.iter().copied(), v.local.iter().copied())
        }
        Meta::Indexed(x) => {
            check_indexed(x, peer, seg_len, local_len)?;
            collect_runs(
                x.peer.iter().map(|&o| (o, x.peer_len)),
                x.local.iter().map(|&o| (o, x.local_len)),
            )
        }
    }
}

/// Validate strided metadata and optimize it, in one O(dims) scan (no
/// allocation for plans of up to 8 loops).
pub(crate) fn validate_strided(
    s: &Strided<'_>,
    peer: Rank,
    seg_len: u64,
    local_len: usize,
) -> Result<StridePlan> {
    s.check_dims()?;
    // A cached shape's plan is built straight from the cache's loops.
    let hit = cached(s, |rel, folded, dims| {
        place_strided(rel, folded, s, peer, seg_len, local_len).map(|p| plan_of(p, dims))
    });
    if let Some(plan) = hit {
        return plan;
    }
    let mut work = Work::new();
    let placed = compile_place(s, peer, seg_len, local_len, &mut work)?;
    Ok(plan_of(placed, &work))
}

/// The owned plan of a validated placement (folded element size, 0 for
/// nothing to move, and both bases) and its loops.
fn plan_of((elem, peer_base, local_base): (usize, u64, u64), dims: &[Dim]) -> StridePlan {
    if elem == 0 {
        return optimize(0, &[], 0, &[], 0, &[]);
    }
    StridePlan {
        elem,
        dims: dims.iter().copied().collect(),
        peer_base,
        local_base,
    }
}

/// If the optimized form of `s` (whose arrays are checked) is in the
/// per-thread cache, `f` of it (relative extents, folded element size,
/// loops; see [`cache::with`]); else `None`.
#[inline(always)]
pub(crate) fn cached<R>(s: &Strided<'_>, f: impl FnOnce(Rel, usize, &[Dim]) -> R) -> Option<R> {
    if !cacheable(s) {
        return None;
    }
    cache::with(s.elem_size, s.counts, s.peer_strides, s.local_strides, f)
}

/// True if the plan cache keeps the optimized form of `s`: metadata of
/// [`cache::MIN_DIMS`] dimensions or more.
#[inline(always)]
fn cacheable(s: &Strided<'_>) -> bool {
    s.counts.len() >= cache::MIN_DIMS
}

/// The miss path of [`cached`] metadata (arrays checked): [`compile_into`]
/// `work`, the result kept in the per-thread cache (if [`cacheable`]),
/// then placed and checked as
/// [`place_strided`] does; `(0, 0, 0)` if it moves nothing.
#[inline]
pub(crate) fn compile_place(
    s: &Strided<'_>,
    peer: Rank,
    seg_len: u64,
    local_len: usize,
    work: &mut Work,
) -> Result<(usize, u64, u64)> {
    let Some((rel, folded)) = compile_into(s, work)? else {
        return Ok((0, 0, 0));
    };
    if cacheable(s) {
        let (elem, counts, ps, ls) = (s.elem_size, s.counts, s.peer_strides, s.local_strides);
        cache::put(elem, counts, ps, ls, rel, folded, work);
    }
    place_strided(rel, folded, s, peer, seg_len, local_len)
}

/// Passes 1 to 4 over strided metadata whose arrays are checked (its
/// offsets aside): the loops into `work` (empty on entry), the relative
/// extents and the folded element size; `None` if it moves nothing; an
/// error if its byte count overflows.
#[inline(always)]
pub(crate) fn compile_into(s: &Strided<'_>, work: &mut Work) -> Result<Option<(Rel, usize)>> {
    let sc = scan(s.elem_size, s.counts, s.peer_strides, s.local_strides, work);
    match sc.bytes {
        None => Err(s.bytes().expect_err("the product overflows")),
        Some(0) => Ok(None),
        Some(_) => Ok(Some((sc.rel, fold(s.elem_size, work)))),
    }
}

/// Place the relative extents `rel` of strided metadata `s` at its two
/// offsets and check both sides: `peer`'s segment of `seg_len` bytes, a
/// local buffer of `local_len`. The folded element size `folded` and the
/// plan's bases; an error naming `s` otherwise.
#[inline(always)]
pub(crate) fn place_strided(
    rel: Rel,
    folded: usize,
    s: &Strided<'_>,
    peer: Rank,
    seg_len: u64,
    local_len: usize,
) -> Result<(usize, u64, u64)> {
    let at = rel.place(s.peer_offset, s.local_offset);
    let Some((plo, phi)) = at.peer else {
        return Err(overflow_err(s, peer));
    };
    if plo < 0 || phi > i128::from(seg_len) {
        return Err(peer_err(s, peer, seg_len, plo, phi));
    }
    let Some((llo, lhi)) = at.local else {
        return Err(overflow_err(s, peer));
    };
    if llo < 0 || lhi > local_len as i128 {
        return Err(local_err("strided", llo, lhi, local_len));
    }
    Ok((folded, at.peer_base, at.local_base))
}

#[cold]
fn overflow_err(s: &Strided<'_>, peer: Rank) -> Error {
    Error::Config(format!(
        "VIS strided to {peer}: counts {:?} x strides overflow (peer strides {:?}, local strides {:?})",
        s.counts, s.peer_strides, s.local_strides
    ))
}

#[cold]
fn peer_err(s: &Strided<'_>, peer: Rank, seg_len: u64, plo: i128, phi: i128) -> Error {
    if plo < 0 {
        return Error::Config(format!(
            "VIS strided: remote range on {peer} starts at byte {plo} (offset {:#x} with strides {:?}), before its segment of {seg_len:#x} bytes",
            s.peer_offset, s.peer_strides
        ));
    }
    Error::OutOfSegment {
        rank: peer,
        offset: plo as u64,
        len: (phi - plo).min(i128::from(u64::MAX)) as u64,
        seg_len,
    }
}

/// Bounds of every fragment of vector metadata.
pub(crate) fn check_vector(
    v: &Vector<'_>,
    peer: Rank,
    seg_len: u64,
    local_len: usize,
) -> Result<()> {
    for &(off, len) in v.peer {
        check_range(peer, seg_len, off, len)?;
    }
    for &(off, len) in v.local {
        check_local("vector", off, len, local_len)?;
    }
    Ok(())
}

/// Bounds of every fragment of indexed metadata: one pass for the
/// highest offset of each side (vectorizable), then, only if that fails,
/// the fragment-by-fragment walk that names the first bad one.
pub(crate) fn check_indexed(
    x: &Indexed<'_>,
    peer: Rank,
    seg_len: u64,
    local_len: usize,
) -> Result<()> {
    let fits = |offs: &[u64], len: u64, limit: u64| {
        offs.is_empty()
            || simd::max(offs)
                .checked_add(len)
                .is_some_and(|end| end <= limit)
    };
    if !fits(x.peer, x.peer_len, seg_len) {
        for &off in x.peer {
            check_range(peer, seg_len, off, x.peer_len)?;
        }
    }
    if !fits(x.local, x.local_len, local_len as u64) {
        for &off in x.local {
            check_local("indexed", off, x.local_len, local_len)?;
        }
    }
    Ok(())
}

fn check_local(what: &str, off: u64, len: u64, limit: usize) -> Result<()> {
    match off.checked_add(len) {
        Some(end) if end <= limit as u64 => Ok(()),
        _ => Err(local_err(
            what,
            i128::from(off),
            i128::from(off) + i128::from(len),
            limit,
        )),
    }
}

/// Match two fragment lists byte for byte into runs (merging runs
/// contiguous on both sides); the totals must agree.
fn collect_runs(
    peer: impl Iterator<Item = (u64, u64)> + Clone,
    local: impl Iterator<Item = (u64, u64)> + Clone,
) -> Result<Shape> {
    let mut out: Vec<Run> = Vec::new();
    for_each_run(peer, local, |r| out.push(r))?;
    Ok(Shape::Runs(out))
}

/// Match two fragment lists byte for byte into runs, merging runs
/// contiguous on both sides, and hand each to `f` in order (nothing is
/// allocated); first check the totals agree (an error, and no call of
/// `f`, if not).
pub(crate) fn for_each_run(
    peer: impl Iterator<Item = (u64, u64)> + Clone,
    local: impl Iterator<Item = (u64, u64)> + Clone,
    mut f: impl FnMut(Run),
) -> Result<()> {
    fn total(mut it: impl Iterator<Item = (u64, u64)>) -> Option<u64> {
        it.try_fold(0u64, |a, (_, l)| a.checked_add(l))
    }
    let (pt, lt) = (
        total(peer.clone())
            .ok_or_else(|| Error::Config("VIS: peer total overflows 64 bits".into()))?,
        total(local.clone())
            .ok_or_else(|| Error::Config("VIS: local total overflows 64 bits".into()))?,
    );
    if pt != lt {
        return Err(Error::Config(format!(
            "VIS: the local fragments total {lt} bytes but the peer fragments {pt}; the totals must be equal"
        )));
    }
    let mut cur: Option<Run> = None;
    let mut p = peer.filter(|f| f.1 > 0);
    let mut l = local.filter(|f| f.1 > 0);
    let (mut pc, mut lc) = (p.next(), l.next());
    while let (Some((po, pl)), Some((lo, ll))) = (pc, lc) {
        let n = pl.min(ll);
        match &mut cur {
            Some(r) if r.peer + r.len == po && r.local + r.len == lo => r.len += n,
            _ => {
                if let Some(r) = cur.take() {
                    f(r);
                }
                cur = Some(Run {
                    peer: po,
                    local: lo,
                    len: n,
                });
            }
        }
        pc = if pl == n {
            p.next()
        } else {
            Some((po + n, pl - n))
        };
        lc = if ll == n {
            l.next()
        } else {
            Some((lo + n, ll - n))
        };
    }
    if let Some(r) = cur {
        f(r);
    }
    Ok(())
}
