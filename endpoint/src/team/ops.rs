//! Element types and built-in reduction operators.

use rgex_core::{Error, Result};

/// A value that collectives can carry: a fixed number of bytes, written
/// and read little-endian. Implemented for the built-in numeric types and
/// `u8`; implement it for your own `Copy` types to reduce them with a
/// user-supplied operator.
///
/// ```
/// use rgex_endpoint::team::Element;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Pair { v: i32, i: u32 }
/// impl Element for Pair {
///     const SIZE: usize = 8;
///     fn write(&self, out: &mut Vec<u8>) {
///         self.v.write(out);
///         self.i.write(out);
///     }
///     fn read(b: &[u8]) -> Self {
///         Pair { v: i32::read(&b[..4]), i: u32::read(&b[4..]) }
///     }
/// }
/// let mut out = Vec::new();
/// Pair { v: -3, i: 7 }.write(&mut out);
/// assert_eq!(Pair::read(&out), Pair { v: -3, i: 7 });
/// ```
pub trait Element: Copy + Send + Sync + 'static {
    /// Encoded size in bytes (more than 0).
    const SIZE: usize;
    /// Append the encoding of `self` (exactly `SIZE` bytes) to `out`.
    fn write(&self, out: &mut Vec<u8>);
    /// Decode from exactly `SIZE` bytes.
    fn read(b: &[u8]) -> Self;

    /// Append the encoding of every element of `v` (what
    /// [`write`](Self::write) gives for each, back to back). The default
    /// calls `write` per element; the built-in types copy their bytes at
    /// once.
    ///
    /// ```
    /// use rgex_endpoint::team::Element;
    /// let mut out = Vec::new();
    /// u32::write_all(&[1, 2], &mut out);
    /// assert_eq!(out, [1, 0, 0, 0, 2, 0, 0, 0]);
    /// ```
    fn write_all(v: &[Self], out: &mut Vec<u8>) {
        out.reserve(v.len() * Self::SIZE);
        for x in v {
            x.write(out);
        }
    }

    /// Decode every element of `b` (a multiple of `SIZE` bytes; what is
    /// left over is ignored). The default calls [`read`](Self::read) per
    /// element; the built-in types copy their bytes at once.
    ///
    /// ```
    /// use rgex_endpoint::team::Element;
    /// assert_eq!(u32::read_all(&[1, 0, 0, 0, 2, 0, 0, 0]), [1, 2]);
    /// ```
    fn read_all(b: &[u8]) -> Vec<Self> {
        b.chunks_exact(Self::SIZE).map(Self::read).collect()
    }
}

/// A built-in reduction operator. Bitwise operators apply to integers
/// only. Integer sums and products wrap on overflow.
///
/// ```
/// use rgex_endpoint::team::{Numeric, ReduceOp};
/// let mut acc = [1u32, 6];
/// u32::combine(ReduceOp::Max, &mut acc, &[4, 5]).unwrap();
/// assert_eq!(acc, [4, 6]);
/// assert!(f64::combine(ReduceOp::Xor, &mut [1.0], &[2.0]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers).
    And,
    /// Bitwise or (integers).
    Or,
    /// Bitwise exclusive or (integers).
    Xor,
}

/// An element type with the built-in operators.
pub trait Numeric: Element {
    /// `acc[i] = acc[i] op x[i]` for every `i` (the slices have one length).
    fn combine(op: ReduceOp, acc: &mut [Self], x: &[Self]) -> Result<()>;
}

fn zip<T: Copy>(acc: &mut [T], x: &[T], f: impl Fn(T, T) -> T) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a = f(*a, *b);
    }
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn write(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_le_bytes(a)
            }
            #[cfg(target_endian = "little")]
            fn write_all(v: &[Self], out: &mut Vec<u8>) {
                // SAFETY: a primitive number has no padding and its
                // in-memory bytes are, on a little-endian target, its
                // `to_le_bytes`; the view covers exactly `v`'s memory,
                // which lives and is not written while it is read.
                let bytes = unsafe {
                    std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
                };
                out.extend_from_slice(bytes);
            }
            #[cfg(target_endian = "little")]
            fn read_all(b: &[u8]) -> Vec<Self> {
                let n = b.len() / Self::SIZE;
                let mut v: Vec<Self> = Vec::with_capacity(n);
                // SAFETY: `v` has room for `n` elements, that is
                // `n * SIZE` bytes, all taken from `b` (which holds at
                // least that many; the buffers do not overlap); every bit
                // pattern is a valid value of a primitive number, and on a
                // little-endian target its bytes are its `from_le_bytes`.
                // Only then is the length set.
                unsafe {
                    std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr().cast::<u8>(), n * Self::SIZE);
                    v.set_len(n);
                }
                v
            }
        }
    )*};
}

element!(u8, i32, u32, i64, u64, f32, f64);

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            fn combine(op: ReduceOp, acc: &mut [Self], x: &[Self]) -> Result<()> {
                match op {
                    ReduceOp::Sum => zip(acc, x, <$t>::wrapping_add),
                    ReduceOp::Prod => zip(acc, x, <$t>::wrapping_mul),
                    ReduceOp::Min => zip(acc, x, <$t>::min),
                    ReduceOp::Max => zip(acc, x, <$t>::max),
                    ReduceOp::And => zip(acc, x, |a, b| a & b),
                    ReduceOp::Or => zip(acc, x, |a, b| a | b),
                    ReduceOp::Xor => zip(acc, x, |a, b| a ^ b),
                }
                Ok(())
            }
        }
    )*};
}

integer!(u8, i32, u32, i64, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            fn combine(op: ReduceOp, acc: &mut [Self], x: &[Self]) -> Result<()> {
                match op {
                    ReduceOp::Sum => zip(acc, x, |a, b| a + b),
                    ReduceOp::Prod => zip(acc, x, |a, b| a * b),
                    ReduceOp::Min => zip(acc, x, <$t>::min),
                    ReduceOp::Max => zip(acc, x, <$t>::max),
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                        return Err(Error::Config(format!(
                            "reduction {op:?} is defined for integers only, not {}",
                            stringify!($t)
                        )))
                    }
                }
                Ok(())
            }
        }
    )*};
}

float!(f32, f64);

/// Check an operator against a type before any message is sent, so a
/// bad operator fails on every rank alike instead of half-way through.
pub(crate) fn check<T: Numeric>(op: ReduceOp) -> Result<()> {
    T::combine(op, &mut [], &[])
}

/// How a reduction or a scan combines two operands: `acc = acc op x`,
/// where `acc` holds lower team ranks than `x`.
pub(crate) trait Combine<T> {
    fn combine(&mut self, acc: &mut [T], x: &[T]) -> Result<()>;
}

/// A built-in operator.
#[derive(Clone, Copy)]
pub(crate) struct Builtin(pub(crate) ReduceOp);

impl<T: Numeric> Combine<T> for Builtin {
    fn combine(&mut self, acc: &mut [T], x: &[T]) -> Result<()> {
        T::combine(self.0, acc, x)
    }
}

/// A user's operator.
pub(crate) struct User<F>(pub(crate) F);

impl<T, F: FnMut(&mut [T], &[T])> Combine<T> for User<F> {
    fn combine(&mut self, acc: &mut [T], x: &[T]) -> Result<()> {
        (self.0)(acc, x);
        Ok(())
    }
}
