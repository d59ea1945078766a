//! The scc conduit's address plan: where everything of the conduit lives
//! on the chip (message-passing buffers, AM slots, segments), computed
//! identically by every rank from the job's geometry.
//!
//! # Message-passing buffer of core `c` (8 KiB, both pages uncached)
//!
//! ```text
//! page 0  AM flags      flag(c <- s, dir, k)   4 bytes   [(s * 2 + dir) * depth + k] * 4
//!         AM consumed   consumed(c -> r, dir)  4 bytes   flags_end + (r * 2 + dir) * 4
//! page 1  epochs        match(c, t)            4 bytes   4096 + t * 4
//!                       counter(c)             4 bytes   4096 + 256
//! ```
//!
//! Only what is *polled* lives in the MPB: the flags a receiver scans, the
//! counters a sender reads when its slots run out, and the epoch match
//! vector and completion counter (each near its owner: the owner polls it
//! on its own tile, the cheapest place to spin). All of it is uncached, so
//! every poll sees memory and no cached copy can hide or lose an update.
//!
//! # Shared off-chip DRAM (MPBT)
//!
//! ```text
//! [0, am_bytes)        AM slots: slot(s -> r, dir, k) of `slot_bytes` each:
//!                      a 96-byte header, then up to max_medium payload bytes
//! [seg_base[r], +len)  rank r's segment, page aligned
//! ```
//!
//! Why the slots are off-chip: the MPB has 8 KiB per core, and with 48
//! ranks each receiver has 47 senders in two directions; even one slot of a
//! 512-byte Medium per (sender, direction) would need 47 KiB, and one
//! 96-byte header each already 9 KiB. So the MPB holds the 4-byte flags
//! (up to 8 slots per channel fit for 48 ranks) and header and payload go to
//! per-(sender, receiver) buffers in shared DRAM, typed MPBT so that the
//! receiver's CL1INVMB after seeing a flag discards any old copy.
//!
//! Segments are MPBT too (write-through with byte-masked WCB drains, and
//! discarded by CL1INVMB). Write-back would be wrong twice over: a put into
//! a line some other rank holds dirty is erased when that rank writes the
//! whole line back (a lost update, `naive_protocols.rs` shows it), and
//! there is no selective invalidate for write-back lines, so every acquire
//! would need a whole-cache flush.

use crate::emu::{Addr, Layout, MemType, LINE, MAX_CORES, MPB_PER_CORE, PAGE};
use rgex_core::{Error, Result};

/// Bytes of an AM slot's header (three lines: handler, kind, nargs, length,
/// Long offset and up to 16 arguments), before the payload.
pub const HEADER: u64 = 96;
/// Offset of the epoch page in a core's MPB.
const EPOCH_PAGE: u64 = PAGE as u64;
/// Offset of the completion counter in the epoch page.
const COUNTER_OFF: u64 = 256;

/// The AM direction index of a flag or slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Requests.
    Request = 0,
    /// Replies.
    Reply = 1,
}

/// Choices that change the plan's memory types (tests and benches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Memory type of the segments ([`MemType::Mpbt`]; the whole-cache
    /// comparison protocol uses [`MemType::WriteBack`]).
    pub segment_type: MemType,
    /// Memory type of the epoch page of every MPB ([`MemType::Uncached`];
    /// tests put it in cached memory to show what breaks).
    pub epoch_type: MemType,
    /// Allocate the stale-read checker's shadow.
    pub check: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            segment_type: MemType::Mpbt,
            epoch_type: MemType::Uncached,
            check: false,
        }
    }
}

