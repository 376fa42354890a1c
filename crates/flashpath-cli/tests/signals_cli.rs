//! SIGINT or SIGTERM mid-run, as fio takes them: the run stops, the report of the
//! simulated time so far is printed (marked as interrupted) in every output format, and
//! the exit status is fio's 128; a second signal a second or more later ends the process
//! at once, one within that second (`timeout` delivers SIGINT twice) is the same stop.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts an endless run (a time-based job of a million simulated seconds), waits
/// `after`, sends the signals, and returns (exit code, stdout, stderr).
fn interrupt(
    format: &str,
    signals: &[&str],
    after: Duration,
    between: Duration,
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flashpath"));
    cmd.args(run_args(format));
    signal_run(cmd, signals, after, between)
}

/// The endless run's arguments.
fn run_args(format: &str) -> Vec<String> {
    let mut args = [
        "fio",
        "--name=a",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--runtime=1000000",
        "--time_based",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--output-format={format}"));
    args
}

/// Spawns `cmd` (a run, or a shell that execs one), waits `after`, sends the signals
/// to it, and returns (exit code, stdout, stderr).
fn signal_run(
    mut cmd: Command,
    signals: &[&str],
    after: Duration,
    between: Duration,
) -> (Option<i32>, String, String) {
    let mut child = cmd
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
    // A run the signals did not stop would never end: it fails here instead.
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the run went on a minute after {signals:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

/// Reads a child's output to its end on a thread of its own.
fn drain<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        r.read_to_end(&mut s).unwrap();
        String::from_utf8_lossy(&s).into_owned()
    })
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

#[test]
fn sigint_ignored_on_entry_still_stops_the_run_as_fio_does() {
    // A background job of a non-interactive shell starts with SIGINT ignored. fio
    // installs its handler with sigaction all the same (backend.c, set_sig_handlers),
    // so `kill -INT` stops it with its report and 128; Debian's fio 3.33 does so here
    // (a job started under `trap '' INT`). The shell execs the run, which keeps the
    // ignored disposition and the shell's process id.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("trap '' INT; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_flashpath"))
        .args(run_args("normal"));
    let (code, out, err) = signal_run(cmd, &["INT"], Duration::from_millis(1500), Duration::ZERO);
    assert_eq!(code, Some(128), "{err}");
    assert_eq!(err.trim(), "fio: terminating on signal 2");
    assert!(
        out.contains("flashpath: interrupted by signal 2 at "),
        "{out}"
    );
}
