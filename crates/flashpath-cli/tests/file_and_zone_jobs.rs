//! Where a job's I/O lands: fio's files laid out on the device, and zonemode=strided.
//! The offsets are read back from the run's own blktrace (blkparse), and compared with
//! the order real fio 3.33 issues on a file (its write_iolog), where installed.
mod common;

use common::{flashpath, have, ok, scratch};
use std::process::Command;

/// The sector of each bio queued (blkparse's Q events), in order, in 64 KiB units.
fn queued_blocks(args: &[&str], name: &str) -> Vec<u64> {
    let dir = scratch(name);
    let d = dir.to_str().unwrap();
    let mut a = vec!["fio", "--blktrace", d, "--direct=1", "--bs=64k"];
    a.extend_from_slice(args);
    ok(&flashpath(&a));
    let out = Command::new("blkparse")
        .args(["-i", "mmcblk0", "-D", d, "-q", "-f", "%a %S\\n"])
        .output()
        .expect("blkparse");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.strip_prefix("Q "))
        .map(|s| s.trim().parse::<u64>().unwrap() / 128)
        .collect()
}

/// The offsets real fio issues, in 64 KiB units, from its write_iolog on a file.
fn fio_blocks(args: &[&str], name: &str) -> Vec<u64> {
    let dir = scratch(name);
    let log = dir.join("iolog");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.push("--bs=64k".into());
    a.push(format!("--filename={}", dir.join("f").display()));
    a.push(format!("--write_iolog={}", log.display()));
    let o = Command::new("fio").args(&a).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4 && f[f.len() - 3] == "read")
                .then(|| f[f.len() - 2].parse::<u64>().unwrap() / 65536)
        })
        .collect()
}

#[test]
fn strided_zones_visit_the_offsets_fio_visits() {
    if !have("blkparse") {
        eprintln!("blkparse not installed: skipped");
        return;
    }
    let job = [
        "--name=z",
        "--size=8m",
        "--rw=read",
        "--zonemode=strided",
        "--zonerange=2m",
        "--zonesize=1m",
        "--zoneskip=1m",
    ];
    let got = queued_blocks(&job, "zones");
    // Zones at 0, 3 and 6 MiB (range + skip apart), then round again from the start:
    // the job still moves its 8 MiB.
    let zone = |z: u64| (z * 48..z * 48 + 16).collect::<Vec<u64>>();
    let want: Vec<u64> = [0, 1, 2, 0, 1, 2, 0, 1]
        .iter()
        .flat_map(|&z| zone(z))
        .collect();
    assert_eq!(got, want);
    if have("fio") {
        assert_eq!(fio_blocks(&job, "zones-fio"), want);
    }
}

#[test]
fn files_are_extents_of_the_device_visited_round_robin() {
    if !have("blkparse") {
        eprintln!("blkparse not installed: skipped");
        return;
    }
    // Two files of 1 MiB in /data: a.0.0 at 0, a.0.1 right after it; roundrobin
    // alternates between them, each with its own sequential cursor.
    let got = queued_blocks(
        &[
            "--name=a",
            "--directory=/data",
            "--nrfiles=2",
            "--size=2m",
            "--rw=read",
        ],
        "files",
    );
    let want: Vec<u64> = (0..16).flat_map(|i| [i, 16 + i]).collect();
    assert_eq!(got, want);
    // file_service_type=sequential: one file, then the other.
    let got = queued_blocks(
        &[
            "--name=a",
            "--directory=/data",
            "--nrfiles=2",
            "--size=2m",
            "--rw=read",
            "--file_service_type=sequential",
        ],
        "files-seq",
    );
    assert_eq!(got, (0..32).collect::<Vec<u64>>());
}

