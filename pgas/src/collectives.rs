//! The world's collectives, made safe to mix with RPC.
//!
//! rgex's collectives poll rgex alone: a rank inside one serves no RPC
//! and no dist_object fetch. So each of these first passes a barrier
//! that makes user-level progress, by which time no rank still waits for
//! another to serve it; then it runs rgex's collective. They return the
//! value itself (the work is a barrier and one collective: there is
//! nothing useful to overlap), except [`barrier_async`](Pgas::barrier_async).

use crate::error::Result;
use crate::runtime::Pgas;
use rgex::{Element, Numeric, ReduceOp};

impl Pgas {
    /// `root`'s `data` on every rank.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let seed = pg.broadcast(0, &[42u64])?;
    /// assert_eq!(seed, [42]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast<T: Element>(&self, root: u32, data: &[T]) -> Result<Vec<T>> {
        self.barrier()?;
        Ok(self.client().world().broadcast_elems(root, data)?)
    }

    /// `op` over every rank's `data`, element by element, on every rank.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let n = pg.allreduce(&[1u64], rgex::ReduceOp::Sum)?;
    /// assert_eq!(n[0], u64::from(pg.size()));
    /// # Ok(()) }
    /// ```
    pub fn allreduce<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<Vec<T>> {
        self.barrier()?;
        Ok(self.client().world().allreduce(data, op)?)
    }

    /// `op` over every rank's `data`, element by element: `Some` at
    /// `root`, `None` elsewhere.
    pub fn reduce<T: Numeric>(
        &self,
        root: u32,
        data: &[T],
        op: ReduceOp,
    ) -> Result<Option<Vec<T>>> {
        self.barrier()?;
        Ok(self.client().world().reduce(root, data, op)?)
    }
}
