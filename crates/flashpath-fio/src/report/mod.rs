//! Output formats from a typed result model: fio 3.33's normal text, JSON, json+,
//! terse (v2–v5, default 3) and the time-series log files, byte-compatible with what
//! fio prints for the same numbers.
//!
//! ```text
//!  simulator ──fills──▶ RunReport { jobs: Vec<JobReport>, disk_util, time, .. }
//!                          │
//!                          ├─ aggregate(): group_reporting merge + "Run status group" sums
//!                          │
//!                          ├─ write_terse / write_json(plus) / write_normal
//!                          └─ write_formats(&[Format]): fio's order terse → json → normal
//!
//!  per-I/O events ──▶ LogSet / LogWriter / HistLogWriter
//!                         ──▶ <prefix>_{bw,iops,lat,clat,slat,clat_hist}.<N>.log
//!  per-I/O bytes ──▶ RateSampler (bwavgtime windows) ──▶ IoStat (bw_*/iops_* summary)
//! ```
//!
//! # Filling the model
//!
//! One [`JobReport`] per fio thread (every `numjobs` clone separately, in job order,
//! `subjob_number` 0, 1, ...). Never merge jobs yourself: set `group_reporting` and the
//! writers merge consecutive flagged jobs of a group exactly as fio does.
//!
//! - Per completed I/O: [`JobReport::record_io`] (bytes, slat — `None` for sync
//!   engines —, clat; lat = slat + clat). It fills the counters, the slat/clat/lat
//!   [`LatStat`]s (fio's running mean/variance plus the 1856-bucket [`LatHist`]) and
//!   the `latency_ns/us/ms` buckets. fsync/fdatasync: [`JobReport::record_sync`].
//!   Alternatively build a [`LatStat`] from a filled histogram
//!   ([`LatStat::from_hist`], exact moments from its sums) or with an explicit
//!   summary ([`LatStat::with_summary`], used to reproduce real fio runs).
//! - Per direction: `runtime_ms` (ms the direction was active), `short_ios`,
//!   `drop_ios`; `bw` / `iops` from a [`RateSampler`] each (or
//!   [`bw_stat_from_window_bytes`] / [`iops_stat_from_window_ios`]).
//! - Per job: `job_runtime_ms`, `usr_time_ms`/`sys_time_ms` (ms; printed as % of
//!   `job_runtime_ms`), `ctx`, `majf`, `minf`; the depth histograms `iodepth_level`
//!   ([`depth_level_bucket`] of the depth at submission), `iodepth_submit` /
//!   `iodepth_complete` ([`batch_bucket`] of each submit/reap call, with
//!   `total_submit` / `total_complete`); `latency_depth` = iodepth; `job_options` as
//!   JSON prints them; `header` for the start-up line; percentile settings.
//! - Run: [`RunReport::new`] with the caller's clock ([`ctime_utc`] formats it),
//!   `global_options`, optional `disk_util`, optional `startup_lines`.
//!
//! Mean/stddev choice: the model keeps fio's own running statistics ([`IoStat`]:
//! Welford mean and sum of squared deviations, merged with fio's parallel formula), so
//! a simulator feeding every sample gets what fio would compute; golden tests set them
//! explicitly because the histogram bins do not determine them.
//!
//! ```
//! use flashpath_fio::report::*;
//!
//! let mut job = JobReport::new("randread", 0);
//! job.header = JobHeader { rw: "randread".into(), bs: [(4096, 4096); 3],
//!                          ioengine: "libaio".into(), iodepth: 4 };
//! job.latency_depth = 4;
//! let mut bw = RateSampler::new(RateKind::Bw, DEFAULT_AVG_MS);
//! let mut iops = RateSampler::new(RateKind::Iops, DEFAULT_AVG_MS);
//! let mut opts = LogOptions::new("randread", 1);
//! opts.log_avg_msec = 0; // one log line per I/O
//! let mut logs = LogSet::new().with_lat(&opts);
//! for i in 0..10_000u64 {
//!     let (t_ms, slat, clat) = (i / 5, 1_500, 80_000 + i % 7_000);
//!     job.record_io(Ddir::Read, 4096, Some(slat), clat);
//!     job.iodepth_level[depth_level_bucket(4)] += 1;
//!     bw.record(t_ms, Ddir::Read, 4096);
//!     iops.record(t_ms, Ddir::Read, 4096);
//!     logs.io_submitted(t_ms, Ddir::Read, 4096, i * 4096, 0, slat);
//!     logs.io_completed(&IoEvent { time_ms: t_ms, ddir: Ddir::Read, bytes: 4096,
//!         offset: i * 4096, prio: 0, clat_ns: clat, lat_ns: slat + clat });
//! }
//! bw.finish(2000);
//! iops.finish(2000);
//! logs.finish(2000);
//! let rd = job.dir_mut(Ddir::Read);
//! rd.runtime_ms = 2000;
//! rd.bw = bw.stat(Ddir::Read);
//! rd.iops = iops.stat(Ddir::Read);
//! job.job_runtime_ms = 2000;
//!
//! let mut run = RunReport::new(1_795_339_782_335, ctime_utc(1_795_339_782));
//! run.jobs.push(job);
//! let mut out = Vec::new();
//! write_formats(&run, &Format::parse_list("json+", 3).unwrap(), &mut out).unwrap();
//! assert!(String::from_utf8(out).unwrap().contains("\"bw_samples\" : 3"));
//! assert!(logs.lat.as_ref().unwrap()[1].contents().starts_with("0, 80000, 0, 4096, 0"));
//! // logs.write_to(dir) writes randread_lat.1.log, randread_clat.1.log, randread_slat.1.log
//! ```
//!
//! Units: latencies ns, sizes bytes, times ms, bandwidth samples KiB/s.
//! Leaves out: client/server output, `cpu_idleness`, `block`
//! percentiles, per-priority (`prios`) stats, `cachehit`, disk slave aggregation,
//! `log_compression`.

