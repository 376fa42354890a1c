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
use flashpath_fio::parse::{Job, SizeSpec};

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
    /// How the job's part of the file is sized.
    pub sizing: Sizing,
}

/// How a job's part of a file is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sizing {
    /// By the job's size/filesize (`start..end`).
    Given,
    /// fill_device: the file grows into the free space, up to `want` bytes if the job
    /// sets a size (`Layout::resolve` sets `end` and `file_size`).
    Fill { want: Option<u64> },
    /// No size: the job takes the file as an earlier fill_device job left it, from
    /// `start` to the file's end (`Layout::resolve` sets `end`).
    ToEnd,
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
        None if o.nrfiles == 0 => bail!(
            "job '{}': nrfiles=0 leaves the job without files: fio 3.33 starts it and does no I/O, which flashpath does not model (give nrfiles=1 or more, or a filename)",
            job.name
        ),
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
pub fn target(
    job: &Job,
    size: Option<u64>,
    offset: u64,
    seed: u64,
    fill_files: &[String],
) -> Result<Target> {
    let Some(names) = names(job)? else {
        return Ok(Target::Device);
    };
    let o = &job.options;
    // fio takes these percentages of each file's current size (filesetup.c), which a
    // file a job creates does not have: fio's own answer to size=N% is "you need to
    // specify size=", and an offset in percent would be of a size flashpath does not
    // know. The percentages are of the device only.
    for (what, spec) in [
        ("size", o.size.unwrap_or_default()),
        ("offset", o.offset),
        ("offset_increment", o.offset_increment),
    ] {
        if let SizeSpec::Percent(p) = spec {
            bail!(
                "job '{}': {what}={p}% of a regular file is not modelled by flashpath (fio takes it of the file's existing size; for a file it creates fio answers \"you need to specify size=\"): give it in bytes",
                job.name
            );
        }
    }
    if o.fill_device || (size.is_none() && o.filesize_bytes.is_none()) {
        if let [name] = &names[..] {
            if o.fill_device || fill_files.contains(name) {
                let sizing = if o.fill_device {
                    if offset > 0 {
                        bail!(
                            "job '{}': fill_device with an offset (a file with a hole before it) is not modelled by flashpath",
                            job.name
                        );
                    }
                    Sizing::Fill { want: size }
                } else {
                    Sizing::ToEnd
                };
                return Ok(Target::Files {
                    files: vec![JobFile {
                        name: name.clone(),
                        start: offset,
                        end: offset,
                        file_size: offset,
                        sizing,
                    }],
                    service: service(job)?,
                });
            }
        }
        if o.fill_device {
            bail!(
                "job '{}': fill_device over {} files is not modelled by flashpath (one file, or the device)",
                job.name,
                names.len()
            );
        }
    }
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
        let (bytes, from) = match (o.filesize_bytes, size) {
            (Some((lo, hi)), _) => {
                let s = if hi > lo {
                    lo + rng.below(hi - lo + 1)
                } else {
                    lo
                };
                let range = if hi > lo {
                    format!("{lo}-{hi}")
                } else {
                    lo.to_string()
                };
                (s, format!("filesize={range}"))
            }
            (None, Some(total)) => (
                total / n,
                format!("size={total} split over {n} files (nrfiles)"),
            ),
            (None, None) => bail!(
                "job '{}': its files need a size (size= or filesize=)",
                job.name
            ),
        };
        if bytes > 0 && bytes < align {
            // fio lays such a file out at its size and reads or writes it short at
            // its end; flashpath moves whole blocks only.
            bail!(
                "job '{}': {from} gives files of {bytes} bytes, less than one block ({align} bytes): files smaller than a block (fio's short I/O at their end) are not modelled by flashpath",
                job.name
            );
        }
        sizes.push(bytes / align * align);
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
            sizing: Sizing::Given,
        });
    }
    Ok(Target::Files {
        files,
        service: service(job)?,
    })
}

/// The extents of the run's regular files on the device: per name, (start, size), in
/// the order the jobs first name them; and the fill_device file, if there is one.
pub struct Layout {
    files: Vec<(String, u64, u64)>,
    fill: Option<FillFile>,
}

/// The file a fill_device job grows into the free space (module doc of `fill_pieces`).
pub struct FillFile {
    pub name: String,
    /// Its device extents, in file order: (device offset, bytes).
    pub pieces: Vec<(u64, u64)>,
    /// Its size after the fill job: the pieces' total.
    pub size: u64,
    /// The fill job wants more than the free space: its next write fails with ENOSPC.
    pub enospc: bool,
}

