//! A fixed number of one small-message operation on one rank, to its own
//! segment and queues (the same code paths as to a mapped peer, with no
//! second core, so nothing spins): counted with callgrind, two runs with
//! different counts give the instructions per operation without the
//! start-up's, deterministically.
//!
//! Usage: `icount OP COUNT`, OP one of `put8`, `get8` (blocking, 8 B),
//! `short` (AM Short round trip: request, its handler replies, the reply's
//! handler counts), `medium8` (the same with 8-byte Mediums, the request's
//! payload not read, the reply from a static buffer: the peers' mode),
//! `medium8np` (the same round trip with negotiated-payload Mediums: each
//! side prepares, writes its 8 bytes in rgex's buffer and commits),
//! `poll` (a poll that finds nothing: what a waiting rank spins on),
//! `nbi8` (8-byte NBI puts from rank 0 to rank 1, an `nbi_wait` every
//! 256, the other ranks waiting in a barrier: run it with two ranks on a
//! network conduit, rank 0 under callgrind, to count a network put),
//! `nbi8ep` (the same on an endpoint of its own, as rma_mt's threads),
//! `barrier`, `bcast8`, `allreduce8`, `alltoall1k` (the world team's
//! blocking collectives, as testcoll calls them: alone, a one-rank
//! team runs a collective's whole software path, on its board where the
//! conduit has one, without a second rank to spin on).
//!
//! `valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/icount short 1000`
//! then `... short 11000`: (Ir difference) / 10,000 per round trip.

use rgex::{Flags, GlobalAddr, Rank};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn main() -> rgex::Result<()> {
    let mut args = std::env::args().skip(1);
    let op = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let pongs = Arc::new(AtomicU64::new(0));
    let p = pongs.clone();
    let q = pongs.clone();
    let r = pongs.clone();
    static REPLY: [u8; 8] = [7; 8];
    // A static 8-byte source, as testsmall's peer-comparable put.
    static SRC8: [u8; 8] = [1; 8];
    let (client, (short, medium, np)) = rgex::init_with(move |t| {
        let pong = t.register("pong", move |_tok, _msg| {
            p.fetch_add(1, Ordering::Relaxed);
        })?;
        let mpong = t.register("mpong", move |_tok, _msg| {
            q.fetch_add(1, Ordering::Relaxed);
        })?;
        let ping = t.register("ping", move |tok, _msg| {
            tok.reply_short(pong, &[], Flags::empty())
        })?;
        let mping = t.register("mping", move |tok, _msg| {
            tok.reply_medium(mpong, &[], &REPLY, Flags::empty())
        })?;
        let nppong = t.register("nppong", move |_tok, _msg| {
            r.fetch_add(1, Ordering::Relaxed);
        })?;
        let npping = t.register("npping", move |tok, _msg| {
            let mut p = tok.prepare_reply_medium(None, 8, 8, 0, Flags::empty())?;
            p.buf()[..8].copy_from_slice(&REPLY);
            p.commit(nppong, &[], 8)
        })?;
        Ok((ping, mping, npping))
    })?;
    let me = Rank(client.rank().0);
    let ep = client.endpoint().clone();
    let at = GlobalAddr::new(me, 64);
    let src = [1u8; 8];
    let mut dst = [0u8; 8];
    let round_trip = |h, how: Send| -> rgex::Result<()> {
        for i in 0..n {
            match how {
                Send::Short => client
                    .endpoint()
                    .request_short(me, h, &[], Flags::empty())?,
                Send::Medium => {
                    client
                        .endpoint()
                        .request_medium(me, h, &[], &src, Flags::empty())?
                }
                Send::Negotiated => {
                    let mut p = ep.prepare_request_medium(me, None, 8, 8, 0, Flags::empty())?;
                    p.buf()[..8].copy_from_slice(&src);
                    p.commit(h, &[], 8)?;
                }
            }
            while pongs.load(Ordering::Relaxed) <= i {
                client.endpoint().poll()?;
            }
        }
        Ok(())
    };
    match op.as_str() {
        "put8" => {
            for _ in 0..n {
                ep.put(std::hint::black_box(at), &SRC8, Flags::empty())?;
            }
        }
        "get8" => {
            for _ in 0..n {
                ep.get(&mut dst, std::hint::black_box(at), Flags::empty())?;
            }
        }
        "poll" => {
            for _ in 0..n {
                client.endpoint().poll()?;
            }
        }
        "nbi8" | "nbi8ep" => {
            let ep = match op.as_str() {
                "nbi8ep" => client.create_endpoint()?,
                _ => ep.clone(),
            };
            if me.0 == 0 && client.size() > 1 {
                let dst = GlobalAddr::new(Rank(1), 64);
                for i in 0..n {
                    ep.put_nbi(std::hint::black_box(dst), &SRC8, Flags::empty())?;
                    if i % 256 == 255 {
                        ep.nbi_wait(rgex::NbiCategory::Put)?;
                    }
                }
                ep.nbi_wait(rgex::NbiCategory::Put)?;
            }
            client.barrier()?;
        }
        "barrier" => {
            for _ in 0..n {
                client.world().barrier()?;
            }
        }
        "bcast8" => {
            let b8 = [7u8; 8];
            for _ in 0..n {
                std::hint::black_box(client.world().broadcast(0, &b8)?);
            }
        }
        "allreduce8" => {
            for _ in 0..n {
                std::hint::black_box(client.world().allreduce(&[1u64], rgex::ReduceOp::Sum)?);
            }
        }
        "alltoall1k" => {
            let a2a = vec![3u8; 1024 * client.size() as usize];
            for _ in 0..n {
                std::hint::black_box(client.world().alltoall(&a2a)?);
            }
        }
        "short" => round_trip(short, Send::Short)?,
        "medium8" => round_trip(medium, Send::Medium)?,
        "medium8np" => round_trip(np, Send::Negotiated)?,
        _ => {
            eprintln!(
                "usage: icount put8|get8|poll|short|medium8|medium8np|nbi8|nbi8ep|barrier|bcast8|\
                 allreduce8|alltoall1k COUNT"
            );
            std::process::exit(2);
        }
    }
    std::hint::black_box(dst);
    Ok(())
}

/// How a round trip's request is sent.
#[derive(Clone, Copy)]
enum Send {
    Short,
    Medium,
    Negotiated,
}
