//! Calls held per target before they go out: a small call (rpc, rpc_ff,
//! rput_then's call) that follows another with no progress between is
//! appended to its target's buffer, and each buffer goes out as one
//! message when it fills, or at the latest when this rank next makes
//! progress through rgex-pgas (any `progress`, `wait`, poll of an rpc's
//! future, barrier or collective) or calls `discharge`. A flood of calls
//! then costs one message per buffer instead of one per call: the
//! message's send, its handler at the target and the queueing of its
//! work were a third of a small call's instructions. The first call after
//! progress goes at once, so a caller that awaits each result before the
//! next call pays nothing for the holding. The target serves a buffer's
//! calls in the order they were made, and a call sent on its own goes
//! after what is held for its target.
//!
//! UPC++ allows the same (an operation's injection may wait for the
//! caller's next progress; `upcxx::discharge` forces it), and the same
//! caution follows: a rank that is about to wait by other means (a
//! blocking rgex call, a lock another rank releases) calls
//! [`Pgas::discharge`](crate::Pgas::discharge) first.
//!
//! The buffers are shared by the rank's threads, so any thread's progress
//! sends what every thread made. This module holds them, the runtime's
//! sending of calls through them (`Pgas::send_call`, `flush_calls`,
//! [`Pgas::discharge`]) and the last handle's flush. Entries are
//! `[ticket: u32 LE][function: FnId::LEN bytes][length: u32 LE][body]`,
//! back to back.

use crate::error::Error;
use crate::fn_id::FnId;
use crate::framing::{self, Added, Buffer, Taken};
use crate::runtime::{lock, Body, Pgas, Returned};
use rgex::{Endpoint, Flags, HandlerId, Rank};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Bodies larger than this (bytes, encoded) are sent on their own.
pub(crate) const SMALL: usize = 1024;

/// Bytes of an entry's prefix (ticket, function).
const PREFIX: usize = 4 + FnId::LEN;

/// Per-target buffers of calls made and not yet sent.
pub(crate) struct Outbox {
    held: OnceLock<Box<[Mutex<Buffer>]>>,
    /// The targets whose buffers went from empty to holding something
    /// since the last [`take_targets`](Self::take_targets). A target is
    /// added under its buffer's lock, so a buffer that holds something
    /// is either listed here or being taken by a flush.
    dirty: Mutex<Vec<Rank>>,
    /// Whether `dirty` may list a target: set under its lock, cleared
    /// under it by `take_targets`, read without it so that progress with
    /// nothing held takes no lock. Relaxed: a hint; a thread always sees
    /// its own calls' setting (program order), and what another thread
    /// holds goes out at that thread's next progress if not sooner.
    any: AtomicBool,
    /// A call was made since the last flush. The first call after one
    /// goes out at once (a caller that waits for each result pays no
    /// holding); the calls that follow it with no progress between are
    /// held. Relaxed: a heuristic, never a guarantee about a call.
    streaming: AtomicBool,
}

impl Outbox {
    pub fn new() -> Self {
        Outbox {
            held: OnceLock::new(),
            dirty: Mutex::new(Vec::new()),
            any: AtomicBool::new(false),
            streaming: AtomicBool::new(false),
        }
    }

    /// Size the buffers for a job of `ranks` ranks (once, at init).
    pub fn size(&self, ranks: u32) {
        let _ = self
            .held
            .set((0..ranks).map(|_| Mutex::default()).collect());
    }

    /// A call is being made: whether to hold it (another call came
    /// before it since the last [`flushed`](Self::flushed)).
    pub fn hold_next(&self) -> bool {
        // Relaxed: a heuristic (see the field); a load first, so a flood
        // does not write the line at every call.
        self.streaming.load(Ordering::Relaxed) || self.streaming.swap(true, Ordering::Relaxed)
    }

    /// Progress sent what was held: the next call goes at once.
    pub fn flushed(&self) {
        // Relaxed: a heuristic (see the field); written only if set.
        if self.streaming.load(Ordering::Relaxed) {
            self.streaming.store(false, Ordering::Relaxed);
        }
    }

