//! The typed result model: what one fio thread ("td") measured, plus run-wide facts.
//!
//! One [`JobReport`] per fio thread (every `numjobs` clone is its own entry). The writers
//! apply `group_reporting` themselves (see [`super::aggregate`]), exactly as fio's
//! `__show_run_stats` does, so a caller never merges anything by hand.
//!
//! Units: latencies in ns, sizes in bytes, times in ms, bandwidth samples in KiB/s.

use flashpath_hist::{LatHist, DEFAULT_PERCENTILES};

/// Data direction, fio's `enum fio_ddir` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];

    pub fn index(self) -> usize {
        self as usize
    }

    /// fio's `io_ddir_name`.
    pub fn name(self) -> &'static str {
        match self {
            Ddir::Read => "read",
            Ddir::Write => "write",
            Ddir::Trim => "trim",
        }
    }

    pub fn from_index(i: usize) -> Option<Ddir> {
        Ddir::ALL.get(i).copied()
    }
}

/// `unified_rw_reporting`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnifiedRw {
    /// `none` / `0`: separate read, write, trim.
    #[default]
    None,
    /// `mixed` / `1`: one `mixed` direction replaces the others.
    Mixed,
    /// `both` / `2`: the separate directions plus a `mixed` one.
    Both,
}

impl UnifiedRw {
    /// fio's numeric value (`UNIFIED_SPLIT`, `UNIFIED_MIXED`, `UNIFIED_BOTH`).
    pub fn code(self) -> u8 {
        match self {
            UnifiedRw::None => 0,
            UnifiedRw::Mixed => 1,
            UnifiedRw::Both => 2,
        }
    }
}

pub use flashpath_hist::IoStat;

/// One latency kind (slat, clat, lat or sync): fio's `io_stat` plus its plat histogram.
///
/// [`LatStat::record`] keeps both in step. The histogram only feeds percentiles and
/// json+ `bins`; min/max/mean/stddev/N come from `stat`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatStat {
    pub stat: IoStat,
    pub hist: LatHist,
}

impl LatStat {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one latency (ns) in both the running stat and the histogram.
    pub fn record(&mut self, ns: u64) {
        self.stat.add(ns);
        self.hist.record(ns);
    }

    /// Stats derived from a filled histogram (moments from its exact sum / sum of squares).
    pub fn from_hist(hist: LatHist) -> Self {
        Self {
            stat: IoStat::from_hist(&hist),
            hist,
        }
    }

    /// Histogram plus an explicit summary (golden reconstruction of a real fio run).
    pub fn with_summary(hist: LatHist, min: u64, max: u64, mean: f64, stddev: f64) -> Self {
        let n = hist.count();
        Self {
            stat: IoStat::from_summary(n, min, max, mean, stddev),
            hist,
        }
    }

    pub fn samples(&self) -> u64 {
        self.stat.samples
    }

    /// Merges another latency stat (fio's `sum_stat(.., false)` + bucket sums).
    pub fn merge(&mut self, other: &LatStat) {
        self.stat.sum(&other.stat, false);
        self.hist.merge(&other.hist);
    }
}

/// Per-direction results (fio's per-`ddir` arrays of `struct thread_stat`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    /// Completed I/Os (`total_io_u`).
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// ms this direction was active (ramp excluded).
    pub runtime_ms: u64,
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    /// Bandwidth samples in KiB/s, one per `bwavgtime` window (see [`super::sampling`]).
    pub bw: IoStat,
    /// IOPS samples, one per `iopsavgtime` window.
    pub iops: IoStat,
}

/// fsync/fdatasync stats (JSON `sync`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncStats {
    pub total_ios: u64,
    pub lat: LatStat,
}

/// fio's `io_u_lat_n/u/m` counters: completions by clat, in the buckets of JSON
/// `latency_ns`, `latency_us`, `latency_ms` (fio's `io_u_mark_latency`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyBuckets {
    pub ns: [u64; 10],
    pub us: [u64; 10],
    pub ms: [u64; 12],
}

/// Bucket index for a value in 0..1000 (ns or µs) as fio's `io_u_mark_lat_nsec/usec`.
fn lat_idx_1000(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        _ => 9,
    }
}

impl LatencyBuckets {
    /// fio's `io_u_mark_latency` for one completion latency (clat, ns).
    pub fn record(&mut self, clat_ns: u64) {
        self.record_n(clat_ns, 1);
    }

