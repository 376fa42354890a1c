//! `flashpath iozone` through the binary: the seed's published iozone line, the report's
//! arithmetic, bad arguments, determinism, and a one-process run against the same
//! simulated run through the fio front end.

mod common;

use common::{flashpath, ok};
use std::process::Output;

const SYSTEM: [&str; 6] = [
    "--device",
    "ufs21-64g",
    "--host",
    "sd835-phone",
    "--driver",
    "ufs",
];

/// The UFS HPB series' iozone line (docs/published-results.md §4), on the UFS system.
fn seed_args(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["iozone"]
        .iter()
        .chain(SYSTEM.iter())
        .map(|s| s.to_string())
        .collect();
    for a in "-r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F".split(' ') {
        v.push(a.into());
    }
    v.extend((1..=16).map(|i| format!("f{i}")));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(args: &[String]) -> Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    flashpath(&a)
}

/// A test's six figures: children, parent, min, max, avg (kB/s), min xfer (kB).
fn figures(out: &str, words: &str) -> [f64; 6] {
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("\tChildren see throughput for ") && l.contains(words))
        .unwrap_or_else(|| panic!("no '{words}' block in:\n{out}"));
    let value = |l: &str| -> f64 {
        let v = l
            .rsplit('=')
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        v.parse().unwrap_or_else(|_| panic!("no number in {l:?}"))
    };
    let mut f = [0.0; 6];
    for (i, x) in f.iter_mut().enumerate() {
        *x = value(lines[at + i]);
    }
    f
}

/// The -C lines of a block: (xfer kB, throughput kB/s) per child.
fn children(out: &str, words: &str) -> Vec<(f64, f64)> {
    let start = out
        .find(words)
        .unwrap_or_else(|| panic!("no '{words}' block"));
    out[start..]
        .lines()
        .skip_while(|l| !l.starts_with("\tChild["))
        .take_while(|l| l.starts_with("\tChild["))
        .map(|l| {
            let nums: Vec<f64> = l
                .split(['=', ','])
                .filter_map(|p| p.split_whitespace().next()?.parse().ok())
                .collect();
            (nums[0], nums[1])
        })
        .collect()
}

