//! fio's time-series logs written by the flashpath binary: fio 3.33's file names and
//! line layout, values that agree with each other and with the run's report, the
//! windows fio's helper thread samples, per_job_logs=0's shared file, --bandwidth-log;
//! and fio's own tools (fiologparser.py, fiologparser_hist.py, fio2gnuplot,
//! fio_generate_plots) read them, their averages agreeing with the report.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs flashpath in `dir` (where the logs go).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run flashpath")
}

/// A log's lines as numbers (every field), checking fio's `%lu, %PRId64, %u, %llu, ...`
/// layout: fields separated by ", ", no trailing space.
fn lines(p: &Path, fields: usize) -> Vec<Vec<i64>> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| {
            let v: Vec<&str> = l.split(", ").collect();
            assert_eq!(v.len(), fields, "{}: {l:?}", p.display());
            v.iter()
                .map(|x| {
                    if let Some(h) = x.strip_prefix("0x") {
                        assert_eq!(h.len(), 4, "prio as 0x%04x: {l:?}");
                        i64::from_str_radix(h, 16).unwrap()
                    } else {
                        x.parse()
                            .unwrap_or_else(|_| panic!("{}: field {x:?} in {l:?}", p.display()))
                    }
                })
                .collect()
        })
        .collect()
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("fio JSON")
}

/// Per-I/O logs (log_avg_msec=0) of two psync clones with log_offset and log_prio:
/// one line per I/O in each of lat, clat, bw, iops, an empty slat log (a sync engine
/// has no submission latency), bw = bytes × 10⁶ / clat of the same I/O, lat ≥ clat,
/// each offset once; the report's bw/iops statistics are the per-I/O samples.
#[test]
fn per_io_logs_have_fios_layout_and_agree_with_the_report() {
    let dir = scratch("logs-per-io");
    // A bare write_bw_log (in a job file: on fio's command line a bare --write_bw_log
    // takes the next argument as its value) names the logs after the job.
    std::fs::write(
        dir.join("r.fio"),
        "[r]\nrw=randread\nbs=4k\nsize=16m\nio_size=1m\nioengine=psync\ndirect=1\n\
         numjobs=2\nwrite_bw_log\nwrite_iops_log=io\nwrite_lat_log\nlog_offset=1\nlog_prio=1\n",
    )
    .unwrap();
    let out = run_in(&dir, &["fio", "r.fio", "--output-format=json"]);
    let rep = json(&out);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "io_iops.1.log",
            "io_iops.2.log",
            "r_bw.1.log",
            "r_bw.2.log",
            "r_clat.1.log",
            "r_clat.2.log",
            "r_lat.1.log",
            "r_lat.2.log",
            "r_slat.1.log",
            "r_slat.2.log"
        ]
    );
    for n in 1..=2 {
        let f = |k: &str| dir.join(format!("r_{k}.{n}.log"));
        let lat = lines(&f("lat"), 6);
        let clat = lines(&f("clat"), 6);
        let bw = lines(&f("bw"), 6);
        let iops = lines(&dir.join(format!("io_iops.{n}.log")), 6);
        assert!(lines(&f("slat"), 6).is_empty());
        assert_eq!(lat.len(), 256);
        for l in [&clat, &bw, &iops] {
            assert_eq!(l.len(), 256);
        }
        let mut offsets = Vec::new();
        let mut last_t = 0;
        for i in 0..256 {
            let (c, b) = (&clat[i], &bw[i]);
            // time, value, ddir 0 (read), bs 4096, offset, prio 0x0000
            assert_eq!((c[2], c[3], c[5]), (0, 4096, 0));
            assert_eq!(c[0], lat[i][0]);
            assert!(c[0] >= last_t, "times go forward");
            last_t = c[0];
            assert!(lat[i][1] >= c[1]);
            assert_eq!(b[1], 4096 * 1_000_000 / c[1], "bw of I/O {i}");
            assert_eq!((b[0], b[4]), (c[0], c[4]));
            assert_eq!(iops[i][1], 1);
            assert_eq!(c[4] % 4096, 0);
            offsets.push(c[4]);
        }
        offsets.sort();
        offsets.dedup();
        assert_eq!(offsets.len(), 256, "a random map visits each block once");
        // fio's report takes bw and iops from the same per-I/O samples.
        let r = &rep["jobs"][n - 1]["read"];
        assert_eq!(r["total_ios"], 256);
        assert_eq!(r["bw_samples"], 256);
        assert_eq!(r["iops_samples"], 256);
        assert_eq!(r["iops_min"], 1);
        assert_eq!(r["iops_max"], 1);
        let vals: Vec<i64> = bw.iter().map(|l| l[1]).collect();
        assert_eq!(r["bw_min"], *vals.iter().min().unwrap());
        assert_eq!(r["bw_max"], *vals.iter().max().unwrap());
        let mean = vals.iter().sum::<i64>() as f64 / 256.0;
        let got = r["bw_mean"].as_f64().unwrap();
        assert!((got - mean).abs() < 1e-3 * mean, "{got} vs {mean}");
    }
}