    pub fn record_n(&mut self, clat_ns: u64, count: u64) {
        if clat_ns < 1000 {
            let c = &mut self.ns[lat_idx_1000(clat_ns)];
            *c = c.wrapping_add(count);
        } else if clat_ns < 1_000_000 {
            let c = &mut self.us[lat_idx_1000(clat_ns / 1000)];
            *c = c.wrapping_add(count);
        } else {
            let ms = clat_ns / 1_000_000;
            let idx = match ms {
                0..=1 => 0,
                2..=3 => 1,
                4..=9 => 2,
                10..=19 => 3,
                20..=49 => 4,
                50..=99 => 5,
                100..=249 => 6,
                250..=499 => 7,
                500..=749 => 8,
                750..=999 => 9,
                1000..=1999 => 10,
                _ => 11,
            };
            self.ms[idx] = self.ms[idx].wrapping_add(count);
        }
    }

    /// Approximation from a histogram when the exact latencies were not kept: each
    /// bucket's count is attributed to the bucket's reported value (its midpoint).
    /// Exact below 128 ns; elsewhere a bucket that straddles a boundary (e.g. 250 µs)
    /// lands wholly on one side. Prefer [`LatencyBuckets::record`] per I/O.
    pub fn from_hist(h: &LatHist) -> Self {
        let mut b = Self::default();
        for (i, &c) in h.counts().iter().enumerate() {
            if c != 0 {
                b.record_n(flashpath_hist::plat_idx_to_val(i), c);
            }
        }
        b
    }

    pub fn merge(&mut self, o: &LatencyBuckets) {
        for (a, b) in self.ns.iter_mut().zip(o.ns.iter()) {
            *a = a.wrapping_add(*b);
        }
        for (a, b) in self.us.iter_mut().zip(o.us.iter()) {
            *a = a.wrapping_add(*b);
        }
        for (a, b) in self.ms.iter_mut().zip(o.ms.iter()) {
            *a = a.wrapping_add(*b);
        }
    }
}

pub use flashpath_hist::{batch_bucket, depth_level_bucket};

/// The job's header line before the run
/// (`name: (g=0): rw=randrw, bs=(R) 4096B-4096B, ..., ioengine=nbd, iodepth=16`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobHeader {
    /// fio's `ddir_str` of the job's rw mode (`read`, `randrw`, `rw`, ...).
    pub rw: String,
    /// (min, max) block size per direction, bytes: read, write, trim.
    pub bs: [(u64, u64); 3],
    pub ioengine: String,
    /// The configured depth (printed even when a sync engine caps it at 1).
    pub iodepth: u32,
}

impl Default for JobHeader {
    fn default() -> Self {
        Self {
            rw: "read".into(),
            bs: [(4096, 4096); 3],
            ioengine: "psync".into(),
            iodepth: 1,
        }
    }
}

/// Linux block-device statistics (`disk_util`), one per device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    /// `time_in_queue`, ms.
    pub in_queue: u64,
    /// Utilisation in percent; see [`DiskUtil::util_from_ticks`].
    pub util: f64,
}

impl DiskUtil {
    /// fio's `100 * io_ticks / msec`, capped at 100 (0 when `msec` is 0).
    pub fn util_from_ticks(io_ticks_ms: u64, msec: u64) -> f64 {
        if msec == 0 {
            return 0.0;
        }
        (100.0 * io_ticks_ms as f64 / msec as f64).min(100.0)
    }
}

