//! The golden corpus: runs that cover every driver, every device preset, buffered and
//! direct I/O, every fio output format and log, `--blktrace`, `--trace` and the other
//! front ends, each compared byte for byte with the files committed under
//! `tests/data/golden/` (the list and its rules: `tests/data/golden/cases.txt`). A
//! change that moves the code without meaning to move the model (the driver layers of
//! issue 31) must leave every one of them unchanged.
//!
//! `FLASHPATH_BLESS=1 cargo test -p flashpath-cli --test golden_runs` rewrites the
//! golden files; only for a change meant to move outputs, said in its commit.
//! `FLASHPATH_GOLDEN_BIN=path/to/flashpath` checks another build of the binary (the
//! profile-guided one of `scripts/pgo.sh`) against them.

mod common;

use common::scratch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (name, arguments) of each case in cases.txt.
fn cases() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(golden_dir().join("cases.txt")).unwrap();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, args) = line
            .split_once('|')
            .unwrap_or_else(|| panic!("cases.txt:{}: no '|' after the name", i + 1));
        let name = name.trim().to_string();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "cases.txt:{}: the name '{name}' is not a plain file name",
            i + 1
        );
        assert!(
            out.iter().all(|(n, _)| *n != name),
            "cases.txt:{}: '{name}' twice",
            i + 1
        );
        out.push((name, args.split_whitespace().map(String::from).collect()));
    }
    out
}

/// Every file under `dir`, by its path relative to `dir` ('/'-separated), with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out
}

/// The binary under test: this build's, or `FLASHPATH_GOLDEN_BIN` (CI checks the
/// profile-guided build of `scripts/pgo.sh` against the corpus this way).
fn binary() -> PathBuf {
    std::env::var_os("FLASHPATH_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_flashpath")))
}

/// Runs one case in an empty directory: its outputs as files (`stdout`, `stderr`,
/// `status`, and every file the run wrote under `files/`).
fn run_case(name: &str, args: &[String]) -> BTreeMap<String, Vec<u8>> {
    let dir = scratch(&format!("golden-{name}"));
    let root = repo_root();
    let mut copied = Vec::new();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a.starts_with("jobs/") && root.join(a).is_file() {
                let base = Path::new(a)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                std::fs::copy(root.join(a), dir.join(&base)).unwrap();
                copied.push(base.clone());
                base
            } else {
                a.clone()
            }
        })
        .collect();
    let o = Command::new(binary())
        .args(&args)
        .current_dir(&dir)
        .output()
        .expect("run flashpath");
    let mut out = BTreeMap::new();
    for (rel, bytes) in files(&dir) {
        if !copied.contains(&rel) {
            out.insert(format!("files/{rel}"), bytes);
        }
    }
    out.insert("stdout".into(), o.stdout);
    out.insert("stderr".into(), o.stderr);
    out.insert(
        "status".into(),
        format!("{}\n", o.status.code().unwrap_or(-1)).into_bytes(),
    );
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// Where two outputs first differ, for the failure message.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    match (std::str::from_utf8(want), std::str::from_utf8(got)) {
        (Ok(w), Ok(g)) => {
            for (i, (a, b)) in w.lines().zip(g.lines()).enumerate() {
                if a != b {
                    return format!("line {}:\n  golden: {a}\n  now:    {b}", i + 1);
                }
            }
            format!(
                "{} lines golden, {} now",
                w.lines().count(),
                g.lines().count()
            )
        }
        _ => {
            let at = want
                .iter()
                .zip(got)
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len()));
            format!("byte {at} ({} bytes golden, {} now)", want.len(), got.len())
        }
    }
}

#[test]
fn every_golden_run_is_byte_identical() {
    let bless = std::env::var_os("FLASHPATH_BLESS").is_some();
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus has {} runs", cases.len());
    let mut failures = Vec::new();
    for (name, args) in &cases {
        let got = run_case(name, args);
        let gdir = golden_dir().join(name);
        if bless {
            let _ = std::fs::remove_dir_all(&gdir);
            for (rel, bytes) in &got {
                let p = gdir.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
            continue;
        }
        let want = files(&gdir);
        if want.is_empty() {
            failures.push(format!("{name}: no golden files (bless to create them)"));
            continue;
        }
        let names: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
        for rel in names {
            match (want.get(rel), got.get(rel)) {
                (Some(w), Some(g)) if w == g => {}
                (Some(w), Some(g)) => failures.push(format!(
                    "{name}/{rel} differs at {}",
                    first_difference(w, g)
                )),
                (Some(_), None) => failures.push(format!("{name}/{rel}: not written now")),
                (None, Some(_)) => failures.push(format!("{name}/{rel}: new, not golden")),
                (None, None) => unreachable!(),
            }
        }
    }
    // Golden directories no case names any more.
    if !bless {
        for e in std::fs::read_dir(golden_dir()).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() && !cases.iter().any(|(c, _)| *c == n) {
                failures.push(format!("{n}: golden files of no case"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
