//! Fault injection: drop, delay and kill, for tests of what a conduit
//! does when the network misbehaves.

use super::ident::Ident;
use crate::verbs::{Gid, VerbsError, VerbsResult};
use std::time::{Duration, Instant};

/// The environment variable the device reads its faults from at open:
/// comma-separated `key=value` items, `drop_every=N` (drop every Nth
/// packet this device sends), `drop_all=1` (drop every packet),
/// `loss_pct=P` (drop each packet with probability P percent, e.g. 0.1),
/// `reorder_every=N` (send every Nth packet after the one behind it),
/// `delay_us=U` (hold each packet U microseconds before it is written)
/// and `kill_after_ms=M` (the device stops answering M ms after open).
/// They apply on either wire (shared memory or UDP).
pub const FAULTS_ENV: &str = "RGEX_IBV_SOFT_FAULTS";

/// Faults a software device injects into what it sends and answers.
///
/// Drops are at the sender: a dropped packet is never written to the
/// peer's ring, so the RC transport recovers it by retransmission
/// (go-back-N after a sequence NAK or the ACK timeout), or, when every
/// packet is dropped, completes the work request with
/// `IBV_WC_RETRY_EXC_ERR` after `retry_cnt` retries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Drop every Nth packet this device sends (0: none; 1: all).
    pub drop_every: u32,
    /// Drop each packet with this probability, in parts per million
    /// (random, from a generator seeded by the process and context, so a
    /// run repeats its pattern only by chance).
    pub loss_ppm: u32,
    /// Swap every Nth packet with the one queued behind it (0: never).
    pub reorder_every: u32,
    /// Drop every packet this device sends to the device with this GID.
    pub drop_to: Option<Gid>,
    /// Hold each packet this long before it is written to the peer.
    pub delay: Duration,
    /// The device stops answering: it consumes and sends nothing, and
    /// peers see it dead (their requests end in `IBV_WC_RETRY_EXC_ERR`).
    pub killed: bool,
}

impl Faults {
    /// Parse [`FAULTS_ENV`]'s syntax; `None` for an empty string.
    /// Returns the faults and, for `kill_after_ms`, the delay to the kill.
    pub fn parse(spec: &str) -> VerbsResult<(Faults, Option<Duration>)> {
        let mut f = Faults::default();
        let mut kill_after = None;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || {
                VerbsError::call(
                    "soft device open",
                    libc::EINVAL,
                    format!(
                        "{FAULTS_ENV}: bad item {item:?} (expected drop_every=N, drop_all=1, \
                         loss_pct=P, reorder_every=N, delay_us=U or kill_after_ms=M)"
                    ),
                )
            };
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            if k.trim() == "loss_pct" {
                let p: f64 = v.trim().parse().map_err(|_| bad())?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(bad());
                }
                f.loss_ppm = (p * 10_000.0).round() as u32;
                continue;
            }
            let n: u64 = v.trim().parse().map_err(|_| bad())?;
            match k.trim() {
                "drop_every" => f.drop_every = u32::try_from(n).map_err(|_| bad())?,
                "drop_all" => f.drop_every = u32::from(n != 0),
                "delay_us" => f.delay = Duration::from_micros(n),
                "reorder_every" => f.reorder_every = u32::try_from(n).map_err(|_| bad())?,
                "kill_after_ms" => kill_after = Some(Duration::from_millis(n)),
                _ => return Err(bad()),
            }
        }
        Ok((f, kill_after))
    }
}

/// The faults in force on one device, with the drop counter.
#[derive(Debug)]
pub(crate) struct FaultState {
    pub faults: Faults,
    pub kill_at: Option<Instant>,
    sent: u64,
    /// The loss generator's state (xorshift64; never 0).
    rng: u64,
}

impl FaultState {
    pub fn new(faults: Faults, kill_after: Option<Duration>) -> Self {
        FaultState {
            faults,
            kill_at: kill_after.map(|d| Instant::now() + d),
            sent: 0,
            rng: (u64::from(std::process::id()) << 32
                | u64::from(super::NEXT_CTX.load(std::sync::atomic::Ordering::Relaxed)))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                | 1,
        }
    }

    /// Whether the device is dead now (killed, or its kill time passed).
    pub fn killed(&mut self, now: Instant) -> bool {
        if let Some(t) = self.kill_at {
            if now >= t {
                self.faults.killed = true;
                self.kill_at = None;
            }
        }
        self.faults.killed
    }

    /// Count one packet to `peer`; whether to drop it.
    pub fn drop_packet(&mut self, peer: &Ident) -> bool {
        self.sent += 1;
        if self.faults.drop_to == Some(peer.gid()) {
            return true;
        }
        let n = u64::from(self.faults.drop_every);
        if n != 0 && self.sent.is_multiple_of(n) {
            return true;
        }
        self.faults.loss_ppm != 0
            && self.next_random() % 1_000_000 < u64::from(self.faults.loss_ppm)
    }

    /// Whether the packet about to be sent goes after the one behind it.
    pub fn reorder_now(&self) -> bool {
        let n = u64::from(self.faults.reorder_every);
        n != 0 && (self.sent + 1).is_multiple_of(n)
    }

    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// When a packet sent now may be written to the peer.
    pub fn ready_at(&self, now: Instant) -> Option<Instant> {
        (!self.faults.delay.is_zero()).then(|| now + self.faults.delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_item_and_rejects_unknown() {
        let (f, k) = Faults::parse("drop_every=3, delay_us=50,kill_after_ms=7").unwrap();
        assert_eq!(f.drop_every, 3);
        assert_eq!(f.delay, Duration::from_micros(50));
        assert_eq!(k, Some(Duration::from_millis(7)));
        assert_eq!(Faults::parse("drop_all=1").unwrap().0.drop_every, 1);
        assert_eq!(Faults::parse("").unwrap().0, Faults::default());
        let e = Faults::parse("drop_sometimes=2").unwrap_err().to_string();
        assert!(e.contains("drop_sometimes"), "{e}");
        assert!(Faults::parse("drop_every=x").is_err());
    }

    #[test]
    fn drops_every_nth() {
        let mut s = FaultState::new(
            Faults {
                drop_every: 3,
                ..Faults::default()
            },
            None,
        );
        let peer = Ident {
            uid: 1,
            pid: 2,
            ctx: 3,
            udp: None,
        };
        let d: Vec<bool> = (0..6).map(|_| s.drop_packet(&peer)).collect();
        assert_eq!(d, [false, false, true, false, false, true]);
    }

    #[test]
    fn loss_drops_about_its_share_and_reorder_counts_packets() {
        let (f, _) = Faults::parse("loss_pct=5,reorder_every=4").unwrap();
        assert_eq!((f.loss_ppm, f.reorder_every), (50_000, 4));
        assert!(Faults::parse("loss_pct=101").is_err());
        let mut s = FaultState::new(f, None);
        let peer = Ident::local(0);
        let dropped = (0..100_000).filter(|_| s.drop_packet(&peer)).count();
        assert!(
            (4_000..6_000).contains(&dropped),
            "{dropped} of 100000 at 5%"
        );
        let mut s = FaultState::new(Faults::parse("reorder_every=3").unwrap().0, None);
        let r: Vec<bool> = (0..6)
            .map(|_| {
                let now = s.reorder_now();
                s.drop_packet(&peer);
                now
            })
            .collect();
        assert_eq!(r, [false, false, true, false, false, true]);
    }
}
