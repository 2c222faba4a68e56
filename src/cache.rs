//! Asking the processor to bring memory into its cache ahead of use.
//!
//! On a large farm the state of a server drawn at random is a cache miss when it is read (about
//! 100 ns from memory). When the loop knows which servers the next picks will read, it asks for
//! them early, so that the misses overlap with the work in between instead of each stalling the
//! pick that reads it.

/// Asks for the cache line holding `x` to be fetched into every level of the cache. A hint only:
/// it changes no value, and does nothing on processors without the instruction.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` never faults and writes nothing (any address may be named; this one is
    // of a live reference), and SSE, which provides it, is part of every x86-64 processor.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(x).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
