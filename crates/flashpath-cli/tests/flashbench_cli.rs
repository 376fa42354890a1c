//! `flashpath flashbench` through the binary, on the shipped presets: the shape of each
//! test's lines, exit statuses, flashbench's own refusals (against the Debian
//! `flashbench` binary where it is installed), flashpath's one-line errors, determinism,
//! and no panic on bad input. (The output's exact bytes are checked against flashbench's
//! own code in `src/flashbench/oracle.rs`.)

mod common;

use common::{flashpath, ok, scratch};
use std::process::{Command, Output};

fn fb(args: &[&str]) -> Output {
    let mut v = vec!["flashbench"];
    v.extend_from_slice(args);
    flashpath(&v)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// flashbench's -a line: align N, then pre/on/post/diff, each a format_ns text (at most
/// 7 bytes), tab-separated.
fn check_align_line(l: &str, prefix: &str) -> u64 {
    let f: Vec<&str> = l.split('\t').collect();
    assert_eq!(f.len(), 5, "{l:?}");
    let n: u64 = f[0]
        .strip_prefix(prefix)
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{l:?}"));
    for (field, name) in f[1..].iter().zip(["pre ", "on ", "post ", "diff "]) {
        let v = field.strip_prefix(name).unwrap_or_else(|| panic!("{l:?}"));
        assert!(!v.is_empty() && v.len() <= 7, "{l:?}");
        assert!(
            ["ns", "µs", "ms", "s"].iter().any(|u| v.ends_with(u)) || v.len() == 7,
            "{l:?}"
        );
    }
    n
}

#[test]
fn align_on_the_emmc_preset() {
    let o = fb(&[
        "--device",
        "emmc51-hs400-32g",
        "-a",
        "-c",
        "1",
        "-b",
        "1024",
        "/dev/mmcblk0",
    ]);
    let out = ok(&o);
    let aligns: Vec<u64> = out.lines().map(|l| check_align_line(l, "align ")).collect();
    // 31268536320 / 7 > 2^32: from 2^33 down to 2 KiB, halving.
    assert_eq!(aligns.len(), 23);
    assert_eq!(aligns[0], 1 << 33);
    assert!(aligns.windows(2).all(|w| w[0] == 2 * w[1]));
    assert_eq!(*aligns.last().unwrap(), 2048);
    // Only the line saying which host and driver the device's preset picked.
    assert_eq!(
        text(&o.stderr),
        "flashpath: device 'emmc51-hs400-32g' runs on host 'sprd-sc9863a' with driver 'mmc-legacy', the pairing its preset names (--host and --driver choose others)\n"
    );
}

#[test]
fn write_align_is_a_with_writes() {
    let o = fb(&["-A", "-c", "1", "-b", "1048576", "dev"]);
    let out = ok(&o);
    let aligns: Vec<u64> = out
        .lines()
        .map(|l| check_align_line(l, "write align "))
        .collect();
    // 2^33 down to 2 MiB.
    assert_eq!(aligns.len(), 13);
    assert_eq!((aligns[0], aligns[12]), (1 << 33, 2 << 20));
    // O_DIRECT|O_SYNC writes are modelled (REQ_FUA where the queue has it, then the
    // fsync's flush): no note.
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}

/// `-A` with 4 KiB writes on the 2011 eMMC (issue 30): its small-write log maps 8 KiB
/// pages, so a write that straddles a page boundary ("on") reads two old pages where
/// "pre" and "post" read one: the lines show where the writes fall (diff of a read at
/// least, where the two pages share a die), not one time for all.
#[test]
fn write_align_on_the_2011_emmc_shows_the_page_boundary() {
    let o = fb(&[
        "--device",
        "emmc441-2011-au-8g",
        "-A",
        "-c",
        "2",
        "-b",
        "4096",
        "/dev/mmcblk0",
    ]);
    let out = ok(&o);
    let us = |v: &str| -> f64 {
        if let Some(x) = v.strip_suffix("ms") {
            x.parse::<f64>().unwrap() * 1000.0
        } else if let Some(x) = v.strip_suffix("µs") {
            x.parse().unwrap()
        } else {
            0.0
        }
    };
    let diffs: Vec<f64> = out
        .lines()
        .map(|l| {
            check_align_line(l, "write align ");
            us(l.rsplit("diff ").next().unwrap())
        })
        .collect();
    // The tR of the 2011 MLC is 50 us: some boundaries cost a serial old-page read.
    assert!(diffs.iter().any(|&d| d > 50.0), "{out}");
    assert!(diffs.iter().all(|&d| d >= 0.0), "{out}");
}

#[test]
fn same_arguments_same_bytes() {
    let args = [
        "-a", "-O", "-c", "1", "-b", "262144", "-e", "1048576", "dev",
    ];
    let a = fb(&args);
    let b = fb(&args);
    assert_eq!(ok(&a), ok(&b));
    assert!(!a.stdout.is_empty());
}

/// -O: per length, the length and the rate, each a 7-byte field and a space.
#[test]
fn open_au_lines() {
    let o = fb(&[
        "-O",
        "--open-au-nr=3",
        "-e",
        "4194304",
        "-b",
        "262144",
        "dev",
    ]);
    let out = ok(&o);
    let lens: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(lens, ["4MiB", "2MiB", "1MiB", "512KiB", "256KiB"]);
    for l in out.lines() {
        assert_eq!(l.len(), 16, "{l:?}");
        assert!(l.ends_with(' '));
        let rate = l[8..15].trim_end();
        assert!(rate.ends_with("/s") || rate.len() == 7, "{l:?}");
    }
}

/// -f: a column per AU, each 7 bytes and two spaces.
#[test]
fn find_fat_lines() {
    let out = ok(&fb(&[
        "--findfat",
        "--fat-nr=2",
        "-e",
        "1048576",
        "-b",
        "524288",
        "dev",
    ]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l.len(), 8 + 2 * 9, "{l:?}");
    }
    assert!(lines[0].starts_with("1MiB    "));
    assert!(lines[1].starts_with("512KiB  "));
    // 62's --help spells it --find-fat; flashpath takes both.
    let again = ok(&fb(&[
        "--find-fat",
        "--fat-nr=2",
        "-e",
        "1048576",
        "-b",
        "524288",
        "dev",
    ]));
    assert_eq!(again, out);
}

#[test]
fn scatter_to_stdout_and_to_a_file() {
    let out = ok(&fb(&[
        "-s",
        "-c",
        "1",
        "--scatter-order=8",
        "-b",
        "4096",
        "dev",
    ]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 256);
    for (j, l) in lines.iter().enumerate() {
        let (mib, ms) = l.split_once('\t').unwrap();
        assert_eq!(mib, format!("{:.6}", j as f64 * 4096.0 / 1048576.0));
        // %f: six decimals of a positive time in ms.
        assert_eq!(ms.split_once('.').unwrap().1.len(), 6, "{l:?}");
        assert!(ms.parse::<f64>().unwrap() > 0.0, "{l:?}");
    }
    let d = scratch("flashbench-out");
    let f = d.join("scatter.dat");
    let o = fb(&[
        "-s",
        "-c",
        "1",
        "--scatter-order=8",
        "-b",
        "4096",
        "-o",
        f.to_str().unwrap(),
        "dev",
    ]);
    assert_eq!(ok(&o), "");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), out);
}

