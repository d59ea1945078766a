//! RMA conformance, run as every rank of a job (or alone); the same
//! program checks the mapped path and, under `RGEX_RMA=reference`, the
//! active-message reference.
//!
//! Covers: put/get at sizes 1 B .. 8 MiB with unaligned offsets, in every
//! form (blocking, NB, NB with deferred local completion, NBI, raw, value),
//! to every rank at once; overlapping puts from all ranks into disjoint
//! slices; overwriting the source right after local completion; 10,000 NBI
//! puts in one access region; the put/get sizes again with a second
//! thread polling (which helps copy large mapped transfers, see
//! `Endpoint::share_copy`); events (test, wait, wait_all, wait_some,
//! invalid); IMMEDIATE leaving nothing behind; bad ranges; puts nobody
//! waits for (a ping-pong of NBI puts, whose data must reach a target that
//! only polls, and whose counter must finish with nobody testing it).

use rgex::{Client, Error, Event, Flags, GlobalAddr, Lc, NbiCategory, Rank, RmaPath};
use rgex_tests::{fill_pattern, ok, pattern_mismatch, skip, stalled, wait_until, with_poller};

/// Each rank owns a window of every segment: [me * WIN, (me + 1) * WIN).
fn window(client: &Client) -> u64 {
    // The smallest segment of the job (ranks may have different sizes).
    let seg = (0..client.size())
        .map(|r| client.endpoint().conduit().segment_len(Rank(r)))
        .min()
        .unwrap_or(0);
    (seg / u64::from(client.size())) & !4095
}

fn sizes(max: u64) -> Vec<usize> {
    let mut v = vec![1, 7, 8, 63, 64, 4095, 4097, 65_536 + 13];
    let mut s = 1 << 20;
    while s <= max as usize {
        v.push(s);
        s <<= 1;
    }
    v.retain(|&x| x as u64 <= max);
    v
}

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    rgex_tests::conduit_banner(&client);
    let (me, n) = (client.rank().0, client.size());
    let win = window(&client);
    let path = client.endpoint().rma_path(Rank((me + 1) % n));
    let paths: Vec<RmaPath> = (0..n)
        .map(|p| client.endpoint().rma_path(Rank(p)))
        .collect();
    ok(
        &client,
        &format!("RMA path to the next rank: {path:?} (by peer: {paths:?})"),
    );
    if std::env::var("RGEX_RMA").as_deref() == Ok("reference") {
        assert_eq!(path, RmaPath::Reference);
    }

    every_form(&client, win)?;
    at_the_target(&client, win)?;
    // Again with a thread polling, which helps with large mapped copies
    // (only those are shared: over another path this would repeat the
    // same transfers for nothing).
    if (0..n).any(|r| client.endpoint().rma_path(Rank(r)) == RmaPath::Mapped) {
        let ((), polls) = with_poller(&client, || every_form(&client, win))?;
        ok(
            &client,
            &format!("the same with a second thread polling ({polls} polls on rank 0)"),
        );
    } else {
        skip(
            &client,
            "the same with a second thread polling",
            "no peer is on the mapped path (only mapped copies are shared)",
        );
    }
    in_segment(&client, win)?;
    overlapping_slices(&client, win)?;
    local_completion(&client, win)?;
    nbi_region(&client, win)?;
    events(&client, win)?;
    tests_do_not_poll(&client, win)?;
    unwatched_puts(&client, win)?;
    bad_input(&client)?;
    immediate(&client, win)?;
    client.barrier()?;
    ok(&client, "all RMA checks passed");
    Ok(())
}

/// Put with one form, get back with another, compare; to every rank.
fn every_form(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let max = (win - 64).min(8 << 20);
    let f = Flags::empty();
    for k in 0..n {
        let peer = Rank((me + k) % n);
        let base = GlobalAddr::new(peer, u64::from(me) * win + 3); // unaligned
        for (i, &len) in sizes(max).iter().enumerate() {
            let seq = (k * 100 + i as u32) * 8;
            let form = i % 5;
            let mut src = vec![0u8; len];
            fill_pattern(&mut src, me, seq);
            match form {
                0 => client.endpoint().put(base, &src, f)?,
                1 => client.endpoint().put_nb(base, &src, f)?.wait()?,
                2 => {
                    let p = client.endpoint().put_nb_defer(base, src.clone(), f)?;
                    drop(p.lc.wait()?);
                    p.rc.wait()?;
                }
                3 => {
                    client.endpoint().put_nbi(base, &src, f)?;
                    client.endpoint().nbi_wait(NbiCategory::Put)?;
                }
                _ => {
                    // SAFETY: `src` outlives the wait below.
                    let ev = unsafe {
                        client
                            .endpoint()
                            .put_nb_raw(base, src.as_ptr(), len, Lc::Defer, f)?
                    };
                    ev.lc.wait()?;
                    ev.rc.wait()?;
                }
            }
            let back = match form {
                0 | 3 => {
                    let mut b = vec![0u8; len];
                    client.endpoint().get(&mut b, base, f)?;
                    b
                }
                1 => client.endpoint().get_nb(vec![0u8; len], base, f)?.wait()?,
                2 => {
                    let mut b = vec![0u8; len];
                    // SAFETY: `b` is not touched until the NBI sync below.
                    unsafe { client.endpoint().get_nbi(b.as_mut_ptr(), len, base, f)? };
                    client.endpoint().nbi_wait(NbiCategory::Get)?;
                    b
                }
                _ => {
                    let mut b = vec![0u8; len];
                    // SAFETY: `b` is not touched until the event fires.
                    let ev = unsafe { client.endpoint().get_nb_raw(b.as_mut_ptr(), len, base, f)? };
                    ev.wait()?;
                    b
                }
            };
            assert_eq!(
                pattern_mismatch(&back, me, seq),
                None,
                "{len} bytes to {peer} (form {form}) came back different"
            );
        }
        let v = 0x0123_4567_89ab_cdef ^ u64::from(me);
        client
            .endpoint()
            .put_val(GlobalAddr::new(peer, u64::from(me) * win + 8), v, f)?;
        assert_eq!(
            client
                .endpoint()
                .get_val(GlobalAddr::new(peer, u64::from(me) * win + 8), f)?,
            v
        );
    }
    client.barrier()?;
    ok(client, &format!("put/get 1 B .. {} KiB, unaligned, blocking/NB/NB-defer/NBI/raw/value forms, every rank to every rank", max >> 10));
    Ok(())
}

