//! Naming a function across ranks: every rank runs the same program, so
//! a function's address less the address of one base function in this
//! crate is the same number everywhere (the loader moves the program as
//! a whole). That number travels; the target adds its own base back.
//!
//! A number from the wire is never called unchecked. Each carries a tag,
//! a keyed hash of the number under a key rank 0 draws at start-up and
//! every rank shares; a corrupted or stray number fails the check and is
//! reported as a malformed message instead of becoming a jump to an
//! arbitrary address. (The key guards against damage, not a hostile
//! peer: ranks of one job trust each other, as they share memory.)
//! At start-up the ranks also compare a fingerprint of the program and
//! refuse to start RPC between different programs.

use crate::error::{Error, Result};
use crate::runtime::Pgas;
use rgex::Rank;
use serde::{de::DeserializeOwned, Serialize};
use std::hash::{Hash, Hasher};

/// What runs a call at its target: decode the arguments, run, and answer
/// call `ticket` of `src` (the result serialized straight into the
/// reply, or the failure: whatever goes wrong, the caller is answered,
/// see [`answers`](crate::answers)). Instantiated once per (function,
/// argument, result) type.
pub(crate) type Trampoline = fn(&Pgas, Rank, u32, &[u8]);

/// The base every offset is taken from.
#[inline(never)]
fn base(_: &Pgas, _: Rank, _: u32, _: &[u8]) {}

/// A function's name on the wire: its offset from [`base`] and its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FnId {
    pub offset: u64,
    pub tag: u64,
}

impl FnId {
    /// Bytes on the wire.
    pub const LEN: usize = 16;

    pub fn write(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.tag.to_le_bytes());
    }

    pub fn read(b: &[u8]) -> Option<FnId> {
        Some(FnId {
            offset: u64::from_le_bytes(b.get(..8)?.try_into().ok()?),
            tag: u64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
        })
    }
}

/// The job's shared key and this program's fingerprint.
pub(crate) struct Names {
    key: u64,
}

impl Names {
    pub fn new(key: u64) -> Names {
        Names { key }
    }

    /// The tag of `offset`: two rounds of a 64-bit finalizer (every
    /// input bit reaches every output bit) over the offset and the key.
    /// Damage that changes the offset, the tag or both passes the check
    /// with a chance of 2^-64. It is not a MAC, and need not be: it
    /// guards against damage, not against a peer (see the module's note),
    /// and it runs twice per call.
    fn tag(&self, offset: u64) -> u64 {
        fn mix(mut x: u64) -> u64 {
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        }
        mix(mix(offset ^ self.key) ^ self.key.rotate_left(32) ^ 0x7267_6578_7067_6173)
    }

    /// The name of `f`'s trampoline.
    pub fn name(&self, f: Trampoline) -> FnId {
        let offset = (f as usize).wrapping_sub(base as Trampoline as usize) as u64;
        FnId {
            offset,
            tag: self.tag(offset),
        }
    }

    /// The trampoline `id` names, if its tag is right.
    pub fn resolve(&self, id: FnId) -> Option<Trampoline> {
        if id.tag != self.tag(id.offset) {
            return None;
        }
        let addr = (base as Trampoline as usize).wrapping_add(id.offset as usize);
        // SAFETY: the tag proves (up to a 2^-64 chance) that `offset` was
        // made by `name` from a trampoline of this same program (checked
        // at start-up by the fingerprint), in which the trampoline lies
        // at the same distance from `base`: `addr` is that function.
        Some(unsafe { std::mem::transmute::<usize, Trampoline>(addr) })
    }
}

/// A fingerprint of this program: its executable's size and modification
/// time, and one trampoline's distance from `base` (so two builds that
/// happen to match in size still differ).
pub(crate) fn fingerprint() -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Ok(m) = std::fs::metadata("/proc/self/exe") {
        m.len().hash(&mut h);
        m.modified().ok().hash(&mut h);
    }
    fn probe(_: &Pgas, x: u8) -> u8 {
        x
    }
    let probe: Trampoline = crate::rpc::trampoline_of(&probe);
    (probe as usize)
        .wrapping_sub(base as Trampoline as usize)
        .hash(&mut h);
    h.finish()
}

/// Decode `A`, run the function `F` (zero-sized, so conjured here), and
/// answer `ticket` with its `R` (see [`Trampoline`]), or only acknowledge
/// it for a promise's call ([`COUNTED`](crate::calls::COUNTED)).
pub(crate) fn run<F, A, R>(pg: &Pgas, src: Rank, ticket: u32, bytes: &[u8])
where
    F: Fn(&Pgas, A) -> R + Copy + Send + 'static,
    A: DeserializeOwned,
    R: Serialize,
{
    match call::<F, A, R>(pg, src, bytes) {
        Ok(_) if ticket & crate::calls::COUNTED != 0 => pg.acknowledge(src, ticket),
        Ok(r) => pg.answer_value(src, ticket, &r, || {
            format!(
                "the result ({}) of {}",
                std::any::type_name::<R>(),
                std::any::type_name::<F>()
            )
        }),
        Err(e) => pg.answer(src, ticket, Err(e.to_string())),
    }
}

/// Decode `A` and run `F` on it.
fn call<F, A, R>(pg: &Pgas, src: Rank, bytes: &[u8]) -> Result<R>
where
    F: Fn(&Pgas, A) -> R + Copy + Send + 'static,
    A: DeserializeOwned,
{
    let args: A = postcard::from_bytes(bytes).map_err(|e| Error::Serialization {
        rank: pg.rank(),
        what: format!(
            "the arguments ({}) of an rpc from {src} to {}",
            std::any::type_name::<A>(),
            std::any::type_name::<F>()
        ),
        why: e.to_string(),
    })?;
    let f = conjure::<F>();
    // A body that panics fails its call (reported to the caller), not
    // the rank that runs it.
    let r: R =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(pg, args))).map_err(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            rgex::Error::Failed(format!(
                "{} panicked on {}: {why}",
                std::any::type_name::<F>(),
                pg.rank()
            ))
        })?;
    Ok(r)
}

/// The value of a zero-sized function type.
fn conjure<F: Copy + 'static>() -> F {
    const { assert!(std::mem::size_of::<F>() == 0) };
    // SAFETY: F is zero-sized (checked at compile time): a read of it
    // from a dangling, aligned pointer reads no bytes, and `Copy` (no drop, no state); `rpc` only
    // names F after the caller handed it a value of F, so F is inhabited.
    // A function item or a closure that captures nothing is such a type.
    unsafe { std::ptr::NonNull::<F>::dangling().as_ptr().read() }
}

/// Check at compile time that `F` captures nothing.
pub(crate) const fn assert_zero_sized<F>() {
    assert!(
        std::mem::size_of::<F>() == 0,
        "rgex-pgas: an RPC's function must be a fn item or a closure that captures nothing (its value cannot travel to another rank)"
    );
}
