//! fio's verify_async (verify.c `verify_io_u_async`, `verify_async_thread`; io_u.c
//! `__get_io_u`, fio 3.33): the job's verify reads are checked by `verify_async` threads
//! of its own, off the job's thread.
//!
//! ```text
//!  job thread reaps a verify read ─▶ verify_io_u_async: cur_depth--, io_u on the
//!     │                               job's verify_list, one sleeping thread signalled
//!     │                                    │
//!     │   verify thread (its core) ◀───────┘ wakes, takes the whole list (splice),
//!     │     checks each io_u in turn (the checksum's CPU on its core), put_io_u
//!     │     (free_cond signalled); sleeps when the list is empty
//!     ▼
//!  issues the next I/O only with a free io_u: the job has `iodepth` of them, and an
//!  io_u waiting for or in a verify thread is not free (__get_io_u waits on free_cond)
//! ```
//!
//! A verify thread runs where the scheduler puts it: on a wake-up, the first idle core
//! of those it may use from the one it last ran on (select_idle_sibling, as for job
//! threads), or its own; it may use the cores verify_async_cpus names (fio's
//! fio_setaffinity), else the job's (a pinned job's core: the threads inherit its
//! affinity), else any. Its CPU time is the job's user time (fio's getrusage of the job
//! process). A failure it finds is handled as the job thread's would be (sim/jobs/errors.rs),
//! with fio's `async_verify` error when fatal.
//!
//! Leaves out: the io_u_lock contention between the threads and the job; the job waits
//! for its verify threads to drain before it ends (fio stops its clock first and may
//! leave an unverified io_u on the list at exit, a race). Units: ns, 4 KiB blocks.

use std::collections::VecDeque;

use crate::sim::{Ev, Sim, ThreadState, VerifyFailure};

/// A reaped verify read waiting for (or in) a verify thread.
struct Item {
    blocks: u64,
    failure: Option<VerifyFailure>,
}

struct Worker {
    core: u32,
    /// The list this thread took (flist_splice_init) and is working through.
    batch: VecDeque<Item>,
    /// The io_u being verified now.
    cur: Option<Item>,
}

/// One job's verify threads.
pub(crate) struct Pool {
    /// td->verify_list.
    list: VecDeque<Item>,
    workers: Vec<Worker>,
    /// The cores the threads may run on.
    cpus: Vec<u32>,
    /// The job thread waits for a free io_u (free_cond).
    blocked: bool,
}

impl Pool {
    /// `threads` verify threads on `cpus`, first placed after the job's `core`.
    pub fn new(threads: u32, cpus: Vec<u32>, core: u32, cores: u32) -> Pool {
        let workers = (0..threads)
            .map(|k| Worker {
                core: if cpus.len() as u32 == cores {
                    (core + 1 + k) % cores
                } else {
                    cpus[k as usize % cpus.len()]
                },
                batch: VecDeque::new(),
                cur: None,
            })
            .collect();
        Pool {
            list: VecDeque::new(),
            workers,
            cpus,
            blocked: false,
        }
    }

    fn idle_worker(&self) -> Option<usize> {
        self.workers
            .iter()
            .position(|w| w.cur.is_none() && w.batch.is_empty())
    }
}

impl Sim {
    /// The verify_async jobs' threads, once the job threads have their cores.
    pub(in crate::sim) fn verify_async_setup(&mut self) {
        let cores = self.cfg.host.cores;
        let pools = (0..self.threads.len())
            .map(|t| {
                let j = &self.cfg.jobs[t];
                let v = j.verify.as_ref().filter(|v| v.async_threads > 0)?;
                let cpus = if !v.async_cpus.is_empty() {
                    v.async_cpus.clone()
                } else if let Some(c) = j.cpu {
                    vec![c]
                } else {
                    (0..cores).collect()
                };
                Some(Pool::new(
                    v.async_threads,
                    cpus,
                    self.threads[t].core,
                    cores,
                ))
            })
            .collect();
        self.verify.as_mut().expect("verifying").pools = pools;
    }

    fn pool(&mut self, t: u32) -> &mut Pool {
        self.verify.as_mut().expect("verifying").pools[t as usize]
            .as_mut()
            .expect("a verify_async job")
    }

