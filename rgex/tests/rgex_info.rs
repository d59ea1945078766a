//! rgex-info on this machine (the reference CI machine: no RDMA device,
//! libfabric with tcp, sockets and shm, no PMIx launcher), in both forms.

use std::process::Command;

const INFO: &str = env!("CARGO_BIN_EXE_rgex-info");

fn run(args: &[&str]) -> String {
    let out = Command::new(INFO)
        .args(args)
        .env_remove("RGEX_CONDUIT")
        .env_remove("RGEX_OFI_PROVIDER")
        .env_remove("RGEX_OFI_DOMAIN")
        .env("RGEX_SEGMENT_SIZE", "64M")
        .output()
        .expect("rgex-info runs");
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
        "core", "am", "atomics", "vis", "conduits", "pmix", "rgex/src", "dl",
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
        "not in rgex::info::ENV_VARS: {missing:?}"
    );
}
