//! The cost model: modelled core cycles per event. Deterministic (no clock
//! is ever read), so a protocol's cost can be asserted in tests.
//!
//! Clocks of the reference configuration: cores at 533 MHz, mesh at
//! 800 MHz, DDR3-800 memory (400 MHz). Figures, in core cycles:
//!
//! | event | cycles | source / reasoning |
//! |---|---|---|
//! | L1 hit (per 4-byte word) | 1 | P54C: a load/store hitting L1 issues in one cycle |
//! | L2 hit (per line) | 18 | SCC programmer's documentation: L2 hit latency ~18 core cycles |
//! | WCB store (per line touched) | 1 | a store into the buffer does not stall |
//! | MPB access, same tile | 18 | the figure this model fixes for an MPB line (published measurements of local MPB reads range ~15-45 cycles with configuration) |
//! | per mesh hop (round trip) | 5 | 4 mesh cycles per router each way at 800 MHz: 8 x 533/800 ~ 5.3 core cycles |
//! | DRAM access | 101 + hops to the MC | SCC EAS / Mattson et al. (SC'10): ~40 core cycles + 46 memory cycles (46 x 533/400 ~ 61) + mesh |
//! | lock register access | 18 + hops to the owner's tile | like an MPB access: the register sits in the tile's CRB, one mesh transaction |
//! | atomic counter access | 200 + hops to the SIF (tile (3,0)) | estimate: the counters are in the off-chip FPGA behind the system interface, slower than DRAM |
//! | `invalidate_mpbt` | 4 | CL1INVMB is one instruction that flash-clears the MPBT-tagged lines |
//! | `flush` | 1 per line slot walked (L1 and L2) + one memory write per dirty line | WBINVD walks the whole cache; on the real SCC flushing L2 is a software loop and far more expensive |
//!
//! Memory writes (WCB drains, write-backs, uncached stores, write misses)
//! are charged the same latency as a read of the same place: conservative,
//! since the P54C's posted write buffers hide part of it.
//! Uncached accesses and write-back-page write misses are one transaction
//! per 4-byte word touched (the P54C is a 32-bit core); line fills, drains
//! and write-backs are one transaction per line (a mesh packet carries a
//! line). The figures marked as estimates are not measured on hardware.

use super::layout::{hops, tile_xy, Place, MC_XY, SIF_XY};

/// Cycles per modelled event (see the module doc). `Default` is the SCC table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostTable {
    /// L1 hit, per 4-byte word.
    pub l1_hit: u64,
    /// L2 hit, per line.
    pub l2_hit: u64,
    /// A store merged into the write-combine buffer, per line touched.
    pub wcb_store: u64,
    /// MPB access on the same tile (one transaction).
    pub mpb_access: u64,
    /// Off-chip DRAM access at distance 0 from its controller.
    pub dram_access: u64,
    /// Extra cycles per mesh hop (request and response together).
    pub hop: u64,
    /// Test-and-set register access on the same tile.
    pub lock_access: u64,
    /// Atomic counter access at distance 0 from the system interface.
    pub atomic_access: u64,
    /// One `invalidate_mpbt()`.
    pub invalidate: u64,
    /// `flush()`: per line slot walked.
    pub flush_per_slot: u64,
}

impl Default for CostTable {
    fn default() -> Self {
        CostTable {
            l1_hit: 1,
            l2_hit: 18,
            wcb_store: 1,
            mpb_access: 18,
            dram_access: 101,
            hop: 5,
            lock_access: 18,
            atomic_access: 200,
            invalidate: 4,
            flush_per_slot: 1,
        }
    }
}

impl CostTable {
    /// One memory transaction from a core on tile `from` to `place`.
    pub fn mem(&self, from: u32, place: Place) -> u64 {
        let me = tile_xy(from);
        match place {
            Place::Mpb { tile } => self.mpb_access + self.hop * hops(me, tile_xy(tile)) as u64,
            Place::Dram { mc } => self.dram_access + self.hop * hops(me, MC_XY[mc as usize]) as u64,
        }
    }

    /// One access from a core on tile `from` to the lock register of a core
    /// on tile `owner`.
    pub fn lock(&self, from: u32, owner: u32) -> u64 {
        self.lock_access + self.hop * hops(tile_xy(from), tile_xy(owner)) as u64
    }

    /// One atomic counter access from tile `from`.
    pub fn atomic(&self, from: u32) -> u64 {
        self.atomic_access + self.hop * hops(tile_xy(from), SIF_XY) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        let c = CostTable::default();
        assert_eq!(c.mem(0, Place::Mpb { tile: 0 }), 18);
        // Tile 23 is (5,3): 8 hops from tile 0.
        assert_eq!(c.mem(0, Place::Mpb { tile: 23 }), 18 + 40);
        assert_eq!(c.mem(0, Place::Dram { mc: 0 }), 101);
        assert_eq!(c.mem(0, Place::Dram { mc: 3 }), 101 + 35);
        assert_eq!(c.lock(1, 1), 18);
        assert_eq!(c.lock(0, 1), 18 + 5);
        assert_eq!(c.atomic(3), 200);
    }
}
