//! fio's fill_device (fill_fs): a job writes until the filesystem is full, and the write
//! that finds no space fails with ENOSPC, which ends the job without error.
//!
//! fio 3.33: init.c sets size to "something really large" (-1) when fill_device is set
//! without one; the job's sequential writes go on until ext4 cannot allocate the next
//! write's blocks: the system call returns ENOSPC before any bio is made (ext4_map_blocks
//! fails in the write path), so the device sees nothing. fio counts that write among the
//! issued ones (ioengines.c td_io_queue: `total_io_u`, io_u_mark_depth, io_u_mark_submit
//! and io_u_mark_complete), logs it (io_u.c io_u_log_error: "fio: io_u error on file
//! ...: No space left on device: write offset=..., buflen=..."), but not in bytes or
//! latencies (io_completed counts only I/Os without error); backend.c
//! break_on_this_error then clears the error and marks the thread to terminate, so the
//! job ends with err=0 and does not run a verify phase of its own.
//!
//! The region the front end gives such a job (`JobConfig::fill_enospc`) is the free
//! space, a whole number of the job's writes: once the job has issued it, the next
//! write is that failing one. It costs the thread one system call on its core and
//! nothing below the syscall layer. Leaves out: a write ext4 can allocate only part of
//! (mballoc halves the request until it fits: a short write, whose rest then fails);
//! with an asynchronous engine, further writes fio queues before it reaps the failure
//! (ext4 completes an appending O_DIRECT write inside io_submit, so fio sees the
//! failures only when its queue is full: up to iodepth of them).
//! Units: nanoseconds, bytes.

use crate::sim::Ev;
use crate::sim::{Sim, Submission, ThreadState};
use flashpath_hist::{batch_bucket, depth_level_bucket};

impl Sim {
    /// If job thread `t` has written its fill_device region and has not yet failed, it
    /// issues the write that fails with ENOSPC and is marked to terminate; true when it
    /// did (the thread runs again once the system call has returned).
    pub(in crate::sim) fn fill_enospc(&mut self, t: u32) -> bool {
        let now = self.now;
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        if !cfg.fill_enospc
            || th.terminated
            || th.stats.enospc_write.is_some()
            || th.src.issued_bytes < cfg.io_limit
            || cfg
                .runtime_ns
                .is_some_and(|rt| now >= th.start.saturating_add(cfg.ramp_ns).saturating_add(rt))
        {
            return false;
        }
        let costs = &self.cfg.host.costs;
        let cost = match cfg.submission {
            Submission::Sync => costs.syscall_ns,
            // io_submit, then the iocb's write fails inside it.
            Submission::Async { .. } => costs.aio_submit_ns + costs.syscall_ns,
        };
        let len = cfg.bs[1].max();
        let th = &mut self.threads[t as usize];
        th.stats.enospc_write = Some(len);
        th.stats.depth_hist[depth_level_bucket(th.inflight + 1)] += 1;
        th.stats.submit_hist[batch_bucket(1)] += 1;
        th.stats.complete_hist[batch_bucket(1)] += 1;
        th.stats.sys_ns += cost;
        th.terminated = true;
        th.state = ThreadState::Running;
        let core = th.core;
        let end = self.cpu.run_l(core, now, cost, "syscall enospc");
        self.q.push(end, Ev::ThreadRun(t));
        true
    }
}
