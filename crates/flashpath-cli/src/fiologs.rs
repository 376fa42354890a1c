//! fio's time-series logs (`write_bw_log`, `write_iops_log`, `write_lat_log`,
//! `write_hist_log` and their `log_*` options), written by a per-I/O observer as the
//! simulated run goes, and `--bandwidth-log`.
//!
//! Where fio takes each sample (fio 3.33, stat.c and io_u.c):
//! - `io_u_queued` → `add_slat_sample`: the slat log, when an asynchronous engine's
//!   submitting call returns (sync engines have no slat: their slat log is empty);
//! - `account_io_completion`, when the job reaps an I/O after its ramp: `add_lat_sample`
//!   (lat log), `add_clat_sample` (clat log, and the clat_hist log every
//!   `log_hist_msec`), then, when the bw/iops log has `log_avg_msec=0`
//!   (`per_unit_log`), `add_bw_sample` (bytes × 10⁶ / clat ns) and `add_iops_sample` (1);
//! - otherwise the helper thread's `calc_log_samples` → `__add_samples` takes one
//!   sample per direction with I/O every `log_avg_msec` (the rate over the window;
//!   none for a window without I/O), while the job is running and past its ramp.
//!   flashpath's helper wakes exactly on each window's boundary in simulated time, so
//!   the windows are `epoch + k × log_avg_msec`, sampled while the job runs.
//!
//! Every sample goes through `add_log_sample` (report/logs.rs): one line per sample,
//! or per `log_avg_msec` window. Times are ms since the job's epoch: its start, reset
//! at the end of `ramp_time` (`reset_all_stats`); `log_unix_epoch` adds the epoch's
//! Unix time, the run starting at the Unix epoch as the report's timestamp says.
//!
//! Files: `<prefix>_<type>.<thread>.log` in the current directory (the prefix may hold
//! a path), the prefix being the option's value or the job's name, thread numbers
//! counting numjobs clones (init.c `gen_log_name`). fio writes a job's per-I/O logs
//! when the job ends and its windowed logs when the run ends; with `per_job_logs=0`
//! every job appends its part to one shared file in that order (iolog.c
//! `flush_log(log, do_append)`), which flashpath keeps by streaming each part to a
//! temporary file beside it and appending it at that moment. Lines reach the files
//! through buffered writers as they are taken: nothing grows with the run.
//! When a bw or iops log is written, fio's report takes its bw/iops statistics from the
//! same samples (bw_avg_time becomes log_avg_msec; per-I/O samples with 0):
//! [`LogsHandle::report_overrides`].

use anyhow::{bail, Context, Result};
use flashpath_core::engine::SimTime;
use flashpath_core::sim::{IoDone, IoObserver, IoQueued};
use flashpath_core::workload::Dir;
use flashpath_fio::parse::{Invocation, Job};
use flashpath_fio::report::model::{Ddir, IoStat};
use flashpath_fio::report::{
    HistLogWriter, LogKind, LogOptions, LogSample, LogWriter, RateKind, RateSampler,
};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The log options this module models (jobmap.rs accepts them).
pub const LOG_OPTIONS: &[&str] = &[
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_offset",
    "log_max_value",
    "per_job_logs",
    "log_unix_epoch",
    "log_prio",
];

/// An output file: the log's own file, or (`per_job_logs=0`) this job's part of a
/// shared file, appended to it when fio would write it.
struct Out {
    path: PathBuf,
    file: BufWriter<File>,
    /// The shared file this part is appended to (`per_job_logs=0`).
    shared: Option<PathBuf>,
}

impl Out {
    fn create(name: &str, per_job: bool, thread: u32, kind: LogKind) -> Result<Out> {
        let path = PathBuf::from(name);
        let (open, shared) = if per_job {
            (path.clone(), None)
        } else {
            let tmp = PathBuf::from(format!("{name}.flashpath-part-{thread}-{}", kind.suffix()));
            (tmp, Some(path.clone()))
        };
        let f = File::create(&open)
            .with_context(|| format!("{}: cannot create the log file", open.display()))?;
        Ok(Out {
            path: open,
            file: BufWriter::with_capacity(64 << 10, f),
            shared,
        })
    }

