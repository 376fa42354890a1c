//! Host CPU cores. A span of task work (threads, kworkers) is booked on one core and
//! runs when the core has finished the task work booked before it (first come, first
//! served). Interrupt work (hard IRQ and what runs in its context) has its own lane on
//! the core: it waits only for earlier interrupt work, and preempts task work, whose
//! end moves back by the interrupt's duration. On one core the software phases of
//! different requests therefore never overlap; on several they do.
//! Units: nanoseconds of CPU time.

use crate::engine::{FifoResource, SimTime};
use crate::trace::CpuSlice;

pub struct Cpu {
    cores: Vec<FifoResource>,
    irq: Vec<FifoResource>,
    /// The work booked, when recording (timelines); else None and nothing is kept.
    rec: Option<CpuRecord>,
}

#[derive(Default)]
struct CpuRecord {
    slices: Vec<CpuSlice>,
    /// Per core, the index of its last task slice in `slices`.
    last_task: Vec<Option<usize>>,
}

impl Cpu {
    pub fn new(cores: u32) -> Self {
        assert!(cores > 0);
        Cpu {
            cores: vec![FifoResource::new(); cores as usize],
            irq: vec![FifoResource::new(); cores as usize],
            rec: None,
        }
    }
    /// Records every slice of work booked from now on (see [`Cpu::take_slices`]).
    pub fn record(&mut self) {
        self.rec = Some(CpuRecord {
            slices: Vec::new(),
            last_task: vec![None; self.cores.len()],
        });
    }
    /// The slices recorded so far (empty unless recording).
    pub fn take_slices(&mut self) -> Vec<CpuSlice> {
        self.rec
            .as_mut()
            .map(|r| {
                r.last_task.iter_mut().for_each(|l| *l = None);
                std::mem::take(&mut r.slices)
            })
            .unwrap_or_default()
    }
    /// Runs `cost` ns of work on `core` as soon as it is ready and the core is free;
    /// returns when the work ends.
    #[inline]
    pub fn run(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        self.run_l(core, ready, cost, "task")
    }
    /// [`Cpu::run`] with a label for timelines (what the work is).
    #[inline]
    pub fn run_l(&mut self, core: u32, ready: SimTime, cost: u64, label: &'static str) -> SimTime {
        let (start, end) = self.cores[core as usize].book(ready, cost);
        if self.rec.is_some() {
            self.keep(core, start, end, false, label, false);
        }
        end
    }

    /// Keeps a slice of work (off the hot path: only when recording). `stretch`: an
    /// interrupt delayed the task work on the core, whose last slice ends that much later.
    #[cold]
    #[inline(never)]
    fn keep(
        &mut self,
        core: u32,
        start: SimTime,
        end: SimTime,
        irq: bool,
        label: &'static str,
        stretch: bool,
    ) {
        let r = self.rec.as_mut().expect("recording");
        if !irq {
            r.last_task[core as usize] = Some(r.slices.len());
        }
        r.slices.push(CpuSlice {
            core,
            start,
            end,
            irq,
            label,
        });
        if stretch {
            if let Some(i) = r.last_task[core as usize] {
                r.slices[i].end += end - start;
            }
        }
    }
    /// Runs `cost` ns of interrupt-context work on `core`: ahead of task work, which it
    /// delays; returns when it ends.
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
        let (start, end) = self.irq[core as usize].book(ready, cost);
        let c = &mut self.cores[core as usize];
        let before = c.free_at();
        c.preempt(start, cost);
        if self.rec.is_some() {
            let stretch = self.cores[core as usize].free_at() != before;
            self.keep(core, start, end, true, label, stretch);
        }
        end
    }
    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }
    /// Busy time of each core.
    pub fn busy_ns(&self) -> Vec<u64> {
        self.cores
            .iter()
            .zip(&self.irq)
            .map(|(c, i)| c.busy_ns() + i.busy_ns())
            .collect()
    }
}
