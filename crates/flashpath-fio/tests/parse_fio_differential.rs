//! Randomised differential test against fio 3.33: random core options with random
//! values built from numbers, suffixes, separators and the option's own words; fio
//! and our parser must accept/reject alike and convert the same numbers.
//!
//! The suite runs a few cases per test so the check cannot rot; a longer run:
//! `FP_DIFF_SEED=7 FP_DIFF_CASES=500 cargo test -p flashpath-fio --test parse_fio_differential`

use std::process::Command;

use flashpath_fio::parse::{self, table, value, Env};

/// Cases per test when FP_DIFF_CASES is not set: enough to exercise the comparison on
/// every run, few enough to keep the suite fast (each case runs fio once).
const DEFAULT_CASES: usize = 40;

/// (seed, cases) from FP_DIFF_SEED / FP_DIFF_CASES, or None (with a note) without fio.
fn setup() -> Option<(u64, usize)> {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: fio not installed; skipped");
        return None;
    }
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    let seed = env("FP_DIFF_SEED").unwrap_or(1);
    let n = env("FP_DIFF_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    Some((seed, n))
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "0",
    "1",
    "2",
    "4",
    "7",
    "16",
    "100",
    "101",
    "4096",
    "0x10",
    "-1",
    "-4",
    "1.5",
    "k",
    "K",
    "m",
    "g",
    "t",
    "p",
    "KiB",
    "MiB",
    "ki",
    "b",
    "%",
    "z",
    "s",
    "ms",
    "us",
    "m",
    "h",
    "d",
    "sec",
    ",",
    ",",
    ":",
    "-",
    "/",
    " ",
    "x",
    "abc",
    "e3",
    "99999999999999999999",
];

fn value_for(rng: &mut XorShift, def: &table::OptDef) -> String {
    let mut v = String::new();
    if !def.posvals.is_empty() && rng.below(2) == 0 {
        v.push_str(&def.posvals[rng.below(def.posvals.len())]);
    }
    for _ in 0..rng.below(5) {
        v.push_str(PIECES[rng.below(PIECES.len())]);
    }
    v
}

