//! fio's `io_submit_mode=offload` (fio 3.33 rate-submit.c, workqueue.c, backend.c do_io,
//! io_u.c __get_io_u, ioengines.c td_io_queue).
//!
//! ```text
//!  job thread: rate gate ─▶ get_io_u ─▶ workqueue_enqueue ──cond signal──▶ worker w
//!      ▲  (blocks on free_cond when all iodepth io_us are out)              │ io_submit (1 I/O)
//!      └──────────── put_io_u: free_cond ◀── io_getevents(min_nr=1) ◀──────┘ block layer …
//! ```
//!
//! The job thread only generates I/Os: each is stamped (fio's io_u start_time, where
//! `lat` and `slat` begin), counted as issued (io_issues, rate_io_issue_bytes: the rate
//! clock counts issued I/Os, not completed ones, so the issue times follow the rate
//! whatever the device does) and handed to one of `iodepth` submit workers
//! (workqueue_init with max_workers = iodepth; get_submit_worker takes the first idle one
//! from next_free_worker on). Handing it over signals the worker's condition variable: a
//! futex wake system call on the job's core and a wake-up of the worker. Each worker is
//! a thread of the job's process with its own engine context of iodepth 1
//! (io_workqueue_init_worker_fn): it queues the I/O and commits it (libaio's io_submit
//! of one iocb; the I/O's issue_time, where `clat` begins, is taken after it), then, its
//! depth being 1, waits in io_getevents for at least one event (min_evts = 1), is woken by
//! the completion, reaps it and completes it (`clat` and `lat` end), which frees the io_u.
//! The job owns `iodepth` io_us: when all are out, the job thread blocks on free_cond
//! until a worker frees one, then catches up on the rate at once. At the end of the job
//! the thread waits for every worker to go idle (workqueue_flush).
//!
//! What fio reports: the workers' statistics are summed into the job's at exit
//! (sum_thread_stats), so each I/O counts at depth 1 and each io_submit and each reap
//! as one I/O (`IO depths: 1=100%`, submit and complete `4=100%`); the `cpu` line is the
//! job thread's own rusage (the workers' usr/sys/ctx are never sampled), as here: the
//! workers' CPU work is booked on the host's cores but not in the job's `sys`/`ctx`.
//! Workers are not pinned (unless the job is): each wakes where the scheduler finds an
//! idle core (select_idle_sibling, `Cpu::wake_core`).
//!
//! Leaves out: a worker given a second I/O while busy (fio's "best" worker; here a free
//! io_u always finds an idle worker, because a worker frees its io_u and goes idle in
//! the same step), serialize_overlap. Refused by `check`: what the job thread would do
//! besides generating I/O (verify, thinktime, flow, rate_min, latency_target, fsync,
//! steady state, replay), synchronous engines, buffered I/O, polled completion.
//! Units: nanoseconds, bytes.

use crate::engine::SimTime;
use crate::sim::{rw_pieces, Ev, Io, Sim, SimConfig, ThreadState};
use crate::workload::{rate_gate, Dir, JobConfig, Submission};
use flashpath_hist::{batch_bucket, depth_level_bucket};

#[derive(Debug)]
pub(in crate::sim) enum OffloadEv {
    /// Worker `w` of thread `t` has made its io_submit system call: the bios go in.
    Submitted { t: u32, w: u32 },
    /// Worker `w`'s io_getevents has returned with its I/O: it completes it.
    Reaped { t: u32, w: u32 },
}

/// A job's submit workers.
pub(in crate::sim) struct Pool {
    workers: Vec<Worker>,
    /// fio's wq->next_free_worker.
    next_free: usize,
    /// The job thread waits on free_cond for an io_u (all `iodepth` are out).
    blocked: bool,
    /// The job thread waits in workqueue_flush for every worker to go idle.
    flushing: bool,
    /// Bytes issued per direction (fio's rate_io_issue_bytes).
    issued_bytes: [u64; 2],
}

struct Worker {
    /// The core it last ran on.
    core: u32,
    /// The I/O it holds (None: idle).
    io: Option<u32>,
}

impl Pool {
    /// The pool of an offload job (None for inline submission), its workers starting on
    /// the job thread's core.
    pub(in crate::sim) fn new(j: &JobConfig, core: u32) -> Option<Box<Pool>> {
        if !j.offload {
            return None;
        }
        Some(Box::new(Pool {
            workers: (0..j.depth()).map(|_| Worker { core, io: None }).collect(),
            next_free: 0,
            blocked: false,
            flushing: false,
            issued_bytes: [0; 2],
        }))
    }

