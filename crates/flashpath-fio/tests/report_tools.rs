//! Feeds a synthetic run through the model, the samplers and the log writers, writes a
//! json+ file and a log directory, and runs fio's own consumers on them through
//! `check-fio-tools.sh` (in tests/data/report/).
//!
//! Needs the Debian packages `fio` and `python3-six` (fio's tools import `six`; the
//! test is skipped with a note when fio is missing). `gnuplot-nox`, `python3-numpy`
//! and `python3-pandas` let the rest of the script run (fio2gnuplot -g,
//! fio_generate_plots, fiologparser_hist.py); the script skips them when missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashpath_fio::report::*;

/// A tiny deterministic generator (SplitMix64) for the synthetic latencies.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A 3 s randrw 70/30, 4 KiB, QD 4 run with log-normal-ish latencies.
fn synthetic_run(dir: &Path) -> RunReport {
    let mut r = RunReport::new(1_795_339_782_335, "Sun Nov 22 09:29:42 2026");
    let mut j = JobReport::new("synth", 0);
    j.pid = 4242;
    j.header = JobHeader {
        rw: "randrw".into(),
        bs: [(4096, 4096); 3],
        ioengine: "libaio".into(),
        iodepth: 4,
    };
    j.job_options = vec![
        ("rw".into(), "randrw".into()),
        ("rwmixread".into(), "70".into()),
        ("iodepth".into(), "4".into()),
        ("write_bw_log".into(), "synth".into()),
        ("write_iops_log".into(), "synth".into()),
        ("write_lat_log".into(), "synth".into()),
        ("write_hist_log".into(), "synth".into()),
        ("log_avg_msec".into(), "250".into()),
        ("log_hist_msec".into(), "500".into()),
    ];
    j.latency_depth = 4;
    let mut opts = LogOptions::new("synth", 1);
    opts.log_avg_msec = 250;
    opts.log_hist_msec = 500;
    let mut logs = LogSet::new().with_lat(&opts).with_hist(&opts);
    let window = effective_window_ms(500, true, opts.log_avg_msec);
    let mut bw =
        RateSampler::new(RateKind::Bw, window).with_log(LogWriter::new(LogKind::Bw, opts.clone()));
    let mut iops = RateSampler::new(RateKind::Iops, window)
        .with_log(LogWriter::new(LogKind::Iops, opts.clone()));
    let mut rng = Rng(7);
    let end_ns = 3_000_000_000u64;
    let mut t_ns = 0u64;
    let mut n = 0u64;
    while t_ns < end_ns {
        let ddir = if rng.next() % 10 < 7 {
            Ddir::Read
        } else {
            Ddir::Write
        };
        let slat = 1_000 + rng.next() % 4_000;
        // Mostly 60..200 us, with a slow tail up to ~5 ms.
        let mut clat = 60_000 + rng.next() % 140_000;
        if rng.next().is_multiple_of(100) {
            clat += rng.next() % 5_000_000;
        }
        let issue_ms = t_ns / 1_000_000;
        let done_ns = t_ns + slat + clat;
        let done_ms = done_ns / 1_000_000;
        let offset = (rng.next() % 65_536) * 4096;
        j.record_io(ddir, 4096, Some(slat), clat);
        logs.io_submitted(issue_ms, ddir, 4096, offset, 0, slat);
        logs.io_completed(&IoEvent {
            time_ms: done_ms,
            ddir,
            bytes: 4096,
            offset,
            prio: 0,
            clat_ns: clat,
            lat_ns: slat + clat,
        });
        bw.record(done_ms, ddir, 4096);
        iops.record(done_ms, ddir, 4096);
        j.iodepth_level[depth_level_bucket(4)] += 1;
        j.iodepth_submit[batch_bucket(1)] += 1;
        j.total_submit += 1;
        j.iodepth_complete[batch_bucket(1)] += 1;
        j.total_complete += 1;
        // QD 4: the next I/O starts a quarter of this one's latency later.
        t_ns += (slat + clat) / 4;
        n += 1;
    }
    let end_ms = 3001;
    bw.finish(end_ms);
    iops.finish(end_ms);
    logs.finish(end_ms);
    for d in [Ddir::Read, Ddir::Write] {
        let ds = j.dir_mut(d);
        ds.runtime_ms = end_ms;
        ds.bw = bw.stat(d);
        ds.iops = iops.stat(d);
    }
    j.job_runtime_ms = 3000;
    j.usr_time_ms = 300;
    j.sys_time_ms = 1200;
    j.ctx = n / 3;
    assert!(j.dir(Ddir::Read).bw.samples >= 10);
    r.jobs.push(j);
    logs.write_to(dir).unwrap();
    let bw_log = bw.log.take().unwrap();
    let iops_log = iops.log.take().unwrap();
    bw_log.write_to(dir).unwrap();
    iops_log.write_to(dir).unwrap();
    r
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd} >/dev/null 2>&1"))
        .status()
        .is_ok_and(|s| s.success())
}

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("flashpath-report-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

#[test]
fn synthetic_logs_have_fio_layout() {
    let dir = scratch("layout");
    let _ = synthetic_run(&dir);
    let names: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names,
        [
            "synth_bw.1.log",
            "synth_clat.1.log",
            "synth_clat_hist.1.log",
            "synth_iops.1.log",
            "synth_lat.1.log",
            "synth_slat.1.log"
        ]
    );
    let bw = std::fs::read_to_string(dir.join("synth_bw.1.log")).unwrap();
    let first = bw.lines().next().unwrap();
    assert!(first.starts_with("250, "), "{first}");
    assert!(first.ends_with(", 0, 0, 0"), "{first}");
    for l in bw.lines() {
        assert_eq!(l.split(", ").count(), 5, "{l}");
    }
    let hist = std::fs::read_to_string(dir.join("synth_clat_hist.1.log")).unwrap();
    for l in hist.lines() {
        assert_eq!(l.split(", ").count(), 3 + 1856, "hist line");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fio_tools_accept_our_output() {
    if !have("fio") || !have("fio_jsonplus_clat2csv") || !have("fio2gnuplot") {
        eprintln!(
            "NOTE: fio (Debian package `fio`) is not installed; skipping the fio tools check"
        );
        return;
    }
    let dir = scratch("tools");
    let logdir = dir.join("logs");
    std::fs::create_dir_all(&logdir).unwrap();
    let r = synthetic_run(&logdir);
    let json = dir.join("synth.json");
    let mut f = std::fs::File::create(&json).unwrap();
    write_json(&r, &mut f, true).unwrap();
    drop(f);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report/check-fio-tools.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script).arg(&json).arg(&logdir);
    // Debian's python3-numpy/python3-pandas live in /usr/bin/python3, which may not
    // be the first python3 on PATH (pyenv).
    let sys_py = "/usr/bin/python3";
    let has_np = Command::new(sys_py)
        .args(["-c", "import numpy, pandas"])
        .status()
        .is_ok_and(|s| s.success());
    if has_np {
        cmd.env("PYHIST", sys_py);
    } else {
        eprintln!("NOTE: no numpy/pandas for {sys_py}; fiologparser_hist.py will be skipped");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("PASS fio_jsonplus_clat2csv"), "{stdout}");
    assert!(stdout.contains("PASS fio2gnuplot"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(out.status.success(), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
