//! A progress thread answers for a rank whose main thread never polls
//! (issue 28 point 6). Two ranks or more: rank 0 starts a progress thread (mode
//! `api`: `start_progress_thread`; mode `env`: `RGEX_PROGRESS_THREAD=1`
//! at init, the client holds it), then sleeps in 1 ms steps without
//! calling rgex, watching words of its own segment. Every other rank
//! sends it `N` AM requests and waits for every reply (rank 1 also puts a
//! pattern into rank 0's segment and gets it back), then puts its done
//! word. Rank 0 then checks
//! that every request ran, on the progress thread, and the pattern landed.
//!
//! Then the thread is stopped (`api`: `stop()`, which must say it ended
//! well; `env`: kept), and the others send `M` more requests each: rank 0's own
//! polls must run every one (nothing is lost at the stop). The `env`
//! client is dropped at the end, which joins its thread (a hang fails the
//! job by the launcher's timeout).
//!
//! Mode `collectives` (any number of ranks): every rank runs a progress
//! thread and, on its main thread, `N` non-blocking barriers and
//! allreduces waited for while the thread progresses them too. Two
//! threads stepping one collective must complete it once: a second
//! completion panicked ("OpCounter::done without a matching add") before
//! the team engine marked a finished collective under its lock.
//!
//! Mode `idle` (any number of ranks, `RGEX_PROGRESS_THREAD=1`): every
//! rank leaves its progress thread alone for a second with nothing to
//! do (its main thread sleeps), then reports how the thread went idle:
//! how often it slept on the conduit's wait object and how often it
//! parked for want of one, and the CPU time it used over that second
//! (rank 0 prints it). With argument `wait` the conduit must have a wait
//! object: the thread never parked, and slept a bounded number of times
//! (each sleep ends on its timeout, `IDLE_SLEEP`, when nothing comes: a
//! thread that spun or parked would have gone idle thousands of times).
//! With `RGEX_PROGRESS_IDLE_MS` past the job's time limit, the other modes
//! fail (time out) if any wakeup is lost: a request to a sleeping rank is
//! then answered only when the sleep's safety net runs out.
//!
//! Usage: `job_progress_thread api|env|collectives|idle [N|wait]`

use rgex::{Flags, GlobalAddr, Rank};
use rgex_tests::{conduit_banner, fill_pattern, ok, pattern_mismatch, wait_until, HANG_LIMIT};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// More requests after the stop.
const M: u64 = 50;
/// The pattern's bytes and where they go in rank 0's segment.
const PATTERN: usize = 4096;
const PATTERN_AT: u64 = 4096;
/// Where in rank 1's segment rank 0 says its main thread has left the
/// barrier and sleeps (rank 1 sends nothing before: a request that came
/// while rank 0's main thread still polled in the barrier would run
/// there, not on the progress thread).
const ASLEEP_AT: u64 = 64;

#[derive(Default)]
struct Counts {
    /// Requests rank 0 ran, and how many of them off its main thread.
    pings: AtomicU64,
    off_main: AtomicU64,
    /// Replies rank 1 got.
    pongs: AtomicU64,
    main: OnceLock<std::thread::ThreadId>,
}

