//! A post's error, as the kit sees it ([`PostError`]).

use crate::verbs::VerbsError;
use rgex_core::{Error, Rank};
use rgex_net::PostError;
use std::fmt;

/// Why the ibv transport refused a post.
#[derive(Clone, Debug)]
pub enum IbvError {
    /// The QP's send queue (or the shared receive queue) is full: retry
    /// after progress (the kit's would-block).
    Again {
        /// The peer whose queue is full (this rank for receives).
        peer: Rank,
    },
    /// The operation cannot reach `peer`: its QP failed earlier, or the
    /// post itself failed.
    Peer {
        /// The operation (`"RDMA write"`).
        what: &'static str,
        /// This rank.
        from: Rank,
        /// The peer.
        peer: Rank,
        /// What verbs reported.
        why: String,
    },
    /// A verb failed with no peer to blame (a receive, a CQ overrun).
    Verbs {
        /// What was being done.
        what: &'static str,
        /// This rank.
        from: Rank,
        /// The verbs error.
        err: VerbsError,
    },
}

impl PostError for IbvError {
    #[inline]
    fn is_again(&self) -> bool {
        matches!(self, IbvError::Again { .. })
    }
}

impl fmt::Display for IbvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IbvError::Again { peer } => {
                write!(f, "the verbs send queue towards {peer} is full")
            }
            IbvError::Peer {
                what, peer, why, ..
            } => write!(f, "{what} to {peer} failed: {why}"),
            IbvError::Verbs { what, from, err } => write!(f, "{what} on {from}: {err}"),
        }
    }
}

impl From<IbvError> for Error {
    fn from(e: IbvError) -> Error {
        match e {
            IbvError::Again { peer } => Error::WouldBlock {
                peer,
                resource: "the verbs send queue",
            },
            IbvError::Peer {
                what,
                from,
                peer,
                why,
            } => Error::PeerUnreachable {
                what: what.into(),
                from,
                rank: peer,
                why,
            },
            IbvError::Verbs { what, from, err } => {
                Error::Failed(format!("rgex-ibv: {what} on {from}: {err}"))
            }
        }
    }
}
