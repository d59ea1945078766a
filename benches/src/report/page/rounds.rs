//! The round table, rebuilt from the records that
//! [`Rounds::records`](crate::rounds::Rounds::records) writes (`NAME
//! (round R)`, `NAME (round R, mixed)`, `NAME (best of N rounds)`): a row
//! per round, a column per point, then each point's best round.

use super::html::{self, esc};
use crate::report::{num, Record};
use std::fmt::Write as _;

/// What a round record's variant says beyond the point's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tag {
    /// Measured in round `n` (from 1); `mixed` if the floor moved in it.
    Round { n: usize, mixed: bool },
    /// The point's best round of `of`.
    Best { of: usize },
}

/// The point's name and the tag of a round record's variant, or `None`
/// for any other record.
pub(super) fn tag(variant: &str) -> Option<(&str, Tag)> {
    let inner = variant.strip_suffix(')')?;
    let open = inner.rfind(" (")?;
    let (name, what) = (&inner[..open], &inner[open + 2..]);
    if let Some(n) = what.strip_prefix("round ") {
        let (n, mixed) = match n.strip_suffix(", mixed") {
            Some(n) => (n, true),
            None => (n, false),
        };
        return Some((
            name,
            Tag::Round {
                n: n.parse().ok()?,
                mixed,
            },
        ));
    }
    let of = what.strip_prefix("best of ")?.strip_suffix(" rounds")?;
    Some((
        name,
        Tag::Best {
            of: of.parse().ok()?,
        },
    ))
}

/// The round table and the best rounds of these records (each a round
/// record, with its index in the file at `rel`).
pub(super) fn tables(rel: &str, recs: &[(usize, &Record)]) -> String {
    let tagged: Vec<(usize, &Record, &str, Tag)> = recs
        .iter()
        .filter_map(|&(i, r)| tag(&r.variant).map(|(name, t)| (i, r, name, t)))
        .collect();
    let mut points: Vec<&str> = Vec::new();
    for (_, _, name, _) in &tagged {
        if !points.contains(name) {
            points.push(name);
        }
    }
    let mut rounds: Vec<usize> = tagged
        .iter()
        .filter_map(|(_, _, _, t)| match t {
            Tag::Round { n, .. } => Some(*n),
            Tag::Best { .. } => None,
        })
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    let mut units: Vec<&str> = tagged.iter().map(|(_, r, _, _)| r.unit.as_str()).collect();
    units.dedup();
    let units = units.join(", ");
    let round_of = |name: &str, n: usize| {
        tagged
            .iter()
            .find(|(_, _, p, t)| *p == name && matches!(t, Tag::Round { n: m, .. } if *m == n))
    };
    let mut h = format!(
        "<div class=\"block\"><h3>Rounds: rgex and its peers interleaved</h3>\n<div class=\"wrap\"><table class=\"grid rounds\"><caption>{}: each point once per round, median then min .. max; its floor the cache-line round trip (ns) measured around it, and the point's multiple of it; a round whose floor moved by more than {:.0}% is mixed</caption>\n<thead><tr><th>round</th>",
        esc(&units),
        crate::rounds::MIXED * 100.0
    );
    for p in &points {
        let _ = write!(
            h,
            "<th>{}<span class=\"who\">{}</span></th>",
            esc(p),
            esc(&whose(&tagged, p))
        );
    }
    h.push_str("<th>mixed</th></tr></thead>\n<tbody>\n");
    for &n in &rounds {
        let _ = write!(h, "<tr><th>round {n}</th>");
        let mut mixed = false;
        for p in &points {
            match round_of(p, n) {
                Some((i, r, _, Tag::Round { mixed: m, .. })) => {
                    mixed |= *m;
                    let _ = write!(
                        h,
                        "<td data-rec=\"{}#{i}\">{}{}</td>",
                        esc(rel),
                        html::spread(r.median, r.min, r.max),
                        html::against_floor(r)
                    );
                }
                _ => h.push_str("<td class=\"text\">not measured</td>"),
            }
        }
        let _ = writeln!(
            h,
            "<td class=\"text\">{}</td></tr>",
            if mixed {
                "<span class=\"mixed\">MIXED</span>"
            } else {
                ""
            }
        );
    }
    h.push_str("</tbody></table></div></div>\n");
    h.push_str(&best_table(rel, &tagged, &points, &units));
    h
}