/// Sizes and forms checked where the data lands: put forms by the target
/// reading its own segment, get forms against bytes the target wrote into
/// its own segment itself (`every_form` checks puts with gets and gets
/// with puts, which a bug common to both could pass).
const AT_TARGET_SIZES: [usize; 6] = [1, 7, 63, 4097, 65_549, 262_147];
const PUT_FORMS: [&str; 6] = [
    "put",
    "put_nb",
    "put_nb_defer",
    "put_nbi",
    "put_nb_raw (Defer)",
    "put_nb_raw (Now)",
];
const GET_FORMS: [&str; 4] = ["get", "get_nb", "get_nbi", "get_nb_raw"];

/// Where form `form`'s transfer of size number `i` sits in a window, and
/// its pattern's seed for the pair (initiator, target).
fn at_target_slot(form: usize, i: usize, from: u32, to: u32) -> (u64, u32) {
    let per_form: usize = AT_TARGET_SIZES.iter().map(|s| s + 64).sum();
    let off = form * per_form + AT_TARGET_SIZES[..i].iter().map(|s| s + 64).sum::<usize>() + 5;
    let seed = (form as u32 * 16 + i as u32) ^ (to << 20) ^ (from << 12) ^ 0x5a5a_0000;
    (off as u64, seed)
}

fn at_the_target(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let f = Flags::empty();
    let (end, _) = at_target_slot(PUT_FORMS.len().max(GET_FORMS.len()), 0, 0, 0);
    assert!(
        end <= win,
        "the target-side check needs {end} bytes of a {win}-byte window"
    );
    // Puts: every rank to every rank, each form and size in a slot of its
    // own in the initiator's window of the target's segment.
    for k in 0..n {
        let to = (me + k) % n;
        for form in 0..PUT_FORMS.len() {
            for (i, &len) in AT_TARGET_SIZES.iter().enumerate() {
                let (off, seed) = at_target_slot(form, i, me, to);
                let at = GlobalAddr::new(Rank(to), u64::from(me) * win + off);
                let mut src = vec![0u8; len];
                fill_pattern(&mut src, me, seed);
                match form {
                    0 => client.endpoint().put(at, &src, f)?,
                    1 => client.endpoint().put_nb(at, &src, f)?.wait()?,
                    2 => {
                        let p = client.endpoint().put_nb_defer(at, src, f)?;
                        drop(p.lc.wait()?);
                        p.rc.wait()?;
                    }
                    3 => client.endpoint().put_nbi(at, &src, f)?,
                    4 => {
                        // SAFETY: `src` outlives both waits.
                        let ev = unsafe {
                            client
                                .endpoint()
                                .put_nb_raw(at, src.as_ptr(), len, Lc::Defer, f)?
                        };
                        ev.lc.wait()?;
                        ev.rc.wait()?;
                    }
                    _ => {
                        // SAFETY: `src` outlives the call (Now).
                        let ev = unsafe {
                            client
                                .endpoint()
                                .put_nb_raw(at, src.as_ptr(), len, Lc::Now, f)?
                        };
                        ev.rc.wait()?;
                    }
                }
            }
        }
    }
    client.endpoint().nbi_wait(NbiCategory::Put)?;
    // Every put is complete at its target before anyone reads.
    client.barrier()?;
    for from in 0..n {
        for (form, name) in PUT_FORMS.iter().enumerate() {
            for (i, &len) in AT_TARGET_SIZES.iter().enumerate() {
                let (off, seed) = at_target_slot(form, i, from, me);
                let mut got = vec![0u8; len];
                client
                    .endpoint()
                    .segment()
                    .read(u64::from(from) * win + off, &mut got)?;
                assert_eq!(
                    pattern_mismatch(&got, from, seed),
                    None,
                    "{}: {name} of {len} bytes from rank {from}, read in this rank's segment",
                    client.rank()
                );
            }
        }
    }
    // Gets: the target writes each reader's slots itself first.
    for from in 0..n {
        for form in 0..GET_FORMS.len() {
            for (i, &len) in AT_TARGET_SIZES.iter().enumerate() {
                let (off, seed) = at_target_slot(form, i, from, me);
                let mut data = vec![0u8; len];
                fill_pattern(&mut data, me, seed);
                client
                    .endpoint()
                    .segment()
                    .write(u64::from(from) * win + off, &data)?;
            }
        }
    }
    client.barrier()?;
    for k in 0..n {
        let to = (me + k) % n;
        for (form, name) in GET_FORMS.iter().enumerate() {
            for (i, &len) in AT_TARGET_SIZES.iter().enumerate() {
                let (off, seed) = at_target_slot(form, i, me, to);
                let at = GlobalAddr::new(Rank(to), u64::from(me) * win + off);
                let mut got = vec![0u8; len];
                match form {
                    0 => client.endpoint().get(&mut got, at, f)?,
                    1 => got = client.endpoint().get_nb(got, at, f)?.wait()?,
                    2 => {
                        // SAFETY: `got` is not touched until the sync below.
                        unsafe { client.endpoint().get_nbi(got.as_mut_ptr(), len, at, f)? };
                        client.endpoint().nbi_wait(NbiCategory::Get)?;
                    }
                    _ => {
                        // SAFETY: `got` is not touched until the event fires.
                        let ev =
                            unsafe { client.endpoint().get_nb_raw(got.as_mut_ptr(), len, at, f)? };
                        ev.wait()?;
                    }
                }
                assert_eq!(
                    pattern_mismatch(&got, to, seed),
                    None,
                    "{}: {name} of {len} bytes from rank {to}, written there by rank {to} itself",
                    client.rank()
                );
            }
        }
    }
    client.barrier()?;
    ok(
        client,
        &format!(
            "data checked where it lands: {} put forms read back by the target from its own segment, {} get forms of what the target wrote itself, 1 B .. 256 KiB, every rank to every rank",
            PUT_FORMS.len(),
            GET_FORMS.len()
        ),
    );
    Ok(())
}

