//! The report page (`bench-page`, what `ci/bench.sh` ends with) over real
//! bench output: testsmall and testfaddperf run with `--quick` on two
//! ranks through the launcher (testfaddperf also over the ibv conduit's
//! software verbs device, in a subdirectory as ci/bench.sh writes it),
//! scc_epochs `--quick`, the machine described by `bench-page --machine`,
//! and two files the quick runs cannot give in seconds written by the
//! benches' own serializers: a round table ([`Rounds::records`], as
//! testam's) and testcoll's rows ([`CollRecord`]).
//!
//! Then the page must hold every figure of every JSON file in the table
//! cell or row that names the record (`data-rec`), under a header that
//! names its variant and size, in a table that names its unit; every
//! plot inlined; the machine. Checked on the page as written, and on the
//! DOM that Debian's chromium renders from it headless, whose screenshot
//! must be a 1280x4000 PNG well above a blank page's size (it is left in
//! the target directory to look at). Without chromium the browser test
//! says it is skipped, and why.

mod dom;

use rgex_benches::proc::Running;
use rgex_benches::report::{num, size, write_json, CollRecord, Job, Record};
use rgex_benches::rounds::Rounds;
use rgex_benches::stats::Stats;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// A generous bound on one bench run or browser run (they take seconds).
const LIMIT: Duration = Duration::from_secs(240);

/// The results directory with its page, made once for every test here.
fn results() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("ibv-soft")).expect("create the results directory");
        let mut machine = Command::new(env!("CARGO_BIN_EXE_bench-page"));
        machine
            .arg("--machine")
            .arg(dir.join("machine.json"))
            .args(["--note", "report_page test: --quick runs"]);
        run_ok(machine);
        bench(&dir, "testsmall", env!("CARGO_BIN_EXE_testsmall"), None);
        bench(
            &dir,
            "testfaddperf",
            env!("CARGO_BIN_EXE_testfaddperf"),
            None,
        );
        bench(
            &dir.join("ibv-soft"),
            "testfaddperf",
            env!("CARGO_BIN_EXE_testfaddperf"),
            Some("ibv"),
        );
        let mut scc = Command::new(env!("CARGO_BIN_EXE_scc_epochs"));
        scc.args(["--quick", "--json"])
            .arg(dir.join("scc_epochs.json"));
        run_ok(scc);
        write_rounds(&dir.join("rounds.json"));
        write_coll(&dir.join("testcoll.json"));
        let mut page = Command::new(env!("CARGO_BIN_EXE_bench-page"));
        page.arg(&dir);
        let out = run_ok(page);
        assert!(out.contains("report page:"), "bench-page said: {out}");
        dir
    })
}

/// Run `cmd` to its end within [`LIMIT`]; it must succeed. Its stdout.
fn run_ok(mut cmd: Command) -> String {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let what = format!("{cmd:?}");
    let done = Running::spawn(&what, cmd)
        .unwrap_or_else(|e| panic!("start {what}: {e}"))
        .finish(LIMIT)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        done.status.success(),
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        done.status,
        done.stdout,
        done.stderr
    );
    done.stdout
}

/// Run `bench --quick` on two ranks through the launcher (on `conduit`:
/// ibv means its software verbs device, as ci/bench.sh runs it), its
/// records and plots into `dir`, its output into `dir/BENCH.log`.
fn bench(dir: &Path, name: &str, exe: &str, conduit: Option<&str>) {
    let json = dir.join(format!("{name}.json"));
    let mut job = rgex::launch::Job::new(2, exe)
        .args(["--quick", "--json"])
        .args([&json])
        .conduit(Some(conduit.unwrap_or("smp").to_owned()))
        .timeout(Some(LIMIT));
    if conduit == Some("ibv") {
        job = job
            .env("RGEX_IBV_DEVICE", "soft")
            .env("RGEX_SHM_BYPASS", "0");
    }
    let start = std::time::Instant::now();
    let (outcome, out, err) = job.run_captured().expect("the launcher starts the job");
    println!(
        "{name} --quick on {}: {:.1} s",
        conduit.unwrap_or("smp"),
        start.elapsed().as_secs_f64()
    );
    std::fs::write(dir.join(format!("{name}.log")), format!("{out}{err}")).expect("write the log");
    assert_eq!(
        outcome.status, 0,
        "{name} --quick failed: {:?}\n--- stdout\n{out}--- stderr\n{err}",
        outcome.failure
    );
}

