//! fio's rate processes and minimum-rate check (fio 3.33 backend.c).
//!
//! `rate_process=poisson` (`usec_for_io`): each issue of a direction moves that
//! direction's next issue time on by an exponential draw, `(1000000 / iops) × -ln(u)`
//! microseconds with u uniform in (0, 1], truncated to whole microseconds as fio's
//! integer arithmetic does (iops = the rate in bytes/s over the smallest block size, or
//! rate_iops). The thread may issue once the time since its start has reached it
//! (`rate_ddir`), so the issue times are a Poisson process of the given mean rate. The
//! draws come from the job's seeded stream (fio's from its poisson tausworthe state):
//! the process is fio's, the sequence is not.
//!
//! `rate_min` / `rate_iops_min` (`__check_min_rate`): after each round of reaped
//! completions, once 2 s have passed since the job started, the first check notes the
//! bytes and I/Os completed so far; each later check at least `rate_cycle` ms after the
//! previous noted one computes the rate over that window and fails the job when below
//! the minimum, with fio's message. Times are fio's whole milliseconds.
//! Units: nanoseconds, bytes.

use crate::engine::SimRng;

/// How the rate limit spaces the I/Os.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RateProcess {
    /// fio's default: the average since the start never exceeds the limit (`rate_gate`).
    #[default]
    Linear,
    /// Exponential gaps of the limit's mean.
    Poisson,
}

/// The Poisson issue clock of one thread.
pub struct PoissonClock {
    rng: SimRng,
    /// Per direction: the next issue time since the thread's start (fio's last_usec), µs.
    next_us: [u64; 2],
    /// Per direction: issues whose gap has been drawn.
    drawn: [u64; 2],
}

impl PoissonClock {
    pub fn new(seed: u64) -> Self {
        PoissonClock {
            rng: SimRng::new(seed, 7),
            next_us: [0; 2],
            drawn: [0; 2],
        }
    }

    /// One gap of fio's usec_for_io for a mean rate of `iops`, µs.
    pub fn gap_us(&mut self, iops: u64) -> u64 {
        if iops == 0 {
            return 0;
        }
        // __rand_0_1: (val + 1) / 2^32 for a 32-bit draw, in (0, 1].
        let u = ((self.rng.next_u64() >> 32) as f64 + 1.0) / 4_294_967_296.0;
        // fio: (int64_t)(1000000 / iops) * -logf(u), in single precision, truncated.
        let mean = (1_000_000 / iops) as f32;
        (mean * -(u as f32).ln()) as u64
    }

    /// The time since the thread's start from which direction `d` may issue again, given
    /// `issued` I/Os issued in it so far at a mean rate of `iops`.
    pub fn next_issue_ns(&mut self, d: usize, issued: u64, iops: u64) -> u64 {
        while self.drawn[d] < issued {
            let g = self.gap_us(iops);
            self.next_us[d] += g;
            self.drawn[d] += 1;
        }
        self.next_us[d] * 1000
    }
}

/// fio's per-direction minimum rate check state.
#[derive(Clone, Debug, Default)]
pub struct MinRate {
    /// Bytes and I/Os completed at the last noted check, and its time (ms since start).
    last: [Option<(u64, u64, u64)>; 2],
}

/// The limits the check enforces, per direction (0: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MinRateLimits {
    pub bytes_per_s: [u64; 2],
    pub iops: [u64; 2],
    /// fio's rate_cycle, ms (default 1000).
    pub cycle_ms: u64,
}

impl MinRateLimits {
    pub fn any(&self) -> bool {
        self.bytes_per_s.iter().chain(&self.iops).any(|&x| x > 0)
    }
}