#[test]
fn the_seed_line_reports_16_consistent_children_and_is_deterministic() {
    let a = run(&seed_args(&[]));
    let out = ok(&a);
    assert!(
        a.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert!(out.starts_with(
        "\tIozone: Performance Test of File I/O\n\t        Version $Revision: 3.508 $\n"
    ));
    assert!(out.contains("\tRun began: Thu Jan  1 00:00:00 1970\n\n"));
    assert!(out.contains(
        "\tCommand line used: iozone -r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16\n"
    ));
    assert!(out.contains("\tThroughput test with 16 processes\n\tEach process writes a 65536 kByte file in 4 kByte records\n"));
    assert!(out.ends_with("\n\niozone test complete.\n"));
    // -+n and -i2: the random tests only.
    assert_eq!(out.matches("\tChildren see throughput for ").count(), 2);
    for words in ["16 random readers \t=", "16 random writers \t="] {
        let [children, parent, min, max, avg, min_xfer] = figures(&out, words);
        assert!(
            children > 0.0 && parent > 0.0,
            "{words}: {children} {parent}"
        );
        assert!(
            (avg - children / 16.0).abs() <= 0.01,
            "{words}: avg {avg} of {children}"
        );
        assert!(min <= avg && avg <= max, "{words}: {min} {avg} {max}");
        assert!(
            min_xfer > 0.0 && min_xfer <= 65536.0,
            "{words}: min xfer {min_xfer}"
        );
        // The children's kB over the parent's longer time.
        assert!(
            parent <= children * 1.001,
            "{words}: parent {parent} children {children}"
        );
    }

    // The same command again: the same bytes.
    let b = run(&seed_args(&[]));
    assert_eq!(out, ok(&b), "same command, same output");

    // With -C the same run shows each child: they add up to the figures.
    let c = ok(&run(&seed_args(&["-C"])));
    let strip = |s: &str| -> String {
        s.lines()
            .filter(|l| !l.starts_with("\tChild[") && !l.starts_with("\tCommand line used:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&out), strip(&c), "-C adds lines, not a different run");
    for words in ["16 random readers \t=", "16 random writers \t="] {
        let [total, _, min, max, _, min_xfer] = figures(&c, words);
        let kids = children(&c, words);
        assert_eq!(kids.len(), 16, "{words}");
        let sum: f64 = kids.iter().map(|k| k.1).sum();
        assert!(
            (sum - total).abs() <= 16.0 * 0.005 + 0.005,
            "{words}: {sum} vs {total}"
        );
        let lo = kids.iter().map(|k| k.1).fold(f64::MAX, f64::min);
        let hi = kids.iter().map(|k| k.1).fold(0.0, f64::max);
        assert_eq!((lo, hi), (min, max), "{words}");
        let xfer_lo = kids.iter().map(|k| k.0).fold(f64::MAX, f64::min);
        assert_eq!(xfer_lo, min_xfer, "{words}");
        // Stonewalling: the first child to finish did its whole file.
        assert!(kids.iter().any(|k| k.0 == 65536.0), "{words}: {kids:?}");
    }
    // The random readers stop when the first finishes: the others fall short.
    let kids = children(&c, "16 random readers \t=");
    assert!(kids.iter().any(|k| k.0 < 65536.0), "{kids:?}");
}

fn small(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["iozone"]
        .iter()
        .chain(SYSTEM.iter())
        .map(|s| s.to_string())
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn without_stonewalling_every_child_does_its_whole_file() {
    let with = ok(&run(&small(&[
        "-t", "4", "-i", "2", "-s", "4m", "-I", "-C",
    ])));
    let without = ok(&run(&small(&[
        "-t", "4", "-i", "2", "-s", "4m", "-I", "-C", "-x",
    ])));
    assert!(without.contains("\tStonewall disabled\n"));
    for words in ["4 random readers \t=", "4 random writers \t="] {
        assert_eq!(figures(&without, words)[5], 4096.0, "{words}");
        assert!(children(&without, words).iter().all(|k| k.0 == 4096.0));
    }
    let kids = children(&with, "4 random readers \t=");
    assert_eq!(kids.iter().filter(|k| k.0 == 4096.0).count(), 1, "{kids:?}");
}

#[test]
fn one_process_matches_the_same_run_through_fio() {
    // A sequential O_DIRECT read of 4 MiB by one process: the simulation fio's psync job
    // makes. The child's time is the sum of its reads' latencies (each read starts as
    // the last returns); with -c the child does not fsync at exit, so the parent's time
    // is the child's.
    let io = ok(&run(&small(&[
        "-t", "1", "-i", "1", "-+n", "-I", "-c", "-s", "4m", "-r", "4k",
    ])));
    let [children, parent, ..] = figures(&io, "1 readers");
    let fio = ok(&flashpath(&[
        "fio",
        SYSTEM[0],
        SYSTEM[1],
        SYSTEM[2],
        SYSTEM[3],
        SYSTEM[4],
        SYSTEM[5],
        "--name=r",
        "--rw=read",
        "--bs=4k",
        "--size=4m",
        "--direct=1",
        "--output-format=json",
    ]));
    let json: serde_json::Value = serde_json::from_str(&fio).expect("fio JSON");
    let read = &json["jobs"][0]["read"];
    let bytes = read["io_bytes"].as_f64().unwrap();
    let elapsed_s =
        read["lat_ns"]["mean"].as_f64().unwrap() * read["total_ios"].as_f64().unwrap() / 1e9;
    // iozone: kB over (elapsed - the timer resolution), times in whole microseconds.
    let expected = bytes / 1024.0 / (elapsed_s - 1e-6);
    assert!(
        (children - expected).abs() / expected < 1e-4,
        "iozone {children}, fio run {expected}"
    );
    assert!(
        (parent - expected).abs() / expected < 1e-4,
        "parent {parent}, fio run {expected}"
    );
}

#[test]
fn direct_io_on_an_ext4_host_runs_without_e() {
    let out = ok(&flashpath(&[
        "iozone",
        "--host",
        "jetson-tx1",
        "--device",
        "emmc51-hs400-8g",
        "-t",
        "2",
        "-i",
        "0",
        "-i",
        "2",
        "-s",
        "1m",
        "-I",
    ]));
    assert_eq!(out.matches("\tChildren see throughput for ").count(), 4);
}

#[test]
fn buffered_and_ext4_hosts_run_every_test() {
    let out = ok(&flashpath(&[
        "iozone",
        "--host",
        "jetson-tx1",
        "--device",
        "emmc51-hs400-8g",
        "-t",
        "2",
        "-i",
        "0",
        "-i",
        "1",
        "-i",
        "2",
        "-s",
        "2m",
        "-r",
        "16k",
        "-e",
    ]));
    for words in [
        " 2 initial writers \t=",
        " 2 rewriters \t=",
        " 2 readers \t\t=",
        "2 re-readers \t=",
        "2 random readers \t=",
        "2 random writers \t=",
    ] {
        let f = figures(&out, words);
        assert!(f[0] > 0.0 && f[5] <= 2048.0, "{words}: {f:?}");
    }
}

#[test]
fn trace_outputs_record_the_run() {
    let dir = common::scratch("iozone-trace");
    let trace = dir.join("t.json");
    let blk = dir.join("blk");
    let out = run(&small(&[
        "-t",
        "2",
        "-i",
        "2",
        "-s",
        "1m",
        "-I",
        "--trace",
        trace.to_str().unwrap(),
        "--blktrace",
        blk.to_str().unwrap(),
    ]));
    ok(&out);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("traceEvents"), "a Chrome trace");
    assert!(
        std::fs::read_dir(&blk).unwrap().count() > 0,
        "blktrace files"
    );
}

/// Each must exit 1 with one line on standard error and nothing on standard output.
#[test]
fn bad_arguments_give_one_line_and_exit_1() {
    let dir = common::scratch("iozone-bad");
    // A host preset without [memory]: buffered iozone must say so.
    let host = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../presets/hosts/sd835-phone.toml"),
    )
    .unwrap();
    let cut = host.find("\n[memory]").expect("sd835-phone has [memory]");
    let rest = &host[cut + 1..];
    let next = rest[1..].find("\n[").map(|i| i + 2).unwrap_or(rest.len());
    let no_memory = dir.join("no-memory.toml");
    // The section's fields go from the [estimates] table too.
    let kept: String = format!("{}{}", &host[..cut + 1], &rest[next..])
        .lines()
        .filter(|l| !l.starts_with("\"memory."))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&no_memory, kept).unwrap();
    let nm = no_memory.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-t", "1", "-i", "0", "-X", "x"],
            "iozone: option -X is not modelled by flashpath",
        ),
        (
            vec!["-t", "1", "-i", "0", "-j", "3"],
            "iozone: option -j is not modelled by flashpath",
        ),
        (
            vec!["-t", "1", "-i", "0", "-1"],
            "iozone: -1 is not an iozone option",
        ),
        (
            vec!["-t", "1", "-i", "0", "-+m", "f"],
            "iozone: option -+m is not modelled by flashpath",
        ),
        (
            vec!["-t", "1", "-i", "0", "-r"],
            "iozone: option -r requires an argument",
        ),
        (
            vec!["-t", "1", "-i", "0", "-s", "64q"],
            "iozone: -s 64q: not a size",
        ),
        (
            vec!["-t", "1", "-i", "0", "-r", "big"],
            "iozone: -r big: not a size",
        ),
        (
            vec!["-t", "4", "-i", "0", "-F", "a", "b"],
            "not enough filenames for 4 streams",
        ),
        (
            vec!["-t", "8", "-l", "4", "-i", "0"],
            "iozone: -t with -l/-u",
        ),
        (
            vec!["-t", "1", "-i", "7"],
            "iozone: -i 7 (fread/re-fread) is not modelled",
        ),
        (
            vec!["-t", "1", "-i", "0", "stray"],
            "iozone: unexpected argument 'stray'",
        ),
        (vec!["-i", "0"], "throughput mode"),
        (
            vec!["-t", "16", "-i", "0", "-s", "8g"],
            "16 files of 8388608 kB do not fit",
        ),
        (
            vec!["-t", "1", "-i", "0", "--host", nm],
            "iozone: without -I the files go through the page cache, which needs a [memory] section in host preset 'sd835-phone'",
        ),
        (
            vec!["-t", "1", "-i", "0", "-I", "-e", "--host", "jetson-tx1", "--device", "emmc51-hs400-8g", "--driver", "mmc-legacy"],
            "iozone: -e with -I on host 'jetson-tx1'",
        ),
    ];
    for (args, want) in cases {
        let o = run(&small(&args));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            o.stdout.is_empty(),
            "{args:?}: stdout {}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err} (wanted {want})");
    }
}