    /// fio's `flush_log`: the file is complete (or the part is appended).
    fn finish(&mut self) -> Result<()> {
        self.file
            .flush()
            .with_context(|| format!("{}: writing the log", self.path.display()))?;
        if let Some(dst) = self.shared.take() {
            let mut part = File::open(&self.path)
                .with_context(|| format!("{}: reading the log part", self.path.display()))?;
            let mut to = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&dst)
                .with_context(|| format!("{}: cannot open the log file", dst.display()))?;
            std::io::copy(&mut part, &mut to)
                .with_context(|| format!("{}: writing the log", dst.display()))?;
            std::fs::remove_file(&self.path).ok();
        }
        Ok(())
    }
}

/// A bw/iops/lat/clat/slat log and its file.
struct Log {
    w: LogWriter,
    out: Out,
}

impl Log {
    fn new(kind: LogKind, o: &LogOptions) -> Result<Log> {
        let w = LogWriter::new(kind, o.clone());
        let out = Out::create(&w.file_name(), o.per_job_logs, o.thread_number, kind)?;
        Ok(Log { w, out })
    }
    fn add(&mut self, s: LogSample) -> std::io::Result<()> {
        self.w.add(s);
        self.w.drain_into(&mut self.out.file)
    }
}

/// A windowed bw or iops log (`log_avg_msec > 0`): fio's helper-thread samples.
struct Windowed {
    sampler: RateSampler,
    out: Out,
}

impl Windowed {
    fn drain(&mut self) -> std::io::Result<()> {
        match self.sampler.log.as_mut() {
            Some(l) => l.drain_into(&mut self.out.file),
            None => Ok(()),
        }
    }
}

/// Either way of sampling bw or iops.
enum Rate {
    PerIo(Log, [IoStat; 3]),
    Windowed(Windowed),
}

/// What one job logs, and how.
pub struct JobLogSpec {
    opts: LogOptions,
    bw: bool,
    iops: bool,
    lat: bool,
    clat: bool,
    slat: bool,
    hist: bool,
    hist_prefix: String,
    lat_prefix: String,
    bw_prefix: String,
    iops_prefix: String,
    /// disable_bw_measurement / gtod_reduce: no per-I/O bw (or iops) samples.
    per_io_bw: bool,
    per_io_iops: bool,
    hist_samples: bool,
    /// log_unix_epoch.
    unix_epoch: bool,
}

/// A job's open logs during the run.
struct JobLogs {
    spec: JobLogSpec,
    bw: Option<Rate>,
    iops: Option<Rate>,
    lat: Option<Log>,
    clat: Option<Log>,
    slat: Option<Log>,
    hist: Option<(HistLogWriter, Out)>,
    epoch: SimTime,
    /// Start times of the job's I/Os queued and not yet reaped (slat ordering).
    outstanding: BTreeMap<SimTime, u32>,
    /// slat samples waiting for earlier-issued I/Os (by issue time, then arrival).
    slat_pending: BTreeMap<(SimTime, u64), LogSample>,
    seq: u64,
    finished: bool,
}

fn ddir(dir: Dir, trim: bool) -> Ddir {
    match (dir, trim) {
        (_, true) => Ddir::Trim,
        (Dir::Read, _) => Ddir::Read,
        (Dir::Write, _) => Ddir::Write,
    }
}

fn ms(t: SimTime, epoch: SimTime) -> u64 {
    t.saturating_sub(epoch) / 1_000_000
}

fn flag(job: &Job, name: &str) -> Result<bool> {
    let Some(s) = job.set_options.iter().rev().find(|s| s.name == name) else {
        return Ok(false);
    };
    match s.value.as_deref().map(str::trim) {
        None | Some("1") | Some("true") | Some("on") | Some("yes") => Ok(true),
        Some("0") | Some("false") | Some("off") | Some("no") => Ok(false),
        Some(v) => bail!("{name}={v} ({}): expected 0 or 1", s.origin),
    }
}

