//! Remote atomics on global pointers, as futures.

use crate::error::Result;
use crate::global_ptr::GlobalPtr;
use crate::runtime::Pgas;
use rgex::{AtomicEvent, AtomicFlags, AtomicOp, AtomicValue, OpSet};
use std::future::Future;

/// Atomic operations of one type on global pointers, over an rgex atomic
/// domain of every rank (made collectively, for the ops it will use; rgex
/// picks the NIC, the CPU or active messages for them).
///
/// ```no_run
/// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
/// use rgex::{AtomicOp, OpSet};
/// use rgex_pgas::AtomicDomain;
/// let ad = AtomicDomain::<u64>::new(pg, OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]))?;
/// let counter = pg.new_(0u64)?;
/// let before = pg.wait(ad.fetch_add(counter, 1)?)?;
/// # let _ = before;
/// # Ok(()) }
/// ```
pub struct AtomicDomain<T: AtomicValue> {
    ad: rgex::AtomicDomain<T>,
}

impl<T: AtomicValue> AtomicDomain<T> {
    /// A domain for `ops` (collective over every rank).
    pub fn new(pg: &Pgas, ops: OpSet) -> Result<Self> {
        // rgex's collective underneath polls rgex only; a barrier with
        // user-level progress first lets every rank finish serving what
        // the others wait for (a dist_object fetch, an RPC) before any
        // of them stops serving.
        pg.barrier()?;
        Ok(AtomicDomain {
            ad: rgex::AtomicDomain::new(pg.ep(), pg.client().world(), ops)?,
        })
    }

    /// The rgex domain underneath.
    pub fn raw(&self) -> &rgex::AtomicDomain<T> {
        &self.ad
    }

    /// Any op: `a` the operand (the compare value of a CAS), `b` a CAS's
    /// new value; resolves to the fetched value (zero for ops that fetch
    /// nothing).
    pub fn op(
        &self,
        p: GlobalPtr<T>,
        op: AtomicOp,
        a: T,
        b: T,
    ) -> Result<impl Future<Output = Result<T>>> {
        let ev: AtomicEvent<T> = self.ad.op_nb(p.addr()?, op, a, b, AtomicFlags::empty())?;
        Ok(async move { Ok(ev.await?) })
    }

    /// Add `v`; resolves to the value before.
    pub fn fetch_add(&self, p: GlobalPtr<T>, v: T) -> Result<impl Future<Output = Result<T>>> {
        self.op(p, AtomicOp::Fadd, v, v)
    }

    /// Add `v`, fetching nothing.
    pub fn add(&self, p: GlobalPtr<T>, v: T) -> Result<impl Future<Output = Result<()>>> {
        let f = self.op(p, AtomicOp::Add, v, v)?;
        Ok(async move { f.await.map(|_| ()) })
    }

    /// The value.
    pub fn load(&self, p: GlobalPtr<T>) -> Result<impl Future<Output = Result<T>>> {
        let z = self.zero();
        self.op(p, AtomicOp::Get, z, z)
    }

    /// Set the value.
    pub fn store(&self, p: GlobalPtr<T>, v: T) -> Result<impl Future<Output = Result<()>>> {
        let f = self.op(p, AtomicOp::Set, v, v)?;
        Ok(async move { f.await.map(|_| ()) })
    }

    /// Set to `new` if it is `current`; resolves to the value before.
    pub fn compare_exchange(
        &self,
        p: GlobalPtr<T>,
        current: T,
        new: T,
    ) -> Result<impl Future<Output = Result<T>>> {
        self.op(p, AtomicOp::Fcas, current, new)
    }

    fn zero(&self) -> T {
        T::from_bits64(0)
    }
}