    /// Whether any call may be held (a hint, see `any`).
    pub fn maybe_held(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Append a call for `target`: `ticket`, function `id` and a body
    /// that `write` encodes (see [`Buffer::append`]), to a buffer sent
    /// at `cap` bytes.
    pub fn add(
        &self,
        target: Rank,
        ticket: u32,
        id: FnId,
        cap: usize,
        write: impl FnOnce(&mut [u8]) -> Result<usize, postcard::Error>,
    ) -> Added<postcard::Error> {
        let Some(slot) = self.held.get().and_then(|h| h.get(target.0 as usize)) else {
            return Added::NotHeld;
        };
        let mut prefix = [0u8; PREFIX];
        prefix[..4].copy_from_slice(&ticket.to_le_bytes());
        id.write(&mut prefix[4..]);
        let mut buf = lock(slot);
        let was_empty = buf.len() == 0;
        let added = buf.append(&prefix, SMALL, cap, write);
        if was_empty && matches!(added, Added::Held) {
            lock(&self.dirty).push(target);
            // Relaxed: a hint (see the field), set under `dirty`'s lock.
            self.any.store(true, Ordering::Relaxed);
        }
        added
    }

    /// The targets that may hold calls (each then taken by
    /// [`take`](Self::take)).
    pub fn take_targets(&self) -> Vec<Rank> {
        if !self.maybe_held() {
            return Vec::new();
        }
        let mut d = lock(&self.dirty);
        // Relaxed: a hint (see the field), cleared under `dirty`'s lock.
        self.any.store(false, Ordering::Relaxed);
        std::mem::take(&mut *d)
    }

    /// What `target`'s buffer holds, taken out (`None` if nothing).
    pub fn take(&self, target: Rank) -> Option<Taken> {
        let slot = self.held.get()?.get(target.0 as usize)?;
        lock(slot).take()
    }

    /// Give `target`'s buffer back the allocation of what was taken from
    /// it and sent.
    pub fn give_back(&self, target: Rank, sent: Taken) {
        if let Some(slot) = self.held.get().and_then(|h| h.get(target.0 as usize)) {
            lock(slot).give(sent);
        }
    }
}

/// How long the last handle's drop tries to send the calls still held
/// (a target whose network stays full for longer is reported).
const FLUSH_AT_EXIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Send the calls still held when the last handle is dropped (a program
/// may end with an `rpc_ff` and no progress after it): with rgex's own
/// progress only, since no handle is left to run bodies with, and for at
/// most [`FLUSH_AT_EXIT`] per target; what cannot go is reported.
pub(crate) fn send_at_exit(outbox: &Outbox, ep: &Endpoint, calls: HandlerId) {
    for target in outbox.take_targets() {
        let Some(held) = outbox.take(target) else {
            continue;
        };
        let start = std::time::Instant::now();
        let sent = loop {
            let n = held.len();
            match ep.prepare_request_medium(target, None, n, n, 0, Flags::IMMEDIATE) {
                Ok(mut p) => {
                    p.buf()[..n].copy_from_slice(&held);
                    break p.commit(calls, &[], n).map_err(|e| e.to_string());
                }
                Err(rgex::Error::WouldBlock { .. }) => {
                    if let Some(why) = ep.conduit().peer_gone(target) {
                        break Err(why);
                    }
                    if start.elapsed() > FLUSH_AT_EXIT {
                        break Err(format!("its network stayed full for {FLUSH_AT_EXIT:?}"));
                    }
                    if let Err(e) = ep.poll() {
                        break Err(e.to_string());
                    }
                }
                Err(e) => break Err(e.to_string()),
            }
        };
        if let Err(why) = sent {
            let lost = whole_entries(&held).0;
            tracing::error!(
                rank = ep.rank().0,
                peer = target.0,
                lost,
                "{lost} calls to {target} made before the last handle was dropped could not be sent: {why}"
            );
        }
    }
}

impl Pgas {
    /// Send call `ticket` of function `id` with arguments `args` to
    /// `target`: held with the other small calls to it (see
    /// [`outbox`](crate::outbox)), or on its own, after them, if it is
    /// large. `what` names the arguments for a serialization error.
    /// Generic, so a held call's arguments are encoded with no dynamic
    /// call.
    pub(crate) fn send_call<A: serde::Serialize>(
        &self,
        target: Rank,
        ticket: u32,
        id: FnId,
        args: &A,
        what: impl Fn() -> String,
    ) -> crate::Result<()> {
        let ser = |e: postcard::Error| Error::Serialization {
            rank: self.rank(),
            what: what(),
            why: e.to_string(),
        };
        if self.inner.outbox.hold_next() {
            let cap = self.hold_cap(target);
            loop {
                match self.inner.outbox.add(target, ticket, id, cap, |b| {
                    postcard::to_slice(args, b).map(|used| used.len())
                }) {
                    Added::Held => return Ok(()),
                    Added::Full(held) => self.send_calls(target, held)?,
                    Added::Failed(e) => return Err(ser(e)),
                    Added::NotHeld => break,
                }
            }
        }
        // On its own (the first since progress, or a large one), after
        // what is held for `target`: a target runs one caller's calls in
        // the order they were made.
        self.flush_calls_to(target)?;
        let mut name = [0u8; FnId::LEN];
        id.write(&mut name);
        self.send_body(
            target,
            self.inner.ids.call,
            ticket,
            &name,
            &Body::Value(args),
            what,
        )
    }

    /// Send every call held for any target (see
    /// [`outbox`](crate::outbox)). Calls that could not be sent fail
    /// (their futures resolve to the error); the first error is returned
    /// unless its target left the job (its calls' failures say so).
    /// Inlined: most calls find nothing held (two loads).
    #[inline]
    pub(crate) fn flush_calls(&self) -> crate::Result<()> {
        self.inner.outbox.flushed();
        if !self.inner.outbox.maybe_held() {
            return Ok(());
        }
        self.flush_held_calls()
    }

    /// [`flush_calls`](Self::flush_calls) once something may be held.
    #[inline(never)]
    fn flush_held_calls(&self) -> crate::Result<()> {
        let mut first = Ok(());
        for target in self.inner.outbox.take_targets() {
            let sent = self.flush_calls_to(target);
            if first.is_ok() {
                first = sent;
            }
        }
        first
    }

    /// Send the calls held for `target`.
    fn flush_calls_to(&self, target: Rank) -> crate::Result<()> {
        match self.inner.outbox.take(target) {
            Some(held) => self.send_calls(target, held),
            None => Ok(()),
        }
    }

    /// Send a buffer of held calls to `target`, or fail each of them.
    fn send_calls(&self, target: Rank, held: Taken) -> crate::Result<()> {
        if rgex::observe::on() {
            rgex::observe::pgas(rgex::observe::PgasEvent::HeldBatch);
        }
        let sent = self.send(target, self.inner.ids.calls, &[], &held);
        if let Err(e) = &sent {
            let why = format!("{}: the call could not be sent: {e}", self.rank());
            let mut at = 0;
            while let Some((call, used)) = entry(&held[at..]) {
                at += used;
                self.inner.mail.window.give_back(target);
                if call.ticket & crate::calls::COUNTED != 0 {
                    self.inner
                        .mail
                        .count(call.ticket, target, Some(why.clone()));
                } else if call.ticket != 0 {
                    self.inner
                        .mail
                        .complete(call.ticket, Returned::Failed(why.clone()));
                } else if self.inner.lost_failures.fetch_add(1, Ordering::Relaxed) < 16 {
                    tracing::error!(
                        rank = self.rank().0,
                        peer = target.0,
                        "an rpc_ff to {target} was lost: {why}"
                    );
                }
            }
        }
        self.inner.outbox.give_back(target, held);
        match sent {
            Err(_) if self.ep().conduit().peer_gone(target).is_some() => Ok(()),
            sent => sent,
        }
    }

    /// Send the calls this rank holds now (UPC++'s `discharge`): a small
    /// call may wait for this rank's next progress through rgex-pgas
    /// ([`progress`](Self::progress), [`wait`](Self::wait), the poll of
    /// a call's future, a barrier or collective, or the drop of the last
    /// handle), so a rank about to wait by other means (a blocking rgex
    /// call, a lock another rank will release) calls this first.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// pg.rpc_ff(rgex::Rank(1), |_pg, x: u64| println!("{x}"), 7)?;
    /// pg.discharge()?; // on its way before rgex's own barrier
    /// pg.client().barrier()?;
    /// # Ok(()) }
    /// ```
    pub fn discharge(&self) -> crate::Result<()> {
        self.flush_calls()
    }
}

/// One call in a buffer.
#[derive(Debug, PartialEq)]
pub(crate) struct Entry<'a> {
    pub ticket: u32,
    pub id: FnId,
    pub body: &'a [u8],
}

/// The entry at the start of `b` and the bytes it takes, or `None` if it
/// is cut short.
pub(crate) fn entry(b: &[u8]) -> Option<(Entry<'_>, usize)> {
    let (prefix, body, used) = framing::split(b, PREFIX)?;
    let ticket = u32::from_le_bytes(prefix[..4].try_into().ok()?);
    let id = FnId::read(&prefix[4..])?;
    Some((Entry { ticket, id, body }, used))
}

/// How many whole entries `b` holds, and the bytes they take (less than
/// `b.len()` if the last one is cut short: a damaged message).
pub(crate) fn whole_entries(b: &[u8]) -> (usize, usize) {
    framing::entries(b, PREFIX)
        .map_while(|e| e)
        .fold((0, 0), |(n, at), (_, _, used)| (n + 1, at + used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::tests::bytes;

    /// Bytes of an entry's head (prefix and length).
    const HEAD: usize = PREFIX + framing::LEN;

    fn id(k: u64) -> FnId {
        FnId { offset: k, tag: !k }
    }

    fn entries(b: &[u8]) -> Vec<Entry<'_>> {
        let mut at = 0;
        let mut out = Vec::new();
        while let Some((e, used)) = entry(&b[at..]) {
            out.push(e);
            at += used;
        }
        out
    }

    #[test]
    fn calls_are_held_per_target_in_order_and_read_back() {
        let ob = Outbox::new();
        ob.size(3);
        assert!(!ob.maybe_held());
        let put = |t: u32, ticket: u32, b: &[u8]| {
            ob.add(Rank(t), ticket, id(u64::from(ticket)), 4096, bytes(b))
        };
        assert!(matches!(put(1, 7, b"abc"), Added::Held));
        assert!(matches!(put(2, 8, b""), Added::Held));
        assert!(matches!(put(1, 0, b"xy"), Added::Held));
        assert!(ob.maybe_held());
        // A failed body leaves nothing.
        assert!(matches!(
            ob.add(Rank(1), 10, id(10), 4096, |_| Err(
                postcard::Error::WontImplement
            )),
            Added::Failed(postcard::Error::WontImplement)
        ));
        let mut targets = ob.take_targets();
        targets.sort();
        assert_eq!(targets, [Rank(1), Rank(2)]);
        assert!(!ob.maybe_held());
        let one = ob.take(Rank(1)).unwrap();
        let e = |ticket, body| Entry {
            ticket,
            id: id(u64::from(ticket)),
            body,
        };
        assert_eq!(entries(&one), [e(7, &b"abc"[..]), e(0, &b"xy"[..])]);
        assert_eq!(whole_entries(&one), (2, one.len()));
        assert_eq!(entries(&ob.take(Rank(2)).unwrap()).len(), 1);
        assert!(ob.take(Rank(1)).is_none());
        // Held again: the target is listed again.
        assert!(matches!(put(1, 11, b"q"), Added::Held));
        assert_eq!(ob.take_targets(), [Rank(1)]);
    }

    #[test]
    fn a_full_buffer_is_handed_back_and_large_or_stray_calls_are_not_held() {
        let ob = Outbox::new();
        ob.size(2);
        let cap = 2 * (HEAD + 10);
        let ten = [5u8; 10];
        let put = |ticket: u32| ob.add(Rank(0), ticket, id(1), cap, bytes(&ten));
        assert!(matches!(put(1), Added::Held));
        assert!(matches!(put(2), Added::Held));
        let Added::Full(old) = put(3) else {
            panic!("a third call does not fit {cap} bytes")
        };
        assert_eq!(entries(&old).len(), 2);
        assert!(matches!(put(3), Added::Held));
        let large = vec![1u8; SMALL + 1];
        assert!(matches!(
            ob.add(Rank(1), 4, id(1), 4096, bytes(&large)),
            Added::NotHeld
        ));
        assert!(matches!(
            ob.add(Rank(1), 4, id(1), cap, bytes(&[1u8; 2 * (HEAD + 10)])),
            Added::NotHeld
        ));
        assert!(matches!(
            ob.add(Rank(2), 4, id(1), cap, bytes(b"x")),
            Added::NotHeld
        ));
    }

    #[test]
    fn a_buffer_cut_short_counts_only_its_whole_entries() {
        let ob = Outbox::new();
        ob.size(1);
        for t in 1..=2 {
            let _ = ob.add(Rank(0), t, id(5), 4096, bytes(b"abc"));
        }
        let b = ob.take(Rank(0)).unwrap();
        let one = HEAD + 3;
        assert_eq!(b.len(), 2 * one);
        assert_eq!(whole_entries(&b[..2 * one - 1]), (1, one));
        assert_eq!(whole_entries(&b[..3]), (0, 0));
        // A length past the end is cut short, not read beyond it.
        let mut bad = b[..one].to_vec();
        bad[HEAD - 4..HEAD].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(whole_entries(&bad), (0, 0));
    }
}