/// Windowed logs (log_avg_msec=100) of a time-based randrw libaio job with a ramp:
/// bw and iops lines at each 100 ms boundary of the job's epoch (the end of its ramp)
/// for each direction, bs and offset 0; the lat/clat/slat logs one line per window
/// (at the completion that closes it) and a last one when the job ends; the report's
/// bw/iops samples are these windows; the histogram log a line per direction every
/// log_hist_msec with 1856 bins (fewer with coarseness), whose counts add up to the
/// I/Os completed up to its last line.
#[test]
fn windowed_logs_follow_fios_helper_thread() {
    let dir = scratch("logs-windowed");
    let out = run_in(
        &dir,
        &[
            "fio",
            "--name=w",
            "--rw=randrw",
            "--bs=4k",
            "--size=64m",
            "--ioengine=libaio",
            "--iodepth=4",
            "--direct=1",
            "--time_based",
            "--runtime=1",
            "--ramp_time=200ms",
            "--write_bw_log=w",
            "--write_iops_log=w",
            "--write_lat_log=w",
            "--write_hist_log=w",
            "--log_avg_msec=100",
            "--log_hist_msec=250",
            "--log_hist_coarseness=2",
            "--output-format=json",
        ],
    );
    let rep = json(&out);
    let job = &rep["jobs"][0];
    let runtime_ms = job["read"]["runtime"].as_i64().unwrap();
    let windows = runtime_ms / 100;
    assert!(windows >= 10, "{runtime_ms}");
    for (kind, key) in [("bw", "bw"), ("iops", "iops")] {
        let l = lines(&dir.join(format!("w_{kind}.1.log")), 5);
        for (d, name) in [(0, "read"), (1, "write")] {
            let of_dir: Vec<&Vec<i64>> = l.iter().filter(|x| x[2] == d).collect();
            assert_eq!(of_dir.len() as i64, windows, "{kind} {name}");
            for (k, x) in of_dir.iter().enumerate() {
                assert_eq!(x[0], 100 * (k as i64 + 1), "{kind} {name} window {k}");
                assert_eq!((x[3], x[4]), (0, 0));
            }
            let r = &job[name];
            assert_eq!(r[format!("{key}_samples")], windows);
            let vals: Vec<i64> = of_dir.iter().map(|x| x[1]).collect();
            assert_eq!(r[format!("{key}_min")], *vals.iter().min().unwrap());
            assert_eq!(r[format!("{key}_max")], *vals.iter().max().unwrap());
        }
    }
    // Both from the window's n I/Os of 4 KiB: bw = n × 4096 × 1000 / 100 / 1024 = 40n
    // KiB/s, iops = n × 1000 / 100 = 10n.
    let bw = lines(&dir.join("w_bw.1.log"), 5);
    let iops = lines(&dir.join("w_iops.1.log"), 5);
    for (b, i) in bw.iter().zip(&iops) {
        assert_eq!((b[0], b[2]), (i[0], i[2]));
        assert_eq!(b[1], i[1] * 4);
    }
    for kind in ["lat", "clat", "slat"] {
        let l = lines(&dir.join(format!("w_{kind}.1.log")), 5);
        for d in 0..2 {
            let t: Vec<i64> = l.iter().filter(|x| x[2] == d).map(|x| x[0]).collect();
            // One per window, written at the first completion at or after its end,
            // and the rest at the job's end (finalize_logs).
            assert!(t.len() as i64 >= windows && t.len() as i64 <= windows + 1);
            for (k, &x) in t.iter().take(windows as usize).enumerate() {
                let b = 100 * (k as i64 + 1);
                assert!(x >= b && x < b + 100, "{kind} line {k} at {x}");
            }
        }
    }
    let hist = std::fs::read_to_string(dir.join("w_clat_hist.1.log")).unwrap();
    let mut total = 0u64;
    let mut rows = 0;
    for l in hist.lines() {
        let v: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
        assert_eq!(v.len(), 3 + 1856 / 4, "coarseness 2: 464 bins");
        assert_eq!(v[2], 4096);
        total += v[3..].iter().sum::<u64>();
        rows += 1;
    }
    assert!(rows >= 6, "{rows} histogram lines");
    let ios =
        job["read"]["total_ios"].as_u64().unwrap() + job["write"]["total_ios"].as_u64().unwrap();
    assert!(total > 0 && total <= ios, "{total} of {ios}");
}

