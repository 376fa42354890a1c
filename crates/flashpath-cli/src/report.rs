//! From the simulator's results to fio's result model: bytes and latencies carry over
//! unchanged (ns), runtimes become ms, bandwidth samples are fio's KiB/s per 500 ms
//! window (bwavgtime), IOPS samples per window likewise.

use flashpath_core::host::block::{DiskStats, KERNEL_HZ};
use flashpath_core::stats::{JobStats, RunResult, Span, Spans, SystemStats, BW_INTERVAL_NS};
use flashpath_fio::report::model::{
    Ddir, DiskUtil, JobHeader, JobReport, LatStat, LatencyBuckets, Occupancy, RunReport, SpanSet,
    SteadyState, UnifiedRw,
};

/// What the report needs to know about a job beyond what the simulator measured.
#[derive(Clone, Debug)]
pub struct JobMeta {
    pub name: String,
    pub groupid: u32,
    pub job_options: Vec<(String, String)>,
    pub header: JobHeader,
    pub subjob_number: u32,
    /// fio's continue_on_error is set (with the bits ignore_error adds): the report
    /// shows the error count.
    pub continue_on_error: bool,
    pub thread: bool,
    pub group_reporting: bool,
    pub unified_rw_reporting: UnifiedRw,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub percentile_list: Vec<f64>,
    pub kb_base: u32,
    pub iodepth: u32,
    /// latency_target (ns), latency_window (µs) and latency_percentile, as fio reports
    /// them with the depth its latency profile found.
    pub latency: (u64, u64, f64),
    /// Statistics the job does not record (gtod_reduce, disable_*).
    pub disabled: Disabled,
    /// The job's periodic syncs are fdatasyncs (fdatasync=N): fio counts them as
    /// DDIR_DATASYNC, so its JSON `sync.total_ios` (total_io_u[DDIR_SYNC]) stays 0 while
    /// their latencies fill `sync.lat_ns`.
    pub datasync: bool,
}

/// fio's disable_lat, disable_clat, disable_slat and disable_bw_measurement (all four
/// with gtod_reduce): account_io_completion records no such samples, so fio's report
/// shows none (its printers skip a statistic without samples; JSON has zeros), and the
/// latency distribution, kept with the clat samples, is empty too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Disabled {
    pub lat: bool,
    pub clat: bool,
    pub slat: bool,
    pub bw: bool,
}

/// The report's clock: simulated runs have no wall-clock time, and output must be the
/// same bytes for the same inputs, so the report is stamped with the Unix epoch.
pub const REPORT_TIME: &str = "Thu Jan  1 00:00:00 1970";

