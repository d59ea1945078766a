//! Remote atomics offloaded to the provider (`fi_atomic`,
//! `fi_fetch_atomic`, `fi_compare_atomic`): which ops, and how (the kit
//! holds the operation and its operand buffer, see `rgex_net`).
//!
//! | rgex op | libfabric |
//! |---|---|
//! | SET | `fi_atomic` `FI_ATOMIC_WRITE` |
//! | GET | `fi_fetch_atomic` `FI_ATOMIC_READ` |
//! | SWAP | `fi_fetch_atomic` `FI_ATOMIC_WRITE` |
//! | CAS, FCAS | `fi_compare_atomic` `FI_CSWAP` |
//! | ADD, FADD | `FI_SUM` |
//! | SUB, FSUB | `FI_SUM` of the negated operand |
//! | INC, FINC / DEC, FDEC | `FI_SUM` of 1 / -1 |
//! | MULT, FMULT | `FI_PROD` |
//! | MIN, FMIN / MAX, FMAX | `FI_MIN` / `FI_MAX`, integers only |
//! | AND, OR, XOR (+F) | `FI_BAND`, `FI_BOR`, `FI_BXOR` |
//!
//! SUB as addition of the negation is exact: for integers, wrapping
//! subtraction is wrapping addition of the two's complement; for IEEE
//! floats `a - b` is defined as `a + (-b)` (negation only flips the sign
//! bit, so it is exact, NaNs and zeros included), and DEC is `a + (-1.0)`.
//!
//! Float MIN/MAX are never offloaded: rgex's rule (IEEE 754-2019
//! minimumNumber: a NaN operand leaves the stored value, a NaN stored
//! value takes the operand, -0 < +0) is not what providers document for
//! `FI_MIN`/`FI_MAX` (the software providers compare with `<`, which
//! keeps whichever side a NaN or a signed zero lands on), so a domain
//! with float MIN/MAX falls back to the AM reference.
//!
//! Every op of a domain goes through the provider for every target, this
//! rank included, so they are atomic with respect to each other (the
//! target's provider applies them one at a time). When every rank is on
//! this node with the shared-memory bypass on, offload is declined: CPU
//! atomics on the mapped segments are then both correct and faster.
//! Acquire/release requests need nothing more: the completion of an
//! atomic is read in poll, after which the issuing thread observes it.

use crate::fabric::{Endpoint, FiError, Remote};
use crate::provider::Provider;
use libfabric_sys as sys;
use rgex_core::atomic::{AtomicOp, AtomicRequest, AtomicType, OpSet};
use rgex_core::{Error, Result};
use std::ffi::c_void;
use sys::AtomicCall as Call;

/// The libfabric call and operation for `op` on `ty`, or why rgex never
/// offloads it.
fn mapping(ty: AtomicType, op: AtomicOp) -> std::result::Result<(Call, sys::fi_op), &'static str> {
    use AtomicOp::*;
    if ty.is_float() && op.is_bitwise() {
        return Err("bitwise ops are for integers only");
    }
    if ty.is_float() && matches!(op, Min | Fmin | Max | Fmax) {
        return Err(
            "rgex's float MIN/MAX (IEEE minimumNumber/maximumNumber: NaN and signed zeros) \
             is not what providers document for FI_MIN/FI_MAX",
        );
    }
    let f = |plain: bool, o| {
        Ok((
            if plain {
                Call::Atomic
            } else {
                Call::FetchAtomic
            },
            o,
        ))
    };
    match op {
        Set => f(true, sys::FI_ATOMIC_WRITE),
        Get => f(false, sys::FI_ATOMIC_READ),
        Swap => f(false, sys::FI_ATOMIC_WRITE),
        Cas | Fcas => Ok((Call::CompareAtomic, sys::FI_CSWAP)),
        Add | Sub | Inc | Dec => f(true, sys::FI_SUM),
        Fadd | Fsub | Finc | Fdec => f(false, sys::FI_SUM),
        Mult => f(true, sys::FI_PROD),
        Fmult => f(false, sys::FI_PROD),
        Min => f(true, sys::FI_MIN),
        Fmin => f(false, sys::FI_MIN),
        Max => f(true, sys::FI_MAX),
        Fmax => f(false, sys::FI_MAX),
        And => f(true, sys::FI_BAND),
        Fand => f(false, sys::FI_BAND),
        Or => f(true, sys::FI_BOR),
        For => f(false, sys::FI_BOR),
        Xor => f(true, sys::FI_BXOR),
        Fxor => f(false, sys::FI_BXOR),
    }
}

/// libfabric's name of an operation rgex uses.
fn op_name(op: sys::fi_op) -> &'static str {
    match op {
        sys::FI_ATOMIC_WRITE => "FI_ATOMIC_WRITE",
        sys::FI_ATOMIC_READ => "FI_ATOMIC_READ",
        sys::FI_CSWAP => "FI_CSWAP",
        sys::FI_SUM => "FI_SUM",
        sys::FI_PROD => "FI_PROD",
        sys::FI_MIN => "FI_MIN",
        sys::FI_MAX => "FI_MAX",
        sys::FI_BAND => "FI_BAND",
        sys::FI_BOR => "FI_BOR",
        sys::FI_BXOR => "FI_BXOR",
        _ => "another fi_op",
    }
}

