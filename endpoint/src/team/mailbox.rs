//! Messages that have arrived (or are arriving, fragment by fragment) and
//! that no collective has taken yet, by collective `(team, seq)` and, in
//! it, by `(tag, sender)`: a message is taken only from the member the
//! algorithm expects it from. A collective's leftovers go when it
//! finishes, all at once.

use super::key_hash::KeyMap;
use super::pool::Pool;
use super::wire::Fragment;
use rgex_core::Rank;

/// A message being assembled from its fragments, which arrive in the
/// order they were sent (the Conduit SPI keeps each sender's order, and
/// [`Engine::send`](super::engine::Engine::send) sends a message's
/// fragments in order from one thread). Its buffer is reserved at the
/// length the sender announces, up to [`RESERVE_MAX`], and grows with the
/// bytes that arrive beyond that: a peer's word alone reserves at most
/// that much.
struct Slot {
    total: u64,
    data: Vec<u8>,
}

/// The most a message's first fragment reserves for the whole (see
/// [`Slot`]). Growing from empty by doubling made a 64 KiB message
/// (two fragments on smp) end in a 128 KiB reallocation, above glibc's
/// mmap threshold: a fresh mapping, and its page faults, per message
/// (an allreduce of 64 KiB on two ranks took 76 us, Open MPI's 15).
const RESERVE_MAX: u64 = 256 << 10;

impl Slot {
    fn new(total: u64, pool: &Pool) -> Slot {
        Slot {
            total,
            data: pool.take(total.min(RESERVE_MAX) as usize),
        }
    }

    /// Append `p`, which must start where the bytes received so far end
    /// (its end is inside the message: checked by the wire).
    fn put(&mut self, off: u64, p: &[u8]) -> Result<(), String> {
        let have = self.data.len() as u64;
        if off != have {
            return Err(format!(
                "a fragment at offset {off} of a {}-byte message, where {have} bytes had arrived \
                 (a sender's fragments arrive in order)",
                self.total
            ));
        }
        self.data.extend_from_slice(p);
        Ok(())
    }

    fn whole(&self) -> bool {
        self.data.len() as u64 == self.total
    }
}

/// The messages of one collective on this rank.
type Coll = KeyMap<(u32, Rank), Slot>;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Mailbox {
    colls: KeyMap<(u64, u64), Coll>,
    /// Where slots get their buffers (shared with the engine, which
    /// gives them back once a collective has used them).
    pool: std::sync::Arc<Pool>,
}

impl Mailbox {
    /// The pool slots take their buffers from.
    pub(crate) fn pool(&self) -> &std::sync::Arc<Pool> {
        &self.pool
    }

    /// File fragment `f` of a message from `from`; an error (the message is
    /// then forgotten) if it contradicts what arrived before.
    pub(crate) fn deposit(&mut self, from: Rank, f: &Fragment, p: &[u8]) -> Result<(), String> {
        let (team, seq, tag) = f.key;
        let coll = self.colls.entry((team, seq)).or_default();
        let slot = coll
            .entry((tag, from))
            .or_insert_with(|| Slot::new(f.total, &self.pool));
        let res = {
            if slot.total != f.total {
                Err(format!(
                    "a fragment says the message has {} bytes, an earlier one {}",
                    f.total, slot.total
                ))
            } else {
                slot.put(f.off, p)
            }
        };
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
        self.colls.values().map(KeyMap::len).sum()
    }

    /// Whether no collective has a message here (one check, where `len`
    /// counts them all).
    pub(crate) fn is_empty(&self) -> bool {
        self.colls.is_empty()
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
    fn fragments_in_order_and_refusals() {
        let mut mb = Mailbox::default();
        let data: Vec<u8> = (0..100).collect();
        for &(o, e) in &[(0u64, 20u64), (20, 40), (40, 60), (60, 100)] {
            assert!(mb.take((7, 3, 0x100), Rank(1)).is_none());
            mb.deposit(Rank(1), &frag(o, 100), &data[o as usize..e as usize])
                .unwrap();
        }
        // From another sender: not this one.
        assert!(mb.take((7, 3, 0x100), Rank(2)).is_none());
        assert_eq!(mb.take((7, 3, 0x100), Rank(1)).unwrap(), data);
        assert_eq!(mb.len(), 0);

        // A repeated range, or a gap, is refused and the message forgotten.
        mb.deposit(Rank(1), &frag(0, 100), &data[..50]).unwrap();
        let e = mb
            .deposit(Rank(1), &frag(40, 100), &data[40..60])
            .unwrap_err();
        assert!(
            e.contains("offset 40") && e.contains("50 bytes had arrived"),
            "{e}"
        );
        assert_eq!(mb.len(), 0);
        let e = mb
            .deposit(Rank(1), &frag(99, 100), &data[99..])
            .unwrap_err();
        assert!(e.contains("offset 99"), "{e}");
        // So is a change of length.
        mb.deposit(Rank(1), &frag(0, 100), &data[..50]).unwrap();
        let e = mb
            .deposit(Rank(1), &frag(50, 90), &data[50..90])
            .unwrap_err();
        assert!(e.contains("90 bytes"), "{e}");
        // A huge announced length reserves no more than RESERVE_MAX.
        mb.deposit(Rank(1), &frag(0, u64::MAX), &data[..1]).unwrap();
        let cap = mb.colls[&(7, 3)][&(0x100, Rank(1))].data.capacity();
        assert!(cap as u64 <= RESERVE_MAX, "{cap} bytes reserved");
        assert!(mb.take((7, 3, 0x100), Rank(1)).is_none());
        assert_eq!(mb.purge(7, 3), vec![(0x100, Rank(1))]);

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
