//! fio's verify through the `flashpath fio` command line: the write phase, the verify
//! phase (its reads counted as reads, its own runtime), verify_backlog's interleaving,
//! verify_only across jobs, a failure reported as fio reports it, and the refusals;
//! overwrites (io_size beyond size, loops, randrw) against real fio 3.33 on files.

mod common;

use common::{have, scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (exit code, stdout, stderr)
fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_job(out: &str, i: usize) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(out).expect("JSON");
    json["jobs"][i].clone()
}

const WRITE_VERIFY: &[&str] = &[
    "fio",
    "--name=v",
    "--filename=/dev/mmcblk0",
    "--rw=randwrite",
    "--bs=4k",
    "--size=8m",
    "--direct=1",
    "--verify=crc32c",
    "--verify_state_save=0",
    "--output-format=json",
];

#[test]
fn a_write_job_reads_back_everything_it_wrote_after_its_write_phase() {
    let mut args = WRITE_VERIFY.to_vec();
    args.extend(["--ioengine=libaio", "--iodepth=8"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let j = json_job(&out, 0);
    assert_eq!(j["error"], 0);
    assert_eq!(j["write"]["total_ios"], 2048);
    // fio counts verify reads as ordinary reads [V] (fio 3.33, randwrite + crc32c).
    assert_eq!(j["read"]["total_ios"], 2048);
    assert_eq!(j["read"]["io_bytes"], 8 << 20);
    // Each direction has its own phase's runtime (fio's update_runtime).
    let (rt_r, rt_w) = (
        j["read"]["runtime"].as_u64().unwrap(),
        j["write"]["runtime"].as_u64().unwrap(),
    );
    let job_rt = j["job_runtime"].as_u64().unwrap();
    assert!(
        rt_r > 0 && rt_w > 0 && rt_r + rt_w <= job_rt + 1,
        "{rt_r} {rt_w} {job_rt}"
    );
    // Checking costs user time on the reaping core.
    assert!(j["usr_cpu"].as_f64().unwrap() > 0.0, "{}", j["usr_cpu"]);
}

#[test]
fn verify_backlog_verifies_during_the_write_phase() {
    let (code, out, err) = run(WRITE_VERIFY);
    assert_eq!(code, 0, "{err}");
    let plain = json_job(&out, 0);
    let mut args = WRITE_VERIFY.to_vec();
    args.push("--verify_backlog=16");
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let backlog = json_job(&out, 0);
    assert_eq!(backlog["read"]["total_ios"], 2048);
    assert_eq!(backlog["write"]["total_ios"], 2048);
    // Most reads happen among the writes: the verify phase after them (the read
    // runtime fio reports for a write job) is a small part of the plain one, and the
    // write phase is longer by the reads it now holds.
    let rt = |j: &serde_json::Value, d: &str| j[d]["runtime"].as_u64().unwrap();
    assert!(
        rt(&backlog, "read") * 10 < rt(&plain, "read"),
        "{} {}",
        rt(&backlog, "read"),
        rt(&plain, "read")
    );
    assert!(rt(&backlog, "write") > rt(&plain, "write"));
    // verify_backlog_batch: the same reads, in smaller batches.
    args.push("--verify_backlog_batch=4");
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_job(&out, 0)["read"]["total_ios"], 2048);
}

#[test]
fn verify_only_checks_what_an_earlier_job_wrote() {
    let (code, out, err) = run(&[
        "fio",
        "--filename=/dev/mmcblk0",
        "--rw=randwrite",
        "--bs=4k",
        "--size=2m",
        "--direct=1",
        "--verify=md5",
        "--verify_state_save=0",
        "--output-format=json",
        "--name=w",
        "--do_verify=0",
        "--name=v",
        "--stonewall",
        "--verify_only",
    ]);
    assert_eq!(code, 0, "{err}");
    let (w, v) = (json_job(&out, 0), json_job(&out, 1));
    assert_eq!(
        (
            w["read"]["total_ios"].clone(),
            w["write"]["total_ios"].clone()
        ),
        (0.into(), 512.into())
    );
    // fio's dry run counts the writes it did not issue, with no runtime.
    assert_eq!(v["write"]["total_ios"], 512);
    assert_eq!(v["write"]["runtime"], 0);
    assert_eq!(v["read"]["total_ios"], 512);
    assert_eq!(v["error"], 0);
}

#[test]
fn a_verify_failure_is_reported_as_fio_reports_it() {
    // verify_only over a region that no fio job wrote: the first block read has no
    // fio header (the preconditioned data is no fio write's).
    let args = [
        "fio",
        "--name=v",
        "--filename=/dev/mmcblk0",
        "--rw=write",
        "--bs=8k",
        "--size=1m",
        "--direct=1",
        "--verify=crc32c",
        "--verify_state_save=0",
        "--verify_only",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "fio exits 1 when a job failed: {out}");
    // fio's verify_header message, on standard error, naming the file and offset.
    assert!(
        err.starts_with("verify: bad magic header ")
            && err.contains(", wanted acca at file /dev/mmcblk0 offset 0, length 8192 (requested block: offset=0, length=8192)\n"),
        "{err}"
    );
    // The error where fio reaped the read, on standard output before the report.
    let line = "err=84/file:io_u.c:2152, func=io_u_sync_complete, error=Invalid or incomplete multibyte or wide character";
    let starting = out.find("Starting 1 process").unwrap();
    let at = out.find(line).expect("fio: pid= line");
    assert!(
        at > starting && out[..at].ends_with(", ") && out[..at].contains("\nfio: pid="),
        "{out}"
    );
    assert!(out.contains("v: (groupid=0, jobs=1): err=84 (file:io_u.c:2152, func=io_u_sync_complete, error=Invalid or incomplete multibyte or wide character)"), "{out}");
    // JSON: the job's error, and the line before the JSON document (asynchronous
    // engine: fio reaps in io_u_queued_complete).
    let mut a = args.to_vec();
    a.extend(["--output-format=json", "--ioengine=libaio", "--iodepth=4"]);
    let (code, out, _) = run(&a);
    assert_eq!(code, 1);
    let (first, json) = out.split_once('\n').unwrap();
    assert!(first.starts_with("fio: pid=") && first.ends_with("err=84/file:io_u.c:2190, func=io_u_queued_complete, error=Invalid or incomplete multibyte or wide character"), "{first}");
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["jobs"][0]["error"], 84);
    // The job stopped at its first failure.
    assert!(v["jobs"][0]["read"]["total_ios"].as_u64().unwrap() <= 4);
}

