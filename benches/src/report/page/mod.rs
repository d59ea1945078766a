//! One HTML page of a bench run (`ci/bench.sh`'s `bench-results/`): every
//! JSON file of a directory and its subdirectories as a section (its
//! tables, rgex beside its floors and peers, with units; its plots
//! inlined; its round table), the machine first, and an overview.
//! Self-contained: no script, no style sheet or image from elsewhere.
//!
//! Every figure is written with [`num`](crate::report::num), as the
//! benches' text tables write it, and every cell or row that holds a
//! record's figures names it with `data-rec="FILE#INDEX"` (the record's
//! index in its file's array), so a reader of the page (its test) can
//! find each record.
//!
//! ```
//! use rgex_benches::report::{page, write_json, Job};
//! use rgex_benches::stats::Stats;
//! let dir = std::env::temp_dir().join(format!("rgex-page-doc-{}", std::process::id()));
//! let job = Job { bench: "b".into(), conduit: "smp".into(), provider: None, ranks: 2, oversubscribed: false };
//! let s = Stats::from_samples(&[250.0, 240.0, 260.0]).unwrap();
//! write_json(&dir.join("b.json"), &[job.record("AM Short round trip", None, &s, "ns", 1000)]).unwrap();
//! let p = page::build(&dir).unwrap();
//! assert!(p.problems.is_empty());
//! assert!(p.html.contains(r#"data-rec="b.json#0""#) && p.html.contains("AM Short round trip"));
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod coll;
mod gather;
mod html;
mod records;
mod rounds;

use gather::{Content, Source};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The page's file name in the directory it describes.
pub const INDEX: &str = "index.html";

/// The machine description's file name (`bench-page --machine`).
pub const MACHINE: &str = "machine.json";

/// A page and what it could not show.
#[derive(Clone, Debug)]
pub struct Page {
    /// The HTML document.
    pub html: String,
    /// Each file that could not be read or understood, with why (the
    /// page shows them too).
    pub problems: Vec<String>,
}

/// The page of `dir`: `Err` only if `dir` cannot be listed.
pub fn build(dir: &Path) -> Result<Page, String> {
    let sources = gather::gather(dir)?;
    let mut problems = Vec::new();
    let mut body = String::new();
    let machine = sources.iter().find_map(|s| match &s.content {
        Ok(Content::Machine(m)) => Some(&**m),
        _ => None,
    });
    let _ = writeln!(
        body,
        "<h1>rgex benchmarks</h1>\n<p class=\"meta\">{} &middot; page written {}</p>",
        html::esc(&dir.display().to_string()),
        crate::report::utc(std::time::SystemTime::now())
    );
    body.push_str(&html::machine(machine));
    body.push_str(&overview(&sources));
    let benches = sources
        .iter()
        .filter(|s| !matches!(s.content, Ok(Content::Machine(_))));
    let mut shown = 0;
    for s in benches {
        shown += 1;
        match &s.content {
            Ok(Content::Records(recs)) => body.push_str(&records::section(s, recs)),
            Ok(Content::Coll(rows)) => body.push_str(&coll::section(s, rows)),
            Ok(Content::Plots) => body.push_str(&html::plots_section(s)),
            Ok(Content::Machine(_)) => {}
            Err(e) => {
                problems.push(format!("{}: {e}", s.rel));
                body.push_str(&html::problem_section(s, e));
            }
        }
        for p in &s.plots {
            if let Err(e) = &p.svg {
                problems.push(format!("{}: {e}", p.rel));
            }
        }
    }
    if shown == 0 {
        problems.push(format!(
            "{}: no JSON records and no SVG plots here",
            dir.display()
        ));
        let _ = writeln!(
            body,
            "<p class=\"bad\">No JSON records and no SVG plots in {}.</p>",
            html::esc(&dir.display().to_string())
        );
    }
    Ok(Page {
        html: html::document(&body),
        problems,
    })
}

/// Build the page of `dir` and write it to `dir/index.html`; returns its
/// path and the page's problems.
pub fn write(dir: &Path) -> Result<(PathBuf, Vec<String>), String> {
    let page = build(dir)?;
    let path = dir.join(INDEX);
    std::fs::write(&path, &page.html).map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok((path, page.problems))
}

/// The table of sections: what each holds, with a link to it.
fn overview(sources: &[Source]) -> String {
    let mut t = String::from(
        "<section id=\"overview\"><h2>Overview</h2>\n<table class=\"flat\"><caption>one row per file; targets: the records that carry one, met or missed</caption>\n\
         <thead><tr><th>file</th><th>bench</th><th>conduit</th><th>ranks</th><th>records</th><th>targets</th><th>plots</th></tr></thead><tbody>\n",
    );
    for s in sources {
        let (bench, conduit, ranks, n, targets) = match &s.content {
            Ok(Content::Records(recs)) => {
                let g = records::Summary::of(recs);
                (g.benches, g.conduit, g.ranks, recs.len(), g.targets)
            }
            Ok(Content::Coll(rows)) => (
                "testcoll".to_owned(),
                "smp beside Open MPI".to_owned(),
                coll::ranks(rows),
                rows.len(),
                String::new(),
            ),
            Ok(Content::Plots) => (
                "plots only".into(),
                String::new(),
                String::new(),
                0,
                String::new(),
            ),
            Ok(Content::Machine(_)) => continue,
            Err(_) => (
                "unreadable".into(),
                String::new(),
                String::new(),
                0,
                String::new(),
            ),
        };
        let _ = writeln!(
            t,
            "<tr><th><a href=\"#{}\">{}</a></th><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{n}</td><td>{targets}</td><td>{}</td></tr>",
            html::id(&s.rel),
            html::esc(&s.rel),
            html::esc(&bench),
            html::esc(&conduit),
            html::esc(&ranks),
            s.plots.len()
        );
    }
    t.push_str("</tbody></table></section>\n");
    t
}
