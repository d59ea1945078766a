//! The in-process "network" the loopback transports of one job share:
//! per rank an endpoint (posted receives, a completion queue, its
//! registered segment) and, per ordered pair of ranks, a wire of
//! transfers in flight, with the knobs a test turns.
//!
//! A post enters the wire from its rank to the peer; it is carried
//! (bytes placed, completions queued) by its sender's
//! [`poll`](crate::Transport::poll), [`delay`](Fabric::set_delay) polls
//! after it was posted, in order per pair. Carrying a send takes the
//! peer's oldest posted receive (or, if none is posted, leaves the bytes
//! as unexpected, counted as an [overrun](Fabric::overruns), until one
//! is); carrying a write places the bytes in the peer's segment, a read
//! copies them out. A write without delivery completion completes at the
//! sender when posted (the bytes left) and lands when carried, so only a
//! read behind it on the wire proves it landed, as on a real network.
//!
//! Everything is under one lock: the fabric is a test device, not a
//! fast path.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// What the fabric does with transfers to a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Carried as usual.
    Alive,
    /// Dead: every transfer to it completes with an error naming it.
    Dead,
    /// Stopped answering: transfers to it stay on the wire, never
    /// carried, never completed (until it is [`Dead`](Fate::Dead)).
    Silent,
}

/// A transfer on a wire.
pub(crate) enum Kind {
    /// A message (the bytes, taken at post time).
    Send(Vec<u8>),
    /// Bytes for `offset` of the peer's segment; `delivery`: complete
    /// at the sender once placed (else completed when posted).
    Write {
        data: Vec<u8>,
        offset: u64,
        delivery: bool,
    },
    /// `len` bytes at `offset` of the peer's segment into `dst`.
    Read { dst: usize, len: usize, offset: u64 },
}

/// A transfer in flight from one rank to another.
pub(crate) struct Transfer {
    /// Its operation id at the sender (`None`: an inject, no completion).
    pub op: Option<u32>,
    /// The sender's poll count from which it may be carried.
    pub due: u64,
    pub kind: Kind,
}

/// One completion waiting in an endpoint's queue.
pub(crate) struct Done {
    pub op: u32,
    /// Bytes received, or why it failed.
    pub result: Result<usize, String>,
    /// It ends a post that counts against the capacity (not a receive).
    pub counted: bool,
}

/// A posted receive buffer.
struct Posted {
    op: u32,
    buf: usize,
    len: usize,
}

/// One rank's endpoint.
#[derive(Default)]
struct Endpoint {
    /// Open (its memory may be touched); cleared when its transport drops.
    open: bool,
    /// Its segment: start and length.
    segment: (usize, usize),
    recvs: VecDeque<Posted>,
    /// Messages that found no posted receive (each an overrun).
    unexpected: VecDeque<Vec<u8>>,
    cq: VecDeque<Done>,
    /// Per peer, transfers in flight to it, in posting order.
    wires: Vec<VecDeque<Transfer>>,
    polls: u64,
    /// Accepted posts (not receives) whose completion is not yet read
    /// (an inject's: until carried).
    outstanding: usize,
    /// Posts accepted while this many are outstanding answer "again"
    /// (`None`: no limit).
    capacity: Option<usize>,
    /// Posts answered "again".
    refused: u64,
}

/// The mutable part of the fabric.
struct Inner {
    eps: Vec<Endpoint>,
    fates: Vec<Fate>,
    delay: u64,
    overruns: u64,
    /// Per (sender, receiver): sends carried (messages, control ones included).
    sends: Vec<u64>,
    /// Per (sender, target): reads carried.
    reads: Vec<u64>,
}

/// The network of one in-process job (see the module docs).
pub struct Fabric {
    size: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric").field("size", &self.size).finish()
    }
}

/// Why a post was refused.
pub(crate) enum Refusal {
    /// The sender's queue is at its capacity: retry after progress.
    Again,
    /// The post cannot be done, with why.
    Bad(String),
}

impl Fabric {
    /// A fabric for `size` ranks: every rank alive, no delay, no limit.
    pub fn new(size: usize) -> Arc<Fabric> {
        Arc::new(Fabric {
            size,
            inner: Mutex::new(Inner {
                eps: (0..size)
                    .map(|_| Endpoint {
                        wires: (0..size).map(|_| VecDeque::new()).collect(),
                        ..Endpoint::default()
                    })
                    .collect(),
                fates: vec![Fate::Alive; size],
                delay: 0,
                overruns: 0,
                sends: vec![0; size * size],
                reads: vec![0; size * size],
            }),
        })
    }

