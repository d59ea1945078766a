//! Reporting: text tables for people, JSON records for tools, SVG plots.
//!
//! - [`Table`]: aligned columns on stdout;
//! - [`Record`] and [`write_json`]: one record per data point, in the
//!   schema every bench shares (`BENCHMARKS.md`);
//! - [`Plot`]: a hand-written SVG line plot (no plotting crate);
//! - [`CollRecord`]: testcoll's rows (rgex beside Open MPI);
//! - [`Machine`]: the machine a run ran on;
//! - [`page`]: one HTML page of a run's records and plots.

mod coll;
mod json;
mod machine;
pub mod page;
mod svg;
mod table;

pub use coll::CollRecord;
pub use json::{write_json, Job, Record};
pub use machine::{cpuinfo_field, mem_total, utc, Machine};
pub use svg::{Plot, Series};
pub use table::Table;

/// Escape text for HTML and SVG (element text and quoted attributes).
///
/// ```
/// assert_eq!(rgex_benches::report::escape(r#"a<b & "c""#), "a&lt;b &amp; &quot;c&quot;");
/// ```
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Format a figure with a sensible number of digits for a table.
///
/// ```
/// use rgex_benches::report::num;
/// assert_eq!(num(1234.56), "1235");
/// assert_eq!(num(12.345), "12.3");
/// assert_eq!(num(1.2345), "1.23");
/// // Below 0.01, three significant digits (a 1-byte put over tcp, in GB/s).
/// assert_eq!(num(0.000123456), "0.000123");
/// assert_eq!(num(0.0), "0.00");
/// ```
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.01 || a == 0.0 || !a.is_finite() {
        format!("{x:.2}")
    } else {
        // Digits after the point up to the third significant one.
        let places = (2.0 - a.log10().floor()) as usize;
        format!("{x:.places$}")
    }
}

/// `median [min .. max]`, each via [`num`].
pub fn spread(s: &crate::stats::Stats) -> String {
    format!("{} [{} .. {}]", num(s.median), num(s.min), num(s.max))
}

/// A size in bytes as people write it: `512`, `4K`, `64K`, `2M`.
///
/// ```
/// use rgex_benches::report::size;
/// assert_eq!(size(0), "0");
/// assert_eq!(size(4096), "4K");
/// assert_eq!(size(3 << 20), "3M");
/// assert_eq!(size(1000), "1000");
/// ```
pub fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}
