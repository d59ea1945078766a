//! libfabric's `static inline` calls, in Rust.
//!
//! Most of libfabric's API has no symbol in `libfabric.so`: each call is a
//! `static inline` function of the headers that jumps through an ops
//! table hanging off the object (`ep->msg->send(...)`,
//! `cq->ops->read(...)`, `fid->ops->close(...)`). These functions do the
//! same, one file per header, with the same names and parameters, so they
//! compile to the same indirect call. One difference: an entry a provider
//! left null returns `-FI_ENOSYS` instead of jumping to address 0 (C
//! checks only where the header uses `FI_CHECK_OP`; these check always,
//! at the cost of one predictable branch).
//!
//! Every function is `unsafe` with the C call's contract: live objects of
//! the right kind, and buffers valid as the man page says.

mod atomic;
mod cm;
mod domain;
mod endpoint;
mod eq;
mod fabric;
mod rma;

pub use atomic::*;
pub use cm::*;
pub use domain::*;
pub use endpoint::*;
pub use eq::*;
pub use fabric::*;
pub use rma::*;

/// The entry `$field` of the ops table `$table` (a raw pointer to a
/// bindgen struct of `Option<fn>` fields), or an early return of
/// `-FI_ENOSYS` as `$ret` when the provider left it null. Must be used
/// inside an `unsafe` block whose SAFETY covers reading `*$table`.
macro_rules! op {
    ($table:expr, $field:ident, $ret:ty) => {
        match (*$table).$field {
            Some(f) => f,
            None => return -(crate::FI_ENOSYS as $ret),
        }
    };
}
pub(crate) use op;
