//! What the members of a team must agree on for one collective, and how
//! they find out whether they do.
//!
//! Each member's arguments make a [`Sig`] (which collective, root, element
//! type, operator, element count). A [`Summary`] describes the signatures
//! of a set of members exactly enough to name a disagreement: the lowest
//! member and its signature, and the lowest member whose signature differs
//! from that one. Merging two summaries gives the summary of the union,
//! whatever the order and however the sets overlap, so every member that
//! has merged the summaries of all members holds the same one: all of
//! them report the same disagreement, or none does.

use super::ops::ReduceOp;
use super::Element;
use rgex_core::{Error, Rank};

/// Which collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Barrier = 1,
    Broadcast = 2,
    Reduce = 3,
    Allreduce = 4,
    Split = 5,
    Gather = 6,
    Gatherv = 7,
    Allgather = 8,
    Allgatherv = 9,
    Scatter = 10,
    Scatterv = 11,
    Alltoall = 12,
    Alltoallv = 13,
    Scan = 14,
    Exscan = 15,
}

/// Every kind, in code order (`Kind as u8` is its index plus one).
const KINDS: [Kind; 15] = [
    Kind::Barrier,
    Kind::Broadcast,
    Kind::Reduce,
    Kind::Allreduce,
    Kind::Split,
    Kind::Gather,
    Kind::Gatherv,
    Kind::Allgather,
    Kind::Allgatherv,
    Kind::Scatter,
    Kind::Scatterv,
    Kind::Alltoall,
    Kind::Alltoallv,
    Kind::Scan,
    Kind::Exscan,
];

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        KINDS.get(usize::from(v).checked_sub(1)?).copied()
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Broadcast => "broadcast",
            Kind::Reduce => "reduce",
            Kind::Allreduce => "allreduce",
            Kind::Split => "split",
            Kind::Gather => "gather",
            Kind::Gatherv => "gatherv",
            Kind::Allgather => "allgather",
            Kind::Allgatherv => "allgatherv",
            Kind::Scatter => "scatter",
            Kind::Scatterv => "scatterv",
            Kind::Alltoall => "alltoall",
            Kind::Alltoallv => "alltoallv",
            Kind::Scan => "scan",
            Kind::Exscan => "exscan",
        }
    }

    /// What a signature's count is for this collective.
    fn count_name(self) -> &'static str {
        match self {
            Kind::Scatterv | Kind::Alltoallv => "block count",
            _ => "element count",
        }
    }
}

/// The operator of a reduction: none (not a reduction), a built-in one,
/// or a user's (user operators cannot be told apart from each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpId {
    None,
    Builtin(ReduceOp),
    User,
}

const BUILTINS: [ReduceOp; 7] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::And,
    ReduceOp::Or,
    ReduceOp::Xor,
];

impl OpId {
    fn code(self) -> u8 {
        match self {
            OpId::None => 0,
            OpId::Builtin(op) => 1 + BUILTINS.iter().position(|&b| b == op).unwrap_or(0) as u8,
            OpId::User => 1 + BUILTINS.len() as u8,
        }
    }

    fn from_code(c: u8) -> Option<OpId> {
        match c as usize {
            0 => Some(OpId::None),
            i if i <= BUILTINS.len() => Some(OpId::Builtin(BUILTINS[i - 1])),
            i if i == BUILTINS.len() + 1 => Some(OpId::User),
            _ => None,
        }
    }

    fn describe(self) -> String {
        match self {
            OpId::None => "no operator".into(),
            OpId::Builtin(op) => format!("{op:?}"),
            OpId::User => "a user operator".into(),
        }
    }
}

/// The element type: its size and a hash of its name (type names are the
/// same in every process of a job running one program).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ElemId {
    size: u32,
    hash: u32,
}

/// FNV-1a, 32 bits: stable across processes and builds.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

impl ElemId {
    /// The id of `T`.
    pub(crate) fn of<T: Element>() -> Self {
        ElemId {
            size: T::SIZE as u32,
            hash: fnv1a(std::any::type_name::<T>()),
        }
    }

    /// None (a barrier or a split carries no elements).
    const NONE: ElemId = ElemId { size: 0, hash: 0 };

