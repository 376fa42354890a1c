//! Where a job's region starts and how much it moves: `size`, `offset`,
//! `offset_increment` and `io_size` given in percent, with `offset_align` (fio 3.33's
//! `get_start_offset`, `setup_files`), and sequential streams with `rw=...:N` holes, one
//! cursor per direction, whose pass ends at the region's end (`get_next_seq_offset`,
//! `keep_running`). The device's capacity is not a
//! multiple of 100 or of the block size, so each rounding shows. Real fio, reading a
//! sparse file of the same size, is the oracle where it is installed; the arithmetic
//! is written out beside each case as well.
mod common;

use common::{flashpath, ok, scratch};
use serde_json::Value;
use std::process::Command;

/// 244,141 blocks of 4 KiB: 1,000,001,536 / 100 is not whole, nor is it a number of MiB.
const CAP: u64 = 1_000_001_536;
const MIB: u64 = 1 << 20;

/// Runs flashpath's fio on the simulated device of `CAP` bytes (JSON output) with
/// `args`; returns its stdout. `--write_iolog` goes to `log` if given.
fn run_sim(args: &[&str], log: Option<&std::path::Path>) -> String {
    let cap = format!("device.geometry.capacity={CAP}B");
    let log_arg = log.map(|l| format!("--write_iolog={}", l.display()));
    let mut a = vec![
        "fio",
        "--device",
        "sd-samsung-pro-plus-128g",
        "--host",
        "x86-laptop-rtsx",
        "--set",
        &cap,
        "--filename=/dev/mmcblk0",
        "--output-format=json",
    ];
    a.extend(log_arg.as_deref());
    a.extend_from_slice(args);
    ok(&flashpath(&a))
}

/// Runs real fio with `args` on a sparse file of `CAP` bytes, its iolog in a scratch
/// directory: (stdout, iolog path); None if fio is not installed.
fn run_fio(args: &[&str], name: &str) -> Option<(String, std::path::PathBuf)> {
    Command::new("fio").arg("--version").output().ok()?;
    let dir = scratch(&format!("{name}-fio"));
    let file = dir.join("f");
    std::fs::File::create(&file).unwrap().set_len(CAP).unwrap();
    let log = dir.join("iolog");
    let mut a = vec![
        format!("--filename={}", file.display()),
        "--output-format=json".into(),
        format!("--write_iolog={}", log.display()),
    ];
    a.extend(args.iter().map(|s| s.to_string()));
    let o = Command::new("fio").args(&a).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some((String::from_utf8_lossy(&o.stdout).into_owned(), log))
}

/// (bytes read per job, offset of the first read of the first job).
fn sim(args: &[&str], name: &str) -> (Vec<u64>, u64) {
    let log = scratch(name).join("iolog");
    let out = run_sim(args, Some(&log));
    (bytes(&out), first_offset(&log))
}

/// The same from real fio; None if fio is not installed.
fn real(args: &[&str], name: &str) -> Option<(Vec<u64>, u64)> {
    let (out, log) = run_fio(args, name)?;
    Some((bytes(&out), first_offset(&log)))
}

fn bytes(json: &str) -> Vec<u64> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["io_bytes"].as_u64().unwrap())
        .collect()
}

fn first_offset(log: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(log).unwrap();
    let l = text
        .lines()
        .find(|l| l.split_whitespace().rev().nth(2) == Some("read"))
        .expect("a read in the iolog");
    l.split_whitespace().rev().nth(1).unwrap().parse().unwrap()
}

fn check(args: &[&str], name: &str, want_bytes: &[u64], want_first: u64) {
    let mut a = vec!["--name=t", "--rw=read", "--bs=1M", "--ioengine=psync"];
    a.extend_from_slice(args);
    let got = sim(&a, name);
    assert_eq!(got, (want_bytes.to_vec(), want_first), "{args:?}");
    if let Some(f) = real(&a, name) {
        assert_eq!(got, f, "{args:?}: flashpath against real fio");
    }
}

#[test]
fn a_whole_device_is_every_whole_block() {
    // size=100%: the whole device; 953 whole MiB of it are read.
    check(&["--size=100%"], "p100", &[953 * MIB], 0);
}

#[test]
fn size_in_percent_runs_from_the_offset() {
    // size=100% after an offset is the rest of the device, not more.
    check(
        &["--offset=1M", "--size=100%"],
        "off-p100",
        &[952 * MIB],
        MIB,
    );
    // size=50%: 500,000,768 B, rounded down to the 1 MiB block: 476 MiB. offset=10%:
    // 100,000,153 B, rounded up to the block: 96 MiB.
    check(
        &["--offset=10%", "--size=50%"],
        "p10-p50",
        &[476 * MIB],
        96 * MIB,
    );
}

