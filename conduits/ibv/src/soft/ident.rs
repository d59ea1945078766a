//! The soft device's port: its identity in the GID, the shared-memory
//! names of its QPs' rings, and whether a peer process still lives.

use crate::verbs::Gid;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The first four bytes of every soft device's GID on the shared-memory wire.
const GID_MAGIC: [u8; 4] = *b"rgxS";
/// ... and on the UDP wire.
const GID_MAGIC_UDP: [u8; 4] = *b"rgxU";
/// Prefix of the rings' names in `/dev/shm`.
const NAME_PREFIX: &str = "rgex-ibv-soft";

/// Who a soft device is: the user, the process and the context number
/// within it. Encoded in the port's GID, so that a peer given the GID
/// and a QP number finds that QP's ring. On the UDP wire the GID holds
/// the device's socket address instead of the user (a peer on another
/// host has no use for our uid), and the context number in 16 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ident {
    pub uid: u32,
    pub pid: u32,
    pub ctx: u32,
    /// The device's UDP socket, on the UDP wire.
    pub udp: Option<SocketAddrV4>,
}

impl Ident {
    /// This process's `ctx`-th device.
    pub fn local(ctx: u32) -> Self {
        // SAFETY: getuid and getpid have no preconditions and cannot fail.
        let (uid, pid) = unsafe { (libc::getuid(), libc::getpid()) };
        Ident {
            uid,
            pid: pid as u32,
            ctx,
            udp: None,
        }
    }

    /// The GID (big-endian fields): on the shared-memory wire magic, uid,
    /// pid, context; on the UDP wire magic, IPv4 address, port, context
    /// (16 bits), pid.
    pub fn gid(&self) -> Gid {
        let mut g = [0u8; 16];
        match self.udp {
            None => {
                g[..4].copy_from_slice(&GID_MAGIC);
                g[4..8].copy_from_slice(&self.uid.to_be_bytes());
                g[8..12].copy_from_slice(&self.pid.to_be_bytes());
                g[12..].copy_from_slice(&self.ctx.to_be_bytes());
            }
            Some(a) => {
                g[..4].copy_from_slice(&GID_MAGIC_UDP);
                g[4..8].copy_from_slice(&a.ip().octets());
                g[8..10].copy_from_slice(&a.port().to_be_bytes());
                g[10..12].copy_from_slice(&(self.ctx as u16).to_be_bytes());
                g[12..].copy_from_slice(&self.pid.to_be_bytes());
            }
        }
        g
    }

    /// The identity in a soft device's GID; `None` for any other GID.
    pub fn from_gid(g: &Gid) -> Option<Self> {
        let word = |i: usize| u32::from_be_bytes([g[i], g[i + 1], g[i + 2], g[i + 3]]);
        if g[..4] == GID_MAGIC_UDP {
            let ip = Ipv4Addr::new(g[4], g[5], g[6], g[7]);
            let port = u16::from_be_bytes([g[8], g[9]]);
            return Some(Ident {
                uid: 0,
                pid: word(12),
                ctx: u32::from(u16::from_be_bytes([g[10], g[11]])),
                udp: Some(SocketAddrV4::new(ip, port)),
            });
        }
        (g[..4] == GID_MAGIC).then(|| Ident {
            uid: word(4),
            pid: word(8),
            ctx: word(12),
            udp: None,
        })
    }

    /// A 16-bit LID for the port (never 0, which IB reserves).
    pub fn lid(&self) -> u16 {
        let h = self.pid.wrapping_mul(31).wrapping_add(self.ctx);
        ((h & 0x7fff) as u16) | 1
    }

    /// The name of the device's wake socket (see the `wait` module).
    pub fn wake_name(&self) -> String {
        format!("/{NAME_PREFIX}-{}-{}-{}", self.uid, self.pid, self.ctx)
    }

    /// The shared-memory name of QP `qpn`'s inbound ring.
    pub fn ring_name(&self, qpn: u32) -> String {
        format!(
            "/{NAME_PREFIX}-{}-{}-{}-{qpn}",
            self.uid, self.pid, self.ctx
        )
    }
}

/// Whether process `pid` still runs (a zombie does not).
pub(crate) fn pid_alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(p, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    // A process that exited but is not reaped yet still answers kill(0):
    // its state in /proc is 'Z'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_none_or(|state| state != 'Z' && state != 'X'),
        Err(_) => r == 0,
    }
}

/// Remove this user's rings left in `/dev/shm` by processes that died
/// before they unlinked them (a ring's name is normally removed as soon
/// as its peer maps it, or when its QP is destroyed).
pub(crate) fn sweep_stale(uid: u32) {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let mine = format!("{NAME_PREFIX}-{uid}-");
    for ent in dir.flatten() {
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(&mine) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !pid_alive(p)) {
            // Best effort: another process may be sweeping it too.
            let _ = rgex_smp::shm::unlink(&format!("/{name}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_round_trips_and_rejects_foreign() {
        let id = Ident {
            uid: 1000,
            pid: 4242,
            ctx: 7,
            udp: None,
        };
        assert_eq!(Ident::from_gid(&id.gid()), Some(id));
        let net = Ident {
            uid: 0,
            udp: Some(SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 2), 40123)),
            ..id
        };
        assert_eq!(Ident::from_gid(&net.gid()), Some(net));
        assert_ne!(net.gid(), id.gid());
        assert_eq!(Ident::from_gid(&[0xfe; 16]), None);
        assert_ne!(id.lid(), 0);
        assert!(id.ring_name(9).ends_with("-1000-4242-7-9"));
    }

    #[test]
    fn own_pid_lives_and_a_reaped_child_does_not() {
        assert!(pid_alive(std::process::id()));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
