//! `<rdma/fi_atomic.h>`: atomics and their validity queries.

use super::op;
use crate::bindings::{fi_addr_t, fi_datatype, fi_op, fid_ep};
use std::ffi::{c_int, c_void};

/// `fi_atomic`: `ep->atomic->write(...)`.
///
/// # Safety
/// A live endpoint; the operand buffer valid until the completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, write, isize)(
            ep, buf, count, desc, dest_addr, addr, key, datatype, op, context,
        )
    }
}

/// `fi_fetch_atomic`: `ep->atomic->readwrite(...)`.
///
/// # Safety
/// A live endpoint; operand and result buffers valid until the completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_fetch_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, readwrite, isize)(
            ep,
            buf,
            count,
            desc,
            result,
            result_desc,
            dest_addr,
            addr,
            key,
            datatype,
            op,
            context,
        )
    }
}

/// `fi_compare_atomic`: `ep->atomic->compwrite(...)`.
///
/// # Safety
/// A live endpoint; operand, compare and result buffers valid until the
/// completion.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fi_compare_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: usize,
    desc: *mut c_void,
    compare: *const c_void,
    compare_desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype,
    op: fi_op,
    context: *mut c_void,
) -> isize {
    // SAFETY: a live endpoint (caller), whose atomic table the provider set.
    unsafe {
        op!((*ep).atomic, compwrite, isize)(
            ep,
            buf,
            count,
            desc,
            compare,
            compare_desc,
            result,
            result_desc,
            dest_addr,
            addr,
            key,
            datatype,
            op,
            context,
        )
    }
}

/// Which of the three atomic calls: `fi_atomic` (an op on the target),
/// `fi_fetch_atomic` (and the old value back) or `fi_compare_atomic`
/// (compare and swap kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicCall {
    /// `fi_atomic`: `ep->atomic->write`, checked by `writevalid`.
    Atomic,
    /// `fi_fetch_atomic`: `ep->atomic->readwrite`, checked by
    /// `readwritevalid`.
    FetchAtomic,
    /// `fi_compare_atomic`: `ep->atomic->compwrite`, checked by
    /// `compwritevalid`.
    CompareAtomic,
}

impl AtomicCall {
    /// The name of the validity query C calls for it (`fi_atomicvalid`,
    /// `fi_fetch_atomicvalid`, `fi_compare_atomicvalid`).
    pub const fn valid_name(self) -> &'static str {
        match self {
            AtomicCall::Atomic => "fi_atomicvalid",
            AtomicCall::FetchAtomic => "fi_fetch_atomicvalid",
            AtomicCall::CompareAtomic => "fi_compare_atomicvalid",
        }
    }
}

/// `fi_atomicvalid`, `fi_fetch_atomicvalid` or `fi_compare_atomicvalid`
/// as `call` says: `ep->atomic->{write,readwrite,compwrite}valid(ep,
/// datatype, op, count)`. 0 with `*count` the largest element count the
/// provider performs `op` on `datatype` for, or a negative error
/// (`-FI_EOPNOTSUPP`: not that combination).
///
/// # Safety
/// A live endpoint and a count to fill.
#[inline]
pub unsafe fn fi_atomic_valid(
    ep: *mut fid_ep,
    call: AtomicCall,
    datatype: fi_datatype,
    op: fi_op,
    count: *mut usize,
) -> c_int {
    // SAFETY: a live endpoint (caller), whose atomic table the provider
    // set; the three entries share one signature.
    unsafe {
        let table = (*ep).atomic;
        let f = match call {
            AtomicCall::Atomic => op!(table, writevalid, c_int),
            AtomicCall::FetchAtomic => op!(table, readwritevalid, c_int),
            AtomicCall::CompareAtomic => op!(table, compwritevalid, c_int),
        };
        f(ep, datatype, op, count)
    }
}
