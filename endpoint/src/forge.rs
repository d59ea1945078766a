//! Fault injection (feature `fault-injection`): sends that a correct rgex
//! never makes, so tests can check what a receiver does with them.
//!
//! A peer's rgex may be buggy, or another version, or its memory may be
//! corrupted: whatever arrives, the receiving rank must report it and go
//! on. These calls let a test be that peer. They skip every check of the
//! target (reserved, unregistered, wrong direction, category or argument
//! count); only the local limits that keep the sender itself sound
//! (payload size, argument count, a Long's range) still apply.

use crate::endpoint::spec;
use crate::{Endpoint, Token};
use rgex_core::{Category, Direction, Flags, Prepare, Rank, Result};

impl Endpoint {
    /// Send a request to any handler index, reserved or not, registered
    /// or not, with any category and arguments: a peer doing what a
    /// correct rgex never does, for tests of what receivers do with it.
    /// Only the local limits (payload size, argument count, a Long's
    /// range) still apply. Feature `fault-injection`.
    #[allow(clippy::too_many_arguments)]
    pub fn forge_request(
        &self,
        peer: Rank,
        index: u8,
        category: Category,
        args: &[u32],
        payload: &[u8],
        long_offset: u64,
        flags: Flags,
    ) -> Result<()> {
        self.check_not_in_handler()?;
        self.forge(
            spec(peer, Direction::Request, category, long_offset),
            index,
            args,
            payload,
            flags,
        )
    }

    fn forge(
        &self,
        mut spec: Prepare,
        index: u8,
        args: &[u32],
        payload: &[u8],
        flags: Flags,
    ) -> Result<()> {
        self.validate_fixed(&mut spec, args, payload)?;
        self.inject_fixed(&spec, index, args, payload, flags)
    }
}

impl Token<'_> {
    /// Reply to this request with a message to any handler index, with
    /// any category and arguments, as [`Endpoint::forge_request`] sends
    /// requests. Uses up the token's one reply, as any reply does.
    /// Feature `fault-injection`.
    pub fn forge_reply(
        &self,
        index: u8,
        category: Category,
        args: &[u32],
        payload: &[u8],
        long_offset: u64,
    ) -> Result<()> {
        self.reply_with(category, long_offset, |ep, spec| {
            ep.forge(spec, index, args, payload, Flags::empty())
        })
    }
}

/// Environment variable: milliseconds the in-flight sweep
/// ([`abandon`](crate::abandon)) sleeps between finding that its
/// operations wait on some peers and asking the conduit whether those
/// peers have gone. A test sets it to open, every time, the window in
/// which a peer's last message arrives and the peer leaves after the poll
/// that found nothing. Feature `fault-injection`.
pub const SWEEP_PAUSE_ENV: &str = rgex_core::config::vars::FAULT_SWEEP_PAUSE_MS.name;

/// Sleep for [`SWEEP_PAUSE_ENV`]'s milliseconds, if it is set.
pub(crate) fn pause_before_sweep() {
    static PAUSE: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    let pause = PAUSE.get_or_init(|| {
        let ms = std::env::var(SWEEP_PAUSE_ENV).ok()?.parse().ok()?;
        Some(std::time::Duration::from_millis(ms))
    });
    if let Some(d) = pause {
        std::thread::sleep(*d);
    }
}