/// Everything fio reports about one thread (job or clone).
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// errno of the first error (0 = ok).
    pub error: i32,
    /// fio's `verror` text, printed as `err= 5 (<verror>)` in normal output.
    pub verror: String,
    pub pid: u32,
    /// JSON `eta` (fio prints 0 or 2147483647 at the end of a run).
    pub eta: i64,
    /// JSON `elapsed`: seconds since the jobs started (ramp included).
    pub elapsed_s: u64,
    /// Options set in the job's own section, in order, exactly as JSON prints them.
    /// Entries with an empty value are skipped, as fio's JSON writer drops them.
    pub job_options: Vec<(String, String)>,
    pub header: JobHeader,
    /// 0 for the job itself, 1.. for its `numjobs` clones (the header line prints
    /// once for clone 0 and `...` for clone 1).
    pub subjob_number: u32,
    /// `thread` option: counted as a thread rather than a process in `Starting ...`.
    pub thread: bool,
    pub description: String,
    pub group_reporting: bool,
    pub unified_rw_reporting: UnifiedRw,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// `percentile_list` (fio sorts it before use).
    pub percentile_list: Vec<f64>,
    /// Decimals of the percentiles in text output: the most decimals any entry of
    /// `percentile_list` was written with (2 for the default list, 0 for `50:99`).
    pub percentile_precision: u32,
    /// 1024 (default) or 1000.
    pub kb_base: u32,
    /// `unit_base=1`: print bandwidth in bits.
    pub unit_bits: bool,
    /// `significant_figures` (4).
    pub sig_figs: u32,
    /// read, write, trim.
    pub dirs: [DirStats; 3],
    pub sync: SyncStats,
    /// JSON `job_runtime`: ms the job ran (fio's `total_run_time`).
    pub job_runtime_ms: u64,
    /// CPU time in ms (fio's `usr_time` / `sys_time`); percentages are
    /// `time * 100 / job_runtime_ms`.
    pub usr_time_ms: u64,
    pub sys_time_ms: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// `io_u_map`: I/Os by depth at submission (see [`depth_level_bucket`]); the
    /// percentages are relative to the sum of `total_ios` over read/write/trim.
    pub iodepth_level: [u64; 7],
    /// `io_u_submit`: submit calls by batch size (see [`batch_bucket`]).
    pub iodepth_submit: [u64; 7],
    pub total_submit: u64,
    /// `io_u_complete`: reap calls by batch size.
    pub iodepth_complete: [u64; 7],
    pub total_complete: u64,
    /// Completions by clat (JSON `latency_ns/us/ms`, text `lat (usec) :` lines).
    pub latency_buckets: LatencyBuckets,
    /// `latency_depth` (normally = iodepth; 0 omits the `latency_*` keys).
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    pub continue_on_error: bool,
    pub total_err_count: u64,
    pub first_error: i32,
    /// Shown as `; N zone resets` on the text write line.
    pub nr_zone_resets: u64,
    /// Not fio's: the simulator's spans of each I/O (name, distribution in ns), printed
    /// as `flashpath.spans` in JSON and a `spans` block in normal output when not empty.
    /// With `pre`, `hw` and `post` among them, the software share
    /// (pre + post) / (pre + hw + post) of the means is printed too.
    pub spans: SpanSet,
    /// Not fio's: the same spans per direction (read, write, trim), each empty when the
    /// direction has none. Printed (`flashpath.read`, `.write`, `.trim` in JSON, a block
    /// per direction in normal output) when more than one direction has spans.
    pub dir_spans: [SpanSet; 3],
    /// Not fio's: how busy the simulated cores and hardware were over the job's
    /// measured window (`flashpath.occupancy` in JSON, beside the spans).
    pub occupancy: Option<Occupancy>,
    /// fio's steady-state block (`ss_dur` set): the `steadystate  :` line and the JSON
    /// `steadystate` object. With group_reporting the group shows its last job's.
    pub steadystate: Option<SteadyState>,
}

/// A job's steady state as fio's `thread_stat` keeps it (`ss_*` fields).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    /// The criterion is on IOPS (else bandwidth).
    pub iops: bool,
    /// A slope (else the largest deviation from the mean).
    pub slope: bool,
    /// The limit is a percentage.
    pub pct: bool,
    pub limit: f64,
    /// The window, in seconds.
    pub dur: u64,
    pub attained: bool,
    /// The last value of the criterion, the deviation and the slope.
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope_value: f64,
    /// The window's samples (bytes/s, IOPS) in the order fio's JSON prints them.
    pub bw: Vec<u64>,
    pub iops_data: Vec<u64>,
}

impl SteadyState {
    /// `steadystate_bw_mean`: the window's integer mean.
    pub fn bw_mean(&self) -> u64 {
        if self.dur == 0 {
            return 0;
        }
        self.bw.iter().fold(0u64, |a, &v| a.wrapping_add(v)) / self.dur
    }
    /// `steadystate_iops_mean`.
    pub fn iops_mean(&self) -> u64 {
        if self.dur == 0 {
            return 0;
        }
        self.iops_data.iter().fold(0u64, |a, &v| a.wrapping_add(v)) / self.dur
    }
}