/// Whose a point is and its size: `smp, size 8` (its first record's
/// conduit and size).
fn whose(tagged: &[(usize, &Record, &str, Tag)], point: &str) -> String {
    let Some((_, r, _, _)) = tagged.iter().find(|(_, _, p, _)| *p == point) else {
        return String::new();
    };
    match r.size {
        Some(n) => format!("{}, size {}", r.conduit, crate::report::size(n)),
        None => r.conduit.clone(),
    }
}

/// Each point's best round: its figure, its floor and its multiple, and
/// the first point's best (rgex's) over it.
fn best_table(
    rel: &str,
    tagged: &[(usize, &Record, &str, Tag)],
    points: &[&str],
    units: &str,
) -> String {
    let best = |name: &str| {
        tagged
            .iter()
            .find(|(_, _, p, t)| *p == name && matches!(t, Tag::Best { .. }))
    };
    let base = points
        .first()
        .and_then(|p| best(p))
        .map(|(_, r, _, _)| r.median);
    let first = points.first().copied().unwrap_or("");
    let mut h = format!(
        "<div class=\"block\"><div class=\"wrap\"><table class=\"flat\"><caption>each point's best round (its lowest median, {})</caption>\n<thead><tr><th>point</th><th>whose</th><th>best of</th><th>best round</th><th>median</th><th>min .. max</th><th>its floor</th><th>&times; floor</th><th>{} / this</th></tr></thead>\n<tbody>\n",
        esc(units),
        esc(first)
    );
    for p in points {
        let Some((i, r, _, Tag::Best { of })) = best(p) else {
            let _ = writeln!(
                h,
                "<tr><th>{}</th><td class=\"text\">no best round: not measured in any round</td></tr>",
                esc(p)
            );
            continue;
        };
        let which = tagged
            .iter()
            .find_map(|(_, x, q, t)| match t {
                Tag::Round { n, mixed } if q == p && x.median == r.median => {
                    Some(format!("{n}{}", if *mixed { " (mixed)" } else { "" }))
                }
                _ => None,
            })
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr data-rec=\"{}#{i}\"><th>{}</th><td class=\"text\">{}</td><td>{of} rounds</td><td>{}</td><td><b>{}</b></td><td>{} .. {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(rel),
            esc(p),
            esc(&whose(tagged, p)),
            esc(&which),
            num(r.median),
            num(r.min),
            num(r.max),
            r.floor.map(num).unwrap_or_default(),
            r.ratio.map(num).unwrap_or_default(),
            base.map(|b| num(b / r.median)).unwrap_or_default()
        );
    }
    h.push_str("</tbody></table></div></div>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_variants_are_read_back() {
        assert_eq!(
            tag("rgex AM Short round trip (round 2, mixed)"),
            Some(("rgex AM Short round trip", Tag::Round { n: 2, mixed: true }))
        );
        assert_eq!(
            tag("mpi ping-pong (round 10)"),
            Some((
                "mpi ping-pong",
                Tag::Round {
                    n: 10,
                    mixed: false
                }
            ))
        );
        assert_eq!(
            tag("x (best of 3 rounds)"),
            Some(("x", Tag::Best { of: 3 }))
        );
        assert_eq!(tag("FADD u64 Reference (forced) latency"), None);
        assert_eq!(tag("hot-spot (osc rdma)"), None);
        assert_eq!(tag("x (round two)"), None);
    }
}
