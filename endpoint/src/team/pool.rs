//! Buffers that collectives' large messages reuse: the mailbox assembles
//! a message in one, an algorithm encodes what it sends into one, and
//! both come back here once their bytes have been used.
//!
//! Without it every large collective allocated and freed several buffers
//! of its message size; glibc gave the freed top of its heap back to the
//! kernel (its trim threshold is 128 KiB) and faulted fresh zeroed pages
//! in for the next call: 16 page faults per rank and per allreduce of
//! 64 KiB on two ranks.

use parking_lot::Mutex;

/// Buffers below this capacity are not kept (the allocator serves small
/// ones from its bins without trimming).
const MIN_KEPT: usize = 4 << 10;
/// Nor above this one (a rare huge message must not stay resident).
const MAX_KEPT: usize = 4 << 20;
/// At most this many buffers are kept.
const KEEP: usize = 8;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Pool {
    free: Mutex<Vec<Vec<u8>>>,
}

impl Pool {
    /// An empty buffer with room for `cap` bytes: a kept one if one is
    /// large enough (the smallest such), else a new one.
    pub(crate) fn take(&self, cap: usize) -> Vec<u8> {
        if cap >= MIN_KEPT {
            let mut free = self.free.lock();
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= cap)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            if let Some(i) = best {
                return free.swap_remove(i);
            }
        }
        Vec::with_capacity(cap)
    }

    /// Keep `buf` for a later [`take`](Self::take), if it is worth
    /// keeping and there is room; else free it.
    pub(crate) fn give(&self, mut buf: Vec<u8>) {
        if (MIN_KEPT..=MAX_KEPT).contains(&buf.capacity()) {
            let mut free = self.free.lock();
            if free.len() < KEEP {
                buf.clear();
                free.push(buf);
                return;
            }
            // Full: keep the larger of the buffer and the smallest kept.
            if let Some((i, _)) = free.iter().enumerate().min_by_key(|(_, b)| b.capacity()) {
                if free[i].capacity() < buf.capacity() {
                    buf.clear();
                    free[i] = buf;
                }
            }
        }
    }

    /// `v` encoded into a pooled buffer.
    pub(crate) fn encode<T: super::Element>(&self, v: &[T]) -> Vec<u8> {
        let mut out = self.take(v.len() * T::SIZE);
        T::write_all(v, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_the_smallest_that_fits_and_keeps_a_few() {
        let pool = Pool::default();
        let (a, b) = (
            Vec::<u8>::with_capacity(64 << 10),
            Vec::<u8>::with_capacity(8 << 10),
        );
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        pool.give(a);
        pool.give(b);
        let got = pool.take(5 << 10);
        assert_eq!(got.as_ptr(), pb, "the 8 KiB one fits 5 KiB best");
        assert!(got.is_empty());
        let got = pool.take(60 << 10);
        assert_eq!(got.as_ptr(), pa);
        // Small and huge buffers are not kept.
        pool.give(Vec::with_capacity(100));
        pool.give(Vec::with_capacity(MAX_KEPT + 1));
        assert!(pool.free.lock().is_empty());
        for _ in 0..KEEP + 3 {
            pool.give(Vec::with_capacity(MIN_KEPT));
        }
        pool.give(Vec::with_capacity(2 * MIN_KEPT));
        let free = pool.free.lock();
        assert_eq!(free.len(), KEEP);
        assert!(
            free.iter().any(|b| b.capacity() >= 2 * MIN_KEPT),
            "the larger one replaced a smaller"
        );
    }
}
