//! Time-series log files (`write_bw_log`, `write_iops_log`, `write_lat_log`,
//! `write_hist_log`) in fio 3.33's layout (`iolog.c` `flush_samples` /
//! `flush_hist_samples`, `stat.c` `add_log_sample`).
//!
//! File name: `<prefix>_<type>.<N>.log` (N = 1-based thread number; without `.<N>`
//! when `per_job_logs=0`). Line: `time_ms, value, ddir, bs, prio`, with the offset
//! inserted before prio when `log_offset=1`, prio as `0x%04x` when `log_prio=1`
//! (else 1 for the RT class, 0 otherwise).
//!
//! Averaging (`log_avg_msec > 0`): samples are accumulated per direction; when a
//! sample arrives at least `log_avg_msec` after the last window start (latency logs),
//! or within 1 ms of it (bw/iops logs, fio's `LOG_MSEC_SLACK`), one line is written at
//! that sample's time with the rounded mean (`mean + 0.5`, or the max with
//! `log_max_value`), bs and offset 0, and the window restarts at
//! `time - time % log_avg_msec`. [`LogWriter::finish`] writes what is left at the job's
//! end (fio's `finalize_logs`). With `log_avg_msec = 0` every sample is one line.
//!
//! Units: time ms since job start; latency values ns; bw KiB/s; iops counts.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use flashpath_hist::{LatHist, PLAT_NR};

use super::model::{Ddir, IoStat};

/// Which log a writer produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    Bw,
    Iops,
    Lat,
    Clat,
    Slat,
    ClatHist,
}

impl LogKind {
    /// The `<type>` part of the file name.
    pub fn suffix(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::ClatHist => "clat_hist",
        }
    }

    /// Latency logs are written inline per I/O and get no averaging slack.
    fn inline(self) -> bool {
        matches!(self, LogKind::Lat | LogKind::Clat | LogKind::Slat)
    }
}

/// The log options of one job (fio's option names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// The option value (`write_bw_log=<prefix>`), or the job name when empty.
    pub prefix: String,
    /// 1-based thread number of the job (clones count separately).
    pub thread_number: u32,
    /// `per_job_logs` (default true): put `.<N>` into the file name.
    pub per_job_logs: bool,
    /// `log_avg_msec` (0 = one line per I/O).
    pub log_avg_msec: u64,
    /// `log_max_value`: log the window's maximum instead of its mean.
    pub log_max_value: bool,
    /// `log_offset`: add the I/O offset column.
    pub log_offset: bool,
    /// `log_prio`: print the full priority in hex.
    pub log_prio: bool,
    /// `log_hist_msec` for the histogram log.
    pub log_hist_msec: u64,
    /// `log_hist_coarseness` (0..=6): each printed bin sums 2^coarseness buckets.
    pub log_hist_coarseness: u32,
    /// Added to every time stamp (`log_unix_epoch`: the job's start in Unix ms).
    pub time_offset_ms: u64,
}

impl LogOptions {
    pub fn new(prefix: impl Into<String>, thread_number: u32) -> Self {
        Self {
            prefix: prefix.into(),
            thread_number,
            per_job_logs: true,
            log_avg_msec: 0,
            log_max_value: false,
            log_offset: false,
            log_prio: false,
            log_hist_msec: 0,
            log_hist_coarseness: 0,
            time_offset_ms: 0,
        }
    }

    /// `<prefix>_<type>.<N>.log` (or `<prefix>_<type>.log` with `per_job_logs=0`).
    pub fn file_name(&self, kind: LogKind) -> String {
        if self.per_job_logs {
            format!(
                "{}_{}.{}.log",
                self.prefix,
                kind.suffix(),
                self.thread_number
            )
        } else {
            format!("{}_{}.log", self.prefix, kind.suffix())
        }
    }
}

/// One logged value (fio's `struct log_sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSample {
    pub time_ms: u64,
    pub value: u64,
    pub ddir: Ddir,
    pub bs: u64,
    pub offset: u64,
    /// The I/O's priority value (`ioprio`); class in bits 13..16.
    pub prio: u16,
}

