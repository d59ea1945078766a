//! rgex-info: which conduits this machine can run and why not the others;
//! each conduit's limits and its atomics offload per (type, op) with the
//! reason when not (for ofi, asked of the provider the conduit would
//! choose); libfabric's providers; the verbs devices with every port and
//! the software device; the bootstrap a job would use; and every RGEX_
//! variable with its value and meaning. `--json` prints the same as JSON
//! (`rgex::info::Report`); `--markdown` prints the table of variables
//! README.md holds (`rgex::info::markdown`).

fn main() {
    let mut json = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--json" => json = true,
            "--markdown" => {
                print!("{}", rgex::info::markdown());
                return;
            }
            "-h" | "--help" => {
                println!("usage: rgex-info [--json | --markdown]\n\nShows which rgex conduits this machine can run (and why not the others), each conduit's limits and which atomics it offloads per type and op (and why not the others), libfabric's providers, the verbs devices with their ports and the software device, the bootstrap a job would use, and every RGEX_ environment variable with its value and meaning. --json: the same as JSON. --markdown: the table of every RGEX_ variable README.md holds.");
                return;
            }
            other => {
                eprintln!("rgex-info: unknown argument {other:?} (usage: rgex-info [--json | --markdown])");
                std::process::exit(2);
            }
        }
    }
    let report = rgex::info::Report::collect();
    if json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
}
