//! Settings of the scc conduit.

use crate::emu::CheckMode;
use rgex_core::config::{vars, Environment};
use rgex_core::{Error, Result};
use std::time::Duration;

/// Sizes and bounds of the scc conduit, read from `RGEX_SEGMENT_SIZE`
/// (this rank's segment, in the chip's shared DRAM), `RGEX_SCC_DEPTH` (AM
/// slots per sender, receiver and direction; at most 8 with 48 ranks),
/// `RGEX_SCC_MAX_MEDIUM`, `RGEX_SCC_TIMEOUT` and `RGEX_SCC_CHECK` (see
/// [`rgex_core::config::vars`] for their meaning and defaults).
///
/// Depth, max Medium and checking are taken from rank 0 so every rank
/// agrees; segment sizes may differ per rank. The default segment is
/// smp's, so programs sized for one run on the other; with the checker on
/// every byte of chip memory has 16 more of shadow (sparse: only the pages
/// touched cost memory).
///
/// ```
/// let c = rgex_scc::SccConfig::default();
/// assert!(c.depth.is_power_of_two() && c.max_medium >= 512);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SccConfig {
    /// AM slots per channel.
    pub depth: u32,
    /// Largest Medium payload.
    pub max_medium: usize,
    /// This rank's segment length.
    pub segment_len: usize,
    /// Bound on every wait.
    pub timeout: Duration,
    /// Stale-read checking.
    pub check: CheckMode,
}

impl Default for SccConfig {
    fn default() -> Self {
        SccConfig {
            depth: 4,
            max_medium: 1024,
            segment_len: 32 << 20,
            timeout: Duration::from_secs(120),
            check: CheckMode::Off,
        }
    }
}

impl SccConfig {
    /// The process environment now, read over the defaults and checked
    /// ([`read`](Self::read) of a fresh [`Environment::capture`]).
    pub fn from_env() -> Result<Self> {
        Self::read(&Environment::capture())
    }

    /// `env`'s settings over the defaults, checked.
    pub fn read(env: &Environment) -> Result<Self> {
        let d = SccConfig::default();
        let depth = env.size(&vars::SCC_DEPTH, d.depth as usize)?;
        let secs = env.size(&vars::SCC_TIMEOUT, d.timeout.as_secs() as usize)?;
        let c = SccConfig {
            depth: u32::try_from(depth)
                .map_err(|_| Error::Config(format!("RGEX_SCC_DEPTH={depth} is far too large")))?,
            max_medium: env.size(&vars::SCC_MAX_MEDIUM, d.max_medium)?,
            segment_len: env.size(&vars::SEGMENT_SIZE, d.segment_len)?,
            timeout: Duration::from_secs(secs as u64),
            check: CheckMode::read(env),
        };
        c.check()?;
        Ok(c)
    }

    /// Reject values the conduit cannot work with (those that depend on the
    /// job size are checked at setup).
    pub fn check(&self) -> Result<()> {
        if !self.depth.is_power_of_two() || self.depth > 1 << 16 {
            return Err(Error::Config(format!(
                "RGEX_SCC_DEPTH={} must be a power of two in 1..=65536",
                self.depth
            )));
        }
        if !(512..=1 << 20).contains(&self.max_medium) {
            return Err(Error::Config(format!(
                "RGEX_SCC_MAX_MEDIUM={} must be in 512..=1048576 bytes",
                self.max_medium
            )));
        }
        if self.segment_len as u64 > 1 << 36 {
            return Err(Error::Config(format!(
                "RGEX_SEGMENT_SIZE={} is larger than the 64 GiB the scc conduit accepts",
                self.segment_len
            )));
        }
        if self.timeout.is_zero() {
            return Err(Error::Config(
                "RGEX_SCC_TIMEOUT must be at least 1 second".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = SccConfig::default();
        assert_eq!(SccConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(SccConfig::read(&Environment::default()).unwrap(), d);
    }
}
