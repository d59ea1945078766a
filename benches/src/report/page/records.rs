//! A bench's records as tables: per unit, the points measured at several
//! sizes as one table (a row per size, a column per variant: rgex first,
//! then its floors, then its peers), every other point as a row of a
//! flat table; the rounds apart (see [`rounds`](super::rounds)).

use super::gather::Source;
use super::html::{self, esc};
use super::rounds;
use crate::report::{num, size, Record};
use std::fmt::Write as _;

/// Conduits whose records are a floor: the provider's own figures
/// (`libfabric`: fi_pingpong). Other conduits than rgex's are peers'.
const FLOOR_CONDUITS: [&str; 1] = ["libfabric"];

/// Whose figure a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Rgex,
    Floor,
    Peer,
}

impl Role {
    fn of(r: &Record, main: &str) -> Role {
        if r.variant.starts_with("floor:") || FLOOR_CONDUITS.contains(&r.conduit.as_str()) {
            Role::Floor
        } else if r.conduit == main {
            Role::Rgex
        } else {
            Role::Peer
        }
    }

    fn class(self) -> &'static str {
        match self {
            Role::Rgex => "rgex",
            Role::Floor => "floor",
            Role::Peer => "peer",
        }
    }

    /// The word under a variant's name: `rgex`, `floor`, or the peer's
    /// tool (`mpi`, `ucx`).
    fn label(self, r: &Record) -> String {
        match self {
            Role::Rgex => format!("rgex over {}", r.conduit),
            Role::Floor => format!("floor ({})", r.conduit),
            Role::Peer => format!("peer: {}", r.conduit),
        }
    }
}

/// What the overview says of a file of records.
pub(super) struct Summary {
    /// Its benches' names.
    pub benches: String,
    /// Its conduit, with the provider if any.
    pub conduit: String,
    /// Its job sizes.
    pub ranks: String,
    /// Targets met and missed (HTML), empty if none.
    pub targets: String,
}

impl Summary {
    pub(super) fn of(recs: &[Record]) -> Summary {
        let main = main_conduit(recs);
        let rgex: Vec<&Record> = recs
            .iter()
            .filter(|r| Role::of(r, &main) == Role::Rgex)
            .collect();
        let providers = distinct(rgex.iter().filter_map(|r| r.provider.clone()));
        let conduit = if providers.is_empty() {
            main.clone()
        } else {
            format!("{main} ({})", providers.join(", "))
        };
        let verdicts: Vec<Option<bool>> = recs
            .iter()
            .filter_map(|r| Some(html::meets(&r.unit, r.ratio?, r.target?)))
            .collect();
        let met = verdicts.iter().filter(|v| **v == Some(true)).count();
        let missed = verdicts.iter().filter(|v| **v == Some(false)).count();
        let targets = match (met, missed) {
            (0, 0) => String::new(),
            _ => format!(
                "<span class=\"ok\">{met} met</span>, <span class=\"{}\">{missed} missed</span>",
                if missed > 0 { "miss" } else { "ok" }
            ),
        };
        Summary {
            benches: distinct(recs.iter().map(|r| r.bench.clone())).join(", "),
            conduit,
            ranks: distinct(rgex.iter().map(|r| r.ranks.to_string())).join(", "),
            targets,
        }
    }
}

/// The conduit most records name: rgex's (the peers' are fewer).
fn main_conduit(recs: &[Record]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in recs {
        match counts.iter_mut().find(|(c, _)| *c == r.conduit) {
            Some((_, n)) => *n += 1,
            None => counts.push((&r.conduit, 1)),
        }
    }
    // The first of the most named (max_by_key would take the last).
    let most = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    counts
        .iter()
        .find(|(_, n)| *n == most)
        .map_or_else(String::new, |(c, _)| (*c).to_owned())
}

/// The distinct values, in order of first appearance.
fn distinct(v: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// A record with its index in its file.
type Indexed<'a> = (usize, &'a Record);

/// The section of a file of records.
pub(super) fn section(s: &Source, recs: &[Record]) -> String {
    let sum = Summary::of(recs);
    let mut title = format!("{} · {}", sum.benches, sum.conduit);
    if !sum.ranks.is_empty() {
        let _ = write!(title, " · {} ranks", sum.ranks);
    }
    let mut h = html::head(s, &title, &format!("{} records", recs.len()));
    if recs.iter().any(|r| r.oversubscribed) {
        h.push_str("<p class=\"warn\">Oversubscribed: more ranks or threads than CPUs, so these figures measure the scheduler too.</p>\n");
    }
    if recs
        .iter()
        .any(|r| r.provider.as_deref() == Some(crate::label::SOFT_VERBS))
    {
        let _ = writeln!(
            h,
            "<p class=\"warn\">These figures are over the {}.</p>",
            esc(crate::label::SOFT_VERBS)
        );
    }
    if !sum.targets.is_empty() {
        let _ = writeln!(h, "<p>Targets: {}</p>", sum.targets);
    }
    h.push_str(&html::plots(s));
    let main = main_conduit(recs);
    let (round_recs, rest): (Vec<Indexed>, Vec<Indexed>) = recs
        .iter()
        .enumerate()
        .partition(|(_, r)| rounds::tag(&r.variant).is_some());
    for unit in distinct(rest.iter().map(|(_, r)| r.unit.clone())) {
        let of_unit: Vec<(usize, &Record)> = rest
            .iter()
            .filter(|(_, r)| r.unit == unit)
            .copied()
            .collect();
        h.push_str(&unit_tables(&s.rel, &unit, &of_unit, &main));
    }
    if !round_recs.is_empty() {
        h.push_str(&rounds::tables(&s.rel, &round_recs));
    }
    h.push_str("</section>\n");
    h
}

