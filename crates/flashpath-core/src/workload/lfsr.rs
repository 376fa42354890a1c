//! fio's `random_generator=lfsr` (fio 3.33 lib/lfsr.c): a maximal-length linear feedback
//! shift register over the smallest bit width whose 2^n exceeds the block count, values
//! beyond the region skipped. Its period covers every state but the all-ones one, so a
//! pass of `nblocks` draws visits each block exactly once, without a random map (fio
//! allocates no axmap with lfsr). fio seeds it with `rand_seeds[FIO_RAND_BLOCK_OFF]`
//! and steps it with spin 0; both are reproduced here, so the block sequence is fio's.
//! Leaves out: spins other than 0 (fio always passes 0). Units: block numbers.

/// fio's tap table (`lfsr_taps`), indexed by bit width 3..=63.
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// fio's `struct fio_lfsr` with spin 0.
#[derive(Clone, Debug)]
pub struct Lfsr {
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    /// prepare_spin(0) leaves 1: the first draw steps twice, later ones once.
    cycle_length: u64,
    seed: u64,
}

impl Lfsr {
    /// fio's lfsr_init(nums, seed, 0). `None` where fio fails ("fio: failed initializing
    /// LFSR"): more than 2^63 blocks, or a seed whose low bits are the all-ones state.
    pub fn new(nums: u64, seed: u64) -> Option<Self> {
        let bits = (3..64).find(|&i| (1u64 << i) > nums)?;
        let taps = TAPS[bits];
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1 << (t - 1));
        let mut l = Lfsr {
            xormask,
            last_val: 0,
            cached_bit: 1 << (taps[0] - 1),
            max_val: nums.max(1) - 1,
            num_vals: 0,
            cycle_length: 1,
            seed,
        };
        l.reset().then_some(l)
    }

    /// fio's lfsr_reset with the seed given at creation (fio_file_reset at a new loop or
    /// a time_based restart): the same sequence again. False for the all-ones state.
    pub fn reset(&mut self) -> bool {
        let bitmask = (self.cached_bit << 1) - 1;
        self.num_vals = 0;
        self.last_val = self.seed & bitmask;
        self.cycle_length = 1;
        self.last_val != bitmask
    }

    #[inline]
    fn step(&mut self) {
        let v = self.last_val;
        self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
    }

    /// fio's lfsr_next: the next block, or `None` once `nums` values were given.
    pub fn next_block(&mut self) -> Option<u64> {
        let n = self.num_vals;
        self.num_vals += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle_length > 0 {
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    // __lfsr_next(fl, spin + 1): two steps; cached_cycle_length is 0.
                    self.step();
                }
            }
            self.step();
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_visits_each_block_exactly_once() {
        for (n, seed) in [(1000u64, 0xb189_9bedu64), (4096, 1), (5, 0), (100_003, 77)] {
            let mut l = Lfsr::new(n, seed).unwrap();
            let mut seen = vec![false; n as usize];
            for _ in 0..n {
                let b = l.next_block().unwrap();
                assert!(b < n);
                assert!(!seen[b as usize], "block {b} twice in one pass of {n}");
                seen[b as usize] = true;
            }
            assert_eq!(l.next_block(), None, "exhausted after {n}");
            assert!(l.reset());
            let first: Vec<u64> = (0..3).map(|_| l.next_block().unwrap()).collect();
            let mut again = Lfsr::new(n, seed).unwrap();
            let want: Vec<u64> = (0..3).map(|_| again.next_block().unwrap()).collect();
            assert_eq!(first, want, "a reset repeats the sequence");
        }
    }

    #[test]
    fn the_sequence_is_real_fios() {
        // fio 3.33, 1000 blocks of 4 KiB, rw=randread, random_generator=lfsr,
        // write_iolog: the first blocks of thread 1 and of thread 2 (seeded with
        // FIO_RANDSEED × thread_number under randrepeat=1).
        let first = |seed: u64, n: usize| {
            let mut l = Lfsr::new(1000, seed).unwrap();
            (0..n).map(|_| l.next_block().unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(
            first(0xb189_9bed, 12),
            [443, 733, 878, 503, 763, 893, 958, 415, 719, 871, 947, 985]
        );
        assert_eq!(first(0xb189_9bed * 2, 6), [726, 299, 661, 842, 485, 754]);
    }

    #[test]
    fn the_all_ones_seed_fails_as_in_fio() {
        // 1000 blocks: a 10-bit register; seed 0x3ff is its all-ones state.
        assert!(Lfsr::new(1000, 0x3ff).is_none());
        assert!(Lfsr::new(1000, 0x7fe).is_some());
    }
}
