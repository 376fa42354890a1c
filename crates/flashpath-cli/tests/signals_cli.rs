//! SIGINT or SIGTERM mid-run, as fio takes them: the run stops, the report of the
//! simulated time so far is printed (marked as interrupted) in every output format, and
//! the exit status is fio's 128; a second signal a second or more later ends the process
//! at once, one within that second (`timeout` delivers SIGINT twice) is the same stop.

use std::process::{Command, Stdio};
use std::time::Duration;

/// Starts an endless run (a time-based job of a million simulated seconds), waits
/// `after`, sends the signals, and returns (exit code, stdout, stderr).
fn interrupt(
    format: &str,
    signals: &[&str],
    after: Duration,
    between: Duration,
) -> (Option<i32>, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args([
            "fio",
            "--name=a",
            "--rw=randread",
            "--bs=4k",
            "--size=16m",
            "--runtime=1000000",
            "--time_based",
            &format!("--output-format={format}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    for (i, s) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(between);
        }
        let k = Command::new("kill")
            .args([&format!("-{s}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(k.success());
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn sigint_mid_run_prints_the_report_so_far() {
    let (code, out, err) = interrupt(
        "normal",
        &["INT"],
        Duration::from_millis(1500),
        Duration::ZERO,
    );
    assert_eq!(code, Some(128), "{err}");
    assert_eq!(err.trim(), "fio: terminating on signal 2");
    assert!(
        out.contains("flashpath: interrupted by signal 2 at "),
        "{out}"
    );
    assert!(out.contains("  read: IOPS="), "{out}");
    assert!(out.contains("Run status group 0 (all jobs):"), "{out}");
}

#[test]
fn sigterm_mid_run_prints_the_json_so_far() {
    let (code, out, err) = interrupt(
        "json",
        &["TERM"],
        Duration::from_millis(1500),
        Duration::ZERO,
    );
    assert_eq!(code, Some(128), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON report");
    let i = &v["flashpath"]["interrupted"];
    assert_eq!(i["signal"], 15);
    let ns = i["simulated_ns"].as_u64().unwrap();
    assert!(ns > 0 && ns < 1_000_000 * 1_000_000_000);
    let ios = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(ios > 0, "{out}");
    // The runtime is the simulated time run, not the job's million seconds.
    let runtime_ms = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!(runtime_ms <= ns / 1_000_000, "{runtime_ms} ms of {ns} ns");
}

#[test]
fn sigint_with_terse_output_ends_cleanly() {
    let (code, out, err) = interrupt(
        "terse",
        &["INT"],
        Duration::from_millis(1500),
        Duration::ZERO,
    );
    assert_eq!(code, Some(128), "{err}");
    assert!(out.starts_with("3;fio-3.33;a;"), "{out}");
}

#[test]
fn a_later_second_signal_ends_at_once_never_a_panic() {
    let (code, _out, err) = interrupt(
        "json",
        &["INT", "INT"],
        Duration::from_millis(1500),
        Duration::from_millis(1100),
    );
    // The second signal may find the report written already (128) or not (130).
    assert!(matches!(code, Some(128) | Some(130)), "{code:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn two_signals_back_to_back_are_one_stop_and_the_report_comes() {
    // As `timeout` sends them: to the process and to its group, at once.
    let (code, out, err) = interrupt(
        "json",
        &["INT", "INT"],
        Duration::from_millis(1500),
        Duration::ZERO,
    );
    assert_eq!(code, Some(128), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON report");
    assert_eq!(v["flashpath"]["interrupted"]["signal"], 2);
}
