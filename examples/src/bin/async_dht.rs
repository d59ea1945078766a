//! A distributed hash table driven by async tasks: one task per key.
//!
//! Key `key` lives on rank `key % n`, in slot `key / n` of a table at the
//! start of that rank's segment (16 bytes a slot: the key plus one, 0
//! meaning empty, then the value). Each rank inserts `k` keys, each from
//! its own task: it writes the slot with a one-sided put (awaited), then
//! registers the insert with the owner by an AM round trip (awaited: the
//! owner's reply carries how many inserts it has registered). After a
//! barrier every task reads back a key of another rank with a get
//! (awaited) and checks it. Progress comes from the endpoint's
//! [`progress_task`](rgex::Endpoint::progress_task), run as one more task
//! on a small single-thread executor written here (rgex needs no
//! runtime).
//!
//! Usage: `async_dht [KEYS_PER_RANK]`

use rgex::{Flags, GlobalAddr, HandlerId, Rank, ReduceOp};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Bytes per table slot: key + 1, value.
const SLOT: u64 = 16;

/// The value stored for `key` (never 0, so an empty slot cannot pass).
fn value_of(key: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// A slot's bytes for `key`.
fn slot_bytes(key: u64) -> [u8; SLOT as usize] {
    let mut b = [0u8; SLOT as usize];
    b[..8].copy_from_slice(&(key + 1).to_le_bytes());
    b[8..].copy_from_slice(&value_of(key).to_le_bytes());
    b
}

/// One round trip's reply: the value once it came, and the waker of the
/// task awaiting it.
type Reply = (Option<u32>, Option<Waker>);

/// Replies to AM round trips, by ticket.
#[derive(Default)]
struct Replies {
    slots: Mutex<HashMap<u32, Reply>>,
}

impl Replies {
    /// The reply handler's side: store `value` for `ticket`, wake its task.
    fn arrive(&self, ticket: u32, value: u32) -> Result<(), String> {
        let mut s = self.slots.lock().map_err(|_| "replies poisoned")?;
        let e = s.entry(ticket).or_default();
        if e.0.is_some() {
            return Err(format!("a second reply for ticket {ticket}"));
        }
        e.0 = Some(value);
        if let Some(w) = e.1.take() {
            w.wake();
        }
        Ok(())
    }

    /// A future for `ticket`'s reply.
    fn wait(self: &Arc<Self>, ticket: u32) -> ReplyFuture {
        ReplyFuture {
            replies: self.clone(),
            ticket,
        }
    }
}

/// Resolves to the reply's value.
struct ReplyFuture {
    replies: Arc<Replies>,
    ticket: u32,
}

impl Future for ReplyFuture {
    type Output = u32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        let mut s = self.replies.slots.lock().expect("replies");
        let e = s.entry(self.ticket).or_default();
        match e.0 {
            Some(v) => {
                s.remove(&self.ticket);
                Poll::Ready(v)
            }
            None => {
                e.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// The handlers' ids.
struct Handlers {
    /// "Register the insert of a key" (args: ticket): replies with the
    /// owner's count of registered inserts.
    insert: HandlerId,
}

type Task<'a> = Pin<Box<dyn Future<Output = rgex::Result<()>> + 'a>>;

/// Wakes push the task's index to the ready queue.
struct TaskWaker {
    id: usize,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.ready.lock().expect("ready queue").push_back(self.id);
    }
}

/// Run `tasks` to completion on this thread, polling a task only when it
/// was woken; the first error ends the run.
fn run(tasks: Vec<Task<'_>>) -> rgex::Result<()> {
    let ready = Arc::new(Mutex::new((0..tasks.len()).collect::<VecDeque<_>>()));
    let mut tasks: Vec<Option<Task<'_>>> = tasks.into_iter().map(Some).collect();
    let mut left = tasks.len();
    while left > 0 {
        let Some(id) = ready.lock().expect("ready queue").pop_front() else {
            // Nothing woken: the progress task is always runnable while
            // work is left, so this means every task waits on nothing.
            return Err(rgex::Error::Failed(format!(
                "async_dht: {left} tasks wait and none is ready"
            )));
        };
        let Some(task) = tasks[id].as_mut() else {
            continue; // a stale wake of a finished task
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            ready: ready.clone(),
        }));
        if let Poll::Ready(r) = task.as_mut().poll(&mut Context::from_waker(&waker)) {
            r?;
            tasks[id] = None;
            left -= 1;
        }
    }
    Ok(())
}

fn main() -> rgex::Result<()> {
    let k: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let replies = Arc::new(Replies::default());
    let registered = Arc::new(Mutex::new(0u32));
    let (r, reg) = (replies.clone(), registered.clone());
    let (client, h) = rgex::init_with(|t| {
        let done = t.register("adht.done", move |_tok, msg| {
            r.arrive(msg.arg(0), msg.arg(1))
        })?;
        let insert = t.register("adht.insert", move |tok, msg| {
            let count = {
                let mut c = reg.lock().map_err(|_| "count poisoned".to_string())?;
                *c += 1;
                *c
            };
            tok.reply_short(done, &[msg.arg(0), count], Flags::empty())
                .map_err(|e| e.to_string())
        })?;
        Ok(Handlers { insert })
    })?;
    let (me, n) = (client.rank().0, client.size());
    let seg = client.endpoint().segment().len() as u64;
    if k * SLOT > seg {
        return Err(rgex::Error::Config(format!(
            "async_dht: {k} keys per rank need {} bytes of segment, rank {me} has {seg}",
            k * SLOT
        )));
    }
    let key = |r: u32, i: u64| u64::from(r) * k + i;
    let at =
        |key: u64| GlobalAddr::new(Rank((key % u64::from(n)) as u32), key / u64::from(n) * SLOT);
    let f = Flags::empty();
    let ep = client.endpoint();

    // Phase 1: every key inserted by its own task; the owners' counts
    // each task got back, to check they are distinct per owner.
    let counts = Mutex::new(Vec::with_capacity(k as usize));
    {
        let progress = ep.progress_task();
        let stop = progress.stopper();
        let left = std::cell::Cell::new(k);
        let mut tasks: Vec<Task<'_>> = Vec::new();
        for i in 0..k {
            let (replies, counts, left, stop) = (&replies, &counts, &left, stop.clone());
            tasks.push(Box::pin(async move {
                let key = key(me, i);
                let bytes = slot_bytes(key);
                ep.put_nb(at(key), &bytes, f)?.await?;
                let ticket = i as u32;
                let answer = replies.wait(ticket);
                ep.request_short(at(key).rank, h.insert, &[ticket], f)?;
                let count = answer.await;
                counts.lock().expect("counts").push((at(key).rank.0, count));
                left.set(left.get() - 1);
                if left.get() == 0 {
                    stop.stop();
                }
                Ok(())
            }));
        }
        tasks.push(Box::pin(progress));
        run(tasks)?;
    }
    let mut counts = counts.into_inner().expect("counts");
    counts.sort_unstable();
    counts.dedup();
    assert_eq!(
        counts.len() as u64,
        k,
        "rank {me}: two inserts got the same count from one owner"
    );
    client.barrier()?;
    let mine = u64::from(*registered.lock().expect("count"));
    let total = client.world().allreduce(&[mine], ReduceOp::Sum)?;
    assert_eq!(
        total[0],
        k * u64::from(n),
        "inserts registered by the owners"
    );

    // Phase 2: every task reads back a key of the next rank and checks it.
    {
        let progress = ep.progress_task();
        let stop = progress.stopper();
        let left = std::cell::Cell::new(k);
        let other = (me + 1) % n;
        let mut tasks: Vec<Task<'_>> = Vec::new();
        for i in 0..k {
            let (left, stop) = (&left, stop.clone());
            tasks.push(Box::pin(async move {
                let key = key(other, i);
                let got = ep.get_nb(vec![0u8; SLOT as usize], at(key), f)?.await?;
                assert_eq!(
                    got,
                    slot_bytes(key),
                    "rank {me}: key {key} at {:?} reads back wrong",
                    at(key)
                );
                left.set(left.get() - 1);
                if left.get() == 0 {
                    stop.stop();
                }
                Ok(())
            }));
        }
        tasks.push(Box::pin(progress));
        run(tasks)?;
    }
    client.barrier()?;
    if me == 0 {
        println!(
            "async_dht: {} keys on {n} ranks ({k} inserted by each, one task a key), every lookup exact",
            k * u64::from(n)
        );
    }
    Ok(())
}
