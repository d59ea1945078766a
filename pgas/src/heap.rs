//! The shared heap: a thread-safe first-fit allocator over this rank's
//! segment, with every live allocation's size and type recorded so a
//! wrong free is an error, not a corrupted heap.

use crate::error::{Error, Result};
use rgex::Rank;
use std::any::TypeId;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The bytes at the start of every rank's segment that rgex-pgas leaves
/// to raw rgex RMA through [`Pgas::client`](crate::Pgas::client), when
/// `RGEX_PGAS_RAW` does not say (or a quarter of a segment smaller than
/// four times this): the heap starts after them. See
/// [`Pgas::raw_range`](crate::Pgas::raw_range).
///
/// ```
/// assert_eq!(rgex_pgas::heap::DEFAULT_RAW, 64 << 10);
/// ```
pub const DEFAULT_RAW: u64 = 64 << 10;

/// The raw range's length a setting of `RGEX_PGAS_RAW` asks for (`None`:
/// unset), for a segment of `seg` bytes: a size in bytes with an
/// optional `K`, `M` or `G` (binary), at most the segment.
pub(crate) fn raw_len(setting: Option<&str>, seg: u64) -> std::result::Result<u64, String> {
    let Some(s) = setting.filter(|s| !s.trim().is_empty()) else {
        return Ok(DEFAULT_RAW.min(seg / 4));
    };
    let t = s.trim().to_ascii_lowercase();
    let (digits, shift) = [
        ("kib", 10),
        ("k", 10),
        ("mib", 20),
        ("m", 20),
        ("gib", 30),
        ("g", 30),
    ]
    .iter()
    .find_map(|(suffix, shift)| Some((t.strip_suffix(suffix)?, *shift)))
    .unwrap_or((t.as_str(), 0));
    let n = digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| {
            format!("RGEX_PGAS_RAW={s:?}: expected a size in bytes, with an optional K, M or G (e.g. 64K)")
        })?;
    if n > seg {
        return Err(format!(
            "RGEX_PGAS_RAW={s:?}: the raw range ({n} bytes) does not fit the segment ({seg} bytes; RGEX_SEGMENT_SIZE sets it)"
        ));
    }
    Ok(n)
}

/// Every allocation starts at a multiple of this (so any `Plain` value
/// and rgex's 64-bit atomics fit without asking).
pub const MIN_ALIGN: u64 = 16;

/// One live allocation.
struct Alloc {
    len: u64,
    ty: TypeId,
    ty_name: &'static str,
}

struct Ranges {
    /// Free ranges by start: never adjacent (merged at free).
    free: BTreeMap<u64, u64>,
    /// Live allocations by start.
    live: BTreeMap<u64, Alloc>,
}

/// This rank's shared heap over `[start, end)` of its segment.
///
/// ```
/// use rgex_pgas::heap::Heap;
/// use rgex::Rank;
/// let h = Heap::new(Rank(0), 0, 1 << 20);
/// let a = h.alloc::<u64>(8 * 10, 8).unwrap();
/// let b = h.alloc::<u8>(100, 1).unwrap();
/// assert_ne!(a, b);
/// h.free::<u64>(a).unwrap();
/// assert!(h.free::<u64>(a).is_err(), "a second free is refused");
/// assert!(h.free::<u64>(b).is_err(), "freed as another type");
/// ```
pub struct Heap {
    rank: Rank,
    len: u64,
    ranges: Mutex<Ranges>,
}

