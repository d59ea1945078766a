//! Atomics offload per (type, op): which ops of each type a conduit
//! performs itself, and for the others why a domain holding them goes
//! through active messages (the AM reference) instead.

use rgex_core::atomic::{AtomicOp, AtomicType};

/// How a conduit performs atomics.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AtomicsReport {
    /// The mechanism, in a line.
    pub how: String,
    /// Per type, where the answer depends on the type and op (empty where
    /// every type and op is handled alike).
    pub types: Vec<TypeAtomics>,
}

/// One type's answer. A domain of this type is offloaded when every op
/// of its set is in `offloaded`; otherwise it takes the AM reference.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TypeAtomics {
    /// The type (`i32`, `u32`, `i64`, `u64`, `f32`, `f64`).
    pub ty: &'static str,
    /// The ops offloaded, in `AtomicOp::ALL`'s order.
    pub offloaded: Vec<String>,
    /// The others, one entry per reason.
    pub not: Vec<NotOffloaded>,
}

/// Ops of one type that are not offloaded, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NotOffloaded {
    /// The ops (`Mult`, `Fmult`, ...).
    pub ops: Vec<String>,
    /// Why.
    pub why: String,
}

/// The Rust name of a type.
pub fn type_name(ty: AtomicType) -> &'static str {
    match ty {
        AtomicType::I32 => "i32",
        AtomicType::U32 => "u32",
        AtomicType::I64 => "i64",
        AtomicType::U64 => "u64",
        AtomicType::F32 => "f32",
        AtomicType::F64 => "f64",
    }
}

/// Every type, each op's answer grouped: `refusal(ty, op)` is `None` if
/// the op is offloaded, else why not.
pub fn per_type(refusal: impl Fn(AtomicType, AtomicOp) -> Option<String>) -> Vec<TypeAtomics> {
    AtomicType::ALL
        .into_iter()
        .map(|ty| {
            let mut t = TypeAtomics {
                ty: type_name(ty),
                offloaded: Vec::new(),
                not: Vec::new(),
            };
            for op in AtomicOp::ALL {
                let name = format!("{op:?}");
                match refusal(ty, op) {
                    None => t.offloaded.push(name),
                    Some(why) => match t.not.iter_mut().find(|n| n.why == why) {
                        Some(n) => n.ops.push(name),
                        None => t.not.push(NotOffloaded {
                            ops: vec![name],
                            why,
                        }),
                    },
                }
            }
            t
        })
        .collect()
}

/// ofi: what the provider the conduit would choose performs.
pub fn ofi(probe: &rgex_ofi::probe::Probe) -> AtomicsReport {
    AtomicsReport {
        how: format!(
            "offload through provider {} on {} (fi_atomic, fi_fetch_atomic, fi_compare_atomic) \
             when every op of a domain's set is offloaded, else active messages; a job whose \
             ranks all share a node with RGEX_SHM_BYPASS=1 uses CPU atomics instead",
            probe.provider.name, probe.provider.domain
        ),
        types: per_type(|ty, op| probe.atomic_refusal(ty, op).map(|r| r.to_string())),
    }
}

/// ibv: verbs' two 8-byte atomics, on a device with (`atomics`) or
/// without atomics; `device` names it.
pub fn ibv(atomics: bool, device: &str) -> AtomicsReport {
    use rgex_ibv::atomics::{offload, Plan};
    let plans = [Plan::FetchAdd, Plan::CompareSwap, Plan::Loop]
        .into_iter()
        .map(|plan| {
            let ops: Vec<String> = AtomicOp::ALL
                .into_iter()
                .filter(|&op| offload(true, AtomicType::U64, op) == Ok(plan))
                .map(|op| format!("{op:?}"))
                .collect();
            format!("{} ({})", plan.verbs(), ops.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ");
    AtomicsReport {
        how: format!(
            "offload to the HCA ({device}) on i64/u64 only: {plans}; a domain is offloaded when \
             every op of its set is, else it goes through active messages"
        ),
        types: per_type(|ty, op| offload(atomics, ty, op).err().map(str::to_string)),
    }
}

/// smp: CPU atomics on the mapped segments.
pub fn smp() -> AtomicsReport {
    AtomicsReport {
        how: "shared: CPU atomics on the mapped segments, every type and op (no NIC offload)"
            .into(),
        types: Vec::new(),
    }
}

/// scc: the emulated chip's own atomics.
pub fn scc() -> AtomicsReport {
    AtomicsReport {
        how: "offloaded for every type and op: the chip applies each under the owner's \
              test-and-set register (invalidate, read, apply, write, drain, release)"
            .into(),
        types: Vec::new(),
    }
}