    /// fio's get_submit_worker: the first idle worker from next_free_worker on,
    /// wrapping; next_free_worker moves past it when it was the one taken.
    fn pick(&mut self) -> usize {
        let n = self.workers.len();
        let w = (0..n)
            .map(|i| (self.next_free + i) % n)
            .find(|&w| self.workers[w].io.is_none())
            .expect("a free io_u always finds an idle worker");
        if w == self.next_free {
            self.next_free = (w + 1) % n;
        }
        w
    }
}

/// Refuses the offload jobs that are not modelled, naming why.
pub(in crate::sim) fn check(cfg: &SimConfig) -> Result<(), String> {
    for j in cfg.jobs.iter().filter(|j| j.offload) {
        let why = if !matches!(j.submission, Submission::Async { .. }) {
            Some("a synchronous engine or trims (the workers are modelled for libaio)")
        } else if !j.direct {
            Some("buffered I/O (direct=0)")
        } else if j.null_engine {
            Some("the null engine")
        } else if Sim::spins(j) {
            Some("polled completion (hipri, iodepth_batch_complete_min=0)")
        } else if j.verify.is_some() {
            Some("verify")
        } else if j.thinktime_ns > 0 {
            Some("thinktime")
        } else if j.flow.is_some() {
            Some("flow")
        } else if j.rate_min.any() {
            Some("rate_min or rate_iops_min")
        } else if j.lat_target.is_some() {
            Some("latency_target")
        } else if j.fsync_every > 0 || j.end_fsync {
            Some("fsync, fdatasync or end_fsync")
        } else if j.steadystate.is_some() {
            Some("steadystate")
        } else if j.replay.is_some() || j.script.is_some() {
            Some("a replayed or scripted job")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!(
                "job '{}': io_submit_mode=offload with {why} is not modelled by flashpath",
                j.name
            ));
        }
    }
    Ok(())
}

impl Sim {
    /// The job thread of an offload job runs (do_io's loop): it ends, waits, or generates
    /// the next I/O and hands it to a worker.
    pub(in crate::sim) fn offload_run(&mut self, t: u32) {
        let now = self.now;
        let ti = t as usize;
        self.threads[ti].state = ThreadState::Running;
        if self.job_done_issuing(t) {
            if self.threads[ti].outstanding == 0 {
                return self.thread_finish(t);
            }
            let th = &mut self.threads[ti];
            th.state = ThreadState::Sleeping;
            th.offload.as_mut().expect("offload job").flushing = true;
            return;
        }
        let th = &mut self.threads[ti];
        if th.outstanding >= th.depth {
            // __get_io_u: no free io_u; wait on free_cond.
            th.state = ThreadState::Sleeping;
            th.offload.as_mut().expect("offload job").blocked = true;
            return;
        }
        let gate = self.offload_gate(t);
        if gate > now {
            // rate_ddir → usec_sleep (no io_u_quiesce in offload mode): nanosleep, a
            // context switch of the job thread (fio's ctx counts one per I/O).
            let th = &mut self.threads[ti];
            th.state = ThreadState::Sleeping;
            th.stats.ctx += 1;
            self.q.push(gate, Ev::ThreadRun(t));
            return;
        }
        // get_io_u: the I/O's start_time is now.
        let Some(spec) = self.threads[ti].src.next_io() else {
            // The job's passes are over: job_done_issuing says so now.
            return self.offload_run(t);
        };
        let max_bytes = self.cfg.host.block.max_request_bytes;
        let nbios = rw_pieces(spec.len, max_bytes, self.cfg.host.kernel.splits_bios());
        let io = self.alloc_io(Io::direct(t, &spec, nbios, now));
        if spec.dir == Dir::Write {
            self.o_sync_direct(t, io);
        }
        self.observe_queued(t, &spec);
        self.account_outstanding(t);
        let costs = &self.cfg.host.costs;
        let futex = costs.syscall_ns;
        let pin = match spec.dir {
            Dir::Read => costs.pin_per_4k_read_ns,
            _ => costs.pin_per_4k_ns,
        };
        // The worker's io_submit of one iocb, costed as the inline engine's.
        let submit = costs.aio_submit_ns
            + costs.syscall_ns
            + pin * spec.len.div_ceil(4096)
            + costs.block_submit_ns * nbios as u64;
        let wakeup = costs.task_wakeup_ns;
        let pinned = self.cfg.jobs[self.threads[ti].cfg].cpu.is_some();
        let th = &mut self.threads[ti];
        th.outstanding += 1;
        th.stats.sys_ns += futex;
        let job_core = th.core;
        let pool = th.offload.as_mut().expect("offload job");
        pool.issued_bytes[spec.dir.index()] += spec.len;
        let w = pool.pick();
        pool.workers[w].io = Some(io);
        let prev = pool.workers[w].core;
        // workqueue_enqueue: pthread_cond_signal wakes the worker (a futex system call).
        let end = self.cpu.run_l(job_core, now, futex, "offload enqueue");
        let core = if pinned {
            prev
        } else {
            self.cpu.wake_core(prev, end)
        };
        self.threads[ti]
            .offload
            .as_mut()
            .expect("offload job")
            .workers[w]
            .core = core;
        let submitted = self.cpu.run_l(core, end, wakeup + submit, "offload submit");
        self.q.push(
            submitted,
            Ev::Offload(OffloadEv::Submitted { t, w: w as u32 }),
        );
        self.q.push(end, Ev::ThreadRun(t));
    }