impl JobLogSpec {
    /// The logs `job` asks for, or `None`.
    pub fn of(job: &Job) -> Result<Option<JobLogSpec>> {
        let o = &job.options;
        let prefix = |p: &Option<String>| match p.as_deref() {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => job.name.clone(),
        };
        let (bw, iops, latl, hist) = (
            o.write_bw_log.is_some(),
            o.write_iops_log.is_some(),
            o.write_lat_log.is_some(),
            o.write_hist_log.is_some(),
        );
        if !(bw || iops || latl || hist) {
            return Ok(None);
        }
        let coarse = match job
            .set_options
            .iter()
            .rev()
            .find(|s| s.name == "log_hist_coarseness")
        {
            Some(s) => {
                let v = s.value.as_deref().unwrap_or("0").trim();
                match v.parse::<u32>() {
                    // fio's range: 0 to 6.
                    Ok(n) if n <= 6 => n,
                    _ => bail!(
                        "log_hist_coarseness={v} ({}): expected 0 to 6, as fio",
                        s.origin
                    ),
                }
            }
            None => 0,
        };
        let mut opts = LogOptions::new(String::new(), job.thread_number);
        opts.per_job_logs = o.per_job_logs;
        opts.log_avg_msec = o.log_avg_msec as u64;
        opts.log_max_value = o.log_max_value;
        opts.log_offset = o.log_offset;
        opts.log_prio = flag(job, "log_prio")?;
        opts.log_hist_msec = o.log_hist_msec as u64;
        opts.log_hist_coarseness = coarse;
        Ok(Some(JobLogSpec {
            opts,
            bw,
            iops,
            lat: latl && !o.disable_lat,
            clat: latl && !o.disable_clat,
            slat: latl && !o.disable_slat,
            hist,
            hist_prefix: prefix(&o.write_hist_log),
            lat_prefix: prefix(&o.write_lat_log),
            bw_prefix: prefix(&o.write_bw_log),
            iops_prefix: prefix(&o.write_iops_log),
            per_io_bw: !o.disable_bw,
            // add_iops_sample needs !gtod_reduce(td): not all of clat, slat and bw
            // disabled (fio.h; gtod_reduce sets all three).
            per_io_iops: !(o.disable_clat && o.disable_slat && o.disable_bw),
            // The histogram is fed by add_clat_sample.
            hist_samples: !o.disable_clat,
            unix_epoch: flag(job, "log_unix_epoch")?,
        }))
    }

    fn with(&self, prefix: &str) -> LogOptions {
        let mut o = self.opts.clone();
        o.prefix = prefix.to_string();
        o
    }
}

impl JobLogs {
    fn open(spec: JobLogSpec) -> Result<JobLogs> {
        let rate = |on: bool, kind: LogKind, prefix: &str| -> Result<Option<Rate>> {
            if !on {
                return Ok(None);
            }
            let o = spec.with(prefix);
            Ok(Some(if o.log_avg_msec == 0 {
                Rate::PerIo(Log::new(kind, &o)?, [IoStat::new(); 3])
            } else {
                let w = LogWriter::new(kind, o.clone());
                let out = Out::create(&w.file_name(), o.per_job_logs, o.thread_number, kind)?;
                let rk = if kind == LogKind::Bw {
                    RateKind::Bw
                } else {
                    RateKind::Iops
                };
                Rate::Windowed(Windowed {
                    sampler: RateSampler::new(rk, o.log_avg_msec).with_log(w),
                    out,
                })
            }))
        };
        let lat_o = spec.with(&spec.lat_prefix);
        let log = |on: bool, kind| -> Result<Option<Log>> {
            Ok(if on {
                Some(Log::new(kind, &lat_o)?)
            } else {
                None
            })
        };
        // fio sets the logs up in this order (init.c add_job): lat, slat, clat, hist,
        // bw, iops; the order matters only for which file an error names first.
        let lat = log(spec.lat, LogKind::Lat)?;
        let slat = log(spec.slat, LogKind::Slat)?;
        let clat = log(spec.clat, LogKind::Clat)?;
        let hist = if spec.hist {
            let o = spec.with(&spec.hist_prefix);
            let w = HistLogWriter::new(o.clone());
            let out = Out::create(
                &w.file_name(),
                o.per_job_logs,
                o.thread_number,
                LogKind::ClatHist,
            )?;
            Some((w, out))
        } else {
            None
        };
        let bw = rate(spec.bw, LogKind::Bw, &spec.bw_prefix)?;
        let iops = rate(spec.iops, LogKind::Iops, &spec.iops_prefix)?;
        Ok(JobLogs {
            spec,
            bw,
            iops,
            lat,
            clat,
            slat,
            hist,
            epoch: 0,
            outstanding: BTreeMap::new(),
            slat_pending: BTreeMap::new(),
            seq: 0,
            finished: false,
        })
    }

