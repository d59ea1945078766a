//! The backlog: posts the transport refused for now (would-block), kept
//! in order and retried by progress (`State::flush_backlog`): once
//! anything of an operation was posted, all of it is, and nothing
//! overtakes.

use crate::ops::Post;
use std::collections::VecDeque;

/// Posts waiting for the transport, oldest first.
#[derive(Default)]
pub(crate) struct Backlog {
    posts: VecDeque<Post>,
}

impl Backlog {
    /// True if nothing waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.posts.is_empty()
    }

    /// Queue `p` behind the others.
    #[inline]
    pub fn push(&mut self, p: Post) {
        self.posts.push_back(p);
        // Statistics (`RGEX_STATS` net): a post refused for now, and the
        // backlog's length; one load when off, on this slow path.
        if rgex_core::observe::on() {
            rgex_core::observe::net(rgex_core::observe::NetEvent::Retry, 1);
            rgex_core::observe::backlog(self.posts.len());
        }
    }

    /// The oldest post.
    #[inline]
    pub fn front(&self) -> Option<&Post> {
        self.posts.front()
    }

    /// Take the oldest post.
    #[inline]
    pub fn pop(&mut self) -> Option<Post> {
        self.posts.pop_front()
    }

    /// The peers the waiting posts go to (receives have none).
    pub fn peers(&self) -> impl Iterator<Item = u32> + '_ {
        self.posts.iter().filter_map(Post::peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order() {
        let mut b = Backlog::default();
        assert!(b.is_empty());
        b.push(Post::Recv { op: 1 });
        b.push(Post::Read {
            op: 2,
            peer: 5,
            dst: 0,
            len: 1,
            desc: 0,
            offset: 0,
        });
        assert_eq!(b.peers().collect::<Vec<_>>(), [5]);
        assert_eq!(b.front().map(Post::op), Some(1));
        assert_eq!(b.pop().map(|p| p.op()), Some(1));
        assert_eq!(b.pop().map(|p| p.op()), Some(2));
        assert!(b.pop().is_none() && b.is_empty());
    }
}
