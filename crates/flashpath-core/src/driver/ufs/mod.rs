//! The UFS host driver (linux drivers/scsi/ufs/ufshcd.c) and its M-PHY/UniPro link.
//!
//! ```text
//!  blk-mq ──queue_rq──▶ ufshcd_queuecommand (UTRD + COMMAND UPIU + PRDT) ─▶ doorbell (MMIO)
//!                         │ host controller fetches the descriptor (hc_fetch)
//!   host→device lane ═════╪═ COMMAND UPIU ═══════════════ DATA OUT (write, after RTT) ══▶
//!   device→host lane ◀════╪═ READY_TO_TRANSFER ═ DATA IN (read) ═ RESPONSE UPIU ═════════
//!                         ▼
//!  UTRCS interrupt (per completion, or aggregated) ─▶ __ufshcd_transfer_req_compl
//!     ─▶ block completion inline (submitter shares the IRQ core's cache) or by IPI
//! ```
//!
//! Mechanism (docs/kernel-behaviour.md §7, ufshcd.c): the block layer hands a request to
//! `ufshcd_queuecommand`, which takes a free UTP transfer request slot (32 on UFSHCI 2.1
//! hosts), builds the descriptor and rings the doorbell: one MMIO write per command, no
//! waiting for earlier commands, up to `nutrs` outstanding. With scheduler `none` blk-mq
//! issues directly from the submitting thread; with an elevator the hardware queue is run
//! by a kblockd worker. The link is full duplex: each direction is its own resource.
//! Reads: COMMAND UPIU in, the device's read, DATA IN UPIUs and the RESPONSE out.
//! Writes: COMMAND UPIU in; the device grants READY_TO_TRANSFER while fewer than
//! `max_rtt` (bMaxNumOfRTT) writes are between RTT and acceptance (its flow control: it
//! takes write data only as it can accept it, so writes are accepted one at a time in
//! the order their RTTs go out); DATA OUT in; the device accepts the data (write buffer)
//! and sends the RESPONSE. Each RESPONSE sets the request's completion; the interrupt
//! (one per completion unless aggregation is on) runs the completion.
//!
//! Discards (fio trims) are SCSI UNMAP (sd.c sd_setup_unmap_cmnd, one block descriptor
//! per request): a COMMAND UPIU, a READY_TO_TRANSFER and DATA OUT of the 24-byte
//! parameter list, the device unmaps the range, then the RESPONSE.
//! Auto-hibern8 (`auto_hibern8.rs`) runs for a device that flushes WriteBooster in
//! hibern8. Leaves out: task management, query requests, clock gating, hibern8 entry and
//! exit times, error handling, the legacy (non-mq) SCSI request path of 4.4 kernels, several DATA
//! IN streams interleaved by the device (each read's data goes out in one piece).
//! Units: ns, bytes.

use super::{DriverCtx, Event, HostDriver, Input, Output};
use crate::device::{self, DevCommand, DevOp, DeviceConfig};
use crate::engine::{FifoResource, SimTime};
use crate::host::block::ReqId;
use crate::host::ufs_config::UfsHostConfig;
use crate::host::{DriverKind, HostConfig, Scheduler};
use crate::stats::SystemStats;
use crate::trace::{BlkAction, Ctx, TraceKind};
use crate::workload::Dir;
use std::collections::VecDeque;

pub mod auto_hibern8;
pub mod hpb;
pub mod link;
pub mod mcq;
pub mod write_booster;

/// UPIU transaction codes (JEDEC UFS 2.1 §10.5), used as `TraceKind::Command` opcodes.
pub mod upiu {
    /// The parameter list of an UNMAP with one block descriptor (SBC-3 §5.28): an
    /// 8-byte header and one 16-byte descriptor, sent as DATA OUT.
    pub const UNMAP_PARAM_BYTES: u64 = 24;
    pub const COMMAND: u8 = 0x01;
    pub const RESPONSE: u8 = 0x21;
    pub const READY_TO_TRANSFER: u8 = 0x31;
}