impl Heap {
    /// A heap for `rank` over segment offsets `start..end`.
    pub fn new(rank: Rank, start: u64, end: u64) -> Heap {
        let start = start.next_multiple_of(MIN_ALIGN);
        let end = end - end % MIN_ALIGN;
        let mut free = BTreeMap::new();
        if end > start {
            free.insert(start, end - start);
        }
        Heap {
            rank,
            len: end.saturating_sub(start),
            ranges: Mutex::new(Ranges {
                free,
                live: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ranges> {
        // A panic while holding it left the maps consistent (every update
        // is done before any call that could panic), so go on.
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocate `len` bytes (at least 1) aligned to `align` (a power of
    /// two; at least [`MIN_ALIGN`]) for values of `T`; returns the offset.
    pub fn alloc<T: 'static>(&self, len: u64, align: u64) -> Result<u64> {
        let len = len.max(1).next_multiple_of(MIN_ALIGN);
        let align = align.max(MIN_ALIGN).next_power_of_two();
        let mut r = self.lock();
        let found = r.free.iter().find_map(|(&s, &l)| {
            let at = s.checked_next_multiple_of(align)?;
            (at.checked_add(len)? <= s + l).then_some((s, l, at))
        });
        let Some((s, l, at)) = found else {
            let free = r.free.values().sum();
            let largest = r.free.values().copied().max().unwrap_or(0);
            return Err(Error::OutOfHeap {
                rank: self.rank,
                what: format!("values of {}", std::any::type_name::<T>()),
                len,
                align,
                free,
                largest,
                heap: self.len,
            });
        };
        r.free.remove(&s);
        if at > s {
            r.free.insert(s, at - s);
        }
        if at + len < s + l {
            r.free.insert(at + len, s + l - at - len);
        }
        r.live.insert(
            at,
            Alloc {
                len,
                ty: TypeId::of::<T>(),
                ty_name: std::any::type_name::<T>(),
            },
        );
        if rgex::observe::on() {
            rgex::observe::pgas_heap(len, 0);
        }
        Ok(at)
    }

    /// The length of the live allocation of `T`s at `at`, or why there is
    /// none.
    pub fn check<T: 'static>(&self, at: u64) -> std::result::Result<u64, String> {
        let r = self.lock();
        Self::find::<T>(&r, at)
    }

    fn find<T: 'static>(r: &Ranges, at: u64) -> std::result::Result<u64, String> {
        match r.live.get(&at) {
            Some(a) if a.ty == TypeId::of::<T>() => Ok(a.len),
            Some(a) => Err(format!(
                "it was allocated for {}, not {}",
                a.ty_name,
                std::any::type_name::<T>()
            )),
            None => Err("no allocation starts there (never allocated, or already freed)".into()),
        }
    }

    /// Free the allocation of `T`s at `at`.
    pub fn free<T: 'static>(&self, at: u64) -> Result<()> {
        let mut r = self.lock();
        let len = Self::find::<T>(&r, at).map_err(|why| Error::BadPointer {
            rank: self.rank,
            what: "delete_",
            owner: self.rank,
            at,
            why,
        })?;
        r.live.remove(&at);
        if rgex::observe::on() {
            rgex::observe::pgas_heap(0, len);
        }
        let (mut s, mut l) = (at, len);
        // Merge with the free range just before and the one just after.
        if let Some((&ps, &pl)) = r.free.range(..at).next_back() {
            if ps + pl == at {
                r.free.remove(&ps);
                (s, l) = (ps, pl + l);
            }
        }
        if let Some(&nl) = r.free.get(&(at + len)) {
            r.free.remove(&(at + len));
            l += nl;
        }
        r.free.insert(s, l);
        Ok(())
    }

    /// Bytes free in all.
    pub fn free_bytes(&self) -> u64 {
        self.lock().free.values().sum()
    }

    /// The number of live allocations.
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_merge_and_the_whole_heap_comes_back() {
        let h = Heap::new(Rank(1), 100, 100 + 4096);
        let total = h.free_bytes();
        let offs: Vec<u64> = (0..8).map(|i| h.alloc::<u8>(100 + i, 1).unwrap()).collect();
        for w in offs.windows(2) {
            assert!(w[0] + 100 <= w[1], "no overlap");
        }
        assert!(offs.iter().all(|o| o % MIN_ALIGN == 0));
        for &o in offs.iter().step_by(2).chain(offs.iter().skip(1).step_by(2)) {
            h.free::<u8>(o).unwrap();
        }
        assert_eq!(h.free_bytes(), total);
        assert_eq!(h.live(), 0);
        // One range again: the whole heap fits in one allocation.
        h.alloc::<u8>(total, 1).unwrap();
    }

    #[test]
    fn exhaustion_and_alignment_are_reported() {
        let h = Heap::new(Rank(0), 0, 1024);
        let a = h.alloc::<u8>(1000, 1).unwrap();
        let e = h.alloc::<u8>(100, 1).unwrap_err().to_string();
        assert!(e.contains("rank 0") && e.contains("112 bytes"), "{e}");
        h.free::<u8>(a).unwrap();
        let b = h.alloc::<u64>(8, 256).unwrap();
        assert_eq!(b % 256, 0);
        let e = h.free::<u32>(b).unwrap_err().to_string();
        assert!(e.contains("allocated for u64, not u32"), "{e}");
        let e = h.free::<u64>(b + 16).unwrap_err().to_string();
        assert!(e.contains("no allocation starts there"), "{e}");
    }

    #[test]
    fn the_raw_range_is_read_from_its_setting_and_must_fit() {
        let seg = 32 << 20;
        assert_eq!(raw_len(None, seg), Ok(DEFAULT_RAW));
        assert_eq!(raw_len(Some(" "), seg), Ok(DEFAULT_RAW));
        assert_eq!(
            raw_len(None, 100_000),
            Ok(25_000),
            "a quarter of a small segment"
        );
        assert_eq!(raw_len(Some("0"), seg), Ok(0));
        assert_eq!(raw_len(Some("4096"), seg), Ok(4096));
        assert_eq!(raw_len(Some("300K"), seg), Ok(300 << 10));
        assert_eq!(raw_len(Some("2MiB"), seg), Ok(2 << 20));
        assert_eq!(raw_len(Some("32m"), seg), Ok(seg), "the whole segment");
        let e = raw_len(Some("lots"), seg).unwrap_err();
        assert!(
            e.contains("RGEX_PGAS_RAW=\"lots\"") && e.contains("size in bytes"),
            "{e}"
        );
        let e = raw_len(Some("64M"), seg).unwrap_err();
        assert!(
            e.contains("does not fit the segment (33554432 bytes"),
            "{e}"
        );
        assert!(raw_len(Some("99999999999G"), seg).is_err(), "overflow");
    }

    #[test]
    fn threads_share_one_heap() {
        let h = Heap::new(Rank(0), 0, 1 << 20);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..500u64 {
                        let a = h.alloc::<u8>(i % 200 + 1, 1).unwrap();
                        h.free::<u8>(a).unwrap();
                    }
                });
            }
        });
        assert_eq!(h.free_bytes(), 1 << 20);
    }
}