#[test]
fn the_same_verify_run_gives_the_same_bytes() {
    let mut args = WRITE_VERIFY.to_vec();
    args.extend(["--verify_backlog=8", "--ioengine=io_uring", "--iodepth=4"]);
    let a = run(&args);
    let b = run(&args);
    assert_eq!(a.0, 0, "{}", a.2);
    assert_eq!(a, b);
}

#[test]
fn what_a_simulated_verify_cannot_do_is_refused_naming_it() {
    let base = [
        "fio",
        "--name=v",
        "--rw=randwrite",
        "--bs=4k",
        "--size=1m",
        "--verify=crc32c",
    ];
    for (extra, needle) in [
        (&["--direct=0"][..], "direct=0"),
        (
            &["--direct=1", "--verify_state_save=1"][..],
            "verify_state_save=1",
        ),
        (
            &["--direct=1", "--experimental_verify=1"][..],
            "experimental_verify",
        ),
        (
            &["--direct=1", "--trim_percentage=10"][..],
            "trim_percentage",
        ),
        // fio's fix-ups keep 3k (it divides the 12k writes): a header every 3 KiB,
        // across the device's 4 KiB blocks.
        (
            &["--direct=1", "--bs=12k", "--verify_interval=3k"][..],
            "verify_interval",
        ),
        (&["--direct=1", "--verify_offset=512"][..], "verify_offset"),
        (&["--direct=1", "--bs=2k"][..], "4 KiB"),
        (
            &["--direct=1", "--time_based", "--runtime=1"][..],
            "time_based",
        ),
        (&["--direct=1", "--verify=pattern"][..], "verify_pattern"),
    ] {
        let mut a = base.to_vec();
        a.extend(extra);
        for parse_only in [false, true] {
            let mut a = a.clone();
            if parse_only {
                a.push("--parse-only");
            }
            let (code, _, err) = run(&a);
            assert_ne!(code, 0, "{a:?} accepted");
            assert!(
                err.lines().count() == 1 && err.contains(needle),
                "{a:?}: {err}"
            );
        }
    }
}

