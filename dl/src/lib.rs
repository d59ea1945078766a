//! rgex-dl: a system library loaded at run time.
//!
//! The network conduits and bootstraps (libfabric, libpmix, libibverbs)
//! do not link their libraries: each is opened with `dlopen` when the
//! conduit or bootstrap that needs it is chosen, and its exported calls
//! are resolved by name and symbol version. A program built once runs on
//! machines with or without those libraries, a program that never
//! chooses them never loads them, and a machine without one gets an
//! error naming the file, where the loader looked, and the packages that
//! provide it.
//!
//! ```
//! let spec = rgex_dl::Spec {
//!     soname: "librgex-example-missing.so.1",
//!     env: "RGEX_EXAMPLE_LIBRARY",
//!     what: "the example library",
//!     packages: "Debian/Ubuntu package libexample1, RHEL/Fedora package libexample",
//! };
//! let err = rgex_dl::Library::open(&spec).unwrap_err();
//! assert!(err.to_string().contains("libexample1"));
//! ```

mod error;
mod library;
mod system;

pub use error::LoadError;
pub use library::{is_mapped, Library, Spec};
pub use system::System;