pub mod aggregate;
pub mod fmt;
pub mod json;
pub mod logs;
pub mod model;
pub mod normal;
pub mod sampling;
pub mod terse;

pub use aggregate::{aggregate, Entry, GroupRunStats};
pub use flashpath_hist::{LatHist, DEFAULT_PERCENTILES};
pub use fmt::ctime_utc;
pub use json::{json_string, write_json};
pub use logs::{HistLogWriter, IoEvent, LogKind, LogOptions, LogSample, LogSet, LogWriter};
pub use model::{
    batch_bucket, depth_level_bucket, Ddir, DirStats, DiskUtil, IoStat, JobHeader, JobReport,
    LatStat, LatencyBuckets, RunReport, SpanSet, SyncStats, UnifiedRw,
};
pub use model::{Interrupted, RunConfiguration};
pub use normal::{header_string, normal_report_string, starting_string, write_normal};
pub use sampling::{
    bw_stat_from_window_bytes, effective_window_ms, iops_stat_from_window_ios, summarize, RateKind,
    RateSampler, DEFAULT_AVG_MS,
};
pub use terse::{terse_string, write_terse};

use std::io::{self, Write};

/// One `--output-format` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Normal,
    Json,
    /// `json+`: JSON plus the latency histogram `bins`.
    JsonPlus,
    /// Terse with the given `--terse-version` (fio's default is 3).
    Terse(u32),
}

/// An `--output-format` word fio does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid output format '{0}'")]
pub struct BadFormat(pub String);

impl Format {
    /// Parses fio's comma list (`normal`, `terse`, `json`, `json+`); `terse_version`
    /// is applied to `terse`.
    pub fn parse_list(list: &str, terse_version: u32) -> Result<Vec<Format>, BadFormat> {
        list.split(',')
            .map(|w| match w {
                "normal" => Ok(Format::Normal),
                "terse" => Ok(Format::Terse(terse_version)),
                "json" => Ok(Format::Json),
                "json+" => Ok(Format::JsonPlus),
                other => Err(BadFormat(other.to_string())),
            })
            .collect()
    }
}

/// Writes every requested format the way fio 3.33 does when given a comma list:
/// the start-up lines first (normal format only), then terse, then JSON (json+ if
/// either json+ was asked for), then the normal report — whatever the list order.
pub fn write_formats(r: &RunReport, formats: &[Format], out: &mut impl Write) -> io::Result<()> {
    if formats.contains(&Format::Normal) {
        out.write_all(header_string(r).as_bytes())?;
    }
    write_reports(r, formats, out)
}

/// [`write_formats`] without the normal format's start-up lines: the reports only, in
/// fio's order (terse, JSON, normal). fio's `--status-interval` prints this at each
/// interval, and a front end that printed [`starting_string`] before the run prints
/// this (after the start-up lines) at its end.
pub fn write_reports(r: &RunReport, formats: &[Format], out: &mut impl Write) -> io::Result<()> {
    let normal = formats.contains(&Format::Normal);
    let plus = formats.contains(&Format::JsonPlus);
    let json = plus || formats.contains(&Format::Json);
    let terse = formats.iter().find_map(|f| match f {
        Format::Terse(v) => Some(*v),
        _ => None,
    });
    if let Some(v) = terse {
        out.write_all(terse_string(r, v).as_bytes())?;
    }
    if json {
        out.write_all(json_string(r, plus).as_bytes())?;
    }
    if normal {
        out.write_all(normal_report_string(r).as_bytes())?;
    }
    Ok(())
}