fn job_report(meta: &JobMeta, s: &JobStats) -> JobReport {
    let mut r = JobReport::new(meta.name.clone(), meta.groupid);
    r.job_options = meta.job_options.clone();
    r.header = meta.header.clone();
    r.subjob_number = meta.subjob_number;
    r.thread = meta.thread;
    r.group_reporting = meta.group_reporting;
    r.unified_rw_reporting = meta.unified_rw_reporting;
    r.clat_percentiles = meta.clat_percentiles;
    r.lat_percentiles = meta.lat_percentiles;
    r.percentile_list = meta.percentile_list.clone();
    r.kb_base = meta.kb_base;
    r.latency_depth = s.lat_depth.unwrap_or(meta.iodepth);
    (r.latency_target, r.latency_window, r.latency_percentile) = meta.latency;
    r.continue_on_error = meta.continue_on_error;
    r.total_err_count = s.errors.total;
    r.first_error = s.errors.first;
    if let Some(f) = &s.verify_failure {
        // fio's td_verror(EILSEQ) where the failing read was reaped.
        r.error = flashpath_core::sim::EILSEQ;
        r.verror = f.verror().to_string();
    } else if s.error.is_none() && meta.continue_on_error && s.errors.first != 0 {
        // sum_thread_stats: a job that went on after its errors shows the first, with
        // the last td_verror text (none when io_completed cleared the error first).
        r.error = s.errors.first;
        r.verror = s.last_verror.as_ref().map(fio_verror).unwrap_or_default();
    }
    // fio (backend.c update_runtime): elapsed microseconds rounded up to milliseconds.
    let runtime_ms = (s.runtime_ns / 1000).div_ceil(1000);
    let full_windows = (s.runtime_ns / BW_INTERVAL_NS) as usize;
    let mut buckets = LatencyBuckets::default();
    for d in [Ddir::Read, Ddir::Write, Ddir::Trim] {
        let src = match d {
            Ddir::Read => &s.dirs[0],
            Ddir::Write => &s.dirs[1],
            Ddir::Trim => &s.trim,
        };
        let dst = r.dir_mut(d);
        dst.io_bytes = src.bytes;
        dst.total_ios = src.ios;
        let dir_runtime_ms = match d {
            Ddir::Read => s.dir_runtime_ns[0],
            Ddir::Write => s.dir_runtime_ns[1],
            Ddir::Trim => None,
        }
        .map_or(runtime_ms, |ns| (ns / 1000).div_ceil(1000));
        // thread_main: update_runtime only for a direction that moved bytes.
        dst.runtime_ms = if src.bytes > 0 { dir_runtime_ms } else { 0 };
        let off = meta.disabled;
        let hist = |h: &flashpath_hist::LatHist, disabled: bool| {
            LatStat::from_hist(if disabled {
                flashpath_hist::LatHist::default()
            } else {
                h.clone()
            })
        };
        dst.slat = hist(&src.slat, off.slat);
        dst.clat = hist(&src.clat, off.clat);
        dst.lat = hist(&src.lat, off.lat);
        // fio samples only complete windows; a run shorter than one window has none.
        (dst.bw, dst.iops) = src.windows.samples(if off.bw { 0 } else { full_windows });
        if !off.clat {
            buckets.merge(&LatencyBuckets::from_hist(&src.clat));
        }
    }
    r.latency_buckets = buckets;
    if s.enospc_write.is_some() {
        // fill_device's failed write: issued (fio's total_io_u), with no bytes.
        r.dir_mut(Ddir::Write).total_ios += 1;
    }
    if s.sync_lat.count() > 0 {
        r.sync.total_ios = if meta.datasync { 0 } else { s.sync_lat.count() };
        r.sync.lat = LatStat::from_hist(s.sync_lat.clone());
    }
    r.job_runtime_ms = runtime_ms;
    r.sys_time_ms = s.sys_ns / 1_000_000;
    r.usr_time_ms = s.usr_ns / 1_000_000;
    r.ctx = s.ctx;
    r.iodepth_level = s.depth_hist;
    r.iodepth_submit = s.submit_hist;
    r.total_submit = s.submit_hist.iter().sum();
    r.iodepth_complete = s.complete_hist;
    r.total_complete = s.complete_hist.iter().sum();
    r.steadystate = s.steadystate.as_ref().map(|ss| SteadyState {
        iops: ss.criterion.is_iops(),
        slope: ss.criterion.is_slope(),
        pct: ss.pct,
        limit: ss.limit,
        dur: ss.dur_s,
        attained: ss.attained,
        criterion: ss.criterion_value,
        max_deviation: ss.max_deviation,
        slope_value: ss.slope,
        bw: ss.bw.clone(),
        iops_data: ss.iops.clone(),
    });
    r.spans = span_set(&s.spans);
    r.occupancy = s.occupancy.as_ref().map(|o| Occupancy {
        window_ns: o.window_ns,
        core_busy_ns: o.core_busy_ns.clone(),
        hw_busy_ns: o.hw_busy_ns,
    });
    for (dst, src) in r.dir_spans.iter_mut().zip(&s.dir_spans) {
        if let Some(src) = src {
            *dst = span_set(src);
        }
    }
    r
}

fn span_set(s: &Spans) -> SpanSet {
    Span::ALL
        .iter()
        .map(|&sp| (sp.name(), s.get(sp).clone()))
        .collect()
}

