//! Remote atomics offloaded to the HCA: which domains, and how each op
//! becomes verbs' two 8-byte atomics.
//!
//! An HCA's atomics are atomic only with respect to each other, not to
//! the CPU's, so a domain is offloaded only when *every* op of its set
//! maps onto them; then every op goes through the HCA, to every target,
//! this rank included. Otherwise the domain takes the AM reference.
//!
//! | rgex op (`i64`, `u64`) | verbs |
//! |---|---|
//! | ADD, FADD / SUB, FSUB | FETCH_AND_ADD of the operand / of its negation |
//! | INC, FINC / DEC, FDEC | FETCH_AND_ADD of 1 / of -1 |
//! | GET | FETCH_AND_ADD of 0 |
//! | CAS, FCAS | CMP_AND_SWP |
//! | SET, SWAP | a CAS loop |
//!
//! Subtraction as addition of the two's complement is exact for wrapping
//! 64-bit integers, signed or not. A CAS loop posts CMP_AND_SWP with a
//! guess of the old value (0 first), and while the value fetched is not
//! the guess, posts it again with the fetched value as the guess and the
//! op's new value for it ([`rmw`]); the transport keeps each loop's state
//! and reports the kit's operation done once, when a swap took. 32-bit
//! types, floats and the other ops (MULT, MIN, MAX, the bitwise ops) are
//! never offloaded: verbs has no 4-byte atomics, and a CAS loop per op
//! would make the common ops of such a domain slower than the reference.
//!
//! Acquire/release need nothing more: the completion is read in poll,
//! after which the issuing thread observes it, and an RC QP performs a
//! peer's requests in order.

use crate::verbs::{Opcode, RemoteAddr, SendFlags, SendWr, Sge};
use rgex_core::atomic::{rmw, AtomicOp, AtomicRequest, AtomicType, OpSet};
use rgex_core::{Error, Result};

/// How an op is performed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// One FETCH_AND_ADD.
    FetchAdd,
    /// One CMP_AND_SWP.
    CompareSwap,
    /// CMP_AND_SWP until the swap takes.
    Loop,
}

impl Plan {
    /// The verbs that perform it.
    pub const fn verbs(self) -> &'static str {
        match self {
            Plan::FetchAdd => "FETCH_AND_ADD",
            Plan::CompareSwap => "CMP_AND_SWP",
            Plan::Loop => "a CMP_AND_SWP loop",
        }
    }
}

/// Why a 32-bit or float type is never offloaded.
const NOT_64_BIT_INTEGER: &str =
    "verbs atomics are 8-byte integer FETCH_AND_ADD and CMP_AND_SWP only";

/// Why MULT, MIN, MAX and the bitwise ops are never offloaded.
const NO_VERB: &str =
    "no verbs atomic performs it (a CAS loop per op would be slower than the AM reference)";

/// Why nothing is offloaded to a device without atomics.
pub const NO_DEVICE_ATOMICS: &str = "the device has no atomics (IBV_ATOMIC_NONE)";

/// The plan for `op` on `ty`, or why it is never offloaded.
fn mapping(ty: AtomicType, op: AtomicOp) -> std::result::Result<Plan, &'static str> {
    use AtomicOp::*;
    if !matches!(ty, AtomicType::I64 | AtomicType::U64) {
        return Err(NOT_64_BIT_INTEGER);
    }
    match op {
        Add | Fadd | Sub | Fsub | Inc | Finc | Dec | Fdec | Get => Ok(Plan::FetchAdd),
        Cas | Fcas => Ok(Plan::CompareSwap),
        Set | Swap => Ok(Plan::Loop),
        Mult | Fmult | Min | Fmin | Max | Fmax | And | Fand | Or | For | Xor | Fxor => Err(NO_VERB),
    }
}

/// How `op` on `ty` is offloaded to an HCA (`atomics`: it has 8-byte
/// atomics), or why it is not (such a domain takes the AM reference).
pub fn offload(
    atomics: bool,
    ty: AtomicType,
    op: AtomicOp,
) -> std::result::Result<Plan, &'static str> {
    if !atomics {
        return Err(NO_DEVICE_ATOMICS);
    }
    mapping(ty, op)
}

/// True if the HCA (`atomics`: it has 8-byte atomics) performs every op
/// of `ops` on `ty`.
pub(crate) fn offloadable(atomics: bool, ty: AtomicType, ops: OpSet) -> bool {
    atomics && ops.iter().all(|op| mapping(ty, op).is_ok())
}

/// The plan for `req`, or an error naming it if it is never offloaded.
pub(crate) fn plan(req: &AtomicRequest) -> Result<Plan> {
    mapping(req.ty, req.op).map_err(|why| {
        Error::Config(format!(
            "the ibv conduit does not offload {:?} on {:?} (at {} + {:#x}): {why}",
            req.op, req.ty, req.target, req.offset
        ))
    })
}

/// The addend of a FETCH_AND_ADD performing `op` with operand `a`.
fn addend(op: AtomicOp, a: u64) -> u64 {
    use AtomicOp::*;
    match op {
        Sub | Fsub => a.wrapping_neg(),
        Inc | Finc => 1,
        Dec | Fdec => 1u64.wrapping_neg(),
        Get => 0,
        _ => a,
    }
}

