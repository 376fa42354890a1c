//! fio's `random_distribution=normal:dev` (fio 3.33 lib/gauss.c, set up by filesetup.c
//! `__init_rand_distribution`): not a sampled normal but the mean of 12 uniform draws
//! over 0..=nranges (an Irwin–Hall sum, close to a normal centred on the middle of the
//! region with a standard deviation of about nranges/12), moved by a uniform deviation of
//! width `ceil(nranges × dev / 100)` (capped at nranges/2), then spread over the region
//! by fio's `__hash_u64` (a multiplication by the 64-bit golden ratio) modulo nranges, so
//! the hot blocks are scattered rather than bunched in the middle, and folded onto a
//! fraction of the blocks (real fio, normal:5 on 1000 blocks: 185 of them). The draws come from
//! the job's seeded stream (fio's come from its tausworthe generator): the shape is
//! fio's, the sequence is not. Leaves out: `normal:dev:center` (refused by the CLI).
//! Units: block numbers (nranges blocks of the job's smallest block size).

use crate::engine::SimRng;

const GAUSS_ITERS: u64 = 12;
/// fio's GOLDEN_RATIO_64 (hash.h).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

#[derive(Clone, Debug)]
pub struct Gauss {
    nranges: u64,
    stddev: u32,
}

impl Gauss {
    /// gauss_init(nranges, dev, center = -1).
    pub fn new(nranges: u64, dev_percent: f64) -> Self {
        let mut stddev = 0u32;
        if dev_percent != 0.0 {
            let s = ((nranges as f64 * dev_percent) / 100.0).ceil() as u64;
            stddev = s.min(nranges / 2).min(u32::MAX as u64) as u32;
        }
        Gauss {
            nranges: nranges.max(1),
            stddev,
        }
    }

    fn rand32(rng: &mut SimRng) -> u64 {
        rng.next_u64() >> 32
    }

    /// gauss_dev: a uniform deviation in [-stddev/2, stddev/2).
    fn dev(&self, rng: &mut SimRng) -> i64 {
        if self.stddev == 0 {
            return 0;
        }
        let r = Self::rand32(rng);
        let vr = (self.stddev as f64 * (r as f64 / (u32::MAX as f64 + 1.0))) as i64;
        vr - (self.stddev / 2) as i64
    }

    /// gauss_next before the hash: the bell-shaped value (0..nranges).
    pub fn next_unhashed(&self, rng: &mut SimRng) -> u64 {
        let mut sum: u64 = 0;
        for _ in 0..GAUSS_ITERS {
            sum += Self::rand32(rng) % (self.nranges + 1);
        }
        // fio: (sum + GAUSS_ITERS - 1) / GAUSS_ITERS.
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev > 0 {
            let mut dev = self.dev(rng);
            // fio: `while (dev + sum >= nranges) dev /= 2;` in unsigned arithmetic, so a
            // sum below zero wraps high and halves too (C division truncates to zero).
            while sum.wrapping_add(dev as u64) >= self.nranges {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as u64);
        }
        sum
    }

    /// gauss_next: the block.
    pub fn next(&self, rng: &mut SimRng) -> u64 {
        self.next_unhashed(rng).wrapping_mul(GOLDEN_RATIO_64) % self.nranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(g: &Gauss, n: u32) -> (f64, f64, u64, u64) {
        let mut rng = SimRng::new(7, 2);
        let (mut s, mut s2, mut lo, mut hi) = (0f64, 0f64, u64::MAX, 0u64);
        for _ in 0..n {
            let v = g.next_unhashed(&mut rng);
            s += v as f64;
            s2 += (v as f64).powi(2);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let m = s / n as f64;
        (m, (s2 / n as f64 - m * m).sqrt(), lo, hi)
    }

    #[test]
    fn the_bell_is_centred_with_the_irwin_hall_spread() {
        // Mean of 12 uniform draws on 0..=N: mean N/2, variance ((N+1)^2 - 1) / 12 / 12.
        let n = 10_000u64;
        let g = Gauss::new(n, 0.0);
        let (m, sd, lo, hi) = moments(&g, 200_000);
        let want_sd = ((((n + 1) * (n + 1) - 1) as f64) / 144.0).sqrt();
        assert!((m - n as f64 / 2.0).abs() < 0.005 * n as f64, "mean {m}");
        assert!((sd / want_sd - 1.0).abs() < 0.02, "sd {sd} want {want_sd}");
        assert!(lo > n / 10 && hi < n - n / 10, "tails {lo}..{hi}");
        // A deviation of 20 %: a uniform of width 2000 adds its variance 2000^2 / 12.
        let g = Gauss::new(n, 20.0);
        let (m, sd, _, hi) = moments(&g, 200_000);
        let want = (want_sd * want_sd + 2000f64.powi(2) / 12.0).sqrt();
        assert!(
            (m - n as f64 / 2.0).abs() < 0.01 * n as f64 + 1000.0,
            "mean {m}"
        );
        assert!((sd / want - 1.0).abs() < 0.03, "sd {sd} want {want}");
        assert!(hi < n);
    }

    #[test]
    fn blocks_are_the_hashed_bell_inside_the_region() {
        let g = Gauss::new(1000, 5.0);
        let mut a = SimRng::new(3, 2);
        let mut b = SimRng::new(3, 2);
        let mut hits = vec![0u32; 1000];
        for _ in 0..50_000 {
            let blk = g.next(&mut a);
            assert_eq!(
                blk,
                g.next_unhashed(&mut b).wrapping_mul(GOLDEN_RATIO_64) % 1000
            );
            hits[blk as usize] += 1;
        }
        // fio's hash modulo 1000 folds the bell's ~600 likely values onto few blocks:
        // real fio 3.33 (normal:5, 1000 blocks of 4 KiB, 50000 reads, write_iolog) hit
        // 185 distinct blocks, the hottest 858 times. The same mechanism here:
        let used = hits.iter().filter(|&&h| h > 0).count();
        assert!((150..=230).contains(&used), "{used}");
        let hottest = *hits.iter().max().unwrap();
        assert!((500..=1300).contains(&hottest), "{hottest}");
        let low_half = hits[..500].iter().filter(|&&h| h > 0).count();
        assert!(
            low_half > used / 3,
            "scattered: {low_half} of {used} in the low half"
        );
    }
}
