//! Settings of the ibv conduit, from the environment.

use crate::verbs::{DeviceChoice, Mtu};
use rgex_core::config::env_size;
use rgex_core::{Error, Result};
use rgex_net::{NetConfig, Settings};

/// The value of `RGEX_IBV_DEVICE` that selects the software device.
pub const SOFT: &str = "soft";

/// What the ibv conduit reads from the environment.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `RGEX_IBV_DEVICE` | the first device with an active port | `soft`: the software verbs device; else a device name (`mlx5_0`, as `ibv_devices` lists them) |
/// | `RGEX_IBV_PORT` | the first active port | port number (1-based) |
/// | `RGEX_IBV_GID_INDEX` | 0 | GID table index (RoCE: the index of the RoCE v2 GID of the interface's address, see `show_gids`); InfiniBand addresses by LID |
/// | `RGEX_IBV_QP_TIMEOUT` | 18 | ACK timeout code: 4.096 us x 2^code (18: about 1 s) before a retry; 0 waits forever; 0 to 31 |
/// | `RGEX_IBV_RETRY_COUNT` | 7 | retries without an ACK before `IBV_WC_RETRY_EXC_ERR` (the peer is then dead); 0 to 7 |
/// | `RGEX_IBV_RNR_RETRY` | 6 | retries after a receiver-not-ready NAK; 7 retries forever; 0 to 7 (credits keep a receive posted for every message, so RNR is a bug) |
/// | `RGEX_IBV_MTU` | the port's active MTU | path MTU in bytes: 256, 512, 1024, 2048 or 4096 (at most the port's active MTU; each pair uses the smaller of its two) |
/// | `RGEX_IBV_INLINE` | 128 | largest AM message (header and payload) sent inline (copied at post, no buffer held): at most what the QP grants; 0: never |
/// | `RGEX_IBV_SQ_DEPTH` | 128 | send-queue depth per peer (QP); a full queue is would-block; 1 to the device's `max_qp_wr` |
/// | `RGEX_SHM_BYPASS` | `1` | `0`: node-local peers go through verbs too |
/// | `RGEX_IBV_MAX_MEDIUM` | 8K | largest Medium payload (512 to 1 MiB) |
/// | `RGEX_IBV_WINDOW` | 8 | credits per peer and direction: messages a sender may have unconsumed at a receiver (2 to 4096); the shared receive queue holds ranks x (2 x window + 7) receives |
/// | `RGEX_IBV_SEND_BUFFERS` | 64 | registered send buffers for requests (replies get half as many); 2 to 65536 |
/// | `RGEX_IBV_TIMEOUT` | 300 | seconds without any sign of life (pings unanswered) from a peer we wait on before it is declared dead (0: never); it bounds every wait on a network peer (credits, an AM reply, a collective, RMA, atomics, VIS, `peer_gone`) |
///
/// The sizes (max Medium, window) are rank 0's, so every rank agrees.
///
/// ```
/// let c = rgex_ibv::IbvConfig::default();
/// assert_eq!((c.qp_timeout, c.retry_count), (18, 7));
/// let e = rgex_ibv::IbvConfig { retry_count: 9, ..c }.check().unwrap_err();
/// assert!(e.to_string().contains("RGEX_IBV_RETRY_COUNT=9 must be in 0..=7"), "{e}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbvConfig {
    /// `RGEX_IBV_DEVICE`: `soft`, a device name, or `None` (the first
    /// device with an active port).
    pub device: Option<String>,
    /// `RGEX_IBV_PORT`; `None`: the first active port.
    pub port: Option<u8>,
    /// `RGEX_IBV_GID_INDEX`.
    pub gid_index: u8,
    /// `RGEX_IBV_QP_TIMEOUT` (ACK timeout code).
    pub qp_timeout: u8,
    /// `RGEX_IBV_RETRY_COUNT`.
    pub retry_count: u8,
    /// `RGEX_IBV_RNR_RETRY`.
    pub rnr_retry: u8,
    /// `RGEX_IBV_MTU`; `None`: the port's active MTU.
    pub mtu: Option<Mtu>,
    /// `RGEX_IBV_INLINE`: inline bytes asked of each QP.
    pub inline: u32,
    /// `RGEX_IBV_SQ_DEPTH`: send-queue depth per QP.
    pub sq_depth: u32,
    /// `RGEX_SHM_BYPASS`.
    pub shm_bypass: bool,
    /// `RGEX_IBV_MAX_MEDIUM`.
    pub max_medium: usize,
    /// `RGEX_IBV_WINDOW`.
    pub window: usize,
    /// `RGEX_IBV_SEND_BUFFERS`.
    pub send_buffers: usize,
    /// `RGEX_IBV_TIMEOUT`, seconds (0: never).
    pub timeout_secs: u64,
}