/// One atomic in flight: enough to post its next CMP_AND_SWP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Atomic {
    /// The request.
    pub req: AtomicRequest,
    /// The target word.
    pub remote: RemoteAddr,
    /// Where the fetched value lands (8 bytes) and its lkey.
    pub result: Sge,
    /// A loop's current guess of the old value.
    pub guess: u64,
}

impl Atomic {
    /// The work request performing `plan` (a loop's next step).
    pub fn wr(&self, plan: Plan, wr_id: u64) -> SendWr {
        let opcode = match plan {
            Plan::FetchAdd => Opcode::AtomicFetchAndAdd {
                add: addend(self.req.op, self.req.operand1),
            },
            // CAS: compare with operand1, store operand2.
            Plan::CompareSwap => Opcode::AtomicCmpAndSwp {
                compare: self.req.operand1,
                swap: self.req.operand2,
            },
            Plan::Loop => Opcode::AtomicCmpAndSwp {
                compare: self.guess,
                swap: self.next(self.guess),
            },
        };
        SendWr {
            wr_id,
            opcode,
            flags: SendFlags::SIGNALED,
            sge: self.result,
            remote: self.remote,
        }
    }

    /// The value a loop stores when the word holds `old`.
    fn next(&self, old: u64) -> u64 {
        let r = &self.req;
        rmw(r.ty, r.op, old, r.operand1, r.operand2)
            .0
            .unwrap_or(old)
    }

    /// A loop's step fetched `old`: `true` if its swap took (the op is
    /// done, and `old` is what it fetched), else the guess becomes `old`.
    pub fn step(&mut self, old: u64) -> bool {
        if old == self.guess {
            return true;
        }
        self.guess = old;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rgex_core::atomic::combine;
    use rgex_core::Rank;

    #[test]
    fn offload_says_how_or_why_not() {
        assert_eq!(
            offload(true, AtomicType::U64, AtomicOp::Fadd),
            Ok(Plan::FetchAdd)
        );
        assert_eq!(
            offload(true, AtomicType::I64, AtomicOp::Swap),
            Ok(Plan::Loop)
        );
        assert_eq!(
            offload(false, AtomicType::U64, AtomicOp::Fadd),
            Err(NO_DEVICE_ATOMICS)
        );
        assert_eq!(
            offload(true, AtomicType::U32, AtomicOp::Fadd),
            Err(NOT_64_BIT_INTEGER)
        );
        assert_eq!(
            offload(true, AtomicType::F64, AtomicOp::Get),
            Err(NOT_64_BIT_INTEGER)
        );
        assert_eq!(
            offload(true, AtomicType::U64, AtomicOp::Fmult),
            Err(NO_VERB)
        );
        let e = plan(&AtomicRequest {
            target: Rank(1),
            offset: 8,
            ty: AtomicType::U64,
            op: AtomicOp::Xor,
            operand1: 0,
            operand2: 0,
            acquire: false,
            release: false,
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("Xor on U64 (at rank 1 + 0x8): no verbs atomic performs it"),
            "{e}"
        );
    }

    #[test]
    fn offloads_only_whole_64_bit_sets_of_add_and_cas_ops() {
        let counters = OpSet::of(&[
            AtomicOp::Fadd,
            AtomicOp::Finc,
            AtomicOp::Inc,
            AtomicOp::Fcas,
            AtomicOp::Get,
            AtomicOp::Set,
        ]);
        assert!(offloadable(true, AtomicType::U64, counters));
        assert!(offloadable(true, AtomicType::I64, counters));
        assert!(!offloadable(false, AtomicType::U64, counters));
        assert!(!offloadable(true, AtomicType::U32, counters));
        assert!(!offloadable(
            true,
            AtomicType::F64,
            OpSet::of(&[AtomicOp::Get])
        ));
        assert!(!offloadable(
            true,
            AtomicType::U64,
            counters.with(AtomicOp::Max)
        ));
    }

    #[test]
    fn fetch_and_add_performs_sub_inc_dec_and_get() {
        for ty in [AtomicType::I64, AtomicType::U64] {
            for (old, a) in [(5u64, 7u64), (0, u64::MAX), ((-3i64) as u64, 9)] {
                for op in [AtomicOp::Sub, AtomicOp::Inc, AtomicOp::Dec, AtomicOp::Add] {
                    assert_eq!(
                        combine(ty, op, old, a),
                        old.wrapping_add(addend(op, a)),
                        "{ty:?} {op:?}"
                    );
                }
                assert_eq!(old.wrapping_add(addend(AtomicOp::Get, a)), old);
            }
        }
    }

    #[test]
    fn a_loop_retries_with_the_fetched_value_until_its_swap_takes() {
        let req = AtomicRequest {
            target: Rank(1),
            offset: 8,
            ty: AtomicType::U64,
            op: AtomicOp::Swap,
            operand1: 42,
            operand2: 0,
            acquire: false,
            release: false,
        };
        let mut a = Atomic {
            req,
            remote: RemoteAddr { addr: 8, rkey: 1 },
            result: Sge {
                addr: 0,
                length: 8,
                lkey: 2,
            },
            guess: 0,
        };
        let cas = |a: &Atomic| match a.wr(Plan::Loop, 0).opcode {
            Opcode::AtomicCmpAndSwp { compare, swap } => (compare, swap),
            o => panic!("{o:?}"),
        };
        assert_eq!(cas(&a), (0, 42));
        // The word held 7: the swap did not take; try again with 7.
        assert!(!a.step(7));
        assert_eq!(cas(&a), (7, 42));
        assert!(a.step(7));
    }
}
