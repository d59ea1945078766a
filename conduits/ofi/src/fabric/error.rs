//! Errors of libfabric calls: the operation, the provider and the text
//! `fi_strerror` gives for the code.

use libfabric_sys::{self as sys, Library};
use rgex_core::Error;
use std::fmt;
use std::sync::Arc;

/// A libfabric call that failed.
///
/// ```
/// use rgex_ofi::fabric::FiError;
/// let e = FiError::new(11, "fi_send to rank 1", "tcp;ofi_rxm".into());
/// assert!(e.is_again());
/// assert!(e.to_string().starts_with("fi_send to rank 1 (libfabric provider tcp;ofi_rxm): "));
/// ```
#[derive(Clone, Debug)]
pub struct FiError {
    /// The libfabric error number, positive (`FI_EAGAIN`, `FI_EINVAL`, ...).
    pub code: i32,
    /// What was being done, with names and sizes.
    pub op: String,
    /// The provider that refused (`tcp;ofi_rxm`, `sockets`, `shm`, ...).
    pub provider: Arc<str>,
}

impl FiError {
    /// An error for code `code` (either sign) from `op` on `provider`.
    pub fn new(code: i64, op: impl Into<String>, provider: Arc<str>) -> Self {
        FiError {
            code: code.unsigned_abs().min(i32::MAX as u64) as i32,
            op: op.into(),
            provider,
        }
    }

    /// True for `FI_EAGAIN`: a queue is full, retry after progress.
    pub fn is_again(&self) -> bool {
        self.code == sys::FI_EAGAIN
    }

    /// `fi_strerror`'s text for this code.
    pub fn text(&self) -> String {
        strerror(self.code)
    }
}

/// `fi_strerror(code)` as a `String` (either sign of `code`); a generic
/// text when libfabric is not loaded (an error from loading it).
pub fn strerror(code: i32) -> String {
    match Library::loaded() {
        Some(lib) => lib.fi_strerror(code),
        None => format!("libfabric error {code}"),
    }
}

impl fmt::Display for FiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (libfabric provider {}): {} (error {})",
            self.op,
            self.provider,
            self.text(),
            self.code
        )
    }
}

impl std::error::Error for FiError {}

impl From<FiError> for Error {
    fn from(e: FiError) -> Self {
        let kind = match e.code {
            sys::FI_EAGAIN => std::io::ErrorKind::WouldBlock,
            sys::FI_ECONNREFUSED => std::io::ErrorKind::ConnectionRefused,
            sys::FI_ECONNRESET => std::io::ErrorKind::ConnectionReset,
            sys::FI_ECONNABORTED => std::io::ErrorKind::ConnectionAborted,
            sys::FI_ETIMEDOUT => std::io::ErrorKind::TimedOut,
            sys::FI_ENOMEM => std::io::ErrorKind::OutOfMemory,
            sys::FI_EINVAL => std::io::ErrorKind::InvalidInput,
            _ => std::io::ErrorKind::Other,
        };
        Error::Os {
            op: format!("{} (libfabric provider {})", e.op, e.provider),
            source: std::io::Error::new(kind, format!("{} (error {})", e.text(), e.code)),
        }
    }
}

/// `Ok(())` for a non-negative return code, else the error for `op`.
#[inline]
pub(crate) fn check(
    ret: i64,
    op: impl FnOnce() -> String,
    provider: &Arc<str>,
) -> Result<(), FiError> {
    if ret >= 0 {
        Ok(())
    } else {
        Err(FiError::new(ret, op(), provider.clone()))
    }
}
