//! A private set-associative cache (the P54C's L1 data cache, and the
//! tile's per-core L2), living in the process of its core.
//!
//! Geometry of the SCC: L1 data 16 KiB, 4-way, 32-byte lines (128 sets);
//! L2 256 KiB, 4-way, 32-byte lines (2048 sets). Replacement is true LRU
//! per set (the P54C uses a 3-bit pseudo-LRU tree for its 4 ways; with 4
//! ways the two differ only in rare access orders, and true LRU is easier
//! to reason about in tests). The cache knows nothing of memory: the
//! [`Core`](super::Core) moves lines in and out and decides the policies.

use super::line::{LineData, LineIds, LINE};
use rgex_core::{Error, Result};

/// Size and associativity of one cache level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    bytes: usize,
    ways: usize,
}

impl Geometry {
    /// The SCC's L1 data cache: 16 KiB, 4-way.
    pub const SCC_L1: Geometry = Geometry {
        bytes: 16 * 1024,
        ways: 4,
    };
    /// The SCC's per-core L2: 256 KiB, 4-way.
    pub const SCC_L2: Geometry = Geometry {
        bytes: 256 * 1024,
        ways: 4,
    };

    /// A cache of `bytes` bytes and `ways` ways: `bytes` must be a non-zero
    /// multiple of `32 * ways` (tests use tiny caches to force evictions).
    pub fn new(bytes: usize, ways: usize) -> Result<Geometry> {
        if ways == 0 || bytes == 0 || !bytes.is_multiple_of(LINE * ways) {
            return Err(Error::Config(format!(
                "scc cache geometry: {bytes} bytes with {ways} ways is not a non-zero multiple of {LINE} * ways"
            )));
        }
        Ok(Geometry { bytes, ways })
    }

    /// Capacity in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Associativity.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.bytes / (LINE * self.ways)
    }

    /// Number of line slots.
    pub fn lines(&self) -> usize {
        self.bytes / LINE
    }
}

/// A line pushed out of the cache.
pub(crate) struct Victim {
    pub line: u64,
    pub data: LineData,
    pub ids: LineIds,
    pub dirty: bool,
}

/// The cache proper. Slot `s` is way `s % ways` of set `s / ways`.
pub(crate) struct Cache {
    geom: Geometry,
    /// Line index + 1; 0 = invalid.
    tags: Vec<u64>,
    data: Vec<LineData>,
    /// Checker ids per slot; empty when checking is off.
    ids: Vec<LineIds>,
    dirty: Vec<bool>,
    mpbt: Vec<bool>,
    stamp: Vec<u64>,
    clock: u64,
}

const ZERO_IDS: LineIds = [0; LINE];

impl Cache {
    pub(crate) fn new(geom: Geometry, track_ids: bool) -> Cache {
        let n = geom.lines();
        Cache {
            geom,
            tags: vec![0; n],
            data: vec![[0; LINE]; n],
            ids: if track_ids {
                vec![ZERO_IDS; n]
            } else {
                Vec::new()
            },
            dirty: vec![false; n],
            mpbt: vec![false; n],
            stamp: vec![0; n],
            clock: 0,
        }
    }

    pub(crate) fn geometry(&self) -> Geometry {
        self.geom
    }

    fn set_range(&self, line: u64) -> std::ops::Range<usize> {
        let set = (line % self.geom.sets() as u64) as usize;
        set * self.geom.ways..(set + 1) * self.geom.ways
    }

    /// The slot holding `line`, if any (does not touch LRU state).
    pub(crate) fn find(&self, line: u64) -> Option<usize> {
        self.set_range(line).find(|&s| self.tags[s] == line + 1)
    }

