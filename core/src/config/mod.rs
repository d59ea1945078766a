//! Settings: every `RGEX_` environment variable rgex reads, in one
//! registry ([`VARS`]), and the environment read once
//! ([`Environment::capture`], which `rgex::init` calls) into a snapshot
//! each layer's typed configuration is read from.
//!
//! A layer never asks the process environment itself: it names the
//! variable by its registry entry ([`vars`]) and reads the snapshot it is
//! given, so a variable nobody registered cannot be read, and one set but
//! in no entry is found ([`Environment::unknown`]) and reported with the
//! closest name that is.
//!
//! ```
//! use rgex_core::config::{vars, Environment};
//! let env = Environment::from_pairs([("RGEX_SEGMENT_SIZE", "64M"), ("RGEX_SEGMNET_SIZE", "1G")]);
//! assert_eq!(env.size(&vars::SEGMENT_SIZE, 32 << 20).unwrap(), 64 << 20);
//! let unknown = env.unknown();
//! assert_eq!(unknown.len(), 1);
//! assert_eq!(unknown[0].closest.name, "RGEX_SEGMENT_SIZE");
//! ```

mod closest;
mod environment;
mod registry;
mod size;
pub mod vars;

pub use closest::{closest, edit_distance};
pub use environment::{Environment, Unknown};
pub use registry::{lookup, Fallback, Var};
pub use size::parse_size;
pub use vars::VARS;
