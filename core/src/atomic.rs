//! Remote atomics' vocabulary (types, ops, op sets, one request) and
//! their sequential meaning, shared by every implementation: the CPU
//! atomics of rgex-atomics, a conduit that offloads, and a conduit that
//! applies ops under a lock (scc's lock registers).

use crate::Rank;

/// How an atomic domain carries out its ops (chosen once, at creation,
/// the same on every member; see rgex-atomics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Implementation {
    /// The conduit performs them in the network (NIC atomics).
    Offload,
    /// CPU atomics on the target's segment mapped in this process.
    SharedMemory,
    /// Active messages; the target's handler applies a CPU atomic.
    Reference,
}

/// The data type of a remote atomic (the offload SPI's vocabulary; the
/// atomic domains live in rgex-atomics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicType {
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl AtomicType {
    /// Every type.
    pub const ALL: [AtomicType; 6] = [
        AtomicType::I32,
        AtomicType::U32,
        AtomicType::I64,
        AtomicType::U64,
        AtomicType::F32,
        AtomicType::F64,
    ];

    /// Size (and required alignment) in bytes.
    pub const fn size(self) -> usize {
        match self {
            AtomicType::I32 | AtomicType::U32 | AtomicType::F32 => 4,
            _ => 8,
        }
    }

    /// True for `f32` and `f64`.
    pub const fn is_float(self) -> bool {
        matches!(self, AtomicType::F32 | AtomicType::F64)
    }
}

/// A remote atomic operation. `F`-prefixed ops fetch the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum AtomicOp {
    Set,
    Get,
    Swap,
    Cas,
    Fcas,
    Add,
    Fadd,
    Sub,
    Fsub,
    Mult,
    Fmult,
    Min,
    Fmin,
    Max,
    Fmax,
    Inc,
    Finc,
    Dec,
    Fdec,
    And,
    Fand,
    Or,
    For,
    Xor,
    Fxor,
}

impl AtomicOp {
    /// Every op, in discriminant order.
    pub const ALL: [AtomicOp; 25] = [
        AtomicOp::Set,
        AtomicOp::Get,
        AtomicOp::Swap,
        AtomicOp::Cas,
        AtomicOp::Fcas,
        AtomicOp::Add,
        AtomicOp::Fadd,
        AtomicOp::Sub,
        AtomicOp::Fsub,
        AtomicOp::Mult,
        AtomicOp::Fmult,
        AtomicOp::Min,
        AtomicOp::Fmin,
        AtomicOp::Max,
        AtomicOp::Fmax,
        AtomicOp::Inc,
        AtomicOp::Finc,
        AtomicOp::Dec,
        AtomicOp::Fdec,
        AtomicOp::And,
        AtomicOp::Fand,
        AtomicOp::Or,
        AtomicOp::For,
        AtomicOp::Xor,
        AtomicOp::Fxor,
    ];

    /// True for the bitwise ops (integers only).
    pub const fn is_bitwise(self) -> bool {
        matches!(
            self,
            AtomicOp::And
                | AtomicOp::Fand
                | AtomicOp::Or
                | AtomicOp::For
                | AtomicOp::Xor
                | AtomicOp::Fxor
        )
    }

    /// True if the op returns the old value (GET, SWAP and the F-ops).
    pub const fn fetches(self) -> bool {
        !matches!(
            self,
            AtomicOp::Set
                | AtomicOp::Cas
                | AtomicOp::Add
                | AtomicOp::Sub
                | AtomicOp::Mult
                | AtomicOp::Min
                | AtomicOp::Max
                | AtomicOp::Inc
                | AtomicOp::Dec
                | AtomicOp::And
                | AtomicOp::Or
                | AtomicOp::Xor
        )
    }

    /// The op with discriminant `v`, if any (wire decoding).
    pub const fn from_u8(v: u8) -> Option<AtomicOp> {
        if (v as usize) < Self::ALL.len() {
            Some(Self::ALL[v as usize])
        } else {
            None
        }
    }
}

/// A set of [`AtomicOp`]s (one bit each).
///
/// ```
/// use rgex_core::conduit::{AtomicOp, OpSet};
/// let s = OpSet::of(&[AtomicOp::Fadd, AtomicOp::Get]);
/// assert!(s.contains(AtomicOp::Get) && !s.contains(AtomicOp::Set));
/// assert_eq!(s.iter().count(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OpSet(pub u32);

impl OpSet {
    /// No op.
    pub const EMPTY: OpSet = OpSet(0);
    /// Every op.
    pub const ALL: OpSet = OpSet((1 << AtomicOp::ALL.len()) - 1);

    /// The set of `ops`.
    pub const fn of(ops: &[AtomicOp]) -> OpSet {
        let mut bits = 0;
        let mut i = 0;
        while i < ops.len() {
            bits |= 1 << ops[i] as u32;
            i += 1;
        }
        OpSet(bits)
    }

    /// True if `op` is in the set.
    pub const fn contains(self, op: AtomicOp) -> bool {
        self.0 & (1 << op as u32) != 0
    }

    /// This set plus `op`.
    pub const fn with(self, op: AtomicOp) -> OpSet {
        OpSet(self.0 | (1 << op as u32))
    }

    /// The ops of this set, in discriminant order.
    pub fn iter(self) -> impl Iterator<Item = AtomicOp> {
        AtomicOp::ALL
            .into_iter()
            .filter(move |&op| self.contains(op))
    }
}

