//! pmix-sys: raw bindings to the PMIx client library, loaded at run time.
//!
//! Nothing here needs PMIx to build, and nothing links it: a program
//! that is not started by a PMIx launcher never loads it.
//!
//! - Types and constants are in `bindings.rs`, generated once by bindgen
//!   from the installed headers (`gen/wrapper.h`, by the generator
//!   `tools/bindings-gen` shared with libfabric-sys, run by
//!   `regenerate.sh`; PMIx 4.2 on the reference machine) and committed;
//!   the generator's allowlist for PMIx names exactly what the bootstrap
//!   uses. `ci/bindings.sh`
//!   fails when the committed file differs from what the installed
//!   headers give.
//! - The calls (`PMIx_Init`, `PMIx_Finalize`, `PMIx_Put`, `PMIx_Commit`,
//!   `PMIx_Fence`, `PMIx_Get`, `PMIx_Error_string`, `PMIx_Value_load`,
//!   `PMIx_Value_destruct`) are methods of [`Library`], which `dlopen`s
//!   `libpmix.so.2` (or the file `RGEX_PMIX_LIBRARY` names) on first use
//!   and checks `PMIx_Get_version` against [`MIN_VERSION`].
//!
//! Nothing here is safe to call without reading the PMIx standard; the safe
//! layer is the `rgex-pmix` crate.

#[allow(
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
mod bindings;
#[allow(non_snake_case)]
mod library;

pub use bindings::*;
pub use library::{parse_version, Library, MIN_VERSION, SPEC, SYMBOLS};
pub use rgex_dl::LoadError;

/// `PMIX_RANK_WILDCARD` (`UINT32_MAX - 1`, a macro bindgen cannot
/// evaluate): the whole namespace, for job-level keys.
pub const PMIX_RANK_WILDCARD: pmix_rank_t = u32::MAX - 1;

/// The (major, minor) of the headers these bindings were generated from.
pub const HEADER_VERSION: (u32, u32) = (PMIX_VERSION_MAJOR, PMIX_VERSION_MINOR);
