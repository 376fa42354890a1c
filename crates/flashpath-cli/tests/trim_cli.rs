//! Trim jobs through the `flashpath` binary: fio's rw=randtrim/trimwrite reach the
//! simulator and fill fio's `trim` statistics (JSON and normal output).

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn randtrim_fills_the_json_trim_section() {
    // libaio at iodepth 8: fio still issues each trim synchronously (FIO_Q_COMPLETED).
    let (ok, out, err) = run(&[
        "fio",
        "--name=t",
        "--rw=randtrim",
        "--bs=4k",
        "--size=4m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=8",
        "--output-format=json",
    ]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let job = &json["jobs"][0];
    assert_eq!(job["trim"]["total_ios"], 1024, "{}", job["trim"]);
    assert_eq!(job["trim"]["io_bytes"], 4 << 20);
    assert!(job["trim"]["iops"].as_f64().unwrap() > 0.0);
    assert!(job["trim"]["clat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(job["write"]["total_ios"], 0);
    assert_eq!(job["read"]["total_ios"], 0);
    // One at a time: every trim was submitted at depth 1.
    assert_eq!(job["iodepth_level"]["1"], 100.0, "{}", job["iodepth_level"]);
}

#[test]
fn trimwrite_reports_trims_and_writes() {
    let (ok, out, err) = run(&[
        "fio",
        "--name=tw",
        "--rw=trimwrite",
        "--bs=8k",
        "--size=1m",
        "--direct=1",
    ]);
    assert!(ok, "{err}");
    // Both directions: each block trimmed, then written.
    assert!(out.contains("  trim: IOPS="), "{out}");
    assert!(out.contains("  write: IOPS="), "{out}");
    assert_eq!(out.matches("(1024KiB/").count(), 2, "{out}");
}
