//! Lines built in a fixed buffer and written with `write(2)` alone: what
//! a signal handler may print. Nothing here allocates, takes a lock or
//! goes through `std::fmt`; `write(2)` is async-signal-safe (POSIX lists
//! it), and every other step is plain stores into the buffer.
//!
//! ```
//! use rgex_core::raw_line::RawLine;
//! let mut l = RawLine::new(2, b"[rank 0] ");
//! l.put(b"blocked for ").secs(1_250_000_000).put(b" s"); // "[rank 0] blocked for 1.25 s"
//! assert!(l.text().ends_with(b"blocked for 1.25 s"));
//! l.end(); // written to fd 2 with its newline, in one write
//! ```

use std::os::fd::RawFd;

/// The longest line, prefix and newline included: shorter than
/// `PIPE_BUF` (4096), so one `write(2)` to a pipe (the launcher's, which
/// forwards the rank's lines) is never mixed with another thread's.
pub const LINE_MAX: usize = 512;

/// The longest prefix a line may have (a rank's `[rank 12345] `).
pub const PREFIX_MAX: usize = 32;

/// One line being built, for file descriptor `fd`; each line starts with
/// the prefix. Text past [`LINE_MAX`] is cut (the line still ends).
#[derive(Clone, Debug)]
pub struct RawLine {
    fd: RawFd,
    buf: [u8; LINE_MAX],
    len: usize,
    prefix_len: usize,
}

impl RawLine {
    /// A line for `fd` that starts with `prefix` (cut to [`PREFIX_MAX`]
    /// bytes), as does each line after it.
    pub fn new(fd: RawFd, prefix: &[u8]) -> Self {
        let mut l = RawLine {
            fd,
            buf: [0; LINE_MAX],
            len: 0,
            prefix_len: 0,
        };
        l.put(&prefix[..prefix.len().min(PREFIX_MAX)]);
        l.prefix_len = l.len;
        l
    }

    /// Append `bytes` (as much as fits, leaving room for the newline).
    pub fn put(&mut self, bytes: &[u8]) -> &mut Self {
        let room = LINE_MAX - 1 - self.len;
        let n = bytes.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
        self
    }

    /// Append `n` in decimal.
    pub fn num(&mut self, mut n: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.put(&digits[i..])
    }

    /// Append `n` in hexadecimal, with `0x`.
    pub fn hex(&mut self, mut n: u64) -> &mut Self {
        let mut digits = [0u8; 16];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdef"[(n & 0xf) as usize];
            n >>= 4;
            if n == 0 {
                break;
            }
        }
        self.put(b"0x").put(&digits[i..])
    }

    /// Append a duration of `ns` nanoseconds as seconds with two decimals
    /// (`4.98`).
    pub fn secs(&mut self, ns: u64) -> &mut Self {
        let centis = ns / 10_000_000;
        self.num(centis / 100).put(b".");
        let frac = centis % 100;
        if frac < 10 {
            self.put(b"0");
        }
        self.num(frac)
    }

    /// Whether the line holds its prefix alone.
    pub fn is_blank(&self) -> bool {
        self.len == self.prefix_len
    }

    /// The line so far, prefix included, without its newline.
    pub fn text(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// End the line: write it with its newline in one `write(2)` (again
    /// after an interruption or a partial write), then start the next
    /// with the prefix. A write that fails is dropped: there is no one to
    /// tell.
    pub fn end(&mut self) {
        self.buf[self.len] = b'\n';
        write_all(self.fd, &self.buf[..self.len + 1]);
        self.len = self.prefix_len;
    }
}

/// Write all of `bytes` to `fd` with `write(2)`, retrying after `EINTR`
/// and partial writes; give up at any other error.
pub fn write_all(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is valid for reads of its length; write(2) only
        // reads it, and is async-signal-safe.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_times() {
        let mut l = RawLine::new(-1, b"[rank 3] ");
        l.num(0).put(b" ").num(18_446_744_073_709_551_615).put(b" ");
        l.hex(0).put(b" ").hex(0xdead_beef).put(b" ");
        l.secs(4_987_000_000).put(b" ").secs(50_000_000);
        assert_eq!(
            std::str::from_utf8(l.text()).unwrap(),
            "[rank 3] 0 18446744073709551615 0x0 0xdeadbeef 4.98 0.05"
        );
        l.end(); // fd -1: the write fails, silently
        assert_eq!(l.text(), b"[rank 3] ");
    }

    #[test]
    fn long_text_is_cut_and_the_line_still_ends() {
        let mut l = RawLine::new(-1, &[b'p'; 40]);
        assert_eq!(l.text().len(), PREFIX_MAX);
        l.put(&[b'x'; 2 * LINE_MAX]);
        assert_eq!(l.text().len(), LINE_MAX - 1);
    }
}
