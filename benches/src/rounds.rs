//! rgex and its peers interleaved in rounds (BENCHMARKS.md: this VM's
//! vCPUs switch between a fast and a slow placement for minutes at a
//! time, so figures taken minutes apart do not compare).
//!
//! A round measures every point once, in the same order, the physical
//! floor (cache-line round trip) before the first point and after each
//! one. Each point is reported with its own floor before and after; a
//! round in which the floor moved by more than [`MIXED`] is marked mixed
//! (its points may have run on different placements). Each point's best
//! round is its lowest median: the figures here are times, lower is
//! better.

use crate::report::{num, Job, Record, Table};
use crate::stats::Stats;
use std::fmt::Write as _;

/// A round whose floors differ by more than this fraction (largest over
/// smallest, minus one) is mixed.
pub const MIXED: f64 = 0.2;

/// One point measured in one round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The figure over its repetitions.
    pub stats: Stats,
    /// Iterations per repetition.
    pub iters: u64,
    /// Floor (ns) measured just before it.
    pub floor_before: f64,
    /// Floor (ns) measured just after it.
    pub floor_after: f64,
}

impl Measured {
    /// The mean of the floors around the point.
    pub fn floor(&self) -> f64 {
        (self.floor_before + self.floor_after) / 2.0
    }
}

/// The points of a set of rounds, one column per point.
#[derive(Clone, Debug)]
pub struct Rounds {
    /// The points' names (`rgex AM Short round trip`, `UCX ucp_am_lat ...`).
    pub names: Vec<String>,
    /// The unit of every point.
    pub unit: String,
    /// Per round, per point: what was measured or why it was not.
    pub rounds: Vec<Vec<Result<Measured, String>>>,
}

/// True if `floors` differ by more than [`MIXED`].
///
/// ```
/// use rgex_benches::rounds::moved;
/// assert!(!moved(&[100.0, 110.0, 119.0]));
/// assert!(moved(&[100.0, 400.0]));
/// assert!(!moved(&[]));
/// ```
pub fn moved(floors: &[f64]) -> bool {
    let lo = floors.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = floors.iter().copied().fold(0.0, f64::max);
    lo > 0.0 && hi / lo - 1.0 > MIXED
}

