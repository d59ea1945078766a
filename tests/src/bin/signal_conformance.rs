//! Put-with-signal and waiting on memory (issue 40, items 3 and 4), on any
//! conduit. Rank 0 is the target and the checker; every other rank writes
//! to it. The first argument picks the scenario:
//!
//! - `main` (the default; two ranks or more):
//!   - **flood**: every other rank sends put-with-signals of 8 B to 1 MiB
//!     (blocking, non-blocking and NBI in turn) into a ring of slots at
//!     rank 0, each adding 1 to its own counter word there; rank 0 waits
//!     for each counter to move (`wait_until`), checks every byte of each
//!     message it counts, and returns a credit by a put-with-signal of no
//!     data to the sender (which `wait_until`s its credits before it
//!     reuses a slot). A signal seen before its data fails the check;
//!   - **late writers**: rank 1 sleeps, then writes one word (a
//!     put-with-signal's set, a plain put, then `u32`, `i32`, `i64` words
//!     by plain puts), while rank 0 waits for it asleep;
//!   - **arrays**: `wait_until_all` on three words set one by one,
//!     `wait_until_any` and `wait_until_some` on four of which two are
//!     set, then the `test` forms with and without ignore masks;
//!   - **errors**: out-of-segment and misaligned words and data, and a
//!     mask of the wrong length, each refused naming the rank, the offset
//!     and the limit;
//!   - **acknowledgements**: ranks 0 and 1 ping-pong put-with-signals,
//!     each waiting for the other's signal before it answers (on the
//!     reference path the acknowledgement rides on the answer), every
//!     event completing; then rank 1 waits for the event of one
//!     put-with-signal while rank 0, having seen its signal, only polls
//!     (the deferred acknowledgement must leave from that poll);
//!   - **futures**: `wait_until_async` on a word a put-with-signal sets
//!     and on one a plain put sets, on an executor that polls a task only
//!     when woken, with a progress thread driving progress: a lost wake
//!     is a hang (caught by the executor's limit).
//! - `dead HOW MODE` (two ranks): rank 1 leaves the job (HOW: `exit` or
//!   `_exit`) while rank 0 waits on a word nobody will write (MODE:
//!   `block` or `future`); the wait must end with an error naming rank 1
//!   as unreachable.
//!
//! Rank 0 prints one `ok:` line per check.

use rgex::{Client, Cmp, Error, Flags, GlobalAddr, NbiCategory, Rank, Signal, SignalPath};
use rgex_tests::{conduit_banner, fill_pattern, ok, pattern_mismatch};
use std::time::Duration;

/// Counter words at rank 0, one per sender (`COUNTERS + 8 * rank`).
const COUNTERS: u64 = 0;
/// A sender's credit word (in its own segment).
const CREDITS: u64 = 512;
/// Late writers' words (at rank 0).
const LATE_SIG: u64 = 1024;
const LATE_PLAIN: u64 = 1032;
const LATE_U32: u64 = 1040;
const LATE_I32: u64 = 1044;
const LATE_I64: u64 = 1048;
const LATE_DATA: u64 = 1536;
const ALL: [u64; 3] = [1088, 1096, 1104];
const SOME: [u64; 4] = [1152, 1160, 1168, 1176];
const FUT_SIG: u64 = 1280;
const FUT_PLAIN: u64 = 1288;
/// The acknowledgement check's signal word (at ranks 0 and 1), the word
/// that tells rank 0 to stop polling, and the data.
const ACK_SIG: u64 = 1344;
const ACK_DONE: u64 = 1352;
const ACK_DATA: u64 = 1408;
/// Round trips of the acknowledgement check's ping-pong.
const ACK_ROUNDS: u64 = 200;
/// How long rank 0 polls for rank 1's word before it gives up (a hang
/// guard, far beyond any acknowledgement's latency).
const ACK_GIVE_UP: Duration = Duration::from_secs(120);
/// The slots of the flood: `SLOTS` per sender, `SLOT` bytes each.
const RING: u64 = 64 << 10;
const SLOTS: u64 = 4;
const SLOT: usize = 1 << 20;
/// Messages per sender in the flood.
const FLOOD: u64 = 1000;
/// Message sizes, in turn. The 1 MiB one is what makes a signal stored
/// before its data visible to the checker on a loaded machine (with the
/// mapped path's order swapped, the flood failed at its first such
/// message in every run; at 64 KiB it passed). Messages on the other
/// paths are at most [`OTHER_MAX`] (an active message's data lands
/// before its handler runs, whatever its size; the emulated scc chip
/// copies slowly).
const SIZES: [usize; 10] = [8, 64, 1000, 4096, 65536, 24, 8, 512, 16384, 1 << 20];
/// The largest message off the mapped path.
const OTHER_MAX: usize = 64 << 10;
/// How long a late writer waits before it writes: long enough that the
/// waiter has gone to sleep.
const LATE: Duration = Duration::from_millis(30);

