//! The files fio's jobs do I/O to, laid out on the simulated device.
//!
//! fio's file names (init.c `add_job`, `make_filename`): a job's `filename` is a
//! `:`-separated list (`\:` a literal colon), each under `directory` when relative;
//! without it the job has `nrfiles` files named by `filename_format`
//! (`$jobname.$jobnum.$filenum` by default; `$jobnum` is the clone's subjob number).
//! A name under `/dev/` is the simulated block device itself. A job that names no file
//! and no directory runs on the device too (flashpath's convention since round 1;
//! fio would create `$jobname.$jobnum.0` in the current directory).
//!
//! Regular files are laid out before the run, as fio lays them out before its jobs
//! start (filesetup.c `extend_file`): each distinct name gets one contiguous extent, in
//! the order the jobs first name them, aligned to the 4 KiB ext4 block, from the
//! device's start, skipping the ext4 journal where the host has `[fs]`. A fresh ext4's
//! block allocator places files written one after another this way (an estimate: real
//! block groups and their metadata leave gaps that are not modelled). A file several
//! jobs name is one extent, as large as the largest of them needs.
//!
//! Sizes (fio's filesetup.c `setup_files`, checked against fio 3.33 on real files): a
//! file is `filesize` (a `lo-hi` range: each file drawn in it, block-aligned) or else
//! `size / nrfiles`; the job's `offset` applies within each file; each file's part of
//! the job is `size / nrfiles`, or the rest of the file past the offset when `size` is
//! unset or more than the files hold (so `size` is capped at the files' total); a file
//! too short for offset + part is extended.

use crate::jobmap::raw_value;
use anyhow::{bail, Result};
use flashpath_core::workload::{FileExtent, FileService};
use flashpath_fio::parse::Job;

/// ext4's block, the alignment of the files' extents.
const FS_BLOCK: u64 = 4096;

/// Where a job's I/O goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The block device (`offset..offset + size` of it).
    Device,
    /// Regular files: per file, its name, the bytes of it the job uses (`start..end`
    /// within the file) and the file's size.
    Files {
        files: Vec<JobFile>,
        service: FileService,
    },
}

/// One file of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFile {
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub file_size: u64,
}

/// fio's `\:`-escaped, `:`-separated filename list.
fn split_names(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                out.last_mut().unwrap().push(':');
            }
            ':' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

fn in_dir(dir: Option<&str>, name: &str) -> String {
    match dir {
        Some(d) if !name.starts_with('/') => format!("{}/{name}", d.trim_end_matches('/')),
        _ => name.to_string(),
    }
}

/// fio's make_filename: `$jobname`, `$jobnum`, `$filenum` (and `$clientuid`, empty for
/// a local run) replaced.
fn make_filename(format: &str, job: &Job, filenum: u32) -> String {
    format
        .replace("$jobname", &job.name)
        .replace("$jobnum", &job.clone_index.to_string())
        .replace("$filenum", &filenum.to_string())
        .replace("$clientuid", "")
}

/// fio's file_service_type: roundrobin[:N], sequential and random[:N] are modelled.
fn service(job: &Job) -> Result<FileService> {
    let Some(v) = raw_value(job, "file_service_type") else {
        return Ok(FileService::RoundRobin { switch_every: 1 });
    };
    let (kind, n) = match v.split_once(':') {
        Some((k, n)) => (k, Some(n)),
        None => (v, None),
    };
    let every = match n {
        None => 1,
        Some(n) => match n.trim().parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => bail!(
                "job '{}': file_service_type={v}: '{n}' is not a positive I/O count",
                job.name
            ),
        },
    };
    Ok(match kind {
        "roundrobin" => FileService::RoundRobin {
            switch_every: every,
        },
        "random" => FileService::Random {
            switch_every: every,
        },
        "sequential" if n.is_none() => FileService::Sequential,
        _ => bail!(
            "job '{}': file_service_type={v} is not modelled by flashpath (roundrobin[:N], sequential, random[:N] are)",
            job.name
        ),
    })
}

/// The names of the job's files, or `None` when it runs on the device.
fn names(job: &Job) -> Result<Option<Vec<String>>> {
    let o = &job.options;
    let dir = o.directory.as_deref();
    if dir.is_some_and(|d| d.contains(':') && !d.contains("\\:")) {
        bail!(
            "job '{}': directory={} names several directories, which flashpath does not model",
            job.name,
            dir.unwrap_or("")
        );
    }
    let names = match &o.filename {
        Some(f) => split_names(f)
            .iter()
            .map(|n| in_dir(dir, n))
            .collect::<Vec<_>>(),
        None if dir.is_none() && o.nrfiles <= 1 && raw_value(job, "filename_format").is_none() => {
            return Ok(None)
        }
        None => {
            let format = raw_value(job, "filename_format").unwrap_or("$jobname.$jobnum.$filenum");
            (0..o.nrfiles.max(1))
                .map(|i| in_dir(dir, &make_filename(format, job, i)))
                .collect()
        }
    };
    if names.is_empty() {
        bail!("job '{}': filename names no file", job.name);
    }
    let devices = names.iter().filter(|n| n.starts_with("/dev/")).count();
    if devices == names.len() {
        if names.iter().any(|n| n != &names[0]) {
            bail!(
                "job '{}': filename names several block devices ({}); the simulation has one",
                job.name,
                names.join(", ")
            );
        }
        return Ok(None);
    }
    if devices > 0 {
        bail!(
            "job '{}': filename mixes a block device with regular files ({}), which flashpath does not model",
            job.name,
            names.join(", ")
        );
    }
    Ok(Some(names))
}

