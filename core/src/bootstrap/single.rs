//! The bootstrap of a job of one rank (a program run without a launcher).

use super::Bootstrap;
use crate::Result;

/// A job of one rank: every collective is trivial.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleRank;

impl Bootstrap for SingleRank {
    fn name(&self) -> &'static str {
        "single"
    }

    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![mine.to_vec()])
    }
}
