//! Which mechanism carries a transfer, and when `Auto` prefers RMA.

/// How a transfer is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Per operation: direct for mapped peers, else the conduit's own
    /// vector transfer where it has one (`Conduit::vis_native`), else RMA
    /// per chunk when chunks are at least [`RMA_MIN_CHUNK`] bytes on
    /// average, else AM.
    Auto,
    /// Copies straight between the local buffer and the peer's mapped
    /// segment, one loop nest (node-local peers only).
    Direct,
    /// One RMA operation per contiguous chunk, all in flight at once.
    Rma,
    /// Packed into negotiated-payload Medium AMs, unpacked by a handler.
    Am,
    /// The conduit's own vector transfer, the whole chunk list in one call
    /// (`Conduit::try_putv`/`try_getv`: the VIS override point).
    Native,
}

impl Mechanism {
    /// Each mechanism by the name `RGEX_VIS` gives it.
    pub const NAMES: [(&'static str, Mechanism); 5] = [
        ("auto", Mechanism::Auto),
        ("direct", Mechanism::Direct),
        ("rma", Mechanism::Rma),
        ("am", Mechanism::Am),
        ("native", Mechanism::Native),
    ];
}

/// Average chunk size from which `Auto` prefers RMA to the AM pipeline for
/// a peer whose segment is not mapped.
pub const RMA_MIN_CHUNK: u64 = 2048;
