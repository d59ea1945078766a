//! Strided metadata compiled once, for transfers that repeat a shape.
//!
//! A halo exchange or a tiled copy sends the same strided shape every
//! step, only at other offsets. [`CompiledStrided`] holds what validation
//! and the stride optimizer make of the shape's counts and strides (the
//! folded loop nest, and each side's extent relative to its offset), so a
//! transfer described by [`CompiledStrided::at`] costs O(1) bounds checks
//! and no look at the original arrays: the per-call cost no longer depends
//! on the metadata's dimensionality. The per-thread cache (see the crate
//! docs) gets most of this for plain [`Strided`] metadata, but must still
//! compare the caller's arrays with the cached ones on every call, since
//! they may have changed; a compiled shape is immutable, so there is
//! nothing to compare.

use crate::meta::{compile_into, place_strided, Strided};
use crate::stride_plan::{Dim, Dims, Rel, Work};
use rgex_core::{Rank, Result};

/// Strided metadata (element size, counts, strides per side), validated
/// and optimized once, independent of the two offsets; place it with
/// [`at`](Self::at) to transfer: every [`Vis`](crate::Vis) operation
/// takes the result. A transfer then costs O(1) checks whatever the
/// metadata's dimensionality (plain [`Strided`] metadata is compared with
/// the per-thread cache's copy on every call).
///
/// ```
/// use rgex_core::Rank;
/// use rgex_vis::{validate, CompiledStrided, Meta};
/// // A column of 4 u64 on the peer (row pitch 64 bytes) from a dense
/// // local vector, described once in 8 dimensions, 7 of them null.
/// let shape = CompiledStrided::new(8, &[4, 1, 1, 1, 1, 1, 1, 1],
///                                  &[64, 0, 0, 0, 0, 0, 0, 0], &[8, 0, 0, 0, 0, 0, 0, 0])?;
/// assert_eq!(shape.bytes(), 32);
/// // Column 2, then column 5 of a 4 x 8 array: the shape at other offsets
/// // (with a Vis: `vis.put(peer, shape.at(col * 8, 0), &src, flags)`).
/// for col in [2u64, 5] {
///     let plan = validate(&Meta::from(shape.at(col * 8, 0)), Rank(1), 256, 32)?;
///     assert_eq!(plan.bytes(), 32);
/// }
/// // Past the peer's 256 bytes: refused, naming the rank and the limit.
/// assert!(validate(&Meta::from(shape.at(200, 0)), Rank(1), 256, 32).is_err());
/// # Ok::<(), rgex_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CompiledStrided {
    /// Folded element size (0: the shape moves nothing).
    elem: usize,
    /// The optimized loop nest, innermost first.
    dims: Dims,
    /// Each side's extent relative to its offset.
    rel: Rel,
    /// The metadata as given, for error messages.
    elem_size: usize,
    counts: Box<[u64]>,
    peer_strides: Box<[i64]>,
    local_strides: Box<[i64]>,
}

/// A [`CompiledStrided`] placed at a peer and a local offset: VIS metadata
/// ([`Meta::Compiled`](crate::Meta::Compiled)) for any transfer.
#[derive(Clone, Copy, Debug)]
pub struct StridedAt<'a> {
    /// The shape.
    pub shape: &'a CompiledStrided,
    /// Byte offset in the peer's segment of element (0, .., 0).
    pub peer_offset: u64,
    /// Byte offset in the local buffer of element (0, .., 0).
    pub local_offset: u64,
}

impl CompiledStrided {
    /// Validate and optimize strided metadata (as in [`Strided`], without
    /// the offsets): the same checks as a transfer's (three arrays of one
    /// length, no overflow), the same errors.
    pub fn new(
        elem_size: usize,
        counts: &[u64],
        peer_strides: &[i64],
        local_strides: &[i64],
    ) -> Result<Self> {
        let s = Strided {
            elem_size,
            counts,
            peer_offset: 0,
            peer_strides,
            local_offset: 0,
            local_strides,
        };
        s.check_dims()?;
        let mut work = Work::new();
        let (rel, elem, dims) = match compile_into(&s, &mut work)? {
            Some((rel, elem)) => (rel, elem, work.iter().copied().collect()),
            None => (Rel::default(), 0, Dims::new()),
        };
        Ok(CompiledStrided {
            elem,
            dims,
            rel,
            elem_size,
            counts: counts.into(),
            peer_strides: peer_strides.into(),
            local_strides: local_strides.into(),
        })
    }

    /// This shape at a peer and a local offset.
    #[inline]
    pub fn at(&self, peer_offset: u64, local_offset: u64) -> StridedAt<'_> {
        StridedAt {
            shape: self,
            peer_offset,
            local_offset,
        }
    }

    /// Bytes a transfer of this shape moves.
    pub fn bytes(&self) -> u64 {
        if self.elem == 0 {
            return 0;
        }
        self.dims.iter().fold(self.elem as u64, |n, d| n * d.count)
    }

    /// Dimensions of the metadata it was made from.
    pub fn dims(&self) -> usize {
        self.counts.len()
    }

    /// The optimized loop nest, innermost first (empty when the shape
    /// moves nothing or folds into one contiguous element).
    pub fn loops(&self) -> &[Dim] {
        &self.dims
    }
}

impl StridedAt<'_> {
    /// Bounds of both sides for `peer` (whose segment is `seg_len` bytes)
    /// and a local buffer of `local_len` bytes: the folded element size
    /// (0: nothing to move) and the plan's peer and local bases.
    #[inline(always)]
    pub(crate) fn place(
        &self,
        peer: Rank,
        seg_len: u64,
        local_len: usize,
    ) -> Result<(usize, u64, u64)> {
        let c = self.shape;
        if c.elem == 0 {
            return Ok((0, 0, 0));
        }
        place_strided(c.rel, c.elem, &self.strided(), peer, seg_len, local_len)
    }

    /// The plain metadata this describes (its offsets are placed; its
    /// arrays name it in errors).
    pub(crate) fn strided(&self) -> Strided<'_> {
        let c = self.shape;
        Strided {
            elem_size: c.elem_size,
            counts: &c.counts,
            peer_offset: self.peer_offset,
            peer_strides: &c.peer_strides,
            local_offset: self.local_offset,
            local_strides: &c.local_strides,
        }
    }
}
