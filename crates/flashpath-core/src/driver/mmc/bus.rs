//! The MMC bus as the MMC driver drives it: commands with their responses on the CMD
//! line, data on the DAT lines (one FIFO resource: an SDHCI-class host moves one
//! transfer at a time), and the host controller's interrupt. Units: ns, bytes.

use super::Mmc;
use crate::driver::DriverCtx;
use crate::engine::{FifoResource, SimTime};
use crate::host::block::ReqId;
use crate::trace::TraceKind;
use crate::workload::Dir;

impl Mmc {
    /// `n` commands (with responses) on the command line from `at`, the first with
    /// `opcode`... each traced with its own opcode; returns when the last response is in.
    pub(super) fn bus_cmds(
        &mut self,
        ctx: &mut impl DriverCtx,
        at: SimTime,
        opcodes: &[u8],
        req: Option<ReqId>,
    ) -> SimTime {
        commands(&mut self.bus, ctx, self.cmd_ns, at, opcodes, req)
    }

    /// A data transfer of `dur` on the bus from `at`; returns its end.
    pub(super) fn bus_data(
        &mut self,
        ctx: &mut impl DriverCtx,
        at: SimTime,
        dur: u64,
        dir: Dir,
        req: ReqId,
    ) -> SimTime {
        let (s, e) = self.bus.book(at, dur);
        ctx.trace(s, Some(req), TraceKind::Data { dir, end: e });
        e
    }

    /// Read data of `bytes` streams out over the bus from `at`; the last 4 KiB cannot
    /// leave before `last_ready`, when the device has all of it. Returns (start, end).
    pub(super) fn bus_read_stream(
        &mut self,
        ctx: &mut impl DriverCtx,
        at: SimTime,
        bytes: u64,
        last_ready: SimTime,
        r: ReqId,
    ) -> (SimTime, SimTime) {
        let rate = self.bus_rate;
        let tail = last_ready + rate.ns(bytes.min(4096));
        let (start, mut end) = self.bus.book(at, rate.ns(bytes));
        if tail > end {
            self.bus.book(end, tail - end);
            end = tail;
        }
        ctx.trace(
            start,
            Some(r),
            TraceKind::Data {
                dir: Dir::Read,
                end,
            },
        );
        (start, end)
    }

    /// The interrupt handler runs on the IRQ core from `at` for `cost`.
    pub(super) fn irq_run(
        &mut self,
        ctx: &mut impl DriverCtx,
        at: SimTime,
        cost: u64,
        req: ReqId,
    ) -> SimTime {
        ctx.irq_raised(req, at);
        let core = self.host.irq_core;
        let t = ctx.cpu().run_irq_l(core, at, cost, "irq handler");
        ctx.trace(t, Some(req), TraceKind::Irq { core });
        t
    }
}

/// Commands of `cmd_ns` each (with their responses) one after the other on `line` from
/// `at`, each traced with its opcode; returns when the last response is in.
pub(super) fn commands(
    line: &mut FifoResource,
    ctx: &mut impl DriverCtx,
    cmd_ns: u64,
    at: SimTime,
    opcodes: &[u8],
    req: Option<ReqId>,
) -> SimTime {
    let mut t = at;
    for &opcode in opcodes {
        let (s, e) = line.book(t, cmd_ns);
        ctx.trace(s, req, TraceKind::Command { opcode, end: e });
        t = e;
    }
    t
}
