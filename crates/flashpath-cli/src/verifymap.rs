//! fio's verify options, from a parsed job to the simulator's `VerifyConfig`
//! (core's sim/jobs/verify.rs). fio's own fix-ups are applied (init.c fixup_options: the
//! verify_interval defaults to the smallest write size, is cut to it, and must divide
//! the write sizes). What a simulated run cannot do is refused naming the option.

use anyhow::{bail, Result};
use flashpath_core::sim::{VerifyAlgo, VerifyConfig};
use flashpath_core::workload::JobConfig;
use flashpath_fio::parse::{value, Job};

/// The verify options flashpath models (jobmap's MODELLED takes these too).
pub const MODELLED: &[&str] = &[
    "verify",
    "do_verify",
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_only",
    "verify_fatal",
    "verify_async",
    "verify_async_cpus",
    "verify_state_save",
];

fn set<'a>(job: &'a Job, name: &str) -> Option<&'a flashpath_fio::parse::SetOption> {
    job.set_options.iter().rev().find(|s| s.name == name)
}

/// A boolean option: bare means 1.
fn flag(job: &Job, name: &str, default: bool) -> bool {
    match set(job, name) {
        Some(s) => s.value.as_deref().is_none_or(|v| v.trim() != "0"),
        None => default,
    }
}

