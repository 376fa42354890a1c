//! Golden tests: rebuild the model from the numbers of real fio 3.33 outputs
//! (tests/data/report/, real fio 3.33 output) and reproduce those files byte for byte.
//!
//! Reconstruction rules (what the model needs beyond the printed numbers):
//! - histograms: json+ `bins` exactly; without bins, a histogram fitted so that fio's
//!   percentile walk hits the printed percentile buckets (the printed values are
//!   bucket midpoints, so this is exact for percentiles);
//! - min/max/mean/stddev: given explicitly (`LatStat::with_summary`), because fio's
//!   running sums cannot be recovered from the bins;
//! - percentages (depths, latency buckets, cpu): the smallest integer counts that print
//!   the same.

use flashpath_fio::report::*;
use flashpath_hist::{percentile_reached, plat_idx_to_val, plat_val_to_idx};
use serde_json::Value;

fn data(name: &str) -> String {
    let p = format!("{}/tests/data/report/{}", env!("CARGO_MANIFEST_DIR"), name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn assert_same(got: &str, want: &str, what: &str) {
    if got != want {
        let gl: Vec<&str> = got.lines().collect();
        let wl: Vec<&str> = want.lines().collect();
        for i in 0..gl.len().max(wl.len()) {
            let (g, w) = (gl.get(i), wl.get(i));
            if g != w {
                panic!(
                    "{what}: first difference at line {}:\n got: {:?}\nwant: {:?}",
                    i + 1,
                    g,
                    w
                );
            }
        }
        panic!(
            "{what}: outputs differ only in trailing bytes ({} vs {} bytes)",
            got.len(),
            want.len()
        );
    }
}

/// `"key" : "value"` pairs of every `"<block>" : {` object, in file order (serde_json's
/// map does not keep order).
fn option_blocks(text: &str, block: &str) -> Vec<Vec<(String, String)>> {
    let head = format!("\"{block}\" : {{");
    let mut out = Vec::new();
    let mut cur: Option<Vec<(String, String)>> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(c) = cur.as_mut() {
            if t.starts_with('}') {
                out.push(cur.take().unwrap());
                continue;
            }
            let t = t.trim_end_matches(',');
            let (k, v) = t.split_once(" : ").unwrap();
            c.push((
                k.trim_matches('"').to_string(),
                v.trim_matches('"')
                    .replace("\\\"", "\"")
                    .replace("\\\\", "\\"),
            ));
        } else if t == head {
            cur = Some(Vec::new());
        }
    }
    out
}

/// Fills `h` with `n` samples such that fio's percentile walk returns `points`
/// (sorted (percentile, bucket value) pairs).
fn fit_hist(n: u64, points: &[(f64, u64)]) -> LatHist {
    let mut h = LatHist::new();
    let mut cum = 0u64;
    let mut i = 0;
    let mut last_val = 0;
    while i < points.len() {
        let idx = plat_val_to_idx(points[i].1);
        let mut j = i;
        while j + 1 < points.len() && plat_val_to_idx(points[j + 1].1) == idx {
            j += 1;
        }
        let p = points[j].0;
        let mut target = ((p / 100.0 * n as f64).ceil() as u64).saturating_sub(2);
        while !percentile_reached(target, p, n) {
            target += 1;
        }
        let add = target.saturating_sub(cum);
        h.record_n(plat_idx_to_val(idx), add);
        cum += add;
        last_val = plat_idx_to_val(idx);
        i = j + 1;
    }
    if n > cum {
        h.record_n(last_val, n - cum);
    }
    h
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k}"))
}
fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k}"))
}

fn lat_from_json(o: &Value) -> LatStat {
    let n = u(o, "N");
    let h = if let Some(bins) = o.get("bins").and_then(Value::as_object) {
        let mut h = LatHist::new();
        for (k, c) in bins {
            h.record_n(k.parse().unwrap(), c.as_u64().unwrap());
        }
        h
    } else if let Some(p) = o.get("percentile").and_then(Value::as_object) {
        let mut pts: Vec<(f64, u64)> = p
            .iter()
            .map(|(k, v)| (k.parse::<f64>().unwrap(), v.as_u64().unwrap()))
            .collect();
        pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        fit_hist(n, &pts)
    } else {
        let mut h = LatHist::new();
        h.record_n(u(o, "min"), n);
        h
    };
    assert_eq!(h.count(), n);
    LatStat::with_summary(h, u(o, "min"), u(o, "max"), f(o, "mean"), f(o, "stddev"))
}

/// Counts that print as `pcts` with fio's percentage rules (a non-empty bucket prints
/// at least 0.1 for depths, 0.01 for latencies, so a floored value maps to 1).
fn counts_for(pcts: &[f64], total: u64) -> Vec<u64> {
    pcts.iter()
        .map(|&p| {
            if p == 0.0 {
                0
            } else if p == 0.01 || p == 0.1 {
                // A floored bucket: fio prints the floor for any small count.
                1
            } else {
                ((p / 100.0 * total as f64).round() as u64).max(1)
            }
        })
        .collect()
}

