//! testcoll's records: one row per job size, test and message size, rgex
//! beside Open MPI (a schema of its own: the two are separate programs
//! measured in the same round, not a point and its floor).

use serde::{Deserialize, Serialize};

/// One row of testcoll's table: each side's best round, in ns per call
/// (the slowest rank's), or `None` where that side was not measured.
///
/// ```
/// use rgex_benches::report::CollRecord;
/// let r = CollRecord::new(4, false, "bcast", 8, Some(812.54), Some(1000.0));
/// assert_eq!(r.rgex_ns, Some(812.5)); // kept to 0.1 ns, as the table shows
/// assert_eq!(r.ratio(), Some(0.8125));
/// let json = serde_json::to_string(&r).unwrap();
/// assert_eq!(json, r#"{"ranks":4,"oversubscribed":false,"test":"bcast","size":8,"rgex_ns":812.5,"mpi_ns":1000.0}"#);
/// assert_eq!(serde_json::from_str::<CollRecord>(&json).unwrap(), r);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollRecord {
    /// Ranks in both jobs.
    pub ranks: u32,
    /// More ranks than CPUs: the figures measure the scheduler too.
    pub oversubscribed: bool,
    /// The test (`barrier`, `bcast`, ...).
    pub test: String,
    /// Message size in bytes (0 for a barrier).
    pub size: u64,
    /// rgex's ns per call, if measured.
    pub rgex_ns: Option<f64>,
    /// Open MPI's ns per call, if measured.
    pub mpi_ns: Option<f64>,
}

impl CollRecord {
    /// A row; the figures are kept to 0.1 ns.
    pub fn new(
        ranks: u32,
        oversubscribed: bool,
        test: &str,
        size: u64,
        rgex_ns: Option<f64>,
        mpi_ns: Option<f64>,
    ) -> CollRecord {
        let tenth = |x: f64| (x * 10.0).round() / 10.0;
        CollRecord {
            ranks,
            oversubscribed,
            test: test.to_owned(),
            size,
            rgex_ns: rgex_ns.map(tenth),
            mpi_ns: mpi_ns.map(tenth),
        }
    }

    /// rgex's time over Open MPI's (below 1: rgex is faster), if both
    /// were measured.
    pub fn ratio(&self) -> Option<f64> {
        match (self.rgex_ns, self.mpi_ns) {
            (Some(r), Some(m)) if m > 0.0 => Some(r / m),
            _ => None,
        }
    }
}
