//! The progress display on standard error: shown only when it is a terminal, or when
//! `FLASHPATH_PROGRESS=1` asks for it anyway (`FLASHPATH_PROGRESS=0` turns it off).
//!
//! A simulation's line names the phase (the preconditioning writes or the jobs), what
//! is done against what ends it (bytes or I/Os, whichever bounds the jobs; simulated
//! time against the runtime for time_based jobs), the percentage, the simulated time
//! and the wall-clock time left (ETA). A command that makes several runs (validate,
//! compare, analyze, iozone) shows which run is going: `validate: [7/52] name`.
//! The text comes from pure functions ([`line`], [`step_line`]), tested below.

use flashpath_core::sim::{JobProgress, Phase, Progress};
use std::io::IsTerminal;
use std::sync::Mutex;

/// Whether the display is on: `FLASHPATH_PROGRESS=1` forces it, `=0` stops it, and
/// otherwise it is on when standard error is a terminal. Never in an embedded run
/// (crate::embed) or its worker threads: the caller shows its own.
pub fn enabled() -> bool {
    if crate::embed::within() {
        return false;
    }
    match std::env::var("FLASHPATH_PROGRESS").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => std::io::stderr().is_terminal(),
    }
}

/// The display was forced on (`FLASHPATH_PROGRESS=1`): a simulation's line is shown
/// from its start and at each phase change, not only after two seconds.
pub fn forced() -> bool {
    std::env::var("FLASHPATH_PROGRESS").as_deref() == Ok("1")
}

/// What a phase's jobs are bounded by, summed over them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Bytes issued of bytes to issue.
    Bytes(u64, u64),
    /// I/Os issued of fio's number_ios.
    Ios(u64, u64),
    /// Simulated ns of the phase passed, of its planned length (time_based jobs).
    Time(u64, u64),
    /// The jobs' bounds differ: only the share done is known (and the I/Os issued).
    Mixed(u64),
}

/// The share of one job done, and the one bound it has if it has only one.
fn job_share(j: &JobProgress, now: u64) -> (f64, Option<Bound>) {
    let mut parts = Vec::new();
    if j.bytes_limit > 0 {
        let done = if j.finished {
            j.bytes_limit
        } else {
            j.issued_bytes.min(j.bytes_limit)
        };
        parts.push(Bound::Bytes(done, j.bytes_limit));
    }
    if j.ios_limit > 0 {
        let done = if j.finished {
            j.ios_limit
        } else {
            j.issued_ios.min(j.ios_limit)
        };
        parts.push(Bound::Ios(done, j.ios_limit));
    }
    if let Some(t) = j.time_limit_ns.filter(|&t| t > 0) {
        let ran = match (j.finished, j.started_ns) {
            (true, _) => t,
            (false, Some(s)) => now.saturating_sub(s).min(t),
            (false, None) => 0,
        };
        parts.push(Bound::Time(ran, t));
    }
    let share = parts
        .iter()
        .map(|b| match *b {
            Bound::Bytes(d, t) | Bound::Ios(d, t) | Bound::Time(d, t) => d as f64 / t as f64,
            Bound::Mixed(_) => 0.0,
        })
        .fold(if j.finished { 1.0 } else { 0.0 }, f64::max);
    let only = if parts.len() == 1 {
        Some(parts[0])
    } else {
        None
    };
    (share.min(1.0), only)
}

