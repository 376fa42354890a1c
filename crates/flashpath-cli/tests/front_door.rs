//! What a new user meets first: a device preset alone runs (its preset picks a host and
//! driver that fit, and says so), a driver that does not fit names the ones that do, a
//! run's output records how its system was made, `--set` adds an optional field,
//! every preset lists its declared estimates, every subcommand answers `--help`, and
//! no subcommand panics on a closed pipe or a full disk.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashpath"));
    c.args(args).current_dir(root()).stdin(Stdio::null());
    c
}

fn flashpath(args: &[&str]) -> Output {
    cmd(args).output().expect("run flashpath")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The device presets `flashpath presets` lists.
fn device_presets() -> Vec<String> {
    let o = flashpath(&["presets"]);
    assert!(o.status.success());
    text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("device "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("fio JSON")
}

const JOB: [&str; 5] = [
    "--name=t",
    "--rw=randread",
    "--bs=4k",
    "--size=1m",
    "--output-format=json",
];

#[test]
fn every_device_preset_alone_runs_a_job_on_a_host_and_driver_that_fit() {
    let devices = device_presets();
    assert!(devices.len() >= 8, "{devices:?}");
    for d in &devices {
        let mut args = vec!["fio", "--device", d.as_str()];
        args.extend(JOB);
        let o = flashpath(&args);
        let v = json(&o);
        let c = &v["flashpath"]["configuration"];
        assert_eq!(c["device"], d.as_str());
        let (host, driver) = (c["host"].as_str().unwrap(), c["driver"].as_str().unwrap());
        // The preset names that pairing, and stderr says which was picked.
        let p = flashpath(&["presets", d]);
        let preset = text(&p.stdout);
        let hosts_line = preset.lines().find(|l| l.starts_with("hosts")).unwrap();
        let drivers_line = preset.lines().find(|l| l.starts_with("drivers")).unwrap();
        assert!(
            hosts_line.contains(&format!("[\"{host}\"")),
            "{d}: {host} first of {hosts_line}"
        );
        assert!(drivers_line.contains(&format!("\"{driver}\"")), "{d}");
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!(
                "device '{d}' runs on host '{host}' with driver '{driver}'"
            )),
            "{d}: {err}"
        );
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 256, "{d}");
    }
}