impl Rounds {
    /// Run `rounds` rounds of `names.len()` points: `floor()` gives the
    /// floor in ns, `point(k)` measures point `k`. A floor that cannot be
    /// measured ends the run with its error; a point that fails is
    /// recorded as failed (a peer tool missing, say) and the rounds go on.
    pub fn run(
        names: Vec<String>,
        unit: &str,
        rounds: usize,
        mut floor: impl FnMut() -> Result<f64, String>,
        mut point: impl FnMut(usize) -> Result<(Stats, u64), String>,
    ) -> Result<Rounds, String> {
        let mut all = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let mut before = floor()?;
            let mut row = Vec::with_capacity(names.len());
            for k in 0..names.len() {
                let got = point(k);
                let after = floor()?;
                row.push(got.map(|(stats, iters)| Measured {
                    stats,
                    iters,
                    floor_before: before,
                    floor_after: after,
                }));
                before = after;
            }
            all.push(row);
        }
        Ok(Rounds {
            names,
            unit: unit.to_owned(),
            rounds: all,
        })
    }

    /// Every floor measured in round `r`.
    fn floors(&self, r: usize) -> Vec<f64> {
        self.rounds[r]
            .iter()
            .flatten()
            .flat_map(|m| [m.floor_before, m.floor_after])
            .collect()
    }

    /// True if round `r`'s floor moved by more than [`MIXED`].
    pub fn mixed(&self, r: usize) -> bool {
        moved(&self.floors(r))
    }

    /// Point `k`'s best round (lowest median) and its measurement.
    pub fn best(&self, k: usize) -> Option<(usize, Measured)> {
        self.rounds
            .iter()
            .enumerate()
            .filter_map(|(r, row)| row.get(k)?.as_ref().ok().map(|m| (r, *m)))
            .min_by(|a, b| a.1.stats.median.total_cmp(&b.1.stats.median))
    }

    /// The round-by-round table, then each point's best round with its
    /// ratio to the floor and to the first point's best (`base`, rgex).
    pub fn report(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n{title}: {} rounds, each point once per round ({}, median [min .. max]); floor = cache-line round trip (ns) before and after each point; a round whose floor moved by more than {:.0}% is marked mixed",
            self.rounds.len(),
            self.unit,
            MIXED * 100.0
        );
        let mut header = vec!["round".to_owned(), "floor min .. max".to_owned()];
        header.extend(self.names.iter().cloned());
        header.push("mixed".into());
        let mut t = Table::new(header);
        for (r, row) in self.rounds.iter().enumerate() {
            let f = self.floors(r);
            let lo = f.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = f.iter().copied().fold(0.0, f64::max);
            let mut cells = vec![
                (r + 1).to_string(),
                if f.is_empty() {
                    "-".into()
                } else {
                    format!("{} .. {}", num(lo), num(hi))
                },
            ];
            cells.extend(row.iter().map(|m| match m {
                Ok(m) => crate::report::spread(&m.stats),
                Err(_) => "failed".into(),
            }));
            cells.push(if self.mixed(r) { "MIXED" } else { "" }.into());
            t.row(cells);
        }
        s.push_str(&t.to_string());
        let base = self.best(0).map(|(_, m)| m.stats.median);
        let mut t = Table::new([
            "point".to_owned(),
            "best round".to_owned(),
            format!("median ({})", self.unit),
            "its floor".to_owned(),
            "x floor".to_owned(),
            format!("{} / this", self.names.first().map_or("", |n| n.as_str())),
        ]);
        for (k, name) in self.names.iter().enumerate() {
            match self.best(k) {
                Some((r, m)) => t.row([
                    name.clone(),
                    format!("{}{}", r + 1, if self.mixed(r) { " (mixed)" } else { "" }),
                    num(m.stats.median),
                    num(m.floor()),
                    format!("{:.2}x", m.stats.median / m.floor()),
                    base.map_or("-".into(), |b| format!("{:.2}", b / m.stats.median)),
                ]),
                None => {
                    let why = self
                        .rounds
                        .iter()
                        .flat_map(|row| row.get(k))
                        .find_map(|m| m.as_ref().err())
                        .map_or("not run", |e| e.as_str());
                    t.row([name.clone(), format!("failed: {why}")])
                }
            };
        }
        s.push_str(&t.to_string());
        s
    }

    /// Records: each point's best round (`... (best of N rounds)`, its
    /// floor the round's mean floor), then every round's (`... (round R)`,
    /// `(round R, mixed)`). `job(k)` is point `k`'s job (a peer's own
    /// conduit), `size` its size.
    pub fn records(
        &self,
        job: impl Fn(usize) -> Job,
        size: impl Fn(usize) -> Option<u64>,
    ) -> Vec<Record> {
        let floor_name = "cache-line round trip, same round";
        let mut v = Vec::new();
        for (k, name) in self.names.iter().enumerate() {
            if let Some((_, m)) = self.best(k) {
                let n = format!("{name} (best of {} rounds)", self.rounds.len());
                v.push(
                    job(k)
                        .record(&n, size(k), &m.stats, &self.unit, m.iters)
                        .with_floor(floor_name, m.floor(), None),
                );
            }
            for (r, row) in self.rounds.iter().enumerate() {
                if let Some(Ok(m)) = row.get(k) {
                    let mixed = if self.mixed(r) { ", mixed" } else { "" };
                    let n = format!("{name} (round {}{mixed})", r + 1);
                    v.push(
                        job(k)
                            .record(&n, size(k), &m.stats, &self.unit, m.iters)
                            .with_floor(floor_name, m.floor(), None),
                    );
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(x: f64) -> Stats {
        Stats::from_samples(&[x]).expect("a sample")
    }

    #[test]
    fn best_round_is_the_lowest_and_mixed_rounds_are_marked() {
        let floors = std::cell::Cell::new(0usize);
        // Round 1: floors 100, 100, 100; round 2: 100, 400, 100 (moved).
        let seq = [100.0, 100.0, 100.0, 100.0, 400.0, 100.0];
        let vals = [10.0, 20.0, 8.0, 30.0];
        let mut i = 0;
        let r = Rounds::run(
            vec!["a".into(), "b".into()],
            "ns",
            2,
            || {
                let f = seq[floors.get()];
                floors.set(floors.get() + 1);
                Ok(f)
            },
            |_| {
                i += 1;
                Ok((st(vals[i - 1]), 1))
            },
        )
        .expect("floors measured");
        assert!(!r.mixed(0) && r.mixed(1));
        assert_eq!(
            r.best(0).map(|(round, m)| (round, m.stats.median)),
            Some((1, 8.0))
        );
        assert_eq!(
            r.best(1).map(|(round, m)| (round, m.stats.median)),
            Some((0, 20.0))
        );
        let rec = r.records(
            |_| Job {
                bench: "t".into(),
                conduit: "smp".into(),
                provider: None,
                ranks: 2,
                oversubscribed: false,
            },
            |_| None,
        );
        assert!(rec.iter().any(|x| x.variant == "a (round 2, mixed)"));
        assert!(rec
            .iter()
            .any(|x| x.variant == "a (best of 2 rounds)" && x.median == 8.0));
        assert!(r.report("x").contains("MIXED"));
    }

    #[test]
    fn a_failed_point_is_reported_and_the_rounds_go_on() {
        let r = Rounds::run(
            vec!["a".into(), "peer".into()],
            "ns",
            2,
            || Ok(100.0),
            |k| {
                if k == 1 {
                    Err("not installed".into())
                } else {
                    Ok((st(5.0), 1))
                }
            },
        )
        .expect("floors measured");
        assert_eq!(r.rounds.len(), 2);
        assert!(r.best(1).is_none());
        assert!(r.report("x").contains("failed: not installed"));
    }
}
