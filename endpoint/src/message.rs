//! What a handler receives besides its token.

use rgex_core::{Category, Delivery};

/// The arguments and payload of an incoming active message.
///
/// Valid only during the handler: a Medium payload lives in a buffer rgex
/// reuses as soon as the handler returns (copy it out to keep it).
#[derive(Debug)]
pub struct Message<'a> {
    pub(crate) d: &'a Delivery<'a>,
}

impl<'a> Message<'a> {
    /// Short, Medium or Long.
    pub fn category(&self) -> Category {
        self.d.category
    }

    /// The arguments (0 to 16).
    pub fn args(&self) -> &'a [u32] {
        self.d.args
    }

    /// Argument `i`, or 0 if fewer were sent.
    pub fn arg(&self, i: usize) -> u32 {
        self.d.args.get(i).copied().unwrap_or(0)
    }

    /// The payload: empty for Short; for Long, the bytes as they landed in
    /// this rank's segment.
    pub fn payload(&self) -> &'a [u8] {
        self.d.payload
    }

    /// Long only: where the payload landed in this rank's segment.
    pub fn long_offset(&self) -> u64 {
        self.d.long_offset
    }
}
