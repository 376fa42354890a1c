//! Unit tests of the report model: percentile edge cases, group_reporting merges,
//! log-file semantics, and "no panic on any input".

use flashpath_fio::report::*;
use flashpath_hist::{plat_idx_to_val, plat_val_to_idx};
use proptest::prelude::*;

fn json(r: &RunReport, plus: bool) -> String {
    json_string(r, plus)
}

fn job_with_clat(values: &[u64]) -> JobReport {
    let mut j = JobReport::new("p", 0);
    for &v in values {
        j.record_io(Ddir::Read, 4096, Some(100), v);
    }
    j.dir_mut(Ddir::Read).runtime_ms = 1000;
    j.job_runtime_ms = 1000;
    j
}

fn run(jobs: Vec<JobReport>) -> RunReport {
    let mut r = RunReport::new(1_000_000, "Thu Jan  1 00:16:40 1970");
    r.jobs = jobs;
    r
}

// ---- percentiles -------------------------------------------------------------

#[test]
fn percentiles_empty_histogram() {
    let h = LatHist::new();
    assert_eq!(h.percentiles(&DEFAULT_PERCENTILES), vec![0; 17]);
    let r = run(vec![job_with_clat(&[])]);
    let js = json(&r, true);
    // No samples: no "percentile" and no "bins" objects at all.
    assert!(!js.contains("\"percentile\""));
    assert!(!js.contains("\"bins\""));
    // Terse still prints the 17 percentiles with value 0 (fio walks an empty histogram).
    let t = terse_string(&r, 3);
    assert!(t.contains(";1.000000%=0;5.000000%=0;"), "{t}");
    assert!(t.contains(";99.990000%=0;0%=0;0%=0;0%=0;"), "{t}");
    // Normal output skips a job that moved nothing.
    assert!(!normal_report_string(&r).contains("groupid="));
}

#[test]
fn percentiles_one_sample() {
    let v = 1_234_567u64;
    let mid = plat_idx_to_val(plat_val_to_idx(v));
    let mut h = LatHist::new();
    h.record(v);
    assert_eq!(h.percentiles(&[1.0, 50.0, 99.99, 100.0]), vec![mid; 4]);
    let r = run(vec![job_with_clat(&[v])]);
    let js = json(&r, true);
    assert!(js.contains(&format!("\"99.990000\" : {mid}")), "{js}");
    assert!(js.contains(&format!("\"{mid}\" : 1")), "{js}");
    let n = normal_report_string(&r);
    // 1.2 ms sample: fio's text percentiles switch to usec and round up.
    assert!(n.contains("clat percentiles (usec):"), "{n}");
    assert!(n.contains(&format!("[{:>5}]", mid.div_ceil(1000))), "{n}");
}

#[test]
fn percentiles_all_in_one_bucket() {
    // 4096..4159 share one bucket (error bits 6), reported by its midpoint 4128.
    let vals: Vec<u64> = (4096..4160).collect();
    let mut h = LatHist::new();
    for &v in &vals {
        h.record(v);
    }
    assert_eq!(plat_idx_to_val(plat_val_to_idx(4096)), 4128);
    assert_eq!(h.percentiles(&DEFAULT_PERCENTILES), vec![4128; 17]);
    let r = run(vec![job_with_clat(&vals)]);
    let js = json(&r, true);
    assert!(
        js.contains("\"bins\" : {\n            \"4128\" : 64\n          }"),
        "{js}"
    );
}

#[test]
fn percentile_ties_use_fio_long_double_comparison() {
    // 100 samples 1..=100 (exact buckets): p = 5 needs exactly 5 samples.
    let mut h = LatHist::new();
    for v in 1..=100 {
        h.record(v);
    }
    assert_eq!(
        h.percentiles(&[1.0, 5.0, 50.0, 99.0, 100.0]),
        vec![1, 5, 50, 99, 100]
    );
    // Above 100 is never reached: fio leaves it unset, we print 0.
    assert_eq!(h.percentiles(&[50.0, 101.0]), vec![50, 0]);
}

#[test]
fn percentile_list_is_sorted_and_precision_applies() {
    let mut j = job_with_clat(&[10, 20, 30, 40]);
    j.percentile_list = vec![99.5, 50.0, 1.0];
    j.percentile_precision = 1;
    let r = run(vec![j]);
    let js = json(&r, false);
    let a = js.find("\"1.000000\"").unwrap();
    let b = js.find("\"50.000000\"").unwrap();
    let c = js.find("\"99.500000\"").unwrap();
    assert!(a < b && b < c);
    let n = normal_report_string(&r);
    assert!(
        n.contains("|  1.0th=[   10], 50.0th=[   20], 99.5th=[   40]"),
        "{n}"
    );
}

