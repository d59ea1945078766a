//! A bounded lock-free ring of message cells in shared memory: many
//! producers (any rank, any thread), many consumers (the threads of the one
//! receiving rank).
//!
//! It is Dmitry Vyukov's bounded MPMC queue, split in two phases on each
//! side so the payload can be written and read in place:
//! producer `try_claim` / `publish`, consumer `try_take` / `release`.
//! Each cell carries a sequence number that says whose turn it is:
//!
//! | `seq` of the cell at position `pos` | meaning |
//! |---|---|
//! | `pos` | free: the producer that claims `pos` may write it |
//! | `pos + 1` | published: the consumer that takes `pos` may read it |
//! | `pos + depth` | released: free again for position `pos + depth` |
//!
//! `tail` hands out positions to producers and `head` to consumers; both
//! are only ever compared against the cell's `seq`, so the counters may run
//! with relaxed ordering while the `seq` stores and loads carry the
//! release/acquire edges that order the cell contents.

use rgex_core::cell::{Cell, Header, CLOSED};
use rgex_core::sync::{fence, AtomicU64, Ordering, Slot};
use std::ptr::NonNull;

/// The flag of `tail` that says the receiver is asleep (see
/// [`bell`](crate::bell)): set by [`Ring::arm_sleep`] on an empty ring,
/// cleared by the next claim. Positions never reach it (2^63).
const ASLEEP: u64 = 1 << 63;

/// A producer's claim: the position, and whether the claim found the
/// receiver asleep (then the producer must ring its bell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// The claimed position.
    pub pos: u64,
    /// The receiver had armed its sleep: ring its bell.
    pub woke: bool,
}

/// Keeps a value alone on its cache lines (128 bytes: two lines, since
/// adjacent-line prefetch pairs them on x86).
#[repr(C, align(128))]
pub struct Padded<T>(pub T);

/// Position counters of one ring.
#[repr(C)]
pub struct RingHeader {
    tail: Padded<AtomicU64>,
    head: Padded<AtomicU64>,
}

impl RingHeader {
    /// A header for a fresh ring (heap use: tests).
    pub fn new() -> Self {
        RingHeader {
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
        }
    }
}

impl Default for RingHeader {
    fn default() -> Self {
        Self::new()
    }
}

/// A view of a ring living in (possibly shared) memory.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    hdr: NonNull<RingHeader>,
    cells: NonNull<Cell>,
    depth: u64,
}