#[derive(Debug)]
pub enum UfsEv {
    /// The kblockd worker runs the hardware queue.
    DispStart,
    /// `ufshcd_queuecommand` has rung the doorbell for the request.
    Doorbell { req: ReqId, core: u32 },
    /// The COMMAND UPIU has arrived in the device.
    CmdArrived(ReqId),
    /// The device has the read's data (starting now; all of it by `last_ready`).
    ReadReady { req: ReqId, last_ready: SimTime },
    /// The device accepted the write's data.
    WriteAccepted(ReqId),
    /// The RESPONSE UPIU has arrived: the controller sets the completion (UTRCS).
    Response(ReqId),
    /// The interrupt-aggregation timer of generation `gen` expired.
    AggrTimeout(u32),
    /// The block completion of the request has run.
    Done(ReqId),
    /// The HPB driver's work items and timers (`hpb.rs`).
    Hpb(hpb::HpbEv),
    /// The auto-hibern8 idle timer of generation `gen` expired (`auto_hibern8.rs`).
    AutoHibern8(u32),
}

/// The UFS host driver and its link: all of its state.
pub struct Ufs {
    /// The host preset's `[ufs]` section.
    cfg: UfsHostConfig,
    /// The core taking the controller's interrupt, and the hard interrupt's entry cost.
    irq_core: u32,
    irq_ns: u64,
    /// blk-mq without an elevator issues from the submitting task.
    direct_issue: bool,
    /// The block layer's tags (HPB's requests take one like any command).
    nr_requests: u32,
    /// Core of the kblockd worker running the hardware queue, if any.
    dispatcher: Option<u32>,
    /// UTP transfer request slots taken (queuecommand started, completion not yet run).
    slots: u32,
    /// The HPB driver, with `ufs-hpb` and `ufs-hpb-hcm` (`hpb.rs`).
    hpb: Option<Box<hpb::HpbState>>,
    /// Host→device and device→host directions of the link.
    h2d: FifoResource,
    d2h: FifoResource,
    /// Writes between READY_TO_TRANSFER and acceptance.
    rtt: u32,
    /// Writes whose COMMAND arrived, waiting for an RTT, in arrival order.
    rtt_wait: VecDeque<ReqId>,
    /// Completions waiting for the aggregated interrupt.
    aggr_pending: Vec<ReqId>,
    aggr_gen: u32,
    /// Set while a completion ends a block request (a queue rerun from there is async).
    in_completion: bool,
    /// The device's outputs of a command given synchronously.
    dev_emits: Vec<(SimTime, device::Output)>,
    /// Auto-hibern8, when the device flushes WriteBooster in hibern8 (`auto_hibern8.rs`).
    ah8: Option<auto_hibern8::AutoHibern8>,
    /// Multi-circular queue mode (`ufs-mcq`, `mcq.rs`): `cfg.nutrs` is its depth.
    mcq: bool,
}

/// A UFS driver needs the host preset's `[ufs]` section.
pub(crate) fn check(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    if kind.is_ufs() && host.ufs.is_none() {
        return Err(format!(
            "driver '{}' needs a [ufs] section in host preset '{}'",
            kind.name(),
            host.name
        ));
    }
    Ok(())
}

impl Ufs {
    /// The driver `kind` (ufs, or ufs-hpb in a control mode) for `host` (whose `[ufs]`
    /// section `check` found) and `device`.
    pub fn new(kind: DriverKind, host: &HostConfig, device: &DeviceConfig) -> Ufs {
        let mut cfg = host
            .ufs
            .clone()
            .expect("the simulation checked the [ufs] section");
        link::negotiate(&mut cfg, device);
        let mcq = kind == DriverKind::UfsMcq;
        if mcq {
            cfg.nutrs = mcq::queue_depth(host, device);
        }
        Ufs {
            cfg,
            irq_core: host.irq_core,
            irq_ns: host.costs.irq_ns,
            direct_issue: host.block.scheduler == Scheduler::None,
            nr_requests: host.block.nr_requests,
            dispatcher: None,
            slots: 0,
            hpb: hpb::HpbState::new(kind, host, device),
            h2d: FifoResource::new(),
            d2h: FifoResource::new(),
            rtt: 0,
            rtt_wait: VecDeque::new(),
            aggr_pending: Vec::new(),
            aggr_gen: 0,
            in_completion: false,
            dev_emits: Vec::new(),
            ah8: auto_hibern8::AutoHibern8::new(host, device),
            mcq,
        }
    }
}