/// The free space a fill_device file grows into, as the simulated ext4 has it: the
/// device's bytes `0..capacity` less the journal and the other files' extents. Each
/// free run (in device order, from a 4 KiB block) is taken as a whole number of `unit`
/// (the largest block of the jobs using the file), so that no I/O crosses from one
/// run into the next; the file takes runs until it has `want` bytes (its job's size,
/// if set) or the runs are used up. Returns the pieces (device offset, bytes).
pub fn fill_pieces(
    capacity: u64,
    journal: Option<(u64, u64)>,
    used: &[(u64, u64)],
    unit: u64,
    want: Option<u64>,
) -> Vec<(u64, u64)> {
    let mut taken: Vec<(u64, u64)> = used.iter().map(|&(at, len)| (at, at + len)).collect();
    if let Some(j) = journal {
        taken.push(j);
    }
    taken.sort();
    let mut left = want.map(|w| w / unit * unit).unwrap_or(u64::MAX);
    let mut pieces = Vec::new();
    let mut at = 0u64;
    for (lo, hi) in taken.into_iter().chain([(capacity, capacity)]) {
        let start = at.div_ceil(FS_BLOCK) * FS_BLOCK;
        let end = lo.min(capacity);
        if end > start && left > 0 {
            let n = ((end - start) / unit * unit).min(left);
            if n > 0 {
                pieces.push((start, n));
                left -= n;
            }
        }
        at = at.max(hi);
    }
    pieces
}

fn lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

