//! fio's `struct io_stat` (stat.h): the running statistic fio keeps of latency,
//! bandwidth and IOPS samples, shared by the simulator (which samples as the run goes)
//! and the report writers.

use crate::LatHist;

/// fio's `struct io_stat`: running min/max/mean and sum of squared deviations (`S`),
/// updated with Welford's method exactly as fio's `add_stat_sample` does.
///
/// Golden reconstruction: [`IoStat::from_summary`] sets min/max/mean/stddev to the
/// values a real fio run printed, because the histogram bins alone cannot give fio's
/// exact running mean and deviation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IoStat {
    pub samples: u64,
    /// `u64::MAX` while empty (fio's `ULONG_MAX`); printed as 0 when there are no samples.
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    /// Sum of squared deviations from the mean (variance × (n − 1)).
    pub s: f64,
}

impl Default for IoStat {
    fn default() -> Self {
        Self::new()
    }
}

impl IoStat {
    pub fn new() -> Self {
        Self {
            samples: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            s: 0.0,
        }
    }

    /// fio's `add_stat_sample`.
    pub fn add(&mut self, data: u64) {
        let val = data as f64;
        if data > self.max {
            self.max = data;
        }
        if data < self.min {
            self.min = data;
        }
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// Builds the stat from a summary as fio prints it (`stddev` is the sample standard
    /// deviation, n − 1 in the denominator).
    pub fn from_summary(samples: u64, min: u64, max: u64, mean: f64, stddev: f64) -> Self {
        if samples == 0 {
            return Self::new();
        }
        let s = if samples > 1 {
            stddev * stddev * (samples as f64 - 1.0)
        } else {
            0.0
        };
        Self {
            samples,
            min,
            max,
            mean,
            s,
        }
    }

    /// Builds the stat from a sample series (e.g. per-window bandwidth values).
    pub fn from_samples(values: &[u64]) -> Self {
        let mut st = Self::new();
        for &v in values {
            st.add(v);
        }
        st
    }

    /// Exact moments of a histogram's recorded samples (its sum and sum of squares).
    pub fn from_hist(h: &LatHist) -> Self {
        let n = h.count();
        if n == 0 {
            return Self::new();
        }
        let mean = h.sum() as f64 / n as f64;
        // S = sum_sq - sum^2 / n, computed in integers where possible to avoid
        // cancellation: n * S = n * sum_sq - sum^2.
        let nn = n as u128;
        let s = match (nn.checked_mul(h.sum_sq()), h.sum().checked_mul(h.sum())) {
            (Some(a), Some(b)) if a >= b => (a - b) as f64 / n as f64,
            _ => (h.sum_sq() as f64 - h.sum() as f64 * mean).max(0.0),
        };
        Self {
            samples: n,
            min: h.min(),
            max: h.max(),
            mean,
            s,
        }
    }

    /// fio's `calc_lat`: `(min, max, mean, stddev)` or `None` without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let dev = if self.samples > 1 {
            (self.s / (self.samples as f64 - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }

    /// fio's `sum_stat`: latency stats merge as one population (`pure_sum == false`,
    /// parallel variance formula); bandwidth/IOPS stats of group members are added
    /// (`pure_sum == true`), because group bandwidth is the sum of the members'.
    pub fn sum(&mut self, src: &IoStat, pure_sum: bool) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        if !pure_sum {
            self.min = self.min.min(src.min);
            self.max = self.max.max(src.max);
            let (mean, s) = if first {
                (src.mean, src.s)
            } else {
                let delta = src.mean - self.mean;
                let n_dst = self.samples as f64;
                let n_src = src.samples as f64;
                let mean = (src.mean * n_src + self.mean * n_dst) / (n_dst + n_src);
                let s = src.s + self.s + delta.powi(2) * (n_dst * n_src) / (n_dst + n_src);
                (mean, s)
            };
            self.samples = self.samples.wrapping_add(src.samples);
            self.mean = mean;
            self.s = s;
            return;
        }
        if first {
            *self = *src;
        } else {
            self.min = self.min.wrapping_add(src.min);
            self.max = self.max.wrapping_add(src.max);
            self.samples = self.samples.wrapping_add(src.samples);
            self.mean += src.mean;
            self.s += src.s;
        }
    }
}
