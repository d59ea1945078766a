//! Typed pointers into any rank's shared heap.

use crate::plain::Plain;
use rgex::{GlobalAddr, Rank};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::marker::PhantomData;

/// A pointer to a `T` in the shared heap of rank [`rank`](Self::rank):
/// copyable, comparable, sendable in RPC arguments, with pointer
/// arithmetic in units of `T`. The null pointer points nowhere and every
/// operation on it is an error.
///
/// ```no_run
/// # fn demo(pg: &rgex_pgas::Pgas) -> rgex_pgas::Result<()> {
/// let p = pg.new_array::<u64>(4, 0)?;        // four u64s in my heap
/// let third = p.plus(2)?;                      // &p[2]
/// pg.wait(pg.rput(7u64, third)?)?;            // p[2] = 7
/// assert_eq!(pg.wait(pg.rget(third)?)?, 7);
/// pg.delete_(p)?;
/// # Ok(()) }
/// ```
pub struct GlobalPtr<T> {
    rank: Rank,
    offset: u64,
    _t: PhantomData<fn() -> T>,
}

/// The offset of the null pointer (no allocation can start there).
const NULL: u64 = u64::MAX;

impl<T> GlobalPtr<T> {
    /// The null pointer.
    pub const fn null() -> Self {
        GlobalPtr {
            rank: Rank(0),
            offset: NULL,
            _t: PhantomData,
        }
    }

    /// A pointer to `offset` in `rank`'s segment (crate use: the heap
    /// makes them).
    pub(crate) const fn new(rank: Rank, offset: u64) -> Self {
        GlobalPtr {
            rank,
            offset,
            _t: PhantomData,
        }
    }

    /// True for the null pointer.
    pub fn is_null(&self) -> bool {
        self.offset == NULL
    }

    /// The rank whose heap it points into.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Its byte offset in its rank's segment.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The rgex address it names (an error for the null pointer).
    pub fn addr(&self) -> crate::Result<GlobalAddr> {
        if self.is_null() {
            return Err(
                rgex::Error::Failed("rgex-pgas: the null global pointer was used".into()).into(),
            );
        }
        Ok(GlobalAddr::new(self.rank, self.offset))
    }

    /// The same address seen as a pointer to `U` (as a C cast would: the
    /// caller says what lives there).
    pub fn cast<U>(self) -> GlobalPtr<U> {
        GlobalPtr::new(self.rank, self.offset)
    }
}

impl<T: Plain> GlobalPtr<T> {
    /// The pointer `n` elements further (`n` may be negative), an error on
    /// overflow or for the null pointer.
    pub fn plus(self, n: i64) -> crate::Result<Self> {
        let size = std::mem::size_of::<T>() as i64;
        let moved = n
            .checked_mul(size)
            .and_then(|d| self.offset.checked_add_signed(d))
            .filter(|&o| o != NULL && !self.is_null());
        match moved {
            Some(offset) => Ok(GlobalPtr::new(self.rank, offset)),
            None => Err(rgex::Error::Failed(format!(
                "rgex-pgas: {self:?} + {n} elements of {size} bytes leaves the address space"
            ))
            .into()),
        }
    }

    /// How many `T`s `self` lies after `origin` (both on one rank).
    pub fn distance_from(self, origin: Self) -> crate::Result<i64> {
        let size = std::mem::size_of::<T>().max(1) as i128;
        let d = i128::from(self.offset) - i128::from(origin.offset);
        if self.rank != origin.rank || self.is_null() || origin.is_null() || d % size != 0 {
            return Err(rgex::Error::Failed(format!(
                "rgex-pgas: no whole number of {size}-byte elements from {origin:?} to {self:?}"
            ))
            .into());
        }
        Ok((d / size) as i64)
    }
}

// Derives would demand `T: Clone` etc.; a pointer is copyable whatever it
// points to.
impl<T> Clone for GlobalPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalPtr<T> {}
impl<T> PartialEq for GlobalPtr<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.rank, self.offset) == (o.rank, o.offset)
    }
}
impl<T> Eq for GlobalPtr<T> {}
impl<T> std::hash::Hash for GlobalPtr<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.rank.0, self.offset).hash(h)
    }
}
impl<T> Default for GlobalPtr<T> {
    fn default() -> Self {
        Self::null()
    }
}
impl<T> fmt::Debug for GlobalPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            write!(f, "GlobalPtr(null)")
        } else {
            write!(f, "GlobalPtr({}, {:#x})", self.rank, self.offset)
        }
    }
}

impl<T> Serialize for GlobalPtr<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.rank.0, self.offset).serialize(s)
    }
}
impl<'de, T> Deserialize<'de> for GlobalPtr<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (rank, offset) = <(u32, u64)>::deserialize(d)?;
        Ok(GlobalPtr::new(Rank(rank), offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_in_elements_and_checked() {
        let p = GlobalPtr::<u32>::new(Rank(2), 64);
        assert_eq!(p.plus(3).unwrap().offset(), 76);
        assert_eq!(p.plus(3).unwrap().plus(-3).unwrap(), p);
        assert_eq!(p.plus(5).unwrap().distance_from(p).unwrap(), 5);
        assert!(p.plus(-17).is_err(), "below offset 0");
        assert!(GlobalPtr::<u32>::null().plus(1).is_err());
        assert!(GlobalPtr::<u32>::null().addr().is_err());
        assert!(p.distance_from(GlobalPtr::new(Rank(1), 64)).is_err());
        assert!(p
            .cast::<u8>()
            .plus(1)
            .unwrap()
            .cast::<u32>()
            .distance_from(p)
            .is_err());
    }

    #[test]
    fn a_pointer_survives_serialization() {
        let p = GlobalPtr::<f64>::new(Rank(3), 4096);
        let bytes = postcard::to_allocvec(&p).unwrap();
        assert_eq!(postcard::from_bytes::<GlobalPtr<f64>>(&bytes).unwrap(), p);
        assert_eq!(format!("{:?}", GlobalPtr::<u8>::null()), "GlobalPtr(null)");
    }
}
