//! Settings of the smp conduit.

use rgex_core::config::{vars, Environment};
use rgex_core::{Error, Result};

/// Sizes of the smp conduit's shared-memory structures, read from
/// `RGEX_SEGMENT_SIZE`, `RGEX_SMP_QUEUE_DEPTH` and `RGEX_SMP_MAX_MEDIUM`
/// (see [`rgex_core::config::vars`] for their meaning and defaults).
///
/// Depth and max Medium are taken from rank 0 so every rank agrees.
///
/// ```
/// let c = rgex_smp::SmpConfig::default();
/// assert!(c.depth.is_power_of_two() && c.max_medium >= 512);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmpConfig {
    /// Cells per queue.
    pub depth: u64,
    /// Largest Medium payload.
    pub max_medium: usize,
    /// This rank's segment length.
    pub segment_len: usize,
}

impl Default for SmpConfig {
    fn default() -> Self {
        SmpConfig {
            depth: 64,
            max_medium: 64 << 10,
            segment_len: 32 << 20,
        }
    }
}

impl SmpConfig {
    /// The process environment now, read over the defaults and checked
    /// ([`read`](Self::read) of a fresh [`Environment::capture`]).
    pub fn from_env() -> Result<Self> {
        Self::read(&Environment::capture())
    }

    /// `env`'s settings over the defaults, checked.
    ///
    /// ```
    /// use rgex_core::config::Environment;
    /// let env = Environment::from_pairs([("RGEX_SEGMENT_SIZE", "1M")]);
    /// assert_eq!(rgex_smp::SmpConfig::read(&env).unwrap().segment_len, 1 << 20);
    /// ```
    pub fn read(env: &Environment) -> Result<Self> {
        let d = SmpConfig::default();
        let c = SmpConfig {
            depth: env.size(&vars::SMP_QUEUE_DEPTH, d.depth as usize)? as u64,
            max_medium: env.size(&vars::SMP_MAX_MEDIUM, d.max_medium)?,
            segment_len: env.size(&vars::SEGMENT_SIZE, d.segment_len)?,
        };
        c.check()?;
        Ok(c)
    }

    /// Reject values the conduit cannot work with.
    pub fn check(&self) -> Result<()> {
        if !self.depth.is_power_of_two() || self.depth < 2 || self.depth > 1 << 20 {
            return Err(Error::Config(format!(
                "RGEX_SMP_QUEUE_DEPTH={} must be a power of two from 2 to 1048576 \
                 (a queue of one cell cannot tell a message from a free cell)",
                self.depth
            )));
        }
        if self.max_medium < 512 || self.max_medium > u32::MAX as usize {
            return Err(Error::Config(format!(
                "RGEX_SMP_MAX_MEDIUM={} must be at least 512 bytes (and below 4 GiB)",
                self.max_medium
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = SmpConfig::default();
        assert_eq!(SmpConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(SmpConfig::read(&Environment::default()).unwrap(), d);
    }

    #[test]
    fn depth_must_be_a_power_of_two_of_at_least_two() {
        let with = |depth| SmpConfig {
            depth,
            ..SmpConfig::default()
        };
        for bad in [0, 1, 3, 1 << 21] {
            let e = with(bad).check().expect_err("refused").to_string();
            assert!(
                e.contains(&format!(
                    "RGEX_SMP_QUEUE_DEPTH={bad} must be a power of two from 2"
                )),
                "{e}"
            );
        }
        for good in [2, 64, 1 << 20] {
            with(good).check().expect("accepted");
        }
    }
}