    fn describe(self) -> String {
        fn named<T: Element>(id: ElemId) -> Option<&'static str> {
            (ElemId::of::<T>() == id).then(std::any::type_name::<T>)
        }
        if self == ElemId::NONE {
            return "no elements".into();
        }
        named::<u8>(self)
            .or_else(|| named::<i32>(self))
            .or_else(|| named::<u32>(self))
            .or_else(|| named::<i64>(self))
            .or_else(|| named::<u64>(self))
            .or_else(|| named::<f32>(self))
            .or_else(|| named::<f64>(self))
            .map_or_else(
                || {
                    format!(
                        "a {}-byte user type (type name hash {:#010x})",
                        self.size, self.hash
                    )
                },
                str::to_string,
            )
    }
}

/// One member's arguments to one collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sig {
    kind: Kind,
    /// `u32::MAX` for collectives without a root.
    root: u32,
    elem: ElemId,
    op: OpId,
    /// Elements contributed (reductions, scans, gathers, the whole of an
    /// alltoall's or a scatter's data), blocks passed (scatterv at the
    /// root, alltoallv); 0 where the count is not an argument every member
    /// passes.
    count: u64,
}

/// Encoded size of a [`Sig`].
pub(crate) const SIG_LEN: usize = 24;
/// Encoded size of a [`Summary`].
pub(crate) const SUMMARY_LEN: usize = 2 * (4 + SIG_LEN) + 9;
/// "No rank" in an encoded summary.
const NO_RANK: u32 = u32::MAX;

impl Sig {
    /// A barrier's.
    pub(crate) fn barrier() -> Self {
        Sig::plain(Kind::Barrier)
    }

    /// A split's (colours and keys differ by design: not compared).
    pub(crate) fn split() -> Self {
        Sig::plain(Kind::Split)
    }

    fn plain(kind: Kind) -> Self {
        Sig {
            kind,
            root: u32::MAX,
            elem: ElemId::NONE,
            op: OpId::None,
            count: 0,
        }
    }

    /// A broadcast of `T`s from `root` (only the root's count matters).
    pub(crate) fn broadcast(root: u32, elem: ElemId) -> Self {
        Sig {
            root,
            elem,
            ..Sig::plain(Kind::Broadcast)
        }
    }

    /// A reduction of `count` elements to `root` (`None`: to all).
    pub(crate) fn reduce(root: Option<u32>, elem: ElemId, op: OpId, count: usize) -> Self {
        Sig {
            kind: if root.is_some() {
                Kind::Reduce
            } else {
                Kind::Allreduce
            },
            root: root.unwrap_or(u32::MAX),
            elem,
            op,
            count: count as u64,
        }
    }

    /// Collective `kind` with these arguments (`root`: `None` for a
    /// collective without one).
    pub(crate) fn of(kind: Kind, root: Option<u32>, elem: ElemId, op: OpId, count: usize) -> Self {
        Sig {
            kind,
            root: root.unwrap_or(u32::MAX),
            elem,
            op,
            count: count as u64,
        }
    }

