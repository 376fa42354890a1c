//! fio options of copy-pasted benchmark lines: the statistics switches (gtod_reduce and
//! disable_*), exitall, ioscheduler, and the options that cannot change a simulated run
//! (accepted with no effect, listed in docs/command-line.md). Real fio is the oracle where it is
//! installed.
mod common;

use common::{flashpath, have, ok, scratch};
use serde_json::Value;
use std::process::Command;

const BASE: &[&str] = &[
    "fio",
    "--name=t",
    "--rw=randwrite",
    "--bs=4k",
    "--size=4m",
    "--direct=1",
    "--ioengine=psync",
];

fn run(extra: &[&str]) -> String {
    let mut a = BASE.to_vec();
    a.extend_from_slice(extra);
    ok(&flashpath(&a))
}

fn json(extra: &[&str]) -> Value {
    let mut a = extra.to_vec();
    a.push("--output-format=json");
    serde_json::from_str(&run(&a)).unwrap()
}

/// The lines of fio's per-job block that carry statistics (clat, lat, bw, iops, the
/// percentiles and the latency distribution), by their first word.
fn stat_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let w = l.split_whitespace().next()?;
            ["slat", "clat", "lat", "bw", "iops", "|"]
                .contains(&w)
                .then(|| w.to_string())
        })
        .collect()
}