impl Default for IbvConfig {
    fn default() -> Self {
        IbvConfig {
            device: None,
            port: None,
            gid_index: 0,
            qp_timeout: 18,
            retry_count: 7,
            rnr_retry: 6,
            mtu: None,
            inline: 128,
            sq_depth: 128,
            shm_bypass: true,
            max_medium: 8 << 10,
            window: 8,
            send_buffers: 64,
            timeout_secs: 300,
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// An integer setting: `name`'s value, or `None` if unset.
fn number<N: std::str::FromStr>(name: &str, what: &str) -> Result<Option<N>> {
    match var(name) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| Error::Config(format!("{name}={v:?} is not {what}"))),
    }
}

/// `value` of setting `name` must lie in `lo..=hi`.
fn within(name: &str, value: u64, lo: u64, hi: u64, what: &str) -> Result<()> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{name}={value} must be in {lo}..={hi} ({what})"
        )))
    }
}

impl IbvConfig {
    /// Read the environment over the defaults, and check the values.
    pub fn from_env() -> Result<Self> {
        let d = IbvConfig::default();
        let mtu = match number::<usize>("RGEX_IBV_MTU", "a size in bytes")? {
            None => None,
            Some(b) => Some(Mtu::from_bytes(b).ok_or_else(|| {
                Error::Config(format!(
                    "RGEX_IBV_MTU={b} is not a path MTU: use 256, 512, 1024, 2048 or 4096"
                ))
            })?),
        };
        let port = match number::<u16>("RGEX_IBV_PORT", "a port number")? {
            None => None,
            Some(p) => {
                within(
                    "RGEX_IBV_PORT",
                    p.into(),
                    1,
                    255,
                    "ports are numbered from 1",
                )?;
                Some(p as u8)
            }
        };
        let small = |name: &str, default: u8, hi: u64, what: &str| -> Result<u8> {
            match number::<u64>(name, "a number")? {
                None => Ok(default),
                Some(v) => {
                    within(name, v, 0, hi, what)?;
                    Ok(v as u8)
                }
            }
        };
        let c = IbvConfig {
            device: var("RGEX_IBV_DEVICE"),
            port,
            gid_index: small("RGEX_IBV_GID_INDEX", d.gid_index, 255, "a GID table index")?,
            qp_timeout: small(
                "RGEX_IBV_QP_TIMEOUT",
                d.qp_timeout,
                31,
                "the ACK timeout code: 4.096 us x 2^code",
            )?,
            retry_count: small(
                "RGEX_IBV_RETRY_COUNT",
                d.retry_count,
                7,
                "the transport retry count",
            )?,
            rnr_retry: small(
                "RGEX_IBV_RNR_RETRY",
                d.rnr_retry,
                7,
                "the RNR retry count, 7: forever",
            )?,
            mtu,
            inline: match var("RGEX_IBV_INLINE") {
                None => d.inline,
                Some(_) => {
                    let n = env_size("RGEX_IBV_INLINE", 0)?;
                    u32::try_from(n).map_err(|_| {
                        Error::Config(format!("RGEX_IBV_INLINE={n} is larger than any HCA's"))
                    })?
                }
            },
            sq_depth: number("RGEX_IBV_SQ_DEPTH", "a queue depth")?.unwrap_or(d.sq_depth),
            shm_bypass: rgex_net::shm_bypass::from_env()?,
            max_medium: env_size("RGEX_IBV_MAX_MEDIUM", d.max_medium)?,
            window: env_size("RGEX_IBV_WINDOW", d.window)?,
            send_buffers: env_size("RGEX_IBV_SEND_BUFFERS", d.send_buffers)?,
            timeout_secs: number("RGEX_IBV_TIMEOUT", "a number of seconds")?
                .unwrap_or(d.timeout_secs),
        };
        c.check()?;
        Ok(c)
    }

    /// True if `RGEX_IBV_DEVICE` selects the software device.
    pub fn soft(&self) -> bool {
        self.device.as_deref() == Some(SOFT)
    }