    /// Which collective.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The encoding [`encode`](Self::encode) appends, on the stack.
    pub(crate) fn to_bytes(self) -> [u8; SIG_LEN] {
        let mut b = [0u8; SIG_LEN];
        b[0] = self.kind as u8;
        b[1] = self.op.code();
        b[4..8].copy_from_slice(&self.root.to_le_bytes());
        b[8..12].copy_from_slice(&self.elem.size.to_le_bytes());
        b[12..16].copy_from_slice(&self.elem.hash.to_le_bytes());
        b[16..24].copy_from_slice(&self.count.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Sig> {
        if b.len() != SIG_LEN {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Some(Sig {
            kind: Kind::from_u8(b[0])?,
            op: OpId::from_code(b[1])?,
            root: u32_at(4),
            elem: ElemId {
                size: u32_at(8),
                hash: u32_at(12),
            },
            count: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
        })
    }

    /// The first argument in which `self` and `other` differ, with both
    /// values in words.
    fn difference(&self, other: &Sig) -> Option<(&'static str, String, String)> {
        if self.kind != other.kind {
            let n = |s: &Sig| s.kind.name().to_string();
            Some(("collective", n(self), n(other)))
        } else if self.root != other.root {
            Some(("root", self.root.to_string(), other.root.to_string()))
        } else if self.elem != other.elem {
            Some(("element type", self.elem.describe(), other.elem.describe()))
        } else if self.op != other.op {
            Some(("operator", self.op.describe(), other.op.describe()))
        } else if self.count != other.count {
            Some((
                self.kind.count_name(),
                self.count.to_string(),
                other.count.to_string(),
            ))
        } else {
            None
        }
    }
}

/// One collective of a window: its sequence number, its signature, and
/// whether it is the agreement the window starts from (see [`Window`]).
pub(crate) type Entry = (u64, Sig, bool);

/// What an agreement says of the collectives each member ran since its
/// previous agreement: a digest of them, the lowest member's, and whether
/// any member's digest differs from it. Merged like the signatures, so
/// every member that has merged all of them holds the same verdict.
///
/// A window holds the previous agreement (only its sequence number counts
/// in the digest: that agreement compared its own arguments) and the
/// eager collectives since. Members that called the same collectives in
/// the same order hold the same windows; where they did not, the windows
/// differ at the lowest sequence number where their calls did (see
/// [`first_mismatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    digest: u64,
    differs: bool,
}

impl Window {
    /// The window of these entries.
    pub(crate) fn of(entries: &[Entry]) -> Window {
        // FNV-1a, 64 bits, over each entry's sequence number, start flag
        // and (but for the start) signature, hashed in place: stable
        // across processes; a difference it misses takes a collision.
        let mut digest = 0xcbf2_9ce4_8422_2325u64;
        for &entry in entries {
            let e = entry_bytes(entry);
            let used = if entry.2 { 9 } else { ENTRY_LEN };
            digest = e[..used].iter().fold(digest, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        }
        Window {
            digest,
            differs: false,
        }
    }

    /// The digest of the window's entries.
    pub(crate) fn digest(&self) -> u64 {
        self.digest
    }

    /// Whether the members' windows differ (once all are merged).
    pub(crate) fn differs(&self) -> bool {
        self.differs
    }
}

/// Encoded size of a window entry.
pub(crate) const ENTRY_LEN: usize = 8 + 1 + SIG_LEN;

/// Append the encodings of `entries`.
pub(crate) fn encode_entries(entries: &[Entry], out: &mut Vec<u8>) {
    for &e in entries {
        out.extend_from_slice(&entry_bytes(e));
    }
}

/// One entry's encoding (see [`encode_entries`]).
pub(crate) fn entry_bytes((seq, sig, start): Entry) -> [u8; ENTRY_LEN] {
    let mut e = [0u8; ENTRY_LEN];
    e[..8].copy_from_slice(&seq.to_le_bytes());
    e[8] = u8::from(start);
    e[9..].copy_from_slice(&sig.to_bytes());
    e
}

/// Entries encoded by [`encode_entries`]; `None` if `b` holds none.
pub(crate) fn decode_entries(b: &[u8]) -> Option<Vec<Entry>> {
    if !b.len().is_multiple_of(ENTRY_LEN) {
        return None;
    }
    b.chunks(ENTRY_LEN)
        .map(|e| {
            let seq = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
            let start = match e[8] {
                0 => false,
                1 => true,
                _ => return None,
            };
            Some((seq, Sig::decode(&e[9..])?, start))
        })
        .collect()
}

/// The lowest sequence number at which the members' windows (`lists`,
/// by team rank) disagree, with the summary of the signatures there of
/// the members that ran it. A collective that is every such member's
/// starting agreement is skipped: that agreement compared it already.
pub(crate) fn first_mismatch(lists: &[Vec<Entry>]) -> Option<(u64, Summary)> {
    let mut by_seq: std::collections::BTreeMap<u64, (Summary, bool)> = Default::default();
    for (member, list) in lists.iter().enumerate() {
        for &(seq, sig, start) in list {
            let one = Summary::of(member as u32, sig);
            by_seq
                .entry(seq)
                .and_modify(|(s, all_start)| {
                    s.merge(&one);
                    *all_start &= start;
                })
                .or_insert((one, start));
        }
    }
    by_seq
        .into_iter()
        .find(|(_, (s, all_start))| !all_start && s.other.is_some())
        .map(|(seq, (s, _))| (seq, s))
}

/// The signatures of a set of team members, as far as a disagreement
/// goes: see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    /// The lowest member of the set and its signature.
    first: (u32, Sig),
    /// The lowest member whose signature differs from `first`'s.
    other: Option<(u32, Sig)>,
    /// Their eager collectives since their previous agreement.
    window: Window,
}

impl Summary {
    /// The summary of one member.
    pub(crate) fn of(rank: u32, sig: Sig) -> Self {
        Summary {
            first: (rank, sig),
            other: None,
            window: Window::of(&[]),
        }
    }

    /// The same, with this member's `window`.
    pub(crate) fn with_window(mut self, window: Window) -> Self {
        self.window = window;
        self
    }

    /// The set's windows.
    pub(crate) fn window(&self) -> Window {
        self.window
    }

    /// The lowest member's signature.
    pub(crate) fn first_sig(&self) -> Sig {
        self.first.1
    }

    /// Whether the first member's collective, at sequence number `seq`,
    /// runs without an agreement (see `registry::eager_at`).
    pub(crate) fn first_runs_eagerly(&self, seq: u64) -> bool {
        self.first.1.kind == Kind::Broadcast && super::registry::eager_at(seq)
    }

    /// The lowest member's team rank.
    pub(crate) fn first_rank(&self) -> u32 {
        self.first.0
    }

    /// Whether the set's signatures disagree.
    pub(crate) fn disagrees(&self) -> bool {
        self.other.is_some()
    }

    /// Make `self` the summary of the union of both sets.
    pub(crate) fn merge(&mut self, o: &Summary) {
        let (lo, hi) = if o.first.0 < self.first.0 {
            (*o, *self)
        } else {
            (*self, *o)
        };
        // In `hi`'s set, the lowest member differing from `lo.first`: its
        // lowest member if that differs, else the lowest that differs
        // from it (which has the same signature as `lo.first`).
        let from_hi = if hi.first.1 != lo.first.1 {
            Some(hi.first)
        } else {
            hi.other
        };
        let other = match (lo.other, from_hi) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        let window = Window {
            digest: lo.window.digest,
            differs: lo.window.differs || hi.window.differs || lo.window.digest != hi.window.digest,
        };
        *self = Summary {
            first: lo.first,
            other,
            window,
        };
    }

    /// Append the encoding ([`SUMMARY_LEN`] bytes).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first.0.to_le_bytes());
        self.first.1.encode(out);
        match self.other {
            Some((r, s)) => {
                out.extend_from_slice(&r.to_le_bytes());
                s.encode(out);
            }
            None => {
                out.extend_from_slice(&NO_RANK.to_le_bytes());
                Sig::barrier().encode(out);
            }
        }
        out.extend_from_slice(&self.window.digest.to_le_bytes());
        out.push(u8::from(self.window.differs));
    }

    /// Decode a summary sent by a member of a team of `n`; `None` if it is
    /// not one (wrong length, unknown codes, ranks out of range).
    pub(crate) fn decode(b: &[u8], n: u32) -> Option<Summary> {
        if b.len() != SUMMARY_LEN {
            return None;
        }
        let rank = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let first = (rank(0), Sig::decode(&b[4..4 + SIG_LEN])?);
        let o = 4 + SIG_LEN;
        let other = match rank(o) {
            NO_RANK => None,
            r => Some((r, Sig::decode(&b[o + 4..o + 4 + SIG_LEN])?)),
        };
        let w = 2 * o;
        let window = Window {
            digest: u64::from_le_bytes(b[w..w + 8].try_into().expect("8 bytes")),
            differs: match b[w + 8] {
                0 => false,
                1 => true,
                _ => return None,
            },
        };
        let sane = first.0 < n && other.is_none_or(|(r, s)| r < n && r > first.0 && s != first.1);
        sane.then_some(Summary {
            first,
            other,
            window,
        })
    }

    /// The disagreement, if any, as the error every member reports.
    pub(crate) fn mismatch(
        &self,
        collective: &'static str,
        rank: Rank,
        team: u64,
        seq: u64,
    ) -> Option<Error> {
        let (second, sig) = self.other?;
        let (field, first_value, second_value) = self.first.1.difference(&sig)?;
        Some(Error::CollectiveMismatch {
            collective,
            rank,
            team,
            seq,
            field,
            first: self.first.0,
            first_value,
            second,
            second_value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigs() -> Vec<Sig> {
        let u = ElemId::of::<u64>();
        vec![
            Sig::reduce(None, u, OpId::Builtin(ReduceOp::Sum), 5),
            Sig::reduce(None, u, OpId::Builtin(ReduceOp::Sum), 6),
            Sig::reduce(None, ElemId::of::<f64>(), OpId::Builtin(ReduceOp::Sum), 5),
            Sig::reduce(Some(0), u, OpId::User, 5),
            Sig::barrier(),
            Sig::broadcast(3, ElemId::of::<u8>()),
        ]
    }

    /// The summary of a whole set, whatever the merge order and overlap,
    /// names the lowest member and the lowest that differs from it.
    #[test]
    fn merge_is_a_function_of_the_set() {
        let all = sigs();
        let mut seed = 0x1234_5678u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for _ in 0..2000 {
            let n = 1 + (next() % 9) as usize;
            let members: Vec<Sig> = (0..n)
                .map(|_| all[(next() % all.len() as u32) as usize])
                .collect();
            let want_other = (0..n)
                .find(|&r| members[r] != members[0])
                .map(|r| (r as u32, members[r]));
            // Merge pieces pairwise in a random order; now and then also
            // merge in a copy of a piece that stays (overlapping sets).
            let mut pieces: Vec<Summary> =
                (0..n).map(|r| Summary::of(r as u32, members[r])).collect();
            while pieces.len() > 1 {
                let i = (next() as usize) % pieces.len();
                let mut m = pieces.swap_remove(i);
                let j = (next() as usize) % pieces.len();
                m.merge(&pieces.swap_remove(j));
                if !pieces.is_empty() && next() % 3 == 0 {
                    let k = (next() as usize) % pieces.len();
                    m.merge(&pieces[k]);
                }
                pieces.push(m);
            }
            let s = pieces[0];
            assert_eq!(s.first, (0, members[0]));
            assert_eq!(s.other, want_other, "members {members:?}");
            let mut enc = Vec::new();
            s.encode(&mut enc);
            assert_eq!(Summary::decode(&enc, n as u32), Some(s));
        }
    }

    #[test]
    fn mismatch_names_the_field_and_both_values() {
        let all = sigs();
        let mut s = Summary::of(0, all[0]);
        s.merge(&Summary::of(2, all[1]));
        s.merge(&Summary::of(1, all[0]));
        let e = s.mismatch("allreduce", Rank(1), 0, 7).expect("a mismatch");
        let t = e.to_string();
        assert!(
            t.contains("element count") && t.contains("team rank 0 passed 5"),
            "{t}"
        );
        assert!(t.contains("team rank 2 passed 6"), "{t}");
        let mut s = Summary::of(0, all[0]);
        s.merge(&Summary::of(1, all[2]));
        let t = s.mismatch("allreduce", Rank(0), 0, 0).unwrap().to_string();
        assert!(
            t.contains("element type") && t.contains("u64") && t.contains("f64"),
            "{t}"
        );
        let mut s = Summary::of(0, all[4]);
        s.merge(&Summary::of(1, all[5]));
        let t = s.mismatch("barrier", Rank(0), 0, 0).unwrap().to_string();
        assert!(t.contains("barrier") && t.contains("broadcast"), "{t}");
        assert!(Summary::of(0, all[3])
            .mismatch("reduce", Rank(0), 0, 0)
            .is_none());
    }

    /// Windows: equal lists agree whatever the starting agreement's
    /// arguments; a list that differs anywhere is found, at the lowest
    /// sequence number where it does, unless every member there started
    /// from it (that agreement compared it).
    #[test]
    fn windows_and_their_first_difference() {
        let all = sigs();
        let (b0, b3) = (all[5], Sig::broadcast(0, ElemId::of::<u8>()));
        let a = vec![(4, all[0], true), (5, b3, false), (6, b3, false)];
        // Another start signature (the same agreement, failed there).
        let a2 = vec![(4, all[1], true), (5, b3, false), (6, b3, false)];
        assert_eq!(Window::of(&a), Window::of(&a2));
        // The digest is FNV-1a over each entry's encoding, the starting
        // agreement's without its signature.
        let mut enc = Vec::new();
        for &e in &a {
            let mut one = Vec::new();
            encode_entries(&[e], &mut one);
            enc.extend_from_slice(&one[..if e.2 { 9 } else { one.len() }]);
        }
        let fnv = enc.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!(Window::of(&a).digest(), fnv);
        assert_ne!(Window::of(&a).digest(), Window::of(&a[1..]).digest());
        assert_eq!(first_mismatch(&[a.clone(), a2.clone()]), None);
        // One member's broadcast at 6 believes in another root.
        let b = vec![(4, all[0], true), (5, b3, false), (6, b0, false)];
        assert_ne!(Window::of(&a), Window::of(&b));
        let (seq, s) = first_mismatch(&[a.clone(), b]).expect("a difference");
        assert_eq!((seq, s.first_rank()), (6, 0));
        assert!(s.disagrees());
        // One member ran an agreement (a barrier) at 5 where the other
        // broadcast eagerly: its window starts there.
        let c = vec![(5, all[4], true), (6, b3, false)];
        assert_ne!(Window::of(&a), Window::of(&c));
        let (seq, s) = first_mismatch(&[a.clone(), c.clone()]).expect("a difference");
        assert_eq!(seq, 5);
        let e = s.mismatch("barrier", Rank(0), 0, seq).unwrap().to_string();
        assert!(e.contains("broadcast") && e.contains("barrier"), "{e}");
        // Merged digests: any member's difference shows.
        let mut m = Summary::of(0, all[4]).with_window(Window::of(&a));
        m.merge(&Summary::of(1, all[4]).with_window(Window::of(&a)));
        assert!(!m.window().differs());
        m.merge(&Summary::of(2, all[4]).with_window(Window::of(&c)));
        assert!(m.window().differs());
        let mut enc = Vec::new();
        m.encode(&mut enc);
        assert_eq!(Summary::decode(&enc, 3), Some(m));
        // Entries round-trip; garbage is none.
        let mut enc = Vec::new();
        encode_entries(&a, &mut enc);
        assert_eq!(decode_entries(&enc), Some(a));
        assert_eq!(decode_entries(&enc[1..]), None);
    }

    #[test]
    fn kinds_round_trip() {
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(*k as u8 as usize, i + 1);
            assert_eq!(Kind::from_u8(*k as u8), Some(*k));
        }
        assert_eq!(Kind::from_u8(0), None);
        assert_eq!(Kind::from_u8(KINDS.len() as u8 + 1), None);
        let a = Sig::of(Kind::Alltoallv, None, ElemId::of::<u8>(), OpId::None, 3);
        let b = Sig::of(Kind::Alltoallv, None, ElemId::of::<u8>(), OpId::None, 4);
        assert_eq!(a.difference(&b).unwrap().0, "block count");
    }

    #[test]
    fn garbage_is_not_a_summary() {
        let mut enc = Vec::new();
        Summary::of(1, sigs()[0]).encode(&mut enc);
        assert!(Summary::decode(&enc, 2).is_some());
        assert!(Summary::decode(&enc, 1).is_none(), "rank out of range");
        assert!(Summary::decode(&enc[1..], 2).is_none(), "short");
        let mut bad = enc.clone();
        bad[4] = 99;
        assert!(Summary::decode(&bad, 2).is_none(), "unknown collective");
        let mut bad = enc.clone();
        bad[5] = 77;
        assert!(Summary::decode(&bad, 2).is_none(), "unknown operator");
    }
}
