//! Normal (human-readable) output, fio 3.33's `show_thread_status_normal`,
//! `show_group_stats` and the disk stats section, plus the start-up lines fio prints
//! before the run (`name: (g=0): rw=...`, `fio-3.33`, `Starting N processes`).

use std::fmt::Write as _;
use std::io::{self, Write};

use super::aggregate::{aggregate, lat_percentiles, mixed_view, Entry, GroupRunStats};
use super::fmt::{cf, cfw, num2str, scale_lat, N2s};
use super::json::{agg_percent, calc_dist, calc_lat_pct, cpu_percent};
use super::model::{
    software_share, span_total, Ddir, IoStat, JobReport, RunReport, SpanSet, UnifiedRw,
};

/// The lines fio prints while starting the jobs (only with the normal format): the
/// [`starting_string`], then the run's start-up lines (`RunReport::startup_lines`,
/// what fio prints while the jobs run).
pub fn header_string(r: &RunReport) -> String {
    let mut s = starting_string(r);
    for l in &r.startup_lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// The lines fio prints before the jobs run (normal format): each job's line, the
/// version, `Starting N process(es)`. They depend on the jobs' options only, so a
/// front end can print them before the run.
pub fn starting_string(r: &RunReport) -> String {
    let mut s = String::new();
    for td in &r.jobs {
        if td.subjob_number == 0 {
            let h = &td.header;
            let b = |v: u64| num2str(v, td.sig_figs, 1, true, N2s::Byte);
            let _ = writeln!(
                s,
                "{}: (g={}): rw={}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}",
                td.name,
                td.groupid,
                h.rw,
                b(h.bs[0].0),
                b(h.bs[0].1),
                b(h.bs[1].0),
                b(h.bs[1].1),
                b(h.bs[2].0),
                b(h.bs[2].1),
                h.ioengine,
                h.iodepth
            );
        } else if td.subjob_number == 1 {
            s.push_str("...\n");
        }
    }
    let _ = writeln!(s, "{}", r.fio_version);
    if let Some(c) = &r.configuration {
        let _ = writeln!(s, "{}", c.line());
    }
    let threads = r.jobs.iter().filter(|j| j.thread).count();
    let procs = r.jobs.len() - threads;
    s.push_str("Starting ");
    if threads > 0 {
        let _ = write!(
            s,
            "{} thread{}",
            threads,
            if threads > 1 { "s" } else { "" }
        );
    }
    if procs > 0 {
        if threads > 0 {
            s.push_str(" and ");
        }
        let _ = write!(s, "{} process{}", procs, if procs > 1 { "es" } else { "" });
    }
    s.push('\n');
    s
}

fn units(ts_bits: bool) -> N2s {
    if ts_bits {
        N2s::BitPerSec
    } else {
        N2s::BytePerSec
    }
}

fn display_lat(s: &mut String, name: &str, st: &IoStat) {
    let Some((min, max, mean, dev)) = st.calc() else {
        return;
    };
    let (base, min, max, mean, dev) = scale_lat(min, max, mean, dev);
    let _ = writeln!(
        s,
        "    {} ({}): min={}, max={}, avg={}, stdev={}",
        name,
        base,
        num2str(min, 6, 1, false, N2s::None),
        num2str(max, 6, 1, false, N2s::None),
        cfw(mean, 5, 2),
        cfw(dev, 5, 2)
    );
}

/// fio's `show_clat_percentiles`.
fn show_percentiles(s: &mut String, vals: &[u64], list: &[f64], precision: u32, pre: &str) {
    let len = vals.len().min(list.len());
    if len == 0 {
        return;
    }
    let minv = vals[..len].iter().copied().min().unwrap_or(0);
    let maxv = vals[..len].iter().copied().max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000u64, "usec")
    } else {
        (0, 1u64, "nsec")
    };
    let _ = write!(s, "    {} percentiles ({}):\n     |", pre, unit);
    let scaled = maxv / divisor;
    let time_width = if scaled == 0 {
        5
    } else {
        ((scaled as f64).log10() + 1.0) as usize
    }
    .max(5);
    let precision = precision.min(20) as usize;
    let per_line = (80 - 7) / (precision + 10 + time_width);
    for j in 0..len {
        if j != 0 && j % per_line == 0 {
            s.push_str("     |");
        }
        let is_last = j == len - 1;
        let mut v = vals[j];
        for _ in 0..scale_down {
            v = v.saturating_add(999) / 1000;
        }
        let _ = write!(
            s,
            " {}th=[{:>tw$}]{}",
            cfw(list[j], precision + 3, precision),
            v,
            if is_last { '\n' } else { ',' },
            tw = time_width
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            s.push('\n');
        }
    }
}

