//! The machine a bench run ran on, described once before the benches
//! (`bench-page --machine PATH`) so the report page can show it beside
//! their figures.

use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the report page says about the machine. A field this machine
/// does not tell (no `/proc`, say) is `None` and shows as unknown.
///
/// ```
/// let m = rgex_benches::report::Machine::this(Some("ci/bench.sh --quick"));
/// assert!(m.cpus_online >= 1 && m.taken.ends_with("UTC"));
/// let back: rgex_benches::report::Machine =
///     serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
/// assert_eq!(back, m);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// When it was described (`2025-12-02 13:46:19 UTC`).
    pub taken: String,
    /// The host name.
    pub host: Option<String>,
    /// The CPU model (`/proc/cpuinfo`'s `model name`).
    pub cpu_model: Option<String>,
    /// CPUs online.
    pub cpus_online: usize,
    /// The CPU's cache as `/proc/cpuinfo` gives it (`32768 KB`).
    pub cache: Option<String>,
    /// True if the CPU says it runs under a hypervisor (its
    /// `hypervisor` flag): a virtual machine, whose vCPUs may move.
    pub virtual_machine: Option<bool>,
    /// Total memory (`/proc/meminfo`'s `MemTotal`, in GiB).
    pub memory: Option<String>,
    /// The kernel release.
    pub kernel: Option<String>,
    /// The operating system (`/etc/os-release`'s `PRETTY_NAME`).
    pub os: Option<String>,
    /// The load averages (1, 5, 15 minutes) when it was described.
    pub load_average: Option<String>,
    /// The rgex-benches version that described it.
    pub rgex_version: String,
    /// What the run was (`ci/bench.sh --quick`), as its caller says.
    pub note: Option<String>,
}

impl Machine {
    /// This machine, now; `note` says what the run is.
    pub fn this(note: Option<&str>) -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let trimmed = |s: String| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        Machine {
            taken: utc(SystemTime::now()),
            host: read("/proc/sys/kernel/hostname").and_then(trimmed),
            cpu_model: cpuinfo_field(&cpuinfo, "model name"),
            cpus_online: crate::affinity::online_cpus(),
            cache: cpuinfo_field(&cpuinfo, "cache size"),
            virtual_machine: cpuinfo_field(&cpuinfo, "flags")
                .map(|f| f.split_whitespace().any(|x| x == "hypervisor")),
            memory: read("/proc/meminfo").and_then(|m| mem_total(&m)),
            kernel: read("/proc/sys/kernel/osrelease").and_then(trimmed),
            os: read("/etc/os-release").and_then(|t| os_name(&t)),
            load_average: read("/proc/loadavg")
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
            rgex_version: env!("CARGO_PKG_VERSION").to_owned(),
            note: note.map(str::to_owned),
        }
    }

    /// The description as (what, value) rows, unknowns said so.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_owned());
        vec![
            ("described", self.taken.clone()),
            ("run", or(&self.note)),
            ("host", or(&self.host)),
            ("CPU", or(&self.cpu_model)),
            ("CPUs online", self.cpus_online.to_string()),
            ("cache", or(&self.cache)),
            (
                "virtual machine",
                match self.virtual_machine {
                    Some(true) => "yes (hypervisor flag): vCPUs may move between placements",
                    Some(false) => "no hypervisor flag",
                    None => "unknown",
                }
                .to_owned(),
            ),
            ("memory", or(&self.memory)),
            ("kernel", or(&self.kernel)),
            ("OS", or(&self.os)),
            ("load average (1, 5, 15 min)", or(&self.load_average)),
            ("rgex-benches", self.rgex_version.clone()),
        ]
    }
}

/// The first value of `field` in `/proc/cpuinfo`'s text.
///
/// ```
/// use rgex_benches::report::cpuinfo_field;
/// let t = "processor\t: 0\nmodel name\t: AMD EPYC 9654\ncache size\t: 1024 KB\n";
/// assert_eq!(cpuinfo_field(t, "model name").as_deref(), Some("AMD EPYC 9654"));
/// assert_eq!(cpuinfo_field(t, "flags"), None);
/// ```
pub fn cpuinfo_field(text: &str, field: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim().to_owned())
    })
}

/// `MemTotal` of `/proc/meminfo`'s text, in GiB.
///
/// ```
/// assert_eq!(rgex_benches::report::mem_total("MemTotal:  8388608 kB\n").as_deref(), Some("8.0 GiB"));
/// ```
pub fn mem_total(text: &str) -> Option<String> {
    let kb: f64 = cpuinfo_field(text, "MemTotal")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(format!("{:.1} GiB", kb / (1024.0 * 1024.0)))
}

/// `PRETTY_NAME` of `/etc/os-release`'s text.
fn os_name(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_owned())
}

/// A time as `YYYY-MM-DD HH:MM:SS UTC`.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_secs(1_764_683_179);
/// assert_eq!(rgex_benches::report::utc(t), "2025-12-02 13:46:19 UTC");
/// assert_eq!(rgex_benches::report::utc(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
/// ```
pub fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Days since 1970-01-01 to a civil date, counting in 400-year eras
    // that start on 1 March (so the leap day ends a year).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}
