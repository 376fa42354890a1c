//! fio's `--status-interval` and the order of the normal format's lines, through the
//! `flashpath` binary: a report every interval of simulated time from the jobs' start
//! (cumulative, as fio's), then the final one, in each output format, shaped as real
//! fio 3.33's (checked against it when installed); the start lines are written before
//! the run.

mod common;

use common::{flashpath, ok, scratch};
use serde_json::Value;
use std::process::Command;

/// A 3 s time_based random read job (fio's arguments, without an engine).
const JOB: &[&str] = &[
    "--name=t",
    "--rw=randread",
    "--bs=4k",
    "--size=16m",
    "--runtime=3",
    "--time_based",
];

fn sim(format: &str, extra: &[&str]) -> String {
    let mut a = vec!["fio", "--ioengine=libaio", "--iodepth=4"];
    a.extend_from_slice(JOB);
    a.push("--status-interval=1");
    a.push(format);
    a.extend_from_slice(extra);
    ok(&flashpath(&a))
}

/// Real fio on a scratch file, if installed. Each format has its own scratch directory:
/// the tests run at once, and a shared one was removed under another test's feet.
fn real_fio(format: &str) -> Option<String> {
    Command::new("fio").arg("--version").output().ok()?;
    let d = scratch(&format!(
        "status-interval-{}",
        format
            .trim_start_matches("--output-format=")
            .replace(',', "-")
    ));
    let file = d.join("f");
    std::fs::write(&file, vec![0u8; 16 << 20]).unwrap();
    let name = format!("--filename={}", file.display());
    let mut a = vec!["--ioengine=psync", name.as_str()];
    a.extend_from_slice(JOB);
    a.push("--status-interval=1");
    a.push(format);
    let o = Command::new("fio").args(&a).output().ok()?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The JSON objects of a stream of reports.
fn objects(s: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<Value>()
        .map(|v| v.expect("a JSON report"))
        .collect()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn json_gives_a_report_per_interval_then_the_final_one() {
    let s = sim("--output-format=json", &[]);
    let v = objects(&s);
    // Reports at 1, 2 and 3 s of the jobs' run, then the end (3 s and the I/Os in
    // flight then).
    assert_eq!(v.len(), 4, "{s}");
    let runtime: Vec<u64> = v
        .iter()
        .map(|o| o["jobs"][0]["read"]["runtime"].as_u64().unwrap())
        .collect();
    assert_eq!(&runtime[..3], &[1000, 2000, 3000]);
    assert!(runtime[3] >= 3000 && runtime[3] < 3010, "{runtime:?}");
    // Cumulative, as fio's are.
    let ios: Vec<u64> = v
        .iter()
        .map(|o| o["jobs"][0]["read"]["total_ios"].as_u64().unwrap())
        .collect();
    assert!(
        ios.windows(2).all(|w| w[0] < w[1] || w == [ios[2], ios[3]]),
        "{ios:?}"
    );
    assert!(ios[0] > 0);
    // The last is the run's report as without --status-interval.
    let plain: Value = serde_json::from_str(&ok(&flashpath(
        &[
            &["fio", "--ioengine=libaio", "--iodepth=4"][..],
            JOB,
            &["--output-format=json"],
        ]
        .concat(),
    )))
    .unwrap();
    assert_eq!(v[3], plain);
    if let Some(f) = real_fio("--output-format=json") {
        let fv = objects(&f);
        // Wall-clock intervals: fio's count may differ by one at the end.
        assert!((3..=5).contains(&fv.len()), "fio gave {} reports", fv.len());
        for (a, b) in v.iter().zip(&fv) {
            let ours: Vec<String> = keys(a).into_iter().filter(|k| k != "flashpath").collect();
            assert_eq!(ours, keys(b));
            assert_eq!(keys(&a["jobs"][0]["read"]), keys(&b["jobs"][0]["read"]));
        }
    }
}

#[test]
fn terse_and_json_plus_repeat_their_reports() {
    let t = sim("--output-format=terse", &[]);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4, "{t}");
    let fields = |l: &str| l.split(';').count();
    assert!(lines.iter().all(|l| fields(l) == fields(lines[0])));
    let p = objects(&sim("--output-format=json+", &[]));
    assert_eq!(p.len(), 4);
    assert!(p
        .iter()
        .all(|o| o["jobs"][0]["read"]["clat_ns"]["bins"].is_object()));
    if let Some(f) = real_fio("--output-format=terse") {
        let fl: Vec<&str> = f.lines().collect();
        assert!((3..=5).contains(&fl.len()), "{f}");
        assert!(fl.iter().all(|l| fields(l) == fields(lines[0])));
    }
}

/// Lines that open the parts of fio's normal output.
fn landmarks(s: &str) -> Vec<&'static str> {
    s.lines()
        .filter_map(|l| {
            if l.starts_with("t: (g=0)") {
                Some("job line")
            } else if l.starts_with("Starting ") {
                Some("starting")
            } else if l.starts_with("t: (groupid=0") {
                Some("report")
            } else if l.starts_with("Run status group") {
                Some("run status")
            } else if l.starts_with('{') {
                Some("json")
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn normal_prints_the_start_once_then_each_report() {
    let s = sim("--output-format=normal", &[]);
    let mut want = vec!["job line", "starting"];
    for _ in 0..4 {
        want.extend(["report", "run status"]);
    }
    assert_eq!(landmarks(&s), want, "{s}");
    // json,normal: the start, then JSON and the normal report at each interval.
    let m = sim("--output-format=json,normal", &[]);
    let mut want = vec!["job line", "starting"];
    for _ in 0..4 {
        want.extend(["json", "report", "run status"]);
    }
    assert_eq!(landmarks(&m), want);
    if let Some(f) = real_fio("--output-format=json,normal") {
        let l = landmarks(&f);
        let n = l.iter().filter(|&&x| x == "json").count();
        let mut want = vec!["job line", "starting"];
        for _ in 0..n {
            want.extend(["json", "report", "run status"]);
        }
        assert_eq!(l, want, "{f}");
    }
}

#[test]
fn bad_intervals_are_refused_as_fio_does() {
    for (v, msg) in [
        ("0", "status interval too small"),
        ("500us", "status interval too small"),
        ("x", "failed parsing time"),
    ] {
        let o = flashpath(&[
            "fio",
            "--name=t",
            "--size=1m",
            &format!("--status-interval={v}"),
        ]);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(msg) && e.lines().count() == 1, "{v}: {e}");
    }
}

#[test]
fn the_start_lines_are_written_before_the_run() {
    // stdout and stderr into one pipe: the start lines come before the progress lines
    // the run prints (FLASHPATH_PROGRESS=1 shows them without a terminal), the report
    // after.
    let bin = env!("CARGO_BIN_EXE_flashpath");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "FLASHPATH_PROGRESS=1 '{bin}' fio --name=t --rw=randread --bs=4k --size=16m 2>&1"
        ))
        .output()
        .expect("run sh");
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{s}");
    let at = |what: &str| s.find(what).unwrap_or_else(|| panic!("no {what:?} in {s}"));
    assert!(
        at("Starting 1 process") < at("flashpath: precondition"),
        "{s}"
    );
    assert!(at("flashpath: jobs") < at("t: (groupid=0"), "{s}");
    // The line ends at 100 %.
    assert!(
        s.contains("flashpath: jobs 100.0% (16.0 MiB of 16.0 MiB"),
        "{s}"
    );
}
