//! Settings of the ofi conduit.

use crate::PutCompletion;
use rgex_core::config::env_size;
use rgex_core::{Error, Result};

/// The smallest credit window `RGEX_OFI_WINDOW` may set.
pub(crate) const MIN_WINDOW: usize = 2;
/// The largest credit window `RGEX_OFI_WINDOW` may set.
pub(crate) const MAX_WINDOW: usize = 4096;

/// What the ofi conduit reads from the environment.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `RGEX_OFI_PROVIDER` | libfabric's choice | provider, as `fi_info -p` spells it: `tcp;ofi_rxm`, `sockets`, `shm`, `verbs;ofi_rxm`, `cxi`, `gni` |
/// | `RGEX_OFI_DOMAIN` | libfabric's choice | domain (NIC) name: `lo`, `mlx5_0`, `cxi0`, ... |
/// | `RGEX_SHM_BYPASS` | `1` | `0`: node-local peers go through the network too |
/// | `RGEX_OFI_MAX_MEDIUM` | 8K | largest Medium payload (at least 512) |
/// | `RGEX_OFI_WINDOW` | 8 | messages a sender may have unconsumed at a receiver, per direction (requests and replies each); 2 to 4096 |
/// | `RGEX_OFI_SEND_BUFFERS` | 64 | registered send buffers for requests (replies get half as many of their own) |
/// | `RGEX_OFI_TIMEOUT` | 300 | seconds without any sign of life (pings unanswered) from a peer we wait on before it is declared dead (0: never); it bounds every wait on a network peer (credits, an AM reply, a collective, RMA, atomics, VIS, `peer_gone`) |
/// | `RGEX_OFI_INJECT` | the provider's inject size | largest AM message (header and payload) sent with `fi_inject` (no completion to reap; its buffer is free at once); `0`: never |
/// | `RGEX_OFI_PUT_COMPLETION` | `auto` | how puts learn they landed: `delivery` (`FI_DELIVERY_COMPLETE` on each write), `readback` (NBI puts: a read after the writes, when someone waits), `auto` (readback for tcp, sockets, shm, udp; see [`PutCompletion`]) |
///
/// The sizes (max Medium, window) are taken from rank 0 so every rank
/// agrees. Loopback only in tests: set `FI_TCP_IFACE=lo` /
/// `FI_SOCKETS_IFACE=lo` or `RGEX_OFI_DOMAIN=lo` (see the README).
///
/// ```
/// let c = rgex_ofi::OfiConfig::default();
/// assert!(c.max_medium >= 512 && c.window >= 2);
/// // A window below 2 is refused, saying what the setting is.
/// let e = rgex_ofi::OfiConfig { window: 1, ..c }.check().unwrap_err();
/// assert!(e.to_string().contains("RGEX_OFI_WINDOW=1 must be in 2..=4096 (the credit window"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfiConfig {
    /// `RGEX_OFI_PROVIDER`.
    pub provider: Option<String>,
    /// `RGEX_OFI_DOMAIN`.
    pub domain: Option<String>,
    /// `RGEX_SHM_BYPASS`.
    pub shm_bypass: bool,
    /// Largest Medium payload.
    pub max_medium: usize,
    /// Credit window per sender and direction.
    pub window: usize,
    /// Send buffers for requests.
    pub send_buffers: usize,
    /// Dead-peer timeout in seconds (0: never).
    pub timeout_secs: u64,
    /// `RGEX_OFI_PUT_COMPLETION`; `None`: the provider's default
    /// ([`PutCompletion::default_for`]).
    pub put_completion: Option<PutCompletion>,
    /// `RGEX_OFI_INJECT`; `None`: the provider's inject size.
    pub inject: Option<usize>,
}

impl Default for OfiConfig {
    fn default() -> Self {
        OfiConfig {
            provider: None,
            domain: None,
            shm_bypass: true,
            max_medium: 8 << 10,
            window: 8,
            send_buffers: 64,
            timeout_secs: 300,
            put_completion: None,
            inject: None,
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl OfiConfig {
    /// Read the environment over the defaults, and check the values.
    pub fn from_env() -> Result<Self> {
        let d = OfiConfig::default();
        let shm_bypass = rgex_net::shm_bypass::from_env()?;
        let timeout_secs = match var("RGEX_OFI_TIMEOUT") {
            None => d.timeout_secs,
            Some(t) => t.parse().map_err(|_| {
                Error::Config(format!("RGEX_OFI_TIMEOUT={t:?} is not a number of seconds"))
            })?,
        };
        let put_completion = match var("RGEX_OFI_PUT_COMPLETION").as_deref() {
            None | Some("auto") => None,
            Some("delivery") => Some(PutCompletion::Delivery),
            Some("readback") => Some(PutCompletion::ReadBack),
            Some(other) => {
                return Err(Error::Config(format!(
                    "RGEX_OFI_PUT_COMPLETION={other:?}: use delivery, readback or auto"
                )));
            }
        };
        let inject = match var("RGEX_OFI_INJECT") {
            None => None,
            Some(_) => Some(env_size("RGEX_OFI_INJECT", 0)?),
        };
        let c = OfiConfig {
            provider: var("RGEX_OFI_PROVIDER"),
            domain: var("RGEX_OFI_DOMAIN"),
            shm_bypass,
            max_medium: env_size("RGEX_OFI_MAX_MEDIUM", d.max_medium)?,
            window: env_size("RGEX_OFI_WINDOW", d.window)?,
            send_buffers: env_size("RGEX_OFI_SEND_BUFFERS", d.send_buffers)?,
            timeout_secs,
            put_completion,
            inject,
        };
        c.check()?;
        Ok(c)
    }

    /// Reject values the conduit cannot work with.
    pub fn check(&self) -> Result<()> {
        if !(512..=(1 << 20)).contains(&self.max_medium) {
            return Err(Error::Config(format!(
                "RGEX_OFI_MAX_MEDIUM={} must be between 512 bytes and 1 MiB",
                self.max_medium
            )));
        }
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&self.window) {
            return Err(Error::Config(format!(
                "RGEX_OFI_WINDOW={} must be in {MIN_WINDOW}..={MAX_WINDOW} (the credit window: \
                 messages a sender may have unconsumed at a receiver, per direction; default 8)",
                self.window
            )));
        }
        if !(2..=65536).contains(&self.send_buffers) {
            return Err(Error::Config(format!(
                "RGEX_OFI_SEND_BUFFERS={} must be in 2..=65536",
                self.send_buffers
            )));
        }
        Ok(())
    }
}