/// The offsets (in 16 KiB units) `tool` (flashpath or real fio) issues for a job on a
/// file, from its write_iolog (v3), or None if the tool is not installed.
fn iolog_blocks(tool: &str, args: &[&str], name: &str) -> Option<Vec<u64>> {
    if tool == "fio" && !have("fio") {
        return None;
    }
    let dir = scratch(&format!("{name}-{tool}"));
    let log = dir.join("iolog");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.push(format!("--filename={}", dir.join("f").display()));
    a.push(format!("--write_iolog={}", log.display()));
    if tool == "fio" {
        let o = Command::new("fio").args(&a).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    } else {
        a.insert(0, "fio".into());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        ok(&flashpath(&a));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    Some(
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 5 && (f[2] == "read" || f[2] == "write"))
                    .then(|| f[3].parse::<u64>().unwrap() / 16384)
            })
            .collect(),
    )
}

#[test]
fn loops_with_io_size_below_size_go_on_where_the_last_loop_stopped() {
    // fio 3.33 keeps a file's position and random map from one loop to the next: each
    // loop moves io_size, the offsets going on round the region.
    let order = [15, 11, 9, 14, 3, 8, 0, 4, 6, 7, 10, 1, 12, 2, 5, 13];
    let cases: [(&[&str], Vec<u64>); 4] = [
        (
            &["--rw=write", "--bs=64k", "--io_size=256k", "--loops=2"],
            (0..8).map(|b| b * 4).collect(),
        ),
        (
            // cross-stripe-verify.fio's pattern: 16 KiB every 128 KiB, round the region.
            &["--rw=write:112k", "--bs=16k", "--io_size=256k", "--loops=2"],
            (0..32).map(|i| (i % 8) * 8).collect(),
        ),
        (
            // An offset: the region starts there.
            &[
                "--rw=write",
                "--bs=64k",
                "--offset=128k",
                "--io_size=256k",
                "--loops=2",
            ],
            (2..10).map(|b| b * 4).collect(),
        ),
        (
            // The random map goes on too: the LFSR's block order (fio's own) over three
            // loops of half the region, the third starting the next pass.
            &[
                "--rw=randread",
                "--random_generator=lfsr",
                "--bs=64k",
                "--io_size=512k",
                "--loops=3",
            ],
            order.iter().chain(&order[..8]).map(|b| b * 4).collect(),
        ),
    ];
    for (i, (args, want)) in cases.iter().enumerate() {
        let mut a = vec!["--name=t", "--size=1m"];
        a.extend_from_slice(args);
        for tool in ["flashpath", "fio"] {
            if let Some(got) = iolog_blocks(tool, &a, &format!("loops-{i}")) {
                assert_eq!(&got, want, "{tool} {args:?}");
            }
        }
    }
}

#[test]
fn a_region_not_a_multiple_of_the_block_size_ends_as_fio_ends_it() {
    // 1000 KiB of 64 KiB I/Os. fio checks a fixed-size I/O against the file's end, not
    // the region's (fill_io_u; io_u_fits only for size ranges), and stops once size
    // bytes are issued: on a device larger than the region a sequential job's 16th I/O
    // runs past the region (real fio on a loop device: 16, 15, 16); the random map
    // holds 15 whole blocks. On a file of 1000 KiB (fio lays it out) all stop at 15.
    for (rw, on_device) in [
        ("--rw=write", 16),
        ("--rw=randwrite", 15),
        ("--rw=read", 16),
    ] {
        let job = ["--name=t", "--size=1000k", "--bs=64k", rw];
        let dir = scratch(&format!("whole-{}", &rw[5..]));
        let log = dir.join("iolog");
        let l = format!("--write_iolog={}", log.display());
        let mut a = vec!["fio", "--direct=1", &l];
        a.extend_from_slice(&job);
        ok(&flashpath(&a));
        let text = std::fs::read_to_string(&log).unwrap();
        let mut offsets: Vec<u64> = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 5).then(|| f[3].parse::<u64>().unwrap())
            })
            .collect();
        offsets.sort();
        offsets.dedup();
        let want: Vec<u64> = (0..on_device).map(|b| b * 65536).collect();
        assert_eq!(offsets, want, "{rw}");
        if let Some(got) = iolog_blocks("fio", &job, &format!("whole-{}", &rw[5..])) {
            assert_eq!(got.len(), 15, "fio {rw} on a file of the region's size");
        }
    }
}
