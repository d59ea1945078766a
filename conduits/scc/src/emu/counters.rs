//! Per-core event counters and the modelled cycle total.
//!
//! A [`Counters`] is a plain snapshot: take one before and one after a
//! protocol step and subtract them (`after - before`) to get what the step
//! cost. Counters are private to the core (they live in its process).

use std::fmt;
use std::ops::{Add, Sub};

macro_rules! counters {
    ($( $(#[doc = $d:literal])* $name:ident ),* $(,)?) => {
        /// Every modelled event of one core, plus modelled cycles.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Counters {
            $( $(#[doc = $d])* pub $name: u64, )*
        }

        impl Counters {
            /// `(name, value)` of every counter, in declaration order.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$( (stringify!($name), self.$name), )*]
            }
        }

        impl Sub for Counters {
            type Output = Counters;
            /// Field-wise difference (saturating, so a reset in between
            /// gives zeros rather than a panic).
            fn sub(self, o: Counters) -> Counters {
                Counters { $( $name: self.$name.saturating_sub(o.$name), )* }
            }
        }

        impl Add for Counters {
            type Output = Counters;
            /// Field-wise sum (e.g. over cores).
            fn add(self, o: Counters) -> Counters {
                Counters { $( $name: self.$name + o.$name, )* }
            }
        }
    };
}

counters! {
    /// Modelled core cycles (see [`CostTable`](super::CostTable)).
    cycles,
    /// `read*` calls.
    reads,
    /// `write*` calls.
    writes,
    /// Bytes returned by reads.
    bytes_read,
    /// Bytes stored by writes.
    bytes_written,
    /// Cached reads (per line touched) that hit in L1.
    l1_hits,
    /// Cached reads (per line touched) that missed in L1.
    l1_misses,
    /// Cached writes (per line touched) that hit in L1.
    l1_write_hits,
    /// Cached writes (per line touched) that missed in L1.
    l1_write_misses,
    /// L1 read misses that hit in L2.
    l2_hits,
    /// L1 read misses that also missed in L2 (write-back pages only: MPBT
    /// bypasses L2).
    l2_misses,
    /// L1 write misses that hit in L2.
    l2_write_hits,
    /// Lines filled from memory (read misses).
    line_fills,
    /// Uncached load transactions (one per 4-byte word touched).
    uncached_reads,
    /// Uncached store transactions (one per 4-byte word touched).
    uncached_writes,
    /// Write-back-page write misses sent to memory (per 4-byte word).
    write_miss_words,
    /// Memory transactions that read an MPB (line fills and uncached words).
    mpb_reads,
    /// Memory transactions that wrote an MPB (drains, write-backs, uncached words).
    mpb_writes,
    /// Memory transactions that read off-chip DRAM.
    dram_reads,
    /// Memory transactions that wrote off-chip DRAM.
    dram_writes,
    /// Stores merged into the write-combine buffer (per line touched).
    wcb_stores,
    /// WCB drains (any cause).
    wcb_drains,
    /// WCB drains caused by a store to another line.
    wcb_line_change_drains,
    /// Explicit `drain()` calls that found something to drain.
    wcb_explicit_drains,
    /// `invalidate_mpbt()` calls.
    invalidates,
    /// Lines discarded by `invalidate_mpbt()`.
    invalidated_lines,
    /// `flush()` calls.
    flushes,
    /// Dirty lines written back to memory by `flush()`.
    flushed_lines,
    /// Lines (clean or dirty) discarded by `flush()`.
    flush_discarded_lines,
    /// Valid lines evicted from L1 for capacity.
    l1_evictions,
    /// Dirty L1 victims written back (into L2, or to memory without L2).
    l1_writebacks,
    /// Valid lines evicted from L2 for capacity.
    l2_evictions,
    /// Dirty L2 victims written back to memory.
    l2_writebacks,
    /// Test-and-set register reads.
    lock_attempts,
    /// Test-and-set reads that acquired.
    lock_acquires,
    /// Test-and-set register writes (releases).
    lock_releases,
    /// Atomic counter increments.
    atomic_incs,
    /// Atomic counter reads.
    atomic_reads,
    /// Atomic counter writes.
    atomic_sets,
    /// Release annotations (`write_release`, `release`); lock releases and
    /// counter operations are counted under their own names.
    releases,
    /// Acquire annotations (`read_acquire`, `acquire`).
    acquires,
    /// Stale reads reported by the checker.
    stale_reads,
    /// Release/acquire edges the checker could not record (sync table full,
    /// or its slot lock unobtainable): possible missed reports.
    sync_dropped,
}

impl fmt::Display for Counters {
    /// The non-zero counters, `name=value` separated by spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, v) in self.fields() {
            if v != 0 {
                if !first {
                    f.write_str(" ")?;
                }
                write!(f, "{n}={v}")?;
                first = false;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_and_display() {
        let a = Counters {
            cycles: 10,
            l1_hits: 2,
            ..Default::default()
        };
        let b = Counters {
            cycles: 25,
            l1_hits: 3,
            flushes: 1,
            ..Default::default()
        };
        let d = b - a;
        assert_eq!((d.cycles, d.l1_hits, d.flushes), (15, 1, 1));
        assert_eq!(d.to_string(), "cycles=15 l1_hits=1 flushes=1");
        assert_eq!((a + b).cycles, 35);
        assert_eq!((a - b).cycles, 0);
        assert!(a.fields().len() > 40);
    }
}
