//! The environment, read once: the `RGEX_` variables of the process as
//! they were when [`Environment::capture`] ran.

use super::{closest, lookup, parse_size, Fallback, Var, VARS};
use crate::{Error, Result};
use std::str::FromStr;

/// A snapshot of the process's `RGEX_` variables. `rgex::init` takes one
/// and every layer's typed configuration is read from it; nothing reads
/// the process environment after that.
///
/// Reads name a registered [`Var`] (from [`vars`](super::vars)); a value
/// is trimmed, and an empty one counts as unset.
///
/// ```
/// use rgex_core::config::{vars, Environment};
/// let env = Environment::from_pairs([("RGEX_RMA", " reference ")]);
/// assert_eq!(env.get(&vars::RMA), Some("reference"));
/// assert_eq!(env.get(&vars::VIS), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// Every `RGEX_` variable set, known or not: (name, value).
    values: Vec<(String, String)>,
}

/// A variable set in the environment that rgex does not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// The registered variable whose name is closest.
    pub closest: &'static Var,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={:?} is not a variable rgex reads, so it is ignored: did you mean {}? \
             (rgex-info lists every one)",
            self.name, self.value, self.closest.name
        )
    }
}

impl Environment {
    /// The process's `RGEX_` variables now (a value that is not UTF-8 is
    /// taken with its invalid bytes replaced).
    pub fn capture() -> Self {
        Self::from_pairs(std::env::vars_os().filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            k.starts_with("RGEX_")
                .then(|| (k, v.to_string_lossy().into_owned()))
        }))
    }

    /// A snapshot holding `pairs` (name, value): for tests, and for
    /// programs that configure rgex without the environment. Names that do
    /// not start with `RGEX_` are kept too, and reported as unknown.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut values: Vec<(String, String)> = Vec::new();
        for (k, v) in pairs {
            let (k, v) = (k.into(), v.into());
            match values.iter_mut().find(|(name, _)| *name == k) {
                Some(slot) => slot.1 = v,
                None => values.push((k, v)),
            }
        }
        Environment { values }
    }

    /// Every registered variable whose fallback is a value, set to it: a
    /// configuration read from this must equal one read from an empty
    /// snapshot (the registry's defaults and the code's agree).
    pub fn fallbacks() -> Self {
        Self::from_pairs(VARS.iter().filter_map(|v| match v.fallback {
            Fallback::Value(x) => Some((v.name, x)),
            Fallback::Behaviour(_) => None,
        }))
    }

    /// `var`'s value, trimmed; `None` when unset or empty.
    pub fn get(&self, var: &Var) -> Option<&str> {
        debug_assert!(
            lookup(var.name) == Some(var),
            "{} is read but not registered in rgex_core::config::VARS",
            var.name
        );
        self.values
            .iter()
            .find(|(k, _)| k == var.name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// `var` as a byte size ([`parse_size`]), `default` when unset; an
    /// error names the variable.
    pub fn size(&self, var: &Var, default: usize) -> Result<usize> {
        match self.get(var) {
            None => Ok(default),
            Some(v) => parse_size(v).map_err(|e| match e {
                Error::Config(why) => Error::Config(format!("{}: {why}", var.name)),
                other => other,
            }),
        }
    }

    /// `var` parsed as an `N`, `None` when unset; an error names the
    /// variable, its value and `what` it should be.
    ///
    /// ```
    /// use rgex_core::config::{vars, Environment};
    /// let env = Environment::from_pairs([("RGEX_OFI_TIMEOUT", "soon")]);
    /// let e = env.number::<u64>(&vars::OFI_TIMEOUT, "a number of seconds").unwrap_err();
    /// assert!(e.to_string().contains("RGEX_OFI_TIMEOUT=\"soon\" is not a number of seconds"));
    /// ```
    pub fn number<N: FromStr>(&self, var: &Var, what: &str) -> Result<Option<N>> {
        match self.get(var) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Error::Config(format!("{}={v:?} is not {what}", var.name))),
        }
    }

    /// `var` as one of `choices` (name, value), `default` when unset; any
    /// other value is an error naming the variable and the choices.
    ///
    /// ```
    /// use rgex_core::config::{vars, Environment};
    /// let env = Environment::from_pairs([("RGEX_RMA", "fast")]);
    /// let e = env.choice(&vars::RMA, &[("auto", false), ("reference", true)], false).unwrap_err();
    /// assert!(e.to_string().contains(r#"RGEX_RMA="fast": expected "auto" or "reference""#), "{e}");
    /// ```
    pub fn choice<T: Copy>(&self, var: &Var, choices: &[(&str, T)], default: T) -> Result<T> {
        let Some(v) = self.get(var) else {
            return Ok(default);
        };
        choices
            .iter()
            .find(|(name, _)| *name == v)
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
                let list = match names.split_last() {
                    Some((last, [])) => last.to_string(),
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                };
                Error::Config(format!("{}={v:?}: expected {list}", var.name))
            })
    }

    /// The variables set here that are not in the registry, each with the
    /// registered name closest to it, in the order they were set.
    pub fn unknown(&self) -> Vec<Unknown> {
        self.values
            .iter()
            .filter(|(k, _)| lookup(k).is_none())
            .map(|(k, v)| Unknown {
                name: k.clone(),
                value: v.clone(),
                closest: closest(k),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::vars;

    #[test]
    fn empty_values_are_unset_and_later_pairs_win() {
        let env = Environment::from_pairs([
            ("RGEX_VIS", "  "),
            ("RGEX_RMA", "auto"),
            ("RGEX_RMA", "reference"),
        ]);
        assert_eq!(env.get(&vars::VIS), None);
        assert_eq!(env.get(&vars::RMA), Some("reference"));
        assert!(env.unknown().is_empty());
    }

    #[test]
    fn sizes_name_the_variable_when_unreadable() {
        let env = Environment::from_pairs([("RGEX_SEGMENT_SIZE", "lots")]);
        let e = env.size(&vars::SEGMENT_SIZE, 1).unwrap_err().to_string();
        assert!(
            e.starts_with("configuration: RGEX_SEGMENT_SIZE: \"lots\" is not a size"),
            "{e}"
        );
        assert_eq!(
            Environment::default().size(&vars::SEGMENT_SIZE, 7).unwrap(),
            7
        );
    }

    #[test]
    fn every_fallback_value_is_set_and_known() {
        let env = Environment::fallbacks();
        assert!(env.unknown().is_empty());
        assert_eq!(env.get(&vars::SEGMENT_SIZE), Some("32M"));
    }

    #[test]
    fn the_registry_names_each_variable_once_and_describes_it() {
        for (i, v) in VARS.iter().enumerate() {
            assert!(v.name.starts_with("RGEX_"), "{}", v.name);
            assert!(
                VARS[..i].iter().all(|w| w.name != v.name),
                "{} is registered twice",
                v.name
            );
            assert!(!v.meaning.is_empty() && !v.reader.is_empty(), "{}", v.name);
            // Readers are named one by one, so that `read_by` finds each.
            for r in v.readers() {
                assert!(
                    !r.is_empty() && !r.contains([',', ' ']),
                    "{}: reader {:?} is not a list of names separated by \", \"",
                    v.name,
                    v.reader
                );
            }
        }
    }
}