/// `both_mixed`: the extra `mixed` block of `unified_rw_reporting=both`, which fio
/// 3.33 prints from a zero-initialised stat whose `sig_figs` and `unit_base` are 0, so
/// its first line reads `mixed: IOPS=0, BW=0 (0)(0B/..msec)` (reproduced as is).
fn show_ddir_status(
    s: &mut String,
    rs: Option<&GroupRunStats>,
    ts: &JobReport,
    d: usize,
    mixed_label: bool,
    both_mixed: bool,
) {
    let ds = &ts.dirs[d];
    if ds.runtime_ms == 0 {
        return;
    }
    let i2p = rs.map_or(ts.kb_base, |r| r.kb_base).is_power_of_two();
    let runt = ds.runtime_ms;
    let bw = super::aggregate::mul_div(ds.io_bytes, 1000, runt);
    let (sig_figs, bw_units) = if both_mixed {
        (0, N2s::None)
    } else {
        (ts.sig_figs, units(ts.unit_bits))
    };
    let io_p = num2str(ds.io_bytes, sig_figs, 1, i2p, N2s::Byte);
    let bw_p = num2str(bw, sig_figs, 1, i2p, bw_units);
    let bw_p_alt = num2str(bw, sig_figs, 1, !i2p, bw_units);
    let iops = super::aggregate::mul_div(ds.total_ios, 1000, runt);
    let iops_p = num2str(iops, sig_figs, 1, false, N2s::None);
    let post = if d == Ddir::Write.index() && !mixed_label {
        format!("; {} zone resets", ts.nr_zone_resets)
    } else {
        String::new()
    };
    let name = if mixed_label {
        "mixed"
    } else {
        Ddir::from_index(d).map_or("read", Ddir::name)
    };
    let _ = writeln!(
        s,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}",
        name, iops_p, bw_p, bw_p_alt, io_p, ds.runtime_ms, post
    );
    display_lat(s, "slat", &ds.slat.stat);
    display_lat(s, "clat", &ds.clat.stat);
    display_lat(s, " lat", &ds.lat.stat);
    for (on, l, pre) in [
        (ts.slat_percentiles, &ds.slat, "slat"),
        (ts.clat_percentiles, &ds.clat, "clat"),
        (ts.lat_percentiles, &ds.lat, "lat"),
    ] {
        if on && l.stat.samples > 0 {
            let vals = lat_percentiles(l, &ts.percentile_list);
            show_percentiles(s, &vals, &ts.percentile_list, ts.percentile_precision, pre);
        }
    }
    if let Some((min, max, mean, dev)) = ds.bw.calc() {
        let fkb_base = ts.kb_base as f64;
        let bits = rs.map_or(ts.unit_bits, |r| r.unit_bits);
        let mut bw_str = match (bits, i2p) {
            (true, true) => "Kibit",
            (true, false) => "kbit",
            (false, true) => "KiB",
            (false, false) => "kB",
        };
        let p_of_agg = agg_percent(rs, d, mean);
        let (mut min, mut max, mut mean, mut dev) = (min as f64, max as f64, mean, dev);
        if bits {
            min *= 8.0;
            max *= 8.0;
            mean *= 8.0;
            dev *= 8.0;
        }
        if mean > fkb_base * fkb_base {
            min /= fkb_base;
            max /= fkb_base;
            mean /= fkb_base;
            dev /= fkb_base;
            bw_str = if bits { "Mibit" } else { "MiB" };
        }
        // fio stores the scaled min/max back into unsigned long long variables.
        let _ = writeln!(
            s,
            "   bw ({:>5}/s): min={:>5}, max={:>5}, per={}%, avg={}, stdev={}, samples={}",
            bw_str,
            min as u64,
            max as u64,
            cf(p_of_agg, 2),
            cfw(mean, 5, 2),
            cfw(dev, 5, 2),
            ds.bw.samples
        );
    }
    if let Some((min, max, mean, dev)) = ds.iops.calc() {
        let _ = writeln!(
            s,
            "   iops        : min={:>5}, max={:>5}, avg={}, stdev={}, samples={}",
            min,
            max,
            cfw(mean, 5, 2),
            cfw(dev, 5, 2),
            ds.iops.samples
        );
    }
}

