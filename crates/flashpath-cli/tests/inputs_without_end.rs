//! Inputs without end: a job file (or an included one, or standard input) that never
//! ends is refused at a bounded size, quickly and in bounded memory, with one line
//! naming the limit; a job file read from standard input (`-`) runs as fio runs it.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs flashpath under a 300 MB address-space limit (so growing memory aborts
/// instead of passing), with `stdin` as standard input.
fn limited(args: &str, stdin: Stdio) -> (std::process::Output, Duration) {
    let t = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 300000; exec '{}' {args}",
            env!("CARGO_BIN_EXE_flashpath")
        ))
        .stdin(stdin)
        .output()
        .unwrap();
    (o, t.elapsed())
}

fn refused(o: &std::process::Output, took: Duration, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(
        err.contains("larger than 16 MiB, the most flashpath reads of a job file"),
        "{what}: {err}"
    );
    // Generous for a debug build on a loaded machine; a release build takes ~20 ms.
    assert!(took < Duration::from_secs(10), "{what}: {took:?}");
}

#[test]
fn a_job_file_without_end_is_refused_in_bounded_memory() {
    let (o, t) = limited("fio /dev/zero", Stdio::null());
    refused(&o, t, "fio /dev/zero");
    let (o, t) = limited(
        "fio -",
        Stdio::from(std::fs::File::open("/dev/zero").unwrap()),
    );
    refused(&o, t, "fio - < /dev/zero");
    let dir = std::env::temp_dir().join(format!("flashpath-noend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inc = dir.join("inc.fio");
    std::fs::write(&inc, "[global]\ninclude /dev/zero\n[t]\nsize=1m\n").unwrap();
    let (o, t) = limited(&format!("fio {}", inc.display()), Stdio::null());
    refused(&o, t, "include /dev/zero");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("inc.fio:2: include file '/dev/zero'"), "{err}");
}

#[test]
fn a_job_file_from_standard_input_runs() {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(["fio", "-", "--output-format=json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(b"[t]\nrw=randread\nbs=4k\nsize=1m\n")
        .unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "t");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 256);
}