/// A round table as testam writes one: rgex and two peers, three rounds,
/// the second mixed (its floor moved), the peer `ucx` failing in every
/// round (no record, as when ucx_perftest is missing).
fn write_rounds(path: &Path) {
    let floors = [
        100.0, 102.0, 101.0, 99.0, 100.0, 180.0, 101.0, 100.0, 98.0, 100.0, 99.0, 101.0,
    ];
    let figures = [350.0, 900.0, 0.0, 340.5, 1210.25, 0.0, 362.0, 880.0, 0.0];
    let (mut f, mut p) = (0, 0);
    let rounds = Rounds::run(
        vec![
            "rgex AM Short round trip".into(),
            "mpi MPI_Send/MPI_Recv ping-pong round trip".into(),
            "ucx ucp_am_lat round trip".into(),
        ],
        "ns",
        3,
        || {
            f += 1;
            Ok(floors[f - 1])
        },
        |k| {
            p += 1;
            if k == 2 {
                return Err("ucx_perftest not installed".into());
            }
            let x = figures[p - 1];
            let s = Stats::from_samples(&[x, x * 0.97, x * 1.31]).expect("samples");
            Ok((s, 1000))
        },
    )
    .expect("the floors are given");
    let job = |k: usize| Job {
        bench: "testam (a round table written by Rounds::records)".into(),
        conduit: ["smp", "mpi", "ucx"][k].into(),
        provider: None,
        ranks: 2,
        oversubscribed: false,
    };
    // The Short carries no payload; the others 8 bytes (testam's sizes).
    let records = rounds.records(job, |k| (k > 0).then_some(8));
    assert!(records
        .iter()
        .any(|r| r.variant.ends_with("(round 2, mixed)")));
    write_json(path, &records).expect("write the rounds");
}

/// testcoll's rows: rgex beside Open MPI, one side missing in a row.
fn write_coll(path: &Path) {
    let rows = [
        CollRecord::new(2, false, "barrier", 0, Some(812.44), Some(1020.0)),
        CollRecord::new(2, false, "bcast", 65536, Some(15123.0), None),
        CollRecord::new(8, true, "alltoall", 1024, Some(40211.6), Some(38000.1)),
    ];
    write_json(path, &rows).expect("write the testcoll rows");
}

/// What the page must show of one record: where (`data-rec`), its
/// figures as written, the names its header gives, its unit.
struct Expected {
    rec: String,
    figures: Vec<String>,
    names: Vec<String>,
    unit: String,
}

/// Every record of every JSON file under `dir`, read with the benches'
/// own types; the machine description apart.
fn expected(dir: &Path) -> Vec<Expected> {
    let mut out = Vec::new();
    for rel in json_files(dir, "") {
        if rel == "machine.json" {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(&rel)).expect("read a JSON file");
        if let Ok(recs) = serde_json::from_str::<Vec<Record>>(&text) {
            assert!(!recs.is_empty(), "{rel}: no records");
            for (i, r) in recs.iter().enumerate() {
                let mut figures = vec![num(r.median), num(r.min), num(r.max)];
                figures.extend([r.floor, r.ratio, r.target].into_iter().flatten().map(num));
                // A round record's header is its point's name, its row
                // the round; a best round's row names the point.
                let base = ["(round ", "(best of "]
                    .iter()
                    .find_map(|t| r.variant.rfind(&format!(" {t}")))
                    .map_or(r.variant.as_str(), |at| &r.variant[..at]);
                let mut names = vec![dom::squash(base)];
                names.extend(r.size.map(size));
                out.push(Expected {
                    rec: format!("{rel}#{i}"),
                    figures,
                    names,
                    unit: r.unit.clone(),
                });
            }
        } else {
            let rows: Vec<CollRecord> = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{rel}: neither records nor testcoll rows: {e}"));
            for (i, r) in rows.iter().enumerate() {
                let fig = |x: Option<f64>| x.map_or_else(|| "not measured".to_owned(), num);
                let mut figures = vec![fig(r.rgex_ns), fig(r.mpi_ns)];
                figures.extend(r.ratio().map(num));
                out.push(Expected {
                    rec: format!("{rel}#{i}"),
                    figures,
                    names: vec![r.test.clone(), size(r.size), r.ranks.to_string()],
                    unit: "ns".into(),
                });
            }
        }
    }
    out
}

/// The JSON files under `dir`, relative, sorted.
fn json_files(dir: &Path, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(rel))
        .expect("list the results")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = format!("{rel}{}", e.file_name().to_string_lossy());
        if e.path().is_dir() {
            out.extend(json_files(dir, &format!("{name}/")));
        } else if name.ends_with(".json") {
            out.push(name);
        }
    }
    out
}

