//! rgex-info on this machine (the reference CI machine: no RDMA device,
//! libfabric with tcp, sockets and shm, no PMIx launcher), in both forms.

use std::process::Command;

const INFO: &str = env!("CARGO_BIN_EXE_rgex-info");

fn run(args: &[&str]) -> String {
    run_with(args, &[])
}

/// rgex-info with `env` set (network on loopback only).
fn run_with(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(INFO);
    cmd.args(args)
        .env_remove("RGEX_CONDUIT")
        .env_remove("RGEX_OFI_PROVIDER")
        .env_remove("RGEX_OFI_DOMAIN")
        .env_remove("RGEX_IBV_DEVICE")
        .env_remove("RGEX_IBV_INLINE")
        .env("FI_TCP_IFACE", "lo")
        .env("FI_SOCKETS_IFACE", "lo")
        .env("RGEX_SEGMENT_SIZE", "64M");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("rgex-info runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_text_says_what_runs_here_and_why_not() {
    let out = run(&[]);
    println!("{out}");
    for needle in [
        "  smp: runnable: shared memory",
        "    max Medium: 64 KiB",
        "  ofi: runnable: libfabric 1.",
        "    inject size: ",
        "  ibv: not runnable: no RDMA device: ",
        "    soft device: available (RGEX_IBV_DEVICE=soft",
        "  scc: runnable",
        "    atomics: shared: CPU atomics on the mapped segments, every type and op",
        "    atomics: offloaded for every type and op: the chip applies each",
        "bootstrap: none: a job of one rank",
        "  RGEX_SEGMENT_SIZE =64M: segment per rank",
        "  RGEX_CONDUIT (unset): the conduit",
        "  RGEX_PMIX_LIBRARY (unset)",
    ] {
        assert!(out.contains(needle), "{needle:?} not in the output");
    }
    let providers: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("libfabric providers"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    for p in ["tcp", "sockets", "shm"] {
        assert!(
            providers.iter().any(|l| l.trim_start().starts_with(p)),
            "provider {p} not listed: {providers:?}"
        );
    }
    assert!(
        providers.iter().any(|l| l.contains("FI_RMA")),
        "capabilities are listed: {providers:?}"
    );
}

/// The lines of `out` between the one starting with `from` and the next
/// one starting with `to`.
fn section<'a>(out: &'a str, from: &str, to: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| !l.starts_with(from))
        .take_while(|l| !l.starts_with(to))
        .collect()
}

#[test]
fn ofi_atomics_are_given_per_type_and_op_with_the_reason() {
    // tcp;ofi_rxm here grants FI_ATOMIC; which ops it performs is its
    // fi_*atomicvalid answers, and rgex's own refusals are named.
    let out = run_with(&[], &[("RGEX_OFI_PROVIDER", "tcp;ofi_rxm")]);
    let ofi = section(&out, "  ofi: ", "  ibv: ");
    println!("{}", ofi.join("\n"));
    assert!(ofi[0].ends_with("provider tcp;ofi_rxm on lo"), "{}", ofi[0]);
    assert!(ofi.iter().any(|l| l.starts_with(
        "    atomics: offload through provider tcp;ofi_rxm on lo (fi_atomic, fi_fetch_atomic, fi_compare_atomic)"
    )));
    for ty in ["i32", "u32", "i64", "u64", "f32", "f64"] {
        let offloaded = ofi
            .iter()
            .find(|l| l.starts_with(&format!("      {ty} offloaded: ")))
            .unwrap_or_else(|| panic!("no {ty} line"));
        // SUM is the provider's most basic atomic: the fetch form of ADD.
        assert!(offloaded.contains(" Fadd "), "{offloaded}");
    }
    for ty in ["f32", "f64"] {
        for needle in [
            format!("      {ty} not offloaded: Min Fmin Max Fmax: never offloaded: rgex's float MIN/MAX"),
            format!("      {ty} not offloaded: And Fand Or For Xor Fxor: never offloaded: bitwise ops are for integers only"),
        ] {
            assert!(ofi.iter().any(|l| l.starts_with(&needle)), "{needle:?} not in the ofi section");
        }
    }
    // shm grants FI_ATOMIC but is on the known-broken list: nothing is
    // offloaded, and the reason says why.
    let out = run_with(&[], &[("RGEX_OFI_PROVIDER", "shm")]);
    let ofi = section(&out, "  ofi: ", "  ibv: ");
    for ty in ["i32", "u64", "f64"] {
        assert!(
            ofi.contains(&format!("      {ty} offloaded: none").as_str()),
            "{ofi:?}"
        );
        assert!(
            ofi.iter().any(|l| l.starts_with(&format!("      {ty} not offloaded: Set Get Swap"))
                && l.ends_with("libfabric 1.17's shm atomics fail rgex's exactness tests (two concurrent FADDs fetched one value)")),
            "{ofi:?}"
        );
    }
    // A provider that is not there: not runnable, with the choice's error.
    let out = run_with(&[], &[("RGEX_OFI_PROVIDER", "rgex-no-such-provider")]);
    assert!(
        out.contains(
            "  ofi: not runnable: no provider: RGEX_OFI_PROVIDER=\"rgex-no-such-provider\""
        ),
        "{out}"
    );
}