type Res<T = ()> = Result<T, String>;

fn main() -> rgex::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let what = args.first().map_or("main", String::as_str);
    let client = rgex::init()?;
    conduit_banner(&client);
    let r = match what {
        "main" => main_checks(&client),
        "dead" => dead(
            &client,
            args.get(1).map_or("exit", String::as_str),
            args.get(2).map_or("block", String::as_str),
        ),
        _ => Err(format!(
            "usage: signal_conformance [main | dead exit|_exit block|future] (got {args:?})"
        )),
    };
    if let Err(e) = r {
        eprintln!("{}: {e}", client.rank());
        std::process::exit(1);
    }
    Ok(())
}

fn e2s(e: Error) -> String {
    e.to_string()
}

fn main_checks(client: &Client) -> Res {
    if client.size() < 2 {
        return Err("signal_conformance main runs on two ranks or more".into());
    }
    let ep = client.endpoint();
    if client.rank() == Rank(0) {
        let paths: Vec<_> = (0..client.size())
            .map(|p| ep.put_signal_path(Rank(p)))
            .collect();
        println!("put-with-signal paths from rank 0: {paths:?}");
    }
    client.barrier().map_err(e2s)?;
    flood(client)?;
    client.barrier().map_err(e2s)?;
    late_writers(client)?;
    client.barrier().map_err(e2s)?;
    arrays(client)?;
    client.barrier().map_err(e2s)?;
    errors(client)?;
    client.barrier().map_err(e2s)?;
    acknowledgements(client)?;
    client.barrier().map_err(e2s)?;
    futures(client)?;
    client.barrier().map_err(e2s)?;
    Ok(())
}

fn slot_at(sender: u32, i: u64) -> u64 {
    RING + (u64::from(sender) * SLOTS + i % SLOTS) * SLOT as u64
}

/// Message `i`'s size from a sender whose path to rank 0 is `mapped`.
fn size_of(i: u64, mapped: bool) -> usize {
    let n = SIZES[(i % SIZES.len() as u64) as usize];
    if mapped {
        n
    } else {
        n.min(OTHER_MAX)
    }
}