    /// Whether thread `t` verifies on verify_async threads.
    pub(in crate::sim) fn verify_async_on(&self, t: u32) -> bool {
        self.verify
            .as_ref()
            .is_some_and(|v| v.pools[t as usize].is_some())
    }

    /// verify_io_u_async: a reaped verify read of `blocks` 4 KiB blocks (its check's
    /// outcome `failure`) goes on the list; a sleeping verify thread is signalled.
    pub(in crate::sim) fn verify_async_push(
        &mut self,
        t: u32,
        blocks: u64,
        failure: Option<VerifyFailure>,
    ) {
        self.threads[t as usize].held += 1;
        let p = self.pool(t);
        p.list.push_back(Item { blocks, failure });
        if let Some(w) = p.idle_worker() {
            self.verify_thread_wake(t, w);
        }
    }

    /// The job thread has no free io_u (or must wait for its verify threads before it
    /// ends): it sleeps on free_cond; completions wait for it.
    pub(in crate::sim) fn verify_async_block(&mut self, t: u32) {
        self.pool(t).blocked = true;
        self.threads[t as usize].state = ThreadState::Delayed;
    }

    /// Verify thread `w` of job `t` wakes (on the first idle core it may use) and takes
    /// the list.
    fn verify_thread_wake(&mut self, t: u32, w: usize) {
        let now = self.now;
        let p = self.verify.as_ref().expect("verifying").pools[t as usize]
            .as_ref()
            .expect("a verify_async job");
        let prev = p.workers[w].core;
        let at = p.cpus.iter().position(|&c| c == prev).unwrap_or(0);
        let n = p.cpus.len();
        let core = (0..n)
            .map(|i| p.cpus[(at + i) % n])
            .find(|&c| self.cpu.idle_at(c, now))
            .unwrap_or(prev);
        let wakeup = self.cfg.host.costs.task_wakeup_ns;
        let start = self.cpu.run_l(core, now, wakeup, "wakeup");
        let p = self.pool(t);
        let worker = &mut p.workers[w];
        worker.core = core;
        let list = std::mem::take(&mut p.list);
        worker.batch = list;
        self.verify_thread_next(t, w, start);
    }

    /// Verify thread `w` checks the next io_u of its batch from `at`.
    fn verify_thread_next(&mut self, t: u32, w: usize, at: crate::sim::SimTime) {
        let algo = self.cfg.jobs[t as usize]
            .verify
            .as_ref()
            .expect("a verifying job")
            .algo;
        let per_4k = self.cfg.host.costs.verify_per_4k_ns(algo);
        let p = self.pool(t);
        let worker = &mut p.workers[w];
        let item = worker.batch.pop_front().expect("an io_u to verify");
        let cost = per_4k * item.blocks;
        let core = worker.core;
        worker.cur = Some(item);
        self.threads[t as usize].stats.usr_ns += cost;
        let end = self.cpu.run_l(core, at, cost, "verify");
        self.q.push(
            end,
            Ev::VerifyThread {
                job: t,
                worker: w as u32,
            },
        );
    }

    /// Verify thread `w` of job `t` has checked its io_u: put_io_u frees it (waking the
    /// job thread if it waits for one); the thread goes on with its batch, then the
    /// list, or sleeps.
    pub(in crate::sim) fn verify_thread_done(&mut self, t: u32, w: usize) {
        let now = self.now;
        let p = self.pool(t);
        let item = p.workers[w].cur.take().expect("an io_u in verification");
        let blocked = std::mem::take(&mut p.blocked);
        let th = &mut self.threads[t as usize];
        th.held -= 1;
        if let Some(f) = item.failure {
            self.verify_error(t, f);
        }
        if blocked {
            let th = &mut self.threads[t as usize];
            th.state = ThreadState::Running;
            th.stats.ctx += 1;
            let end = self.wake_thread(t, now);
            self.q.push(end, Ev::ThreadRun(t));
        }
        let p = self.pool(t);
        if p.workers[w].batch.is_empty() {
            if p.list.is_empty() {
                return;
            }
            let list = std::mem::take(&mut p.list);
            p.workers[w].batch = list;
        }
        self.verify_thread_next(t, w, now);
    }
}
