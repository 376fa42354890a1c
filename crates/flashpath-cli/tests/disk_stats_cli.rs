//! fio's "Disk stats" through the `flashpath` binary: filled from the simulated block
//! layer's accounting (report::disk_util), printed after "Run status" in normal output,
//! as `disk_util` in JSON, and suppressed by disk_util=0.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    serde_json::from_str(&run(&a)).expect("JSON")
}

const RANDREAD: &[&str] = &[
    "fio",
    "--name=r",
    "--rw=randread",
    "--bs=4k",
    "--size=4m",
    "--direct=1",
];

#[test]
fn json_disk_util_has_fios_fields_and_the_jobs_requests() {
    // Default preconditioning: its writes happen before fio's first sample.
    let v = json(RANDREAD);
    let du = v["disk_util"].as_array().expect("disk_util array");
    assert_eq!(du.len(), 1);
    let d = du[0].as_object().unwrap();
    let keys: Vec<&str> = d.keys().map(|k| k.as_str()).collect();
    for k in [
        "name",
        "read_ios",
        "write_ios",
        "read_merges",
        "write_merges",
        "read_ticks",
        "write_ticks",
        "in_queue",
        "util",
    ] {
        assert!(keys.contains(&k), "{k} missing: {keys:?}");
    }
    assert_eq!(d["name"], "mmcblk0");
    assert_eq!(
        d["read_ios"], 1024,
        "the job's own reads, not the prefill's"
    );
    assert_eq!(d["write_ios"], 0);
    assert_eq!(d["read_merges"], 0, "random QD1 never merges");
    assert_eq!(d["write_merges"], 0);
}

#[test]
fn qd1_ticks_and_util_follow_from_the_request_spans() {
    let v = json(&[RANDREAD, &["--precondition=off"]].concat());
    let d = &v["disk_util"][0];
    let job = &v["jobs"][0];
    let spans = &job["flashpath"]["spans"];
    let n = spans["q2c"]["count"].as_f64().unwrap();
    // A request lives from G (allocation) to C: q2c - q2g.
    let life_ns =
        spans["q2c"]["mean_ns"].as_f64().unwrap() - spans["q2g"]["mean_ns"].as_f64().unwrap();
    let sum_ms = n * life_ns / 1e6;
    let ticks = d["read_ticks"].as_f64().unwrap();
    assert_eq!(d["read_ios"].as_f64().unwrap(), n);
    assert!(
        ticks <= sum_ms + 1e-6 && sum_ms - ticks < 1.0,
        "ticks {ticks} vs lifetimes {sum_ms} ms"
    );
    // One request at a time: busy time is the lifetimes' sum; the window is the job's.
    let runtime = job["read"]["runtime"].as_f64().unwrap();
    let util = d["util"].as_f64().unwrap();
    let want = 100.0 * sum_ms / runtime;
    assert!(
        (util - want).abs() <= 100.0 / runtime,
        "util {util} vs in-flight share {want}"
    );
    assert!(util > 0.0 && util < 100.0);
}

#[test]
fn sequential_bios_merge_into_fewer_requests() {
    let v = json(&[
        "fio",
        "--name=s",
        "--rw=read",
        "--bs=4k",
        "--size=8m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--precondition=off",
    ]);
    let d = &v["disk_util"][0];
    let bios = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    let reqs = d["read_ios"].as_u64().unwrap();
    let merges = d["read_merges"].as_u64().unwrap();
    assert!(merges > 0 && reqs < bios, "{d}");
    assert_eq!(merges, bios - reqs);
}

#[test]
fn normal_output_ends_with_the_disk_section_and_disk_util_0_drops_it() {
    let out = run(RANDREAD);
    let rs = out.find("Run status group 0").expect("run status");
    let ds = out.find("\nDisk stats (read/write):\n  mmcblk0: ios=1024/0, merge=0/0, ticks=");
    assert!(ds.is_some_and(|i| i > rs), "{out}");
    assert_eq!(out.matches("Disk stats").count(), 1);

    let off = run(&[RANDREAD, &["--disk_util=0"]].concat());
    assert!(!off.contains("Disk stats"), "{off}");
    let v = json(&[RANDREAD, &["--disk_util=0"]].concat());
    assert!(v.get("disk_util").is_none());
}

#[test]
fn ufs_is_sda_and_buffered_writeback_counts() {
    let v = json(&[RANDREAD, &["--host=sd835-phone", "--device=ufs21-64g"]].concat());
    assert_eq!(v["disk_util"][0]["name"], "sda");
    assert_eq!(v["disk_util"][0]["read_ios"], 1024);
    // Buffered writes reach the disk as writeback requests (512 KiB each here), and
    // end_fsync's empty preflush counts as a write in Linux 5.4.
    let v = json(&[
        "fio",
        "--name=w",
        "--rw=write",
        "--bs=64k",
        "--size=4m",
        "--direct=0",
        "--end_fsync=1",
    ]);
    let d = &v["disk_util"][0];
    assert_eq!(d["read_ios"], 0);
    assert!(d["write_ios"].as_u64().unwrap() >= 9, "{d}");
}
