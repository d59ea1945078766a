//! The Bootstrap trait over PMIx, and the job's place read from it.

use crate::client::Client;
use parking_lot::Mutex;
use pmix_sys as sys;
use rgex_core::bootstrap::JobEnv;
use rgex_core::{Bootstrap, Error, Result};
use std::ffi::CStr;

/// rgex's out-of-band collectives through the PMIx server of the job.
///
/// An allgather is a put of this rank's bytes under a fresh key
/// (`rgex.ag.<n>`, `n` counting the process's allgathers, the same on
/// every rank since they are collective), a commit, a fence that collects
/// the data, then one local get per rank. A barrier is a plain fence.
pub struct PmixBootstrap {
    client: Client,
    rank: u32,
    size: u32,
}

/// Allgathers this process started (the next key's number), over every
/// `PmixBootstrap` it opens: a key is never reused, so a get cannot see an
/// older allgather's value. Also serialises the collectives.
static NEXT: Mutex<u64> = Mutex::new(0);

impl std::fmt::Debug for PmixBootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmixBootstrap")
            .field("namespace", &self.client.namespace())
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Bootstrap for PmixBootstrap {
    fn name(&self) -> &'static str {
        "pmix"
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        // One allgather at a time: the key numbers must match across ranks.
        let mut next = NEXT.lock();
        let key = Client::key(format!("rgex.ag.{}", *next));
        *next += 1;
        self.client.put(&key, mine)?;
        self.client.commit()?;
        self.client.fence(true)?;
        (0..self.size)
            .map(|r| self.client.get_bytes(r, &key))
            .collect()
    }

    fn barrier(&self) -> Result<()> {
        let _one_at_a_time = NEXT.lock();
        self.client.fence(false)
    }
}

/// True if a PMIx launcher started this process (its server's namespace
/// and our rank are in the environment).
fn launched_by_pmix() -> bool {
    ["PMIX_NAMESPACE", "PMIX_RANK"]
        .iter()
        .all(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// The rank a PMIx launcher announced in the environment (`PMIX_RANK`),
/// read without connecting to its server; `None` if no PMIx launcher
/// started this process.
pub fn announced_rank() -> Result<Option<u32>> {
    if !launched_by_pmix() {
        return Ok(None);
    }
    let r = std::env::var("PMIX_RANK").unwrap_or_default();
    r.parse()
        .map(Some)
        .map_err(|_| Error::Config(format!("PMIX_RANK={r:?} is not a rank")))
}

/// `pmix` and the namespace with every character outside `[0-9a-z]`
/// (after lowercasing) replaced by `x`: a job id usable in shared-memory
/// object names.
fn job_id(namespace: &str) -> String {
    let clean: String = namespace
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() {
                c
            } else {
                'x'
            }
        })
        .collect();
    format!("pmix{clean}")
}

fn key(k: &'static [u8]) -> &'static CStr {
    CStr::from_bytes_with_nul(k).expect("PMIx key constants end in NUL")
}

/// The job's place and bootstrap if a PMIx launcher started this process,
/// `None` otherwise (a job of rgex-run, or of one rank).
///
/// Polite waiting (`RGEX_POLITE`) is on when set so, or when this node runs
/// more of the job's ranks than it has CPUs.
pub fn from_env() -> Result<Option<(JobEnv, PmixBootstrap)>> {
    if !launched_by_pmix() {
        return Ok(None);
    }
    let client = Client::init()?;
    let rank = client.rank();
    let size = client.job_u32(key(sys::PMIX_JOB_SIZE))?;
    if size == 0 || rank >= size {
        return Err(Error::Bootstrap(format!(
            "PMIx says rank {rank} of a job of {size}"
        )));
    }
    let local = client.job_u32(key(sys::PMIX_LOCAL_SIZE)).unwrap_or(size);
    // The node's CPUs, not this process's affinity: a launcher that binds
    // each rank to one core must not make every rank polite.
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpus = u32::try_from(online).unwrap_or(1).max(1);
    let polite = JobEnv::polite_requested() || local > cpus;
    let env = JobEnv {
        rank,
        size,
        socket: None,
        job: job_id(&client.namespace()),
        polite,
    };
    Ok(Some((env, PmixBootstrap { client, rank, size })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_plain() {
        assert_eq!(job_id("1340014593"), "pmix1340014593");
        assert_eq!(job_id("slurm.pmix.42.0"), "pmixslurmxpmixx42x0");
    }

    #[test]
    fn not_a_pmix_job_without_its_environment() {
        if launched_by_pmix() {
            println!("skipped: this test process was itself started by a PMIx launcher");
            return;
        }
        assert!(from_env().expect("no PMIx call is made").is_none());
    }
}
