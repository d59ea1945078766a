//! What a rank does when it crashes, as its settings say.

use rgex_core::config::{vars, Environment, Var};
use rgex_core::{Error, Result};
use std::time::Duration;

/// The longest freeze `RGEX_FREEZE_SECS` allows: a day.
pub const FREEZE_SECS_MAX: u64 = 86_400;

/// The crash settings (`RGEX_BACKTRACE`, `RGEX_GDB`, `RGEX_FREEZE`,
/// `RGEX_FREEZE_ON_ERROR`, `RGEX_FREEZE_SECS`).
///
/// ```
/// use rgex::config::Environment;
/// use rgex::crash::CrashConfig;
/// let c = CrashConfig::read(&Environment::from_pairs([("RGEX_BACKTRACE", "1"), ("RGEX_GDB", "0")])).unwrap();
/// assert!(c.backtrace && c.gdb.is_none() && !c.freeze);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashConfig {
    /// Print a backtrace of every thread at a crash.
    pub backtrace: bool,
    /// The debugger that prints it (a path, or a name looked up in
    /// `PATH`); `None`: unwind in the process.
    pub gdb: Option<String>,
    /// Stop at a crash, for a debugger, before dying.
    pub freeze: bool,
    /// Stop also at each error rgex reports to nobody.
    pub freeze_on_error: bool,
    /// How long a freeze lasts.
    pub freeze_for: Duration,
}

impl Default for CrashConfig {
    fn default() -> Self {
        CrashConfig {
            backtrace: false,
            gdb: Some("gdb".into()),
            freeze: false,
            freeze_on_error: false,
            freeze_for: Duration::from_secs(300),
        }
    }
}

/// `var` as 0 or 1.
fn flag(env: &Environment, var: &Var, default: bool) -> Result<bool> {
    env.choice(var, &[("0", false), ("1", true)], default)
}

impl CrashConfig {
    /// Read the settings from `env`; a bad value is an error naming its
    /// variable.
    pub fn read(env: &Environment) -> Result<Self> {
        let d = CrashConfig::default();
        let secs = env
            .number::<u64>(&vars::FREEZE_SECS, "a number of seconds")?
            .unwrap_or(d.freeze_for.as_secs());
        if !(1..=FREEZE_SECS_MAX).contains(&secs) {
            return Err(Error::Config(format!(
                "RGEX_FREEZE_SECS={secs} must be in 1..={FREEZE_SECS_MAX} (seconds)"
            )));
        }
        let freeze_on_error = flag(env, &vars::FREEZE_ON_ERROR, d.freeze_on_error)?;
        Ok(CrashConfig {
            backtrace: flag(env, &vars::BACKTRACE, d.backtrace)?,
            gdb: match env.get(&vars::GDB) {
                None => d.gdb,
                Some("0") => None,
                Some(g) => Some(g.to_string()),
            },
            // Freezing on errors freezes on crashes too.
            freeze: flag(env, &vars::FREEZE, d.freeze)? || freeze_on_error,
            freeze_on_error,
            freeze_for: Duration::from_secs(secs),
        })
    }

    /// Whether a crash needs rgex's handlers at all.
    pub fn catches_crashes(&self) -> bool {
        self.backtrace || self.freeze
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallbacks_are_the_defaults() {
        let d = CrashConfig::default();
        assert_eq!(CrashConfig::read(&Environment::default()).unwrap(), d);
        assert_eq!(CrashConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert!(!d.catches_crashes());
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = |k: &str, v: &str| {
            CrashConfig::read(&Environment::from_pairs([(k, v)]))
                .unwrap_err()
                .to_string()
        };
        assert!(e("RGEX_BACKTRACE", "yes").contains(r#"RGEX_BACKTRACE="yes": expected "0" or "1""#));
        assert!(e("RGEX_FREEZE_SECS", "0").contains("RGEX_FREEZE_SECS=0 must be in 1..=86400"));
        assert!(e("RGEX_FREEZE_SECS", "soon").contains("is not a number of seconds"));
    }

    #[test]
    fn freezing_on_errors_freezes_on_crashes() {
        let c = CrashConfig::read(&Environment::from_pairs([
            ("RGEX_FREEZE_ON_ERROR", "1"),
            ("RGEX_FREEZE_SECS", "5"),
        ]))
        .unwrap();
        assert!(c.freeze && c.freeze_on_error && c.catches_crashes());
        assert_eq!(c.freeze_for, Duration::from_secs(5));
    }
}
