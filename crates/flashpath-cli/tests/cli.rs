//! The `flashpath` binary end to end: the published hsq legacy figures, determinism,
//! fio's formats, and bad input (one line on stderr, exit status 1, no panic).

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn flashpath(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `"bw"` (KiB/s) of the first job of a JSON report, for a direction.
fn json_bw_kib(json: &str, dir: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
    v["jobs"][0][dir]["bw"].as_f64().expect("bw")
}

/// reference/seed-results.md §1, "without hsq" column, MiB/s.
const HSQ_LEGACY: [(&str, &str, f64); 4] = [
    ("read", "read", 59.66),
    ("randread", "read", 27.04),
    ("write", "write", 69.68),
    ("randwrite", "write", 35.96),
];

#[test]
fn hsq_legacy_column_is_reproduced_within_15_percent() {
    for (rw, dir, published) in HSQ_LEGACY {
        let rw_arg = format!("--rw={rw}");
        let o = flashpath(&[
            "fio",
            "--device",
            "emmc51-hs400-32g",
            "--host",
            "sprd-sc9863a",
            "--driver",
            "mmc-legacy",
            "--filename=/dev/mmcblk0p30",
            "--direct=1",
            "--iodepth=20",
            &rw_arg,
            "--bs=4K",
            "--size=1G",
            "--group_reporting",
            "--numjobs=20",
            "--name=test",
            "--output-format=json",
        ]);
        assert!(o.status.success(), "{rw}: {}", stderr(&o));
        let mib = json_bw_kib(&stdout(&o), dir) / 1024.0;
        let err = mib / published - 1.0;
        println!(
            "{rw:10} simulated {mib:7.2} MiB/s, published {published:6.2}, {:+.1} %",
            err * 100.0
        );
        assert!(
            err.abs() <= 0.15,
            "{rw}: {mib:.2} MiB/s vs published {published} MiB/s"
        );
    }
}

#[test]
fn same_command_gives_byte_identical_json() {
    let args = [
        "fio",
        "--name=a",
        "--rw=randrw",
        "--bs=4k",
        "--size=16m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--direct=1",
        "--output-format=json+",
    ];
    let a = flashpath(&args);
    let b = flashpath(&args);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    assert!(stdout(&a).contains("\"bins\""));
}

#[test]
fn every_output_format_prints() {
    let o = flashpath(&[
        "fio",
        "--name=t",
        "--rw=read",
        "--bs=64k",
        "--size=8m",
        "--direct=1",
        "--output-format=normal,terse,json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Run status group 0"), "{out}");
    assert!(out.contains("3;fio-3.33;t;"), "{out}");
    assert!(out.contains("\"fio version\" : \"fio-3.33\""), "{out}");
}

#[test]
fn presets_lists_kind_name_description() {
    let o = flashpath(&["presets"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out
        .lines()
        .any(|l| l.starts_with("device") && l.contains("emmc51-hs400-32g")));
    assert!(out
        .lines()
        .any(|l| l.starts_with("host") && l.contains("sprd-sc9863a")));
}

/// Bad input: exit 1, one line on stderr containing `expect`, no panic.
fn rejects(args: &[&str], expect: &str) {
    let o = flashpath(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(
        err.contains(expect),
        "{args:?}: expected '{expect}' in {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_command_lines_are_one_line_errors() {
    let job = ["--name=t", "--rw=read", "--size=1m", "--direct=1"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["fio"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&job);
        v
    };
    rejects(
        &with(&["--device", "nosuch"]),
        "unknown device preset 'nosuch'",
    );
    rejects(&with(&["--host", "nosuch"]), "unknown host preset 'nosuch'");
    rejects(
        &with(&["--driver", "mmc-turbo"]),
        "unknown driver 'mmc-turbo'",
    );
    rejects(
        &with(&["--set", "device.nand.t_reed=5us"]),
        "device.nand.t_reed",
    );
    rejects(&with(&["--set", "device.nand.t_read=fast"]), "nand.t_read");
    rejects(
        &with(&["--set", "nand.t_read=5us"]),
        "must start with 'device.' or 'host.'",
    );
    rejects(&with(&["--set", "host.cpu.cores=0"]), "cpu.cores");
    rejects(
        &with(&["--device", "/nonexistent/dev.toml"]),
        "/nonexistent/dev.toml",
    );
    rejects(&with(&["--zonemode=zbd"]), "zonemode");
    rejects(
        &["fio", "--name=t", "--rw=read", "--size=1m", "--direct=0"],
        "buffered I/O",
    );
    rejects(&with(&["--ioengine=mmap"]), "ioengine=mmap");
    rejects(
        &["fio", "--name=t", "--rw=trim", "--size=1m", "--direct=1"],
        "trim",
    );
    rejects(&["bogus"], "unknown command 'bogus'");
}