#[test]
fn interval_lines() {
    let out = ok(&fb(&["-i", "--interval-order=6", "-c", "2", "dev"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6 + 1 + 6);
    for (i, l) in lines[..6].iter().enumerate() {
        assert!(l.starts_with(&format!("{} bytes: min ", 512 << i)), "{l}");
        assert!(l.ends_with(" MB/s"), "{l}");
    }
    assert!(lines[6].ends_with(" access time"), "{}", lines[6]);
    for (i, l) in lines[7..].iter().enumerate() {
        assert!(l.starts_with(&format!("bytes {}, time ", 512 << i)), "{l}");
    }
}

#[test]
fn ufs_needs_whole_4k_blocks() {
    let sys = [
        "--device",
        "ufs21-64g",
        "--host",
        "sd835-phone",
        "--driver",
        "ufs",
    ];
    let mut a: Vec<&str> = sys.to_vec();
    a.extend(["-a", "-c", "1", "-b", "4096", "dev"]);
    let o = fb(&a);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("4096-byte logical blocks"), "{e}");
    let mut a: Vec<&str> = sys.to_vec();
    a.extend(["-a", "-c", "1", "-b", "1048576", "dev"]);
    ok(&fb(&a));
}

/// flashbench's own refusals: its messages and status 234, and the help text after an
/// option error.
#[test]
fn flashbench_refusals() {
    let o = fb(&["-a", "-x", "dev"]);
    assert_eq!(o.status.code(), Some(234));
    assert_eq!(text(&o.stderr), "flashbench: invalid option -- 'x'\n");
    assert!(text(&o.stdout).starts_with("flashbench [OPTION]... [DEVICE]\n"));
    for (args, msg) in [
        (&["-a"][..], "flashbench: invalid arguments\n"),
        (
            &["-c", "3", "dev"],
            "flashbench: need at least one action\n",
        ),
        (
            &["-s", "--scatter-order=17", "dev"],
            "flashbench: scatter_order must be at most 16\n",
        ),
    ] {
        let o = fb(args);
        assert_eq!(o.status.code(), Some(234), "{args:?}");
        assert_eq!(text(&o.stderr), msg);
        assert!(o.stdout.is_empty());
    }
    // --out names a file flashbench cannot create: perror and -ENOENT.
    let o = fb(&["-a", "-o", "/nonexistent-dir/x", "dev"]);
    assert_eq!(o.status.code(), Some(254));
    assert_eq!(
        text(&o.stderr),
        "/nonexistent-dir/x: No such file or directory\n"
    );
    // A scatter order below 8: one read, then flashbench's internal error.
    let o = fb(&["-s", "--scatter-order=3", "dev"]);
    assert_eq!(o.status.code(), Some(234));
    assert_eq!(text(&o.stderr), "flashbench: internal error\n");
}

/// The same command lines through the Debian package's flashbench (62), when installed.
#[test]
fn refusals_match_the_real_flashbench() {
    if Command::new("flashbench").arg("--help").output().is_err() {
        eprintln!("note: flashbench (Debian package) is not installed; skipping the comparison");
        return;
    }
    for args in [
        &["-a", "-x", "dev"][..],
        &["--foo=bar", "-a", "dev"],
        &["--o", "dev"],
        &["--scatter-", "5", "dev"],
        &["--align=1", "dev"],
        &["-a", "dev", "--count"],
        &["-a", "dev", "-b"],
        &["-a"],
        &["-a", "d1", "d2"],
        &["-c", "3", "dev"],
        &["-s", "--scatter-order=17", "dev"],
        &["--help"],
        &["-A", "dev"],
    ] {
        let real = Command::new("flashbench").args(args).output().unwrap();
        let ours = fb(args);
        if args == ["-A", "dev"] {
            // flashpath's extension: 62 refuses it.
            assert_eq!(real.status.code(), Some(234));
            assert!(ours.status.success(), "{}", text(&ours.stderr));
            continue;
        }
        assert_eq!(text(&ours.stdout), text(&real.stdout), "{args:?}: stdout");
        assert_eq!(text(&ours.stderr), text(&real.stderr), "{args:?}: stderr");
        assert_eq!(ours.status.code(), real.status.code(), "{args:?}");
    }
}

/// flashpath's own refusals: one line, status 1.
#[test]
fn unmodelled_input_is_one_line() {
    for args in [
        &["-a", "-b", "0", "dev"][..],
        &["-O", "-e", "0", "dev"],
        &["-a", "-b", "1000", "dev"],
        &["-a", "-b", "512", "dev"],
        &["-i", "-c", "0", "dev"],
        &["-i", "--interval-order=40", "dev"],
        &["-s", "--scatter-span=0", "dev"],
        &["-f", "--fat-nr=-1", "dev"],
        &["--device", "no-such-device", "-a", "dev"],
        &["--set", "device.nope=1", "-a", "dev"],
        &["-a", "-c", "1000000", "-b", "1024", "dev"],
        &["-O", "-e", "1073741824", "-b", "512", "dev"],
    ] {
        let o = fb(args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("flashpath: error: "), "{args:?}: {e}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

/// Bad and odd input never panics: every run ends with a status flashbench or flashpath
/// gives, never Rust's 101.
#[test]
fn no_panic_on_odd_input() {
    let odd: &[&[&str]] = &[
        &["-a", "-c", "-5", "-b", "1048576", "dev"],
        &["-a", "-b", "-4096", "dev"],
        &["-a", "-b", "99999999999999999999", "dev"],
        &["-O", "--offset=-2", "dev"],
        &["-O", "--offset=0", "dev"],
        &["-O", "-e", "3145728", "-b", "1048576", "dev"],
        &["-O", "-b", "8388608", "dev"],
        &["-O", "--open-au-nr=0", "dev"],
        &[
            "-O",
            "--open-au-nr=70000",
            "-e",
            "1048576",
            "-b",
            "1048576",
            "dev",
        ],
        &[
            "-O",
            "-e",
            "134217728",
            "-b",
            "67108864",
            "--open-au-nr=1",
            "dev",
        ],
        &["-f", "--fat-nr=0", "dev"],
        &["-s", "--scatter-span=-1", "dev"],
        &["-s", "--scatter-span=100000", "dev"],
        &["-s", "-c", "0", "--scatter-order=2", "dev"],
        &["-s", "--scatter-order=-3", "dev"],
        &["-i", "dev"],
        &["-i", "--interval-order=-1", "dev"],
        &["-v", "-v", "-v", "-O", "-e", "65536", "-b", "65536", "dev"],
        &["-e", "4M", "-O", "dev"],
        &["--", "-a"],
        &["-"],
        &["-p", "-", "--offset"],
        &["--offset", "0xZZ", "-O", "dev"],
        &["-é", "dev"],
    ];
    for args in odd {
        let o = fb(args);
        let code = o.status.code();
        assert!(
            code.is_some() && code != Some(101),
            "{args:?}: {code:?}\n{}",
            text(&o.stderr)
        );
        assert!(!text(&o.stderr).contains("panicked"), "{args:?}");
    }
}

#[test]
fn vm_errors_print_as_flashbench_prints() {
    // --offset=0 is OFF_FIXED without a value, which vm.c's checks refuse.
    let out = ok(&fb(&[
        "-O",
        "--offset=0",
        "-e",
        "1048576",
        "-b",
        "524288",
        "dev",
    ]));
    assert_eq!(
        out,
        "1MiB    need .param= argument\nfrom SEQUENCE\nfrom LEN_POW2\n"
    );
    // A block size above the erase size: no chunks.
    let out = ok(&fb(&["-O", "-b", "8388608", "dev"]));
    assert!(out.starts_with("8MiB    need .num= argument\n"), "{out}");
}

#[test]
fn trace_outputs() {
    let d = scratch("flashbench-trace");
    let t = d.join("t.json");
    let o = fb(&[
        "--trace",
        t.to_str().unwrap(),
        "--blktrace",
        d.to_str().unwrap(),
        "-O",
        "-e",
        "1048576",
        "-b",
        "524288",
        "dev",
    ]);
    ok(&o);
    assert!(std::fs::metadata(&t).unwrap().len() > 0);
    let blk = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_string_lossy().starts_with("mmcblk0.blktrace.")
        })
        .count();
    assert!(blk > 0);
}

#[test]
fn listed_in_the_usage() {
    let out = ok(&flashpath(&["help"]));
    assert!(out.contains("flashpath flashbench"));
}

/// An argument that is not UTF-8 (a device name can be any bytes) is a one-line error,
/// not std::env::args()'s panic.
#[test]
fn non_utf8_argument_is_one_line() {
    use std::os::unix::ffi::OsStrExt;
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .arg("flashbench")
        .arg("-a")
        .arg(std::ffi::OsStr::from_bytes(b"/dev/\xff"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("is not UTF-8"), "{e}");
}
