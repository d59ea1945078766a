//! The model's mechanics: counters and modelled cycles, the WCB, invalidate
//! and flush, capacity evictions, lock registers, atomic counters, and the
//! checker's quiet cases (no false alarms).

mod common;

use common::{core, core_with, env, peek_u64};
use rgex_scc::emu::{
    Addr, CheckMode, Chip, CoreConfig, CostTable, CounterId, Geometry, Layout, LockId, Missing,
    Source, LINE,
};

#[test]
fn miss_then_hit_counts_and_cycles() {
    let e = env(2);
    let mut a = core(&e, 0);
    let cost = CostTable::default();
    let mine = e.chip.layout().mpb(0); // same tile: 0 hops

    let t0 = a.counters();
    a.read_u64(mine).unwrap();
    let d = a.counters() - t0;
    assert_eq!(
        (d.l1_misses, d.l1_hits, d.line_fills, d.mpb_reads),
        (1, 0, 1, 1)
    );
    assert_eq!(d.cycles, cost.mpb_access + 2 * cost.l1_hit);

    let t1 = a.counters();
    a.read_u64(mine).unwrap();
    let d = a.counters() - t1;
    assert_eq!((d.l1_misses, d.l1_hits, d.line_fills), (0, 1, 0));
    assert_eq!(d.cycles, 2 * cost.l1_hit);
    assert_eq!(a.cycles(), (a.counters() - t0).cycles);

    // Write-back DRAM: L1 and L2 miss, fill from DRAM (MC 0 is at tile 0).
    let t2 = a.counters();
    a.read_u32(e.wb).unwrap();
    let d = a.counters() - t2;
    assert_eq!((d.l1_misses, d.l2_misses, d.dram_reads), (1, 1, 1));
    assert_eq!(d.cycles, cost.dram_access + cost.l1_hit);
    assert_eq!(a.cached(e.wb), Some(Source::L1));
    assert_eq!(a.cached_lines(), (2, 1), "MPBT bypasses L2");
}

#[test]
fn remote_mpb_costs_mesh_hops() {
    let l = Layout::builder(48).check(false).build().unwrap();
    let chip = Chip::in_process(l).unwrap();
    let mut a = chip.core(0).unwrap();
    let far = chip.layout().mpb(47); // tile 23 = (5,3): 8 hops
    let t = a.counters();
    a.read_u32(far).unwrap();
    assert_eq!((a.counters() - t).cycles, 18 + 8 * 5 + 1);
}

#[test]
fn l2_hit_after_l1_eviction() {
    let e = env(1);
    let cfg = CoreConfig::default().l1(Geometry::new(2 * LINE, 2).unwrap());
    let mut a = core_with(&e, 0, cfg);
    for i in 0..3 {
        a.read_u32(e.wb.offset(i * LINE as u64)).unwrap();
    }
    assert_eq!(a.counters().l1_evictions, 1);
    assert_eq!(a.cached(e.wb), Some(Source::L2));
    let t = a.counters();
    a.read_u32(e.wb).unwrap();
    let d = a.counters() - t;
    assert_eq!((d.l2_hits, d.line_fills), (1, 0));
    assert_eq!(d.cycles, 18 + 1);
}

#[test]
fn capacity_evictions_write_back_dirty_lines() {
    let e = env(1);
    let cfg = CoreConfig::default()
        .l1(Geometry::new(2 * LINE, 1).unwrap()) // 2 sets, direct mapped
        .l2(Some(Geometry::new(2 * LINE, 1).unwrap()));
    let mut a = core_with(&e, 0, cfg);
    let l0 = e.wb; // set 0 in both (line index is even)
    let l2 = e.wb.offset(2 * LINE as u64); // also set 0
    let l4 = e.wb.offset(4 * LINE as u64); // also set 0
    a.read_u64(l0).unwrap();
    a.write_u64(l0, 11).unwrap();
    assert_eq!(a.counters().l1_write_hits, 1);
    // l2 evicts dirty l0 from L1 into L2 (which itself evicts l2's L2 copy).
    a.read_u64(l2).unwrap();
    assert_eq!(peek_u64(&e, l0), 0, "still in L2");
    // l4 evicts l2 from L1 (clean) and l0 (dirty) from L2: to memory.
    a.read_u64(l4).unwrap();
    let c = a.counters();
    assert!(c.l1_evictions == 2 && c.l1_writebacks == 1, "{c}");
    assert_eq!(c.l2_writebacks, 1, "{c}");
    assert_eq!(peek_u64(&e, l0), 11);
    assert_eq!(a.read_u64(l0).unwrap(), 11);
}

