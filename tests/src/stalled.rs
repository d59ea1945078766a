//! An IMMEDIATE flood of a rank that does not poll: the skeleton the RMA
//! and VIS conformance programs share.
//!
//! Rank 0 injects operations with IMMEDIATE into 64-byte slots of rank 1's
//! segment while rank 1 sits in a bootstrap collective (which does not
//! poll), until one is refused or `span` have gone. Then rank 1 checks
//! that the refused operation wrote nothing and the one before it
//! arrived. What must happen (refused or not) depends on the path, so the
//! caller judges [`Flood::refused_at`].

use rgex::{Client, Event, Rank};

/// Where slot `i` of the flood lies in rank 1's segment.
pub fn slot(i: u64) -> u64 {
    i * 64
}

/// The byte every accepted operation writes.
pub const PATTERN: u8 = 0x5A;

/// What a flood saw, on every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flood {
    /// The operation refused with would-block (`None`: all went).
    pub refused_at: Option<u64>,
    /// How many rank 0 issued before the refusal or the end.
    pub issued: u64,
}

/// Run the flood: `issue(i)` (on rank 0 only) injects operation `i`,
/// writing `len` bytes of [`PATTERN`] at [`slot`]`(i)` of rank 1, with
/// IMMEDIATE, and returns its completion event; a would-block error ends
/// the flood; `stop(i)` may end it early after operation `i`. Collective;
/// nothing happens on a job of one rank (`Ok(None)`).
///
/// ```no_run
/// # fn demo(client: &rgex::Client) -> rgex::Result<()> {
/// use rgex::{Flags, GlobalAddr, Rank};
/// use rgex_tests::stalled::{flood, slot, PATTERN};
/// let f = flood(client, 1 << 12, 64, |i| {
///     client.endpoint().put_nb(GlobalAddr::new(Rank(1), slot(i)), &[PATTERN; 64], Flags::IMMEDIATE)
/// }, |_| false)?;
/// # Ok(()) }
/// ```
pub fn flood(
    client: &Client,
    span: u64,
    len: usize,
    mut issue: impl FnMut(u64) -> rgex::Result<Event>,
    stop: impl Fn(u64) -> bool,
) -> rgex::Result<Option<Flood>> {
    let (me, n) = (client.rank().0, client.size());
    assert!(len <= 64, "a slot holds 64 bytes");
    if n < 2 {
        return Ok(None);
    }
    if me == 1 {
        client
            .endpoint()
            .segment()
            .write(0, &vec![0u8; (span * 64) as usize])?;
    }
    client.barrier()?;
    // A bootstrap barrier (which does not poll): once rank 0 is past it,
    // rank 1 has left the AM barrier and polls no more until the broadcast
    // below. Without it rank 1 may still be polling inside the AM barrier,
    // taking rank 0's first operations and answering them into rank 0's
    // reply slots; once those are full, rank 1 waits inside the handler
    // for rank 0 to poll, while rank 0 (its operations refused) waits in
    // the broadcast for rank 1: a deadlock of the test, not of rgex (the
    // scc conduit's 4-slot channels hit it in about one run in ten).
    client.endpoint().conduit().bootstrap().barrier()?;
    let mut refused_at = u64::MAX;
    let mut issued = 0;
    let mut in_flight = Vec::new();
    // Any other error ends the flood too, and is returned once rank 1 is
    // out of the broadcast (returning at once would leave it there).
    let mut failed = None;
    if me == 0 {
        for i in 0..span {
            match issue(i) {
                Ok(ev) => in_flight.push(ev),
                Err(e) if e.is_would_block() => {
                    refused_at = i;
                    break;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            issued = i + 1;
            if stop(i) {
                break;
            }
        }
    }
    // Rank 1 sits here without polling while rank 0 fills its queue.
    let mut words = [0u8; 24];
    words[..8].copy_from_slice(&refused_at.to_le_bytes());
    words[8..16].copy_from_slice(&issued.to_le_bytes());
    words[16..].copy_from_slice(&u64::from(failed.is_some()).to_le_bytes());
    let b = client
        .endpoint()
        .conduit()
        .bootstrap()
        .broadcast(0, &words)?;
    let word = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
    if word(16) != 0 {
        // The flood's own failure is the one reported.
        let _ = Event::wait_all(&mut in_flight);
        return match failed {
            Some(e) => Err(e),
            None => Err(rgex::Error::Failed(format!(
                "the IMMEDIATE flood of {} failed on rank 0",
                Rank(1)
            ))),
        };
    }
    let f = Flood {
        refused_at: Some(word(0)).filter(|&r| r != u64::MAX),
        issued: word(8),
    };
    Event::wait_all(&mut in_flight)?;
    client.barrier()?;
    if me == 1 {
        let mut b = [0u8; 64];
        let accepted = (0..f.issued).map(|i| (i, PATTERN));
        for (i, want) in accepted.chain(f.refused_at.map(|i| (i, 0))) {
            client.endpoint().segment().read(slot(i), &mut b)?;
            assert!(
                b[..len].iter().all(|&x| x == want),
                "slot {i} of an IMMEDIATE flood of {} ({f:?}): {}",
                Rank(1),
                if want == 0 {
                    "the refused operation wrote"
                } else {
                    "an accepted operation is missing"
                }
            );
        }
    }
    client.barrier()?;
    Ok(Some(f))
}