fn main() -> rgex::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "api".into());
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let counts = Arc::new(Counts::default());
    counts.main.set(std::thread::current().id()).unwrap();
    let (c1, c2) = (counts.clone(), counts.clone());
    let (client, ping) = rgex::init_with(|t| {
        let pong = t.register("pt.pong", move |_tok, _msg| {
            c2.pongs.fetch_add(1, Ordering::Relaxed);
        })?;
        t.register("pt.ping", move |tok, msg| {
            if c1.main.get() != Some(&std::thread::current().id()) {
                c1.off_main.fetch_add(1, Ordering::Relaxed);
            }
            // Release: rank 0's main thread reads the count with Acquire.
            c1.pings.fetch_add(1, Ordering::Release);
            tok.reply_short(pong, msg.args(), Flags::empty())
        })
    })?;
    conduit_banner(&client);
    if mode == "collectives" {
        return collectives(&client, n);
    }
    if mode == "idle" {
        let wait = std::env::args().nth(2).as_deref() == Some("wait");
        return idle(&client, wait);
    }
    assert!(client.size() >= 2, "a job of two ranks or more");
    // Every rank but 0 sends; rank 1 also does the RMA.
    let senders = u64::from(client.size()) - 1;
    let env_thread = client.has_progress_thread();
    assert_eq!(
        env_thread,
        mode == "env",
        "RGEX_PROGRESS_THREAD must start a thread in mode env and only there"
    );
    if mode == "env" {
        ok(
            &client,
            "RGEX_PROGRESS_THREAD=1 started a progress thread at init",
        );
    }
    // Rank r's done word: word r of rank 0's segment.
    let done = |r: u64| {
        // SAFETY: the segment is page aligned and at least a page long
        // (r < 512 words, below PATTERN_AT), and lives as long as the
        // client; peers write it only by RMA, and this rank reads it as
        // an atomic word.
        unsafe {
            &*client
                .endpoint()
                .segment()
                .as_ptr()
                .cast::<AtomicU64>()
                .add(r as usize)
        }
    };
    if client.rank() == Rank(0) {
        let thread = match mode.as_str() {
            "api" => Some(client.endpoint().start_progress_thread()?),
            _ => None,
        };
        client.barrier()?;
        // From here on the main thread polls no more: tell rank 1. Not
        // waited for: rank 1 may see the word land before a blocking put
        // returned here, and a request it then sent would run in this
        // put's polls, not on the progress thread (the event, dropped,
        // completes there).
        for r in 1..client.size() {
            drop(client.endpoint().put_nb(
                GlobalAddr::new(Rank(r), ASLEEP_AT),
                &1u64.to_ne_bytes(),
                Flags::empty(),
            )?);
        }
        // Inattentive: no rgex call until every sender says it is done.
        let start = Instant::now();
        for r in 1..=senders {
            while done(r).load(Ordering::Acquire) == 0 {
                assert!(
                    start.elapsed() < HANG_LIMIT,
                    "rank 0: rank {r} never finished (the progress thread did not answer)"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let (pings, want) = (counts.pings.load(Ordering::Acquire), n * senders);
        assert_eq!(
            pings, want,
            "rank 0 ran {pings} of {want} requests unpolled"
        );
        assert_eq!(
            counts.off_main.load(Ordering::Relaxed),
            want,
            "every request ran on the progress thread"
        );
        ok(
            &client,
            &format!("{want} requests answered by the progress thread while main slept"),
        );
        // SAFETY: inside this rank's segment; rank 1's put of it completed
        // before its put of the done word, which we read with Acquire.
        let landed = unsafe {
            std::slice::from_raw_parts(
                client
                    .endpoint()
                    .segment()
                    .as_ptr()
                    .add(PATTERN_AT as usize),
                PATTERN,
            )
        };
        assert_eq!(
            pattern_mismatch(landed, 1, 7),
            None,
            "rank 1's put landed intact"
        );
        ok(&client, "RMA put and get served while main slept");
        if let Some(t) = thread {
            t.stop()?;
            ok(
                &client,
                "stop() joined the progress thread, which ended well",
            );
        }
        client.barrier()?;
        // After the stop (api) the main thread's polls run the rest.
        wait_until(&client, "the requests sent after the stop", || {
            counts.pings.load(Ordering::Acquire) == (n + M) * senders
        });
        if mode == "api" {
            assert_eq!(
                counts.off_main.load(Ordering::Relaxed),
                n * senders,
                "no request ran on a stopped progress thread"
            );
        }
        ok(&client, "the requests sent after the stop all ran");
        client.barrier()?;
    } else {
        client.barrier()?;
        // SAFETY: as `done` above (a word of this rank's own segment that
        // the peer writes only by RMA).
        let asleep = unsafe {
            &*client
                .endpoint()
                .segment()
                .as_ptr()
                .add(ASLEEP_AT as usize)
                .cast::<AtomicU64>()
        };
        wait_until(&client, "rank 0's main thread to leave the barrier", || {
            // Acquire: pairs with the put's delivery (a plain word).
            asleep.load(Ordering::Acquire) != 0
        });
        let peer = Rank(0);
        for i in 0..n {
            client
                .endpoint()
                .request_short(peer, ping, &[i as u32], Flags::empty())?;
        }
        wait_until(&client, "the replies", || {
            counts.pongs.load(Ordering::Relaxed) == n
        });
        if client.rank() == Rank(1) {
            let mut pattern = vec![0u8; PATTERN];
            fill_pattern(&mut pattern, 1, 7);
            client
                .endpoint()
                .put(GlobalAddr::new(peer, PATTERN_AT), &pattern, Flags::empty())?;
            let mut back = vec![0u8; PATTERN];
            client
                .endpoint()
                .get(&mut back, GlobalAddr::new(peer, PATTERN_AT), Flags::empty())?;
            assert_eq!(back, pattern, "rank 1 got back what it put");
        }
        client.endpoint().put(
            GlobalAddr::new(peer, 8 * u64::from(client.rank().0)),
            &1u64.to_ne_bytes(),
            Flags::empty(),
        )?;
        client.barrier()?;
        for i in 0..M {
            client
                .endpoint()
                .request_short(peer, ping, &[i as u32], Flags::empty())?;
        }
        wait_until(&client, "the replies after the stop", || {
            counts.pongs.load(Ordering::Relaxed) == n + M
        });
        client.barrier()?;
    }
    // The env client's thread is stopped and joined here.
    drop(client);
    Ok(())
}

/// Mode `collectives`: see the module docs.
fn collectives(client: &rgex::Client, n: u64) -> rgex::Result<()> {
    let thread = client.endpoint().start_progress_thread()?;
    let team = client.world();
    let size = u64::from(client.size());
    for i in 0..n {
        team.barrier_nb()?.wait()?;
        if i % 16 == 0 {
            let sum = team.allreduce(&[i], rgex::ReduceOp::Sum)?;
            assert_eq!(sum[0], i * size, "allreduce {i}");
        }
    }
    thread.stop()?;
    client.barrier()?;
    ok(
        client,
        &format!("{n} barriers and allreduces with a progress thread stepping them too, each completed once"),
    );
    Ok(())
}

/// The CPU time so far of this process's thread named `name` (from
/// `/proc/self/task/*/schedstat`, in nanoseconds), if there is one.
/// Threads that come and go meanwhile (a provider's) are skipped.
fn thread_cpu(name: &str) -> Option<std::time::Duration> {
    // The kernel keeps 15 bytes of a thread's name.
    let short = &name[..name.len().min(15)];
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == short)
        })
        .find_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
            Some(std::time::Duration::from_nanos(ns))
        })
}