fn flood(client: &Client) -> Res {
    let ep = client.endpoint();
    let me = client.rank();
    let f = Flags::empty();
    if me != Rank(0) {
        let mapped = ep.put_signal_path(Rank(0)) == SignalPath::Mapped;
        let mut buf = vec![0u8; SLOT];
        let mut events = Vec::new();
        for i in 0..FLOOD {
            if i >= SLOTS {
                ep.wait_until::<u64>(CREDITS, Cmp::Ge, i + 1 - SLOTS)
                    .map_err(e2s)?;
            }
            let data = &mut buf[..size_of(i, mapped)];
            fill_pattern(data, me.0, i as u32);
            let dst = GlobalAddr::new(Rank(0), slot_at(me.0, i));
            let signal = Signal::add(COUNTERS + 8 * u64::from(me.0), 1);
            match i % 3 {
                0 => ep.put_signal(dst, data, signal, f).map_err(e2s)?,
                1 => events.push(ep.put_signal_nb(dst, data, signal, f).map_err(e2s)?),
                _ => ep.put_signal_nbi(dst, data, signal, f).map_err(e2s)?,
            }
        }
        rgex::Event::wait_all(&mut events).map_err(e2s)?;
        ep.nbi_wait(NbiCategory::Put).map_err(e2s)?;
        return Ok(());
    }
    let mut checked = vec![0u64; client.size() as usize];
    let mut buf = vec![0u8; SLOT];
    let mut left: Vec<u32> = (1..client.size()).collect();
    while !left.is_empty() {
        // The first sender whose counter moved (a test: one progress and
        // an Acquire look), else wait for the first still sending.
        let mut s = left[0];
        for &x in &left {
            let c = COUNTERS + 8 * u64::from(x);
            if ep
                .test::<u64>(c, Cmp::Gt, checked[x as usize])
                .map_err(e2s)?
            {
                s = x;
                break;
            }
        }
        let seen = ep
            .wait_until::<u64>(COUNTERS + 8 * u64::from(s), Cmp::Gt, checked[s as usize])
            .map_err(e2s)?;
        // The sender's path to here (the same as ours to it: node-local
        // peers map each other's segments).
        let mapped = ep.put_signal_path(Rank(s)) == SignalPath::Mapped;
        for i in checked[s as usize]..seen {
            let data = &mut buf[..size_of(i, mapped)];
            // The last bytes first, the copy's last stores: a signal seen
            // before its data is caught while the copy is still going.
            let n = data.len();
            let tail = n.saturating_sub(8);
            ep.segment()
                .read(slot_at(s, i) + tail as u64, &mut data[tail..])
                .map_err(e2s)?;
            ep.segment()
                .read(slot_at(s, i), &mut data[..tail])
                .map_err(e2s)?;
            if let Some(at) = pattern_mismatch(data, s, i as u32) {
                return Err(format!(
                    "flood: rank 0 saw the signal of message {i} from rank {s} (counter {seen}) \
                     before its data: byte {at} of {} differs",
                    data.len()
                ));
            }
            // The slot is free again: one credit back.
            ep.put_signal(GlobalAddr::new(Rank(s), 0), &[], Signal::add(CREDITS, 1), f)
                .map_err(e2s)?;
        }
        checked[s as usize] = seen;
        if seen >= FLOOD {
            if seen > FLOOD {
                return Err(format!(
                    "flood: rank {s}'s counter reached {seen} of {FLOOD}"
                ));
            }
            left.retain(|&x| x != s);
        }
    }
    ok(
        client,
        &format!(
            "flood of {FLOOD} put-with-signals of 8 B to 1 MiB (64 KiB off the mapped path) \
             from each of {} ranks: every signal seen after its data",
            client.size() - 1
        ),
    );
    Ok(())
}

/// Rank 1: sleep, then `write`; rank 0: `wait`. A barrier after.
fn late(client: &Client, write: impl FnOnce() -> Res, wait: impl FnOnce() -> Res) -> Res {
    match client.rank().0 {
        0 => wait()?,
        1 => {
            std::thread::sleep(LATE);
            write()?;
        }
        _ => {}
    }
    client.barrier().map_err(e2s)
}

fn late_writers(client: &Client) -> Res {
    let ep = client.endpoint();
    let f = Flags::empty();
    let at = |o| GlobalAddr::new(Rank(0), o);
    let data = [0x5au8; 64];
    late(
        client,
        || {
            ep.put_signal(at(LATE_DATA), &data, Signal::set(LATE_SIG, 7), f)
                .map_err(e2s)
        },
        || {
            let seen = ep.wait_until::<u64>(LATE_SIG, Cmp::Eq, 7).map_err(e2s)?;
            let mut got = [0u8; 64];
            ep.segment().read(LATE_DATA, &mut got).map_err(e2s)?;
            if seen != 7 || got != data {
                return Err(format!("late put-with-signal: word {seen}, data {got:?}"));
            }
            ok(
                client,
                "wait_until sees a late writer's put-with-signal, and its data",
            );
            Ok(())
        },
    )?;
    late(
        client,
        || ep.put_val(at(LATE_PLAIN), 0x1234, f).map_err(e2s),
        || {
            let seen = ep
                .wait_until::<u64>(LATE_PLAIN, Cmp::Eq, 0x1234)
                .map_err(e2s)?;
            if seen != 0x1234 {
                return Err(format!("late plain put: word {seen:#x}"));
            }
            ok(
                client,
                "wait_until sees a late writer's plain put (which rings nothing)",
            );
            Ok(())
        },
    )?;
    late(
        client,
        || {
            ep.put(at(LATE_U32), &5u32.to_ne_bytes(), f).map_err(e2s)?;
            ep.put(at(LATE_I32), &(-3i32).to_ne_bytes(), f)
                .map_err(e2s)?;
            ep.put(at(LATE_I64), &(-9i64).to_ne_bytes(), f).map_err(e2s)
        },
        || {
            let a = ep.wait_until::<u32>(LATE_U32, Cmp::Gt, 4).map_err(e2s)?;
            let b = ep.wait_until::<i32>(LATE_I32, Cmp::Lt, 0).map_err(e2s)?;
            let c = ep.wait_until::<i64>(LATE_I64, Cmp::Le, -5).map_err(e2s)?;
            if (a, b, c) != (5, -3, -9) {
                return Err(format!("late typed words: {a} {b} {c}"));
            }
            ok(
                client,
                "wait_until on late u32 (Gt), i32 (Lt) and i64 (Le) words",
            );
            Ok(())
        },
    )
}

