//! fio's minimum rate check in the job thread's loop (backend.c do_io: after each round
//! of reaped completions, outside the ramp time, `check_min_rate`; the arithmetic is in
//! workload/rate.rs). A job below its rate_min or rate_iops_min fails as fio's does
//! (`td_verror(td, EIO, "check_min_rate")`): it issues nothing more, its I/Os in flight
//! complete and are reaped (cleanup_pending_aio), and its report carries the error.
//! Units: nanoseconds.

use crate::sim::Sim;
use crate::stats::JobError;

impl Sim {
    pub(in crate::sim) fn check_min_rate(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if now < th.measure_start || th.stats.error.is_some() {
            return;
        }
        let cfg = &self.cfg.jobs[th.cfg];
        let d = &th.stats.dirs;
        let done = [(d[0].bytes, d[0].ios), (d[1].bytes, d[1].ios)];
        let Some(m) = th.min_rate.as_mut() else {
            return;
        };
        if let Some(message) = m.check(&cfg.name, &cfg.rate_min, now - th.measure_start, done) {
            th.stats.error = Some(JobError {
                errno: 5,
                func: "check_min_rate",
                message,
            });
            th.terminated = true;
        }
    }
}
