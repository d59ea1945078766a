//! Bootstrap: the out-of-band collectives a job uses to set itself up
//! (exchanging segment names and sizes, endpoint addresses) before and
//! beside the conduit.
//!
//! [`allgather`](Bootstrap::allgather) is the one required operation;
//! barrier and broadcast are provided on top of it.
//!
//! ```
//! use rgex_core::bootstrap::{Bootstrap, SingleRank};
//! let b = SingleRank;
//! assert_eq!(b.name(), "single");
//! assert_eq!(b.allgather(b"x").unwrap(), vec![b"x".to_vec()]);
//! assert_eq!(b.broadcast(0, b"hi").unwrap(), b"hi".to_vec());
//! b.barrier().unwrap();
//! ```

mod env;
pub mod protocol;
mod single;
mod unix;

pub use env::{from_env, JobEnv};
pub use single::SingleRank;
pub use unix::{announce_leaving, announce_leaving_at_exit, request_job_exit, UnixBootstrap};

use crate::{Error, Result};

/// Out-of-band collectives over all ranks of the job.
pub trait Bootstrap: Send + Sync {
    /// What carries it (`"single"`, `"rgex-run"`, `"pmix"`), for messages
    /// and tests.
    fn name(&self) -> &'static str;

    /// This process's rank.
    fn rank(&self) -> u32;

    /// Ranks in the job.
    fn size(&self) -> u32;

    /// Every rank contributes `mine`; all get every contribution, in rank
    /// order. Contributions may differ in length.
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// Wait until every rank has arrived.
    fn barrier(&self) -> Result<()> {
        self.allgather(&[]).map(|_| ())
    }

    /// `root`'s `data` to every rank (other ranks' `data` is ignored).
    fn broadcast(&self, root: u32, data: &[u8]) -> Result<Vec<u8>> {
        if root >= self.size() {
            return Err(Error::RankOutOfRange {
                rank: root,
                size: self.size(),
            });
        }
        let mine = if self.rank() == root { data } else { &[] };
        let mut all = self.allgather(mine)?;
        Ok(std::mem::take(&mut all[root as usize]))
    }
}