/// The phase's jobs summed: the share done (0..=1) and what it is measured in.
pub fn summarize(p: &Progress) -> (f64, Bound) {
    if p.jobs.is_empty() {
        return (1.0, Bound::Mixed(0));
    }
    let shares: Vec<(f64, Option<Bound>)> = p.jobs.iter().map(|j| job_share(j, p.now)).collect();
    let all_done = p.jobs.iter().all(|j| j.finished);
    let ios: u64 = p.jobs.iter().map(|j| j.issued_ios).sum();
    let mean = shares.iter().map(|s| s.0).sum::<f64>() / shares.len() as f64;
    let kinds: Vec<Option<Bound>> = shares.iter().map(|s| s.1).collect();
    let sum = |f: fn(Bound) -> Option<(u64, u64)>| -> Option<(u64, u64)> {
        kinds.iter().try_fold((0u64, 0u64), |(d, t), k| {
            let (a, b) = f((*k)?)?;
            Some((d + a, t + b))
        })
    };
    if let Some((d, t)) = sum(|b| match b {
        Bound::Bytes(d, t) => Some((d, t)),
        _ => None,
    }) {
        return (ratio(d, t, all_done), Bound::Bytes(d, t));
    }
    if let Some((d, t)) = sum(|b| match b {
        Bound::Ios(d, t) => Some((d, t)),
        _ => None,
    }) {
        return (ratio(d, t, all_done), Bound::Ios(d, t));
    }
    if kinds.iter().all(|k| matches!(k, Some(Bound::Time(..)))) {
        // Jobs run side by side within a stonewall group and the groups one after
        // another: the phase is planned to last the sum of each group's longest job.
        let mut total = 0u64;
        let mut group = 0u64;
        for (i, j) in p.jobs.iter().enumerate() {
            if i > 0 && j.stonewall {
                total += group;
                group = 0;
            }
            group = group.max(j.startdelay_ns + j.time_limit_ns.unwrap_or(0));
        }
        total += group;
        let passed = p.now.saturating_sub(p.phase_start_ns);
        let share = if all_done {
            1.0
        } else {
            (passed as f64 / total.max(1) as f64).min(0.999)
        };
        return (share, Bound::Time(passed.min(total), total));
    }
    (
        if all_done { 1.0 } else { mean.min(0.999) },
        Bound::Mixed(ios),
    )
}

fn ratio(done: u64, total: u64, all_done: bool) -> f64 {
    if all_done || total == 0 {
        1.0
    } else {
        (done as f64 / total as f64).min(1.0)
    }
}

/// Bytes in binary units, as `976.6 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// A wall-clock duration left, as `12s`, `3m05s` or `1h02m03s`.
pub fn eta(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "--".into();
    }
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60),
    }
}

/// A phase as the progress display names it.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Precondition => "precondition",
        Phase::Jobs => "jobs",
    }
}

/// A simulation's progress line: `prefix`, the phase, the share done, done of total,
/// the simulated time and the wall time left, from `wall_s` seconds of wall time spent
/// in the phase so far.
pub fn line(prefix: &str, p: &Progress, wall_s: f64) -> String {
    let (share, bound) = summarize(p);
    let phase = phase_name(p.phase);
    let sim = p.now as f64 / 1e9;
    let amount = match bound {
        Bound::Bytes(d, t) => format!("{} of {}, {sim:.3} s simulated", bytes(d), bytes(t)),
        Bound::Ios(d, t) => format!("{d} of {t} I/Os, {sim:.3} s simulated"),
        Bound::Time(d, t) => format!("{:.3} of {:.3} s simulated", d as f64 / 1e9, t as f64 / 1e9),
        Bound::Mixed(ios) => format!("{ios} I/Os, {sim:.3} s simulated"),
    };
    let left = if share >= 1.0 {
        "0s".to_string()
    } else if share > 0.001 && wall_s > 0.0 {
        eta(wall_s * (1.0 - share) / share)
    } else {
        "--".to_string()
    };
    format!(
        "{prefix}: {phase} {:5.1}% ({amount}), ETA {left}",
        share * 100.0
    )
}

/// A multi-run command's line: `validate: [7/52] hsq-read-legacy`.
pub fn step_line(command: &str, index: usize, total: usize, label: &str) -> String {
    format!("{command}: [{index}/{total}] {label}")
}

/// The step a multi-run command is at, which a simulation's line then starts with.
static STEP: Mutex<String> = Mutex::new(String::new());

/// Shows (when [`enabled`]) that run `index` of `total` (from 1), `label`, is going.
pub fn show_step(command: &str, index: usize, total: usize, label: &str) {
    let l = step_line(command, index, total, label);
    if enabled() {
        eprint!("\r{l}\x1b[K");
    }
    *STEP.lock().unwrap_or_else(|e| e.into_inner()) = l;
}

/// Shows (when [`enabled`]) a multi-run command's own status line, which a
/// simulation's line then starts with.
pub fn show_text(line: &str) {
    if enabled() {
        eprint!("\r{line}\x1b[K");
    }
    *STEP.lock().unwrap_or_else(|e| e.into_inner()) = line.to_string();
}

/// Ends a multi-run command's display: the line is cleared.
pub fn end_steps() {
    let mut s = STEP.lock().unwrap_or_else(|e| e.into_inner());
    if enabled() && !s.is_empty() {
        eprint!("\r\x1b[K");
    }
    s.clear();
}

