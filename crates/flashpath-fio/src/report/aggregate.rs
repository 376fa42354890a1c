//! group_reporting and the per-group "Run status group N" sums, as fio's
//! `__show_run_stats` / `sum_thread_stats` compute them.
//!
//! Every report entry (a job, or a run of consecutive `group_reporting` jobs of one
//! group) is built by summing its members into an empty stat, even when it has one
//! member: that is where `unified_rw_reporting=mixed` folds all directions into one.

use super::model::{IoStat, JobReport, LatStat, SpanSet, UnifiedRw};

/// One printed entry: a job, or several merged by `group_reporting`.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Summed stats; name/description/pid/header of the first member, options,
    /// percentile settings and latency target of the last (as fio does).
    pub ts: JobReport,
    /// Number of merged threads (`jobs=N`).
    pub members: u32,
    /// fio's `unified_rw_rep` of the entry (of its first member).
    pub unified: UnifiedRw,
}

/// fio's `struct group_run_stats` for one group id.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRunStats {
    pub groupid: u32,
    /// Per direction: max/min runtime (ms), min/max bandwidth (bytes/s), io bytes,
    /// aggregate bandwidth (bytes/s = io bytes × 1000 / max runtime).
    pub max_run: [u64; 3],
    pub min_run: [u64; 3],
    pub min_bw: [u64; 3],
    pub max_bw: [u64; 3],
    pub iobytes: [u64; 3],
    pub agg: [u64; 3],
    pub kb_base: u32,
    pub unit_bits: bool,
    pub sig_figs: u32,
    /// Bitwise OR of the entries' `unified_rw_rep` codes (as fio keeps it).
    pub unified_rw_rep: u8,
}

impl GroupRunStats {
    fn new(groupid: u32) -> Self {
        Self {
            groupid,
            max_run: [0; 3],
            min_run: [u64::MAX; 3],
            min_bw: [u64::MAX; 3],
            max_bw: [0; 3],
            iobytes: [0; 3],
            agg: [0; 3],
            kb_base: 1024,
            unit_bits: false,
            sig_figs: 4,
            unified_rw_rep: 0,
        }
    }
}

/// An empty stat to sum members into (fio's `init_thread_stat`).
fn empty_like(first: &JobReport) -> JobReport {
    let mut ts = JobReport::new(first.name.clone(), first.groupid);
    ts.description = first.description.clone();
    ts.pid = first.pid;
    ts.header = first.header.clone();
    ts.subjob_number = first.subjob_number;
    ts.thread = first.thread;
    ts.eta = first.eta;
    ts.elapsed_s = first.elapsed_s;
    ts.kb_base = first.kb_base;
    ts.unit_bits = first.unit_bits;
    ts.sig_figs = first.sig_figs;
    ts.unified_rw_reporting = first.unified_rw_reporting;
    ts.group_reporting = first.group_reporting;
    ts.latency_depth = 0;
    ts
}