// SAFETY: a Ring is a set of pointers into memory shared by design; every
// access to it follows the protocol described in the module documentation.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    /// View the ring at `hdr` with `depth` cells at `cells`.
    ///
    /// # Safety
    /// `hdr` and `cells..cells+depth` must be valid, suitably aligned, and
    /// outlive every use of the returned value; `depth` must be a power of
    /// two and at least 2. Every party must use the same `depth`.
    ///
    /// Why at least 2: with one cell, "published at `pos`" (`pos + 1`) and
    /// "free for `pos + 1`" (also `pos + 1`) are the same number, so a
    /// producer could overwrite a message the consumer is still reading.
    /// (loom found this.)
    pub unsafe fn from_raw(hdr: NonNull<RingHeader>, cells: NonNull<Cell>, depth: u64) -> Ring {
        assert!(
            depth.is_power_of_two() && depth >= 2,
            "ring depth {depth} must be a power of two >= 2"
        );
        Ring { hdr, cells, depth }
    }

    /// Set every cell free. Only the creator calls this, before any other
    /// party sees the ring (the bootstrap barrier that follows publishes it).
    pub fn init(&self) {
        for i in 0..self.depth {
            // Relaxed: nobody else looks at the ring until after a barrier
            // through the bootstrap socket, which orders these stores.
            self.cell(i).seq.store(i, Ordering::Relaxed);
        }
        self.hdr().tail.0.store(0, Ordering::Relaxed);
        self.hdr().head.0.store(0, Ordering::Relaxed);
    }

    /// Cells in the ring.
    pub fn depth(&self) -> u64 {
        self.depth
    }

    /// Which cell (0..depth) position `pos` uses.
    #[inline]
    pub fn index(&self, pos: u64) -> usize {
        (pos & (self.depth - 1)) as usize
    }

    #[inline]
    fn hdr(&self) -> &RingHeader {
        // SAFETY: valid for the ring's lifetime (from_raw's contract).
        unsafe { self.hdr.as_ref() }
    }

    #[inline]
    fn cell(&self, pos: u64) -> &Cell {
        // SAFETY: index() < depth, and cells..cells+depth is valid (from_raw).
        unsafe { &*self.cells.as_ptr().add(self.index(pos)) }
    }

    /// The fixed part of the message at `pos`. Only the party that holds
    /// `pos` (claimed and not published, or taken and not released) may
    /// access it.
    #[inline]
    pub fn body(&self, pos: u64) -> &Slot<Header> {
        &self.cell(pos).body
    }

    /// Producer: claim the next free position, or `None` if the ring is full.
    /// The claim says whether it found the receiver asleep (see
    /// [`bell`](crate::bell)): that producer must ring the receiver's bell.
    #[inline]
    pub fn try_claim(&self) -> Option<Claimed> {
        let tail = &self.hdr().tail.0;
        // Relaxed: the value is only a guess checked against the cell's
        // seq (and, for `ASLEEP`, replaced by the CAS's own read below).
        let mut raw = tail.load(Ordering::Relaxed);
        loop {
            let pos = raw & !ASLEEP;
            // Acquire: pairs with the consumer's Release in `release`, so
            // its reads of the cell (and of the payload buffer it indexes)
            // happen before we overwrite them.
            let seq = self.cell(pos).seq.load(Ordering::Acquire);
            let lag = seq.wrapping_sub(pos) as i64;
            if lag == 0 {
                // Relaxed: winning the CAS only decides which party owns
                // `pos`; the data edges are carried by `seq`. Moving on
                // from a value with `ASLEEP` clears it in the same step.
                match tail.compare_exchange_weak(raw, pos + 1, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        let woke = raw & ASLEEP != 0;
                        if woke {
                            // Acquire: our CAS read the value the
                            // sleeper's Release CAS in `arm_sleep` wrote,
                            // so its read of the bell happens before our
                            // ring (see `bell`). Only on this cold path.
                            fence(Ordering::Acquire);
                        }
                        return Some(Claimed { pos, woke });
                    }
                    Err(now) => raw = now,
                }
            } else if lag < 0 {
                // The cell is a lap behind: the ring is full (or closed).
                return None;
            } else {
                // Another producer took `pos`; start again from the counter.
                raw = tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Receiver (its progress thread): declare this ring's receiver asleep,
    /// if every message claimed in it was taken (nothing published, none
    /// in assembly). True if armed: the next producer's claim clears the
    /// flag and rings the bell (see [`bell`](crate::bell)); false if a
    /// message was claimed meanwhile, or another thread armed it.
    pub fn arm_sleep(&self) -> bool {
        // Relaxed: a stale `head` makes the CAS below fail (tail is past
        // it), it never makes it succeed on a ring with messages: the CAS
        // reads the latest `tail`, and a consumer can only have taken
        // positions that were claimed, i.e. below it. So success means
        // head == tail == h then: every claimed message was taken.
        let h = self.hdr().head.0.load(Ordering::Relaxed);
        // Release: the sleeper's read of the bell (before this) happens
        // before the ring of the producer whose claim reads this value
        // (it fences with Acquire). Relaxed on failure: nothing is read.
        self.hdr()
            .tail
            .0
            .compare_exchange(h, h | ASLEEP, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// Receiver: take back [`arm_sleep`](Self::arm_sleep), if no producer
    /// cleared it meanwhile (one that did rings the bell: harmless, the
    /// next sleep compares against the new word).
    pub fn disarm_sleep(&self) {
        let tail = &self.hdr().tail.0;
        // Relaxed, both: only the flag changes; a failed CAS means a
        // producer moved `tail` on, which cleared it.
        let raw = tail.load(Ordering::Relaxed);
        if raw & ASLEEP != 0 {
            let _ = tail.compare_exchange(raw, raw & !ASLEEP, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// True if the receiver armed this ring for a sleep
    /// ([`arm_sleep`](Self::arm_sleep)) and no claim or disarm took it back
    /// since: what a writer into the receiver's segment looks at to decide
    /// whether to ring its bell (`Conduit::wake_peer`).
    #[inline]
    pub fn is_asleep(&self) -> bool {
        // Relaxed: the caller orders this load after its own update with
        // a SeqCst fence, and the sleeper its arming CAS before its
        // re-read of the updated memory with another (see `wake_peer`).
        self.hdr().tail.0.load(Ordering::Relaxed) & ASLEEP != 0
    }

    /// Producer: the ticket of the claim of `pos` (claimed by us): the
    /// cell's address, from which a [`Doorbell`](rgex_core::cell::Doorbell)
    /// publishes it (turn word `pos` to `pos + 1`, what
    /// [`publish`](Self::publish) does), so the AM layer can publish it
    /// without a call into the conduit.
    #[inline]
    pub fn ticket(&self, pos: u64) -> u64 {
        self.cell(pos) as *const Cell as u64
    }

    /// Producer: make the message at `pos` (claimed by us) visible.
    #[inline]
    pub fn publish(&self, pos: u64) {
        // Release: the cell body and payload written since try_claim become
        // visible to the consumer whose Acquire load sees pos + 1.
        self.cell(pos).seq.store(pos + 1, Ordering::Release);
    }

    /// Consumer: take the next published position, or `None` if the next
    /// message has not been published yet (ring empty, or its producer is
    /// still assembling it).
    #[inline]
    pub fn try_take(&self) -> Option<u64> {
        let counter = &self.hdr().head.0;
        // Relaxed: the value is only a guess checked against the cell's seq.
        let mut pos = counter.load(Ordering::Relaxed);
        loop {
            // Acquire: pairs with `publish`, so the producer's writes are
            // visible. A cell holds the message of `pos` when its seq is
            // `pos + 1`.
            let seq = self.cell(pos).seq.load(Ordering::Acquire);
            let lag = seq.wrapping_sub(pos + 1) as i64;
            if lag == 0 {
                // Relaxed: winning the CAS only decides which party owns
                // `pos`; the data edges are carried by `seq`.
                match counter.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(pos),
                    Err(now) => pos = now,
                }
            } else if lag < 0 {
                // The cell is a lap behind: nothing for us yet.
                return None;
            } else {
                // Another consumer took `pos`; start again from the counter.
                pos = counter.load(Ordering::Relaxed);
            }
        }
    }

    /// Consumer: a cheap look at whether the next message is published (a
    /// snapshot for pollers, which skip an empty ring without the take
    /// path; [`try_take`](Self::try_take) decides).
    #[inline]
    pub fn has_message(&self) -> bool {
        // Relaxed, both: nothing is read on the strength of this answer;
        // try_take loads the seq again with Acquire before the cell is read.
        let pos = self.hdr().head.0.load(Ordering::Relaxed);
        self.cell(pos).seq.load(Ordering::Relaxed) == pos + 1
    }

    /// Consumer that is this ring's only one for the call (smp's drain
    /// holds the ring's turn, see `SmpConduit::drain`): take the next
    /// published position, or `None`. As [`try_take`](Self::try_take)
    /// without its compare-exchange: nobody else moves `head` meanwhile,
    /// so a plain store moves it on.
    ///
    /// # Safety
    /// No other thread may take from this ring (through this or
    /// [`try_take`](Self::try_take)) until the caller stops: each would
    /// take the same position.
    #[inline(always)]
    pub unsafe fn take_sole(&self) -> Option<u64> {
        let head = &self.hdr().head.0;
        // Relaxed: only sole consumers store `head`, and the previous one
        // handed over through the turn's Release/Acquire pair, so this
        // reads the last value stored.
        let pos = head.load(Ordering::Relaxed);
        // Acquire: pairs with `publish`, so the producer's writes to the
        // cell and its payload are visible.
        if self.cell(pos).seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        // Relaxed: `head` is a position counter, nothing is published
        // through it (the cell's `seq` carries the data edges); the next
        // consumer reads it after the turn's hand-over.
        head.store(pos + 1, Ordering::Relaxed);
        Some(pos)
    }

    /// Consumer: hand the cell at `pos` (taken by us) back to producers.
    #[inline]
    pub fn release(&self, pos: u64) {
        // Release: our reads of the body and payload happen before the next
        // producer's writes (it loads seq with Acquire in try_claim).
        self.cell(pos)
            .seq
            .store(pos + self.depth, Ordering::Release);
    }

    /// Close the ring for good: its owner has left the job. Every cell
    /// takes a turn number no position reaches, so every later claim is
    /// refused as if the ring were full (a sender then asks why: see
    /// `liveness`) and every take finds nothing. A producer that claimed a
    /// cell before may still publish it, reopening that one cell for one
    /// message nobody reads: closing stops senders, it does not deliver.
    pub fn close(&self) {
        for i in 0..self.depth {
            // Release: a producer whose Acquire load of `seq` (in
            // `try_claim`) sees the closed mark also sees whatever the
            // closing party stored before closing: the departure word that
            // says why.
            self.cell(i).seq.store(CLOSED, Ordering::Release);
        }
    }

    /// True if no published or in-assembly message is waiting (a snapshot).
    pub fn is_idle(&self) -> bool {
        self.hdr().head.0.load(Ordering::Relaxed)
            == self.hdr().tail.0.load(Ordering::Relaxed) & !ASLEEP
    }
}

/// Test helpers: write and read a message's `len` field at a held position.
#[cfg(test)]
fn write_len(ring: &Ring, pos: u64, v: u32) {
    // SAFETY: callers hold `pos` (claimed, not yet published).
    ring.body(pos).with_mut(|b| unsafe { (*b).len = v });
}

#[cfg(test)]
fn read_len(ring: &Ring, pos: u64) -> u32 {
    // SAFETY: callers hold `pos` (taken, not yet released).
    ring.body(pos).with(|b| unsafe { (*b).len })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A ring on the heap. The header is held in a `Vec`, not a `Box`:
    /// moving a `Box` out of this function would assert unique access to
    /// the header and invalidate the ring's pointer to it (Miri's stacked
    /// borrows reports that); a `Vec`'s buffer is not retagged on a move.
    fn heap_ring(depth: u64) -> (Vec<RingHeader>, Vec<Cell>, Ring) {
        let mut hdr = vec![RingHeader::new()];
        let mut cells: Vec<Cell> = (0..depth).map(|_| Cell::new()).collect();
        // SAFETY: both allocations outlive the ring in every test below.
        let ring = unsafe {
            Ring::from_raw(
                NonNull::new(hdr.as_mut_ptr()).unwrap(),
                NonNull::new(cells.as_mut_ptr()).unwrap(),
                depth,
            )
        };
        ring.init();
        (hdr, cells, ring)
    }

    #[test]
    fn fills_then_reports_full_then_drains_in_order() {
        let (_h, _c, ring) = heap_ring(4);
        for i in 0..4 {
            let p = ring.try_claim().map(|c| c.pos).expect("room");
            assert_eq!(p, i);
            write_len(&ring, p, i as u32);
            ring.publish(p);
        }
        assert_eq!(
            ring.try_claim().map(|c| c.pos),
            None,
            "a full ring must refuse"
        );
        for i in 0..4 {
            let p = ring.try_take().expect("message");
            assert_eq!(read_len(&ring, p), i as u32);
            ring.release(p);
        }
        assert_eq!(ring.try_take(), None);
        assert!(ring.is_idle());
    }

    #[test]
    fn a_closed_ring_refuses_claims_and_has_nothing_to_take() {
        let (_h, _c, ring) = heap_ring(4);
        let p = ring.try_claim().map(|c| c.pos).unwrap();
        ring.publish(p);
        ring.close();
        assert_eq!(
            ring.try_claim().map(|c| c.pos),
            None,
            "closed: refused as full"
        );
        assert_eq!(ring.try_take(), None, "closed: nothing to take");
        assert!(!ring.has_message());
    }

    #[test]
    fn a_sleep_is_armed_only_on_an_empty_ring_and_the_next_claim_wakes() {
        let (_h, _c, ring) = heap_ring(4);
        assert!(ring.arm_sleep(), "an empty ring arms");
        assert!(!ring.arm_sleep(), "armed once: a second sleeper is refused");
        assert!(ring.is_idle(), "the flag alone leaves the ring idle");
        let first = ring.try_claim().expect("room");
        assert_eq!(
            first,
            Claimed { pos: 0, woke: true },
            "the claim that clears the flag rings"
        );
        assert!(!ring.arm_sleep(), "claimed, not published: no sleep");
        ring.publish(first.pos);
        assert!(!ring.arm_sleep(), "published, not taken: no sleep");
        let second = ring.try_claim().expect("room");
        assert!(!second.woke, "only one claim rings");
        ring.publish(second.pos);
        for _ in 0..2 {
            let p = ring.try_take().expect("message");
            ring.release(p);
        }
        assert!(ring.arm_sleep(), "drained: arms again");
        ring.disarm_sleep();
        let third = ring.try_claim().expect("room");
        assert_eq!(
            third,
            Claimed {
                pos: 2,
                woke: false
            },
            "disarmed: no ring"
        );
    }

    #[test]
    fn a_sole_consumer_takes_in_order_and_waits_for_the_unpublished() {
        let (_h, _c, ring) = heap_ring(4);
        // SAFETY: this thread is the ring's only consumer.
        let take = |r: &Ring| unsafe { r.take_sole() };
        assert_eq!(take(&ring), None, "empty");
        for lap in 0..3u64 {
            let a = ring.try_claim().unwrap().pos;
            let b = ring.try_claim().unwrap().pos;
            write_len(&ring, b, 2);
            ring.publish(b);
            assert_eq!(take(&ring), None, "a is not published");
            write_len(&ring, a, 1);
            ring.publish(a);
            for (want, len) in [(a, 1), (b, 2)] {
                let p = take(&ring).expect("published");
                assert_eq!((p, read_len(&ring, p)), (want, len), "lap {lap}");
                ring.release(p);
            }
            assert_eq!(take(&ring), None);
            assert!(ring.is_idle());
        }
        // The two kinds of take share the counter.
        let p = ring.try_claim().unwrap().pos;
        ring.publish(p);
        assert_eq!(ring.try_take(), Some(p));
        ring.release(p);
        assert_eq!(take(&ring), None);
        ring.close();
        assert_eq!(take(&ring), None, "closed");
    }

    #[test]
    fn unpublished_message_blocks_later_ones_until_published() {
        let (_h, _c, ring) = heap_ring(4);
        let a = ring.try_claim().map(|c| c.pos).unwrap();
        let b = ring.try_claim().map(|c| c.pos).unwrap();
        ring.publish(b);
        assert_eq!(ring.try_take(), None, "a must come first");
        ring.publish(a);
        assert_eq!(ring.try_take(), Some(a));
        assert_eq!(ring.try_take(), Some(b));
    }

    #[test]
    fn threads_lose_and_duplicate_nothing() {
        let (_h, _c, ring) = heap_ring(8);
        // Fewer under Miri, which runs this about a thousand times slower.
        const PER: u32 = if cfg!(miri) { 300 } else { 20_000 };
        let seen = std::sync::Mutex::new(vec![0u8; 4 * PER as usize]);
        std::thread::scope(|s| {
            for t in 0..4u32 {
                s.spawn(move || {
                    for i in 0..PER {
                        let p = loop {
                            if let Some(p) = ring.try_claim().map(|c| c.pos) {
                                break p;
                            }
                            std::thread::yield_now();
                        };
                        write_len(&ring, p, t * PER + i);
                        ring.publish(p);
                    }
                });
            }
            for _ in 0..2 {
                s.spawn(|| {
                    let mut got = 0;
                    let mut idle = 0u64;
                    while got < 2 * PER && idle < 50_000_000 {
                        if let Some(p) = ring.try_take() {
                            let v = read_len(&ring, p);
                            ring.release(p);
                            seen.lock().unwrap()[v as usize] += 1;
                            got += 1;
                            idle = 0;
                        } else {
                            idle += 1;
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert!(seen.into_inner().unwrap().iter().all(|&n| n == 1));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    struct Heap {
        _hdr: Box<RingHeader>,
        _cells: Vec<Cell>,
        ring: Ring,
    }

    fn heap_ring(depth: u64) -> Arc<Heap> {
        let hdr = Box::new(RingHeader::new());
        let mut cells: Vec<Cell> = (0..depth).map(|_| Cell::new()).collect();
        // SAFETY: the allocations live in the same Heap as the ring view.
        let ring = unsafe {
            Ring::from_raw(
                NonNull::from(&*hdr),
                NonNull::new(cells.as_mut_ptr()).unwrap(),
                depth,
            )
        };
        ring.init();
        Arc::new(Heap {
            _hdr: hdr,
            _cells: cells,
            ring,
        })
    }

    // SAFETY (for the test's Arc<Heap> crossing threads): Heap owns its
    // allocations and Ring is Send + Sync.
    unsafe impl Send for Heap {}
    // SAFETY: as above.
    unsafe impl Sync for Heap {}

    /// Two producers race for a ring of two cells with one consumer taking:
    /// every value arrives once, intact (loom checks the body accesses for
    /// data races through the `Slot` cells).
    #[test]
    fn two_producers_one_consumer() {
        loom::model(|| {
            let h = heap_ring(2);
            let prods: Vec<_> = (1..=2u32)
                .map(|v| {
                    let h = h.clone();
                    loom::thread::spawn(move || loop {
                        if let Some(p) = h.ring.try_claim().map(|c| c.pos) {
                            write_len(&h.ring, p, v);
                            h.ring.publish(p);
                            break;
                        }
                        loom::thread::yield_now();
                    })
                })
                .collect();
            let mut sum = 0;
            let mut got = 0;
            while got < 2 {
                if let Some(p) = h.ring.try_take() {
                    sum += read_len(&h.ring, p);
                    h.ring.release(p);
                    got += 1;
                } else {
                    loom::thread::yield_now();
                }
            }
            for p in prods {
                p.join().unwrap();
            }
            assert_eq!(sum, 3);
        });
    }

    /// A producer wraps around a two-cell ring while the consumer releases:
    /// the reuse of a cell cannot race with the read of its last message.
    #[test]
    fn wraparound_orders_reuse_after_release() {
        loom::model(|| {
            let h = heap_ring(2);
            let hp = h.clone();
            let prod = loom::thread::spawn(move || {
                for v in [10u32, 20, 30] {
                    loop {
                        if let Some(p) = hp.ring.try_claim().map(|c| c.pos) {
                            write_len(&hp.ring, p, v);
                            hp.ring.publish(p);
                            break;
                        }
                        loom::thread::yield_now();
                    }
                }
            });
            let mut seen = Vec::new();
            while seen.len() < 3 {
                if let Some(p) = h.ring.try_take() {
                    seen.push(read_len(&h.ring, p));
                    h.ring.release(p);
                } else {
                    loom::thread::yield_now();
                }
            }
            prod.join().unwrap();
            assert_eq!(seen, vec![10, 20, 30]);
        });
    }

    /// The sleep handshake (see `bell`): a receiver arms its ring and
    /// sleeps on the bell (the model's futex has no timeout) while a
    /// producer claims, rings if its claim found the receiver asleep, and
    /// publishes. In every interleaving the receiver wakes and gets the
    /// message: a lost wakeup would be a deadlock, which loom reports.
    #[test]
    fn a_sleeping_receiver_always_wakes_for_a_message() {
        loom::model(|| {
            let h = heap_ring(2);
            let bell = Arc::new(crate::bell::Bell::new());
            let (hp, bp) = (h.clone(), bell.clone());
            let prod = loom::thread::spawn(move || {
                let c = hp.ring.try_claim().expect("an empty ring has room");
                if c.woke {
                    bp.ring();
                }
                write_len(&hp.ring, c.pos, 7);
                hp.ring.publish(c.pos);
            });
            let got = loop {
                if let Some(p) = h.ring.try_take() {
                    let v = read_len(&h.ring, p);
                    h.ring.release(p);
                    break v;
                }
                let seen = bell.load();
                if h.ring.arm_sleep() {
                    bell.wait(seen, std::time::Duration::ZERO);
                    h.ring.disarm_sleep();
                } else {
                    loom::thread::yield_now();
                }
            };
            prod.join().unwrap();
            assert_eq!(got, 7);
        });
    }

    /// Two consumer threads that take with `take_sole` while holding a
    /// turn flag (smp's drain: Acquire to take it, Release to give it
    /// back), one producer: each message is taken exactly once, intact,
    /// and the plain store of `head` reaches the next turn's holder.
    #[test]
    fn sole_consumers_handing_over_a_turn() {
        use loom::sync::atomic::AtomicBool;
        loom::model(|| {
            let h = heap_ring(2);
            let turn = Arc::new(AtomicBool::new(false));
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let (h, turn) = (h.clone(), turn.clone());
                    loom::thread::spawn(move || {
                        if turn
                            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                            .is_err()
                        {
                            return 0;
                        }
                        let mut got = 0;
                        // SAFETY: the turn makes this thread the only consumer.
                        while let Some(p) = unsafe { h.ring.take_sole() } {
                            got += read_len(&h.ring, p);
                            h.ring.release(p);
                        }
                        turn.store(false, Ordering::Release);
                        got
                    })
                })
                .collect();
            for v in [1u32, 2] {
                loop {
                    if let Some(p) = h.ring.try_claim().map(|c| c.pos) {
                        write_len(&h.ring, p, v);
                        h.ring.publish(p);
                        break;
                    }
                    loom::thread::yield_now();
                }
            }
            let taken: u32 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
            let mut rest = 0;
            // SAFETY: the consumers have finished: this thread is the only one.
            while let Some(p) = unsafe { h.ring.take_sole() } {
                rest += read_len(&h.ring, p);
                h.ring.release(p);
            }
            assert_eq!(taken + rest, 3);
        });
    }

    /// One producer, two consumer threads (a rank polled by two threads):
    /// each message is taken by exactly one of them.
    #[test]
    fn one_producer_two_consumers() {
        loom::model(|| {
            let h = heap_ring(2);
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let h = h.clone();
                    loom::thread::spawn(move || match h.ring.try_take() {
                        Some(p) => {
                            let v = read_len(&h.ring, p);
                            h.ring.release(p);
                            v
                        }
                        None => 0,
                    })
                })
                .collect();
            for v in [1u32, 2] {
                loop {
                    if let Some(p) = h.ring.try_claim().map(|c| c.pos) {
                        write_len(&h.ring, p, v);
                        h.ring.publish(p);
                        break;
                    }
                    loom::thread::yield_now();
                }
            }
            let taken: u32 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
            // Whatever the consumers did not take is still there, once.
            let mut rest = 0;
            while let Some(p) = h.ring.try_take() {
                rest += read_len(&h.ring, p);
                h.ring.release(p);
            }
            assert_eq!(taken + rest, 3);
        });
    }
}