/// All ranks put into disjoint, adjacent slices of rank 0's segment; rank
/// Sources and destinations inside this rank's own segment (registered
/// memory on a network conduit): a raw put from it, an NBI put from a
/// slice of it and a raw get into it, each compared with the pattern.
fn in_segment(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let f = Flags::empty();
    let seg = client.endpoint().segment();
    // The upper half of this rank's own window in its own segment: only
    // this rank writes there (peers write their own windows).
    let (src_off, len) = (
        u64::from(me) * win + win / 2,
        (win / 4).min(1 << 20) as usize,
    );
    let dst = GlobalAddr::new(peer, u64::from(me) * win);
    let mut pattern = vec![0u8; len];
    fill_pattern(&mut pattern, me, 4242);
    seg.write(src_off, &pattern)?;
    let check = |what: &str| -> rgex::Result<()> {
        let mut back = vec![0u8; len];
        client.endpoint().get(&mut back, dst, f)?;
        assert_eq!(back, pattern, "{what} from the segment");
        client.endpoint().put(dst, &vec![0u8; len], f)
    };
    // SAFETY: the source lies in this rank's segment (`write` checked the
    // range) and nothing writes it until both events below have fired.
    let ev = unsafe {
        client
            .endpoint()
            .put_nb_raw(dst, seg.as_ptr().add(src_off as usize), len, Lc::Defer, f)?
    };
    ev.lc.wait()?;
    ev.rc.wait()?;
    check("raw put")?;
    // SAFETY: as above; the slice is dropped before the segment is
    // written again.
    let slice = unsafe { std::slice::from_raw_parts(seg.as_ptr().add(src_off as usize), len) };
    client.endpoint().put_nbi(dst, slice, f)?;
    client.endpoint().nbi_wait(NbiCategory::Put)?;
    check("NBI put")?;
    // A get into the segment: the pattern put back first, then fetched
    // over the zeroed source range.
    client.endpoint().put(dst, &pattern, f)?;
    seg.write(src_off, &vec![0u8; len])?;
    // SAFETY: the destination lies in this rank's segment and nothing
    // reads or writes it until the event fires.
    let ev = unsafe {
        client
            .endpoint()
            .get_nb_raw(seg.as_ptr().add(src_off as usize), len, dst, f)?
    };
    ev.wait()?;
    let mut back = vec![0u8; len];
    seg.read(src_off, &mut back)?;
    assert_eq!(back, pattern, "raw get into the segment");
    client.barrier()?;
    ok(
        client,
        &format!("{len}-byte puts from and a get into this rank's own segment"),
    );
    Ok(())
}

/// 0 checks every slice after a barrier.
fn overlapping_slices(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let slice = 1000u64; // not a multiple of any line size: slices share lines
    let at = |r: u32| {
        GlobalAddr::new(
            Rank(0),
            win * u64::from(n.saturating_sub(1)) / 2 + 1 + u64::from(r) * slice,
        )
    };
    let mut src = vec![0u8; slice as usize];
    for round in 0..50u32 {
        fill_pattern(&mut src, me, 10_000 + round);
        client.endpoint().put(at(me), &src, Flags::empty())?;
    }
    client.barrier()?;
    if me == 0 {
        for r in 0..n {
            let mut b = vec![0u8; slice as usize];
            client.endpoint().segment().read(at(r).offset, &mut b)?;
            assert_eq!(
                pattern_mismatch(&b, r, 10_049),
                None,
                "slice of rank {r} damaged"
            );
        }
    }
    client.barrier()?;
    ok(
        client,
        "puts from every rank into adjacent slices sharing cache lines: no slice damaged",
    );
    Ok(())
}

/// Overwrite the source as soon as local completion fires: the target
/// holds the old bytes (read after remote completion).
fn local_completion(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let dst = GlobalAddr::new(peer, u64::from(me) * win + 5);
    let mut src = vec![0u8; 1 << 20];
    fill_pattern(&mut src, me, 500);
    let put = client.endpoint().put_nb_defer(dst, src, Flags::empty())?;
    let mut src = put.lc.wait()?;
    src.fill(0xEE);
    put.rc.wait()?;
    let back = client
        .endpoint()
        .get_nb(vec![0u8; 1 << 20], dst, Flags::empty())?
        .wait()?;
    assert_eq!(
        pattern_mismatch(&back, me, 500),
        None,
        "the target saw bytes written after local completion"
    );
    owned_buffers_of_every_kind(client, dst)?;
    // put_nb and put_nbi reach local completion at return: the source
    // overwritten at once, before remote completion, changes nothing (a
    // native path must have copied or sent it by then).
    let mut src = vec![0u8; 1 << 20];
    for (k, len) in [8usize, 4096, 65536, 1 << 20].into_iter().enumerate() {
        for nbi in [false, true] {
            // A pattern per form, so each pass must write its own.
            let seq = 600 + 2 * k as u32 + u32::from(nbi);
            fill_pattern(&mut src[..len], me, seq);
            let ev = if nbi {
                client
                    .endpoint()
                    .put_nbi(dst, &src[..len], Flags::empty())?;
                None
            } else {
                Some(client.endpoint().put_nb(dst, &src[..len], Flags::empty())?)
            };
            src[..len].fill(0xEE);
            match ev {
                Some(ev) => ev.wait()?,
                None => client.endpoint().nbi_wait(NbiCategory::Put)?,
            }
            let back = client
                .endpoint()
                .get_nb(vec![0u8; len], dst, Flags::empty())?
                .wait()?;
            assert_eq!(
                pattern_mismatch(&back, me, seq),
                None,
                "{len}-byte {}: the target saw the source overwritten after return",
                if nbi { "put_nbi" } else { "put_nb" }
            );
        }
    }
    client.barrier()?;
    ok(
        client,
        "local completion: a source overwritten after put_nb_defer's LC, and after put_nb and put_nbi return (8 B to 1 MiB), leaves the target holding the old data; put_nb_defer and get_nb take Vec, Box<[u8]> and BytesMut and hand back the same allocation",
    );
    Ok(())
}