#[test]
fn wcb_drains_on_line_change_and_on_demand() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let x = e.chip.layout().mpb(1);
    let y = x.offset(LINE as u64);
    a.write_u32(x, 1).unwrap();
    a.write_u32(x.offset(4), 2).unwrap(); // same line: merged
    assert_eq!(a.counters().wcb_drains, 0);
    assert_eq!(peek_u64(&e, x), 0);
    // The writer sees its own buffered stores; memory and others do not.
    assert_eq!(a.read_u32(x.offset(4)).unwrap(), 2);
    assert_eq!(b.read_u32(x).unwrap(), 0);
    a.write_u32(y, 3).unwrap(); // another line: drains x's line
    let c = a.counters();
    assert_eq!(
        (c.wcb_drains, c.wcb_line_change_drains, c.wcb_stores),
        (1, 1, 3)
    );
    assert_eq!(peek_u64(&e, x), 1 | (2 << 32));
    assert!(a.drain());
    assert!(!a.drain(), "nothing left");
    let c = a.counters();
    assert_eq!((c.wcb_drains, c.wcb_explicit_drains), (2, 1));
    // A drain writes only the bytes written: a neighbour's bytes survive.
    b.write(x.offset(1), &[0xee]).unwrap();
    b.drain();
    assert_eq!(peek_u64(&e, x), 1 | (0xee << 8) | (2 << 32));
}

#[test]
fn invalidate_discards_only_mpbt_lines() {
    let e = env(1);
    let mut a = core(&e, 0);
    let m = e.chip.layout().mpb(0);
    a.read_u32(m).unwrap();
    a.read_u32(e.mpbt).unwrap(); // MPBT page in shared DRAM
    a.read_u32(e.wb).unwrap();
    let t = a.counters();
    assert_eq!(a.invalidate_mpbt(), 2);
    let d = a.counters() - t;
    assert_eq!((d.invalidates, d.invalidated_lines, d.cycles), (1, 2, 4));
    assert_eq!(a.cached(m), None);
    assert_eq!(a.cached(e.mpbt), None);
    assert_eq!(a.cached(e.wb), Some(Source::L1));
}

#[test]
fn flush_writes_back_dirty_lines_and_empties_the_caches() {
    let e = env(1);
    let mut a = core(&e, 0);
    a.read_u64(e.wb).unwrap();
    a.write_u64(e.wb, 0xabc).unwrap();
    a.read_u64(e.wb.offset(LINE as u64)).unwrap(); // clean
    a.read_u64(e.chip.layout().mpb(0)).unwrap(); // MPBT, clean
    assert_eq!(peek_u64(&e, e.wb), 0);
    let t = a.counters();
    assert_eq!(a.flush(), 1);
    let d = a.counters() - t;
    assert_eq!((d.flushes, d.flushed_lines, d.dram_writes), (1, 1, 1));
    // 3 lines in L1, 2 in L2 (write-back only).
    assert_eq!(d.flush_discarded_lines, 5);
    let slots = (Geometry::SCC_L1.lines() + Geometry::SCC_L2.lines()) as u64;
    assert_eq!(d.cycles, slots + 101);
    assert_eq!(peek_u64(&e, e.wb), 0xabc);
    assert_eq!(a.cached_lines(), (0, 0));
}

#[test]
fn test_and_set_registers() {
    let e = env(3);
    let (mut a, mut b, mut c) = (core(&e, 0), core(&e, 1), core(&e, 2));
    let l = LockId::of(0);
    assert!(a.tas_try(l).unwrap());
    assert!(!b.tas_try(l).unwrap(), "held by A");
    assert!(
        !a.tas_try(l).unwrap(),
        "a second read fails even for the holder"
    );
    a.tas_release(l).unwrap();
    assert!(b.tas_try(l).unwrap());
    assert!(!c.tas_try(l).unwrap());
    c.tas_release(l).unwrap(); // any write frees it (a bug of C, allowed by the hardware)
    assert!(a.tas_try(l).unwrap());
    let ca = a.counters();
    assert_eq!(
        (ca.lock_attempts, ca.lock_acquires, ca.lock_releases),
        (3, 2, 1)
    );
    // Core 2 is on tile 1, one hop from the register's tile 0.
    assert_eq!(c.counters().cycles, 2 * (18 + 5));
    assert!(a.tas_try(LockId(3)).is_err());
}

#[test]
fn lock_protected_write_back_data() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let l = LockId::of(1);
    let x = e.wb;
    assert_eq!(b.read_u64(x).unwrap(), 0); // B has an old copy
    assert!(a.tas_try(l).unwrap());
    a.read_u64(x).unwrap();
    a.write_u64(x, 3).unwrap();
    a.flush();
    a.tas_release(l).unwrap();
    assert!(b.tas_try(l).unwrap());
    assert_eq!(b.read_u64(x).unwrap(), 0);
    assert_eq!(
        b.stale_reads()[0].missing,
        Missing::ReaderFlush { rank: 1 },
        "the lock is a synchronisation edge"
    );
    b.flush();
    assert_eq!(b.read_u64(x).unwrap(), 3);
    b.tas_release(l).unwrap();
    assert_eq!(b.stale_reads().len(), 1);
}

