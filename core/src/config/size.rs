//! Byte sizes as settings spell them (`64K`, `32M`, `1GiB`).

use crate::{Error, Result};

/// Parse a byte size: a number with an optional binary suffix
/// `K`, `M` or `G` (also `KiB`, `MiB`, `GiB`, any case).
///
/// ```
/// use rgex_core::config::parse_size;
/// assert_eq!(parse_size("4096").unwrap(), 4096);
/// assert_eq!(parse_size("64K").unwrap(), 65536);
/// assert_eq!(parse_size("32MiB").unwrap(), 32 << 20);
/// assert!(parse_size("lots").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<usize> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let (digits, shift) = if let Some(d) = lower
        .strip_suffix("kib")
        .or_else(|| lower.strip_suffix('k'))
    {
        (d, 10)
    } else if let Some(d) = lower
        .strip_suffix("mib")
        .or_else(|| lower.strip_suffix('m'))
    {
        (d, 20)
    } else if let Some(d) = lower
        .strip_suffix("gib")
        .or_else(|| lower.strip_suffix('g'))
    {
        (d, 30)
    } else {
        (lower.as_str(), 0)
    };
    let n: usize = digits.trim().parse().map_err(|_| {
        Error::Config(format!(
            "{text:?} is not a size (a number with an optional K, M or G)"
        ))
    })?;
    n.checked_mul(1usize << shift)
        .ok_or_else(|| Error::Config(format!("size {text:?} overflows")))
}