/// fio's `sum_thread_stats(dst, src)`; `mixed` folds every direction into index 0.
pub fn sum_thread_stats(dst: &mut JobReport, src: &JobReport, mixed: bool) {
    for l in 0..3 {
        let d = if mixed { 0 } else { l };
        let s = &src.dirs[l];
        let t = &mut dst.dirs[d];
        t.clat.merge(&s.clat);
        t.slat.merge(&s.slat);
        t.lat.merge(&s.lat);
        t.bw.sum(&s.bw, true);
        t.iops.sum(&s.iops, true);
        t.io_bytes = t.io_bytes.wrapping_add(s.io_bytes);
        if t.runtime_ms < s.runtime_ms {
            t.runtime_ms = s.runtime_ms;
        }
        t.total_ios = t.total_ios.wrapping_add(s.total_ios);
        t.short_ios = t.short_ios.wrapping_add(s.short_ios);
        t.drop_ios = t.drop_ios.wrapping_add(s.drop_ios);
    }
    dst.sync.lat.merge(&src.sync.lat);
    dst.sync.total_ios = dst.sync.total_ios.wrapping_add(src.sync.total_ios);
    dst.usr_time_ms = dst.usr_time_ms.wrapping_add(src.usr_time_ms);
    dst.sys_time_ms = dst.sys_time_ms.wrapping_add(src.sys_time_ms);
    dst.ctx = dst.ctx.wrapping_add(src.ctx);
    dst.majf = dst.majf.wrapping_add(src.majf);
    dst.minf = dst.minf.wrapping_add(src.minf);
    for k in 0..7 {
        dst.iodepth_level[k] = dst.iodepth_level[k].wrapping_add(src.iodepth_level[k]);
        dst.iodepth_submit[k] = dst.iodepth_submit[k].wrapping_add(src.iodepth_submit[k]);
        dst.iodepth_complete[k] = dst.iodepth_complete[k].wrapping_add(src.iodepth_complete[k]);
    }
    dst.latency_buckets.merge(&src.latency_buckets);
    dst.job_runtime_ms = dst.job_runtime_ms.wrapping_add(src.job_runtime_ms);
    dst.total_submit = dst.total_submit.wrapping_add(src.total_submit);
    dst.total_complete = dst.total_complete.wrapping_add(src.total_complete);
    dst.nr_zone_resets = dst.nr_zone_resets.wrapping_add(src.nr_zone_resets);
    merge_spans(&mut dst.spans, &src.spans);
    // A group's runtime is its longest job's: so is the window its busy times cover.
    if let Some(o) = &src.occupancy {
        if dst
            .occupancy
            .as_ref()
            .is_none_or(|d| d.window_ns < o.window_ns)
        {
            dst.occupancy = Some(o.clone());
        }
    }
    // A unified (mixed) report has no directions to show spans of.
    if !mixed {
        for (d, s) in dst.dir_spans.iter_mut().zip(&src.dir_spans) {
            merge_spans(d, s);
        }
    }
}

fn merge_spans(dst: &mut SpanSet, src: &SpanSet) {
    for (name, h) in src {
        match dst.iter_mut().find(|(n, _)| n == name) {
            Some((_, d)) => d.merge(h),
            None => dst.push((name, h.clone())),
        }
    }
}

/// The `mixed` view of an entry (fio's `gen_mixed_ddir_stats_from_ts`), used for
/// `unified_rw_reporting=both`.
pub fn mixed_view(ts: &JobReport) -> JobReport {
    let mut m = empty_like(ts);
    m.clat_percentiles = ts.clat_percentiles;
    m.lat_percentiles = ts.lat_percentiles;
    m.slat_percentiles = ts.slat_percentiles;
    m.percentile_list = ts.percentile_list.clone();
    m.percentile_precision = ts.percentile_precision;
    m.unified_rw_reporting = UnifiedRw::Mixed;
    sum_thread_stats(&mut m, ts, true);
    m
}

