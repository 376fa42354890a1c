//! Trims in flashpath's other outputs: blktrace files mark discards (and fsync's cache
//! flush) with the categories the kernel's `__blk_add_trace` gives them, so the real
//! blkparse prints them as it prints a kernel's (`DS`; `FWS`, `FN`) and btt accepts the
//! files; `compare` has fio's third direction, trim, in its table and JSON; `analyze`
//! counts the trims and says so.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

// blktrace_api.h categories, in the upper 16 bits of `action`.
const TC_READ: u32 = 1 << 16;
const TC_WRITE: u32 = 2 << 16;
const TC_FLUSH: u32 = 4 << 16;
const TC_SYNC: u32 = 8 << 16;
const TC_NOTIFY: u32 = 1 << 26;
const TC_DISCARD: u32 = 0x2000 << 16;

/// (action, bytes, sector) of every record of every CPU file in `dir`, notes left out.
fn records(dir: &Path) -> Vec<(u32, u32, u64)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".blktrace."))
        .collect();
    files.sort();
    for f in files {
        let b = std::fs::read(f).unwrap();
        let mut i = 0;
        while i < b.len() {
            let u32_at = |o: usize| u32::from_le_bytes(b[i + o..i + o + 4].try_into().unwrap());
            assert_eq!(u32_at(0), 0x6561_7407, "magic of a version 7 record");
            let sector = u64::from_le_bytes(b[i + 16..i + 24].try_into().unwrap());
            let (bytes, action) = (u32_at(24), u32_at(28));
            let pdu = u16::from_le_bytes(b[i + 46..i + 48].try_into().unwrap()) as usize;
            if action & TC_NOTIFY == 0 {
                out.push((action, bytes, sector));
            }
            i += 48 + pdu;
        }
    }
    out
}

/// blkparse's default output of the files in `dir`: (action letter, RWBS) of each event.
fn blkparse_events(dir: &Path) -> Vec<(String, String)> {
    let o = Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D"])
        .arg(dir)
        .output()
        .unwrap();
    let text = ok(&o);
    text.lines()
        .filter(|l| l.starts_with("179,0 "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[5].to_string(), f[6].to_string())
        })
        .collect()
}

/// Runs btt over the files in `dir`; returns its report.
fn btt(dir: &Path) -> String {
    let bin = dir.join("all.bin");
    let o = Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D"])
        .arg(dir)
        .arg("-d")
        .arg(&bin)
        .arg("-O")
        .output()
        .unwrap();
    ok(&o);
    let o = Command::new("btt")
        .arg("-i")
        .arg(&bin)
        .current_dir(dir)
        .output()
        .unwrap();
    ok(&o)
}

