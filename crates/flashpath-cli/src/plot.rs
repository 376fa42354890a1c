//! `--plot FILE` of `compare` and `validate`: the command's JSON drawn by the Python
//! package's `flashpath.plot` (matplotlib), run as `python3 -m flashpath.plot KIND
//! INPUT.json FILE`. `FLASHPATH_PYTHON` names another interpreter. The chart's format
//! is the file's suffix: .svg, .png or .pdf.

use anyhow::{bail, Context, Result};
use std::process::Command;

/// The formats a chart is written in.
const FORMATS: [&str; 3] = ["svg", "png", "pdf"];

/// Refuses a chart file whose format is not drawn, before anything runs.
pub fn check_target(path: &str) -> Result<()> {
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext {
        Some(e) if FORMATS.contains(&e.as_str()) => Ok(()),
        _ => bail!("--plot {path}: the chart's format is its suffix: .svg, .png or .pdf"),
    }
}

/// Draws `kind` (compare, validate) from the command's `json` into `path`.
pub fn draw(kind: &str, json: &str, path: &str) -> Result<()> {
    let input =
        std::env::temp_dir().join(format!("flashpath-plot-{}-{kind}.json", std::process::id()));
    std::fs::write(&input, json)
        .with_context(|| format!("--plot {path}: cannot write {}", input.display()))?;
    let python = std::env::var("FLASHPATH_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args(["-m", "flashpath.plot", kind])
        .arg(&input)
        .arg(path)
        .output();
    let _ = std::fs::remove_file(&input);
    let out = out.with_context(|| {
        format!("--plot {path}: cannot run {python} (charts need Python with the flashpath package: pip install './python[plot]')")
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!(
            "--plot {path}: {python} -m flashpath.plot failed ({last}); charts need the \
             flashpath Python package with matplotlib: pip install './python[plot]'"
        );
    }
    Ok(())
}
