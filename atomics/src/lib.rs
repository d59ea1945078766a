//! rgex-atomics: remote atomic domains.
//!
//! An [`AtomicDomain<T>`] is created collectively over a team
//! ([`Team`](rgex_endpoint::Team)) for one data type `T` (`i32`,
//! `u32`, `i64`, `u64`, `f32`, `f64`) and a set of ops ([`OpSet`]). Ops act
//! on naturally aligned words in the segments of the team's members,
//! addressed by [`GlobalAddr`](rgex_core::GlobalAddr) (job rank + offset),
//! in three forms: non-blocking ([`AtomicDomain::op_nb`], an
//! [`AtomicEvent<T>`] that yields the fetched value), implicit-handle
//! ([`AtomicDomain::op_nbi`], synced with [`AtomicDomain::nbi_wait`]) and
//! blocking ([`AtomicDomain::op`] and the named forms such as
//! [`AtomicDomain::fetch_add`]).
//!
//! # Implementations
//!
//! Chosen once, when the domain is created, and the same on every member
//! (agreed with a team allreduce); never a mix inside one domain, since
//! NIC atomics, CPU atomics and handler-run atomics need not be atomic
//! with respect to each other:
//!
//! 1. [`Implementation::Offload`]: the conduit performs the op in the
//!    network, if [`Conduit::atomic_offload`](rgex_core::Conduit::atomic_offload)
//!    accepts the type and the *whole* op set on every member;
//! 2. [`Implementation::SharedMemory`]: every member's segment is mapped in
//!    every member's process; the initiator applies a CPU atomic directly on
//!    the mapped word, no message at all;
//! 3. [`Implementation::Reference`]: an active message to the target, whose
//!    handler applies the CPU atomic on its own segment and replies with the
//!    old value. Correct on every conduit. Ops whose target is the calling
//!    rank itself are applied in place (the handler's CPU atomics act on the
//!    same memory, so this stays atomic).
//!
//! `RGEX_ATOMICS=reference` (or [`Builder::force_reference`]) forces the
//! reference on every domain, so tests keep it correct where a faster path
//! exists; `RGEX_ATOMICS=shared` and `RGEX_ATOMICS=offload` (or
//! [`Builder::implementation`]) require those, and domain creation fails
//! with [`Error::DomainUnavailable`], naming the reason, where some member
//! cannot provide them (rather than silently taking another).
//! [`AtomicDomain::implementation`] says which one a domain took.
//!
//! # Semantics
//!
//! - **Atomicity** holds among the ops of one domain. Two domains over the
//!   same word, or a domain op racing with a plain put/get (or a local load
//!   or store) of the same word, have no atomicity guarantee. To mix them,
//!   separate the phases with a barrier: e.g. initialise words with puts,
//!   barrier, run atomics, barrier, read the words with gets.
//! - **Integers wrap** (ADD, SUB, MULT, INC, DEC) in two's complement.
//! - **Floats** follow IEEE 754 arithmetic. CAS/FCAS compare *bit
//!   patterns* (so a NaN can be swapped out, and `-0.0 != +0.0`).
//!   MIN/MAX follow IEEE 754-2019 `minimumNumber`/`maximumNumber`: a NaN
//!   operand is ignored (the stored value stays), a NaN stored value is
//!   replaced by a number operand, and `-0.0` counts as less than `+0.0`
//!   (so `min(+0.0, -0.0) = -0.0`, `max(-0.0, +0.0) = +0.0`). If both are
//!   NaN the stored NaN stays, bit for bit.
//! - **Bit ops** (AND/OR/XOR and their F-forms) exist for integer types
//!   only: asking for them in a float domain is [`Error::BitOpOnFloat`] at
//!   creation.
//! - **Ordering**: by default an op is atomic but unordered (relaxed)
//!   with respect to the caller's other memory accesses.
//!   [`AtomicFlags::RELEASE`] makes the caller's earlier memory accesses
//!   (and RMA whose completion it has observed) visible to whoever
//!   observes this op's effect with [`AtomicFlags::ACQUIRE`]; ACQUIRE makes
//!   later accesses see what the releasing side published. Outstanding
//!   non-blocking puts are not waited for: complete them first.
//! - **Operands**: `op(at, op, a, b)`: `a` is the value (SET, SWAP, ADD,
//!   SUB, MULT, MIN, MAX, AND, OR, XOR) or the compare value (CAS), `b` the
//!   new value of a CAS; INC/DEC/GET ignore both.
//!
//! # Errors
//!
//! An op not in the domain's set, a misaligned word, a word outside the
//! target's segment, a rank outside the team and a broken locality flag are
//! reported before anything moves, naming the rank, the offset and the limit.
//!
//! # NBI
//!
//! Implicit-handle atomics join the endpoint's per-thread Rmw category (or
//! the thread's open access region, so a region collects RMA and atomics
//! alike): sync with `Endpoint::nbi_wait(NbiCategory::Rmw)`,
//! [`AtomicDomain::nbi_wait`] or [`nbi_wait`].

mod config;
mod cpu;
mod domain;
pub mod nbi;
mod reference;

pub use config::AtomicsConfig;
pub use domain::{AtomicDomain, AtomicEvent, Builder, Implementation};

