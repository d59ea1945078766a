//! What each conduit needs on this machine, whether it has it, and the
//! limits it can report without starting a job.

use super::atomics::{self, AtomicsReport};
use super::verbs::DeviceReport;
use libfabric_sys as fi;
use rgex_core::config::Environment;
use rgex_ofi::fabric::{caps_names, Hints, Info};

/// One conduit: runnable here or why not, and its limits.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConduitReport {
    /// `smp`, `ofi`, `ibv`, `scc`.
    pub name: &'static str,
    /// Whether `RGEX_CONDUIT=<name>` can run here.
    pub runnable: bool,
    /// What it runs on, or why it cannot run.
    pub why: String,
    /// Limits and properties: (what, value).
    pub limits: Vec<(String, String)>,
    /// How it performs atomics, per (type, op) where that varies.
    pub atomics: AtomicsReport,
}

/// A libfabric provider entry, as listed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProviderReport {
    /// The provider (`tcp;ofi_rxm`).
    pub provider: String,
    /// Its domain.
    pub domain: String,
    /// Its fabric.
    pub fabric: String,
    /// The capabilities rgex uses that it offers.
    pub caps: Vec<&'static str>,
    /// Inline send size.
    pub inject_size: usize,
    /// Largest message.
    pub max_msg_size: usize,
}

fn kib(n: usize) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

/// How node-local peers' client segments are reached on this machine
/// (see `rgex::client_segment`): cross-memory attach from
/// `rgex::CMA_MIN` bytes, or why not.
fn client_segments_node() -> String {
    let min = match rgex_endpoint::CMA_MIN {
        0 => "every put and get".to_string(),
        n if n.is_multiple_of(1 << 20) => {
            format!("puts and gets from {} MiB (active messages below)", n >> 20)
        }
        n => format!("puts and gets from {} (active messages below)", kib(n)),
    };
    let here = match rgex_core::cma::available_here() {
        Ok(why) => format!("available here ({why})"),
        Err(why) => format!("not available here, so active messages: {why}"),
    };
    format!(
        "this rank by a copy; node-local peers by cross-memory attach (process_vm_writev/readv) \
         for {min}, {}; {here}",
        rgex_endpoint::CMA_MIN_WHY
    )
}

/// What every path leaves to active messages.
const CLIENT_SEGMENTS_AM: &str = "atomics and VIS by active messages (the target applies them)";

/// A network conduit's line: remote peers by RDMA into the memory
/// registered as `how`, node-local ones (the bypass on) as on smp.
fn client_segments_net(how: &str) -> String {
    format!(
        "remote peers by RDMA into the memory registered with {how}; this rank, and node-local \
         peers with the bypass on, as on smp; {CLIENT_SEGMENTS_AM}"
    )
}

fn lim(what: &str, value: impl Into<String>) -> (String, String) {
    (what.to_string(), value.into())
}

/// The put-with-signal line (`Endpoint::put_signal_path`): node-local
/// peers with mapped segments take the copy and a release update; a
/// conduit's other peers take its native path if it has one (none of
/// rgex's does yet), else the active-message reference, as every peer
/// does with `RGEX_RMA=reference`.
fn put_signal(mapped: bool) -> (String, String) {
    let reference = "the AM reference: one request (a Medium when the data fits one, else a \
                     Long) whose handler writes the data, then the signal with Release, and \
                     acknowledges";
    lim(
        "put-with-signal",
        if mapped {
            format!(
                "node-local peers: a copy, then a Release swap or fetch-add on the mapped \
                 signal word, ringing the target if it sleeps; other peers (and all with \
                 RGEX_RMA=reference): {reference}"
            )
        } else {
            reference.to_string()
        },
    )
}

/// smp: shared memory between the ranks of one node.
pub fn smp(env: &Environment) -> ConduitReport {
    match rgex_smp::SmpConfig::read(env) {
        Ok(c) => ConduitReport {
            name: "smp",
            runnable: true,
            why: "shared memory between the ranks of this node".into(),
            limits: vec![
                lim("max Medium", kib(c.max_medium)),
                lim("max Long", format!("the segment ({})", kib(c.segment_len))),
                lim("RMA", "native: copies into the mapped segments"),
                lim(
                    "client segments",
                    format!("{}; {CLIENT_SEGMENTS_AM}", client_segments_node()),
                ),
                lim(
                    "endpoints",
                    "several (Client::create_endpoint): each has a request and a reply ring of its \
                     own, in a region of its own",
                ),
                put_signal(true),
            ],
            atomics: atomics::smp(),
        },
        Err(e) => ConduitReport {
            name: "smp",
            runnable: false,
            why: format!("configuration: {e}"),
            limits: vec![],
            atomics: atomics::smp(),
        },
    }
}

