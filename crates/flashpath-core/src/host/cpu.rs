//! Host CPU cores. A span of task work (threads, kworkers) is booked on one core and
//! runs when the core has finished the task work booked before it (first come, first
//! served). Interrupt work (hard IRQ and what runs in its context) has its own lane on
//! the core: it waits only for earlier interrupt work, and preempts task work, whose
//! end moves back by the interrupt's duration. On one core the software phases of
//! different requests therefore never overlap; on several they do.
//! Units: nanoseconds of CPU time.

use crate::engine::{FifoResource, SimTime};

pub struct Cpu {
    cores: Vec<FifoResource>,
    irq: Vec<FifoResource>,
}

impl Cpu {
    pub fn new(cores: u32) -> Self {
        assert!(cores > 0);
        Cpu {
            cores: vec![FifoResource::new(); cores as usize],
            irq: vec![FifoResource::new(); cores as usize],
        }
    }
    /// Runs `cost` ns of work on `core` as soon as it is ready and the core is free;
    /// returns when the work ends.
    #[inline]
    pub fn run(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        self.cores[core as usize].book(ready, cost).1
    }
    /// Runs `cost` ns of interrupt-context work on `core`: ahead of task work, which it
    /// delays; returns when it ends.
    #[inline]
    pub fn run_irq(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        let (start, end) = self.irq[core as usize].book(ready, cost);
        self.cores[core as usize].preempt(start, cost);
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
