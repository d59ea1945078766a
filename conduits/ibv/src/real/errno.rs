//! The errno a verb reports: verbs that return a pointer set `errno`;
//! verbs that return an `int` return the errno itself (rdma-core's
//! providers), or `-1` with `errno` set, or a negated errno (older
//! providers). All three read as one positive errno here.

/// The calling thread's `errno` (`EIO` if it is 0: the verb failed
/// without saying why).
pub(crate) fn last_errno() -> i32 {
    match std::io::Error::last_os_error().raw_os_error() {
        Some(e) if e > 0 => e,
        _ => libc::EIO,
    }
}

/// The errno behind a verb's non-zero return `rc`.
pub(crate) fn rc_errno(rc: i32) -> i32 {
    match rc {
        -1 => last_errno(),
        rc if rc < 0 => rc.checked_neg().unwrap_or(libc::EIO),
        rc => rc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_conventions_read_as_one_errno() {
        assert_eq!(rc_errno(libc::ENOMEM), libc::ENOMEM);
        assert_eq!(rc_errno(-libc::EINVAL), libc::EINVAL);
        // SAFETY: errno is thread-local; setting it is what a failing
        // verb does.
        unsafe { *libc::__errno_location() = libc::EBUSY };
        assert_eq!(rc_errno(-1), libc::EBUSY);
        assert_eq!(rc_errno(i32::MIN), libc::EIO);
    }
}