#[test]
fn blktrace_marks_discards_as_the_kernel_does() {
    let dir = scratch("bt");
    let bt = dir.join("bt");
    let tl = dir.join("timeline.json");
    // Each 8 KiB block trimmed then written (psync: one at a time).
    let out = ok(&flashpath(&[
        "fio",
        "--blktrace",
        bt.to_str().unwrap(),
        "--trace",
        tl.to_str().unwrap(),
        "--output-format=json",
        "--name=tw",
        "--rw=trimwrite",
        "--bs=8k",
        "--size=256k",
        "--direct=1",
    ]));
    let report: Value = serde_json::from_str(&out).unwrap();
    let trims = report["jobs"][0]["trim"]["total_ios"].as_u64().unwrap();
    let writes = report["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
    assert_eq!((trims, writes), (32, 32));
    // The raw records: every event of a discard (Q, G, I, D, C) is WRITE|SYNC|DISCARD
    // (REQ_OP_DISCARD is a write op; submit_bio_wait adds REQ_SYNC); writes are not
    // discards.
    let recs = records(&bt);
    let discards: Vec<_> = recs.iter().filter(|r| r.0 & TC_DISCARD != 0).collect();
    assert_eq!(discards.len() as u64, 5 * trims, "Q G I D C per trim");
    assert!(discards
        .iter()
        .all(|r| r.0 & (TC_WRITE | TC_SYNC) == TC_WRITE | TC_SYNC && r.0 & TC_READ == 0));
    assert!(discards.iter().all(|r| r.1 == 8192), "a discard's bytes");
    let plain_writes = recs
        .iter()
        .filter(|r| r.0 & TC_WRITE != 0 && r.0 & TC_DISCARD == 0)
        .count();
    assert_eq!(plain_writes as u64, 5 * writes);
    // The timeline's block instants carry the same RWBS.
    let timeline: Value = serde_json::from_slice(&std::fs::read(&tl).unwrap()).unwrap();
    let rwbs = |want: &str| {
        timeline["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "i" && e["args"]["rwbs"] == want)
            .count() as u64
    };
    assert_eq!((rwbs("DS"), rwbs("WS")), (5 * trims, 5 * writes));

    if !(have("blkparse") && have("btt")) {
        eprintln!("note: blkparse/btt not installed (Debian package blktrace): oracle skipped");
        return;
    }
    // blkparse renders a discard as 'D' in place of 'W' (fill_rwbs), then S.
    let ev = blkparse_events(&bt);
    let count = |a: &str, r: &str| ev.iter().filter(|(x, y)| x == a && y == r).count() as u64;
    for a in ["Q", "G", "I", "D", "C"] {
        assert_eq!(count(a, "DS"), trims, "{a} DS");
        assert_eq!(count(a, "WS"), writes, "{a} WS");
    }
    assert_eq!(ev.len() as u64, 5 * (trims + writes), "{ev:?}");
    // btt pairs every bio, trims included, with its request's completion.
    let text = btt(&bt);
    assert_eq!(btt_row_n(&text, "Q2C"), trims + writes, "{text}");
    assert_eq!(btt_row_n(&text, "D2C"), trims + writes, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blktrace_shows_an_fsync_cache_flush_as_the_kernel_does() {
    let dir = scratch("flush");
    let bt = dir.join("bt");
    // Buffered writes with an fsync after every second one: a cache flush each (the
    // default eMMC has a volatile cache).
    let out = ok(&flashpath(&[
        "fio",
        "--blktrace",
        bt.to_str().unwrap(),
        "--output-format=json",
        "--name=f",
        "--rw=write",
        "--bs=64k",
        "--size=512k",
        "--direct=0",
        "--fsync=2",
    ]));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["jobs"][0]["write"]["total_ios"], 8);
    // After the 2nd, 4th and 6th write: none after the last (fio's loop ends first).
    let fsyncs = 3;
    // blkdev_issue_flush's empty bio: Q, G and its request's C with WRITE|SYNC|FLUSH
    // (REQ_PREFLUSH); blk-flush's flush_rq (REQ_OP_FLUSH, not a write op): D and C with
    // READ|FLUSH; no bytes.
    let recs = records(&bt);
    let flush = |cat: u32| {
        recs.iter()
            .filter(|r| r.0 & TC_FLUSH != 0 && r.0 & (TC_READ | TC_WRITE | TC_SYNC) == cat)
            .count()
    };
    assert_eq!(flush(TC_WRITE | TC_SYNC), 3 * fsyncs);
    assert_eq!(flush(TC_READ), 2 * fsyncs);
    assert!(recs
        .iter()
        .filter(|r| r.0 & TC_FLUSH != 0)
        .all(|r| r.1 == 0));
    // Every other record moves bytes, but plugs and unplugs (actions 9, 10).
    let empty_ok =
        |r: &(u32, u32, u64)| r.1 > 0 || r.0 & TC_FLUSH != 0 || matches!(r.0 & 0xffff, 9 | 10);
    assert!(recs.iter().all(empty_ok));

    // ext4's journal (jetson-tx1 has [fs]): the commit's flushes are flush requests
    // only, D and C (FN), never G or I of an empty write.
    let bt_j = dir.join("bt-journal");
    ok(&flashpath(&[
        "fio",
        "--blktrace",
        bt_j.to_str().unwrap(),
        "--host",
        "jetson-tx1",
        "--name=j",
        "--rw=write",
        "--bs=64k",
        "--size=256k",
        "--direct=0",
        "--sync=1",
    ]));
    let recs_j = records(&bt_j);
    let count = |cat: u32| {
        recs_j
            .iter()
            .filter(|r| r.0 & TC_FLUSH != 0 && r.0 & (TC_READ | TC_WRITE | TC_SYNC) == cat)
            .count()
    };
    assert!(count(TC_READ) >= 2 && count(TC_READ) % 2 == 0, "{recs_j:?}");
    assert_eq!(count(TC_WRITE | TC_SYNC), 0);
    assert!(recs_j.iter().all(empty_ok), "{recs_j:?}");

    if !(have("blkparse") && have("btt")) {
        eprintln!("note: blkparse/btt not installed (Debian package blktrace): oracle skipped");
        return;
    }
    let ev = blkparse_events(&bt);
    let seq: Vec<String> = ev
        .iter()
        .filter(|(_, r)| r.starts_with('F'))
        .map(|(a, r)| format!("{a} {r}"))
        .collect();
    let one = ["Q FWS", "G FWS", "D FN", "C FN", "C FWS"];
    assert_eq!(seq, one.repeat(fsyncs), "{ev:?}");
    // btt leaves the empty flush bios out and pairs the writes' bios.
    let write_qs = ev.iter().filter(|(a, r)| a == "Q" && r == "WS").count() as u64;
    assert!(write_qs > 0);
    let text = btt(&bt);
    assert_eq!(btt_row_n(&text, "Q2C"), write_qs, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// fio's JSON trim section of a run on `driver`.
fn fio_trim(driver: &str, job: &[&str]) -> Value {
    let mut args = vec!["fio", "--driver", driver, "--output-format=json"];
    args.extend(job);
    let v: Value = serde_json::from_str(&ok(&flashpath(&args))).unwrap();
    v["jobs"][0]["trim"].clone()
}

#[test]
fn compare_shows_the_trim_direction() {
    let job = [
        "--name=t",
        "--rw=randtrim",
        "--bs=64k",
        "--size=8m",
        "--io_size=2m",
        "--direct=1",
    ];
    let mut args = vec![
        "compare",
        "--vary",
        "driver=mmc-legacy,mmc-cqe",
        "--host",
        "sprd-sc9863a-cqe",
        "--json",
        "-",
    ];
    args.extend(job);
    let v: Value = serde_json::from_str(&ok(&flashpath(&args))).expect("JSON");
    let configs = v["configs"].as_array().unwrap();
    // Each configuration's trim figures are fio's own for that configuration.
    let mut means = Vec::new();
    for (c, driver) in configs.iter().zip(["mmc-legacy", "mmc-cqe"]) {
        let dirs = &c["jobs"][0]["dirs"];
        assert!(
            dirs.get("read").is_none() && dirs.get("write").is_none(),
            "{dirs}"
        );
        let fio = {
            let mut a = vec!["--host", "sprd-sc9863a-cqe"];
            a.extend(job);
            fio_trim(driver, &a)
        };
        assert_eq!(fio["total_ios"], 32);
        let t = &dirs["trim"];
        assert_eq!(t["bw_bytes"].as_f64(), fio["bw_bytes"].as_f64(), "{driver}");
        assert_eq!(t["iops"].as_f64(), fio["iops"].as_f64(), "{driver}");
        assert_eq!(
            t["clat_mean_ns"].as_f64(),
            fio["clat_ns"]["mean"].as_f64(),
            "{driver}"
        );
        assert_eq!(
            t["clat_p99_ns"].as_f64(),
            fio["clat_ns"]["percentile"]["99.000000"].as_f64(),
            "{driver}"
        );
        assert!(t["clat_mean_ns"].as_f64().unwrap() > 0.0);
        means.push(t["clat_mean_ns"].as_f64().unwrap());
    }
    // The changes: seven figures of the trim direction (four of fio's, the three
    // spans), the mean's as computed.
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 7, "{changes:?}");
    assert!(changes.iter().all(|c| c["dir"] == "trim"));
    let mean = changes
        .iter()
        .find(|c| c["metric"] == "clat_mean_us")
        .unwrap();
    let want = (means[1] / means[0] - 1.0) * 100.0;
    assert!((mean["change_pct"][1].as_f64().unwrap() - want).abs() < 1e-9);
    // cqe halts its engine around every discard (cqhci_off): slower trims than legacy.
    assert!(want > 0.0, "{want}");
    // The table: one row per figure of the trim direction (then the runs' counters).
    let mut args = vec!["compare", "--vary", "driver=mmc-legacy,mmc-hsq"];
    args.extend(job);
    let table = ok(&flashpath(&args));
    let rows: Vec<&str> = table
        .lines()
        .skip(1)
        .filter(|l| !l.trim_start().starts_with("run "))
        .collect();
    assert_eq!(rows.len(), 7, "{table}");
    for (r, fig) in rows.iter().zip([
        "bw MiB/s",
        "IOPS",
        "clat mean us",
        "clat p99 ms",
        "pre us",
        "hw us",
        "post us",
    ]) {
        let f: Vec<&str> = r.split_whitespace().collect();
        assert_eq!((f[0], f[1]), ("t", "trim"), "{table}");
        assert!(r.contains(fig), "{table}");
    }
}

#[test]
fn analyze_counts_trims_and_says_so() {
    let job = [
        "--name=t",
        "--rw=randtrim",
        "--bs=64k",
        "--size=8m",
        "--io_size=2m",
        "--direct=1",
    ];
    let mut args = vec!["fio", "--output-format=json"];
    args.extend(job);
    let v: Value = serde_json::from_str(&ok(&flashpath(&args))).unwrap();
    let j = &v["jobs"][0];
    let mean = |s: &str| j["flashpath"]["spans"][s]["mean_ns"].as_f64().unwrap();
    // Every trim is one discard request: the spans count them all.
    assert_eq!(j["flashpath"]["spans"]["hw"]["count"], 32);
    let size = 65536.0;
    let mib = |ns: f64| size / (ns / 1e9) / 1048576.0;
    let mut args = vec!["analyze"];
    args.extend(job);
    let text = ok(&flashpath(&args));
    assert!(
        text.contains("trims: 32 of 32 I/Os are discards (no data moved)"),
        "{text}"
    );
    assert!(text.contains("I/O size 64 KiB"), "{text}");
    assert!(
        text.contains(&format!(
            "size/(pre+hw+post) {:.1} MiB/s",
            mib(mean("pre") + mean("hw") + mean("post"))
        )),
        "{text}"
    );
    let bw = j["trim"]["bw_bytes"].as_f64().unwrap() / 1048576.0;
    assert!(
        text.contains(&format!("{bw:.1} MiB/s (trim {bw:.1} MiB/s)")),
        "{text}"
    );
    assert!(!text.contains("no I/O measured"), "{text}");
}

/// btt's N of an "All Devices" row.
fn btt_row_n(text: &str, row: &str) -> u64 {
    btt_row(text, row).1
}
