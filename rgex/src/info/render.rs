//! The plain-text form of the report.

use super::Report;
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
        Ok(list) => {
            for d in list {
                let _ = writeln!(s, "  {}: {}", d.name, d.detail);
            }
        }
        Err(e) => {
            let _ = writeln!(s, "  none: {e}");
        }
    }
    let _ = writeln!(s, "bootstrap: {}", r.bootstrap);
    let _ = writeln!(s, "environment:");
    for e in &r.environment {
        let value = e
            .value
            .as_deref()
            .map_or("(unset)".to_string(), |v| format!("={v}"));
        let _ = writeln!(s, "  {} {value}: {}", e.name, e.meaning);
    }
    s
}