/// Register the active-message reference's handlers (reserved indices
/// `AD_OP` and `AD_REPLY`) on `ep`, once; a later domain finds them. It
/// keeps `config` with `ep` for every domain made there (the first
/// call's, if called again). `rgex::init` calls it before it seals the
/// endpoint's reserved range (see
/// [`rgex_endpoint::HandlerTable::seal_protocols`]); an endpoint made another
/// way registers them at its first domain if it did not, and its domains
/// take [`AtomicsConfig::default`].
///
/// ```no_run
/// # fn demo(ep: &std::sync::Arc<rgex_endpoint::Endpoint>) -> rgex_core::Result<()> {
/// rgex_atomics::install(ep, rgex_atomics::AtomicsConfig::default())?; // on every rank, before any domain
/// # Ok(()) }
/// ```
pub fn install(ep: &std::sync::Arc<rgex_endpoint::Endpoint>, config: AtomicsConfig) -> Result<()> {
    ep.extension::<AtomicsConfig, Error>(|_| Ok(std::sync::Arc::new(config)))?;
    reference::Reference::for_endpoint(ep).map(drop)
}
pub use nbi::{nbi_test, nbi_wait};
pub use rgex_core::conduit::{AtomicOp, AtomicRequest, AtomicType, OpSet};

/// Handler indices the reference implementation uses (in rgex's reserved
/// range 16..=23 set aside for atomics).
pub mod reserved {
    /// An atomic op request (Short).
    pub const AD_OP: u8 = 16;
    /// Its answer: status and old value (Short reply).
    pub const AD_REPLY: u8 = 17;
}

bitflags::bitflags! {
    /// Flags of one atomic-domain op (kept apart from [`rgex_core::Flags`],
    /// which holds only what every operation shares).
    ///
    /// The locality flags are assertions the caller makes; rgex checks them
    /// (cheaply) and refuses an op whose assertion is false
    /// ([`Error::FlagBroken`]) instead of guessing.
    ///
    /// ```
    /// use rgex_atomics::AtomicFlags;
    /// let f = AtomicFlags::ACQUIRE | AtomicFlags::RELEASE;
    /// assert!(f.contains(AtomicFlags::RELEASE));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct AtomicFlags: u32 {
        /// Acquire: later memory accesses of the caller see what was
        /// published by the RELEASE op whose effect this op observed.
        const ACQUIRE = 1 << 0;
        /// Release: earlier memory accesses of the caller are visible to
        /// whoever ACQUIREs this op's effect.
        const RELEASE = 1 << 1;
        /// The target is the calling rank.
        const TARGET_SELF = 1 << 2;
        /// The target is on the calling rank's node (its segment is mapped here).
        const TARGET_LOCAL = 1 << 3;
        /// Fail with would-block instead of waiting for a message resource
        /// (reference implementation; the other paths never block).
        const IMMEDIATE = 1 << 4;
    }
}

/// The element types of atomic domains: `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`. Values travel as bit patterns zero-extended to 64 bits.
///
/// ```
/// use rgex_atomics::{AtomicType, AtomicValue};
/// assert_eq!(f32::TYPE, AtomicType::F32);
/// assert_eq!(f32::from_bits64((-1.5f32).to_bits64()), -1.5);
/// assert_eq!((-1i32).to_bits64(), 0xffff_ffff);
/// ```
pub trait AtomicValue:
    Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The type's tag.
    const TYPE: AtomicType;
    /// The bit pattern, zero-extended.
    fn to_bits64(self) -> u64;
    /// The value of a bit pattern (the low bits for 32-bit types).
    fn from_bits64(b: u64) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! value {
    ($t:ty, $tag:ident, |$v:ident| $to:expr, |$b:ident| $from:expr) => {
        impl sealed::Sealed for $t {}
        impl AtomicValue for $t {
            const TYPE: AtomicType = AtomicType::$tag;
            #[inline]
            fn to_bits64(self) -> u64 {
                let $v = self;
                $to
            }
            #[inline]
            fn from_bits64($b: u64) -> Self {
                $from
            }
        }
    };
}

value!(i32, I32, |v| u64::from(v as u32), |b| b as u32 as i32);
value!(u32, U32, |v| u64::from(v), |b| b as u32);
value!(i64, I64, |v| v as u64, |b| b as i64);
value!(u64, U64, |v| v, |b| b);
value!(f32, F32, |v| u64::from(v.to_bits()), |b| f32::from_bits(
    b as u32
));
value!(f64, F64, |v| v.to_bits(), |b| f64::from_bits(b));

/// `Result` with rgex's one [`Error`] (re-exported from rgex-core, which
/// carries the atomics' variants: [`Error::OpNotInSet`],
/// [`Error::Misaligned`], [`Error::NotInTeam`], [`Error::FlagBroken`],
/// [`Error::DomainUnavailable`] and the rest).
pub use rgex_core::{Error, Result};

/// The names of the ops in `set`, comma-separated.
///
/// ```
/// use rgex_atomics::{op_names, AtomicOp, OpSet};
/// assert_eq!(op_names(OpSet::of(&[AtomicOp::Fadd, AtomicOp::Set])), "Set, Fadd");
/// ```
pub fn op_names(set: OpSet) -> String {
    set.iter()
        .map(|o| format!("{o:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
