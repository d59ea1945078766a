//! The client side of the launcher's bootstrap server, over a Unix socket.

use super::protocol::{decode_gather, encode_hello, read_frame, write_frame, OP_ALLGATHER};
use super::Bootstrap;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Bootstrap collectives through the `rgex-run` launcher.
///
/// The socket also tells the launcher this rank is alive: if the process
/// dies, the launcher sees the connection close.
#[derive(Debug)]
pub struct UnixBootstrap {
    rank: u32,
    size: u32,
    stream: Mutex<UnixStream>,
}

impl UnixBootstrap {
    /// Connect to the server at `path` as `rank` of `size`.
    pub fn connect(path: &Path, rank: u32, size: u32) -> Result<Self> {
        let mut stream = UnixStream::connect(path).map_err(|source| Error::Os {
            op: format!(
                "rank {rank}: connect to the bootstrap socket {}",
                path.display()
            ),
            source,
        })?;
        write_frame(&mut stream, &encode_hello(rank, size)).map_err(|source| Error::Os {
            op: format!("rank {rank}: bootstrap hello"),
            source,
        })?;
        Ok(UnixBootstrap {
            rank,
            size,
            stream: Mutex::new(stream),
        })
    }
}

impl Bootstrap for UnixBootstrap {
    fn name(&self) -> &'static str {
        "rgex-run"
    }

    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        // One collective at a time per process: the lock keeps a frame and
        // its answer together when several threads bootstrap at once.
        let mut s = self.stream.lock();
        let mut body = Vec::with_capacity(mine.len() + 1);
        body.push(OP_ALLGATHER);
        body.extend_from_slice(mine);
        let rank = self.rank;
        write_frame(&mut *s, &body).map_err(|source| Error::Os {
            op: format!("rank {rank}: send to the bootstrap server"),
            source,
        })?;
        let answer = read_frame(&mut *s)
            .map_err(|source| Error::Os {
                op: format!("rank {rank}: read from the bootstrap server"),
                source,
            })?
            .ok_or_else(|| {
                Error::Bootstrap(format!(
                    "rank {rank}: the launcher closed the bootstrap channel"
                ))
            })?;
        let all = decode_gather(&answer)?;
        if all.len() != self.size as usize {
            return Err(Error::Bootstrap(format!(
                "rank {rank}: allgather returned {} contributions for a job of {}",
                all.len(),
                self.size
            )));
        }
        Ok(all)
    }
}