/// Writer of one bw / iops / lat / clat / slat log.
#[derive(Clone, Debug)]
pub struct LogWriter {
    kind: LogKind,
    opts: LogOptions,
    out: String,
    window: [IoStat; 3],
    avg_last: [u64; 3],
}

impl LogWriter {
    pub fn new(kind: LogKind, opts: LogOptions) -> Self {
        Self {
            kind,
            opts,
            out: String::new(),
            window: [IoStat::new(); 3],
            avg_last: [0; 3],
        }
    }

    pub fn kind(&self) -> LogKind {
        self.kind
    }

    pub fn file_name(&self) -> String {
        self.opts.file_name(self.kind)
    }

    fn line(&mut self, s: &LogSample) {
        let t = s.time_ms.wrapping_add(self.opts.time_offset_ms);
        let _ = write!(
            self.out,
            "{}, {}, {}, {}",
            t,
            s.value as i64,
            s.ddir.index(),
            s.bs
        );
        if self.opts.log_offset {
            let _ = write!(self.out, ", {}", s.offset);
        }
        if self.opts.log_prio {
            let _ = writeln!(self.out, ", 0x{:04x}", s.prio);
        } else {
            let _ = writeln!(self.out, ", {}", u8::from(s.prio >> 13 == 1));
        }
    }

    fn flush_window(&mut self, d: usize, time_ms: u64) {
        let w = self.window[d];
        if w.samples > 0 {
            let value = if self.opts.log_max_value {
                w.max
            } else {
                (w.mean + 0.50) as u64
            };
            let ddir = Ddir::from_index(d).unwrap_or(Ddir::Read);
            self.line(&LogSample {
                time_ms,
                value,
                ddir,
                bs: 0,
                offset: 0,
                prio: 0,
            });
        }
        self.window[d] = IoStat::new();
    }

    /// Adds one sample (fio's `add_log_sample`). Samples must come in time order.
    pub fn add(&mut self, s: LogSample) {
        if self.opts.log_avg_msec == 0 {
            self.line(&s);
            return;
        }
        let d = s.ddir.index();
        let avg = self.opts.log_avg_msec;
        self.window[d].add(s.value);
        let elapsed = s.time_ms;
        if elapsed < self.avg_last[d] {
            return;
        }
        let this_window = elapsed - self.avg_last[d];
        if this_window < avg {
            let diff = avg - this_window;
            if self.kind.inline() || diff > 1 {
                return;
            }
        }
        self.flush_window(d, elapsed);
        self.avg_last[d] = elapsed - elapsed % avg;
    }

    /// Writes the partly filled windows at the job's end (fio's `finalize_logs`).
    pub fn finish(&mut self, end_ms: u64) {
        if self.opts.log_avg_msec == 0 {
            return;
        }
        for d in 0..3 {
            self.flush_window(d, end_ms);
        }
    }

    /// The file contents written so far (and not yet drained).
    pub fn contents(&self) -> &str {
        &self.out
    }

    /// Moves the lines written so far into `w` (a file as the run goes), so the writer
    /// keeps nothing that grows with the run.
    pub fn drain_into(&mut self, w: &mut dyn io::Write) -> io::Result<()> {
        w.write_all(self.out.as_bytes())?;
        self.out.clear();
        Ok(())
    }

    /// The log's options.
    pub fn options(&self) -> &LogOptions {
        &self.opts
    }

    /// Sets the offset added to every time stamp (`log_unix_epoch`), once the job's
    /// epoch is known.
    pub fn set_time_offset_ms(&mut self, ms: u64) {
        self.opts.time_offset_ms = ms;
    }

    /// Writes the file into `dir`, returning its path.
    pub fn write_to(&self, dir: &Path) -> io::Result<PathBuf> {
        let p = dir.join(self.file_name());
        std::fs::write(&p, &self.out)?;
        Ok(p)
    }
}

