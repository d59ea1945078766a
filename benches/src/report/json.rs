//! JSON records: one per data point, the schema every bench shares.

use crate::stats::Stats;
use serde::{Deserialize, Deserializer, Serialize};
use std::io;
use std::path::Path;

/// One data point.
///
/// Read back as written (the report page reads every bench's records);
/// a figure that was not finite was written as `null` and reads back as
/// NaN.
///
/// ```
/// use rgex_benches::report::Record;
/// let text = r#"[{"bench":"b","variant":"v","size":8,"conduit":"smp","provider":null,
///   "ranks":2,"median":1.5,"min":1.0,"max":null,"unit":"ns","repetitions":5,
///   "iterations":100,"oversubscribed":false}]"#;
/// let r: Vec<Record> = serde_json::from_str(text).unwrap();
/// assert_eq!((r[0].size, r[0].median, r[0].floor), (Some(8), 1.5, None));
/// assert!(r[0].max.is_nan());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The bench (`testam`, ...).
    pub bench: String,
    /// What was measured (`AM Short round trip`, `FP`, ...).
    pub variant: String,
    /// Payload size in bytes, if the point has one.
    pub size: Option<u64>,
    /// The conduit (`smp`, ...; a peer tool's name for its own figures).
    pub conduit: String,
    /// The conduit's provider (libfabric provider, UCX transports), if any.
    pub provider: Option<String>,
    /// Ranks in the job.
    pub ranks: u32,
    /// Median over the repetitions.
    #[serde(deserialize_with = "figure")]
    pub median: f64,
    /// Smallest repetition.
    #[serde(deserialize_with = "figure")]
    pub min: f64,
    /// Largest repetition.
    #[serde(deserialize_with = "figure")]
    pub max: f64,
    /// Unit of median, min and max (`ns`, `GB/s`, ...).
    pub unit: String,
    /// Repetitions behind median, min and max.
    pub repetitions: usize,
    /// Iterations (messages, copies, round trips) per repetition.
    pub iterations: u64,
    /// More ranks or threads than CPUs: the figures measure the scheduler too.
    pub oversubscribed: bool,
    /// The floor this point is compared with, in `unit` (for example twice
    /// `fi_pingpong`'s one-way latency on the same provider), if any.
    /// Absent from the JSON when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// What [`floor`](Record::floor) is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_name: Option<String>,
    /// `median / floor`: for a time, above 1 is slower than the floor; for
    /// a bandwidth, above 1 is faster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// The ratio the requirement asks for (a time: `ratio <= target`), if
    /// there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

impl Record {
    /// This record compared with `floor` (in the record's unit), named
    /// `name`, against `target` if the requirement sets one.
    ///
    /// ```
    /// use rgex_benches::{report::Job, stats::Stats};
    /// let job = Job { bench: "b".into(), conduit: "ofi".into(), provider: None, ranks: 2, oversubscribed: false };
    /// let s = Stats::from_samples(&[23.0]).unwrap();
    /// let r = job.record("AM Short round trip", None, &s, "us", 1).with_floor("2 x one-way", 20.0, Some(1.15));
    /// assert_eq!(r.ratio, Some(1.15));
    /// let json = serde_json::to_string(&r).unwrap();
    /// assert!(json.contains("\"floor\":20.0") && json.contains("\"target\":1.15"));
    /// // Without a floor the fields are absent, as before they existed.
    /// let plain = serde_json::to_string(&job.record("x", None, &s, "us", 1)).unwrap();
    /// assert!(!plain.contains("\"floor") && !plain.contains("\"ratio\""));
    /// ```
    pub fn with_floor(mut self, name: &str, floor: f64, target: Option<f64>) -> Record {
        self.floor = Some(floor);
        self.floor_name = Some(name.to_owned());
        self.ratio = (floor > 0.0).then(|| self.median / floor);
        self.target = target;
        self
    }
}

/// What every record of one run shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The bench.
    pub bench: String,
    /// The conduit.
    pub conduit: String,
    /// The conduit's provider, if any.
    pub provider: Option<String>,
    /// Ranks in the job.
    pub ranks: u32,
    /// More ranks or threads than CPUs.
    pub oversubscribed: bool,
}

impl Job {
    /// A record of this job for one data point.
    pub fn record(
        &self,
        variant: &str,
        size: Option<u64>,
        s: &Stats,
        unit: &str,
        iterations: u64,
    ) -> Record {
        Record {
            bench: self.bench.clone(),
            variant: variant.to_owned(),
            size,
            conduit: self.conduit.clone(),
            provider: self.provider.clone(),
            ranks: self.ranks,
            median: s.median,
            min: s.min,
            max: s.max,
            unit: unit.to_owned(),
            repetitions: s.reps,
            iterations,
            oversubscribed: self.oversubscribed,
            floor: None,
            floor_name: None,
            ratio: None,
            target: None,
        }
    }
}

/// A figure as written: a number, or `null` for one that was not finite
/// (serde_json writes NaN and infinities so).
fn figure<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Write `records` (a bench's [`Record`]s, or another schema's rows such
/// as testcoll's [`CollRecord`](crate::report::CollRecord)s) to `path` as
/// a pretty-printed JSON array, creating its directory if needed.
pub fn write_json<T: Serialize>(path: &Path, records: &[T]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(records).map_err(io::Error::other)?;
    text.push('\n');
    std::fs::write(path, text)
}