/// per_job_logs=0: the clones share `<prefix>_<type>.log`, each job's lines appended
/// in turn (fio opens it with "a": an earlier run's lines stay).
#[test]
fn shared_logs_append_each_job_in_turn() {
    let dir = scratch("logs-shared");
    std::fs::write(dir.join("s_lat.log"), "earlier\n").unwrap();
    let out = run_in(
        &dir,
        &[
            "fio",
            "--name=s",
            "--rw=randread",
            "--bs=4k",
            "--size=8m",
            "--io_size=256k",
            "--numjobs=3",
            "--direct=1",
            "--write_lat_log=s",
            "--write_bw_log=s",
            "--log_avg_msec=10",
            "--per_job_logs=0",
        ],
    );
    ok(&out);
    let text = std::fs::read_to_string(dir.join("s_lat.log")).unwrap();
    assert!(text.starts_with("earlier\n"));
    let t: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(", ").next().unwrap().parse().unwrap())
        .collect();
    let restarts = t.windows(2).filter(|w| w[1] < w[0]).count();
    assert_eq!(restarts, 2, "three jobs' lines one after another: {t:?}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("flashpath-part")),
        "{names:?}"
    );
    assert!(names.contains(&"s_bw.log".to_string()));
}

/// --bandwidth-log writes fio 3.33's aggregate logs, which nothing fills (add_agg_sample
/// has no caller): three empty files.
#[test]
fn bandwidth_log_writes_fios_empty_aggregate_logs() {
    let dir = scratch("logs-agg");
    let out = run_in(
        &dir,
        &[
            "fio",
            "--bandwidth-log",
            "--name=a",
            "--rw=read",
            "--size=1m",
        ],
    );
    ok(&out);
    for f in ["agg-read_bw.log", "agg-write_bw.log", "agg-trim_bw.log"] {
        assert_eq!(std::fs::read(dir.join(f)).unwrap().len(), 0, "{f}");
    }
}

