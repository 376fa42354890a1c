//! Buffered I/O and the sync family through the `flashpath` binary: fio's options reach
//! the simulator and fsync latencies fill fio's `sync` statistics.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn fsync_latencies_reach_the_json_sync_section() {
    // The shipped SC9863A host, with its [memory] section.
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args([
            "fio",
            "--host",
            "sprd-sc9863a",
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--size=4m",
            "--direct=0",
            "--fdatasync=256",
            "--end_fsync=1",
            "--output-format=json",
        ])
        .current_dir(root())
        .output()
        .expect("run flashpath");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let job = &json["jobs"][0];
    // fdatasyncs after the 256th, 512th and 768th write: none after the last one (the
    // job ends first), and end_fsync is not a sample. fio counts fdatasyncs apart
    // (DDIR_DATASYNC), so `total_ios` (DDIR_SYNC's) is 0.
    assert_eq!(job["sync"]["total_ios"], 0, "{}", job["sync"]);
    assert_eq!(job["sync"]["lat_ns"]["N"], 3, "{}", job["sync"]);
    assert!(job["sync"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(job["write"]["io_bytes"], 4 << 20);
}

#[test]
fn sync_counts_are_fios() {
    // (sync total_ios, sync lat_ns N) of 16 writes of 4 KiB, as real fio 3.33 reports
    // them on a file.
    let cases: [(&[&str], u64, u64); 5] = [
        (&["--fsync=4"], 3, 3),
        (&["--fdatasync=4"], 0, 3),
        (&["--fsync=4", "--direct=1"], 3, 3),
        (&["--fsync=5", "--end_fsync=1"], 3, 3),
        (&["--end_fsync=1"], 0, 0),
    ];
    let base = ["--name=t", "--rw=write", "--bs=4k", "--size=64k"];
    let dir = std::env::temp_dir().join(format!("fp-sync-counts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fio = Command::new("fio").arg("--version").output().is_ok();
    for (extra, total, n) in cases {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        let j = json_of(&a);
        let got = (
            &j["jobs"][0]["sync"]["total_ios"],
            &j["jobs"][0]["sync"]["lat_ns"]["N"],
        );
        assert_eq!(
            (got.0.as_u64(), got.1.as_u64()),
            (Some(total), Some(n)),
            "{extra:?}"
        );
        if fio {
            let o = Command::new("fio")
                .args(&a)
                .arg(format!("--filename={}", dir.join("f").display()))
                .arg("--output-format=json")
                .output()
                .unwrap();
            let f: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let s = &f["jobs"][0]["sync"];
            assert_eq!(
                (s["total_ios"].as_u64(), s["lat_ns"]["N"].as_u64()),
                (Some(total), Some(n)),
                "fio {extra:?}"
            );
        }
    }
}

fn spans_of(args: &[&str]) -> (f64, f64, f64) {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .args(["--output-format=json"])
        .current_dir(root())
        .output()
        .expect("run flashpath");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let s = &json["jobs"][0]["flashpath"]["spans"];
    let mean = |n: &str| s[n]["mean_ns"].as_f64().unwrap();
    (mean("pre"), mean("hw"), mean("post"))
}

#[test]
fn o_sync_write_spans_run_from_the_write_call_to_its_return() {
    // On the Jetson preset an O_SYNC 128 KiB write's request pre holds the copy and the
    // per-page filesystem work of the write call (write_page_op, writeback_page_op): far
    // above a direct write's, whose request starts without them; the device's hw is the
    // same (write-through), and post too.
    let common = [
        "fio",
        "--host",
        "jetson-tx1",
        "--device",
        "emmc51-hs400-8g",
        "--precondition",
        "sequential",
        "--name=w",
        "--rw=write",
        "--bs=128k",
        "--size=4m",
    ];
    let (pre_d, hw_d, post_d) = spans_of(&[&common[..], &["--direct=1"]].concat());
    let (pre_s, hw_s, post_s) = spans_of(&[&common[..], &["--direct=0", "--sync=1"]].concat());
    // 32 pages × (8.5 + 8.5 us of page work + 0.8 us of copy) = 570 us more, less the
    // direct path's per-page pinning (32 × 2.35 us).
    let expected = 32.0 * (8_500.0 + 8_500.0 + 819.0) - 32.0 * 2_350.0;
    assert!(
        ((pre_s - pre_d) - expected).abs() < 5_000.0,
        "pre {pre_s} vs {pre_d}"
    );
    // The ext4 journal writes between the data writes (the preset's [fs]) leave the
    // device a little differently: hw within 1 %.
    assert!((hw_s - hw_d).abs() < 0.01 * hw_d, "hw {hw_s} vs {hw_d}");
    // With a journal commit after the writeback, post ends when the caller has the
    // writeback's result: the system call's return (4 us) comes after the commit.
    assert_eq!(post_s, post_d - 4_000.0);
}

#[test]
fn a_bad_precondition_is_an_error_naming_it() {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(["fio", "--precondition", "aged", "--name=r", "--rw=read"])
        .current_dir(root())
        .output()
        .expect("run flashpath");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--precondition: 'aged' is not a precondition"),
        "{err}"
    );
}

#[test]
fn fadvise_hint_shapes_readahead_as_fio_advises_it() {
    // 128 KiB sequential buffered reads on the Jetson preset. fio's default fadvise_hint=1
    // advises POSIX_FADV_SEQUENTIAL for rw=read (256 KiB readahead windows issued a window
    // ahead: their requests queue longest); fadvise_hint=0 leaves the 128 KiB windows;
    // fadvise_hint=random makes every read() issue its own request, which starts at once.
    let pre = |hint: Option<&str>| {
        let mut args = vec![
            "fio",
            "--host",
            "jetson-tx1",
            "--device",
            "emmc51-hs400-8g",
            "--driver",
            "mmc-legacy",
            "--precondition",
            "sequential",
            "--name=r",
            "--rw=read",
            "--ioengine=sync",
            "--bs=128k",
            "--size=16m",
            "--direct=0",
        ];
        let h;
        if let Some(v) = hint {
            h = format!("--fadvise_hint={v}");
            args.push(&h);
        }
        spans_of(&args).0
    };
    let (default, none, random) = (pre(None), pre(Some("0")), pre(Some("random")));
    assert_eq!(
        default,
        pre(Some("sequential")),
        "1 = sequential for rw=read"
    );
    assert!(
        random < none / 2.0 && none < default / 2.0,
        "pre: random {random}, none {none}, default {default}"
    );
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(["fio", "--host", "sprd-sc9863a", "--output-format=json"])
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).expect("JSON")
}

/// Buffered libaio (fio's default direct=0 with an asynchronous engine): io_submit runs
/// each buffered iocb to its end, so the whole I/O is submission latency, the
/// completion is waiting when io_getevents is called (clat = the host's aio_reap cost,
/// 1.5 us on this host), and the queue depth buys nothing over psync.
#[test]
fn buffered_libaio_runs_each_iocb_inside_io_submit() {
    let common = [
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--direct=0",
    ];
    let aio = json_of(&[&common[..], &["--ioengine=libaio", "--iodepth=16"]].concat());
    let psync = json_of(&[&common[..], &["--ioengine=psync"]].concat());
    let (a, p) = (&aio["jobs"][0]["read"], &psync["jobs"][0]["read"]);
    assert_eq!(a["total_ios"], 4096);
    assert_eq!(a["clat_ns"]["min"], 1500);
    assert_eq!(a["clat_ns"]["max"], 1500);
    // The read itself is the same page cache miss as psync's, now inside io_submit.
    let (slat, clat_p) = (
        a["slat_ns"]["mean"].as_f64().unwrap(),
        p["clat_ns"]["mean"].as_f64().unwrap(),
    );
    assert!((slat - clat_p).abs() / clat_p < 0.02, "{slat} vs {clat_p}");
    let (ia, ip) = (a["iops"].as_f64().unwrap(), p["iops"].as_f64().unwrap());
    assert!((ia - ip).abs() / ip < 0.02, "libaio {ia} IOPS, psync {ip}");
    // iodepth_batch=4: the four iocbs of one io_submit are issued when it returns.
    let batch = json_of(
        &[
            &common[..],
            &[
                "--ioengine=libaio",
                "--iodepth=16",
                "--iodepth_batch=4",
                "--rw=write",
            ],
        ]
        .concat(),
    );
    let w = &batch["jobs"][0]["write"];
    assert_eq!(w["total_ios"], 4096);
    assert_eq!(w["clat_ns"]["max"], 1500);
    assert_eq!(batch["jobs"][0]["iodepth_submit"]["4"], 100.0);
}

#[test]
fn buffered_io_uring_and_posixaio_are_refused_naming_why() {
    for (engine, why) in [("io_uring", "io-wq"), ("posixaio", "glibc")] {
        let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
            .args(["fio", "--host", "sprd-sc9863a", "--name=r", "--size=1m"])
            .arg(format!("--ioengine={engine}"))
            .current_dir(root())
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("direct=0") && e.contains(why), "{e}");
    }
}
