//! The kit's settings: the part of a network conduit's configuration the
//! kit reads (the bypass, Medium size, credits, send buffers, dead-peer
//! timeout). A transport's configuration embeds one [`Settings`] (as
//! `OfiConfig::net` and `IbvConfig::net`) and reads it with
//! [`Settings::read`] under its own variables' names ([`SettingsVars`]),
//! so the fields, their defaults, their parsing and their limits are
//! written once, here.

use rgex_core::config::{vars, Environment, Var};
use rgex_core::{Error, Result};

/// The kit's settings, as a transport's configuration holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Node-local peers take the smp transport's shared memory
    /// (`RGEX_SHM_BYPASS`).
    pub shm_bypass: bool,
    /// Largest Medium payload.
    pub max_medium: usize,
    /// Credit window per sender and direction.
    pub window: usize,
    /// Send buffers for requests (replies get half as many).
    pub send_buffers: usize,
    /// Dead-peer timeout in seconds (0: never).
    pub timeout_secs: u64,
}

impl Default for Settings {
    /// The bypass on, 8 KiB Mediums, 8 credits, 64 send buffers, 300 s.
    fn default() -> Self {
        Settings {
            shm_bypass: true,
            max_medium: 8 << 10,
            window: 8,
            send_buffers: 64,
            timeout_secs: 300,
        }
    }
}

/// The variables one transport's [`Settings`] are read from (the bypass
/// is `RGEX_SHM_BYPASS` for every transport).
#[derive(Clone, Copy, Debug)]
pub struct SettingsVars {
    /// [`Settings::max_medium`]'s.
    pub max_medium: Var,
    /// [`Settings::window`]'s.
    pub window: Var,
    /// [`Settings::send_buffers`]'s.
    pub send_buffers: Var,
    /// [`Settings::timeout_secs`]'s.
    pub timeout: Var,
}

/// The credit windows a setting may ask for.
const WINDOWS: std::ops::RangeInclusive<usize> = 2..=4096;
/// The Medium sizes a setting may ask for.
const MEDIUMS: std::ops::RangeInclusive<usize> = 512..=1 << 20;
/// The request send-buffer counts a setting may ask for.
const SEND_BUFFERS: std::ops::RangeInclusive<usize> = 2..=65536;

impl Settings {
    /// `env`'s settings under `names`, over the defaults, checked.
    ///
    /// ```
    /// use rgex_core::config::{vars, Environment};
    /// use rgex_net::settings::{Settings, SettingsVars};
    /// const NAMES: SettingsVars = SettingsVars {
    ///     max_medium: vars::OFI_MAX_MEDIUM,
    ///     window: vars::OFI_WINDOW,
    ///     send_buffers: vars::OFI_SEND_BUFFERS,
    ///     timeout: vars::OFI_TIMEOUT,
    /// };
    /// let env = Environment::from_pairs([("RGEX_OFI_WINDOW", "16"), ("RGEX_SHM_BYPASS", "0")]);
    /// let s = Settings::read(&env, &NAMES).unwrap();
    /// assert_eq!((s.window, s.shm_bypass), (16, false));
    /// let env = Environment::from_pairs([("RGEX_OFI_WINDOW", "1")]);
    /// let e = Settings::read(&env, &NAMES).unwrap_err();
    /// assert!(e.to_string().contains("RGEX_OFI_WINDOW=1 must be in 2..=4096 (the credit window"));
    /// ```
    pub fn read(env: &Environment, names: &SettingsVars) -> Result<Settings> {
        let d = Settings::default();
        let s = Settings {
            shm_bypass: crate::shm_bypass::read(env)?,
            max_medium: env.size(&names.max_medium, d.max_medium)?,
            window: env.size(&names.window, d.window)?,
            send_buffers: env.size(&names.send_buffers, d.send_buffers)?,
            timeout_secs: env
                .number(&names.timeout, "a number of seconds")?
                .unwrap_or(d.timeout_secs),
        };
        s.check(names)?;
        Ok(s)
    }

    /// Reject values the kit cannot work with, naming the variable (of
    /// `names`), the value and the limit.
    pub fn check(&self, names: &SettingsVars) -> Result<()> {
        let within =
            |var: &Var, value: usize, range: std::ops::RangeInclusive<usize>, what: &str| {
                if range.contains(&value) {
                    Ok(())
                } else {
                    Err(Error::Config(format!(
                        "{}={value} must be in {}..={} ({what})",
                        var.name,
                        range.start(),
                        range.end()
                    )))
                }
            };
        within(&names.max_medium, self.max_medium, MEDIUMS, "bytes")?;
        within(
            &names.window,
            self.window,
            WINDOWS,
            "the credit window: messages a sender may have unconsumed at a receiver, per \
             direction; default 8",
        )?;
        within(
            &names.send_buffers,
            self.send_buffers,
            SEND_BUFFERS,
            "registered send buffers for requests",
        )
    }
}

/// The bypass variable every transport shares (its entry, for messages).
pub const SHM_BYPASS: Var = vars::SHM_BYPASS;

/// A transport's configuration, as the kit needs it: the [`Settings`] it
/// embeds, and its own check.
pub trait NetConfig: Clone + Send + Sync + 'static {
    /// The kit's part.
    fn net(&self) -> &Settings;
    /// The kit's part, to change.
    fn net_mut(&mut self) -> &mut Settings;
    /// Reject values the conduit cannot work with, naming the setting.
    fn check(&self) -> Result<()>;

    /// A copy of the kit's part.
    fn settings(&self) -> Settings {
        *self.net()
    }

    /// Take the sizes every rank must agree on (rank 0's).
    fn set_sizes(&mut self, max_medium: usize, window: usize) {
        let net = self.net_mut();
        net.max_medium = max_medium;
        net.window = window;
    }
}