/// The words of a cell's text: figures stand alone between spaces and
/// the page's punctuation.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "[](),;:×≤≥".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Check `html` against every record under `dir`: the list of what is
/// wrong, empty if nothing. Counts the records checked.
fn check(html: &str, dir: &Path) -> (usize, Vec<String>) {
    let tables = dom::tables(html);
    let mut bad = Vec::new();
    // (record, its text, the text naming it, its table's text)
    let mut found: Vec<(String, String, String, String)> = Vec::new();
    for t in &tables {
        let header = t.header();
        let head_text: String = header
            .map(|h| {
                h.cells
                    .iter()
                    .map(|c| c.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .unwrap_or_default();
        let table_text = format!("{} | {head_text}", t.caption);
        for row in &t.rows {
            let row_text = row
                .cells
                .iter()
                .map(|c| c.text.as_str())
                .collect::<Vec<_>>()
                .join(" | ");
            if let Some(rec) = &row.rec {
                found.push((
                    rec.clone(),
                    row_text.clone(),
                    row_text.clone(),
                    table_text.clone(),
                ));
            }
            for (k, c) in row.cells.iter().enumerate() {
                let Some(rec) = &c.rec else { continue };
                let col = header.and_then(|h| h.cells.get(k)).map(|c| c.text.as_str());
                let Some(col) = col else {
                    bad.push(format!("{rec}: its cell has no column header"));
                    continue;
                };
                let naming = format!("{} | {col}", row.cells[0].text);
                found.push((rec.clone(), c.text.clone(), naming, table_text.clone()));
            }
        }
    }
    let want = expected(dir);
    for e in &want {
        let mine: Vec<_> = found.iter().filter(|f| f.0 == e.rec).collect();
        if mine.is_empty() {
            bad.push(format!("{}: in no table ({:?})", e.rec, e.names));
        }
        for (_, text, naming, table) in mine {
            let w = words(text);
            for fig in &e.figures {
                let shown = w.contains(&fig.as_str())
                    || (fig == "not measured" && text.contains(fig.as_str()));
                if !shown {
                    bad.push(format!("{}: figure {fig} not in its cell {text:?}", e.rec));
                }
            }
            let naming_words = words(naming);
            for name in &e.names {
                if !naming.contains(name.as_str()) && !naming_words.contains(&name.as_str()) {
                    bad.push(format!("{}: {name:?} not in its headers {naming:?}", e.rec));
                }
            }
            if !table.contains(&e.unit) {
                bad.push(format!(
                    "{}: unit {} not in its table {table:?}",
                    e.rec, e.unit
                ));
            }
        }
    }
    let known: Vec<&str> = want.iter().map(|e| e.rec.as_str()).collect();
    for f in &found {
        if !known.contains(&f.0.as_str()) {
            bad.push(format!("{}: the page names a record no JSON file has", f.0));
        }
    }
    (want.len(), bad)
}

/// The page's other content: every plot inlined, with its file named;
/// the machine as described.
fn check_plots_and_machine(html: &str, dir: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    let mut svgs = Vec::new();
    for sub in ["", "ibv-soft/"] {
        for e in std::fs::read_dir(dir.join(sub)).expect("list").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".svg") {
                svgs.push(format!("{sub}{name}"));
            }
        }
    }
    // testsmall's two, testfaddperf's on each conduit, scc_epochs' two.
    if svgs.len() < 6 {
        bad.push(format!("only {} SVG plots written: {svgs:?}", svgs.len()));
    }
    let inlined = html.matches("<svg").count();
    if inlined != svgs.len() {
        bad.push(format!("{inlined} plots inlined, {} written", svgs.len()));
    }
    for s in &svgs {
        if !html.contains(&format!("<figcaption>{s}</figcaption>")) {
            bad.push(format!("plot {s} not captioned on the page"));
        }
    }
    let m: rgex_benches::report::Machine = serde_json::from_str(
        &std::fs::read_to_string(dir.join("machine.json")).expect("read machine.json"),
    )
    .expect("a machine description");
    let tables = dom::tables(html);
    let shown = tables.iter().find(|t| {
        t.rows
            .iter()
            .any(|r| r.cells.first().is_some_and(|c| c.text == "CPUs online"))
    });
    match shown {
        None => bad.push("no machine table".into()),
        Some(t) => {
            for (what, value) in m.rows() {
                let row = t
                    .rows
                    .iter()
                    .find(|r| r.cells.first().is_some_and(|c| c.text == what));
                let got = row.and_then(|r| r.cells.get(1)).map(|c| c.text.as_str());
                if got != Some(dom::squash(&value).as_str()) {
                    bad.push(format!(
                        "machine: {what} is {got:?} on the page, {value:?} in machine.json"
                    ));
                }
            }
        }
    }
    if !html.contains(
        rgex_benches::label::SOFT_VERBS
            .split(" (")
            .next()
            .unwrap_or(""),
    ) {
        bad.push("the software verbs device's figures are not labelled".into());
    }
    bad
}

#[test]
fn the_page_holds_every_figure_of_the_json() {
    let dir = results();
    let html =
        std::fs::read_to_string(dir.join("index.html")).expect("bench-page wrote index.html");
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the page must be self-contained"
    );
    let (n, mut bad) = check(&html, dir);
    bad.extend(check_plots_and_machine(&html, dir));
    assert!(n > 300, "only {n} records checked");
    assert!(
        bad.is_empty(),
        "{} problems, first ones: {:#?}",
        bad.len(),
        &bad[..bad.len().min(20)]
    );
    println!("the page holds every figure of {n} records");
}