#[test]
fn every_driver_family_runs_every_test_with_stonewalling() {
    // The engine asserts that its runs of one test start at the same simulated time
    // (the simulator's determinism); each system exercises it with its own layers.
    let systems: [&[&str]; 5] = [
        &["--driver", "mmc-legacy"],
        &["--driver", "mmc-hsq"],
        &["--host", "sprd-sc9863a-cqe", "--driver", "mmc-cqe"],
        &[
            "--host",
            "x86-laptop-rtsx",
            "--device",
            "sd-samsung-pro-plus-128g",
            "--driver",
            "sd-rtsx-multiseq",
        ],
        &SYSTEM,
    ];
    for sys in systems {
        for io in [&["-I", "-e"][..], &[], &["-c"]] {
            let mut args = vec!["iozone"];
            args.extend_from_slice(sys);
            args.extend_from_slice(&["-t", "3", "-i", "0", "-i", "1", "-i", "2", "-s", "1m"]);
            args.extend_from_slice(io);
            let out = ok(&flashpath(&args));
            assert_eq!(
                out.matches("\tChildren see throughput for ").count(),
                6,
                "{args:?}"
            );
        }
    }
}

#[test]
fn without_c_the_parent_waits_for_the_fsync_at_exit() {
    // Buffered writes: the children time their copies into the page cache; without -c
    // each then fsyncs its file before it exits, and the parent waits for that.
    let line = |extra: &[&str]| {
        let mut a = vec!["iozone", "-t", "2", "-i", "0", "-+n", "-s", "4m"];
        a.extend_from_slice(extra);
        ok(&flashpath(&a))
    };
    let [children, parent, ..] = figures(&line(&[]), " 2 initial writers");
    assert!(
        parent < children / 2.0,
        "parent {parent}, children {children}"
    );
    let [children, parent, ..] = figures(&line(&["-c"]), " 2 initial writers");
    assert!(
        parent > children * 0.9,
        "-c: parent {parent}, children {children}"
    );
    // With -e the fsync is in the children's time too.
    let [children, parent, ..] = figures(&line(&["-e"]), " 2 initial writers");
    assert!(
        parent > children * 0.9,
        "-e: parent {parent}, children {children}"
    );
}