fn pct_prints(c: u64, total: u64, floor: f64) -> String {
    let mut v = c as f64 / total as f64 * 100.0;
    if v < floor && c != 0 {
        v = floor;
    }
    format!("{v:.6}")
}

/// A total and counts reproducing the printed distribution (unknown total).
fn dist_with_unknown_total(pcts: &[f64]) -> ([u64; 7], u64) {
    for total in 1..5_000_000u64 {
        let c = counts_for(pcts, total);
        if c.iter()
            .zip(pcts)
            .all(|(&c, &p)| pct_prints(c, total, 0.1) == format!("{p:.6}"))
        {
            return (c.try_into().unwrap(), total);
        }
    }
    panic!("no total reproduces {pcts:?}");
}

fn map7(o: &Value, keys: &[&str]) -> Vec<f64> {
    keys.iter().map(|k| f(o, k)).collect()
}

const LEVEL_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];
const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

fn job_from_json(j: &Value, opts: Vec<(String, String)>) -> JobReport {
    let mut r = JobReport::new(j["jobname"].as_str().unwrap(), u(j, "groupid") as u32);
    r.error = j["error"].as_i64().unwrap() as i32;
    r.eta = j["eta"].as_i64().unwrap();
    r.elapsed_s = u(j, "elapsed");
    r.job_options = opts;
    for d in Ddir::ALL {
        let o = &j[d.name()];
        if o.is_null() {
            continue;
        }
        let ds = r.dir_mut(d);
        ds.io_bytes = u(o, "io_bytes");
        ds.total_ios = u(o, "total_ios");
        ds.short_ios = u(o, "short_ios");
        ds.drop_ios = u(o, "drop_ios");
        ds.runtime_ms = u(o, "runtime");
        ds.slat = lat_from_json(&o["slat_ns"]);
        ds.clat = lat_from_json(&o["clat_ns"]);
        ds.lat = lat_from_json(&o["lat_ns"]);
        ds.bw = IoStat::from_summary(
            u(o, "bw_samples"),
            u(o, "bw_min"),
            u(o, "bw_max"),
            f(o, "bw_mean"),
            f(o, "bw_dev"),
        );
        ds.iops = IoStat::from_summary(
            u(o, "iops_samples"),
            u(o, "iops_min"),
            u(o, "iops_max"),
            f(o, "iops_mean"),
            f(o, "iops_stddev"),
        );
    }
    if !j["sync"].is_null() {
        r.sync.total_ios = u(&j["sync"], "total_ios");
        r.sync.lat = lat_from_json(&j["sync"]["lat_ns"]);
    }
    r.job_runtime_ms = u(j, "job_runtime");
    r.usr_time_ms = (f(j, "usr_cpu") * r.job_runtime_ms as f64 / 100.0).round() as u64;
    r.sys_time_ms = (f(j, "sys_cpu") * r.job_runtime_ms as f64 / 100.0).round() as u64;
    r.ctx = u(j, "ctx");
    r.majf = u(j, "majf");
    r.minf = u(j, "minf");
    let total = r.total_rw_ios();
    let lv = counts_for(&map7(&j["iodepth_level"], &LEVEL_KEYS), total);
    r.iodepth_level = lv.try_into().unwrap();
    let (c, t) = dist_with_unknown_total(&map7(&j["iodepth_submit"], &BATCH_KEYS));
    r.iodepth_submit = c;
    r.total_submit = t;
    let (c, t) = dist_with_unknown_total(&map7(&j["iodepth_complete"], &BATCH_KEYS));
    r.iodepth_complete = c;
    r.total_complete = t;
    let ns = counts_for(&map7(&j["latency_ns"], &LAT_KEYS[..10]), total);
    let us = counts_for(&map7(&j["latency_us"], &LAT_KEYS[..10]), total);
    let ms = counts_for(&map7(&j["latency_ms"], &LAT_KEYS), total);
    r.latency_buckets = LatencyBuckets {
        ns: ns.try_into().unwrap(),
        us: us.try_into().unwrap(),
        ms: ms.try_into().unwrap(),
    };
    r.latency_depth = u(j, "latency_depth") as u32;
    r.latency_target = u(j, "latency_target");
    r.latency_percentile = f(j, "latency_percentile");
    r.latency_window = u(j, "latency_window");
    r
}

