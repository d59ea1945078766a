//! What each conduit needs on this machine, whether it has it, and the
//! limits it can report without starting a job.

use libfabric_sys as fi;
use rgex_ibv::verbs::Verbs;
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

/// A verbs device and its port, as the real backend opens it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceReport {
    /// The device name (`mlx5_0`).
    pub name: String,
    /// Its attributes and port, or why it could not be opened.
    pub detail: String,
}

fn kib(n: usize) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

fn lim(what: &str, value: impl Into<String>) -> (String, String) {
    (what.to_string(), value.into())
}

/// smp: shared memory between the ranks of one node.
pub fn smp() -> ConduitReport {
    match rgex_smp::SmpConfig::from_env() {
        Ok(c) => ConduitReport {
            name: "smp",
            runnable: true,
            why: "shared memory between the ranks of this node".into(),
            limits: vec![
                lim("max Medium", kib(c.max_medium)),
                lim("max Long", format!("the segment ({})", kib(c.segment_len))),
                lim("RMA", "native: copies into the mapped segments"),
                lim("atomics", "shared: CPU atomics on the mapped segments"),
            ],
        },
        Err(e) => ConduitReport {
            name: "smp",
            runnable: false,
            why: format!("configuration: {e}"),
            limits: vec![],
        },
    }
}

/// The segment size rgex-run's jobs get (`RGEX_SEGMENT_SIZE`).
fn smp_segment() -> usize {
    rgex_smp::SmpConfig::from_env()
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

/// ofi: libfabric, with the provider `RGEX_OFI_PROVIDER` asks for.
pub fn ofi(providers: &Result<Vec<ProviderReport>, String>) -> ConduitReport {
    let not = |why: String| ConduitReport {
        name: "ofi",
        runnable: false,
        why,
        limits: vec![],
    };
    let lib = match fi::Library::system() {
        Ok(lib) => lib,
        Err(e) => return not(format!("library missing: {e}")),
    };
    let cfg = match rgex_ofi::OfiConfig::from_env() {
        Ok(c) => c,
        Err(e) => return not(format!("configuration: {e}")),
    };
    let list = match providers {
        Ok(l) => l,
        Err(e) => return not(format!("no provider: {e}")),
    };
    let chosen = list.iter().find(|p| {
        cfg.provider
            .as_deref()
            .is_none_or(|want| p.provider == want)
            && cfg.domain.as_deref().is_none_or(|want| p.domain == want)
    });
    let Some(p) = chosen else {
        return not(format!(
            "no provider: RGEX_OFI_PROVIDER={:?} RGEX_OFI_DOMAIN={:?} matches none of libfabric's RDM providers here",
            cfg.provider.as_deref().unwrap_or("(any)"),
            cfg.domain.as_deref().unwrap_or("(any)")
        ));
    };
    let v = lib.version();
    let rma = p.caps.contains(&"FI_RMA");
    let atomic = p.caps.contains(&"FI_ATOMIC");
    ConduitReport {
        name: "ofi",
        runnable: true,
        why: format!(
            "libfabric {}.{} ({}), provider {} on {}",
            v >> 16,
            v & 0xffff,
            lib.path(),
            p.provider,
            p.domain
        ),
        limits: vec![
            lim("max Medium", kib(cfg.max_medium)),
            lim(
                "max Long",
                format!(
                    "the segment ({}); the provider's largest message: {}",
                    kib(smp_segment()),
                    if p.max_msg_size >= usize::MAX / 2 {
                        "unlimited".to_string()
                    } else {
                        kib(p.max_msg_size)
                    }
                ),
            ),
            lim(
                "inject size",
                match cfg.inject {
                    Some(n) => format!("{} (RGEX_OFI_INJECT)", kib(n)),
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
            lim(
                "atomics offload",
                if atomic {
                    "offered (FI_ATOMIC); each (type, op set) is checked with fi_query_atomic when a domain is made".to_string()
                } else {
                    "no: the provider lacks FI_ATOMIC (atomics go through active messages)"
                        .to_string()
                },
            ),
        ],
    }
}

/// The verbs devices the real backend sees, or why none.
pub fn verbs_devices() -> Result<Vec<DeviceReport>, String> {
    let names = rgex_ibv::real::device_names().map_err(|e| e.to_string())?;
    Ok(names
        .into_iter()
        .map(|name| {
            let choice = rgex_ibv::verbs::DeviceChoice {
                name: Some(name.clone()),
                port: None,
                gid_index: 0,
            };
            let detail = match rgex_ibv::real::RealVerbs::open(&choice) {
                Ok(v) => format!("{:?}; port {:?}", v.device_attr(), v.port_attr()),
                Err(e) => format!("cannot be opened: {e}"),
            };
            DeviceReport { name, detail }
        })
        .collect())
}

/// ibv: an RDMA device through libibverbs, or the software device.
pub fn ibv(devices: &Result<Vec<DeviceReport>, String>) -> ConduitReport {
    let soft = lim(
        "soft device",
        "available (RGEX_IBV_DEVICE=soft: a software verbs device across this machine's processes)",
    );
    match devices {
        Ok(list) if !list.is_empty() => ConduitReport {
            name: "ibv",
            runnable: true,
            why: format!(
                "RDMA devices: {}",
                list.iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            limits: vec![soft],
        },
        Ok(_) => ConduitReport {
            name: "ibv",
            runnable: false,
            why: "no RDMA device: libibverbs lists none".into(),
            limits: vec![soft],
        },
        Err(e) => ConduitReport {
            name: "ibv",
            runnable: false,
            why: if e.contains("cannot load") || e.contains("not a usable") {
                format!("library missing: {e}")
            } else {
                e.clone()
            },
            limits: vec![soft],
        },
    }
}

/// scc: the emulated many-core chip, on shared memory.
pub fn scc() -> ConduitReport {
    match rgex_scc::SccConfig::from_env() {
        Ok(c) => ConduitReport {
            name: "scc",
            runnable: true,
            why: "the emulated SCC chip, on this node's shared memory".into(),
            limits: vec![
                lim("max Medium", kib(c.max_medium)),
                lim("max Long", format!("the segment ({})", kib(c.segment_len))),
            ],
        },
        Err(e) => ConduitReport {
            name: "scc",
            runnable: false,
            why: format!("configuration: {e}"),
            limits: vec![],
        },
    }
}
