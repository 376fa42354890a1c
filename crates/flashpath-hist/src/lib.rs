//! fio's log-linear latency histogram ("plat" buckets, `stat.h`/`stat.c` in fio 3.33).
//!
//! fio keeps every completion latency in one of `PLAT_NR` = 1856 buckets: values below
//! 128 ns map one-to-one, above that each power-of-two group is split into 64 equal
//! buckets, so the relative error of a bucket is at most 1/64. Percentiles are read off
//! the buckets and reported as the bucket's midpoint (`plat_idx_to_val`). The simulator
//! records into this structure and the fio crate prints from it, so the two agree with
//! what fio itself would print for the same samples.
//!
//! Units: nanoseconds. Leaves out: fio's per-priority split of the histogram.

mod io_stat;
pub use io_stat::IoStat;

/// Bits of the value kept exactly within each group (`FIO_IO_U_PLAT_BITS`).
pub const PLAT_BITS: u32 = 6;
/// Buckets per group (`FIO_IO_U_PLAT_VAL`).
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Number of groups (`FIO_IO_U_PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: usize = 29;
/// Number of buckets (`FIO_IO_U_PLAT_NR`).
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// fio's `plat_val_to_idx`: the bucket a value (ns) falls into.
#[inline]
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the value reported for a bucket (its midpoint, rounded down
/// as fio's `unsigned long long` conversion of `base + (k + 0.5) * 2^error_bits` does).
#[inline]
pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < PLAT_NR, "histogram bucket {idx} out of range");
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx as u32 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx as u64 % PLAT_VAL;
    // (k + 0.5) * 2^e == k * 2^e + 2^(e-1); error_bits >= 1 here, so this is exact.
    base + k * (1u64 << error_bits) + (1u64 << (error_bits - 1))
}

/// A latency distribution: fio's bucket counts plus exact min, max, sum and sum of squares.
/// The buckets are kept sparse while few are used, and as fio's whole array (15 KiB)
/// past [`SPARSE_MAX`] distinct buckets: a job has dozens of these (each direction's
/// slat, clat and lat, each span), and one that records nothing or a few samples — a
/// clone of `numjobs=4096` doing one I/O, a direction never used — costs a few hundred
/// bytes, not 15 KiB.
#[derive(Clone, Debug)]
pub struct LatHist {
    counts: Buckets,
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
}

/// Distinct buckets a histogram keeps as (index, count) pairs before it takes the
/// whole array.
pub const SPARSE_MAX: usize = 16;

#[derive(Clone, Debug)]
enum Buckets {
    Dense(Box<[u64; PLAT_NR]>),
    /// (bucket, count) in no fixed order (a bucket hit past the first moves first); at
    /// most [`SPARSE_MAX`].
    Sparse(Vec<(u16, u64)>),
}

impl Buckets {
    /// The dense array's add, inline where samples are recorded, and the sparse list's
    /// when the sample falls in its first bucket (a histogram of a near-constant
    /// latency stays sparse, its samples nearly all in one bucket); the rest of the
    /// sparse list's out of line.
    #[inline(always)]
    fn add(&mut self, idx: usize, count: u64) {
        match self {
            Buckets::Dense(d) => {
                let c = &mut d[idx];
                *c = c.saturating_add(count);
            }
            Buckets::Sparse(v) => match v.first_mut() {
                Some(e) if e.0 as usize == idx => e.1 = e.1.saturating_add(count),
                _ => self.add_sparse(idx, count),
            },
        }
    }

    #[inline(never)]
    fn add_sparse(&mut self, idx: usize, count: u64) {
        let Buckets::Sparse(v) = self else {
            return self.add(idx, count);
        };
        if let Some(i) = v.iter().position(|e| e.0 as usize == idx) {
            v[i].1 = v[i].1.saturating_add(count);
            // The bucket hit goes first, where `add` looks before calling here: a
            // latency that takes a few values in turn finds each near the front. The
            // list's order is not observable (every reader sums or spreads it).
            v.swap(0, i);
        } else if v.len() < SPARSE_MAX {
            v.push((idx as u16, count));
        } else {
            let mut d = Box::new([0u64; PLAT_NR]);
            for &(i, c) in v.iter() {
                d[i as usize] = c;
            }
            d[idx] = count;
            *self = Buckets::Dense(d);
        }
    }
    fn dense(&self) -> std::borrow::Cow<'_, [u64; PLAT_NR]> {
        match self {
            Buckets::Dense(d) => std::borrow::Cow::Borrowed(d),
            Buckets::Sparse(v) => {
                let mut d = Box::new([0u64; PLAT_NR]);
                for &(i, c) in v {
                    d[i as usize] = c;
                }
                std::borrow::Cow::Owned(*d)
            }
        }
    }
}

impl PartialEq for LatHist {
    fn eq(&self, o: &Self) -> bool {
        *self.counts() == *o.counts()
            && (self.n, self.min, self.max, self.sum, self.sum_sq)
                == (o.n, o.min, o.max, o.sum, o.sum_sq)
    }
}

impl Default for LatHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatHist {
    pub fn new() -> Self {
        Self {
            counts: Buckets::Sparse(Vec::new()),
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }

    /// Records one sample (ns): [`record_n`](Self::record_n) with a count of 1, the
    /// simulator's per-I/O path (a dozen of these per I/O), kept small enough to inline.
    #[inline]
    pub fn record(&mut self, val_ns: u64) {
        self.counts.add(plat_val_to_idx(val_ns), 1);
        self.n = self.n.saturating_add(1);
        self.min = self.min.min(val_ns);
        self.max = self.max.max(val_ns);
        let v = val_ns as u128;
        // v * v < 2^128: only the sums can saturate.
        self.sum = self.sum.saturating_add(v);
        self.sum_sq = self.sum_sq.saturating_add(v * v);
    }

    /// Adds every sample of `other` (group reporting).
    pub fn merge(&mut self, other: &LatHist) {
        match &other.counts {
            Buckets::Sparse(v) => {
                for &(i, c) in v {
                    self.counts.add(i as usize, c);
                }
            }
            Buckets::Dense(d) => {
                for (i, &c) in d.iter().enumerate() {
                    if c != 0 {
                        self.counts.add(i, c);
                    }
                }
            }
        }
        self.n = self.n.saturating_add(other.n);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    /// Smallest sample, 0 when empty (as fio prints it).
    pub fn min(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.min
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    pub fn sum(&self) -> u128 {
        self.sum
    }
    pub fn sum_sq(&self) -> u128 {
        self.sum_sq
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    /// Sample standard deviation (n - 1 in the denominator, as fio's running variance).
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 - n * mean * mean) / (n - 1.0);
        var.max(0.0).sqrt()
    }
    /// fio's bucket array (built for the call while the histogram is sparse).
    pub fn counts(&self) -> std::borrow::Cow<'_, [u64; PLAT_NR]> {
        self.counts.dense()
    }

    /// Records `count` samples of the same value (ns) at once.
    pub fn record_n(&mut self, val_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        // Saturating: absurd inputs must not panic (sums only feed mean/stddev).
        self.counts.add(plat_val_to_idx(val_ns), count);
        self.n = self.n.saturating_add(count);
        self.min = self.min.min(val_ns);
        self.max = self.max.max(val_ns);
        let v = val_ns as u128;
        // v * v cannot overflow a u128 (v < 2^64); only the count multiplications can.
        let (s, sq) = if count == 1 {
            (v, v * v)
        } else {
            let c = count as u128;
            (v.saturating_mul(c), (v * v).saturating_mul(c))
        };
        self.sum = self.sum.saturating_add(s);
        self.sum_sq = self.sum_sq.saturating_add(sq);
    }

    /// fio's `calc_clat_percentiles`: for each requested percentile (0..=100), the
    /// midpoint of the first bucket at which the running count reaches `p/100 * n`.
    /// The comparison is done exactly as fio's x86-64 build does it, in 80-bit
    /// `long double` (see [`percentile_reached`]), so that ties such as p = 5 with
    /// n = 100 fall into the same bucket as in fio. `list` is used in the given order
    /// (fio sorts it first). Empty histogram: all zeros; a percentile that is never
    /// reached (p > 100) stays 0.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        percentiles_of(&self.counts()[..], self.n, list)
    }
}

/// Percentiles of raw bucket counts with `nr` as the sample count, as fio's
/// `calc_clat_percentiles` computes them (fio passes the io_stat sample count as `nr`).
pub fn percentiles_of(counts: &[u64], nr: u64, list: &[f64]) -> Vec<u64> {
    let mut out = vec![0u64; list.len()];
    if list.is_empty() {
        return out;
    }
    let thresholds: Vec<Option<u128>> = list.iter().map(|&p| percentile_threshold(p, nr)).collect();
    let mut sum: u128 = 0;
    let mut j = 0usize;
    'buckets: for (i, &c) in counts.iter().enumerate().take(PLAT_NR) {
        sum = sum.saturating_add(c as u128);
        while thresholds[j].is_some_and(|t| sum >= t) {
            out[j] = plat_idx_to_val(i);
            if j == list.len() - 1 {
                break 'buckets;
            }
            j += 1;
        }
    }
    out
}

/// True when a running count `sum` satisfies fio's test
/// `sum >= (long double) p / 100.0 * nr`.
pub fn percentile_reached(sum: u64, p: f64, nr: u64) -> bool {
    percentile_threshold(p, nr).is_some_and(|t| sum as u128 >= t)
}

/// Smallest integer `s` with `s >= (long double) p / 100.0 * nr` evaluated in x87
/// extended precision (64-bit mantissa, round to nearest even after the division and
/// after the multiplication), or `None` when no 64-bit count can reach it (p is NaN,
/// infinite or absurdly large).
fn percentile_threshold(p: f64, nr: u64) -> Option<u128> {
    if p.is_nan() || p == f64::INFINITY {
        return None;
    }
    if p <= 0.0 || nr == 0 {
        return Some(0);
    }
    // p = m * 2^e with m normalised to [2^52, 2^53).
    let bits = p.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if exp_bits == 0 {
        (frac, -1074i64)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    while m < (1u64 << 52) {
        m <<= 1;
        e -= 1;
    }
    // q = p / 100 rounded to a 64-bit mantissa: q = qm * 2^(e - s).
    let mut s: i64 = 17;
    let mut num = (m as u128) << s;
    if num / 100 < (1u128 << 63) {
        s = 18;
        num = (m as u128) << s;
    }
    let mut qm = num / 100;
    let rem = num % 100;
    if rem > 50 || (rem == 50 && qm & 1 == 1) {
        qm += 1;
    }
    if qm >= (1u128 << 64) {
        qm >>= 1;
        s -= 1;
    }
    // x = q * nr rounded to a 64-bit mantissa: x = km * 2^t.
    let prod = qm * nr as u128;
    let bl = 128 - prod.leading_zeros() as i64;
    let mut t = e - s;
    let km = if bl > 64 {
        let sh = (bl - 64) as u32;
        let mut keep = prod >> sh;
        let low = prod & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        if low > half || (low == half && keep & 1 == 1) {
            keep += 1;
        }
        t += sh as i64;
        if keep >= (1u128 << 64) {
            keep >>= 1;
            t += 1;
        }
        keep
    } else {
        prod
    };
    if t >= 0 {
        if t >= 64 {
            return None;
        }
        Some(km << t)
    } else {
        let k = -t;
        if k >= 128 {
            return Some(u128::from(km > 0));
        }
        let k = k as u32;
        Some((km + ((1u128 << k) - 1)) >> k)
    }
}

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

// fio's I/O-depth accounting buckets (`stat.c`), shared by the simulator, which
// counts, and the fio crate, which prints.

/// Bucket of fio's `io_u_map` (`iodepth_level`) for the depth at submission:
/// 1, 2–3, 4–7, 8–15, 16–31, 32–63, ≥64.
pub fn depth_level_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Bucket of fio's `io_u_submit` / `io_u_complete` for a batch of `nr` I/Os:
/// 0, 1–4, 5–8, 9–16, 17–32, 33–64, >64.
pub fn batch_bucket(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_and_single_records_give_the_same_moments() {
        let (mut one, mut batch) = (LatHist::new(), LatHist::new());
        for v in [0u64, 7, 1_000, 1 << 40] {
            for _ in 0..3 {
                one.record(v);
            }
            batch.record_n(v, 3);
        }
        assert_eq!(
            (one.count(), one.sum(), one.sum_sq()),
            (batch.count(), batch.sum(), batch.sum_sq())
        );
        // Exact: 3 * (0 + 7 + 1000 + 2^40) and the same for the squares.
        let m = 1u128 << 40;
        assert_eq!(one.sum(), 3 * (1007 + m));
        assert_eq!(one.sum_sq(), 3 * (49 + 1_000_000 + m * m));
        // Saturating, not wrapping, when a count would overflow the sums.
        batch.record_n(u64::MAX, u64::MAX);
        assert_eq!(batch.sum_sq(), u128::MAX);
    }

    #[test]
    fn sparse_counts_equal_a_tally_whatever_the_list_order() {
        // Values taking a few buckets in turn (the list reorders on each hit), then
        // more than SPARSE_MAX buckets (it becomes the whole array).
        let mut h = LatHist::new();
        let mut tally = vec![0u64; PLAT_NR];
        let add = |h: &mut LatHist, tally: &mut [u64], v: u64| {
            h.record(v);
            tally[plat_val_to_idx(v)] += 1;
        };
        for i in 0..300u64 {
            let v = [500, 9_000, 500, 70_000, 9_000][(i % 5) as usize];
            add(&mut h, &mut tally, v);
        }
        let Buckets::Sparse(v) = &h.counts else {
            panic!("three buckets stay sparse");
        };
        // The last bucket hit is first, where `add` looks first.
        assert_eq!(v[0].0 as usize, plat_val_to_idx(9_000));
        assert_eq!(&h.counts()[..], &tally[..]);
        for i in 0..40u64 {
            add(&mut h, &mut tally, 1_000 + 100 * i);
        }
        assert!(matches!(h.counts, Buckets::Dense(_)));
        assert_eq!(&h.counts()[..], &tally[..]);
        assert_eq!(h.count(), 340);
    }

    #[test]
    fn small_values_map_one_to_one() {
        for v in 0..128 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
    }

    #[test]
    fn bucket_midpoints_match_fio() {
        // Values taken from flashpath-fio's tests/data/report/nbd_randrw.jsonplus.json bins: each bin key is
        // plat_idx_to_val of the bucket; re-bucketing the key must give the same bucket.
        for key in [12352u64, 13376, 15296, 15552, 8768, 8896, 11328, 12480] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(key)), key);
        }
        // 128..=129 share bucket 128 (error bits 1), whose midpoint is 129.
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_idx_to_val(128), 129);
    }

    #[test]
    fn idx_is_monotone_and_bounded() {
        let mut last = 0;
        let mut v = 1u64;
        while v < u64::MAX / 3 {
            let i = plat_val_to_idx(v);
            assert!(i >= last && i < PLAT_NR);
            last = i;
            v = v * 3 / 2 + 1;
        }
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_of_uniform_samples() {
        let mut h = LatHist::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let p = h.percentiles(&[1.0, 50.0, 99.0, 100.0]);
        assert_eq!(p, vec![1, 50, 99, 100]);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }
}