fn arrays(client: &Client) -> Res {
    let ep = client.endpoint();
    let f = Flags::empty();
    let set = |o: u64| ep.put_signal(GlobalAddr::new(Rank(0), o), &[], Signal::set(o, 1), f);
    late(
        client,
        || {
            for o in ALL {
                std::thread::sleep(Duration::from_millis(5));
                set(o).map_err(e2s)?;
            }
            Ok(())
        },
        || {
            ep.wait_until_all::<u64>(&ALL, None, Cmp::Eq, 1)
                .map_err(e2s)?;
            if !ep.test_all::<u64>(&ALL, None, Cmp::Eq, 1).map_err(e2s)? {
                return Err("wait_until_all returned before every word was set".into());
            }
            ok(client, "wait_until_all on three words set one by one");
            Ok(())
        },
    )?;
    late(
        client,
        || {
            set(SOME[3]).map_err(e2s)?;
            set(SOME[1]).map_err(e2s)
        },
        || {
            let any = ep
                .wait_until_any::<u64>(&SOME, None, Cmp::Ne, 0)
                .map_err(e2s)?;
            if !matches!(any, Some(1 | 3)) {
                return Err(format!("wait_until_any: {any:?}, not 1 or 3"));
            }
            let some = ep
                .wait_until_some::<u64>(&SOME, None, Cmp::Ne, 0)
                .map_err(e2s)?;
            if some.is_empty() || some.iter().any(|i| ![1, 3].contains(i)) {
                return Err(format!("wait_until_some: {some:?}"));
            }
            Ok(())
        },
    )?;
    if client.rank() == Rank(0) {
        // Both words are set now (the writer's puts completed before the
        // barrier): the test forms and the masks.
        let got = (
            ep.test_some::<u64>(&SOME, None, Cmp::Ne, 0),
            ep.test_any::<u64>(&SOME, Some(&[false, true, false, false]), Cmp::Ne, 0),
            ep.test_any::<u64>(&SOME, Some(&[false, true, false, true]), Cmp::Ne, 0),
            ep.test_all::<u64>(&SOME, None, Cmp::Eq, 1),
            ep.test_all::<u64>(&SOME, Some(&[true, false, true, false]), Cmp::Eq, 1),
            ep.wait_until_any::<u64>(&SOME, Some(&[true; 4]), Cmp::Eq, 99),
            ep.wait_until_some::<u64>(&SOME, Some(&[false, true, false, true]), Cmp::Eq, 0),
            ep.test::<u64>(SOME[0], Cmp::Eq, 0),
            ep.wait_until_all::<u64>(&[], None, Cmp::Eq, 99),
        );
        let want = "(Ok([1, 3]), Ok(Some(3)), Ok(None), Ok(false), Ok(true), Ok(None), Ok([0, 2]), Ok(true), Ok(()))";
        if format!("{got:?}") != want {
            return Err(format!("test forms and masks: {got:?}, want {want}"));
        }
        ok(
            client,
            "wait_until_any and wait_until_some on two of four words, then test, test_any, \
             test_all, test_some with and without ignore masks",
        );
    }
    Ok(())
}