/// Log options flashpath does not model are refused naming them; log_hist_coarseness
/// out of fio's range is an error.
#[test]
fn unmodelled_log_options_are_refused() {
    let dir = scratch("logs-refused");
    for (opt, word) in [
        ("--log_compression=1m", "log_compression"),
        ("--log_store_compressed=1", "log_store_compressed"),
        ("--log_alternate_epoch=1", "log_alternate_epoch"),
        ("--log_hist_coarseness=9", "log_hist_coarseness"),
    ] {
        let out = run_in(
            &dir,
            &["fio", "--name=x", "--size=1m", "--write_lat_log=x", opt],
        );
        assert!(!out.status.success(), "{opt} accepted");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(word), "{opt}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
}

/// A python that has `modules` (the one on PATH, else the system's, where Debian's
/// python3-numpy and python3-pandas install).
fn python_with(modules: &str) -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", &format!("import {modules}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// The tools test's run: two libaio clones with every log, windowed.
fn out_args() -> Vec<String> {
    [
        "fio",
        "--name=t",
        "--rw=randread",
        "--bs=4k",
        "--size=64m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--direct=1",
        "--time_based",
        "--runtime=2",
        "--numjobs=2",
        "--group_reporting",
        "--write_bw_log=t",
        "--write_iops_log=t",
        "--write_lat_log=t",
        "--write_hist_log=t",
        "--log_avg_msec=100",
        "--log_hist_msec=500",
        "--output-format=json",
    ]
    .map(String::from)
    .to_vec()
}

/// fio's own tools read what flashpath writes: fiologparser.py's time-weighted average
/// of the bw logs (trimmed to 4 columns, as fio 3.33's own logs must be for it) is the
/// run's reported bandwidth; fiologparser_hist.py's percentiles lie within the run's
/// clat range; fio2gnuplot and fio_generate_plots plot them.
#[test]
fn fios_tools_read_flashpaths_logs() {
    if !have("fio") || !Path::new("/usr/share/doc/fio/fiologparser.py.gz").exists() {
        eprintln!("note: fio's tools are not installed; skipping");
        return;
    }
    let dir = scratch("logs-tools");
    let args = out_args();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_in(&dir, &a);
    let rep = json(&out);
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for f in ["fiologparser.py", "fiologparser_hist.py"] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "zcat /usr/share/doc/fio/{f}.gz > {}",
                tools.join(f).display()
            ))
            .status()
            .unwrap();
        assert!(o.success());
    }
    // fiologparser.py reads 4 columns (time, value, ddir, bs).
    let mut trimmed = Vec::new();
    for n in 1..=2 {
        let src = std::fs::read_to_string(dir.join(format!("t_bw.{n}.log"))).unwrap();
        let four: String = src
            .lines()
            .map(|l| l.split(", ").take(4).collect::<Vec<_>>().join(", ") + "\n")
            .collect();
        let p = tools.join(format!("bw4.{n}.log"));
        std::fs::write(&p, four).unwrap();
        trimmed.push(p);
    }
    let o = Command::new("python3")
        .arg(tools.join("fiologparser.py"))
        .args(&trimmed)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let avg: f64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let bw = rep["jobs"][0]["read"]["bw"].as_f64().unwrap();
    assert!(
        (avg - bw).abs() < 0.03 * bw,
        "fiologparser.py averages {avg} KiB/s, the report says {bw}"
    );

    // The histogram lines hold every I/O but those of the last, partial window.
    let mut binned = 0u64;
    for n in 1..=2 {
        let h = std::fs::read_to_string(dir.join(format!("t_clat_hist.{n}.log"))).unwrap();
        for l in h.lines() {
            binned += l
                .split(", ")
                .skip(3)
                .map(|x| x.parse::<u64>().unwrap())
                .sum::<u64>();
        }
    }
    let ios = rep["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(
        binned <= ios && binned * 100 >= ios * 95,
        "{binned} of {ios}"
    );
    if let Some(py) = python_with("numpy, pandas") {
        let o = Command::new(py)
            .arg(tools.join("fiologparser_hist.py"))
            .arg(dir.join("t_clat_hist.1.log"))
            .arg(dir.join("t_clat_hist.2.log"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let clat = &rep["jobs"][0]["read"]["clat_ns"];
        let (min_ns, max_ns) = (clat["min"].as_f64().unwrap(), clat["max"].as_f64().unwrap());
        let mut rows = 0;
        let mut samples = 0.0;
        // end-time, samples, min, avg, median, 90%, 95%, 99%, max (ns, the bins')
        for l in text.lines().skip(1) {
            let v: Vec<f64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            assert_eq!(v.len(), 9, "{l}");
            assert!(v[1] > 0.0);
            samples += v[1];
            for &p in &v[2..] {
                // Values are bin bounds: allow fio's bin width (1/64 of the value).
                assert!(
                    p >= min_ns * 0.95 && p <= max_ns * 1.05,
                    "{l} vs {min_ns}..{max_ns}"
                );
            }
            rows += 1;
        }
        assert!(rows >= 2 && samples > 0.0, "{text}");
    } else {
        eprintln!("note: numpy/pandas missing; fiologparser_hist.py not run");
    }

    // The same run's json+ and logs through check-fio-tools.sh (fio_jsonplus_clat2csv,
    // fio2gnuplot, fio_generate_plots, fiologparser.py, the histogram tools).
    let mut args: Vec<String> = out_args();
    args.push("--output-format=json+".into());
    args.push("--output=run.json".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run_in(&dir, &a));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../flashpath-fio/tests/data/report/check-fio-tools.sh"
    );
    let mut c = Command::new("bash");
    c.arg(script).arg(dir.join("run.json")).arg(&dir);
    if let Some(py) = python_with("numpy, pandas") {
        c.env("PYHIST", py);
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "check-fio-tools.sh:\n{text}");
    assert!(!text.contains("FAIL"), "{text}");

    if have("gnuplot") || Path::new("/usr/bin/gnuplot").exists() {
        let g = dir.join("g2p");
        std::fs::create_dir_all(&g).unwrap();
        for n in 1..=2 {
            for k in ["bw", "iops"] {
                std::fs::copy(
                    dir.join(format!("t_{k}.{n}.log")),
                    g.join(format!("t_{k}.{n}.log")),
                )
                .unwrap();
            }
        }
        for flag in ["-b", "-i"] {
            let o = Command::new("fio2gnuplot")
                .current_dir(&g)
                .args([flag, "-g", "-d", "out"])
                .output()
                .unwrap();
            assert!(o.status.success(), "fio2gnuplot {flag}: {o:?}");
        }
        let produced = std::fs::read_dir(g.join("out")).unwrap().count();
        assert!(produced > 0);
        let p = dir.join("plots");
        std::fs::create_dir_all(&p).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".log") && !n.contains("clat_hist") {
                std::fs::copy(e.path(), p.join(&n)).unwrap();
            }
        }
        let o = Command::new("fio_generate_plots")
            .current_dir(&p)
            .arg("check")
            .output()
            .unwrap();
        assert!(o.status.success(), "fio_generate_plots: {o:?}");
        for svg in [
            "check-bw.svg",
            "check-iops.svg",
            "check-lat.svg",
            "check-clat.svg",
        ] {
            let len = std::fs::metadata(p.join(svg)).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{svg}: {len} bytes");
        }
    } else {
        eprintln!("note: gnuplot missing; fio2gnuplot -g and fio_generate_plots not run");
    }
}

