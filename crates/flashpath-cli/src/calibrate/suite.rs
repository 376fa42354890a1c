//! The standard measurement suite: the fio jobs whose results `calibrate` fits best
//! from, run on a real board with the real fio (`--measure`), or written out as job
//! files (`--write-jobs`) to run anywhere — on the board by hand, or in flashpath.
//!
//! Sequential 128 KiB and 512 KiB, random 4 KiB at queue depth 1 (psync) and 32
//! (libaio), each read and write, over a small range (where a device's map cache
//! holds the whole map) and a large one; and one 1 MiB random write run for its
//! latency percentiles (garbage collection and housekeeping show in its tail). All
//! O_DIRECT, so the page cache is not measured.

use crate::run;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// One job of the suite.
pub struct SuiteJob {
    pub name: String,
    rw: &'static str,
    bs: &'static str,
    iodepth: u32,
    large: bool,
    /// Bytes moved, before `--scale`.
    io: u64,
}

impl SuiteJob {
    pub fn writes(&self) -> bool {
        self.rw.contains("write")
    }
}

const MIB: u64 = 1 << 20;

/// The standard suite's jobs, in the order they run.
pub fn standard() -> Vec<SuiteJob> {
    let mut v = Vec::new();
    for (rw, dir) in [("read", "read"), ("write", "write")] {
        for (bs, io) in [("128k", 128 * MIB), ("512k", 128 * MIB)] {
            for large in [false, true] {
                v.push(SuiteJob {
                    name: format!("seq-{dir}-{bs}-{}", if large { "large" } else { "small" }),
                    rw,
                    bs,
                    iodepth: 1,
                    large,
                    io,
                });
            }
        }
    }
    for (rw, dir) in [("randread", "read"), ("randwrite", "write")] {
        for qd in [1, 32] {
            for large in [false, true] {
                v.push(SuiteJob {
                    name: format!(
                        "rand-{dir}-4k-qd{qd}-{}",
                        if large { "large" } else { "small" }
                    ),
                    rw,
                    bs: "4k",
                    iodepth: qd,
                    large,
                    io: 64 * MIB,
                });
            }
        }
    }
    v.push(SuiteJob {
        name: "rand-write-1m-large".into(),
        rw: "randwrite",
        bs: "1m",
        iodepth: 1,
        large: true,
        io: 512 * MIB,
    });
    v
}

/// Where the suite runs and how much it moves.
pub struct Plan {
    pub filename: String,
    pub small: u64,
    pub large: u64,
    pub scale: f64,
}

/// A suite job as a fio job file.
pub fn job_text(j: &SuiteJob, p: &Plan) -> String {
    let size = if j.large { p.large } else { p.small };
    let bs =
        flashpath_core::config::units::parse_bytes(&j.bs.replace('k', "KiB").replace('m', "MiB"))
            .unwrap_or(4096);
    let io = ((j.io as f64 * p.scale) as u64).max(bs * 8) / bs * bs;
    let engine = if j.iodepth > 1 { "libaio" } else { "psync" };
    format!(
        "; flashpath calibrate's standard suite: {name}\n[global]\nfilename={f}\ndirect=1\nioengine={engine}\niodepth={qd}\nsize={size}\nio_size={io}\n\n[{name}]\nrw={rw}\nbs={bs}\n",
        name = j.name,
        f = p.filename,
        qd = j.iodepth,
        rw = j.rw,
        bs = j.bs,
    )
}

fn size_arg(k: &str, v: &str) -> Result<u64> {
    flashpath_core::config::units::parse_bytes(v)
        .ok()
        .filter(|&b| b >= MIB && b % 4096 == 0)
        .ok_or_else(|| {
            anyhow!(
                "{k} {v}: expected a size of at least 1MiB, a multiple of 4KiB (e.g. 64MiB, 4GiB)"
            )
        })
}