/// The segment size rgex-run's jobs get (`RGEX_SEGMENT_SIZE`).
fn smp_segment(env: &Environment) -> usize {
    rgex_smp::SmpConfig::read(env)
        .map(|c| c.segment_len)
        .unwrap_or_default()
}

/// The RDM providers libfabric lists here (an error: why none).
pub fn providers() -> Result<Vec<ProviderReport>, String> {
    // No capabilities asked: each provider answers with all it has.
    let info = Info::get(&Hints {
        ep_type: fi::FI_EP_RDM,
        ..Hints::default()
    })
    .map_err(|e| e.to_string())?;
    let mut out: Vec<ProviderReport> = Vec::new();
    for e in info.entries() {
        let p = ProviderReport {
            caps: caps_names(e.caps),
            provider: e.provider,
            domain: e.domain,
            fabric: e.fabric,
            inject_size: e.inject_size,
            max_msg_size: e.max_msg_size,
        };
        // libfabric lists a provider once per endpoint flavour; show each
        // distinct one once.
        if !out.iter().any(|q| {
            (&q.provider, &q.domain, &q.fabric, &q.caps, q.inject_size)
                == (&p.provider, &p.domain, &p.fabric, &p.caps, p.inject_size)
        }) {
            out.push(p);
        }
    }
    Ok(out)
}

/// ofi: libfabric, with the provider the conduit would choose (what
/// `RGEX_OFI_PROVIDER` and `RGEX_OFI_DOMAIN` allow).
pub fn ofi(env: &Environment) -> ConduitReport {
    let not = |why: String| ConduitReport {
        name: "ofi",
        runnable: false,
        atomics: AtomicsReport {
            how: format!("unknown: {why}"),
            types: Vec::new(),
        },
        why,
        limits: vec![],
    };
    let lib = match fi::Library::system() {
        Ok(lib) => lib,
        Err(e) => return not(format!("library missing: {e}")),
    };
    let cfg = match rgex_ofi::OfiConfig::read(env) {
        Ok(c) => c,
        Err(e) => return not(format!("configuration: {e}")),
    };
    // The provider a job would choose (the conduit's own choice, which
    // asks for atomics first), opened as far as an endpoint.
    let probe = match rgex_ofi::probe::Probe::open(&cfg) {
        Ok(p) => p,
        Err(e) => {
            return not(format!(
                "no provider: RGEX_OFI_PROVIDER={:?} RGEX_OFI_DOMAIN={:?}: {e}",
                cfg.provider.as_deref().unwrap_or("(any)"),
                cfg.domain.as_deref().unwrap_or("(any)")
            ))
        }
    };
    let p = &probe.provider;
    let v = lib.version();
    let rma = p.caps & fi::FI_RMA != 0;
    ConduitReport {
        name: "ofi",
        runnable: true,
        why: format!(
            "libfabric {}.{} ({}), provider {} on {}",
            v >> 16,
            v & 0xffff,
            lib.path(),
            p.name,
            p.domain
        ),
        limits: vec![
            lim("max Medium", kib(cfg.net.max_medium)),
            lim(
                "max Long",
                format!(
                    "the segment ({}); the provider's largest message: {}",
                    kib(smp_segment(env)),
                    if p.max_msg >= usize::MAX / 2 {
                        "unlimited".to_string()
                    } else {
                        kib(p.max_msg)
                    }
                ),
            ),
            lim(
                "inject size",
                match cfg.inject {
                    Some(_) => format!("{} (capped by RGEX_OFI_INJECT)", kib(p.inject_size)),
                    None => format!("{} (the provider's)", kib(p.inject_size)),
                },
            ),
            lim(
                "RMA",
                if rma {
                    "native (FI_RMA)".to_string()
                } else {
                    "over active messages: the provider lacks FI_RMA".to_string()
                },
            ),
            lim("client segments", client_segments_net("fi_mr_reg")),
            lim(
                "endpoints",
                "several (Client::create_endpoint): each opens a fabric, domain, completion queue, \
                 address vector and endpoint of its own, registers the segment there, and has its \
                 own node-local rings",
            ),
            put_signal(cfg.net.shm_bypass),
        ],
        atomics: atomics::ofi(&probe),
    }
}

