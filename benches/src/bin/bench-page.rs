//! bench-page: one HTML page of a bench run (`ci/bench.sh` calls it).
//!
//! ```text
//! bench-page DIR                       write DIR/index.html from every JSON file
//!                                      (and the SVG plots next to them) under DIR
//! bench-page --machine PATH [--note T] describe this machine into PATH (JSON),
//!                                      T saying what the run is
//! ```
//!
//! The page is self-contained (no script, nothing loaded from elsewhere):
//! see `rgex_benches::report::page`. A JSON file it cannot read is shown
//! as such on the page, named on stderr, and makes the exit status 1.

use rgex_benches::report::{page, Machine};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: bench-page DIR | bench-page --machine PATH [--note TEXT]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-page: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args {
        [flag, path, rest @ ..] if flag == "--machine" => {
            let note = match rest {
                [] => None,
                [n, text] if n == "--note" => Some(text.as_str()),
                _ => return Err(format!("unexpected arguments {rest:?} ({USAGE})")),
            };
            let path = PathBuf::from(path);
            let m = Machine::this(note);
            let text = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("create {}: {e}", dir.display()))?;
            }
            std::fs::write(&path, text + "\n")
                .map_err(|e| format!("write {}: {e}", path.display()))?;
            println!("machine: {}", path.display());
            Ok(())
        }
        [dir] if !dir.starts_with('-') => {
            let (path, problems) = page::write(&PathBuf::from(dir))?;
            println!("report page: {}", path.display());
            for p in &problems {
                eprintln!("bench-page: {p}");
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} file(s) not shown (the page says which)",
                    problems.len()
                ))
            }
        }
        [h] if h == "-h" || h == "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("bad arguments {args:?} ({USAGE})")),
    }
}
