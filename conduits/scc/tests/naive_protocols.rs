//! The failure modes of naive protocols on non-coherent memory, each caught
//! by the emulation (wrong value and/or a stale-read report naming the rank,
//! the address and the missing operation), next to the protocol that works.

mod common;

use common::{core, core_with, env, peek_u64};
use rgex_scc::emu::{CoreConfig, Geometry, Missing, Source, LINE};

/// Case 1: B cached the line; A writes, drains and releases a flag; B acquires
/// and reads without invalidating: the old value, and a report naming the
/// missing invalidate on B. With the invalidate: fresh, no report.
#[test]
fn read_without_invalidate_is_stale() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let data = e.chip.layout().mpb(1);

    assert_eq!(b.read_u64(data).unwrap(), 0); // B caches the MPBT line
    a.write_u64(data, 0xfeed).unwrap();
    assert!(a.drain());
    a.write_u32_release(e.flags, 1).unwrap();

    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    assert_eq!(b.read_u64(data).unwrap(), 0, "B reads its stale L1 copy");
    let r = b.stale_reads();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].rank, 1);
    assert_eq!(r[0].addr, data);
    assert_eq!(r[0].len, 8);
    assert_eq!(r[0].writer, 0);
    assert_eq!(r[0].source, Source::L1);
    assert_eq!(r[0].missing, Missing::Invalidate { rank: 1 });
    assert!(r[0].to_string().contains("invalidate_mpbt on rank 1"));

    // The correct protocol: invalidate after the acquire.
    b.take_stale_reads();
    a.write_u64(data, 0xbeef).unwrap();
    a.drain();
    a.write_u32_release(e.flags, 2).unwrap();
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 2);
    assert_eq!(b.invalidate_mpbt(), 1);
    assert_eq!(b.read_u64(data).unwrap(), 0xbeef);
    assert!(b.stale_reads().is_empty());
    assert!(a.stale_reads().is_empty());
}

/// Case 2: B holds a dirty write-back line; A puts into other bytes of it (the
/// put reaches memory); B's flush writes the whole line back and the put is
/// gone. The reader is told which rank's write-back destroyed it.
#[test]
fn stale_line_written_back_over_a_put_destroys_it() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let line = e.wb; // B's segment: a write-back page
    let put = line.offset(8);

    // B reads its line and updates a local variable in it: dirty line.
    assert_eq!(b.read_u64(line).unwrap(), 0);
    b.write_u64(line, 7).unwrap();
    // A puts into the same line: a write miss, straight to memory.
    a.write_u64(put, 0x5555).unwrap();
    a.drain();
    a.flush();
    a.write_u32_release(e.flags, 1).unwrap();
    assert_eq!(peek_u64(&e, put), 0x5555, "the put reached memory");

    // B flushes its cache (e.g. at its own synchronisation point)...
    assert_eq!(b.flush(), 1);
    assert_eq!(
        peek_u64(&e, put),
        0,
        "...and its whole-line write-back erased the put"
    );
    assert_eq!(peek_u64(&e, line), 7);

    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    assert_eq!(b.read_u64(put).unwrap(), 0);
    let r = b.stale_reads();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].rank, r[0].addr, r[0].len), (1, put, 8));
    assert_eq!(r[0].missing, Missing::LostUpdate { by: 1 });
    assert_eq!(r[0].source, Source::Memory);
}

/// Case 2b: The same loss through a capacity eviction instead of a flush.
#[test]
fn eviction_of_a_stale_dirty_line_destroys_a_put() {
    let e = env(2);
    let tiny = CoreConfig::default()
        .l1(Geometry::new(2 * LINE, 2).unwrap()) // one set of two ways
        .l2(None);
    let mut a = core(&e, 0);
    let mut b = core_with(&e, 1, tiny);
    let line = e.wb;
    let put = line.offset(16);

    b.read_u64(line).unwrap();
    b.write_u64(line, 1).unwrap(); // dirty
    a.write_u64(put, 0x77).unwrap(); // put: to memory
    a.write_u32_release(e.flags, 1).unwrap();
    assert_eq!(peek_u64(&e, put), 0x77);

    // B touches two other lines: the dirty one is evicted and written back.
    b.read_u64(line.offset(LINE as u64)).unwrap();
    b.read_u64(line.offset(2 * LINE as u64)).unwrap();
    let c = b.counters();
    assert_eq!((c.l1_evictions, c.l1_writebacks), (1, 1));
    assert_eq!(
        peek_u64(&e, put),
        0,
        "the eviction wrote the stale line over the put"
    );

    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    assert_eq!(b.read_u64(put).unwrap(), 0);
    assert_eq!(b.stale_reads()[0].missing, Missing::LostUpdate { by: 1 });
}