#[test]
fn offset_align_rounds_a_percent_offset_up() {
    // 100,000,153 B rounded up to 3 MiB: 96 MiB (32 x 3 MiB).
    check(
        &["--offset=10%", "--offset_align=3M", "--size=50%"],
        "align3",
        &[476 * MIB],
        96 * MIB,
    );
    // 7% = 70,000,107 B: up to 5 MiB, 70 MiB (67 MiB would be below it).
    check(
        &["--offset=7%", "--offset_align=5M", "--size=10%"],
        "align5",
        &[95 * MIB],
        70 * MIB,
    );
    // A byte offset is not aligned (fio aligns only a percent offset or increment).
    check(
        &["--offset=1M", "--offset_align=3M", "--size=4M"],
        "bytes",
        &[4 * MIB],
        MIB,
    );
}

#[test]
fn io_size_in_percent_is_a_share_of_the_region() {
    // io_size=30% of the 476 MiB region: 149,796,044 B; fio reads while less is done,
    // so the last 1 MiB read crosses it: 143 MiB.
    check(&["--size=50%", "--io_size=30%"], "io30", &[143 * MIB], 0);
}

#[test]
fn offset_increment_in_percent_places_each_clone() {
    // Clone 1 starts at 3% + 7% = 30,000,046 + 70,000,107 B, rounded up to the block:
    // 96 MiB; clone 0 at 3% rounded up: 29 MiB. Each reads 5% (50,000,076 B, rounded
    // down: 47 MiB). The sim's blktrace gives the first sector each clone queues.
    let a = [
        "--name=t",
        "--rw=read",
        "--bs=1M",
        "--ioengine=psync",
        "--offset=3%",
        "--offset_increment=7%",
        "--numjobs=2",
        "--size=5%",
    ];
    let dir = scratch("incr");
    let d = dir.to_str().unwrap();
    let mut args = vec!["--blktrace", d];
    args.extend_from_slice(&a);
    let out = run_sim(&args, None);
    assert_eq!(bytes(&out), vec![47 * MIB, 47 * MIB]);
    if let Some((f, _)) = real(&a, "incr") {
        assert_eq!(bytes(&out), f, "flashpath against real fio");
    }
    if !common::have("blkparse") {
        eprintln!("blkparse not installed: offsets not checked");
        return;
    }
    let o = Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D", d, "-q", "-f", "%a %S\\n"])
        .output()
        .expect("blkparse");
    let starts: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("Q "))
        .map(|s| s.trim().parse::<u64>().unwrap() * 512)
        .collect();
    let first = starts.iter().min().unwrap();
    assert_eq!(*first, 29 * MIB);
    // Clone 1's first read (readahead may read clone 0's region a little past its end).
    assert!(starts.contains(&(96 * MIB)), "clone 1 starts at 96 MiB");
    assert!(!starts.iter().any(|&b| b > 80 * MIB && b < 96 * MIB));
}

#[test]
fn percentages_of_a_regular_file_are_refused() {
    for opt in ["--size=10%", "--offset=10%", "--offset_increment=5%"] {
        let o = flashpath(&[
            "fio",
            "--name=t",
            "--rw=write",
            "--bs=4k",
            "--filename=/mnt/x",
            "--filesize=4m",
            opt,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{opt}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("of a regular file is not modelled"), "{err}");
    }
}

/// (direction, offset) of each I/O of an iolog, in order.
type Log = Vec<(String, u64)>;

/// The I/Os of an iolog.
fn iolog(log: &std::path::Path) -> Log {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let d = *f.get(f.len().checked_sub(3)?)?;
            ["read", "write"]
                .contains(&d)
                .then(|| (d.to_string(), f[f.len() - 2].parse().unwrap()))
        })
        .collect()
}

/// The I/Os of a psync job on the simulated device and, where fio is installed, on a
/// sparse file of the same size: (flashpath's, fio's).
fn both_logs(args: &[&str], name: &str) -> (Log, Option<Log>) {
    let mut a = vec!["--name=t", "--ioengine=psync"];
    a.extend_from_slice(args);
    let log = scratch(name).join("iolog");
    run_sim(&a, Some(&log));
    (iolog(&log), run_fio(&a, name).map(|(_, l)| iolog(&l)))
}

fn blocks(log: &[(String, u64)]) -> Vec<u64> {
    log.iter().map(|(_, o)| o / 4096).collect()
}

#[test]
fn a_stream_with_holes_ends_at_the_regions_end() {
    // read 4 KiB, skip 8 KiB over 1 MiB: blocks 0, 3, ... 255, then the next would start
    // past the end: 86 reads, not 1 MiB of them.
    let (mine, fio) = both_logs(&["--rw=read:8k", "--bs=4k", "--size=1m"], "holes");
    assert_eq!(blocks(&mine), (0..86).map(|i| 3 * i).collect::<Vec<u64>>());
    if let Some(f) = fio {
        assert_eq!(mine, f, "flashpath against real fio");
    }
    // loops=2: two passes; io_size: passes until that much has moved; number_ios above
    // a pass: one pass.
    for (args, n) in [
        (&["--loops=2"][..], 172),
        (&["--io_size=2m"][..], 512),
        (&["--number_ios=200"][..], 86),
    ] {
        let mut a = vec!["--rw=read:8k", "--bs=4k", "--size=1m"];
        a.extend_from_slice(args);
        let (mine, fio) = both_logs(&a, "holes-more");
        assert_eq!(mine.len(), n, "{args:?}");
        if let Some(f) = fio {
            assert_eq!(mine, f, "{args:?}: flashpath against real fio");
        }
    }
}

