//! The hasher of the collectives' tables (messages by collective, tag
//! and sender; what each collective waits on). Their keys are team ids,
//! sequence numbers, tags and ranks, a few words each, looked up several
//! times per message: std's SipHash, built against keys an attacker
//! chooses, cost a tenth of a barrier's time in a profile. These keys come
//! from the job's own ranks, and the registry bounds what a peer can make
//! this rank keep, so a multiply-rotate hash of the words is enough.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate over the key's words (the `FxHash` construction).
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl KeyHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(K);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.add(u64::from(x));
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by the collectives' own words.
pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// A set keyed by the collectives' own words.
pub(crate) type KeySet<K> = HashSet<K, BuildHasherDefault<KeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash(k: impl Hash) -> u64 {
        BuildHasherDefault::<KeyHasher>::default().hash_one(k)
    }

    #[test]
    fn keys_apart() {
        // Neighbouring sequence numbers, tags and ranks hash apart.
        let mut seen = std::collections::HashSet::new();
        for seq in 0..64u64 {
            for tag in [0u32, 1, 0x100, 0x200] {
                assert!(seen.insert(hash((7u64, seq, tag))));
            }
        }
        let mut m: KeyMap<(u64, u64), u32> = KeyMap::default();
        m.insert((1, 2), 3);
        assert_eq!(m.get(&(1, 2)), Some(&3));
        assert_eq!(m.get(&(2, 1)), None);
    }
}
