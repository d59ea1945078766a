//! A hasher for keys this process chose itself (call tickets drawn in
//! sequence, `TypeId`s, which are hashes already): one multiply per word
//! instead of SipHash, whose defence against keys chosen by an adversary
//! these tables do not need (no key comes from a message).

use std::hash::{BuildHasher, Hasher};

/// Builds [`IntHasher`]s: use as a `HashMap`'s third parameter.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct IntHash;

impl BuildHasher for IntHash {
    type Hasher = IntHasher;
    fn build_hasher(&self) -> IntHasher {
        IntHasher(0)
    }
}

/// Multiplies each word written by an odd constant (Fibonacci hashing):
/// distinct keys stay distinct in the low bits, which pick the bucket,
/// and every bit of the key reaches the high bits, which the table's
/// tags use.
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    /// A 32-bit key (a call ticket) keeps its own value in the low half,
    /// which picks the bucket: tickets drawn in sequence land in
    /// neighbouring buckets, so a table of thousands of calls awaited in
    /// the order they were made is walked, not sampled at random (one
    /// cache miss per call otherwise). The high half, mixed, gives the
    /// table's tags.
    fn write_u32(&mut self, n: u32) {
        let n = u64::from(n);
        self.0 = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_0000_0000) | n;
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn sequential_tickets_take_neighbouring_buckets_and_every_tag() {
        let low: Vec<u64> = (1..=1024u32).map(|t| IntHash.hash_one(t) & 1023).collect();
        assert!(
            low.windows(2).all(|w| w[1] == (w[0] + 1) & 1023),
            "tickets in sequence pick neighbouring buckets"
        );
        let top: HashSet<u64> = (1..=1024u32).map(|t| IntHash.hash_one(t) >> 57).collect();
        assert_eq!(top.len(), 128, "every 7-bit tag is used");
    }

    #[test]
    fn a_map_with_it_holds_what_it_is_given() {
        let mut m: HashMap<u32, u32, IntHash> = HashMap::default();
        for t in 0..10_000 {
            m.insert(t, t * 2);
        }
        assert!((0..10_000).all(|t| m[&t] == t * 2));
        let mut ty: HashMap<std::any::TypeId, u8, IntHash> = HashMap::default();
        ty.insert(std::any::TypeId::of::<String>(), 1);
        assert_eq!(ty.get(&std::any::TypeId::of::<String>()), Some(&1));
        assert_eq!(ty.get(&std::any::TypeId::of::<u8>()), None);
    }
}
