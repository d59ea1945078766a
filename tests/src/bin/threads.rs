//! Several threads per rank at once (GASNet's PAR mode): each thread puts,
//! gets and sends AMs (with replies) to every rank, polls and waits, and
//! tracks its own NBI puts; everything is checksummed.
//!
//! Usage: `threads [THREADS] [ROUNDS]`

use rgex::{Flags, GlobalAddr, NbiCategory, Rank};
use rgex_tests::{fill_pattern, ok, pattern_mismatch, wait_until};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn main() -> rgex::Result<()> {
    let mut a = std::env::args().skip(1);
    let threads: u32 = a.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let rounds: u32 = a.next().and_then(|s| s.parse().ok()).unwrap_or(300);
    // Replies per thread (arg 0 names the thread), and handler problems.
    let replies: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
    let problems = Arc::new(Mutex::new(Vec::<String>::new()));
    let (r, p) = (replies.clone(), problems.clone());
    let (client, echo) = rgex::init_with(|t| {
        let back = t.register("back", move |tok, msg| {
            let (thread, seq) = (msg.arg(0), msg.arg(1));
            if let Some(j) =
                pattern_mismatch(msg.payload(), tok.endpoint().rank().0 * 1000 + thread, seq)
            {
                p.lock().unwrap().push(format!(
                    "echo for thread {thread} #{seq} differs at byte {j}"
                ));
            }
            r[thread as usize].fetch_add(1, Ordering::Release);
        })?;
        // Echo the payload back; a failed reply is reported by the poll.
        t.register("echo", move |tok, msg| {
            tok.reply_medium(back, msg.args(), msg.payload(), Flags::empty())
        })
    })?;
    let client = Arc::new(client);
    let (me, n) = (client.rank().0, client.size());
    // Thread t of rank r owns bytes [slot(r, t), +SLOT) of every segment.
    const SLOT: u64 = 64 << 10;
    let slot = |r: u32, t: u32| (u64::from(r) * u64::from(threads) + u64::from(t)) * SLOT;
    assert!(
        slot(n, 0) <= client.endpoint().segment().len() as u64,
        "segment too small for {n} ranks x {threads} threads"
    );

    // Every thread's result is joined: an error from any call fails the
    // job (a dropped handle would have ended its thread quietly).
    std::thread::scope(|s| -> rgex::Result<()> {
        let mut workers = Vec::new();
        for t in 0..threads {
            let client = client.clone();
            let replies = replies.clone();
            workers.push(s.spawn(move || -> rgex::Result<()> {
                let id = me * 1000 + t;
                let mut buf = vec![0u8; SLOT as usize];
                for round in 0..rounds {
                    let peer = Rank((me + round) % n);
                    let len = 1 + (round as usize * 997) % (SLOT as usize - 1);
                    fill_pattern(&mut buf[..len], id, round);
                    let at = GlobalAddr::new(peer, slot(me, t));
                    if round % 2 == 0 {
                        client.endpoint().put(at, &buf[..len], Flags::empty())?;
                    } else {
                        client.endpoint().put_nbi(at, &buf[..len], Flags::empty())?;
                        client.endpoint().nbi_wait(NbiCategory::Put)?;
                    }
                    let back = client
                        .endpoint()
                        .get_nb(vec![0u8; len], at, Flags::empty())?
                        .wait()?;
                    assert_eq!(
                        pattern_mismatch(&back, id, round),
                        None,
                        "thread {t}: put/get round {round} to {peer}"
                    );
                    // Up to 2000 bytes, within the conduit's Medium limit
                    // (1 KiB on scc).
                    let cap = client.endpoint().max_medium(peer, 2).min(2000);
                    let m = (len % cap) + 1;
                    fill_pattern(&mut buf[..m], id, round);
                    client.endpoint().request_medium(
                        peer,
                        echo,
                        &[t, round],
                        &buf[..m],
                        Flags::empty(),
                    )?;
                    let want = u64::from(round) + 1;
                    wait_until(&client, "an echo", || {
                        replies[t as usize].load(Ordering::Acquire) >= want
                    });
                }
                Ok(())
            }));
        }
        for (t, w) in workers.into_iter().enumerate() {
            w.join()
                .unwrap_or_else(|_| panic!("thread {t} panicked"))
                .map_err(|e| {
                    rgex::Error::Failed(format!("thread {t} of {}: {e}", client.rank()))
                })?;
        }
        Ok(())
    })?;
    client.barrier()?;
    let problems = problems.lock().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    ok(
        &client,
        &format!(
            "{threads} threads per rank: puts, NBI puts, gets and AMs at once, all checksums match"
        ),
    );
    Ok(())
}