impl Layout {
    /// Lays out every file the targets name (each as large as its largest use), then
    /// the fill_device file, if any, in the free space left (`fill_pieces`); `blocks`
    /// is each target's job's largest block size.
    pub fn new(
        targets: &[&Target],
        blocks: &[u64],
        journal: Option<(u64, u64)>,
        capacity: u64,
    ) -> Result<Layout> {
        let mut need: Vec<(String, u64)> = Vec::new();
        // The fill file: its name, what its fill job wants, and the unit of its pieces.
        let mut fill: Option<(String, Option<u64>, u64)> = None;
        for t in targets {
            if let Target::Files { files, .. } = t {
                for f in files {
                    if let Sizing::Fill { want } = f.sizing {
                        match &fill {
                            Some((n, _, _)) if n != &f.name => bail!(
                                "fill_device files {n} and {}: two files filling one filesystem (sharing its free space as they grow) are not modelled by flashpath",
                                f.name
                            ),
                            Some((n, _, _)) => bail!(
                                "fill_device file {n} is filled by several jobs at once (numjobs, or two jobs), which is not modelled by flashpath"
                            ),
                            None => fill = Some((f.name.clone(), want, 1)),
                        }
                    }
                }
            }
        }
        for (t, &block) in targets.iter().zip(blocks) {
            if let Target::Files { files, .. } = t {
                for f in files {
                    if let Some((n, _, unit)) = &mut fill {
                        if n == &f.name {
                            *unit = lcm(*unit, block.max(1));
                            continue;
                        }
                    }
                    if f.sizing == Sizing::ToEnd {
                        bail!("file {}: its jobs need a size (size= or filesize=)", f.name);
                    }
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
        let fill = match fill {
            None => None,
            Some((name, want, unit)) => {
                let used: Vec<(u64, u64)> = files.iter().map(|(_, at, n)| (*at, *n)).collect();
                let pieces = fill_pieces(capacity, journal, &used, unit, want);
                let size: u64 = pieces.iter().map(|p| p.1).sum();
                if size == 0 {
                    bail!(
                        "file {name}: fill_device finds no free space for a {unit}-byte block on the device (fio would end the job at its first write, with ENOSPC)"
                    );
                }
                let enospc = want.is_none_or(|w| w > size);
                Some(FillFile {
                    name,
                    pieces,
                    size,
                    enospc,
                })
            }
        };
        Ok(Layout { files, fill })
    }

    /// The fill_device file, if the run has one.
    pub fn fill(&self) -> Option<&FillFile> {
        self.fill.as_ref()
    }

    /// Sizes the target's uses of the fill_device file now that its size is known: the
    /// fill job's part is the whole file, a job without a size takes it from its offset
    /// to its end, a job with one must fit in it.
    pub fn resolve(&self, job: &str, target: &mut Target) -> Result<()> {
        let (Target::Files { files, .. }, Some(fill)) = (target, &self.fill) else {
            return Ok(());
        };
        for f in files.iter_mut().filter(|f| f.name == fill.name) {
            match f.sizing {
                Sizing::Fill { .. } => {
                    f.end = f.start + fill.size;
                    f.file_size = f.end;
                }
                Sizing::ToEnd => {
                    if f.start + 4096 > fill.size {
                        bail!(
                            "job '{job}': file {} of {} bytes after the fill_device job has nothing past offset {}",
                            f.name,
                            fill.size,
                            f.start
                        );
                    }
                    f.end = fill.size;
                    f.file_size = fill.size;
                }
                Sizing::Given => {
                    if f.file_size > fill.size {
                        bail!(
                            "job '{job}': its {} bytes of file {} go beyond the {} bytes the fill_device job leaves in it (fio would lay the file out again), which flashpath does not model",
                            f.file_size,
                            f.name,
                            fill.size
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The device extents of a job's files (a fill_device file's part may span several
    /// of its pieces).
    pub fn extents(&self, target: &Target) -> Vec<FileExtent> {
        let Target::Files { files, .. } = target else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for f in files {
            if let Some(fill) = self.fill.as_ref().filter(|x| x.name == f.name) {
                // The file's bytes run through the pieces in order.
                let mut file_at = 0u64;
                for &(dev, len) in &fill.pieces {
                    let lo = f.start.max(file_at);
                    let hi = f.end.min(file_at + len);
                    if hi > lo {
                        out.push(FileExtent {
                            offset: dev + (lo - file_at),
                            size: hi - lo,
                        });
                    }
                    file_at += len;
                }
                continue;
            }
            let (_, at, _) = self
                .files
                .iter()
                .find(|(n, _, _)| n == &f.name)
                .expect("every file is laid out");
            out.push(FileExtent {
                offset: at + f.start,
                size: f.end - f.start,
            });
        }
        out
    }
}

/// The file a fill_device job fills, if it runs on a regular file.
pub fn fill_file(job: &Job) -> Result<Option<String>> {
    if !job.options.fill_device {
        return Ok(None);
    }
    Ok(names(job)?.and_then(|n| n.into_iter().next()))
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

    #[test]
    fn the_fill_file_takes_the_free_space_in_whole_blocks() {
        const K: u64 = 1024;
        const M: u64 = 1 << 20;
        // The device less the journal: two runs, each a whole number of 64 KiB.
        assert_eq!(
            fill_pieces(64 * M, Some((4 * M, 8 * M)), &[], 64 * K, None),
            vec![(0, 4 * M), (8 * M, 56 * M)]
        );
        // Other files' extents are skipped; a run's tail short of a block is left
        // (a file ending off a 4 KiB block: the next run starts at the next block).
        assert_eq!(
            fill_pieces(10 * M, None, &[(0, M + 100), (3 * M, M)], 64 * K, None),
            vec![(M + 4096, 2 * M - 4096 - 60 * K), (4 * M, 6 * M)]
        );
        // A size: the file stops there (rounded down to the block).
        assert_eq!(
            fill_pieces(64 * M, Some((4 * M, 8 * M)), &[], 64 * K, Some(5 * M + 1)),
            vec![(0, 4 * M), (8 * M, M)]
        );
        // No room for a block: nothing.
        assert_eq!(
            fill_pieces(M, Some((0, M - 4096)), &[], 64 * K, None),
            vec![]
        );
        // Whatever the layout, the pieces are free, disjoint and within the device,
        // and lose less than a block per free run.
        for (cap, used, unit) in [
            (
                100 * M,
                vec![(5 * M, 3 * M), (50 * M, 7 * M + 4096)],
                96 * K,
            ),
            (33 * M + 512, vec![(0, 4096)], 128 * K),
        ] {
            let j = (20 * M, 24 * M);
            let p = fill_pieces(cap, Some(j), &used, unit, None);
            let mut taken: Vec<(u64, u64)> = used.iter().map(|&(a, n)| (a, a + n)).collect();
            taken.push(j);
            for &(at, n) in &p {
                assert!(n > 0 && n % unit == 0 && at + n <= cap);
                assert!(taken.iter().all(|&(lo, hi)| at + n <= lo || at >= hi));
            }
            let free = cap - taken.iter().map(|(lo, hi)| hi - lo).sum::<u64>();
            let got: u64 = p.iter().map(|x| x.1).sum();
            assert!(got <= free && free - got < (taken.len() as u64 + 1) * (unit + 4096));
        }
    }
}
