//! What a results directory holds: its JSON files read into their
//! schemas, each with the SVG plots and the log written next to it.

use crate::report::{CollRecord, Machine, Record};
use std::path::{Path, PathBuf};

/// How deep below the directory files are looked for (`ofi-tcp_ofi_rxm/`
/// is one level down).
const DEPTH: usize = 3;

/// What one JSON file holds.
#[derive(Debug)]
pub(super) enum Content {
    /// A bench's records (the shared schema).
    Records(Vec<Record>),
    /// testcoll's rows.
    Coll(Vec<CollRecord>),
    /// The machine description (boxed: the largest by far).
    Machine(Box<Machine>),
    /// No JSON: plots no JSON file claimed.
    Plots,
}

/// One SVG plot, its text or why it cannot be shown.
#[derive(Debug)]
pub(super) struct Svg {
    /// Its path relative to the directory.
    pub rel: String,
    /// The `<svg>` element, or why not.
    pub svg: Result<String, String>,
}

/// One section's material.
#[derive(Debug)]
pub(super) struct Source {
    /// The JSON file's path relative to the directory (`/`-separated);
    /// for plots no JSON claimed, their directory.
    pub rel: String,
    /// When the file was written, if known.
    pub written: Option<String>,
    /// What it holds, or why it cannot be read.
    pub content: Result<Content, String>,
    /// Its plots: the SVGs next to it whose name starts with its stem.
    pub plots: Vec<Svg>,
    /// Its log (`STEM.log` next to it), relative to the directory.
    pub log: Option<String>,
}

/// Read `dir`: its JSON files (the directory's own first, then each
/// subdirectory's, by name), each with its plots and log; SVGs no JSON
/// file claims come last, one section per directory.
pub(super) fn gather(dir: &Path) -> Result<Vec<Source>, String> {
    let mut files = Vec::new();
    walk(dir, "", DEPTH, &mut files)?;
    let mut sources: Vec<Source> = Vec::new();
    let mut svgs: Vec<(String, PathBuf)> = Vec::new();
    let mut logs: Vec<String> = Vec::new();
    for (rel, path) in &files {
        match extension(rel) {
            "json" => sources.push(Source {
                rel: rel.clone(),
                written: std::fs::metadata(path)
                    .and_then(|m| m.modified())
                    .ok()
                    .map(crate::report::utc),
                content: read_json(path),
                plots: Vec::new(),
                log: None,
            }),
            "svg" => svgs.push((rel.clone(), path.clone())),
            "log" => logs.push(rel.clone()),
            _ => {}
        }
    }
    let mut orphans: Vec<(String, Svg)> = Vec::new();
    for (rel, path) in svgs {
        let svg = Svg {
            svg: read_svg(&path),
            rel: rel.clone(),
        };
        // The JSON file with the longest stem that names this plot.
        let owner = sources
            .iter_mut()
            .filter(|s| parent(&s.rel) == parent(&rel) && claims(stem(&s.rel), stem(&rel)))
            .max_by_key(|s| stem(&s.rel).len());
        match owner {
            Some(s) => s.plots.push(svg),
            None => orphans.push((parent(&rel).to_owned(), svg)),
        }
    }
    for s in &mut sources {
        let log = format!("{}{}.log", prefix(&s.rel), stem(&s.rel));
        s.log = logs.iter().find(|l| **l == log).cloned();
    }
    let mut dirs: Vec<String> = orphans.iter().map(|(d, _)| d.clone()).collect();
    dirs.dedup();
    for d in dirs {
        let plots: Vec<Svg> = orphans
            .iter_mut()
            .filter(|(o, _)| *o == d)
            .map(|(_, s)| Svg {
                rel: std::mem::take(&mut s.rel),
                svg: std::mem::replace(&mut s.svg, Err(String::new())),
            })
            .collect();
        sources.push(Source {
            rel: if d.is_empty() {
                "plots".to_owned()
            } else {
                format!("{d}/plots")
            },
            written: None,
            content: Ok(Content::Plots),
            plots,
            log: None,
        });
    }
    Ok(sources)
}

/// Every file under `dir` (relative paths behind `rel`): this
/// directory's files by name, then each subdirectory's, down to `depth`
/// levels. The page itself is left out.
fn walk(
    dir: &Path,
    rel: &str,
    depth: usize,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("list {}: {e}", dir.display()))?;
    let mut names: Vec<(String, PathBuf, bool)> = entries
        .flatten()
        .map(|e| {
            let path = e.path();
            let is_dir = path.is_dir();
            (e.file_name().to_string_lossy().into_owned(), path, is_dir)
        })
        .collect();
    names.sort();
    for (name, path, is_dir) in &names {
        let the_page = rel.is_empty() && name == super::INDEX;
        if !is_dir && !the_page {
            out.push((format!("{rel}{name}"), path.clone()));
        }
    }
    if depth > 0 {
        for (name, path, is_dir) in &names {
            if *is_dir {
                walk(path, &format!("{rel}{name}/"), depth - 1, out)?;
            }
        }
    }
    Ok(())
}

