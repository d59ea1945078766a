//! A payload copy without a library call when it is small: a send's
//! `memcpy` of a few bytes costs a call, glibc's size dispatch and a
//! return, more than the bytes themselves (an 8-byte Medium's copy was
//! about a sixth of its send).

/// Largest copy done inline; longer ones call `memcpy`.
const INLINE_MAX: usize = 16;

/// Copy `len` bytes from `src` to `dst`: inline up to [`INLINE_MAX`]
/// bytes, as two possibly overlapping unaligned words of the widest size
/// that fits (so each length takes one branch), `memcpy` beyond.
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`]: `src` readable and `dst` writable
/// for `len` bytes, the two not overlapping.
#[inline(always)]
pub(crate) unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: each access reads or writes inside `src..src + len` or
    // `dst..dst + len` (a word at the start and one ending at `len`, with
    // `len` at least the word's size), which the caller vouches for;
    // unaligned reads and writes need no alignment.
    unsafe {
        if len > INLINE_MAX {
            std::ptr::copy_nonoverlapping(src, dst, len);
        } else if len >= 8 {
            let (a, b) = (
                src.cast::<u64>().read_unaligned(),
                src.add(len - 8).cast::<u64>().read_unaligned(),
            );
            dst.cast::<u64>().write_unaligned(a);
            dst.add(len - 8).cast::<u64>().write_unaligned(b);
        } else if len >= 4 {
            let (a, b) = (
                src.cast::<u32>().read_unaligned(),
                src.add(len - 4).cast::<u32>().read_unaligned(),
            );
            dst.cast::<u32>().write_unaligned(a);
            dst.add(len - 4).cast::<u32>().write_unaligned(b);
        } else if len > 0 {
            // 1 to 3 bytes: the first, the middle one and the last.
            let (a, m, b) = (*src, *src.add(len / 2), *src.add(len - 1));
            *dst = a;
            *dst.add(len / 2) = m;
            *dst.add(len - 1) = b;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_length_up_to_past_the_inline_limit_copies_exactly_its_bytes() {
        let src: Vec<u8> = (1..=40).collect();
        for len in 0..=super::INLINE_MAX + 8 {
            for at in [0, 1, 3] {
                let mut dst = [0xeeu8; 48];
                // SAFETY: `src[at..at + len]` and `dst[at..at + len]` are
                // in bounds (at + len <= 27) and distinct arrays.
                unsafe { super::copy(src.as_ptr().add(at), dst.as_mut_ptr().add(at), len) };
                assert_eq!(&dst[at..at + len], &src[at..at + len], "len {len} at {at}");
                assert!(
                    dst[..at].iter().chain(&dst[at + len..]).all(|&b| b == 0xee),
                    "len {len} at {at}: a byte outside the copy changed"
                );
            }
        }
    }
}
