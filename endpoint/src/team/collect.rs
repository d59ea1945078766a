//! Gathers, scatters and alltoalls on a [`Team`]: one block per member,
//! to or from a root (binomial trees, `spread`), to everyone (Bruck's
//! allgather in the agreement's own dissemination) or from everyone to
//! everyone (pairwise exchange, `exchange`). Fixed-size forms check that
//! every member passes the same count; the `v` forms take blocks of any
//! size. Each has a blocking form and a non-blocking one (`_nb`) whose
//! [`CollEvent`] resolves to the same result.

use super::algo::{decode, encode, Coll, Dissem};
use super::exchange::Exchange;
use super::handle::{Finish, Job};
use super::signature::{ElemId, Kind, OpId, Sig, Summary};
use super::spread::{TreeGather, TreeScatter};
use super::{CollEvent, Element, Team};
use rgex_core::{Error, Result};

/// A collective ready to run whose result is one block per member.
type BlocksJob<P> = Job<P, Finish<P, Vec<Vec<u8>>>>;
/// A gather ready to run: the blocks at the root.
type GatherJob = Job<TreeGather, Finish<TreeGather, Option<Vec<Vec<u8>>>>>;

/// Blocks of bytes to elements.
fn elements<T: Element>(blocks: Vec<Vec<u8>>) -> Vec<Vec<T>> {
    blocks.iter().map(|b| decode(b)).collect()
}

/// Blocks of bytes to elements, back to back.
fn flat<T: Element>(blocks: Vec<Vec<u8>>) -> Vec<T> {
    decode(&blocks.concat())
}