/// What the job's I/O goes to, with its files' sizes: `size` is the job's `size` in
/// bytes if set; `seed` draws `filesize` ranges.
pub fn target(job: &Job, size: Option<u64>, offset: u64, seed: u64) -> Result<Target> {
    let Some(names) = names(job)? else {
        return Ok(Target::Device);
    };
    let o = &job.options;
    if let Some(n) = raw_value(job, "openfiles") {
        if n.trim()
            .parse::<u64>()
            .is_ok_and(|n| n < names.len() as u64)
        {
            bail!(
                "job '{}': openfiles={n} below the job's {} files (fio then closes and reopens files during the run) is not modelled by flashpath",
                job.name,
                names.len()
            );
        }
    }
    let align = o
        .bs_bytes
        .iter()
        .copied()
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(4096);
    let mut rng = flashpath_core::engine::SimRng::new(seed, 3);
    let n = names.len() as u64;
    let mut sizes = Vec::new();
    for _ in 0..n {
        sizes.push(match (o.filesize_bytes, size) {
            (Some((lo, hi)), _) => {
                let s = if hi > lo {
                    lo + rng.below(hi - lo + 1)
                } else {
                    lo
                };
                s / align * align
            }
            (None, Some(total)) => total / n / align * align,
            (None, None) => bail!(
                "job '{}': its files need a size (size= or filesize=)",
                job.name
            ),
        });
    }
    let total: u64 = sizes.iter().sum();
    let mut files = Vec::new();
    for (name, real) in names.into_iter().zip(sizes) {
        let part = match size {
            Some(s) if s <= total => s / n / align * align,
            _ => real.saturating_sub(offset),
        };
        if part == 0 {
            bail!(
                "job '{}': file {name} of {real} bytes has nothing past offset {offset}",
                job.name
            );
        }
        files.push(JobFile {
            name,
            start: offset,
            end: offset + part,
            file_size: real.max(offset + part),
        });
    }
    Ok(Target::Files {
        files,
        service: service(job)?,
    })
}

/// The extents of the run's regular files on the device: per name, (start, size), in
/// the order the jobs first name them.
pub struct Layout {
    files: Vec<(String, u64, u64)>,
}

impl Layout {
    /// Lays out every file the targets name (each as large as its largest use).
    pub fn new(targets: &[&Target], journal: Option<(u64, u64)>, capacity: u64) -> Result<Layout> {
        let mut need: Vec<(String, u64)> = Vec::new();
        for t in targets {
            if let Target::Files { files, .. } = t {
                for f in files {
                    match need.iter_mut().find(|(n, _)| n == &f.name) {
                        Some(e) => e.1 = e.1.max(f.file_size),
                        None => need.push((f.name.clone(), f.file_size)),
                    }
                }
            }
        }
        let mut next = 0u64;
        let mut files = Vec::new();
        for (name, size) in need {
            let mut start = next.div_ceil(FS_BLOCK) * FS_BLOCK;
            if let Some((jlo, jhi)) = journal {
                if start < jhi && jlo < start + size {
                    start = jhi.div_ceil(FS_BLOCK) * FS_BLOCK;
                }
            }
            if start + size > capacity {
                bail!(
                    "file {name}: the jobs' files need {} bytes and more, beyond the device's {capacity} bytes (fio would fail with ENOSPC)",
                    start + size
                );
            }
            files.push((name, start, size));
            next = start + size;
        }
        Ok(Layout { files })
    }

    /// The device extents of a job's files.
    pub fn extents(&self, target: &Target) -> Vec<FileExtent> {
        let Target::Files { files, .. } = target else {
            return Vec::new();
        };
        files
            .iter()
            .map(|f| {
                let (_, at, _) = self
                    .files
                    .iter()
                    .find(|(n, _, _)| n == &f.name)
                    .expect("every file is laid out");
                FileExtent {
                    offset: at + f.start,
                    size: f.end - f.start,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_filename_lists() {
        assert_eq!(split_names("a:b"), vec!["a", "b"]);
        assert_eq!(split_names("c\\:d:e"), vec!["c:d", "e"]);
        assert_eq!(in_dir(Some("/data/"), "f"), "/data/f");
        assert_eq!(in_dir(Some("/data"), "/abs"), "/abs");
    }
}
