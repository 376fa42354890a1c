//! Oracle test against the installed fio 3.33.
//!
//! 1. Every job file of /usr/share/doc/fio/examples: our parser accepts exactly the
//!    files `fio --parse-only` accepts; for accepted files the job sections match and
//!    every number fio converts (`fio --debug=parse`, the `out=` lines) is converted to
//!    the same value by our option table and value rules.
//! 2. Synthetic job files safe to run (`ioengine=null`, tiny sizes): jobs, clones and
//!    reporting groups match fio's JSON output.
//!
//! Skipped with a printed note when fio is not installed.

use std::collections::BTreeMap;

type OptMap = BTreeMap<String, String>;
use std::path::{Path, PathBuf};
use std::process::Command;

use flashpath_fio::parse::{self, table, value, Env};

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("fio-3.33")
        })
}

/// Variables some examples need, given to fio and to our parser alike.
fn vars() -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    for (k, val) in [
        ("unixsocket", "/tmp/flashpath-nbd.sock"),
        ("FIO_RW", "randread"),
        ("FIO_IODEPTH", "4"),
        ("FIO_BS", "4k"),
        ("FIO_DIR", "/tmp"),
        ("GPU_DEV_IDS", "0"),
        ("POOL", "pool"),
        ("CONT", "cont"),
        ("S3_KEY", "k"),
        ("S3_ID", "i"),
        ("SSE_KEY", "s"),
        ("STORAGE_CLASS", "c"),
        ("SWIFT_id", "x"),
    ] {
        v.insert(k.to_string(), val.to_string());
    }
    if let Ok(p) = std::env::var("PATH") {
        v.insert("PATH".to_string(), p);
    }
    v
}

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashpath-oracle-{tag}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn env_for(cwd: &Path) -> Env {
    let mut e = Env::fixed();
    e.vars = vars();
    e.cwd = cwd.to_path_buf();
    e
}

fn run_fio(args: &[&str], cwd: &Path) -> (bool, String) {
    let out = Command::new("fio")
        .args(args)
        .env_clear()
        .envs(vars())
        .current_dir(cwd)
        .output()
        .expect("fio runs");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// One `handle_option` record of `fio --debug=parse`.
#[derive(Debug)]
struct Record {
    name: String,
    ptr: Option<String>,
    outs: Vec<String>,
}

/// Sections and option records, per `Parsing section` header.
fn parse_debug(text: &str) -> (Vec<String>, Vec<(usize, Record)>) {
    let mut sections = Vec::new();
    let mut records: Vec<(usize, Record)> = Vec::new();
    for line in text.lines() {
        // "parse    12345 <message>"
        let Some(rest) = line.strip_prefix("parse") else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(sp) = rest.find(' ') else { continue };
        let msg = &rest[sp + 1..];
        if let Some(s) = msg.trim_start().strip_prefix("Parsing section [") {
            sections.push(s.strip_suffix(']').unwrap_or(s).to_string());
        } else if let Some(h) = msg.trim_start().strip_prefix("handle_option=") {
            let (name, ptr) = match h.find(", ptr=") {
                Some(p) => (&h[..p], &h[p + 6..]),
                None => continue,
            };
            records.push((
                sections.len(),
                Record {
                    name: name.to_string(),
                    ptr: if ptr == "(null)" {
                        None
                    } else {
                        Some(ptr.to_string())
                    },
                    outs: Vec::new(),
                },
            ));
        } else if let Some(p) = msg.find("out=") {
            let head = &msg[..p];
            if head.contains("ret=") && !head.contains("ret=0") {
                continue;
            }
            if let Some((_, r)) = records.last_mut() {
                r.outs.push(msg[p + 4..].trim().to_string());
            }
        }
    }
    (sections, records)
}

fn find_def(name: &str) -> Option<&'static table::OptDef> {
    table::find_core(name).or_else(|| {
        table::BUILTIN_ENGINES
            .iter()
            .find_map(|e| table::find_engine(e, name))
    })
}

