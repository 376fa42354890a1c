//! The record order of iozone's random tests (thread_ranread_test, thread_ranwrite_test):
//! a Fisher-Yates shuffle of the record numbers, drawn from iozone's 64-bit Mersenne
//! Twister (MT19937-64, Nishimura and Matsumoto's reference code, which iozone.c carries
//! and always compiles: `#define MERSENNE`) seeded with init_by_array64({0x12345,
//! 0x23456, 0x34567, 0x45678}). Each child seeds its own copy after fork(), so every
//! process reads (and writes) its file in the same order, each record once.

const NN: usize = 312;
const MM: usize = 156;
const MATRIX_A: u64 = 0xB502_6F5A_A966_19E9;
const UM: u64 = 0xFFFF_FFFF_8000_0000;
const LM: u64 = 0x7FFF_FFFF;

/// iozone's seed: `init[4]={0x12345ULL, 0x23456ULL, 0x34567ULL, 0x45678ULL}`.
const IOZONE_KEY: [u64; 4] = [0x12345, 0x23456, 0x34567, 0x45678];

/// MT19937-64.
pub struct Mt64 {
    mt: [u64; NN],
    mti: usize,
}

impl Mt64 {
    /// init_genrand64.
    fn with_seed(seed: u64) -> Mt64 {
        let mut mt = [0u64; NN];
        mt[0] = seed;
        for i in 1..NN {
            mt[i] = 6364136223846793005u64
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 62))
                .wrapping_add(i as u64);
        }
        Mt64 { mt, mti: NN }
    }

    /// init_by_array64.
    pub fn by_array(key: &[u64]) -> Mt64 {
        let mut m = Mt64::with_seed(19650218);
        let mt = &mut m.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..NN.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 62)).wrapping_mul(3935559000370003845))
                .wrapping_add(key[j])
                .wrapping_add(j as u64);
            i += 1;
            j += 1;
            if i >= NN {
                mt[0] = mt[NN - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..NN - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 62)).wrapping_mul(2862933555777941757))
                .wrapping_sub(i as u64);
            i += 1;
            if i >= NN {
                mt[0] = mt[NN - 1];
                i = 1;
            }
        }
        mt[0] = 1 << 63;
        m
    }

    /// genrand64_int64.
    pub fn next_u64(&mut self) -> u64 {
        let mag01 = [0u64, MATRIX_A];
        if self.mti >= NN {
            let mt = &mut self.mt;
            for i in 0..NN - MM {
                let x = (mt[i] & UM) | (mt[i + 1] & LM);
                mt[i] = mt[i + MM] ^ (x >> 1) ^ mag01[(x & 1) as usize];
            }
            for i in NN - MM..NN - 1 {
                let x = (mt[i] & UM) | (mt[i + 1] & LM);
                mt[i] = mt[i + MM - NN] ^ (x >> 1) ^ mag01[(x & 1) as usize];
            }
            let x = (mt[NN - 1] & UM) | (mt[0] & LM);
            mt[NN - 1] = mt[MM - 1] ^ (x >> 1) ^ mag01[(x & 1) as usize];
            self.mti = 0;
        }
        let mut x = self.mt[self.mti];
        self.mti += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^= x >> 43;
        x
    }
}

/// recnum[]: the order in which a child of a random test takes its `records` records.
pub fn record_order(records: u64) -> Vec<u64> {
    let mut mt = Mt64::by_array(&IOZONE_KEY);
    let mut recnum: Vec<u64> = (0..records).collect();
    for i in (0..records).rev() {
        let r = mt.next_u64() % (i + 1);
        recnum.swap(i as usize, r as usize);
    }
    recnum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_64_reference_outputs() {
        // mt19937-64.out.txt, the reference code's test with this key.
        let mut mt = Mt64::by_array(&IOZONE_KEY);
        let first: Vec<u64> = (0..5).map(|_| mt.next_u64()).collect();
        assert_eq!(
            first,
            [
                7266447313870364031,
                4946485549665804864,
                16945909448695747420,
                16394063075524226720,
                4873882236456199058
            ]
        );
    }

    #[test]
    fn the_order_is_a_permutation_drawn_from_the_end() {
        let order = record_order(16384);
        let mut seen = vec![false; 16384];
        for &r in &order {
            assert!(!seen[r as usize], "record {r} twice");
            seen[r as usize] = true;
        }
        // The first swap puts record (first draw mod 16384) last.
        assert_eq!(order[16383], 7266447313870364031 % 16384);
        assert_eq!(record_order(1), vec![0]);
    }
}
