//! fio's own example jobs (Debian's fio-examples, /usr/share/doc/fio/examples) against
//! real fio's `--parse-only`:
//!
//! - a job file real fio refuses, flashpath refuses too, in one line;
//! - a job file whose engines all do block I/O (sync, psync, vsync, pvsync, pvsync2,
//!   libaio, io_uring, posixaio, null, or fio's default psync) passes `--parse-only`
//!   and runs (to its end: a job that fails as it would under fio, with `err=` in the
//!   report and fio's exit value, has run);
//! - any other is refused in one line naming its engine, or the option that needs what
//!   a simulated block device cannot give (a zoned device, NUMA).
//!
//! To keep the suite short the runs use a copy of each file whose times and sizes are
//! capped (runtime at 300 ms, size, filesize and io_size at 32 MiB, offset_increment at
//! 256 MiB, loops at 2; a file
//! that sets no size gets `size=32m` in a leading [global] section, where fio would use
//! the whole device); every option is left as it is, so every option path still runs.
mod common;

use common::{flashpath, have, scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

const EXAMPLES: &str = "/usr/share/doc/fio/examples";
const BLOCK_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "null",
];
/// What a refusal of a block-I/O example may name: what a simulated block device
/// cannot give.
const CANNOT_GIVE: &[&str] = &["zonemode=zbd", "numa_"];
/// Block-I/O examples flashpath does not run yet, each with the option its refusal
/// names: open work (issue 20). The test fails when one of them starts to run, so the
/// list only shrinks. Empty now: every block-I/O example runs.
const NOT_YET: &[(&str, &str)] = &[];

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(EXAMPLES)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "fio"));
    v.sort();
    v
}

/// The engines a job file names (fio's default psync when none).
fn engines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with(';') && !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("ioengine"))
        .filter_map(|l| l.trim_start().strip_prefix('='))
        .map(|e| e.trim().to_string())
        .collect();
    if v.is_empty() {
        v.push("psync".into());
    }
    v
}

/// A value in bytes or seconds as a job file writes it (`10G`, `900`, `200ms`).
fn number(v: &str, time: bool) -> Option<f64> {
    let v = v.trim().to_ascii_lowercase();
    let split = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    let m = if time {
        match unit {
            "" | "s" => 1.0,
            "ms" => 1e-3,
            "us" => 1e-6,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        }
    } else {
        match unit.trim_end_matches("ib").trim_end_matches('b') {
            "" => 1.0,
            "k" => 1024.0,
            "m" => 1048576.0,
            "g" => 1073741824.0,
            "t" => 1099511627776.0,
            _ => return None,
        }
    };
    Some(n * m)
}

/// The job file with its times and sizes capped (module doc).
fn capped(text: &str) -> String {
    let sized = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .any(|(k, _)| k.trim() == "size");
    let head = if sized { "" } else { "[global]\nsize=32m\n" };
    let body: String = text
        .lines()
        .map(|l| {
            let Some((k, v)) = l.split_once('=') else {
                return l.to_string();
            };
            let key = k.trim();
            match key {
                "runtime" if number(v, true).is_some_and(|s| s > 0.3) => "runtime=300ms".into(),
                "size" | "filesize" | "io_size"
                    if number(v, false).is_some_and(|b| b > 32.0 * 1048576.0) =>
                {
                    format!("{key}=32m")
                }
                "loops" if v.trim().parse::<u64>().is_ok_and(|n| n > 2) => "loops=2".into(),
                // Jobs spread over a drive (cross-stripe-verify's 30 x 124 GiB): each job
                // 256 MiB on from the last, room for a capped job's strided span.
                "offset_increment" if number(v, false).is_some_and(|b| b > 256.0 * 1048576.0) => {
                    "offset_increment=256m".into()
                }
                _ => l.to_string(),
            }
        })
        .map(|l| l + "\n")
        .collect();
    format!("{head}{body}")
}

fn one_line_error(o: &std::process::Output) -> Option<String> {
    if o.status.success() {
        return None;
    }
    let e = String::from_utf8_lossy(&o.stderr).trim_end().to_string();
    assert_eq!(e.lines().count(), 1, "not one line: {e}");
    Some(e)
}

