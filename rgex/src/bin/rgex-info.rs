//! rgex-info: which conduits this machine can run and why not the others;
//! each conduit's limits and its atomics offload per (type, op) with the
//! reason when not (for ofi, asked of the provider the conduit would
//! choose); libfabric's providers; the verbs devices with every port and
//! the software device; the bootstrap a job would use; and every RGEX_
//! variable with its value and meaning. `--json` prints the same as JSON
//! (`rgex::info::Report`); `--markdown` prints the table of variables
//! README.md holds, `--markdown READER` the table of those one reader
//! reads (`ofi`, `ibv`: the tables their READMEs hold), both
//! `rgex::info::markdown`.

use rgex::info::{markdown, readers, Selection, READMES};

const USAGE: &str = "usage: rgex-info [--json | --markdown [READER]]";

/// Print `message` and the usage on stderr, and exit with status 2.
fn refuse(message: &str) -> ! {
    eprintln!("rgex-info: {message} ({USAGE})");
    std::process::exit(2);
}

fn main() {
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => json = true,
            "--markdown" => {
                let who = args.next();
                let selection = match who.as_deref() {
                    None => Selection::All,
                    Some(w) if readers().contains(&w) => Selection::ReadBy(w),
                    Some(w) => refuse(&format!(
                        "no RGEX_ variable is read by {w:?}; READER is one of {}",
                        readers().join(", ")
                    )),
                };
                print!("{}", markdown(selection));
                return;
            }
            "-h" | "--help" => {
                let tables: Vec<String> = READMES
                    .iter()
                    .map(|r| format!("{} holds `{}`'s", r.path, r.selection.command()))
                    .collect();
                println!(
                    "{USAGE}\n\nShows which rgex conduits this machine can run (and why not the others), each conduit's limits and which atomics it offloads per type and op (and why not the others), libfabric's providers, the verbs devices with their ports and the software device, the bootstrap a job would use, and every RGEX_ environment variable with its value and meaning. --json: the same as JSON. --markdown: the table of every RGEX_ variable. --markdown READER: the table of the variables READER reads, one of {}. {}.",
                    readers().join(", "),
                    tables.join(", ")
                );
                return;
            }
            other => refuse(&format!("unknown argument {other:?}")),
        }
    }
    let report = rgex::info::Report::collect();
    if json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
}
