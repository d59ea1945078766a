//! What atomic domains take from the settings: read once by
//! `rgex::init` and handed to [`install`](crate::install), which keeps it
//! with the endpoint for every domain made there.

use crate::Implementation;
use rgex_core::config::{vars, Environment};
use rgex_endpoint::Endpoint;
use std::sync::Arc;

/// The atomics' settings.
///
/// ```
/// use rgex_atomics::{AtomicsConfig, Implementation};
/// use rgex_core::config::Environment;
/// let env = Environment::from_pairs([("RGEX_ATOMICS", "shared")]);
/// assert_eq!(AtomicsConfig::read(&env).unwrap().required, Some(Implementation::SharedMemory));
/// let bad = Environment::from_pairs([("RGEX_ATOMICS", "nic")]);
/// let e = AtomicsConfig::read(&bad).unwrap_err().to_string();
/// assert!(e.contains(r#"RGEX_ATOMICS="nic": expected "auto", "reference", "shared" or "offload""#), "{e}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicsConfig {
    /// `RGEX_ATOMICS`: the implementation every domain made without
    /// saying must take (`None`, `auto`: the fastest every member offers).
    pub required: Option<Implementation>,
}

impl AtomicsConfig {
    /// `env`'s settings; a value `RGEX_ATOMICS` does not take is an error.
    pub fn read(env: &Environment) -> rgex_core::Result<Self> {
        let required = env.choice(
            &vars::ATOMICS,
            &[
                ("auto", None),
                ("reference", Some(Implementation::Reference)),
                ("shared", Some(Implementation::SharedMemory)),
                ("offload", Some(Implementation::Offload)),
            ],
            None,
        )?;
        Ok(AtomicsConfig { required })
    }

    /// The settings kept with `ep` ([`install`](crate::install)'s), or
    /// the default if none were.
    pub(crate) fn of(ep: &Arc<Endpoint>) -> rgex_core::Result<AtomicsConfig> {
        ep.extension::<AtomicsConfig, rgex_core::Error>(|_| Ok(Arc::new(AtomicsConfig::default())))
            .map(|c| *c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = AtomicsConfig::default();
        assert_eq!(AtomicsConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(AtomicsConfig::read(&Environment::default()).unwrap(), d);
    }
}