// ---- group_reporting ---------------------------------------------------------------

fn member(name: &str, gid: u32, gr: bool, clat: u64, ios: u64, runtime: u64) -> JobReport {
    let mut j = JobReport::new(name, gid);
    j.group_reporting = gr;
    for _ in 0..ios {
        j.record_io(Ddir::Write, 4096, Some(1000), clat);
    }
    j.dir_mut(Ddir::Write).runtime_ms = runtime;
    j.dir_mut(Ddir::Write).bw = IoStat::from_samples(&[100, 200]);
    j.job_runtime_ms = runtime;
    j.minf = 3;
    j.job_options = vec![("rw".into(), format!("write-{name}"))];
    j
}

#[test]
fn group_reporting_merges_consecutive_flagged_jobs() {
    let jobs = vec![
        member("a", 0, true, 1000, 10, 100),
        member("a2", 0, true, 3000, 30, 300),
        member("solo", 0, false, 5000, 5, 50),
        member("b", 1, true, 7000, 7, 70),
    ];
    let (entries, groups) = aggregate(&jobs);
    assert_eq!(entries.len(), 3);
    let e = &entries[0];
    assert_eq!(e.ts.name, "a");
    assert_eq!(e.members, 2);
    let w = e.ts.dir(Ddir::Write);
    assert_eq!(w.total_ios, 40);
    assert_eq!(w.io_bytes, 40 * 4096);
    assert_eq!(w.runtime_ms, 300, "runtime is the members' maximum");
    assert_eq!(w.clat.hist.count(), 40);
    assert_eq!(w.clat.stat.min, 1000);
    assert_eq!(w.clat.stat.max, 3000);
    assert!((w.clat.stat.mean - 2500.0).abs() < 1e-9);
    // bw samples of members are added up (fio's pure sum).
    assert_eq!(w.bw.min, 200);
    assert_eq!(w.bw.max, 400);
    assert_eq!(e.ts.minf, 6);
    assert_eq!(e.ts.job_runtime_ms, 400);
    assert_eq!(
        e.ts.job_options[0].1, "write-a2",
        "options of the last member"
    );
    assert_eq!(entries[1].ts.name, "solo");
    assert_eq!(entries[1].members, 1);
    assert_eq!(entries[2].ts.name, "b");
    // Group 0 sums: io bytes of a, a2 and solo; agg = bytes * 1000 / max runtime.
    let g0 = &groups[0];
    assert_eq!(g0.iobytes[1], 45 * 4096);
    assert_eq!(g0.max_run[1], 300);
    assert_eq!(g0.min_run[1], 50);
    assert_eq!(g0.agg[1], 45 * 4096 * 1000 / 300);
    let n = normal_report_string(&run(jobs));
    assert!(n.contains("a: (groupid=0, jobs=2)"), "{n}");
    assert!(n.contains("\nRun status group 1 (all jobs):\n"), "{n}");
}

#[test]
fn group_reporting_quirk_flagged_job_joins_previous_entry_of_same_group() {
    // fio's loop only starts a new entry for a flagged job when the group changes.
    let jobs = vec![
        member("plain", 0, false, 1000, 1, 10),
        member("flagged", 0, true, 1000, 1, 10),
    ];
    let (entries, _) = aggregate(&jobs);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].members, 2);
    assert_eq!(entries[0].ts.name, "plain");
}

#[test]
fn unified_mixed_folds_directions() {
    let mut j = JobReport::new("m", 0);
    j.unified_rw_reporting = UnifiedRw::Mixed;
    j.record_io(Ddir::Read, 4096, None, 100);
    j.record_io(Ddir::Write, 8192, None, 300);
    j.dir_mut(Ddir::Read).runtime_ms = 10;
    j.dir_mut(Ddir::Write).runtime_ms = 20;
    let r = run(vec![j]);
    let js = json(&r, false);
    assert!(js.contains("\"mixed\" : {"));
    assert!(!js.contains("\"read\" : {"));
    assert!(!js.contains("\"sync\" : {"));
    assert!(js.contains("\"io_bytes\" : 12288"));
    assert!(normal_report_string(&r).contains("  MIXED: bw="));
}

// ---- logs ----------------------------------------------------------------------

fn sample(t: u64, v: u64, d: Ddir) -> LogSample {
    LogSample {
        time_ms: t,
        value: v,
        ddir: d,
        bs: 4096,
        offset: 61440,
        prio: 0,
    }
}

