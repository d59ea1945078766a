//! Shared set-up of the emulation tests: a small checked chip with one page
//! of each memory type in shared memory.

#![allow(dead_code)]

use rgex_scc::emu::{Addr, CheckMode, Chip, Core, CoreConfig, Layout, MemType, PAGE};

/// A chip and the addresses the tests use.
pub struct Env {
    pub chip: Chip,
    /// An uncached page (flags).
    pub flags: Addr,
    /// A write-back page.
    pub wb: Addr,
    /// An MPBT page in shared DRAM.
    pub mpbt: Addr,
}

/// `cores` cores, checker on, shared memory = [uncached, write-back,
/// write-back, MPBT] pages.
pub fn env(cores: u32) -> Env {
    let probe = Layout::builder(cores)
        .shared_bytes(4 * PAGE as u64)
        .check(true);
    let base = probe.clone().build().unwrap().shared_base();
    let layout = probe
        .page_type(base, PAGE as u64, MemType::Uncached)
        .page_type(base.offset(3 * PAGE as u64), PAGE as u64, MemType::Mpbt)
        .build()
        .unwrap();
    let chip = Chip::in_process(layout).unwrap();
    let l = chip.layout().clone();
    Env {
        chip,
        flags: l.shared(0),
        wb: l.shared(PAGE as u64),
        mpbt: l.shared(3 * PAGE as u64),
    }
}

/// A core that reports stale reads (whatever RGEX_SCC_CHECK says).
pub fn core(e: &Env, rank: u32) -> Core {
    e.chip
        .core_with(rank, CoreConfig::default().check(CheckMode::Report))
        .unwrap()
}

/// A core with the given config, reporting.
pub fn core_with(e: &Env, rank: u32, cfg: CoreConfig) -> Core {
    e.chip
        .core_with(rank, cfg.check(CheckMode::Report))
        .unwrap()
}

/// Read memory directly (no cache).
pub fn peek_u64(e: &Env, a: Addr) -> u64 {
    let mut b = [0; 8];
    e.chip.peek(a, &mut b).unwrap();
    u64::from_le_bytes(b)
}
