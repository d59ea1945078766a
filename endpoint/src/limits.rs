//! The least upper bounds of the AM payload limits over every peer
//! (GASNet-EX's `gex_AM_LUBRequestMedium` and its kin): one size a client
//! can give a buffer that fits a message to anyone. Asked of the conduit
//! once per peer and argument count when the endpoint is made: the limits
//! are fixed for the job.

use rgex_core::{Conduit, Rank, MAX_ARGS};

/// For each argument count, the largest Medium and Long payload every
/// peer (this rank included) accepts.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    medium: [usize; MAX_ARGS + 1],
    long: [usize; MAX_ARGS + 1],
}

impl Limits {
    /// The minimum over `conduit`'s peers of `max_medium` and `max_long`,
    /// for every argument count.
    pub(crate) fn over(conduit: &dyn Conduit) -> Self {
        let mut medium = [usize::MAX; MAX_ARGS + 1];
        let mut long = [usize::MAX; MAX_ARGS + 1];
        for p in 0..conduit.size() {
            for nargs in 0..=MAX_ARGS {
                medium[nargs] = medium[nargs].min(conduit.max_medium(Rank(p), nargs));
                long[nargs] = long[nargs].min(conduit.max_long(Rank(p), nargs));
            }
        }
        Limits { medium, long }
    }

    /// The least upper bound of Medium payloads with `nargs` arguments
    /// (`nargs` beyond [`MAX_ARGS`] is clamped: no message carries more).
    #[inline]
    pub(crate) fn medium(&self, nargs: usize) -> usize {
        self.medium[nargs.min(MAX_ARGS)]
    }

    /// The least upper bound of Long payloads with `nargs` arguments.
    #[inline]
    pub(crate) fn long(&self, nargs: usize) -> usize {
        self.long[nargs.min(MAX_ARGS)]
    }
}