fn errors(client: &Client) -> Res {
    if client.rank() != Rank(0) {
        return Ok(());
    }
    let ep = client.endpoint();
    let f = Flags::empty();
    let mine = ep.segment().len() as u64;
    let theirs = ep.conduit().segment_len(Rank(1));
    let at = |o| GlobalAddr::new(Rank(1), o);
    let cases: Vec<(&str, Result<(), Error>, Vec<String>)> = vec![
        (
            "wait_until past the segment",
            ep.wait_until::<u64>(mine, Cmp::Eq, 0).map(drop),
            vec!["rank 0".into(), format!("{mine:#x}")],
        ),
        (
            "wait_until misaligned",
            ep.test::<u32>(2, Cmp::Eq, 0).map(drop),
            vec!["rank 0".into(), "0x2".into(), "4-byte".into()],
        ),
        (
            "a mask of the wrong length",
            ep.test_all::<u64>(&ALL, Some(&[false]), Cmp::Eq, 0)
                .map(drop),
            vec!["3 offsets".into(), "mask of 1".into()],
        ),
        (
            "a signal word past the target's segment",
            ep.put_signal(at(0), b"x", Signal::add(theirs - 4, 1), f),
            vec![
                "rank 1".into(),
                format!("{:#x}", theirs - 4),
                format!("{theirs:#x}"),
            ],
        ),
        (
            "a misaligned signal word",
            ep.put_signal(at(0), b"x", Signal::add(12, 1), f),
            vec!["rank 1".into(), "0xc".into(), "8-byte".into()],
        ),
        (
            "data past the target's segment",
            ep.put_signal(at(theirs - 2), b"xyz", Signal::add(0, 1), f),
            vec![
                "rank 1".into(),
                format!("{:#x}", theirs - 2),
                format!("{theirs:#x}"),
            ],
        ),
    ];
    for (what, r, names) in cases {
        let e = match r {
            Ok(()) => return Err(format!("{what}: accepted")),
            Err(e) => e.to_string(),
        };
        if let Some(missing) = names.iter().find(|n| !e.contains(n.as_str())) {
            return Err(format!("{what}: the error does not name {missing:?}: {e}"));
        }
    }
    ok(
        client,
        "out-of-segment and misaligned words and data refused, naming the rank, offset and limit",
    );
    Ok(())
}

fn acknowledgements(client: &Client) -> Res {
    let ep = client.endpoint();
    let f = Flags::empty();
    let me = client.rank();
    if me.0 > 1 {
        // Only ranks 0 and 1 take part; the barrier is everyone's.
        return client.barrier().map_err(e2s);
    }
    let peer = Rank(1 - me.0);
    let to = GlobalAddr::new(peer, ACK_DATA);
    let mut events = Vec::new();
    for i in 0..ACK_ROUNDS {
        if me == Rank(0) {
            events.push(
                ep.put_signal_nb(to, &i.to_ne_bytes(), Signal::add(ACK_SIG, 1), f)
                    .map_err(e2s)?,
            );
        }
        ep.wait_until::<u64>(ACK_SIG, Cmp::Ge, i + 1).map_err(e2s)?;
        let got = ep.segment().read_u64(ACK_DATA).map_err(e2s)?;
        if got != i {
            return Err(format!(
                "acknowledgements: {me} got {got} in round trip {i}"
            ));
        }
        if me == Rank(1) {
            events.push(
                ep.put_signal_nb(to, &i.to_ne_bytes(), Signal::add(ACK_SIG, 1), f)
                    .map_err(e2s)?,
            );
        }
    }
    rgex::Event::wait_all(&mut events).map_err(e2s)?;
    client.barrier().map_err(e2s)?;
    // Rank 1 waits for its event while rank 0, its signal seen, polls.
    if me == Rank(1) {
        ep.put_signal(to, &[9], Signal::set(ACK_SIG, 0), f)
            .map_err(e2s)?;
        return ep
            .put_val(GlobalAddr::new(peer, ACK_DONE), 1, f)
            .map_err(e2s);
    }
    ep.wait_until::<u64>(ACK_SIG, Cmp::Eq, 0).map_err(e2s)?;
    let start = std::time::Instant::now();
    while !ep.test::<u64>(ACK_DONE, Cmp::Eq, 1).map_err(e2s)? {
        if start.elapsed() > ACK_GIVE_UP {
            return Err(format!(
                "acknowledgements: rank 1's put-with-signal never completed while rank 0 \
                 polled for {ACK_GIVE_UP:?} (path {:?})",
                ep.put_signal_path(peer)
            ));
        }
    }
    ok(
        client,
        &format!(
            "put-with-signal acknowledgements ({:?} path): a ping-pong of {ACK_ROUNDS} round \
             trips, every event complete; one completed while its target only polled",
            ep.put_signal_path(peer)
        ),
    );
    Ok(())
}

