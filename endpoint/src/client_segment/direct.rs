//! The paths into a peer's client segment that need no handler at the
//! target: this rank's own registration by a copy, a node-local peer's by
//! cross-memory attach ([`rgex_core::cma`]). Chosen per peer when the
//! segment is registered ([`ClientPath`]), from what registration
//! exchanged (every rank's length, address and process id) and a probe.

use super::{check_in, closed, segment_of, ClientSegments, CLIENT_SEGMENT_STRIDE};
use crate::rma::RmaPath;
use crate::Endpoint;
use rgex_core::observe::RmaRoute;
use rgex_core::{cma, Error, GlobalAddr, OpCounter, Rank, Result};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The native operations' counters an entry keeps are pruned of finished
/// ones when they reach this many.
const PRUNE_AT: usize = 64;

/// How this rank reaches a peer's registration of a client segment, for a
/// put or get of at least [`CMA_MIN`] bytes (below that every node-local
/// peer but this rank takes the reference: see [`CMA_MIN`]). Atomics and
/// VIS take the active-message reference on every path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientPath {
    /// This rank's own registration: a copy under the table's lock.
    Local,
    /// A node-local peer's, by cross-memory attach
    /// (`process_vm_writev`/`readv`) into its process, under this rank's
    /// table's read lock.
    Cma,
    /// The conduit's own RMA (RDMA into the peer's registration of the
    /// memory with the network: `fi_mr_reg`), posted under this rank's
    /// table's read lock.
    Native,
    /// Active messages: the target's handler copies (rgex's reference).
    Reference,
}

/// The smallest put or get that cross-memory attach carries; smaller ones
/// take the active-message reference. Measured on smp between two ranks
/// of this machine (2 vCPUs, shared: `rgex-benches`' `client_segment`,
/// built with this set to 0, the two paths alternated job by job over 26
/// rounds, best round; docs/ARCHITECTURE.md has the table): with the
/// target polling, the reference is faster below 1 MiB (8 B put 0.7
/// against 1.4 us, 256 KiB 12.8 against 39 us: each cross-memory attach
/// call pins the peer's pages), and from 1 MiB the two tie (put 61
/// against 68 us, get 74 against 69 us, floods 14.9 against 15.9 GB/s),
/// where cross-memory attach needs neither the target's progress nor its
/// CPU for the copy.
pub const CMA_MIN: usize = 1 << 20;

/// Why [`CMA_MIN`] is what it is (rgex-info prints it).
pub const CMA_MIN_WHY: &str = "measured on smp here: below 1 MiB active messages to a polling \
    target are faster (8 B put 0.7 against 1.4 us, 256 KiB 12.8 against 39 us); from 1 MiB the \
    two tie (put 61 against 68 us, get 74 against 69 us) and cross-memory attach needs neither \
    the target's progress nor its CPU";

/// What registration exchanged about one rank's registration.
#[derive(Clone, Copy, Debug)]
pub(super) struct Peer {
    /// How many bytes it registered.
    pub(super) len: u64,
    /// Their address in its process.
    pub(super) addr: u64,
    /// Its process.
    pub(super) pid: u32,
    /// How this rank reaches them.
    pub(super) path: ClientPath,
}

/// What each rank tells the others at registration: length, address,
/// process id, little-endian; then a byte saying whether the conduit's
/// card follows, and that card.
pub(super) const CARD: usize = 24;

/// This rank's card, with the conduit's (`net`) if it registered the
/// memory.
pub(super) fn card(ptr: *mut u8, len: usize, net: Option<&[u8]>) -> Vec<u8> {
    let mut c = Vec::with_capacity(CARD + 1 + net.map_or(0, <[u8]>::len));
    c.extend_from_slice(&(len as u64).to_le_bytes());
    c.extend_from_slice(&(ptr as u64).to_le_bytes());
    c.extend_from_slice(&u64::from(std::process::id()).to_le_bytes());
    c.push(u8::from(net.is_some()));
    c.extend_from_slice(net.unwrap_or_default());
    c
}

/// The conduit's card in an exchanged one (`None`: it had none).
pub(super) fn net_card(c: &[u8]) -> Option<Vec<u8>> {
    match c.get(CARD) {
        Some(1) => Some(c[CARD + 1..].to_vec()),
        _ => None,
    }
}

/// Whether this process lets its node-local peers attach (Yama), decided
/// once, before its first registration's exchange.
fn allowed() -> &'static std::result::Result<(), String> {
    static ALLOWED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    ALLOWED.get_or_init(|| {
        #[cfg(feature = "fault-injection")]
        if std::env::var(rgex_core::config::vars::FAULT_CMA_REFUSED.name).as_deref() == Ok("1") {
            return Err(format!(
                "refused by {}=1 (a test's fault)",
                rgex_core::config::vars::FAULT_CMA_REFUSED.name
            ));
        }
        cma::allow_peers()
    })
}