#[test]
fn gtod_reduce_leaves_the_statistics_out_as_fio_does() {
    let full = run(&[]);
    assert!(!stat_lines(&full).is_empty());
    let reduced = run(&["--gtod_reduce=1"]);
    assert_eq!(stat_lines(&reduced), Vec::<String>::new(), "{reduced}");
    assert!(reduced.contains("IO depths"));
    let j = json(&["--gtod_reduce=1"]);
    let w = &j["jobs"][0]["write"];
    for k in ["slat_ns", "clat_ns", "lat_ns"] {
        assert_eq!(w[k]["N"], 0, "{k}");
    }
    assert_eq!(w["bw_samples"], 0);
    assert_eq!(w["total_ios"], 1024);
    if have("fio") {
        // Real fio on a file: the same statistics lines are left out.
        let d = scratch("gtod");
        let f = d.join("file");
        let o = Command::new("fio")
            .args([
                "--name=t",
                "--rw=randwrite",
                "--bs=4k",
                "--size=4m",
                "--ioengine=psync",
                "--gtod_reduce=1",
            ])
            .arg(format!("--filename={}", f.display()))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(stat_lines(&text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn disable_clat_keeps_the_total_latency() {
    let j = json(&["--disable_clat=1"]);
    let w = &j["jobs"][0]["write"];
    assert_eq!(w["clat_ns"]["N"], 0);
    assert_eq!(w["lat_ns"]["N"], 1024);
    // The latency distribution goes with the clat samples.
    let buckets = &j["jobs"][0]["latency_us"];
    assert!(buckets
        .as_object()
        .unwrap()
        .values()
        .all(|v| v.as_f64() == Some(0.0)));
}

#[test]
fn exitall_stops_the_rest_of_the_group() {
    // A short job and a long time-based one in the same group.
    let args = |exitall: bool| {
        let mut a = vec![
            "fio",
            "--direct=1",
            "--ioengine=psync",
            "--bs=4k",
            "--name=short",
            "--rw=randread",
            "--size=1m",
            "--name=long",
            "--rw=randread",
            "--offset=64m",
            "--size=64m",
            "--time_based",
            "--runtime=2s",
            "--output-format=json",
        ];
        if exitall {
            a.insert(7, "--exitall");
        }
        let out = ok(&flashpath(&a));
        let j: Value = serde_json::from_str(&out).unwrap();
        let rt = |i: usize| j["jobs"][i]["read"]["runtime"].as_u64().unwrap();
        (rt(0), rt(1))
    };
    let (short, long) = args(false);
    assert!(long >= 2000 && short < 1000, "{short} {long}");
    let (short, long) = args(true);
    assert!(long <= short + 1, "{short} {long}");
}

#[test]
fn ioscheduler_sets_the_hosts_scheduler_or_is_refused() {
    // Random writes at QD32: mq-deadline dispatches in sector order with its FIFO
    // expiry, none in arrival order: the same I/O, a different latency spread.
    let qd32 = |sched: &str| {
        let out = ok(&flashpath(&[
            "fio",
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            "--size=64m",
            "--io_size=8m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=32",
            &format!("--ioscheduler={sched}"),
            "--output-format=json",
        ]));
        let j: Value = serde_json::from_str(&out).unwrap();
        j["jobs"][0]["write"]["clat_ns"]["stddev"].as_f64().unwrap()
    };
    let (none, dl) = (qd32("none"), qd32("mq-deadline"));
    assert!(dl > 2.0 * none, "{none} {dl}");
    // The single-queue names map onto the same.
    assert_eq!(qd32("deadline"), dl);
    let mut a = BASE.to_vec();
    a.push("--ioscheduler=bfq");
    let o = flashpath(&a);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("ioscheduler=bfq is not modelled"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let o = flashpath(&[
        "fio",
        "--direct=1",
        "--name=a",
        "--size=1m",
        "--ioscheduler=none",
        "--name=b",
        "--size=1m",
        "--ioscheduler=mq-deadline",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("one scheduler"));
}

#[test]
fn options_with_no_effect_change_nothing_and_are_listed_in_the_readme() {
    let base = json(&[]);
    let readme = include_str!("../../../docs/command-line.md");
    for opt in [
        "--refill_buffers",
        "--scramble_buffers=1",
        "--buffer_compress_percentage=50",
        "--buffer_compress_chunk=4k",
        "--buffer_pattern=0xdeadbeef",
        "--zero_buffers",
        "--dedupe_percentage=30",
        "--allrandrepeat=1",
        "--overwrite=1",
        "--threads=4",
    ] {
        let j = json(&[opt]);
        assert_eq!(j["jobs"][0]["write"], base["jobs"][0]["write"], "{opt}");
        let name = opt.trim_start_matches("--").split('=').next().unwrap();
        assert!(
            readme.contains(&format!("`{name}`")),
            "docs/command-line.md lists {name}"
        );
    }
}

/// exit_what as fio_terminate_threads reads it: `group` stops the job's reporting
/// group (a new_group job runs on), `stonewall` every running job whatever its group
/// (the next stonewall turn still runs), `all` every job, those not started too.
#[test]
fn exit_what_names_the_jobs_exitall_stops() {
    let run = |what: &str| -> Vec<(u64, u64)> {
        let w = format!("--exit_what={what}");
        let a = [
            "fio",
            "--direct=1",
            "--ioengine=psync",
            "--bs=4k",
            "--rw=randread",
            "--name=short",
            "--size=1m",
            "--exitall",
            w.as_str(),
            "--name=other",
            "--new_group",
            "--offset=64m",
            "--size=64m",
            "--time_based",
            "--runtime=1s",
            "--name=next",
            "--stonewall",
            "--offset=128m",
            "--size=64m",
            "--time_based",
            "--runtime=1s",
            "--output-format=json",
        ];
        let j: Value = serde_json::from_str(&ok(&flashpath(&a))).unwrap();
        (0..3)
            .map(|i| {
                let r = &j["jobs"][i]["read"];
                (
                    r["runtime"].as_u64().unwrap(),
                    r["total_ios"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let g = run("group");
    assert!(g[1].0 >= 1000 && g[2].0 >= 1000, "{g:?}");
    let s = run("stonewall");
    assert!(s[1].0 <= s[0].0 + 1 && s[2].0 >= 1000, "{s:?}");
    let a = run("all");
    assert!(a[1].0 <= a[0].0 + 1 && a[2].1 == 0, "{a:?}");
}

/// One line on stderr, a failure status, and the line contains `want`.
fn refused(args: &[&str], want: &str) {
    let o = flashpath(args);
    assert!(!o.status.success(), "{args:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains(want), "{e}");
}

#[test]
fn bad_inputs_get_one_line_saying_what_was_read() {
    // A job region under 4 KiB runs under the default (random) precondition.
    let out = ok(&flashpath(&[
        "fio",
        "--rw=randwrite",
        "--direct=1",
        "--bs=512",
        "--size=2k",
        "--name=t",
        "--output-format=json",
    ]));
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 4);
    // fio rounds a job's elapsed microseconds up to milliseconds.
    assert_eq!(j["jobs"][0]["write"]["runtime"], 1);
    // Control characters are shown escaped, on one line.
    refused(
        &[
            "fio",
            "--set",
            "device.nand.t_read\nx=1",
            "--name=t",
            "--size=1m",
        ],
        "device.nand.t_read\\nx",
    );
    let d = scratch("binary-job");
    let f = d.join("bin.fio");
    std::fs::write(&f, b"abc\x1b[31m\x07\x01[t]\n").unwrap();
    let o = flashpath(&["fio", f.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        !o.stderr.iter().any(|&b| b < 0x20 && b != b'\n'),
        "raw control bytes"
    );
    refused(
        &[
            "fio",
            "--name=t",
            "--size=1m",
            "--time_based",
            "--runtime=-5",
        ],
        "runtime=-5 is read as an unbounded time",
    );
    refused(&["fio", "--name=t", "--size=-1M"], "size=-1M is negative");
    refused(
        &["fio", "--name=t", "--size=1m", "--bs=-4k"],
        "bs=-4k was read as 18446744073709547520 bytes (16.0EiB)",
    );
    refused(
        &["fio", "--section=nope", "--name=t", "--size=1m"],
        "no job section named 'nope'",
    );
    // fio warns about an out-of-range depth and goes on with its default.
    let o = flashpath(&["fio", "--name=t", "--size=1m", "--iodepth=-1"]);
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("iodepth: min value out of range: -1 (1 min)"),
        "{e}"
    );
}

#[test]
fn fio_switches_work_or_are_refused() {
    assert_eq!(ok(&flashpath(&["fio", "--version"])), "fio-3.33\n");
    assert!(ok(&flashpath(&["--version"])).starts_with("flashpath "));
    assert!(ok(&flashpath(&["fio", "--help"])).starts_with("usage: flashpath fio"));
    // --showcmd prints a job file as fio does (checked against real fio if present).
    let d = scratch("showcmd");
    let f = d.join("s.fio");
    std::fs::write(&f, "[global]\nbs=8k\n[t]\nsize=1m\nrw=randread\n").unwrap();
    let path = f.to_str().unwrap();
    let ours = ok(&flashpath(&["fio", "--showcmd", path]));
    assert_eq!(ours, "fio --bs=8k --name=t --size=1m --rw=randread \n");
    if have("fio") {
        let real = Command::new("fio")
            .args(["--showcmd", path])
            .output()
            .unwrap();
        assert_eq!(ours, String::from_utf8_lossy(&real.stdout));
    }
    // Refused, one line naming the switch, also under --parse-only.
    // (--status-interval is modelled: tests/status_interval.rs.)
    for sw in [
        "--client=host",
        "--idle-prof=system",
        "--trigger=cmd",
        "--debug=io",
    ] {
        for parse_only in [false, true] {
            let mut a = vec!["fio", sw, "--name=t", "--size=1m"];
            if parse_only {
                a.push("--parse-only");
            }
            let name = sw.split('=').next().unwrap();
            refused(&a, name);
        }
    }
    // No effect on a simulated run: accepted.
    ok(&flashpath(&["fio", "--eta=never", "--name=t", "--size=1m"]));
    // --warnings-fatal makes fio's warnings errors.
    refused(
        &[
            "fio",
            "--warnings-fatal",
            "--name=t",
            "--size=1m",
            "--iodepth=-1",
        ],
        "iodepth: min value out of range",
    );
}

#[test]
fn jesd219_parses_and_zoned_runs() {
    // fio's JEDEC client workload example: zoned distribution, bssplit from 512 B,
    // blockalign=4k, libaio at QD256.
    let ex = "/usr/share/doc/fio/examples/jesd219.fio";
    if std::path::Path::new(ex).exists() {
        ok(&flashpath(&["fio", "--parse-only", ex]));
    }
    let j = json(&[
        "--random_distribution=zoned_abs:60/1m:40/3m",
        "--io_size=1m",
    ]);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 256);
}

#[test]
fn parse_only_refuses_what_a_run_refuses() {
    // A CPU the host lacks: refused by the simulation's set-up, with or without a run.
    for extra in [&[][..], &["--parse-only"][..]] {
        let mut a = vec!["fio", "--name=t", "--size=1m", "--cpus_allowed=9"];
        a.extend_from_slice(extra);
        refused(&a, "CPU 9 is not one of host");
    }
}

#[test]
fn wait_for_names_an_earlier_job() {
    ok(&flashpath(&[
        "fio",
        "--direct=1",
        "--size=1m",
        "--name=a",
        "--name=b",
        "--wait_for=a",
    ]));
    refused(
        &["fio", "--direct=1", "--size=1m", "--name=b", "--wait_for=a"],
        "wait_for=a: no earlier job is named 'a'",
    );
}
