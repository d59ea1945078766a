//! Memory types, one per 4 KiB page.
//!
//! On the SCC the memory type is a property of the page-table entry: the
//! P54C's PCD/PWT bits plus the SCC-specific PMB ("message-passing buffer
//! type") bit. The emulation keeps one chip-wide table, fixed when the
//! [`Layout`](super::Layout) is built (on the real chip each core has its own
//! page tables and could map one physical page with different types; no
//! protocol we model relies on that).

use std::fmt;

/// Page size of the type table, in bytes (the P54C's small page).
pub const PAGE: usize = 4096;

/// How a page is cached by every core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemType {
    /// Never cached: every load and store is one transaction to memory, in
    /// program order. Synchronisation flags live here.
    Uncached,
    /// Message-passing buffer type: cached in L1 only (bypasses L2),
    /// write-through with the write-combine buffer, and the only lines that
    /// [`Core::invalidate_mpbt`](super::Core::invalidate_mpbt) discards.
    Mpbt,
    /// Ordinary cacheable memory: L1 and L2, write-back, no write-allocate.
    /// The only way to make a core's writes visible (or to stop it reading
    /// its old copy) is [`Core::flush`](super::Core::flush).
    WriteBack,
}

impl MemType {
    /// The code stored in the shared page table (0 is never used).
    pub(crate) fn code(self) -> u64 {
        match self {
            MemType::Uncached => 1,
            MemType::Mpbt => 2,
            MemType::WriteBack => 3,
        }
    }

    /// Decode a page-table code.
    pub(crate) fn from_code(c: u64) -> Option<MemType> {
        match c {
            1 => Some(MemType::Uncached),
            2 => Some(MemType::Mpbt),
            3 => Some(MemType::WriteBack),
            _ => None,
        }
    }
}

impl fmt::Display for MemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemType::Uncached => "uncached",
            MemType::Mpbt => "MPBT",
            MemType::WriteBack => "write-back",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for t in [MemType::Uncached, MemType::Mpbt, MemType::WriteBack] {
            assert_eq!(MemType::from_code(t.code()), Some(t));
        }
        assert_eq!(MemType::from_code(0), None);
        assert_eq!(MemType::Mpbt.to_string(), "MPBT");
    }
}
