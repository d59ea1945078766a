//! Atomic domains on the smp conduit: the implementation the domains pick
//! (shared memory on one node) and the forced active-message reference,
//! on 1, 2 and 4 ranks, with 4 threads per rank racing on the counters.

mod common;
use common::{conduit, counts, job, run, run_ok, shares_memory};

const AD: &str = env!("CARGO_BIN_EXE_atomics_conformance");

/// The implementation domains pick on this conduit when not forced: CPU
/// atomics where segments are mapped, else the conduit's offload (ofi
/// offloads the integer types on tcp and sockets, ibv the 64-bit integer
/// domains of add and compare-and-swap ops, such as the central counters;
/// scc's lock registers take every type).
fn native() -> &'static str {
    if shares_memory() {
        "SharedMemory"
    } else if std::env::var("RGEX_OFI_PROVIDER").as_deref() == Ok("shm") {
        // The ofi conduit declines shm's atomics (see BROKEN_ATOMICS in
        // conduits/ofi/src/atomics.rs).
        "Reference"
    } else {
        assert!(matches!(conduit().as_str(), "ofi" | "ibv" | "scc"));
        "Offload"
    }
}

#[test]
fn one_rank() {
    let out = run_ok(&job(1, AD, &["4", "2000"]), counts::atomics(1));
    assert!(out.contains(native()), "{out}");
}

#[test]
fn shared_memory_two_ranks() {
    let out = run_ok(&job(2, AD, &["4", "3000"]), counts::atomics(2));
    assert!(out.contains(native()), "{out}");
    if shares_memory() {
        assert!(!out.contains("Reference"), "{out}");
    }
}

#[test]
fn shared_memory_four_ranks() {
    run_ok(&job(4, AD, &["4", "2000"]), counts::atomics(4));
}

#[test]
fn reference_two_ranks() {
    let out = run_ok(
        &job(2, AD, &["4", "1000"]).env("RGEX_ATOMICS", "reference"),
        counts::atomics(2),
    );
    assert!(out.contains("Reference") && !out.contains("SharedMemory"));
}

#[test]
fn reference_four_ranks() {
    let out = run_ok(
        &job(4, AD, &["4", "500"]).env("RGEX_ATOMICS", "reference"),
        counts::atomics(4),
    );
    assert!(out.contains("Reference") && !out.contains("SharedMemory"));
}

#[test]
fn reference_with_reference_rma_two_ranks() {
    run_ok(
        &job(2, AD, &["2", "500"])
            .env("RGEX_ATOMICS", "reference")
            .env("RGEX_RMA", "reference"),
        counts::atomics(2),
    );
}

#[test]
fn three_ranks_odd_split() {
    // An odd rank count: the split-team check must pick a non-member.
    run_ok(&job(3, AD, &["2", "300"]), counts::atomics(3));
}

/// `RGEX_ATOMICS=shared|offload|reference` requires that implementation:
/// every domain takes it where every member can provide it, and creation
/// fails everywhere, saying why, where one cannot (never another
/// implementation in its place).
#[test]
fn required_implementation_two_ranks() {
    let cases = [
        ("reference", "Reference", true),
        ("shared", "SharedMemory", shares_memory()),
        // For all six types: only scc's lock registers take floats too
        // (ofi offloads the integer types only, ibv the 64-bit ones).
        ("offload", "Offload", conduit() == "scc"),
    ];
    for (env, imp, available) in cases {
        let j = job(2, AD, &["2", "300"]).env("RGEX_ATOMICS", env);
        if available {
            let out = run_ok(&j, counts::atomics(2));
            let line = out
                .lines()
                .find(|l| l.contains("atomic implementation per type"))
                .unwrap_or_else(|| panic!("RGEX_ATOMICS={env}: no implementation line in {out}"));
            assert_eq!(line.matches(imp).count(), 6, "RGEX_ATOMICS={env}: {line}");
        } else {
            let (outcome, out, err) = run(&j);
            assert_ne!(
                outcome.status,
                0,
                "RGEX_ATOMICS={env} on {} succeeded",
                conduit()
            );
            let all = format!("{out}{err}");
            assert!(
                all.contains(&format!("{imp} was required, but")),
                "RGEX_ATOMICS={env}: no clear error in {all}"
            );
        }
    }
}

/// An unknown `RGEX_ATOMICS` is refused with the values it takes.
#[test]
fn unknown_rgex_atomics_is_refused() {
    let (outcome, out, err) = run(&job(2, AD, &["2", "100"]).env("RGEX_ATOMICS", "nic"));
    assert_ne!(outcome.status, 0);
    let all = format!("{out}{err}");
    assert!(
        all.contains("RGEX_ATOMICS=\"nic\"") && all.contains("\"offload\""),
        "{all}"
    );
}