/// Debian's chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// Run headless chromium on `url` with `what` (`--dump-dom`,
/// `--screenshot=...`), in a fresh profile; its stdout.
fn browse(exe: &Path, what: &str, url: &str) -> String {
    let profile = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "chromium-profile-{}",
        what.trim_start_matches('-')
            .split('=')
            .next()
            .unwrap_or("run")
    ));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).expect("create a chromium profile");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,4000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(what)
    .arg(url)
    .env("XDG_CONFIG_HOME", &profile)
    .env("XDG_CACHE_HOME", &profile);
    let out = run_ok(cmd);
    let _ = std::fs::remove_dir_all(&profile);
    out
}

/// A PNG's width and height, from its IHDR chunk.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR")
        .then(|| (be(&png[16..20]), be(&png[20..24])))
}

#[test]
fn chromium_renders_the_page_with_every_figure_and_a_screenshot() {
    let Some(exe) = chromium() else {
        let line =
            "skip: report_page::chromium_renders_the_page_with_every_figure_and_a_screenshot: \
                    the whole test: no chromium in PATH (ci/deps.sh installs Debian's chromium: \
                    apt-get install chromium)";
        // On stdout (shown with the test's output) and straight on
        // stderr, past libtest's capture, where ci/test.sh counts skips.
        println!("{line}");
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        return;
    };
    let dir = results();
    let url = format!("file://{}", dir.join("index.html").display());
    let dom = browse(&exe, "--dump-dom", &url);
    assert!(
        dom.contains("<table"),
        "chromium's DOM has no table: {dom:.400}"
    );
    let (n, mut bad) = check(&dom, dir);
    bad.extend(check_plots_and_machine(&dom, dir));
    assert!(
        bad.is_empty(),
        "{} problems in the rendered DOM, first ones: {:#?}",
        bad.len(),
        &bad[..bad.len().min(20)]
    );

    let shot = dir.join("index.png");
    let _ = std::fs::remove_file(&shot);
    browse(&exe, &format!("--screenshot={}", shot.display()), &url);
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(png_size(&png), Some((1280, 4000)), "not a 1280x4000 PNG");
    // A blank page of the same size, for scale: the page's tables,
    // plots and text make its screenshot many times larger.
    let blank_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page-blank");
    std::fs::create_dir_all(&blank_dir).expect("create a blank page's directory");
    std::fs::write(
        blank_dir.join("blank.html"),
        "<!DOCTYPE html><html><body></body></html>",
    )
    .expect("write a blank page");
    let blank_shot = blank_dir.join("blank.png");
    browse(
        &exe,
        &format!("--screenshot={}", blank_shot.display()),
        &format!("file://{}", blank_dir.join("blank.html").display()),
    );
    let blank = std::fs::read(&blank_shot).expect("chromium wrote the blank screenshot");
    assert_eq!(png_size(&blank), Some((1280, 4000)));
    assert!(
        png.len() > 8 * blank.len(),
        "the page's screenshot ({} bytes) is hardly more than a blank page's ({} bytes)",
        png.len(),
        blank.len()
    );
    println!(
        "chromium rendered {n} records, every figure in its cell; screenshot {} ({} bytes, a blank page's {})",
        shot.display(),
        png.len(),
        blank.len()
    );
}

#[test]
fn a_file_it_cannot_read_is_named_and_fails_the_run() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page-bad");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a directory");
    std::fs::write(dir.join("broken.json"), "[{\"bench\": ").expect("write a broken file");
    write_coll(&dir.join("testcoll.json"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bench-page"));
    cmd.arg(&dir).stdout(Stdio::piped()).stderr(Stdio::piped());
    let done = Running::spawn("bench-page", cmd)
        .expect("start bench-page")
        .finish(LIMIT)
        .expect("bench-page ends");
    assert_eq!(done.status.code(), Some(1), "stderr: {}", done.stderr);
    assert!(
        done.stderr.contains("broken.json") && done.stderr.contains("EOF"),
        "the error names the file and what is wrong: {}",
        done.stderr
    );
    let html = std::fs::read_to_string(dir.join("index.html")).expect("the page is written anyway");
    assert!(html.contains("broken.json: not shown") && html.contains("testcoll"));
    for i in 0..3 {
        assert!(
            html.contains(&format!("data-rec=\"testcoll.json#{i}\"")),
            "testcoll's row {i} is shown"
        );
    }
}
