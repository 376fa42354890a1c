//! Terse output (`--minimal`, `--output-format=terse`), versions 2–5, fio 3.33's
//! `show_thread_status_terse_all`. One `;`-separated line per report entry.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::aggregate::{aggregate, lat_percentiles, mixed_view, Entry, GroupRunStats};
use super::fmt::cf;
use super::json::{calc_dist, calc_lat_pct, cpu_percent};
use super::model::{JobReport, RunReport, UnifiedRw};

/// NaN with the sign bit set, what x86-64 produces for 0.0 / 0.0 (printed `-nan`).
fn x86_nan() -> f64 {
    f64::from_bits(0xfff8_0000_0000_0000)
}

fn lat4(s: &mut String, st: &super::model::IoStat) {
    match st.calc() {
        Some((min, max, mean, dev)) => {
            let _ = write!(
                s,
                ";{};{};{};{}",
                min / 1000,
                max / 1000,
                cf(mean / 1000.0, 6),
                cf(dev / 1000.0, 6)
            );
        }
        None => s.push_str(";0;0;0.000000;0.000000"),
    }
}

fn ddir_terse(s: &mut String, ts: &JobReport, rs: Option<&GroupRunStats>, d: usize, ver: u32) {
    let ds = &ts.dirs[d];
    let (mut bw, mut iops) = (0u64, 0u64);
    if ds.runtime_ms != 0 {
        bw = super::aggregate::mul_div(ds.io_bytes, 1000, ds.runtime_ms) / 1024;
        iops = super::aggregate::mul_div(ds.total_ios, 1000, ds.runtime_ms);
    }
    let _ = write!(
        s,
        ";{};{};{};{}",
        ds.io_bytes >> 10,
        bw,
        iops,
        ds.runtime_ms
    );
    lat4(s, &ds.slat.stat);
    lat4(s, &ds.clat.stat);
    let vals = if ts.lat_percentiles {
        lat_percentiles(&ds.lat, &ts.percentile_list)
    } else if ts.clat_percentiles {
        lat_percentiles(&ds.clat, &ts.percentile_list)
    } else {
        Vec::new()
    };
    for i in 0..20 {
        match (vals.get(i), ts.percentile_list.get(i)) {
            (Some(v), Some(p)) => {
                let _ = write!(s, ";{}%={}", cf(*p, 6), v / 1000);
            }
            _ => s.push_str(";0%=0"),
        }
    }
    lat4(s, &ds.lat.stat);
    match ds.bw.calc() {
        Some((min, max, mean, dev)) => {
            let mut p_of_agg = 100.0;
            if let Some(rs) = rs {
                if rs.agg[d] != 0 {
                    p_of_agg = mean * 100.0 / (rs.agg[d] / 1024) as f64;
                    if p_of_agg > 100.0 {
                        p_of_agg = 100.0;
                    }
                }
            }
            let _ = write!(
                s,
                ";{};{};{}%;{};{}",
                min,
                max,
                cf(p_of_agg, 6),
                cf(mean, 6),
                cf(dev, 6)
            );
        }
        None => s.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
    if ver == 5 {
        let _ = write!(s, ";{}", ds.bw.samples);
        match ds.iops.calc() {
            Some((min, max, mean, dev)) => {
                let _ = write!(
                    s,
                    ";{};{};{};{};{}",
                    min,
                    max,
                    cf(mean, 6),
                    cf(dev, 6),
                    ds.iops.samples
                );
            }
            None => s.push_str(";0;0;0.000000;0.000000;0"),
        }
    }
}

fn entry_terse(s: &mut String, e: &Entry, rs: Option<&GroupRunStats>, r: &RunReport, ver: u32) {
    let ts = &e.ts;
    if ver == 2 {
        let _ = write!(s, "2;{};{};{}", ts.name, ts.groupid, ts.error);
    } else {
        let _ = write!(
            s,
            "{};{};{};{};{}",
            ver, r.fio_version, ts.name, ts.groupid, ts.error
        );
    }
    ddir_terse(s, ts, rs, 0, ver);
    if e.unified != UnifiedRw::Mixed {
        ddir_terse(s, ts, rs, 1, ver);
        if ver == 2 || ver == 4 || ver == 5 {
            ddir_terse(s, ts, rs, 2, ver);
        }
    }
    if e.unified == UnifiedRw::Both {
        let m = mixed_view(ts);
        ddir_terse(s, &m, rs, 0, ver);
    }
    let (usr, sys) = cpu_percent(ts);
    let _ = write!(
        s,
        ";{}%;{}%;{};{};{}",
        cf(usr, 6),
        cf(sys, 6),
        ts.ctx,
        ts.majf,
        ts.minf
    );
    let total = ts.total_rw_ios();
    let dist = calc_dist(&ts.iodepth_level, total);
    for v in dist {
        let _ = write!(s, ";{}%", cf(v, 1));
    }
    // stat_calc_lat_nu: nanosecond buckets are folded into the first µs bucket
    // (0/0 gives x86's negative NaN when the job did no I/O, as fio prints it).
    let mut lat_u = calc_lat_pct(&ts.latency_buckets.us, total);
    let ntotal = ts
        .latency_buckets
        .ns
        .iter()
        .fold(0u64, |a, &b| a.wrapping_add(b));
    let add = if total == 0 {
        x86_nan()
    } else {
        100.0 * ntotal as f64 / total as f64
    };
    lat_u[0] += add;
    if total == 0 {
        lat_u[0] = x86_nan();
    }
    for v in lat_u {
        let _ = write!(s, ";{}%", cf(v, 2));
    }
    for v in calc_lat_pct(&ts.latency_buckets.ms, total) {
        let _ = write!(s, ";{}%", cf(v, 2));
    }
    if ver >= 3 {
        for du in &r.disk_util {
            let _ = write!(
                s,
                ";{};{};{};{};{};{};{};{};{}%",
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
    if ts.continue_on_error {
        let _ = write!(s, ";{};{}", ts.total_err_count, ts.first_error);
    }
    if !ts.description.is_empty() {
        if ver == 2 {
            s.push('\n');
        }
        let _ = write!(s, ";{}", ts.description);
    }
    s.push('\n');
}

/// The terse lines as a string; versions other than 2..=5 give an empty string
/// (fio prints "bad terse version" to stderr then).
pub fn terse_string(r: &RunReport, version: u32) -> String {
    if !(2..=5).contains(&version) {
        return String::new();
    }
    let (entries, groups) = aggregate(&r.jobs);
    let mut s = String::new();
    for e in &entries {
        entry_terse(
            &mut s,
            e,
            super::aggregate::find_group(&groups, e.ts.groupid),
            r,
            version,
        );
    }
    s
}

/// Writes `--output-format=terse` with `--terse-version=version` (fio's default is 3).
pub fn write_terse(r: &RunReport, out: &mut impl Write, version: u32) -> io::Result<()> {
    out.write_all(terse_string(r, version).as_bytes())
}