/// Named span distributions (ns), in report order.
pub type SpanSet = Vec<(&'static str, LatHist)>;

/// Busy time of the simulated system's servers over a job's measured window, ns: each
/// core's CPU time (any work) and the time some request was on the hardware.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub window_ns: u64,
    pub core_busy_ns: Vec<u64>,
    pub hw_busy_ns: u64,
}

/// Mean of a span (ns), if the set has it with samples.
pub fn span_mean(set: &SpanSet, name: &str) -> Option<f64> {
    set.iter()
        .find(|(n, h)| *n == name && h.count() > 0)
        .map(|(_, h)| h.mean())
}

/// Mean of pre + hw + post (ns): the whole of an I/O's life.
pub fn span_total(set: &SpanSet) -> Option<f64> {
    Some(span_mean(set, "pre")? + span_mean(set, "hw")? + span_mean(set, "post")?)
}

/// The white paper's software share: (pre + post) / (pre + hw + post) of the means.
pub fn software_share(set: &SpanSet) -> Option<f64> {
    let total = span_total(set)?;
    let hw = span_mean(set, "hw")?;
    (total > 0.0).then(|| (total - hw) / total)
}

impl JobReport {
    /// A job with fio's defaults and no I/O.
    pub fn new(name: impl Into<String>, groupid: u32) -> Self {
        Self {
            name: name.into(),
            groupid,
            error: 0,
            verror: String::new(),
            pid: 0,
            eta: 0,
            elapsed_s: 0,
            job_options: Vec::new(),
            header: JobHeader::default(),
            subjob_number: 0,
            thread: false,
            description: String::new(),
            group_reporting: false,
            unified_rw_reporting: UnifiedRw::None,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            kb_base: 1024,
            unit_bits: false,
            sig_figs: 4,
            dirs: Default::default(),
            sync: SyncStats::default(),
            job_runtime_ms: 0,
            usr_time_ms: 0,
            sys_time_ms: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            iodepth_level: [0; 7],
            iodepth_submit: [0; 7],
            total_submit: 0,
            iodepth_complete: [0; 7],
            total_complete: 0,
            latency_buckets: LatencyBuckets::default(),
            latency_depth: 1,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
            continue_on_error: false,
            total_err_count: 0,
            first_error: 0,
            nr_zone_resets: 0,
            spans: Vec::new(),
            dir_spans: Default::default(),
            occupancy: None,
            steadystate: None,
        }
    }

    /// Mean of a span (ns), if the job has it.
    pub fn span_mean(&self, name: &str) -> Option<f64> {
        span_mean(&self.spans, name)
    }

    /// Mean of pre + hw + post (ns): the whole of an I/O's life.
    pub fn span_total(&self) -> Option<f64> {
        span_total(&self.spans)
    }

    /// The white paper's software share: (pre + post) / (pre + hw + post) of the means.
    pub fn software_share(&self) -> Option<f64> {
        software_share(&self.spans)
    }

    /// The directions whose spans are printed on their own (`Ddir` index and set): all
    /// with spans when there are two or more, else none (the job's spans say it all).
    pub fn split_spans(&self) -> Vec<(usize, &SpanSet)> {
        let with: Vec<(usize, &SpanSet)> = self
            .dir_spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.iter().any(|(_, h)| h.count() > 0))
            .collect();
        if with.len() > 1 {
            with
        } else {
            Vec::new()
        }
    }

    pub fn dir(&self, d: Ddir) -> &DirStats {
        &self.dirs[d.index()]
    }

    pub fn dir_mut(&mut self, d: Ddir) -> &mut DirStats {
        &mut self.dirs[d.index()]
    }

    /// Convenience for a simulator: accounts one completed I/O the way fio's
    /// `io_completed` does (counters, slat/clat/lat stats and histograms, latency
    /// buckets from clat). `slat_ns` is `None` for synchronous engines (fio does not
    /// sample slat then). Depth distributions, runtimes and bw/iops samples are
    /// filled separately.
    pub fn record_io(&mut self, d: Ddir, bytes: u64, slat_ns: Option<u64>, clat_ns: u64) {
        let lat_ns = clat_ns.saturating_add(slat_ns.unwrap_or(0));
        let ds = self.dir_mut(d);
        ds.io_bytes = ds.io_bytes.wrapping_add(bytes);
        ds.total_ios = ds.total_ios.wrapping_add(1);
        if let Some(s) = slat_ns {
            ds.slat.record(s);
        }
        ds.clat.record(clat_ns);
        ds.lat.record(lat_ns);
        self.latency_buckets.record(clat_ns);
    }

    /// Accounts one completed fsync/fdatasync (JSON `sync`).
    pub fn record_sync(&mut self, lat_ns: u64) {
        self.sync.total_ios = self.sync.total_ios.wrapping_add(1);
        self.sync.lat.record(lat_ns);
    }

    /// Sum of completed read/write/trim I/Os (fio's `ddir_rw_sum(total_io_u)`).
    pub fn total_rw_ios(&self) -> u64 {
        self.dirs
            .iter()
            .fold(0u64, |a, d| a.wrapping_add(d.total_ios))
    }
}