/// Every host driver and both FTLs return what was written: eMMC (legacy, hsq, CQE),
/// UFS with and without HPB (the verify reads go out as HPB READs, served from the
/// host's map entries), SD cards and an eMMC with an allocation-unit FTL.
#[test]
fn verify_passes_through_every_driver_and_ftl() {
    for system in [
        &["--driver", "mmc-legacy"][..],
        &["--driver", "mmc-hsq"],
        &["--host", "sprd-sc9863a-cqe", "--driver", "mmc-cqe"],
        &[
            "--host",
            "sd835-phone",
            "--device",
            "ufs21-64g",
            "--driver",
            "ufs",
        ],
        &[
            "--host",
            "sd835-phone",
            "--device",
            "ufs21-64g",
            "--driver",
            "ufs-hpb",
        ],
        &[
            "--host",
            "x86-laptop-rtsx",
            "--device",
            "microsd-lexar-633x-32g",
            "--driver",
            "sd-rtsx-multiseq",
        ],
        &["--device", "emmc441-2011-au-8g"],
    ] {
        let mut a = vec!["fio"];
        a.extend(system);
        a.extend([
            "--name=v",
            "--rw=randwrite",
            "--bs=4k",
            "--size=16m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=4",
            "--verify=crc32c",
            "--verify_state_save=0",
            "--output-format=json",
        ]);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{system:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["error"], 0, "{system:?}");
        assert_eq!(
            (
                j["read"]["total_ios"].as_u64(),
                j["write"]["total_ios"].as_u64()
            ),
            (Some(4096), Some(4096)),
            "{system:?}"
        );
        if system.contains(&"ufs-hpb") {
            let hits = v["flashpath"]["device"]["hpb_entry_hits"].as_u64().unwrap();
            assert!(hits > 3000, "verify reads served through HPB: {hits}");
        }
    }
}