    /// Mark `slot` most recently used.
    pub(crate) fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.stamp[slot] = self.clock;
    }

    /// Put `line` in the cache (it must not be there), evicting the LRU way
    /// of its set if the set is full. Returns the slot and the victim.
    pub(crate) fn insert(
        &mut self,
        line: u64,
        data: &LineData,
        ids: &LineIds,
        mpbt: bool,
        dirty: bool,
    ) -> (usize, Option<Victim>) {
        debug_assert!(self.find(line).is_none());
        let r = self.set_range(line);
        let slot = r
            .clone()
            .find(|&s| self.tags[s] == 0)
            .unwrap_or_else(|| r.min_by_key(|&s| self.stamp[s]).expect("a set has ways"));
        let victim = (self.tags[slot] != 0).then(|| Victim {
            line: self.tags[slot] - 1,
            data: self.data[slot],
            ids: self.ids.get(slot).copied().unwrap_or(ZERO_IDS),
            dirty: self.dirty[slot],
        });
        self.tags[slot] = line + 1;
        self.data[slot] = *data;
        if let Some(x) = self.ids.get_mut(slot) {
            *x = *ids;
        }
        self.dirty[slot] = dirty;
        self.mpbt[slot] = mpbt;
        self.touch(slot);
        (slot, victim)
    }

    pub(crate) fn data(&self, slot: usize) -> &LineData {
        &self.data[slot]
    }

    pub(crate) fn ids(&self, slot: usize) -> &LineIds {
        self.ids.get(slot).unwrap_or(&ZERO_IDS)
    }

    /// Overwrite bytes `[off, off + bytes.len())` of the line in `slot`,
    /// tagging them with store id `id`.
    pub(crate) fn update(&mut self, slot: usize, off: usize, bytes: &[u8], id: u64) {
        self.data[slot][off..off + bytes.len()].copy_from_slice(bytes);
        if let Some(x) = self.ids.get_mut(slot) {
            x[off..off + bytes.len()].fill(id);
        }
    }

    /// Replace the whole line in `slot` (data and ids).
    pub(crate) fn replace(&mut self, slot: usize, data: &LineData, ids: &LineIds) {
        self.data[slot] = *data;
        if let Some(x) = self.ids.get_mut(slot) {
            *x = *ids;
        }
    }

    pub(crate) fn is_dirty(&self, slot: usize) -> bool {
        self.dirty[slot]
    }

    pub(crate) fn set_dirty(&mut self, slot: usize, d: bool) {
        self.dirty[slot] = d;
    }

    pub(crate) fn is_mpbt(&self, slot: usize) -> bool {
        self.mpbt[slot]
    }

    /// The line in `slot`, if valid.
    pub(crate) fn line_at(&self, slot: usize) -> Option<u64> {
        let t = self.tags[slot];
        (t != 0).then(|| t - 1)
    }

    /// Drop the line in `slot` (no write-back).
    pub(crate) fn invalidate(&mut self, slot: usize) {
        self.tags[slot] = 0;
        self.dirty[slot] = false;
        self.mpbt[slot] = false;
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.tags.len()
    }

    /// Number of valid lines.
    pub(crate) fn valid_lines(&self) -> usize {
        self.tags.iter().filter(|&&t| t != 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        assert_eq!(Geometry::SCC_L1.sets(), 128);
        assert_eq!(Geometry::SCC_L2.sets(), 2048);
        assert!(Geometry::new(96, 2).is_err());
        assert_eq!(Geometry::new(128, 2).unwrap().sets(), 2);
    }

    #[test]
    fn lru_eviction_in_a_set() {
        // 2 sets x 2 ways: lines 0, 2, 4 all map to set 0.
        let mut c = Cache::new(Geometry::new(128, 2).unwrap(), true);
        let d = [7u8; LINE];
        assert!(c.insert(0, &d, &ZERO_IDS, false, true).1.is_none());
        assert!(c.insert(2, &d, &ZERO_IDS, false, false).1.is_none());
        // Use line 0 so line 2 is LRU.
        let s0 = c.find(0).unwrap();
        c.touch(s0);
        let (_, v) = c.insert(4, &[1; LINE], &ZERO_IDS, false, false);
        let v = v.unwrap();
        assert_eq!(v.line, 2);
        assert!(!v.dirty);
        assert!(c.find(0).is_some() && c.find(4).is_some() && c.find(2).is_none());
        // Line 1 goes to set 1 and evicts nothing.
        assert!(c.insert(1, &d, &ZERO_IDS, true, false).1.is_none());
        assert_eq!(c.valid_lines(), 3);
        let s = c.find(0).unwrap();
        c.update(s, 3, &[9, 9], 42);
        assert_eq!(c.data(s)[2..6], [7, 9, 9, 7]);
        assert_eq!(c.ids(s)[3], 42);
        assert!(c.is_dirty(s));
        c.invalidate(s);
        assert_eq!(c.line_at(s), None);
    }
}
