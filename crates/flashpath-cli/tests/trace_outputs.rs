//! `--blktrace DIR` and `--trace FILE`: the real blkparse and btt read flashpath's blktrace
//! files and report its own D2C and Q2C; the timeline is valid trace-event JSON whose core
//! and NAND tracks never hold two overlapping slices; both are deterministic; bad paths
//! are one-line errors.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Random 4 KiB reads and writes, sequential 64 KiB writes and 4 KiB reads, libaio with
/// batched submission (one plug) and psync, four threads on four cores: bios merge,
/// plugs flush. (No sequential readwrite: fio runs its reads and writes over the same
/// sectors at once, one cursor per direction, and btt pairs events by sector.)
const JOB: &str = "\
[global]
ioengine=libaio
direct=1
iodepth=8
size=16m
group_reporting=1
[rand]
rw=randrw
bs=4k
io_size=1m
offset=0
[seq]
rw=write
bs=64k
iodepth=4
io_size=2m
offset=64m
[seqr]
rw=read
bs=4k
iodepth=16
iodepth_batch_submit=8
io_size=1m
offset=128m
[sync]
ioengine=psync
rw=randread
bs=4k
io_size=512k
offset=192m
";

/// Runs the job with both outputs into `dir`; returns (blktrace dir, timeline, fio JSON).
fn run_job(dir: &Path) -> (PathBuf, PathBuf, Value) {
    run_job_with(dir, &[])
}

/// `run_job` with more flashpath arguments (e.g. a driver).
fn run_job_with(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf, Value) {
    let job = dir.join("job.fio");
    std::fs::write(&job, JOB).unwrap();
    let bt = dir.join("bt");
    let tl = dir.join("timeline.json");
    let mut args = vec![
        "fio",
        "--blktrace",
        bt.to_str().unwrap(),
        "--trace",
        tl.to_str().unwrap(),
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    args.push(job.to_str().unwrap());
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).expect("fio JSON");
    (bt, tl, report)
}

fn load(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).expect("the timeline is JSON")
}

fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("a number") * 1000.0).round() as u64
}

/// flashpath's own means over the run, from its trace (the timeline's block events):
/// (d2c weighted per bio as btt weights it, d2c per request, q2c per bio), in ns.
/// D2C of a request = C − D; Q2C of a bio = its request's C − the bio's Q. A read and a
/// write may be at the same sector at once (fio's readwrite keeps a cursor per
/// direction): events pair by sector and direction.
fn own_means_from_trace(timeline: &Value) -> (f64, f64, f64) {
    let mut pending_q: Vec<(u64, &str, u64)> = Vec::new(); // (sector, dir, Q time)
    let mut issued: Vec<(u64, &str, u64)> = Vec::new(); // (sector, dir, D time)
    let (mut d2c_bio, mut d2c_req, mut q2c) = (Vec::new(), Vec::new(), Vec::new());
    for e in timeline["traceEvents"].as_array().unwrap() {
        if e["ph"] != "i" {
            continue;
        }
        let t = ns(&e["ts"]);
        let sector = e["args"]["sector"].as_u64().unwrap();
        let sectors = e["args"]["sectors"].as_u64().unwrap();
        let dir = e["args"]["dir"].as_str().unwrap();
        match e["name"].as_str().unwrap() {
            "Q" => pending_q.push((sector, dir, t)),
            "D" => issued.push((sector, dir, t)),
            "C" => {
                let i = issued
                    .iter()
                    .position(|&(s, d, _)| s == sector && d == dir)
                    .expect("D before C");
                let d2c = t - issued.swap_remove(i).2;
                d2c_req.push(d2c);
                let before = pending_q.len();
                pending_q.retain(|&(s, d, q)| {
                    let mine = d == dir && s >= sector && s < sector + sectors;
                    if mine {
                        q2c.push(t - q);
                        d2c_bio.push(d2c);
                    }
                    !mine
                });
                assert!(
                    pending_q.len() < before,
                    "a request completed without a bio"
                );
            }
            _ => {}
        }
    }
    assert!(pending_q.is_empty() && issued.is_empty());
    let mean = |v: &Vec<u64>| v.iter().sum::<u64>() as f64 / v.len() as f64;
    (mean(&d2c_bio), mean(&d2c_req), mean(&q2c))
}

#[test]
fn btt_reports_flashpaths_d2c_and_q2c() {
    btt_agrees("btt", &[], false);
}

/// hsq refuses requests past its in-flight limit: they are requeued (R) and issued
/// later; btt still pairs every bio with its request's D and C.
#[test]
fn btt_reports_flashpaths_d2c_and_q2c_with_requeues() {
    btt_agrees("btt-hsq", &["--driver", "mmc-hsq-v6"], true);
}

