//! A QP's inbound packet ring in POSIX shared memory: single producer
//! (the one remote QP it is connected to: RC is one to one), single
//! consumer (the owning device's engine).
//!
//! Layout: a control block ([`Ctrl`]: magic, a 'dead' flag, the
//! producer's `tail` and the consumer's `head`, each on its own cache
//! lines) in the first page, then [`SLOTS`] slots of a 64-byte header
//! and up to [`MAX_PAYLOAD`] bytes. `tail` and `head` count slots since
//! creation; slot `i` is at `i % SLOTS`. A full ring is back-pressure:
//! the sender keeps the packet.
//!
//! The protocol lives in [`Spsc`], a view over any control block and
//! slots, so the loom model (`--cfg loom`) checks it on the heap.

use super::packet::{PktHdr, HDR_BYTES};
use crate::verbs::{VerbsError, VerbsResult};
use rgex_core::sync::{fence, AtomicU64, Ordering, Slot};
use rgex_smp::ring::Padded;
use rgex_smp::shm::{self, ShmMap};
use std::ptr::NonNull;

/// Slots per ring.
pub(crate) const SLOTS: u64 = 64;
/// Largest payload of one packet (the largest MTU).
pub(crate) const MAX_PAYLOAD: usize = 4096;
const SLOT_BYTES: usize = HDR_BYTES + MAX_PAYLOAD;
const CTRL_BYTES: usize = 4096;
/// Bytes of one ring object.
pub(crate) const RING_BYTES: usize = CTRL_BYTES + SLOTS as usize * SLOT_BYTES;

const MAGIC: u64 = 0x7267_7853_5249_4e47; // "rgxSRING"

/// A ring's control block. All zero bytes is its initial state (as
/// `ftruncate` leaves a new object).
#[repr(C)]
pub(crate) struct Ctrl {
    magic: Padded<AtomicU64>,
    dead: Padded<AtomicU64>,
    /// Non-zero while the owner's progress thread sleeps on its wake
    /// socket: the producer that finds it set after a push clears it and
    /// rings the owner (see the `wait` module).
    asleep: Padded<AtomicU64>,
    tail: Padded<AtomicU64>,
    head: Padded<AtomicU64>,
    /// One access marker per slot: zero-sized normally; under loom they
    /// let the model checker see the slot copies and find data races.
    marks: [Slot<()>; SLOTS as usize],
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Ctrl>() <= CTRL_BYTES);

impl Ctrl {
    /// A fresh block (heap use: the loom model).
    #[cfg(loom)]
    pub fn new() -> Self {
        Ctrl {
            magic: Padded(AtomicU64::new(0)),
            dead: Padded(AtomicU64::new(0)),
            asleep: Padded(AtomicU64::new(0)),
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            marks: std::array::from_fn(|_| Slot::new(())),
        }
    }
}

/// The ring protocol over a control block and `nslots` slots.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spsc {
    ctrl: NonNull<Ctrl>,
    slots: NonNull<u8>,
    nslots: u64,
}

// SAFETY: a view of memory shared by design; every access follows the
// single-producer single-consumer protocol argued at each ordering.
unsafe impl Send for Spsc {}
// SAFETY: as above.
unsafe impl Sync for Spsc {}

impl Spsc {
    /// View the ring at `ctrl` with `nslots` slots at `slots`.
    ///
    /// # Safety
    /// `ctrl` and `slots .. + nslots * SLOT_BYTES` are valid, 64-aligned,
    /// and outlive the view; `1 <= nslots <= SLOTS`; at most one producer
    /// and one consumer use the ring at a time.
    pub unsafe fn from_raw(ctrl: NonNull<Ctrl>, slots: NonNull<u8>, nslots: u64) -> Spsc {
        assert!((1..=SLOTS).contains(&nslots));
        Spsc {
            ctrl,
            slots,
            nslots,
        }
    }

    fn ctrl(&self) -> &Ctrl {
        // SAFETY: valid for the view's lifetime (from_raw's contract).
        unsafe { self.ctrl.as_ref() }
    }

