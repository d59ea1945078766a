//! Messages that have arrived (or are arriving, fragment by fragment) and
//! that no collective has taken yet, by collective `(team, seq)` and, in
//! it, by `(tag, sender)`: a message is taken only from the member the
//! algorithm expects it from. A collective's leftovers go when it
//! finishes, all at once.

use super::wire::Fragment;
use rgex_core::Rank;
use std::collections::{BTreeMap, HashMap};

/// A message being assembled from its fragments.
struct Slot {
    total: u64,
    data: Vec<u8>,
    /// The byte ranges received, `start -> end`, adjacent ones merged (one
    /// entry when fragments arrive in order).
    have: BTreeMap<u64, u64>,
    got: u64,
}

impl Slot {
    fn new(total: u64) -> Result<Slot, String> {
        let mut data = Vec::new();
        usize::try_from(total)
            .ok()
            .and_then(|t| data.try_reserve_exact(t).ok())
            .ok_or_else(|| format!("a message of {total} bytes cannot be allocated"))?;
        Ok(Slot {
            total,
            data,
            have: BTreeMap::new(),
            got: 0,
        })
    }

    /// Place `p` at `off` (inside the message: checked by the wire), unless
    /// it overlaps bytes already received.
    fn put(&mut self, off: u64, p: &[u8]) -> Result<(), String> {
        let end = off + p.len() as u64;
        let before = self.have.range(..=off).next_back().map(|(&s, &e)| (s, e));
        let after = self.have.range(off..).next().map(|(&s, &e)| (s, e));
        let overlaps = before.is_some_and(|(_, e)| e > off) || after.is_some_and(|(s, _)| s < end);
        if overlaps {
            return Err(format!(
                "bytes [{off}, {end}) of a {}-byte message arrived twice",
                self.total
            ));
        }
        // In range and within the reserved capacity: no reallocation.
        let (o, e) = (off as usize, end as usize);
        if self.data.len() < e {
            self.data.resize(e, 0);
        }
        self.data[o..e].copy_from_slice(p);
        self.got += p.len() as u64;
        let mut start = off;
        let mut stop = end;
        if let Some((s, e)) = before.filter(|&(_, e)| e == off) {
            self.have.remove(&s);
            start = s;
            debug_assert_eq!(e, off);
        }
        if let Some((s, e)) = after.filter(|&(s, _)| s == end) {
            self.have.remove(&s);
            stop = e;
        }
        self.have.insert(start, stop);
        Ok(())
    }

    fn whole(&self) -> bool {
        self.got == self.total
    }
}

/// The messages of one collective on this rank.
type Coll = HashMap<(u32, Rank), Slot>;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Mailbox {
    colls: HashMap<(u64, u64), Coll>,
}

impl Mailbox {
    /// File fragment `f` of a message from `from`; an error (the message is
    /// then forgotten) if it contradicts what arrived before.
    pub(crate) fn deposit(&mut self, from: Rank, f: &Fragment, p: &[u8]) -> Result<(), String> {
        let (team, seq, tag) = f.key;
        let coll = self.colls.entry((team, seq)).or_default();
        let slot = match coll.entry((tag, from)) {
            std::collections::hash_map::Entry::Occupied(o) => Ok(o.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => Slot::new(f.total).map(|s| v.insert(s)),
        };
        let res = slot.and_then(|slot| {
            if slot.total != f.total {
                Err(format!(
                    "a fragment says the message has {} bytes, an earlier one {}",
                    f.total, slot.total
                ))
            } else {
                slot.put(f.off, p)
            }
        });
        if res.is_err() {
            coll.remove(&(tag, from));
            if coll.is_empty() {
                self.colls.remove(&(team, seq));
            }
        }
        res
    }

    /// Message `key` from `from`, if it has arrived whole.
    pub(crate) fn take(&mut self, key: (u64, u64, u32), from: Rank) -> Option<Vec<u8>> {
        let (team, seq, tag) = key;
        let coll = self.colls.get_mut(&(team, seq))?;
        if !coll.get(&(tag, from))?.whole() {
            return None;
        }
        let slot = coll.remove(&(tag, from))?;
        if coll.is_empty() {
            self.colls.remove(&(team, seq));
        }
        Some(slot.data)
    }

    /// Forget collective `(team, seq)`'s messages; returns who sent them
    /// (with their tags).
    pub(crate) fn purge(&mut self, team: u64, seq: u64) -> Vec<(u32, Rank)> {
        self.colls
            .remove(&(team, seq))
            .map(|c| c.into_keys().collect())
            .unwrap_or_default()
    }

    /// Forget the messages of `team` that `keep` refuses; returns who sent
    /// them.
    pub(crate) fn purge_team(
        &mut self,
        team: u64,
        mut keep: impl FnMut(Rank) -> bool,
    ) -> Vec<Rank> {
        let mut gone = Vec::new();
        self.colls.retain(|&(t, _), coll| {
            if t == team {
                coll.retain(|&(_, from), _| {
                    let k = keep(from);
                    if !k {
                        gone.push(from);
                    }
                    k
                });
            }
            !coll.is_empty()
        });
        gone
    }

    /// Messages buffered (whole or not).
    pub(crate) fn len(&self) -> usize {
        self.colls.values().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(off: u64, total: u64) -> Fragment {
        Fragment {
            key: (7, 3, 0x100),
            off,
            total,
        }
    }

    #[test]
    fn fragments_in_any_order_and_refusals() {
        let mut mb = Mailbox::default();
        let data: Vec<u8> = (0..100).collect();
        for &(o, e) in &[(60u64, 100u64), (0, 20), (40, 60), (20, 40)] {
            assert!(mb.take((7, 3, 0x100), Rank(1)).is_none());
            mb.deposit(Rank(1), &frag(o, 100), &data[o as usize..e as usize])
                .unwrap();
        }
        // From another sender: not this one.
        assert!(mb.take((7, 3, 0x100), Rank(2)).is_none());
        assert_eq!(mb.take((7, 3, 0x100), Rank(1)).unwrap(), data);
        assert_eq!(mb.len(), 0);

        // A repeated range is refused and the message forgotten.
        mb.deposit(Rank(1), &frag(0, 100), &data[..50]).unwrap();
        let e = mb
            .deposit(Rank(1), &frag(40, 100), &data[40..60])
            .unwrap_err();
        assert!(e.contains("twice"), "{e}");
        assert_eq!(mb.len(), 0);
        // So is a change of length.
        mb.deposit(Rank(1), &frag(0, 100), &data[..50]).unwrap();
        let e = mb
            .deposit(Rank(1), &frag(50, 90), &data[50..90])
            .unwrap_err();
        assert!(e.contains("90 bytes"), "{e}");
        // And a length that cannot be allocated.
        let e = mb
            .deposit(Rank(1), &frag(0, u64::MAX), &data[..1])
            .unwrap_err();
        assert!(e.contains("allocated"), "{e}");

        // Empty messages, purges.
        mb.deposit(Rank(4), &frag(0, 0), &[]).unwrap();
        mb.deposit(Rank(5), &frag(0, 10), &data[..3]).unwrap();
        assert_eq!(mb.take((7, 3, 0x100), Rank(4)).unwrap(), Vec::<u8>::new());
        assert_eq!(mb.purge(7, 3), vec![(0x100, Rank(5))]);
        mb.deposit(Rank(5), &frag(0, 10), &data[..3]).unwrap();
        mb.deposit(Rank(6), &frag(0, 10), &data[..3]).unwrap();
        assert_eq!(mb.purge_team(7, |r| r == Rank(6)), vec![Rank(5)]);
        assert_eq!(mb.len(), 1);
    }
}