#[test]
fn random_values_match_fio() {
    let Some((seed, n)) = setup() else {
        return;
    };
    eprintln!("seed {seed}, {n} cases");
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let core = &table::table().core;
    let dir = std::env::temp_dir().join(format!("flashpath-diff-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut env = Env::fixed();
    env.cwd = dir.clone();
    let mut bad = Vec::new();
    for i in 0..n {
        let engine_opts = &table::table().engine;
        let def = if rng.below(4) == 0 {
            &engine_opts[rng.below(engine_opts.len())]
        } else {
            &core[rng.below(core.len())]
        };
        // Options whose callbacks consult the system or start profiles; numjobs,
        // whose absurd values parse-only lets through (a run fails).
        if matches!(
            def.name.as_str(),
            "numjobs"
                | "profile"
                | "cpus_allowed"
                | "cpumask"
                | "numa_cpu_nodes"
                | "numa_mem_policy"
                | "exec_prerun"
                | "exec_postrun"
                | "include"
                | "verify_async_cpus"
                | "log_compression_cpus"
                | "gtod_cpu"
                | "ioscheduler"
                | "cgroup"
        ) {
            continue;
        }
        let line = if rng.below(8) == 0 {
            def.name.clone()
        } else {
            format!("{}={}", def.name, value_for(&mut rng, def))
        };
        let text = match &def.engine {
            Some(e) => format!("[job]\nioengine={e}\n{line}\n"),
            None => format!("[job]\n{line}\n"),
        };
        let path = dir.join(format!("d{i}.fio"));
        std::fs::write(&path, &text).expect("write");
        let out = Command::new("fio")
            .args(["--debug=parse", "--parse-only"])
            .arg(&path)
            .current_dir(&dir)
            .output()
            .expect("fio runs");
        let fio_ok = out.status.success();
        let ours = parse::parse_job_file_text(&text, &path, &env);
        if fio_ok != ours.is_ok() {
            bad.push(format!(
                "{line:?}: fio {} / ours {}",
                if fio_ok { "accepts" } else { "rejects" },
                match &ours {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("rejects: {e}"),
                }
            ));
            continue;
        }
        // Compare converted numbers (the `out=` lines) for numeric options.
        if matches!(def.ty, table::OptType::Str | table::OptType::StrStore) {
            continue;
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        // The `out=` lines after this option's handle_option line (loading an
        // engine prints its defaults first).
        let marker = format!(" handle_option={}, ptr=", def.name);
        let fio_outs: Vec<String> = match stderr.rfind(&marker) {
            Some(p) => stderr[p..]
                .lines()
                .skip(1)
                .take_while(|l| !l.contains(" handle_option="))
                .filter_map(|l| {
                    let p = l.find("out=")?;
                    let head = &l[..p];
                    if head.contains("ret=") && !head.contains("ret=0") {
                        return None;
                    }
                    Some(l[p + 4..].trim().to_string())
                })
                .collect(),
            None => Vec::new(),
        };
        let v = line.split_once('=').map(|(_, v)| v);
        if let Ok(c) = value::convert(def, v, 1024) {
            if c.outs != fio_outs {
                bad.push(format!("{line:?}: fio out={fio_outs:?} ours={:?}", c.outs));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        bad.is_empty(),
        "{} differences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

const ARGS: &[&str] = &[
    "--name=a",
    "--name=b",
    "--name=global",
    "--name",
    "a",
    "-name=c",
    "--bs=8k",
    "--bs",
    "8k",
    "--bs=",
    "--blocksize=4k",
    "--block=4k",
    "--ioengine=libaio",
    "--ioengine=nbd",
    "--ioengine=psync",
    "--ioengine=foo",
    "--uri=x",
    "--cmdprio_percentage=5",
    "--iodepth=4",
    "--io=4",
    "--iod=8",
    "--rw=randread",
    "--rw=rw:4",
    "--readwrite=write",
    "--direct=1",
    "--direct",
    "--time_based",
    "--time_based=1",
    "--stonewall",
    "--runtime=1s",
    "--output=/tmp/flashpath-x",
    "--out=x",
    "--output-format=json",
    "--output-format=json+,terse",
    "--output-format=bad",
    "--minimal",
    "--terse-version=3",
    "--terse-version=9",
    "--parse-only",
    "--section=a",
    "--section=global",
    "--eta=never",
    "--debug=parse",
    "--foo=1",
    "-x",
    "--",
    "j.fio",
    "missing.fio",
    "--size=1m",
    "--numjobs=2",
    "--threads=1",
    "--rwmixcycle=1",
    "--verifysort=1",
    "--description=a b",
    "--bssplit=4k/50:8k/",
    "--random_distribution=zipf:1",
    "--percentile_list=1:2",
    "-b",
    "-m",
    "/tmp/flashpath-y",
    "-F",
    "json",
    "-xa",
    "-k",
    "1000",
    "-g",
    "-q",
    "-bm",
    "-P",
    "-V",
    "4",
    "--append-terse",
    "--iodepth_batch_c=2",
    "--io_l=1m",
    "-rw=read",
    "-direct=1",
    "-r",
    "-w",
    "-Fterse",
    "-V9",
    "--read",
    "-nrfiles=2",
];

/// Random argument lists: fio and our parser accept/reject alike. (`-o` is left out:
/// fio opens the output file while parsing, and a value such as `--bs=4k/8k` is a
/// path that cannot be created.)
#[test]
fn random_command_lines_match_fio() {
    let Some((seed, n)) = setup() else {
        return;
    };
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 3);
    let dir = std::env::temp_dir().join(format!("flashpath-cdiff-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    std::fs::write(dir.join("j.fio"), "[global]\nbs=8k\n[a]\n[b]\n").expect("write");
    let mut env = Env::fixed();
    env.cwd = dir.clone();
    let mut bad = Vec::new();
    for _ in 0..n {
        let args: Vec<String> = (0..1 + rng.below(6))
            .map(|_| ARGS[rng.below(ARGS.len())].to_string())
            .collect();
        let out = Command::new("fio")
            .arg("--parse-only")
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("fio runs");
        let ours = parse::parse_command_line(&args, &env);
        if out.status.success() != ours.is_ok() {
            bad.push(format!(
                "{args:?}: fio {} / ours {}",
                if out.status.success() {
                    "accepts"
                } else {
                    "rejects"
                },
                match &ours {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("rejects: {e}"),
                }
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        bad.is_empty(),
        "{} differences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
