//! The wiring between the simulation and the driver layer (`driver/`): a driver's input
//! is handed to it with the simulation lent as its [`DriverCtx`], and its outputs are
//! carried out in order as soon as it returns.
//!
//! While a driver handles an input it is out of its place in `Sim`: nothing it asks of
//! its context reaches the driver again. A command given to the device comes back with
//! the device's immediate outputs for the driver to handle itself; the end of a block
//! request, whose completion can run the queue again, is an output, carried out after
//! the call, and the driver hears of it as `Input::Ended`.
//! Units: ns.

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
            let Output::EndRequest(r) = o;
            self.req_end(r);
            self.driver_input(Input::Ended(r));
        }
        self.driver_out = out;
    }
}

impl Sim {
    /// blk_mq_run_hw_queue after requests were inserted from `core`.
    pub(super) fn kick(&mut self, core: u32) {
        self.driver_input(Input::Kick { core });
    }

    /// The request is a FUA write: it carries the journal's commit block on a queue with
    /// native FUA (sim/kernel/journal.rs). A REQ_FUA bio does not merge in the kernel
    /// (REQ_NOMERGE_FLAGS; blk-flush inserts its request past the scheduler), so it is
    /// its request's only bio.
    /// Only the journal and O_SYNC direct writes are FUA, so without `[fs]` or such a
    /// job the bios are not looked at: this runs for every write request on the bus.
    pub(super) fn req_fua(&self, r: ReqId) -> bool {
        let q = self.block.req(r);
        (self.cfg.host.fs.is_some() || self.any_fua_job)
            && q.dir == Some(Dir::Write)
            && !q.flush
            && q.bios.iter().any(|&io| {
                let x = &self.ios[io as usize];
                x.fua || x.cache == buffered::CacheIo::JournalFua
            })
    }

    /// CPU cost of ending a block request: one bio completion per I/O it carries.
    pub(super) fn end_cost(&self, r: ReqId) -> u64 {
        self.cfg.host.costs.complete_ns * self.block.req(r).bios.len() as u64
    }
}

impl DriverCtx for Sim {
    fn block(&mut self) -> &mut BlockLayer {
        &mut self.block
    }

    fn cpu(&mut self) -> &mut Cpu {
        &mut self.cpu
    }

    fn blk_trace(&mut self, at: SimTime, r: ReqId, action: BlkAction, core: u32) {
        self.blk_rq(at, r, action, core);
    }

    fn blk_trace_direct(&mut self, at: SimTime, r: ReqId, core: u32) {
        self.blk_rq_direct(at, r, core);
    }

    fn device(&mut self, input: device::Input, emits: &mut Vec<(SimTime, device::Output)>) {
        let d = self.device_step(input);
        emits.extend(self.dev_outs[d].drain_emits());
        self.device_done(d);
    }

    // Inlined into the driver's code (like `device_at`): out of line the event came by
    // pointer from the caller's stack, and loading it just after the caller wrote it
    // stalled (it was most of this function's time).
    #[inline(always)]
    fn schedule(&mut self, at: SimTime, ev: Event) {
        self.q.push(at, Ev::Driver(ev));
    }

    #[inline(always)]
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