/// Builds the printed entries (group_reporting applied) and the per-group sums.
/// Groups are indexed by group id, `0..=max groupid`.
pub fn aggregate(jobs: &[JobReport]) -> (Vec<Entry>, Vec<GroupRunStats>) {
    let mut entries: Vec<Entry> = Vec::new();
    let mut last_group: Option<u32> = None;
    for td in jobs {
        let start_new = match entries.last() {
            None => true,
            Some(_) => !td.group_reporting || last_group != Some(td.groupid),
        };
        last_group = Some(td.groupid);
        if start_new {
            entries.push(Entry {
                ts: empty_like(td),
                members: 0,
                unified: td.unified_rw_reporting,
            });
        }
        let Some(e) = entries.last_mut() else {
            continue;
        };
        let ts = &mut e.ts;
        ts.clat_percentiles = td.clat_percentiles;
        ts.lat_percentiles = td.lat_percentiles;
        ts.slat_percentiles = td.slat_percentiles;
        ts.percentile_list = td.percentile_list.clone();
        ts.percentile_precision = td.percentile_precision;
        ts.job_options = td.job_options.clone();
        ts.continue_on_error = td.continue_on_error;
        ts.total_err_count = ts.total_err_count.wrapping_add(td.total_err_count);
        ts.first_error = td.first_error;
        if ts.error == 0 {
            if td.error == 0 && td.continue_on_error && td.first_error != 0 {
                ts.error = td.first_error;
                ts.verror = td.verror.clone();
            } else if td.error != 0 {
                ts.error = td.error;
                ts.verror = td.verror.clone();
            }
        }
        ts.latency_depth = td.latency_depth;
        ts.latency_target = td.latency_target;
        ts.latency_percentile = td.latency_percentile;
        ts.latency_window = td.latency_window;
        let mixed = e.unified == UnifiedRw::Mixed;
        sum_thread_stats(ts, td, mixed);
        // stat.c: the steady state of the group is its last job's (or none).
        ts.steadystate = td.steadystate.clone();
        e.members += 1;
    }
    for e in &mut entries {
        e.ts.unified_rw_reporting = e.unified;
        sort_percentiles(&mut e.ts.percentile_list);
    }

    // fio prints every group id from 0 to the highest (ids are consecutive in fio);
    // an absurd id from a caller only gets the groups that exist.
    let max_gid = jobs.iter().map(|j| j.groupid).max();
    let mut groups: Vec<GroupRunStats> = match max_gid {
        None => Vec::new(),
        Some(m) if (m as usize) <= jobs.len() + 1024 => (0..=m).map(GroupRunStats::new).collect(),
        Some(_) => {
            let mut ids: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().map(GroupRunStats::new).collect()
        }
    };
    for e in &entries {
        let ts = &e.ts;
        let Some(rs) = groups.iter_mut().find(|g| g.groupid == ts.groupid) else {
            continue;
        };
        rs.kb_base = ts.kb_base;
        rs.unit_bits = ts.unit_bits;
        rs.sig_figs = ts.sig_figs;
        rs.unified_rw_rep |= e.unified.code();
        for j in 0..3 {
            let d = &ts.dirs[j];
            if d.runtime_ms == 0 {
                continue;
            }
            if d.runtime_ms < rs.min_run[j] || rs.min_run[j] == 0 {
                rs.min_run[j] = d.runtime_ms;
            }
            if d.runtime_ms > rs.max_run[j] {
                rs.max_run[j] = d.runtime_ms;
            }
            let bw = mul_div(d.io_bytes, 1000, d.runtime_ms);
            if bw < rs.min_bw[j] {
                rs.min_bw[j] = bw;
            }
            if bw > rs.max_bw[j] {
                rs.max_bw[j] = bw;
            }
            rs.iobytes[j] = rs.iobytes[j].wrapping_add(d.io_bytes);
        }
    }
    for rs in &mut groups {
        for d in 0..3 {
            if rs.max_run[d] != 0 {
                rs.agg[d] = mul_div(rs.iobytes[d], 1000, rs.max_run[d]);
            }
        }
    }
    (entries, groups)
}

/// `a * b / c` in 64-bit unsigned arithmetic as fio writes it (wrapping like C), 0 when c is 0.
pub(crate) fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return 0;
    }
    a.wrapping_mul(b) / c
}

/// fio sorts `percentile_list` in place (`qsort` with `double_cmp`), so the JSON keys
/// come out sorted; the list ends at the first 0 (fio's terminator) and keeps at most 20.
pub(crate) fn sort_percentiles(list: &mut Vec<f64>) {
    if let Some(pos) = list.iter().position(|&p| p == 0.0) {
        list.truncate(pos);
    }
    list.truncate(20);
    list.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
}

/// Percentiles of a latency stat with fio's `calc_clat_percentiles` (nr = samples).
pub(crate) fn lat_percentiles(l: &LatStat, list: &[f64]) -> Vec<u64> {
    flashpath_hist::percentiles_of(&l.hist.counts()[..], l.stat.samples, list)
}

/// The value printed for an `IoStat` (`calc_lat` or zeros).
pub(crate) fn calc_or_zero(s: &IoStat) -> (u64, u64, f64, f64) {
    s.calc().unwrap_or((0, 0, 0.0, 0.0))
}

/// The group stats of group `gid`.
pub fn find_group(groups: &[GroupRunStats], gid: u32) -> Option<&GroupRunStats> {
    groups
        .get(gid as usize)
        .filter(|g| g.groupid == gid)
        .or_else(|| groups.iter().find(|g| g.groupid == gid))
}