/// The chip addresses of the conduit's flags, slots, epoch state and
/// segments, for a job of `cores` ranks.
///
/// ```
/// use rgex_scc::address_plan::{Dir, Plan, PlanOptions};
/// let p = Plan::new(4, 4, 1024, &[1 << 16; 4], PlanOptions::default())?;
/// let l = p.layout()?;
/// assert_eq!(l.cores(), 4);
/// assert!(p.segment(3).0 + p.segment_len(3) <= l.mem_bytes());
/// assert_ne!(p.am_flag(1, 0, Dir::Request, 0), p.am_flag(1, 0, Dir::Reply, 0));
/// # Ok::<(), rgex_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    cores: u32,
    depth: u32,
    max_medium: u32,
    slot_bytes: u64,
    mpb_bytes: u64,
    am_bytes: u64,
    seg_base: Vec<u64>,
    seg_len: Vec<u64>,
    shared_bytes: u64,
    opts: PlanOptions,
}

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Plan {
    /// The plan of a job of `cores` ranks (1..=48) with `depth` AM slots per
    /// (sender, receiver, direction) (a power of two), Medium payloads of up
    /// to `max_medium` bytes (512..=1 MiB) and the given segment lengths
    /// (one per rank).
    pub fn new(
        cores: u32,
        depth: u32,
        max_medium: usize,
        seg_lens: &[u64],
        opts: PlanOptions,
    ) -> Result<Plan> {
        if cores == 0 || cores > MAX_CORES {
            return Err(Error::Config(format!(
                "the scc conduit runs 1..={MAX_CORES} ranks (the SCC has {MAX_CORES} cores), \
                 but the job has {cores}"
            )));
        }
        if seg_lens.len() != cores as usize {
            return Err(Error::Config(format!(
                "scc plan: {} segment lengths for {cores} ranks",
                seg_lens.len()
            )));
        }
        if !depth.is_power_of_two() || depth > 1 << 16 {
            return Err(Error::Config(format!(
                "RGEX_SCC_DEPTH={depth}: the AM slots per channel must be a power of two in 1..=65536"
            )));
        }
        let flags = cores as u64 * 2 * depth as u64 * 4 + cores as u64 * 2 * 4;
        if flags > PAGE as u64 {
            let most = (PAGE as u64 / (cores as u64 * 8)).saturating_sub(1);
            return Err(Error::Config(format!(
                "RGEX_SCC_DEPTH={depth} with {cores} ranks needs {flags} bytes of AM flags, \
                 but a core's MPB flag page holds {PAGE}: use a depth of at most {}",
                if most == 0 { 0 } else { 1u64 << most.ilog2() }
            )));
        }
        if !(512..=1 << 20).contains(&max_medium) {
            return Err(Error::Config(format!(
                "RGEX_SCC_MAX_MEDIUM={max_medium}: must be in 512..=1048576 bytes"
            )));
        }
        let slot_bytes = round_up(HEADER + max_medium as u64, LINE as u64);
        let n = cores as u64;
        let am_bytes = round_up(n * n * 2 * depth as u64 * slot_bytes, PAGE as u64);
        let mut at = am_bytes;
        let mut seg_base = Vec::with_capacity(cores as usize);
        for &len in seg_lens {
            seg_base.push(at);
            at = at
                .checked_add(round_up(len.max(1), PAGE as u64))
                .ok_or_else(|| Error::Config("scc plan: segment sizes overflow".into()))?;
        }
        let mpb_bytes = n.div_ceil(2) * 2 * MPB_PER_CORE as u64;
        Ok(Plan {
            cores,
            depth,
            max_medium: max_medium as u32,
            slot_bytes,
            mpb_bytes,
            am_bytes,
            seg_base,
            seg_len: seg_lens.to_vec(),
            shared_bytes: at,
            opts,
        })
    }

    /// The chip layout of this plan: MPB pages uncached (the epoch page as
    /// the options say), AM slots MPBT, segments as the options say, and
    /// enough checker sync slots for every flag.
    pub fn layout(&self) -> Result<Layout> {
        let n = self.cores as u64;
        let flags = n * n * 2 * self.depth as u64 + n * n * 2 + n * n + n;
        let mut b = Layout::builder(self.cores)
            .shared_bytes(self.shared_bytes)
            .mpb_type(MemType::Uncached)
            .shared_type(self.opts.segment_type)
            .check(self.opts.check)
            .sync_slots((2 * flags + 1024).min(u32::MAX as u64) as u32)
            .page_type(Addr(self.mpb_bytes), self.am_bytes, MemType::Mpbt);
        if self.opts.epoch_type != MemType::Uncached {
            for c in 0..self.cores {
                b = b.page_type(
                    Addr(c as u64 * MPB_PER_CORE as u64 + EPOCH_PAGE),
                    PAGE as u64,
                    self.opts.epoch_type,
                );
            }
        }
        b.build()
    }

    /// Ranks.
    pub fn cores(&self) -> u32 {
        self.cores
    }

    /// AM slots per (sender, receiver, direction).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Largest Medium payload.
    pub fn max_medium(&self) -> usize {
        self.max_medium as usize
    }

    /// The options the plan was made with.
    pub fn options(&self) -> PlanOptions {
        self.opts
    }

    /// Bytes of shared off-chip memory the plan needs.
    pub fn shared_bytes(&self) -> u64 {
        self.shared_bytes
    }

    fn mpb(&self, core: u32) -> u64 {
        core as u64 * MPB_PER_CORE as u64
    }

    /// The flag of slot `k` of the channel `src -> recv` in direction `dir`,
    /// in `recv`'s MPB: the sender writes the message's sequence number + 1.
    pub fn am_flag(&self, recv: u32, src: u32, dir: Dir, k: u32) -> Addr {
        let i = (src as u64 * 2 + dir as u64) * self.depth as u64 + k as u64;
        Addr(self.mpb(recv) + i * 4)
    }

    /// How many messages `recv` has consumed from `sender` in `dir`, in the
    /// sender's MPB (written by the receiver, read by the sender when it
    /// runs out of slots).
    pub fn am_consumed(&self, sender: u32, recv: u32, dir: Dir) -> Addr {
        let flags_end = self.cores as u64 * 2 * self.depth as u64 * 4;
        Addr(self.mpb(sender) + flags_end + (recv as u64 * 2 + dir as u64) * 4)
    }

    /// Slot `k` (header, then payload) of the channel `src -> recv`, `dir`.
    pub fn am_slot(&self, src: u32, recv: u32, dir: Dir, k: u32) -> Addr {
        let n = self.cores as u64;
        let i = ((src as u64 * n + recv as u64) * 2 + dir as u64) * self.depth as u64 + k as u64;
        Addr(self.mpb_bytes + i * self.slot_bytes)
    }

    /// Entry `t` of `owner`'s epoch match vector: the number of exposure
    /// epochs target `t` has posted to origin `owner`.
    pub fn epoch_match(&self, owner: u32, t: u32) -> Addr {
        Addr(self.mpb(owner) + EPOCH_PAGE + t as u64 * 4)
    }

    /// `owner`'s completion counter: the number of access epochs origins
    /// completed towards it (cumulative, wrapping).
    pub fn epoch_counter(&self, owner: u32) -> Addr {
        Addr(self.mpb(owner) + EPOCH_PAGE + COUNTER_OFF)
    }

    /// Start of rank `r`'s segment.
    pub fn segment(&self, r: u32) -> Addr {
        Addr(self.mpb_bytes + self.seg_base[r as usize])
    }

    /// Length of rank `r`'s segment.
    pub fn segment_len(&self, r: u32) -> u64 {
        self.seg_len[r as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_disjoint_and_fits() {
        let p = Plan::new(48, 8, 512, &[4096; 48], PlanOptions::default()).unwrap();
        let l = p.layout().unwrap();
        let mut spots = Vec::new();
        for r in 0..48 {
            for s in 0..48 {
                for d in [Dir::Request, Dir::Reply] {
                    for k in 0..8 {
                        spots.push(p.am_flag(r, s, d, k).0);
                    }
                    spots.push(p.am_consumed(r, s, d).0);
                }
                spots.push(p.epoch_match(r, s).0);
            }
            spots.push(p.epoch_counter(r).0);
            assert!(p.epoch_counter(r).0 < (r as u64 + 1) * MPB_PER_CORE as u64);
            assert_eq!(
                l.page_type(p.am_flag(r, 47, Dir::Reply, 7)),
                MemType::Uncached
            );
            assert_eq!(l.page_type(p.epoch_counter(r)), MemType::Uncached);
            assert_eq!(l.page_type(p.segment(r)), MemType::Mpbt);
        }
        let n = spots.len();
        spots.sort_unstable();
        spots.dedup();
        assert_eq!(spots.len(), n, "two flags share an address");
        let last = p.am_slot(47, 47, Dir::Reply, 7);
        assert_eq!(l.page_type(last), MemType::Mpbt);
        assert!(last.0 + p.slot_bytes <= p.segment(0).0);
        assert!(p.segment(47).0 + 4096 <= l.mem_bytes());
    }

    #[test]
    fn limits_are_clear_errors() {
        let e = Plan::new(49, 4, 512, &[4096; 49], PlanOptions::default()).unwrap_err();
        assert!(e.to_string().contains("48"), "{e}");
        let e = Plan::new(48, 16, 512, &[4096; 48], PlanOptions::default()).unwrap_err();
        assert!(e.to_string().contains("at most 8"), "{e}");
        assert!(Plan::new(2, 3, 512, &[4096; 2], PlanOptions::default()).is_err());
        assert!(Plan::new(2, 4, 100, &[4096; 2], PlanOptions::default()).is_err());
        assert!(Plan::new(2, 64, 512, &[4096; 2], PlanOptions::default()).is_ok());
    }
}
