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
//!  per-I/O events ──▶ LogSet / LogWriter ──▶ <prefix>_{bw,iops,lat,clat,slat,clat_hist}.<N>.log
//!  per-window bytes ──▶ RateSampler ──▶ IoStat (bw_*/iops_* summary)
//! ```
//!
//! Units: latencies ns, sizes bytes, times ms, bandwidth samples KiB/s.
//! Leaves out: client/server output, `cpu_idleness`, `steadystate`, `block`
//! percentiles, per-priority (`prios`) stats, disk slave aggregation.

pub mod aggregate;
pub mod fmt;
pub mod json;
pub mod model;

pub use aggregate::{aggregate, Entry, GroupRunStats};
pub use flashpath_hist::{LatHist, DEFAULT_PERCENTILES};
pub use json::{json_string, write_json};
pub use model::{
    batch_bucket, depth_level_bucket, Ddir, DirStats, DiskUtil, IoStat, JobHeader, JobReport,
    LatStat, LatencyBuckets, RunReport, SyncStats, UnifiedRw,
};