/// libfabric's name of a datatype rgex uses.
fn datatype_name(ty: AtomicType) -> &'static str {
    match ty {
        AtomicType::I32 => "FI_INT32",
        AtomicType::U32 => "FI_UINT32",
        AtomicType::I64 => "FI_INT64",
        AtomicType::U64 => "FI_UINT64",
        AtomicType::F32 => "FI_FLOAT",
        AtomicType::F64 => "FI_DOUBLE",
    }
}

fn datatype(ty: AtomicType) -> sys::fi_datatype {
    match ty {
        AtomicType::I32 => sys::FI_INT32,
        AtomicType::U32 => sys::FI_UINT32,
        AtomicType::I64 => sys::FI_INT64,
        AtomicType::U64 => sys::FI_UINT64,
        AtomicType::F32 => sys::FI_FLOAT,
        AtomicType::F64 => sys::FI_DOUBLE,
    }
}

/// The operand the provider sees (bit pattern in the type's width).
fn operand(ty: AtomicType, op: AtomicOp, a: u64) -> u64 {
    use AtomicOp::*;
    let neg = |x: u64| -> u64 {
        match ty {
            AtomicType::F32 => u64::from((x as u32) ^ 0x8000_0000),
            AtomicType::F64 => x ^ (1 << 63),
            AtomicType::I32 | AtomicType::U32 => u64::from((x as u32).wrapping_neg()),
            AtomicType::I64 | AtomicType::U64 => x.wrapping_neg(),
        }
    };
    let one = match ty {
        AtomicType::F32 => u64::from(1.0f32.to_bits()),
        AtomicType::F64 => 1.0f64.to_bits(),
        _ => 1,
    };
    match op {
        Sub | Fsub => neg(a),
        Inc | Finc => one,
        Dec | Fdec => neg(one),
        _ => a,
    }
}

/// Providers whose atomics `fi_atomicvalid` accepts but which fail
/// rgex's exactness tests here, so domains take the AM reference instead,
/// with what failed.
///
/// - `shm` (libfabric 1.17): under tests/src/bin/atomics_conformance, two
///   concurrent FADDs fetched the same value, and 32-bit FSUB/FDEC fetched
///   -2 where the old value was expected; the same code passes on
///   tcp;ofi_rxm and sockets. Revisit with a newer libfabric.
const BROKEN_ATOMICS: &[(&str, &str)] = &[(
    "shm",
    "libfabric 1.17's shm atomics fail rgex's exactness tests (two concurrent FADDs fetched one value)",
)];

/// Why rgex does not offload an op to a provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The provider did not grant `FI_ATOMIC`.
    NoAtomicCap,
    /// The provider's atomics are known to be wrong: what failed.
    Broken(&'static str),
    /// rgex never offloads this op on this type: why.
    Never(&'static str),
    /// The provider does not perform the op on the type: its validity
    /// query said no.
    NotValid {
        /// The query (`fi_fetch_atomicvalid`, ...).
        query: &'static str,
        /// The operation (`FI_PROD`, ...).
        op: &'static str,
        /// The datatype (`FI_FLOAT`, ...).
        datatype: &'static str,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoAtomicCap => write!(f, "the provider lacks FI_ATOMIC"),
            Refusal::Broken(why) => write!(f, "{why}"),
            Refusal::Never(why) => write!(f, "never offloaded: {why}"),
            Refusal::NotValid {
                query,
                op,
                datatype,
            } => write!(
                f,
                "{query} says the provider does not perform {op} on {datatype}"
            ),
        }
    }
}

/// Why the provider offloads no atomic at all, if so.
pub fn provider_refusal(prov: &Provider) -> Option<Refusal> {
    if !prov.atomics() {
        return Some(Refusal::NoAtomicCap);
    }
    BROKEN_ATOMICS
        .iter()
        .find(|(name, _)| **name == *prov.name)
        .map(|(_, why)| Refusal::Broken(why))
}

/// Why `ep`'s provider does not perform `op` on `ty` as rgex maps it, if
/// so (the provider itself aside: [`provider_refusal`]).
pub fn op_refusal(ep: &Endpoint, ty: AtomicType, op: AtomicOp) -> Option<Refusal> {
    match mapping(ty, op) {
        Err(why) => Some(Refusal::Never(why)),
        Ok((call, o)) if !ep.atomic_valid(call, datatype(ty), o) => Some(Refusal::NotValid {
            query: call.valid_name(),
            op: op_name(o),
            datatype: datatype_name(ty),
        }),
        Ok(_) => None,
    }
}

/// How an atomic is performed: the libfabric call and operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    call: Call,
    op: sys::fi_op,
}

