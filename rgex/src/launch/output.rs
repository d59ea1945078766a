//! Forwarding the ranks' output: every line a rank writes to stdout or
//! stderr goes to the launcher's stdout or stderr as `[R] line`, written
//! whole (one write, then a flush) so lines of different ranks never mix.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where forwarded lines and the launcher's own messages go. The mutex
/// keeps every line whole.
pub(crate) type Sink = Arc<Mutex<dyn Write + Send>>;

/// A line longer than this is forwarded in pieces of this size, each with
/// the rank prefix, rather than buffered without bound.
const MAX_LINE: u64 = 64 * 1024;

/// Write `bytes` (one or more whole lines) to `sink` and flush it. Errors
/// are ignored: a closed launcher stdout must not stop the job.
pub(crate) fn emit(sink: &Sink, bytes: &[u8]) {
    let mut w = sink.lock().unwrap_or_else(|e| e.into_inner());
    let _ = w.write_all(bytes);
    let _ = w.flush();
}

/// A message of the launcher itself, as a line on `sink`.
pub(crate) fn note(sink: &Sink, msg: &str) {
    emit(sink, format!("rgex-run: {msg}\n").as_bytes());
}

/// How many reports of their waits (see [`rgex_core::blocked::report`])
/// each rank has finished on its stderr: the forwarders count the lines
/// that end one, the timeout waits for them.
#[derive(Debug)]
pub(crate) struct ReportEnds {
    seen: Vec<AtomicU32>,
}

impl ReportEnds {
    pub(crate) fn new(ranks: u32) -> Arc<Self> {
        Arc::new(ReportEnds {
            seen: (0..ranks).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// Reports rank `rank` has ended so far.
    pub(crate) fn count(&self, rank: u32) -> u32 {
        // Relaxed: a count polled for its own value.
        self.seen
            .get(rank as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Count `line` (a forwarded stderr line of `rank`) if it ends a report.
    fn note_line(&self, rank: u32, line: &[u8]) {
        let end = rgex_core::blocked::REPORT_END.as_bytes();
        // A report's lines are short (rgex_core::raw_line::LINE_MAX).
        if line.len() <= rgex_core::raw_line::LINE_MAX + 16
            && line.windows(end.len()).any(|w| w == end)
        {
            if let Some(c) = self.seen.get(rank as usize) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The threads forwarding every rank's pipes.
#[derive(Debug)]
pub(crate) struct Forwarders {
    done_tx: Sender<()>,
    done_rx: Receiver<()>,
    running: usize,
}

impl Forwarders {
    pub(crate) fn new() -> Self {
        let (done_tx, done_rx) = channel();
        Forwarders {
            done_tx,
            done_rx,
            running: 0,
        }
    }

    /// Forward `pipe`, rank `rank`'s stdout or stderr, to `sink` on a new
    /// thread, counting in `ends` (if given) the reports of waits it ends.
    /// If no thread can be started the pipe is dropped (the rank then gets
    /// EPIPE on writing), which is reported.
    pub(crate) fn forward(
        &mut self,
        rank: u32,
        what: &str,
        pipe: impl Read + Send + 'static,
        sink: &Sink,
        notes: &Sink,
        ends: Option<Arc<ReportEnds>>,
    ) {
        let sink = Arc::clone(sink);
        let done = self.done_tx.clone();
        let started = std::thread::Builder::new()
            .name(format!("rgex-out-{rank}-{what}"))
            .spawn(move || {
                copy_lines(rank, pipe, &sink, ends.as_deref());
                let _ = done.send(());
            });
        match started {
            Ok(_) => self.running += 1,
            Err(e) => note(
                notes,
                &format!("cannot forward the {what} of rank {rank}: {e}"),
            ),
        }
    }

    /// Wait until every pipe has reached its end, or `grace` has passed
    /// (a rank's background process may hold a pipe open after the rank
    /// exited; its remaining output is then abandoned).
    pub(crate) fn finish(mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while self.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done_rx.recv_timeout(left).is_err() {
                return;
            }
            self.running -= 1;
        }
    }
}

/// Copy `pipe` to `sink` line by line, each prefixed with `[rank] `. A last
/// line without a newline gets one. A line that ends a report of waits is
/// counted in `ends`, once forwarded.
fn copy_lines(rank: u32, pipe: impl Read, sink: &Sink, ends: Option<&ReportEnds>) {
    let prefix = format!("[{rank}] ");
    let mut reader = BufReader::new(pipe);
    let mut line = prefix.clone().into_bytes();
    loop {
        line.truncate(prefix.len());
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                emit(sink, &line);
                if let Some(ends) = ends {
                    ends.note_line(rank, &line[prefix.len()..]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> String {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink: Sink = out.clone();
        copy_lines(7, input, &sink, None);
        let bytes = out.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn lines_are_prefixed() {
        assert_eq!(run(b"a\nb\n"), "[7] a\n[7] b\n");
    }

    #[test]
    fn partial_last_line_is_kept() {
        assert_eq!(run(b"a\nno newline"), "[7] a\n[7] no newline\n");
        assert_eq!(run(b""), "");
    }

    #[test]
    fn report_ends_are_counted() {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink: Sink = out.clone();
        let ends = ReportEnds::new(8);
        let text = format!(
            "[rank 7] thread main (tid 9), blocked 1.00 s: x\n[rank 7] {} (pid 9): 1 wait in 1 thread\nafter\n",
            rgex_core::blocked::REPORT_END
        );
        copy_lines(7, text.as_bytes(), &sink, Some(&ends));
        assert_eq!((ends.count(7), ends.count(0), ends.count(99)), (1, 0, 0));
    }

    #[test]
    fn long_lines_are_split() {
        let long = vec![b'x'; MAX_LINE as usize + 10];
        let out = run(&long);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.starts_with("[7] x")));
    }
}