    fn slot(&self, i: u64) -> (*mut u8, &Slot<()>) {
        let k = i % self.nslots;
        // SAFETY: k < nslots, and the slots span nslots * SLOT_BYTES bytes.
        let p = unsafe { self.slots.as_ptr().add(k as usize * SLOT_BYTES) };
        (p, &self.ctrl().marks[k as usize])
    }

    /// Producer: whether one more packet fits.
    pub fn has_room(&self) -> bool {
        // As in push: Relaxed for our own tail, Acquire for the consumer's head.
        let tail = self.ctrl().tail.0.load(Ordering::Relaxed);
        tail.wrapping_sub(self.ctrl().head.0.load(Ordering::Acquire)) < self.nslots
    }

    /// Producer: whether the consumer has taken every packet written.
    pub fn drained(&self) -> bool {
        // Relaxed for tail: only this producer writes it; Acquire for
        // head: the answer is no older than the consumer's last release.
        self.ctrl().head.0.load(Ordering::Acquire) == self.ctrl().tail.0.load(Ordering::Relaxed)
    }

    /// Producer: write one packet; `false` if the ring is full.
    pub fn push(&self, hdr: &PktHdr, payload: &[u8]) -> bool {
        // Relaxed: this producer is tail's only writer, so it reads its own
        // last store.
        let tail = self.ctrl().tail.0.load(Ordering::Relaxed);
        // Acquire: pairs with the consumer's Release of head, so its reads
        // of the slot we are about to overwrite happened before our writes.
        let head = self.ctrl().head.0.load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= self.nslots {
            return false;
        }
        let (s, mark) = self.slot(tail);
        let n = payload.len().min(MAX_PAYLOAD);
        mark.with_mut(|_| {
            // SAFETY: slot `tail` is ours until tail is published (the
            // consumer reads only slots below tail, and released this one:
            // head > tail - nslots); the slot holds HDR_BYTES + MAX_PAYLOAD
            // bytes and starts 64-aligned.
            unsafe {
                s.cast::<PktHdr>().write(*hdr);
                std::ptr::copy_nonoverlapping(payload.as_ptr(), s.add(HDR_BYTES), n);
            }
        });
        // Release: publishes the slot's header and payload to the consumer's
        // Acquire load of tail.
        self.ctrl()
            .tail
            .0
            .store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Consumer: take one packet, copying its payload into `buf`;
    /// `None` if the ring is empty.
    pub fn pop(&self, buf: &mut Vec<u8>) -> Option<PktHdr> {
        // Relaxed: the consumer is head's only writer.
        let head = self.ctrl().head.0.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release of tail, making the
        // slot's contents visible.
        let tail = self.ctrl().tail.0.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let (s, mark) = self.slot(head);
        let hdr = mark.with(|_| {
            // SAFETY: slot `head` was published (head < tail) and the
            // producer does not write it until we release head; PktHdr is
            // plain integers and the slot start is 64-aligned.
            let hdr = unsafe { s.cast::<PktHdr>().read() };
            let n = (hdr.len as usize).min(MAX_PAYLOAD);
            buf.clear();
            // SAFETY: as above; n <= MAX_PAYLOAD bytes follow the header.
            buf.extend_from_slice(unsafe { std::slice::from_raw_parts(s.add(HDR_BYTES), n) });
            hdr
        });
        // Release: our reads of the slot happen before the producer's
        // Acquire load of head lets it overwrite the slot.
        self.ctrl()
            .head
            .0
            .store(head.wrapping_add(1), Ordering::Release);
        Some(hdr)
    }
}

/// One mapping of a ring object (the owner's, or the producer's).
#[derive(Debug)]
pub(crate) struct Ring {
    _map: ShmMap,
    view: Spsc,
}

fn shm_err(verb: &'static str, e: rgex_core::Error) -> VerbsError {
    VerbsError::call(verb, libc::EIO, e.to_string())
}

impl Ring {
    fn map(map: ShmMap) -> Ring {
        let base = map.base();
        // SAFETY: the mapping is page-aligned and RING_BYTES long: the
        // control block (all zero bytes is valid) fills the first
        // CTRL_BYTES, SLOTS slots follow; the map lives in the Ring with
        // the view.
        let view = unsafe {
            Spsc::from_raw(
                base.cast::<Ctrl>(),
                NonNull::new_unchecked(base.as_ptr().add(CTRL_BYTES)),
                SLOTS,
            )
        };
        Ring { _map: map, view }
    }

