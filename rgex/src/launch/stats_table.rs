//! `rgex-run --stats`: the job's statistics table, read from the JSON
//! each rank wrote (`RGEX_STATS_FILE`), the totals and each rank's share.

use std::fmt::Write as _;
use std::path::Path;

/// Every rank's counters, as `RGEX_STATS_FILE` holds them: `(rank, counters)`.
pub type RankCounts = (u32, Vec<(String, u64)>);

/// Read the files `dir/R.json` of ranks `0..ranks`; a rank that wrote
/// none (it died first) is named in the second list.
pub fn read(dir: &Path, ranks: u32) -> (Vec<RankCounts>, Vec<u32>) {
    let (mut got, mut missing) = (Vec::new(), Vec::new());
    for r in 0..ranks {
        match std::fs::read_to_string(dir.join(format!("{r}.json")))
            .ok()
            .and_then(|t| rgex_core::observe::parse_json(&t))
        {
            Some(c) => got.push(c),
            None => missing.push(r),
        }
    }
    (got, missing)
}

/// The table: one line per counter that is not zero anywhere, its job
/// total and each rank's share of it (up to 8 ranks; beyond, the least
/// and the most a rank has).
///
/// ```
/// let ranks = vec![
///     (0, vec![("am.client.fp".to_string(), 30), ("poll.polls".to_string(), 0)]),
///     (1, vec![("am.client.fp".to_string(), 10), ("poll.polls".to_string(), 0)]),
/// ];
/// let t = rgex::launch::stats_table::render(&ranks);
/// assert!(t.contains("am.client.fp"));
/// assert!(t.contains("40") && t.contains("75.0%") && t.contains("25.0%"));
/// assert!(!t.contains("poll.polls"));
/// ```
pub fn render(ranks: &[RankCounts]) -> String {
    let Some((_, first)) = ranks.first() else {
        return "rgex-run --stats: no rank wrote its counts\n".into();
    };
    let wide = ranks.len() <= 8;
    let mut out = String::new();
    let _ = write!(out, "{:<40} {:>14}", "counter", "total");
    if wide {
        for (r, _) in ranks {
            let _ = write!(out, " {:>8}", format!("rank {r}"));
        }
    } else {
        let _ = write!(out, " {:>18} {:>18}", "least (rank)", "most (rank)");
    }
    out.push('\n');
    for (i, (key, _)) in first.iter().enumerate() {
        let of = |c: &Vec<(String, u64)>| c.get(i).filter(|(k, _)| k == key).map_or(0, |(_, v)| *v);
        let values: Vec<u64> = ranks.iter().map(|(_, c)| of(c)).collect();
        let peak = key.ends_with("_peak");
        let total = if peak {
            values.iter().copied().max().unwrap_or(0)
        } else {
            values.iter().sum()
        };
        if total == 0 {
            continue;
        }
        let _ = write!(out, "{key:<40} {total:>14}");
        let share = |v: u64| format!("{:.1}%", 100.0 * v as f64 / total as f64);
        if wide {
            for v in &values {
                let _ = write!(out, " {:>8}", if peak { v.to_string() } else { share(*v) });
            }
        } else {
            let (lo, hi) = (
                (0..values.len()).min_by_key(|&j| values[j]).unwrap_or(0),
                (0..values.len()).max_by_key(|&j| values[j]).unwrap_or(0),
            );
            for j in [lo, hi] {
                let _ = write!(
                    out,
                    " {:>18}",
                    format!("{} ({})", share(values[j]), ranks[j].0)
                );
            }
        }
        out.push('\n');
    }
    out
}