/// Writer of the `clat_hist` log (`write_hist_log` + `log_hist_msec`): per direction,
/// whenever a completion arrives at least `log_hist_msec` after the last entry, one
/// line `time, ddir, bs, c0, c1, ...` with the histogram counts gained since the
/// previous line of that direction (1856 columns, fewer with coarseness). The last,
/// partial window is not written (as in fio).
#[derive(Clone, Debug)]
pub struct HistLogWriter {
    opts: LogOptions,
    out: String,
    cur: [LatHist; 3],
    before: [Vec<u64>; 3],
    hist_last: [u64; 3],
}

impl HistLogWriter {
    pub fn new(opts: LogOptions) -> Self {
        Self {
            opts,
            out: String::new(),
            cur: Default::default(),
            before: [vec![0; PLAT_NR], vec![0; PLAT_NR], vec![0; PLAT_NR]],
            hist_last: [0; 3],
        }
    }

    pub fn file_name(&self) -> String {
        self.opts.file_name(LogKind::ClatHist)
    }

    /// Accounts one completion (fio's histogram part of `add_clat_sample`).
    pub fn add(&mut self, time_ms: u64, ddir: Ddir, bs: u64, clat_ns: u64) {
        let d = ddir.index();
        self.cur[d].record(clat_ns);
        let hist_msec = self.opts.log_hist_msec;
        if hist_msec == 0 {
            return;
        }
        let elapsed = time_ms;
        if self.hist_last[d] == 0 {
            self.hist_last[d] = elapsed;
        }
        let this_window = elapsed.saturating_sub(self.hist_last[d]);
        if this_window < hist_msec {
            return;
        }
        let stride = 1usize << self.opts.log_hist_coarseness.min(10);
        let stride = stride.min(PLAT_NR);
        let now = self.cur[d].counts();
        let _ = write!(
            self.out,
            "{}, {}, {}, ",
            elapsed.wrapping_add(self.opts.time_offset_ms),
            d,
            bs
        );
        let mut j = 0;
        while j + stride <= PLAT_NR {
            let sum = (j..j + stride).fold(0u64, |a, k| {
                a.wrapping_add(now[k].wrapping_sub(self.before[d][k]))
            });
            if j + stride < PLAT_NR {
                let _ = write!(self.out, "{}, ", sum);
            } else {
                let _ = writeln!(self.out, "{}", sum);
            }
            j += stride;
        }
        self.before[d].copy_from_slice(&now[..]);
        self.hist_last[d] = elapsed - (this_window - hist_msec);
    }

    pub fn contents(&self) -> &str {
        &self.out
    }

    /// See [`LogWriter::set_time_offset_ms`].
    pub fn set_time_offset_ms(&mut self, ms: u64) {
        self.opts.time_offset_ms = ms;
    }

    /// Moves the lines written so far into `w` (see [`LogWriter::drain_into`]).
    pub fn drain_into(&mut self, w: &mut dyn io::Write) -> io::Result<()> {
        w.write_all(self.out.as_bytes())?;
        self.out.clear();
        Ok(())
    }

    pub fn write_to(&self, dir: &Path) -> io::Result<PathBuf> {
        let p = dir.join(self.file_name());
        std::fs::write(&p, &self.out)?;
        Ok(p)
    }
}

/// The logs one job writes, fed per completed I/O. Enable each with its option.
#[derive(Clone, Debug, Default)]
pub struct LogSet {
    pub bw: Option<LogWriter>,
    pub iops: Option<LogWriter>,
    /// `write_lat_log` writes all three of lat, clat and slat.
    pub lat: Option<[LogWriter; 3]>,
    pub hist: Option<HistLogWriter>,
}

/// One completed I/O as the logs see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoEvent {
    /// Completion time, ms since the job started.
    pub time_ms: u64,
    pub ddir: Ddir,
    pub bytes: u64,
    pub offset: u64,
    pub prio: u16,
    pub clat_ns: u64,
    pub lat_ns: u64,
}