/// Read a JSON file as the schema it is written in: a bench's records,
/// testcoll's rows, or the machine description.
fn read_json(path: &Path) -> Result<Content, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    if path.file_name().is_some_and(|n| n == super::MACHINE) {
        return serde_json::from_str(&text)
            .map(|m| Content::Machine(Box::new(m)))
            .map_err(|e| format!("not a machine description: {e}"));
    }
    let records = serde_json::from_str::<Vec<Record>>(&text);
    match records {
        Ok(r) => Ok(Content::Records(r)),
        Err(as_records) => match serde_json::from_str::<Vec<CollRecord>>(&text) {
            Ok(rows) => Ok(Content::Coll(rows)),
            Err(as_rows) => Err(format!(
                "neither bench records ({as_records}) nor testcoll rows ({as_rows})"
            )),
        },
    }
}

/// Read an SVG file: its `<svg>` element, without an XML declaration.
fn read_svg(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let start = text
        .find("<svg")
        .ok_or("not an SVG document: no <svg> element")?;
    let end = text
        .rfind("</svg>")
        .ok_or("not an SVG document: <svg> is not closed")?;
    if end < start {
        return Err("not an SVG document: </svg> before <svg".into());
    }
    if text[start..end].contains("<script") {
        return Err("holds a script: not inlined".into());
    }
    Ok(text[start..end + "</svg>".len()].to_owned())
}

/// True if the JSON stem `json` names the plot stem `svg`: the same
/// name, or the name followed by `-` (`testsmall-latency`).
fn claims(json: &str, svg: &str) -> bool {
    svg == json || svg.strip_prefix(json).is_some_and(|r| r.starts_with('-'))
}

fn extension(rel: &str) -> &str {
    let name = &rel[prefix(rel).len()..];
    name.rsplit_once('.').map_or("", |(_, e)| e)
}

/// A relative path's file name without its extension.
fn stem(rel: &str) -> &str {
    let name = &rel[prefix(rel).len()..];
    name.rsplit_once('.').map_or(name, |(s, _)| s)
}

/// The directory part of a relative path, with its trailing `/`.
fn prefix(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..=i])
}

/// The directory part of a relative path, without its trailing `/`.
fn parent(rel: &str) -> &str {
    prefix(rel).trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_belong_to_the_json_of_their_stem() {
        assert!(claims("testsmall", "testsmall"));
        assert!(claims("testsmall", "testsmall-latency"));
        assert!(!claims("testam", "testam2"));
        assert_eq!(stem("ofi-shm/testam.json"), "testam");
        assert_eq!(parent("ofi-shm/testam.json"), "ofi-shm");
        assert_eq!(parent("testam.json"), "");
        assert_eq!(extension("a.b/c"), "");
    }

    #[test]
    fn a_directory_is_read_with_its_subdirectories_and_bad_files_said_so() {
        let dir = std::env::temp_dir().join(format!("rgex-gather-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("ofi-shm")).unwrap();
        std::fs::write(dir.join("a.json"), "[]").unwrap();
        std::fs::write(dir.join("a.svg"), "<?xml version=\"1.0\"?><svg></svg>").unwrap();
        std::fs::write(dir.join("a-2.svg"), "<svg><script/></svg>").unwrap();
        std::fs::write(dir.join("a.log"), "x").unwrap();
        std::fs::write(dir.join("lone.svg"), "nothing").unwrap();
        std::fs::write(dir.join("ofi-shm/b.json"), "{\"x\":1}").unwrap();
        std::fs::write(dir.join("index.html"), "old").unwrap();
        let s = gather(&dir).unwrap();
        let names: Vec<&str> = s.iter().map(|s| s.rel.as_str()).collect();
        assert_eq!(names, ["a.json", "ofi-shm/b.json", "plots"]);
        assert!(matches!(s[0].content, Ok(Content::Records(ref r)) if r.is_empty()));
        assert_eq!(s[0].plots.len(), 2);
        assert_eq!(s[0].plots[1].svg.as_deref(), Ok("<svg></svg>"));
        assert!(s[0].plots[0]
            .svg
            .as_ref()
            .is_err_and(|e| e.contains("script")));
        assert_eq!(s[0].log.as_deref(), Some("a.log"));
        assert!(s[1]
            .content
            .as_ref()
            .is_err_and(|e| e.contains("neither bench records")));
        assert!(s[2].plots[0]
            .svg
            .as_ref()
            .is_err_and(|e| e.contains("not an SVG")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