    /// When the job thread may issue its next I/O: fio's rate_next_io_time, from the
    /// I/Os and bytes issued so far (linear) or the Poisson clock.
    fn offload_gate(&mut self, t: u32) -> SimTime {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        let pool = th.offload.as_ref().expect("offload job");
        let mut gate = now;
        for i in 0..2 {
            let (bps, iops) = (cfg.rate_bytes_per_s[i], cfg.rate_iops[i]);
            if bps == 0 && iops == 0 {
                continue;
            }
            let issued = th.src.issued_per_dir[i];
            let at = match &mut th.poisson {
                Some(p) => {
                    let iops = if iops > 0 {
                        iops
                    } else {
                        bps / cfg.bs[i].min().max(1)
                    };
                    th.start + p.next_issue_ns(i, issued, iops)
                }
                None => rate_gate(th.start, pool.issued_bytes[i], issued, bps, iops),
            };
            gate = gate.max(at);
        }
        gate
    }

    /// Routes a worker's event.
    pub(in crate::sim) fn offload_handle(&mut self, e: OffloadEv) {
        match e {
            OffloadEv::Submitted { t, w } => {
                let pool = self.threads[t as usize].offload.as_ref().expect("offload");
                let worker = &pool.workers[w as usize];
                let (io, core) = (worker.io.expect("a submitting worker's I/O"), worker.core);
                self.submit_direct(t, core, &[io]);
                // fio counts the depth in the worker's own context, where it is always 1
                // (td_io_commit: io_u_mark_depth(td, io_u_queued = 1)); note_issued
                // counted the job's whole in-flight level: move that count.
                let th = &mut self.threads[t as usize];
                th.stats.depth_hist[depth_level_bucket(th.inflight)] -= 1;
                th.stats.depth_hist[depth_level_bucket(1)] += 1;
                // libaio's commit: io_u_mark_submit(td, 1). The worker now sleeps in
                // io_getevents(min_nr = 1).
                th.stats.submit_hist[batch_bucket(1)] += 1;
            }
            OffloadEv::Reaped { t, w } => self.offload_reaped(t, w),
        }
    }

    /// I/O `io` of offload job `t` has completed in the kernel: the worker waiting for it
    /// wakes and reaps it.
    pub(in crate::sim) fn offload_done(&mut self, t: u32, io: u32) {
        let now = self.now;
        let costs = &self.cfg.host.costs;
        let cost = costs.task_wakeup_ns + costs.aio_reap_ns;
        let pinned = self.cfg.jobs[self.threads[t as usize].cfg].cpu.is_some();
        let pool = self.threads[t as usize].offload.as_ref().expect("offload");
        let w = pool
            .workers
            .iter()
            .position(|x| x.io == Some(io))
            .expect("a completed offload I/O has its worker");
        let prev = pool.workers[w].core;
        let core = if pinned {
            prev
        } else {
            self.cpu.wake_core(prev, now)
        };
        self.threads[t as usize]
            .offload
            .as_mut()
            .expect("offload")
            .workers[w]
            .core = core;
        let end = self.cpu.run_l(core, now, cost, "offload reap");
        self.q
            .push(end, Ev::Offload(OffloadEv::Reaped { t, w: w as u32 }));
    }

    /// Worker `w` has reaped its I/O: it completes it (clat, lat), frees the io_u
    /// (waking the job thread if it waits for one, or for the workers at its end) and
    /// goes idle.
    fn offload_reaped(&mut self, t: u32, w: u32) {
        let now = self.now;
        self.account_outstanding(t);
        let pool = self.threads[t as usize].offload.as_mut().expect("offload");
        let io = pool.workers[w as usize]
            .io
            .take()
            .expect("a reaping worker's I/O");
        pool.next_free = w as usize;
        self.record_io(t, io);
        let th = &mut self.threads[t as usize];
        th.stats.complete_hist[batch_bucket(1)] += 1;
        let idle = th.outstanding == 0;
        let pool = th.offload.as_mut().expect("offload");
        let wake = pool.blocked || (pool.flushing && idle);
        if wake {
            pool.blocked = false;
            pool.flushing = false;
            th.stats.ctx += 1;
            let end = self.wake_thread(t, now);
            self.q.push(end, Ev::ThreadRun(t));
        }
    }
}
