//! Host CPU cores. A span of software work is booked on one core and runs when the core
//! has finished the work booked before it (first come, first served; an interrupt does
//! not preempt work already running). On one core the software phases of different
//! requests therefore never overlap; on several they do.
//! Units: nanoseconds of CPU time.

use crate::engine::{FifoResource, SimTime};

pub struct Cpu {
    cores: Vec<FifoResource>,
}

impl Cpu {
    pub fn new(cores: u32) -> Self {
        assert!(cores > 0);
        Cpu {
            cores: vec![FifoResource::new(); cores as usize],
        }
    }
    /// Runs `cost` ns of work on `core` as soon as it is ready and the core is free;
    /// returns when the work ends.
    #[inline]
    pub fn run(&mut self, core: u32, ready: SimTime, cost: u64) -> SimTime {
        self.cores[core as usize].book(ready, cost).1
    }
    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }
    /// Busy time of each core.
    pub fn busy_ns(&self) -> Vec<u64> {
        self.cores.iter().map(|c| c.busy_ns()).collect()
    }
}
