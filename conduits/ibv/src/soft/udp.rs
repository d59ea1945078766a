//! The soft device's network wire (`RGEX_IBV_SOFT_WIRE=udp`): its
//! packets as UDP datagrams between hosts, as Linux's rxe carries RoCEv2
//! over UDP. The transport above it (PSNs, ACKs, NAKs, go-back-N, the
//! ACK timer) is the same as on the shared-memory wire; only the carrier
//! changes.
//!
//! - One socket per device context, bound to [`ADDR_ENV`]'s address
//!   (default 127.0.0.1) and a port the kernel picks; address and port
//!   are in the port's GID, so a peer given the GID reaches the socket.
//! - A datagram is one packet: the 64-byte header, encoded field by field
//!   little-endian ([`encode`], [`decode`]), then the payload. A datagram
//!   that does not decode (short, a length that disagrees with its size,
//!   an unknown kind) is dropped and counted; so is one for a QP the
//!   device does not have. A packet for a QP whose queue is full stops
//!   the reading until there is room: the kernel's buffer holds the rest. Nothing from the network is trusted further
//!   than the shared-memory wire's headers are.
//! - The socket is non-blocking: a send the kernel refuses for want of
//!   buffer space (`EAGAIN`, `ENOBUFS`) is back-pressure, and the packet
//!   waits in the QP's out queue as it does for a full ring. A datagram
//!   the network loses is the transport's to recover.
//! - The socket is also the device's wait object on this wire: any
//!   datagram wakes a sleeping progress thread, and the device's own
//!   completions wake it with an empty datagram to itself (which decodes
//!   to nothing and is dropped).
//!
//! What this wire cannot know, the shared-memory one can: whether a peer
//! that answers nothing still runs. So a silent peer is lost after the
//! QP's retries (`retry_cnt` ACK timeouts), never merely slow.

use super::packet::{PktHdr, HDR_BYTES, K_ACK, K_ATOMIC_RESP, K_NAK, K_READ_RESP, K_REQ};
use super::ring::MAX_PAYLOAD;
use crate::verbs::{VerbsError, VerbsResult};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// Which wire the soft device uses: `shm` (shared memory, one host; the
/// default) or `udp` (datagrams, between hosts).
pub const WIRE_ENV: &str = "RGEX_IBV_SOFT_WIRE";
/// The IPv4 address the UDP wire binds, or the name of an interface whose
/// address it binds (default 127.0.0.1: give each host's own, e.g. its
/// cluster interface's name, to span hosts).
pub const ADDR_ENV: &str = "RGEX_IBV_SOFT_ADDR";

/// The largest datagram: a header and one MTU of payload.
const MAX_DATAGRAM: usize = HDR_BYTES + MAX_PAYLOAD;

/// The wire a device was opened with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireKind {
    /// Rings in POSIX shared memory.
    Shm,
    /// UDP datagrams from this address.
    Udp(Ipv4Addr),
}

impl WireKind {
    /// The wire [`WIRE_ENV`] and [`ADDR_ENV`] ask for.
    pub fn from_env() -> VerbsResult<Self> {
        let bad = |what: String| VerbsError::call("soft device open", libc::EINVAL, what);
        match std::env::var(WIRE_ENV).as_deref() {
            Err(_) | Ok("") | Ok("shm") => Ok(WireKind::Shm),
            Ok("udp") => match std::env::var(ADDR_ENV) {
                Err(_) => Ok(WireKind::Udp(Ipv4Addr::LOCALHOST)),
                Ok(a) => match a.trim().parse() {
                    Ok(ip) => Ok(WireKind::Udp(ip)),
                    Err(_) => interface_addr(a.trim()).map(WireKind::Udp).ok_or_else(|| {
                        bad(format!(
                            "{ADDR_ENV}={a:?} is neither an IPv4 address nor an interface \
                             of this host with one (the UDP wire binds it)"
                        ))
                    }),
                },
            },
            Ok(other) => Err(bad(format!(
                "{WIRE_ENV}={other:?}: the soft device's wires are shm and udp"
            ))),
        }
    }
}

