//! fio's latency profile (fio 3.33 io_u.c lat_target_*, `latency_target`,
//! `latency_window`, `latency_percentile`, `latency_run`; examples/latency-profile.fio):
//! the job searches the largest queue depth at which its I/Os meet the latency target.
//!
//! It starts at depth 1 (lat_target_init; fio's queue_full holds the depth). Each I/O
//! whose total latency (issue start to completion) exceeds the target counts as failed;
//! with latency_percentile=100 one such I/O fails the depth at once. After each round
//! of reaped completions (do_io's lat_target_check, outside ramp_time) a window of
//! latency_window ends with the share of I/Os that met the target: at least the
//! percentile → success, the depth doubles (or bisects towards the lowest failed depth,
//! which creeps up by one after three stable successes just below it), capped at
//! iodepth; else the depth bisects down towards the highest depth that met it. A
//! failure at depth 1 is fatal: `fio: latency of N nsec exceeds specified max (M nsec)`,
//! err=110 (ETIMEDOUT). A ramp-down first quiesces the queue (io_u_quiesce); the I/Os
//! it drains, issued at the failed depth, do not count against the new one (fio's
//! stated intent; its nested accounting inside io_u_quiesce was not followed). A success
//! that leaves the depth unchanged (without latency_run) quiesces, resets the job's
//! statistics, I/O count and clock (reset_all_stats: the final run at the depth found),
//! and the next such success ends the job. The depth found is reported (`latency :
//! ... depth=N`). Units: nanoseconds.

use crate::engine::SimTime;
use crate::sim::{Sim, ThreadState};
use crate::stats::{JobError, JobStats};
use crate::workload::LatTarget;

/// What runs once the queue is quiesced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    NewCycle,
    FinalRun,
}

/// fio's td->latency_* state of one thread.
#[derive(Clone, Debug)]
pub(in crate::sim) struct LatProfile {
    qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable: u32,
    end_run: bool,
    window_start: SimTime,
    window_ios: u64,
    failed: u64,
    /// I/Os completed (fio's io_blocks sum).
    done_ios: u64,
    quiesce: Option<After>,
}

impl LatProfile {
    /// lat_target_init at `now`.
    pub(in crate::sim) fn new(now: SimTime) -> Self {
        LatProfile {
            qd: 1,
            qd_high: 0,
            qd_low: 1,
            stable: 0,
            end_run: false,
            window_start: now,
            window_ios: 0,
            failed: 0,
            done_ios: 0,
            quiesce: None,
        }
    }
}

impl Sim {
    fn lat_cfg(&self, t: u32) -> (LatTarget, u32) {
        let th = &self.threads[t as usize];
        let j = &self.cfg.jobs[th.cfg];
        (j.lat_target.expect("a latency profile"), j.depth())
    }

    /// The thread starts: lat_target_init.
    pub(in crate::sim) fn lat_target_start(&mut self, t: u32) {
        let now = self.now;
        let (_, iodepth) = self.lat_cfg(t);
        let th = &mut self.threads[t as usize];
        let mut p = LatProfile::new(now);
        p.qd_high = iodepth;
        th.depth = p.qd;
        th.stats.lat_depth = Some(p.qd);
        th.lat = Some(p);
    }

    /// The reaped I/Os `done` (not yet recorded) against the target
    /// (account_io_completion): false if one was fatal.
    pub(in crate::sim) fn lat_target_reaped(&mut self, t: u32, done: &[u32]) {
        let now = self.now;
        let (lt, _) = self.lat_cfg(t);
        if now < self.threads[t as usize].measure_start {
            return;
        }
        for &io in done {
            let x = &self.ios[io as usize];
            let lat = now - x.t_start;
            let (dir, offset, len) = (x.dir, x.offset, x.len);
            let th = &mut self.threads[t as usize];
            let p = th.lat.as_mut().expect("a latency profile");
            p.done_ios += 1;
            // I/Os issued at a depth that already failed complete during the quiesce
            // (fio reaps them inside io_u_quiesce, "to prevent a storm of ramp downs
            // due to pending higher depth"): they do not fail the new depth.
            if lat <= lt.target_ns || p.quiesce.is_some() {
                continue;
            }
            if lt.percentile < 100.0 {
                p.failed += 1;
                continue;
            }
            if p.qd == 1 {
                if th.stats.error.is_none() {
                    th.stats.error = Some(JobError {
                        errno: 110,
                        func: "max latency exceeded",
                        message: format!(
                            "fio: latency of {lat} nsec exceeds specified max ({} nsec): %FILE% {} {offset} {len}",
                            lt.target_ns,
                            if dir == crate::workload::Dir::Read { "read" } else { "write" },
                        ),
                    });
                    th.terminated = true;
                }
                return;
            }
            self.lat_ramp_down(t);
        }
    }

