//! Values that move between ranks as their bytes: what `rput`, `rget`
//! and the shared heap carry.

/// A type whose every bit pattern is a valid value and which has no
/// padding: it can be written to another rank's memory and read back as
/// bytes. Implemented for the integer and floating-point types and for
/// arrays of them (not `bool` or `char`, which have invalid patterns).
///
/// # Safety
/// Implement it only for `Copy` types without padding bytes and for which
/// every bit pattern of their size is a valid value (a `#[repr(C)]`
/// struct of `Plain` fields with no gaps, say).
///
/// ```
/// use rgex_pgas::Plain;
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Cell {
///     key: u64,
///     value: u64,
/// }
/// // SAFETY: two u64s, no padding; any 16 bytes are a valid Cell.
/// unsafe impl Plain for Cell {}
/// ```
pub unsafe trait Plain: Copy + Send + Sync + 'static {}

macro_rules! plain {
    ($($t:ty),*) => {
        // SAFETY: primitive integers and floats have no padding and every
        // bit pattern is a value.
        $(unsafe impl Plain for $t {})*
    };
}
plain!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of padding-free, any-pattern elements has no padding
// (arrays have none between elements) and any pattern is a value.
unsafe impl<T: Plain, const N: usize> Plain for [T; N] {}

/// The bytes of `values`.
pub(crate) fn bytes_of<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so every byte of the slice is
    // initialized; u8 has alignment 1 and the length is the slice's size.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// `bytes` as values of `T` (copied: `bytes` need not be aligned).
pub(crate) fn values_of<T: Plain>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / std::mem::size_of::<T>().max(1);
    let mut out = Vec::<T>::with_capacity(n);
    // SAFETY: the vector has room for `n` values, i.e. `n * size_of::<T>()`
    // <= bytes.len() bytes; every pattern is a valid `T` (Plain), so the
    // copied values are initialized before set_len.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            n * std::mem::size_of::<T>(),
        );
        out.set_len(n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_their_bytes() {
        let v = [1.5f64, -2.0, 1e300];
        assert_eq!(values_of::<f64>(bytes_of(&v)), v);
        let a = [[1u16, 2], [3, 4]];
        assert_eq!(values_of::<[u16; 2]>(bytes_of(&a)), a);
        // Unaligned bytes are fine.
        let mut b = [0u8; 17];
        b[1..].copy_from_slice(bytes_of(&[7u64, 9]));
        assert_eq!(values_of::<u64>(&b[1..]), [7, 9]);
    }
}