    fn set_epoch(&mut self, epoch: SimTime) {
        self.epoch = epoch;
        // log_unix_epoch: the epoch's Unix time in ms (the simulated run starts at the
        // Unix epoch, as the report's timestamp says).
        let off = if self.spec.unix_epoch {
            epoch / 1_000_000
        } else {
            0
        };
        let set = |w: &mut LogWriter| w.set_time_offset_ms(off);
        for l in [&mut self.lat, &mut self.clat, &mut self.slat]
            .into_iter()
            .flatten()
        {
            set(&mut l.w);
        }
        for r in [&mut self.bw, &mut self.iops].into_iter().flatten() {
            match r {
                Rate::PerIo(l, _) => set(&mut l.w),
                Rate::Windowed(w) => {
                    if let Some(l) = w.sampler.log.as_mut() {
                        set(l);
                    }
                }
            }
        }
        if let Some((h, _)) = self.hist.as_mut() {
            h.set_time_offset_ms(off);
        }
    }

    /// Writes the slat samples no outstanding I/O can precede any more.
    fn flush_slat(&mut self) -> std::io::Result<()> {
        let floor = self.outstanding.keys().next().copied();
        while let Some((&(t, n), _)) = self.slat_pending.first_key_value() {
            if floor.is_some_and(|f| t > f) {
                break;
            }
            let s = self.slat_pending.remove(&(t, n)).expect("present");
            if let Some(l) = self.slat.as_mut() {
                l.add(s)?;
            }
        }
        Ok(())
    }

    fn queued(&mut self, io: &IoQueued) {
        if self.slat.is_some() {
            *self.outstanding.entry(io.t).or_insert(0) += 1;
        }
    }

    fn done(&mut self, io: &IoDone) -> std::io::Result<()> {
        if self.slat.is_some() {
            if let Some(n) = self.outstanding.get_mut(&io.t_start) {
                *n -= 1;
                if *n == 0 {
                    self.outstanding.remove(&io.t_start);
                }
            }
        }
        if !io.measured {
            return self.flush_slat();
        }
        let d = ddir(io.dir, io.trim);
        let t_ms = ms(io.t_done, self.epoch);
        let base = LogSample {
            time_ms: t_ms,
            value: 0,
            ddir: d,
            bs: io.len,
            offset: io.offset,
            prio: 0,
        };
        if let (Some(slat), true) = (io.slat, self.slat.is_some()) {
            self.seq += 1;
            self.slat_pending.insert(
                (io.t_issued, self.seq),
                LogSample {
                    time_ms: ms(io.t_issued, self.epoch),
                    value: slat,
                    ..base
                },
            );
        }
        self.flush_slat()?;
        if let Some(l) = self.lat.as_mut() {
            l.add(LogSample {
                value: io.lat,
                ..base
            })?;
        }
        if let Some(l) = self.clat.as_mut() {
            l.add(LogSample {
                value: io.clat,
                ..base
            })?;
        }
        if let (Some((h, out)), true) = (self.hist.as_mut(), self.spec.hist_samples) {
            h.add(t_ms, d, io.len, io.clat);
            h.drain_into(&mut out.file)?;
        }
        let (per_bw, per_iops) = (self.spec.per_io_bw, self.spec.per_io_iops);
        for (r, kind) in [
            (&mut self.bw, RateKind::Bw),
            (&mut self.iops, RateKind::Iops),
        ] {
            match r {
                Some(Rate::PerIo(l, stats)) => {
                    let on = if kind == RateKind::Bw {
                        per_bw
                    } else {
                        per_iops
                    };
                    if on {
                        let value = match kind {
                            RateKind::Bw => flashpath_fio::report::logs::per_io_bw(io.len, io.clat),
                            RateKind::Iops => 1,
                        };
                        stats[d.index()].add(value);
                        l.add(LogSample { value, ..base })?;
                    }
                }
                Some(Rate::Windowed(w)) => {
                    w.sampler.record(t_ms, d, io.len);
                    w.drain()?;
                }
                None => {}
            }
        }
        Ok(())
    }