impl LogSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Enables `write_bw_log` with these options.
    pub fn with_bw(mut self, o: &LogOptions) -> Self {
        self.bw = Some(LogWriter::new(LogKind::Bw, o.clone()));
        self
    }
    pub fn with_iops(mut self, o: &LogOptions) -> Self {
        self.iops = Some(LogWriter::new(LogKind::Iops, o.clone()));
        self
    }
    pub fn with_lat(mut self, o: &LogOptions) -> Self {
        self.lat = Some([
            LogWriter::new(LogKind::Lat, o.clone()),
            LogWriter::new(LogKind::Clat, o.clone()),
            LogWriter::new(LogKind::Slat, o.clone()),
        ]);
        self
    }
    pub fn with_hist(mut self, o: &LogOptions) -> Self {
        self.hist = Some(HistLogWriter::new(o.clone()));
        self
    }

    /// True when bw samples are logged per I/O (`log_avg_msec=0`); fio then also
    /// feeds these per-I/O rates into the job's `bw_*` statistics.
    pub fn bw_per_io(&self) -> bool {
        self.bw.as_ref().is_some_and(|l| l.opts.log_avg_msec == 0)
    }
    pub fn iops_per_io(&self) -> bool {
        self.iops.as_ref().is_some_and(|l| l.opts.log_avg_msec == 0)
    }

    /// Accounts one submission in the slat log (fio logs slat when the I/O is issued,
    /// at the issue time). Engines without submission latency (sync) never call it.
    pub fn io_submitted(
        &mut self,
        time_ms: u64,
        ddir: Ddir,
        bytes: u64,
        offset: u64,
        prio: u16,
        slat_ns: u64,
    ) {
        if let Some([_, _, slat]) = self.lat.as_mut() {
            slat.add(LogSample {
                time_ms,
                value: slat_ns,
                ddir,
                bs: bytes,
                offset,
                prio,
            });
        }
    }

    /// Accounts one completion in every enabled log, in fio's order (lat, clat,
    /// histogram, then the per-I/O bw and iops entries).
    pub fn io_completed(&mut self, e: &IoEvent) {
        let base = LogSample {
            time_ms: e.time_ms,
            value: 0,
            ddir: e.ddir,
            bs: e.bytes,
            offset: e.offset,
            prio: e.prio,
        };
        if let Some([lat, clat, _]) = self.lat.as_mut() {
            lat.add(LogSample {
                value: e.lat_ns,
                ..base
            });
            clat.add(LogSample {
                value: e.clat_ns,
                ..base
            });
        }
        if let Some(h) = self.hist.as_mut() {
            h.add(e.time_ms, e.ddir, e.bytes, e.clat_ns);
        }
        if self.bw_per_io() {
            if let Some(bw) = self.bw.as_mut() {
                bw.add(LogSample {
                    value: per_io_bw(e.bytes, e.clat_ns),
                    ..base
                });
            }
        }
        if self.iops_per_io() {
            if let Some(iops) = self.iops.as_mut() {
                iops.add(LogSample { value: 1, ..base });
            }
        }
    }

    /// Flushes partial averaging windows at the job's end.
    pub fn finish(&mut self, end_ms: u64) {
        for l in [self.bw.as_mut(), self.iops.as_mut()].into_iter().flatten() {
            l.finish(end_ms);
        }
        if let Some(ls) = self.lat.as_mut() {
            // fio finalizes clat, slat, lat in this order.
            let [lat, clat, slat] = ls;
            clat.finish(end_ms);
            slat.finish(end_ms);
            lat.finish(end_ms);
        }
    }

    /// Writes every enabled log into `dir`; returns the paths.
    pub fn write_to(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut v = Vec::new();
        if let Some(l) = &self.bw {
            v.push(l.write_to(dir)?);
        }
        if let Some(l) = &self.iops {
            v.push(l.write_to(dir)?);
        }
        if let Some(ls) = &self.lat {
            for l in ls {
                v.push(l.write_to(dir)?);
            }
        }
        if let Some(h) = &self.hist {
            v.push(h.write_to(dir)?);
        }
        Ok(v)
    }
}

