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
