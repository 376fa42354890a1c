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
//! Units: latencies ns, sizes bytes, times ms, bandwidth samples KiB/s.
//! Leaves out: client/server output, `cpu_idleness`, `steadystate`, `block`
//! percentiles, per-priority (`prios`) stats, disk slave aggregation.

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
pub use json::{json_string, write_json};
pub use logs::{HistLogWriter, IoEvent, LogKind, LogOptions, LogSample, LogSet, LogWriter};
pub use model::{
    batch_bucket, depth_level_bucket, Ddir, DirStats, DiskUtil, IoStat, JobHeader, JobReport,
    LatStat, LatencyBuckets, RunReport, SyncStats, UnifiedRw,
};
pub use normal::{header_string, normal_report_string, write_normal};
pub use sampling::{effective_window_ms, RateKind, RateSampler};
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
    let normal = formats.contains(&Format::Normal);
    let plus = formats.contains(&Format::JsonPlus);
    let json = plus || formats.contains(&Format::Json);
    let terse = formats.iter().find_map(|f| match f {
        Format::Terse(v) => Some(*v),
        _ => None,
    });
    if normal {
        out.write_all(header_string(r).as_bytes())?;
    }
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
