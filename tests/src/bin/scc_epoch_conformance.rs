//! One-sided epochs on the scc conduit (post / start / complete / wait),
//! run as every rank of a job: `rgex-run -n N scc_epoch_conformance [EPOCHS] [stale]`.
//!
//! Each epoch, every (origin, target) pair is in or out by a pattern all
//! ranks compute alike (self included now and then). A target first writes
//! its exposed data (through rgex RMA to itself, so through the emulated
//! caches) and posts; an origin starts, puts a pattern of varying length
//! into its own slot of each target and gets the target's exposed data,
//! both through the normal rgex RMA calls (the conduit holds each first
//! access until the target's post), then completes; the target waits and
//! checks every slot. Every post and start comes after a random bounded
//! sleep, so ranks arrive in every order. The checker should be on
//! (`RGEX_SCC_CHECK=1`): a stale read fails the process at exit.
//!
//! With `stale`, rank 1 reads a line it cached before rank 0's put without
//! invalidating, on purpose: the job must fail and name the stale read.

use rgex::{Client, Flags, GlobalAddr, Rank};
use rgex_scc::{SccConduit, SccConfig};
use rgex_tests::{mix, ok};
use std::sync::Arc;
use std::time::Duration;

/// Bytes of each origin's slot in a target's segment.
const SLOT: u64 = 512;
/// Offset of a target's exposed data (after the slots of 48 origins).
const EXPOSED: u64 = 48 * SLOT;
const EXPOSED_LEN: usize = 96;

fn accesses(e: u32, o: u32, t: u32) -> bool {
    mix(e, o, t) % 3 >= 1
}

fn pattern(e: u32, o: u32, t: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| (mix(e, o, t ^ (j as u32) << 8) >> 5) as u8)
        .collect()
}

fn put_len(e: u32, o: u32, t: u32) -> usize {
    8 + (mix(t, o, e) % (SLOT as u32 - 8)) as usize
}

fn skew(e: u32, me: u32, what: u32) {
    let us = mix(e, me, what) % 3000;
    std::thread::sleep(Duration::from_micros(u64::from(us)));
}

fn main() -> rgex::Result<()> {
    let mut args = std::env::args().skip(1);
    let epochs: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let stale = args.next().as_deref() == Some("stale");
    // Built by hand, not by rgex::init: print rgex's diagnostics as init does.
    rgex::diagnostics::install()?;
    let (env, boot) = rgex::bootstrap::from_env()?;
    let conduit = Arc::new(SccConduit::new(&env, boot, SccConfig::from_env()?)?);
    let client = Client::new(conduit, env.polite)?;
    client.barrier()?;
    rgex_tests::conduit_banner(&client);
    let scc = client
        .endpoint()
        .conduit()
        .as_any()
        .and_then(|a| a.downcast_ref::<SccConduit>())
        .expect("the scc conduit");
    let (me, n) = (client.rank().0, client.size());
    assert!(n <= 48);
    if stale {
        return stale_on_purpose(&client, scc);
    }
    let mut poll = || {
        let _ = client.endpoint().poll();
    };
    for e in 1..=epochs {
        let origins: Vec<Rank> = (0..n).filter(|&o| accesses(e, o, me)).map(Rank).collect();
        let targets: Vec<Rank> = (0..n).filter(|&t| accesses(e, me, t)).map(Rank).collect();

        // Target side: exposed data for this epoch, then post.
        skew(e, me, 1);
        let mine = pattern(e, me, 999, EXPOSED_LEN);
        client
            .endpoint()
            .put(GlobalAddr::new(Rank(me), EXPOSED), &mine, Flags::empty())?;
        scc.post(&origins)?;

        // Origin side.
        skew(e, me, 2);
        scc.start(&targets)?;
        for &t in &targets {
            let data = pattern(e, me, t.0, put_len(e, me, t.0));
            client
                .endpoint()
                .put(GlobalAddr::new(t, me as u64 * SLOT), &data, Flags::empty())?;
            let mut got = vec![0u8; EXPOSED_LEN];
            client
                .endpoint()
                .get(&mut got, GlobalAddr::new(t, EXPOSED), Flags::empty())?;
            assert_eq!(
                got,
                pattern(e, t.0, 999, EXPOSED_LEN),
                "epoch {e}: rank {me} got stale exposed data from {t}"
            );
        }
        scc.complete_with(&mut poll)?;

        // Target side: every origin's put is in.
        scc.wait_with(&mut poll)?;
        for &o in &origins {
            let len = put_len(e, o.0, me);
            let mut got = vec![0u8; len];
            client.endpoint().get(
                &mut got,
                GlobalAddr::new(Rank(me), o.0 as u64 * SLOT),
                Flags::empty(),
            )?;
            assert_eq!(
                got,
                pattern(e, o.0, me, len),
                "epoch {e}: rank {me}: the put from {o} is missing or stale"
            );
            // Memory itself holds it (puts are drained at completion).
            let mut raw = vec![0u8; len];
            client
                .endpoint()
                .segment()
                .read(o.0 as u64 * SLOT, &mut raw)?;
            assert_eq!(
                raw, got,
                "epoch {e}: rank {me}: memory lacks the put from {o}"
            );
        }
    }
    client.barrier()?;
    ok(
        &client,
        &format!("{epochs} epochs of post/start/complete/wait with puts and gets, skewed arrival, data verified"),
    );
    // Every rank's checker report is clean (a rank with a stale read
    // fails here, and so the job) before rank 0 says so.
    scc.check_report()?;
    client.barrier()?;
    let c = scc.counters();
    ok(
        &client,
        &format!(
            "no stale read on any rank (rank 0 modelled {} cycles, {} lock acquisitions, {} invalidates, {} stale reads)",
            c.cycles, c.lock_acquires, c.invalidates, c.stale_reads
        ),
    );
    Ok(())
}

/// A protocol bug on purpose: rank 1 caches a line of its segment and
/// tells rank 0 through a private flag; rank 0 puts into the line and
/// raises a second private flag (uncached, a release); rank 1 sees it (an
/// acquire) and reads the line again without invalidating: a stale read,
/// which must fail the job. Between caching and reading, rank 1 receives no
/// AM (whose acquire would discard the line), and the flags bypass the
/// conduit.
fn stale_on_purpose(client: &Client, scc: &SccConduit) -> rgex::Result<()> {
    let me = client.rank().0;
    let plan = scc.plan();
    let line = plan.segment(1);
    // Spare uncached words of rank 1's epoch page, unused by the conduit.
    let cached = plan.epoch_counter(1).offset(64);
    let go = plan.epoch_counter(1).offset(96);
    let spin = |flag| -> rgex::Result<()> {
        let mut waited = 0;
        while scc.with_core(|c| c.read_u32_acquire(flag))? != 1 {
            std::thread::sleep(Duration::from_millis(1));
            waited += 1;
            assert!(waited < 60_000, "the other rank never raised its flag");
        }
        Ok(())
    };
    client.barrier()?;
    if me == 1 {
        scc.with_core(|c| c.read_u64(line))?;
        scc.with_core(|c| c.write_u32_release(cached, 1))?;
        spin(go)?;
        // Missing: invalidate_mpbt after the acquire.
        let v = scc.with_core(|c| c.read_u64(line))?;
        println!("rank 1 read {v:#x}");
    } else if me == 0 {
        spin(cached)?;
        client
            .endpoint()
            .put_val(GlobalAddr::new(Rank(1), 0), 0xfeed, Flags::empty())?;
        scc.with_core(|c| c.write_u32_release(go, 1))?;
    }
    client.barrier()?;
    Ok(())
}
