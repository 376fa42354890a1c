//! Helpers shared by the CLI integration tests that run the binary and the real
//! blktrace tools (`mod common;` in each test file; not every file uses every helper).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `flashpath` binary.
pub fn flashpath(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(args)
        .output()
        .expect("run flashpath")
}

/// Stdout of a run that must succeed (its stderr in the failure message).
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashpath-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether a tool (blkparse, btt) is installed.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("-V").output().is_ok()
}

/// btt's "All Devices" table: (AVG in ns, N) of a row.
pub fn btt_row(text: &str, row: &str) -> (f64, u64) {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(row))
        .unwrap_or_else(|| panic!("no {row} row in btt's output:\n{text}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[2].parse::<f64>().unwrap() * 1e9, f[4].parse().unwrap())
}