/// The first IPv4 address of interface `name`, if it has one.
fn interface_addr(name: &str) -> Option<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head to the pointer we pass; on
    // success it is ours to free with freeifaddrs, done below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a node of the list getifaddrs made, not yet freed.
        let ifa = unsafe { &*at };
        at = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: a NUL-terminated name, per getifaddrs.
        let n = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: ifa_addr points at a sockaddr whose family says its type.
        let family = unsafe { (*ifa.ifa_addr).sa_family };
        if n.to_bytes() == name.as_bytes() && i32::from(family) == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
            found = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            break;
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// A device's UDP socket.
#[derive(Debug)]
pub(crate) struct UdpWire {
    sock: UdpSocket,
    local: SocketAddrV4,
    buf: Vec<u8>,
}

impl UdpWire {
    /// Bind a socket on `ip`, port chosen by the kernel.
    pub fn bind(ip: Ipv4Addr) -> VerbsResult<Self> {
        let io = |what: &str, e: std::io::Error| {
            VerbsError::call(
                "soft device open",
                e.raw_os_error().unwrap_or(libc::EIO),
                format!("UDP wire: {what} on {ip}: {e}"),
            )
        };
        let sock = UdpSocket::bind((ip, 0)).map_err(|e| io("bind", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| io("set_nonblocking", e))?;
        grow_receive_buffer(&sock);
        let local = match sock.local_addr().map_err(|e| io("local_addr", e))? {
            std::net::SocketAddr::V4(a) => a,
            std::net::SocketAddr::V6(a) => {
                return Err(io("local_addr", std::io::Error::other(a.to_string())))
            }
        };
        Ok(UdpWire {
            sock,
            local,
            buf: vec![0; MAX_DATAGRAM],
        })
    }

    /// The address peers send to.
    pub fn local(&self) -> SocketAddrV4 {
        self.local
    }

    /// A second handle on the socket and its address, for the wake-ups
    /// the device's completions send (see the `wait` module).
    pub fn waker(&self) -> Option<(UdpSocket, SocketAddrV4)> {
        self.sock.try_clone().ok().map(|s| (s, self.local))
    }

    /// The fd a progress thread sleeps on.
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Send one packet to `to`; false when the kernel has no room now
    /// (the caller keeps the packet and retries later). Other errors (no
    /// route, a peer's port closed) lose the packet, as the network would.
    pub fn send(&mut self, to: SocketAddrV4, hdr: &PktHdr, payload: &[u8]) -> bool {
        let n = HDR_BYTES + payload.len();
        encode(hdr, &mut self.buf[..HDR_BYTES]);
        self.buf[HDR_BYTES..n].copy_from_slice(payload);
        match self.sock.send_to(&self.buf[..n], to) {
            Ok(_) => true,
            Err(e) => {
                !matches!(e.kind(), ErrorKind::WouldBlock)
                    && e.raw_os_error() != Some(libc::ENOBUFS)
            }
        }
    }

    /// The next datagram, with a packet's payload in `payload`.
    pub fn recv(&mut self, payload: &mut Vec<u8>) -> Recv {
        match self.sock.recv_from(&mut self.buf) {
            Ok((0, _)) => Recv::Wake,
            Ok((n, _)) => match decode(&self.buf[..n]) {
                Some(hdr) => {
                    payload.clear();
                    payload.extend_from_slice(&self.buf[HDR_BYTES..n]);
                    Recv::Packet(hdr)
                }
                None => Recv::Bad,
            },
            // WouldBlock, or an error a previous send queued (ICMP port
            // unreachable on some kernels): nothing to read now.
            Err(_) => Recv::Nothing,
        }
    }
}

/// What [`UdpWire::recv`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Recv {
    /// A packet.
    Packet(PktHdr),
    /// A wake-up (an empty datagram).
    Wake,
    /// A datagram that is not a packet: dropped.
    Bad,
    /// Nothing waiting.
    Nothing,
}

/// The receive buffer asked for: the wire has no flow control beyond the
/// transport's retransmission, so a burst (a 4 MiB RDMA WRITE is a
/// thousand packets, and an RDMA READ's responses come all at once) must
/// fit in the kernel's buffer while the receiver is not running, or it is
/// lost and resent whole, again and again.
const RECEIVE_BUFFER: libc::c_int = 256 << 20;

/// Ask for [`RECEIVE_BUFFER`]: with `SO_RCVBUFFORCE` where the process
/// may (CAP_NET_ADMIN), else `SO_RCVBUF`, which the kernel caps at
/// `net.core.rmem_max` (4 MiB here: enough for the conformance suite's
/// bursts between a few ranks, not for floods of large transfers).
fn grow_receive_buffer(sock: &UdpSocket) {
    let size = RECEIVE_BUFFER;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a valid socket fd, and a pointer to a c_int of the size
        // passed, which setsockopt only reads.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return;
        }
    }
}