#[test]
fn per_io_log_lines_match_fio() {
    let mut o = LogOptions::new("per", 1);
    o.log_offset = true;
    o.log_prio = true;
    let mut w = LogWriter::new(LogKind::Clat, o);
    w.add(sample(0, 11477, Ddir::Write));
    assert_eq!(w.contents(), "0, 11477, 1, 4096, 61440, 0x0000\n");
    assert_eq!(w.file_name(), "per_clat.1.log");
    let mut o = LogOptions::new("x", 2);
    o.per_job_logs = false;
    let mut w = LogWriter::new(LogKind::Lat, o);
    let mut s = sample(5, 7, Ddir::Read);
    s.prio = 1 << 13; // RT class
    w.add(s);
    assert_eq!(w.contents(), "5, 7, 0, 4096, 1\n");
    assert_eq!(w.file_name(), "x_lat.log");
}

#[test]
fn averaged_latency_log_windows() {
    let mut o = LogOptions::new("lg", 1);
    o.log_avg_msec = 250;
    let mut w = LogWriter::new(LogKind::Clat, o);
    w.add(sample(10, 100, Ddir::Read));
    w.add(sample(100, 201, Ddir::Read));
    w.add(sample(249, 1000, Ddir::Write)); // inline logs: 249 < 250, no flush
    w.add(sample(253, 300, Ddir::Read)); // closes the read window at 253: (100+201+300)/3
    w.add(sample(260, 5, Ddir::Read)); // window restarted at 250
    w.finish(300);
    assert_eq!(
        w.contents(),
        "253, 200, 0, 0, 0\n300, 5, 0, 0, 0\n300, 1000, 1, 0, 0\n"
    );
    // Maximum instead of mean.
    let mut o = LogOptions::new("lg", 1);
    o.log_avg_msec = 250;
    o.log_max_value = true;
    let mut w = LogWriter::new(LogKind::Lat, o);
    w.add(sample(1, 7, Ddir::Read));
    w.add(sample(251, 3, Ddir::Read));
    assert_eq!(w.contents(), "251, 7, 0, 0, 0\n");
}

#[test]
fn averaged_bw_log_has_one_ms_slack() {
    let mut o = LogOptions::new("lg", 1);
    o.log_avg_msec = 250;
    let mut w = LogWriter::new(LogKind::Bw, o.clone());
    w.add(sample(249, 42, Ddir::Read));
    assert_eq!(w.contents(), "249, 42, 0, 0, 0\n");
    let mut s = RateSampler::new(RateKind::Bw, 250).with_log(LogWriter::new(LogKind::Bw, o));
    for t in 0..1000 {
        s.record(t, Ddir::Read, 4096);
    }
    s.finish(1001);
    let log = s.log.as_ref().unwrap().contents().to_string();
    // 1000 x 4 KiB per 250 ms = 4000 KiB in 250 ms = 16000 KiB/s... per window 250 I/Os.
    assert_eq!(
        log,
        "250, 4000, 0, 0, 0\n500, 4000, 0, 0, 0\n750, 4000, 0, 0, 0\n"
    );
    assert_eq!(s.stat(Ddir::Read).samples, 3);
}

#[test]
fn hist_log_windows_and_coarseness() {
    let mut o = LogOptions::new("h", 1);
    o.log_hist_msec = 500;
    let mut w = HistLogWriter::new(o.clone());
    w.add(1, Ddir::Read, 4096, 100); // starts the window at 1 ms
    w.add(300, Ddir::Read, 4096, 100);
    w.add(501, Ddir::Read, 4096, 5000); // 500 ms after the start: line
    w.add(700, Ddir::Read, 4096, 100);
    w.add(1001, Ddir::Read, 4096, 100); // next line holds only the last two
    let lines: Vec<&str> = w.contents().lines().collect();
    assert_eq!(lines.len(), 2);
    let f0: Vec<u64> = lines[0].split(", ").map(|x| x.parse().unwrap()).collect();
    assert_eq!(f0.len(), 3 + 1856);
    assert_eq!(&f0[..3], &[501, 0, 4096]);
    assert_eq!(f0[3 + 100], 2, "two samples of 100 ns in the first line");
    assert_eq!(f0[3 + plat_val_to_idx(5000)], 1);
    let f1: Vec<u64> = lines[1].split(", ").map(|x| x.parse().unwrap()).collect();
    assert_eq!(f1[0], 1001);
    assert_eq!(f1[3 + 100], 2);
    assert_eq!(f1[3..].iter().sum::<u64>(), 2);
    o.log_hist_coarseness = 2;
    let mut w = HistLogWriter::new(o);
    w.add(1, Ddir::Write, 4096, 100);
    w.add(600, Ddir::Write, 8192, 100);
    let l = w.contents().lines().next().unwrap();
    assert_eq!(l.split(", ").count(), 3 + 464);
    assert!(l.starts_with("600, 1, 8192, "));
}

