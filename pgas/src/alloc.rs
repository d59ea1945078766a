//! Allocating in this rank's shared heap, and reaching memory directly
//! where its owner's segment is mapped here.

use crate::error::{Error, Result};
use crate::global_ptr::GlobalPtr;
use crate::plain::{bytes_of, Plain};
use crate::runtime::Pgas;

impl Pgas {
    /// Allocate one `T` in this rank's shared heap, set to `value`.
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let p = pg.new_(42u64)?;
    /// assert_eq!(p.rank(), pg.rank());
    /// pg.delete_(p)?;
    /// # Ok(()) }
    /// ```
    pub fn new_<T: Plain>(&self, value: T) -> Result<GlobalPtr<T>> {
        self.new_array(1, value)
    }

    /// Allocate `n` `T`s in this rank's shared heap, each set to `fill`.
    pub fn new_array<T: Plain>(&self, n: usize, fill: T) -> Result<GlobalPtr<T>> {
        let size = std::mem::size_of::<T>() as u64;
        let len = (n as u64).checked_mul(size).ok_or_else(|| {
            Error::from(rgex::Error::Failed(format!(
                "rgex-pgas: {}: an array of {n} elements of {size} bytes overflows",
                self.rank()
            )))
        })?;
        let align = std::mem::align_of::<T>() as u64;
        let at = self.inner.heap.alloc::<T>(len, align)?;
        let seg = self.client().endpoint().segment();
        let chunk = vec![fill; n.clamp(1, 4096)];
        let mut done = 0usize;
        while done < n {
            let k = chunk.len().min(n - done);
            let off = at + done as u64 * size;
            if let Err(e) = seg.write(off, bytes_of(&chunk[..k])) {
                self.inner.heap.free::<T>(at)?;
                return Err(e.into());
            }
            done += k;
        }
        Ok(GlobalPtr::new(self.rank(), at))
    }

    /// Free what [`new_`](Self::new_) or [`new_array`](Self::new_array)
    /// allocated at `p`, on the rank that allocated it. A pointer that is
    /// another rank's, null, not at the start of an allocation, already
    /// freed, or of another type than it was allocated as, is an error.
    pub fn delete_<T: Plain>(&self, p: GlobalPtr<T>) -> Result<()> {
        self.own(p, "delete_")?;
        self.inner.heap.free::<T>(p.offset())
    }

    /// True if `p`'s memory can be reached with loads and stores from
    /// this process, coherently with rgex's own transfers: the conduit
    /// maps its rank's segment here (smp, and a network conduit's
    /// node-local peers with its bypass on, this rank included). Not on
    /// scc, whose emulated memory is not coherent with plain stores, nor
    /// on a network conduit's own segment with the bypass off (rgex then
    /// moves even this rank's data through the network's path).
    pub fn is_local<T>(&self, p: GlobalPtr<T>) -> bool {
        !p.is_null() && self.ep().locality().mapped_segment(p.rank()).is_some()
    }

    /// A plain pointer to `p`'s element, where [`is_local`](Self::is_local).
    /// Dereferencing it is the caller's business: other ranks may write
    /// there at any time (use it as UPC++'s `local()`: for data this rank
    /// owns by agreement).
    ///
    /// ```no_run
    /// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
    /// let p = pg.new_array::<u32>(8, 0)?;
    /// let raw = pg.local(p)?;
    /// // SAFETY: nobody else knows p yet.
    /// unsafe { *raw.add(3) = 9 };
    /// assert_eq!(pg.wait(pg.rget(p.plus(3)?)?)?, 9);
    /// # Ok(()) }
    /// ```
    pub fn local<T: Plain>(&self, p: GlobalPtr<T>) -> Result<*mut T> {
        let bad = |why: String| Error::BadPointer {
            rank: self.rank(),
            what: "local",
            owner: p.rank(),
            at: p.offset(),
            why,
        };
        let seg = self.ep().locality().mapped_segment(p.rank()).ok_or_else(|| {
            bad("the conduit does not map its rank's segment in this process (not node-local, or a conduit that maps none: see is_local)".into())
        })?;
        if p.is_null() {
            return Err(bad("it is null".into()));
        }
        if !p.offset().is_multiple_of(std::mem::align_of::<T>() as u64) {
            return Err(bad(format!(
                "it is not aligned for {}",
                std::any::type_name::<T>()
            )));
        }
        let ptr = seg
            .ptr_at(p.offset(), std::mem::size_of::<T>())
            .map_err(|e| bad(e.to_string()))?;
        Ok(ptr.cast())
    }

    /// `p` must be this rank's.
    fn own<T>(&self, p: GlobalPtr<T>, what: &'static str) -> Result<()> {
        if p.is_null() || p.rank() != self.rank() {
            return Err(Error::BadPointer {
                rank: self.rank(),
                what,
                owner: p.rank(),
                at: p.offset(),
                why: if p.is_null() {
                    "it is null".into()
                } else {
                    "only the rank that allocated it may free it".into()
                },
            });
        }
        Ok(())
    }
}
