//! Reports which network libraries each rank has mapped after
//! `rgex::init`: one line per rank, `rank R: mapped: <names>` (`none` when
//! none is), so the launching test can check that an smp job loads no
//! network library, that an ofi job loads libfabric only then, and that
//! a job under a PMIx launcher loads libpmix. An init
//! failure is printed with rgex's error text and exits 1.

/// The libraries a network conduit or a bootstrap may load (libfabric,
/// and what its providers pull in: PSM, PSM2, verbs; libpmix).
const NETWORK: [&str; 6] = [
    "libfabric",
    "libpmix",
    "libpsm_infinipath",
    "libpsm2",
    "libibverbs",
    "librdmacm",
];

fn main() {
    let client = match rgex::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rgex::init failed: {e}");
            std::process::exit(1);
        }
    };
    let mapped: Vec<&str> = NETWORK
        .into_iter()
        .filter(|l| rgex_dl::is_mapped(l))
        .collect();
    let mapped = if mapped.is_empty() {
        "none".to_string()
    } else {
        mapped.join(",")
    };
    println!("rank {}: mapped: {mapped}", client.rank().0);
    if let Err(e) = client.barrier() {
        eprintln!("barrier: {e}");
        std::process::exit(1);
    }
}
