//! What a front end shows while the simulation runs: where the run is (the
//! preconditioning or the jobs, each job's issued I/O against what bounds it) and the
//! jobs' statistics so far (fio's `--status-interval` reports). Both are read between
//! `run_until` steps from counters the simulation keeps anyway: nothing is added to
//! the per-I/O path.

use super::{Sim, ThreadState};
use crate::engine::SimTime;
use crate::stats::RunResult;

/// Which jobs are running: the preconditioning writes or the reported jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Precondition,
    Jobs,
}

/// One job thread of the phase under way: what it has issued and what ends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobProgress {
    /// Bytes and I/Os issued so far.
    pub issued_bytes: u64,
    pub issued_ios: u64,
    /// Bytes that end the job (fio's io_size times loops); 0 for a time_based job,
    /// which its runtime ends.
    pub bytes_limit: u64,
    /// fio's number_ios (0: no cap).
    pub ios_limit: u64,
    /// fio's runtime plus ramp_time, when a runtime is set.
    pub time_limit_ns: Option<u64>,
    /// The job's startdelay.
    pub startdelay_ns: u64,
    /// It starts a new stonewall group (the jobs before it must all end first).
    pub stonewall: bool,
    /// When it started (None: not yet).
    pub started_ns: Option<SimTime>,
    pub finished: bool,
}

/// Where the run is (see [`Sim::progress_detail`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    pub now: SimTime,
    pub phase: Phase,
    /// When the phase began (0 for the first).
    pub phase_start_ns: SimTime,
    /// The phase's job threads, in job order.
    pub jobs: Vec<JobProgress>,
}

impl Sim {
    /// Where the run is: the phase under way and each of its threads' issued I/O
    /// against its bounds. Reads the counters the threads keep; cheap enough to call
    /// between `run_until` steps.
    pub fn progress_detail(&self) -> Progress {
        let pre_running = self.prefill > 0
            && self.threads[..self.prefill]
                .iter()
                .any(|t| t.state != ThreadState::Finished);
        let (phase, range) = if pre_running {
            (Phase::Precondition, 0..self.prefill)
        } else {
            (Phase::Jobs, self.prefill..self.threads.len())
        };
        let phase_start_ns = match phase {
            Phase::Precondition => 0,
            Phase::Jobs => self.jobs_started_at().unwrap_or(self.now),
        };
        let jobs = range
            .map(|t| {
                let th = &self.threads[t];
                let j = &self.cfg.jobs[t];
                let started = !matches!(th.state, ThreadState::NotStarted | ThreadState::Waiting);
                JobProgress {
                    issued_bytes: th.src.issued_bytes,
                    issued_ios: th.src.issued_ios,
                    bytes_limit: if j.time_based { 0 } else { j.io_limit },
                    ios_limit: j.max_ios,
                    time_limit_ns: j.runtime_ns.map(|r| r + j.ramp_ns),
                    startdelay_ns: j.startdelay_ns,
                    stonewall: j.stonewall,
                    started_ns: started.then_some(th.start),
                    finished: th.state == ThreadState::Finished,
                }
            })
            .collect();
        Progress {
            now: self.now,
            phase,
            phase_start_ns,
            jobs,
        }
    }

    /// When the reported jobs began: the first one's start (after any
    /// preconditioning), or `None` before it.
    pub fn jobs_started_at(&self) -> Option<SimTime> {
        self.threads[self.prefill..]
            .iter()
            .filter(|t| !matches!(t.state, ThreadState::NotStarted | ThreadState::Waiting))
            .map(|t| t.start)
            .min()
    }

    /// The reported jobs' statistics so far, as [`Sim::finish`] would give them if the
    /// run ended at `at` (no earlier than the last event handled, which `run_until(at)`
    /// leaves it): a running job's runtime runs to `at`, the disk's second sample is
    /// taken then (fio's `--status-interval` reports, which are cumulative). A verify
    /// failure is reported at the end only. Clones the jobs' statistics: for a few
    /// calls in a run, not one per I/O.
    pub fn snapshot_at(&self, at: SimTime) -> RunResult {
        let now = at.max(self.now);
        let mut sys = self.system_stats();
        sys.sim_end_ns = now;
        if self.unfinished > 0 {
            sys.disk_end = self.block.disk_stats(now);
        }
        let jobs = (self.prefill..self.threads.len())
            .map(|t| {
                let th = &self.threads[t];
                let mut s = th.stats.clone();
                s.job -= self.prefill;
                let live = matches!(
                    th.state,
                    ThreadState::Running | ThreadState::Sleeping | ThreadState::Delayed
                );
                if live {
                    s.end_ns = now;
                    s.runtime_ns = now.saturating_sub(th.measure_start);
                    let from = th.last_change.max(th.measure_start);
                    if now > from {
                        s.outstanding_area += th.outstanding as u128 * (now - from) as u128;
                    }
                }
                s.steadystate = self.ss_result(t);
                s.close_spans();
                s
            })
            .collect();
        RunResult { jobs, system: sys }
    }
}
