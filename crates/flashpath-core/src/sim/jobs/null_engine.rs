//! fio's null engine (engines/null.c): an I/O that goes nowhere. `null_queue` keeps the
//! io_u, `null_commit` turns what is queued into events and `null_getevents` hands them
//! back, all inside fio: no system call, no kernel, no device (FIO_DISKLESSIO). What a
//! null job measures is fio's own per-I/O work.
//!
//! That work is not a separate host cost: `costs.syscall_return` is a system call's
//! return together with fio's per-I/O work (accounting, the next offset). The null
//! engine books it per I/O when the I/O is queued, which overstates fio's own work by a
//! system call's return (an upper bound, said so in docs/command-line.md), and the thread never
//! sleeps: the completions are there when it looks.

use crate::engine::SimTime;
use crate::host::HostCosts;
use crate::sim::{Sim, ThreadState};

/// CPU work per I/O of a null job (booked in `thread_run` when the I/O is queued).
pub(in crate::sim) fn per_io_cost(costs: &HostCosts) -> SimTime {
    costs.syscall_return_ns
}

impl Sim {
    /// fio committed its queued null I/Os: each is issued and complete now, and the
    /// thread goes on at once to reap them.
    pub(in crate::sim) fn null_submitted(&mut self, t: u32) {
        let now = self.now;
        self.account_outstanding(t);
        let mut picked = std::mem::take(&mut self.threads[t as usize].submitting);
        for &io in &picked {
            self.note_issued(t, io);
            self.ios[io as usize].t_done = now;
            self.threads[t as usize].completed.push(io);
        }
        picked.clear();
        let th = &mut self.threads[t as usize];
        th.submitting = picked;
        th.state = ThreadState::Running;
        self.q.push(now, crate::sim::Ev::ThreadRun(t));
    }
}
