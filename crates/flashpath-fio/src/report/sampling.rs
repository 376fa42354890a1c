//! Bandwidth and IOPS sample series (JSON `bw_min..bw_samples`, `iops_*`; text `bw (KiB/s)`
//! and `iops` lines), computed the way fio's `__add_samples` does.
//!
//! Every `window_ms` (`bwavgtime` / `iopsavgtime`, 500 ms by default; fio uses
//! `log_avg_msec` instead when the matching log is written with averaging) fio takes,
//! for each direction that completed something during the window, one sample:
//! `bytes * 1000 / window / 1024` KiB/s for bandwidth, `ios * 1000 / window` for IOPS.
//! Directions without I/O in a window get no sample. fio's helper thread stops
//! sampling when the job ends, so a window is only sampled if it closes more than
//! 1 ms (`LOG_MSEC_SLACK`) before the job's end: a 2001 ms job gives 3 samples at
//! 500/1000/1500 ms, a 3001 ms job 5 — as the real runs in tests/data/report/ show.
//!
//! With per-I/O bw/iops logs (`log_avg_msec=0`) fio instead records one sample per
//! I/O (bw = `bytes * 1e6 / clat_ns`, iops = 1); feed those with
//! [`RateSampler::record_per_io`].

use super::logs::{LogSample, LogWriter};
use super::model::{Ddir, IoStat};

/// Bandwidth (KiB/s) or IOPS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateKind {
    Bw,
    Iops,
}

/// fio's default `bwavgtime` / `iopsavgtime`.
pub const DEFAULT_AVG_MS: u64 = 500;

/// The sampling window fio uses: `log_avg_msec` replaces `avgtime` when the matching
/// log (`write_bw_log` / `write_iops_log`) is enabled with `log_avg_msec > 0`.
pub fn effective_window_ms(avgtime_ms: u64, log_enabled: bool, log_avg_msec: u64) -> u64 {
    if log_enabled && log_avg_msec > 0 {
        log_avg_msec
    } else {
        avgtime_ms
    }
}

/// Accumulates per-direction progress and produces fio's windowed samples.
#[derive(Clone, Debug)]
pub struct RateSampler {
    kind: RateKind,
    window_ms: u64,
    /// End of the currently open window (ms since job start).
    next_ms: u64,
    pending: [u64; 3],
    /// The sample statistics per direction (read, write, trim).
    pub stats: [IoStat; 3],
    /// A windowed bw/iops log fed with every sample, if enabled.
    pub log: Option<LogWriter>,
}

impl RateSampler {
    /// `window_ms` 0 is treated as 1 ms.
    pub fn new(kind: RateKind, window_ms: u64) -> Self {
        let w = window_ms.max(1);
        Self {
            kind,
            window_ms: w,
            next_ms: w,
            pending: [0; 3],
            stats: [IoStat::new(); 3],
            log: None,
        }
    }

    /// Also writes every sample into `log` (use the same window as the log's
    /// `log_avg_msec`, see [`effective_window_ms`]).
    pub fn with_log(mut self, log: LogWriter) -> Self {
        self.log = Some(log);
        self
    }

    fn close_window(&mut self) {
        let spent = self.window_ms;
        for d in 0..3 {
            let delta = self.pending[d];
            if delta == 0 {
                continue;
            }
            let rate = match self.kind {
                RateKind::Bw => delta.wrapping_mul(1000) / spent / 1024,
                RateKind::Iops => delta.wrapping_mul(1000) / spent,
            };
            self.stats[d].add(rate);
            if let Some(log) = self.log.as_mut() {
                log.add(LogSample {
                    time_ms: self.next_ms,
                    value: rate,
                    ddir: Ddir::from_index(d).unwrap_or(Ddir::Read),
                    bs: 0,
                    offset: 0,
                    prio: 0,
                });
            }
            self.pending[d] = 0;
        }
        self.next_ms = self.next_ms.saturating_add(self.window_ms);
    }

    /// Closes every window whose end is below `limit`; idle stretches are skipped in
    /// one step.
    fn close_windows_until(&mut self, limit: u64) {
        while self.next_ms < limit {
            self.close_window();
            if self.pending == [0; 3] && self.next_ms < limit {
                let skip = (limit - 1 - self.next_ms) / self.window_ms;
                self.next_ms = self
                    .next_ms
                    .saturating_add(skip.saturating_mul(self.window_ms));
            }
            if self.next_ms == u64::MAX {
                break;
            }
        }
    }

