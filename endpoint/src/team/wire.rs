//! The collective message on the wire: a Medium request whose arguments
//! are the team id (2), the sequence number (2), the tag, the fragment's
//! offset (2) and the message's total length (2), and whose payload is one
//! fragment of the message. [`Fragment::parse`] checks everything a peer
//! sent that does not depend on this rank's teams (see the registry for
//! the rest).

use rgex_core::Category;

/// Arguments of a collective message.
pub(crate) const NARGS: usize = 9;

/// Dissemination rounds (barrier, allgather, and the agreement every
/// collective runs): `+ round`.
pub(crate) const TAG_DISSEM: u32 = 0;
/// Broadcast: each rank receives once.
pub(crate) const TAG_BCAST: u32 = 0x100;
/// Reduction towards team rank 0: `+ log2(distance)`.
pub(crate) const TAG_REDUCE: u32 = 0x200;
/// The reduced value, from team rank 0 to a root that is not 0.
pub(crate) const TAG_TO_ROOT: u32 = 0x300;
/// A subtree's blocks, from a child to its parent in a gather's tree.
pub(crate) const TAG_GATHER: u32 = 0x400;
/// A subtree's blocks, from a parent to its child in a scatter's tree.
pub(crate) const TAG_SCATTER: u32 = 0x500;
/// One member's block for another, in an alltoall.
pub(crate) const TAG_ALLTOALL: u32 = 0x600;
/// A partial prefix, from `me` to `me + 2^k` in a scan.
pub(crate) const TAG_SCAN: u32 = 0x700;
/// An allreduce's part of a chunk, to the chunk's owner.
pub(crate) const TAG_REDUCE_CHUNK: u32 = 0x800;
/// An allreduce's reduced chunk, from its owner to everyone.
pub(crate) const TAG_ALLGATHER_CHUNK: u32 = 0x900;
/// An eager broadcast's payload down its tree, after the root's
/// signature (see `EagerBcast`).
pub(crate) const TAG_EAGER_BCAST: u32 = 0xa00;
/// "I have waited long on you for this collective", with the waiter's
/// summary: the member waited on answers if their arguments differ (see
/// `Engine::answer`).
pub(crate) const TAG_WAITING: u32 = 0xb00;
/// The answer to [`TAG_WAITING`]: the summary of a disagreement.
pub(crate) const TAG_VERDICT: u32 = 0xc00;
/// The rounds of an agreement's second dissemination, which gathers the
/// members' windows when they differ: `+ round`.
pub(crate) const TAG_RECOVER: u32 = 0xd00;
/// Rounds of a dissemination or a binomial tree: at most log2(2^32).
const MAX_ROUNDS: u32 = 33;

/// `(team id, sequence number, tag)`.
pub(crate) type Key = (u64, u64, u32);

fn split64(x: u64) -> [u32; 2] {
    [x as u32, (x >> 32) as u32]
}

fn join64(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

/// The arguments of the fragment of `total` bytes' message `key` at `off`.
pub(crate) fn args(key: Key, off: u64, total: u64) -> [u32; NARGS] {
    let [t0, t1] = split64(key.0);
    let [s0, s1] = split64(key.1);
    let [o0, o1] = split64(off);
    let [l0, l1] = split64(total);
    [t0, t1, s0, s1, key.2, o0, o1, l0, l1]
}

/// A tag some collective sends.
fn known_tag(tag: u32) -> bool {
    let round = |base: u32| (base..base + MAX_ROUNDS).contains(&tag);
    round(TAG_DISSEM)
        || round(TAG_REDUCE)
        || round(TAG_RECOVER)
        || [
            TAG_BCAST,
            TAG_TO_ROOT,
            TAG_GATHER,
            TAG_SCATTER,
            TAG_ALLTOALL,
            TAG_SCAN,
            TAG_REDUCE_CHUNK,
            TAG_ALLGATHER_CHUNK,
            TAG_EAGER_BCAST,
            TAG_WAITING,
            TAG_VERDICT,
        ]
        .contains(&tag)
}

/// One received fragment's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub(crate) key: Key,
    /// Where the payload goes in the message.
    pub(crate) off: u64,
    /// The message's length.
    pub(crate) total: u64,
}

impl Fragment {
    /// Check a received message's form: a Medium request of [`NARGS`]
    /// arguments, a known tag, and a payload inside the message (empty
    /// only for an empty message). The error says what was wrong.
    pub(crate) fn parse(
        category: Category,
        request: bool,
        args: &[u32],
        payload: usize,
    ) -> Result<Fragment, String> {
        if category != Category::Medium {
            return Err(format!("a {category:?}, not a Medium"));
        }
        if !request {
            return Err("a reply, not a request".into());
        }
        let &[t0, t1, s0, s1, tag, o0, o1, l0, l1] = args else {
            return Err(format!("{} arguments, not {NARGS}", args.len()));
        };
        if !known_tag(tag) {
            return Err(format!("unknown tag {tag:#x}"));
        }
        let (off, total) = (join64(o0, o1), join64(l0, l1));
        let end = off.checked_add(payload as u64);
        if end.is_none_or(|e| e > total) || (payload == 0 && total != 0) {
            return Err(format!(
                "a fragment of {payload} bytes at offset {off} of a message of {total} bytes"
            ));
        }
        Ok(Fragment {
            key: (join64(t0, t1), join64(s0, s1), tag),
            off,
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let key = (0x1234_5678_9abc_def0, 1 << 40, TAG_REDUCE + 3);
        let a = args(key, 4096, 10_000);
        let f = Fragment::parse(Category::Medium, true, &a, 100).unwrap();
        assert_eq!(
            f,
            Fragment {
                key,
                off: 4096,
                total: 10_000
            }
        );
        let err = |c, r, a: &[u32], p| Fragment::parse(c, r, a, p).unwrap_err();
        assert!(err(Category::Short, true, &a, 0).contains("Short"));
        assert!(err(Category::Long, true, &a, 100).contains("Long"));
        assert!(err(Category::Medium, false, &a, 100).contains("reply"));
        assert!(err(Category::Medium, true, &a[..8], 100).contains("8 arguments"));
        assert!(err(Category::Medium, true, &[], 0).contains("0 arguments"));
        assert!(err(Category::Medium, true, &a, 6000).contains("offset 4096"));
        let mut b = a;
        b[4] = 0x250;
        assert!(err(Category::Medium, true, &b, 100).contains("tag"));
        // An offset near u64::MAX does not wrap.
        let c = args(key, u64::MAX - 1, u64::MAX);
        assert!(err(Category::Medium, true, &c, 100).contains("offset"));
        // An empty fragment only for an empty message.
        assert!(err(Category::Medium, true, &a, 0).contains("0 bytes"));
        let e = args(key, 0, 0);
        assert!(Fragment::parse(Category::Medium, true, &e, 0).is_ok());
    }
}
