//! The wiring between the simulation and the driver layer (`driver/`): a driver's input
//! is handed to it with the simulation lent as its [`DriverCtx`], and its outputs are
//! carried out in order as soon as it returns.
//!
//! While a driver handles an input it is out of its place in `Sim`: nothing it asks of
//! its context reaches the driver again (a command for the device and the end of a
//! block request, the two steps that would, are outputs).

use super::*;
use crate::driver::{DriverCtx, Event, HostDriver, Input, Output};

impl Sim {
    /// Hands `input` to the driver, then carries out what it emitted.
    #[inline]
    pub(super) fn driver_input(&mut self, input: Input) {
        let mut d = self
            .driver
            .take()
            .expect("the driver is not re-entered while it handles an input");
        let now = self.now;
        d.handle(now, input, self);
        self.driver = Some(d);
        if !self.driver_out.is_empty() {
            self.driver_outputs();
        }
    }

    /// Carries out the driver's outputs, in order (a call made meanwhile carries out
    /// its own before the next).
    #[inline(never)]
    fn driver_outputs(&mut self) {
        let mut out = std::mem::take(&mut self.driver_out);
        for o in out.drain(..) {
            match o {
                Output::Device(input) => self.device(input),
                Output::EndRequest(r) => {
                    self.req_end(r);
                    self.driver_input(Input::Ended(r));
                }
            }
        }
        self.driver_out = out;
    }
}

impl DriverCtx for Sim {
    fn block(&mut self) -> &mut BlockLayer {
        &mut self.block
    }

    fn cpu(&mut self) -> &mut Cpu {
        &mut self.cpu
    }

    fn dispatch(&mut self, at: SimTime, core: u32, direct: bool) -> Option<ReqId> {
        let r = self.block.dispatch(at)?;
        if self.trace.is_some() {
            if direct {
                self.blk_rq_direct(at, r, core);
            } else {
                self.blk_rq(at, r, BlkAction::Issue, core);
            }
        }
        Some(r)
    }

    fn schedule(&mut self, at: SimTime, ev: Event) {
        self.q.push(at, Ev::Driver(ev));
    }

    fn device_at(&mut self, at: SimTime, input: device::Input) {
        self.q.push(at, Ev::Dev(input));
    }

    fn wake(&mut self, core: u32, at: SimTime) -> SimTime {
        Sim::wake(self, core, at)
    }

    fn trace(&mut self, t: SimTime, req: Option<ReqId>, kind: TraceKind) {
        self.tr(t, req, kind);
    }

    fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    fn irq_raised(&mut self, r: ReqId, at: SimTime) {
        self.block.mark_irq(r, at);
        self.hw_busy.end(r, at, at);
    }

    fn sys(&mut self) -> &mut SystemStats {
        &mut self.sys
    }

    fn end_cost(&self, r: ReqId) -> u64 {
        Sim::end_cost(self, r)
    }

    fn fua(&self, r: ReqId) -> bool {
        self.req_fua(r)
    }

    fn jobs_running(&self) -> bool {
        self.unfinished > 0
    }

    fn emit(&mut self, o: Output) {
        self.driver_out.push(o);
    }

    fn device_map_entries(&mut self, first: u32, n: u32, buf: &mut Vec<u32>) {
        self.dev.hpb_entries(first, n, buf);
    }
}