/// The size of a block device or regular file, and whether it is a block device.
fn target_size(path: &str) -> Result<(u64, bool)> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::FileTypeExt;
    let md = std::fs::metadata(path).with_context(|| format!("--measure {path}"))?;
    let ft = md.file_type();
    if ft.is_block_device() {
        let mut f = std::fs::File::open(path)
            .with_context(|| format!("--measure {path}: cannot open the device"))?;
        let n = f
            .seek(SeekFrom::End(0))
            .with_context(|| format!("--measure {path}: cannot find its size"))?;
        Ok((n, true))
    } else if ft.is_file() {
        Ok((md.len(), false))
    } else {
        bail!("--measure {path}: not a block device or a regular file")
    }
}

/// `flashpath calibrate --measure PATH --suite standard --out-dir DIR` and
/// `flashpath calibrate --suite standard --write-jobs DIR [--filename PATH]`.
pub fn command(args: &[String]) -> Result<()> {
    let mut measure: Option<String> = None;
    let mut suite: Option<String> = None;
    let mut out_dir: Option<String> = None;
    let mut write_jobs: Option<String> = None;
    let mut filename: Option<String> = None;
    let mut small: Option<u64> = None;
    let mut large: Option<u64> = None;
    let mut scale = 1.0;
    let mut allow_writes = false;
    let mut fio = "fio".to_string();
    let mut i = 0;
    while i < args.len() {
        let mut take = |k: &str| run::option_value(args, &mut i, k);
        if let Some(v) = take("--measure")? {
            measure = Some(v);
        } else if let Some(v) = take("--suite")? {
            suite = Some(v);
        } else if let Some(v) = take("--out-dir")? {
            out_dir = Some(v);
        } else if let Some(v) = take("--write-jobs")? {
            write_jobs = Some(v);
        } else if let Some(v) = take("--filename")? {
            filename = Some(v);
        } else if let Some(v) = take("--small")? {
            small = Some(size_arg("--small", &v)?);
        } else if let Some(v) = take("--large")? {
            large = Some(size_arg("--large", &v)?);
        } else if let Some(v) = take("--scale")? {
            scale = v
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s <= 100.0)
                .ok_or_else(|| anyhow!("--scale {v}: expected a factor above 0, at most 100"))?;
        } else if let Some(v) = take("--fio")? {
            fio = v;
        } else if args[i] == "--allow-writes" {
            allow_writes = true;
        } else {
            bail!(
                "calibrate --measure/--suite: unexpected '{}' (flashpath calibrate --help)",
                args[i]
            );
        }
        i += 1;
    }
    match suite.as_deref() {
        Some("standard") => {}
        Some(s) => bail!("--suite {s}: the suite is 'standard'"),
        None => bail!("calibrate --measure needs --suite standard"),
    }
    let jobs = standard();
    let small = small.unwrap_or(64 * MIB);
    match (measure, write_jobs) {
        (Some(_), Some(_)) => {
            bail!("calibrate: --measure runs the suite, --write-jobs only writes it: one of them")
        }
        (None, None) => bail!(
            "calibrate --suite standard: give --measure PATH (run it with fio) or --write-jobs DIR"
        ),
        (None, Some(dir)) => {
            let plan = Plan {
                filename: filename.unwrap_or_else(|| "/dev/mmcblk0".into()),
                small,
                large: large.unwrap_or(4096 * MIB),
                scale,
            };
            check_plan(&plan)?;
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
            for j in &jobs {
                let p = dir.join(format!("{}.fio", j.name));
                std::fs::write(&p, job_text(j, &plan))
                    .with_context(|| format!("{}: cannot write", p.display()))?;
            }
            crate::emit(&format!(
                "wrote {} fio job files of the standard suite to {} (filename={}, small range {}, large {}); run each with fio --output-format=json and give the JSON files to flashpath calibrate\n",
                jobs.len(),
                dir.display(),
                plan.filename,
                run::progress::bytes(plan.small),
                run::progress::bytes(plan.large)
            ))
        }
        (Some(path), None) => {
            if filename.is_some() {
                bail!("--filename is for --write-jobs; --measure PATH names the target");
            }
            let dir = PathBuf::from(out_dir.ok_or_else(|| {
                anyhow!("calibrate --measure needs --out-dir DIR (where the JSON files go)")
            })?);
            measure_with_fio(&path, &dir, &jobs, small, large, scale, allow_writes, &fio)
        }
    }
}

