//! A wake fd that processes on this node can write: a Unix datagram
//! socket bound to an abstract name (`\0rgex-wake<NAME>`, no file to
//! clean up: the name goes with the socket). Its owner polls it
//! alongside other fds; a peer rings it by sending one empty datagram
//! to the name ([`Ringer::ring`]).
//!
//! smp's doorbell is a futex, which `poll(2)` cannot wait on with a
//! network's completion fd. A progress thread that must sleep on both
//! (the kit's `ShmBypass` in a job that mixes node-local and remote
//! peers) asks smp to listen on this socket instead
//! ([`SmpConduit::idle_wait_with`](crate::SmpConduit::idle_wait_with)):
//! the doorbell then carries a `listening` flag, and a sender whose claim
//! finds the receiver asleep rings the socket as well as the futex (see
//! [`bell`](crate::bell)). The software verbs device of rgex-ibv wakes
//! its peers the same way.
//!
//! Datagrams to a socket whose queue is full are refused (`EAGAIN`): the
//! socket is readable then, which is all a ring has to achieve. A name
//! nobody is bound to (the owner is gone) refuses too (`ECONNREFUSED`):
//! nobody to wake. Neither is an error. The peers must share the network
//! namespace (abstract names live there); processes that share a node's
//! memory but not its network namespace find no name, and their wakes
//! are lost: the sleeper's bounded timeout is then the safety net.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The abstract address of `name` (its leading NUL, then the name), and
/// the address's length; `None` if the name does not fit.
fn address(name: &str) -> Option<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let full = format!("rgex-wake{name}");
    let bytes = full.as_bytes();
    // Byte 0 stays NUL: the abstract namespace.
    if bytes.len() + 1 > addr.sun_path.len() {
        return None;
    }
    for (d, &b) in addr.sun_path[1..].iter_mut().zip(bytes) {
        *d = b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + bytes.len();
    Some((addr, len as libc::socklen_t))
}

/// A new non-blocking, close-on-exec datagram socket.
fn socket() -> std::io::Result<OwnedFd> {
    // SAFETY: socket takes no pointers; a non-negative result is a new
    // fd this process owns.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The owner's end: bound to the name, polled, drained.
#[derive(Debug)]
pub struct WakeSocket(OwnedFd);

impl WakeSocket {
    /// Bind a socket to `name` (unique on the node while it lives: a
    /// shared-memory object's name, say). An error if the name is too
    /// long or taken.
    pub fn bind(name: &str) -> std::io::Result<Self> {
        let (addr, len) = address(name).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the wake socket's name {name:?} is longer than a socket address holds"),
            )
        })?;
        let fd = socket()?;
        // SAFETY: a live socket and an address of `len` bytes that lives
        // across the call.
        let ret = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        };
        if ret != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(WakeSocket(fd))
    }

    /// The fd to poll: readable once rung, until [`drain`](Self::drain)ed.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Take every ring so far.
    pub fn drain(&self) {
        let mut byte = 0u8;
        // Bounded: the queue holds finitely many datagrams, and a ring
        // that lands meanwhile is taken too (harmless: see the callers).
        for _ in 0..1024 {
            // SAFETY: reads at most one byte into a live local from our
            // socket (non-blocking: EAGAIN once empty).
            let n = unsafe {
                libc::recv(
                    self.fd(),
                    (&mut byte as *mut u8).cast(),
                    1,
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                break;
            }
        }
    }
}

/// A sender's end: one unbound socket that rings any name.
#[derive(Debug)]
pub struct Ringer(OwnedFd);

impl Ringer {
    /// A socket to ring with.
    pub fn new() -> std::io::Result<Self> {
        socket().map(Ringer)
    }

    /// Make the socket bound to `name` readable: one empty datagram. A
    /// full queue or a name nobody holds is ignored (see the module
    /// docs).
    pub fn ring(&self, name: &str) {
        let Some((addr, len)) = address(name) else {
            return;
        };
        // SAFETY: a live socket, no payload (a null pointer of length 0),
        // and an address of `len` bytes that lives across the call.
        // MSG_NOSIGNAL: never SIGPIPE.
        unsafe {
            libc::sendto(
                self.0.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd; a zero timeout.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn a_ring_makes_the_socket_readable_until_drained() {
        let name = format!("/unit-{}", std::process::id());
        let sock = WakeSocket::bind(&name).unwrap();
        assert!(!readable(sock.fd()), "not rung yet");
        let ringer = Ringer::new().unwrap();
        ringer.ring(&name);
        ringer.ring(&name);
        assert!(readable(sock.fd()), "rung");
        sock.drain();
        assert!(!readable(sock.fd()), "drained");
        assert!(
            WakeSocket::bind(&name).is_err(),
            "a name is held by one socket"
        );
        drop(sock);
        ringer.ring(&name); // nobody holds it: ignored
        let long = "x".repeat(200);
        assert!(WakeSocket::bind(&long).is_err(), "too long for an address");
    }
}
