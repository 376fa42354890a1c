//! Host CPU cores. Each core has three lanes of work, by priority:
//! - task work (user threads in their system calls): booked first come, first served,
//!   after whatever task work was booked before it;
//! - kernel work that preempts a running user thread: kernel threads and workers woken
//!   to run (kblockd and mmc_complete are WQ_HIGHPRI, nice -20; mmcqd and IRQ threads
//!   are woken sleepers that CFS's wakeup preemption, or SCHED_FIFO, puts ahead of a
//!   running fio thread), and softirq completions;
//! - interrupt work (the hard IRQ and what runs in its context).
//!
//! A lane waits only for earlier work of its own lane. Work of a higher lane preempts
//! the lanes below it: their running work ends that much later. Task work that becomes
//! ready while kernel work runs waits for it. On one core the software phases of
//! different requests therefore never overlap; on several they do.
//! Units: nanoseconds of CPU time.

use crate::engine::{FifoResource, SimTime};
use crate::trace::{CpuLane, CpuSlice};

pub struct Cpu {
    cores: Vec<FifoResource>,
    kernel: Vec<FifoResource>,
    irq: Vec<FifoResource>,
    /// The work booked, when recording (timelines); else None and nothing is kept.
    rec: Option<CpuRecord>,
}

#[derive(Default)]
struct CpuRecord {
    slices: Vec<CpuSlice>,
    /// Per core, the index of its last task slice and of its last kernel slice in
    /// `slices`.
    last_task: Vec<Option<usize>>,
    last_kernel: Vec<Option<usize>>,
    /// The time of the last drain: no slice may start before it.
    floor: SimTime,
}

impl Cpu {
    pub fn new(cores: u32) -> Self {
        assert!(cores > 0);
        Cpu {
            cores: vec![FifoResource::new(); cores as usize],
            kernel: vec![FifoResource::new(); cores as usize],
            irq: vec![FifoResource::new(); cores as usize],
            rec: None,
        }
    }
    /// Records every slice of work booked from now on (see [`Cpu::take_slices`]).
    pub fn record(&mut self) {
        self.rec = Some(CpuRecord {
            slices: Vec::new(),
            last_task: vec![None; self.cores.len()],
            last_kernel: vec![None; self.cores.len()],
            floor: 0,
        });
    }
    /// The slices recorded so far (empty unless recording).
    pub fn take_slices(&mut self) -> Vec<CpuSlice> {
        self.rec
            .as_mut()
            .map(|r| {
                r.last_task.iter_mut().for_each(|l| *l = None);
                r.last_kernel.iter_mut().for_each(|l| *l = None);
                std::mem::take(&mut r.slices)
            })
            .unwrap_or_default()
    }
    /// Takes the recorded slices that can no longer change, in booking order: the
    /// longest prefix of slices that ended by `now`. A slice is stretched only by work
    /// of a higher lane starting before its end, and work is never booked to start
    /// before the current time (`floor`, checked in debug builds), so a slice that
    /// ended by `now` is final; the rest stay (bounded by the work booked ahead).
    pub fn drain_final_slices(&mut self, now: SimTime) -> Vec<CpuSlice> {
        let Some(r) = self.rec.as_mut() else {
            return Vec::new();
        };
        r.floor = now;
        let k = r
            .slices
            .iter()
            .position(|s| s.end > now)
            .unwrap_or(r.slices.len());
        let fix = |l: &mut Option<usize>| {
            *l = match *l {
                Some(i) if i >= k => Some(i - k),
                _ => None,
            }
        };
        r.last_task.iter_mut().for_each(fix);
        r.last_kernel.iter_mut().for_each(fix);
        r.slices.drain(..k).collect()
    }
    /// Runs `cost` ns of work on `core` as soon as it is ready and the core is free;
    /// returns when the work ends.
    #[inline]
    pub fn run(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        self.run_l(core, ready, cost, "task")
    }
    /// [`Cpu::run`] with a label for timelines (what the work is).
    #[inline(always)]
    pub fn run_l(&mut self, core: u32, ready: SimTime, cost: u64, label: &'static str) -> SimTime {
        let c = core as usize;
        let ready = ready.max(self.kernel[c].free_at());
        let (start, end) = self.cores[c].book(ready, cost);
        if self.rec.is_some() {
            self.keep(core, start, end, CpuLane::Task, label);
        }
        end
    }

