//! How busy the cores and the hardware were over each job's measured window
//! ([`Occupancy`]), for the pipeline limits of `flashpath analyze` at any queue depth.
//!
//! A request's pre and post spans include waits (for a tag, a core, the requests ahead
//! of it) as soon as more than one is in flight, so limits computed from the mean spans
//! describe one request at a time. Busy time does not: a server (a core, the hardware)
//! is busy at most all of the window, so with `ios` I/Os of mean size `size` measured
//! in a window of length `W` and a server busy `B` in it,
//! throughput = ios × size / W ≤ ios × size / B = size / (B / ios). The busy time per
//! I/O is the server's demand (the operational laws); the largest demand bounds the
//! throughput, whatever the depth.
//!
//! - Cores: each core's CPU time in the window, all lanes (task, kernel, interrupt),
//!   whoever the work was for, from [`Cpu::done_by_ns`] at the window's ends.
//! - Hardware: the time some block request was between its start on the hardware and
//!   the interrupt that finished it (the union of the requests' hw spans), integrated
//!   from a +1 at each request's first start and a -1 at its first interrupt (or its
//!   end, if it had none).
//!
//! [`Cpu::done_by_ns`]: crate::host::cpu::Cpu::done_by_ns

use super::{Ev, Sim};
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::stats::Occupancy;

/// The time some request was on the hardware.
#[derive(Default)]
pub(super) struct HwBusy {
    /// Changes of the number of requests on the hardware not yet integrated, latest
    /// first (changes at one time integrate to their sum, in any order). A sorted
    /// array: it holds a few changes (requests on the hardware stamped ahead of now),
    /// and the earliest is taken from its end.
    pending: Vec<(SimTime, i64)>,
    /// Requests counted on the hardware (indexed by request id).
    on: Vec<bool>,
    /// Requests on the hardware at `swept`.
    count: i64,
    /// Integrated up to here.
    swept: SimTime,
    busy_ns: u64,
}

impl HwBusy {
    fn change(&mut self, at: SimTime, by: i64) {
        if at <= self.swept {
            // At the integrated point (an interrupt stamped where `end` just integrated
            // to), or before it by a few ns of rounding (stamps are never in the
            // integrated past): it counts from there on, as it would from the heap.
            self.count += by;
            return;
        }
        let i = self.pending.partition_point(|&(t, _)| t > at);
        self.pending.insert(i, (at, by));
    }
    /// Request `r` started on the hardware at `at` (its first start counts); the
    /// simulation is at `now`, up to which the changes so far are integrated, so what
    /// is kept stays the few requests in flight, whatever the run's length.
    pub(super) fn start(&mut self, r: ReqId, at: SimTime, now: SimTime) {
        self.busy_by(now);
        let i = r as usize;
        if self.on.len() <= i {
            self.on.resize(i + 1, false);
        }
        if !self.on[i] {
            self.on[i] = true;
            self.change(at, 1);
        }
    }
    /// Request `r` left the hardware at `at` (its interrupt, or its end), if it was on.
    pub(super) fn end(&mut self, r: ReqId, at: SimTime, now: SimTime) {
        self.busy_by(now);
        if let Some(on) = self.on.get_mut(r as usize).filter(|on| **on) {
            *on = false;
            self.change(at, -1);
        }
    }
    /// Integrates up to `now` (no stamp comes before it) and returns the busy time so far.
    pub(super) fn busy_by(&mut self, now: SimTime) -> u64 {
        while let Some(&(t, d)) = self.pending.last() {
            if t > now {
                break;
            }
            self.pending.pop();
            if self.count > 0 {
                self.busy_ns += t - self.swept;
            }
            self.count += d;
            self.swept = t;
        }
        if self.count > 0 && now > self.swept {
            self.busy_ns += now - self.swept;
        }
        self.swept = self.swept.max(now);
        self.busy_ns
    }
}

/// The busy times at the start of a job's window.
#[derive(Clone, Debug, Default)]
pub(super) struct Mark {
    at: SimTime,
    cores: Vec<u64>,
    hw: u64,
}

impl Sim {
    fn occupancy_mark(&mut self) -> Mark {
        let now = self.now;
        Mark {
            at: now,
            cores: self.cpu.done_by_ns(now),
            hw: self.hw_busy.busy_by(now),
        }
    }

    /// Job thread `t`'s measured window starts now (or at its ramp's end).
    pub(super) fn occupancy_start(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        if th.measure_start > self.now {
            self.q.push(th.measure_start, Ev::MeasureStart(t));
        } else {
            self.threads[t as usize].occ_mark = Some(self.occupancy_mark());
        }
    }

    /// The ramp of thread `t` may be over (an event at its end): mark its window's
    /// start, unless the window moved (latency_target restarts it) or the job ended.
    pub(super) fn occupancy_ramp_end(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        if th.measure_start == self.now && th.state != super::ThreadState::Finished {
            self.threads[t as usize].occ_mark = Some(self.occupancy_mark());
        }
    }

    /// Job thread `t` ends now: the busy times over its window.
    pub(super) fn occupancy_finish(&mut self, t: u32) {
        let Some(m) = self.threads[t as usize].occ_mark.take() else {
            return;
        };
        let end = self.occupancy_mark();
        let window_ns = end.at - m.at;
        self.threads[t as usize].stats.occupancy = Some(Occupancy {
            window_ns,
            core_busy_ns: end
                .cores
                .iter()
                .zip(&m.cores)
                .map(|(e, s)| e.saturating_sub(*s).min(window_ns))
                .collect(),
            hw_busy_ns: (end.hw - m.hw).min(window_ns),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_busy_is_the_union_of_the_requests_times_on_it() {
        let mut h = HwBusy::default();
        // Stamps may lie ahead of the simulation's present (the second argument).
        h.start(0, 100, 90);
        h.start(1, 150, 95);
        h.end(0, 200, 99);
        // A second start of a request already on counts once.
        h.start(1, 160, 100);
        assert_eq!(h.busy_by(180), 80);
        h.end(1, 300, 180);
        h.start(2, 400, 190);
        h.end(2, 450, 200);
        // Ending a request that is not on changes nothing.
        h.end(7, 420, 210);
        assert_eq!(h.busy_by(1000), 250);
        // A stamp in the integrated past counts from the present.
        h.start(3, 900, 1000);
        h.end(3, 1100, 1000);
        assert_eq!(h.busy_by(1200), 350);
        // What is kept does not grow with the run: past changes are integrated.
        for i in 0..10_000u64 {
            let t = 2000 + i * 10;
            h.start(4, t, t);
            h.end(4, t + 5, t);
        }
        assert!(h.pending.len() <= 2, "{}", h.pending.len());
        assert_eq!(h.busy_by(200_000), 350 + 10_000 * 5);
    }
}
