//! libfabric-sys: raw bindings to libfabric, loaded at run time.
//!
//! Nothing here needs libfabric to build, and nothing links it: a
//! program that never asks for it never loads it.
//!
//! - Types and constants are in `bindings.rs`, generated once by bindgen
//!   from the installed headers (`gen/wrapper.h`, by the generator
//!   `tools/bindings-gen` shared with pmix-sys, run by `regenerate.sh`)
//!   and committed; the generator's allowlist for libfabric names
//!   exactly what the ofi conduit uses. `ci/bindings.sh` fails when the committed file differs
//!   from what the installed headers give.
//! - The exported calls (`fi_getinfo`, `fi_fabric`, `fi_freeinfo`,
//!   `fi_dupinfo`, `fi_strerror`, `fi_version`) are methods of
//!   [`Library`], which `dlopen`s `libfabric.so.1` (or the file
//!   `RGEX_OFI_LIBRARY` names) on first use and resolves each call at the
//!   symbol version matching the bindings' struct layouts.
//! - The headers' `static inline` calls (`fi_domain`, `fi_send`,
//!   `fi_cq_read`, `fi_close`, ...) are Rust functions of the same names
//!   that jump through the objects' ops tables, as the headers do.
//! - Macros bindgen cannot evaluate are spelled here ([`FI_ADDR_UNSPEC`],
//!   [`FI_ADDR_NOTAVAIL`], [`FI_KEY_NOTAVAIL`], [`FI_VERSION`]).
//!
//! Nothing here is safe to call without reading the libfabric man pages;
//! the safe wrapper lives in the `rgex-ofi` crate.

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
mod calls;
mod library;

pub use bindings::*;
pub use calls::*;
pub use library::{Library, FI_VERSION, MIN_VERSION, SPEC, SYMBOLS};
pub use rgex_dl::LoadError;

/// `FI_ADDR_UNSPEC`: no address (receive from anyone).
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;
/// `FI_ADDR_NOTAVAIL`: an address that could not be resolved.
pub const FI_ADDR_NOTAVAIL: fi_addr_t = u64::MAX;
/// `FI_KEY_NOTAVAIL`: no memory-registration key.
pub const FI_KEY_NOTAVAIL: u64 = u64::MAX;

/// The API version of the headers these bindings were generated from.
pub const HEADER_VERSION: u32 = FI_VERSION(FI_MAJOR_VERSION as u32, FI_MINOR_VERSION as u32);