/// log_max_value=1 logs each window's largest sample where the default logs its
/// rounded mean: the same run's lines, at the same times, never below the mean and
/// above it somewhere; log_unix_epoch=1 adds the job's epoch (the simulated run starts
/// at the Unix epoch): a job started 2 s into the run logs its lines 2000 ms later.
#[test]
fn log_max_value_and_unix_epoch() {
    let dir = scratch("logs-max");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "fio",
            "--name=m",
            "--rw=randread",
            "--bs=4k",
            "--size=16m",
            "--ioengine=libaio",
            "--iodepth=4",
            "--direct=1",
            "--time_based",
            "--runtime=500ms",
            "--write_lat_log=m",
            "--log_avg_msec=50",
            // No preconditioning before the job: it starts at its startdelay.
            "--precondition=off",
        ];
        a.extend_from_slice(extra);
        ok(&run_in(&dir, &a));
        lines(&dir.join("m_clat.1.log"), 5)
    };
    let mean = run(&[]);
    let max = run(&["--log_max_value=1"]);
    assert_eq!(mean.len(), max.len());
    assert!(mean.len() >= 10);
    let mut above = 0;
    for (a, b) in mean.iter().zip(&max) {
        assert_eq!((a[0], a[2]), (b[0], b[2]));
        assert!(b[1] >= a[1], "max {b:?} below mean {a:?}");
        above += usize::from(b[1] > a[1]);
    }
    assert!(above > 0);
    let late = run(&["--startdelay=2", "--log_unix_epoch=1"]);
    assert_eq!(late.len(), mean.len());
    for (a, b) in mean.iter().zip(&late) {
        assert_eq!(b[0], a[0] + 2000, "{a:?} {b:?}");
    }
}

