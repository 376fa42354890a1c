//! Bad-input corpus: every `tests/data/parse/bad/NAME.fio` (a job file) and
//! `NAME.args` (one argument a line) must fail with the one-line error in `NAME.err`,
//! without panicking. When fio 3.33 is installed, fio must reject each input too,
//! except the few cases listed in `STRICTER_THAN_PARSE_ONLY`.
//!
//! Regenerate the `.err` files after an intended message change with
//! `BLESS=1 cargo test -p flashpath-fio --test parse_bad_inputs` and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashpath_fio::parse::{self, Env};

/// Inputs `fio --parse-only` lets through (exit status 0) but that we reject, loudly:
/// - parse-only skips the `rw` suffix callback (a real run fails on `read:abc`);
/// - a failing `include` prints "Error 1 while parsing include file" but fio then
///   overwrites the error code and keeps the job with the options read so far (an
///   include loop recurses until "Too many open files");
/// - `numjobs=0` makes fio's clone loop wrap around until it runs out of job slots.
const STRICTER_THAN_PARSE_ONLY: &[&str] = &[
    "rw_bad_postfix.fio",
    "include_loop.fio",
    "include_missing.fio",
    "include_new_section.fio",
    "numjobs_zero.fio",
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/parse/bad")
}

fn env() -> Env {
    let mut e = Env::fixed();
    e.cwd = dir();
    e
}

fn fio_rejects(name: &str) -> Option<bool> {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return None;
    }
    let args: Vec<String> = if let Some(stem) = name.strip_suffix(".args") {
        let text = std::fs::read_to_string(dir().join(name)).ok()?;
        let _ = stem;
        text.lines().map(str::to_string).collect()
    } else {
        vec![name.to_string()]
    };
    let out = Command::new("fio")
        .arg("--parse-only")
        .args(&args)
        .current_dir(dir())
        .output()
        .ok()?;
    Some(!out.status.success())
}

#[test]
fn every_bad_input_fails_with_its_message() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("corpus dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fio") || n.ends_with(".args"))
        .collect();
    names.sort();
    assert!(names.len() >= 30, "corpus has only {} inputs", names.len());
    let env = env();
    let mut problems = Vec::new();
    for name in &names {
        let result = if name.ends_with(".args") {
            let text = std::fs::read_to_string(dir().join(name)).expect("read args");
            let args: Vec<String> = text.lines().map(str::to_string).collect();
            parse::parse_command_line(&args, &env).map(|i| i.jobs.len())
        } else {
            parse::parse_job_file(Path::new(name), &env).map(|j| j.len())
        };
        let err_path = dir().join(format!("{name}.err"));
        match result {
            Ok(n) => problems.push(format!("{name}: accepted ({n} jobs)")),
            Err(e) => {
                let got = e.to_string();
                if got.contains('\n') {
                    problems.push(format!("{name}: error is not one line: {got:?}"));
                }
                if bless {
                    std::fs::write(&err_path, format!("{got}\n")).expect("write .err");
                } else {
                    let want = std::fs::read_to_string(&err_path).unwrap_or_default();
                    if want.trim_end() != got {
                        problems.push(format!("{name}:\n  want {}\n  got  {got}", want.trim_end()));
                    }
                }
            }
        }
        if let Some(rejects) = fio_rejects(name) {
            let stricter = STRICTER_THAN_PARSE_ONLY.contains(&name.as_str());
            if rejects == stricter {
                problems.push(format!(
                    "{name}: fio --parse-only {} it",
                    if rejects { "also rejects" } else { "accepts" }
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