/// What a simulation's line starts with: the current step, else `flashpath`.
pub fn prefix() -> String {
    let s = STEP.lock().unwrap_or_else(|e| e.into_inner());
    if s.is_empty() {
        "flashpath".into()
    } else {
        s.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(bytes: (u64, u64), ios: (u64, u64), time: Option<u64>) -> JobProgress {
        JobProgress {
            issued_bytes: bytes.0,
            issued_ios: ios.0,
            bytes_limit: bytes.1,
            ios_limit: ios.1,
            time_limit_ns: time,
            startdelay_ns: 0,
            stonewall: false,
            started_ns: Some(0),
            finished: false,
        }
    }

    fn at(now: u64, phase: Phase, jobs: Vec<JobProgress>) -> Progress {
        Progress {
            now,
            phase,
            phase_start_ns: 0,
            jobs,
        }
    }

    #[test]
    fn a_size_bound_job_counts_bytes() {
        let p = at(
            2_000_000_000,
            Phase::Jobs,
            vec![job((256 << 20, 1 << 30), (65536, 0), None)],
        );
        assert_eq!(summarize(&p), (0.25, Bound::Bytes(256 << 20, 1 << 30)));
        // A quarter done in 10 s of wall time: 30 s left.
        assert_eq!(
            line("flashpath", &p, 10.0),
            "flashpath: jobs  25.0% (256.0 MiB of 1.0 GiB, 2.000 s simulated), ETA 30s"
        );
    }

    #[test]
    fn the_precondition_is_its_own_phase() {
        let p = at(
            500_000_000,
            Phase::Precondition,
            vec![job((768 << 20, 1 << 30), (0, 0), None)],
        );
        assert_eq!(
            line("flashpath", &p, 90.0),
            "flashpath: precondition  75.0% (768.0 MiB of 1.0 GiB, 0.500 s simulated), ETA 30s"
        );
    }

    #[test]
    fn number_ios_counts_ios() {
        let p = at(
            1_000_000,
            Phase::Jobs,
            vec![
                job((0, 0), (100, 1000), None),
                job((0, 0), (300, 1000), None),
            ],
        );
        assert_eq!(summarize(&p), (0.2, Bound::Ios(400, 2000)));
        assert!(line("x", &p, 1.0).contains("400 of 2000 I/Os"));
    }

    #[test]
    fn time_based_jobs_count_simulated_time_by_group() {
        // Two jobs side by side for 10 s, then a stonewalled one for 20 s: 30 s planned.
        let mut third = job((0, 0), (0, 0), Some(20_000_000_000));
        third.stonewall = true;
        third.started_ns = None;
        let p = at(
            6_000_000_000,
            Phase::Jobs,
            vec![
                job((0, 0), (5, 0), Some(10_000_000_000)),
                job((0, 0), (5, 0), Some(10_000_000_000)),
                third,
            ],
        );
        assert_eq!(
            summarize(&p),
            (0.2, Bound::Time(6_000_000_000, 30_000_000_000))
        );
        assert_eq!(
            line("flashpath", &p, 2.0),
            "flashpath: jobs  20.0% (6.000 of 30.000 s simulated), ETA 8s"
        );
    }

    #[test]
    fn mixed_bounds_give_the_share_only() {
        // One job ends at 1 GiB or 10 s, whichever first: the larger share counts.
        let p = at(
            5_000_000_000,
            Phase::Jobs,
            vec![job((256 << 20, 1 << 30), (1234, 0), Some(10_000_000_000))],
        );
        assert_eq!(summarize(&p), (0.5, Bound::Mixed(1234)));
        assert!(line("x", &p, 1.0).contains("1234 I/Os, 5.000 s simulated"));
    }

    #[test]
    fn finished_jobs_are_whole_and_nothing_done_has_no_eta() {
        let mut j = job((10, 1 << 20), (1, 0), None);
        j.finished = true; // ended early (its random map filled)
        let p = at(1, Phase::Jobs, vec![j]);
        assert_eq!(summarize(&p).0, 1.0);
        let p = at(1, Phase::Jobs, vec![job((0, 1 << 20), (0, 0), None)]);
        assert!(line("x", &p, 3.0).ends_with("ETA --"));
    }

    #[test]
    fn durations_and_sizes_read_naturally() {
        assert_eq!(eta(12.4), "12s");
        assert_eq!(eta(185.0), "3m05s");
        assert_eq!(eta(3723.0), "1h02m03s");
        assert_eq!(eta(f64::INFINITY), "--");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(
            step_line("validate", 7, 52, "hsq-read-legacy"),
            "validate: [7/52] hsq-read-legacy"
        );
    }
}
