//! Who prints rgex's diagnostics.
//!
//! rgex's library crates never write to stderr themselves: each
//! diagnostic is a [`tracing`] event, whose target is the module that
//! raised it (`rgex_net::health`, `rgex_endpoint::endpoint`, ...) and whose
//! fields name the ranks and values concerned (`rank`, `peer`, ...). The
//! levels say who else learns of it:
//!
//! - `error`: nobody else will: a failure found where no caller can be
//!   told (a progress thread, a drop, an exit hook, a handler's reply), or
//!   a call lost with no one to fail it;
//! - `warn`: a peer or a message this rank gave up on (a peer declared
//!   dead, a malformed or dropped message, a handler's error; the last
//!   three are also returned by a later `poll`, which a program that only
//!   waits never calls);
//! - `debug`: the target's side of an error its initiator also receives.
//!
//! [`init`](crate::init) and [`init_with`](crate::init_with) install
//! ([`install`]) a subscriber that prints those events on stderr, one line each
//! (`WARN rgex_net::health: an operation to rank 1 failed; ... rank=0
//! peer=1`), filtered by `RGEX_LOG` — unless the application has set a
//! global default subscriber already, which then receives them instead.
//! Set yours before `init`: `tracing` takes one global default per
//! process. `RGEX_LOG` holds comma-separated `target=level` directives or
//! a bare level (`warn`, `rgex_net=debug,rgex=warn`, `off`); a target
//! names a module path prefix, so `rgex` covers every rgex crate. Unset,
//! it is [`DEFAULT`], `rgex=warn`: rgex's errors and warnings, nothing
//! else.
//!
//! With `RGEX_FREEZE_ON_ERROR=1` the thread that reports an `error`
//! stops after printing it, for a debugger (see [`crash`](crate::crash)).
//!
//! A program that builds its [`Client`](crate::Client) itself, not
//! through `init`, calls [`install`] first to get the same.
//!
//! The subscriber keeps nothing per thread, so it prints from exit hooks
//! too (the stale-read checker's report, a drain that gave up), after the
//! thread-locals of the main thread are gone. A subscriber of the
//! application's that uses thread-locals (tracing-subscriber's `fmt`)
//! may panic there.
//!
//! ```no_run
//! // RGEX_LOG=rgex_net=debug,rgex=warn ./app: the network kit's debug
//! // events too. Or the application's own subscriber, set first:
//! // tracing::subscriber::set_global_default(my_subscriber)?;
//! let client = rgex::init()?;
//! # Ok::<(), rgex::Error>(())
//! ```

use rgex_core::{Error, Result};
use std::fmt::{self, Write as _};
use std::io::Write as _;
use tracing::field::{Field, Visit};
use tracing::subscriber::{Interest, Subscriber};
use tracing::{span, Event, Metadata};
use tracing_subscriber::filter::Targets;

/// The variable holding the filter.
pub const ENV: &str = "RGEX_LOG";

/// The filter when `RGEX_LOG` is unset or empty.
pub const DEFAULT: &str = "rgex=warn";

/// Install the stderr subscriber filtered by `RGEX_LOG`, unless a global
/// default is set already (the application's, or an earlier call's).
/// A filter that does not parse is an error naming the variable.
/// [`init`](crate::init) calls it.
///
/// ```no_run
/// rgex::diagnostics::install()?;
/// // ... build a conduit and an rgex::Client by hand ...
/// # Ok::<(), rgex::Error>(())
/// ```
pub fn install() -> Result<()> {
    if tracing::dispatcher::has_been_set() {
        return Ok(());
    }
    let spec = std::env::var(ENV).ok().filter(|s| !s.is_empty());
    let filter = parse(spec.as_deref().unwrap_or(DEFAULT))?;
    // Another thread may have set one since the check: theirs stays.
    let _ = tracing::subscriber::set_global_default(Stderr { filter });
    Ok(())
}

/// `RGEX_LOG`'s value as a filter, or an error naming the variable.
fn parse(spec: &str) -> Result<Targets> {
    spec.parse().map_err(|e| {
        Error::Config(format!(
            "{ENV}={spec:?}: {e} (expected a level, or target=level directives separated by commas, such as warn or rgex_net=debug,rgex=warn)"
        ))
    })
}

/// Events on stderr, one line each, as the filter allows; spans are
/// ignored (rgex makes none).
struct Stderr {
    filter: Targets,
}

impl Subscriber for Stderr {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // The filter never changes: each callsite is decided once.
        if self.enabled(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.filter.would_enable(meta.target(), meta.level())
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        self.filter
            .iter()
            .map(|(_, level)| level)
            .chain(self.filter.default_level())
            .max()
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line::default();
        event.record(&mut line);
        let text = format!(
            "{:>5} {}: {}{}\n",
            meta.level(),
            meta.target(),
            line.message,
            line.fields
        );
        // One write, so that lines of several threads do not interleave.
        let _ = std::io::stderr().write_all(text.as_bytes());
        if *meta.level() == tracing::Level::ERROR && meta.target().starts_with("rgex") {
            // RGEX_FREEZE_ON_ERROR: stop here for a debugger (else nothing).
            crate::crash::freeze_on_error();
        }
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

/// An event's message and its other fields (` name=value` each).
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn the_default_shows_rgex_warnings_only() {
        let f = parse(DEFAULT).unwrap();
        assert!(f.would_enable("rgex_net::health", &Level::WARN));
        assert!(f.would_enable("rgex_endpoint::endpoint", &Level::ERROR));
        assert!(!f.would_enable("rgex_vis::am", &Level::DEBUG));
        assert!(!f.would_enable("my_app", &Level::ERROR));
    }

    #[test]
    fn directives_name_crates_and_levels() {
        let f = parse("rgex_net=debug,rgex=warn").unwrap();
        assert!(f.would_enable("rgex_net::state", &Level::DEBUG));
        assert!(!f.would_enable("rgex_vis::am", &Level::DEBUG));
        assert!(f.would_enable("rgex_vis::am", &Level::WARN));
        let off = parse("off").unwrap();
        assert!(!off.would_enable("rgex_net::health", &Level::ERROR));
    }

    #[test]
    fn a_bad_filter_names_the_variable() {
        let e = parse("rgex=loud").unwrap_err().to_string();
        assert!(e.contains("RGEX_LOG=\"rgex=loud\""), "{e}");
    }

    #[test]
    fn a_line_holds_the_message_then_the_fields() {
        struct Capture(std::sync::Mutex<Vec<String>>);
        impl Subscriber for Capture {
            fn enabled(&self, _: &Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
                span::Id::from_u64(1)
            }
            fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
            fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
            fn event(&self, event: &Event<'_>) {
                let mut line = Line::default();
                event.record(&mut line);
                self.0
                    .lock()
                    .unwrap()
                    .push(format!("{}|{}", line.message, line.fields));
            }
            fn enter(&self, _: &span::Id) {}
            fn exit(&self, _: &span::Id) {}
        }
        let c = std::sync::Arc::new(Capture(Default::default()));
        tracing::subscriber::with_default(c.clone(), || {
            tracing::warn!(rank = 0u32, conduit = "ofi", "rank {} is dead", 1);
        });
        assert_eq!(*c.0.lock().unwrap(), ["rank 1 is dead| rank=0 conduit=ofi"]);
    }
}