impl MinRate {
    /// fio's check_min_rate at `since_start_ns` with `done` = per direction (bytes, I/Os)
    /// completed: the error message if a direction that has done I/O fell below its
    /// minimum (`job` names the job as fio's message does).
    pub fn check(
        &mut self,
        job: &str,
        lim: &MinRateLimits,
        since_start_ns: u64,
        done: [(u64, u64); 2],
    ) -> Option<String> {
        let now_ms = since_start_ns / 1_000_000;
        let mut failed = None;
        for (d, &(bytes, ios)) in done.iter().enumerate() {
            if bytes == 0 || (lim.bytes_per_s[d] == 0 && lim.iops[d] == 0) {
                continue;
            }
            // The 2 s settle period.
            if now_ms < 2000 {
                continue;
            }
            if let Some((lb, li, lt)) = self.last[d] {
                if lb > 0 || li > 0 {
                    let spent = now_ms - lt;
                    if spent < lim.cycle_ms || spent == 0 {
                        continue;
                    }
                    if lim.bytes_per_s[d] > 0 {
                        let rate = (bytes - lb) * 1000 / spent;
                        if rate < lim.bytes_per_s[d] {
                            failed.get_or_insert(format!(
                                "{job}: rate_min={}B/s not met, got {rate}B/s",
                                lim.bytes_per_s[d]
                            ));
                            continue;
                        }
                    } else {
                        let rate = (ios - li) * 1000 / spent;
                        if rate < lim.iops[d] {
                            failed.get_or_insert(format!(
                                "{job}: rate_iops_min={} not met, got {rate} IOPS",
                                lim.iops[d]
                            ));
                            continue;
                        }
                    }
                }
            }
            self.last[d] = Some((bytes, ios, now_ms));
        }
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_have_the_exponential_mean_and_variance() {
        let mut c = PoissonClock::new(42);
        let n = 200_000;
        let gaps: Vec<f64> = (0..n).map(|_| c.gap_us(1000) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        // Exponential of mean 1000 µs, truncated to whole µs: mean 999.5, variance ~1000².
        assert!((mean - 999.5).abs() < 10.0, "mean {mean}");
        assert!(
            (var.sqrt() / 1000.0 - 1.0).abs() < 0.02,
            "sd {}",
            var.sqrt()
        );
        // The clock adds a gap per issue, lazily.
        let mut c = PoissonClock::new(1);
        let mut d = PoissonClock::new(1);
        let t3 = c.next_issue_ns(0, 3, 500);
        let want: u64 = (0..3).map(|_| d.gap_us(500)).sum::<u64>() * 1000;
        assert_eq!(t3, want);
        assert_eq!(c.next_issue_ns(0, 3, 500), t3, "no new issue, no new gap");
    }

    #[test]
    fn min_rate_checks_after_the_settle_period_per_cycle() {
        let lim = MinRateLimits {
            bytes_per_s: [1_000_000, 0],
            iops: [0, 0],
            cycle_ms: 1000,
        };
        let mut m = MinRate::default();
        let ms = 1_000_000u64;
        // Before 2 s nothing is checked, however slow.
        assert_eq!(m.check("j", &lim, 1999 * ms, [(1, 1), (0, 0)]), None);
        // The first check notes the baseline.
        assert_eq!(
            m.check("j", &lim, 2000 * ms, [(2_000_000, 10), (0, 0)]),
            None
        );
        // Within the cycle: not checked.
        assert_eq!(
            m.check("j", &lim, 2999 * ms, [(2_000_001, 11), (0, 0)]),
            None
        );
        // 1 s later, 1.5 MB more: 1.5 MB/s, met.
        assert_eq!(
            m.check("j", &lim, 3000 * ms, [(3_500_000, 20), (0, 0)]),
            None
        );
        // 2 s later, 1 MB more: 500000 B/s, not met.
        assert_eq!(
            m.check("j", &lim, 5000 * ms, [(4_500_000, 30), (0, 0)])
                .as_deref(),
            Some("j: rate_min=1000000B/s not met, got 500000B/s")
        );
        let lim = MinRateLimits {
            bytes_per_s: [0, 0],
            iops: [0, 100],
            cycle_ms: 500,
        };
        let mut m = MinRate::default();
        assert_eq!(m.check("w", &lim, 2100 * ms, [(0, 0), (4096, 1)]), None);
        assert_eq!(
            m.check("w", &lim, 2600 * ms, [(0, 0), (4096 * 40, 40)])
                .as_deref(),
            Some("w: rate_iops_min=100 not met, got 78 IOPS")
        );
    }
}