fn nbi_region(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let base = u64::from(me) * win;
    client.endpoint().nbi_begin_region()?;
    let e = client
        .endpoint()
        .nbi_begin_region()
        .expect_err("a second region on one thread must be refused");
    assert!(
        e.to_string().contains("already has an open access region"),
        "{e}"
    );
    for i in 0..10_000u64 {
        client.endpoint().put_nbi(
            GlobalAddr::new(peer, base + 8 * i),
            &(i ^ 0xABCD).to_ne_bytes(),
            Flags::empty(),
        )?;
    }
    client.endpoint().nbi_end_region()?.wait()?;
    let mut back = vec![0u8; 80_000];
    client
        .endpoint()
        .get(&mut back, GlobalAddr::new(peer, base), Flags::empty())?;
    for (i, c) in back.chunks_exact(8).enumerate() {
        assert_eq!(
            u64::from_ne_bytes(c.try_into().unwrap()),
            i as u64 ^ 0xABCD,
            "NBI put {i} not visible"
        );
    }
    let e = client
        .endpoint()
        .nbi_end_region()
        .expect_err("no region is open any more");
    assert!(e.to_string().contains("no open access region"), "{e}");
    client.barrier()?;
    ok(
        client,
        "NBI: 10,000 puts in one access region, one wait, all visible",
    );
    Ok(())
}

/// `test` and `nbi_test` do not poll, on every path: an AM that has had
/// time to arrive (a nap long enough for any conduit here) is not handled
/// while its receiver only tests pending events and the categories, and
/// the next poll handles it. Ranks take turns: even ranks test while odd
/// ones send (to the rank before them), then the other way round.
fn tests_do_not_poll(client: &Client, win: u64) -> rgex::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let (me, n) = (client.rank().0, client.size());
    if n == 1 {
        skip(
            client,
            "test and nbi_test do not poll",
            "one rank (an AM to self may run at once)",
        );
        return Ok(());
    }
    let knocks = Arc::new(AtomicU64::new(0));
    let k = knocks.clone();
    let knock = client
        .endpoint()
        .handlers()
        .register("knock", move |_, _| {
            k.fetch_add(1, Ordering::Relaxed);
        })?;
    // A VIS put through the AM pipeline stays pending until its reply is
    // polled for, whatever the path: an event to test on every conduit.
    let vis = rgex::Vis::builder()
        .mechanism(rgex::VisMechanism::Am)
        .build(client.endpoint())?;
    let peer = Rank((me + 1) % n);
    let base = u64::from(me) * win;
    let mut checked = 0;
    // Knocks sent to this rank so far (one per attempt of its turn).
    let mut expected = 0u64;
    for turn in 0..2 {
        let testing = me % 2 == turn;
        // A sender's target: the rank before it, which tests this turn.
        let target = (!testing && me > 0).then(|| Rank(me - 1));
        // A knock that arrives while its receiver still polls (in the
        // barrier, or sending) proves nothing: try again, a few times.
        for _attempt in 0..5 {
            // Every rank has the handler (and is done sending) first.
            client.barrier()?;
            if let Some(t) = target {
                std::thread::sleep(Duration::from_millis(10));
                client
                    .endpoint()
                    .request_short(t, knock, &[], Flags::empty())?;
            }
            let mut fair = true;
            if testing {
                let mut got = vec![0u8; 64];
                // SAFETY: `got` is not touched until the event is waited on.
                let ev = unsafe {
                    client.endpoint().get_nb_raw(
                        got.as_mut_ptr(),
                        got.len(),
                        GlobalAddr::new(peer, base),
                        Flags::empty(),
                    )?
                };
                client.endpoint().put_nbi(
                    GlobalAddr::new(peer, base + 4096),
                    &[5u8; 64],
                    Flags::empty(),
                )?;
                let indexed = rgex::Indexed {
                    peer: &[base + 8192],
                    peer_len: 64,
                    local: &[0],
                    local_len: 64,
                };
                let vput = vis.put_nb(peer, indexed, &[6u8; 64], Flags::empty())?;
                // The injections above may poll: count from here.
                let from = knocks.load(Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(60));
                for _ in 0..1000 {
                    let _ = ev.test() | vput.rc.test();
                    let _ = client.endpoint().nbi_test(NbiCategory::Put);
                    let _ = client.endpoint().nbi_test(NbiCategory::Get);
                }
                assert_eq!(
                    knocks.load(Ordering::Relaxed),
                    from,
                    "{}: an AM was handled while this rank only tested events and the categories (test and nbi_test must not poll)",
                    client.rank()
                );
                if me + 1 < n {
                    // This attempt's knock, from the next rank: fair if it
                    // was not handled before the tests began (in the
                    // barrier, or while injecting); the next poll runs it.
                    expected += 1;
                    fair = from < expected;
                    wait_until(client, "the knock from the next rank", || {
                        knocks.load(Ordering::Relaxed) >= expected
                    });
                    checked += u32::from(fair);
                }
                ev.wait()?;
                vput.rc.wait()?;
                client.endpoint().nbi_wait(NbiCategory::Put)?;
            }
            // Whether every tester saw its knock arrive unpolled.
            let all_fair = client
                .world()
                .allreduce(&[u64::from(fair)], rgex::ReduceOp::Min)?;
            if all_fair == [1] {
                break;
            }
        }
    }
    // At least one turn somewhere must have tested with its knock in
    // flight, or this check proved nothing.
    let total = client
        .world()
        .allreduce(&[u64::from(checked)], rgex::ReduceOp::Sum)?[0];
    assert!(
        total > 0,
        "no rank tested with a knock in flight: every one arrived while its receiver polled (a loaded machine?)"
    );
    ok(
        client,
        &format!("test and nbi_test do not poll: an AM that has arrived waits for the next poll ({total} turns checked)"),
    );
    Ok(())
}

