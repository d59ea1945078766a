//! Settings of the ofi conduit.

use crate::PutCompletion;
use rgex_core::config::{vars, Environment};
use rgex_core::Result;
use rgex_net::settings::{NetConfig, Settings, SettingsVars};

/// The variables the kit's part of an [`OfiConfig`] is read from.
pub const NET_VARS: SettingsVars = SettingsVars {
    max_medium: vars::OFI_MAX_MEDIUM,
    window: vars::OFI_WINDOW,
    send_buffers: vars::OFI_SEND_BUFFERS,
    timeout: vars::OFI_TIMEOUT,
};

/// What the ofi conduit reads from the environment: the kit's
/// [`Settings`] (`RGEX_SHM_BYPASS`, `RGEX_OFI_MAX_MEDIUM`,
/// `RGEX_OFI_WINDOW`, `RGEX_OFI_SEND_BUFFERS`, `RGEX_OFI_TIMEOUT`) and
/// libfabric's own: `RGEX_OFI_PROVIDER` (as `fi_info -p` spells it:
/// `tcp;ofi_rxm`, `sockets`, `shm`, `verbs;ofi_rxm`, `cxi`, `gni`),
/// `RGEX_OFI_DOMAIN`, `RGEX_OFI_INJECT` (the largest AM message, header
/// and payload, sent with `fi_inject`: no completion to reap, its buffer
/// is free at once) and `RGEX_OFI_PUT_COMPLETION` (see
/// [`PutCompletion`]). [`rgex_core::config::vars`] gives each one's
/// meaning and default.
///
/// The sizes (max Medium, window) are taken from rank 0 so every rank
/// agrees. Loopback only in tests: set `FI_TCP_IFACE=lo` /
/// `FI_SOCKETS_IFACE=lo` or `RGEX_OFI_DOMAIN=lo` (see the README).
///
/// ```
/// use rgex_net::settings::Settings;
/// let c = rgex_ofi::OfiConfig::default();
/// assert!(c.net.max_medium >= 512 && c.net.window >= 2);
/// // A window below 2 is refused, saying what the setting is.
/// let e = rgex_ofi::OfiConfig { net: Settings { window: 1, ..c.net }, ..c }.check().unwrap_err();
/// assert!(e.to_string().contains("RGEX_OFI_WINDOW=1 must be in 2..=4096 (the credit window"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OfiConfig {
    /// The kit's part: bypass, max Medium, window, send buffers, timeout.
    pub net: Settings,
    /// `RGEX_OFI_PROVIDER`.
    pub provider: Option<String>,
    /// `RGEX_OFI_DOMAIN`.
    pub domain: Option<String>,
    /// `RGEX_OFI_PUT_COMPLETION`; `None`: the provider's default
    /// ([`PutCompletion::default_for`]).
    pub put_completion: Option<PutCompletion>,
    /// `RGEX_OFI_INJECT`; `None`: the provider's inject size.
    pub inject: Option<usize>,
}

impl OfiConfig {
    /// The process environment now, read over the defaults and checked
    /// ([`read`](Self::read) of a fresh [`Environment::capture`]).
    pub fn from_env() -> Result<Self> {
        Self::read(&Environment::capture())
    }

    /// `env`'s settings over the defaults, checked.
    ///
    /// ```
    /// use rgex_core::config::Environment;
    /// let env = Environment::from_pairs([("RGEX_OFI_PROVIDER", "tcp;ofi_rxm"), ("RGEX_OFI_WINDOW", "4")]);
    /// let c = rgex_ofi::OfiConfig::read(&env).unwrap();
    /// assert_eq!((c.provider.as_deref(), c.net.window), (Some("tcp;ofi_rxm"), 4));
    /// ```
    pub fn read(env: &Environment) -> Result<Self> {
        let put_completion = env.choice(
            &vars::OFI_PUT_COMPLETION,
            &[
                ("auto", None),
                ("delivery", Some(PutCompletion::Delivery)),
                ("readback", Some(PutCompletion::ReadBack)),
            ],
            None,
        )?;
        let inject = match env.get(&vars::OFI_INJECT) {
            None => None,
            Some(_) => Some(env.size(&vars::OFI_INJECT, 0)?),
        };
        let c = OfiConfig {
            net: Settings::read(env, &NET_VARS)?,
            provider: env.get(&vars::OFI_PROVIDER).map(str::to_string),
            domain: env.get(&vars::OFI_DOMAIN).map(str::to_string),
            put_completion,
            inject,
        };
        c.check()?;
        Ok(c)
    }

    /// Reject values the conduit cannot work with (the kit's limits).
    pub fn check(&self) -> Result<()> {
        self.net.check(&NET_VARS)
    }
}

impl NetConfig for OfiConfig {
    fn net(&self) -> &Settings {
        &self.net
    }

    fn net_mut(&mut self) -> &mut Settings {
        &mut self.net
    }

    fn check(&self) -> Result<()> {
        OfiConfig::check(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = OfiConfig::default();
        assert_eq!(OfiConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(OfiConfig::read(&Environment::default()).unwrap(), d);
    }

    #[test]
    fn a_bad_put_completion_names_the_choices() {
        let env = Environment::from_pairs([("RGEX_OFI_PUT_COMPLETION", "eventually")]);
        let e = OfiConfig::read(&env).unwrap_err().to_string();
        assert!(
            e.contains(
                r#"RGEX_OFI_PUT_COMPLETION="eventually": expected "auto", "delivery" or "readback""#
            ),
            "{e}"
        );
    }
}