    /// The device and port to open (the software device has one of each:
    /// its name is left to it).
    pub fn choice(&self) -> DeviceChoice {
        DeviceChoice {
            name: self.device.clone().filter(|d| d != SOFT),
            port: self.port,
            gid_index: self.gid_index,
        }
    }

    /// Reject values the conduit cannot work with, naming the variable,
    /// the value and the limit.
    pub fn check(&self) -> Result<()> {
        within(
            "RGEX_IBV_MAX_MEDIUM",
            self.max_medium as u64,
            512,
            1 << 20,
            "bytes",
        )?;
        within(
            "RGEX_IBV_WINDOW",
            self.window as u64,
            2,
            4096,
            "the credit window: messages a sender may have unconsumed at a receiver, per direction; default 8",
        )?;
        within(
            "RGEX_IBV_SEND_BUFFERS",
            self.send_buffers as u64,
            2,
            65536,
            "registered send buffers for requests",
        )?;
        within(
            "RGEX_IBV_SQ_DEPTH",
            self.sq_depth.into(),
            1,
            1 << 20,
            "send work requests per QP; the device may allow fewer",
        )?;
        within(
            "RGEX_IBV_QP_TIMEOUT",
            self.qp_timeout.into(),
            0,
            31,
            "the ACK timeout code",
        )?;
        within(
            "RGEX_IBV_RETRY_COUNT",
            self.retry_count.into(),
            0,
            7,
            "the transport retry count",
        )?;
        within(
            "RGEX_IBV_RNR_RETRY",
            self.rnr_retry.into(),
            0,
            7,
            "the RNR retry count, 7: forever",
        )?;
        if self.soft() && (self.port.is_some_and(|p| p != 1) || self.gid_index != 0) {
            return Err(Error::Config(format!(
                "RGEX_IBV_DEVICE=soft has one port (1) with one GID (index 0): RGEX_IBV_PORT={} \
                 RGEX_IBV_GID_INDEX={} do not exist there",
                self.port.map_or("(unset)".into(), |p| p.to_string()),
                self.gid_index
            )));
        }
        Ok(())
    }
}

impl NetConfig for IbvConfig {
    fn settings(&self) -> Settings {
        Settings {
            shm_bypass: self.shm_bypass,
            max_medium: self.max_medium,
            window: self.window,
            send_buffers: self.send_buffers,
            timeout_secs: self.timeout_secs,
        }
    }

    fn set_sizes(&mut self, max_medium: usize, window: usize) {
        self.max_medium = max_medium;
        self.window = window;
    }

    fn check(&self) -> Result<()> {
        IbvConfig::check(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_the_variable_value_and_range() {
        let d = IbvConfig::default();
        d.check().unwrap();
        for (c, want) in [
            (
                IbvConfig {
                    window: 1,
                    ..d.clone()
                },
                "RGEX_IBV_WINDOW=1 must be in 2..=4096",
            ),
            (
                IbvConfig {
                    qp_timeout: 32,
                    ..d.clone()
                },
                "RGEX_IBV_QP_TIMEOUT=32 must be in 0..=31",
            ),
            (
                IbvConfig {
                    rnr_retry: 8,
                    ..d.clone()
                },
                "RGEX_IBV_RNR_RETRY=8 must be in 0..=7",
            ),
            (
                IbvConfig {
                    sq_depth: 0,
                    ..d.clone()
                },
                "RGEX_IBV_SQ_DEPTH=0 must be in 1..=1048576",
            ),
            (
                IbvConfig {
                    max_medium: 100,
                    ..d.clone()
                },
                "RGEX_IBV_MAX_MEDIUM=100 must be in 512..=1048576",
            ),
            (
                IbvConfig {
                    device: Some(SOFT.into()),
                    gid_index: 3,
                    ..d.clone()
                },
                "RGEX_IBV_GID_INDEX=3 do not exist there",
            ),
        ] {
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn soft_selects_the_software_device_and_names_no_device() {
        let c = IbvConfig {
            device: Some(SOFT.into()),
            ..IbvConfig::default()
        };
        assert!(c.soft());
        assert_eq!(c.choice().name, None);
        let c = IbvConfig {
            device: Some("mlx5_0".into()),
            port: Some(2),
            gid_index: 3,
            ..IbvConfig::default()
        };
        assert!(!c.soft());
        assert_eq!(
            c.choice(),
            DeviceChoice {
                name: Some("mlx5_0".into()),
                port: Some(2),
                gid_index: 3
            }
        );
    }
}