fn parse_only(path: &Path) -> std::process::Output {
    flashpath(&["fio", "--parse-only", path.to_str().unwrap()])
}

#[test]
fn fio_example_jobs_run_or_are_refused_naming_why() {
    let all = examples();
    if all.is_empty() || !have("fio") {
        eprintln!("fio or fio-examples not installed: skipped");
        return;
    }
    let dir = scratch("examples");
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    let mut failures = Vec::new();
    for path in &all {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let fio_ok = Command::new("fio")
            .arg("--parse-only")
            .arg(path)
            .current_dir(&dir)
            .output()
            .unwrap()
            .status
            .success();
        if !fio_ok {
            if one_line_error(&parse_only(path)).is_none() {
                failures.push(format!("{name}: fio refuses it, flashpath accepts it"));
            }
            continue;
        }
        let engines = engines(&text);
        let block = engines.iter().all(|e| BLOCK_ENGINES.contains(&e.as_str()));
        // A block-I/O example is parsed as it runs, capped (its sizes may not fit the
        // simulated device whole).
        let copy = dir.join(&name);
        std::fs::write(&copy, capped(&text)).unwrap();
        let err = one_line_error(&parse_only(if block { &copy } else { path }));
        let gap = NOT_YET.iter().find(|(n, _)| *n == name);
        match (block, err) {
            (true, Some(e)) if gap.is_some() => {
                let (_, opt) = gap.unwrap();
                if !e.contains(opt) {
                    failures.push(format!("{name}: refused, but not for {opt}: {e}"));
                }
            }
            (true, None) if gap.is_some() => {
                failures.push(format!("{name}: now parses: take it off NOT_YET"));
            }
            (true, Some(e)) => {
                if CANNOT_GIVE.iter().any(|c| e.contains(c)) {
                    refused.push(name);
                } else {
                    failures.push(format!("{name}: refused: {e}"));
                }
            }
            (true, None) => {
                let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
                    .args(["fio", copy.to_str().unwrap()])
                    .current_dir(&dir)
                    .output()
                    .unwrap();
                // A run whose jobs end with an error (enospc-pressure's trims of a
                // file) reports them and exits with their count, as fio does.
                let out = String::from_utf8_lossy(&o.stdout);
                let job_errors = out.contains("Run status group") && out.contains(", err=");
                if job_errors && o.status.code().is_some_and(|c| c > 0) {
                    ran.push(name);
                    continue;
                }
                match one_line_error(&o) {
                    None => ran.push(name),
                    Some(e) => failures.push(format!("{name}: parses, but the run fails: {e}")),
                }
            }
            (false, Some(e)) => {
                let named = engines.iter().any(|x| e.contains(&format!("ioengine={x}")))
                    || CANNOT_GIVE.iter().any(|c| e.contains(c));
                if named {
                    refused.push(name);
                } else {
                    failures.push(format!("{name}: refused without naming its engine: {e}"));
                }
            }
            (false, None) => failures.push(format!(
                "{name}: engine {engines:?} accepted, though it does no block I/O"
            )),
        }
    }
    eprintln!(
        "fio examples: {} run, {} refused naming why: {refused:?}",
        ran.len(),
        refused.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(ran.len() >= 25, "{ran:?}");
}

#[test]
fn capping_keeps_every_option() {
    let t = "[j]\nruntime=900\nsize=10G\nfilesize=4k\nloops=500000\nrw=read\n";
    assert_eq!(
        capped(t),
        "[j]\nruntime=300ms\nsize=32m\nfilesize=4k\nloops=2\nrw=read\n"
    );
    assert_eq!(
        capped("[j]\nrw=read\n"),
        "[global]\nsize=32m\n[j]\nrw=read\n"
    );
    assert_eq!(number("200ms", true), Some(0.2));
    assert_eq!(number("1GiB", false), Some(1073741824.0));
    assert_eq!(
        engines("; ioengine=libaio\n[a]\nioengine = null\n"),
        vec!["null"]
    );
}