#[test]
fn examples_match_fio_parse_only() {
    if !fio_available() {
        eprintln!("note: fio 3.33 not installed; oracle test skipped");
        return;
    }
    let Ok(dir) = std::fs::read_dir(EXAMPLES) else {
        eprintln!("note: {EXAMPLES} missing (apt-get install fio-examples); oracle test skipped");
        return;
    };
    let mut files: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    let cwd = scratch_dir("examples");
    let env = env_for(&cwd);
    let mut mismatches = Vec::new();
    let mut accepted = 0;
    let mut outs_checked = 0;
    for f in &files {
        let fs = f.to_string_lossy().into_owned();
        let (fio_ok, text) = run_fio(&["--debug=parse", "--parse-only", &fs], &cwd);
        let ours = parse::parse_command_line(std::slice::from_ref(&fs), &env);
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if fio_ok != ours.is_ok() {
            mismatches.push(format!(
                "{name}: fio {} / ours {}",
                if fio_ok { "accepts" } else { "rejects" },
                match &ours {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("rejects: {e}"),
                }
            ));
            continue;
        }
        let Ok(inv) = ours else { continue };
        accepted += 1;
        let (sections, records) = parse_debug(&text);
        let fio_jobs: Vec<&String> = sections
            .iter()
            .filter(|s| !s.starts_with("global"))
            .collect();
        let our_jobs: Vec<&String> = inv
            .jobs
            .iter()
            .filter(|j| j.clone_index == 0)
            .map(|j| &j.section)
            .collect();
        if fio_jobs != our_jobs {
            mismatches.push(format!(
                "{name}: sections fio {fio_jobs:?} ours {our_jobs:?}"
            ));
        }
        let mut kb = 1024;
        let mut last_section = usize::MAX;
        for (sec, r) in &records {
            if *sec != last_section {
                kb = 1024;
                last_section = *sec;
            }
            if r.name == "kb_base" && r.ptr.as_deref() == Some("1000") {
                kb = 1000;
            }
            let Some(def) = find_def(&r.name) else {
                mismatches.push(format!("{name}: fio option {} not in our table", r.name));
                continue;
            };
            if matches!(def.ty, table::OptType::StrStore | table::OptType::Str) {
                // fio prints stale numbers for some string options; only numbers count.
                continue;
            }
            let ours = value::convert(def, r.ptr.as_deref(), kb);
            let our_outs = match &ours {
                Ok(c) => c.outs.clone(),
                Err(_) => Vec::new(),
            };
            if our_outs != r.outs {
                mismatches.push(format!(
                    "{name}: {}={:?}: fio out={:?} ours={:?}",
                    r.name, r.ptr, r.outs, our_outs
                ));
            }
            outs_checked += r.outs.len();
        }
    }
    eprintln!(
        "oracle: {} example files, {} accepted by both, {} converted numbers compared",
        files.len(),
        accepted,
        outs_checked
    );
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        mismatches.is_empty(),
        "mismatches with fio:\n{}",
        mismatches.join("\n")
    );
    assert!(accepted >= 60, "only {accepted} examples accepted");
}

/// (jobname, groupid) of every job in fio's JSON output.
fn fio_json_jobs(args: &[&str], cwd: &Path) -> Option<Vec<(String, u64)>> {
    let mut full = vec!["--output-format=json"];
    full.extend_from_slice(args);
    let out = Command::new("fio")
        .args(&full)
        .env_clear()
        .envs(vars())
        .current_dir(cwd)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{')?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).ok()?;
    Some(
        v["jobs"]
            .as_array()?
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap_or("").to_string(),
                    j["groupid"].as_u64().unwrap_or(u64::MAX),
                )
            })
            .collect(),
    )
}

