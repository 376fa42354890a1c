//! fio's `write_iolog=FILE`: the run's I/Os written as fio 3.33 writes them (iolog.c
//! `init_iolog_write`, `log_file`, `log_io_u`), so real fio can replay a simulated run
//! on a board (`fio --read_iolog=FILE --replay_redirect=/dev/...`).
//!
//! fio 3.33 writes version 3 (whatever older notes say): the header
//! `fio version 3 iolog`, then `TIME FILE add|open|close` and
//! `TIME FILE ACTION OFFSET LENGTH`, TIME in microseconds since the job's log started.
//! The file is opened for appending with an 8 KiB buffer (`setvbuf`); a run appends
//! to what is there, as fio does. Each I/O is written when the job queues it
//! (`td_io_queue` → `log_io_u`): the observer's `queued` point. The add and open lines
//! are at time 0 (the simulated file needs no setup time), close when the job ends.
//! Lines stream out through the buffer: nothing grows with the run.
//!
//! FILE is the job's `filename` (its first), else fio's default name `JOB.N.0`.

use flashpath_core::engine::SimTime;
use flashpath_core::sim::{IoObserver, IoQueued};
use flashpath_core::workload::Dir;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

struct JobLog {
    w: BufWriter<File>,
    path: PathBuf,
    file: String,
    start: SimTime,
    /// The last I/O's offset: a sync line carries it (the reused io_u's), length 0.
    last_offset: u64,
}

/// Writes each job's iolog that asks for one (indexed by reported job).
pub struct IologWriter {
    jobs: Vec<Option<JobLog>>,
    error: Option<String>,
}

/// What a job's iolog needs: its path and the file name its lines carry.
pub struct IologTarget {
    pub path: PathBuf,
    pub file: String,
}

impl IologWriter {
    /// Opens every log for appending (before the run, so a bad path fails early).
    pub fn open(targets: Vec<Option<IologTarget>>) -> anyhow::Result<Option<Self>> {
        if targets.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut jobs = Vec::new();
        for t in targets {
            jobs.push(match t {
                None => None,
                Some(t) => {
                    let f = std::fs::OpenOptions::new()
                        .append(true)
                        .create(true)
                        .open(&t.path)
                        .map_err(|e| {
                            anyhow::anyhow!(
                                "write_iolog={}: fopen write iolog: {e}",
                                t.path.display()
                            )
                        })?;
                    Some(JobLog {
                        w: BufWriter::with_capacity(8192, f),
                        path: t.path,
                        file: t.file,
                        start: 0,
                        last_offset: 0,
                    })
                }
            });
        }
        Ok(Some(IologWriter { jobs, error: None }))
    }

    fn write(&mut self, job: usize, line: std::fmt::Arguments) {
        if let Some(Some(l)) = self.jobs.get_mut(job) {
            if let Err(e) = l.w.write_fmt(line) {
                self.error
                    .get_or_insert_with(|| format!("write_iolog={}: {e}", l.path.display()));
            }
        }
    }

    fn file(&self, job: usize) -> Option<(String, SimTime)> {
        match self.jobs.get(job) {
            Some(Some(l)) => Some((l.file.clone(), l.start)),
            _ => None,
        }
    }
}

impl IoObserver for IologWriter {
    fn job_started(&mut self, job: usize, t: SimTime, _measure_start: SimTime) {
        let Some(Some(l)) = self.jobs.get_mut(job) else {
            return;
        };
        l.start = t;
        let f = l.file.clone();
        self.write(
            job,
            format_args!("fio version 3 iolog\n0 {f} add\n0 {f} open\n"),
        );
    }

    fn queued(&mut self, io: &IoQueued) {
        let Some(Some(l)) = self.jobs.get_mut(io.job) else {
            return;
        };
        let us = io.t.saturating_sub(l.start) / 1000;
        let act = match (io.trim, io.dir) {
            (true, _) => "trim",
            (false, Dir::Read) => "read",
            (false, Dir::Write) => "write",
        };
        l.last_offset = io.offset;
        if let Err(e) = writeln!(l.w, "{us} {} {act} {} {}", l.file, io.offset, io.len) {
            self.error
                .get_or_insert_with(|| format!("write_iolog={}: {e}", l.path.display()));
        }
    }

    fn sync_queued(&mut self, job: usize, t: SimTime, datasync: bool) {
        let Some(Some(l)) = self.jobs.get_mut(job) else {
            return;
        };
        let us = t.saturating_sub(l.start) / 1000;
        let act = if datasync { "datasync" } else { "sync" };
        if let Err(e) = writeln!(l.w, "{us} {} {act} {} 0", l.file, l.last_offset) {
            self.error
                .get_or_insert_with(|| format!("write_iolog={}: {e}", l.path.display()));
        }
    }

    fn job_finished(&mut self, job: usize, t: SimTime) {
        let Some((f, start)) = self.file(job) else {
            return;
        };
        let us = t.saturating_sub(start) / 1000;
        self.write(job, format_args!("{us} {f} close\n"));
        if let Some(Some(l)) = self.jobs.get_mut(job) {
            if let Err(e) = l.w.flush() {
                self.error
                    .get_or_insert_with(|| format!("write_iolog={}: {e}", l.path.display()));
            }
        }
    }

    fn close(&mut self, _end: SimTime) -> Result<(), String> {
        for l in self.jobs.iter_mut().flatten() {
            if let Err(e) = l.w.flush() {
                self.error
                    .get_or_insert_with(|| format!("write_iolog={}: {e}", l.path.display()));
            }
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
