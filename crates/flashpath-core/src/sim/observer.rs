//! Per-I/O observers: what a front end needs to follow a run as it goes (fio's
//! time-series logs, `write_iolog`, progress) without the simulator keeping anything
//! that grows with the run.
//!
//! An observer sees each fio I/O twice, at the two points fio itself logs them: when the
//! job queues it (`td_io_queue`: where `write_iolog` records the I/O) and when the job
//! reaps it (`io_completed`: where the latency and bandwidth samples are added). Page
//! cache, writeback and flush I/O are not fio I/Os and are not observed. Observers are
//! called in simulated-time order; the I/Os of preconditioning jobs are not observed.

use crate::engine::SimTime;
use crate::workload::Dir;

/// A fio I/O the job has just queued (the start of its system call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoQueued {
    /// The job thread (index into the run's jobs, preconditioning jobs excluded).
    pub job: usize,
    pub dir: Dir,
    /// A trim (`rw=trim`, BLKDISCARD); `dir` is then `Write`.
    pub trim: bool,
    /// Offset in bytes from the start of the device.
    pub offset: u64,
    pub len: u64,
    /// Simulated time of the queueing.
    pub t: SimTime,
}

/// A fio I/O the job has just reaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoDone {
    pub job: usize,
    pub dir: Dir,
    pub trim: bool,
    pub offset: u64,
    pub len: u64,
    /// Queued (fio's io_u start time).
    pub t_start: SimTime,
    /// The submitting system call returned (end of slat; equals `t_done` for a
    /// synchronous engine, whose whole call is the completion latency).
    pub t_issued: SimTime,
    /// Reaped: now.
    pub t_done: SimTime,
    /// Submission latency (`None` for synchronous engines, as fio reports none).
    pub slat: Option<SimTime>,
    /// Completion latency as fio measures it.
    pub clat: SimTime,
    /// Total latency (`t_done - t_start`).
    pub lat: SimTime,
    /// The I/O counts in the job's statistics: it started after the ramp (fio's
    /// `ramp_time`). fio adds log samples only for these.
    pub measured: bool,
}

/// Follows a run's fio I/Os as they happen. Every method has an empty default.
pub trait IoObserver: Send {
    /// A job thread started at `t` (after `startdelay`, its stonewall turn or
    /// `wait_for`); its statistics start at `measure_start` (after `ramp_time`).
    fn job_started(&mut self, _job: usize, _t: SimTime, _measure_start: SimTime) {}
    fn queued(&mut self, _io: &IoQueued) {}
    /// The job queued an fsync (`datasync`: an fdatasync) at `t`: fio's fsync=N,
    /// fdatasync=N, end_fsync and a replayed sync (a DDIR_SYNC io_u, which
    /// `write_iolog` records). The fsync inside an O_SYNC write is not one.
    fn sync_queued(&mut self, _job: usize, _t: SimTime, _datasync: bool) {}
    fn done(&mut self, _io: &IoDone) {}
    /// A verify read failed: fio logs each failure as it finds it (the first that
    /// ends the job is also in its statistics).
    fn verify_failed(&mut self, _job: usize, _t: SimTime, _f: &super::VerifyFailure) {}
    /// The job thread finished (its last I/O reaped, or ended by time or exitall).
    fn job_finished(&mut self, _job: usize, _t: SimTime) {}
    /// The run is over: flush and close what the observer writes. Its error (an
    /// output that could not be written) is the run's.
    fn close(&mut self, _end: SimTime) -> Result<(), String> {
        Ok(())
    }
}

impl super::Sim {
    /// Observers see thread `t` queue `spec` now (not a preconditioning job's). One
    /// `is_empty` check when nobody observes.
    #[inline(always)]
    pub(super) fn observe_queued(&mut self, t: u32, spec: &crate::workload::IoSpec) {
        if !self.observers.is_empty() && t as usize >= self.prefill {
            self.tell_queued(t, spec);
        }
    }

    /// `observe_queued`'s call of each observer, out of line.
    #[inline(never)]
    fn tell_queued(&mut self, t: u32, spec: &crate::workload::IoSpec) {
        let q = IoQueued {
            job: t as usize - self.prefill,
            dir: spec.dir,
            trim: spec.trim,
            offset: spec.offset,
            len: spec.len,
            t: self.now,
        };
        for o in &mut self.observers {
            o.queued(&q);
        }
    }
}