fn events(client: &Client, win: u64) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    let peer = Rank((me + 1) % n);
    let base = u64::from(me) * win;
    let invalid = Event::done();
    assert!(invalid.test() && invalid.is_invalid());
    let mut evs: Vec<Event> = (0..16u64)
        .map(|i| {
            client.endpoint().put_nb(
                GlobalAddr::new(peer, base + 4096 * i),
                &[i as u8; 4096],
                Flags::empty(),
            )
        })
        .collect::<rgex::Result<_>>()?;
    evs.push(Event::done());
    // Operations that completed during injection return invalid events (as
    // on the mapped path); wait_some reports each of the others once.
    let pending = evs.iter().filter(|e| !e.is_invalid()).count();
    let mut seen = 0;
    while evs.iter().any(|e| !e.is_invalid()) {
        seen += Event::wait_some(&mut evs)?.len();
    }
    assert_eq!(seen, pending, "wait_some reported every pending event once");
    assert!(
        Event::wait_some(&mut evs)?.is_empty(),
        "only invalid events left"
    );
    let mut evs: Vec<Event> = (0..8u64)
        .map(|i| {
            client.endpoint().put_nb(
                GlobalAddr::new(peer, base + 4096 * i),
                &[1; 4096],
                Flags::empty(),
            )
        })
        .collect::<rgex::Result<_>>()?;
    Event::wait_all(&mut evs)?;
    assert!(evs.iter().all(Event::is_invalid));
    // `test` does not poll: on the reference path a get completes only
    // when this rank runs the reply, so without a poll it stays pending
    // (bounded: 200 tests 50 us apart), and `wait`, which polls, ends it.
    let mut got = vec![0u8; 64];
    // SAFETY: `got` is not touched until the event below is waited on.
    let ev = unsafe {
        client.endpoint().get_nb_raw(
            got.as_mut_ptr(),
            got.len(),
            GlobalAddr::new(peer, base),
            Flags::empty(),
        )?
    };
    let reference = client.endpoint().rma_path(peer) == RmaPath::Reference;
    let mut early = false;
    for _ in 0..200 {
        early |= ev.test();
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    if reference {
        assert!(
            !early,
            "test() completed a get whose reply this rank never polled for"
        );
    }
    ev.wait()?;
    assert_eq!(got, [1u8; 64], "the get read what the last puts wrote");
    // The same for implicit operations: `nbi_test` does not poll, and a
    // category's sync waits for that category only (a sync of one with
    // nothing outstanding returns without polling, leaving the others).
    let mut got_nbi = vec![0u8; 64];
    client.endpoint().put_nbi(
        GlobalAddr::new(peer, base + 16 * 4096),
        &[7u8; 64],
        Flags::empty(),
    )?;
    // SAFETY: `got_nbi` is not touched until the get category's sync below.
    unsafe {
        client.endpoint().get_nbi(
            got_nbi.as_mut_ptr(),
            got_nbi.len(),
            GlobalAddr::new(peer, base),
            Flags::empty(),
        )?
    };
    let mut early = [false; 2];
    for _ in 0..200 {
        early[0] |= client.endpoint().nbi_test(NbiCategory::Put);
        early[1] |= client.endpoint().nbi_test(NbiCategory::Get);
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    client.endpoint().nbi_wait(NbiCategory::Rmw)?;
    if reference {
        assert_eq!(
            early, [false; 2],
            "nbi_test completed an implicit put or get whose answer this rank never polled for"
        );
        assert!(
            !client.endpoint().nbi_test(NbiCategory::Get),
            "the sync of the (idle) atomics category completed the gets"
        );
    }
    client.endpoint().nbi_wait(NbiCategory::Get)?;
    assert_eq!(
        got_nbi, [1u8; 64],
        "the implicit get read what the puts wrote"
    );
    client.endpoint().nbi_wait(NbiCategory::Put)?;
    assert!(
        client.endpoint().nbi_test(NbiCategory::Put)
            && client.endpoint().nbi_test(NbiCategory::Get)
    );
    // wait_all and wait_some over events of different kinds at once: puts,
    // gets and a VIS put.
    let vis = rgex::Vis::new(client.endpoint())?;
    let mut back = vec![0u8; 8 * 4096];
    let mut evs: Vec<Event> = Vec::new();
    for i in 0..8u64 {
        let at = GlobalAddr::new(peer, base + 4096 * i);
        evs.push(
            client
                .endpoint()
                .put_nb(at, &[2 + i as u8; 4096], Flags::empty())?,
        );
    }
    let strided = rgex::Strided {
        elem_size: 8,
        counts: &[64],
        peer_offset: base + 8 * 4096,
        peer_strides: &[32],
        local_offset: 0,
        local_strides: &[8],
    };
    evs.push(vis.put_nb(peer, strided, &[9u8; 512], Flags::empty())?.rc);
    let mut kinds = Vec::new();
    while evs.iter().any(|e| !e.is_invalid()) {
        kinds.extend(Event::wait_some(&mut evs)?);
    }
    for i in 0..8u64 {
        let chunk = &mut back[4096 * i as usize..4096 * (i + 1) as usize];
        // SAFETY: each chunk is a distinct part of `back`, untouched until
        // the wait_all below.
        evs.push(unsafe {
            client.endpoint().get_nb_raw(
                chunk.as_mut_ptr(),
                chunk.len(),
                GlobalAddr::new(peer, base + 4096 * i),
                Flags::empty(),
            )?
        });
    }
    let mut vis_back = vec![0u8; 512];
    vis.get(peer, strided, &mut vis_back, Flags::empty())?;
    Event::wait_all(&mut evs)?;
    assert!(evs.iter().all(Event::is_invalid));
    for i in 0..8usize {
        assert!(
            back[4096 * i..4096 * (i + 1)]
                .iter()
                .all(|&b| b == 2 + i as u8),
            "chunk {i} of the mixed set"
        );
    }
    assert!(
        vis_back.iter().all(|&b| b == 9),
        "the VIS put of the mixed set"
    );
    client.barrier()?;
    ok(
        client,
        &format!(
            "events: test and nbi_test do not poll ({}), a category's sync waits for its own only, wait, wait_all, wait_some over puts, gets and a VIS put ({} reported), invalid events",
            if reference { "a reference-path get stayed pending without a poll" } else { "checked on the reference path only: mapped copies and native RMA may complete without this rank's poll" },
            kinds.len()
        ),
    );
    Ok(())
}

/// put_nb_defer and get_nb with each kind of owned buffer (issue 28
/// point 4): the bytes arrive, and the buffer handed back is the same
/// allocation that was given.
fn owned_buffers_of_every_kind(client: &Client, dst: GlobalAddr) -> rgex::Result<()> {
    let me = client.rank().0;
    let f = Flags::empty();
    let mut pattern = vec![0u8; 4096];
    fill_pattern(&mut pattern, me, 501);
    let boxed: Box<[u8]> = pattern.clone().into_boxed_slice();
    let at = boxed.as_ptr();
    let put = client.endpoint().put_nb_defer(dst, boxed, f)?;
    let boxed = put.lc.wait()?;
    assert_eq!(boxed.as_ptr(), at, "put_nb_defer hands back the same Box");
    put.rc.wait()?;
    let into: Box<[u8]> = vec![0u8; 4096].into_boxed_slice();
    let at = into.as_ptr();
    let got = client.endpoint().get_nb(into, dst, f)?.wait()?;
    assert_eq!(got.as_ptr(), at, "get_nb hands back the same Box");
    assert_eq!(
        pattern_mismatch(&got, me, 501),
        None,
        "a Box put, got into a Box"
    );

    fill_pattern(&mut pattern, me, 502);
    let bytes = bytes::BytesMut::from(&pattern[..]);
    let at = bytes.as_ptr();
    let put = client.endpoint().put_nb_defer(dst, bytes, f)?;
    let bytes = put.lc.wait()?;
    assert_eq!(
        bytes.as_ptr(),
        at,
        "put_nb_defer hands back the same BytesMut"
    );
    put.rc.wait()?;
    let into = bytes::BytesMut::zeroed(4096);
    let at = into.as_ptr();
    let got = client.endpoint().get_nb(into, dst, f)?.wait()?;
    assert_eq!(got.as_ptr(), at, "get_nb hands back the same BytesMut");
    assert_eq!(
        pattern_mismatch(&got, me, 502),
        None,
        "a BytesMut put, got into a BytesMut"
    );
    let into = vec![0u8; 4096];
    let at = into.as_ptr();
    let got = client.endpoint().get_nb(into, dst, f)?.wait()?;
    assert_eq!(got.as_ptr(), at, "get_nb hands back the same Vec");
    assert_eq!(pattern_mismatch(&got, me, 502), None, "got into a Vec");
    Ok(())
}

/// A put_nb_defer or get_nb that does not start (the range is past the
/// end of `peer`'s segment of `seg` bytes) hands back the very buffer it
/// was given, untouched, inside its error.
fn owned_buffers_come_back_from_a_failed_start(client: &Client, peer: Rank, seg: u64, f: Flags) {
    let past = GlobalAddr::new(peer, seg);
    let check = |e: &rgex::Error, what: &str| {
        assert!(
            matches!(e, Error::OutOfSegment { .. }) && e.to_string().contains(&format!("{peer}")),
            "{what}: {e}"
        );
    };
    let v = vec![7u8; 16];
    let at = v.as_ptr();
    let (e, v) = client
        .endpoint()
        .get_nb(v, past, f)
        .unwrap_err()
        .into_parts();
    check(&e, "get_nb of a Vec");
    assert_eq!(
        (v.as_ptr(), v.as_slice()),
        (at, &[7u8; 16][..]),
        "get_nb's Vec came back"
    );
    let (e, v) = client
        .endpoint()
        .put_nb_defer(past, v, f)
        .unwrap_err()
        .into_parts();
    check(&e, "put_nb_defer of a Vec");
    assert_eq!(v.as_ptr(), at, "put_nb_defer's Vec came back");
    let b: Box<[u8]> = vec![3u8; 16].into_boxed_slice();
    let at = b.as_ptr();
    let (e, b) = client
        .endpoint()
        .put_nb_defer(past, b, f)
        .unwrap_err()
        .into_parts();
    check(&e, "put_nb_defer of a Box");
    assert_eq!(
        (b.as_ptr(), &b[..]),
        (at, &[3u8; 16][..]),
        "put_nb_defer's Box came back"
    );
    let (e, b) = client
        .endpoint()
        .get_nb(b, past, f)
        .unwrap_err()
        .into_parts();
    check(&e, "get_nb of a Box");
    assert_eq!(b.as_ptr(), at, "get_nb's Box came back");
    let m = bytes::BytesMut::zeroed(16);
    let at = m.as_ptr();
    let err = client.endpoint().get_nb(m, past, f).unwrap_err();
    check(err.error(), "get_nb of a BytesMut");
    assert_eq!(
        err.into_buffer().as_ptr(),
        at,
        "get_nb's BytesMut came back"
    );
}

fn bad_input(client: &Client) -> rgex::Result<()> {
    let (me, n) = (client.rank().0, client.size());
    // Every rank's idea of every segment's length is that rank's own (the
    // job may give ranks different sizes: see tests/tests/rma.rs).
    let mut own = vec![0u64; n as usize];
    own[me as usize] = client.endpoint().segment().len() as u64;
    let own = client.world().allreduce(&own, rgex::ReduceOp::Sum)?;
    for (r, &len) in own.iter().enumerate() {
        assert_eq!(
            client.endpoint().conduit().segment_len(Rank(r as u32)),
            len,
            "{}'s length of rank {r}'s segment",
            client.rank()
        );
    }
    let peer = Rank((me + 1) % n);
    let seg = client.endpoint().conduit().segment_len(peer);
    let f = Flags::empty();
    let e = client
        .endpoint()
        .put(GlobalAddr::new(peer, seg - 4), &[0; 8], f)
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::OutOfSegment { .. }), "{text}");
    assert!(
        text.contains(&format!("rank {}", peer.0))
            && text.contains(&format!("{:#x}", seg - 4))
            && text.contains(&format!("{seg:#x}")),
        "{text}"
    );
    let e = client
        .endpoint()
        .get(&mut [0; 8], GlobalAddr::new(peer, u64::MAX - 3), f)
        .unwrap_err();
    assert!(
        matches!(e, Error::OutOfSegment { .. }),
        "overflowing offset: {e}"
    );
    let e = client
        .endpoint()
        .put(GlobalAddr::new(Rank(n), 0), &[0; 8], f)
        .unwrap_err();
    assert!(
        matches!(e, Error::RankOutOfRange { .. }) && e.to_string().contains(&format!("{n} ranks")),
        "{e}"
    );
    let e = client
        .endpoint()
        .get_nb(vec![0; 16], GlobalAddr::new(peer, seg), f)
        .unwrap_err();
    assert!(matches!(e.error, Error::OutOfSegment { .. }), "{e}");
    owned_buffers_come_back_from_a_failed_start(client, peer, seg, f);
    // Every form checks the range (each of these asks for 8 bytes), with
    // the same error: past the end and with an offset that overflows.
    let forms = every_form_of_8_bytes(client);
    for at in [seg - 4, u64::MAX - 3] {
        for (name, op) in &forms {
            let e = op(GlobalAddr::new(peer, at))
                .err()
                .unwrap_or_else(|| panic!("{name} of 8 bytes at {at:#x} on {peer} was accepted"));
            let text = e.to_string();
            assert!(
                matches!(e, Error::OutOfSegment { .. })
                    && text.contains(&format!("rank {}", peer.0))
                    && text.contains(&format!("{at:#x}"))
                    && text.contains(&format!("{seg:#x}")),
                "{name} at {at:#x}: {text}"
            );
        }
    }
    client.endpoint().nbi_wait(NbiCategory::Put)?;
    client.endpoint().nbi_wait(NbiCategory::Get)?;
    // Zero bytes at the very end is inside the segment.
    client.endpoint().put(GlobalAddr::new(peer, seg), &[], f)?;
    client.barrier()?;
    ok(client, &format!("bad ranges: past the end and overflowing offsets refused by all {} forms of put and get, bad rank: errors name rank, offset and segment size (segment lengths by rank: {own:?}, each rank's own as every rank sees it)", forms.len()));
    Ok(())
}