#[test]
fn atomic_counters() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let c = CounterId(5);
    assert_eq!(a.atomic_inc(c).unwrap(), 0);
    assert_eq!(b.atomic_inc(c).unwrap(), 1);
    assert_eq!(a.atomic_read(c).unwrap(), 2);
    assert_eq!(b.atomic_set(c, 10).unwrap(), 2);
    assert_eq!(a.atomic_read(c).unwrap(), 10);
    assert!(a.atomic_inc(CounterId(48)).is_err());
    let ca = a.counters();
    assert_eq!((ca.atomic_incs, ca.atomic_reads), (1, 2));
    // Tile 0 is 3 hops from the system interface at (3,0).
    assert_eq!(ca.cycles, 3 * (200 + 15));

    // A counter is a synchronisation edge too.
    let data = e.chip.layout().mpb(1);
    b.read_u64(data).unwrap();
    a.write_u64(data, 8).unwrap();
    a.drain();
    a.atomic_inc(c).unwrap();
    assert_eq!(b.atomic_read(c).unwrap(), 11);
    assert_eq!(b.read_u64(data).unwrap(), 0);
    assert_eq!(b.stale_reads()[0].missing, Missing::Invalidate { rank: 1 });
}

#[test]
fn explicit_channels_synchronise() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let data = e.chip.layout().mpb(0);
    a.write_u32(data, 4).unwrap();
    a.release(77); // e.g. before an external barrier...
    b.acquire(77); // ...and after it
    b.invalidate_mpbt();
    assert_eq!(b.read_u32(data).unwrap(), 0);
    assert_eq!(b.stale_reads()[0].missing, Missing::Drain { rank: 0 });
}

#[test]
fn unsynchronised_and_third_party_reads_are_not_reported() {
    let e = env(3);
    let (mut a, mut b, mut c) = (core(&e, 0), core(&e, 1), core(&e, 2));
    let mine = e.chip.layout().mpb(2);
    // C writes its MPB and has not drained or released anything.
    c.write_u32(mine, 1).unwrap();
    // A and B synchronise with each other.
    a.write_u32(e.chip.layout().mpb(0), 2).unwrap();
    a.drain();
    a.write_u32_release(e.flags, 1).unwrap();
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    // B polls C's location: old value, but C's store is not synchronised
    // with B (a race, not a missing operation).
    b.invalidate_mpbt();
    assert_eq!(b.read_u32(mine).unwrap(), 0);
    assert_eq!(b.read_u32(e.chip.layout().mpb(0)).unwrap(), 2);
    assert!(b.stale_reads().is_empty(), "{:?}", b.stale_reads());
    // A read of a flag value older than the release acquires nothing.
    let f2 = e.flags.offset(8);
    let d2 = e.chip.layout().mpb(0).offset(64);
    a.write_u32(d2, 6).unwrap(); // left in A's WCB
    let _ = c.read_u32_acquire(f2).unwrap(); // 0: no release yet
    a.write_u32_release(f2, 1).unwrap();
    c.invalidate_mpbt();
    assert_eq!(c.read_u32(d2).unwrap(), 0);
    assert!(c.stale_reads().is_empty());
}

#[test]
#[should_panic(expected = "missing drain of rank 0")]
fn strict_mode_panics() {
    let e = env(2);
    let mut a = core(&e, 0);
    let mut b = e
        .chip
        .core_with(1, CoreConfig::default().check(CheckMode::Strict))
        .unwrap();
    let data = e.chip.layout().mpb(1);
    a.write_u64(data, 1).unwrap();
    a.write_u32_release(e.flags, 1).unwrap();
    b.read_u32_acquire(e.flags).unwrap();
    let _ = b.read_u64(data);
}

#[test]
fn ranks_bounds_and_modes() {
    let e = env(2);
    let a = e.chip.core(0).unwrap();
    assert!(e.chip.core(0).is_err(), "one Core per rank");
    assert!(e.chip.core(2).is_err());
    drop(a);
    let mut a = e.chip.core(0).unwrap();
    let end = Addr(e.chip.layout().mem_bytes());
    assert!(a.read_u32(end).is_err());
    assert!(a.write(Addr(end.0 - 2), &[1, 2, 3]).is_err());
    assert!(a.write(Addr(end.0 - 3), &[1, 2, 3]).is_ok());
    assert_eq!(a.counters().writes, 1);

    let plain = Chip::in_process(Layout::builder(2).check(false).build().unwrap()).unwrap();
    assert!(plain
        .core_with(0, CoreConfig::default().check(CheckMode::Report))
        .is_err());
    let mut p = plain.core(0).unwrap();
    assert_eq!(p.check_mode(), CheckMode::Off);
    assert!(p.set_check_mode(CheckMode::Report).is_err());
    p.write_u32_release(plain.layout().mpb(0), 1).unwrap();
    assert!(p.stale_reads().is_empty());
}

#[test]
fn unaligned_accesses_across_lines_and_pages() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let start = e.chip.layout().mpb(0).offset(8192 - 13); // ends in core 1's half
    let data: Vec<u8> = (0..100).collect();
    a.write(start, &data).unwrap();
    a.drain();
    b.invalidate_mpbt();
    let mut got = vec![0u8; 100];
    b.read(start, &mut got).unwrap();
    assert_eq!(got, data);
    // 100 bytes from offset 19 in a line touch 4 lines: 3 line changes.
    assert_eq!(a.counters().wcb_line_change_drains, 3);
}