fn check_plan(p: &Plan) -> Result<()> {
    if p.large < p.small * 2 {
        bail!(
            "the large range ({}) must be at least twice the small one ({}): the two ranges stand for map-cache hits and misses",
            run::progress::bytes(p.large),
            run::progress::bytes(p.small)
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn measure_with_fio(
    path: &str,
    dir: &Path,
    jobs: &[SuiteJob],
    small: u64,
    large: Option<u64>,
    scale: f64,
    allow_writes: bool,
    fio: &str,
) -> Result<()> {
    let (size, block) = match target_size(path) {
        Ok(x) => x,
        // A regular file that does not exist yet: fio creates it (a write).
        Err(_) if !Path::new(path).exists() => (0, false),
        Err(e) => return Err(e),
    };
    let large = match large {
        Some(l) => l,
        None if block || size > 0 => (size / 4096 * 4096).min(4096 * MIB),
        None => 4096 * MIB,
    };
    let plan = Plan {
        filename: path.to_string(),
        small,
        large,
        scale,
    };
    check_plan(&plan)?;
    if block && large > size {
        bail!(
            "--measure {path}: the large range {} is beyond the device's {}",
            run::progress::bytes(large),
            run::progress::bytes(size)
        );
    }
    if !block && size < large && !allow_writes {
        bail!(
            "--measure {path}: a regular file of {} bytes: fio would lay it out to {} first, which writes it; give --allow-writes",
            size,
            run::progress::bytes(large)
        );
    }
    let version = std::process::Command::new(fio)
        .arg("--version")
        .output()
        .map_err(|e| anyhow!("--measure: cannot run '{fio}' ({e}): the suite runs the real fio (apt-get install fio)"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let runs: Vec<&SuiteJob> = jobs
        .iter()
        .filter(|j| allow_writes || !j.writes())
        .collect();
    let what = if block {
        "block device"
    } else {
        "regular file"
    };
    eprintln!(
        "calibrate: measuring {path} ({what} of {}) with {version}: {} jobs, small range {}, large {}",
        run::progress::bytes(size),
        runs.len(),
        run::progress::bytes(plan.small),
        run::progress::bytes(plan.large)
    );
    if allow_writes {
        eprintln!("calibrate: --allow-writes: the write jobs overwrite the first {} of {path}: its data there is lost", run::progress::bytes(plan.large));
    } else {
        eprintln!(
            "calibrate: reads only: the {} write jobs are skipped (--allow-writes runs them; they overwrite {path}'s data)",
            jobs.len() - runs.len()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    for (k, j) in runs.iter().enumerate() {
        let job = dir.join(format!("{}.fio", j.name));
        let json = dir.join(format!("{}.json", j.name));
        std::fs::write(&job, job_text(j, &plan))
            .with_context(|| format!("{}: cannot write", job.display()))?;
        eprintln!("calibrate: [{}/{}] {}", k + 1, runs.len(), j.name);
        let out = std::process::Command::new(fio)
            .arg("--output-format=json")
            .arg(format!("--output={}", json.display()))
            .arg(&job)
            .output()
            .map_err(|e| anyhow!("--measure: cannot run '{fio}': {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!(
                "--measure: fio failed on {} ({}): {}",
                j.name,
                out.status,
                err.lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("no message")
            );
        }
    }
    crate::emit(&format!(
        "wrote {} fio JSON files to {}: flashpath calibrate --device D --out my-board.toml {}/*.json\n",
        runs.len(),
        dir.display(),
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_suite() {
        let s = standard();
        assert_eq!(s.len(), 17);
        assert_eq!(s.iter().filter(|j| j.writes()).count(), 9);
        let t = job_text(
            &s[8],
            &Plan {
                filename: "/dev/x".into(),
                small: 64 * MIB,
                large: 4096 * MIB,
                scale: 1.0,
            },
        );
        assert!(
            t.contains("[rand-read-4k-qd1-small]\nrw=randread\nbs=4k\n"),
            "{t}"
        );
        assert!(
            t.contains("ioengine=psync\niodepth=1\nsize=67108864\nio_size=67108864\n"),
            "{t}"
        );
    }
}