/// Builds fio's report for a run.
pub fn build(
    metas: &[JobMeta],
    res: &RunResult,
    global_options: Vec<(String, String)>,
) -> RunReport {
    let mut rep = RunReport::new(0, REPORT_TIME);
    rep.global_options = global_options;
    for (meta, s) in metas.iter().zip(&res.jobs) {
        let mut jr = job_report(meta, s);
        jr.elapsed_s = s.end_ns.div_ceil(1_000_000_000);
        if let Some(e) = &s.error {
            // td_verror's text; fio prints it when the thread exits, after `Starting`.
            jr.error = e.errno;
            jr.verror = fio_verror(e);
            rep.startup_lines.push(format!(
                "fio: pid={}, err={}/{}",
                jr.pid, jr.error, jr.verror
            ));
        }
        rep.jobs.push(jr);
    }
    rep.counters = counters(&res.system);
    rep
}

/// The report's jobs as far as the options tell (no statistics): what fio prints
/// before the run (`flashpath_fio::report::starting_string`).
pub fn build_header(metas: &[JobMeta]) -> RunReport {
    let mut rep = RunReport::new(0, REPORT_TIME);
    let none = JobStats::default();
    rep.jobs = metas.iter().map(|m| job_report(m, &none)).collect();
    rep
}

/// fio's `verror` for a job error: `file:<fio source>:<line>, func=<func>,
/// error=<strerror>`, as fio 3.33 prints it (td_verror records __FILE__ and __LINE__).
pub fn fio_verror(e: &flashpath_core::stats::JobError) -> String {
    let at = match e.func {
        "check_min_rate" => "backend.c:1131",
        "max latency exceeded" => "io_u.c:1432",
        "td_io_queue" => "ioengines.c:399",
        _ => "backend.c",
    };
    let strerror = match e.errno {
        5 => "Input/output error",
        25 => "Inappropriate ioctl for device",
        110 => "Connection timed out",
        _ => "Unknown error",
    };
    format!("file:{at}, func={}, error={strerror}", e.func)
}

