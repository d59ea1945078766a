//! What a client handler may return: nothing, or a `Result` whose error
//! the receiving endpoint reports (never drops).
//!
//! A handler registered with [`HandlerTable::register`] or
//! [`register_at`](crate::HandlerTable::register_at) returns `()` or
//! `Result<(), E>` for any `E: Display`. An `Err` is reported by the
//! endpoint that ran the handler, as [`Error::HandlerFailed`] naming the
//! handler, its index, the sender's rank and the error:
//! - counted ([`Endpoint::handler_errors`](crate::Endpoint::handler_errors)),
//! - logged as a `tracing` warning, which `rgex::init`'s subscriber prints
//!   on stderr (the first [`MALFORMED_PRINTED`](crate::MALFORMED_PRINTED)
//!   of the endpoint; the rest are counted only),
//! - and returned by a later [`Endpoint::poll`](crate::Endpoint::poll) of
//!   that rank (the oldest 64 not yet returned are kept), once each.
//!
//! The sender is not told: a handler's failure is the receiver's to
//! handle (reply with an error code when the sender must know).
//!
//! [`Error::HandlerFailed`]: rgex_core::Error::HandlerFailed
//! [`HandlerTable::register`]: crate::HandlerTable::register

use std::fmt::Display;

/// A handler's return type: `()` or `Result<(), E: Display>`.
///
/// ```
/// use rgex_endpoint::HandlerTable;
/// let t = HandlerTable::new();
/// t.register("plain", |_tok, _msg| {}).unwrap();
/// t.register("checked", |_tok, msg| {
///     if msg.args().is_empty() {
///         return Err("wants an argument");
///     }
///     Ok(())
/// })
/// .unwrap();
/// ```
pub trait HandlerOutcome {
    /// The error's text if the handler failed, else `None`.
    fn failure(self) -> Option<String>;
}

impl HandlerOutcome for () {
    #[inline(always)]
    fn failure(self) -> Option<String> {
        None
    }
}

impl<E: Display> HandlerOutcome for Result<(), E> {
    #[inline(always)]
    fn failure(self) -> Option<String> {
        self.err().map(|e| e.to_string())
    }
}
