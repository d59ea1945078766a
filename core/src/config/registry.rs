//! What the registry says of one variable.

/// One `RGEX_` environment variable: its name, what it is when unset, who
/// reads it and what it sets. The entries are in [`VARS`](super::VARS);
/// `rgex-info` prints them, the README's table is made from them, and
/// `rgex::init` warns about any `RGEX_` variable that is none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    /// The name (`RGEX_SEGMENT_SIZE`).
    pub name: &'static str,
    /// What applies when it is unset.
    pub fallback: Fallback,
    /// Who reads it: a crate, a conduit or the launcher, several
    /// separated by `, ` (`smp, scc`); [`read_by`](Self::read_by) asks
    /// for one, and a conduit's README lists those its conduit reads.
    pub reader: &'static str,
    /// What it sets and the values it takes.
    pub meaning: &'static str,
}

impl Var {
    /// Whether `who` (a crate, a conduit or the launcher, as
    /// [`reader`](Self::reader) names it) is one of its readers.
    ///
    /// ```
    /// use rgex_core::config::vars;
    /// assert!(vars::SHM_BYPASS.read_by("ofi") && vars::SHM_BYPASS.read_by("ibv"));
    /// assert!(!vars::SHM_BYPASS.read_by("of"));
    /// ```
    pub fn read_by(&self, who: &str) -> bool {
        self.readers().any(|r| r == who)
    }

    /// Each of its readers, in [`reader`](Self::reader)'s order.
    ///
    /// ```
    /// use rgex_core::config::vars;
    /// assert_eq!(vars::SEGMENT_SIZE.readers().collect::<Vec<_>>(), ["smp", "scc"]);
    /// ```
    pub fn readers(&self) -> impl Iterator<Item = &'static str> {
        self.reader.split(", ")
    }
}

/// What applies when a variable is unset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The same as setting this value (`32M`): a test checks that every
    /// typed configuration reads it as its default.
    Value(&'static str),
    /// What happens instead, in words (`libfabric's choice`).
    Behaviour(&'static str),
}

impl Fallback {
    /// The fallback as a table cell: a value in backquotes, a behaviour
    /// as words.
    ///
    /// ```
    /// use rgex_core::config::Fallback;
    /// assert_eq!(Fallback::Value("32M").cell(), "`32M`");
    /// assert_eq!(Fallback::Behaviour("the host name").cell(), "the host name");
    /// ```
    pub fn cell(&self) -> String {
        match self {
            Fallback::Value(v) => format!("`{v}`"),
            Fallback::Behaviour(b) => (*b).to_string(),
        }
    }
}

/// The entry for `name`, if rgex reads it.
///
/// ```
/// assert_eq!(rgex_core::config::lookup("RGEX_CONDUIT").unwrap().reader, "rgex");
/// assert!(rgex_core::config::lookup("RGEX_SEGMNET_SIZE").is_none());
/// ```
pub fn lookup(name: &str) -> Option<&'static Var> {
    super::VARS.iter().find(|v| v.name == name)
}