/// A name and a call for every form of put and get, each moving 8 bytes
/// to or from the address it is given (and dropping whatever it returns).
#[allow(clippy::type_complexity)]
fn every_form_of_8_bytes(
    client: &Client,
) -> Vec<(
    &'static str,
    Box<dyn Fn(GlobalAddr) -> rgex::Result<()> + '_>,
)> {
    let f = Flags::empty();
    // Only ever written by a get that was refused (nothing moves then);
    // leaked, so that a get that wrongly went through has somewhere to land.
    let sink: &'static mut [u8] = Box::leak(vec![0u8; 8].into_boxed_slice());
    let sink = sink.as_mut_ptr() as usize;
    let src = [0u8; 8];
    vec![
        ("put", Box::new(move |a| client.endpoint().put(a, &src, f))),
        (
            "put_val",
            Box::new(move |a| client.endpoint().put_val(a, 7, f)),
        ),
        (
            "put_nb",
            Box::new(move |a| client.endpoint().put_nb(a, &src, f).map(drop)),
        ),
        (
            "put_nbi",
            Box::new(move |a| client.endpoint().put_nbi(a, &src, f)),
        ),
        (
            "put_nb_defer",
            Box::new(move |a| Ok(client.endpoint().put_nb_defer(a, vec![0; 8], f).map(drop)?)),
        ),
        (
            "put_nb_raw (Now)",
            Box::new(move |a| {
                // SAFETY: `src` (in the closure) outlives the call, which
                // is all Now asks; a refused put reads nothing.
                unsafe { client.endpoint().put_nb_raw(a, src.as_ptr(), 8, Lc::Now, f) }.map(drop)
            }),
        ),
        (
            "put_nb_raw (Defer)",
            Box::new(move |a| {
                // SAFETY: a refused put reads nothing. One wrongly accepted
                // could read `src` (in the closure) after this returns, but
                // the caller fails at once on an accepted form, and the
                // closure lives until the check is over.
                unsafe {
                    client
                        .endpoint()
                        .put_nb_raw(a, src.as_ptr(), 8, Lc::Defer, f)
                }
                .map(drop)
            }),
        ),
        (
            "get",
            Box::new(move |a| client.endpoint().get(&mut [0; 8], a, f)),
        ),
        (
            "get_val",
            Box::new(move |a| client.endpoint().get_val(a, f).map(drop)),
        ),
        (
            "get_nb",
            Box::new(move |a| Ok(client.endpoint().get_nb(vec![0; 8], a, f).map(drop)?)),
        ),
        (
            "get_nb_raw",
            Box::new(move |a| {
                let ep = client.endpoint();
                // SAFETY: the leaked sink lives for the program.
                unsafe { ep.get_nb_raw(sink as *mut u8, 8, a, f) }.map(drop)
            }),
        ),
        (
            "get_nbi",
            // SAFETY: as above.
            Box::new(move |a| unsafe { client.endpoint().get_nbi(sink as *mut u8, 8, a, f) }),
        ),
    ]
}

