//! The page's HTML: the document around the sections, its style, and
//! the pieces every section uses (a section's head, its plots, a figure).

use super::gather::Source;
use crate::report::{num, Machine};
use std::fmt::Write as _;

pub(super) use crate::report::escape as esc;

/// The style: compact tables that fit a 1280-pixel window, rgex, its
/// floors and its peers told apart by colour, the plots two abreast.
const STYLE: &str = "
body { font: 14px/1.35 system-ui, sans-serif; margin: 16px 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 4px; border-bottom: 2px solid #345; }
h3 { font-size: 15px; margin: 16px 0 4px; }
.meta { color: #555; margin: 2px 0 8px; }
.bad { color: #a00; font-weight: bold; }
.warn { color: #a50; }
.block { display: inline-block; vertical-align: top; margin-right: 20px; max-width: 100%; }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: 4px 0 12px; font-size: 12px; }
caption { text-align: left; color: #333; padding: 2px 0; font-style: italic; }
th, td { border: 1px solid #ccc; padding: 2px 5px; vertical-align: top; }
thead th { background: #eef1f5; font-weight: 600; text-align: left; max-width: 120px; overflow-wrap: break-word; }
tbody th { text-align: left; font-weight: normal; }
td { text-align: right; white-space: nowrap; }
td.text { text-align: left; white-space: normal; }
tbody tr:nth-child(even) { background: #fafafa; }
.rgex { background: #e9f2ff; }
thead th.rgex { background: #cfe2ff; }
.floor { background: #f1f1f1; }
thead th.floor { background: #dcdcdc; }
.peer { background: #fff3e0; }
thead th.peer { background: #ffe0b2; }
.who { display: block; font-weight: normal; color: #555; font-size: 11px; }
.mm, .fl { color: #666; font-size: 11px; }
.ok { color: #060; font-weight: 600; }
.miss { color: #b00; font-weight: 600; }
.mixed { color: #a50; font-weight: 600; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; }
.plots figure { box-sizing: border-box; margin: 0; flex: 0 1 calc(50% - 4px); border: 1px solid #ddd; }
.plots svg { width: 100%; height: auto; display: block; }
.plots figcaption { font-size: 11px; color: #555; padding: 2px 4px; }
";

/// The whole document around `body`.
pub(super) fn document(body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>rgex benchmarks</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

/// An element id for the section of the file at `rel`.
pub(super) fn id(rel: &str) -> String {
    let mut s = String::from("f-");
    s.extend(
        rel.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }),
    );
    s
}

/// A section's opening: its heading (`title`), then what file it shows,
/// when that was written, and its log.
pub(super) fn head(s: &Source, title: &str, what: &str) -> String {
    let mut h = format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"meta\">{}",
        id(&s.rel),
        esc(title),
        esc(&s.rel)
    );
    if let Some(w) = &s.written {
        let _ = write!(h, " &middot; written {}", esc(w));
    }
    if !what.is_empty() {
        let _ = write!(h, " &middot; {}", esc(what));
    }
    if let Some(log) = &s.log {
        let _ = write!(
            h,
            " &middot; full output: <a href=\"{0}\">{0}</a>",
            esc(log)
        );
    }
    h.push_str("</p>\n");
    h
}

/// A section's plots, inlined (a plot that cannot be shown says why).
pub(super) fn plots(s: &Source) -> String {
    if s.plots.is_empty() {
        return String::new();
    }
    let mut h = String::from("<div class=\"plots\">\n");
    for p in &s.plots {
        match &p.svg {
            Ok(svg) => {
                let _ = writeln!(
                    h,
                    "<figure>{svg}<figcaption>{}</figcaption></figure>",
                    esc(&p.rel)
                );
            }
            Err(e) => {
                let _ = writeln!(h, "<p class=\"bad\">{}: {}</p>", esc(&p.rel), esc(e));
            }
        }
    }
    h.push_str("</div>\n");
    h
}

/// A section of plots that no JSON file claimed.
pub(super) fn plots_section(s: &Source) -> String {
    let mut h = head(s, &format!("Plots without records: {}", s.rel), "");
    h.push_str(&plots(s));
    h.push_str("</section>\n");
    h
}

/// A section for a file that could not be read.
pub(super) fn problem_section(s: &Source, why: &str) -> String {
    let mut h = head(s, &format!("{}: not shown", s.rel), "");
    let _ = writeln!(h, "<p class=\"bad\">{}</p>", esc(why));
    h.push_str(&plots(s));
    h.push_str("</section>\n");
    h
}

/// The machine section, or a line saying it was not described.
pub(super) fn machine(m: Option<&Machine>) -> String {
    let mut h = String::from("<section id=\"machine\"><h2>Machine</h2>\n");
    match m {
        Some(m) => {
            h.push_str(
                "<table class=\"flat\"><caption>described before the benches ran (bench-page --machine)</caption><tbody>\n",
            );
            for (k, v) in m.rows() {
                let _ = writeln!(
                    h,
                    "<tr><th>{}</th><td class=\"text\">{}</td></tr>",
                    esc(k),
                    esc(&v)
                );
            }
            h.push_str("</tbody></table>\n");
        }
        None => {
            let _ = writeln!(
                h,
                "<p class=\"warn\">Not described: no {} here (ci/bench.sh writes it with bench-page --machine).</p>",
                super::MACHINE
            );
        }
    }
    h.push_str("</section>\n");
    h
}

/// What a ratio to its floor is measured against its target, as the
/// record's unit says: a time meets it at or below, a rate at or above;
/// `None` for a unit that is neither.
pub(super) fn meets(unit: &str, ratio: f64, target: f64) -> Option<bool> {
    let time = ["ns", "us", "µs", "ms", "s", "cycles"];
    let base = unit.split('/').next().unwrap_or(unit);
    if unit.ends_with("/s") {
        Some(ratio >= target)
    } else if time.contains(&base) {
        Some(ratio <= target)
    } else {
        None
    }
}

/// A figure's median, then its range on a second line.
pub(super) fn spread(median: f64, min: f64, max: f64) -> String {
    format!(
        "<b>{}</b><br><span class=\"mm\">{} .. {}</span>",
        num(median),
        num(min),
        num(max)
    )
}

/// A record's floor, its ratio to it and its target, as one line each
/// (empty where it has none).
pub(super) fn against_floor(r: &crate::report::Record) -> String {
    let mut h = String::new();
    if let Some(f) = r.floor {
        let _ = write!(h, "<br><span class=\"fl\">floor {}", num(f));
        if let Some(x) = r.ratio {
            let _ = write!(h, " &times; {}", num(x));
        }
        h.push_str("</span>");
    }
    h.push_str(&target(r));
    h
}

/// A record's target and whether it is met, on a line of its own.
pub(super) fn target(r: &crate::report::Record) -> String {
    let Some(t) = r.target else {
        return String::new();
    };
    let verdict = r.ratio.and_then(|x| meets(&r.unit, x, t));
    let (class, word) = match verdict {
        Some(true) => ("ok", "met"),
        Some(false) => ("miss", "missed"),
        None => ("fl", "target"),
    };
    let rel = if r.unit.ends_with("/s") {
        "&ge;"
    } else {
        "&le;"
    };
    format!(
        "<br><span class=\"{class}\">{word}: {rel} {}</span>",
        num(t)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_as_the_unit_says() {
        assert_eq!(meets("ns", 1.1, 1.15), Some(true));
        assert_eq!(meets("cycles", 0.5, 1.0 / 3.0), Some(false));
        assert_eq!(meets("ns/op", 0.9, 1.0), Some(true));
        assert_eq!(meets("GB/s", 0.9, 1.0), Some(false));
        assert_eq!(meets("%", 0.9, 1.0), None);
        assert_eq!(
            id("ofi-tcp_ofi_rxm/testam.json"),
            "f-ofi-tcp-ofi-rxm-testam-json"
        );
    }
}
