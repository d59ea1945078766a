//! Scans on a [`Team`]: inclusive (`scan`: team rank r gets the
//! reduction over ranks 0..=r) and exclusive (`exscan`: over ranks 0..r,
//! nothing at rank 0), with built-in or user operators, by recursive
//! doubling (`scan`). Each has a blocking form and a non-blocking one
//! (`_nb`).

use super::handle::{Finish, Job};
use super::ops::{self, Builtin, Combine, User};
use super::scan::Scan;
use super::signature::{ElemId, Kind, OpId, Sig};
use super::{CollEvent, Element, Numeric, ReduceOp, Team};
use rgex_core::{Error, Result};

/// A scan ready to run; its result is the inclusive prefix (`Some`) or
/// the exclusive one (`None` at team rank 0).
type ScanJob<T, C> = Job<Scan<T, C>, Finish<Scan<T, C>, Option<Vec<T>>>>;

impl Team {
    /// Inclusive scan with a built-in operator: team rank r gets the
    /// reduction of the members' `data` over team ranks 0..=r (every
    /// member passes the same number of elements).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let upto = team.scan(&[1u32], ReduceOp::Sum)?;
    /// assert_eq!(upto[0], team.my_rank() + 1);
    /// # Ok(()) }
    /// ```
    pub fn scan<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<Vec<T>> {
        let job = self.builtin_scan("scan", Kind::Scan, data, op)?;
        self.run(job.map(Option::unwrap_or_default))
    }

    /// Start a [`scan`](Self::scan).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let ev = team.scan_nb(&[team.my_rank()], ReduceOp::Max)?;
    /// assert_eq!(ev.wait()?, [team.my_rank()]);
    /// # Ok(()) }
    /// ```
    pub fn scan_nb<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<CollEvent<Vec<T>>> {
        let job = self.builtin_scan("scan_nb", Kind::Scan, data, op)?;
        self.start(job.map(Option::unwrap_or_default))
    }

    /// Exclusive scan with a built-in operator: team rank r gets the
    /// reduction over team ranks 0..r; team rank 0 gets `None`.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// // Where my 10 elements start in a team-wide array.
    /// let offset = team.exscan(&[10u64], ReduceOp::Sum)?.map_or(0, |v| v[0]);
    /// assert_eq!(offset, 10 * u64::from(team.my_rank()));
    /// # Ok(()) }
    /// ```
    pub fn exscan<T: Numeric>(&self, data: &[T], op: ReduceOp) -> Result<Option<Vec<T>>> {
        self.run(self.builtin_scan("exscan", Kind::Exscan, data, op)?)
    }

    /// Start an [`exscan`](Self::exscan).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// use rgex_endpoint::team::ReduceOp;
    /// let team = client.world();
    /// let ev = team.exscan_nb(&[1i64], ReduceOp::Sum)?;
    /// assert_eq!(ev.wait()?.is_none(), team.my_rank() == 0);
    /// # Ok(()) }
    /// ```
    pub fn exscan_nb<T: Numeric>(
        &self,
        data: &[T],
        op: ReduceOp,
    ) -> Result<CollEvent<Option<Vec<T>>>> {
        self.start(self.builtin_scan("exscan_nb", Kind::Exscan, data, op)?)
    }

    /// Inclusive scan with a user operator `op(acc, x)` (see
    /// [`reduce_with`](Self::reduce_with): `acc` holds lower team ranks;
    /// associative, not necessarily commutative).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// // The last non-zero value at or below my rank.
    /// let v = team.scan_with(&[team.my_rank() % 2], |a: &mut [u32], x: &[u32]| {
    ///     if x[0] != 0 { a[0] = x[0]; }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn scan_with<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]),
    ) -> Result<Vec<T>> {
        let job = self.scan_job("scan", Kind::Scan, data, OpId::User, User(op), None)?;
        self.run(job.map(Option::unwrap_or_default))
    }

    /// Start a [`scan_with`](Self::scan_with); the operator runs on
    /// whichever thread's progress advances the collective.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.scan_with_nb(&[1u8], |a: &mut [u8], x: &[u8]| a[0] += x[0])?;
    /// assert_eq!(ev.wait()?[0] as u32, team.my_rank() + 1);
    /// # Ok(()) }
    /// ```
    pub fn scan_with_nb<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]) + Send + 'static,
    ) -> Result<CollEvent<Vec<T>>> {
        let job = self.scan_job("scan_nb", Kind::Scan, data, OpId::User, User(op), None)?;
        self.start(job.map(Option::unwrap_or_default))
    }

    /// Exclusive scan with a user operator (see
    /// [`scan_with`](Self::scan_with)); team rank 0 gets `None`.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let below = team.exscan_with(&[1u64], |a: &mut [u64], x: &[u64]| a[0] += x[0])?;
    /// assert_eq!(below.map_or(0, |v| v[0]), u64::from(team.my_rank()));
    /// # Ok(()) }
    /// ```
    pub fn exscan_with<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]),
    ) -> Result<Option<Vec<T>>> {
        self.run(self.scan_job("exscan", Kind::Exscan, data, OpId::User, User(op), None)?)
    }

    /// Start an [`exscan_with`](Self::exscan_with).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.exscan_with_nb(&[2u32], |a: &mut [u32], x: &[u32]| a[0] *= x[0])?;
    /// let _ = ev.wait()?;
    /// # Ok(()) }
    /// ```
    pub fn exscan_with_nb<T: Element>(
        &self,
        data: &[T],
        op: impl FnMut(&mut [T], &[T]) + Send + 'static,
    ) -> Result<CollEvent<Option<Vec<T>>>> {
        self.start(self.scan_job("exscan_nb", Kind::Exscan, data, OpId::User, User(op), None)?)
    }

    /// A scan with built-in operator `op`.
    fn builtin_scan<T: Numeric>(
        &self,
        what: &'static str,
        kind: Kind,
        data: &[T],
        op: ReduceOp,
    ) -> Result<ScanJob<T, Builtin>> {
        let refused = ops::check::<T>(op).err();
        self.scan_job(what, kind, data, OpId::Builtin(op), Builtin(op), refused)
    }

    /// A scan (`kind`: inclusive or exclusive) with operator `op`, known
    /// to the other members as `op_id`.
    fn scan_job<T: Element, C: Combine<T>>(
        &self,
        what: &'static str,
        kind: Kind,
        data: &[T],
        op_id: OpId,
        op: C,
        refused: Option<Error>,
    ) -> Result<ScanJob<T, C>> {
        let sig = Sig::of(kind, None, ElemId::of::<T>(), op_id, data.len());
        let coll = self.coll(what, sig, Scan::new(data.to_vec(), op), refused)?;
        let finish: Finish<Scan<T, C>, Option<Vec<T>>> = if kind == Kind::Scan {
            |c| Some(std::mem::take(&mut c.part.partial))
        } else {
            |c| c.part.below.take()
        };
        Ok(Job { coll, finish })
    }
}
