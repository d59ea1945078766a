//! Events that own the buffer of the operation they track, so safe code
//! cannot touch the buffer before the operation is done with it.

use rgex_core::Event;

/// A source buffer held until a put's local completion.
///
/// Dropping it waits for local completion first (the buffer may still be
/// read by the transport until then).
#[derive(Debug)]
pub struct LocalCompletion<B> {
    buf: Option<B>,
    event: Option<Event>,
}

impl<B> LocalCompletion<B> {
    pub(crate) fn new(buf: B, event: Event) -> Self {
        LocalCompletion {
            buf: Some(buf),
            event: Some(event),
        }
    }

    /// True if the buffer may be reused. Does not poll.
    pub fn test(&self) -> bool {
        self.event.as_ref().is_none_or(Event::test)
    }

    /// Poll until local completion; hand the buffer back.
    pub fn wait(mut self) -> B {
        if let Some(e) = self.event.take() {
            e.wait();
        }
        self.buf.take().expect("buffer present until wait")
    }
}

impl<B> Drop for LocalCompletion<B> {
    fn drop(&mut self) {
        if let Some(e) = self.event.take() {
            e.wait();
        }
    }
}

/// A non-blocking put with deferred local completion.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct PutDeferred<B> {
    /// Local completion; gives the source buffer back.
    pub lc: LocalCompletion<B>,
    /// Remote completion.
    pub rc: Event,
}

/// A non-blocking get into an owned buffer.
///
/// Dropping it waits for completion first (the transport may still write
/// the buffer until then).
#[derive(Debug)]
#[must_use = "the get must be waited on to see the data"]
pub struct GetPending<B> {
    buf: Option<B>,
    event: Option<Event>,
}

impl<B> GetPending<B> {
    pub(crate) fn new(buf: B, event: Event) -> Self {
        GetPending {
            buf: Some(buf),
            event: Some(event),
        }
    }

    /// True if the data has arrived. Does not poll.
    pub fn test(&self) -> bool {
        self.event.as_ref().is_none_or(Event::test)
    }

    /// Poll until the data has arrived; hand the buffer back.
    pub fn wait(mut self) -> B {
        if let Some(e) = self.event.take() {
            e.wait();
        }
        self.buf.take().expect("buffer present until wait")
    }
}

impl<B> Drop for GetPending<B> {
    fn drop(&mut self) {
        if let Some(e) = self.event.take() {
            e.wait();
        }
    }
}