/// The most columns of variants in one table (wider ones are split, the
/// floors and peers repeated beside each part of rgex's columns), so a
/// table fits a 1280-pixel window.
const MAX_COLUMNS: usize = 9;

/// A variant's records in one unit, in file order.
#[derive(Clone)]
struct Column<'a> {
    variant: &'a str,
    role: Role,
    recs: Vec<(usize, &'a Record)>,
}

/// One unit's tables: the variants with several sizes (each size once)
/// as columns of one table, a row per size; the rest as a flat table.
fn unit_tables(rel: &str, unit: &str, recs: &[(usize, &Record)], main: &str) -> String {
    let mut cols: Vec<Column> = Vec::new();
    for &(i, r) in recs {
        match cols.iter_mut().find(|c| c.variant == r.variant) {
            Some(c) => c.recs.push((i, r)),
            None => cols.push(Column {
                variant: &r.variant,
                role: Role::of(r, main),
                recs: vec![(i, r)],
            }),
        }
    }
    // Rgex first, then the floors, then the peers (stable: file order
    // within each).
    cols.sort_by_key(|c| c.role);
    let (grid, flat): (Vec<Column>, Vec<Column>) = cols.into_iter().partition(|c| {
        let sizes: Vec<Option<u64>> = c.recs.iter().map(|(_, r)| r.size).collect();
        sizes.len() >= 2
            && sizes.iter().all(Option::is_some)
            && (1..sizes.len()).all(|k| !sizes[..k].contains(&sizes[k]))
    });
    let mut h = String::new();
    for group in by_overlap(grid) {
        let (rgex, beside): (Vec<Column>, Vec<Column>) =
            group.into_iter().partition(|c| c.role == Role::Rgex);
        let parts: Vec<Vec<Column>> = if rgex.is_empty() {
            beside.chunks(MAX_COLUMNS).map(<[Column]>::to_vec).collect()
        } else {
            // As few parts as fit, of even widths.
            let most = MAX_COLUMNS.saturating_sub(beside.len()).max(4);
            let per = rgex.len().div_ceil(rgex.len().div_ceil(most));
            rgex.chunks(per)
                .map(|c| c.iter().chain(&beside).cloned().collect())
                .collect()
        };
        let n = parts.len();
        for (k, part) in parts.iter().enumerate() {
            let of = if n > 1 {
                format!(" (part {} of {n})", k + 1)
            } else {
                String::new()
            };
            h.push_str(&grid_table(rel, unit, &of, part));
        }
    }
    if !flat.is_empty() {
        h.push_str(&flat_table(rel, unit, &flat));
    }
    h
}

