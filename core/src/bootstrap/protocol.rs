//! The wire protocol between ranks and the launcher's bootstrap server,
//! shared by both sides so they cannot drift apart.
//!
//! Every message is a frame: a little-endian `u32` length, then that many
//! bytes. A rank first sends a hello (`RGEX1`, rank, size), then one frame
//! per collective: `b'A'` followed by its contribution. All ranks issue the
//! same collectives in the same order, so the server matches the n-th frame
//! of every rank. When all have arrived it answers each with `0` followed by
//! every contribution (`u32` length + bytes, in rank order); if a rank left
//! before contributing it answers `1` followed by a UTF-8 explanation.
//!
//! ```
//! use rgex_core::bootstrap::protocol::*;
//! let hello = encode_hello(3, 4);
//! assert_eq!(decode_hello(&hello).unwrap(), (3, 4));
//! let all = vec![b"a".to_vec(), vec![], b"ccc".to_vec()];
//! assert_eq!(decode_gather(&encode_gather(&all)).unwrap(), all);
//! assert!(decode_gather(&encode_failure("rank 2 left")).unwrap_err().to_string().contains("rank 2 left"));
//! ```

use crate::{Error, Result};
use std::io::{Read, Write};

const HELLO_MAGIC: &[u8; 5] = b"RGEX1";
/// First byte of a collective contribution frame.
pub const OP_ALLGATHER: u8 = b'A';
/// First byte of the frame a rank sends when it starts to leave the job
/// (its `Client` is finalized or dropped, or else its process starts to
/// exit: see [`announce_leaving`](super::announce_leaving)), followed by
/// the time it did ([`monotonic_ns`], 8 bytes little-endian); no answer. Of several ranks found ended at once, the launcher blames
/// the first to start leaving (the others most likely failed because it
/// had gone).
pub const OP_LEAVING: u8 = b'L';
/// First byte of the frame a rank sends to end the whole job with a
/// status (OpenSHMEM's `shmem_global_exit`), followed by the status
/// (`i32`, 4 bytes little-endian); no answer. The launcher ends every
/// rank and exits with that status; the first such frame wins.
pub const OP_EXIT: u8 = b'X';

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the
/// node, so times taken by different ranks and by the launcher compare.
///
/// ```
/// let (a, b) = (rgex_core::bootstrap::protocol::monotonic_ns(), rgex_core::bootstrap::protocol::monotonic_ns());
/// assert!(b >= a);
/// ```
pub fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for clock_gettime to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}
const STATUS_OK: u8 = 0;
const STATUS_FAILED: u8 = 1;
/// Largest frame accepted (guards against a corrupt length).
pub const MAX_FRAME: usize = 1 << 30;

/// Write one frame.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "bootstrap frame over 4 GiB",
        )
    })?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// Read one frame; `Ok(None)` on a clean end of stream before the length.
pub fn read_frame(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bootstrap frame of {len} bytes exceeds the limit of {MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// The hello a rank sends first.
pub fn encode_hello(rank: u32, size: u32) -> Vec<u8> {
    let mut v = HELLO_MAGIC.to_vec();
    v.extend_from_slice(&rank.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v
}

/// Parse a hello into `(rank, size)`.
pub fn decode_hello(body: &[u8]) -> Result<(u32, u32)> {
    if body.len() != 13 || &body[..5] != HELLO_MAGIC {
        return Err(Error::Bootstrap(format!(
            "malformed hello of {} bytes",
            body.len()
        )));
    }
    let rank = u32::from_le_bytes(body[5..9].try_into().expect("4 bytes"));
    let size = u32::from_le_bytes(body[9..13].try_into().expect("4 bytes"));
    Ok((rank, size))
}

/// The server's answer when every rank contributed.
pub fn encode_gather(all: &[Vec<u8>]) -> Vec<u8> {
    let mut v = vec![STATUS_OK];
    for part in all {
        v.extend_from_slice(&(part.len() as u32).to_le_bytes());
        v.extend_from_slice(part);
    }
    v
}

/// The server's answer when the collective cannot complete.
pub fn encode_failure(why: &str) -> Vec<u8> {
    let mut v = vec![STATUS_FAILED];
    v.extend_from_slice(why.as_bytes());
    v
}

/// Parse the server's answer to a collective.
pub fn decode_gather(body: &[u8]) -> Result<Vec<Vec<u8>>> {
    match body.first() {
        Some(&STATUS_OK) => {}
        Some(&STATUS_FAILED) => {
            return Err(Error::Bootstrap(
                String::from_utf8_lossy(&body[1..]).into_owned(),
            ))
        }
        _ => {
            return Err(Error::Bootstrap(
                "malformed answer from the bootstrap server".into(),
            ))
        }
    }
    let mut out = Vec::new();
    let mut rest = &body[1..];
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(Error::Bootstrap(
                "truncated answer from the bootstrap server".into(),
            ));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        rest = &rest[4..];
        if rest.len() < len {
            return Err(Error::Bootstrap(
                "truncated answer from the bootstrap server".into(),
            ));
        }
        out.push(rest[..len].to_vec());
        rest = &rest[len..];
    }
    Ok(out)
}