    /// Create the ring `name` (replacing a stale one of that name).
    pub fn create(name: &str) -> VerbsResult<Ring> {
        // A leftover of a reset QP or a dead process of the same pid.
        let _ = shm::unlink(name);
        let map = ShmMap::create(name, RING_BYTES).map_err(|e| shm_err("ibv_create_qp", e))?;
        let r = Ring::map(map);
        // Release: an opener that reads the magic with Acquire sees the
        // zeroed control words (ftruncate zeroes; this orders our view).
        r.view.ctrl().magic.0.store(MAGIC, Ordering::Release);
        Ok(r)
    }

    /// Map the existing ring `name` as its producer, then remove the
    /// name: the two mappings keep the object alive, and nothing is left
    /// in `/dev/shm` if either process crashes.
    pub fn open(name: &str) -> VerbsResult<Ring> {
        let map = ShmMap::open(name, RING_BYTES).map_err(|e| shm_err("ibv_modify_qp", e))?;
        let _ = shm::unlink(name);
        let r = Ring::map(map);
        // Acquire: pairs with create's Release store.
        if r.view.ctrl().magic.0.load(Ordering::Acquire) != MAGIC {
            return Err(VerbsError::call(
                "ibv_modify_qp",
                libc::EINVAL,
                format!("{name} is not a soft-verbs ring"),
            ));
        }
        Ok(r)
    }

    /// Mark the owner dead (its QP destroyed or reset, or its device
    /// killed): the producer stops waiting for it to consume.
    pub fn set_dead(&self) {
        // Relaxed: the flag publishes no data; a producer that sees it late
        // only waits one more timer tick.
        self.view.ctrl().dead.0.store(1, Ordering::Relaxed);
    }

    /// Whether the owner is dead.
    pub fn is_dead(&self) -> bool {
        // Relaxed: see set_dead.
        self.view.ctrl().dead.0.load(Ordering::Relaxed) != 0
    }

    /// Owner: declare itself asleep (`true`; the caller then fences and
    /// looks at the ring again) or awake. See the `wait` module.
    pub fn set_asleep(&self, on: bool) {
        // Relaxed: the owner's SeqCst fence after arming orders this
        // store before its next look at `tail` (the `wait` module).
        self.view
            .ctrl()
            .asleep
            .0
            .store(u64::from(on), Ordering::Relaxed);
    }

    /// Producer, after a push: whether the owner was asleep, clearing
    /// the flag (one producer rings per sleep). See the `wait` module.
    pub fn take_asleep(&self) -> bool {
        // SeqCst: between our store of `tail` in the push and our load
        // of the flag, paired with the owner's fence between its store
        // of the flag and its load of `tail`: one of the two sees the
        // other's store (the `wait` module).
        fence(Ordering::SeqCst);
        let flag = &self.view.ctrl().asleep.0;
        // Relaxed: ordered by the fence above; the swap only keeps a
        // second producer from ringing too.
        flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::Relaxed) != 0
    }

    /// See [`Spsc::drained`].
    pub fn drained(&self) -> bool {
        self.view.drained()
    }

    /// See [`Spsc::has_room`].
    pub fn has_room(&self) -> bool {
        self.view.has_room()
    }

    /// See [`Spsc::push`].
    pub fn push(&self, hdr: &PktHdr, payload: &[u8]) -> bool {
        self.view.push(hdr, payload)
    }