/// fio's per-I/O bandwidth value (`add_bw_sample`): `bytes * 1_000_000 / clat_ns`
/// (0 for a zero latency).
pub fn per_io_bw(bytes: u64, clat_ns: u64) -> u64 {
    bytes
        .wrapping_mul(1_000_000)
        .checked_div(clat_ns)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time_ms: u64, value: u64, ddir: Ddir) -> LogSample {
        LogSample {
            time_ms,
            value,
            ddir,
            bs: 4096,
            offset: 503_808,
            prio: 0,
        }
    }

    /// The four line layouts of fio 3.33's flush_samples, as real fio printed them
    /// (`fio ... --write_bw_log --log_offset=1 --log_prio=1` gave
    /// `0, 10167, 0, 4096, 503808, 0x0000`).
    #[test]
    fn lines_have_fios_four_layouts() {
        let line = |offset: bool, prio: bool, p: u16| {
            let mut o = LogOptions::new("x", 1);
            o.log_offset = offset;
            o.log_prio = prio;
            let mut w = LogWriter::new(LogKind::Bw, o);
            w.add(LogSample {
                prio: p,
                ..sample(0, 10167, Ddir::Read)
            });
            w.contents().to_string()
        };
        assert_eq!(line(false, false, 0), "0, 10167, 0, 4096, 0\n");
        assert_eq!(line(true, false, 0), "0, 10167, 0, 4096, 503808, 0\n");
        assert_eq!(line(true, true, 0), "0, 10167, 0, 4096, 503808, 0x0000\n");
        assert_eq!(line(false, true, 0), "0, 10167, 0, 4096, 0x0000\n");
        // ioprio_value_is_class_rt: class 1 (RT) in bits 13..15 prints 1.
        assert_eq!(line(false, false, 1 << 13), "0, 10167, 0, 4096, 1\n");
        assert_eq!(
            line(false, true, (1 << 13) | 4),
            "0, 10167, 0, 4096, 0x2004\n"
        );
    }

    /// log_avg_msec on an inline (latency) log: a line at the first sample at least a
    /// window after the window's start, with the rounded mean, bs and offset 0; the
    /// window restarts at the boundary below; the rest at the job's end.
    #[test]
    fn averaged_latency_lines() {
        let mut o = LogOptions::new("x", 1);
        o.log_avg_msec = 100;
        let mut w = LogWriter::new(LogKind::Clat, o);
        for (t, v) in [(0, 10), (50, 21), (99, 30), (100, 40), (150, 7), (230, 9)] {
            w.add(sample(t, v, Ddir::Write));
        }
        w.finish(260);
        // (10 + 21 + 30 + 40) / 4 = 25.25 → 25; then (7 + 9) / 2 = 8 at 230 (230 - 100
        // >= 100); nothing left at the end.
        assert_eq!(w.contents(), "100, 25, 1, 0, 0\n230, 8, 1, 0, 0\n");
        let mut d = Vec::new();
        w.drain_into(&mut d).unwrap();
        assert_eq!(w.contents(), "");
        assert_eq!(d, b"100, 25, 1, 0, 0\n230, 8, 1, 0, 0\n");
    }

    /// A clat_hist line: time, ddir, bs, then the bins gained since the direction's
    /// last line, 2^coarseness bins summed per column.
    #[test]
    fn histogram_line_layout() {
        let mut o = LogOptions::new("x", 1);
        o.log_hist_msec = 100;
        o.log_hist_coarseness = 6;
        let mut h = HistLogWriter::new(o);
        h.add(1, Ddir::Read, 4096, 100);
        h.add(50, Ddir::Read, 4096, 100);
        h.add(101, Ddir::Read, 4096, 100);
        let text = h.contents().to_string();
        let cols: Vec<&str> = text.trim_end().split(", ").collect();
        assert_eq!(&cols[..3], ["101", "0", "4096"]);
        assert_eq!(cols.len(), 3 + PLAT_NR / 64);
        // Below 128 ns fio's bin is the value itself: 100 ns is bin 100, in the second
        // column of 64 bins, with all three I/Os.
        assert_eq!(cols[4], "3");
        assert_eq!(cols.iter().skip(3).filter(|c| **c != "0").count(), 1);
    }
}