impl Team {
    /// Gather every member's `data` (the same number of elements on
    /// each) at team rank `root`: `Some` of them all in team-rank order
    /// there, `None` elsewhere.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// if let Some(all) = team.gather(0, &[team.my_rank()])? {
    ///     assert_eq!(all, (0..team.size()).collect::<Vec<_>>());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn gather<T: Element>(&self, root: u32, data: &[T]) -> Result<Option<Vec<T>>> {
        let job = self.gather_job::<T>("gather", Kind::Gather, root, &encode(data), data.len())?;
        self.run(job.map(|r| r.map(flat)))
    }

    /// Start a [`gather`](Self::gather).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.gather_nb(0, &[1u8, 2])?;
    /// if let Some(all) = ev.wait()? {
    ///     assert_eq!(all.len(), 2 * team.size() as usize);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn gather_nb<T: Element>(
        &self,
        root: u32,
        data: &[T],
    ) -> Result<CollEvent<Option<Vec<T>>>> {
        let job =
            self.gather_job::<T>("gather_nb", Kind::Gather, root, &encode(data), data.len())?;
        self.start(job.map(|r| r.map(flat)))
    }

    /// Gather every member's `data`, of any length, at team rank `root`:
    /// `Some` of one vector per member, in team-rank order, there; `None`
    /// elsewhere.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let mine = vec![7u64; team.my_rank() as usize];
    /// if let Some(all) = team.gatherv(0, &mine)? {
    ///     assert!(all.iter().enumerate().all(|(r, v)| v.len() == r));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn gatherv<T: Element>(&self, root: u32, data: &[T]) -> Result<Option<Vec<Vec<T>>>> {
        let job = self.gather_job::<T>("gatherv", Kind::Gatherv, root, &encode(data), 0)?;
        self.run(job.map(|r| r.map(elements)))
    }

    /// Start a [`gatherv`](Self::gatherv).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.gatherv_nb(0, &[1u32])?;
    /// let _all = ev.wait()?;
    /// # Ok(()) }
    /// ```
    pub fn gatherv_nb<T: Element>(
        &self,
        root: u32,
        data: &[T],
    ) -> Result<CollEvent<Option<Vec<Vec<T>>>>> {
        let job = self.gather_job::<T>("gatherv_nb", Kind::Gatherv, root, &encode(data), 0)?;
        self.start(job.map(|r| r.map(elements)))
    }

    /// A gather of `mine` (`count` elements, 0 for the `v` form whose
    /// blocks have any size).
    fn gather_job<T: Element>(
        &self,
        what: &'static str,
        kind: Kind,
        root: u32,
        mine: &[u8],
        count: usize,
    ) -> Result<GatherJob> {
        let fixed = (kind == Kind::Gather).then_some(mine.len());
        let sig = Sig::of(kind, Some(root), ElemId::of::<T>(), OpId::None, count);
        let part = TreeGather::new(root, fixed, mine.to_vec());
        let coll = self.coll(what, sig, part, self.check_root(root).err())?;
        Ok(Job {
            coll,
            finish: |c| {
                let me = c.ctx().me();
                c.part.result(me)
            },
        })
    }

    /// Every member's `data` (the same number of elements on each), to
    /// every member, in team-rank order.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let all = team.allgather(&[team.my_rank()])?;
    /// assert_eq!(all, (0..team.size()).collect::<Vec<_>>());
    /// # Ok(()) }
    /// ```
    pub fn allgather<T: Element>(&self, data: &[T]) -> Result<Vec<T>> {
        let job =
            self.allgather_job::<T>("allgather", Kind::Allgather, encode(data), data.len())?;
        self.run(job.map(flat))
    }

    /// Start an [`allgather`](Self::allgather).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.allgather_nb(&[1.0f64])?;
    /// assert_eq!(ev.wait()?.len(), team.size() as usize);
    /// # Ok(()) }
    /// ```
    pub fn allgather_nb<T: Element>(&self, data: &[T]) -> Result<CollEvent<Vec<T>>> {
        let job =
            self.allgather_job::<T>("allgather_nb", Kind::Allgather, encode(data), data.len())?;
        self.start(job.map(flat))
    }

    /// Every member's `data`, of any length, to every member: one vector
    /// per member in team-rank order.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let all = team.allgatherv(&vec![1u8; team.my_rank() as usize])?;
    /// assert!(all.iter().enumerate().all(|(r, v)| v.len() == r));
    /// # Ok(()) }
    /// ```
    pub fn allgatherv<T: Element>(&self, data: &[T]) -> Result<Vec<Vec<T>>> {
        let job = self.allgather_job::<T>("allgatherv", Kind::Allgatherv, encode(data), 0)?;
        self.run(job.map(elements))
    }

    /// Start an [`allgatherv`](Self::allgatherv).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.allgatherv_nb(&[team.my_rank()])?;
    /// assert_eq!(ev.wait()?.len(), team.size() as usize);
    /// # Ok(()) }
    /// ```
    pub fn allgatherv_nb<T: Element>(&self, data: &[T]) -> Result<CollEvent<Vec<Vec<T>>>> {
        let job = self.allgather_job::<T>("allgatherv_nb", Kind::Allgatherv, encode(data), 0)?;
        self.start(job.map(elements))
    }

    /// An allgather of `mine` (`count` elements of `T`; 0 for the `v`
    /// form), carried by the agreement's dissemination.
    fn allgather_job<T: Element>(
        &self,
        what: &'static str,
        kind: Kind,
        mine: Vec<u8>,
        count: usize,
    ) -> Result<BlocksJob<()>> {
        let sig = Sig::of(kind, None, ElemId::of::<T>(), OpId::None, count);
        let summary = Summary::of(self.my_rank(), sig);
        let agree = if kind == Kind::Allgather {
            Dissem::gathering(summary, mine)
        } else {
            Dissem::gathering_any(summary, mine)
        };
        let coll = Coll::new(self.ctx(what)?, agree, ());
        Ok(Job {
            coll,
            finish: |c| {
                let me = c.ctx().me();
                c.agree.blocks(me)
            },
        })
    }

    /// Scatter from team rank `root`: there `data` holds `count`
    /// elements for each member, in team-rank order (`size() * count` in
    /// all; elsewhere `data` is ignored); every member gets its `count`.
    /// The root's data length and the others' `size() * count` are
    /// checked to agree.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let all: Vec<u32> = (0..2 * team.size()).collect();
    /// let mine = team.scatter(0, &all, 2)?;
    /// assert_eq!(mine, [2 * team.my_rank(), 2 * team.my_rank() + 1]);
    /// # Ok(()) }
    /// ```
    pub fn scatter<T: Element>(&self, root: u32, data: &[T], count: usize) -> Result<Vec<T>> {
        self.run(
            self.scatter_job::<T>("scatter", root, data, count)?
                .map(|b| decode(&b)),
        )
    }

    /// Start a [`scatter`](Self::scatter).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let all = vec![5u8; team.size() as usize];
    /// assert_eq!(team.scatter_nb(0, &all, 1)?.wait()?, [5]);
    /// # Ok(()) }
    /// ```
    pub fn scatter_nb<T: Element>(
        &self,
        root: u32,
        data: &[T],
        count: usize,
    ) -> Result<CollEvent<Vec<T>>> {
        let job = self.scatter_job::<T>("scatter_nb", root, data, count)?;
        self.start(job.map(|b| decode(&b)))
    }

    /// Scatter blocks of any size from team rank `root`: there `blocks`
    /// holds one block per member in team-rank order (elsewhere it is
    /// ignored); every member gets its block.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let blocks: Vec<Vec<u32>> = (0..team.size()).map(|r| vec![r; r as usize]).collect();
    /// let mine = team.scatterv(0, &blocks)?;
    /// assert_eq!(mine.len(), team.my_rank() as usize);
    /// # Ok(()) }
    /// ```
    pub fn scatterv<T: Element, B: AsRef<[T]>>(&self, root: u32, blocks: &[B]) -> Result<Vec<T>> {
        self.run(
            self.scatterv_job("scatterv", root, blocks)?
                .map(|b| decode(&b)),
        )
    }

    /// Start a [`scatterv`](Self::scatterv).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let blocks = vec![vec![1u8, 2]; team.size() as usize];
    /// assert_eq!(team.scatterv_nb(0, &blocks)?.wait()?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn scatterv_nb<T: Element, B: AsRef<[T]>>(
        &self,
        root: u32,
        blocks: &[B],
    ) -> Result<CollEvent<Vec<T>>> {
        self.start(
            self.scatterv_job("scatterv_nb", root, blocks)?
                .map(|b| decode(&b)),
        )
    }

    /// A scatter of `count` elements to each member from `data` at the
    /// root.
    fn scatter_job<T: Element>(
        &self,
        what: &'static str,
        root: u32,
        data: &[T],
        count: usize,
    ) -> Result<Job<TreeScatter, Finish<TreeScatter, Vec<u8>>>> {
        let n = self.size() as usize;
        let at_root = self.my_rank() == root;
        // The root's length, the others' expectation: the agreement
        // compares them (and so refuses a root's length that is not a
        // multiple of the team size).
        let total = if at_root { data.len() } else { count * n };
        let k = total / n;
        let all = (at_root && total.is_multiple_of(n))
            .then(|| (0..n).map(|r| encode(&data[r * k..(r + 1) * k])).collect());
        let refused = (at_root && all.is_none()).then(|| {
            Error::Config(format!(
                "{what} on team {:#x}: the root's {total} elements do not make one block per \
                 member of a team of {n}",
                self.id()
            ))
        });
        let sig = Sig::of(
            Kind::Scatter,
            Some(root),
            ElemId::of::<T>(),
            OpId::None,
            total,
        );
        let part = TreeScatter::new(root, Some(k * T::SIZE), all);
        self.scatter_coll(what, sig, part, root, refused)
    }

    /// A scatter of one block to each member from `blocks` at the root.
    fn scatterv_job<T: Element, B: AsRef<[T]>>(
        &self,
        what: &'static str,
        root: u32,
        blocks: &[B],
    ) -> Result<Job<TreeScatter, Finish<TreeScatter, Vec<u8>>>> {
        let n = self.size() as usize;
        let at_root = self.my_rank() == root;
        let count = if at_root { blocks.len() } else { n };
        let all = at_root.then(|| {
            blocks
                .iter()
                .map(|b| encode(b.as_ref()))
                .collect::<Vec<_>>()
        });
        let refused = (count != n).then(|| {
            Error::Config(format!(
                "{what} on team {:#x}: the root passed {count} blocks for a team of {n} (one \
                 per member)",
                self.id()
            ))
        });
        let sig = Sig::of(
            Kind::Scatterv,
            Some(root),
            ElemId::of::<T>(),
            OpId::None,
            count,
        );
        let part = TreeScatter::new(root, None, all);
        self.scatter_coll(what, sig, part, root, refused)
    }

    fn scatter_coll(
        &self,
        what: &'static str,
        sig: Sig,
        part: TreeScatter,
        root: u32,
        refused: Option<Error>,
    ) -> Result<Job<TreeScatter, Finish<TreeScatter, Vec<u8>>>> {
        let refused = self.check_root(root).err().or(refused);
        let coll = self.coll(what, sig, part, refused)?;
        Ok(Job {
            coll,
            finish: |c| std::mem::take(&mut c.part.mine),
        })
    }

    /// Alltoall: `data` holds one block of `data.len() / size()` elements
    /// for each member, in team-rank order (the same length on every
    /// member, a multiple of the team size); every member gets the blocks
    /// meant for it, in team-rank order of their senders.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// // Send my rank to everyone: get everyone's rank back.
    /// let got = team.alltoall(&vec![team.my_rank(); team.size() as usize])?;
    /// assert_eq!(got, (0..team.size()).collect::<Vec<_>>());
    /// # Ok(()) }
    /// ```
    pub fn alltoall<T: Element>(&self, data: &[T]) -> Result<Vec<T>> {
        if let Some(got) = self.alltoall_on_board(data)? {
            return Ok(got);
        }
        self.run(self.alltoall_job::<T>("alltoall", data)?.map(flat))
    }

    /// Start an [`alltoall`](Self::alltoall).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let ev = team.alltoall_nb(&vec![0u64; 4 * team.size() as usize])?;
    /// assert_eq!(ev.wait()?.len(), 4 * team.size() as usize);
    /// # Ok(()) }
    /// ```
    pub fn alltoall_nb<T: Element>(&self, data: &[T]) -> Result<CollEvent<Vec<T>>> {
        if let Some(ev) = self.alltoall_nb_on_board(data)? {
            return Ok(ev);
        }
        self.start(self.alltoall_job::<T>("alltoall_nb", data)?.map(flat))
    }

    /// Alltoall of blocks of any size: `blocks` holds one block for each
    /// member in team-rank order; every member gets the blocks meant for
    /// it, one per sender in team-rank order.
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// // To team rank r, r copies of my rank.
    /// let out: Vec<Vec<u32>> = (0..team.size()).map(|r| vec![team.my_rank(); r as usize]).collect();
    /// let got = team.alltoallv(&out)?;
    /// assert!(got.iter().all(|b| b.len() == team.my_rank() as usize));
    /// # Ok(()) }
    /// ```
    pub fn alltoallv<T: Element, B: AsRef<[T]>>(&self, blocks: &[B]) -> Result<Vec<Vec<T>>> {
        self.run(self.alltoallv_job("alltoallv", blocks)?.map(elements))
    }

    /// Start an [`alltoallv`](Self::alltoallv).
    ///
    /// ```no_run
    /// # fn demo(client: &rgex_endpoint::Client) -> rgex_core::Result<()> {
    /// let team = client.world();
    /// let out = vec![vec![1u8]; team.size() as usize];
    /// assert_eq!(team.alltoallv_nb(&out)?.wait()?, out);
    /// # Ok(()) }
    /// ```
    pub fn alltoallv_nb<T: Element, B: AsRef<[T]>>(
        &self,
        blocks: &[B],
    ) -> Result<CollEvent<Vec<Vec<T>>>> {
        self.start(self.alltoallv_job("alltoallv_nb", blocks)?.map(elements))
    }

    /// An alltoall of `data`, cut into one block per member.
    fn alltoall_job<T: Element>(
        &self,
        what: &'static str,
        data: &[T],
    ) -> Result<BlocksJob<Exchange>> {
        let n = self.size() as usize;
        let sig = Sig::of(
            Kind::Alltoall,
            None,
            ElemId::of::<T>(),
            OpId::None,
            data.len(),
        );
        let (blocks, refused) = if data.len().is_multiple_of(n) {
            let k = data.len() / n;
            let blocks: Vec<Vec<u8>> = (0..n).map(|r| encode(&data[r * k..(r + 1) * k])).collect();
            (blocks, None)
        } else {
            let e = Error::Config(format!(
                "{what} on team {:#x}: {} elements do not make one block per member of a team \
                 of {n}",
                self.id(),
                data.len()
            ));
            (vec![Vec::new(); n], Some(e))
        };
        let part = Exchange::new(Some(data.len() / n * T::SIZE), blocks);
        self.exchange_coll(what, sig, part, refused)
    }

    /// An alltoall of one block of any size per member.
    fn alltoallv_job<T: Element, B: AsRef<[T]>>(
        &self,
        what: &'static str,
        blocks: &[B],
    ) -> Result<BlocksJob<Exchange>> {
        let n = self.size() as usize;
        let sig = Sig::of(
            Kind::Alltoallv,
            None,
            ElemId::of::<T>(),
            OpId::None,
            blocks.len(),
        );
        let refused = (blocks.len() != n).then(|| {
            Error::Config(format!(
                "{what} on team {:#x}: {} blocks for a team of {n} (one per member)",
                self.id(),
                blocks.len()
            ))
        });
        let mut out: Vec<Vec<u8>> = blocks.iter().map(|b| encode(b.as_ref())).collect();
        out.resize(n, Vec::new());
        out.truncate(n);
        self.exchange_coll(what, sig, Exchange::new(None, out), refused)
    }

    fn exchange_coll(
        &self,
        what: &'static str,
        sig: Sig,
        part: Exchange,
        refused: Option<Error>,
    ) -> Result<BlocksJob<Exchange>> {
        let coll = self.coll(what, sig, part, refused)?;
        Ok(Job {
            coll,
            finish: |c| c.part.blocks(),
        })
    }
}