fn show_lat(s: &mut String, vals: &[f64], msg: &str) {
    const RANGES: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (i, &v) in vals.iter().enumerate() {
        if v <= 0.0 || v.is_nan() {
            continue;
        }
        shown = true;
        if new_line {
            if line != 0 {
                s.push('\n');
            }
            let _ = write!(s, "  lat ({})   : ", msg);
            new_line = false;
            line = 0;
        }
        if line != 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}{}%", RANGES[i], cf(v, 2));
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        s.push('\n');
    }
}

/// fio's `strerror` text for the `errors` line.
pub(crate) fn strerror(e: i32) -> String {
    let s = match e {
        0 => "Success",
        1 => "Operation not permitted",
        2 => "No such file or directory",
        4 => "Interrupted system call",
        5 => "Input/output error",
        6 => "No such device or address",
        9 => "Bad file descriptor",
        11 => "Resource temporarily unavailable",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        16 => "Device or resource busy",
        22 => "Invalid argument",
        25 => "Inappropriate ioctl for device",
        28 => "No space left on device",
        30 => "Read-only file system",
        61 => "No data available",
        84 => "Invalid or incomplete multibyte or wide character",
        95 => "Operation not supported",
        110 => "Connection timed out",
        121 => "Remote I/O error",
        _ => return format!("Unknown error {}", e),
    };
    s.to_string()
}

