//! fio's steady-state options on the command line and in job files: the report's
//! `steadystate` line and JSON object against real fio 3.33 (where installed), fio's
//! example job files, and the refusals.
mod common;

use common::{flashpath, have, ok, scratch};
use serde_json::Value;

/// A null job paced at 1000 IOPS: fio's and flashpath's rates are the same.
const PACED: &[&str] = &[
    "--name=t",
    "--ioengine=null",
    "--rw=read",
    "--bs=4k",
    "--size=1g",
    "--time_based",
    "--runtime=30",
    "--rate_iops=1000",
    "--ss=iops:5%",
    "--ss_dur=2",
    "--ss_ramp=1",
];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["fio"];
    a.extend_from_slice(PACED);
    a.extend_from_slice(extra);
    a
}

fn job0(json: &str) -> Value {
    let v: Value = serde_json::from_str(json).unwrap();
    v["jobs"][0].clone()
}

/// The keys of an object, in order.
fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// The `steadystate  :` line, and that it follows the `latency   :` line.
fn ss_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("  steadystate  : "))
        .unwrap_or_else(|| panic!("no steadystate line in\n{text}"));
    assert!(lines[i - 1].starts_with("     latency   : "), "{text}");
    lines[i].to_string()
}

/// The line's fields with their numbers masked (the format, not the values).
fn shape(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect::<String>()
        .replace("99999", "9")
        .replace("9999", "9")
        .replace("999", "9")
        .replace("99", "9")
}

#[test]
fn a_constant_rate_attains_and_is_reported_as_fio_reports_it() {
    let text = ok(&flashpath(&args(&[])));
    let line = ss_line(&text);
    assert_eq!(
        line,
        "  steadystate  : attained=yes, bw=4000KiB/s (4000kB/s), iops=1000, iops mean dev=0.000%"
    );
    assert!(text.contains("run=4000-4000msec"), "{text}");
    let json = ok(&flashpath(&args(&["--output-format=json"])));
    let j = job0(&json);
    let ss = &j["steadystate"];
    assert_eq!(ss["ss"], "iops:5.000000%");
    assert_eq!(ss["duration"], 2);
    assert_eq!(ss["attained"], 1);
    assert_eq!(ss["criterion"], "0.000000%");
    assert_eq!(ss["data"]["iops"], serde_json::json!([1000, 1000]));
    assert_eq!(ss["data"]["bw"], serde_json::json!([4096000, 4096000]));
    assert_eq!(ss["data"]["bw_mean"], 4096000);
    // Determinism: the same bytes again.
    assert_eq!(json, ok(&flashpath(&args(&["--output-format=json"]))));
    // Terse output has no steady-state field (stat.c): as many as without it.
    let terse = ok(&flashpath(&args(&["--output-format=terse"])));
    let plain: Vec<&str> = args(&["--output-format=terse"])
        .into_iter()
        .filter(|a| !a.starts_with("--ss"))
        .collect();
    let terse_plain = ok(&flashpath(&plain));
    assert_eq!(terse.split(';').count(), terse_plain.split(';').count());

    if !have("fio") {
        return;
    }
    // Real fio: the same line and object, field for field (its samples jitter by an
    // I/O; its setup time makes it attain a few ms earlier in its own clock).
    let d = scratch("ss-fio");
    let dir = format!("--directory={}", d.display());
    let fio = |extra: &[&str]| {
        let mut a: Vec<&str> = PACED.to_vec();
        a.push(&dir);
        a.extend_from_slice(extra);
        let o = std::process::Command::new("fio").args(&a).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let real_text = fio(&[]);
    assert_eq!(shape(&ss_line(&real_text)), shape(&line));
    let real = job0(&fio(&["--output-format=json"]));
    // flashpath's own `flashpath` key aside.
    let mut ours = keys(&j);
    ours.retain(|k| k != "flashpath");
    assert_eq!(keys(&real), ours, "job keys");
    let rs = &real["steadystate"];
    assert_eq!(keys(rs), keys(ss));
    assert_eq!(keys(&rs["data"]), keys(&ss["data"]));
    for k in ["ss", "duration", "attained"] {
        assert_eq!(rs[k], ss[k], "{k}");
    }
    let rt = real["job_runtime"].as_u64().unwrap();
    let st = j["job_runtime"].as_u64().unwrap();
    assert!(rt <= st && st - rt < 300, "fio {rt} ms, flashpath {st} ms");
    for (k, v) in [("iops_mean", 1000), ("bw_mean", 4096000)] {
        let r = rs["data"][k].as_u64().unwrap();
        assert!(r.abs_diff(v) * 100 < v, "{k}: fio {r}");
    }
}

/// fio's example job file: two groups (stonewall), each judged as a group; the write
/// group attains after ss_ramp 10 s + 1 s + ss_dur 30 s, the read group 5 + 1 + 10 s
/// after its start (real fio's /dev/null rate varies more than 10% and its write
/// group takes longer; its read group attains at 16 s less its setup time).
#[test]
fn fios_steadystate_example_runs() {
    let path = "/usr/share/doc/fio/examples/steadystate.fio";
    if !std::path::Path::new(path).exists() {
        return;
    }
    let json = ok(&flashpath(&["fio", "--output-format=json", path]));
    let v: Value = serde_json::from_str(&json).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "one entry per group (group_reporting)");
    let want = [
        ("ss-write", "iops:10.000000%", 30, 41_001),
        ("ss-read", "bw_slope:1.000000%", 10, 16_000),
    ];
    for (j, (name, crit, dur, runtime)) in jobs.iter().zip(want) {
        assert_eq!(j["jobname"], name);
        let ss = &j["steadystate"];
        assert_eq!(ss["ss"], crit);
        assert_eq!(ss["duration"], dur);
        assert_eq!(ss["attained"], 1, "{name}");
        assert_eq!(ss["data"]["bw"].as_array().unwrap().len(), dur);
        // A group's job_runtime is its four jobs' sum, as fio's.
        assert_eq!(j["job_runtime"], 4 * runtime, "{name}");
    }
}

/// ssd-steadystate.fio (no steady-state option of its own) with its write_bw_log
/// removed is accepted as a run would be.
#[test]
fn fios_ssd_steadystate_example_is_accepted() {
    let path = "/usr/share/doc/fio/examples/ssd-steadystate.fio";
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let d = scratch("ssd-ss");
    let copy = d.join("ssd-steadystate.fio");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("write_bw_log"))
        .collect();
    std::fs::write(&copy, kept.join("\n")).unwrap();
    ok(&flashpath(&["fio", "--parse-only", copy.to_str().unwrap()]));
}

#[test]
fn what_is_not_modelled_or_wrong_is_refused_by_name() {
    let o = flashpath(&args(&["--ramp_time=1"]));
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("ramp_time") && e.contains("steadystate_duration"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let o = flashpath(&["fio", "--name=t", "--size=1m", "--ss=iops", "--ss_dur=2"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("steadystate threshold must be specified"), "{e}");
    // Under a second of ss_dur is off, as in fio (it keeps whole seconds).
    let mut a = args(&["--output-format=json"]);
    a.retain(|x| *x != "--ss_dur=2");
    a.push("--ss_dur=500ms");
    assert!(job0(&ok(&flashpath(&a))).get("steadystate").is_none());
}
