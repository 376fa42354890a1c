//! Division by a number fixed for the run (a device's slots per page, dies, blocks per
//! die ...) as a multiply: the processor's divide takes 10-40 cycles, and a random
//! read's way through the FTL and the NAND divides by such numbers about twenty times.
//!
//! Lemire, Kaser and Kurz, "Faster Remainder by Direct Computation" (2019): with
//! c = ceil(2^64 / d), n / d = floor(c * n / 2^64) and n % d = floor(((c * n) mod 2^64)
//! * d / 2^64) for every 32-bit n and d >= 2. d = 1 is kept apart (c would be 2^64).

/// A 32-bit divisor with its multiplier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    d: u32,
    /// ceil(2^64 / d); 0 for d = 1.
    c: u64,
}

impl Divisor {
    /// `d` must be positive (a geometry's counts are, validated).
    pub fn new(d: u32) -> Divisor {
        assert!(d > 0, "division by zero");
        Divisor {
            d,
            c: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 },
        }
    }

    pub fn get(self) -> u32 {
        self.d
    }

    /// n / d.
    #[inline(always)]
    pub fn quotient(self, n: u32) -> u32 {
        if self.c == 0 {
            return n;
        }
        ((self.c as u128 * n as u128) >> 64) as u32
    }

    /// n % d.
    #[inline(always)]
    pub fn remainder(self, n: u32) -> u32 {
        if self.c == 0 {
            return 0;
        }
        let low = self.c.wrapping_mul(n as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }

    /// (n / d, n % d).
    #[inline(always)]
    pub fn div_rem(self, n: u32) -> (u32, u32) {
        (self.quotient(n), self.remainder(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn divides_as_the_processor_does(
            n in proptest::num::u32::ANY,
            d in proptest::prop_oneof![1u32..300, 1u32..=u32::MAX],
        ) {
            let v = Divisor::new(d);
            proptest::prop_assert_eq!(v.div_rem(n), (n / d, n % d));
        }
    }

    #[test]
    fn edges() {
        for d in [1, 2, 3, 7, 64, 1 << 31, u32::MAX - 1, u32::MAX] {
            let v = Divisor::new(d);
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u32::MAX - 1, u32::MAX] {
                assert_eq!(v.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
    }
}