// ---- formats and robustness ------------------------------------------------------

#[test]
fn write_formats_order_is_terse_json_normal() {
    let mut j = job_with_clat(&[1000, 2000]);
    j.header.ioengine = "null".into();
    let r = run(vec![j]);
    let mut out = Vec::new();
    let f = Format::parse_list("json,normal,terse", 3).unwrap();
    write_formats(&r, &f, &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    let h = s.find("p: (g=0)").unwrap();
    let t = s.find("3;fio-3.33;p;").unwrap();
    let jj = s.find("{\n  \"fio version\"").unwrap();
    let n = s.find("\np: (groupid=0").unwrap();
    assert!(h < t && t < jj && jj < n);
    assert!(Format::parse_list("xml", 3).is_err());
}

#[test]
fn empty_run_prints_like_fio() {
    let r = run(vec![]);
    let js = json(&r, false);
    assert!(js.ends_with("\"jobs\" : [\n\n  ]\n}\n"), "{js}");
    assert_eq!(terse_string(&r, 3), "");
    assert_eq!(normal_report_string(&r), "\n");
    assert_eq!(terse_string(&run(vec![job_with_clat(&[1])]), 9), "");
}

#[test]
fn no_io_job_terse_prints_negative_nan_like_fio() {
    let r = run(vec![JobReport::new("z", 0)]);
    let t = terse_string(&r, 3);
    assert!(t.contains(";0.0%;-nan%;0.00%;"), "{t}");
}

fn arb_job() -> impl Strategy<Value = JobReport> {
    (
        "[a-z\"\\\\ ]{0,8}",
        0u32..4,
        proptest::collection::vec((0usize..3, any::<u64>(), any::<u64>(), any::<u64>()), 0..20),
        any::<u64>(),
        any::<bool>(),
        prop_oneof![
            Just(UnifiedRw::None),
            Just(UnifiedRw::Mixed),
            Just(UnifiedRw::Both)
        ],
        proptest::collection::vec(-10.0f64..200.0, 0..25),
        (0u32..30, 0u32..40, any::<u32>(), any::<bool>()),
    )
        .prop_map(|(name, gid, ios, rt, gr, uni, pl, (prec, sig, kb, bits))| {
            let mut j = JobReport::new(name, gid);
            for (d, bytes, slat, clat) in ios {
                let d = Ddir::from_index(d).unwrap();
                j.record_io(d, bytes % (1 << 40), Some(slat >> 8), clat >> 8);
                j.dir_mut(d).runtime_ms = rt % 100_000;
                j.dir_mut(d).bw.add(bytes % 1_000_000);
                j.dir_mut(d).bw.add(slat);
            }
            j.record_sync(rt);
            j.group_reporting = gr;
            j.unified_rw_reporting = uni;
            j.percentile_list = pl;
            j.percentile_precision = prec;
            j.sig_figs = sig;
            j.kb_base = kb;
            j.unit_bits = bits;
            j.job_runtime_ms = rt;
            j.usr_time_ms = rt.wrapping_mul(3);
            j.iodepth_level = [rt, 1, 2, 3, 4, 5, u64::MAX];
            j.total_submit = rt % 7;
            j.latency_depth = gid;
            j.continue_on_error = gr;
            j.first_error = gid as i32 * 37 - 40;
            j.description = j.name.clone();
            j
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn writers_never_panic(jobs in proptest::collection::vec(arb_job(), 0..5), ver in 0u32..7) {
        let mut r = run(jobs);
        r.disk_util.push(DiskUtil { name: "sda".into(), util: f64::NAN, ..Default::default() });
        let all = [Format::Normal, Format::Json, Format::JsonPlus, Format::Terse(ver)];
        let mut out = Vec::new();
        write_formats(&r, &all, &mut out).unwrap();
        prop_assert!(!out.is_empty());
    }

    #[test]
    fn samplers_and_logs_never_panic(
        evs in proptest::collection::vec((any::<u32>(), 0usize..3, any::<u64>(), any::<u64>()), 0..50),
        avg in 0u64..2000, hist in 0u64..2000, coarse in 0u32..12, win in 0u64..3000,
    ) {
        let mut o = LogOptions::new("p", 1);
        o.log_avg_msec = avg;
        o.log_hist_msec = hist;
        o.log_hist_coarseness = coarse;
        let mut set = LogSet::new().with_bw(&o).with_iops(&o).with_lat(&o).with_hist(&o);
        let mut s = RateSampler::new(RateKind::Bw, win);
        let mut evs = evs;
        evs.sort_by_key(|e| e.0);
        for (t, d, bytes, clat) in evs {
            let d = Ddir::from_index(d).unwrap();
            let t = t as u64 * 1000;
            set.io_submitted(t, d, bytes, 0, 0, clat / 3);
            set.io_completed(&IoEvent { time_ms: t, ddir: d, bytes, offset: 0, prio: u16::MAX, clat_ns: clat, lat_ns: clat });
            s.record(t, d, bytes);
        }
        s.record(u64::MAX, Ddir::Read, 1);
        s.finish(u64::MAX);
        set.finish(u64::MAX);
    }
}

// ---- flashpath's spans -------------------------------------------------------

fn hist(values: &[u64]) -> LatHist {
    let mut h = LatHist::new();
    for &v in values {
        h.record(v);
    }
    h
}

/// A job with read and write spans: the job's set and one per direction.
fn job_with_spans(group_reporting: bool, r_hw: u64, w_hw: u64) -> JobReport {
    let mut j = job_with_clat(&[1000]);
    j.group_reporting = group_reporting;
    let set = |hw: &[u64]| -> SpanSet {
        vec![
            ("pre", hist(&vec![100; hw.len()])),
            ("hw", hist(hw)),
            ("post", hist(&vec![100; hw.len()])),
        ]
    };
    j.dir_spans[0] = set(&[r_hw]);
    j.dir_spans[1] = set(&[w_hw, w_hw]);
    j.spans = set(&[r_hw, w_hw, w_hw]);
    j
}

#[test]
fn spans_split_by_direction_only_when_there_are_two() {
    let v: serde_json::Value =
        serde_json::from_str(&json(&run(vec![job_with_spans(false, 800, 200)]), false)).unwrap();
    let fp = &v["jobs"][0]["flashpath"];
    assert_eq!(fp["read"]["spans"]["hw"]["mean_ns"].as_f64(), Some(800.0));
    assert_eq!(fp["write"]["spans"]["hw"]["count"].as_u64(), Some(2));
    // Software share of each direction from its own means: 200 / (200 + hw).
    assert_eq!(fp["read"]["software_share"].as_f64(), Some(0.2));
    assert_eq!(fp["write"]["software_share"].as_f64(), Some(0.5));
    assert!(fp["trim"].is_null());
    let text = normal_report_string(&run(vec![job_with_spans(false, 800, 200)]));
    assert!(
        text.contains("  read spans (usec): software share=20.00% of pre+hw+post"),
        "{text}"
    );
    assert!(
        text.contains("  write spans (usec): software share=50.00% of pre+hw+post"),
        "{text}"
    );
    // One direction: the job's spans only.
    let mut j = job_with_spans(false, 800, 200);
    j.dir_spans[1].clear();
    let v: serde_json::Value = serde_json::from_str(&json(&run(vec![j]), false)).unwrap();
    assert!(v["jobs"][0]["flashpath"]["read"].is_null());
    assert!(v["jobs"][0]["flashpath"]["spans"]["hw"].is_object());
}

#[test]
fn group_reporting_merges_the_directions_spans_and_unified_drops_them() {
    let r = run(vec![
        job_with_spans(true, 800, 200),
        job_with_spans(true, 400, 600),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json(&r, false)).unwrap();
    let fp = &v["jobs"][0]["flashpath"];
    assert_eq!(fp["read"]["spans"]["hw"]["mean_ns"].as_f64(), Some(600.0));
    assert_eq!(fp["write"]["spans"]["hw"]["mean_ns"].as_f64(), Some(400.0));
    assert_eq!(fp["spans"]["hw"]["count"].as_u64(), Some(6));
    let mut j = job_with_spans(false, 800, 200);
    j.unified_rw_reporting = UnifiedRw::Mixed;
    let v: serde_json::Value = serde_json::from_str(&json(&run(vec![j]), false)).unwrap();
    let fp = &v["jobs"][0]["flashpath"];
    assert!(fp["read"].is_null() && fp["write"].is_null(), "{fp}");
    assert_eq!(fp["spans"]["hw"]["count"].as_u64(), Some(3));
}