/// Write `h` into the first [`HDR_BYTES`] of `out`, little-endian.
pub(crate) fn encode(h: &PktHdr, out: &mut [u8]) {
    out[0] = h.kind;
    out[1] = h.op;
    out[2] = h.flags;
    out[3] = h.syndrome;
    let words32 = [h.psn, h.src_qpn, h.dst_qpn, h.imm, h.rkey];
    for (i, w) in words32.iter().enumerate() {
        out[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    out[24..32].copy_from_slice(&h.raddr.to_le_bytes());
    for (i, w) in [h.total_len, h.offset, h.len, h.aux].iter().enumerate() {
        out[32 + 4 * i..36 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    out[48..56].copy_from_slice(&h.a.to_le_bytes());
    out[56..64].copy_from_slice(&h.b.to_le_bytes());
}

/// The header of datagram `d`, if it is a packet: long enough, a known
/// kind, and a payload length that is the datagram's remainder.
pub(crate) fn decode(d: &[u8]) -> Option<PktHdr> {
    if d.len() < HDR_BYTES || d.len() > MAX_DATAGRAM {
        return None;
    }
    let w32 = |at: usize| u32::from_le_bytes(d[at..at + 4].try_into().expect("4 bytes"));
    let w64 = |at: usize| u64::from_le_bytes(d[at..at + 8].try_into().expect("8 bytes"));
    let h = PktHdr {
        kind: d[0],
        op: d[1],
        flags: d[2],
        syndrome: d[3],
        psn: w32(4),
        src_qpn: w32(8),
        dst_qpn: w32(12),
        imm: w32(16),
        rkey: w32(20),
        raddr: w64(24),
        total_len: w32(32),
        offset: w32(36),
        len: w32(40),
        aux: w32(44),
        a: w64(48),
        b: w64(56),
    };
    let known = matches!(h.kind, K_REQ | K_ACK | K_NAK | K_READ_RESP | K_ATOMIC_RESP);
    (known && h.len as usize == d.len() - HDR_BYTES).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_bad_datagrams_do_not_decode() {
        let h = PktHdr {
            kind: K_REQ,
            op: 2,
            flags: 3,
            syndrome: 4,
            psn: 0x00ab_cdef,
            src_qpn: 7,
            dst_qpn: 9,
            imm: 0xdead_beef,
            rkey: 11,
            raddr: 0x1122_3344_5566_7788,
            total_len: 5000,
            offset: 4096,
            len: 3,
            aux: 12,
            a: u64::MAX,
            b: 1,
        };
        let mut d = vec![0u8; HDR_BYTES + 3];
        encode(&h, &mut d);
        assert_eq!(decode(&d), Some(h));
        assert_eq!(decode(&d[..HDR_BYTES + 2]), None, "length disagrees");
        assert_eq!(decode(&d[..10]), None, "short");
        assert_eq!(decode(&[]), None, "a wake-up");
        d[0] = 99;
        assert_eq!(decode(&d), None, "unknown kind");
    }

    #[test]
    fn the_loopback_interface_has_its_address() {
        assert_eq!(interface_addr("lo"), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(interface_addr("no-such-interface0"), None);
    }

    #[test]
    fn two_sockets_pass_a_packet_and_refuse_garbage() {
        let mut a = UdpWire::bind(Ipv4Addr::LOCALHOST).unwrap();
        let mut b = UdpWire::bind(Ipv4Addr::LOCALHOST).unwrap();
        let h = PktHdr {
            kind: K_ACK,
            psn: 5,
            len: 4,
            ..PktHdr::default()
        };
        assert!(a.send(b.local(), &h, b"abcd"));
        let mut p = Vec::new();
        let next = |b: &mut UdpWire, p: &mut Vec<u8>| {
            (0..1000).find_map(|_| match b.recv(p) {
                Recv::Nothing => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    None
                }
                r => Some(r),
            })
        };
        assert_eq!(next(&mut b, &mut p), Some(Recv::Packet(h)));
        assert_eq!(p, b"abcd");
        a.sock.send_to(b"garbage", b.local()).unwrap();
        let bad = next(&mut b, &mut p);
        let (w, me) = b.waker().unwrap();
        w.send_to(&[], me).unwrap();
        assert_eq!(next(&mut b, &mut p), Some(Recv::Wake));
        assert_eq!(bad, Some(Recv::Bad));
    }
}
