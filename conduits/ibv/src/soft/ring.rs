//! A QP's inbound packet ring in POSIX shared memory: single producer
//! (the one remote QP it is connected to: RC is one to one), single
//! consumer (the owning device's engine).
//!
//! Layout: a control page (magic, a 'dead' flag, the producer's `tail`
//! and the consumer's `head`, each on its own cache line), then
//! [`SLOTS`] slots of a 64-byte header and up to [`MAX_PAYLOAD`] bytes.
//! `tail` and `head` count slots since creation; slot `i` is at `i %
//! SLOTS`. A full ring is back-pressure: the sender keeps the packet.

use super::packet::{PktHdr, HDR_BYTES};
use crate::verbs::{VerbsError, VerbsResult};
use rgex_smp::shm::{self, ShmMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots per ring.
pub(crate) const SLOTS: u64 = 64;
/// Largest payload of one packet (the largest MTU).
pub(crate) const MAX_PAYLOAD: usize = 4096;
const SLOT_BYTES: usize = HDR_BYTES + MAX_PAYLOAD;
const CTRL_BYTES: usize = 4096;
/// Bytes of one ring object.
pub(crate) const RING_BYTES: usize = CTRL_BYTES + SLOTS as usize * SLOT_BYTES;

const MAGIC: u64 = 0x7267_7853_5249_4e47; // "rgxSRING"
const OFF_MAGIC: usize = 0;
const OFF_DEAD: usize = 8;
const OFF_TAIL: usize = 128;
const OFF_HEAD: usize = 256;

/// One mapping of a ring (the owner's, or the producer's).
#[derive(Debug)]
pub(crate) struct Ring {
    map: ShmMap,
}

fn shm_err(verb: &'static str, e: rgex_core::Error) -> VerbsError {
    VerbsError::call(verb, libc::EIO, e.to_string())
}

impl Ring {
    /// Create the ring `name` (replacing a stale one of that name).
    pub fn create(name: &str) -> VerbsResult<Ring> {
        // A leftover of a reset QP or a dead process of the same pid.
        let _ = shm::unlink(name);
        let map = ShmMap::create(name, RING_BYTES).map_err(|e| shm_err("ibv_create_qp", e))?;
        let r = Ring { map };
        // Release: an opener that reads the magic with Acquire sees the
        // zeroed control words (ftruncate zeroes; this orders our view).
        r.word(OFF_MAGIC).store(MAGIC, Ordering::Release);
        Ok(r)
    }

    /// Map the existing ring `name` as its producer, then remove the
    /// name: the two mappings keep the object alive, and nothing is left
    /// in `/dev/shm` if either process crashes.
    pub fn open(name: &str) -> VerbsResult<Ring> {
        let map = ShmMap::open(name, RING_BYTES).map_err(|e| shm_err("ibv_modify_qp", e))?;
        let _ = shm::unlink(name);
        let r = Ring { map };
        // Acquire: pairs with create's Release store.
        if r.word(OFF_MAGIC).load(Ordering::Acquire) != MAGIC {
            return Err(VerbsError::call(
                "ibv_modify_qp",
                libc::EINVAL,
                format!("{name} is not a soft-verbs ring"),
            ));
        }
        Ok(r)
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: the mapping is page-aligned and RING_BYTES long; every
        // control offset is 8-aligned and inside the control page, and the
        // reference lives no longer than `self`, which owns the mapping.
        unsafe { &*self.map.base().as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn dead_flag(&self) -> &AtomicU32 {
        // SAFETY: as in `word`: aligned, inside the mapping, borrowed from it.
        unsafe { &*self.map.base().as_ptr().add(OFF_DEAD).cast::<AtomicU32>() }
    }

    fn slot(&self, i: u64) -> *mut u8 {
        let off = CTRL_BYTES + (i % SLOTS) as usize * SLOT_BYTES;
        // SAFETY: off + SLOT_BYTES <= RING_BYTES, the mapping's length.
        unsafe { self.map.base().as_ptr().add(off) }
    }

    /// Mark the owner dead (its QP destroyed or reset, or its device
    /// killed): the producer stops waiting for it to consume.
    pub fn set_dead(&self) {
        // Relaxed: the flag publishes no data; a producer that sees it late
        // only waits one more timer tick.
        self.dead_flag().store(1, Ordering::Relaxed);
    }

    /// Whether the owner is dead.
    pub fn is_dead(&self) -> bool {
        // Relaxed: see set_dead.
        self.dead_flag().load(Ordering::Relaxed) != 0
    }

    /// Producer: whether the consumer has taken every packet written.
    pub fn drained(&self) -> bool {
        // Relaxed for tail: only this producer writes it. Acquire for head
        // is not needed for data here (nothing is read), but keeps the
        // answer no older than the consumer's last release.
        self.word(OFF_HEAD).load(Ordering::Acquire) == self.word(OFF_TAIL).load(Ordering::Relaxed)
    }

    /// Producer: write one packet; `false` if the ring is full.
    pub fn push(&self, hdr: &PktHdr, payload: &[u8]) -> bool {
        debug_assert!(payload.len() <= MAX_PAYLOAD);
        // Relaxed: this producer is tail's only writer, so it reads its own
        // last store.
        let tail = self.word(OFF_TAIL).load(Ordering::Relaxed);
        // Acquire: pairs with the consumer's Release of head, so its reads
        // of the slot we are about to overwrite happened before our writes.
        let head = self.word(OFF_HEAD).load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= SLOTS {
            return false;
        }
        let s = self.slot(tail);
        let n = payload.len().min(MAX_PAYLOAD);
        // SAFETY: slot `tail` is ours until tail is published (the consumer
        // reads only slots below tail, and has released this one: head >
        // tail - SLOTS); the slot holds HDR_BYTES + MAX_PAYLOAD bytes, and
        // its start is 64-aligned (CTRL_BYTES and SLOT_BYTES are).
        unsafe {
            s.cast::<PktHdr>().write(*hdr);
            std::ptr::copy_nonoverlapping(payload.as_ptr(), s.add(HDR_BYTES), n);
        }
        // Release: publishes the slot's header and payload to the consumer's
        // Acquire load of tail.
        self.word(OFF_TAIL)
            .store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Producer: whether one more packet fits.
    pub fn has_room(&self) -> bool {
        // As in push: Relaxed for our own tail, Acquire for the consumer's head.
        let tail = self.word(OFF_TAIL).load(Ordering::Relaxed);
        tail.wrapping_sub(self.word(OFF_HEAD).load(Ordering::Acquire)) < SLOTS
    }

    /// Consumer: take one packet, copying its payload into `buf`;
    /// `None` if the ring is empty.
    pub fn pop(&self, buf: &mut Vec<u8>) -> Option<PktHdr> {
        // Relaxed: the consumer is head's only writer.
        let head = self.word(OFF_HEAD).load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release of tail, making the
        // slot's contents visible.
        let tail = self.word(OFF_TAIL).load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let s = self.slot(head);
        // SAFETY: slot `head` was published (head < tail) and the producer
        // does not write it until we release head; PktHdr is plain integers
        // and the slot start is 64-aligned.
        let hdr = unsafe { s.cast::<PktHdr>().read() };
        let n = (hdr.len as usize).min(MAX_PAYLOAD);
        buf.clear();
        // SAFETY: as above; n <= MAX_PAYLOAD bytes follow the header in
        // the slot, unchanged until head is released below.
        buf.extend_from_slice(unsafe { std::slice::from_raw_parts(s.add(HDR_BYTES), n) });
        // Release: our reads of the slot happen before the producer's
        // Acquire load of head lets it overwrite the slot.
        self.word(OFF_HEAD)
            .store(head.wrapping_add(1), Ordering::Release);
        Some(hdr)
    }
}

#[cfg(test)]
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
            assert!(prod.push(&h, &[i as u8; 3]));
        }
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