/// One remote atomic, as handed to a conduit that offloads it. Operands
/// and results are bit patterns zero-extended to 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicRequest {
    /// The rank whose segment holds the word.
    pub target: Rank,
    /// Offset of the word in that segment (aligned to `ty.size()`).
    pub offset: u64,
    /// The data type.
    pub ty: AtomicType,
    /// The op.
    pub op: AtomicOp,
    /// First operand (the value for SET/SWAP/ADD..., the compare value for CAS).
    pub operand1: u64,
    /// Second operand (the new value for CAS).
    pub operand2: u64,
    /// Acquire ordering asked for.
    pub acquire: bool,
    /// Release ordering asked for.
    pub release: bool,
}

/// IEEE 754-2019 minimumNumber on the stored value `old` and operand `x`:
/// a NaN operand leaves `old`; a NaN `old` takes `x`; `-0.0 < +0.0`.
macro_rules! fminmax {
    ($name:ident, $t:ty, $less:expr) => {
        #[inline]
        fn $name(old: $t, x: $t) -> $t {
            if x.is_nan() {
                return old;
            }
            if old.is_nan() {
                return x;
            }
            let less: fn($t, $t) -> bool = $less;
            if less(x, old) {
                x
            } else {
                old
            }
        }
    };
}

fminmax!(fmin32, f32, |x, old| x < old
    || (x == old && x.is_sign_negative() && old.is_sign_positive()));
fminmax!(fmax32, f32, |x, old| x > old
    || (x == old && x.is_sign_positive() && old.is_sign_negative()));
fminmax!(fmin64, f64, |x, old| x < old
    || (x == old && x.is_sign_negative() && old.is_sign_positive()));
fminmax!(fmax64, f64, |x, old| x > old
    || (x == old && x.is_sign_positive() && old.is_sign_negative()));

/// The new bit pattern after an arithmetic/bitwise `op` with operand `a`
/// on `old` (not for GET, SET, SWAP, CAS).
#[inline]
pub fn combine(ty: AtomicType, op: AtomicOp, old: u64, a: u64) -> u64 {
    use AtomicOp::*;
    macro_rules! int {
        ($t:ty) => {{
            let (o, x) = (old as $t, a as $t);
            let r: $t = match op {
                Add | Fadd => o.wrapping_add(x),
                Sub | Fsub => o.wrapping_sub(x),
                Mult | Fmult => o.wrapping_mul(x),
                Min | Fmin => o.min(x),
                Max | Fmax => o.max(x),
                Inc | Finc => o.wrapping_add(1),
                Dec | Fdec => o.wrapping_sub(1),
                And | Fand => o & x,
                Or | For => o | x,
                Xor | Fxor => o ^ x,
                Set | Get | Swap | Cas | Fcas => unreachable!("not a combining op"),
            };
            r
        }};
    }
    macro_rules! float {
        ($t:ty, $min:ident, $max:ident) => {{
            let (o, x) = (<$t>::from_bits(old as _), <$t>::from_bits(a as _));
            let r: $t = match op {
                Add | Fadd => o + x,
                Sub | Fsub => o - x,
                Mult | Fmult => o * x,
                Min | Fmin => $min(o, x),
                Max | Fmax => $max(o, x),
                Inc | Finc => o + 1.0,
                Dec | Fdec => o - 1.0,
                // Refused at domain creation; never reached.
                And | Fand | Or | For | Xor | Fxor => o,
                Set | Get | Swap | Cas | Fcas => unreachable!("not a combining op"),
            };
            r.to_bits()
        }};
    }
    match ty {
        AtomicType::I32 => u64::from(int!(i32) as u32),
        AtomicType::U32 => u64::from(int!(u32)),
        AtomicType::I64 => int!(i64) as u64,
        AtomicType::U64 => int!(u64),
        AtomicType::F32 => u64::from(float!(f32, fmin32, fmax32)),
        AtomicType::F64 => float!(f64, fmin64, fmax64),
    }
}

/// One op's sequential effect on the word `old`: the value to store (none
/// for GET and for a CAS that fails) and the value the op fetches (the old
/// one; zero for SET). For conduits that apply ops under a lock.
///
/// ```
/// use rgex_core::atomic::{rmw, AtomicOp, AtomicType};
/// assert_eq!(rmw(AtomicType::U32, AtomicOp::Fadd, 7, 2, 0), (Some(9), 7));
/// assert_eq!(rmw(AtomicType::U64, AtomicOp::Cas, 7, 6, 1), (None, 7));
/// assert_eq!(rmw(AtomicType::U64, AtomicOp::Cas, 7, 7, 1), (Some(1), 7));
/// ```
pub fn rmw(ty: AtomicType, op: AtomicOp, old: u64, a: u64, b: u64) -> (Option<u64>, u64) {
    use AtomicOp::*;
    let mask = if ty.size() == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let (old, a, b) = (old & mask, a & mask, b & mask);
    match op {
        Get => (None, old),
        Set => (Some(a), 0),
        Swap => (Some(a), old),
        Cas | Fcas => (if old == a { Some(b) } else { None }, old),
        _ => (Some(combine(ty, op, old, a) & mask), old),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_min_max_rule() {
        let n = f64::NAN;
        assert_eq!(fmin64(1.0, n), 1.0);
        assert_eq!(fmin64(n, 2.0), 2.0);
        assert!(fmin64(n, n).is_nan());
        assert!(fmin64(0.0, -0.0).is_sign_negative());
        assert!(fmin64(-0.0, 0.0).is_sign_negative());
        assert!(fmax64(-0.0, 0.0).is_sign_positive());
        assert!(fmax64(0.0, -0.0).is_sign_positive());
        assert_eq!(fmax32(3.0, 2.0), 3.0);
    }
}
