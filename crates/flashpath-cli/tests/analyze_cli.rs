//! `flashpath analyze` (issue 29): its limits are upper bounds on the throughput at any
//! queue depth, it prints JSON when asked, and it reads a saved report (flashpath's, or
//! real fio's, whose JSON has no spans).

mod common;
use common::{flashpath, ok, scratch};
use serde_json::Value;

fn analyze_json(args: &[&str]) -> Value {
    let mut a = vec!["analyze", "--output-format=json"];
    a.extend(args);
    let out = ok(&flashpath(&a));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// At every depth from 1 to 32, on a serial eMMC driver, eMMC command queuing and UFS,
/// reading and writing: the pipelined limit (the smaller of the software and hardware
/// limits from busy time) is never below the simulated throughput, nor is either limit.
/// The paper's span formulas are given only at depth 1 (there they are bounds too).
/// The old analyze printed text for JSON and, above depth 1, span formulas whose
/// pre and post included the waits for the hardware: below the throughput.
#[test]
fn the_printed_upper_limit_is_never_below_the_throughput_at_depths_1_to_32() {
    let systems: [&[&str]; 3] = [
        &["--filename=/dev/mmcblk0"],
        &[
            "--filename=/dev/mmcblk0",
            "--host",
            "sprd-sc9863a-cqe",
            "--driver",
            "mmc-cqe",
        ],
        &[
            "--filename=/dev/sda",
            "--device",
            "ufs21-64g",
            "--host",
            "sd835-phone",
            "--driver",
            "ufs",
        ],
    ];
    let mut deep_spans_below = 0;
    for sys in systems {
        for rw in ["randread", "randwrite"] {
            for qd in [1, 2, 3, 5, 8, 13, 21, 32] {
                let depth = format!("--iodepth={qd}");
                let rw = format!("--rw={rw}");
                let mut args = sys.to_vec();
                args.extend([
                    "--direct=1",
                    "--ioengine=libaio",
                    &rw,
                    "--bs=4k",
                    "--size=4m",
                    &depth,
                    "--name=q",
                ]);
                let v = analyze_json(&args);
                let what = format!("{args:?}");
                assert_eq!(v["source"], "run");
                let j = &v["jobs"][0];
                let bw = j["bw_bytes"].as_f64().unwrap();
                assert!(bw > 0.0, "{what}");
                let b = &j["busy_limits"];
                for k in ["pipelined", "software", "hardware"] {
                    let limit = b[format!("{k}_bytes_per_s")]
                        .as_f64()
                        .unwrap_or(f64::INFINITY);
                    assert!(limit >= bw, "{what}: {k} limit {limit} below {bw}");
                }
                let pipelined = b["pipelined_bytes_per_s"].as_f64().unwrap();
                let (sw, hw) = (
                    b["software_bytes_per_s"].as_f64().unwrap(),
                    b["hardware_bytes_per_s"].as_f64().unwrap(),
                );
                assert_eq!(pipelined, sw.min(hw), "{what}");
                let depth = j["in_flight"].as_f64().unwrap();
                if qd == 1 {
                    assert!(depth <= 1.05, "{what}: {depth}");
                    let s = &j["span_limits"];
                    assert!(s["pipelined_bytes_per_s"].as_f64().unwrap() >= bw, "{what}");
                    assert!(
                        s["theoretical_bytes_per_s"].as_f64().unwrap() >= 0.99 * bw,
                        "{what}"
                    );
                }
                if depth > 1.05 {
                    assert!(j["span_limits"].is_null(), "{what}");
                    assert_eq!(j["span_limits_apply"], false);
                    // What the old analyze printed as the pipelined limit.
                    let s = &j["spans_ns"];
                    let max = ["pre", "hw", "post"]
                        .iter()
                        .map(|k| s[k].as_f64().unwrap())
                        .fold(0.0, f64::max);
                    if 4096.0 / (max / 1e9) < bw {
                        deep_spans_below += 1;
                    }
                }
            }
        }
    }
    assert!(
        deep_spans_below > 0,
        "no case where the spans' formula falls below the throughput"
    );
}

/// Text output: above depth 1 it says the span formulas do not apply and prints the
/// busy-time limits, the pipelined one not below the simulated bandwidth.
#[test]
fn deep_queues_say_the_span_formulas_do_not_apply() {
    let out = ok(&flashpath(&[
        "analyze",
        "--filename=/dev/mmcblk0",
        "--direct=1",
        "--ioengine=libaio",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--iodepth=16",
        "--name=x",
    ]));
    assert!(
        out.contains("so the paper's span formulas (one request at a time) do not apply"),
        "{out}"
    );
    assert!(!out.contains("size/(pre+hw+post)"), "{out}");
    let figure = |label: &str| -> f64 {
        let l = out
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line\n{out}"));
        l[label.len() + l.find(label).unwrap()..]
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap()
    };
    let sim = figure("simulated");
    let pipelined = figure("pipelined limit min of the two");
    assert!(pipelined >= sim, "{pipelined} < {sim}\n{out}");
}

/// A saved flashpath report gives the same analysis without running (no instant-storage
/// run), as text and JSON; the positional FILE.json form too.
#[test]
fn analyze_reads_a_saved_flashpath_report() {
    let dir = scratch("analyze-input");
    let file = dir.join("w.json");
    let job = [
        "--filename=/dev/mmcblk0",
        "--direct=1",
        "--ioengine=libaio",
        "--rw=randwrite",
        "--bs=16k",
        "--size=8m",
        "--iodepth=8",
        "--name=w",
    ];
    let mut args = vec!["fio", "--output-format=json"];
    args.extend(job);
    std::fs::write(&file, ok(&flashpath(&args))).unwrap();
    let f = file.to_str().unwrap();
    let mut args = job.to_vec();
    let ran = analyze_json(&args);
    let read = analyze_json(&["--input", f]);
    assert_eq!(read["source"], "flashpath report");
    let (a, b) = (&ran["jobs"][0], &read["jobs"][0]);
    for k in ["spans_ns", "busy", "busy_limits", "bw_bytes", "in_flight"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert!(b["instant_storage_bw_bytes"].is_null());
    assert!(a["instant_storage_bw_bytes"].as_f64().unwrap() > 0.0);
    let text = ok(&flashpath(&["analyze", f]));
    assert!(
        text.starts_with("from a saved report: no instant-storage run\n"),
        "{text}"
    );
    assert!(text.contains("pipelined limit min of the two"), "{text}");
    // Running options make no sense with a saved report.
    args.insert(0, "analyze");
    args.extend(["--input", f]);
    let o = flashpath(&args);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--input analyzes a saved report without running"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// A report of real fio has no spans: analyze prints fio's figures and one line saying
/// spans are flashpath's own.
#[test]
fn analyze_reads_real_fios_json_and_says_it_has_no_spans() {
    let dir = scratch("analyze-fio");
    let file = dir.join("fio.json");
    let o = std::process::Command::new("fio")
        .args([
            "--name=n",
            "--ioengine=null",
            "--size=4m",
            "--bs=4k",
            "--rw=read",
            "--output-format=json",
        ])
        .arg(format!("--output={}", file.display()))
        .output();
    let Ok(o) = o else {
        eprintln!("fio is not installed: skipped");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = file.to_str().unwrap();
    let text = ok(&flashpath(&["analyze", "--input", f]));
    assert!(
        text.starts_with("a report of fio, not flashpath: the spans (pre, hw, post) and busy times are flashpath's own and not in fio's JSON, so no limits"),
        "{text}"
    );
    assert!(text.contains("  read: 1024 I/Os,"), "{text}");
    let v = analyze_json(&["--input", f]);
    assert_eq!(v["source"], "fio report");
    assert!(v["jobs"][0]["busy_limits"].is_null());
    assert_eq!(v["jobs"][0]["directions"]["read"]["ios"], 1024);
}

#[test]
fn bad_analyze_arguments_are_one_line_errors() {
    let dir = scratch("analyze-bad");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    for (args, want) in [
        (
            vec!["analyze", "--output-format=terse", "--name=x", "--size=1m"],
            "analyze prints --output-format=normal or json, not 'terse'",
        ),
        (
            vec!["analyze", "--input", "/nonexistent/r.json"],
            "reading /nonexistent/r.json",
        ),
        (
            vec!["analyze", "--input", junk.to_str().unwrap()],
            "not a JSON report",
        ),
        (vec!["analyze", "--input"], "--input needs a value"),
    ] {
        let o = flashpath(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
    }
    let help = ok(&flashpath(&["analyze", "--help"]));
    assert!(help.contains("--input FILE"), "{help}");
}