    /// Runs `cost` ns of kernel work that preempts user threads (see the module doc) on
    /// `core` as soon as it is ready and earlier kernel work there is done; returns when
    /// it ends.
    #[inline]
    pub fn run_kernel(
        &mut self,
        core: u32,
        ready: SimTime,
        cost: u64,
        label: &'static str,
    ) -> SimTime {
        self.run_preempting(CpuLane::Kernel, core, ready, cost, label)
    }

    /// Books work on the kernel or interrupt lane of `core`: it waits only for earlier
    /// work of its lane and delays the running work of the lanes below.
    #[inline]
    fn run_preempting(
        &mut self,
        lane: CpuLane,
        core: u32,
        ready: SimTime,
        cost: u64,
        label: &'static str,
    ) -> SimTime {
        let c = core as usize;
        let (start, end) = match lane {
            CpuLane::Kernel => self.kernel[c].book(ready, cost),
            CpuLane::Irq => {
                let booked = self.irq[c].book(ready, cost);
                self.kernel[c].preempt(booked.0, cost);
                booked
            }
            CpuLane::Task => unreachable!("task work does not preempt"),
        };
        self.cores[c].preempt(start, cost);
        if self.rec.is_some() {
            self.keep(core, start, end, lane, label);
        }
        end
    }

    /// Keeps a slice of work (off the hot path: only when recording). The slices of the
    /// lanes below that are running when it starts end that much later.
    #[cold]
    #[inline(never)]
    fn keep(
        &mut self,
        core: u32,
        start: SimTime,
        end: SimTime,
        lane: CpuLane,
        label: &'static str,
    ) {
        let r = self.rec.as_mut().expect("recording");
        debug_assert!(
            start >= r.floor,
            "CPU work booked at {start} ns, before the last trace drain at {} ns",
            r.floor
        );
        let c = core as usize;
        let i = r.slices.len();
        r.slices.push(CpuSlice {
            core,
            start,
            end,
            lane,
            label,
        });
        let below = match lane {
            CpuLane::Task => {
                r.last_task[c] = Some(i);
                [None, None]
            }
            CpuLane::Kernel => {
                r.last_kernel[c] = Some(i);
                [r.last_task[c], None]
            }
            CpuLane::Irq => [r.last_task[c], r.last_kernel[c]],
        };
        // As FifoResource::preempt: work still running at `start` ends later.
        for j in below.into_iter().flatten() {
            if r.slices[j].end > start {
                r.slices[j].end += end - start;
            }
        }
    }
    /// Kernel and interrupt work booked on `core` so far, ns: a mark for [`Cpu::spin`].
    pub fn preempting_busy_ns(&self, core: u32) -> u64 {
        let c = core as usize;
        self.kernel[c].busy_ns() + self.irq[c].busy_ns()
    }

    /// A thread that spun on `core` from `from` until `until` in a kernel polling loop
    /// (io_uring's iopoll): the core was busy all along, its task lane with the spin and
    /// the kernel and interrupt work booked since `preempt_mark`
    /// ([`Cpu::preempting_busy_ns`]) on top of it. The spin starts once the task work
    /// booked before it is done; it takes the span's time those did not. Returns the
    /// spin's CPU time.
    pub fn spin(&mut self, core: u32, from: SimTime, until: SimTime, preempt_mark: u64) -> u64 {
        let c = core as usize;
        let start = from.max(self.cores[c].free_at());
        if until <= start {
            return 0;
        }
        let preempted = self.preempting_busy_ns(core).saturating_sub(preempt_mark);
        let cost = (until - start).saturating_sub(preempted);
        let (s, _) = self.cores[c].book(start, cost);
        if self.rec.is_some() {
            self.keep(core, s, until, CpuLane::Task, "iopoll spin");
        }
        cost
    }