    /// Ranks it connects.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Let `rank` have at most `cap` posts outstanding (`None`: no
    /// limit); beyond, its posts answer "again". Takes effect at once.
    pub fn set_capacity(&self, rank: usize, cap: Option<usize>) {
        self.inner.lock().eps[rank].capacity = cap;
    }

    /// Transfers posted from now on are carried `polls` polls of their
    /// sender after they were posted (0: at its next poll).
    pub fn set_delay(&self, polls: u64) {
        self.inner.lock().delay = polls;
    }

    /// What happens to transfers to `rank` from now on (those already on
    /// a wire included).
    pub fn set_fate(&self, rank: usize, fate: Fate) {
        self.inner.lock().fates[rank] = fate;
    }

    /// Messages that found no posted receive at their target so far (a
    /// sender that outran the receiver's buffers: flow control broke).
    pub fn overruns(&self) -> u64 {
        self.inner.lock().overruns
    }

    /// Messages carried from `src` to `dst` so far.
    pub fn sends(&self, src: usize, dst: usize) -> u64 {
        self.inner.lock().sends[src * self.size + dst]
    }

    /// Reads carried from `src` of `dst`'s segment so far.
    pub fn reads(&self, src: usize, dst: usize) -> u64 {
        self.inner.lock().reads[src * self.size + dst]
    }

    /// Posts of `rank` answered "again" so far.
    pub fn refused(&self, rank: usize) -> u64 {
        self.inner.lock().eps[rank].refused
    }

    /// Transfers from `rank` on the wires now (posted, not yet carried).
    pub fn in_flight(&self, rank: usize) -> usize {
        self.inner.lock().eps[rank]
            .wires
            .iter()
            .map(|w| w.len())
            .sum()
    }

    /// A copy of `len` bytes at `offset` of `rank`'s segment, or `None`
    /// if its endpoint is closed or the range is outside the segment.
    pub fn peek(&self, rank: usize, offset: u64, len: usize) -> Option<Vec<u8>> {
        let g = self.inner.lock();
        let ep = &g.eps[rank];
        let p = seg_range(ep, offset, len).ok()?;
        let mut out = vec![0u8; len];
        // SAFETY: the range lies in the open endpoint's segment, which its
        // transport keeps mapped while open (closing takes this lock).
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, out.as_mut_ptr(), len) };
        Some(out)
    }

    /// Open `rank`'s endpoint on its segment.
    pub(crate) fn open(&self, rank: usize, segment: (usize, usize)) -> Result<(), String> {
        let mut g = self.inner.lock();
        let Some(ep) = g.eps.get_mut(rank) else {
            return Err(format!(
                "rank {rank} is outside the loopback fabric of {} ranks",
                self.size
            ));
        };
        if ep.open {
            return Err(format!("rank {rank}'s loopback endpoint is already open"));
        }
        ep.open = true;
        ep.segment = segment;
        Ok(())
    }

    /// Close `rank`'s endpoint: its memory is no longer touched.
    pub(crate) fn close(&self, rank: usize) {
        let mut g = self.inner.lock();
        let ep = &mut g.eps[rank];
        ep.open = false;
        ep.recvs.clear();
        ep.cq.clear();
        for w in &mut ep.wires {
            w.clear();
        }
    }

    /// Post a receive of up to `len` bytes into `buf` at `rank`.
    pub(crate) fn post_recv(&self, rank: usize, op: u32, buf: usize, len: usize) {
        let mut g = self.inner.lock();
        let ep = &mut g.eps[rank];
        match ep.unexpected.pop_front() {
            Some(msg) => {
                let result = place(&msg, buf, len);
                ep.cq.push_back(Done {
                    op,
                    result,
                    counted: false,
                });
            }
            None => ep.recvs.push_back(Posted { op, buf, len }),
        }
    }

    /// Put `kind` on the wire from `rank` to `peer` as operation `op`.
    pub(crate) fn post(
        &self,
        rank: usize,
        peer: u32,
        op: Option<u32>,
        kind: Kind,
    ) -> Result<(), Refusal> {
        let mut g = self.inner.lock();
        let delay = g.delay;
        let size = self.size;
        let ep = &mut g.eps[rank];
        if peer as usize >= size {
            return Err(Refusal::Bad(format!(
                "rank {peer} is outside the loopback fabric of {size} ranks"
            )));
        }
        if ep.capacity.is_some_and(|c| ep.outstanding >= c) {
            ep.refused += 1;
            return Err(Refusal::Again);
        }
        ep.outstanding += 1;
        if let (
            Some(op),
            Kind::Write {
                delivery: false, ..
            },
        ) = (op, &kind)
        {
            // Transmit completion: the bytes left; they land when carried.
            ep.cq.push_back(Done {
                op,
                result: Ok(0),
                counted: true,
            });
        }
        let due = ep.polls + 1 + delay;
        ep.wires[peer as usize].push_back(Transfer { op, due, kind });
        Ok(())
    }

    /// `rank`'s poll: carry what is due on its wires, then hand over its
    /// completions.
    pub(crate) fn progress(&self, rank: usize) -> Vec<Done> {
        let mut g = self.inner.lock();
        g.eps[rank].polls += 1;
        let now = g.eps[rank].polls;
        for peer in 0..self.size {
            while let Some(t) = g.eps[rank].wires[peer].front() {
                if t.due > now || g.fates[peer] == Fate::Silent {
                    break;
                }
                let t = g.eps[rank].wires[peer].pop_front().expect("front exists");
                g.carry(self.size, rank, peer, t);
            }
        }
        let ep = &mut g.eps[rank];
        let done: Vec<Done> = ep.cq.drain(..).collect();
        let counted = done.iter().filter(|d| d.counted).count();
        ep.outstanding -= counted;
        done
    }
}

