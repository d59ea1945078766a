//! How a process learns its place in the job from the environment.

use super::{Bootstrap, SingleRank, UnixBootstrap};
use crate::{Error, Result};
use std::path::PathBuf;

/// What the launcher told this process through the environment.
///
/// | variable | meaning |
/// |---|---|
/// | `RGEX_RANK` | this process's rank |
/// | `RGEX_SIZE` | ranks in the job |
/// | `RGEX_BOOTSTRAP` | path of the launcher's bootstrap socket |
/// | `RGEX_JOB` | job id, used to name shared-memory objects |
/// | `RGEX_POLITE` | `1`: yield instead of spinning (oversubscribed node) |
///
/// With none of them set, the process is a job of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnv {
    /// This process's rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// The bootstrap socket, absent for a job of one rank.
    pub socket: Option<PathBuf>,
    /// Job id (unique on the node while the job runs).
    pub job: String,
    /// Yield rather than spin while waiting.
    pub polite: bool,
}

impl JobEnv {
    /// True if `RGEX_POLITE` asks for yielding (`1` or `true`), whichever
    /// launcher started the job.
    pub fn polite_requested() -> bool {
        matches!(
            std::env::var("RGEX_POLITE").as_deref(),
            Ok("1") | Ok("true")
        )
    }

    /// Read the environment.
    pub fn read() -> Result<Self> {
        fn var(name: &str) -> Option<String> {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        }
        fn num(name: &str, v: &str) -> Result<u32> {
            v.parse()
                .map_err(|_| Error::Config(format!("{name}={v:?} is not a number")))
        }
        let polite = Self::polite_requested();
        let Some(socket) = var("RGEX_BOOTSTRAP") else {
            let job = var("RGEX_JOB").unwrap_or_else(|| format!("solo{}", std::process::id()));
            return Ok(JobEnv {
                rank: 0,
                size: 1,
                socket: None,
                job,
                polite,
            });
        };
        let rank = var("RGEX_RANK")
            .ok_or_else(|| Error::Config("RGEX_BOOTSTRAP is set but RGEX_RANK is not".into()))?;
        let size = var("RGEX_SIZE")
            .ok_or_else(|| Error::Config("RGEX_BOOTSTRAP is set but RGEX_SIZE is not".into()))?;
        let (rank, size) = (num("RGEX_RANK", &rank)?, num("RGEX_SIZE", &size)?);
        if size == 0 || rank >= size {
            return Err(Error::Config(format!(
                "RGEX_RANK={rank} is not below RGEX_SIZE={size}"
            )));
        }
        let job = var("RGEX_JOB")
            .ok_or_else(|| Error::Config("RGEX_BOOTSTRAP is set but RGEX_JOB is not".into()))?;
        Ok(JobEnv {
            rank,
            size,
            socket: Some(PathBuf::from(socket)),
            job,
            polite,
        })
    }
}

/// Read the environment and connect the matching bootstrap.
pub fn from_env() -> Result<(JobEnv, Box<dyn Bootstrap>)> {
    let env = JobEnv::read()?;
    let boot: Box<dyn Bootstrap> = match &env.socket {
        None => Box::new(SingleRank),
        Some(path) => Box::new(UnixBootstrap::connect(path, env.rank, env.size)?),
    };
    Ok((env, boot))
}