/// IMMEDIATE puts to a rank that does not poll. Every path: the puts
/// accepted all arrive, a refused one writes nothing, and its retry (once
/// the rank polls again) arrives. On the mapped path nothing can block, so
/// none is refused; on the reference path, one must be; on the native
/// path either is right (RDMA may go through without the target, or run
/// out of transmit resources).
fn immediate(client: &Client, win: u64) -> rgex::Result<()> {
    let me = client.rank().0;
    let dst = |i: u64| GlobalAddr::new(Rank(1), stalled::slot(i));
    let path = client.endpoint().rma_path(Rank(1));
    let Some(f) = stalled::flood(
        client,
        (win / 64).min(1 << 16),
        64,
        // Non-blocking: a blocking put would wait for rank 1's answer.
        |i| {
            client
                .endpoint()
                .put_nb(dst(i), &[stalled::PATTERN; 64], Flags::IMMEDIATE)
        },
        // Where nothing needs rank 1, a thousand make the point.
        |i| path != RmaPath::Reference && i == 1000,
    )?
    else {
        skip(
            client,
            "IMMEDIATE put to a rank that does not poll",
            "one rank",
        );
        return Ok(());
    };
    if me == 0 {
        match path {
            RmaPath::Mapped => assert_eq!(f.refused_at, None, "the mapped path never blocks"),
            RmaPath::Reference => assert!(
                f.refused_at.is_some(),
                "the reference path must block against a rank that does not poll"
            ),
            RmaPath::Native => {}
        }
    }
    client.barrier()?; // rank 1 has looked before rank 0 retries
    if let (0, Some(i)) = (me, f.refused_at) {
        client
            .endpoint()
            .put(dst(i), &[stalled::PATTERN; 64], Flags::IMMEDIATE)
            .or_else(|e| {
                assert!(e.is_would_block());
                client
                    .endpoint()
                    .put(dst(i), &[stalled::PATTERN; 64], Flags::empty())
            })?;
    }
    client.barrier()?;
    if let (1, Some(i)) = (me, f.refused_at) {
        let mut got = [0u8; 64];
        client
            .endpoint()
            .segment()
            .read(stalled::slot(i), &mut got)?;
        assert!(
            got.iter().all(|&b| b == stalled::PATTERN),
            "{}: the retry of refused IMMEDIATE put {i} did not arrive",
            client.rank()
        );
    }
    client.barrier()?;
    let what = match f.refused_at {
        None => format!("none refused, all {} arrived", f.issued),
        Some(i) => format!("refused at put {i} having written nothing, the {i} before it arrived, and so did its retry"),
    };
    ok(
        client,
        &format!("IMMEDIATE puts over the {path:?} path to a rank that does not poll: {what}"),
    );
    Ok(())
}