#[test]
fn synthetic_jobs_and_groups_match_fio_json() {
    if !fio_available() {
        eprintln!("note: fio 3.33 not installed; oracle test skipped");
        return;
    }
    let cwd = scratch_dir("groups");
    let env = env_for(&cwd);
    let head = "[global]\nioengine=null\nsize=64k\nbs=4k\n";
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "groups",
            vec![format!(
                "{head}[a]\nnumjobs=2\n[b]\nrw=write\n[c]\nstonewall\n[d]\nnew_group\nnumjobs=2\n[e]\nwait_for=c\n"
            )],
        ),
        (
            "global-name",
            vec![format!("{head}name=renamed\n[a]\n[b]\nstonewall\n")],
        ),
        (
            "two-files",
            vec![format!("{head}[a]\n[b]\n"), format!("{head}[c]\n[d]\nnew_group\n")],
        ),
        (
            "stonewall-first",
            vec![format!("{head}[a]\nstonewall\n[b]\nnew_group\n[c]\nnew_group\nnumjobs=3\n")],
        ),
        (
            "global-stonewall",
            vec![format!("{head}stonewall\n[a]\nnumjobs=2\n[b]\n[c]\n")],
        ),
    ];
    let mut mismatches = Vec::new();
    for (tag, files) in &cases {
        let mut paths = Vec::new();
        for (i, text) in files.iter().enumerate() {
            let p = cwd.join(format!("{tag}-{i}.fio"));
            std::fs::write(&p, text).expect("write job file");
            paths.push(p.to_string_lossy().into_owned());
        }
        let args: Vec<&str> = paths.iter().map(String::as_str).collect();
        let Some(fio) = fio_json_jobs(&args, &cwd) else {
            mismatches.push(format!("{tag}: fio produced no JSON"));
            continue;
        };
        let inv = match parse::parse_command_line(&paths, &env) {
            Ok(i) => i,
            Err(e) => {
                mismatches.push(format!("{tag}: ours failed: {e}"));
                continue;
            }
        };
        let ours: Vec<(String, u64)> = inv
            .jobs
            .iter()
            .map(|j| (j.name.clone(), u64::from(j.group_id)))
            .collect();
        if ours != fio {
            mismatches.push(format!("{tag}: fio {fio:?}\n   ours {ours:?}"));
        }
    }
    // The command-line form of the same thing.
    let cl = [
        "--ioengine=null",
        "--size=64k",
        "--name=a",
        "--numjobs=2",
        "--name=b",
        "--stonewall",
        "--name=c",
    ];
    if let Some(fio) = fio_json_jobs(&cl, &cwd) {
        let args: Vec<String> = cl.iter().map(|s| s.to_string()).collect();
        match parse::parse_command_line(&args, &env) {
            Ok(inv) => {
                let ours: Vec<(String, u64)> = inv
                    .jobs
                    .iter()
                    .map(|j| (j.name.clone(), u64::from(j.group_id)))
                    .collect();
                if ours != fio {
                    mismatches.push(format!("command line: fio {fio:?} ours {ours:?}"));
                }
            }
            Err(e) => mismatches.push(format!("command line: ours failed: {e}")),
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        mismatches.is_empty(),
        "mismatches with fio:\n{}",
        mismatches.join("\n")
    );
}

