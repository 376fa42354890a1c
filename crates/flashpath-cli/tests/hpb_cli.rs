//! UFS HPB through the binary: the JSON report's `flashpath` counters, compare's `run`
//! rows for HPB off and on, the timeline's HPB commands, the seed's iozone line with
//! `--driver ufs-hpb`, and one-line errors for a driver the system cannot run.

mod common;

use common::{flashpath, ok, scratch};

const SYSTEM: [&str; 5] = [
    "--device",
    "ufs21-64g",
    "--host",
    "sd835-phone",
    "--precondition=sequential",
];
const JOB: [&str; 8] = [
    "--filename=/dev/sda",
    "--direct=1",
    "--rw=randread",
    "--bs=4k",
    "--size=64m",
    "--offset_increment=64m",
    "--numjobs=4",
    "--name=r",
];

fn args<'a>(driver: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["fio", "--driver", driver];
    v.extend(SYSTEM);
    v.extend(JOB);
    v.extend(extra);
    v
}

#[test]
fn the_json_report_carries_the_device_and_hpb_counters() {
    let o = flashpath(&args("ufs-hpb", &["--output-format=json"]));
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let h = &v["flashpath"]["hpb"];
    let d = &v["flashpath"]["device"];
    let n = |x: &serde_json::Value| x.as_u64().unwrap();
    assert!(n(&h["hits"]) > 0, "{h}");
    assert_eq!(
        n(&h["hits"]),
        n(&d["hpb_entry_hits"]) + n(&d["hpb_entry_stale"])
    );
    assert_eq!(n(&h["map_loads"]), n(&d["hpb_read_buffers"]));
    // Every read was an HPB READ or a plain READ for a reason.
    let reads: u64 = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| n(&j["read"]["total_ios"]))
        .sum();
    let plain = ["miss_inactive", "miss_invalid", "miss_dirty", "too_long"]
        .iter()
        .map(|k| n(&h[*k]))
        .sum::<u64>();
    assert_eq!(n(&h["hits"]) + plain, reads);
    // Without HPB: the device's counters only.
    let o = flashpath(&args("ufs", &["--output-format=json"]));
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert!(v["flashpath"]["hpb"].is_null());
    assert!(v["flashpath"]["device"]["map_misses"].as_u64().is_some());
}

#[test]
fn compare_shows_hpb_off_and_on_with_the_run_counters() {
    let mut a = vec!["compare", "--vary", "driver=ufs,ufs-hpb"];
    a.extend(SYSTEM);
    a.extend(JOB);
    let text = ok(&flashpath(&a));
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name} row\n{text}"))
            .split_whitespace()
            .skip(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let hits = row("hpb.hits");
    assert_eq!(hits[0], "-");
    assert!(hits[1].parse::<u64>().unwrap() > 0);
    assert_eq!(row("device.map_misses").len(), 2);
}

#[test]
fn the_timeline_names_hpb_read_and_read_buffer() {
    let path = scratch("hpb-trace").join("t.json");
    let p = path.to_str().unwrap();
    ok(&flashpath(&args(
        "ufs-hpb",
        &["--trace", p, "--output-format=terse"],
    )));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("HPB READ (F8h)"));
    assert!(text.contains("HPB READ BUFFER (F9h)"));
}

#[test]
fn the_seed_iozone_line_runs_with_hpb() {
    let mut a = vec!["iozone", "--driver", "ufs-hpb"];
    a.extend(&SYSTEM[..4]);
    a.extend("-r 4k -+n -i2 -ecI -t 4 -l 4 -u 4 -s 16m -F f1 f2 f3 f4".split(' '));
    let text = ok(&flashpath(&a));
    assert!(
        text.contains("Children see throughput for  4 random readers")
            || text.contains("Children see throughput for 4 random readers"),
        "{text}"
    );
}

#[test]
fn hpb_drivers_on_a_system_without_hpb_fail_in_one_line() {
    for (dev, want) in [
        (
            "emmc51-hs400-32g",
            "needs a device with interface = \"ufs\"",
        ),
        ("ufs21-64g", "needs HPB 2.0"),
    ] {
        let mut a = vec!["fio", "--driver", "ufs-hpb-hcm", "--device", dev];
        a.extend(&SYSTEM[2..4]);
        a.extend(JOB);
        let o = flashpath(&a);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}