    /// __lat_target_failed with the depth above 1: bisect down, then quiesce and start a
    /// new window.
    fn lat_ramp_down(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        let p = th.lat.as_mut().expect("a latency profile");
        p.qd_high = p.qd;
        if p.qd == p.qd_low {
            p.qd_low -= 1;
        }
        p.qd = (p.qd + p.qd_low) / 2;
        p.stable = 0;
        p.quiesce = Some(After::NewCycle);
        th.depth = p.qd;
        th.stats.lat_depth = Some(p.qd);
    }

    /// lat_target_check after a round of reaps, and the end of a quiesce. Returns true
    /// if the thread must wait for its queue to drain before it issues.
    pub(in crate::sim) fn lat_target_check(&mut self, t: u32) -> bool {
        let now = self.now;
        let (lt, iodepth) = self.lat_cfg(t);
        let th = &mut self.threads[t as usize];
        let inflight = th.inflight;
        let p = th.lat.as_mut().expect("a latency profile");
        if let Some(after) = p.quiesce {
            if inflight > 0 {
                return true;
            }
            p.quiesce = None;
            if after == After::FinalRun {
                self.lat_final_run(t);
            }
            let th = &mut self.threads[t as usize];
            let p = th.lat.as_mut().expect("a latency profile");
            p.window_start = now;
            p.window_ios = p.done_ios;
            p.failed = 0;
            return false;
        }
        if now < th.measure_start || now - p.window_start < lt.window_ns {
            return false;
        }
        let ios = p.done_ios - p.window_ios;
        let success = (ios as f64 - p.failed as f64) / ios as f64 * 100.0;
        if success >= lt.percentile {
            // lat_target_success
            let qd = p.qd;
            p.qd_low = p.qd;
            if p.qd + 1 == p.qd_high {
                p.stable += 1;
                if p.stable >= 3 {
                    p.qd_high += 1;
                    p.stable = 0;
                }
            }
            if p.qd_high != iodepth {
                p.qd = (p.qd + p.qd_high) / 2;
            } else {
                p.qd *= 2;
            }
            p.qd = p.qd.min(iodepth);
            th.depth = p.qd;
            th.stats.lat_depth = Some(p.qd);
            if !lt.run && p.qd == qd {
                if p.end_run {
                    th.terminated = true;
                } else {
                    p.end_run = true;
                    p.quiesce = Some(After::FinalRun);
                    return inflight > 0 || self.lat_target_check(t);
                }
            }
        } else if p.qd > 1 {
            self.lat_ramp_down(t);
            return self.lat_target_check(t);
        } else {
            // __lat_target_failed at depth 1 from the window check: fio ignores its
            // answer there and starts no new window, so the next round checks again.
            return false;
        }
        let th = &mut self.threads[t as usize];
        let p = th.lat.as_mut().expect("a latency profile");
        p.window_start = now;
        p.window_ios = p.done_ios;
        p.failed = 0;
        false
    }

    /// reset_all_stats at the depth found: the statistics, the I/O count and the clock
    /// start again (the final run).
    fn lat_final_run(&mut self, t: u32) {
        let now = self.now;
        self.account_outstanding(t);
        let th = &mut self.threads[t as usize];
        let old = std::mem::take(&mut th.stats);
        th.stats = JobStats {
            job: old.job,
            name: old.name,
            start_ns: old.start_ns,
            error: old.error,
            lat_depth: old.lat_depth,
            ..Default::default()
        };
        th.start = now;
        th.measure_start = now;
        th.last_change = now;
        th.src.issued_bytes = 0;
        th.src.issued_ios = 0;
        debug_assert!(th.state != ThreadState::Finished);
        self.occupancy_start(t);
    }
}