#[test]
fn ibv_atomics_are_the_64_bit_verbs_and_the_rest_go_through_am() {
    let out = run(&[]);
    let ibv = section(&out, "  ibv: ", "  scc: ");
    for needle in [
        "    atomics: offload to the HCA (a device with atomics, or the soft device) on i64/u64 only: \
         FETCH_AND_ADD (Get, Add, Fadd, Sub, Fsub, Inc, Finc, Dec, Fdec); CMP_AND_SWP (Cas, Fcas); \
         a CMP_AND_SWP loop (Set, Swap)",
        "      i64 offloaded: Set Get Swap Cas Fcas Add Fadd Sub Fsub Inc Finc Dec Fdec",
        "      u64 not offloaded: Mult Fmult Min Fmin Max Fmax And Fand Or For Xor Fxor: no verbs atomic performs it",
        "      i32 offloaded: none",
        "      f64 not offloaded: Set Get Swap Cas Fcas Add Fadd Sub Fsub Mult Fmult Min Fmin Max Fmax Inc Finc Dec Fdec And Fand Or For Xor Fxor: verbs atomics are 8-byte integer FETCH_AND_ADD and CMP_AND_SWP only",
    ] {
        assert!(
            ibv.iter().any(|l| l.starts_with(needle)),
            "{needle:?} not in {}",
            ibv.join("\n")
        );
    }
}

#[test]
fn verbs_devices_and_the_soft_device_are_described() {
    // No RDMA device on this machine: the list says why; the software
    // device is opened and described, its QP granting the inline size.
    let out = run(&[]);
    let devices = section(&out, "verbs devices:", "bootstrap:");
    println!("{}", devices.join("\n"));
    assert!(
        devices[1].starts_with("  none: no RDMA device: "),
        "{devices:?}"
    );
    assert_eq!(devices[2], "soft verbs device (RGEX_IBV_DEVICE=soft):");
    assert!(
        devices[3].starts_with(
            "  soft0: atomics IBV_ATOMIC_HCA (8-byte FETCH_AND_ADD and CMP_AND_SWP), max inline 128 B (a QP asking 128 B), max MR "
        ),
        "{devices:?}"
    );
    assert!(
        devices[4]
            .starts_with("    port 1: ACTIVE, Ethernet (RoCE), MTU 4096 B (max 4096 B), LID "),
        "{devices:?}"
    );
    // The inline size is what a real QP was granted: over the soft
    // device's limit, the QP is refused and the line says so.
    let out = run_with(&[], &[("RGEX_IBV_INLINE", "2048")]);
    let soft = section(&out, "soft verbs device", "bootstrap:");
    assert!(
        soft[1].contains("max inline unknown (a QP asking 2048 B: ")
            && soft[1].contains("exceeds the soft device's 1024"),
        "{soft:?}"
    );
    // Chosen, the soft device makes ibv runnable.
    let out = run_with(&[], &[("RGEX_IBV_DEVICE", "soft")]);
    assert!(
        out.contains("  ibv: runnable: the software verbs device soft0 (RGEX_IBV_DEVICE=soft)"),
        "{out}"
    );
    assert!(
        out.contains("    atomics: offload to the HCA (soft0) on i64/u64 only"),
        "{out}"
    );
}