    /// See [`Spsc::pop`].
    pub fn pop(&self, buf: &mut Vec<u8>) -> Option<PktHdr> {
        self.view.pop(buf)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn name(tag: &str) -> String {
        format!("/rgex-ibv-soft-ringtest-{}-{tag}", std::process::id())
    }

    #[test]
    fn fifo_with_back_pressure_and_no_name_left() {
        let n = name("fifo");
        let owner = Ring::create(&n).unwrap();
        let prod = Ring::open(&n).unwrap();
        assert!(Ring::open(&n).is_err(), "the name is removed once mapped");
        let mut h = PktHdr::default();
        for i in 0..SLOTS {
            h.psn = i as u32;
            h.len = 3;
            assert!(prod.has_room());
            assert!(prod.push(&h, &[i as u8; 3]));
        }
        assert!(!prod.has_room());
        assert!(!prod.push(&h, &[0; 3]), "a full ring refuses");
        assert!(!prod.drained());
        let mut buf = Vec::new();
        for i in 0..SLOTS {
            let h = owner.pop(&mut buf).unwrap();
            assert_eq!(h.psn, i as u32);
            assert_eq!(buf, [i as u8; 3]);
        }
        assert!(owner.pop(&mut buf).is_none());
        assert!(prod.drained());
        assert!(!prod.is_dead());
        owner.set_dead();
        assert!(prod.is_dead());
    }

    #[test]
    fn threads_pass_every_packet_in_order() {
        let n = name("threads");
        let owner = Ring::create(&n).unwrap();
        let prod = Ring::open(&n).unwrap();
        const N: u32 = 5000;
        let t = std::thread::spawn(move || {
            let mut h = PktHdr::default();
            let mut i = 0;
            while i < N {
                h.psn = i;
                h.len = 8;
                if prod.push(&h, &u64::from(i).to_le_bytes()) {
                    i += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        });
        let mut next = 0;
        let mut buf = Vec::new();
        // Bounded: the producer yields at most once per empty poll here.
        for _ in 0..100_000_000u64 {
            if next == N {
                break;
            }
            match owner.pop(&mut buf) {
                Some(h) => {
                    assert_eq!(h.psn, next);
                    assert_eq!(buf, u64::from(next).to_le_bytes());
                    next += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        assert_eq!(next, N, "every packet arrived");
        t.join().unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    struct Heap {
        _ctrl: Box<Ctrl>,
        _slots: Vec<u64>,
        ring: Spsc,
    }

    // SAFETY (for the test's Arc<Heap> crossing threads): Heap owns the
    // allocations its view points into, and Spsc is Send + Sync.
    unsafe impl Send for Heap {}
    // SAFETY: as above.
    unsafe impl Sync for Heap {}

    fn heap_ring(nslots: u64) -> Arc<Heap> {
        let ctrl = Box::new(Ctrl::new());
        // u64s: 8-aligned; SLOT_BYTES is a multiple of 64, and packet
        // headers need only 8-byte alignment.
        let mut slots = vec![0u64; nslots as usize * SLOT_BYTES / 8];
        // SAFETY: both allocations live in the Heap with the view.
        let ring = unsafe {
            Spsc::from_raw(
                NonNull::from(&*ctrl),
                NonNull::new(slots.as_mut_ptr().cast()).unwrap(),
                nslots,
            )
        };
        Arc::new(Heap {
            _ctrl: ctrl,
            _slots: slots,
            ring,
        })
    }

    /// A producer pushes three packets through a ring of two slots (so a
    /// slot is reused) while the consumer pops: every packet arrives once,
    /// in order, intact, and loom finds no race on the slot copies.
    #[test]
    fn spsc_reuses_slots_without_races() {
        loom::model(|| {
            let h = heap_ring(2);
            let p = h.clone();
            let prod = loom::thread::spawn(move || {
                for i in 0..3u32 {
                    let hdr = PktHdr {
                        psn: i,
                        len: 4,
                        ..PktHdr::default()
                    };
                    while !p.ring.push(&hdr, &i.to_le_bytes()) {
                        loom::thread::yield_now();
                    }
                }
            });
            let mut buf = Vec::new();
            for i in 0..3u32 {
                let hdr = loop {
                    match h.ring.pop(&mut buf) {
                        Some(hdr) => break hdr,
                        None => loom::thread::yield_now(),
                    }
                };
                assert_eq!(hdr.psn, i);
                assert_eq!(buf, i.to_le_bytes());
            }
            prod.join().unwrap();
            assert!(h.ring.drained());
        });
    }
}