/// Puts nobody waits for. Conduits that learn of a put's arrival only
/// when asked (ofi's read back over software providers) must still move
/// the data at once, and finish the counter eventually with nobody
/// testing it. A ping-pong of NBI puts between ranks 0 and 1 (each round's
/// 64 bytes checked at the target, which only polls), then each watches
/// its put counter with `peek_done` (which asks for nothing) while
/// polling, for at most a minute.
fn unwatched_puts(client: &Client, win: u64) -> rgex::Result<()> {
    use std::time::{Duration, Instant};
    const ROUNDS: u64 = 200;
    let patience = Duration::from_secs(60);
    let (me, n) = (client.rank().0, client.size());
    client.barrier()?;
    if me < 2 && n >= 2 {
        let peer = Rank(1 - me);
        let seg = client.endpoint().segment();
        // A rank's puts land in its own window of the peer's segment
        // (the round mod 251 in 56 bytes, then the round as a tag).
        let (mine, theirs) = (u64::from(me) * win, u64::from(peer.0) * win);
        let put = |round: u64| {
            let mut buf = [(round % 251) as u8; 64];
            buf[56..].copy_from_slice(&round.to_le_bytes());
            client
                .endpoint()
                .put_nbi(GlobalAddr::new(peer, mine), &buf, Flags::empty())
        };
        let arrived = |round: u64| -> rgex::Result<()> {
            let start = Instant::now();
            loop {
                let mut got = [0u8; 64];
                seg.read(theirs, &mut got)?;
                let tag = u64::from_le_bytes(got[56..].try_into().expect("8 bytes"));
                // Only the tag: the order in which a put's bytes become
                // visible is not promised (the data is checked at the end).
                if tag == round {
                    return Ok(());
                }
                client.endpoint().poll()?;
                assert!(
                    start.elapsed() < patience,
                    "{}: round {round}'s NBI put from {peer} did not arrive in {patience:?} (the word holds {tag})",
                    client.rank()
                );
            }
        };
        for round in 1..=ROUNDS {
            if me == 0 {
                put(round)?;
                arrived(round)?;
            } else {
                arrived(round)?;
                put(round)?;
            }
        }
        // Nobody has tested this thread's put counter: it must finish
        // while the rank only polls.
        let counter = client.endpoint().nbi_counter(NbiCategory::Put);
        let start = Instant::now();
        while !counter.peek_done() {
            client.endpoint().poll()?;
            assert!(
                start.elapsed() < patience,
                "{}: NBI puts to {peer} that nobody tested did not complete in {patience:?} while this rank polled ({} outstanding)",
                client.rank(),
                counter.outstanding()
            );
        }
        client.endpoint().nbi_wait(NbiCategory::Put)?;
    }
    client.barrier()?;
    if me < 2 && n >= 2 {
        // Every put has completed (both waited, then the barrier): the
        // last round is whole.
        let mut got = [0u8; 64];
        client
            .endpoint()
            .segment()
            .read(u64::from(1 - me) * win, &mut got)?;
        let mut want = [(ROUNDS % 251) as u8; 64];
        want[56..].copy_from_slice(&ROUNDS.to_le_bytes());
        assert_eq!(
            got,
            want,
            "{}: the last round's put from rank {} is not whole",
            client.rank(),
            1 - me
        );
    }
    if n >= 2 {
        ok(
            client,
            &format!("unwatched NBI puts: a {ROUNDS}-round ping-pong landed at targets that only poll, and its counter finished untested"),
        );
    } else {
        skip(client, "unwatched NBI puts", "one rank");
    }
    Ok(())
}