fn int(job: &Job, name: &str, kb_base: u64) -> Result<Option<u64>> {
    let Some(s) = set(job, name) else {
        return Ok(None);
    };
    let v = s.value.as_deref().unwrap_or("1");
    match value::parse_size(v.trim(), kb_base) {
        Some(n) => Ok(Some(n)),
        None => bail!("{name}={v} ({}) is not a number", s.origin),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The job's verify configuration (`None`: verify=0, fio's default).
pub fn verify_config(job: &Job, cfg: &JobConfig) -> Result<Option<VerifyConfig>> {
    let kb_base = u64::from(job.options.kb_base);
    let at = |name: &str| {
        set(job, name)
            .map(|s| format!(" ({})", s.origin))
            .unwrap_or_default()
    };
    let algo = match job.options.verify.as_deref().map(str::trim) {
        // Without verify= fio accepts the others and does nothing with them.
        None | Some("0") => return Ok(None),
        Some(v) => match VerifyAlgo::parse(v) {
            Some(a) => a,
            None => bail!(
                "verify={v}{} is not one of fio's verify algorithms",
                at("verify")
            ),
        },
    };
    let async_threads = match int(job, "verify_async", kb_base)? {
        Some(n) if n > 1024 => bail!(
            "verify_async={n}{}: more verify threads than flashpath models (1024)",
            at("verify_async")
        ),
        Some(n) => n as u32,
        None => 0,
    };
    let async_cpus = async_cpus(job, at("verify_async_cpus"))?;
    if set(job, "verify_state_save").is_some() && flag(job, "verify_state_save", true) {
        bail!(
            "verify_state_save=1{}: flashpath does not write fio's verify state files (local-*-verify.state); set verify_state_save=0",
            at("verify_state_save")
        );
    }
    let min_w = cfg.bs[1].min();
    let max_w = cfg.bs[1].max();
    let min_r = cfg.bs[0].min();
    let writes = cfg.read_pct < 100;
    let reads = cfg.read_pct > 0;
    // fixup_options (init.c): the header interval.
    let mut interval = int(job, "verify_interval", kb_base)?.unwrap_or(0);
    if writes {
        if max_w != min_w && interval == 0 {
            interval = min_w;
        }
        if interval > min_w {
            interval = min_w;
        } else if reads && interval > min_r {
            interval = min_r;
        }
        if interval == 0 || !min_w.is_multiple_of(interval) || !max_w.is_multiple_of(interval) {
            interval = gcd(min_w, max_w);
        }
    } else if interval == 0 {
        interval = min_r;
    }
    let header_offset = int(job, "verify_offset", kb_base)?.unwrap_or(0);
    if !header_offset.is_multiple_of(4096) || header_offset >= interval {
        bail!(
            "verify_offset={header_offset}{}: the header must start a 4 KiB block inside the {interval}-byte verify interval (the device keeps content per 4 KiB)",
            at("verify_offset")
        );
    }
    let backlog = int(job, "verify_backlog", kb_base)?.unwrap_or(0);
    let backlog_batch = int(job, "verify_backlog_batch", kb_base)?.unwrap_or(0);
    let only = flag(job, "verify_only", false);
    let do_verify = flag(job, "do_verify", true);
    let fixed_bs = cfg.bs[0].min() == cfg.bs[0].max() && min_w == max_w;
    let td_rw = writes && reads;
    let pattern = set(job, "verify_pattern")
        .and_then(|s| s.value.clone())
        .unwrap_or_default();
    if algo == VerifyAlgo::Pattern && pattern.is_empty() {
        bail!(
            "verify=pattern{} needs a verify_pattern (fio 3.33 aborts on an assertion without one)",
            at("verify")
        );
    }
    Ok(Some(VerifyConfig {
        algo,
        do_verify,
        interval,
        header_offset,
        backlog,
        backlog_batch,
        only,
        fatal: flag(job, "verify_fatal", false),
        // verify_header: numberio is checked for a writing job with one block size,
        // not time_based, not verify_only.
        check_numberio: writes && fixed_bs && !cfg.time_based && !only,
        // verify_io_u: the header's seed is taken as right unless the job mixes reads
        // and writes without a backlog.
        seed_from_header: !td_rw || backlog > 0,
        any_writer: only || !writes,
        pattern_id: pattern_id(&pattern),
        pattern_per_offset: pattern.contains("%o"),
        async_threads,
        async_cpus,
    }))
}

/// verify_async_cpus: fio's CPU list (`0-3,6`), the cores the verify threads may run on.
fn async_cpus(job: &Job, at: String) -> Result<Vec<u32>> {
    let Some(v) = set(job, "verify_async_cpus").and_then(|s| s.value.as_deref()) else {
        return Ok(Vec::new());
    };
    let mut cpus = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        match (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
            (Ok(lo), Ok(hi)) if lo <= hi && hi < 1024 => cpus.extend(lo..=hi),
            _ => bail!("verify_async_cpus={v}{at}: '{part}' is not a CPU or a CPU range"),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A stable number for a verify pattern's text (the data every block of it holds).
fn pattern_id(p: &str) -> u32 {
    // FNV-1a.
    let mut h: u32 = 0x811c_9dc5;
    for b in p.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// What fio prints for the jobs whose verify failed: (the failures went to standard
/// error as they were found) `fio: pid=N, err=84/<where>` on standard output before
/// the report (backend.c's td_verror report; after `Starting N processes` in the
/// normal format, returned here as startup lines). Returns whether any job failed
/// (fio then exits 1).
pub fn failures(
    result: &flashpath_core::stats::RunResult,
    rep: &flashpath_fio::report::model::RunReport,
) -> (bool, Vec<String>) {
    let mut lines = Vec::new();
    let mut failed = false;
    for (i, s) in result.jobs.iter().enumerate() {
        let Some(f) = &s.verify_failure else {
            continue;
        };
        failed = true;
        // Its message went to standard error as it was found (FailureLog).
        let pid = rep.jobs.get(i).map_or(0, |j| j.pid);
        lines.push(format!(
            "fio: pid={pid}, err={}/{}",
            flashpath_core::sim::EILSEQ,
            f.verror()
        ));
    }
    (failed, lines)
}

/// The file fio names in a job's verify messages: the job's filename, else
/// <name>.<subjob>.0 in the current directory.
fn file_of(inv: &flashpath_fio::parse::Invocation, meta: &crate::report::JobMeta) -> String {
    inv.jobs
        .iter()
        .find(|j| j.name == meta.name)
        .and_then(|j| set(j, "filename"))
        .and_then(|s| s.value.clone())
        .map(|v| v.split(':').next().unwrap_or("").to_string())
        .unwrap_or_else(|| format!("{}.{}.0", meta.name, meta.subjob_number))
}

/// Prints verify failures on standard error as they happen, as fio's verify.c logs
/// them.
pub struct FailureLog {
    files: Vec<String>,
}

impl FailureLog {
    /// `None` when no job verifies (no observer is needed).
    pub fn new(
        inv: &flashpath_fio::parse::Invocation,
        metas: &[crate::report::JobMeta],
        verifying: bool,
    ) -> Option<FailureLog> {
        verifying.then(|| FailureLog {
            files: metas.iter().map(|m| file_of(inv, m)).collect(),
        })
    }
}

impl flashpath_core::sim::IoObserver for FailureLog {
    fn verify_failed(
        &mut self,
        job: usize,
        _t: flashpath_core::engine::SimTime,
        f: &flashpath_core::sim::VerifyFailure,
    ) {
        crate::embed::note(&f.message(&self.files[job]));
    }
}