impl HostDriver for Ufs {
    #[inline]
    fn handle(&mut self, now: SimTime, input: Input, ctx: &mut impl DriverCtx) {
        match input {
            Input::Start => self.hpb_setup(ctx),
            Input::Kick { core } => self.kick(now, core, ctx),
            Input::Event(Event::Ufs(ev)) => self.event(now, ev, ctx),
            Input::Event(ev) => unreachable!("another driver's event {ev:?}"),
            Input::Device { at, out } => self.device_output(at, out, ctx),
            Input::Ended(_) => {
                self.in_completion = false;
                // SCSI's end of request reruns the queue (asynchronously, kblockd) when
                // requests wait for a slot.
                if ctx.block().has_queued() {
                    let core = self.irq_core;
                    self.run_async(now, core, ctx);
                }
            }
        }
    }

    fn report(&self, sys: &mut SystemStats) {
        sys.link_busy_ns = [self.h2d.busy_ns(), self.d2h.busy_ns()];
        sys.hpb = self.hpb.as_ref().map(|h| h.drv.stats);
    }
}

impl Ufs {
    /// The wiring from the device's outputs to the driver's steps.
    fn device_output(&mut self, at: SimTime, out: device::Output, ctx: &mut impl DriverCtx) {
        match out {
            device::Output::ReadReady { tag, last_ready } => {
                self.hpb_read_buffer_data(tag, ctx);
                ctx.schedule(
                    at,
                    Event::Ufs(UfsEv::ReadReady {
                        req: tag,
                        last_ready,
                    }),
                );
            }
            // A write was accepted (or a command failed).
            device::Output::Done { tag, .. } => {
                ctx.schedule(at, Event::Ufs(UfsEv::WriteAccepted(tag)))
            }
            device::Output::HpbHints { tag, hints } => self.hpb_hints(tag, hints),
        }
    }

    /// Command `input` reaches the device now; its outputs are handled at once.
    fn device_now(&mut self, input: device::Input, ctx: &mut impl DriverCtx) {
        let mut emits = std::mem::take(&mut self.dev_emits);
        ctx.device(input, &mut emits);
        for (at, out) in emits.drain(..) {
            self.device_output(at, out, ctx);
        }
        self.dev_emits = emits;
    }

    #[inline]
    fn event(&mut self, now: SimTime, ev: UfsEv, ctx: &mut impl DriverCtx) {
        match ev {
            UfsEv::DispStart => self.disp_next(now, ctx),
            UfsEv::Doorbell { req, core } => self.doorbell(now, req, core, ctx),
            UfsEv::CmdArrived(r) => self.cmd_arrived(now, r, ctx),
            UfsEv::ReadReady { req, last_ready } => self.read_data(now, req, last_ready, ctx),
            UfsEv::WriteAccepted(r) => self.write_accepted(now, r, ctx),
            UfsEv::Response(r) => self.response(now, r, ctx),
            UfsEv::Hpb(e) => self.hpb_event(now, e, ctx),
            UfsEv::AutoHibern8(gen) => self.ah8_expired(gen, ctx),
            UfsEv::AggrTimeout(g) => {
                if g == self.aggr_gen && !self.aggr_pending.is_empty() {
                    self.irq(now, ctx);
                }
            }
            UfsEv::Done(r) => {
                self.slots -= 1;
                // Cleared when the block layer has ended it (`Input::Ended`).
                self.in_completion = true;
                ctx.emit(Output::EndRequest(r));
            }
        }
    }

