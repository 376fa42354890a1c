//! The `flashpath` binary end to end: the shipped reproductions (`validate`), `compare`, determinism,
//! fio's formats, and bad input (one line on stderr, exit status 1, no panic).

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn flashpath(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run flashpath")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn same_command_gives_byte_identical_json() {
    let args = [
        "fio",
        "--name=a",
        "--rw=randrw",
        "--bs=4k",
        "--size=16m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--direct=1",
        "--output-format=json+",
    ];
    let a = flashpath(&args);
    let b = flashpath(&args);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    assert!(stdout(&a).contains("\"bins\""));
}

#[test]
fn every_output_format_prints() {
    let o = flashpath(&[
        "fio",
        "--name=t",
        "--rw=read",
        "--bs=64k",
        "--size=8m",
        "--direct=1",
        "--output-format=normal,terse,json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Run status group 0"), "{out}");
    assert!(out.contains("3;fio-3.33;t;"), "{out}");
    assert!(out.contains("\"fio version\" : \"fio-3.33\""), "{out}");
}

#[test]
fn presets_lists_kind_name_description() {
    let o = flashpath(&["presets"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out
        .lines()
        .any(|l| l.starts_with("device") && l.contains("emmc51-hs400-32g")));
    assert!(out
        .lines()
        .any(|l| l.starts_with("host") && l.contains("sprd-sc9863a")));
}

/// Bad input: exit 1, one line on stderr containing `expect`, no panic.
fn rejects(args: &[&str], expect: &str) {
    let o = flashpath(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(
        err.contains(expect),
        "{args:?}: expected '{expect}' in {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_command_lines_are_one_line_errors() {
    let job = ["--name=t", "--rw=read", "--size=1m", "--direct=1"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["fio"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&job);
        v
    };
    rejects(
        &with(&["--device", "nosuch"]),
        "unknown device preset 'nosuch'",
    );
    rejects(&with(&["--host", "nosuch"]), "unknown host preset 'nosuch'");
    rejects(
        &with(&["--driver", "mmc-turbo"]),
        "unknown driver 'mmc-turbo'",
    );
    rejects(
        &with(&["--set", "device.nand.t_reed=5us"]),
        "device.nand.t_reed",
    );
    rejects(&with(&["--set", "device.nand.t_read=fast"]), "nand.t_read");
    rejects(
        &with(&["--set", "nand.t_read=5us"]),
        "must start with 'device.' or 'host.'",
    );
    rejects(&with(&["--set", "host.cpu.cores=0"]), "cpu.cores");
    rejects(
        &with(&["--device", "/nonexistent/dev.toml"]),
        "/nonexistent/dev.toml",
    );
    rejects(&with(&["--zonemode=zbd"]), "zonemode");
    rejects(
        &[
            "fio",
            "--host=sprd-sc9863a",
            "--name=t",
            "--rw=read",
            "--size=1m",
            "--direct=0",
            "--ioengine=io_uring",
        ],
        "io-wq",
    );
    rejects(&with(&["--ioengine=mmap"]), "ioengine=mmap");
    // Trims where they are not modelled: SD erase, trimwrite between queued writes.
    rejects(
        &[
            "fio",
            "--device=sd-samsung-pro-plus-128g",
            "--host=x86-laptop-rtsx",
            "--driver=sd-rtsx",
            "--name=t",
            "--rw=trim",
            "--size=1m",
            "--direct=1",
        ],
        "trims on an SD card",
    );
    rejects(
        &[
            "fio",
            "--name=t",
            "--rw=trimwrite",
            "--ioengine=libaio",
            "--size=1m",
            "--direct=1",
        ],
        "rw=trimwrite",
    );
    rejects(&["bogus"], "unknown command 'bogus'");
    // A chart's format is refused before anything runs.
    rejects(
        &[
            "compare",
            "--vary",
            "driver=mmc-hsq",
            "--plot",
            "chart.txt",
            "--name=t",
            "--rw=read",
        ],
        "--plot chart.txt: the chart's format is its suffix: .svg, .png or .pdf",
    );
    rejects(
        &["validate", "--plot", "chart"],
        "--plot chart: the chart's format is its suffix",
    );
    rejects(
        &["presets", "--json", "x"],
        "expected at most one preset name",
    );
}

/// `flashpath validate` over the shipped reproductions: every published figure within its
/// tolerance and every before/after change in its range (or an explained known failure).
/// Its `--json` records are the table's lines.
#[test]
fn shipped_reproductions_validate() {
    let json = std::env::temp_dir().join(format!("flashpath-validate-{}.json", std::process::id()));
    let o = flashpath(&["validate", "--json", json.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "validate failed:\n{}{}",
        stdout(&o),
        stderr(&o)
    );
    let table = stdout(&o);
    assert!(table.contains("hsq-randwrite-hsq"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let records = v["records"].as_array().unwrap();
    let line_of = |r: &serde_json::Value, name: &str, value: &str| {
        let (name, metric) = (r[name].as_str().unwrap(), r["metric"].as_str().unwrap());
        let x = format!("{:.2}", r[value].as_f64().unwrap());
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with(name) && l.contains(metric) && l.contains(&x)),
            "no table line for {r}"
        );
    };
    let mut checks = 0;
    for r in records {
        match r["kind"].as_str().unwrap() {
            "figure" | "range" => {
                checks += 1;
                line_of(r, "reproduction", "simulated");
            }
            "prediction" => line_of(r, "reproduction", "simulated"),
            "comparison" => line_of(r, "comparison", "after"),
            "out_of_sample" => {
                assert_eq!(r["sample"], "out-of-sample");
                line_of(r, "reproduction", "simulated");
            }
            k => panic!("unknown kind {k}"),
        }
    }
    let summary = v["summary"][0].as_str().unwrap();
    assert!(table.contains(summary));
    assert!(
        summary.starts_with(&format!("validate: {checks} published figures")),
        "{summary}"
    );
    let oos = v["summary"][1].as_str().unwrap();
    assert!(oos.starts_with("validate: out of sample"));
    readme_counts_are(summary, oos);
}

/// The word just before the first `phrase` in `s`, without the punctuation around it.
fn word_before<'a>(s: &'a str, phrase: &str) -> &'a str {
    let i = s
        .find(phrase)
        .unwrap_or_else(|| panic!("no {phrase:?} in {s}"));
    s[..i]
        .split_whitespace()
        .last()
        .unwrap()
        .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '.')
}

/// The README's front door states the counts of the full `validate` run: its summary
/// lines `summary` and `oos`.
fn readme_counts_are(summary: &str, oos: &str) {
    let s = summary;
    let total: u32 = word_before(s, " published figures").parse().unwrap();
    let preds: u32 = word_before(s, " of them predictions").parse().unwrap();
    let in_n = word_before(s, " in-sample single values");
    let p_n = word_before(s, " predicted single values");
    let comparisons = &s[s.find(" before/after comparisons").unwrap()..];
    let want = [
        format!("Today: {total} published figures"),
        format!(
            "{} within tolerance and {} declared known failures",
            word_before(s, " within tolerance, "),
            word_before(s, " declared known failures")
        ),
        format!(
            "{} before/after comparisons, each at its published change, {} in range and {} \
             declared known failures",
            word_before(s, " before/after comparisons"),
            word_before(s, " in range"),
            word_before(comparisons, " declared known failures")
        ),
        format!("{} of the figures are in-sample", total - preds),
        format!(
            "the {in_n} single values within tolerance off by {} % on average",
            word_before(s, &format!(" % over the {in_n} in-sample"))
        ),
        format!("{preds} are predictions"),
        format!(
            "{p_n} single values within tolerance, off by {} %",
            word_before(s, &format!(" % over the {p_n} predicted"))
        ),
        format!(
            "{} figures of {} sets, {} within tolerance, mean |error| {} % (in sample, the \
             same figures: {} %)",
            word_before(oos, " after figures"),
            word_before(oos, " sets,"),
            word_before(oos, " within tolerance"),
            word_before(oos, " % (the same"),
            word_before(oos, " %)")
        ),
    ];
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for w in want {
        assert!(
            readme.contains(&w),
            "README.md's counts are not validate's: it lacks \"{w}\" (validate: {summary} {oos})"
        );
    }
}

#[test]
fn presets_json_lists_what_presets_prints() {
    let o = flashpath(&["presets", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listing = stdout(&flashpath(&["presets"]));
    let all = v.as_array().unwrap();
    assert_eq!(
        all.len(),
        listing
            .lines()
            .filter(|l| l.starts_with("device") || l.starts_with("host"))
            .count()
    );
    for p in all {
        let (kind, name) = (p["kind"].as_str().unwrap(), p["name"].as_str().unwrap());
        assert!(listing.lines().any(|l| l.starts_with(kind)
            && l.contains(name)
            && l.contains(p["description"].as_str().unwrap())));
        if kind == "device" {
            let hosts: Vec<&str> = p["hosts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap())
                .collect();
            assert!(
                listing.contains(&format!("goes with host {}", hosts.join(", "))),
                "{p}"
            );
        }
    }
}

/// A scratch jobs directory with one small reproduction.
fn scratch_jobs(name: &str, manifest: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashpath-validate-{name}-{}", std::process::id()));
    let sub = d.join("set");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("small.fio"),
        "[small]\nrw=randread\nbs=4k\nsize=16M\ndirect=1\n",
    )
    .unwrap();
    std::fs::write(sub.join("reproductions.toml"), manifest).unwrap();
    d
}

const SMALL: &str = r#"
[[reproduction]]
name = "small-legacy"
job = "small.fio"
device = "emmc51-hs400-32g"
host = "sprd-sc9863a"
driver = "mmc-legacy"
source = "test"
  [[reproduction.figure]]
  metric = "read_iops"
  published = PUB
  tolerance_pct = 10
  KNOWN
"#;

#[test]
fn validate_checks_tolerances_and_known_failures_strictly() {
    // Find the simulated figure first (a prediction: no figures).
    let d = scratch_jobs(
        "probe",
        &SMALL.replace("  [[reproduction.figure]]", "").replace(
            "  metric = \"read_iops\"\n  published = PUB\n  tolerance_pct = 10\n  KNOWN\n",
            "",
        ),
    );
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("prediction"));
    let run = |publ: f64, known: &str| {
        let m = SMALL
            .replace("PUB", &format!("{publ}"))
            .replace("KNOWN", known);
        let d = scratch_jobs("run", &m);
        flashpath(&["validate", "--jobs", d.to_str().unwrap()])
    };
    // The 16 MiB QD1 random read's IOPS: the legacy path, ~7000 I/Os per second.
    let ok = run(7000.0, "");
    let iops: f64 = stdout(&ok)
        .lines()
        .find(|l| l.starts_with("small-legacy"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|x| x.parse().ok())
        .expect("simulated IOPS in the table");
    assert!(run(iops * 1.05, "").status.success());
    let miss = run(iops * 1.5, "");
    assert_eq!(miss.status.code(), Some(1));
    assert!(stdout(&miss).contains("FAIL"));
    assert!(stderr(&miss).contains("outside their tolerance"));
    // A known failure that fails passes the run; one that passes fails it.
    assert!(run(iops * 1.5, "known_failure = \"why\"").status.success());
    let stale = run(iops, "known_failure = \"why\"");
    assert_eq!(stale.status.code(), Some(1));
    assert!(stdout(&stale).contains("remove the marker"));
}

#[test]
fn bad_manifests_name_file_and_line() {
    let cases = [
        (
            SMALL.replace("PUB", "1").replace("KNOWN", "colour = 1"),
            "unknown field `colour`",
        ),
        (
            SMALL
                .replace("PUB", "1")
                .replace("KNOWN", "")
                .replace("read_iops", "read_speed"),
            "unknown metric 'read_speed'",
        ),
        (
            SMALL
                .replace("PUB", "1")
                .replace("KNOWN", "")
                .replace("small.fio", "nope.fio"),
            "does not exist",
        ),
        (
            SMALL.replace("PUB", "-3").replace("KNOWN", ""),
            "must be positive",
        ),
    ];
    for (m, expect) in cases {
        let d = scratch_jobs("bad", &m);
        let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains(expect), "{expect}: {e}");
        assert!(
            e.contains("reproductions.toml:"),
            "names file and line: {e}"
        );
        assert_eq!(e.lines().count(), 1, "one line: {e}");
    }
}

#[test]
fn compare_prints_a_column_per_configuration_and_json() {
    let job = root().join("jobs/hsq/randread.fio");
    let o = flashpath(&[
        "compare",
        "--vary",
        "driver=mmc-legacy,mmc-hsq-v6",
        "--json",
        "-",
        "--size=32M",
        "--numjobs=4",
        job.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    assert_eq!(configs[1]["config"], "driver=mmc-hsq-v6");
    let bw = |c: &serde_json::Value| c["jobs"][0]["dirs"]["read"]["bw_bytes"].as_f64().unwrap();
    let change = v["changes"][0]["change_pct"][1].as_f64().unwrap();
    assert!((change - (bw(&configs[1]) / bw(&configs[0]) - 1.0) * 100.0).abs() < 1e-9);
    assert!(change > 0.0, "hsq reads faster than legacy");
    // The table: one column per configuration.
    let t = flashpath(&[
        "compare",
        "--vary",
        "driver=mmc-legacy,mmc-hsq-v6",
        "--size=32M",
        job.to_str().unwrap(),
    ]);
    assert!(t.status.success(), "{}", stderr(&t));
    let head = stdout(&t).lines().next().unwrap().to_string();
    assert!(
        head.contains("driver=mmc-legacy") && head.contains("driver=mmc-hsq-v6"),
        "{head}"
    );
    assert!(stdout(&t).contains("bw MiB/s"));
    // Bad --vary: one line, exit 1.
    for (args, expect) in [
        (
            vec!["compare", "--vary", "speed=1,2", "x.fio"],
            "is not driver",
        ),
        (vec!["compare", "x.fio"], "needs at least one --vary"),
        (
            vec!["compare", "--vary", "driver=nope", job.to_str().unwrap()],
            "unknown driver 'nope'",
        ),
    ] {
        let o = flashpath(&args);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains(expect), "{expect}: {}", stderr(&o));
    }
}

/// The JSON report carries the spans of every job row; `analyze` prints the paper's
/// limits computed from exactly those means, and the instant-storage what-if beats the
/// real storage.
#[test]
fn analyze_prints_the_papers_limits_of_the_reported_spans() {
    let job = [
        "--filename=/dev/mmcblk0",
        "--direct=1",
        "--rw=write",
        "--bs=128k",
        "--size=32m",
        "--name=w",
    ];
    let mut args = vec!["fio", "--output-format=json"];
    args.extend(job);
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["jobs"][0];
    let fp = &j["flashpath"];
    let mean = |s: &str| fp["spans"][s]["mean_ns"].as_f64().unwrap();
    for s in ["pre", "hw", "post", "q2g", "g2i", "i2d", "d2c", "q2c"] {
        assert!(
            fp["spans"][s]["p99_ns"].as_u64().unwrap()
                >= fp["spans"][s]["p50_ns"].as_u64().unwrap()
        );
        assert!(fp["spans"][s]["count"].as_u64().unwrap() > 0, "{s}");
    }
    let (pre, hw, post) = (mean("pre"), mean("hw"), mean("post"));
    let share = fp["software_share"].as_f64().unwrap();
    assert!((share - (pre + post) / (pre + hw + post)).abs() < 1e-5);
    // One psync stream: pre + hw + post is the mean total latency.
    let lat = j["write"]["lat_ns"]["mean"].as_f64().unwrap();
    assert!(
        (pre + hw + post - lat).abs() < 1.0,
        "{pre}+{hw}+{post} vs {lat}"
    );
    let mib = |ns: f64| 131072.0 / (ns / 1e9) / 1048576.0;
    let mut args = vec!["analyze"];
    args.extend(job);
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "size/(pre+hw+post) {:.1} MiB/s",
            mib(pre + hw + post)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("size/(pre+post)    {:.1} MiB/s", mib(pre + post))),
        "{text}"
    );
    let what_if: f64 = text
        .split("instant storage: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|x| x.parse().ok())
        .expect("what-if figure");
    // One stream on instant storage runs at its software limit.
    assert!(
        (what_if - mib(pre + post)).abs() < 0.1 * mib(pre + post),
        "{what_if} vs {}",
        mib(pre + post)
    );
    let o = flashpath(&[
        "analyze",
        "--set",
        "device.ideal=true",
        "--name=x",
        "--size=1m",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let o = flashpath(&[
        "fio",
        "--set",
        "device.ideal=maybe",
        "--name=x",
        "--size=1m",
    ]);
    assert!(
        stderr(&o).contains("device.ideal=maybe: expected true or false"),
        "{}",
        stderr(&o)
    );
}

/// A job with reads and writes reports its spans per direction beside the job's
/// (`flashpath.read`, `.write` in JSON, a block each in normal output), each counting
/// that direction's I/Os; `analyze` gives each direction its limits from its own spans
/// and mean size; `compare` shows each direction's spans. A job of one direction has no
/// split.
#[test]
fn a_mixed_job_reports_and_analyzes_its_spans_per_direction() {
    let job = [
        "--filename=/dev/mmcblk0",
        "--direct=1",
        "--rw=randrw",
        "--bs=4k,64k",
        "--size=8m",
        "--name=mix",
    ];
    let mut args = vec!["fio", "--output-format=json,normal"];
    args.extend(job);
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // fio prints the normal output's job lines, the JSON, then the normal report.
    let (json, text) = out.split_at(out.find("mix: (groupid").expect("normal output"));
    let v: serde_json::Value = serde_json::from_str(&json[json.find('{').unwrap()..]).unwrap();
    let j = &v["jobs"][0];
    let fp = &j["flashpath"];
    let count = |x: &serde_json::Value, s: &str| x["spans"][s]["count"].as_u64().unwrap();
    for (d, x) in ["read", "write"].iter().map(|d| (*d, &fp[*d])) {
        let ios = j[d]["total_ios"].as_u64().unwrap();
        assert!(ios > 10, "{d}");
        for s in ["pre", "hw", "post"] {
            assert_eq!(count(x, s), ios, "{d} {s}");
        }
        let m = |s: &str| x["spans"][s]["mean_ns"].as_f64().unwrap();
        let share = x["software_share"].as_f64().unwrap();
        let want = (m("pre") + m("post")) / (m("pre") + m("hw") + m("post"));
        assert!((share - want).abs() < 1e-5, "{d}");
        assert!(text.contains(&format!("  {d} spans (usec): software share=")));
    }
    assert!(fp["trim"].is_null());
    for s in ["pre", "hw", "post", "d2c", "q2c"] {
        assert_eq!(count(fp, s), count(&fp["read"], s) + count(&fp["write"], s));
    }
    // The job's mean is the two directions' weighted by their counts.
    let whole = fp["spans"]["hw"]["mean_ns"].as_f64().unwrap();
    let weighted = ["read", "write"]
        .iter()
        .map(|d| fp[*d]["spans"]["hw"]["mean_ns"].as_f64().unwrap() * count(&fp[*d], "hw") as f64)
        .sum::<f64>()
        / count(fp, "hw") as f64;
    assert!((whole - weighted).abs() < 1.0, "{whole} vs {weighted}");

    let mut args = vec!["analyze"];
    args.extend(job);
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let rd = &fp["read"]["spans"];
    let line = format!(
        "  read: I/O size 4 KiB; mean spans (usec): pre {:.1}, hw {:.1}, post {:.1};",
        rd["pre"]["mean_ns"].as_f64().unwrap() / 1e3,
        rd["hw"]["mean_ns"].as_f64().unwrap() / 1e3,
        rd["post"]["mean_ns"].as_f64().unwrap() / 1e3,
    );
    assert!(text.contains(&line), "{line}\n{text}");
    assert!(text.contains("  write: I/O size 64 KiB;"), "{text}");

    // compare's table has each direction's spans.
    let mut args = vec!["compare", "--vary", "driver=mmc-legacy"];
    args.extend(job);
    let o = flashpath(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for d in ["read", "write"] {
        let want = fp[d]["spans"]["hw"]["mean_ns"].as_f64().unwrap() / 1e3;
        let got: f64 = text
            .lines()
            .find(|l| l.starts_with(&format!("mix  {d:<5}  hw us")))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{d} hw row\n{text}"));
        assert!((got - want).abs() <= 0.01 * want, "{d}: {got} vs {want}");
    }

    // One direction: no split.
    let o = flashpath(&[
        "fio",
        "--output-format=json",
        "--filename=/dev/mmcblk0",
        "--direct=1",
        "--rw=randread",
        "--size=4m",
        "--name=r",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["jobs"][0]["flashpath"]["read"].is_null());
}
