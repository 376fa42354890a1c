//! `flashpath calibrate`: the standard suite simulated on a device whose estimates
//! are known (the truth) is fitted back from the shipped preset; the fields the report
//! pins land near the truth, the fields it calls free leave the figures unchanged, and
//! the same inputs give the same preset. `--measure` runs the real fio on a file (and
//! on a loop device where the machine allows one) and its JSON feeds calibrate.

mod common;
use common::{flashpath, ok, scratch};
use flashpath_core::config::units;
use std::path::Path;

const DEVICE: &str = "emmc51-hs400-32g";
/// The truth: three estimates of the shipped preset moved inside their ranges.
const TRUTH: [(&str, &str, &str); 3] = [
    (
        "t_read = \"54us\"",
        "t_read = \"80us\"",
        "device.nand.t_read",
    ),
    (
        "t_prog = \"1750us\"",
        "t_prog = \"1400us\"",
        "device.nand.t_prog",
    ),
    (
        "fw_per_command = \"37us\"",
        "fw_per_command = \"55us\"",
        "device.controller.fw_per_command",
    ),
];

/// The suite's jobs (small amounts) simulated on the truth: (dir of JSON files).
fn measurements(dir: &Path) -> Vec<String> {
    let jobs = dir.join("jobs");
    ok(&flashpath(&[
        "calibrate",
        "--suite",
        "standard",
        "--write-jobs",
        jobs.to_str().unwrap(),
        "--large",
        "1GiB",
        "--scale",
        "0.25",
    ]));
    let truth_path = truth_preset(dir, &TRUTH);
    let mut names: Vec<_> = std::fs::read_dir(&jobs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert_eq!(names.len(), 17);
    let out: Vec<String> = names
        .iter()
        .map(|j| {
            dir.join(format!("{}.json", j.file_stem().unwrap().to_str().unwrap()))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    std::thread::scope(|s| {
        for (j, o) in names.iter().zip(&out) {
            let t = truth_path.as_str();
            s.spawn(move || {
                ok(&flashpath(&[
                    "fio",
                    "--device",
                    t,
                    "--precondition",
                    "sequential",
                    "--output-format=json",
                    &format!("--output={o}"),
                    j.to_str().unwrap(),
                ]))
            });
        }
    });
    out
}

/// A row of the report's fitted-fields table: (fitted, 1-sigma low, high, verdict).
fn fitted_row<'a>(report: &'a str, field: &str) -> Option<(&'a str, &'a str, &'a str, &'a str)> {
    let l = report
        .lines()
        .find(|l| l.split_whitespace().next() == Some(field))?;
    let w: Vec<&str> = l.split_whitespace().collect();
    // field preset fitted LOW .. HIGH LO' .. HI' verdict...
    Some((w[2], w[3], w[5], l.split("  ").last().unwrap().trim()))
}

#[test]
fn fits_the_truth_back_and_its_free_fields_are_free() {
    let dir = scratch("calibrate-truth");
    let files = measurements(&dir);
    let out = dir.join("fitted.toml");
    let json = dir.join("fit.json");
    let mut args = vec![
        "calibrate",
        "--device",
        DEVICE,
        "--precondition",
        "sequential",
        "--out",
        out.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let report = ok(&flashpath(&args));
    // --json: the same fit as data.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for (_, _, key) in TRUTH {
        let (fitted, lo, hi, verdict) = fitted_row(&report, key).unwrap();
        let f = v["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == key)
            .unwrap_or_else(|| panic!("{key} not in the JSON: {v}"));
        assert_eq!(f["fitted"], fitted);
        assert_eq!(f["sigma"], format!("{lo} .. {hi}"));
        assert_eq!(f["the_data"], verdict);
    }
    let figures = v["figures"].as_array().unwrap();
    assert!(!figures.is_empty());
    for f in figures {
        let label = f["measurement"].as_str().unwrap();
        assert!(
            report.lines().any(|l| l.trim_start().starts_with(label)),
            "{label}"
        );
    }
    assert!(v["chi2_fitted"].as_f64().unwrap() < v["chi2_preset"].as_f64().unwrap());
    // Every truth field is fitted and pinned, and the truth is within 3 sigma.
    for (_, to, key) in TRUTH {
        let (fitted, lo, hi, verdict) =
            fitted_row(&report, key).unwrap_or_else(|| panic!("{key} not fitted:\n{report}"));
        assert_eq!(verdict, "pin it down", "{key}:\n{report}");
        let ns = |s: &str| units::parse_ns(s).unwrap() as f64;
        let truth = ns(to.split('"').nth(1).unwrap());
        let (f, l, h) = (ns(fitted), ns(lo), ns(hi));
        assert!(
            truth >= f - 3.0 * (f - l) && truth <= f + 3.0 * (h - f),
            "{key}: fitted {fitted} ({lo} .. {hi}), truth {truth} ns:\n{report}"
        );
    }
    // The fitted preset loads, says what was calibrated, and runs.
    let est = ok(&flashpath(&[
        "presets",
        "--estimates",
        out.to_str().unwrap(),
    ]));
    assert!(est.contains("(calibrated)"), "{est}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("name = \"fitted\""), "{text}");
    assert!(text.contains("# calibrated: "), "{text}");

    // The fields the report calls free leave every figure within its spread: all of
    // them at the low ends of their ranges at once, then at the high ends, against
    // the fitted preset.
    let free: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(": free: across "))
        .map(|l| l.trim().split(':').next().unwrap())
        .collect();
    assert!(free.len() >= 5, "{report}");
    let listing = ok(&flashpath(&["presets", "--estimates", DEVICE]));
    let ends = |k: usize| -> Vec<String> {
        free.iter()
            .map(|f| {
                let field = f.strip_prefix("device.").unwrap();
                let l = listing
                    .lines()
                    .find(|l| l.split_whitespace().nth(1) == Some(field))
                    .unwrap();
                let w: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(w[4], "..", "{l}");
                format!("--set={f}={}", w[3 + 2 * k])
            })
            .collect()
    };
    let figures = |sets: &[String]| -> Vec<f64> {
        files
            .iter()
            .map(|f| {
                let job = dir.join("jobs").join(format!(
                    "{}.fio",
                    Path::new(f).file_stem().unwrap().to_str().unwrap()
                ));
                let mut a: Vec<String> = vec![
                    "fio".into(),
                    "--device".into(),
                    out.to_string_lossy().into_owned(),
                    "--precondition".into(),
                    "sequential".into(),
                    "--output-format=json".into(),
                ];
                a.extend(sets.iter().cloned());
                a.push(job.to_string_lossy().into_owned());
                let o = ok(&flashpath(
                    &a.iter().map(String::as_str).collect::<Vec<_>>(),
                ));
                let v: serde_json::Value = serde_json::from_str(&o).unwrap();
                let j = &v["jobs"][0];
                j["read"]["bw_bytes"].as_f64().unwrap() + j["write"]["bw_bytes"].as_f64().unwrap()
            })
            .collect()
    };
    let at_fit = figures(&[]);
    for k in 0..2 {
        let moved = figures(&ends(k));
        for (i, (a, b)) in at_fit.iter().zip(&moved).enumerate() {
            assert!(
                (b / a - 1.0).abs() < 0.05,
                "{}: the free fields at their {} ends move its bandwidth {a} -> {b}",
                files[i],
                ["low", "high"][k]
            );
        }
    }
}

#[test]
fn same_inputs_same_preset_and_a_prediction_range() {
    let dir = scratch("calibrate-determinism");
    let files = measurements(&dir);
    let run = |name: &str| -> (String, String) {
        let out = dir.join(name);
        let mut args = vec![
            "calibrate",
            "--device",
            DEVICE,
            "--precondition",
            "sequential",
            "--fit",
            "nand.t_read,device.nand.t_prog",
            "--name",
            "board",
            "--predict",
            "",
            "--out",
            out.to_str().unwrap(),
        ];
        let predict = dir.join("jobs/seq-read-128k-small.fio");
        args[10] = predict.to_str().unwrap();
        args.extend(files.iter().take(8).map(String::as_str));
        let report = ok(&flashpath(&args));
        (report, std::fs::read_to_string(&out).unwrap())
    };
    let (r1, p1) = run("a.toml");
    let (r2, p2) = run("b.toml");
    assert_eq!(p1, p2, "same inputs, same preset");
    assert_eq!(r1.replace("a.toml", "b.toml"), r2);
    assert!(p1.contains("name = \"board\""));
    // The prediction: its value at the fit lies in its range.
    let l = r1
        .lines()
        .find(|l| l.contains("seq-read-128k-small read_bw_mib"))
        .unwrap_or_else(|| panic!("no prediction:\n{r1}"));
    let w: Vec<f64> = l
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let (at, lo, hi) = (w[0], w[1], w[2]);
    assert!(lo <= at && at <= hi && lo > 0.0, "{l}");
}

/// The truth preset (the shipped one with `fields` of TRUTH moved) written into `dir`:
/// its path.
fn truth_preset(dir: &Path, fields: &[(&str, &str, &str)]) -> String {
    let mut truth = ok(&flashpath(&["presets", DEVICE]));
    for (from, to, _) in fields {
        assert!(truth.contains(from), "{from}");
        truth = truth.replace(from, to);
    }
    let truth = truth.replace(&format!("name = \"{DEVICE}\""), "name = \"truth\"");
    let p = dir.join("truth.toml");
    std::fs::write(&p, truth).unwrap();
    p.to_string_lossy().into_owned()
}

/// iozone and flashbench command lines as measurements: their figures are read off
/// what the tools print on the truth (as a user copies them from the real tools'
/// output), and calibrate fits the truth's read and program times back from them.
#[test]
fn iozone_and_flashbench_lines_are_measurements() {
    let dir = scratch("calibrate-tools");
    let truth = truth_preset(&dir, &TRUTH[..2]);
    let iozone = "-i 0 -i 2 -t 1 -s 16m -r 4k -I";
    let align = "-a --blocksize=4096 --count=2 /dev/mmcblk0";
    let open_au = "-O --erasesize=4194304 --blocksize=262144 --open-au-nr=3 /dev/mmcblk0";
    let run = |tool: &str, line: &str| {
        let mut a = vec![tool, "--device", &truth];
        a.extend(line.split_whitespace());
        ok(&flashpath(&a))
    };
    // iozone: "Children see throughput for 1 random readers \t=   17019.14 kB/sec".
    let io = run("iozone", iozone);
    let random_read: f64 = io
        .lines()
        .find(|l| l.contains("Children see throughput for 1 random readers"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{io}"));
    // flashbench -a: "align 4194304\tpre 224µs\t..."; -O: "4MiB    68M/s ".
    let al = run("flashbench", align);
    let pre = al
        .lines()
        .find(|l| l.starts_with("align 4194304\t"))
        .and_then(|l| l.split('\t').nth(1))
        .and_then(|f| f.strip_prefix("pre "))
        .unwrap_or_else(|| panic!("{al}"));
    let pre_us: f64 = if let Some(us) = pre.strip_suffix("µs") {
        us.parse().unwrap()
    } else {
        pre.strip_suffix("ms").unwrap().parse::<f64>().unwrap() * 1000.0
    };
    let oa = run("flashbench", open_au);
    let rate = |len: &str| -> f64 {
        let l = oa
            .lines()
            .find(|l| l.split_whitespace().next() == Some(len))
            .unwrap_or_else(|| panic!("{oa}"));
        let r = l.split_whitespace().nth(1).unwrap();
        r.strip_suffix("M/s").unwrap().parse().unwrap()
    };
    let m = format!(
        "[[measurement]]\nname = \"iozone\"\niozone = \"{iozone}\"\nmetric = \"random_read_kbs\"\nvalue = {random_read}\n\n\
         [[measurement]]\nname = \"align\"\nflashbench = \"{align}\"\nmetric = \"align_pre_us@4194304\"\nvalue = {pre_us}\n\n\
         [[measurement]]\nname = \"open-au\"\nflashbench = \"{open_au}\"\nmetric = \"open_au_mbs@4MiB\"\nvalue = {}\n\n\
         [[measurement]]\nname = \"open-au-small\"\nflashbench = {:?}\nmetric = \"open_au_mbs@256KiB\"\nvalue = {}\n",
        rate("4MiB"),
        open_au.split_whitespace().collect::<Vec<_>>(),
        rate("256KiB"),
    );
    let mfile = dir.join("tools.toml");
    std::fs::write(&mfile, m).unwrap();
    let out = dir.join("fitted.toml");
    let report = ok(&flashpath(&[
        "calibrate",
        "--device",
        DEVICE,
        "--fit",
        "nand.t_read,nand.t_prog",
        "--out",
        out.to_str().unwrap(),
        mfile.to_str().unwrap(),
    ]));
    for (_, to, key) in &TRUTH[..2] {
        let (fitted, _, _, verdict) =
            fitted_row(&report, key).unwrap_or_else(|| panic!("{key} not fitted:\n{report}"));
        assert_eq!(verdict, "pin it down", "{key}:\n{report}");
        let ns = |s: &str| units::parse_ns(s).unwrap() as f64;
        let truth = ns(to.split('"').nth(1).unwrap());
        assert!(
            (ns(fitted) / truth - 1.0).abs() < 0.03,
            "{key}: fitted {fitted}, truth {truth} ns:\n{report}"
        );
    }
    assert!(
        report.contains("tools.toml:open-au open_au_mbs@4194304"),
        "{report}"
    );
}

#[test]
fn bad_calibrate_input_is_one_line() {
    let dir = scratch("calibrate-bad");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{ \"jobs\": [ ").unwrap();
    let toml = dir.join("m.toml");
    std::fs::write(
        &toml,
        "[[measurement]]\nfio = [\"--name=a\", \"--rw=read\", \"--size=1m\"]\nmetric = \"read_bw_mib\"\nvalue = -1\n",
    )
    .unwrap();
    let b = bad.to_str().unwrap();
    let t = toml.to_str().unwrap();
    for (args, want) in [
        (
            vec!["calibrate", "--out", "x.toml"],
            "no measurements given",
        ),
        (vec!["calibrate", b], "--out FILE.toml is needed"),
        (vec!["calibrate", b, "--out", "x.toml"], "not fio JSON"),
        (
            vec!["calibrate", t, "--out", "x.toml"],
            "value must be a positive number",
        ),
        (
            vec!["calibrate", t, "--out", "x.toml", "--spread", "0"],
            "--spread 0",
        ),
        (
            vec!["calibrate", t, "--out", "x.toml", "--fit", ","],
            "--fit needs",
        ),
        (
            vec!["calibrate", t, "--out", "x.toml", "--bogus"],
            "unknown option '--bogus'",
        ),
        (
            vec![
                "calibrate",
                t,
                "--out",
                "x.toml",
                "--predict",
                "/nonexistent.fio",
            ],
            "--predict /nonexistent.fio: no such job file",
        ),
        (
            vec!["calibrate", "--suite", "big", "--write-jobs", "d"],
            "--suite big",
        ),
        (
            vec![
                "calibrate",
                "--measure",
                "/nonexistent/x",
                "--suite",
                "standard",
            ],
            "--out-dir",
        ),
    ] {
        let o = flashpath(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // The TOML's workloads: one per measurement, a metric its tool reports.
    for (body, want) in [
        (
            "fio = [\"--name=a\"]\niozone = \"-i 0 -t 1\"\nmetric = \"read_bw_mib\"",
            "tools.toml:2: measurement 1: give the workload as one of",
        ),
        (
            "iozone = \"-i 0 -t 1 -s 1m\"\nmetric = \"random_read_kbs\"",
            "iozone metric 'random_read_kbs': this iozone command line reports initial_write_kbs",
        ),
        (
            "iozone = \"-i 1 -l 1 -u 2 -s 1m\"\nmetric = \"read_kbs\"",
            "say which with processes = N",
        ),
        (
            "flashbench = \"-a -O /dev/x\"\nmetric = \"align_on_us@8192\"",
            "the command line runs -a and -O: give one test per measurement",
        ),
        (
            "flashbench = \"-O /dev/x\"\nmetric = \"open_au_mbs@4M\"",
            "this flashbench command line reports open_au_mbs@LEN",
        ),
        (
            "fio = [\"--name=a\"]\nprocesses = 2\nmetric = \"read_bw_mib\"",
            "processes = N is for an iozone command line",
        ),
    ] {
        let f = dir.join("tools.toml");
        std::fs::write(
            &f,
            format!("# a board\n[[measurement]]\n{body}\nvalue = 1\n"),
        )
        .unwrap();
        let o = flashpath(&["calibrate", f.to_str().unwrap(), "--out", "x.toml"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{body}: {err}");
        assert_eq!(err.lines().count(), 1, "{body}: {err}");
        assert!(err.contains(want), "{body}: {err}");
    }
    // A field that is not a declared estimate.
    std::fs::write(
        &toml,
        "[[measurement]]\nfio = [\"--name=a\", \"--rw=read\", \"--size=1m\"]\nmetric = \"read_bw_mib\"\nvalue = 10\n",
    )
    .unwrap();
    let o = flashpath(&[
        "calibrate",
        t,
        "--out",
        "x.toml",
        "--fit",
        "nand.planes_per_die",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a declared estimate"), "{err}");
}

/// `--measure` with the real fio on a regular file (and a loop device when the machine
/// lets the test make one): the JSON files feed calibrate.
#[test]
fn measure_runs_the_real_fio_and_feeds_calibrate() {
    if std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("fio is not installed: the CI installs it (apt-get install fio)");
    }
    let dir = scratch("calibrate-measure");
    let target = dir.join("board.img");
    let outd = dir.join("json");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "calibrate",
            "--measure",
            target.to_str().unwrap(),
            "--suite",
            "standard",
            "--out-dir",
            outd.to_str().unwrap(),
            "--small",
            "1MiB",
            "--large",
            "8MiB",
            "--scale",
            "0.01",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // A file that is not there yet would be written: refused without --allow-writes.
    let o = flashpath(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("give --allow-writes"), "{err}");
    let o = flashpath(
        &args(&["--allow-writes"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let text = ok(&o);
    assert!(text.contains("wrote 17 fio JSON files"), "{text}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--allow-writes: the write jobs overwrite"),
        "{err}"
    );
    let mut jsons: Vec<String> = std::fs::read_dir(&outd)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    jsons.sort();
    assert_eq!(jsons.len(), 17);
    // The real fio's JSON, re-simulated: a file of 8 MiB on the simulated filesystem.
    let out = dir.join("fitted.toml");
    let mut a = vec![
        "calibrate",
        "--device",
        DEVICE,
        "--fit",
        "nand.t_read",
        "--max-evals",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(jsons.iter().take(4).map(String::as_str));
    let report = ok(&flashpath(&a));
    assert!(report.contains("device.nand.t_read"), "{report}");
    assert!(out.is_file());

    // A loop device, reads only: the write jobs are skipped and said to be.
    let lo = std::process::Command::new("losetup")
        .args(["-f", "--show", target.to_str().unwrap()])
        .output();
    let Some(dev) = lo
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        eprintln!(
            "no loop device here (needs root and the loop driver): the loop-device half is skipped"
        );
        return;
    };
    let loopd = dir.join("loop");
    let o = flashpath(&[
        "calibrate",
        "--measure",
        &dev,
        "--suite",
        "standard",
        "--out-dir",
        loopd.to_str().unwrap(),
        "--small",
        "1MiB",
        "--scale",
        "0.01",
    ]);
    let _ = std::process::Command::new("losetup")
        .args(["-d", &dev])
        .output();
    let text = ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("block device of 8.0 MiB"), "{err}");
    assert!(
        err.contains("reads only: the 9 write jobs are skipped"),
        "{err}"
    );
    assert!(text.contains("wrote 8 fio JSON files"), "{text}");
}