    /// blk-mq runs the hardware queue after an insert on `core`: directly from the
    /// submitting context without an elevator (`blk_mq_try_issue_directly`), else (and
    /// for reruns from a completion) from a kblockd worker.
    fn kick(&mut self, now: SimTime, core: u32, ctx: &mut impl DriverCtx) {
        if !ctx.block().has_queued() {
            return;
        }
        if self.direct_issue && !self.in_completion {
            // Direct issue: this context dispatches its own request, no hand-off.
            if self.slots < self.cfg.nutrs {
                self.queuecommand(now, core, now, false, ctx);
            }
            return;
        }
        self.run_async(now, core, ctx);
    }

    fn run_async(&mut self, now: SimTime, core: u32, ctx: &mut impl DriverCtx) {
        if self.dispatcher.is_some() || self.slots >= self.cfg.nutrs {
            return;
        }
        self.dispatcher = Some(core);
        let t = ctx.wake(core, now);
        ctx.schedule(t, Event::Ufs(UfsEv::DispStart));
    }

    /// The kblockd worker's dispatch loop: one request per `queue_rq` while slots last.
    fn disp_next(&mut self, at: SimTime, ctx: &mut impl DriverCtx) {
        let Some(core) = self.dispatcher else {
            return;
        };
        if self.slots >= self.cfg.nutrs || !self.queuecommand(at, core, at, true, ctx) {
            self.dispatcher = None;
        }
    }

    /// `scsi_queue_rq` → `ufshcd_queuecommand` on `core` from `at`: takes a slot,
    /// builds UTRD/UPIU/PRDT and rings the doorbell, from the submitting thread (direct
    /// issue) or from kblockd (`kernel`). False if nothing was queued.
    fn queuecommand(
        &mut self,
        now: SimTime,
        core: u32,
        at: SimTime,
        kernel: bool,
        ctx: &mut impl DriverCtx,
    ) -> bool {
        let Some(r) = ctx.block().dispatch(at) else {
            return false;
        };
        if ctx.tracing() {
            if kernel {
                ctx.blk_trace(at, r, BlkAction::Issue, core);
            } else {
                ctx.blk_trace_direct(at, r, core);
            }
        }
        self.slots += 1;
        assert!(self.slots <= self.cfg.nutrs, "more commands than UTP slots");
        let bytes = self.data_bytes(r, ctx);
        let hpb = self.hpb_prep(now, r, ctx);
        let u = &self.cfg;
        let cost = u.queuecommand_ns
            + u.queuecommand_per_4k_ns * bytes.div_ceil(4096)
            + u.doorbell_ns
            + hpb;
        let end = if kernel {
            ctx.cpu().run_kernel(core, at, cost, "queuecommand")
        } else {
            ctx.cpu().run_l(core, at, cost, "queuecommand")
        };
        ctx.schedule(end, Event::Ufs(UfsEv::Doorbell { req: r, core }));
        true
    }

