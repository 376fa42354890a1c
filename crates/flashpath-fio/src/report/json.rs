//! JSON and json+ output (fio 3.33 `show_thread_status_json` + `json.c` printer).
//!
//! The printer mirrors fio's: 2-space indent per level, `"key" : value`, integers as
//! `%lld`, floats as `%f`, strings with only `\` and `"` escaped, and a pair whose
//! string value is empty is dropped (fio's `strdup_escape` returns NULL for "").

use std::io::{self, Write};

use super::aggregate::{
    aggregate, calc_or_zero, lat_percentiles, mixed_view, Entry, GroupRunStats,
};
use super::fmt::cf;
use super::model::{
    software_share, span_total, Ddir, JobReport, LatStat, RunReport, SpanSet, UnifiedRw,
};

pub(crate) enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Obj(Obj),
    Arr(Vec<Value>),
}

#[derive(Default)]
pub(crate) struct Obj(Vec<(String, Value)>);

impl Obj {
    fn new() -> Self {
        Self(Vec::new())
    }
    fn str(&mut self, k: &str, v: &str) {
        if !v.is_empty() {
            self.0.push((k.to_string(), Value::Str(escape(v))));
        }
    }
    /// fio stores integers as `long long`; u64 values above i64::MAX wrap like C.
    fn int(&mut self, k: &str, v: u64) {
        self.0.push((k.to_string(), Value::Int(v as i64)));
    }
    fn sint(&mut self, k: &str, v: i64) {
        self.0.push((k.to_string(), Value::Int(v)));
    }
    fn float(&mut self, k: &str, v: f64) {
        self.0.push((k.to_string(), Value::Float(v)));
    }
    fn obj(&mut self, k: &str, v: Obj) {
        self.0.push((k.to_string(), Value::Obj(v)));
    }
    fn arr(&mut self, k: &str, v: Vec<Value>) {
        self.0.push((k.to_string(), Value::Arr(v)));
    }
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || c == '"' {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn print_obj(out: &mut String, obj: &Obj, level: usize) {
    out.push_str("{\n");
    for (i, (k, v)) in obj.0.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        indent(out, level + 1);
        out.push('"');
        out.push_str(k);
        out.push_str("\" : ");
        print_value(out, v, level + 1);
    }
    out.push('\n');
    indent(out, level);
    out.push('}');
}

fn print_value(out: &mut String, v: &Value, level: usize) {
    match v {
        Value::Str(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&cf(*f, 6)),
        Value::Obj(o) => print_obj(out, o, level),
        Value::Arr(a) => {
            out.push_str("[\n");
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print_value(out, e, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

fn opts_obj(opts: &[(String, String)]) -> Obj {
    let mut o = Obj::new();
    for (k, v) in opts {
        o.str(k, v);
    }
    o
}

/// fio's `add_ddir_lat_json`.
fn lat_json(ts: &JobReport, percentiles: bool, l: &LatStat, plus: bool) -> Obj {
    let (min, max, mean, dev) = calc_or_zero(&l.stat);
    let mut o = Obj::new();
    o.int("min", min);
    o.int("max", max);
    o.float("mean", mean);
    o.float("stddev", dev);
    o.int("N", l.stat.samples);
    if percentiles && l.stat.samples > 0 {
        let vals = lat_percentiles(l, &ts.percentile_list);
        let mut p = Obj::new();
        for (pct, v) in ts.percentile_list.iter().zip(vals) {
            p.int(&cf(*pct, 6), v);
        }
        o.obj("percentile", p);
        if plus {
            let mut b = Obj::new();
            for (i, &c) in l.hist.counts().iter().enumerate() {
                if c != 0 {
                    b.int(&flashpath_hist::plat_idx_to_val(i).to_string(), c);
                }
            }
            o.obj("bins", b);
        }
    }
    o
}

/// fio's `convert_agg_kbytes_percent` (note the `int` truncation of the mean).
pub(crate) fn agg_percent(rs: Option<&GroupRunStats>, d: usize, mean: f64) -> f64 {
    let mut p = 100.0;
    if let Some(rs) = rs {
        if rs.agg[d] > 1024 {
            let m = mean as i32;
            p = m as f64 * 100.0 / (rs.agg[d] as f64 / 1024.0);
            if p > 100.0 {
                p = 100.0;
            }
        }
    }
    p
}

fn ddir_json(ts: &JobReport, rs: Option<&GroupRunStats>, d: usize, plus: bool) -> Obj {
    let ds = &ts.dirs[d];
    let mut o = Obj::new();
    let (mut bw_bytes, mut bw, mut iops) = (0u64, 0u64, 0.0f64);
    if ds.runtime_ms != 0 {
        bw_bytes = super::aggregate::mul_div(ds.io_bytes, 1000, ds.runtime_ms);
        bw = bw_bytes / 1024;
        iops = 1000.0 * ds.total_ios as f64 / ds.runtime_ms as f64;
    }
    o.int("io_bytes", ds.io_bytes);
    o.int("io_kbytes", ds.io_bytes >> 10);
    o.int("bw_bytes", bw_bytes);
    o.int("bw", bw);
    o.float("iops", iops);
    o.int("runtime", ds.runtime_ms);
    o.int("total_ios", ds.total_ios);
    o.int("short_ios", ds.short_ios);
    o.int("drop_ios", ds.drop_ios);
    o.obj("slat_ns", lat_json(ts, ts.slat_percentiles, &ds.slat, plus));
    o.obj("clat_ns", lat_json(ts, ts.clat_percentiles, &ds.clat, plus));
    o.obj("lat_ns", lat_json(ts, ts.lat_percentiles, &ds.lat, plus));
    let (bmin, bmax, bagg, bmean, bdev) = match ds.bw.calc() {
        Some((min, max, mean, dev)) => (min, max, agg_percent(rs, d, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.int("bw_min", bmin);
    o.int("bw_max", bmax);
    o.float("bw_agg", bagg);
    o.float("bw_mean", bmean);
    o.float("bw_dev", bdev);
    o.int("bw_samples", ds.bw.samples);
    let (imin, imax, imean, idev) = calc_or_zero(&ds.iops);
    o.int("iops_min", imin);
    o.int("iops_max", imax);
    o.float("iops_mean", imean);
    o.float("iops_stddev", idev);
    o.int("iops_samples", ds.iops.samples);
    o
}

fn sync_json(ts: &JobReport, plus: bool) -> Obj {
    let mut o = Obj::new();
    o.int("total_ios", ts.sync.total_ios);
    o.obj(
        "lat_ns",
        lat_json(
            ts,
            ts.lat_percentiles || ts.clat_percentiles,
            &ts.sync.lat,
            plus,
        ),
    );
    o
}

/// fio's `stat_calc_dist`: percent of `total`, non-zero buckets floored at 0.1.
pub(crate) fn calc_dist(map: &[u64; 7], total: u64) -> [f64; 7] {
    let mut out = [0.0; 7];
    for (o, &m) in out.iter_mut().zip(map.iter()) {
        if total != 0 {
            *o = m as f64 / total as f64 * 100.0;
            if *o < 0.1 && m != 0 {
                *o = 0.1;
            }
        }
    }
    out
}

/// fio's `stat_calc_lat`: percent of all read/write/trim I/Os, floored at 0.01.
pub(crate) fn calc_lat_pct(src: &[u64], total: u64) -> Vec<f64> {
    src.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c != 0 {
                0.01
            } else {
                v
            }
        })
        .collect()
}

pub(crate) fn cpu_percent(ts: &JobReport) -> (f64, f64) {
    if ts.job_runtime_ms == 0 {
        return (0.0, 0.0);
    }
    let r = ts.job_runtime_ms as f64;
    (
        ts.usr_time_ms as f64 * 100.0 / r,
        ts.sys_time_ms as f64 * 100.0 / r,
    )
}

const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

fn job_json(e: &Entry, rs: Option<&GroupRunStats>, plus: bool) -> Obj {
    let ts = &e.ts;
    let mut root = Obj::new();
    root.str("jobname", &ts.name);
    root.int("groupid", ts.groupid as u64);
    root.sint("error", ts.error as i64);
    root.sint("eta", ts.eta);
    root.int("elapsed", ts.elapsed_s);
    if !ts.job_options.is_empty() {
        root.obj("job options", opts_obj(&ts.job_options));
    }
    let mixed = e.unified == UnifiedRw::Mixed;
    for d in Ddir::ALL {
        if mixed && d != Ddir::Read {
            continue;
        }
        let key = if mixed { "mixed" } else { d.name() };
        root.obj(key, ddir_json(ts, rs, d.index(), plus));
    }
    if !mixed {
        root.obj("sync", sync_json(ts, plus));
    }
    if e.unified == UnifiedRw::Both {
        let m = mixed_view(ts);
        root.obj("mixed", ddir_json(&m, rs, 0, plus));
    }
    let (usr, sys) = cpu_percent(ts);
    root.int("job_runtime", ts.job_runtime_ms);
    root.float("usr_cpu", usr);
    root.float("sys_cpu", sys);
    root.int("ctx", ts.ctx);
    root.int("majf", ts.majf);
    root.int("minf", ts.minf);

    let total = ts.total_rw_ios();
    let dist = calc_dist(&ts.iodepth_level, total);
    let mut o = Obj::new();
    for (i, v) in dist.iter().enumerate() {
        let name = if i < 6 {
            (1u32 << i).to_string()
        } else {
            format!(">={}", 1u32 << i)
        };
        o.float(&name, *v);
    }
    root.obj("iodepth_level", o);
    for (key, map, tot) in [
        ("iodepth_submit", &ts.iodepth_submit, ts.total_submit),
        ("iodepth_complete", &ts.iodepth_complete, ts.total_complete),
    ] {
        let dist = calc_dist(map, tot);
        let mut o = Obj::new();
        for (i, v) in dist.iter().enumerate() {
            let name = match i {
                0 => "0".to_string(),
                1..=5 => (1u32 << (i + 1)).to_string(),
                _ => format!(">={}", 1u32 << i),
            };
            o.float(&name, *v);
        }
        root.obj(key, o);
    }
    let lb = &ts.latency_buckets;
    for (key, src) in [
        ("latency_ns", &lb.ns[..]),
        ("latency_us", &lb.us[..]),
        ("latency_ms", &lb.ms[..]),
    ] {
        let pct = calc_lat_pct(src, total);
        let mut o = Obj::new();
        for (i, v) in pct.iter().enumerate() {
            o.float(LAT_KEYS[i], *v);
        }
        root.obj(key, o);
    }
    if ts.continue_on_error {
        root.int("total_err", ts.total_err_count);
        root.sint("first_error", ts.first_error as i64);
    }
    if ts.latency_depth != 0 {
        root.int("latency_depth", ts.latency_depth as u64);
        root.int("latency_target", ts.latency_target);
        root.float("latency_percentile", ts.latency_percentile);
        root.int("latency_window", ts.latency_window);
    }
    root.str("desc", &ts.description);
    if let Some(ss) = &ts.steadystate {
        root.obj("steadystate", ss_json(ss));
    }
    if !ts.spans.is_empty() {
        root.obj("flashpath", spans_json(ts));
    }
    root
}

/// stat.c's `steadystate` object (limits and criterion printed through a float, as
/// fio casts them).
fn ss_json(ss: &crate::report::model::SteadyState) -> Obj {
    let pct = if ss.pct { "%" } else { "" };
    let mut o = Obj::new();
    o.str(
        "ss",
        &format!(
            "{}{}:{}{}",
            if ss.iops { "iops" } else { "bw" },
            if ss.slope { "_slope" } else { "" },
            cf(ss.limit as f32 as f64, 6),
            pct
        ),
    );
    o.sint("duration", ss.dur as i32 as i64);
    o.int("attained", u64::from(ss.attained));
    o.str(
        "criterion",
        &format!("{}{}", cf(ss.criterion as f32 as f64, 6), pct),
    );
    o.float("max_deviation", ss.max_deviation);
    o.float("slope", ss.slope_value);
    let mut data = Obj::new();
    data.int("bw_mean", ss.bw_mean());
    data.int("iops_mean", ss.iops_mean());
    data.arr(
        "iops",
        ss.iops_data.iter().map(|&v| Value::Int(v as i64)).collect(),
    );
    data.arr("bw", ss.bw.iter().map(|&v| Value::Int(v as i64)).collect());
    o.obj("data", data);
    o
}

/// flashpath's extension: `{"spans": {NAME: {count, mean_ns, p50_ns, p99_ns, share}},
/// "software_share": x}`; shares are fractions of the mean pre + hw + post. A job with
/// spans in more than one direction has the same object per direction beside them:
/// `"read": {"spans": ..., "software_share": x}`, `"write"`, `"trim"`; and the busy
/// times of the job's measured window, `"occupancy": {"window_ns", "core_busy_ns": [per
/// core], "hw_busy_ns"}`.
fn spans_json(ts: &JobReport) -> Obj {
    let mut root = span_set_json(&ts.spans);
    for (d, set) in ts.split_spans() {
        root.obj(Ddir::ALL[d].name(), span_set_json(set));
    }
    if let Some(o) = &ts.occupancy {
        let mut x = Obj::new();
        x.int("window_ns", o.window_ns);
        x.arr(
            "core_busy_ns",
            o.core_busy_ns
                .iter()
                .map(|&v| Value::Int(v as i64))
                .collect(),
        );
        x.int("hw_busy_ns", o.hw_busy_ns);
        root.obj("occupancy", x);
    }
    root
}

fn span_set_json(set: &SpanSet) -> Obj {
    let total = span_total(set).unwrap_or(0.0);
    let mut spans = Obj::new();
    for (name, h) in set {
        let p = h.percentiles(&[50.0, 99.0]);
        let mut o = Obj::new();
        o.int("count", h.count());
        o.float("mean_ns", h.mean());
        o.int("p50_ns", p[0]);
        o.int("p99_ns", p[1]);
        o.float("share", if total > 0.0 { h.mean() / total } else { 0.0 });
        spans.obj(name, o);
    }
    let mut root = Obj::new();
    root.obj("spans", spans);
    root.float("software_share", software_share(set).unwrap_or(0.0));
    root
}

/// The JSON document as a string (ends with `}` and a newline, as fio prints it).
pub fn json_string(r: &RunReport, plus: bool) -> String {
    let (entries, groups) = aggregate(&r.jobs);
    let mut root = Obj::new();
    root.str("fio version", &r.fio_version);
    root.int("timestamp", r.timestamp_s);
    root.int("timestamp_ms", r.timestamp_ms);
    root.str("time", &r.time);
    if !r.global_options.is_empty() {
        root.obj("global options", opts_obj(&r.global_options));
    }
    let jobs: Vec<Value> = entries
        .iter()
        .map(|e| {
            Value::Obj(job_json(
                e,
                super::aggregate::find_group(&groups, e.ts.groupid),
                plus,
            ))
        })
        .collect();
    root.arr("jobs", jobs);
    if !r.disk_util.is_empty() {
        let arr = r
            .disk_util
            .iter()
            .map(|du| {
                let mut o = Obj::new();
                o.str("name", &du.name);
                o.int("read_ios", du.read_ios);
                o.int("write_ios", du.write_ios);
                o.int("read_merges", du.read_merges);
                o.int("write_merges", du.write_merges);
                o.int("read_ticks", du.read_ticks);
                o.int("write_ticks", du.write_ticks);
                o.int("in_queue", du.in_queue);
                o.float("util", du.util);
                Value::Obj(o)
            })
            .collect();
        root.arr("disk_util", arr);
    }
    if !r.counters.is_empty() || r.configuration.is_some() || r.interrupted.is_some() {
        let mut fp = Obj::new();
        if let Some(c) = &r.configuration {
            let mut o = Obj::new();
            o.str("version", &c.version);
            o.str("device", &c.device);
            o.str("host", &c.host);
            o.str("driver", &c.driver);
            o.str("precondition", &c.precondition);
            o.str("layout", &c.layout);
            let mut sets = Obj::new();
            // A field set twice: the last value is the one that ran.
            for (i, (f, v)) in c.sets.iter().enumerate() {
                if !c.sets[i + 1..].iter().any(|(g, _)| g == f) {
                    sets.str(f, v);
                }
            }
            o.obj("set", sets);
            if c.zero_above_block {
                o.str("costs_above_block", "zero");
            }
            fp.obj("configuration", o);
        }
        if let Some(i) = &r.interrupted {
            let mut o = Obj::new();
            o.int("signal", i.signal as u64);
            o.int("simulated_ns", i.simulated_ns);
            fp.obj("interrupted", o);
        }
        for (group, counters) in &r.counters {
            let mut o = Obj::new();
            for (k, v) in counters {
                o.int(k, *v);
            }
            fp.obj(group, o);
        }
        root.obj("flashpath", fp);
    }
    let mut out = String::new();
    print_obj(&mut out, &root, 0);
    out.push('\n');
    out
}

/// Writes fio's `--output-format=json` (`plus == false`) or `json+` (`plus == true`).
pub fn write_json(r: &RunReport, out: &mut impl Write, plus: bool) -> io::Result<()> {
    out.write_all(json_string(r, plus).as_bytes())
}
