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
    assert_eq!(job["sync"]["total_ios"], 4, "{}", job["sync"]);
    assert!(job["sync"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(job["write"]["io_bytes"], 4 << 20);
}