fn futures(client: &Client) -> Res {
    let ep = client.endpoint();
    let f = Flags::empty();
    let at = |o| GlobalAddr::new(Rank(0), o);
    match client.rank().0 {
        0 => {
            let progress = ep.start_progress_thread().map_err(e2s)?;
            let a = ep
                .wait_until_async::<u64>(FUT_SIG, Cmp::Eq, 1)
                .map_err(e2s)?;
            let b = ep
                .wait_until_async::<u64>(FUT_PLAIN, Cmp::Eq, 2)
                .map_err(e2s)?;
            let tasks: Vec<rgex_tests::executor::Task<'_, rgex::Result<u64>>> =
                vec![Box::pin(a), Box::pin(b)];
            // The executor parks between wakes: only the progress thread's
            // re-checks wake the tasks.
            let (got, stats) = rgex_tests::executor::run_all("wait_until_async", tasks, || false);
            progress.stop().map_err(e2s)?;
            let got: Vec<u64> = got.into_iter().collect::<rgex::Result<_>>().map_err(e2s)?;
            if got != [1, 2] || stats.foreign_wakes == 0 {
                return Err(format!("futures: {got:?}, {stats:?}"));
            }
            ok(
                client,
                "wait_until_async futures woken by the progress thread: a put-with-signal's \
                 word and a plain put's",
            );
        }
        1 => {
            std::thread::sleep(LATE);
            ep.put_signal(at(LATE_DATA), &[1], Signal::set(FUT_SIG, 1), f)
                .map_err(e2s)?;
            std::thread::sleep(LATE);
            ep.put_val(at(FUT_PLAIN), 2, f).map_err(e2s)?;
        }
        _ => {}
    }
    Ok(())
}

/// Rank 1 leaves; rank 0's wait on a word nobody writes must fail naming
/// it.
fn dead(client: &Client, how: &str, mode: &str) -> Res {
    if client.size() != 2
        || !["exit", "_exit"].contains(&how)
        || !["block", "future"].contains(&mode)
    {
        return Err(format!(
            "dead: two ranks, exit|_exit, block|future (got {how} {mode})"
        ));
    }
    client.barrier().map_err(e2s)?;
    if client.rank() == Rank(1) {
        rgex_tests::leave_job(how);
    }
    let ep = client.endpoint();
    let r = match mode {
        "block" => ep.wait_until::<u64>(LATE_SIG, Cmp::Eq, 1),
        _ => {
            let fut = ep
                .wait_until_async::<u64>(LATE_SIG, Cmp::Eq, 1)
                .map_err(e2s)?;
            // This thread drives progress: the executor polls between wakes.
            rgex_tests::executor::block_on("wait_until_async on a dead peer", fut, || {
                let _ = ep.poll();
                std::thread::sleep(Duration::from_micros(200));
                true
            })
        }
    };
    match r {
        Ok(v) => Err(format!("a wait on a word nobody writes ended with {v}")),
        Err(e) => {
            let e = e.to_string();
            if !(e.contains("rank 1") && e.contains("unreachable")) {
                return Err(format!("the wait failed without naming rank 1 gone: {e}"));
            }
            ok(
                client,
                &format!("{mode} wait on memory ended as rank 1 left ({how}): {e}"),
            );
            Ok(())
        }
    }
}