    /// Runs `cost` ns of interrupt-context work on `core`: ahead of task and kernel
    /// work, which it delays; returns when it ends.
    #[inline]
    pub fn run_irq(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        self.run_irq_l(core, ready, cost, "irq")
    }
    /// [`Cpu::run_irq`] with a label for timelines.
    #[inline]
    pub fn run_irq_l(
        &mut self,
        core: u32,
        ready: SimTime,
        cost: u64,
        label: &'static str,
    ) -> SimTime {
        self.run_preempting(CpuLane::Irq, core, ready, cost, label)
    }
    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }
    /// Whether no lane of `core` has work booked past `at`.
    pub fn idle_at(&self, core: u32, at: SimTime) -> bool {
        let c = core as usize;
        self.cores[c].free_at() <= at
            && self.kernel[c].free_at() <= at
            && self.irq[c].free_at() <= at
    }
    /// The core a user thread last on `prev` wakes on at `at`, as CFS's
    /// select_idle_sibling picks it: `prev` if it is idle, else the first idle core after
    /// it (all cores share the last-level cache here), else `prev`, where it waits.
    pub fn wake_core(&self, prev: u32, at: SimTime) -> u32 {
        let n = self.cores();
        (0..n)
            .map(|i| (prev + i) % n)
            .find(|&c| self.idle_at(c, at))
            .unwrap_or(prev)
    }
    /// CPU time each core has spent by `at`, ns, all lanes: the work booked so far less
    /// what a lane still has ahead of it (work is booked before it runs, and a lane's
    /// remaining work fits between `at` and the lane's end). A lower estimate where a
    /// lane's booked work has gaps; exact on a lane that runs back to back.
    pub fn done_by_ns(&self, at: SimTime) -> Vec<u64> {
        let lane = |r: &FifoResource| r.busy_ns().saturating_sub(r.free_at().saturating_sub(at));
        self.cores
            .iter()
            .zip(&self.kernel)
            .zip(&self.irq)
            .map(|((c, k), i)| lane(c) + lane(k) + lane(i))
            .collect()
    }
    /// Busy time of each core.
    pub fn busy_ns(&self) -> Vec<u64> {
        self.cores
            .iter()
            .zip(&self.kernel)
            .zip(&self.irq)
            .map(|((c, k), i)| c.busy_ns() + k.busy_ns() + i.busy_ns())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_preempt_downwards_only() {
        let mut c = Cpu::new(1);
        // A thread's 100 ns from 0; kernel work of 30 at 10 preempts it: it ends at 130.
        assert_eq!(c.run(0, 0, 100), 100);
        assert_eq!(c.run_kernel(0, 10, 30, "k"), 40);
        // Task work booked now waits for both.
        assert_eq!(c.run(0, 0, 10), 140);
        // An interrupt at 50 delays the task work running then (to 145); the kernel lane
        // was done at 40, so its next work runs 40-41 and delays the task work to 146.
        assert_eq!(c.run_irq(0, 50, 5), 55);
        assert_eq!(c.run_kernel(0, 0, 1, "k"), 41);
        assert_eq!(c.run(0, 0, 1), 147);
    }

    #[test]
    fn a_woken_thread_takes_an_idle_core_if_its_own_is_busy() {
        let mut c = Cpu::new(4);
        // Idle everywhere: it stays where it was.
        assert_eq!(c.wake_core(2, 0), 2);
        // Its core runs kernel work (the waker going on): the next idle core after it.
        c.run_kernel(2, 0, 50, "mmcqd");
        assert_eq!(c.wake_core(2, 10), 3);
        c.run_irq(3, 0, 50);
        c.run(0, 0, 50);
        assert_eq!(c.wake_core(2, 10), 1, "cyclic, skipping busy cores");
        // Once the work is over, its own core again.
        assert_eq!(c.wake_core(2, 60), 2);
        // No idle core: it waits on its own.
        c.run(1, 0, 100);
        assert_eq!(c.wake_core(2, 10), 2);
    }
}