impl Inner {
    /// Carry transfer `t` from `src` to `dst`.
    fn carry(&mut self, size: usize, src: usize, dst: usize, t: Transfer) {
        let dead = match (self.fates[dst], self.eps[dst].open) {
            (Fate::Dead, _) => Some(format!("loopback: rank {dst} is dead")),
            (_, false) => Some(format!("loopback: rank {dst} closed its endpoint")),
            _ => None,
        };
        let (result, completes) = match (&t.kind, dead) {
            (
                Kind::Write {
                    delivery: false, ..
                },
                _,
            ) => {
                // Completed when posted; lands now or never.
                if let Kind::Write { data, offset, .. } = &t.kind {
                    if self.fates[dst] == Fate::Alive {
                        let _ = self.write(dst, *offset, data);
                    }
                }
                (Ok(0), false)
            }
            (_, Some(why)) => (Err(why), true),
            (Kind::Send(msg), None) => {
                self.sends[src * size + dst] += 1;
                let ep = &mut self.eps[dst];
                match ep.recvs.pop_front() {
                    Some(r) => {
                        let result = place(msg, r.buf, r.len);
                        ep.cq.push_back(Done {
                            op: r.op,
                            result,
                            counted: false,
                        });
                    }
                    None => {
                        ep.unexpected.push_back(msg.clone());
                        self.overruns += 1;
                    }
                }
                (Ok(0), true)
            }
            (Kind::Write { data, offset, .. }, None) => (self.write(dst, *offset, data), true),
            (
                Kind::Read {
                    dst: to,
                    len,
                    offset,
                },
                None,
            ) => {
                self.reads[src * size + dst] += 1;
                let r = seg_range(&self.eps[dst], *offset, *len).map(|p| {
                    // SAFETY: `p` lies in the open target's segment; `to`
                    // is the sender's buffer, valid until this read's
                    // completion (the transport's post contract).
                    unsafe { std::ptr::copy_nonoverlapping(p as *const u8, *to as *mut u8, *len) };
                    *len
                });
                (r, true)
            }
        };
        match t.op {
            Some(op) if completes => self.eps[src].cq.push_back(Done {
                op,
                result,
                counted: true,
            }),
            // An inject (or a write completed when posted): nothing more
            // will come for it.
            _ => {
                if t.op.is_none() {
                    self.eps[src].outstanding -= 1;
                }
            }
        }
    }

    /// Place `data` at `offset` of `dst`'s segment.
    fn write(&mut self, dst: usize, offset: u64, data: &[u8]) -> Result<usize, String> {
        let p = seg_range(&self.eps[dst], offset, data.len())?;
        // SAFETY: `p .. p + len` lies in the open target's segment.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u8, data.len()) };
        Ok(data.len())
    }
}

/// The address of `len` bytes at `offset` of `ep`'s segment, or why not.
fn seg_range(ep: &Endpoint, offset: u64, len: usize) -> Result<usize, String> {
    let (base, n) = ep.segment;
    let end = offset.checked_add(len as u64);
    match end {
        Some(end) if ep.open && end <= n as u64 => Ok(base + offset as usize),
        _ => Err(format!(
            "loopback: {len} bytes at offset {offset} are outside a segment of {n} bytes"
        )),
    }
}

/// Copy message `msg` into a posted receive of `len` bytes at `buf`.
fn place(msg: &[u8], buf: usize, len: usize) -> Result<usize, String> {
    if msg.len() > len {
        return Err(format!(
            "loopback: a message of {} bytes was truncated to a receive of {len}",
            msg.len()
        ));
    }
    // SAFETY: `buf` is a posted receive of `len >= msg.len()` bytes, the
    // network's until its completion (the transport's post contract).
    unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), buf as *mut u8, msg.len()) };
    Ok(msg.len())
}