fn report_from_json(text: &str) -> RunReport {
    let v: Value = serde_json::from_str(text).unwrap();
    let mut r = RunReport::new(u(&v, "timestamp_ms"), v["time"].as_str().unwrap());
    r.timestamp_s = u(&v, "timestamp");
    r.global_options = option_blocks(text, "global options")
        .pop()
        .unwrap_or_default();
    let mut opts = option_blocks(text, "job options").into_iter();
    for j in v["jobs"].as_array().unwrap() {
        let o = if j.get("job options").is_some() {
            opts.next().unwrap()
        } else {
            Vec::new()
        };
        r.jobs.push(job_from_json(j, o));
    }
    if let Some(du) = v.get("disk_util").and_then(Value::as_array) {
        for d in du {
            r.disk_util.push(DiskUtil {
                name: d["name"].as_str().unwrap().into(),
                read_ios: u(d, "read_ios"),
                write_ios: u(d, "write_ios"),
                read_merges: u(d, "read_merges"),
                write_merges: u(d, "write_merges"),
                read_ticks: u(d, "read_ticks"),
                write_ticks: u(d, "write_ticks"),
                in_queue: u(d, "in_queue"),
                util: f(d, "util"),
            });
        }
    }
    r
}

fn json_of(r: &RunReport, plus: bool) -> String {
    let mut out = Vec::new();
    write_json(r, &mut out, plus).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn nbd_jsonplus_byte_for_byte() {
    let want = data("nbd_randrw.jsonplus.json");
    let r = report_from_json(&want);
    assert_same(&json_of(&r, true), &want, "nbd_randrw.jsonplus.json");
}

#[test]
fn nbd_json_byte_for_byte() {
    let want = data("nbd_randrw.json");
    let r = report_from_json(&want);
    assert_same(&json_of(&r, false), &want, "nbd_randrw.json");
}

/// Splits one entry into two identical halves whose fio-style merge gives it back.
fn split_in_two(j: &JobReport) -> (JobReport, JobReport) {
    fn half_lat(l: &LatStat) -> (LatStat, LatStat) {
        let (mut a, mut b) = (LatHist::new(), LatHist::new());
        for (i, &c) in l.hist.counts().iter().enumerate() {
            a.record_n(plat_idx_to_val(i), c / 2);
            b.record_n(plat_idx_to_val(i), c - c / 2);
        }
        let st = l.stat;
        let mk = |h: LatHist| {
            let n = h.count();
            let mut s = LatStat { stat: st, hist: h };
            s.stat.samples = n;
            s.stat.s = st.s / 2.0;
            s
        };
        (mk(a), mk(b))
    }
    let (mut a, mut b) = (j.clone(), j.clone());
    for d in 0..3 {
        let src = &j.dirs[d];
        a.dirs[d].io_bytes = src.io_bytes / 2;
        b.dirs[d].io_bytes = src.io_bytes - src.io_bytes / 2;
        a.dirs[d].total_ios = src.total_ios / 2;
        b.dirs[d].total_ios = src.total_ios - src.total_ios / 2;
        for (x, y, s) in [
            (&mut a.dirs[d].slat, &mut b.dirs[d].slat, &src.slat),
            (&mut a.dirs[d].clat, &mut b.dirs[d].clat, &src.clat),
            (&mut a.dirs[d].lat, &mut b.dirs[d].lat, &src.lat),
        ] {
            let (p, q) = half_lat(s);
            *x = p;
            *y = q;
        }
    }
    let half = |x: u64| (x / 2, x - x / 2);
    (a.job_runtime_ms, b.job_runtime_ms) = half(j.job_runtime_ms);
    (a.usr_time_ms, b.usr_time_ms) = half(j.usr_time_ms);
    (a.sys_time_ms, b.sys_time_ms) = half(j.sys_time_ms);
    (a.minf, b.minf) = half(j.minf);
    (a.ctx, b.ctx) = half(j.ctx);
    for k in 0..7 {
        (a.iodepth_level[k], b.iodepth_level[k]) = half(j.iodepth_level[k]);
        (a.iodepth_submit[k], b.iodepth_submit[k]) = half(j.iodepth_submit[k]);
        (a.iodepth_complete[k], b.iodepth_complete[k]) = half(j.iodepth_complete[k]);
    }
    (a.total_submit, b.total_submit) = half(j.total_submit);
    (a.total_complete, b.total_complete) = half(j.total_complete);
    let lb = j.latency_buckets;
    for k in 0..10 {
        (a.latency_buckets.ns[k], b.latency_buckets.ns[k]) = half(lb.ns[k]);
        (a.latency_buckets.us[k], b.latency_buckets.us[k]) = half(lb.us[k]);
    }
    for k in 0..12 {
        (a.latency_buckets.ms[k], b.latency_buckets.ms[k]) = half(lb.ms[k]);
    }
    b.subjob_number = 1;
    (a, b)
}

#[test]
fn groups_json_with_group_reporting_merge() {
    let want = data("groups.json");
    let mut r = report_from_json(&want);
    // groups.fio: a (numjobs=2), b in g0; c in g1; d (numjobs=2, group_reporting) and
    // e in g2. The JSON shows d already merged: feed its two members instead.
    let d_pos = r.jobs.iter().position(|j| j.name == "d").unwrap();
    let d = r.jobs.remove(d_pos);
    let (mut d0, mut d1) = split_in_two(&d);
    d0.group_reporting = true;
    d1.group_reporting = true;
    r.jobs.insert(d_pos, d1);
    r.jobs.insert(d_pos, d0);
    assert_eq!(r.jobs.len(), 7);
    let (entries, groups) = aggregate(&r.jobs);
    assert_eq!(entries.len(), 6);
    assert_eq!(entries[4].members, 2);
    assert_eq!(groups.len(), 3);
    assert_same(&json_of(&r, false), &want, "groups.json");
}

/// Splits a `;`-separated terse line.
fn fields(line: &str) -> Vec<String> {
    line.trim_end().split(';').map(str::to_string).collect()
}

/// The first bucket midpoint `v` with `v / 1000 == us` (terse prints µs truncated).
fn midpoint_trunc_us(us: u64) -> u64 {
    let lo = us * 1000;
    (plat_val_to_idx(lo)..=plat_val_to_idx(lo + 999))
        .map(plat_idx_to_val)
        .find(|v| v / 1000 == us)
        .unwrap_or_else(|| panic!("no bucket prints as {us} us"))
}

/// The first bucket midpoint `v` with `ceil(v / 1000) == us` (text prints µs rounded up).
fn midpoint_ceil_us(us: u64) -> u64 {
    let lo = us * 1000 - 999;
    (plat_val_to_idx(lo)..=plat_val_to_idx(us * 1000))
        .map(plat_idx_to_val)
        .find(|v| v.div_ceil(1000) == us)
        .unwrap_or_else(|| panic!("no bucket prints as {us} us"))
}

#[test]
fn file_libaio_terse_v3_byte_for_byte() {
    let want = data("file_libaio.terse_v3.txt");
    let fl = fields(&want);
    assert_eq!(fl.len(), 130);
    let num = |i: usize| fl[i].parse::<f64>().unwrap();
    let mut r = RunReport::new(0, "");
    let mut j = JobReport::new("f", 0);
    // Field numbers below are 0-based; the write block starts at index 46.
    let w = 46;
    let ios = 8192;
    {
        let ds = j.dir_mut(Ddir::Write);
        ds.io_bytes = 32768 * 1024;
        ds.total_ios = ios;
        ds.runtime_ms = 100;
        let us = |i: usize| fl[w + i].parse::<u64>().unwrap() * 1000;
        let mut h = LatHist::new();
        h.record_n(us(4), ios);
        ds.slat = LatStat::with_summary(h, us(4), us(5), num(w + 6) * 1000.0, num(w + 7) * 1000.0);
        let pts: Vec<(f64, u64)> = (0..17)
            .map(|k| {
                let (p, v) = fl[w + 12 + k].split_once("%=").unwrap();
                (p.parse().unwrap(), midpoint_trunc_us(v.parse().unwrap()))
            })
            .collect();
        let h = fit_hist(ios, &pts);
        ds.clat =
            LatStat::with_summary(h, us(8), us(9), num(w + 10) * 1000.0, num(w + 11) * 1000.0);
        let mut h = LatHist::new();
        h.record_n(us(32), ios);
        ds.lat = LatStat::with_summary(
            h,
            us(32),
            us(33),
            num(w + 34) * 1000.0,
            num(w + 35) * 1000.0,
        );
    }
    // cpu 10.101010% / 56.565657% = 10/99 and 56/99.
    j.job_runtime_ms = 99;
    j.usr_time_ms = 10;
    j.sys_time_ms = 56;
    j.ctx = 488;
    j.minf = 10;
    j.iodepth_level = [1, 1, 1, 8185, 0, 0, 0];
    j.iodepth_submit = [0, 1, 0, 0, 0, 0, 0];
    j.total_submit = 1;
    j.iodepth_complete = [0, 1, 0, 0, 0, 0, 0];
    j.total_complete = 1;
    let pct = |i: usize| fl[i].trim_end_matches('%').parse::<f64>().unwrap();
    for k in 0..10 {
        j.latency_buckets.us[k] = ((pct(99 + k) / 100.0 * ios as f64).round()) as u64;
    }
    for k in 0..12 {
        j.latency_buckets.ms[k] = ((pct(109 + k) / 100.0 * ios as f64).round()) as u64;
    }
    j.latency_depth = 8;
    r.jobs.push(j);
    r.disk_util.push(DiskUtil {
        name: "vda".into(),
        ..Default::default()
    });
    let mut out = Vec::new();
    write_terse(&r, &mut out, 3).unwrap();
    assert_same(
        &String::from_utf8(out).unwrap(),
        &want,
        "file_libaio.terse_v3.txt",
    );
}

#[test]
fn file_libaio_all_three_formats_byte_for_byte() {
    let want = data("file_libaio.normal_terse_json.txt");
    let start = want.find("\n{\n").unwrap() + 1;
    let end = want.find("\n}\n").unwrap() + 3;
    let mut r = report_from_json(&want[start..end]);
    let j = &mut r.jobs[0];
    j.pid = 21492;
    j.header = JobHeader {
        rw: "randwrite".into(),
        bs: [(4096, 4096); 3],
        ioengine: "libaio".into(),
        iodepth: 8,
    };
    let formats = Format::parse_list("normal,terse,json", 3).unwrap();
    let mut out = Vec::new();
    write_formats(&r, &formats, &mut out).unwrap();
    assert_same(
        &String::from_utf8(out).unwrap(),
        &want,
        "file_libaio.normal_terse_json.txt",
    );
}

struct TextDir {
    ios: u64,
    slat: (u64, u64, f64, f64),
    clat: (u64, u64, f64, f64),
    lat: (u64, u64, f64, f64),
    pcts_us: [u64; 17],
    bw: (u64, u64, f64, f64),
    iops: (u64, u64, f64, f64),
}

fn text_dir(t: &TextDir) -> DirStats {
    let mut ds = DirStats {
        io_bytes: t.ios * 4096,
        total_ios: t.ios,
        runtime_ms: 3001,
        ..Default::default()
    };
    let one = |s: (u64, u64, f64, f64)| {
        let mut h = LatHist::new();
        h.record_n(s.0, t.ios);
        LatStat::with_summary(h, s.0, s.1, s.2, s.3)
    };
    ds.slat = one(t.slat);
    ds.lat = one(t.lat);
    let pts: Vec<(f64, u64)> = DEFAULT_PERCENTILES
        .iter()
        .zip(t.pcts_us)
        .map(|(&p, us)| (p, midpoint_ceil_us(us)))
        .collect();
    ds.clat = LatStat::with_summary(
        fit_hist(t.ios, &pts),
        t.clat.0,
        t.clat.1,
        t.clat.2,
        t.clat.3,
    );
    ds.bw = IoStat::from_summary(5, t.bw.0, t.bw.1, t.bw.2, t.bw.3);
    ds.iops = IoStat::from_summary(5, t.iops.0, t.iops.1, t.iops.2, t.iops.3);
    ds
}

#[test]
fn nbd_normal_byte_for_byte() {
    let want = data("nbd_randrw.normal.txt");
    let mut r = RunReport::new(0, "Sun Nov 22 09:30:31 2026");
    let mut j = JobReport::new("mixed-rand", 0);
    j.pid = 21456;
    j.header = JobHeader {
        rw: "randrw".into(),
        bs: [(4096, 4096); 3],
        ioengine: "nbd".into(),
        iodepth: 16,
    };
    j.dirs[0] = text_dir(&TextDir {
        ios: 108788,
        slat: (1141, 28_426_000, 10759.96, 88452.58),
        clat: (15_000, 32_431_000, 296_550.0, 486_940.0),
        lat: (16_000, 32_448_000, 307_310.0, 498_200.0),
        pcts_us: [
            51, 91, 104, 121, 165, 219, 334, 347, 363, 404, 449, 482, 668, 1004, 3884, 5145, 28967,
        ],
        bw: (105745, 262834, 148959.0, 65072.19),
        iops: (26436, 65708, 37239.6, 16267.87),
    });
    j.dirs[1] = text_dir(&TextDir {
        ios: 46561,
        slat: (2500, 23_787_000, 15_390.0, 121_460.0),
        clat: (11_000, 31_326_000, 296_320.0, 457_770.0),
        lat: (14_000, 32_490_000, 311_710.0, 487_190.0),
        pcts_us: [
            50, 89, 102, 119, 167, 219, 330, 347, 367, 408, 449, 486, 668, 1012, 3982, 4490, 30278,
        ],
        bw: (45088, 112423, 63662.2, 27913.08),
        iops: (11272, 28105, 15915.4, 6977.94),
    });
    j.job_runtime_ms = 3000;
    j.usr_time_ms = 339;
    j.sys_time_ms = 1127;
    j.ctx = 115447;
    j.minf = 57;
    let total = j.total_rw_ios();
    j.iodepth_level = [1, 1, 1, 1, total - 4, 0, 0];
    j.iodepth_submit = [0, 1, 0, 0, 0, 0, 0];
    j.total_submit = 1;
    j.iodepth_complete = [0, 999_999, 0, 1, 0, 0, 0];
    j.total_complete = 1_000_000;
    let c = |p: f64| (p / 100.0 * total as f64).round() as u64;
    j.latency_buckets.us = [
        0,
        0,
        0,
        c(0.02),
        c(0.97),
        c(7.59),
        c(34.05),
        c(53.77),
        c(2.80),
        c(0.28),
    ];
    j.latency_buckets.ms = [
        c(0.24),
        c(0.18),
        c(0.06),
        c(0.01),
        c(0.02),
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    j.latency_depth = 16;
    r.jobs.push(j);
    let mut out = Vec::new();
    write_normal(&r, &mut out).unwrap();
    assert_same(
        &String::from_utf8(out).unwrap(),
        &want,
        "nbd_randrw.normal.txt",
    );
}

/// One fio 3.33 run printed with `--output-format=json+,terse,normal` (null engine,
/// tests/data/report/oracle_<name>.fio): rebuild the model from the json+ part and
/// reproduce the whole output, start-up lines included.
struct Oracle {
    name: &'static str,
    formats: &'static str,
    terse_version: u32,
    startup: Vec<&'static str>,
    headers: Vec<JobHeader>,
    thread: bool,
    kb_base: u32,
    percentile_precision: u32,
    unit_bits: bool,
}

fn oracle_case(c: Oracle) {
    let want = data(&format!("oracle_{}.out", c.name));
    let start = want.find("\n{\n").unwrap() + 1;
    let end = want.find("\n}\n").unwrap() + 3;
    let json_text = &want[start..end];
    let v: Value = serde_json::from_str(json_text).unwrap();
    let mut r = report_from_json(json_text);
    // Entries in the normal part: "name: (groupid=G, jobs=N): err=..: pid=P: time".
    let mut members = Vec::new();
    if !c.formats.contains("normal") {
        members = vec![(1, 0); v["jobs"].as_array().unwrap().len()];
    }
    for line in want[end..].lines() {
        if let Some(pos) = line.find(", jobs=") {
            let rest = &line[pos + 7..];
            let n: u32 = rest[..rest.find(')').unwrap()].parse().unwrap();
            let pid: u32 = line[line.find(": pid=").unwrap() + 6..]
                .split(':')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            members.push((n, pid));
        }
    }
    let mut jobs = Vec::new();
    for (k, (mut j, jv)) in r
        .jobs
        .drain(..)
        .zip(v["jobs"].as_array().unwrap())
        .enumerate()
    {
        let has = |dir: &str, lat: &str| {
            ["read", "write", "trim", "mixed"]
                .iter()
                .filter(|d| dir.is_empty() || **d == dir)
                .any(|d| jv[*d][lat].get("percentile").is_some())
        };
        if jv.get("mixed").is_some() {
            j.unified_rw_reporting = if jv.get("read").is_some() {
                UnifiedRw::Both
            } else {
                UnifiedRw::Mixed
            };
        }
        if j.unified_rw_reporting == UnifiedRw::Mixed {
            let m = &jv["mixed"];
            let ds = &mut j.dirs[0];
            ds.io_bytes = u(m, "io_bytes");
            ds.total_ios = u(m, "total_ios");
            ds.runtime_ms = u(m, "runtime");
            ds.slat = lat_from_json(&m["slat_ns"]);
            ds.clat = lat_from_json(&m["clat_ns"]);
            ds.lat = lat_from_json(&m["lat_ns"]);
            let total = j.total_rw_ios();
            for (key, dst) in [
                ("latency_ns", &mut j.latency_buckets.ns[..]),
                ("latency_us", &mut j.latency_buckets.us[..]),
            ] {
                dst.copy_from_slice(&counts_for(&map7(&jv[key], &LAT_KEYS[..10]), total));
            }
            j.latency_buckets.ms = counts_for(&map7(&jv["latency_ms"], &LAT_KEYS), total)
                .try_into()
                .unwrap();
            j.iodepth_level = counts_for(&map7(&jv["iodepth_level"], &LEVEL_KEYS), total)
                .try_into()
                .unwrap();
        }
        if j.unified_rw_reporting == UnifiedRw::Both {
            fit_both_moments(&mut j, &jv["mixed"]);
        }
        j.clat_percentiles = has("", "clat_ns");
        j.lat_percentiles = has("", "lat_ns");
        j.slat_percentiles = has("", "slat_ns");
        if let Some(p) = ["read", "write", "trim", "mixed"]
            .iter()
            .flat_map(|d| ["clat_ns", "lat_ns", "slat_ns"].map(|l| &jv[*d][l]["percentile"]))
            .find_map(Value::as_object)
        {
            let mut l: Vec<f64> = p.keys().map(|k| k.parse().unwrap()).collect();
            l.sort_by(|a, b| a.partial_cmp(b).unwrap());
            j.percentile_list = l;
        }
        j.percentile_precision = c.percentile_precision;
        j.description = jv["desc"].as_str().unwrap_or("").to_string();
        if let Some(t) = jv.get("total_err") {
            j.continue_on_error = true;
            j.total_err_count = t.as_u64().unwrap();
            j.first_error = jv["first_error"].as_i64().unwrap() as i32;
        }
        j.kb_base = c.kb_base;
        j.thread = c.thread;
        j.unit_bits = c.unit_bits;
        let (n, pid) = members.get(k).copied().unwrap_or((1, 0));
        j.pid = pid;
        if n == 2 {
            let (mut a, mut b) = split_in_two(&j);
            a.group_reporting = true;
            b.group_reporting = true;
            jobs.push(a);
            jobs.push(b);
        } else {
            assert_eq!(n, 1);
            jobs.push(j);
        }
    }
    // Clones (same name and group as the previous job) are subjobs 1, 2, ...
    for k in 1..jobs.len() {
        if jobs[k].name == jobs[k - 1].name && jobs[k].groupid == jobs[k - 1].groupid {
            jobs[k].subjob_number = jobs[k - 1].subjob_number + 1;
        }
    }
    assert_eq!(jobs.len(), c.headers.len());
    for (j, h) in jobs.iter_mut().zip(c.headers) {
        j.header = h;
    }
    r.jobs = jobs;
    r.startup_lines = c.startup.iter().map(|l| l.to_string()).collect();
    let formats = Format::parse_list(c.formats, c.terse_version).unwrap();
    let mut out = Vec::new();
    write_formats(&r, &formats, &mut out).unwrap();
    assert_same(&String::from_utf8(out).unwrap(), &want, c.name);
}

/// With `unified_rw_reporting=both` fio prints the merge of the read and write stats,
/// which depends on their exact running sums. The printed means/deviations (6
/// decimals) leave a little freedom: pick values inside it whose merge prints as fio's
/// `mixed` object.
fn fit_both_moments(j: &mut JobReport, mixed: &Value) {
    let p6 = |x: f64| format!("{x:.6}");
    for (k, key) in ["slat_ns", "clat_ns", "lat_ns"].iter().enumerate() {
        let want = &mixed[*key];
        if u(want, "N") < 2 {
            continue;
        }
        let (want_mean, want_dev) = (p6(f(want, "mean")), p6(f(want, "stddev")));
        let get = |j: &JobReport, d: usize| match k {
            0 => j.dirs[d].slat.stat,
            1 => j.dirs[d].clat.stat,
            _ => j.dirs[d].lat.stat,
        };
        let (r0, w0) = (get(j, 0), get(j, 1));
        let dev = |s: &IoStat| s.calc().unwrap().3;
        let steps: Vec<f64> = (-4..=4).map(|i| i as f64 * 1e-7).collect();
        let mut found = None;
        'search: for &a in &steps {
            for &b in &steps {
                for &c in &steps {
                    for &e in &steps {
                        let r = IoStat::from_summary(
                            r0.samples,
                            r0.min,
                            r0.max,
                            r0.mean + a,
                            dev(&r0) + b,
                        );
                        let w = IoStat::from_summary(
                            w0.samples,
                            w0.min,
                            w0.max,
                            w0.mean + c,
                            dev(&w0) + e,
                        );
                        if p6(r.mean) != p6(r0.mean) || p6(dev(&r)) != p6(dev(&r0)) {
                            continue;
                        }
                        if p6(w.mean) != p6(w0.mean) || p6(dev(&w)) != p6(dev(&w0)) {
                            continue;
                        }
                        let mut m = IoStat::new();
                        m.sum(&r, false);
                        m.sum(&w, false);
                        if p6(m.mean) == want_mean && p6(dev(&m)) == want_dev {
                            found = Some((r, w));
                            break 'search;
                        }
                    }
                }
            }
        }
        let (r, w) = found.unwrap_or_else(|| panic!("no moments reproduce mixed {key}"));
        for (d, st) in [(0, r), (1, w)] {
            match k {
                0 => j.dirs[d].slat.stat = st,
                1 => j.dirs[d].clat.stat = st,
                _ => j.dirs[d].lat.stat = st,
            }
        }
    }
}

fn hdr(rw: &str, bs: (u64, u64), iodepth: u32) -> JobHeader {
    JobHeader {
        rw: rw.into(),
        bs: [bs; 3],
        ioengine: "null".into(),
        iodepth,
    }
}

#[test]
fn oracle_unified_mixed_lat_percentiles_description() {
    oracle_case(Oracle {
        name: "mixed",
        formats: "json+,terse,normal",
        terse_version: 3,
        startup: vec![],
        headers: vec![hdr("randrw", (4096, 65536), 8)],
        thread: false,
        kb_base: 1024,
        percentile_precision: 2,
        unit_bits: false,
    });
}

#[test]
fn oracle_group_reporting_percentile_list_continue_on_error() {
    oracle_case(Oracle {
        name: "grp",
        formats: "json+,terse,normal",
        terse_version: 3,
        startup: vec![],
        headers: vec![
            hdr("randwrite", (8192, 8192), 1),
            JobHeader {
                ..hdr("randwrite", (8192, 8192), 1)
            },
            hdr("read", (8192, 8192), 1),
        ],
        thread: false,
        kb_base: 1024,
        percentile_precision: 3,
        unit_bits: false,
    });
}

#[test]
fn oracle_unified_both_slat_percentiles_kb_base_1000_thread() {
    oracle_case(Oracle {
        name: "both",
        formats: "json+,terse,normal",
        terse_version: 3,
        startup: vec![],
        headers: vec![hdr("rw", (4096, 4096), 4)],
        thread: true,
        kb_base: 1000,
        percentile_precision: 2,
        unit_bits: false,
    });
}

#[test]
fn oracle_sync_engine_fsync_disk_stats() {
    oracle_case(Oracle {
        name: "sync",
        formats: "json+,terse,normal",
        terse_version: 3,
        startup: vec!["s: Laying out IO file (1 file / 4MiB)"],
        headers: vec![JobHeader {
            ioengine: "psync".into(),
            ..hdr("randwrite", (16384, 16384), 4)
        }],
        thread: false,
        kb_base: 1024,
        percentile_precision: 2,
        unit_bits: false,
    });
}

#[test]
fn oracle_terse_versions_2_4_5() {
    for (name, v) in [("terse2", 2), ("terse4", 4), ("terse5", 5)] {
        oracle_case(Oracle {
            name,
            formats: "json+,terse",
            terse_version: v,
            startup: vec![],
            headers: vec![hdr("randrw", (4096, 4096), 2)],
            thread: false,
            kb_base: 1024,
            percentile_precision: 2,
            unit_bits: false,
        });
    }
}

#[test]
fn oracle_trim_clones_bits_terse_v4() {
    let w = JobHeader {
        bs: [(8192, 8192), (16384, 16384), (16384, 16384)],
        ..hdr("trimwrite", (0, 0), 1)
    };
    oracle_case(Oracle {
        name: "trim",
        formats: "json+,terse,normal",
        terse_version: 4,
        startup: vec![],
        headers: vec![
            hdr("randtrim", (65536, 65536), 1),
            hdr("randtrim", (65536, 65536), 1),
            w,
        ],
        thread: false,
        kb_base: 1024,
        percentile_precision: 2,
        unit_bits: true,
    });
}

/// One fio run (null engine, randrw, rate-limited) wrote a per-I/O clat log and a
/// clat histogram log (`log_hist_msec=500`). Feeding fio's per-I/O entries to our
/// writers reproduces both files.
#[test]
fn oracle_per_io_clat_log_and_hist_log() {
    let per_io = data("oracle_hl_clat.1.log");
    let want_hist = data("oracle_hl_clat_hist.1.log");
    let mut clat = LogWriter::new(LogKind::Clat, LogOptions::new("hl", 1));
    let mut o = LogOptions::new("hl", 1);
    o.log_hist_msec = 500;
    let mut hist = HistLogWriter::new(o);
    for line in per_io.lines() {
        let v: Vec<u64> = line.split(", ").map(|x| x.parse().unwrap()).collect();
        let ddir = Ddir::from_index(v[2] as usize).unwrap();
        clat.add(LogSample {
            time_ms: v[0],
            value: v[1],
            ddir,
            bs: v[3],
            offset: 0,
            prio: v[4] as u16,
        });
        hist.add(v[0], ddir, v[3], v[1]);
    }
    assert_eq!(clat.file_name(), "hl_clat.1.log");
    assert_same(clat.contents(), &per_io, "hl_clat.1.log");
    assert_eq!(hist.file_name(), "hl_clat_hist.1.log");
    assert_same(hist.contents(), &want_hist, "hl_clat_hist.1.log");
}

/// tests/data/report/logs: a run with `log_avg_msec=250` wrote windowed bw/iops logs; each
/// window entry is one bw/iops sample, so the logs' values summarised like fio
/// (`IoStat::from_samples`) give the JSON `bw_*`/`iops_*` fields, and re-logging them
/// through an averaging `LogWriter` reproduces the files.
#[test]
fn windowed_bw_iops_logs_match_json_summary() {
    let want = data("logs/lg.json");
    let mut r = report_from_json(&want);
    for (kind, file) in [
        (LogKind::Bw, "logs/lg_bw.1.log"),
        (LogKind::Iops, "logs/lg_iops.1.log"),
    ] {
        let text = data(file);
        let mut o = LogOptions::new("lg", 1);
        o.log_avg_msec = 250;
        let mut w = LogWriter::new(kind, o);
        let mut series: [Vec<u64>; 3] = Default::default();
        for line in text.lines() {
            let v: Vec<u64> = line.split(", ").map(|x| x.parse().unwrap()).collect();
            series[v[2] as usize].push(v[1]);
            w.add(LogSample {
                time_ms: v[0],
                value: v[1],
                ddir: Ddir::from_index(v[2] as usize).unwrap(),
                bs: 4096,
                offset: 0,
                prio: 0,
            });
        }
        w.finish(3001);
        assert_eq!(w.file_name(), file.trim_start_matches("logs/"));
        assert_same(w.contents(), &text, file);
        for d in [Ddir::Read, Ddir::Write] {
            let st = IoStat::from_samples(&series[d.index()]);
            match kind {
                LogKind::Bw => r.jobs[0].dir_mut(d).bw = st,
                _ => r.jobs[0].dir_mut(d).iops = st,
            }
        }
    }
    assert_same(&json_of(&r, true), &want, "logs/lg.json");
}