/// The columns in groups by their sizes: a column joins a group whose
/// sizes hold all of its own, or are all among its own (a peer measured
/// at some of rgex's sizes shares rgex's table); sizes that are not the
/// same quantity (scc's target counts and its message sizes) do not
/// share a table. In order of each group's first column, rgex's first.
fn by_overlap(cols: Vec<Column>) -> Vec<Vec<Column>> {
    let mut groups: Vec<(Vec<u64>, Vec<Column>)> = Vec::new();
    for c in cols {
        let mine: Vec<u64> = c.recs.iter().filter_map(|(_, r)| r.size).collect();
        let within = |a: &[u64], b: &[u64]| a.iter().all(|s| b.contains(s));
        match groups
            .iter_mut()
            .find(|(all, _)| within(&mine, all) || within(all, &mine))
        {
            Some((all, members)) => {
                if within(all, &mine) {
                    *all = mine;
                }
                members.push(c);
            }
            None => groups.push((mine, vec![c])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut g)| {
            g.sort_by_key(|c| c.role);
            g
        })
        .collect()
}

/// Columns of variants, a row per size: each cell the median, its range
/// and, where the record has one, its floor and target. `part` says
/// which part of a split table this is.
fn grid_table(rel: &str, unit: &str, part: &str, cols: &[Column]) -> String {
    let mut sizes: Vec<u64> = cols
        .iter()
        .flat_map(|c| c.recs.iter().filter_map(|(_, r)| r.size))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let reps = distinct(
        cols.iter()
            .flat_map(|c| c.recs.iter().map(|(_, r)| r.repetitions.to_string())),
    );
    let mut h = format!(
        "<div class=\"block\"><h3>By size, in {}{part}</h3>\n<div class=\"wrap\"><table class=\"grid\"><caption>{}: median, then min .. max over {} repetitions; a floor and its ratio where the record has one</caption>\n<thead><tr><th>size</th>",
        esc(unit),
        esc(unit),
        esc(&reps.join(" or "))
    );
    for c in cols {
        let floor_names = distinct(c.recs.iter().filter_map(|(_, r)| r.floor_name.clone()));
        let _ = write!(
            h,
            "<th class=\"{}\">{}<span class=\"who\">{}</span>",
            c.role.class(),
            esc(c.variant),
            esc(&c.role.label(c.recs[0].1))
        );
        if !floor_names.is_empty() {
            let _ = write!(
                h,
                "<span class=\"who\">floor: {}</span>",
                esc(&floor_names.join("; "))
            );
        }
        h.push_str("</th>");
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for sz in sizes {
        let _ = write!(h, "<tr><th>{}</th>", size(sz));
        for c in cols {
            match c.recs.iter().find(|(_, r)| r.size == Some(sz)) {
                Some((i, r)) => {
                    let _ = write!(
                        h,
                        "<td class=\"{}\" data-rec=\"{}#{i}\">{}{}</td>",
                        c.role.class(),
                        esc(rel),
                        html::spread(r.median, r.min, r.max),
                        html::against_floor(r)
                    );
                }
                None => h.push_str("<td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div></div>\n");
    h
}

/// One row per record: variant, whose, size, median, range, repetitions,
/// floor, ratio, target.
fn flat_table(rel: &str, unit: &str, cols: &[Column]) -> String {
    let mut h = format!(
        "<div class=\"block\"><h3>Points in {}</h3>\n<div class=\"wrap\"><table class=\"flat\"><caption>{}: median and min .. max over the repetitions</caption>\n<thead><tr><th>variant</th><th>whose</th><th>size (bytes)</th><th>median ({})</th><th>min .. max</th><th>repetitions &times; iterations</th><th>floor</th><th>&times; floor</th><th>target</th></tr></thead>\n<tbody>\n",
        esc(unit),
        esc(unit),
        esc(unit)
    );
    for c in cols {
        for (i, r) in &c.recs {
            let floor = match (&r.floor, &r.floor_name) {
                (Some(f), name) => format!(
                    "{} <span class=\"fl\">{}</span>",
                    num(*f),
                    esc(name.as_deref().unwrap_or(""))
                ),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                h,
                "<tr class=\"{}\" data-rec=\"{}#{i}\"><th>{}</th><td class=\"text\">{}</td><td>{}</td><td><b>{}</b></td><td>{} .. {}</td><td>{} &times; {}</td><td class=\"text\">{floor}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                c.role.class(),
                esc(rel),
                esc(&r.variant),
                esc(&c.role.label(r)),
                r.size.map(size).unwrap_or_default(),
                num(r.median),
                num(r.min),
                num(r.max),
                r.repetitions,
                r.iterations,
                r.ratio.map(num).unwrap_or_default(),
                html::target(r).trim_start_matches("<br>")
            );
        }
    }
    h.push_str("</tbody></table></div></div>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Job;
    use crate::stats::Stats;

    fn rec(conduit: &str, variant: &str, size: Option<u64>, x: f64) -> Record {
        let job = Job {
            bench: "b".into(),
            conduit: conduit.into(),
            provider: None,
            ranks: 2,
            oversubscribed: false,
        };
        let s = Stats::from_samples(&[x]).expect("a sample");
        job.record(variant, size, &s, "ns", 1)
    }

    #[test]
    fn sized_variants_make_a_grid_with_rgex_first_and_the_rest_a_flat_table() {
        let recs = [
            rec("smp", "floor: cache-line round trip", None, 100.0),
            rec("mpi", "ping-pong", Some(8), 900.0),
            rec("mpi", "ping-pong", Some(64), 950.0),
            rec("smp", "put latency", Some(8), 300.0),
            rec("smp", "put latency", Some(64), 310.0),
            rec("smp", "AM Short round trip", None, 250.0),
        ];
        let idx: Vec<(usize, &Record)> = recs.iter().enumerate().collect();
        let h = unit_tables("b.json", "ns", &idx, "smp");
        let grid = &h[..h.find("Points in").expect("a flat table")];
        assert!(grid.find("put latency") < grid.find("ping-pong"));
        assert!(grid.contains("data-rec=\"b.json#3\"") && grid.contains("<th>64</th>"));
        let flat = &h[h.find("Points in").expect("a flat table")..];
        assert!(flat.find("AM Short") < flat.find("floor: cache-line"));
        for i in 0..recs.len() {
            assert_eq!(h.matches(&format!("data-rec=\"b.json#{i}\"")).count(), 1);
        }
    }

    #[test]
    fn a_size_measured_twice_goes_to_the_flat_table() {
        let recs = [rec("smp", "x", Some(8), 1.0), rec("smp", "x", Some(8), 2.0)];
        let idx: Vec<(usize, &Record)> = recs.iter().enumerate().collect();
        let h = unit_tables("b.json", "ns", &idx, "smp");
        assert!(!h.contains("By size") && h.contains("Points in"));
    }
}
