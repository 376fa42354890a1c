//! fio's error handling in the job thread (td_error.c, backend.c `break_on_this_error`,
//! io_u.c `io_completed`, fio 3.33): which errors end a job and which it counts and goes
//! on after (`continue_on_error`, `ignore_error`).
//!
//! ```text
//!  error at queue time (td_io_queue: a trim of a regular file, ENOTTY)
//!     └─ break_on_this_error: type bit not in continue_on_error ─▶ job ends, not counted
//!                             non-fatal (td_non_fatal_error)      ─▶ counted, job goes on
//!                             otherwise                           ─▶ counted, job ends
//!  error at completion (io_completed: a verify failure, EILSEQ)
//!     └─ non-fatal ─▶ counted, job goes on;  otherwise ─▶ job ends (td_verror), and a
//!        synchronous engine's -1 return goes through break_on_this_error as errno 1
//! ```
//!
//! td_non_fatal_error: an error is non-fatal when its type (read, write, verify: EILSEQ
//! is always verify, a trim is write) is in `continue_on_error` and the errno is in the
//! type's `ignore_error` list, which is EIO and EILSEQ unless `ignore_error` set one.
//! The errors the simulation produces: ENOTTY (a trim of a regular file:
//! ioctl(BLKDISCARD) on it) and EILSEQ (a verify failure). Units: errno numbers.

pub use crate::workload::error_policy::{
    ErrorCount, ErrorPolicy, ErrorType, OnError, EILSEQ, EIO, ENOTTY, EPERM,
};

use crate::sim::{Ev, Sim, ThreadState};
use crate::stats::JobError;
use crate::workload::Submission;
use flashpath_hist::{batch_bucket, depth_level_bucket};