#[test]
fn backwards_streams_wrap_as_fio_does() {
    // A backwards skip wraps to io_size + skip; with an offset, fio's first rewind sets
    // its cursor to io_size as an absolute offset, so the stream starts mid-region.
    let cases: [(&[&str], &[u64]); 3] = [
        (&["--rw=read:-8k", "--size=1m"], &[0, 254, 253, 252]),
        (
            &["--rw=read:-12k", "--size=64k"],
            &[0, 13, 11, 9, 7, 5, 3, 1, 13],
        ),
        (
            &["--rw=read:-8k", "--size=1m", "--offset=512k"],
            &[254, 253, 252],
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["--bs=4k"];
        a.extend_from_slice(args);
        let (mine, fio) = both_logs(&a, "back");
        assert_eq!(&blocks(&mine)[..want.len()], want, "{args:?}");
        if let Some(f) = fio {
            assert_eq!(mine, f, "{args:?}: flashpath against real fio");
        }
    }
}

#[test]
fn readwrite_keeps_a_cursor_per_direction() {
    // fio's f->last_pos[ddir]: the reads and the writes of a sequential mix each sweep
    // the region from its start, over the same blocks.
    let (mine, fio) = both_logs(&["--rw=rw", "--bs=4k", "--size=1m"], "mix");
    for d in ["read", "write"] {
        let offs: Vec<u64> = mine
            .iter()
            .filter(|(x, _)| x == d)
            .map(|(_, o)| o / 4096)
            .collect();
        assert!(offs.len() > 50, "{d}: {}", offs.len());
        assert_eq!(offs, (0..offs.len() as u64).collect::<Vec<u64>>(), "{d}");
        if let Some(f) = &fio {
            // fio's own mix draws another sequence of directions; each direction's
            // offsets are the same run from 0.
            let theirs: Vec<u64> = f
                .iter()
                .filter(|(x, _)| x == d)
                .map(|(_, o)| o / 4096)
                .collect();
            let n = offs.len().min(theirs.len());
            assert_eq!(offs[..n], theirs[..n], "{d}: flashpath against real fio");
        }
    }
    assert_eq!(mine.len(), 256, "the mix moves size bytes");
}

#[test]
fn a_sequential_run_past_the_region_ends_a_random_job() {
    // rw=randread:4: a random block, then three following it. With fio's LFSR the 43rd
    // random block is the last one: the run after it would leave the region, which
    // ends the pass and, without io_size, the job (169 reads, not 256).
    let (mine, fio) = both_logs(
        &[
            "--rw=randread:4",
            "--bs=4k",
            "--size=1m",
            "--random_generator=lfsr",
        ],
        "randseq",
    );
    assert_eq!(mine.len(), 169);
    assert_eq!(mine.last().unwrap().1 / 4096, 255);
    if let Some(f) = fio {
        assert_eq!(mine, f, "flashpath against real fio");
    }
}

#[test]
fn number_ios_counts_over_the_loops_and_not_in_a_time_based_job() {
    // fio's exceeds_number_ios: number_ios x loops; do_io's loop of a time_based job
    // never asks it.
    let (mine, fio) = both_logs(
        &[
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--number_ios=10",
            "--loops=3",
        ],
        "nios",
    );
    assert_eq!(mine.len(), 30);
    if let Some(f) = fio {
        assert_eq!(mine, f, "flashpath against real fio");
    }
    let (mine, _) = both_logs(
        &[
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--number_ios=10",
            "--time_based",
            "--runtime=20ms",
        ],
        "nios-tb",
    );
    assert!(mine.len() > 100, "{} reads", mine.len());
}

#[test]
fn passes_follow_fios_keep_running() {
    // Counts from fio 3.33 on a block device (a loop device over a 1 GB file): the first
    // `loops` runs of a job always go, each ending with its pass; after them another
    // goes only with io_size, while less than io_size (not times loops) has moved.
    let cases: [(&[&str], usize); 6] = [
        (&["--rw=read", "--bs=4k", "--loops=2", "--io_size=2m"], 512),
        (
            &["--rw=read", "--bs=4k", "--loops=2", "--io_size=512k"],
            256,
        ),
        (
            &["--rw=read:8k", "--bs=4k", "--loops=2", "--io_size=2m"],
            516,
        ),
        (
            &["--rw=randread", "--bs=4k", "--loops=2", "--io_size=3m"],
            768,
        ),
        (&["--rw=randread", "--bs=12k", "--io_size=2m"], 170),
        (&["--rw=read", "--bs=12k", "--io_size=2m"], 171),
    ];
    for (args, n) in cases {
        let mut a = vec!["--size=1m"];
        a.extend_from_slice(args);
        let (mine, fio) = both_logs(&a, "passes");
        assert_eq!(mine.len(), n, "{args:?}");
        if let Some(f) = fio {
            assert_eq!(mine.len(), f.len(), "{args:?}: flashpath against real fio");
        }
    }
}