#[test]
fn the_json_says_the_same() {
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"])).expect("valid JSON");
    let conduit = |name: &str| {
        v["conduits"]
            .as_array()
            .expect("a list of conduits")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {v}"))
            .clone()
    };
    assert_eq!(conduit("smp")["runnable"], true);
    assert_eq!(conduit("ofi")["runnable"], true);
    assert_eq!(conduit("scc")["runnable"], true);
    let ibv = conduit("ibv");
    assert_eq!(ibv["runnable"], false);
    assert!(
        ibv["why"].as_str().unwrap().starts_with("no RDMA device: "),
        "{ibv}"
    );
    let providers = v["providers"]["Ok"].as_array().expect("providers");
    for p in ["tcp", "sockets", "shm"] {
        assert!(
            providers
                .iter()
                .any(|e| e["provider"].as_str().unwrap().starts_with(p)),
            "{p} not in {providers:?}"
        );
    }
    assert!(v["verbs_devices"]["Err"]
        .as_str()
        .unwrap()
        .starts_with("no RDMA device"));
    let soft = &v["soft_device"];
    assert_eq!(soft["name"], "soft0");
    assert_eq!(soft["detail"]["Ok"]["atomic_cap"], "IBV_ATOMIC_HCA");
    assert_eq!(soft["detail"]["Ok"]["max_inline"]["Ok"], 128);
    assert_eq!(
        soft["detail"]["Ok"]["ports"][0]["detail"]["Ok"]["state"],
        "ACTIVE"
    );
    // Atomics per type: ibv offloads i64's ADD, never f32's.
    let types = ibv["atomics"]["types"]
        .as_array()
        .expect("ibv atomics per type");
    let of = |ty: &str| {
        types
            .iter()
            .find(|t| t["ty"] == ty)
            .expect("each type")
            .clone()
    };
    assert!(of("i64")["offloaded"]
        .as_array()
        .unwrap()
        .contains(&"Add".into()));
    assert!(of("f32")["offloaded"].as_array().unwrap().is_empty());
    assert_eq!(
        of("f32")["not"][0]["why"],
        "verbs atomics are 8-byte integer FETCH_AND_ADD and CMP_AND_SWP only"
    );
    let ofi_types = conduit("ofi")["atomics"]["types"]
        .as_array()
        .expect("ofi atomics")
        .len();
    assert_eq!(ofi_types, 6, "ofi: one entry per type");
    assert!(conduit("smp")["atomics"]["types"]
        .as_array()
        .unwrap()
        .is_empty());
    let env = v["environment"].as_array().expect("environment");
    let seg = env
        .iter()
        .find(|e| e["name"] == "RGEX_SEGMENT_SIZE")
        .expect("RGEX_SEGMENT_SIZE listed");
    assert_eq!(seg["value"], "64M");
}

#[test]
fn every_rgex_variable_the_crates_read_is_in_the_table() {
    // Every "RGEX_..." string literal in the crates' sources (tests'
    // private variables aside) must be one of rgex-info's rows.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut missing = Vec::new();
    let mut dirs: Vec<std::path::PathBuf> = [
        "core",
        "endpoint",
        "atomics",
        "vis",
        "conduits",
        "pmix",
        "rgex/src",
        "dl",
        "pgas/src",
        "tests/src",
        "benches/src",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    let mut seen = 0;
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir)
            .expect("a source directory")
            .flatten()
        {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            // The registry itself, whose examples misspell names on purpose.
            if path.ends_with("core/src/config") {
                continue;
            }
            if path.is_dir() {
                if !["tests", "examples", "gen", "target", "benches"].contains(&name.as_str()) {
                    dirs.push(path);
                }
                continue;
            }
            if !name.ends_with(".rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            for (i, _) in text.match_indices("\"RGEX_") {
                let var: String = text[i + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                // The whole literal is the name (not "RGEX_9.9", a version).
                let whole = text[i + 1 + var.len()..].starts_with('"');
                if !whole || var.contains("TEST") || var.contains("EXAMPLE") {
                    continue;
                }
                seen += 1;
                if rgex::info::lookup(&var).is_none() {
                    missing.push(format!("{var} ({})", path.display()));
                }
            }
        }
    }
    assert!(seen > 20, "the scan found only {seen} uses");
    assert!(
        missing.is_empty(),
        "not in the registry, rgex_core::config::VARS: {missing:?}"
    );
}
