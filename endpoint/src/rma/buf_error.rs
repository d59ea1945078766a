//! The error of a non-blocking operation that was handed an owned buffer:
//! the buffer comes back with it, so a failed start loses nothing.

use rgex_core::Error;

/// Why a non-blocking put or get that took an owned buffer
/// ([`Endpoint::put_nb_defer`](crate::Endpoint::put_nb_defer),
/// [`Endpoint::get_nb`](crate::Endpoint::get_nb)) did not start, with
/// the buffer it was given (untouched by the transport: nothing was
/// started). Converts into [`Error`] (dropping the buffer), so `?` works
/// in functions returning [`rgex_core::Result`].
///
/// ```no_run
/// # fn demo(ep: &rgex_endpoint::Endpoint) {
/// use rgex_core::{Flags, GlobalAddr, Rank};
/// let buf = vec![0u8; 64];
/// match ep.get_nb(buf, GlobalAddr::new(Rank(9), 0), Flags::empty()) {
///     Ok(pending) => drop(pending.wait()),
///     Err(e) => {
///         let (error, buf) = e.into_parts();
///         eprintln!("{error}; the {} bytes are ours again", buf.len());
///     }
/// }
/// # }
/// ```
pub struct BufError<B> {
    /// What went wrong.
    pub error: Error,
    /// The buffer the operation was given.
    pub buffer: B,
}

impl<B> BufError<B> {
    /// The error and the buffer.
    pub fn into_parts(self) -> (Error, B) {
        (self.error, self.buffer)
    }

    /// What went wrong.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The buffer back, the error dropped.
    pub fn into_buffer(self) -> B {
        self.buffer
    }
}

impl<B> std::fmt::Debug for BufError<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<B> std::fmt::Display for BufError<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

impl<B> std::error::Error for BufError<B> {}

impl<B> From<BufError<B>> for Error {
    fn from(e: BufError<B>) -> Error {
        e.error
    }
}