fn show_thread_status(s: &mut String, e: &Entry, rs: Option<&GroupRunStats>, time: &str) {
    let ts = &e.ts;
    let any_bytes = ts.dirs.iter().any(|d| d.io_bytes != 0);
    if !any_bytes && ts.total_rw_ios() == 0 {
        return;
    }
    if ts.error == 0 {
        let _ = writeln!(
            s,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
            ts.name, ts.groupid, e.members, ts.error, ts.pid, time
        );
    } else {
        let _ = writeln!(
            s,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={}: {}",
            ts.name, ts.groupid, e.members, ts.error, ts.verror, ts.pid, time
        );
    }
    if !ts.description.is_empty() {
        let _ = writeln!(s, "  Description  : [{}]", ts.description);
    }
    let mixed = e.unified == UnifiedRw::Mixed;
    for d in 0..3 {
        if ts.dirs[d].io_bytes != 0 {
            show_ddir_status(s, rs, ts, d, mixed, false);
        }
    }
    if e.unified == UnifiedRw::Both {
        let m = mixed_view(ts);
        show_ddir_status(s, rs, &m, 0, true, true);
    }
    let total = ts.total_rw_ios();
    let lb = &ts.latency_buckets;
    show_lat(s, &calc_lat_pct(&lb.ns, total), "nsec");
    show_lat(s, &calc_lat_pct(&lb.us, total), "usec");
    show_lat(s, &calc_lat_pct(&lb.ms, total), "msec");
    if ts.sync.lat.stat.samples > 0 {
        s.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(s, "sync", &ts.sync.lat.stat);
        let vals = lat_percentiles(&ts.sync.lat, &ts.percentile_list);
        show_percentiles(
            s,
            &vals,
            &ts.percentile_list,
            ts.percentile_precision,
            "sync",
        );
    }
    let (usr, sys) = cpu_percent(ts);
    let _ = writeln!(
        s,
        "  cpu          : usr={}%, sys={}%, ctx={}, majf={}, minf={}",
        cf(usr, 2),
        cf(sys, 2),
        ts.ctx,
        ts.majf,
        ts.minf
    );
    let d = calc_dist(&ts.iodepth_level, total);
    let _ = writeln!(
        s,
        "  IO depths    : 1={}%, 2={}%, 4={}%, 8={}%, 16={}%, 32={}%, >=64={}%",
        cf(d[0], 1),
        cf(d[1], 1),
        cf(d[2], 1),
        cf(d[3], 1),
        cf(d[4], 1),
        cf(d[5], 1),
        cf(d[6], 1)
    );
    for (label, map, tot) in [
        ("submit    ", &ts.iodepth_submit, ts.total_submit),
        ("complete  ", &ts.iodepth_complete, ts.total_complete),
    ] {
        let d = calc_dist(map, tot);
        let _ = writeln!(
            s,
            "     {}: 0={}%, 4={}%, 8={}%, 16={}%, 32={}%, 64={}%, >=64={}%",
            label,
            cf(d[0], 1),
            cf(d[1], 1),
            cf(d[2], 1),
            cf(d[3], 1),
            cf(d[4], 1),
            cf(d[5], 1),
            cf(d[6], 1)
        );
    }
    let dd = &ts.dirs;
    let _ = writeln!(
        s,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        dd[0].total_ios,
        dd[1].total_ios,
        dd[2].total_ios,
        ts.sync.total_ios,
        dd[0].short_ios,
        dd[1].short_ios,
        dd[2].short_ios,
        dd[0].drop_ios,
        dd[1].drop_ios,
        dd[2].drop_ios
    );
    if ts.continue_on_error {
        let _ = writeln!(
            s,
            "     errors    : total={}, first_error={}/<{}>",
            ts.total_err_count,
            ts.first_error,
            strerror(ts.first_error)
        );
    }
    if ts.latency_depth != 0 {
        let _ = writeln!(
            s,
            "     latency   : target={}, window={}, percentile={}%, depth={}",
            ts.latency_target,
            ts.latency_window,
            cf(ts.latency_percentile, 2),
            ts.latency_depth
        );
    }
    if let Some(ss) = &ts.steadystate {
        show_ss(s, ts, ss);
    }
    show_spans(s, ts);
}

/// stat.c `show_ss_normal`.
fn show_ss(s: &mut String, ts: &JobReport, ss: &crate::report::model::SteadyState) {
    let kb = u64::from(ts.kb_base);
    let i2p = kb.is_power_of_two();
    let u = units(ts.unit_bits);
    let bw = ss.bw_mean() / kb;
    let _ = writeln!(
        s,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(bw, ts.sig_figs, kb, i2p, u),
        num2str(bw, ts.sig_figs, kb, !i2p, u),
        num2str(ss.iops_mean(), ts.sig_figs, 1, false, N2s::None),
        if ss.iops { "iops" } else { "bw" },
        if ss.slope { " slope" } else { " mean dev" },
        cf(ss.criterion, 3),
        if ss.pct { "%" } else { "" }
    );
}

/// flashpath's extension: where the time of the job's I/Os went (usec), each span's
/// share of the mean pre + hw + post, and the software share; then the same per
/// direction when the job has spans in more than one.
fn show_spans(s: &mut String, ts: &JobReport) {
    if ts.spans.is_empty() {
        return;
    }
    show_span_set(s, "spans", &ts.spans);
    for (d, set) in ts.split_spans() {
        show_span_set(s, &format!("{} spans", Ddir::ALL[d].name()), set);
    }
}

fn show_span_set(s: &mut String, title: &str, set: &SpanSet) {
    let total = span_total(set).unwrap_or(0.0);
    match software_share(set) {
        Some(sw) => {
            let _ = writeln!(
                s,
                "  {title} (usec): software share={}% of pre+hw+post",
                cf(sw * 100.0, 2)
            );
        }
        None => {
            let _ = writeln!(s, "  {title} (usec):");
        }
    }
    for (name, h) in set {
        let p = h.percentiles(&[50.0, 99.0]);
        let share = if total > 0.0 {
            h.mean() / total * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "     {:<4}: mean={}, p50={}, p99={}, share={}%",
            name,
            cf(h.mean() / 1000.0, 2),
            cf(p[0] as f64 / 1000.0, 2),
            cf(p[1] as f64 / 1000.0, 2),
            cf(share, 2)
        );
    }
}

