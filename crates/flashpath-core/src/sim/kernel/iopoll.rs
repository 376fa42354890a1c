//! Polled completion: fio's `hipri` (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI),
//! on queues that cannot poll, which is every modelled driver.
//!
//! ```text
//!  io_uring_enter(GETEVENTS)                     device ── IRQ ── bio end_io
//!   io_iopoll_check ─┐ spin: blk_poll()=0                 io_complete_rw_iopoll:
//!                    └─ loop ◄──── sees iopoll_completed ◄─ sets iopoll_completed
//!                       (core busy, no sleep, no wake-up)   (no task wake-up)
//! ```
//!
//! A queue polls only when its driver gives blk-mq poll queues (`.poll` in its
//! blk_mq_ops, HCTX_TYPE_POLL maps): MMC's mmc_mq_ops never has one (drivers/mmc/core/
//! queue.c, 4.16 to 6.x), and ufshcd gains `.mq_poll = ufshcd_poll` only with MCQ in
//! 6.3 (the UFS presets run 4.4); before blk-mq there is no poll at all. So
//! `DriverKind::poll_queues` is false for every modelled driver, and the kernel does what
//! it does on such a queue (5.4 and 5.13 sources read, block/blk-core.c
//! generic_make_request_checks, blk-mq.c blk_poll, fs/io_uring.c, fs/block_dev.c):
//! - submit_bio clears REQ_HIPRI (no QUEUE_FLAG_POLL): the request completes by its
//!   interrupt, as any other.
//! - io_uring with IOPOLL still accepts the direct I/O (the block device file has
//!   `->iopoll`), and its reaper spins in io_iopoll_check / io_do_iopoll, calling
//!   blkdev_iopoll → blk_poll, which returns 0 at once, until the interrupt's completion
//!   marks the request done. The thread never sleeps: its core is busy for the whole
//!   wait (system time), the completion costs no wake-up or context switch, and the
//!   reap follows at once. A buffered I/O is refused (-EOPNOTSUPP: IOPOLL needs
//!   IOCB_DIRECT).
//! - pvsync2's RWF_HIPRI (`__blkdev_direct_IO_simple`): `if (!(iocb->ki_flags &
//!   IOCB_HIPRI) || !blk_poll(q, qc, true)) io_schedule();` blk_poll returns 0, so the
//!   thread sleeps as without hipri: no change.
//!
//! fio polls the same way without hipri when iodepth_batch_complete_min=0 (libaio.c and
//! io_uring.c fio_*_getevents: `actual_min = 0`, so io_getevents / io_uring_enter
//! return at once and fio calls them again until an event is there, never sleeping):
//! such a thread spins too, on any driver, its completions still raised by their
//! interrupts. libaio's userspace_reap then reads the completion ring in user space
//! (user_io_getevents), with no system call for the reap; with a non-zero
//! iodepth_batch_complete_min fio never reaps that way, and it changes nothing.
//!
//! io_uring needs Linux 5.1, preadv2's RWF_HIPRI 4.6: a host preset with an older
//! kernel is refused. The spin fills the core's idle time: a thread sharing the core is
//! still served (CFS time-slices it with the spinner, which calls cond_resched).
//! Units: nanoseconds.

use crate::engine::SimTime;
use crate::host::Kernel;
use crate::sim::{Sim, SimConfig, ThreadState};
use crate::workload::Submission;

/// A thread's polling state.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::sim) struct Spin {
    /// The thread reaps by polling (io_uring with hipri).
    pub on: bool,
    /// It is waiting for completions now, spinning since `from`.
    pub waiting: bool,
    pub from: SimTime,
    /// `Cpu::preempting_busy_ns` of its core at `from`.
    pub mark: u64,
}

/// Refuses what the kernel or the model cannot run.
pub(in crate::sim) fn check(cfg: &SimConfig) -> Result<(), String> {
    for j in cfg.jobs.iter().filter(|j| j.hipri) {
        let (what, since) = match j.submission {
            Submission::Async { .. } => ("io_uring's IORING_SETUP_IOPOLL", Kernel::new(5, 1)),
            Submission::Sync => ("preadv2/pwritev2's RWF_HIPRI", Kernel::new(4, 6)),
        };
        if cfg.host.kernel < since {
            return Err(format!(
                "job '{}': hipri needs {what}, from Linux {since}; host '{}' runs {}",
                j.name, cfg.host.kernel, cfg.host.name
            ));
        }
        if matches!(j.submission, Submission::Async { .. }) && !j.direct {
            return Err(format!(
                "job '{}': hipri with buffered I/O: io_uring refuses IOPOLL without O_DIRECT (EOPNOTSUPP); set direct=1",
                j.name
            ));
        }
        if cfg.driver.poll_queues() {
            return Err(format!(
                "job '{}': hipri on driver '{}', whose queue polls: completion by polling (no interrupt) is not modelled by flashpath",
                j.name,
                cfg.driver.name()
            ));
        }
    }
    Ok(())
}

impl Sim {
    /// Whether a thread of `cfg` spins for its completions: io_uring with hipri, or fio
    /// polling an asynchronous engine (iodepth_batch_complete_min=0).
    pub(in crate::sim) fn spins(cfg: &crate::workload::JobConfig) -> bool {
        match cfg.submission {
            Submission::Async {
                batch_complete_min, ..
            } => cfg.hipri || batch_complete_min == 0,
            Submission::Sync => false,
        }
    }

    /// Thread `t` waits for completions from now: asleep, or spinning if it polls. If
    /// enough are already there (left by iodepth_batch_complete_max), it reaps them
    /// with its next io_getevents instead.
    #[inline]
    pub(in crate::sim) fn wait_for_completions(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if !th.completed.is_empty() {
            if let Submission::Async {
                batch_complete_min, ..
            } = self.cfg.jobs[th.cfg].submission
            {
                let need = batch_complete_min.max(1).min(th.inflight.max(1));
                if th.completed.len() as u32 >= need {
                    th.state = ThreadState::Running;
                    let reap = self.cfg.host.costs.aio_reap_ns;
                    let end = self.cpu.run_l(th.core, now, reap, "aio reap");
                    self.q.push(end, crate::sim::Ev::ThreadRun(t));
                    return;
                }
            }
        }
        th.state = ThreadState::Sleeping;
        if th.spin.on {
            let mark = self.cpu.preempting_busy_ns(th.core);
            th.spin = Spin {
                on: true,
                waiting: true,
                from: now,
                mark,
            };
        }
    }

    /// A spinning thread sees the completions it waited for now: its core was busy
    /// spinning until now; it reaps at once (no wake-up). Returns when it runs on.
    pub(in crate::sim) fn iopoll_seen(&mut self, t: u32) -> SimTime {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        // libaio's userspace_reap reads the ring without a system call.
        let reap = if self.cfg.jobs[th.cfg].user_reap {
            0
        } else {
            self.cfg.host.costs.aio_reap_ns
        };
        let s = th.spin;
        th.spin.waiting = false;
        th.state = ThreadState::Running;
        let spun = self.cpu.spin(th.core, s.from, now, s.mark);
        th.stats.sys_ns += spun;
        self.cpu.run_l(th.core, now, reap, "aio reap")
    }
}
