//! What VIS takes from the settings: read once by `rgex::init` and handed
//! to [`install`](crate::install), which keeps it with the endpoint for
//! every [`Vis`](crate::Vis) made there.

use crate::Mechanism;
use rgex_core::config::{vars, Environment};
use rgex_core::Result;

/// VIS's settings.
///
/// ```
/// use rgex_core::config::Environment;
/// use rgex_vis::{Mechanism, VisConfig};
/// let env = Environment::from_pairs([("RGEX_VIS", "am")]);
/// assert_eq!(VisConfig::read(&env).unwrap().mechanism, Mechanism::Am);
/// let bad = Environment::from_pairs([("RGEX_VIS", "fast")]);
/// let e = VisConfig::read(&bad).unwrap_err().to_string();
/// assert!(e.contains(r#"RGEX_VIS="fast": expected "auto", "direct", "rma", "am" or "native""#), "{e}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisConfig {
    /// `RGEX_VIS`: the mechanism a [`Vis`](crate::Vis) takes unless its
    /// builder forces one.
    pub mechanism: Mechanism,
}

impl Default for VisConfig {
    fn default() -> Self {
        VisConfig {
            mechanism: Mechanism::Auto,
        }
    }
}

impl VisConfig {
    /// `env`'s settings; a mechanism it does not name is an error.
    pub fn read(env: &Environment) -> Result<Self> {
        Ok(VisConfig {
            mechanism: env.choice(&vars::VIS, &Mechanism::NAMES, Mechanism::Auto)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_fallbacks_are_the_defaults() {
        let d = VisConfig::default();
        assert_eq!(VisConfig::read(&Environment::fallbacks()).unwrap(), d);
        assert_eq!(VisConfig::read(&Environment::default()).unwrap(), d);
    }
}
