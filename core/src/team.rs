//! Teams: ordered subsets of the job's ranks, with their own numbering.

use crate::{Error, Rank, Result};
use std::sync::Arc;

/// The members of a team: an ordered set of ranks. Team ranks are `0..size()`; [`Membership::world_rank`]
/// and [`Membership::team_rank`] translate between team and job numbering.
///
/// ```
/// use rgex_core::{team::Membership, Rank};
/// let world = Membership::world(4, Rank(2));
/// assert_eq!(world.size(), 4);
/// assert_eq!(world.my_rank(), 2);
/// assert_eq!(world.world_rank(3).unwrap(), Rank(3));
/// assert!(world.world_rank(4).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    members: Arc<[Rank]>,
    me: u32,
}

impl Membership {
    /// The team of every rank of a job of `size`, seen from `me`.
    pub fn world(size: u32, me: Rank) -> Self {
        Membership {
            members: (0..size).map(Rank).collect(),
            me: me.0,
        }
    }

    /// A team of `members` (job ranks, in team order), seen from the member
    /// at team index `me`.
    pub fn from_members(members: Vec<Rank>, me: u32) -> Result<Self> {
        if me as usize >= members.len() {
            return Err(Error::RankOutOfRange {
                rank: me,
                size: members.len() as u32,
            });
        }
        Ok(Membership {
            members: members.into(),
            me,
        })
    }

    /// Ranks in the team.
    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// This process's team rank.
    pub fn my_rank(&self) -> u32 {
        self.me
    }

    /// The job rank of team rank `r`.
    pub fn world_rank(&self, r: u32) -> Result<Rank> {
        self.members
            .get(r as usize)
            .copied()
            .ok_or(Error::RankOutOfRange {
                rank: r,
                size: self.size(),
            })
    }

    /// The team rank of job rank `r`, if it is a member.
    pub fn team_rank(&self, r: Rank) -> Option<u32> {
        self.members.iter().position(|&m| m == r).map(|i| i as u32)
    }

    /// The members in team order.
    pub fn members(&self) -> &[Rank] {
        &self.members
    }
}