    /// The job ended at `t`: its windows close, and its per-I/O logs are complete
    /// (fio's `td_writeout_logs(td, true)` at the end of thread_main).
    fn finished(&mut self, t: SimTime) -> Result<()> {
        self.finished = true;
        self.outstanding.clear();
        self.flush_slat()?;
        let end_ms = ms(t, self.epoch);
        for r in [&mut self.bw, &mut self.iops].into_iter().flatten() {
            if let Rate::Windowed(w) = r {
                // The helper stops sampling the job once it has ended.
                w.sampler.end_job(end_ms);
                w.drain()?;
            }
        }
        // finalize_logs(td, true): clat, slat, lat, then the per-I/O bw and iops.
        for l in [&mut self.clat, &mut self.slat, &mut self.lat]
            .into_iter()
            .flatten()
        {
            l.w.finish(end_ms);
            l.w.drain_into(&mut l.out.file)?;
        }
        for r in [&mut self.bw, &mut self.iops].into_iter().flatten() {
            if let Rate::PerIo(l, _) = r {
                l.w.finish(end_ms);
                l.w.drain_into(&mut l.out.file)?;
            }
        }
        // td_writeout_logs writes the job's logs in log_types order: iops, slat, clat,
        // lat, bw, clat_hist (the windowed ones at the run's end).
        let mut unit: Vec<&mut Out> = Vec::new();
        if let Some(Rate::PerIo(l, _)) = self.iops.as_mut() {
            unit.push(&mut l.out);
        }
        for l in [&mut self.slat, &mut self.clat, &mut self.lat]
            .into_iter()
            .flatten()
        {
            unit.push(&mut l.out);
        }
        if let Some(Rate::PerIo(l, _)) = self.bw.as_mut() {
            unit.push(&mut l.out);
        }
        if let Some((_, out)) = self.hist.as_mut() {
            unit.push(out);
        }
        for o in unit {
            o.finish()?;
        }
        Ok(())
    }

    /// The run ended: the windowed logs are written (`fio_writeout_logs(false)` when
    /// the helper thread exits).
    fn close(&mut self, end: SimTime) -> Result<()> {
        if !self.finished {
            self.finished(end)?;
        }
        let mut outs: Vec<&mut Out> = Vec::new();
        if let Some(Rate::Windowed(w)) = self.iops.as_mut() {
            outs.push(&mut w.out);
        }
        if let Some(Rate::Windowed(w)) = self.bw.as_mut() {
            outs.push(&mut w.out);
        }
        for o in outs {
            o.finish()?;
        }
        Ok(())
    }

    /// The bw and iops statistics fio's report takes from these logs' samples.
    fn overrides(&self) -> (Option<[IoStat; 3]>, Option<[IoStat; 3]>) {
        let of = |r: &Option<Rate>| match r {
            Some(Rate::PerIo(_, s)) => Some(*s),
            Some(Rate::Windowed(w)) => Some(w.sampler.stats),
            None => None,
        };
        (of(&self.bw), of(&self.iops))
    }
}

