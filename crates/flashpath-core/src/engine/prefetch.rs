//! A hint to the CPU: start bringing a value into the cache now, because the
//! simulation will read it soon (fio's random map at a terabyte is 32 MiB: every random
//! pick is a cache miss, and the pick of the next I/O is known one I/O ahead).
//! It changes no result: only when the value's memory is read.

/// Asks for the cache line holding `*x` (a no-op off x86-64).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is only a hint: it never faults and changes no architectural
    // state, whatever the address; here the address is that of a live reference besides.
    // SSE, which it needs, is part of x86-64's baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(x as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