impl Sim {
    /// A trim of a regular file failed in its ioctl (`errno`, ENOTTY): td_io_queue
    /// counts the issue (io_issues, total_io_u, depth 1) and no bytes, records the
    /// error (td_verror) and break_on_this_error decides; the system call's `cost` is
    /// spent on the thread's core.
    pub(in crate::sim) fn trim_failed(&mut self, t: u32, errno: i32, cost: u64) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let policy = &self.cfg.jobs[th.cfg].errors;
        if now >= th.measure_start {
            th.stats.trim.ios += 1;
            th.stats.depth_hist[depth_level_bucket(1)] += 1;
            th.stats.submit_hist[batch_bucket(1)] += 1;
            th.stats.complete_hist[batch_bucket(1)] += 1;
        }
        let e = JobError {
            errno,
            func: "td_io_queue",
            message: String::new(),
        };
        th.stats.last_verror = Some(e.clone());
        match policy.on_queue_error(false, errno) {
            OnError::Continue => th.stats.errors.add(errno),
            OnError::Stop { counted } => {
                if counted {
                    th.stats.errors.add(errno);
                }
                th.stats.error = Some(e);
                th.terminated = true;
            }
        }
        // At least a nanosecond: a job that goes on after its failed trims must see
        // time pass (a zero-cost test host would otherwise loop at one instant).
        let cost = cost.max(1);
        th.stats.sys_ns += cost;
        th.state = ThreadState::Running;
        let end = self.cpu.run_l(th.core, now, cost, "ioctl");
        self.q.push(end, Ev::ThreadRun(t));
    }

    /// A verify read of thread `t` failed (EILSEQ), found now: io_completed (or the
    /// verify thread) counts it and goes on when it is non-fatal; otherwise it ends the
    /// job (td_verror), and a synchronous engine's -1 return goes through
    /// break_on_this_error as errno 1 (EPERM), a read.
    pub(in crate::sim) fn verify_error(&mut self, t: u32, f: crate::sim::VerifyFailure) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        let policy = &cfg.errors;
        let fatal_flag = cfg.verify.as_ref().is_some_and(|v| v.fatal);
        let failed_before = self.verify.as_ref().expect("verifying").jobs[t as usize]
            .as_ref()
            .is_some_and(|j| j.failure.is_some());
        let go_on = if failed_before {
            // The job has ended on an earlier failure: this one is only logged.
            true
        } else if policy.non_fatal(ErrorType::Verify, EILSEQ) {
            th.stats.errors.add(EILSEQ);
            // verify_fatal: a bad checksum (not a bad header, which returns before
            // verify_io_u's check) marks the job to terminate.
            if fatal_flag && f.kind == crate::sim::FailureKind::Checksum {
                th.terminated = true;
            }
            true
        } else if matches!(cfg.submission, Submission::Sync) && !f.verify_thread {
            match policy.on_queue_error(true, EPERM) {
                OnError::Continue => {
                    th.stats.errors.add(EPERM);
                    true
                }
                OnError::Stop { counted } => {
                    if counted {
                        th.stats.errors.add(EPERM);
                    }
                    false
                }
            }
        } else {
            false
        };
        // verify.c logs every failure as it finds it.
        if t as usize >= self.prefill {
            for o in &mut self.observers {
                o.verify_failed(t as usize - self.prefill, now, &f);
            }
        }
        if go_on {
            return;
        }
        let v = self.verify.as_mut().expect("verifying");
        let j = v.jobs[t as usize].as_mut().expect("a verifying job");
        if j.failure.is_none() {
            j.failure = Some(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(bits: u8, ignore: [Option<Vec<i32>>; 3]) -> ErrorPolicy {
        ErrorPolicy {
            continue_on: bits,
            ignore,
        }
    }

    #[test]
    fn td_non_fatal_error_needs_the_type_bit_and_the_errno_in_its_list() {
        // continue_on_error=none: nothing is non-fatal.
        let none = policy(0, Default::default());
        assert!(!none.non_fatal(ErrorType::Verify, EILSEQ));
        assert!(!none.non_fatal(ErrorType::Read, EIO));
        // continue_on_error=verify: EILSEQ and EIO (fio's default list) of that type.
        let v = policy(1 << 2, Default::default());
        assert!(v.non_fatal(ErrorType::Verify, EILSEQ));
        assert!(v.non_fatal(ErrorType::Verify, EIO));
        assert!(!v.non_fatal(ErrorType::Read, EIO));
        assert!(!v.non_fatal(ErrorType::Verify, ENOTTY));
        // ignore_error replaces the default list of its type only.
        let w = policy(1 << 1 | 1 << 2, [None, Some(vec![28]), Some(vec![EIO])]);
        assert!(w.non_fatal(ErrorType::Write, 28));
        assert!(!w.non_fatal(ErrorType::Write, EIO));
        assert!(!w.non_fatal(ErrorType::Verify, EILSEQ));
        assert!(w.non_fatal(ErrorType::Verify, EIO));
    }

    #[test]
    fn td_error_type_makes_eilseq_verify_and_trims_writes() {
        assert_eq!(ErrorType::of(true, EILSEQ), ErrorType::Verify);
        assert_eq!(ErrorType::of(false, EILSEQ), ErrorType::Verify);
        assert_eq!(ErrorType::of(true, EIO), ErrorType::Read);
        assert_eq!(ErrorType::of(false, ENOTTY), ErrorType::Write);
    }

    #[test]
    fn break_on_this_error_counts_a_fatal_error_only_with_its_type_bit() {
        // fio 3.33, a trim of a regular file (ENOTTY): none -> not counted; write ->
        // counted, ends; write with ignore_error=,ENOTTY -> counted, goes on.
        let none = policy(0, Default::default());
        assert_eq!(
            none.on_queue_error(false, ENOTTY),
            OnError::Stop { counted: false }
        );
        let w = policy(1 << 1, Default::default());
        assert_eq!(
            w.on_queue_error(false, ENOTTY),
            OnError::Stop { counted: true }
        );
        let wi = policy(1 << 1, [None, Some(vec![ENOTTY]), None]);
        assert_eq!(wi.on_queue_error(false, ENOTTY), OnError::Continue);
        // A synchronous engine's failed verify read comes back as -1: EPERM, a read.
        let r = policy(1 << 0, Default::default());
        assert_eq!(
            r.on_queue_error(true, EPERM),
            OnError::Stop { counted: true }
        );
        let mut c = ErrorCount::default();
        c.add(ENOTTY);
        c.add(EILSEQ);
        assert_eq!(
            c,
            ErrorCount {
                total: 2,
                first: ENOTTY
            }
        );
    }
}