/// Every output that grows with the run (the per-I/O logs, --trace, --blktrace) is
/// written as the run goes: a run of 25 times the I/Os peaks at about the same memory
/// (measured by GNU time as the child's maximum resident set; the whole trace in memory
/// would add well over 50 MB here).
#[test]
fn outputs_stream_in_bounded_memory() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("note: GNU time is not installed; skipping");
        return;
    }
    let dir = scratch("logs-rss");
    let peak_kb = |io_size: &str| -> u64 {
        let o = Command::new("/usr/bin/time")
            .current_dir(&dir)
            .args(["-f", "%M", env!("CARGO_BIN_EXE_flashpath"), "fio"])
            .args([
                "--name=b",
                "--rw=randread",
                "--bs=4k",
                "--size=256m",
                &format!("--io_size={io_size}"),
                "--ioengine=libaio",
                "--iodepth=8",
                "--direct=1",
                "--write_bw_log=b",
                "--write_iops_log=b",
                "--write_lat_log=b",
                "--write_hist_log=b",
                "--log_hist_msec=100",
                "--trace=t.json",
                "--blktrace=bt",
                "--output=/dev/null",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        err.lines().last().unwrap().trim().parse().unwrap()
    };
    let small = peak_kb("4m");
    let big = peak_kb("100m");
    let json = std::fs::metadata(dir.join("t.json")).unwrap().len();
    assert!(json > 50 << 20, "the long run's timeline is {json} bytes");
    assert!(
        big <= small + 4096,
        "peak RSS {big} KiB for 25x the I/Os, {small} KiB for the short run"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real fio as the oracle: the same per-I/O log job on a file gives the same files,
/// each with as many lines, the same columns, directions and block sizes (times and
/// latencies are the simulated device's, offsets follow each one's random map).
#[test]
fn per_io_logs_match_real_fios_files() {
    if !have("fio") {
        eprintln!("note: fio is not installed; skipping");
        return;
    }
    let dir = scratch("logs-oracle");
    let (f, s) = (dir.join("fio"), dir.join("flashpath"));
    std::fs::create_dir_all(&f).unwrap();
    std::fs::create_dir_all(&s).unwrap();
    let file = format!("--filename={}", dir.join("data").display());
    let args = [
        "--name=o",
        file.as_str(),
        "--size=4m",
        "--io_size=256k",
        "--rw=randrw",
        "--bs=4k",
        "--ioengine=psync",
        "--write_bw_log=o",
        "--write_iops_log=o",
        "--write_lat_log=o",
        "--write_hist_log=o",
        "--log_offset=1",
        "--log_prio=1",
        "--output=/dev/null",
    ];
    let real = Command::new("fio")
        .current_dir(&f)
        .args(args)
        .output()
        .unwrap();
    assert!(real.status.success(), "{real:?}");
    let mut a = vec!["fio"];
    a.extend_from_slice(&args);
    ok(&run_in(&s, &a));
    let list = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        v.sort();
        v
    };
    let names = list(&f);
    assert_eq!(names.len(), 6, "{names:?}");
    assert_eq!(names, list(&s));
    for n in &names {
        let (a, b) = (
            std::fs::read_to_string(f.join(n)).unwrap(),
            std::fs::read_to_string(s.join(n)).unwrap(),
        );
        assert_eq!(a.lines().count(), b.lines().count(), "{n}");
        let shape = |t: &str| -> Vec<(usize, String, String)> {
            let mut v: Vec<_> = t
                .lines()
                .map(|l| {
                    let c: Vec<&str> = l.split(", ").collect();
                    (c.len(), c[2].to_string(), c[3].to_string())
                })
                .collect();
            v.sort();
            v
        };
        // Columns, and per line its direction and block size (as a multiset: the mix
        // of reads and writes follows each one's random stream).
        let (sa, sb) = (shape(&a), shape(&b));
        assert_eq!(
            sa.iter().map(|x| x.0).collect::<Vec<_>>(),
            sb.iter().map(|x| x.0).collect::<Vec<_>>(),
            "{n}: columns"
        );
        if !n.contains("hist") {
            assert!(sa.iter().all(|x| x.2 == "4096") && sb.iter().all(|x| x.2 == "4096"));
            for l in a.lines().chain(b.lines()) {
                assert!(l.ends_with(", 0x0000"), "{n}: {l}");
            }
        }
    }
}
