//! fabric_floor: the libfabric provider floor alone (`fi_pingpong` on
//! loopback, see `rgex_benches::fabric`), without rgex.
//!
//! Run: `fabric_floor [--quick] [--reps N] [--json PATH] [--provider PROV] [SIZE...]`
//! (default provider `RGEX_OFI_PROVIDER`, else `tcp;ofi_rxm`; default size 8).

use rgex_benches::cli::{positive, Opts};
use rgex_benches::fabric::{run_target, ProviderFloor, DEFAULT_PROVIDER};
use rgex_benches::report::Job;
use std::process::ExitCode;

const USAGE: &str =
    "usage: fabric_floor [--quick] [--reps N] [--json PATH] [--provider PROV] [SIZE...]

  --provider PROV  libfabric provider (default RGEX_OFI_PROVIDER, else tcp;ofi_rxm)
  SIZE             transfer sizes in bytes (default 8)";

fn run() -> Result<(), String> {
    let mut provider = std::env::var("RGEX_OFI_PROVIDER")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
    let mut sizes = Vec::new();
    let opts = Opts::parse("fabric_floor", std::env::args().skip(1), |a, rest| {
        if a == "--provider" {
            provider = rest.next().ok_or("--provider needs a name")?;
            Ok(true)
        } else if a.starts_with(|c: char| c.is_ascii_digit()) {
            sizes.push(positive("SIZE", Some(a.to_owned()))?);
            Ok(true)
        } else {
            Ok(false)
        }
    })?;
    let Some(opts) = opts else {
        println!("{USAGE}");
        return Ok(());
    };
    if sizes.is_empty() {
        sizes.push(8);
    }
    let target = run_target(opts.quick);
    let f = ProviderFloor::measure(&provider, &sizes, target, opts.reps, |w| {
        eprintln!("fabric_floor: measuring {w}")
    });
    print!("{}", f.report());
    let job = Job {
        bench: "fabric_floor".into(),
        conduit: "libfabric".into(),
        provider: Some(provider.clone()),
        ranks: 2,
        oversubscribed: false,
    };
    opts.write(&f.records(&job), &[])
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabric_floor: error: {e}");
            ExitCode::FAILURE
        }
    }
}
