//! Per-operation flags.

bitflags::bitflags! {
    /// Flags that change how one operation is injected.
    ///
    /// ```
    /// use rgex_core::Flags;
    /// let f = Flags::IMMEDIATE;
    /// assert!(f.contains(Flags::IMMEDIATE));
    /// assert!(!Flags::empty().contains(Flags::IMMEDIATE));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Flags: u32 {
        /// Fail fast: if the operation would have to wait for a resource
        /// (a full queue, no payload buffer, no credits), return
        /// [`Error::WouldBlock`](crate::Error::WouldBlock) at once, having
        /// sent nothing and changed nothing. Without it, the call polls until
        /// the resource is free.
        const IMMEDIATE = 1 << 0;
    }
}