/// Case 2c: The fix: message buffers in MPBT memory are write-through with byte
/// masks, so the same interleaving loses nothing.
#[test]
fn mpbt_buffers_do_not_lose_puts() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let line = e.chip.layout().mpb(1);
    let put = line.offset(8);
    b.read_u64(line).unwrap();
    b.write_u64(line, 7).unwrap();
    a.write_u64(put, 0x5555).unwrap();
    a.drain();
    a.write_u32_release(e.flags, 1).unwrap();
    b.drain();
    b.flush();
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    b.invalidate_mpbt();
    assert_eq!(b.read_u64(put).unwrap(), 0x5555);
    assert_eq!(b.read_u64(line).unwrap(), 7);
    assert!(b.stale_reads().is_empty());
}

/// Case 3: A flag kept in cached memory: the waiter spins on its cached copy and
/// never sees the update (a bounded loop, not a hang). The uncached flag works.
#[test]
fn cached_flag_is_never_seen_but_uncached_flag_is() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let spins = 1000;

    // Write-back flag, writer never cached it: its store goes to memory.
    let wb_flag = e.wb;
    assert_eq!(b.read_u32(wb_flag).unwrap(), 0);
    a.write_u32(wb_flag, 1).unwrap();
    assert_eq!(peek_u64(&e, wb_flag), 1, "the update is in memory");
    let before = b.counters();
    let seen = (0..spins).any(|_| b.read_u32(wb_flag).unwrap() == 1);
    assert!(!seen, "the waiter only ever reads its cached copy");
    let d = b.counters() - before;
    assert_eq!(d.l1_hits, spins);
    assert_eq!(
        d.dram_reads, 0,
        "spinning on a cached copy generates no traffic"
    );

    // Write-back flag the writer had cached: the store stays in its cache.
    let wb_flag2 = e.wb.offset(LINE as u64);
    a.read_u32(wb_flag2).unwrap();
    b.read_u32(wb_flag2).unwrap();
    a.write_u32(wb_flag2, 1).unwrap();
    assert_eq!(
        peek_u64(&e, wb_flag2),
        0,
        "the update never left the writer"
    );
    assert!(!(0..spins).any(|_| b.read_u32(wb_flag2).unwrap() == 1));

    // MPBT flag: the waiter's L1 hides the update unless it invalidates.
    let m_flag = e.chip.layout().mpb(1);
    b.read_u32(m_flag).unwrap();
    a.write_u32(m_flag, 1).unwrap();
    a.drain();
    assert!(!(0..spins).any(|_| b.read_u32(m_flag).unwrap() == 1));
    assert!((0..spins).any(|_| {
        b.invalidate_mpbt();
        b.read_u32(m_flag).unwrap() == 1
    }));

    // Uncached flag: every poll goes to memory and sees the update.
    assert_eq!(b.read_u32(e.flags).unwrap(), 0);
    a.write_u32(e.flags, 1).unwrap();
    let before = b.counters();
    let n = (0..spins)
        .position(|_| b.read_u32(e.flags).unwrap() == 1)
        .expect("uncached flag seen");
    assert_eq!(n, 0);
    assert_eq!((b.counters() - before).uncached_reads, 1);
    // None of this was synchronised: no reports.
    assert!(b.stale_reads().is_empty());
}

