//! Every seed in `seeds/<target>/` through its target's code, on stable Rust, as
//! `cargo test` runs it in CI (`job_file`'s seeds are the repository's job files,
//! `jobs/*/*.fio`): the inputs fuzzing started from must still hold the targets'
//! checks: no panic, every error one line.
//! One test for all, in turn: the simulating targets move the process into a scratch
//! directory.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The files in `dir`, sorted (none if it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// The seeds of target `name`.
fn seeds(name: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = files(&root.join("seeds").join(name));
    if name == "job_file" {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("../jobs"))
            .expect("the repository's jobs/")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            v.extend(
                files(&d)
                    .into_iter()
                    .filter(|f| f.extension().is_some_and(|x| x == "fio")),
            );
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
