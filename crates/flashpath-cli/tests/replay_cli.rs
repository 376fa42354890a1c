//! Trace replay (`read_iolog=`) and `write_iolog=` against the real tools: an iolog real
//! fio wrote replays in flashpath with the same I/Os in the same order; a blktrace
//! flashpath wrote (merged by the real `blkparse -d`) replays its Q events, in flashpath
//! and in real fio; a log flashpath wrote replays in real fio. Bad traces are one-line
//! errors naming file and line (or record). fio 3.33 and blkparse must be installed
//! (Debian packages fio and blktrace; CI installs them).
mod common;

use common::{flashpath, ok, scratch};
use std::path::Path;
use std::process::Command;

/// One I/O: direction ('R', 'W', 'D' for a discard), offset and length in bytes.
type Io = (char, u64, u64);

fn need(tool: &str) {
    assert!(
        Command::new(tool).arg("--version").output().is_ok(),
        "{tool} is not installed (Debian packages fio and blktrace): the replay oracles need it"
    );
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().expect("run tool");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The read/write/trim lines of an iolog (v2 or v3), in order.
fn iolog_ios(text: &str) -> Vec<Io> {
    let v3 = text.starts_with("fio version 3 iolog");
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let f = if v3 { &f[1..] } else { &f[..] };
            if f.len() != 4 {
                return None;
            }
            let d = match f[1] {
                "read" => 'R',
                "write" => 'W',
                "trim" => 'D',
                _ => return None,
            };
            Some((d, f[2].parse().unwrap(), f[3].parse().unwrap()))
        })
        .collect()
}

/// blkparse's Q events (text output), in order.
fn q_events(text: &str) -> Vec<Io> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 10 || f[5] != "Q" || f[8] != "+" {
                return None;
            }
            let d = if f[6].contains('D') {
                'D'
            } else if f[6].contains('W') {
                'W'
            } else if f[6].contains('R') {
                'R'
            } else {
                return None;
            };
            let n: u64 = f[9].parse().ok()?;
            (n > 0).then(|| (d, f[7].parse::<u64>().unwrap() * 512, n * 512))
        })
        .collect()
}

/// fio's latency log with log_offset=1 (time, value, ddir, bs, offset, prio): each
/// I/O in completion order (issue order for a synchronous engine).
fn lat_log_ios(text: &str) -> Vec<Io> {
    text.lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            let d = match f[2] {
                0 => 'R',
                1 => 'W',
                _ => 'D',
            };
            (d, f[4], f[3])
        })
        .collect()
}

/// Runs flashpath with `--blktrace`, merges the per-CPU files with the real blkparse,
/// and returns the Q events and the merged binary's path.
fn flashpath_q_events(dir: &Path, tag: &str, args: &[&str]) -> (Vec<Io>, std::path::PathBuf) {
    let bt = dir.join(format!("{tag}-bt"));
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.push("--blktrace".into());
    a.push(bt.display().to_string());
    let av: Vec<&str> = a.iter().map(String::as_str).collect();
    ok(&flashpath(&av));
    let merged = dir.join(format!("{tag}.bin"));
    let text = run(Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D"])
        .arg(&bt)
        .arg("-d")
        .arg(&merged)
        .arg("-q"));
    (q_events(&text), merged)
}

/// Real fio replays `trace` onto a scratch file with psync and no stalls; its I/Os
/// from the latency log.
fn fio_replay(dir: &Path, tag: &str, trace: &Path, extra: &[&str]) -> Vec<Io> {
    let target = dir.join(format!("{tag}-target"));
    std::fs::File::create(&target)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let prefix = dir.join(format!("{tag}-lat"));
    run(Command::new("fio")
        .arg(format!("--name={tag}"))
        .arg(format!("--read_iolog={}", trace.display()))
        .arg(format!("--replay_redirect={}", target.display()))
        .args(["--replay_no_stall=1", "--ioengine=psync", "--log_offset=1"])
        .arg(format!("--write_lat_log={}", prefix.display()))
        .args(extra));
    let log = dir.join(format!("{tag}-lat_lat.1.log"));
    lat_log_ios(&std::fs::read_to_string(log).unwrap())
}