/// Case 4: Two writers of different bytes of one write-back line both flush:
/// the second whole-line write-back erases the first writer's byte.
#[test]
fn two_writers_of_one_line_lose_an_update() {
    let e = env(3);
    let (mut a, mut b, mut c) = (core(&e, 0), core(&e, 1), core(&e, 2));
    let line = e.wb;
    let flag_a = e.flags;
    let flag_b = e.flags.offset(64);

    a.read_u64(line).unwrap();
    b.read_u64(line).unwrap();
    a.write(line, &[0xaa]).unwrap(); // byte 0
    b.write(line.offset(8), &[0xbb]).unwrap(); // byte 8
    assert_eq!(a.flush(), 1);
    a.write_u32_release(flag_a, 1).unwrap();
    assert_eq!(b.flush(), 1);
    b.write_u32_release(flag_b, 1).unwrap();

    let mut mem = [0u8; 16];
    e.chip.peek(line, &mut mem).unwrap();
    assert_eq!((mem[0], mem[8]), (0, 0xbb), "A's byte was lost");

    assert_eq!(c.read_u32_acquire(flag_a).unwrap(), 1);
    assert_eq!(c.read_u32_acquire(flag_b).unwrap(), 1);
    let mut got = [0u8; 16];
    c.read(line, &mut got).unwrap();
    assert_eq!((got[0], got[8]), (0, 0xbb));
    let r = c.stale_reads();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].rank, r[0].addr, r[0].len, r[0].writer),
        (2, line, 1, 0)
    );
    assert_eq!(r[0].missing, Missing::LostUpdate { by: 1 });
}

/// Case 5: A writes MPBT data and sets the flag without draining its WCB: B
/// (which does invalidate) reads the old data; the report names A's drain.
#[test]
fn write_without_drain_is_stale() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let data = e.chip.layout().mpb(1);

    a.write_u64(data, 42).unwrap();
    assert_eq!(a.wcb_line(), Some(data));
    a.write_u32_release(e.flags, 1).unwrap(); // uncached: no drain happens
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    b.invalidate_mpbt();
    assert_eq!(b.read_u64(data).unwrap(), 0);
    let r = b.stale_reads();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].rank, r[0].addr, r[0].len), (1, data, 8));
    assert_eq!(r[0].missing, Missing::Drain { rank: 0 });
    assert_eq!(r[0].source, Source::Memory);
    assert!(r[0].to_string().contains("drain of rank 0"));

    // Once drained, the data is there.
    assert!(a.drain());
    b.invalidate_mpbt();
    assert_eq!(b.read_u64(data).unwrap(), 42);
    assert_eq!(b.stale_reads().len(), 1);
}

/// Case 5b: Write-back data released without a flush: the report names the
/// writer's flush; after it, the reader's own old copy needs its flush.
#[test]
fn write_back_data_without_flush_then_reader_without_flush() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let data = e.wb;
    a.read_u64(data).unwrap();
    a.write_u64(data, 9).unwrap(); // dirty in A
    a.write_u32_release(e.flags, 1).unwrap();
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 1);
    assert_eq!(b.read_u64(data).unwrap(), 0);
    assert_eq!(b.stale_reads()[0].missing, Missing::Flush { rank: 0 });

    a.flush();
    a.write_u32_release(e.flags, 2).unwrap();
    assert_eq!(b.read_u32_acquire(e.flags).unwrap(), 2);
    assert_eq!(b.read_u64(data).unwrap(), 0, "B's cached copy");
    assert_eq!(b.stale_reads()[1].missing, Missing::ReaderFlush { rank: 1 });
    b.flush();
    assert_eq!(b.read_u64(data).unwrap(), 9);
    assert_eq!(b.stale_reads().len(), 2);
}

/// An MPBT flag goes through the WCB too: RCCE's layout (data line, then
/// flag line) drains the data when the flag is written, but the flag itself
/// waits for a drain. A stale read of the flag acquires nothing.
#[test]
fn mpbt_flag_waits_in_the_wcb() {
    let e = env(2);
    let (mut a, mut b) = (core(&e, 0), core(&e, 1));
    let data = e.chip.layout().mpb(1);
    let flag = data.offset(LINE as u64);
    a.write_u64(data, 5).unwrap();
    a.write_u32_release(flag, 1).unwrap(); // other line: drains the data
    assert_eq!(a.counters().wcb_line_change_drains, 1);
    assert_eq!(peek_u64(&e, data), 5);
    b.invalidate_mpbt();
    assert_eq!(
        b.read_u32_acquire(flag).unwrap(),
        0,
        "flag still in A's WCB"
    );
    a.drain();
    assert_eq!(b.read_u32_acquire(flag).unwrap(), 0, "B's cached flag line");
    b.invalidate_mpbt();
    assert_eq!(b.read_u32_acquire(flag).unwrap(), 1);
    assert_eq!(b.read_u64(data).unwrap(), 5);
    assert!(b.stale_reads().is_empty(), "{:?}", b.stale_reads());
}