/// The run's device and HPB counters (JSON root `flashpath`), preconditioning included.
pub fn counters(sys: &SystemStats) -> Vec<(String, Vec<(String, u64)>)> {
    let d = &sys.device;
    let mut device = vec![
        ("map_hits".to_string(), d.map_hits),
        ("map_misses".to_string(), d.map_misses),
        ("nand_map_reads".to_string(), d.nand_map_reads),
        ("nand_page_reads".to_string(), d.nand_page_reads),
        ("read_retry_reads".to_string(), d.read_retry_reads),
        ("read_retry_steps".to_string(), d.read_retry_steps),
    ];
    let mut groups = Vec::new();
    if d.page_type_reads[1] + d.page_type_reads[2] > 0 {
        // Cells with more than one page type (MLC, TLC): the reads each type took.
        let names = flashpath_core::device::nand_timing::PAGE_TYPES;
        for (name, &n) in names.iter().zip(&d.page_type_reads) {
            device.push((format!("nand_page_reads_{name}"), n));
        }
    }
    if d.read_ahead_discarded_pages > 0 {
        device.push((
            "read_ahead_discarded_pages".to_string(),
            d.read_ahead_discarded_pages,
        ));
    }
    if d.wb != Default::default() {
        // WriteBooster's SLC buffer (device/write_booster.rs), in 4 KiB slots.
        let w = d.wb;
        device.extend([
            ("wb_slc_slots".to_string(), w.slc_slots),
            ("wb_tlc_slots".to_string(), w.tlc_slots),
            ("wb_flushed_slots".to_string(), w.flushed_slots),
            ("wb_flush_rows".to_string(), w.flush_rows),
            ("wb_slc_reads".to_string(), w.slc_reads),
            ("wb_used_slots".to_string(), w.used_slots),
            ("wb_used_peak_slots".to_string(), w.used_peak_slots),
        ]);
    }
    if d.housekeeping_moves > 0 {
        device.extend([
            ("housekeeping_moves".to_string(), d.housekeeping_moves),
            ("housekeeping_slots".to_string(), d.housekeeping_slots),
        ]);
    }
    if let Some(a) = &sys.au {
        device.extend([
            ("gc_victims".to_string(), d.gc_victims),
            ("gc_copies".to_string(), d.gc_copies),
            ("erases".to_string(), d.erases),
            ("write_stall_ns".to_string(), d.write_stall_ns),
            ("au_closes".to_string(), a.closes),
            ("au_merges".to_string(), a.merges),
            ("small_writes".to_string(), a.small_writes),
            ("log_cleans".to_string(), a.log_cleans),
            ("au_table_misses".to_string(), a.table_misses),
        ]);
        if a.small_write_rmw_reads > 0 {
            device.push(("small_write_rmw_reads".to_string(), a.small_write_rmw_reads));
        }
    }
    if sys.au.is_none() && d.gc_victims > 0 {
        // Page-mapped GC and its pacing (device/gc_policy.rs), when GC ran.
        device.extend([
            ("gc_victims".to_string(), d.gc_victims),
            ("gc_copies".to_string(), d.gc_copies),
            ("erases".to_string(), d.erases),
            ("gc_host_holds".to_string(), d.gc_host_holds),
            ("gc_host_hold_ns".to_string(), d.gc_host_hold_ns),
            ("gc_slice_ends".to_string(), d.gc_slice_ends),
            ("gc_urgent_steps".to_string(), d.gc_urgent_steps),
            ("write_stall_ns".to_string(), d.write_stall_ns),
        ]);
    }
    if let Some(h) = &sys.hpb {
        device.extend([
            ("hpb_entry_hits".to_string(), d.hpb_entry_hits),
            ("hpb_entry_stale".to_string(), d.hpb_entry_stale),
            ("hpb_read_buffers".to_string(), d.hpb_read_buffers),
            ("hpb_write_buffers".to_string(), d.hpb_write_buffers),
            ("hpb_hint_activations".to_string(), d.hpb_hint_activations),
            (
                "hpb_hint_inactivations".to_string(),
                d.hpb_hint_inactivations,
            ),
        ]);
        let hpb = [
            ("hits", h.hits),
            ("miss_inactive", h.miss_inactive),
            ("miss_invalid", h.miss_invalid),
            ("miss_dirty", h.miss_dirty),
            ("too_long", h.too_long),
            ("map_loads", h.map_req),
            ("unmaps", h.umap_req),
            ("activations", h.activations),
            ("inactivations", h.inactivations),
            ("activation_refused", h.activation_refused),
            ("hint_responses", h.rb_noti),
            ("hint_activations", h.rb_active),
            ("hint_inactivations", h.rb_inactive),
            ("map_bytes_peak", h.map_bytes_peak),
        ];
        groups.push((
            "hpb".to_string(),
            hpb.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ));
    }
    groups.insert(0, ("device".to_string(), device));
    groups
}

/// fio's disk statistics of the simulated disk `name`: the difference of its two samples
/// of the stat file (diskutil.c), each field as diskstats_show prints it: request times
/// in ms rounded down from ns (div_u64(nsecs, NSEC_PER_MSEC)), time_in_queue from
/// jiffies (jiffies_to_msecs), io_ticks in ms rounded down; util against the ms fio's
/// clock saw pass between the samples.
pub fn disk_util(name: &str, sys: &SystemStats) -> DiskUtil {
    let (a, b) = (&sys.disk_start, &sys.disk_end);
    let ms = |ns: u64| ns / 1_000_000;
    let diff = |f: fn(&DiskStats) -> u64| f(b) - f(a);
    let in_queue = |d: &DiskStats| d.time_in_queue_jiffies * (1000 / KERNEL_HZ);
    let io_ticks_ms = ms(b.io_ticks_ns) - ms(a.io_ticks_ns);
    DiskUtil {
        name: name.to_string(),
        read_ios: diff(|d| d.ios[0]),
        write_ios: diff(|d| d.ios[1]),
        read_merges: diff(|d| d.merges[0]),
        write_merges: diff(|d| d.merges[1]),
        read_ticks: ms(b.ticks_ns[0]) - ms(a.ticks_ns[0]),
        write_ticks: ms(b.ticks_ns[1]) - ms(a.ticks_ns[1]),
        in_queue: in_queue(b) - in_queue(a),
        util: DiskUtil::util_from_ticks(io_ticks_ms, ms(b.at_ns - a.at_ns)),
    }
}