/// Every driver a device preset names runs it on one of the hosts it names.
#[test]
fn every_pairing_a_device_preset_names_fits() {
    for d in device_presets() {
        let preset = text(&flashpath(&["presets", &d]).stdout);
        let list = |key: &str| -> Vec<String> {
            let l = preset.lines().find(|l| l.starts_with(key)).unwrap();
            l.split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let hosts = list("hosts");
        for driver in list("drivers") {
            let fits = hosts.iter().any(|h| {
                flashpath(&[
                    "fio",
                    "--device",
                    &d,
                    "--host",
                    h,
                    "--driver",
                    &driver,
                    "--name=t",
                    "--size=64k",
                    "--parse-only",
                ])
                .status
                .success()
            });
            assert!(fits, "{d}: driver {driver} runs on none of {hosts:?}");
        }
    }
}

#[test]
fn a_driver_that_does_not_fit_names_the_ones_that_do() {
    let o = flashpath(&[
        "fio",
        "--device",
        "ufs21-64g",
        "--driver",
        "mmc-hsq",
        "--name=t",
        "--size=64k",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("needs a device with interface = \"emmc\"")
            && err.contains("on host 'sd835-phone' it runs with ufs, ufs-hpb")
            && err.contains("device 'ufs21-64g' goes with host sd835-phone"),
        "{err}"
    );
}

#[test]
fn the_configuration_is_in_the_json_and_normal_outputs() {
    let base = [
        "fio",
        "--device",
        "ufs21-64g",
        "--host",
        "sd835-phone",
        "--driver",
        "ufs-hpb",
        "--precondition",
        "sequential",
        "--set",
        "device.nand.t_read=50us",
        "--set",
        "host.costs.wakeup=10us",
        "--name=t",
        "--rw=randread",
        "--size=1m",
    ];
    let mut a = base.to_vec();
    a.push("--output-format=json");
    let v = json(&flashpath(&a));
    let c = &v["flashpath"]["configuration"];
    assert_eq!(c["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(c["device"], "ufs21-64g");
    assert_eq!(c["host"], "sd835-phone");
    assert_eq!(c["driver"], "ufs-hpb");
    assert_eq!(c["precondition"], "sequential");
    assert_eq!(c["layout"], "sequential");
    assert_eq!(c["set"]["device.nand.t_read"], "50us");
    assert_eq!(c["set"]["host.costs.wakeup"], "10us");
    // Given explicitly, nothing is said on stderr.
    let o = flashpath(&base);
    assert!(o.status.success());
    assert_eq!(text(&o.stderr), "");
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let i = lines.iter().position(|l| *l == "fio-3.33").unwrap();
    assert_eq!(
        lines[i + 1],
        format!(
            "flashpath-{}: device=ufs21-64g host=sd835-phone driver=ufs-hpb precondition=sequential --set device.nand.t_read=50us --set host.costs.wakeup=10us",
            env!("CARGO_PKG_VERSION")
        )
    );
    // auto resolves per driver, and the default system is named too.
    let o = flashpath(&["fio", "--name=t", "--size=64k"]);
    assert!(text(&o.stdout).contains(
        "device=emmc51-hs400-32g host=sprd-sc9863a driver=mmc-legacy precondition=auto (random)"
    ));
}

/// A field the preset leaves out (`hpb.max_single_cmd`, HPB 2.0 only) can be set, so
/// host control mode runs on the shipped UFS preset; a name that is no field is still
/// refused, naming the `--set`.
#[test]
fn set_adds_an_optional_field_and_refuses_a_misspelt_one() {
    let hcm = [
        "fio",
        "--device",
        "ufs21-64g",
        "--driver",
        "ufs-hpb-hcm",
        "--set",
        "device.hpb.version=2.0",
        "--set",
        "device.hpb.max_single_cmd=512KiB",
        "--name=t",
        "--rw=randread",
        "--size=4m",
        "--output-format=json",
    ];
    let v = json(&flashpath(&hcm));
    assert_eq!(v["flashpath"]["configuration"]["driver"], "ufs-hpb-hcm");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 1024);
    let o = flashpath(&[
        "fio",
        "--device",
        "ufs21-64g",
        "--set",
        "device.hpb.max_singel_cmd=512KiB",
        "--name=t",
        "--size=64k",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("flashpath: error: --set device.hpb.max_singel_cmd=512KiB (preset 'ufs21-64g'): device.hpb.max_singel_cmd: no such field in a device preset (unknown field `max_singel_cmd`, expected one of")
            && err.lines().count() == 1,
        "{err}"
    );
    // A number given to a field that takes a string is taken as the string.
    let o = flashpath(&[
        "fio",
        "--device",
        "ufs21-64g",
        "--driver",
        "ufs-hpb-hcm",
        "--set",
        "device.hpb.version=2.0",
        "--set",
        "device.hpb.max_single_cmd=4",
        "--name=t",
        "--size=64k",
    ]);
    assert!(
        text(&o.stderr).contains("4 must be 4KiB..1MiB in 4 KiB steps"),
        "{}",
        text(&o.stderr)
    );
}

/// The subcommands, each with arguments that make it print (small runs).
fn printing_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["presets"],
        vec!["presets", "ufs21-64g"],
        vec!["presets", "--estimates", "ufs21-64g"],
        vec!["help"],
        vec!["help", "compare"],
        vec!["--version"],
        vec!["fio", "--version"],
        vec!["fio", "--help"],
        vec!["fio", "--name=t", "--size=64k"],
        vec!["fio", "--name=t", "--size=64k", "--output-format=json"],
        vec!["flashbench", "--help"],
        vec!["flashbench", "-a", "--count=1", "/dev/mmcblk0"],
        vec![
            "iozone", "-i", "0", "-t", "1", "-s", "64k", "-r", "4k", "-F", "f1",
        ],
        vec![
            "compare",
            "--vary",
            "driver=mmc-legacy,mmc-hsq",
            "--name=t",
            "--size=64k",
        ],
        vec!["analyze", "--name=t", "--size=64k"],
        vec!["validate", "--only", "tx1-direct-read"],
    ]
}

#[test]
fn every_subcommand_answers_help() {
    for name in [
        "fio",
        "iozone",
        "flashbench",
        "analyze",
        "compare",
        "validate",
        "presets",
    ] {
        let o = flashpath(&[name, "--help"]);
        assert!(o.status.success(), "{name} --help: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(
            out.starts_with(&format!("usage: flashpath {name} ")),
            "{name}: {out}"
        );
        // The same text as `flashpath help NAME`.
        let h = flashpath(&["help", name]);
        assert!(text(&h.stdout).starts_with(&out[..out.find('\n').unwrap()]));
    }
    let o = flashpath(&["--help"]);
    let out = text(&o.stdout);
    assert!(o.status.success() && out.contains("--precondition auto|random|sequential|off"));
}

fn one_error_line(o: &Output, what: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("flashpath: device '"))
        .collect();
    assert_eq!(lines.len(), 1, "{what}: {err}");
    assert!(lines[0].starts_with("flashpath: error: "), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

/// Runs every printing command with its standard output from `stdout` (iozone in a
/// scratch directory, for its files): each must end with one error line, exit 1.
fn each_printing_command_fails_cleanly(label: &str, stdout: impl Fn() -> Stdio) {
    let dir = std::env::temp_dir().join(format!("flashpath-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for args in printing_commands() {
        let mut c = cmd(&args);
        if args[0] == "iozone" {
            c.current_dir(&dir);
        }
        let o = c.stdout(stdout()).output().unwrap();
        one_error_line(&o, &format!("{args:?} into {label}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_subcommand_panics_on_a_full_disk() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("note: no /dev/full here; skipped");
        return;
    }
    each_printing_command_fails_cleanly("full", || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
            .into()
    });
}

#[test]
fn no_subcommand_panics_on_a_closed_pipe() {
    // A pipe whose reading end is closed before the command starts: its first write
    // fails with EPIPE, as `flashpath ... | head -0` does.
    each_printing_command_fails_cleanly("pipe", || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer.into()
    });
}

/// The logs the UFS steady-state example writes where it is run (the repository's
/// root) are ignored by git, so they cannot slip into a commit; the test data's logs
/// are not.
#[test]
fn the_examples_logs_are_ignored_by_git() {
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root()).output();
    match git(&["rev-parse", "--is-inside-work-tree"]) {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!("note: not a git checkout (or no git); skipped");
            return;
        }
    }
    let job = std::fs::read_to_string(root().join("jobs/ufs/steady-randwrite.fio")).unwrap();
    let stem = |key: &str| {
        job.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in the job"))
            .trim()
            .to_string()
    };
    let (bw, lat) = (stem("write_bw_log="), stem("write_lat_log="));
    for f in [
        format!("{bw}_bw.1.log"),
        format!("{lat}_lat.1.log"),
        format!("{lat}_clat.1.log"),
        format!("{lat}_slat.1.log"),
        "agg-write_bw.log".to_string(),
        format!("crates/flashpath-cli/{bw}_bw.log"),
    ] {
        let o = git(&["check-ignore", "-q", "--no-index", &f]).unwrap();
        assert!(o.status.success(), "{f} is not ignored");
    }
    let o = git(&[
        "check-ignore",
        "-q",
        "--no-index",
        "crates/flashpath-fio/tests/data/x/a_bw.1.log",
    ])
    .unwrap();
    assert!(!o.status.success(), "test data logs must stay tracked");
}

/// The shipped presets of both kinds.
fn all_presets() -> Vec<String> {
    let o = flashpath(&["presets"]);
    text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("device ") || l.starts_with("host "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn every_preset_lists_its_declared_estimates() {
    for p in all_presets() {
        let o = flashpath(&["presets", "--estimates", &p]);
        assert!(o.status.success(), "{p}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        let head = out.lines().next().unwrap();
        assert!(
            head.starts_with(&format!("{p}: ")) && head.contains(" declared estimates, "),
            "{p}: {head}"
        );
        // Each row's field is written in the preset, and its line is where the
        // [estimates] table declares it.
        let preset = text(&flashpath(&["presets", &p]).stdout);
        let lines: Vec<&str> = preset.lines().collect();
        let rows: Vec<&str> = out.lines().skip(2).collect();
        assert!(!rows.is_empty(), "{p}: no rows");
        for r in rows {
            let mut w = r.split_whitespace();
            let line: usize = w.next().unwrap().parse().unwrap();
            let field = w.next().unwrap();
            assert!(
                lines[line - 1].starts_with(&format!("\"{field}\" = {{")),
                "{p}: row {r:?} against line {line}: {:?}",
                lines[line - 1]
            );
        }
    }
}

#[test]
fn a_bad_estimate_declaration_is_one_line_naming_its_line() {
    let dir = std::env::temp_dir().join(format!("flashpath-estimates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = text(&flashpath(&["presets", "ufs21-64g"]).stdout);
    // The preset without its own table, and one declaration whose range is not of the
    // value's kind (a size for a time).
    let body = good
        .split("\n[estimates]")
        .next()
        .unwrap()
        .trim_end()
        .to_string();
    let n = body.lines().count();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        format!("{body}\n[estimates]\n\"nand.t_read\" = {{ range = [\"4KiB\", \"8KiB\"], why = \"a test\" }}\n"),
    )
    .unwrap();
    let path = bad.to_str().unwrap();
    for args in [
        vec!["presets", "--estimates", path],
        vec!["fio", "--device", path, "--name=t", "--size=64k"],
    ] {
        let o = flashpath(&args);
        one_error_line(&o, "a bad declaration");
        let e = text(&o.stderr);
        assert!(
            e.contains(&format!("bad.toml:{}: estimates.\"nand.t_read\": range end 4KiB is not a time as the value 60us is", n + 2)),
            "{args:?}: {e}"
        );
    }
    // A value outside its range is the preset's to have (as --set is): it loads, and
    // the listing says so.
    let outside = dir.join("outside.toml");
    std::fs::write(
        &outside,
        format!("{body}\n[estimates]\n\"nand.t_read\" = {{ range = [\"70us\", \"90us\"], why = \"a test\" }}\n"),
    )
    .unwrap();
    let o = flashpath(&["presets", "--estimates", outside.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("60us (outside)"),
        "{}",
        text(&o.stdout)
    );
    let o = flashpath(&[
        "fio",
        "--device",
        outside.to_str().unwrap(),
        "--name=t",
        "--size=64k",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A file that is not there says why; a name that is no preset names the listing.
    let o = flashpath(&["presets", "--estimates", "./no-such.toml"]);
    one_error_line(&o, "a missing preset file");
    assert!(
        text(&o.stderr).contains("./no-such.toml: cannot read preset file"),
        "{}",
        text(&o.stderr)
    );
    let o = flashpath(&["presets", "--estimates", "ufs99"]);
    one_error_line(&o, "an unknown preset");
    assert!(
        text(&o.stderr).contains("no shipped preset 'ufs99'"),
        "{}",
        text(&o.stderr)
    );
    // A preset without the table lists none.
    let plain = dir.join("plain.toml");
    std::fs::write(&plain, &body).unwrap();
    let o = flashpath(&["presets", "--estimates", plain.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("no declared estimates"),
        "{}",
        text(&o.stdout)
    );
    // The table is the preset's, not --set's.
    let o = flashpath(&[
        "fio",
        "--set",
        "device.estimates.x=1",
        "--name=t",
        "--size=64k",
    ]);
    one_error_line(&o, "--set of the estimates table");
    assert!(text(&o.stderr).contains("estimates are declared in the preset's [estimates] table"));
    let _ = std::fs::remove_dir_all(&dir);
}