// Indexes several per-direction arrays at once, as fio's loop does.
#[allow(clippy::needless_range_loop)]
fn show_group_stats(s: &mut String, rs: &GroupRunStats) {
    const NAMES: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    let _ = write!(s, "\nRun status group {} (all jobs):\n", rs.groupid);
    let i2p = rs.kb_base.is_power_of_two();
    let u = units(rs.unit_bits);
    let sf = rs.sig_figs;
    for i in 0..3 {
        if rs.max_run[i] == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            if rs.unified_rw_rep == 1 {
                "  MIXED"
            } else {
                NAMES[i]
            },
            num2str(rs.agg[i], sf, 1, i2p, u),
            num2str(rs.agg[i], sf, 1, !i2p, u),
            num2str(rs.min_bw[i], sf, 1, i2p, u),
            num2str(rs.max_bw[i], sf, 1, i2p, u),
            num2str(rs.min_bw[i], sf, 1, !i2p, u),
            num2str(rs.max_bw[i], sf, 1, !i2p, u),
            num2str(rs.iobytes[i], sf, 1, i2p, N2s::Byte),
            num2str(rs.iobytes[i], sf, 1, !i2p, N2s::Byte),
            rs.min_run[i],
            rs.max_run[i]
        );
    }
    if rs.unified_rw_rep == 2 {
        let (mut io, mut agg, mut minb, mut maxb) = (0u64, 0u64, u64::MAX, 0u64);
        let (mut minr, mut maxr) = (u64::MAX, 0u64);
        for i in 0..3 {
            if rs.max_run[i] == 0 {
                continue;
            }
            io = io.wrapping_add(rs.iobytes[i]);
            agg = agg.wrapping_add(rs.agg[i]);
            minb = minb.min(rs.min_bw[i]);
            maxb = maxb.max(rs.max_bw[i]);
            minr = minr.min(rs.min_run[i]);
            maxr = maxr.max(rs.max_run[i]);
        }
        let _ = writeln!(
            s,
            "  MIXED: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            num2str(agg, sf, 1, i2p, u),
            num2str(agg, sf, 1, !i2p, u),
            num2str(minb, sf, 1, i2p, u),
            num2str(maxb, sf, 1, i2p, u),
            num2str(minb, sf, 1, !i2p, u),
            num2str(maxb, sf, 1, !i2p, u),
            num2str(io, sf, 1, i2p, N2s::Byte),
            num2str(io, sf, 1, !i2p, N2s::Byte),
            minr,
            maxr
        );
    }
}

/// The report part of the normal output (what fio prints after the run), starting
/// with fio's blank line.
pub fn normal_report_string(r: &RunReport) -> String {
    let (entries, groups) = aggregate(&r.jobs);
    let mut s = String::from("\n");
    for e in &entries {
        show_thread_status(
            &mut s,
            e,
            super::aggregate::find_group(&groups, e.ts.groupid),
            &r.time,
        );
    }
    for rs in &groups {
        show_group_stats(&mut s, rs);
    }
    if !r.disk_util.is_empty() {
        s.push_str("\nDisk stats (read/write):\n");
        for du in &r.disk_util {
            let _ = writeln!(
                s,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={}%",
                du.name,
                du.read_ios,
                du.write_ios,
                du.read_merges,
                du.write_merges,
                du.read_ticks,
                du.write_ticks,
                du.in_queue,
                cf(du.util, 2)
            );
        }
    }
    s
}

/// Writes what `fio --output=FILE` (normal format) contains: the start-up lines,
/// then the report.
pub fn write_normal(r: &RunReport, out: &mut impl Write) -> io::Result<()> {
    out.write_all(header_string(r).as_bytes())?;
    out.write_all(normal_report_string(r).as_bytes())
}
