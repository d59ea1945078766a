//! Fault injection: drop, delay and kill, for tests of what a conduit
//! does when the network misbehaves.

use super::ident::Ident;
use crate::verbs::{Gid, VerbsError, VerbsResult};
use std::time::{Duration, Instant};

/// The environment variable the device reads its faults from at open:
/// comma-separated `key=value` items, `drop_every=N` (drop every Nth
/// packet this device sends), `drop_all=1` (drop every packet),
/// `delay_us=U` (hold each packet U microseconds before it is written)
/// and `kill_after_ms=M` (the device stops answering M ms after open).
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
                         delay_us=U or kill_after_ms=M)"
                    ),
                )
            };
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let n: u64 = v.trim().parse().map_err(|_| bad())?;
            match k.trim() {
                "drop_every" => f.drop_every = u32::try_from(n).map_err(|_| bad())?,
                "drop_all" => f.drop_every = u32::from(n != 0),
                "delay_us" => f.delay = Duration::from_micros(n),
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
}

impl FaultState {
    pub fn new(faults: Faults, kill_after: Option<Duration>) -> Self {
        FaultState {
            faults,
            kill_at: kill_after.map(|d| Instant::now() + d),
            sent: 0,
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
        n != 0 && self.sent.is_multiple_of(n)
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
        };
        let d: Vec<bool> = (0..6).map(|_| s.drop_packet(&peer)).collect();
        assert_eq!(d, [false, false, true, false, false, true]);
    }
}
