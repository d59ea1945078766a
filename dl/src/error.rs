//! Why a library could not be used.

use std::fmt;

/// A library that could not be loaded or is not the one expected: the
/// text names the file, where it was looked for (or where it was found)
/// and the packages that provide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The whole explanation, one line.
    pub why: String,
}

impl LoadError {
    /// An error with the explanation `why`.
    pub fn new(why: impl Into<String>) -> Self {
        LoadError { why: why.into() }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for LoadError {}