    /// The doorbell is rung: the controller fetches the descriptor and sends the COMMAND
    /// UPIU; the dispatcher (if any) goes on with the next request.
    #[inline]
    fn doorbell(&mut self, now: SimTime, r: ReqId, core: u32, ctx: &mut impl DriverCtx) {
        self.ah8_doorbell(ctx);
        let in_flight = self.slots;
        ctx.trace(
            now,
            Some(r),
            TraceKind::DriverQueued {
                queued: 0,
                in_flight,
            },
        );
        ctx.trace(
            now,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        let (fetch, cmd_ns) = (self.cfg.hc_fetch_ns, self.cfg.upiu_ns(0));
        let (s, e) = self.h2d.book(now + fetch, cmd_ns);
        ctx.trace(
            s,
            Some(r),
            TraceKind::Command {
                opcode: upiu::COMMAND,
                end: e,
            },
        );
        if ctx.tracing() {
            self.hpb_trace(r, s, e, ctx);
        }
        ctx.schedule(e, Event::Ufs(UfsEv::CmdArrived(r)));
        if self.dispatcher == Some(core) {
            self.disp_next(now, ctx);
        }
    }

    /// Bytes of the command's data: an UNMAP carries its parameter list, not the range.
    fn data_bytes(&self, r: ReqId, ctx: &mut impl DriverCtx) -> u64 {
        let q = ctx.block().req(r);
        if q.discard {
            upiu::UNMAP_PARAM_BYTES
        } else {
            q.bytes()
        }
    }

    fn dev_command(&self, r: ReqId, ctx: &mut impl DriverCtx) -> DevCommand {
        let fua = ctx.fua(r);
        let q = ctx.block().req(r);
        let cmd = DevCommand {
            tag: r,
            op: match q.dir() {
                // SYNCHRONIZE CACHE (sd_setup_flush_cmnd): no data.
                _ if q.flush => DevOp::Flush,
                // UNMAP (sd_setup_unmap_cmnd): one descriptor for the request's range.
                _ if q.discard => DevOp::Discard,
                Dir::Read => DevOp::Read,
                Dir::Write => DevOp::Write,
            },
            lba: q.sector,
            sectors: q.sectors,
            fua,
            hpb: 0,
        };
        self.hpb_command(r, cmd)
    }

    /// The COMMAND UPIU is in the device: a read goes to the device at once; a write
    /// waits for a READY_TO_TRANSFER.
    #[inline]
    fn cmd_arrived(&mut self, now: SimTime, r: ReqId, ctx: &mut impl DriverCtx) {
        let cmd = self.dev_command(r, ctx);
        let bytes = cmd.sectors as u64 * 512;
        match cmd.op {
            DevOp::Read | DevOp::HpbRead => {
                ctx.sys().device_host_read_bytes += bytes;
                self.device_now(device::Input::Command(cmd), ctx);
            }
            DevOp::ReadBuffer => self.device_now(device::Input::Command(cmd), ctx),
            // A flush or a WRITE BUFFER carries no data: no READY_TO_TRANSFER.
            DevOp::Flush | DevOp::WriteBuffer => self.device_now(device::Input::Command(cmd), ctx),
            _ => {
                if cmd.op == DevOp::Write {
                    ctx.sys().device_host_write_bytes += bytes;
                }
                if self.rtt < self.cfg.max_rtt {
                    self.grant_rtt(r, now, ctx);
                } else {
                    self.rtt_wait.push_back(r);
                }
            }
        }
    }

    /// The device sends READY_TO_TRANSFER for each data segment of write `r` from `at`;
    /// the controller answers each with a DATA OUT UPIU; the device has the command and
    /// its data when the last one is in.
    fn grant_rtt(&mut self, r: ReqId, at: SimTime, ctx: &mut impl DriverCtx) {
        self.rtt += 1;
        let cmd = self.dev_command(r, ctx);
        let mut left = self.data_bytes(r, ctx);
        let (seg_max, rtt_ns) = (self.cfg.max_data_segment_bytes, self.cfg.upiu_ns(0));
        let mut t = at;
        while left > 0 {
            let seg = left.min(seg_max);
            left -= seg;
            let (s, e) = self.d2h.book(t, rtt_ns);
            ctx.trace(
                s,
                Some(r),
                TraceKind::Command {
                    opcode: upiu::READY_TO_TRANSFER,
                    end: e,
                },
            );
            let dur = self.cfg.upiu_ns(seg);
            let (ds, de) = self.h2d.book(e, dur);
            ctx.trace(
                ds,
                Some(r),
                TraceKind::Data {
                    dir: Dir::Write,
                    end: de,
                },
            );
            t = de;
        }
        ctx.device_at(t, device::Input::Command(cmd));
    }

    /// DATA IN UPIUs stream the read's data to the host (the last 4 KiB cannot leave
    /// before it is ready), then the RESPONSE UPIU.
    #[inline]
    fn read_data(&mut self, now: SimTime, r: ReqId, last_ready: SimTime, ctx: &mut impl DriverCtx) {
        ctx.trace(last_ready, Some(r), TraceKind::DeviceDone);
        let mut left = ctx.block().req(r).bytes();
        let seg_max = self.cfg.max_data_segment_bytes;
        let mut t = now;
        while left > 0 {
            let seg = left.min(seg_max);
            left -= seg;
            let u = &self.cfg;
            let dur = u.upiu_ns(seg);
            let mut ready = t;
            if left == 0 {
                // The segment cannot end before its last 4 KiB, ready at `last_ready`,
                // has crossed the link.
                let chunk = crate::engine::transfer_ns(seg.min(4096), u.link_bytes_per_s);
                ready = ready.max((last_ready + chunk).saturating_sub(dur));
            }
            let (s, e) = self.d2h.book(ready, dur);
            ctx.trace(
                s,
                Some(r),
                TraceKind::Data {
                    dir: Dir::Read,
                    end: e,
                },
            );
            t = e;
        }
        self.response_upiu(r, t, ctx);
    }

    /// The device accepted write `r`: the next waiting write gets its RTT; the RESPONSE
    /// goes out.
    fn write_accepted(&mut self, now: SimTime, r: ReqId, ctx: &mut impl DriverCtx) {
        ctx.trace(now, Some(r), TraceKind::DeviceDone);
        let q = ctx.block().req(r);
        if q.dir() == Dir::Write && !q.flush && !q.passthrough {
            self.rtt -= 1;
            if let Some(w) = self.rtt_wait.pop_front() {
                self.grant_rtt(w, now, ctx);
            }
        }
        self.response_upiu(r, now, ctx);
    }

    fn response_upiu(&mut self, r: ReqId, at: SimTime, ctx: &mut impl DriverCtx) {
        let dur = self.cfg.upiu_ns(0);
        let (s, e) = self.d2h.book(at, dur);
        ctx.trace(
            s,
            Some(r),
            TraceKind::Command {
                opcode: upiu::RESPONSE,
                end: e,
            },
        );
        ctx.schedule(e, Event::Ufs(UfsEv::Response(r)));
    }

    /// The controller clears the request's doorbell bit and raises UTRCS, or counts it
    /// for the aggregated interrupt.
    #[inline]
    fn response(&mut self, now: SimTime, r: ReqId, ctx: &mut impl DriverCtx) {
        self.ah8_response(now, ctx);
        self.aggr_pending.push(r);
        match self.cfg.intr_aggr {
            None => self.irq(now, ctx),
            Some((counter, timeout)) => {
                if self.aggr_pending.len() as u32 >= counter {
                    self.irq(now, ctx);
                } else if self.aggr_pending.len() == 1 {
                    self.aggr_gen += 1;
                    let g = self.aggr_gen;
                    ctx.schedule(now + timeout, Event::Ufs(UfsEv::AggrTimeout(g)));
                }
            }
        }
    }

    /// `ufshcd_intr` → `ufshcd_transfer_req_compl`: every completed request is completed
    /// from the hard interrupt; blk-mq ends it here when the submitting core shares the
    /// IRQ core's cache, else on the submitting core through an IPI.
    fn irq(&mut self, now: SimTime, ctx: &mut impl DriverCtx) {
        let irq_core = self.irq_core;
        let mut t = ctx
            .cpu()
            .run_irq_l(irq_core, now, self.irq_ns, "irq handler");
        let done = std::mem::take(&mut self.aggr_pending);
        // A new aggregation window starts with the next completion.
        self.aggr_gen += 1;
        for &r in &done {
            ctx.irq_raised(r, now);
            ctx.trace(t, Some(r), TraceKind::Irq { core: irq_core });
        }
        for &r in &done {
            let bytes = ctx.block().req(r).bytes();
            let u = &self.cfg;
            let (drv, llc) = (
                u.completion_ns + u.completion_per_4k_ns * bytes.div_ceil(4096),
                u.llc_cores,
            );
            t = ctx.cpu().run_irq_l(irq_core, t, drv, "ufs completion");
            t = self.hpb_complete(now, r, irq_core, t, ctx);
            let end = ctx.end_cost(r);
            let req_cpu = ctx.block().req(r).cpu;
            let fin = if req_cpu / llc == irq_core / llc {
                t = ctx.cpu().run_irq_l(irq_core, t, end, "post+complete");
                t
            } else {
                let ipi = self.irq_ns;
                ctx.cpu().run_irq_l(req_cpu, t, ipi + end, "ipi+complete")
            };
            ctx.schedule(fin, Event::Ufs(UfsEv::Done(r)));
        }
        let mut done = done;
        done.clear();
        self.aggr_pending = done;
    }
}