/// The plan for `req`, or an error naming it if rgex never offloads it.
pub(crate) fn plan(req: &AtomicRequest) -> Result<Plan> {
    let (call, op) = mapping(req.ty, req.op).map_err(|why| {
        Error::Config(format!(
            "the ofi conduit does not offload {:?} on {:?} (at {} + {:#x}): {why}",
            req.op, req.ty, req.target, req.offset
        ))
    })?;
    Ok(Plan { call, op })
}

/// True if the provider performs every op of `ops` on `ty`.
pub(crate) fn offloadable(prov: &Provider, ep: &Endpoint, ty: AtomicType, ops: OpSet) -> bool {
    provider_refusal(prov).is_none() && ops.iter().all(|op| op_refusal(ep, ty, op).is_none())
}

/// Post `req` as `plan` says to `to`: operand at `buf`, compare value at
/// `buf + 8`, result at `buf + 16`.
///
/// # Safety
/// `buf` is 24 writable bytes, 8-aligned, registered (`desc`) and held
/// until the completion for `ctx`; `to` was bounds- and
/// alignment-checked; `ctx` is the operation's own context.
pub(crate) unsafe fn post(
    ep: &Endpoint,
    req: &AtomicRequest,
    plan: Plan,
    buf: *mut u8,
    desc: *mut c_void,
    to: Remote,
    ctx: *mut c_void,
) -> std::result::Result<(), FiError> {
    let size = req.ty.size();
    let (a, b) = match plan.call {
        // CSWAP: compare with operand1, store operand2.
        Call::CompareAtomic => (req.operand2, req.operand1),
        _ => (operand(req.ty, req.op, req.operand1), 0),
    };
    // SAFETY: the caller's contract: operand at +0, compare at +8,
    // result at +16, each 8-byte aligned inside `buf`.
    unsafe {
        if size == 4 {
            std::ptr::write(buf.cast::<u32>(), a as u32);
            std::ptr::write(buf.add(8).cast::<u32>(), b as u32);
        } else {
            std::ptr::write(buf.cast::<u64>(), a);
            std::ptr::write(buf.add(8).cast::<u64>(), b);
        }
        std::ptr::write(buf.add(16).cast::<u64>(), 0);
    }
    let dt = datatype(req.ty);
    let fop = plan.op;
    // SAFETY: operand, compare and result lie in `buf` (registered), held
    // until the completion (the caller's contract).
    unsafe {
        match plan.call {
            Call::Atomic => ep.atomic(buf, desc, to, dt, fop, ctx),
            Call::FetchAtomic => ep.fetch_atomic(buf, desc, buf.add(16), desc, to, dt, fop, ctx),
            Call::CompareAtomic => {
                ep.compare_atomic(buf, buf.add(8), buf.add(16), desc, to, dt, fop, ctx)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_is_addition_of_the_negation() {
        use rgex_core::atomic::combine;
        for (ty, a, x) in [
            (AtomicType::U32, 5u64, 7u64),
            (AtomicType::I32, u64::from((-3i32) as u32), 9),
            (AtomicType::U64, 1, u64::MAX),
            (AtomicType::F64, 1.5f64.to_bits(), 0.25f64.to_bits()),
            (
                AtomicType::F32,
                u64::from(1.5f32.to_bits()),
                u64::from((-0.0f32).to_bits()),
            ),
        ] {
            let sub = combine(ty, AtomicOp::Sub, a, x);
            let add = combine(ty, AtomicOp::Add, a, operand(ty, AtomicOp::Sub, x));
            assert_eq!(sub, add, "{ty:?}");
            let dec = combine(ty, AtomicOp::Dec, a, 0);
            let add1 = combine(ty, AtomicOp::Add, a, operand(ty, AtomicOp::Dec, 0));
            assert_eq!(dec, add1, "{ty:?} dec");
        }
    }

    #[test]
    fn refusals_name_the_query_op_and_type() {
        let r = Refusal::NotValid {
            query: Call::FetchAtomic.valid_name(),
            op: op_name(sys::FI_PROD),
            datatype: datatype_name(AtomicType::F32),
        };
        assert_eq!(
            r.to_string(),
            "fi_fetch_atomicvalid says the provider does not perform FI_PROD on FI_FLOAT"
        );
        assert_eq!(
            Refusal::NoAtomicCap.to_string(),
            "the provider lacks FI_ATOMIC"
        );
        let Err(why) = mapping(AtomicType::F64, AtomicOp::Fmax) else {
            panic!("float MAX is never offloaded");
        };
        assert!(why.contains("minimumNumber"), "{why}");
    }

    #[test]
    fn float_min_max_and_bit_ops_are_never_offloaded() {
        for ty in [AtomicType::F32, AtomicType::F64] {
            for op in [AtomicOp::Min, AtomicOp::Fmax, AtomicOp::And, AtomicOp::Fxor] {
                assert!(mapping(ty, op).is_err());
            }
        }
        assert!(mapping(AtomicType::I64, AtomicOp::Min).is_ok());
    }
}
