//! The plain-text form of the report.

use super::{AtomicsReport, DeviceReport, Report};
use std::fmt::Write;

/// The report as sections of indented lines.
pub fn text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "conduits:");
    for c in &r.conduits {
        let state = if c.runnable {
            "runnable"
        } else {
            "not runnable"
        };
        let _ = writeln!(s, "  {}: {state}: {}", c.name, c.why);
        for (what, value) in &c.limits {
            let _ = writeln!(s, "    {what}: {value}");
        }
        atomics(&mut s, &c.atomics);
    }
    let _ = writeln!(s, "libfabric providers (RDM):");
    match &r.providers {
        Ok(list) => {
            for p in list {
                let _ = writeln!(
                    s,
                    "  {} domain {} fabric {}: {} inject {} B, max message {}",
                    p.provider,
                    p.domain,
                    p.fabric,
                    p.caps.join("|"),
                    p.inject_size,
                    if p.max_msg_size >= usize::MAX / 2 {
                        "unlimited".to_string()
                    } else {
                        format!("{} B", p.max_msg_size)
                    }
                );
            }
        }
        Err(e) => {
            let _ = writeln!(s, "  none: {e}");
        }
    }
    let _ = writeln!(s, "verbs devices:");
    match &r.verbs_devices {
        Ok(list) if list.is_empty() => {
            let _ = writeln!(s, "  none");
        }
        Ok(list) => list.iter().for_each(|d| device(&mut s, d)),
        Err(e) => {
            let _ = writeln!(s, "  none: {e}");
        }
    }
    let _ = writeln!(s, "soft verbs device (RGEX_IBV_DEVICE=soft):");
    device(&mut s, &r.soft_device);
    let _ = writeln!(s, "bootstrap: {}", r.bootstrap);
    let _ = writeln!(s, "environment:");
    for e in &r.environment {
        let value = e
            .value
            .as_deref()
            .map_or("(unset)".to_string(), |v| format!("={v}"));
        let _ = writeln!(
            s,
            "  {} {value}: {}; unset: {}; read by {}",
            e.name, e.meaning, e.unset, e.reader
        );
    }
    s
}

/// A conduit's atomics: the mechanism, then per type the ops offloaded
/// and the others with why.
fn atomics(s: &mut String, a: &AtomicsReport) {
    let _ = writeln!(s, "    atomics: {}", a.how);
    for t in &a.types {
        let offloaded = if t.offloaded.is_empty() {
            "none".to_string()
        } else {
            t.offloaded.join(" ")
        };
        let _ = writeln!(s, "      {} offloaded: {offloaded}", t.ty);
        for n in &t.not {
            let _ = writeln!(
                s,
                "      {} not offloaded: {}: {}",
                t.ty,
                n.ops.join(" "),
                n.why
            );
        }
    }
}

/// A verbs device and its ports.
fn device(s: &mut String, d: &DeviceReport) {
    let x = match &d.detail {
        Ok(x) => x,
        Err(e) => {
            let _ = writeln!(s, "  {}: {e}", d.name);
            return;
        }
    };
    let inline = match &x.max_inline {
        Ok(n) => format!("{n} B (a QP asking {} B)", x.inline_asked),
        Err(e) => format!("unknown (a QP asking {} B: {e})", x.inline_asked),
    };
    let _ = writeln!(
        s,
        "  {}: atomics {} ({}), max inline {inline}, max MR {} B, {} QPs of {} WRs",
        d.name,
        x.atomic_cap,
        if x.atomics {
            "8-byte FETCH_AND_ADD and CMP_AND_SWP"
        } else {
            "none: atomics go through active messages"
        },
        x.max_mr_size,
        x.max_qp,
        x.max_qp_wr
    );
    for p in &x.ports {
        match &p.detail {
            Ok(a) => {
                let _ = writeln!(
                    s,
                    "    port {}: {}, {}, MTU {} B (max {} B), LID {}",
                    p.port, a.state, a.link_layer, a.active_mtu, a.max_mtu, a.lid
                );
            }
            Err(e) => {
                let _ = writeln!(s, "    port {}: cannot be queried: {e}", p.port);
            }
        }
    }
}
