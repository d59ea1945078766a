//! Settings of the ibv conduit, from the environment.

use crate::verbs::{DeviceChoice, Mtu};
use rgex_core::config::{vars, Environment, Var};
use rgex_core::{Error, Result};
use rgex_net::settings::{NetConfig, Settings, SettingsVars};

/// The variables the kit's part of an [`IbvConfig`] is read from.
pub const NET_VARS: SettingsVars = SettingsVars {
    max_medium: vars::IBV_MAX_MEDIUM,
    window: vars::IBV_WINDOW,
    send_buffers: vars::IBV_SEND_BUFFERS,
    timeout: vars::IBV_TIMEOUT,
};

/// The value of `RGEX_IBV_DEVICE` that selects the software device.
pub const SOFT: &str = "soft";

/// What the ibv conduit reads from the environment: the kit's
/// [`Settings`] (`RGEX_SHM_BYPASS`, `RGEX_IBV_MAX_MEDIUM`,
/// `RGEX_IBV_WINDOW`, `RGEX_IBV_SEND_BUFFERS`, `RGEX_IBV_TIMEOUT`; the
/// shared receive queue holds ranks x (2 x window + 7) receives) and the
/// verbs' own: `RGEX_IBV_DEVICE` (`soft`: the software verbs device),
/// `RGEX_IBV_PORT`, `RGEX_IBV_GID_INDEX` (RoCE: the index of the RoCE v2
/// GID of the interface's address, see `show_gids`; InfiniBand addresses
/// by LID), `RGEX_IBV_QP_TIMEOUT`, `RGEX_IBV_RETRY_COUNT`,
/// `RGEX_IBV_RNR_RETRY` (credits keep a receive posted for every
/// message, so RNR is a bug), `RGEX_IBV_MTU` (each pair uses the smaller
/// of its two), `RGEX_IBV_INLINE` (at most what the QP grants) and
/// `RGEX_IBV_SQ_DEPTH` (a full queue is would-block).
/// [`rgex_core::config::vars`] gives each one's meaning and default.
///
/// The sizes (max Medium, window) are rank 0's, so every rank agrees.
///
/// ```
/// let c = rgex_ibv::IbvConfig::default();
/// assert_eq!((c.qp_timeout, c.retry_count), (18, 7));
/// let e = rgex_ibv::IbvConfig { retry_count: 9, ..c.clone() }.check().unwrap_err();
/// assert!(e.to_string().contains("RGEX_IBV_RETRY_COUNT=9 must be in 0..=7"), "{e}");
/// let e = rgex_ibv::IbvConfig { net: rgex_net::Settings { window: 1, ..c.net }, ..c }.check().unwrap_err();
/// assert!(e.to_string().contains("RGEX_IBV_WINDOW=1 must be in 2..=4096"), "{e}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbvConfig {
    /// The kit's part: bypass, max Medium, window, send buffers, timeout.
    pub net: Settings,
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
}

impl Default for IbvConfig {
    fn default() -> Self {
        IbvConfig {
            net: Settings::default(),
            device: None,
            port: None,
            gid_index: 0,
            qp_timeout: 18,
            retry_count: 7,
            rnr_retry: 6,
            mtu: None,
            inline: 128,
            sq_depth: 128,
        }
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
    /// The process environment now, read over the defaults and checked
    /// ([`read`](Self::read) of a fresh [`Environment::capture`]).
    pub fn from_env() -> Result<Self> {
        Self::read(&Environment::capture())
    }

    /// `env`'s settings over the defaults, checked.
    ///
    /// ```
    /// use rgex_core::config::Environment;
    /// let env = Environment::from_pairs([("RGEX_IBV_DEVICE", "soft"), ("RGEX_IBV_WINDOW", "4")]);
    /// let c = rgex_ibv::IbvConfig::read(&env).unwrap();
    /// assert!(c.soft());
    /// assert_eq!(c.net.window, 4);
    /// ```
    pub fn read(env: &Environment) -> Result<Self> {
        let d = IbvConfig::default();
        let mtu = match env.number::<usize>(&vars::IBV_MTU, "a size in bytes")? {
            None => None,
            Some(b) => Some(Mtu::from_bytes(b).ok_or_else(|| {
                Error::Config(format!(
                    "RGEX_IBV_MTU={b} is not a path MTU: use 256, 512, 1024, 2048 or 4096"
                ))
            })?),
        };
        let port = match env.number::<u16>(&vars::IBV_PORT, "a port number")? {
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
        let small = |var: &Var, default: u8, hi: u64, what: &str| -> Result<u8> {
            match env.number::<u64>(var, "a number")? {
                None => Ok(default),
                Some(v) => {
                    within(var.name, v, 0, hi, what)?;
                    Ok(v as u8)
                }
            }
        };
        let c = IbvConfig {
            net: Settings::read(env, &NET_VARS)?,
            device: env.get(&vars::IBV_DEVICE).map(str::to_string),
            port,
            gid_index: small(&vars::IBV_GID_INDEX, d.gid_index, 255, "a GID table index")?,
            qp_timeout: small(
                &vars::IBV_QP_TIMEOUT,
                d.qp_timeout,
                31,
                "the ACK timeout code: 4.096 us x 2^code",
            )?,
            retry_count: small(
                &vars::IBV_RETRY_COUNT,
                d.retry_count,
                7,
                "the transport retry count",
            )?,
            rnr_retry: small(
                &vars::IBV_RNR_RETRY,
                d.rnr_retry,
                7,
                "the RNR retry count, 7: forever",
            )?,
            mtu,
            inline: match env.get(&vars::IBV_INLINE) {
                None => d.inline,
                Some(_) => {
                    let n = env.size(&vars::IBV_INLINE, 0)?;
                    u32::try_from(n).map_err(|_| {
                        Error::Config(format!("RGEX_IBV_INLINE={n} is larger than any HCA's"))
                    })?
                }
            },
            sq_depth: env
                .number(&vars::IBV_SQ_DEPTH, "a queue depth")?
                .unwrap_or(d.sq_depth),
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
        self.net.check(&NET_VARS)?;
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
    fn net(&self) -> &Settings {
        &self.net
    }

    fn net_mut(&mut self) -> &mut Settings {
        &mut self.net
    }

    fn check(&self) -> Result<()> {
        IbvConfig::check(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = IbvConfig::default();
        assert_eq!(IbvConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(IbvConfig::read(&Environment::default()).unwrap(), d);
    }

    #[test]
    fn limits_name_the_variable_value_and_range() {
        let d = IbvConfig::default();
        d.check().unwrap();
        for (c, want) in [
            (
                IbvConfig {
                    net: Settings { window: 1, ..d.net },
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
                    net: Settings {
                        max_medium: 100,
                        ..d.net
                    },
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
