//! The collectives' board: node-local collectives over shared memory.
//!
//! A team whose members all have their board mapped here (smp, or a
//! network conduit with its node-local bypass, every member on this node)
//! runs its collectives through the members' boards instead of active
//! messages, as Open MPI's and GASNet-EX's shared-memory collectives do.
//! Each member owns one lane of its own board ([`rgex_core::locality::BOARD_LEN`]
//! bytes beside its segment) and is the only one that writes it; the other
//! members read it.
//!
//! ```text
//! lane: buffer 0, buffer 1 (collective #s uses buffer s % 2), each:
//!   header (one 64-byte line): held (s + 1 once #s is there, written
//!          last), the member's signature (24 B), its window's digest,
//!          length, flags, and a payload of at most INLINE bytes
//!   window  at a full agreement, the member's window
//!   payload CAP bytes (longer payloads)
//! ```
//!
//! Collective `#s` (the team's sequence number, the engine's: a team's
//! collectives are numbered the same whichever way they run):
//! 1. **Publish**, once this member has finished `#s - 1` and every
//!    member has published `#s - 1` (so has finished `#s - 2`, the last
//!    user of buffer `s % 2`): write the buffer, then `held = s + 1`
//!    (Release).
//! 2. **Read.** Wait until the members it needs hold `#s` (Acquire),
//!    then read their headers and payloads: no member writes that buffer
//!    again before this one has published `#s + 1`.
//! 3. **Agree.** The members' signatures (and digests) are merged into a
//!    [`Summary`], so every member that read them all fails with the same
//!    [`CollectiveMismatch`](rgex_core::Error::CollectiveMismatch) if they
//!    differ, as over active messages.
//! 4. **Finish**, on success or failure: the next collective may publish.
//!
//! A barrier of two thus moves two cache lines: each member's header,
//! once each way (the flow-control check reads a line this member read
//! one collective earlier, unchanged since).
//!
//! Every collective of a board team runs steps 1-4: a barrier, a
//! broadcast, an allreduce or an alltoall whose data fits a buffer does
//! its whole work there ([`BoardOp`]); any other collective runs them as
//! its agreement (a gate, see `Coll::step`) and then its algorithm over
//! active messages. A broadcast is eager (as over active messages): the
//! root publishes and returns, the others read the root alone. Every
//! member signs each collective with the engine's registry, which keeps
//! its window (the eager collectives since its last agreement); a full
//! agreement publishes the window and its digest, and where the digests
//! differ, every member reads every window and fails with the first
//! eager collective they disagree on, as over active messages. Every
//! `EAGER_RUN`-th collective is a full agreement, whatever it is.
//!
//! A member that has gone fails the collectives waiting on it through the
//! engine (`Engine::waits_on`); a header that is not one (a length over
//! the buffer, a sequence number that is not the collective's) fails the
//! collective naming the member.

use super::algo::{Bcast, Coll, Ctx};
use super::engine::{Engine, Step};
use super::ops::Combine;
use super::signature::{self, Sig, Summary, Window, ENTRY_LEN, SIG_LEN};
use super::Element;
use parking_lot::Mutex;
use rgex_core::locality::{Locality, BOARD_LEN};
use rgex_core::{Error, Membership, Result, Segment};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Payload bytes of one buffer: a member's data in one board collective
/// (a broadcast's, an allreduce's contribution, an alltoall's blocks).
pub(crate) const CAP: usize = 8192;
const HDR: usize = 64;
/// A full agreement's window (see `signature::Window`): its length (4
/// bytes), then its entries. At most `EAGER_RUN` entries (every
/// `EAGER_RUN`-th collective is an agreement), 33 bytes each.
const WIN: usize = 4 + (super::EAGER_RUN as usize) * 33 + 60;
const BUF: usize = HDR + WIN + CAP;
const LANE: usize = 2 * BUF;
const _: () = assert!(LANE <= BOARD_LEN);

