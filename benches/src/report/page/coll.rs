//! testcoll's rows as a table: per job size and test, rgex beside Open
//! MPI (the peer) and the ratio of the two.

use super::gather::Source;
use super::html::{self, esc};
use crate::report::{num, size, CollRecord};
use std::fmt::Write as _;

/// The job sizes of these rows (`2, 4, 8`).
pub(super) fn ranks(rows: &[CollRecord]) -> String {
    let mut v: Vec<u32> = rows.iter().map(|r| r.ranks).collect();
    v.sort_unstable();
    v.dedup();
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The section of testcoll's file.
pub(super) fn section(s: &Source, rows: &[CollRecord]) -> String {
    let mut h = html::head(
        s,
        &format!("testcoll · smp beside Open MPI · {} ranks", ranks(rows)),
        &format!("{} rows", rows.len()),
    );
    h.push_str(&html::plots(s));
    h.push_str(
        "<div class=\"block\"><div class=\"wrap\"><table class=\"flat\"><caption>ns per call, slowest rank, each side's best round; rgex / MPI below 1: rgex is faster</caption>\n\
         <thead><tr><th>ranks</th><th>test</th><th>size (bytes)</th><th class=\"rgex\">rgex (ns)</th><th class=\"peer\">Open MPI (ns)</th><th>rgex / MPI</th></tr></thead>\n<tbody>\n",
    );
    let fig = |x: Option<f64>| x.map_or_else(|| "not measured".to_owned(), num);
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            h,
            "<tr data-rec=\"{}#{i}\"><th>{}{}</th><td class=\"text\">{}</td><td>{}</td><td class=\"rgex\">{}</td><td class=\"peer\">{}</td><td>{}</td></tr>",
            esc(&s.rel),
            r.ranks,
            if r.oversubscribed {
                " <span class=\"warn\">(oversubscribed)</span>"
            } else {
                ""
            },
            esc(&r.test),
            size(r.size),
            fig(r.rgex_ns),
            fig(r.mpi_ns),
            r.ratio().map(num).unwrap_or_default()
        );
    }
    h.push_str("</tbody></table></div></div>\n</section>\n");
    h
}
