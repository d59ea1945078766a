//! rgex's bootstrap through PMIx, for jobs started by a cluster launcher:
//! `srun --mpi=pmix`, `mpirun` (Open MPI 4+) or `prterun`. rgex ships no
//! cluster launcher of its own; [`from_env`] finds the PMIx server the
//! launcher started and gives the job's rank, size and namespace, and
//! [`PmixBootstrap`] runs rgex's out-of-band collectives (allgather,
//! barrier, broadcast) as PMIx put / commit / fence / get.
//!
//! ```no_run
//! use rgex_core::Bootstrap;
//! // Under `mpirun -n 4 prog`: Some((env, boot)) with env.size == 4.
//! if let Some((env, boot)) = rgex_pmix::from_env()? {
//!     let all = boot.allgather(&env.rank.to_le_bytes())?;
//!     assert_eq!(all.len(), env.size as usize);
//! }
//! # Ok::<(), rgex_core::Error>(())
//! ```

mod bootstrap;
mod client;

pub use bootstrap::{announced_rank, from_env, PmixBootstrap};
