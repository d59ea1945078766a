//! Non-contiguous one-sided transfers over rgex's VIS: fragment lists
//! (irregular) and strided blocks, typed by element.

use crate::error::{Error, Result};
use crate::global_ptr::GlobalPtr;
use crate::plain::{bytes_of, values_of, Plain};
use crate::rma::Rput;
use crate::runtime::Pgas;
use rgex::{Flags, Rank, Strided, Vector};
use std::future::Future;

/// A caller's mistake in a VIS call, as an error naming this rank.
fn bad(pg: &Pgas, why: String) -> Error {
    rgex::Error::Config(format!("rgex-pgas: {}: {why}", pg.rank())).into()
}

/// A fragment list's rank, `(offset, bytes)` pairs and element count.
type Fragments = (Rank, Vec<(u64, u64)>, usize);

/// The rank all of `frags` are on, and their `(offset, bytes)` list.
fn fragments<T: Plain>(pg: &Pgas, frags: &[(GlobalPtr<T>, usize)]) -> Result<Fragments> {
    let size = std::mem::size_of::<T>();
    let Some((first, _)) = frags.first() else {
        return Err(bad(pg, "an irregular transfer with no fragments".into()));
    };
    let mut out = Vec::with_capacity(frags.len());
    let mut elems = 0usize;
    for (p, n) in frags {
        if p.rank() != first.rank() {
            return Err(bad(
                pg,
                format!(
                    "irregular fragments on {} and {}: one transfer goes to one rank",
                    first.rank(),
                    p.rank()
                ),
            ));
        }
        out.push((p.addr()?.offset, (n * size) as u64));
        elems += n;
    }
    Ok((first.rank(), out, elems))
}

/// Dense row-major byte strides of a block of `counts` elements of `size` bytes.
fn dense(size: usize, counts: &[u64]) -> Vec<i64> {
    let mut s = Vec::with_capacity(counts.len());
    let mut acc = size as i64;
    for &c in counts {
        s.push(acc);
        acc = acc.saturating_mul(c as i64);
    }
    s
}

impl Pgas {
    /// Put `src` into the fragments `dst` (each a pointer and an element
    /// count, all on one rank; the counts add up to `src.len()`).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas, a: rgex_pgas::GlobalPtr<u32>) -> rgex_pgas::Result<()> {
    /// // a[0..2] = [1, 2] and a[10..13] = [3, 4, 5], in one transfer.
    /// pg.wait(pg.rput_irregular(&[1, 2, 3, 4, 5], &[(a, 2), (a.plus(10)?, 3)])?)?;
    /// # Ok(()) }
    /// ```
    pub fn rput_irregular<T: Plain>(
        &self,
        src: &[T],
        dst: &[(GlobalPtr<T>, usize)],
    ) -> Result<Rput> {
        let (rank, peer, elems) = fragments(self, dst)?;
        if elems != src.len() {
            return Err(bad(
                self,
                format!(
                    "the fragments hold {elems} elements, the source {}",
                    src.len()
                ),
            ));
        }
        let local = [(0, std::mem::size_of_val(src) as u64)];
        let put = self.inner.vis.put_nb(
            rank,
            Vector {
                peer: &peer,
                local: &local,
            },
            bytes_of(src),
            Flags::empty(),
        )?;
        Ok(Rput::of(put.rc))
    }

    /// Get the fragments `src` (all on one rank), one after the other.
    pub fn rget_irregular<T: Plain>(
        &self,
        src: &[(GlobalPtr<T>, usize)],
    ) -> Result<impl Future<Output = Result<Vec<T>>>> {
        let (rank, peer, elems) = fragments(self, src)?;
        let bytes = elems * std::mem::size_of::<T>();
        let local = [(0, bytes as u64)];
        let get = self.inner.vis.get_nb(
            rank,
            Vector {
                peer: &peer,
                local: &local,
            },
            vec![0u8; bytes],
            Flags::empty(),
        )?;
        Ok(async move { Ok(values_of::<T>(&get.await?)) })
    }

    /// Put the dense block `src` (`counts` elements per dimension,
    /// dimension 0 innermost) at `dst`, whose dimensions are
    /// `dst_strides` elements apart.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas, grid: rgex_pgas::GlobalPtr<f64>) -> rgex_pgas::Result<()> {
    /// // A 4 x 3 block into a grid of rows 100 wide.
    /// let block = [0.5f64; 12];
    /// pg.wait(pg.rput_strided(&block, grid, &[4, 3], &[1, 100])?)?;
    /// # Ok(()) }
    /// ```
    pub fn rput_strided<T: Plain>(
        &self,
        src: &[T],
        dst: GlobalPtr<T>,
        counts: &[u64],
        dst_strides: &[i64],
    ) -> Result<Rput> {
        let size = std::mem::size_of::<T>();
        self.check_block(counts, dst_strides, src.len())?;
        let (peer, local) = (byte_strides(size, dst_strides), dense(size, counts));
        let meta = Strided {
            elem_size: size,
            counts,
            peer_offset: dst.addr()?.offset,
            peer_strides: &peer,
            local_offset: 0,
            local_strides: &local,
        };
        let put = self
            .inner
            .vis
            .put_nb(dst.rank(), meta, bytes_of(src), Flags::empty())?;
        Ok(Rput::of(put.rc))
    }

    /// Get the block at `src` (`counts` elements per dimension, its
    /// dimensions `src_strides` elements apart) as a dense vector.
    pub fn rget_strided<T: Plain>(
        &self,
        src: GlobalPtr<T>,
        counts: &[u64],
        src_strides: &[i64],
    ) -> Result<impl Future<Output = Result<Vec<T>>>> {
        let size = std::mem::size_of::<T>();
        let n = counts
            .iter()
            .try_fold(1usize, |a, &c| a.checked_mul(c as usize))
            .ok_or_else(|| bad(self, format!("a block of {counts:?} elements overflows")))?;
        self.check_block(counts, src_strides, n)?;
        let (peer, local) = (byte_strides(size, src_strides), dense(size, counts));
        let meta = Strided {
            elem_size: size,
            counts,
            peer_offset: src.addr()?.offset,
            peer_strides: &peer,
            local_offset: 0,
            local_strides: &local,
        };
        let get = self
            .inner
            .vis
            .get_nb(src.rank(), meta, vec![0u8; n * size], Flags::empty())?;
        Ok(async move { Ok(values_of::<T>(&get.await?)) })
    }

    /// A strided block's dimensions against its strides and the local
    /// buffer's `local_elems` elements.
    fn check_block(&self, counts: &[u64], strides: &[i64], local_elems: usize) -> Result<()> {
        if counts.len() != strides.len() {
            return Err(bad(
                self,
                format!(
                    "{} counts but {} strides (one per dimension)",
                    counts.len(),
                    strides.len()
                ),
            ));
        }
        let want = counts.iter().try_fold(1u64, |a, &c| a.checked_mul(c));
        if want != Some(local_elems as u64) {
            return Err(bad(
                self,
                format!("a block of {counts:?} elements does not match the local buffer's {local_elems}"),
            ));
        }
        Ok(())
    }
}

/// Element strides as byte strides.
fn byte_strides(size: usize, strides: &[i64]) -> Vec<i64> {
    strides
        .iter()
        .map(|&s| s.saturating_mul(size as i64))
        .collect()
}
