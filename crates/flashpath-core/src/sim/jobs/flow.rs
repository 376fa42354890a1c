//! fio's flow control between jobs (fio 3.33 flow.c, called at the top of do_io's loop):
//! the running jobs that share a `flow_id` share a counter (starting at 1) and the sum of
//! their `flow` weights. Before each round of issuing, a job whose own count over the
//! shared count exceeds its weight over the total stalls; otherwise the round's I/Os add
//! to both counts. A stalled job with `flow_sleep` first quiesces its queue (io_u_quiesce:
//! it waits for, and reaps, every I/O it has in flight), then sleeps that long and tries
//! again; with `flow_sleep=0` (the default) fio loops at once, spinning on its core
//! without reaping,
//! until the other jobs' issues (or exits) bring its share back: here it waits for the
//! group's next change, its core busy meanwhile. A job joins its group when it starts
//! (flow_init_job) and leaves it when it ends (flow_put takes its count and weight back).
//!
//! Leaves out: a round of several I/Os (iodepth_batch) is checked once, where fio checks
//! each I/O. Units: nanoseconds.

use crate::engine::SimTime;
use crate::sim::{Ev, Sim, SimConfig};

/// One flow_id group of running jobs.
#[derive(Clone, Debug)]
pub(in crate::sim) struct FlowGroup {
    id: u32,
    /// fio's flow->flow_counter (1 plus the running members' counts).
    shared: u64,
    /// fio's flow->total_weight.
    total_weight: u64,
    /// Members spinning until the group changes.
    waiters: Vec<u32>,
}

/// A thread's place in its group.
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) struct FlowSeat {
    group: usize,
    weight: u64,
    /// fio's td->flow_counter.
    counter: u64,
    joined: bool,
    /// Stalled with `flow_sleep`, waiting for its in-flight I/Os before it sleeps.
    quiescing: bool,
    /// Spinning since `from` (flow_sleep=0), with the core's preemption mark.
    waiting: bool,
    from: SimTime,
    mark: u64,
}

/// The groups of `cfg`'s jobs and each job's seat.
pub(in crate::sim) fn seats(cfg: &SimConfig) -> (Vec<FlowGroup>, Vec<Option<FlowSeat>>) {
    let mut groups: Vec<FlowGroup> = Vec::new();
    let seats = cfg
        .jobs
        .iter()
        .map(|j| {
            let f = j.flow.as_ref()?;
            let group = match groups.iter().position(|g| g.id == f.id) {
                Some(g) => g,
                None => {
                    groups.push(FlowGroup {
                        id: f.id,
                        shared: 1,
                        total_weight: 0,
                        waiters: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            Some(FlowSeat {
                group,
                weight: f.weight as u64,
                counter: 0,
                joined: false,
                quiescing: false,
                waiting: false,
                from: 0,
                mark: 0,
            })
        })
        .collect();
    (groups, seats)
}

impl Sim {
    /// flow_threshold_exceeded for thread `t` now: true if it must not issue (it then
    /// sleeps or spins until it runs again).
    pub(in crate::sim) fn flow_stalled(&mut self, t: u32) -> bool {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let Some(seat) = th.flow.as_mut() else {
            return false;
        };
        let sleep = self.cfg.jobs[th.cfg]
            .flow
            .as_ref()
            .map_or(0, |f| f.sleep_ns);
        if seat.quiescing {
            // io_u_quiesce, then usleep(flow_sleep), then fio's loop checks again.
            if th.inflight > 0 {
                self.wait_for_completions(t);
            } else {
                seat.quiescing = false;
                th.state = crate::sim::ThreadState::Delayed;
                self.q.push(now + sleep, Ev::ThreadRun(t));
            }
            return true;
        }
        if seat.waiting {
            // Back from a spin: the core was busy until now.
            seat.waiting = false;
            let spun = self.cpu.spin(th.core, seat.from, now, seat.mark);
            th.stats.sys_ns += spun;
        }
        let g = &mut self.flows[seat.group];
        if !seat.joined {
            seat.joined = true;
            g.total_weight += seat.weight;
        }
        let counter_ratio = seat.counter as f64 / g.shared as f64;
        let weight_ratio = seat.weight as f64 / g.total_weight.max(1) as f64;
        if counter_ratio <= weight_ratio {
            return false;
        }
        if sleep > 0 && th.inflight > 0 {
            seat.quiescing = true;
            self.wait_for_completions(t);
        } else if sleep > 0 {
            th.state = crate::sim::ThreadState::Delayed;
            self.q.push(now + sleep, Ev::ThreadRun(t));
        } else {
            seat.waiting = true;
            seat.from = now;
            seat.mark = self.cpu.preempting_busy_ns(th.core);
            g.waiters.push(t);
        }
        true
    }

    /// Thread `t` issued `n` I/Os in its flow group: both counts move, and the group's
    /// spinning members look again.
    pub(in crate::sim) fn flow_issued(&mut self, t: u32, n: u64) {
        if let Some(seat) = self.threads[t as usize].flow.as_mut() {
            seat.counter += n;
            self.flows[seat.group].shared += n;
            let g = seat.group;
            self.flow_changed(g);
        }
    }

    /// Thread `t` ends (flow_put): its count and weight leave the group.
    pub(in crate::sim) fn flow_exit(&mut self, t: u32) {
        if let Some(seat) = self.threads[t as usize].flow.as_mut() {
            if seat.joined {
                seat.joined = false;
                let g = &mut self.flows[seat.group];
                g.shared -= seat.counter;
                g.total_weight -= seat.weight;
                let g = seat.group;
                self.flow_changed(g);
            }
        }
    }

    fn flow_changed(&mut self, g: usize) {
        let now = self.now;
        for w in std::mem::take(&mut self.flows[g].waiters) {
            self.q.push(now, Ev::ThreadRun(w));
        }
    }
}
