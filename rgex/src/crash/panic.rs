//! The panic hook: after the usual message, a backtrace of every thread
//! and a freeze, as the settings say; the panic then goes on as usual.

use super::{end_turn, take_turn, threads, Turn, ARMED};
use crate::rank_line;

/// Chain a hook after the current one (the default prints the message).
pub(super) fn install() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        on_panic(info);
    }));
}

/// What a panic prints and does besides the usual message.
fn on_panic(info: &std::panic::PanicHookInfo<'_>) {
    // Relaxed: set in the symbolizing child before any code that could
    // panic, on the same thread.
    if threads::IN_CHILD.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let Some(armed) = ARMED.get() else { return };
    let Turn::Mine = take_turn(armed) else { return };
    let mut line = rank_line::stderr();
    let mut name = [0u8; 16];
    let len = super::thread_name(&mut name);
    line.put(b"panic in thread ")
        .put(&name[..len])
        .put(b" (tid ")
        .num(super::tid() as u64)
        .put(b")");
    if let Some(at) = info.location() {
        line.put(b" at ")
            .put(at.file().as_bytes())
            .put(b":")
            .num(u64::from(at.line()));
    }
    line.end();
    if armed.cfg.backtrace {
        // SAFETY: this thread holds the turn.
        unsafe { threads::print(armed, &mut line) };
        // Relaxed: read by a later crash handler, after it takes the turn
        // (whose Acquire orders this store before it).
        super::PANIC_PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if armed.cfg.freeze {
        super::freeze::freeze(armed.cfg.freeze_for, b"a panic");
    }
    end_turn();
}
