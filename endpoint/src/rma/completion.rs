//! Events that own the buffer of the operation they track, so safe code
//! cannot touch the buffer before the operation is done with it.

use rgex_core::Event;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A buffer held by an operation until its event fires: the source of a put
/// until local completion ([`LocalCompletion`]), the destination of a get
/// until the data has arrived ([`GetPending`]).
///
/// Dropping it before the event fires does not wait: the buffer is kept
/// until then and dropped by the progress that fires it
/// ([`Event::keep_until_done`]), since the transport may still read or
/// write it; a cancelled future never blocks its thread.
#[must_use = "the operation must be waited on to get the buffer back"]
pub struct Held<B: Send + 'static> {
    buf: Option<Stored<B>>,
    event: Option<Event>,
}

/// Where a held buffer lives: in the `Held` itself (a buffer whose bytes
/// do not move with it, as [`Held::new`]'s callers promise), or boxed,
/// for any owned buffer whose bytes the transport was given a pointer to
/// after boxing (the box's contents never move while it is held).
enum Stored<B> {
    Inline(B),
    Boxed(Box<B>),
}

impl<B> Stored<B> {
    fn into_inner(self) -> B {
        match self {
            Stored::Inline(b) => b,
            Stored::Boxed(b) => *b,
        }
    }
}

impl<B: Send + 'static> std::fmt::Debug for Held<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("done", &self.test())
            .finish_non_exhaustive()
    }
}

/// A put's source buffer, held until local completion.
pub type LocalCompletion<B> = Held<B>;

/// A get's destination buffer, held until the data has arrived.
pub type GetPending<B> = Held<B>;

impl<B: Send + 'static> Held<B> {
    /// Hold `buf` until `event` fires (for layers that start operations
    /// on a buffer themselves, such as VIS's deferred puts).
    ///
    /// ```
    /// use rgex_endpoint::rma::Held;
    /// let h = Held::new(vec![1u8; 4], rgex_core::Event::done());
    /// assert!(h.test());
    /// assert_eq!(h.wait().unwrap(), [1, 1, 1, 1]);
    /// ```
    pub fn new(buf: B, event: Event) -> Self {
        Held {
            buf: Some(Stored::Inline(buf)),
            event: Some(event),
        }
    }

    /// Hold a boxed buffer until `event` fires: the operation was given
    /// a pointer into the box's contents, which stay put however the
    /// `Held` moves. [`wait`](Self::wait) hands back the buffer unboxed.
    pub(crate) fn boxed(buf: Box<B>, event: Event) -> Self {
        Held {
            buf: Some(Stored::Boxed(buf)),
            event: Some(event),
        }
    }

    /// True if the operation is done with the buffer. Does not poll.
    pub fn test(&self) -> bool {
        self.event.as_ref().is_none_or(Event::test)
    }

    /// Poll until the operation is done with the buffer; hand it back, or
    /// the error that failed the operation (its peer went away: a get's
    /// bytes did not arrive). The buffer is dropped with the error.
    ///
    /// ```
    /// use rgex_endpoint::rma::Held;
    /// let h = Held::new(vec![1u8; 4], rgex_core::Event::done());
    /// assert_eq!(h.wait().unwrap(), [1, 1, 1, 1]);
    /// ```
    pub fn wait(mut self) -> rgex_core::Result<B> {
        if let Some(e) = self.event.take() {
            e.wait()?;
        }
        Ok(self
            .buf
            .take()
            .expect("buffer present until wait")
            .into_inner())
    }
}

// The buffer is never pinned: it is moved out when the operation is done.
impl<B: Send + 'static> Unpin for Held<B> {}

/// A held buffer is a future of [`wait`](Held::wait)'s answer: the buffer
/// once the operation is done with it, or the error that failed it (the
/// buffer dropped). Woken by whichever thread's progress completes the
/// operation; someone must drive progress meanwhile (see
/// [`Event`]'s `Future` impl). Polling again after it resolved is a panic.
impl<B: Send + 'static> Future for Held<B> {
    type Output = rgex_core::Result<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(e) = this.event.as_mut() {
            let r = std::task::ready!(Pin::new(e).poll(cx));
            this.event = None;
            r?;
        }
        Poll::Ready(Ok(this
            .buf
            .take()
            .expect("Held polled after it resolved")
            .into_inner()))
    }
}

impl<B: Send + 'static> Drop for Held<B> {
    fn drop(&mut self) {
        // The buffer lives until the transport is done with it; the drop
        // does not wait for that (a cancelled future must not block its
        // thread), and has nobody to report a failure to.
        if let Some(e) = self.event.take() {
            e.keep_until_done(self.buf.take());
        }
    }
}

/// A non-blocking put with deferred local completion.
#[derive(Debug)]
#[must_use = "the put's completion must be waited on"]
pub struct PutDeferred<B: Send + 'static> {
    /// Local completion; gives the source buffer back.
    pub lc: LocalCompletion<B>,
    /// Remote completion.
    pub rc: rgex_core::Event,
}
