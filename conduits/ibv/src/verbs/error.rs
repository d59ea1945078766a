//! Errors of the verbs layer.

use std::fmt;

/// A verbs call's result.
pub type VerbsResult<T> = std::result::Result<T, VerbsError>;

/// What a verbs call reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerbsError {
    /// No RDMA device here: the list is empty, or the system has no
    /// RDMA support (`ENOSYS`), or the chosen device or port is absent.
    NoDevice {
        /// Why, for the user: what was looked for and what was found.
        why: String,
    },
    /// The library could not be loaded (real backend).
    Library {
        /// Which library, where it was looked for, and what to install.
        why: String,
    },
    /// A verb failed with an errno (`EINVAL`, `ENOMEM`, ...).
    Call {
        /// The verb (`"ibv_post_send"`).
        verb: &'static str,
        /// The errno it returned.
        errno: i32,
        /// What was asked, for the message.
        detail: String,
    },
    /// A completion queue overran: completions were lost, and the CQ
    /// (and its QPs) are in error.
    CqOverrun {
        /// The CQ's depth.
        depth: u32,
    },
}

impl VerbsError {
    /// A failed verb.
    pub fn call(verb: &'static str, errno: i32, detail: impl Into<String>) -> Self {
        VerbsError::Call {
            verb,
            errno,
            detail: detail.into(),
        }
    }

    /// A post that failed because its queue is full: retry after polling.
    pub fn is_queue_full(&self) -> bool {
        matches!(self, VerbsError::Call { errno, .. } if *errno == libc::ENOMEM)
    }
}

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerbsError::NoDevice { why } => write!(f, "no RDMA device: {why}"),
            VerbsError::Library { why } => f.write_str(why),
            VerbsError::Call {
                verb,
                errno,
                detail,
            } => write!(
                f,
                "{verb} failed: {} ({detail})",
                std::io::Error::from_raw_os_error(*errno)
            ),
            VerbsError::CqOverrun { depth } => write!(
                f,
                "completion queue of {depth} entries overran: completions were lost"
            ),
        }
    }
}

impl std::error::Error for VerbsError {}