/// Offsets in a buffer's header, one cache line: what a reader waits on
/// and what it reads next come in one transfer.
const H_HELD: usize = 0;
const H_SIG: usize = 8;
const H_DIGEST: usize = 8 + SIG_LEN;
const H_LEN: usize = H_DIGEST + 8;
const H_FLAGS: usize = H_LEN + 4;
/// Payloads of at most `INLINE` bytes ride in the header's last bytes.
const H_INLINE: usize = H_FLAGS + 4;
const INLINE: usize = HDR - H_INLINE;
const _: () = assert!(INLINE >= 8);

/// A broadcast root's flag: its data does not fit a buffer, and goes over
/// active messages.
const LARGE: u32 = 1;

/// Write `list`, a full agreement's window, into buffer `buf` (its
/// length, then its entries); a window that does not fit says a length
/// no window has, which its readers refuse.
fn write_window(buf: *mut u8, list: &[signature::Entry]) {
    let len = list.len() * ENTRY_LEN;
    let said = if 4 + len <= WIN { len as u32 } else { u32::MAX };
    // SAFETY: `buf` is this member's buffer, BUF bytes inside its board,
    // which no member reads now (see `publish`, which calls this before
    // its Release); the length's 4 bytes and, where it fits, the
    // entries lie inside its WIN bytes of window; the sources are this
    // process's memory.
    unsafe {
        std::ptr::copy_nonoverlapping(said.to_le_bytes().as_ptr(), buf.add(HDR), 4);
        if said != u32::MAX {
            for (i, &e) in list.iter().enumerate() {
                let at = buf.add(HDR + 4 + i * ENTRY_LEN);
                std::ptr::copy_nonoverlapping(signature::entry_bytes(e).as_ptr(), at, ENTRY_LEN);
            }
        }
    }
}

/// One member's lane, as mapped here.
#[derive(Clone, Copy)]
struct Lane(Segment);

impl Lane {
    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is 8-aligned inside the line (the board is 64-byte
        // aligned and at least LANE long, checked in `Board::over`); the
        // mapping outlives the board (its conduit holds it, and the team
        // holds the endpoint); every process touches these words with
        // atomics only.
        unsafe { &*self.0.as_ptr().add(at).cast::<AtomicU64>() }
    }
    /// Buffer `seq % 2`'s `held` word: `seq + 1` once collective `seq`
    /// is published there.
    fn held(&self, seq: u64) -> &AtomicU64 {
        self.word((seq % 2) as usize * BUF + H_HELD)
    }
    /// Buffer `seq % 2`: BUF bytes.
    fn buf(&self, seq: u64) -> *mut u8 {
        // SAFETY: both buffers lie inside the lane (LANE <= the board's
        // length, checked in `Board::over`).
        unsafe { self.0.as_ptr().add((seq % 2) as usize * BUF) }
    }
}

/// A buffer's header, copied out of shared memory.
struct Header {
    sig: Option<Sig>,
    digest: u64,
    len: usize,
    flags: u32,
    inline: [u8; INLINE],
}

impl Header {
    /// The header of `buf` (a buffer whose `held` word said it holds the
    /// collective this member reads).
    fn read(buf: *const u8) -> Header {
        let mut h = [0u8; HDR];
        // SAFETY: `buf` is a buffer's start (Lane::buf), HDR bytes inside
        // the mapping; its owner does not write it again before this
        // member has published its next collective, so this copy of the
        // bytes after `held` races with nothing.
        unsafe {
            std::ptr::copy_nonoverlapping(buf.add(H_SIG), h.as_mut_ptr().add(H_SIG), HDR - H_SIG)
        };
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        Header {
            sig: Sig::decode(&h[H_SIG..H_SIG + SIG_LEN]),
            digest: u64::from_le_bytes(h[H_DIGEST..H_DIGEST + 8].try_into().expect("8 bytes")),
            len: u32_at(H_LEN) as usize,
            flags: u32_at(H_FLAGS),
            inline: h[H_INLINE..].try_into().expect("INLINE bytes"),
        }
    }
}

/// What this member's lane has done, in sequence-number order.
#[derive(Default)]
struct Local {
    /// The next collective to finish (and the next to publish: this
    /// member publishes a collective once it has finished the one
    /// before, so a member that has published #s has finished #s - 1).
    finished: u64,
    /// A collective failed before it finished (a member gone): the board
    /// cannot go on.
    broken: Option<String>,
}