/// The bw and iops statistics of one job as its logs sampled them.
pub type RateOverride = (Option<[IoStat; 3]>, Option<[IoStat; 3]>);

/// The logs of a run: the observer given to the simulator, and a handle to read the
/// report's statistics back after the run.
pub struct LogsObserver {
    jobs: Arc<Mutex<Vec<Option<JobLogs>>>>,
    error: Option<String>,
}

#[derive(Clone)]
pub struct LogsHandle {
    jobs: Arc<Mutex<Vec<Option<JobLogs>>>>,
}

impl LogsHandle {
    /// Per job, the bw and iops statistics the report must show (fio takes them from
    /// the logs' samples when the logs are written).
    pub fn report_overrides(&self) -> Vec<RateOverride> {
        let jobs = self.jobs.lock().expect("logs lock");
        jobs.iter()
            .map(|j| j.as_ref().map(JobLogs::overrides).unwrap_or((None, None)))
            .collect()
    }
}

/// Checks the log options of every job (for `--parse-only`), creating nothing.
pub fn check(inv: &Invocation) -> Result<()> {
    for job in &inv.jobs {
        JobLogSpec::of(job).with_context(|| format!("job '{}'", job.name))?;
    }
    Ok(())
}

/// Opens the logs the jobs of `inv` ask for (creating their files), or `None` when no
/// job writes one.
pub fn open(inv: &Invocation) -> Result<Option<(LogsObserver, LogsHandle)>> {
    let mut jobs = Vec::new();
    let mut any = false;
    for job in &inv.jobs {
        match JobLogSpec::of(job).with_context(|| format!("job '{}'", job.name))? {
            Some(spec) => {
                any = true;
                jobs.push(Some(JobLogs::open(spec)?));
            }
            None => jobs.push(None),
        }
    }
    if !any {
        return Ok(None);
    }
    let jobs = Arc::new(Mutex::new(jobs));
    Ok(Some((
        LogsObserver {
            jobs: jobs.clone(),
            error: None,
        },
        LogsHandle { jobs },
    )))
}

impl LogsObserver {
    fn with(&mut self, job: usize, f: impl FnOnce(&mut JobLogs) -> Result<()>) {
        if self.error.is_some() {
            return;
        }
        let mut jobs = self.jobs.lock().expect("logs lock");
        if let Some(Some(j)) = jobs.get_mut(job) {
            if let Err(e) = f(j) {
                self.error = Some(format!("{e:#}"));
            }
        }
    }
}

impl IoObserver for LogsObserver {
    fn job_started(&mut self, job: usize, _t: SimTime, measure_start: SimTime) {
        // fio's epoch: the job's start, reset when its ramp_time ends.
        self.with(job, |j| {
            j.set_epoch(measure_start);
            Ok(())
        });
    }
    fn queued(&mut self, io: &IoQueued) {
        self.with(io.job, |j| {
            j.queued(io);
            Ok(())
        });
    }
    fn done(&mut self, io: &IoDone) {
        self.with(io.job, |j| {
            j.done(io).context("writing a log")?;
            Ok(())
        });
    }
    fn job_finished(&mut self, job: usize, t: SimTime) {
        self.with(job, |j| j.finished(t));
    }
    fn close(&mut self, end: SimTime) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut jobs = self.jobs.lock().expect("logs lock");
        for j in jobs.iter_mut().flatten() {
            j.close(end).map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }
}

/// fio's `--bandwidth-log`: the aggregate logs agg-read_bw.log, agg-write_bw.log and
/// agg-trim_bw.log in the current directory. fio 3.33 sets them up and writes them at
/// the end of the run (backend.c `fio_backend`), but nothing adds a sample to them
/// (`add_agg_sample` has no caller), so they are empty, as here.
pub fn write_bandwidth_logs() -> Result<()> {
    for name in ["agg-read_bw.log", "agg-write_bw.log", "agg-trim_bw.log"] {
        File::create(name).with_context(|| format!("{name}: cannot create the log file"))?;
    }
    Ok(())
}