/// A whole run: what fio prints after all jobs finished.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// `fio-3.33`.
    pub fio_version: String,
    /// Unix seconds of the report (caller-supplied, so output is deterministic).
    pub timestamp_s: u64,
    /// Unix milliseconds of the report.
    pub timestamp_ms: u64,
    /// ctime() text without the newline (`Sun Nov 22 09:30:31 2026`); also used on
    /// every job's text block.
    pub time: String,
    /// Options of the global sections (JSON `global options`; absent when empty).
    pub global_options: Vec<(String, String)>,
    /// One entry per fio thread, in job order.
    pub jobs: Vec<JobReport>,
    /// Block-device stats; empty = no `disk_util` section.
    pub disk_util: Vec<DiskUtil>,
    /// Messages fio prints while the jobs start, after `Starting N processes`
    /// (normal format only), e.g. `s: Laying out IO file (1 file / 4MiB)`.
    pub startup_lines: Vec<String>,
    /// The simulator's own run-wide counters, by group (JSON root `flashpath`:
    /// `{"device": {...}, "hpb": {...}}`); empty = no such object.
    pub counters: Vec<(String, Vec<(String, u64)>)>,
    /// How the simulated system was made (JSON root `flashpath.configuration`, and one
    /// line after fio's version in the normal format); `None` = not reported.
    pub configuration: Option<RunConfiguration>,
    /// A signal ended the run early: the report covers the simulated time run until
    /// then (JSON root `flashpath.interrupted`).
    pub interrupted: Option<Interrupted>,
}

/// Where a signal stopped the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interrupted {
    pub signal: i32,
    /// Simulated time when the run stopped, ns.
    pub simulated_ns: u64,
}

impl Interrupted {
    /// The normal format's line, before the reports.
    pub fn line(&self) -> String {
        format!(
            "flashpath: interrupted by signal {} at {:.6} s of simulated time: the reports cover the run until then",
            self.signal,
            self.simulated_ns as f64 / 1e9
        )
    }
}

/// The simulated system a run was made on: enough to make it again.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunConfiguration {
    /// flashpath's version.
    pub version: String,
    /// Device and host preset names (or the preset files given).
    pub device: String,
    pub host: String,
    pub driver: String,
    /// `--precondition` as given, and the layout it gave (`auto` resolves per driver).
    pub precondition: String,
    pub layout: String,
    /// Every `--set FIELD=VALUE`, in order.
    pub sets: Vec<(String, String)>,
    /// `--costs-above-block zero` was given.
    pub zero_above_block: bool,
}

impl RunConfiguration {
    /// The normal format's line: `flashpath-0.1.0: device=... host=... driver=...`.
    pub fn line(&self) -> String {
        let mut l = format!(
            "flashpath-{}: device={} host={} driver={} precondition={}",
            self.version, self.device, self.host, self.driver, self.precondition
        );
        if self.layout != self.precondition {
            l.push_str(&format!(" ({})", self.layout));
        }
        for (f, v) in &self.sets {
            l.push_str(&format!(" --set {f}={v}"));
        }
        if self.zero_above_block {
            l.push_str(" --costs-above-block zero");
        }
        l
    }
}

impl RunReport {
    pub fn new(timestamp_ms: u64, time: impl Into<String>) -> Self {
        Self {
            fio_version: "fio-3.33".into(),
            timestamp_s: timestamp_ms / 1000,
            timestamp_ms,
            time: time.into(),
            global_options: Vec::new(),
            jobs: Vec::new(),
            disk_util: Vec::new(),
            counters: Vec::new(),
            startup_lines: Vec::new(),
            configuration: None,
            interrupted: None,
        }
    }
}
