//! Every seed in `seeds/<target>/` through its target's code, on stable Rust, as
//! `cargo test` runs it in CI (`job_file`'s seeds are the repository's job files,
//! `jobs/*/*.fio`): the inputs fuzzing started from must still hold the targets'
//! checks: no panic, every error one line.
//! One test for all, in turn: the simulating targets move the process into a scratch
//! directory.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The entries of `dir` that `keep` takes, sorted (none if it does not exist).
fn entries(dir: &Path, keep: fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(list) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = list
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| keep(p))
        .collect();
    v.sort();
    v
}

/// The seeds of target `name`.
fn seeds(name: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = entries(&root.join("seeds").join(name), Path::is_file);
    if name == "job_file" {
        for d in entries(&root.join("../jobs"), Path::is_dir) {
            v.extend(entries(&d, |f| f.extension().is_some_and(|x| x == "fio")));
        }
    }
    v
}

#[test]
fn every_seed_passes_its_target() {
    let mut failed = Vec::new();
    let mut ran = 0;
    for &(name, target) in flashpath_fuzz::targets::ALL {
        let inputs = seeds(name);
        assert!(!inputs.is_empty(), "{name}: no seeds");
        for f in inputs {
            let data = std::fs::read(&f).expect("a seed file");
            if catch_unwind(AssertUnwindSafe(|| target(&data))).is_err() {
                failed.push(f.display().to_string());
            }
            ran += 1;
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {ran} seeds failed: {failed:?}",
        failed.len()
    );
    eprintln!("{ran} seeds passed");
}