    /// Accounts one completion of `bytes` at `time_ms` (ms since job start; calls must
    /// come in time order). Windows that closed at or before `time_ms` are sampled
    /// first; an I/O completing exactly on a boundary counts into the next window.
    pub fn record(&mut self, time_ms: u64, ddir: Ddir, bytes: u64) {
        self.close_windows_until(time_ms.saturating_add(1));
        let amount = match self.kind {
            RateKind::Bw => bytes,
            RateKind::Iops => 1,
        };
        let p = &mut self.pending[ddir.index()];
        *p = p.wrapping_add(amount);
    }

    /// Per-I/O sampling (fio with `log_avg_msec=0` bw/iops logs): one sample per I/O.
    pub fn record_per_io(&mut self, time_ms: u64, ddir: Ddir, bytes: u64, clat_ns: u64) {
        let value = match self.kind {
            RateKind::Bw => super::logs::per_io_bw(bytes, clat_ns),
            RateKind::Iops => 1,
        };
        self.stats[ddir.index()].add(value);
        if let Some(log) = self.log.as_mut() {
            log.add(LogSample {
                time_ms,
                value,
                ddir,
                bs: bytes,
                offset: 0,
                prio: 0,
            });
        }
    }

    /// Ends the job at `end_ms`: samples every window that closes more than 1 ms
    /// before the end and drops the rest (fio's sampling thread stops with the job).
    pub fn finish(&mut self, end_ms: u64) {
        self.close_windows_until(end_ms.saturating_sub(1));
        self.pending = [0; 3];
        if let Some(log) = self.log.as_mut() {
            log.finish(end_ms);
        }
    }

    /// Ends the job after `runtime_ms` (ms since its start, rounded down): samples every
    /// window that closed while the job was still running (its boundary at or before
    /// the end, as a sampling thread that wakes exactly on each boundary would) and
    /// drops the partial last one, as the run's report does for its 500 ms windows.
    /// The log's averaging windows are flushed as fio's `finalize_logs` does.
    pub fn end_job(&mut self, runtime_ms: u64) {
        self.close_windows_until(runtime_ms.saturating_add(1));
        self.pending = [0; 3];
        if let Some(log) = self.log.as_mut() {
            log.finish(runtime_ms);
        }
    }

    pub fn stat(&self, d: Ddir) -> IoStat {
        self.stats[d.index()]
    }
}

/// Bandwidth samples (KiB/s) from the bytes moved in consecutive windows of
/// `window_ms`, as fio computes them (windows without I/O give no sample).
pub fn bw_stat_from_window_bytes(bytes_per_window: &[u64], window_ms: u64) -> IoStat {
    let w = window_ms.max(1);
    let v: Vec<u64> = bytes_per_window
        .iter()
        .filter(|&&b| b != 0)
        .map(|&b| b.wrapping_mul(1000) / w / 1024)
        .collect();
    IoStat::from_samples(&v)
}

/// IOPS samples from the I/Os completed in consecutive windows of `window_ms`.
pub fn iops_stat_from_window_ios(ios_per_window: &[u64], window_ms: u64) -> IoStat {
    let w = window_ms.max(1);
    let v: Vec<u64> = ios_per_window
        .iter()
        .filter(|&&n| n != 0)
        .map(|&n| n.wrapping_mul(1000) / w)
        .collect();
    IoStat::from_samples(&v)
}

/// The summary of a sample series given as per-interval values (e.g. KiB/s per
/// window), as fio prints it (`min`, `max`, `mean`, `dev`, `samples`).
pub fn summarize(values: &[u64]) -> IoStat {
    IoStat::from_samples(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_like_a_2001_ms_fio_job() {
        let mut s = RateSampler::new(RateKind::Iops, 500);
        // 1 I/O every ms for 2000 ms, job ends at 2001 ms.
        for t in 0..2000 {
            s.record(t, Ddir::Read, 4096);
        }
        s.finish(2001);
        let st = s.stat(Ddir::Read);
        assert_eq!(st.samples, 3);
        assert_eq!(st.min, 1000);
        assert_eq!(st.max, 1000);
        assert_eq!(s.stat(Ddir::Write).samples, 0);
    }

    #[test]
    fn bw_is_kib_per_s() {
        let mut s = RateSampler::new(RateKind::Bw, 500);
        s.record(10, Ddir::Write, 1024 * 1024);
        s.finish(3001);
        // 1 MiB in a 500 ms window = 2048 KiB/s; the empty windows give no samples.
        assert_eq!(s.stat(Ddir::Write).samples, 1);
        assert_eq!(s.stat(Ddir::Write).max, 2048);
    }
}
