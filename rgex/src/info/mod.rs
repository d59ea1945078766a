//! What this machine can run: the report `rgex-info` prints (like
//! `fi_info` and `ucx_info`). Collecting it loads the network libraries
//! (libfabric, libibverbs) to ask them, opens the ofi provider a job would
//! choose as far as an endpoint (to ask it about each atomic), opens every
//! verbs device and the software device (to query their ports and the
//! inline size a queue pair is granted), but starts no job. The READMEs'
//! tables of variables are made here too ([`markdown`], one per entry of
//! [`READMES`]), from the registry the report's environment section lists.

mod atomics;
mod conduits;
mod env;
mod render;
mod verbs;

pub use atomics::{AtomicsReport, NotOffloaded, TypeAtomics};
pub use conduits::{ConduitReport, ProviderReport};
pub use env::{
    lookup, markdown, readers, Fallback, Readme, Selection, Var, READMES, TABLE_END, VARS,
};
use rgex_core::config::Environment;
pub use verbs::{DeviceDetail, DeviceReport, PortDetail, PortReport};

/// Everything `rgex-info` shows.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// Each conduit: runnable or why not, and its limits.
    pub conduits: Vec<ConduitReport>,
    /// libfabric's RDM providers, or why there are none.
    pub providers: std::result::Result<Vec<ProviderReport>, String>,
    /// The verbs devices and ports, or why there are none.
    pub verbs_devices: std::result::Result<Vec<DeviceReport>, String>,
    /// The software verbs device (`RGEX_IBV_DEVICE=soft`).
    pub soft_device: DeviceReport,
    /// The bootstrap a job started like this process would use.
    pub bootstrap: String,
    /// Every `RGEX_` variable: name, current value (`None`: unset), meaning.
    pub environment: Vec<EnvSetting>,
}

/// A variable of [`VARS`] with its value in this process.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EnvSetting {
    /// The name.
    pub name: &'static str,
    /// Its value here, `None` when unset.
    pub value: Option<String>,
    /// What it means.
    pub meaning: &'static str,
    /// What applies when it is unset.
    pub unset: String,
    /// Who reads it.
    pub reader: &'static str,
}

/// The bootstrap `rgex::init` would use in this process.
pub fn bootstrap() -> String {
    if std::env::var_os("RGEX_BOOTSTRAP").is_some() {
        return "rgex-run (RGEX_BOOTSTRAP is set)".into();
    }
    match rgex_pmix::announced_rank() {
        Ok(Some(r)) => format!("pmix (started by a PMIx launcher, PMIX_RANK={r}; libpmix is loaded then)"),
        Ok(None) => "none: a job of one rank (start a job with rgex-run, or srun --mpi=pmix / mpirun / prterun for PMIx)".into(),
        Err(e) => format!("pmix, but: {e}"),
    }
}

impl Report {
    /// Ask every conduit and library, with the settings of this process's
    /// environment (read once, as `rgex::init` reads it).
    pub fn collect() -> Report {
        let env = Environment::capture();
        let providers = conduits::providers();
        // The inline size the probe QPs ask for: what the conduit asks.
        let inline = rgex_ibv::IbvConfig::read(&env).unwrap_or_default().inline;
        let verbs_devices = verbs::real_devices(inline);
        let soft_device = verbs::soft_device(inline);
        let conduits = vec![
            conduits::smp(&env),
            conduits::ofi(&env),
            conduits::ibv(&env, &verbs_devices, &soft_device),
            conduits::scc(&env),
        ];
        let environment = VARS
            .iter()
            .map(|v| EnvSetting {
                name: v.name,
                value: env.get(v).map(str::to_string),
                meaning: v.meaning,
                unset: match v.fallback {
                    Fallback::Value(x) | Fallback::Behaviour(x) => x.to_string(),
                },
                reader: v.reader,
            })
            .collect();
        Report {
            conduits,
            providers,
            verbs_devices,
            soft_device,
            bootstrap: bootstrap(),
            environment,
        }
    }

    /// The report as plain text.
    pub fn text(&self) -> String {
        render::text(self)
    }

    /// The report as JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report is plain data")
    }
}