#[test]
fn an_iolog_real_fio_wrote_replays_with_its_ios_in_order() {
    need("fio");
    need("blkparse");
    let d = scratch("replay-fio-iolog");
    let f = d.join("f");
    let log = d.join("t.log");
    run(Command::new("fio")
        .args(["--name=t", "--size=2m", "--rw=randrw", "--bs=4k"])
        .arg(format!("--filename={}", f.display()))
        .arg(format!("--write_iolog={}", log.display())));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
    let want = iolog_ios(&text);
    assert_eq!(want.len(), 512);
    let (got, _) = flashpath_q_events(
        &d,
        "replay",
        &[
            "fio",
            "--name=r",
            &format!("--read_iolog={}", log.display()),
            "--direct=1",
            "--replay_no_stall=1",
            "--output-format=terse",
        ],
    );
    assert_eq!(got, want, "flashpath's Q events against fio's iolog");
}

#[test]
fn a_blktrace_flashpath_wrote_replays_its_q_events_in_flashpath_and_in_real_fio() {
    need("fio");
    need("blkparse");
    let d = scratch("replay-blktrace");
    let (orig, merged) = flashpath_q_events(
        &d,
        "orig",
        &[
            "fio",
            "--name=g",
            "--rw=randrw",
            "--bs=4k",
            "--size=4m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=300",
            "--output-format=terse",
        ],
    );
    assert_eq!(orig.len(), 300);
    // flashpath replays the Q events through libaio at fio's probed depth.
    let (again, _) = flashpath_q_events(
        &d,
        "again",
        &[
            "fio",
            "--name=r",
            &format!("--read_iolog={}", merged.display()),
            "--direct=1",
            "--ioengine=libaio",
            "--output-format=terse",
        ],
    );
    assert_eq!(again, orig, "flashpath's replay of its own blktrace");
    // Real fio replays the same file with the same I/Os in the same order.
    let fio = fio_replay(&d, "fio", &merged, &[]);
    assert_eq!(fio, orig, "real fio's replay of flashpath's blktrace");
}

#[test]
fn flashpath_write_iolog_replays_in_real_fio() {
    need("fio");
    let d = scratch("replay-write-iolog");
    let log = d.join("fp.log");
    ok(&flashpath(&[
        "fio",
        "--name=w",
        "--filename=/dev/mmcblk0",
        "--rw=randrw",
        "--bs=4k",
        "--size=4m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=8",
        "--number_ios=500",
        &format!("--write_iolog={}", log.display()),
        "--output-format=terse",
    ]));
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "fio version 3 iolog");
    assert_eq!(lines[1], "0 /dev/mmcblk0 add");
    assert_eq!(lines[2], "0 /dev/mmcblk0 open");
    assert!(lines.last().unwrap().ends_with(" /dev/mmcblk0 close"));
    let mine = iolog_ios(&text);
    assert_eq!(mine.len(), 500);
    // Timestamps never go back.
    let t: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
    let fio = fio_replay(&d, "fio", &log, &[]);
    assert_eq!(fio, mine, "real fio's replay of flashpath's write_iolog");
    // The same log replays in flashpath with the same I/Os.
    let (again, _) = flashpath_q_events(
        &d,
        "again",
        &[
            "fio",
            "--name=r",
            &format!("--read_iolog={}", log.display()),
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--output-format=terse",
        ],
    );
    assert_eq!(again, mine);
}

fn job_runtime_ms(json: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["jobs"][0]["job_runtime"].as_u64().unwrap()
}