/// Single options with tricky values: accepted/rejected alike, and the same numbers.
#[test]
fn option_values_match_fio() {
    if !fio_available() {
        eprintln!("note: fio 3.33 not installed; oracle test skipped");
        return;
    }
    let cwd = scratch_dir("values");
    let env = env_for(&cwd);
    let cases: &[&str] = &[
        "bs=4096",
        "bs=4096b",
        "bs=4096B",
        "bs=0x1000",
        "bs=4k",
        "bs=4K",
        "bs=4kb",
        "bs=4KB",
        "bs=4kB",
        "bs=4ki",
        "bs=4KiB",
        "bs=4kib",
        "bs=1m",
        "bs=1mi",
        "bs=1MiB",
        "bs=1g",
        "bs=1GiB",
        "bs=1t",
        "bs=1.5m",
        "bs=4x",
        "bs=-4k",
        "bs=0",
        "bs=abc",
        "bs=",
        "bs",
        "bs=8k,32k",
        "bs=8k,32k,",
        "bs=,8k",
        "bs=,8k,",
        "bs=1-2",
        "bs=4k:8k",
        "bs=10x",
        "bs=99999999999999999999",
        "bs= 4k",
        "size = 1m",
        "size=1m",
        "size=50%",
        "size=101%",
        "size=5z",
        "size=az",
        "size=1p",
        "size=2t",
        "size=1e3",
        "offset=25%",
        "offset=1m",
        "offset_increment=10m",
        "io_size=64m",
        "filesize=1m-4m",
        "filesize=4m:1m",
        "runtime=10",
        "runtime=500ms",
        "runtime=250us",
        "runtime=2m",
        "runtime=1h",
        "runtime=1d",
        "runtime=10MS",
        "runtime=1.5s",
        "runtime=10sec",
        "runtime=abc",
        "timeout=5",
        "thinktime=100",
        "thinktime=1ms",
        "thinktime=1s",
        "thinktime_spin=10",
        "startdelay=1-3",
        "startdelay=1s-3s",
        "startdelay=2",
        "ramp_time=1",
        "latency_target=10ms",
        "max_latency=1s,2s",
        "direct=1",
        "direct=0",
        "direct=2",
        "direct=true",
        "direct=-1",
        "direct=1abc",
        "direct=2,1",
        "direct",
        "buffered=0",
        "time_based",
        "time_based=0",
        "time_based=2",
        "time_based=abc",
        "stonewall=1",
        "thread",
        "norandommap",
        "group_reporting",
        "rw=randread",
        "rw=randread:4",
        "rw=write:4k",
        "rw=read:-8k",
        "rw=readx",
        "rw=rw",
        "readwrite=randrw",
        "rw= read",
        "rwmixread=70",
        "rwmixread=101",
        "rwmixwrite=30",
        "iodepth=0",
        "iodepth=64",
        "iodepth_batch=8",
        "iodepth_batch_submit=4",
        "iodepth_batch_complete=2",
        "iodepth_low=4",
        "numjobs=4",
        "nice=5",
        "nice=-30",
        "nice=-5",
        "rate=1m",
        "rate=1m,2m",
        "rate=,500k",
        "rate_iops=1000",
        "rate_iops=100,200,300",
        "rate_min=1k",
        "ratemin=1k",
        "rate_iops_min=10",
        "bsrange=1k-4k",
        "bsrange=1k:4k,2k-8k",
        "bsrange=4k-1k",
        "bsrange=4k",
        "blocksize_range=1k-8k",
        "ba=4k",
        "blockalign=8k,16k",
        "bssplit=4k/50:8k/50",
        "bssplit=2k/50:4k/50,4k/90:8k/10",
        "bssplit=4k/60:8k/60",
        "bssplit=4k/50:8k/60:16k/:32k/",
        "bssplit=32k/",
        "bssplit=4k/0:8k/",
        "percentage_random=50",
        "percentage_random=50,20",
        "percentage_random=101",
        "random_distribution=zipf:1.2",
        "random_distribution=zipf:1",
        "random_distribution=pareto:0.5",
        "random_distribution=normal:5:0.5",
        "random_distribution=zoned:50/5:30/15:20/",
        "random_distribution=zoned:50/5",
        "random_distribution=zoned_abs:50/1m:50/2m",
        "random_distribution=random",
        "random_distribution=gauss",
        "percentile_list=1:5:99.9",
        "percentile_list=x",
        "percentile_list=101",
        "percentile_list=1:x",
        "percentile_list=99.5:abc:2",
        "clat_percentiles=0",
        "lat_percentiles=1",
        "unified_rw_reporting=mixed",
        "unified_rw_reporting=1",
        "unified_rw_reporting=yes",
        "sync=1",
        "sync=dsync",
        "sync=always",
        "fsync=16",
        "fdatasync=8",
        "end_fsync=1",
        "randseed=1234",
        "randseed=0x10",
        "randrepeat=0",
        "log_avg_msec=100",
        "log_avg_msec=1s",
        "write_bw_log",
        "write_bw_log=foo",
        "write_lat_log=lat",
        "write_iops_log=x",
        "write_hist_log=h",
        "log_hist_msec=100",
        "log_offset=1",
        "write_iolog=io.log",
        "read_iolog=io.log",
        "kb_base=1000",
        "kb_base=1023",
        "name=",
        "filename=/dev/null",
        "filename=a\\:b",
        "description=\"x\" y",
        "ioengine=libaio",
        "ioengine=foo",
        "ioengine=psync",
        "threads=1",
        "rwmixcycle=5",
        "verifysort=1",
        "cpus_allowed=0-1",
        "number_ios=0x10",
        "loops=3",
        "zonemode=zbd",
        "zonesize=256m",
        "trim_percentage=5",
        "verify=crc32c",
        "verify=foo",
        "cmdprio_percentage=5",
        "offset_align=4k",
        "nrfiles=2",
        "nr_files=2",
    ];
    let mut mismatches = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let text = format!("[job]\n{case}\n");
        let path = cwd.join(format!("v{n}.fio"));
        std::fs::write(&path, &text).expect("write");
        let ps = path.to_string_lossy().into_owned();
        let (fio_ok, out) = run_fio(&["--debug=parse", "--parse-only", &ps], &cwd);
        let ours = parse::parse_job_file_text(&text, &path, &env);
        if fio_ok != ours.is_ok() {
            mismatches.push(format!(
                "{case}: fio {} / ours {}",
                if fio_ok { "accepts" } else { "rejects" },
                match &ours {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("rejects: {e}"),
                }
            ));
            continue;
        }
        let (_, records) = parse_debug(&out);
        for (_, r) in &records {
            let Some(def) = find_def(&r.name) else {
                mismatches.push(format!("{case}: fio option {} not in our table", r.name));
                continue;
            };
            if matches!(def.ty, table::OptType::StrStore | table::OptType::Str) {
                continue;
            }
            let kb = if text.contains("kb_base=1000") {
                1000
            } else {
                1024
            };
            // Where both reject, fio still prints the numbers it read; skip those.
            let Ok(c) = value::convert(def, r.ptr.as_deref(), kb) else {
                continue;
            };
            let our_outs = c.outs;
            if our_outs != r.outs {
                mismatches.push(format!("{case}: fio out={:?} ours={:?}", r.outs, our_outs));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        mismatches.is_empty(),
        "mismatches with fio:\n{}",
        mismatches.join("\n")
    );
}

/// Command lines: accepted and rejected alike (`fio --parse-only`).
#[test]
fn command_lines_match_fio() {
    if !fio_available() {
        eprintln!("note: fio 3.33 not installed; oracle test skipped");
        return;
    }
    let cwd = scratch_dir("cmdline");
    std::fs::write(cwd.join("j.fio"), "[global]\nbs=8k\n[x]\n[y]\n").expect("write");
    let env = env_for(&cwd);
    let cases: &[&str] = &[
        "--name=a",
        "--name a --bs 8k",
        "-name=a -bs=4k",
        "--name=a --blocksize=8k",
        "--name=a --ioeng=libaio",
        "--name=a --io=libaio",
        "--out=/tmp/x --name=a",
        "--output=/tmp/x --name=a",
        "--name=a --direct --rw=read",
        "--name=a --stonewall --rw=read",
        "--name=a --uri=x --ioengine=nbd",
        "--name=a --ioengine=nbd --uri=x",
        "--ioengine=libaio --name=a --cmdprio_percentage=5",
        "--name=a --ioengine=libaio --name=b --ioengine=psync --cmdprio_percentage=5",
        "--name=a --foo=1",
        "--bs=4k j.fio",
        "j.fio --bs=4k",
        "--section=x j.fio",
        "--section=global j.fio",
        "--name=a --size=$mb_memory",
        "--name=a --description=a;b#c",
        "--name=a --bs",
        "--name=a --bs=",
        "--name=",
        "--name=a --readwrite",
        "--output-format=json,terse --name=a",
        "--output-format=json+ --name=a",
        "--output-format=foo --name=a",
        "--terse-version=6 --name=a",
        "--terse-version=2 --minimal --name=a",
        "--parse-only=1 --name=a",
        "--name=a --threads=1",
        "--name=a nonexist.fio",
        "--name=global --rw=randread --name=job1 --name=job2",
        "--eta=never --name=a",
        "--name=a --time_based --runtime=1",
        "--name=a --time_based=1",
        "--name=a -- j.fio",
        "--name=a --rw=randrw:4,x",
        "--status-interval=1 --readonly --name=a",
    ];
    let mut mismatches = Vec::new();
    for case in cases {
        let args: Vec<String> = case.split_whitespace().map(str::to_string).collect();
        let argv: Vec<&str> = std::iter::once("--parse-only")
            .chain(args.iter().map(String::as_str))
            .collect();
        let (fio_ok, _) = run_fio(&argv, &cwd);
        let ours = parse::parse_command_line(&args, &env);
        if fio_ok != ours.is_ok() {
            mismatches.push(format!(
                "{case}: fio {} / ours {}",
                if fio_ok { "accepts" } else { "rejects" },
                match &ours {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("rejects: {e}"),
                }
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        mismatches.is_empty(),
        "mismatches with fio:\n{}",
        mismatches.join("\n")
    );
}

fn json_options(v: &serde_json::Value) -> OptMap {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn our_options<'a>(opts: impl Iterator<Item = &'a parse::SetOption>) -> OptMap {
    // JSON objects keep the last value of a repeated key; bare flags are not listed.
    opts.filter_map(|o| o.value.clone().map(|v| (o.name.clone(), v)))
        .collect()
}

/// JSON "job options" / "global options" are the recorded options with values.
#[test]
fn recorded_options_match_fio_json() {
    if !fio_available() {
        eprintln!("note: fio 3.33 not installed; oracle test skipped");
        return;
    }
    let cwd = scratch_dir("jobopts");
    let env = env_for(&cwd);
    let file = "[global]\nioengine=null\nsize=64k\ndescription=g ${FIO_DIR} $FIO_DIR\n\
                [a]\nblocksize=8k\ntime_based\nthread=1\nnumjobs=2\nruntime=1\nbs=4k,8k\n\
                size=2*$pagesize\nrw=randread:4\nstonewall=1\nnew_group\n\
                [b]\nreadwrite=write\nnorandommap\nrate_iops=100,200\n";
    let path = cwd.join("jo.fio");
    std::fs::write(&path, file).expect("write");
    let ps = path.to_string_lossy().into_owned();
    let mut mismatches = Vec::new();
    let cases: Vec<Vec<String>> = vec![
        vec![ps.clone()],
        "--name=x --ioengine=null --size=64k --bs=8k --time_based --runtime=1 --thread \
         --name=y --blocksize=4k --rw=write --stonewall"
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    ];
    for args in &cases {
        let mut full = vec!["--output-format=json".to_string()];
        full.extend(args.iter().cloned());
        let out = Command::new("fio")
            .args(&full)
            .env_clear()
            .envs(vars())
            .current_dir(&cwd)
            .output()
            .expect("fio runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(start) = text.find('{') else {
            mismatches.push(format!("{args:?}: no JSON from fio"));
            continue;
        };
        let v: serde_json::Value = match serde_json::from_str(&text[start..]) {
            Ok(v) => v,
            Err(e) => {
                mismatches.push(format!("{args:?}: bad JSON from fio: {e}"));
                continue;
            }
        };
        let inv = match parse::parse_command_line(args, &env) {
            Ok(i) => i,
            Err(e) => {
                mismatches.push(format!("{args:?}: ours failed: {e}"));
                continue;
            }
        };
        let fio_global = json_options(&v["global options"]);
        let our_global = our_options(inv.global_options.iter());
        if fio_global != our_global {
            mismatches.push(format!(
                "global options: fio {fio_global:?}\n   ours {our_global:?}"
            ));
        }
        let fio_jobs: Vec<OptMap> = v["jobs"]
            .as_array()
            .map(|a| a.iter().map(|j| json_options(&j["job options"])).collect())
            .unwrap_or_default();
        let our_jobs: Vec<OptMap> = inv
            .jobs
            .iter()
            .map(|j| our_options(j.set_options.iter().filter(|o| !o.inherited)))
            .collect();
        if fio_jobs != our_jobs {
            mismatches.push(format!(
                "job options: fio {fio_jobs:?}\n   ours {our_jobs:?}"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&cwd);
    assert!(
        mismatches.is_empty(),
        "mismatches with fio:\n{}",
        mismatches.join("\n")
    );
}