/// Mode `idle`: see the module docs.
fn idle(client: &rgex::Client, wait: bool) -> rgex::Result<()> {
    let thread = client
        .progress_thread()
        .expect("mode idle runs with RGEX_PROGRESS_THREAD=1");
    let name = thread
        .name()
        .expect("the progress thread is named")
        .to_string();
    client.barrier()?;
    // Let the barrier's last messages settle, then look.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let counts = thread.idle_counts();
    let (waits0, parks0) = (counts.waits(), counts.parks());
    let cpu0 = thread_cpu(&name).expect("the progress thread's schedstat");
    let start = Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let cpu = thread_cpu(&name).expect("the progress thread's schedstat") - cpu0;
    let elapsed = start.elapsed();
    let (waits, parks) = (counts.waits() - waits0, counts.parks() - parks0);
    let percent = 100.0 * cpu.as_secs_f64() / elapsed.as_secs_f64();
    println!(
        "figure: {}: rank {}: progress thread idle {:.3} s: cpu {:.3} ms ({percent:.2}%), \
         {waits} sleeps on the wait object, {parks} parks",
        client.endpoint().conduit().name(),
        client.rank().0,
        elapsed.as_secs_f64(),
        cpu.as_secs_f64() * 1e3
    );
    if wait {
        assert_eq!(
            parks,
            0,
            "rank {}: the progress thread parked {parks} times: its conduit gave no wait object",
            client.rank().0
        );
        // At most one sleep per IDLE_SLEEP of the time it was watched
        // (each ends on its timeout when nothing comes), twice over for
        // wakes a late message of the barrier may cause.
        let most = 2 * (elapsed.as_micros() / thread.idle_sleep().as_micros()) as u64 + 20;
        // A safety net longer than the second watched may span it whole.
        let least = u64::from(thread.idle_sleep() < elapsed / 2);
        assert!(
            (least..=most).contains(&waits),
            "rank {}: the progress thread slept {waits} times on its wait object in {:?} \
             (expected {least}..={most}: one sleep per {:?} timeout)",
            client.rank().0,
            elapsed,
            thread.idle_sleep()
        );
    }
    client.barrier()?;
    ok(
        client,
        &format!(
            "the idle progress thread {}",
            if wait {
                "slept on its conduit's wait object and never parked"
            } else {
                "went idle"
            }
        ),
    );
    Ok(())
}
