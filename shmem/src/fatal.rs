//! Bad input: a message naming the PE, the call, the address or argument
//! and the limit, on stderr, then a non-zero exit of the job (rgex-run
//! ends every other rank when one fails).
//!
//! OpenSHMEM leaves most bad input undefined; rgex-shmem turns what it
//! can detect into this instead of a silent wrong result.

use std::fmt::Display;

/// The exit status of a job ended by bad input or a failed rgex call.
pub const STATUS: i32 = 1;

/// Report `why` for the call `what` on PE `pe` (`None` before init) and
/// end the process with [`STATUS`]. C's stdio buffers are flushed by the
/// exit, and rgex's exit hook tells the launcher this rank is leaving.
///
/// ```no_run
/// rgex_shmem::fatal::fatal(Some(0), "shmem_int_put", "PE 7 is out of range (0..2)");
/// ```
pub fn fatal(pe: Option<u32>, what: &str, why: impl Display) -> ! {
    use std::io::Write;
    // Before init, the launcher's word for this process's rank.
    let line = match pe.or_else(|| rgex::launcher_rank().ok()) {
        Some(pe) => format!("rgex-shmem: PE {pe}: {what}: {why}\n"),
        None => format!("rgex-shmem: {what}: {why}\n"),
    };
    // One write: the launcher may end this process as soon as another
    // PE fails, and a line written in pieces would be cut.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    std::process::exit(STATUS)
}

/// Unwrap an rgex result, or [`fatal`] naming the call and rgex's error
/// (which names the rank, the address and the limit).
pub trait OrDie<T> {
    /// The value, or the end of the job.
    fn or_die(self, pe: u32, what: &str) -> T;
}

impl<T> OrDie<T> for rgex::Result<T> {
    #[inline]
    fn or_die(self, pe: u32, what: &str) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fatal(Some(pe), what, e),
        }
    }
}
