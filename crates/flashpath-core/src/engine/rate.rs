//! A transfer rate fixed for the run (a bus's data rate, a NAND channel's), kept with its
//! reciprocal so that the time of a transfer, [`super::transfer_ns`]'s ceil(bytes x 10^9
//! / rate), is a multiply and one correction instead of the processor's 64-bit divide
//! (14-40 cycles, and on the request path of every I/O several times).
//!
//! With inv = floor(2^64 / d) (2^64 - 1 for d = 1), p x inv / 2^64 lies in (p/d - 1,
//! p/d], so its floor is the quotient or one less; one compare of the remainder settles
//! it.

use super::{SimDuration, NS_PER_S};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    bytes_per_s: u64,
    /// floor(2^64 / bytes_per_s), or 2^64 - 1 for 1 byte/s.
    inv: u64,
}

impl Rate {
    pub fn new(bytes_per_s: u64) -> Rate {
        assert!(bytes_per_s > 0, "transfer rate must be positive");
        Rate {
            bytes_per_s,
            inv: ((1u128 << 64) / bytes_per_s as u128).min(u64::MAX as u128) as u64,
        }
    }

    /// Time to move `bytes`, rounded up: exactly `transfer_ns(bytes, bytes_per_s)`.
    #[inline(always)]
    pub fn ns(self, bytes: u64) -> SimDuration {
        let Some(p) = bytes.checked_mul(NS_PER_S) else {
            return super::transfer_ns(bytes, self.bytes_per_s);
        };
        let d = self.bytes_per_s;
        let mut q = ((p as u128 * self.inv as u128) >> 64) as u64;
        let mut r = p - q * d;
        if r >= d {
            q += 1;
            r -= d;
        }
        q + (r != 0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::transfer_ns;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edges_agree_with_the_divide() {
        let rates = [
            1,
            2,
            3,
            7,
            512,
            1 << 20,
            400_000_000,
            (1 << 63) + 1,
            u64::MAX,
        ];
        let sizes = [
            0,
            1,
            511,
            512,
            4096,
            4097,
            18_446_744_073,
            18_446_744_074,
            u64::MAX,
        ];
        for &d in &rates {
            let r = Rate::new(d);
            for &b in &sizes {
                assert_eq!(r.ns(b), transfer_ns(b, d), "{b} bytes at {d}/s");
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_divide(bytes in 0u64..1 << 36, rate in 1u64..u64::MAX) {
            prop_assert_eq!(Rate::new(rate).ns(bytes), transfer_ns(bytes, rate));
        }

        #[test]
        fn agrees_with_the_divide_at_bus_rates(bytes in 0u64..1 << 36, rate in 1u64..1 << 34) {
            prop_assert_eq!(Rate::new(rate).ns(bytes), transfer_ns(bytes, rate));
        }
    }
}
