//! Seeded random streams. The algorithm is pinned (ChaCha8) so that a seed gives the
//! same run on every machine and every version of the `rand` crates; each component
//! takes its own stream, derived from the run seed and a stream id.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

pub struct SimRng(ChaCha8Rng);

impl SimRng {
    /// The stream `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        SimRng(rng)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift; the tiny bias for huge `n`
    /// is irrelevant here and keeps this branch-free.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_pinned() {
        // Pins the algorithm: a change of PRNG would change every simulated result.
        let mut a = SimRng::new(1, 0);
        let first = [a.next_u64(), a.next_u64()];
        let mut b = SimRng::new(1, 0);
        assert_eq!(first, [b.next_u64(), b.next_u64()]);
        let mut c = SimRng::new(1, 1);
        assert_ne!(first[0], c.next_u64());
        assert_eq!(first, PINNED);
    }

    const PINNED: [u64; 2] = [0x6709_4cea_8ca4_0db1, 0x1494_06d8_fc0e_8e6b];
}
