//! What a non-blocking transfer hands back: the events of a put, the
//! deferred local completion of a put, and a get holding its buffer.

use rgex_core::Event;
use rgex_endpoint::rma::LocalCompletion;

/// The events of a non-blocking VIS put.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct VisPut {
    /// Local completion: the source may be reused. The source is borrowed
    /// for the call only, so this has fired (see
    /// [`Vis::put_nb_defer`](crate::Vis::put_nb_defer) for a local completion after return).
    pub lc: Event,
    /// Remote completion: every byte is in the peer's segment.
    pub rc: Event,
}

/// A non-blocking VIS put whose local completion may come after return
/// ([`Vis::put_nb_defer`](crate::Vis::put_nb_defer)): the source buffer is held by `lc` until no
/// mechanism reads it any more.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct VisPutDeferred {
    /// Local completion: hands the source buffer back once it may be
    /// reused. Later than return only with the RMA mechanism over a
    /// network (one put per chunk, all reading the buffer in flight); the
    /// direct copy and the AM pipeline are done with the source when the
    /// call returns.
    pub lc: LocalCompletion<Vec<u8>>,
    /// Remote completion: every byte is in the peer's segment.
    pub rc: Event,
}

/// A non-blocking VIS get: holds the destination until the data is in.
/// Dropping it before then does not wait: the buffer is kept until the
/// transfer is done with it, then dropped (so a cancelled future, say
/// under a timeout, never blocks its executor thread).
#[derive(Debug)]
#[must_use = "the get must be waited on to get the buffer back"]
pub struct VisGet {
    pub(crate) buf: Option<Vec<u8>>,
    pub(crate) event: Option<Event>,
}

impl VisGet {
    /// True if the data has arrived. Does not poll.
    pub fn test(&self) -> bool {
        self.event.as_ref().is_none_or(Event::test)
    }

    /// Poll until the get is over; the buffer with the data, or the error
    /// that failed the get (its peer went away), the buffer dropped.
    pub fn wait(mut self) -> rgex_core::Result<Vec<u8>> {
        if let Some(e) = self.event.take() {
            e.wait()?;
        }
        Ok(self.buf.take().expect("buffer present until wait"))
    }
}

/// A VIS get is a future of [`wait`](VisGet::wait)'s answer: the buffer
/// with the data, or the error that failed the get (the buffer dropped).
/// Woken by whichever thread's progress completes it; someone must drive
/// progress meanwhile. Polling again after it resolved is a panic.
impl std::future::Future for VisGet {
    type Output = rgex_core::Result<Vec<u8>>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(e) = this.event.as_mut() {
            let r = std::task::ready!(std::pin::Pin::new(e).poll(cx));
            this.event = None;
            r?;
        }
        std::task::Poll::Ready(Ok(this
            .buf
            .take()
            .expect("VisGet polled after it resolved")))
    }
}

impl Drop for VisGet {
    fn drop(&mut self) {
        // The buffer lives until the transport is done with it; the drop
        // does not wait for that (and has nobody to report a failure to).
        if let Some(e) = self.event.take() {
            e.keep_until_done(self.buf.take());
        }
    }
}