/// A team's boards: every member's lane, mapped here.
pub(crate) struct Board {
    me: u32,
    lanes: Box<[Lane]>,
    local: Mutex<Local>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("me", &self.me)
            .field("members", &self.lanes.len())
            .finish()
    }
}

impl Board {
    /// The board of `team` from the neighbourhood table, if every member
    /// has one mapped here.
    pub(crate) fn over(team: &Membership, table: &Locality) -> Option<Arc<Board>> {
        let lanes = team
            .members()
            .iter()
            .map(|&r| {
                let b = table.board(r)?;
                (b.len() >= LANE && (b.as_ptr() as usize).is_multiple_of(64)).then_some(Lane(b))
            })
            .collect::<Option<Box<[Lane]>>>()?;
        Some(Arc::new(Board {
            me: team.my_rank(),
            lanes,
            local: Mutex::new(Local::default()),
        }))
    }

    fn n(&self) -> u32 {
        self.lanes.len() as u32
    }
}

thread_local! {
    /// A spare payload buffer: what a board collective publishes is
    /// encoded into it, and it comes back when the collective is
    /// dropped, so a thread's run of collectives allocates it once.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `v` encoded for the board, in this thread's spare buffer if it has one.
pub(crate) fn encoded<T: Element>(v: &[T]) -> Vec<u8> {
    // A thread whose locals are gone (at its exit) allocates.
    let mut out = SPARE.try_with(std::cell::Cell::take).unwrap_or_default();
    out.clear();
    T::write_all(v, &mut out);
    out
}

/// Keep `buf` as this thread's spare (the larger of it and the one
/// there, up to a buffer's payload).
fn keep_spare(buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > CAP {
        return;
    }
    let _ = SPARE.try_with(|s| {
        let cur = s.take();
        s.set(if cur.capacity() >= buf.capacity() {
            cur
        } else {
            buf
        });
    });
}

/// A combiner for the collectives that combine nothing.
pub(crate) struct NoOp;

impl<T> Combine<T> for NoOp {
    fn combine(&mut self, _acc: &mut [T], _x: &[T]) -> Result<()> {
        Ok(())
    }
}

/// What a board collective does beyond agreeing.
pub(crate) enum Work<C> {
    /// The agreement alone: a barrier, or the gate of a collective that
    /// runs over active messages after it.
    Agree,
    /// A broadcast from `root` (the root publishes its bytes, or, when
    /// they do not fit, says so and sends `large` over active messages,
    /// on the same instance; the others receive them there).
    Bcast { root: u32, large: Option<Vec<u8>> },
    /// An allreduce of every member's published elements with `op`,
    /// folded in team-rank order.
    Allreduce { op: C },
    /// An alltoall of blocks of `block` bytes.
    Alltoall { block: usize },
}

/// What a board collective gives back.
pub(crate) enum Out<T> {
    /// A barrier's (or a gate's): nothing.
    None,
    /// A broadcast's bytes.
    Bytes(Vec<u8>),
    /// An allreduce's result, or an alltoall's blocks in team-rank order.
    Elems(Vec<T>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Publish,
    Read,
    Finish,
    Large,
    Done,
}

/// The members' window digests: the lowest member's, and the lowest
/// that differs from it, each with its team rank.
type Digests = ((u32, u64), Option<(u32, u64)>);

/// One collective on a team's board (see the module documentation).
pub(crate) struct BoardOp<T, C> {
    ctx: Ctx,
    board: Arc<Board>,
    sig: Sig,
    work: Work<C>,
    /// What this member publishes (at most CAP bytes).
    data: Vec<u8>,
    flags: u32,
    /// This member's arguments are refused for a reason every member
    /// finds the same (see `Coll::refuse`): it fails once they agree.
    refused: Option<Box<Error>>,
    /// A broadcast read from its root alone; the members' digests are
    /// compared at the next full agreement.
    eager: bool,
    phase: Phase,
    /// The next member to read.
    next: u32,
    summary: Summary,
    /// The digest of the window this member published (at a full
    /// agreement, in its buffer: see `window_of`), and the members'
    /// digests: the lowest member's, and the lowest that differs from it.
    digest: u64,
    digests: Option<Digests>,
    /// The root's data did not fit: the broadcast over active messages.
    large: Option<Box<Coll<Bcast>>>,
    /// The member this collective waits on, as last told to the engine.
    told: Option<u32>,
    outcome: Option<Result<Out<T>>>,
    failed_with: Option<Summary>,
}

impl<T: Element, C: Combine<T>> BoardOp<T, C> {
    /// Collective `ctx` with this member's arguments `sig`, publishing
    /// `data` (at most [`CAP`] bytes).
    pub(crate) fn new(
        ctx: Ctx,
        board: Arc<Board>,
        sig: Sig,
        work: Work<C>,
        data: Vec<u8>,
        refused: Option<Error>,
    ) -> Self {
        let eager = match &work {
            Work::Bcast { root, .. } => super::registry::eager_at(ctx.seq) && *root < ctx.n(),
            _ => false,
        };
        let summary = Summary::of(ctx.me(), sig);
        BoardOp {
            ctx,
            board,
            sig,
            work,
            data,
            flags: 0,
            refused: refused.map(Box::new),
            eager,
            phase: Phase::Publish,
            next: 0,
            summary,
            digest: 0,
            digests: None,
            large: None,
            told: None,
            outcome: None,
            failed_with: None,
        }
    }

    /// At a broadcast's root whose data does not fit a buffer: say so in
    /// the header, and send the data over active messages.
    pub(crate) fn mark_large(&mut self) {
        self.flags = LARGE;
    }

    /// The result, once it has finished (once).
    pub(crate) fn take(&mut self) -> Result<Out<T>> {
        self.outcome.take().unwrap_or_else(|| {
            Err(Error::Failed(format!(
                "{} (collective #{} of team {:#x}): its result was taken already",
                self.ctx.what, self.ctx.seq, self.ctx.id
            )))
        })
    }

    /// The disagreement that failed it, if that was why.
    pub(crate) fn failed_with(&self) -> Option<Summary> {
        self.failed_with
    }

    /// Tell the engine which member this collective waits on (once per
    /// member), so that its departure fails the collective.
    fn wait_on(&mut self, c: &Engine, member: u32) {
        if self.told != Some(member) {
            self.told = Some(member);
            if let Ok(r) = self.ctx.team.world_rank(member) {
                c.waits_on((self.ctx.id, self.ctx.seq), r);
            }
        }
    }

    /// Step 1; false while a member may still read the buffer, or an
    /// earlier collective of this member has not published.
    fn publish(&mut self, c: &Engine) -> Result<bool> {
        let s = self.ctx.seq;
        let me = self.board.me;
        let local = self.board.local.lock();
        if let Some(why) = &local.broken {
            return Err(Error::Failed(why.clone()));
        }
        if local.finished != s {
            return Ok(false);
        }
        if s >= 1 {
            for j in 0..self.board.n() {
                // Member j has published #s - 1, so it has finished
                // #s - 2, the last user of buffer s % 2. Acquire: pairs
                // with its Release of `held`, which it made after its
                // reads of #s - 2, so the writes below cannot reach it
                // while it reads. (Usually a hit: this member read that
                // line at #s - 1, and j has not written it since.)
                let lane = self.board.lanes[j as usize];
                if j != me && lane.held(s - 1).load(Ordering::Acquire) < s {
                    drop(local);
                    self.wait_on(c, j);
                    return Ok(false);
                }
            }
        }
        let lane = self.board.lanes[me as usize];
        let buf = lane.buf(s);
        // Signed in sequence-number order (under `local`), as the
        // registry's windows need; an agreement's window goes straight
        // from the registry into the buffer, with no copy between.
        let agreed = c.sign_with(self.ctx.id, s, self.sig, self.eager, |list| {
            write_window(buf, list);
            Window::of(list).digest()
        });
        if let Some(digest) = agreed {
            self.digest = digest;
        }
        let mut h = [0u8; HDR];
        h[H_SIG..H_SIG + SIG_LEN].copy_from_slice(&self.sig.to_bytes());
        h[H_DIGEST..H_DIGEST + 8].copy_from_slice(&self.digest.to_le_bytes());
        debug_assert!(self.data.len() <= CAP);
        let len = self.data.len().min(CAP);
        h[H_LEN..H_LEN + 4].copy_from_slice(&(len as u32).to_le_bytes());
        h[H_FLAGS..H_FLAGS + 4].copy_from_slice(&self.flags.to_le_bytes());
        let (inline, far) = if len <= INLINE { (len, 0) } else { (0, len) };
        h[H_INLINE..H_INLINE + inline].copy_from_slice(&self.data[..inline]);
        // SAFETY: `buf` is this member's buffer s % 2, BUF bytes inside
        // its board; no member reads it now (every one has finished
        // #s - 2, its last user, and none reads #s before the Release
        // below), and `h` and `data` are this process's memory.
        unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr().add(H_SIG), buf.add(H_SIG), HDR - H_SIG);
            std::ptr::copy_nonoverlapping(self.data.as_ptr(), buf.add(HDR + WIN), far);
        }
        // Release: a member that sees s + 1 (Acquire) sees the buffer.
        lane.held(s).store(s + 1, Ordering::Release);
        Ok(true)
    }

    /// Whether step 2 reads member `j`.
    fn reads(&self, j: u32) -> bool {
        match &self.work {
            Work::Bcast { root, .. } if self.eager => j == *root && j != self.board.me,
            _ => j != self.board.me,
        }
    }

    fn malformed(&self, j: u32, why: String) -> Error {
        Error::Failed(format!(
            "{} (collective #{} of team {:#x}): team rank {j}'s collectives board {why}",
            self.ctx.what, self.ctx.seq, self.ctx.id
        ))
    }

    /// Steps 2 and 3 for member `j`: false until it has published.
    fn read(&mut self, c: &Engine, j: u32) -> Result<bool> {
        let s = self.ctx.seq;
        if j == self.board.me {
            self.fold_digest(j, self.digest);
            return Ok(true);
        }
        if !self.reads(j) {
            return Ok(true);
        }
        let lane = self.board.lanes[j as usize];
        // Acquire: pairs with member j's Release of `held`. It holds
        // #s - 2 until j publishes #s, and j publishes #s + 2 there only
        // after this member has published #s + 1.
        let held = lane.held(s).load(Ordering::Acquire);
        if held < s + 1 {
            self.wait_on(c, j);
            return Ok(false);
        }
        if held != s + 1 {
            let held = held.wrapping_sub(1);
            return Err(self.malformed(j, format!("holds collective #{held} where #{s} belongs")));
        }
        let h = Header::read(lane.buf(s));
        let Some(sig) = h.sig else {
            return Err(self.malformed(j, "holds no signature".into()));
        };
        if h.len > CAP {
            let len = h.len;
            return Err(self.malformed(
                j,
                format!("says {len} bytes, over the {CAP} a buffer holds"),
            ));
        }
        self.summary.merge(&Summary::of(j, sig));
        if !self.eager {
            self.fold_digest(j, h.digest);
        }
        if let Work::Bcast { root, .. } = &self.work {
            if j == *root {
                self.flags = h.flags;
            }
        }
        Ok(true)
    }

    fn fold_digest(&mut self, j: u32, d: u64) {
        match &mut self.digests {
            None => self.digests = Some(((j, d), None)),
            Some(((_, first), other @ None)) if *first != d => *other = Some((j, d)),
            Some(_) => {}
        }
    }

    /// `f` of member `j`'s payload (its own, for itself), read in place.
    fn with_payload<R>(&self, j: u32, f: impl FnOnce(&[u8]) -> R) -> R {
        if j == self.board.me {
            return f(&self.data);
        }
        let buf = self.board.lanes[j as usize].buf(self.ctx.seq);
        let h = Header::read(buf);
        let len = h.len.min(CAP);
        if len <= INLINE {
            return f(&h.inline[..len]);
        }
        // SAFETY: `len` <= CAP bytes of member j's buffer #s % 2, inside
        // its board's mapping (which outlives this op), which it does not
        // write before this member finishes #s (`read` checked that it
        // holds #s, Acquire): nothing writes these bytes while `f` reads
        // them.
        f(unsafe { std::slice::from_raw_parts(buf.add(HDR + WIN), len) })
    }

    /// Member `j`'s window, as it published it at this agreement (this
    /// member's own too: in its buffer, which it does not write again
    /// before it has finished this collective).
    fn window_of(&self, j: u32) -> Result<Vec<signature::Entry>> {
        let buf = self.board.lanes[j as usize].buf(self.ctx.seq);
        let mut w = vec![0u8; WIN];
        // SAFETY: WIN bytes of member j's buffer #s % 2, which it does not
        // write before this member finishes #s; `w` is this process's.
        unsafe { std::ptr::copy_nonoverlapping(buf.add(HDR), w.as_mut_ptr(), WIN) };
        let len = u32::from_le_bytes(w[..4].try_into().expect("4 bytes")) as usize;
        w.get(4..4 + len)
            .and_then(signature::decode_entries)
            .ok_or_else(|| {
                self.malformed(j, format!("holds a window of {len} bytes that is not one"))
            })
    }

    /// The error of the first eager collective on which the members'
    /// windows differ (their digests do).
    fn window_mismatch(&self) -> Result<Error> {
        let lists = (0..self.board.n())
            .map(|j| self.window_of(j))
            .collect::<Result<Vec<_>>>()?;
        let rank = self.ctx.team.world_rank(self.board.me)?;
        let found = signature::first_mismatch(&lists).and_then(|(seq, summary)| {
            summary.mismatch(summary.first_sig().kind().name(), rank, self.ctx.id, seq)
        });
        Ok(found.unwrap_or_else(|| {
            Error::Failed(format!(
                "{} on {rank} (collective #{} of team {:#x}): the members' windows of eager \
                 collectives differ, yet no collective in them does",
                self.ctx.what, self.ctx.seq, self.ctx.id
            ))
        }))
    }

    /// The outcome once every member needed has been read.
    fn outcome(&mut self) -> Result<Out<T>> {
        let (ctx, me) = (&self.ctx, self.board.me);
        if let Some(e) = self
            .summary
            .mismatch(ctx.what, ctx.team.world_rank(me)?, ctx.id, ctx.seq)
        {
            self.failed_with = Some(self.summary);
            return Err(e);
        }
        if let Some((_, Some(_))) = self.digests {
            return Err(self.window_mismatch()?);
        }
        if let Some(e) = self.refused.take() {
            return Err(*e);
        }
        let n = self.board.n();
        match &mut self.work {
            Work::Agree => Ok(Out::None),
            Work::Bcast { root, .. } => {
                let root = *root;
                if self.flags & LARGE != 0 {
                    return Ok(Out::None);
                }
                Ok(Out::Bytes(if root == me {
                    std::mem::take(&mut self.data)
                } else {
                    self.with_payload(root, <[u8]>::to_vec)
                }))
            }
            Work::Allreduce { .. } => {
                let want = self.data.len();
                let count = want / T::SIZE;
                // Member j's elements land behind the sum so far, and are
                // folded into it there: one allocation in all.
                let room = if n > 1 { 2 * count } else { count };
                let mut acc: Vec<T> = Vec::with_capacity(room);
                for j in 0..n {
                    let len = self.with_payload(j, |b| {
                        if b.len() == want {
                            acc.extend(b.chunks_exact(T::SIZE).map(T::read));
                        }
                        b.len()
                    });
                    if len != want {
                        return Err(
                            self.malformed(j, format!("holds {len} bytes where {want} belong"))
                        );
                    }
                    if j > 0 {
                        let Work::Allreduce { op } = &mut self.work else {
                            unreachable!("an allreduce's work")
                        };
                        let (a, x) = acc.split_at_mut(count);
                        op.combine(a, x)?;
                        acc.truncate(count);
                    }
                }
                Ok(Out::Elems(acc))
            }
            Work::Alltoall { block } => {
                let block = *block;
                let want = block * n as usize;
                let at = me as usize * block;
                // Decoded straight from the members' buffers.
                let mut out: Vec<T> = Vec::with_capacity(want / T::SIZE);
                for j in 0..n {
                    let len = self.with_payload(j, |b| {
                        if b.len() == want {
                            out.extend(b[at..at + block].chunks_exact(T::SIZE).map(T::read));
                        }
                        b.len()
                    });
                    if len != want {
                        return Err(
                            self.malformed(j, format!("holds {len} bytes where {want} belong"))
                        );
                    }
                }
                Ok(Out::Elems(out))
            }
        }
    }

    /// Step 4; false while an earlier collective of this member has not
    /// finished.
    fn finish(&mut self) -> bool {
        let s = self.ctx.seq;
        let mut local = self.board.local.lock();
        if local.finished != s {
            return false;
        }
        // The members learn it from this member's next publication.
        local.finished = s + 1;
        true
    }
}

