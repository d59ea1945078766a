//! Network libraries are loaded at run time, only by the conduit that
//! needs them: an smp job maps no libfabric (nor the PSM and verbs
//! libraries its providers load, whose signal handlers would turn a
//! rank's crash into exit status 1), an ofi job maps libfabric, and an
//! ofi job on a machine without libfabric fails with an error that says
//! what was looked for, where, and which package provides it.

mod common;
use common::{job, run};

const LIBS: &str = env!("CARGO_BIN_EXE_job_libraries");

/// The ofi tcp row of the conduit matrix, on loopback only.
fn ofi(j: rgex::launch::Job) -> rgex::launch::Job {
    j.conduit(Some("ofi".into()))
        .env("RGEX_OFI_PROVIDER", "tcp;ofi_rxm")
        .env("FI_TCP_IFACE", "lo")
        .env("FI_SOCKETS_IFACE", "lo")
        .env("RGEX_SHM_BYPASS", "0")
}

#[test]
fn an_smp_job_maps_no_network_library() {
    let (outcome, out, _err) = run(&job(2, LIBS, &[]).conduit(Some("smp".into())));
    assert_eq!(outcome.status, 0, "{:?}", outcome.failure);
    for r in 0..2 {
        assert!(
            out.contains(&format!("rank {r}: mapped: none")),
            "rank {r} mapped a network library: {out}"
        );
    }
}

#[test]
fn an_ofi_job_maps_libfabric() {
    let (outcome, out, _err) = run(&ofi(job(2, LIBS, &[])));
    assert_eq!(outcome.status, 0, "{:?}", outcome.failure);
    for r in 0..2 {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("rank {r}: mapped: ")))
            .unwrap_or_else(|| panic!("no line from rank {r}: {out}"));
        assert!(line.contains("libfabric"), "{line}");
    }
}

#[test]
fn an_ofi_job_without_libfabric_names_the_library_and_the_packages() {
    // The library override at a path that does not exist.
    let (outcome, _out, err) =
        run(&ofi(job(1, LIBS, &[])).env("RGEX_OFI_LIBRARY", "/nonexistent/libfabric.so.1"));
    assert_ne!(outcome.status, 0);
    for needle in [
        "RGEX_CONDUIT=ofi: loading libfabric",
        "cannot load libfabric (/nonexistent/libfabric.so.1)",
        "at the path /nonexistent/libfabric.so.1 (RGEX_OFI_LIBRARY names it)",
        "Debian/Ubuntu package libfabric1",
        "RHEL/Fedora/SUSE package libfabric",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    // A name the dynamic loader searches for, with nothing to find on
    // LD_LIBRARY_PATH (an empty directory).
    let empty = std::env::temp_dir().join(format!("rgex-no-libfabric-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("an empty directory");
    let (outcome, _out, err) = run(&ofi(job(1, LIBS, &[]))
        .env("RGEX_OFI_LIBRARY", "librgex-absent-fabric.so.1")
        .env("LD_LIBRARY_PATH", &empty));
    let _ = std::fs::remove_dir(&empty);
    assert_ne!(outcome.status, 0);
    for needle in [
        "cannot load libfabric (librgex-absent-fabric.so.1)",
        &format!("LD_LIBRARY_PATH={}", empty.display()),
        "RGEX_OFI_LIBRARY names another file",
        "libfabric1",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
}

#[test]
fn no_binary_links_a_network_library() {
    // Nothing is linked at build time: the dynamic loader's list for a
    // test binary (which depends on every conduit and the PMIx
    // bootstrap) holds no network library.
    let out = std::process::Command::new("ldd")
        .arg(LIBS)
        .output()
        .expect("ldd (glibc's libc-bin) runs");
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(list.contains("libc.so"), "ldd listed nothing: {list}");
    for lib in ["libfabric", "libpmix", "libibverbs", "librdmacm", "libpsm"] {
        assert!(!list.contains(lib), "{LIBS} links {lib}: {list}");
    }
}