/// ibv: an RDMA device through libibverbs, or the software device
/// (`soft`, its report) when `RGEX_IBV_DEVICE=soft`.
pub fn ibv(
    env: &Environment,
    devices: &Result<Vec<DeviceReport>, String>,
    soft: &DeviceReport,
) -> ConduitReport {
    let cfg = match rgex_ibv::IbvConfig::read(env) {
        Ok(c) => c,
        Err(e) => {
            return ConduitReport {
                name: "ibv",
                runnable: false,
                why: format!("configuration: {e}"),
                limits: vec![],
                atomics: AtomicsReport {
                    how: "unknown: the configuration is not valid".into(),
                    types: Vec::new(),
                },
            }
        }
    };
    let soft_line = lim(
        "soft device",
        match &soft.detail {
            Ok(_) => "available (RGEX_IBV_DEVICE=soft: a software verbs device across this machine's processes)".to_string(),
            Err(e) => format!("not available: {e}"),
        },
    );
    let atomics_of = |d: &DeviceReport| d.detail.as_ref().is_ok_and(|x| x.atomics);
    let (runnable, why, device) = if cfg.device.as_deref() == Some(rgex_ibv::SOFT) {
        (
            soft.detail.is_ok(),
            "the software verbs device soft0 (RGEX_IBV_DEVICE=soft), across this machine's processes".to_string(),
            Some(soft),
        )
    } else {
        match devices {
            Ok(list) if !list.is_empty() => {
                let chosen = list
                    .iter()
                    .find(|d| cfg.device.as_ref().is_none_or(|want| *want == d.name));
                (
                    chosen.is_some(),
                    match chosen {
                        Some(d) => format!("RDMA device {} (of {})", d.name, names(list)),
                        None => format!(
                            "no device: RGEX_IBV_DEVICE={:?} is none of {}",
                            cfg.device.as_deref().unwrap_or_default(),
                            names(list)
                        ),
                    },
                    chosen,
                )
            }
            Ok(_) => (false, "no RDMA device: libibverbs lists none".into(), None),
            Err(e) if e.contains("cannot load") || e.contains("not a usable") => {
                (false, format!("library missing: {e}"), None)
            }
            Err(e) => (false, e.clone(), None),
        }
    };
    let atomics = match device {
        Some(d) => atomics::ibv(atomics_of(d), &d.name),
        // What a device with atomics would do (the soft device has them).
        None => atomics::ibv(true, "a device with atomics, or the soft device"),
    };
    ConduitReport {
        name: "ibv",
        runnable,
        why,
        limits: vec![
            lim("max Medium", kib(cfg.net.max_medium)),
            lim(
                "max Long",
                format!("the segment ({})", kib(smp_segment(env))),
            ),
            lim(
                "inline size",
                format!(
                    "{} asked of each QP (RGEX_IBV_INLINE); the QP's grant is shown per device",
                    kib(cfg.inline as usize)
                ),
            ),
            lim("RMA", "native: RDMA WRITE and READ"),
            lim(
                "client segments",
                client_segments_net("ibv_reg_mr (the soft device: its own registration)"),
            ),
            lim(
                "endpoints",
                "several (Client::create_endpoint): each has a protection domain, completion queue, \
                 shared receive queue and queue pairs of its own, and its own node-local rings",
            ),
            put_signal(cfg.net.shm_bypass),
            soft_line,
        ],
        atomics,
    }
}

/// The devices' names, comma-separated.
fn names(list: &[DeviceReport]) -> String {
    list.iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// scc: the emulated many-core chip, on shared memory.
pub fn scc(env: &Environment) -> ConduitReport {
    match rgex_scc::SccConfig::read(env) {
        Ok(c) => ConduitReport {
            name: "scc",
            runnable: true,
            why: "the emulated SCC chip, on this node's shared memory".into(),
            limits: vec![
                lim("max Medium", kib(c.max_medium)),
                lim("max Long", format!("the segment ({})", kib(c.segment_len))),
                lim(
                    "client segments",
                    "over active messages: Medium chunks the target copies into its registration \
                     (the chip model registers no client memory); atomics and VIS too",
                ),
                lim(
                    "endpoints",
                    "one per process: the emulated chip gives each core one message-passing buffer, \
                     which the primordial endpoint owns",
                ),
                put_signal(false),
            ],
            atomics: atomics::scc(),
        },
        Err(e) => ConduitReport {
            name: "scc",
            runnable: false,
            why: format!("configuration: {e}"),
            limits: vec![],
            atomics: atomics::scc(),
        },
    }
}