/// Data through UFS WriteBooster's SLC buffer: a 64 MiB buffer, random 4 KiB reads and
/// writes over 128 MiB verified as they go (verify_backlog), with idle gaps in which the
/// device flushes the buffer into TLC: every block reads back what was last written,
/// whether it is in the buffer, flushed, or moved by a flush while being rewritten.
#[test]
fn verify_passes_through_writebooster_and_its_flush() {
    let (code, out, err) = run(&[
        "fio",
        "--device",
        "ufs31-512g",
        "--set",
        "device.write_booster.size=64MiB",
        "--name=v",
        "--rw=randrw",
        "--bs=4k",
        "--size=128m",
        "--io_size=256m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--verify=crc32c",
        "--verify_backlog=64",
        "--verify_state_save=0",
        "--thinktime=50ms",
        "--thinktime_blocks=3000",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["error"], 0);
    let d = &v["flashpath"]["device"];
    let n = |k: &str| d[k].as_u64().unwrap();
    assert!(
        n("wb_slc_reads") > 1000,
        "reads served from the buffer: {d}"
    );
    assert!(
        n("wb_flushed_slots") > 10_000,
        "flushed during the gaps: {d}"
    );
}

#[test]
fn pattern_verify_passes_and_meta_checks_headers() {
    for v in [
        &["--verify=pattern", "--verify_pattern=0xdeadbeef"][..],
        &["--verify=pattern", "--verify_pattern=%o"],
        &["--verify=meta"],
        &[
            "--verify=sha256",
            "--verify_interval=8k",
            "--verify_offset=4k",
        ],
        &["--verify=null"],
    ] {
        let mut a = WRITE_VERIFY.to_vec();
        a.extend(["--bs=16k"]);
        a.extend(v);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{v:?}: {err}");
        let j = json_job(&out, 0);
        assert_eq!(j["read"]["total_ios"], 512, "{v:?}");
        assert_eq!(j["error"], 0, "{v:?}");
    }
}

/// verify_async: the same reads are verified (on the job's verify threads), and a
/// failure found there is fio's `async_verify` error.
#[test]
fn verify_async_verifies_every_read_on_its_threads() {
    let mut args = WRITE_VERIFY.to_vec();
    args.extend(["--ioengine=libaio", "--iodepth=16", "--verify_async=2"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let j = json_job(&out, 0);
    assert_eq!(j["error"], 0);
    assert_eq!(j["read"]["total_ios"], 2048);
    args.push("--verify_async_cpus=1");
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_job(&out, 0)["read"]["total_ios"], 2048);
    // verify_only over blocks no job wrote: the first failure ends the job.
    let (code, out, err) = run(&[
        "fio",
        "--name=v",
        "--filename=/dev/mmcblk0",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--direct=1",
        "--verify=crc32c",
        "--verify_only=1",
        "--verify_state_save=0",
        "--verify_async=2",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("fio: pid=0, err=84/file:verify.c:1441, func=async_verify, error=Invalid or incomplete multibyte or wide character"),
        "{out}"
    );
}

/// What real fio and flashpath must agree on for a verify job run on a file in `dir`:
/// the exit value, the job's error, its I/Os per direction and the first verify
/// message's kind (its first four words: which check failed).
fn verify_outcome(flashpath: bool, dir: &Path, args: &[&str]) -> String {
    let _ = std::fs::remove_file(dir.join("f"));
    let mut c = if flashpath {
        let mut c = Command::new(env!("CARGO_BIN_EXE_flashpath"));
        c.arg("fio");
        c
    } else {
        Command::new("fio")
    };
    let o = c
        .args([
            "--name=t",
            "--filename=f",
            "--direct=1",
            "--bs=4k",
            "--size=8m",
            "--verify=crc32c",
            "--verify_state_save=0",
            "--output-format=json",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    // fio prints a failed job's `fio: pid=` line before the JSON.
    let json = &out[out.find('{').unwrap_or(0)..];
    let v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{flashpath} {args:?}: {e}: {err}"));
    let j = &v["jobs"][0];
    let kind = err
        .lines()
        .find(|l| l.starts_with("verify: ") || l.contains(": verify failed"))
        .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>().join(" "));
    format!(
        "exit={} error={} read_ios={} write_ios={} failure={kind:?}",
        o.status.code().unwrap_or(-1),
        j["error"],
        j["read"]["total_ios"],
        j["write"]["total_ios"],
    )
}

/// fio runs a writing verify job as turns of its thread_main loop: a run of writes
/// (until the random map is full or the sequential cursor at the region's end, or an
/// asynchronous engine's run has issued size bytes), the verify phase of that run's
/// pieces, then keep_running, which counts the verify reads in the bytes moved. So an
/// overwrite (io_size beyond size, loops) verifies each pass before the next writes it
/// again: no false "bad header numberio" (issue 29), and as many writes and reads as
/// fio moves. Real fio 3.33 on a file is the oracle (skipped without fio).
#[test]
fn overwrites_verify_pass_by_pass_as_fio_runs_them() {
    if !have("fio") {
        eprintln!("fio not installed: skipped");
        return;
    }
    let dir = scratch("verify-overwrite");
    for case in [
        // The job, smaller: two runs of 8 MiB, each verified (fio: 2048
        // writes and 2048 reads each), not 32 MiB of writes then a stale list.
        "--rw=randwrite --io_size=32m",
        "--rw=randwrite --io_size=20m",
        "--rw=write --io_size=32m",
        "--rw=randwrite --loops=2",
        "--rw=write --loops=2",
        "--rw=randwrite --io_size=32m --ioengine=libaio --iodepth=8",
        "--rw=randwrite --io_size=32m --verify_backlog=64",
        "--rw=randwrite --io_size=32m --verify_only=1 --do_verify=1",
    ] {
        let args: Vec<&str> = case.split_whitespace().collect();
        let want = verify_outcome(false, &dir, &args);
        let got = verify_outcome(true, &dir, &args);
        assert_eq!(got, want, "{case}");
    }
}

/// The same where random draws decide the counts, which fio and flashpath draw from
/// other streams, so they agree within a few per cent: randrw and rw (each run's
/// reads and writes, then the verify phase of its writes), and random writes without
/// a random map (fio writes all of io_size, or size times loops, before it verifies
/// the newest piece of each block written; on an asynchronous engine a run ends at
/// size bytes, so loops=2 verifies twice).
#[test]
fn random_overwrites_verify_as_fio_within_its_random_draws() {
    if !have("fio") {
        eprintln!("fio not installed: skipped");
        return;
    }
    let dir = scratch("verify-overwrite-mixed");
    for case in [
        "--rw=randrw --io_size=32m",
        "--rw=rw --io_size=32m",
        "--rw=randwrite --norandommap --loops=2",
        "--rw=randwrite --norandommap --loops=2 --ioengine=libaio --iodepth=4",
    ] {
        let args: Vec<&str> = case.split_whitespace().collect();
        let parse = |s: &str| -> (String, f64, f64) {
            let num = |k: &str| -> f64 {
                let at = s.find(k).unwrap() + k.len();
                s[at..].split(' ').next().unwrap().parse().unwrap()
            };
            let head = s[..s.find(" read_ios=").unwrap()].to_string();
            let tail = s[s.find(" failure=").unwrap()..].to_string();
            (head + &tail, num("read_ios="), num("write_ios="))
        };
        let (want, wr, ww) = parse(&verify_outcome(false, &dir, &args));
        let (got, gr, gw) = parse(&verify_outcome(true, &dir, &args));
        assert_eq!(got, want, "{case}");
        for (g, w) in [(gr, wr), (gw, ww)] {
            assert!(
                (g - w).abs() <= 0.05 * w,
                "{case}: {gr},{gw} vs fio's {wr},{ww}"
            );
        }
    }
}

/// Where fio does report a failure: rw=randwrite:4 (a random block, then three
/// sequential ones from it) writes some blocks twice in a run while its random map
/// logs every write in write order, so the older piece of such a block is stale when
/// it is read: "bad header numberio". With loops=2 on an asynchronous engine fio fails
/// in the first run's verify phase, after 2048 writes (the run ends at size bytes),
/// before the second run writes.
#[test]
fn a_stale_piece_within_a_run_fails_as_in_fio() {
    if !have("fio") {
        eprintln!("fio not installed: skipped");
        return;
    }
    let dir = scratch("verify-overwrite-fail");
    let args = [
        "--rw=randwrite:4",
        "--loops=2",
        "--ioengine=libaio",
        "--iodepth=1",
    ];
    // fio and flashpath draw other random blocks: the failing read, and so the reads
    // before it, differ.
    let no_reads = |s: String| {
        let a = s.find(" read_ios=").unwrap();
        let b = s.find(" write_ios=").unwrap();
        format!("{}{}", &s[..a], &s[b..])
    };
    let want = no_reads(verify_outcome(false, &dir, &args));
    assert!(
        want.contains("error=84") && want.contains("bad header numberio"),
        "{want}"
    );
    assert_eq!(no_reads(verify_outcome(true, &dir, &args)), want);
}
