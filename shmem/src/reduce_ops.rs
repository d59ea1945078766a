//! The reduction operators of OpenSHMEM 1.5's table 12 (and, or, xor,
//! max, min, sum, prod), elementwise over C types: integer sums and
//! products wrap, as C's unsigned arithmetic does (and as every
//! implementation does for the signed types); float max and min follow C's
//! `a > b ? a : b`. The complex types have sum and prod only.
//!
//! ```
//! use rgex_shmem::reduce_ops::{max, prod, sum, xor, ComplexF};
//! let mut a = [1i32, 7];
//! sum(&mut a, &[2, 3]);
//! assert_eq!(a, [3, 10]);
//! max(&mut a, &[5, 5]);
//! assert_eq!(a, [5, 10]);
//! let mut b = [0b1100u8];
//! xor(&mut b, &[0b1010]);
//! assert_eq!(b, [0b0110]);
//! let mut c = [ComplexF([0.0, 1.0])];
//! prod(&mut c, &[ComplexF([0.0, 1.0])]); // i * i
//! assert_eq!(c, [ComplexF([-1.0, 0.0])]);
//! ```

/// `float _Complex`: real, imaginary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ComplexF(pub [f32; 2]);

/// `double _Complex`: real, imaginary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ComplexD(pub [f64; 2]);

/// A type with sum and product.
pub trait Arith: Copy {
    /// `a + b`.
    fn add(a: Self, b: Self) -> Self;
    /// `a * b`.
    fn mul(a: Self, b: Self) -> Self;
}

/// A type with max and min.
pub trait Order: Copy {
    /// The larger.
    fn max(a: Self, b: Self) -> Self;
    /// The smaller.
    fn min(a: Self, b: Self) -> Self;
}

/// A type with the bitwise operators.
pub trait Bits: Copy {
    /// `a & b`.
    fn and(a: Self, b: Self) -> Self;
    /// `a | b`.
    fn or(a: Self, b: Self) -> Self;
    /// `a ^ b`.
    fn xor(a: Self, b: Self) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        }
        impl Order for $t {
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
        }
        impl Bits for $t {
            fn and(a: Self, b: Self) -> Self { a & b }
            fn or(a: Self, b: Self) -> Self { a | b }
            fn xor(a: Self, b: Self) -> Self { a ^ b }
        }
    )*};
}

int!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self { a + b }
            fn mul(a: Self, b: Self) -> Self { a * b }
        }
        impl Order for $t {
            fn max(a: Self, b: Self) -> Self { if a > b { a } else { b } }
            fn min(a: Self, b: Self) -> Self { if a < b { a } else { b } }
        }
    )*};
}

float!(f32, f64);

macro_rules! complex {
    ($($t:ident),*) => {$(
        impl Arith for $t {
            fn add(a: Self, b: Self) -> Self {
                $t([a.0[0] + b.0[0], a.0[1] + b.0[1]])
            }
            fn mul(a: Self, b: Self) -> Self {
                let ([ar, ai], [br, bi]) = (a.0, b.0);
                $t([ar * br - ai * bi, ar * bi + ai * br])
            }
        }
    )*};
}

complex!(ComplexF, ComplexD);

fn each<T: Copy>(acc: &mut [T], x: &[T], f: impl Fn(T, T) -> T) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a = f(*a, *b);
    }
}

/// `acc[i] += x[i]`.
pub fn sum<T: Arith>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::add)
}

/// `acc[i] *= x[i]`.
pub fn prod<T: Arith>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::mul)
}

/// `acc[i] = max(acc[i], x[i])`.
pub fn max<T: Order>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::max)
}

/// `acc[i] = min(acc[i], x[i])`.
pub fn min<T: Order>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::min)
}

/// `acc[i] &= x[i]`.
pub fn and<T: Bits>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::and)
}

/// `acc[i] |= x[i]`.
pub fn or<T: Bits>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::or)
}

/// `acc[i] ^= x[i]`.
pub fn xor<T: Bits>(acc: &mut [T], x: &[T]) {
    each(acc, x, T::xor)
}