fn btt_agrees(name: &str, extra: &[&str], requeues: bool) {
    let dir = scratch(name);
    let (bt, tl, report) = run_job_with(&dir, extra);
    let timeline = load(&tl);
    let count = |name: &str| {
        timeline["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "i" && e["name"] == name)
            .count()
    };
    let (qs, ms, us, ds) = (count("Q"), count("M"), count("U"), count("D"));
    assert!(
        qs > 500 && ms > 50 && us > 50 && ds < qs,
        "Q {qs} M {ms} U {us} D {ds}"
    );
    assert_eq!(count("R") > 100, requeues, "R {}", count("R"));
    // One file per host core (8 on the default board), named as blktrace names them.
    for cpu in 0..8 {
        assert!(bt.join(format!("mmcblk0.blktrace.{cpu}")).exists());
    }
    let (trace_d2c, own_d2c_per_req, trace_q2c) = own_means_from_trace(&timeline);
    // flashpath's own figures: the spans of its JSON report, over all job rows.
    let span_mean = |name: &str| {
        let (mut sum, mut n) = (0.0, 0.0);
        for j in report["jobs"].as_array().unwrap() {
            let s = &j["flashpath"]["spans"][name];
            let c = s["count"].as_f64().unwrap();
            sum += s["mean_ns"].as_f64().unwrap() * c;
            n += c;
        }
        sum / n
    };
    let (own_d2c, own_q2c) = (span_mean("d2c"), span_mean("q2c"));
    assert!(
        (own_d2c - trace_d2c).abs() <= 1e-6 * trace_d2c,
        "{own_d2c} vs {trace_d2c}"
    );
    assert!(
        (own_q2c - trace_q2c).abs() <= 1e-6 * trace_q2c,
        "{own_q2c} vs {trace_q2c}"
    );
    assert!(
        own_d2c_per_req < own_d2c,
        "merged requests are the larger, slower ones"
    );

    if !(have("blkparse") && have("btt")) {
        eprintln!("note: blkparse/btt not installed (Debian package blktrace): oracle skipped");
        return;
    }
    let bin = dir.join("all.bin");
    let o = Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D"])
        .arg(&bt)
        .arg("-d")
        .arg(&bin)
        .arg("-O")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // btt also writes <dev>_iops_fp.dat and friends into its working directory.
    let o = Command::new("btt")
        .arg("-i")
        .arg(&bin)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (d2c, d2c_n) = btt_row(&text, "D2C");
    let (q2c, q2c_n) = btt_row(&text, "Q2C");
    // btt pairs every bio (Q) with its request's D and C: N counts bios, and D2C is
    // weighted by the bios of each request (btt's update_d2c(d_iop, n, ...)).
    assert_eq!(q2c_n as usize, qs, "btt paired every Q with a C");
    assert_eq!(d2c_n as usize, qs);
    eprintln!(
        "btt D2C {d2c:.0} Q2C {q2c:.0} (N {q2c_n}); flashpath D2C {own_d2c:.0} \
         (per request {own_d2c_per_req:.0}) Q2C {own_q2c:.0} ns"
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 0.01 * b;
    assert!(
        close(d2c, own_d2c),
        "btt D2C {d2c} ns, flashpath {own_d2c} ns"
    );
    assert!(
        close(q2c, own_q2c),
        "btt Q2C {q2c} ns, flashpath {own_q2c} ns"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The X slices of each (pid, tid) track, sorted by start: (start, end) in ns.
fn tracks(timeline: &Value) -> std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> {
    let mut m = std::collections::BTreeMap::<(u64, u64), Vec<(u64, u64)>>::new();
    for e in timeline["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            let s = ns(&e["ts"]);
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            m.entry(key).or_default().push((s, s + ns(&e["dur"])));
        }
    }
    for v in m.values_mut() {
        v.sort_unstable();
    }
    m
}

#[test]
fn timeline_is_trace_event_json_without_overlap_on_cores_and_dies() {
    let dir = scratch("timeline");
    let (_, tl, _) = run_job(&dir);
    let timeline = load(&tl);
    assert_eq!(timeline["displayTimeUnit"], "ns");
    let events = timeline["traceEvents"].as_array().expect("traceEvents");
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(
            e["pid"].is_u64() && e["tid"].is_u64() && e["name"].is_string(),
            "{e}"
        );
        if ph != "M" {
            assert!(e["ts"].is_number(), "{e}");
        }
        if ph == "X" {
            assert!(e["dur"].as_f64().expect("dur") > 0.0, "{e}");
        }
        if ph == "b" || ph == "e" {
            assert!(e["id"].is_u64() && e["cat"].is_string(), "{e}");
        }
    }
    // Process names: host CPU, bus, NAND, block requests.
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["host CPU", "bus", "NAND", "block requests"]);
    // Every request's spans open and close in pairs.
    let b = events.iter().filter(|e| e["ph"] == "b").count();
    let e = events.iter().filter(|e| e["ph"] == "e").count();
    assert!(b > 100 && b == e);
    let t = tracks(&timeline);
    let mut checked = (0, 0);
    for ((pid, tid), v) in &t {
        // pid 1: host cores (task, kernel and interrupt lanes); pid 3: NAND dies (tid < 1000)
        // and channels.
        if *pid == 1 || *pid == 3 {
            for w in v.windows(2) {
                assert!(
                    w[1].0 >= w[0].1,
                    "track ({pid},{tid}): {:?} overlaps {:?}",
                    w[0],
                    w[1]
                );
            }
            if *pid == 1 {
                checked.0 += 1;
            } else if *tid < 1000 {
                checked.1 += 1;
            }
        }
    }
    // Four job threads' cores plus the interrupt lane; every die of the default eMMC.
    assert!(checked.0 >= 5 && checked.1 >= 4, "{checked:?}");
    // Interrupt work has its own lane on the IRQ core (core 0: tid 2), and the MMC
    // dispatcher's kernel work its lane (tid 3c + 1) on some core.
    assert!(t.contains_key(&(1, 2)), "interrupt lane of core 0");
    assert!(
        t.keys().any(|&(pid, tid)| pid == 1 && tid % 3 == 1),
        "a kernel lane"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trace_outputs_are_deterministic() {
    let (a, b) = (scratch("det-a"), scratch("det-b"));
    let (bta, tla, _) = run_job(&a);
    let (btb, tlb, _) = run_job(&b);
    assert!(std::fs::read(&tla).unwrap() == std::fs::read(&tlb).unwrap());
    for cpu in 0..8 {
        let f = format!("mmcblk0.blktrace.{cpu}");
        assert!(std::fs::read(bta.join(&f)).unwrap() == std::fs::read(btb.join(&f)).unwrap());
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn bad_trace_paths_are_one_line_errors() {
    let dir = scratch("bad");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let job = [
        "--name=a",
        "--rw=read",
        "--bs=4k",
        "--size=1m",
        "--direct=1",
    ];
    let missing = dir.join("no/such/dir/t.json");
    for (opt, path) in [("--blktrace", &file), ("--trace", &missing)] {
        let mut args = vec!["fio", opt, path.to_str().unwrap()];
        args.extend(job);
        let o = flashpath(&args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{opt}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("flashpath: error: {opt} ")),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_refuses_trace_options() {
    let o = flashpath(&[
        "compare",
        "--vary",
        "driver=mmc-legacy,mmc-hsq",
        "--trace",
        "t.json",
        "--name=a",
        "--rw=read",
        "--size=1m",
        "--direct=1",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--blktrace, --trace") && err.lines().count() == 1,
        "{err}"
    );
}

/// blkparse names each event's task as a kernel trace does: the job threads queue (Q,
/// G, I), kblockd's kworker issues (D) and, on hsq, requeues what the driver refuses
/// (R), and completions run in interrupt context on a CPU's idle task (C: `swapper/N`).
#[test]
fn blkparse_names_the_tasks_of_the_events() {
    if !have("blkparse") {
        eprintln!("note: blkparse not installed (Debian package blktrace): skipped");
        return;
    }
    for driver in ["mmc-legacy", "mmc-hsq-v6"] {
        blkparse_tasks(driver);
    }
}

fn blkparse_tasks(driver: &str) {
    let dir = scratch(&format!("tasks-{driver}"));
    let (bt, _, _) = run_job_with(&dir, &["--driver", driver]);
    let o = Command::new("blkparse")
        .args(["-q", "-i", "mmcblk0", "-D"])
        .arg(&bt)
        .args(["-f", "%a %C\n"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut seen = 0;
    for line in text.lines() {
        let Some((a, task)) = line.split_once(' ') else {
            continue;
        };
        let ok = match a {
            "Q" | "G" | "I" | "M" | "P" | "U" => ["rand", "seq", "seqr", "sync"].contains(&task),
            "D" | "R" => task.starts_with("kworker/") && task.ends_with(":1H"),
            "C" => task.starts_with("swapper/"),
            _ => continue,
        };
        assert!(ok, "{driver}: {line}");
        seen += 1;
    }
    assert!(seen > 1000, "{driver}: {seen} events");
    assert_eq!(
        text.lines().any(|l| l.starts_with("R ")),
        driver == "mmc-hsq-v6",
        "{driver}: requeues"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
