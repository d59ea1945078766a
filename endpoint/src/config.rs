//! What an endpoint and its client take from the settings, read once
//! (by `rgex::init`, from its [`Environment`] snapshot) and held by the
//! endpoint: no constructor below reads the environment.

use rgex_core::config::{vars, Environment};
use rgex_core::{Error, Result};
use std::time::Duration;

/// The endpoint's and the client's settings.
///
/// ```
/// use rgex_endpoint::AmConfig;
/// use rgex_core::config::Environment;
/// let env = Environment::from_pairs([("RGEX_RMA", "reference"), ("RGEX_PROGRESS_THREAD", "1")]);
/// let c = AmConfig::read(&env, false).unwrap();
/// assert!(c.rma_reference && c.progress_thread && !c.polite);
/// let bad = Environment::from_pairs([("RGEX_RMA", "fast")]);
/// assert!(AmConfig::read(&bad, false).unwrap_err().to_string().contains("RGEX_RMA=\"fast\""));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmConfig {
    /// Waits yield the CPU at once (oversubscribed nodes): the job's
    /// `polite` (`RGEX_POLITE`, or more ranks than CPUs on the node).
    pub polite: bool,
    /// `RGEX_RMA=reference`: RMA goes through active messages even where
    /// the peer's segment is mapped (to test the reference path).
    pub rma_reference: bool,
    /// `RGEX_PROGRESS_THREAD=1`: the client starts a progress thread at
    /// init ([`Client::progress_thread_as_configured`](crate::Client::progress_thread_as_configured)).
    pub progress_thread: bool,
    /// `RGEX_PROGRESS_IDLE_MS`: a progress thread's longest sleep on its
    /// conduit's wait object (a safety net: senders wake it; tests set it
    /// past the job's time limit, so that a lost wakeup fails the job).
    pub progress_idle: Duration,
    /// `RGEX_COLL_BOARD` (on by default): the world team's collectives
    /// run on the members' shared-memory board when every member has one
    /// mapped (smp, or the node-local bypass with the job on one node);
    /// `0` keeps them on active messages everywhere.
    pub coll_board: bool,
}

impl Default for AmConfig {
    fn default() -> Self {
        AmConfig {
            polite: false,
            rma_reference: false,
            progress_thread: false,
            progress_idle: crate::progress_thread::IDLE_SLEEP,
            coll_board: true,
        }
    }
}

impl AmConfig {
    /// `env`'s settings, with the job's `polite`; a value that is not one
    /// a variable takes is an error naming it.
    pub fn read(env: &Environment, polite: bool) -> Result<Self> {
        Ok(AmConfig {
            polite,
            rma_reference: env.choice(
                &vars::RMA,
                &[("auto", false), ("reference", true)],
                false,
            )?,
            progress_thread: env.choice(
                &vars::PROGRESS_THREAD,
                &[("0", false), ("1", true)],
                false,
            )?,
            progress_idle: match env.number::<u64>(
                &vars::PROGRESS_IDLE_MS,
                "a number of milliseconds, at least 1",
            )? {
                None => crate::progress_thread::IDLE_SLEEP,
                Some(ms) if ms >= 1 => Duration::from_millis(ms),
                Some(_) => {
                    return Err(Error::Config(format!(
                        "{}=0: expected a number of milliseconds, at least 1",
                        vars::PROGRESS_IDLE_MS.name
                    )))
                }
            },
            coll_board: env.choice(&vars::COLL_BOARD, &[("0", false), ("1", true)], true)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = AmConfig::default();
        assert_eq!(AmConfig::read(&Environment::fallbacks(), false).unwrap(), d);
        assert_eq!(AmConfig::read(&Environment::default(), false).unwrap(), d);
    }

    #[test]
    fn a_progress_thread_value_other_than_0_or_1_is_refused() {
        let env = Environment::from_pairs([("RGEX_PROGRESS_THREAD", "yes")]);
        let e = AmConfig::read(&env, false).unwrap_err().to_string();
        assert!(
            e.contains(r#"RGEX_PROGRESS_THREAD="yes": expected "0" or "1""#),
            "{e}"
        );
    }
}
