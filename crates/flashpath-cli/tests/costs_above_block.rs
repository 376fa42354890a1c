//! `--costs-above-block zero`: the host's costs above the block layer taken out, as a
//! batch run's counterpart of `flashpath serve` (whose client pays its own).
//!
//! On an instant device (`--set device.ideal=true`) at QD1 nothing queues, so taking the
//! costs out shortens each synchronous direct I/O by exactly their sum: the system
//! call's entry, direct I/O's pinning per 4 KiB page, waking fio's thread, the return.
mod common;

use common::{flashpath, ok};
use serde_json::Value;

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

/// A `[costs]` value of the host preset, in ns.
fn cost(field: &str) -> f64 {
    let t: toml::Table = toml::from_str(HOST).unwrap();
    let v = t["costs"][field].as_str().unwrap();
    let us: f64 = v.strip_suffix("us").unwrap().parse().unwrap();
    us * 1e3
}

/// Mean latency (lat_ns) of one psync QD1 job, read or write, 8 KiB.
fn mean_lat(rw: &str, costs: &str) -> f64 {
    let out = ok(&flashpath(&[
        "fio",
        "--device",
        "emmc51-hs400-32g",
        "--host",
        "sprd-sc9863a",
        "--driver",
        "mmc-legacy",
        "--set",
        "device.ideal=true",
        "--costs-above-block",
        costs,
        "--name=j",
        &format!("--rw={rw}"),
        "--bs=8k",
        "--direct=1",
        "--ioengine=psync",
        "--size=64m",
        "--number_ios=300",
        "--output-format=json",
    ]));
    let j: Value = serde_json::from_str(&out).unwrap();
    let d = if rw.contains("read") { "read" } else { "write" };
    if costs == "zero" {
        assert_eq!(
            j["flashpath"]["configuration"]["costs_above_block"], "zero",
            "the report says what ran"
        );
    }
    j["jobs"][0][d]["lat_ns"]["mean"].as_f64().unwrap()
}

#[test]
fn zero_takes_out_exactly_the_costs_above_the_block_layer() {
    // The preset gives no separate task wake-up: fio's thread wakes at `wakeup`'s cost.
    assert!(!HOST.contains("task_wakeup"));
    let above =
        cost("syscall") + 2.0 * cost("pin_per_4k") + cost("wakeup") + cost("syscall_return");
    assert!(above > 20_000.0, "the preset's costs: {above} ns");
    for rw in ["randread", "randwrite"] {
        let (all, zero) = (mean_lat(rw, "simulated"), mean_lat(rw, "zero"));
        assert!(
            (all - zero - above).abs() < 1.0,
            "{rw}: {all} - {zero} ns should be the costs above the block layer, {above} ns"
        );
        // What is left is the block layer's, the driver's and the interrupt's.
        assert!(zero > 10_000.0, "{rw}: {zero} ns");
    }
}

#[test]
fn task_wakeup_is_a_cost_of_its_own() {
    // Only fio's thread's wake-up changes; the driver's own wake-ups keep `wakeup`.
    let run = |extra: &[&str]| {
        let mut a = vec![
            "fio",
            "--device",
            "emmc51-hs400-32g",
            "--set",
            "device.ideal=true",
            "--name=j",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            "--size=64m",
            "--number_ios=200",
            "--output-format=json",
        ];
        a.extend_from_slice(extra);
        let j: Value = serde_json::from_str(&ok(&flashpath(&a))).unwrap();
        j["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap()
    };
    let base = run(&[]);
    let quick = run(&["--set", "host.costs.task_wakeup=5us"]);
    assert!(
        (base - quick - (cost("wakeup") - 5_000.0)).abs() < 1.0,
        "{base} - {quick}"
    );
}

#[test]
fn buffered_jobs_and_bad_values_are_refused() {
    let o = flashpath(&[
        "fio",
        "--costs-above-block",
        "zero",
        "--name=j",
        "--rw=read",
        "--size=1m",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("job 'j' is buffered (direct=0)"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let o = flashpath(&[
        "fio",
        "--costs-above-block",
        "none",
        "--name=j",
        "--size=1m",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--costs-above-block none: expected zero or simulated"),
        "{e}"
    );
}