#[test]
fn v3_timestamps_pace_the_replay_as_replay_time_scale_and_no_stall_say() {
    let d = scratch("replay-timing");
    let log = d.join("v3.log");
    // [V] real fio 3.33 replays these stamps in 400 ms, 200 ms with
    // replay_time_scale=200, about 0 with replay_no_stall=1. (The first I/O's stamp
    // follows a time of 0, which fio's delay_since_ttime treats as no reference.)
    std::fs::write(
        &log,
        "fio version 3 iolog\n0 /f add\n0 /f open\n100 /f write 0 4096\n\
         200000 /f write 4096 4096\n400000 /f write 8192 4096\n400100 /f close\n",
    )
    .unwrap();
    let rt = |extra: &[&str]| {
        let mut a = vec![
            "fio".to_string(),
            "--name=r".into(),
            format!("--read_iolog={}", log.display()),
            "--direct=1".into(),
            "--output-format=json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        let av: Vec<&str> = a.iter().map(String::as_str).collect();
        job_runtime_ms(&ok(&flashpath(&av)))
    };
    let full = rt(&[]);
    assert!((399..=402).contains(&full), "{full} ms");
    let half = rt(&["--replay_time_scale=200"]);
    assert!((199..=202).contains(&half), "{half} ms");
    let none = rt(&["--replay_no_stall=1"]);
    assert!(none <= 2, "{none} ms");
    // v2: a wait is milliseconds since the job started (fio 3.33's read_iolog_get),
    // not relative to the previous one; replay_no_stall drops it.
    std::fs::write(
        &log,
        "fio version 2 iolog\n/f add\n/f write 0 4096\n/f wait 300 0\n/f write 4096 4096\n\
         /f wait 100 0\n/f write 8192 4096\n",
    )
    .unwrap();
    let waited = rt(&[]);
    assert!((300..=302).contains(&waited), "{waited} ms");
    let none = rt(&["--replay_no_stall=1"]);
    assert!(none <= 2, "{none} ms");
}

#[test]
fn redirect_scale_and_align_place_the_ios_as_fio_does() {
    need("blkparse");
    let d = scratch("replay-place");
    let log = d.join("two.log");
    std::fs::write(
        &log,
        "fio version 2 iolog\n/a add\n/b add\n/a open\n/b open\n\
         /a write 16384 4096\n/b read 12288 8192\n/a close\n/b close\n",
    )
    .unwrap();
    let base = |extra: &[&str]| {
        let mut a = vec![
            "fio".to_string(),
            "--name=r".into(),
            format!("--read_iolog={}", log.display()),
            "--direct=1".into(),
            "--output-format=terse".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // Two files without replay_redirect: refused, naming the line.
    let a = base(&[]);
    let av: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = flashpath(&av);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        e.contains("two.log:3: the trace names a second file ('/b') after '/a'"),
        "{e}"
    );
    // replay_scale=2 halves offsets; replay_align=8192 rounds them down.
    let a = base(&[
        "--replay_redirect=/dev/mmcblk0",
        "--replay_scale=2",
        "--replay_align=8192",
    ]);
    let av: Vec<&str> = a.iter().map(String::as_str).collect();
    let (got, _) = flashpath_q_events(&d, "placed", &av);
    assert_eq!(got, vec![('W', 8192, 4096), ('R', 0, 8192)]);
}

#[test]
fn bad_traces_are_one_line_errors_naming_file_and_line_or_record() {
    need("blkparse");
    let d = scratch("replay-bad");
    let (_, merged) = flashpath_q_events(
        &d,
        "src",
        &[
            "fio",
            "--name=g",
            "--rw=randwrite",
            "--bs=4k",
            "--size=1m",
            "--direct=1",
            "--number_ios=20",
            "--output-format=terse",
        ],
    );
    let bin = std::fs::read(&merged).unwrap();
    let cut = d.join("cut.bin");
    std::fs::write(&cut, &bin[..bin.len() - 20]).unwrap();
    let foreign = d.join("foreign.bin");
    let mut f = bin[..48 + u16::from_le_bytes([bin[46], bin[47]]) as usize].to_vec();
    f.extend_from_slice(&[0x42; 64]);
    std::fs::write(&foreign, &f).unwrap();
    let text = |name: &str, body: &str| {
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let cases: Vec<(String, Vec<&str>, String)> = vec![
        (
            text("short.log", "fio version 2 iolog\n/f add\n/f read 0\n"),
            vec![],
            "short.log:3: bad iolog2".into(),
        ),
        (
            text("act.log", "fio version 3 iolog\n0 /f add\n5 /f frobnicate 0 4096\n"),
            vec![],
            "act.log:3: fio: bad iolog file action: frobnicate".into(),
        ),
        (
            text("v1.log", "0 4096 read\n"),
            vec![],
            "v1.log:1: fio: iolog version 1 is no longer supported".into(),
        ),
        (
            text("far.log", "fio version 2 iolog\n/f add\n/f read 1099511627776 4096\n"),
            vec![],
            "far.log:3: read of 4096 bytes at offset 1099511627776 ends beyond the simulated device's".into(),
        ),
        (
            text("odd.log", "fio version 2 iolog\n/f add\n/f write 100 4096\n"),
            vec![],
            "odd.log:3: write of 4096 bytes at offset 100: direct=1 needs".into(),
        ),
        (
            text("empty.log", "fio version 2 iolog\n/f add\n/f open\n/f close\n"),
            vec![],
            "the iolog has no reads, writes or waits".into(),
        ),
        (
            cut.display().to_string(),
            vec![],
            format!("{}: record ", cut.display()),
        ),
        (
            foreign.display().to_string(),
            vec![],
            format!("{}: record 1 (byte {}): fio: bad magic", foreign.display(), f.len() - 64),
        ),
        (
            d.join("missing.log").display().to_string(),
            vec![],
            "missing.log: No such file".into(),
        ),
        (
            merged.display().to_string(),
            vec!["--time_based=1", "--runtime=1s"],
            "time_based with read_iolog is not modelled".into(),
        ),
    ];
    for (trace, extra, want) in cases {
        let mut a = vec![
            "fio".to_string(),
            "--name=r".into(),
            format!("--read_iolog={trace}"),
            "--direct=1".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        let av: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = flashpath(&av);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{trace}: succeeded");
        assert!(e.contains(&want), "{trace}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{trace}: {e}");
    }
}

/// (read KiB, write KiB, sync count) of a run's first job, from fio's JSON.
fn kib(json: &str) -> (u64, u64, u64) {
    let j = &json[json.find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(j).unwrap();
    let job = &v["jobs"][0];
    (
        job["read"]["io_kbytes"].as_u64().unwrap(),
        job["write"]["io_kbytes"].as_u64().unwrap(),
        job["sync"]["lat_ns"]["N"].as_u64().unwrap(),
    )
}

#[test]
fn merge_blktrace_file_does_what_fio_3_33_does() {
    need("fio");
    need("blkparse");
    let d = scratch("replay-merge");
    let mk = |tag: &str, rw: &str| {
        flashpath_q_events(
            &d,
            tag,
            &[
                "fio",
                "--name=g",
                &format!("--rw={rw}"),
                "--bs=4k",
                "--size=1m",
                "--direct=1",
                "--number_ios=40",
                "--output-format=terse",
            ],
        )
        .1
    };
    let (a, b) = (mk("a", "randread"), mk("b", "randwrite"));
    let target = d.join("target");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let job = |merge: &Path, extra: &[&str]| {
        let mut v = vec![
            "--name=m".to_string(),
            format!("--read_iolog={}:{}", a.display(), b.display()),
            format!("--merge_blktrace_file={}", merge.display()),
            format!("--replay_redirect={}", target.display()),
            "--replay_no_stall=1".into(),
            "--output-format=json".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    for extra in [&[][..], &["--merge_blktrace_scalars=100:50:25"][..]] {
        let (fm, pm) = (d.join("fio-merged.bin"), d.join("fp-merged.bin"));
        let fio = Command::new("fio").args(job(&fm, extra)).output().unwrap();
        let mut args = vec!["fio".to_string()];
        args.extend(job(&pm, extra));
        let av: Vec<&str> = args.iter().map(String::as_str).collect();
        let fp = flashpath(&av);
        let (fe, pe) = (
            String::from_utf8_lossy(&fio.stderr).into_owned(),
            String::from_utf8_lossy(&fp.stderr).into_owned(),
        );
        // fio 3.33 reports the failed merge and replays the first trace alone.
        let want = if extra.is_empty() {
            "fio: iolog short read"
        } else {
            "fio: merge_blktrace_scalars(3) != nr_logs(2)"
        };
        assert!(
            fe.contains(want) && pe.contains(want),
            "{extra:?}\nfio: {fe}\nflashpath: {pe}"
        );
        let (f, p) = (String::from_utf8_lossy(&fio.stdout).into_owned(), ok(&fp));
        assert_eq!(kib(&p), kib(&f), "{extra:?}");
        assert_eq!(kib(&p), (160, 0, 0));
        assert_eq!(fm.exists(), pm.exists(), "{extra:?}");
        if pm.exists() {
            assert_eq!(std::fs::metadata(&pm).unwrap().len(), 0);
        }
        let _ = (std::fs::remove_file(&fm), std::fs::remove_file(&pm));
    }
}

#[test]
fn write_iolog_is_refused_when_two_jobs_share_it_and_dropped_with_read_iolog() {
    let d = scratch("replay-wlog");
    let log = d.join("x.log");
    let o = flashpath(&[
        "fio",
        "--rw=read",
        "--size=1m",
        "--direct=1",
        &format!("--write_iolog={}", log.display()),
        "--name=a",
        "--name=b",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("jobs 'a' and 'b' both write it"), "{e}");
    // fio: "read iolog overrides write_iolog": no log is written.
    let trace = d.join("t.log");
    std::fs::write(&trace, "fio version 2 iolog\n/f add\n/f read 0 4096\n").unwrap();
    let o = flashpath(&[
        "fio",
        "--name=r",
        "--direct=1",
        &format!("--read_iolog={}", trace.display()),
        &format!("--write_iolog={}", log.display()),
        "--output-format=terse",
    ]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("fio: read iolog overrides write_iolog"));
    assert!(!log.exists());
}

/// (action, offset, length) of every line after the header, file actions included.
fn iolog_actions(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
        .collect()
}

fn sync_ios(json: &str) -> u64 {
    let j = &json[json.find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(j).unwrap();
    // The fsyncs' latency count (fio's sync total_ios reads 0 for fdatasyncs).
    v["jobs"][0]["sync"]["lat_ns"]["N"].as_u64().unwrap()
}

#[test]
fn write_iolog_lines_match_real_fio_syncs_included() {
    need("fio");
    let d = scratch("replay-wlog-fio");
    let target = d.join("f").display().to_string();
    for extra in [
        &["--fsync=4", "--end_fsync=1"][..],
        &["--fdatasync=3"][..],
        &["--end_fsync=1"][..],
    ] {
        let tag = extra.join("").replace(['-', '='], "");
        let fio_log = d.join(format!("fio{tag}.log"));
        let fp_log = d.join(format!("fp{tag}.log"));
        let job = |log: &Path| {
            let mut a = vec![
                "--name=s".to_string(),
                format!("--filename={target}"),
                "--rw=write".into(),
                "--bs=4k".into(),
                "--size=64k".into(),
                format!("--write_iolog={}", log.display()),
                "--output-format=json".into(),
            ];
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let fio_json = run(Command::new("fio").args(job(&fio_log)));
        let mut a = vec!["fio".to_string()];
        a.extend(job(&fp_log));
        let av: Vec<&str> = a.iter().map(String::as_str).collect();
        let fp_json = ok(&flashpath(&av));
        let (f, p) = (
            std::fs::read_to_string(&fio_log).unwrap(),
            std::fs::read_to_string(&fp_log).unwrap(),
        );
        assert_eq!(iolog_actions(&p), iolog_actions(&f), "{extra:?}\n{p}");
        // (fio's own count of the direct run's syncs differs: with fsync=4 it leaves
        // out the last; fdatasync's total_ios reads 0. The logs agree.)
        let _ = (fp_json, fio_json);
        // Replayed, the log's syncs are fsyncs again, in flashpath and in real fio.
        let mut a = vec![
            "fio".to_string(),
            "--name=r".into(),
            format!("--read_iolog={}", fp_log.display()),
            "--replay_no_stall=1".into(),
            "--output-format=json".into(),
        ];
        a.extend([format!("--replay_redirect={target}")]);
        let av: Vec<&str> = a.iter().map(String::as_str).collect();
        let replayed = ok(&flashpath(&av));
        let fio_replayed = run(Command::new("fio").args(&a[1..]));
        assert_eq!(sync_ios(&replayed), sync_ios(&fio_replayed), "{extra:?}");
        assert!(sync_ios(&replayed) > 0);
    }
}

#[test]
fn a_blktrace_with_flushes_and_discards_replays_them() {
    need("fio");
    need("blkparse");
    let d = scratch("replay-flush-discard");
    let (orig, merged) = flashpath_q_events(
        &d,
        "orig",
        &[
            "fio",
            "--direct=1",
            "--name=w",
            "--rw=randwrite",
            "--bs=4k",
            "--size=1m",
            "--fsync=4",
            "--number_ios=12",
            "--name=t",
            "--stonewall",
            "--rw=randtrim",
            "--bs=64k",
            "--size=1m",
            "--number_ios=4",
            "--output-format=terse",
        ],
    );
    assert_eq!(orig.iter().filter(|q| q.0 == 'D').count(), 4);
    // flashpath: the same Q events (writes, discards), and the two flushes as fsyncs
    // (after the 4th and 8th write; fio issues none after a job's last write).
    let args = [
        "fio".to_string(),
        "--name=r".into(),
        format!("--read_iolog={}", merged.display()),
        "--direct=1".into(),
        "--output-format=json".into(),
    ];
    let av: Vec<&str> = args.iter().map(String::as_str).collect();
    let (again, _) = flashpath_q_events(&d, "again", &av);
    assert_eq!(again, orig);
    let json = ok(&flashpath(&av));
    assert_eq!(sync_ios(&json), 2);
    // Real fio on a regular file cannot discard (BLKDISCARD: ENOTTY): with
    // replay_skip=trim it replays the writes and the flushes as flashpath does.
    let writes: Vec<Io> = orig.iter().copied().filter(|q| q.0 == 'W').collect();
    let fio = fio_replay(&d, "fio", &merged, &["--replay_skip=trim"]);
    assert_eq!(fio, writes);
    let av2: Vec<String> = args
        .iter()
        .cloned()
        .chain(["--replay_skip=trim".to_string()])
        .collect();
    let av2: Vec<&str> = av2.iter().map(String::as_str).collect();
    let (skipped, _) = flashpath_q_events(&d, "skipped", &av2);
    assert_eq!(skipped, writes);
}

/// Peak resident memory (KiB) of a flashpath run, by /usr/bin/time.
fn peak_rss_kib(args: &[String]) -> u64 {
    let o = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("peak %M")
        .arg(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .output()
        .expect("/usr/bin/time (Debian package time) runs flashpath");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    e.lines()
        .find_map(|l| l.strip_prefix("peak "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {e}"))
}

#[test]
fn a_trace_streams_its_memory_does_not_grow_with_its_length() {
    let d = scratch("replay-memory");
    let write_log = |name: &str, n: u64| {
        use std::io::Write;
        let p = d.join(name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        writeln!(f, "fio version 2 iolog\n/f add\n/f open").unwrap();
        let mut x: u64 = 12345;
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let act = if i % 3 == 0 { "write" } else { "read" };
            writeln!(f, "/f {act} {} 4096", (x >> 40) % 16384 * 4096).unwrap();
        }
        writeln!(f, "/f close").unwrap();
        p
    };
    let small = write_log("small.log", 50_000);
    let big = write_log("big.log", 1_000_000);
    let rss = |log: &Path| {
        peak_rss_kib(&[
            "fio".into(),
            "--name=r".into(),
            format!("--read_iolog={}", log.display()),
            "--direct=1".into(),
            "--output-format=terse".into(),
            "--set".into(),
            "device.ideal=true".into(),
        ])
    };
    let (a, b) = (rss(&small), rss(&big));
    // The big log is about 22 MB: held in memory, even as 24-byte operations, it
    // would add more than 20 MB.
    assert!(b < a + 4096, "peak {a} KiB for 50 k lines, {b} KiB for 1 M");
}