impl<T, C> Drop for BoardOp<T, C> {
    fn drop(&mut self) {
        keep_spare(std::mem::take(&mut self.data));
    }
}

impl<T: Element, C: Combine<T>> Step for BoardOp<T, C> {
    fn step(&mut self, c: &Engine) -> Result<bool> {
        loop {
            match self.phase {
                Phase::Publish => {
                    if !self.publish(c)? {
                        return Ok(false);
                    }
                    self.phase = Phase::Read;
                }
                Phase::Read => {
                    while self.next < self.board.n() {
                        match self.read(c, self.next) {
                            Ok(false) => return Ok(false),
                            Ok(true) => self.next += 1,
                            Err(e) => {
                                self.outcome = Some(Err(e));
                                break;
                            }
                        }
                    }
                    if self.outcome.is_none() {
                        self.outcome = Some(self.outcome());
                    }
                    self.phase = Phase::Finish;
                }
                Phase::Finish => {
                    if !self.finish() {
                        return Ok(false);
                    }
                    let large = self.flags & LARGE != 0 && matches!(self.outcome, Some(Ok(_)));
                    self.phase = if large { Phase::Large } else { Phase::Done };
                }
                Phase::Large => {
                    if self.large.is_none() {
                        let Work::Bcast { root, large } = &mut self.work else {
                            unreachable!("only a broadcast is large")
                        };
                        let (root, data) = (*root, large.take());
                        let ctx = Ctx {
                            board: None,
                            ..self.ctx.clone()
                        };
                        self.large = Some(Box::new(super::boarded::bcast_coll(
                            ctx, root, data, self.sig,
                        )));
                    }
                    let coll = self.large.as_mut().expect("built above");
                    if !coll.step(c)? {
                        return Ok(false);
                    }
                    let data = coll.part.data.take().unwrap_or_default();
                    self.outcome = Some(Ok(Out::Bytes(data)));
                    self.phase = Phase::Done;
                }
                Phase::Done => {
                    return match self.outcome.take() {
                        Some(Err(e)) => Err(e),
                        other => {
                            self.outcome = other;
                            Ok(true)
                        }
                    };
                }
            }
        }
    }

    fn id(&self) -> (u64, u64) {
        (self.ctx.id, self.ctx.seq)
    }

    fn what(&self) -> &'static str {
        self.ctx.what
    }

    fn disagreement(&self) -> Option<Summary> {
        self.failed_with
            .or_else(|| self.large.as_ref().and_then(|l| l.disagreement()))
    }

    fn fail(&mut self, e: Error) -> Error {
        // A member is gone (or said so) before this collective finished:
        // the members after it would wait for it for ever.
        if self.phase != Phase::Done && self.phase != Phase::Large {
            let mut local = self.board.local.lock();
            local.broken.get_or_insert_with(|| {
                format!(
                    "the collectives board of team {:#x} stopped at collective #{}: {e}",
                    self.ctx.id, self.ctx.seq
                )
            });
        }
        self.phase = Phase::Done;
        e
    }
}
