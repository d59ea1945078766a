//! The trace's per-rank writer: one JSON object a line
//! (`{"t":NS,"cat":"am","ev":"inject",...}`) into `RGEX_TRACE_FILE`.
//!
//! Lines are formatted on the calling thread and written under one lock
//! into a buffered file, flushed at exit and when the buffer fills; a
//! rank's lines are in the order their writers took the lock.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Mutex;
use std::time::Instant;

/// A rank's trace file.
pub(crate) struct TraceFile {
    out: Mutex<BufWriter<File>>,
    start: Instant,
}

impl TraceFile {
    pub(crate) fn create(path: &str, start: Instant) -> std::io::Result<Self> {
        Ok(TraceFile {
            out: Mutex::new(BufWriter::with_capacity(1 << 16, File::create(path)?)),
            start,
        })
    }

    /// Write one event: its category, its name and its fields, each a
    /// number (strings go through [`Self::event_str`]).
    pub(crate) fn event(&self, cat: &str, ev: &str, fields: &[(&str, u64)]) {
        self.event_str(cat, ev, fields, &[]);
    }

    /// As [`event`](Self::event), with string fields too.
    pub(crate) fn event_str(
        &self,
        cat: &str,
        ev: &str,
        nums: &[(&str, u64)],
        strs: &[(&str, &str)],
    ) {
        let t = self.start.elapsed().as_nanos();
        let mut line = String::with_capacity(128);
        let _ = write!(line, "{{\"t\":{t},\"cat\":\"{cat}\",\"ev\":\"{ev}\"");
        for (k, v) in nums {
            let _ = write!(line, ",\"{k}\":{v}");
        }
        for (k, v) in strs {
            let _ = write!(line, ",\"{k}\":\"{}\"", escape(v));
        }
        line.push_str("}\n");
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // A trace that cannot be written is lost, not an error of the
        // operation traced.
        let _ = out.write_all(line.as_bytes());
    }

    pub(crate) fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}

/// `s` as the inside of a JSON string.
pub(crate) fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}