/// Make this process attachable (where Yama needs it) before the
/// exchange, so that a peer's probe after it finds it so.
pub(super) fn prepare() {
    let _ = allowed();
}

/// Said once per process: why node-local peers' client segments take the
/// reference.
fn fall_back(me: Rank, peer: Rank, why: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            rank = me.0,
            peer = peer.0,
            "client segments of node-local peers take active messages, not cross-memory attach \
             (first refused towards {peer}: {why})"
        );
    }
}

/// Every rank's [`Peer`] from the exchanged cards, each path chosen:
/// this rank `Local` (unless RMA is forced to the reference), a peer
/// whose primordial segment is mapped here (a node-local peer, the bypass
/// on) `Cma` if a one-byte probe read of its registration succeeds, a
/// peer the conduit's RMA reaches `Native` where `native` (the conduit's
/// answer to the exchanged network cards) says so, the others
/// `Reference`.
pub(super) fn peers(ep: &Endpoint, cards: &[Vec<u8>], native: &[bool]) -> Result<Box<[Peer]>> {
    let me = ep.rank();
    cards
        .iter()
        .enumerate()
        .map(|(r, c)| {
            let word = |i: usize| {
                c.get(i * 8..i * 8 + 8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
            };
            let (Some(len), Some(addr), Some(pid), true) =
                (word(0), word(1), word(2), c.len() > CARD)
            else {
                return Err(Error::Bootstrap(format!(
                    "rank {}: rank {r}'s client segment card was {} bytes, not over {CARD}",
                    me.0,
                    c.len()
                )));
            };
            let peer = Rank(r as u32);
            let mut p = Peer {
                len,
                addr,
                pid: pid as u32,
                path: ClientPath::Reference,
            };
            p.path = choose(ep, peer, &p, native.get(r).copied().unwrap_or(false));
            Ok(p)
        })
        .collect()
}

fn choose(ep: &Endpoint, peer: Rank, p: &Peer, native: bool) -> ClientPath {
    let me = ep.rank();
    match ep.rma_path(peer) {
        RmaPath::Reference => return ClientPath::Reference,
        _ if peer == me => return ClientPath::Local,
        RmaPath::Native if native => return ClientPath::Native,
        RmaPath::Native => return ClientPath::Reference,
        RmaPath::Mapped => {}
    }
    if let Err(why) = allowed() {
        fall_back(me, peer, why);
        return ClientPath::Reference;
    }
    if p.len == 0 {
        // Nothing to reach: every access is refused by its range check.
        return ClientPath::Cma;
    }
    let mut byte = 0u8;
    // SAFETY: one byte into a local; the remote byte is the first of the
    // peer's registration, exchanged just now and valid until it
    // deregisters (which it cannot before the barrier ending this
    // registration).
    match unsafe { cma::read(p.pid, p.addr, &mut byte, 1) } {
        Ok(()) => ClientPath::Cma,
        Err(e) => {
            fall_back(
                me,
                peer,
                &format!("process_vm_readv of process {}: {e}", p.pid),
            );
            ClientPath::Reference
        }
    }
}

/// This rank's side of one transfer by a direct path.
#[derive(Clone, Copy)]
pub(crate) enum Local {
    /// A put's source.
    From(*const u8),
    /// A get's destination.
    Into(*mut u8),
}

impl ClientSegments {
    /// Carry out a transfer of `len > 0` bytes at `at` (in a client
    /// segment) by this rank's direct path to `at.rank`, under the table's
    /// read lock, so that this rank's deregistration waits for it: `None`
    /// if that path is the reference (the caller sends active messages).
    /// A closed segment or a range beyond what the peer registered is its
    /// error; so is a refused system call, naming the peer and segment.
    ///
    /// # Safety
    /// `local` must be readable (`From`) or writable (`Into`) for `len`
    /// bytes for the call.
    pub(crate) unsafe fn direct(
        &self,
        me: Rank,
        at: GlobalAddr,
        len: usize,
        local: Local,
    ) -> Option<Result<()>> {
        let k = segment_of(at.offset)?;
        let table = self.table.read();
        let entry = table.get(k - 1)?;
        if !entry.open {
            return Some(Err(closed(at.rank, at.offset, k)));
        }
        let peer = entry.peers.get(at.rank.index())?;
        if let Err(e) = check_in(at.rank, at.offset, len, k, peer.len) {
            return Some(Err(e));
        }
        let within = at.offset - k as u64 * CLIENT_SEGMENT_STRIDE;
        match peer.path {
            ClientPath::Reference | ClientPath::Native => None,
            ClientPath::Cma if len < CMA_MIN => None,
            ClientPath::Local => {
                // `wrapping_add`: inside this rank's registration (checked).
                let mine = entry.base.wrapping_add(within as usize);
                match local {
                    Local::From(src) => {
                        // Ordering: as a mapped put's (see `Endpoint::put`).
                        fence(Ordering::Release);
                        // SAFETY: `mine..+len` is inside this rank's open
                        // registration, which the read lock keeps; the
                        // caller guarantees `src` (a put may overlap it).
                        unsafe { std::ptr::copy(src, mine, len) };
                    }
                    Local::Into(dst) => {
                        // SAFETY: as above, the other way.
                        unsafe { std::ptr::copy(mine, dst, len) };
                        // Ordering: as a mapped get's.
                        fence(Ordering::Acquire);
                    }
                }
                Some(Ok(()))
            }
            ClientPath::Cma => {
                let remote = peer.addr + within;
                // SAFETY: the remote range is inside what the peer
                // registered (checked), which it hands back only after
                // the barrier its deregistration shares with this rank's,
                // which waits for this read lock; the caller guarantees
                // the local side. The system call orders like a fence.
                let r = unsafe {
                    match local {
                        Local::From(src) => cma::write(peer.pid, remote, src, len),
                        Local::Into(dst) => cma::read(peer.pid, remote, dst, len),
                    }
                };
                Some(r.map_err(|e| {
                    let what = match local {
                        Local::From(_) => "put",
                        Local::Into(_) => "get",
                    };
                    Error::Failed(format!(
                        "cross-memory attach {what} of {len} bytes at {me} into {}'s client \
                         segment {k} (offset {:#x}, its process {}): {e}",
                        at.rank, at.offset, peer.pid
                    ))
                }))
            }
        }
    }

    /// The route an operation of `len` bytes at `at` (in a client segment)
    /// takes, as the statistics count it: this rank's own registration
    /// is a copy (`Mapped`), a small one by cross-memory attach goes by
    /// active messages.
    pub(crate) fn route_of(&self, at: GlobalAddr, len: usize) -> RmaRoute {
        let Some(k) = segment_of(at.offset) else {
            return RmaRoute::Reference;
        };
        match self.path(k, at.rank) {
            ClientPath::Local => RmaRoute::Mapped,
            ClientPath::Cma if len >= CMA_MIN => RmaRoute::Cma,
            ClientPath::Native => RmaRoute::Native,
            ClientPath::Cma | ClientPath::Reference => RmaRoute::Reference,
        }
    }

    /// True if the conduit's RMA carries operations at `at` (in a client
    /// segment): [`native`](Self::native) posts them.
    pub(crate) fn native_to(&self, at: GlobalAddr) -> bool {
        segment_of(at.offset).is_some_and(|k| self.path(k, at.rank) == ClientPath::Native)
    }

    /// Post a native operation on `len` bytes at `at` (`post`, the
    /// conduit's `try_put` or `try_get`) under the table's read lock,
    /// after checking the segment is open and the range inside what the
    /// peer registered; its completion counters are kept with the entry,
    /// so that deregistration waits for them before the network
    /// registration is closed.
    pub(crate) fn native(
        &self,
        at: GlobalAddr,
        len: usize,
        counters: &[&Arc<OpCounter>],
        post: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let k = segment_of(at.offset).ok_or_else(|| closed(at.rank, at.offset, 0))?;
        let table = self.table.read();
        let entry = table
            .get(k - 1)
            .ok_or_else(|| closed(at.rank, at.offset, k))?;
        if !entry.open {
            return Err(closed(at.rank, at.offset, k));
        }
        let limit = entry.peers.get(at.rank.index()).map_or(0, |p| p.len);
        check_in(at.rank, at.offset, len, k, limit)?;
        post()?;
        let mut inflight = entry.inflight.lock();
        for c in counters {
            // One entry per counter (an NBI category serves many puts).
            if !inflight.last().is_some_and(|l| Arc::ptr_eq(l, c)) {
                if inflight.len() >= PRUNE_AT {
                    inflight.retain(|c| !c.peek_done());
                }
                inflight.push(Arc::clone(c));
            }
        }
        Ok(())
    }

    /// How this rank reaches `peer`'s registration of segment `k`.
    pub(super) fn path(&self, k: usize, peer: Rank) -> ClientPath {
        self.table
            .read()
            .get(k - 1)
            .and_then(|e| e.peers.get(peer.index()))
            .map_or(ClientPath::Reference, |p| p.path)
    }
}
