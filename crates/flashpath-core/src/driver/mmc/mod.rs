//! The MMC block driver's dispatch (drivers/mmc/core/block.c, queue.c): the legacy path
//! (one request on the bus, the next prepared meanwhile, CMD13 polling after a write,
//! the mmc_complete kworker) and the host software queue (mmc_hsq.c: slots, the next
//! request started from the completion interrupt, no CMD13), their bus commands on an
//! SDHCI-class host, the busy and read-data ends. The rtsx SD host (`rtsx.rs`), the
//! command queue engine (`cqe.rs`) and the MMC_ISSUE_SYNC requests (discards and flushes,
//! `erase.rs`) take over from here where they differ; the bus is `bus.rs`.
//!
//! The legacy path in events: a thread that inserts a request into the scheduler runs
//! the hardware queue asynchronously (blk-mq with an elevator inserts with `async =
//! true`), so a kblockd worker wakes on the thread's core, becomes the dispatcher and
//! stays in `queue_rq` while there is work: it prepares the next request (prep + DMA
//! map) while the current one is on the bus, sleeps in `mmc_blk_rw_wait`, is woken by
//! the interrupt of the current one, polls CMD13 after a write, starts the prepared
//! request, then runs `post_req` and ends the finished request. A completion that finds
//! no waiter goes to the `mmc_complete` kworker (docs/kernel-behaviour.md §1).
//!
//! One driver, `Mmc`, runs every MMC variant (`mmc-legacy`, the `mmc-hsq` family,
//! `mmc-cqe`, `sd-rtsx`, `sd-rtsx-multiseq`): as in the kernel, they share the MMC block
//! driver and differ in the host side; `kind` says which.
//! Units: ns.

use super::{DriverCtx, Event, HostDriver, Input, Output};
use crate::device::{self, DevCommand, DevOp, DeviceConfig};
use crate::engine::{FifoResource, Rate, SimTime};
use crate::host::block::ReqId;
use crate::host::{Cmd13Mode, DriverKind, HostConfig};
use crate::stats::SystemStats;
use crate::trace::{BlkAction, Ctx, TraceKind};
use crate::workload::Dir;

mod bus;
pub(crate) mod cqe;
pub(crate) mod erase;
pub mod rtsx;

/// The MMC driver's timed steps.
#[derive(Debug)]
pub enum MmcEv {
    /// The kblockd worker starts the dispatch loop.
    DispStart,
    /// The dispatcher finished prep + pre_req of a request: `mmc_blk_rw_wait`.
    DispPrepared(ReqId),
    /// The dispatcher was woken by the interrupt of the request on the bus.
    DispWoken,
    /// The dispatcher ended the previous request and returns from queue_rq.
    DispPosted(Option<ReqId>),
    /// The request is started on the bus.
    BusIssue(ReqId),
    /// The interrupt handler for the request on the bus has run.
    Irq(ReqId),
    /// The `mmc_complete` kworker runs.
    WorkerRun,
    /// hsq: the dispatcher finished prep + pre_req; `mmc_hsq_request` takes the request.
    HsqQueued(ReqId),
    /// hsq: the block completion of the request has run (on its submitting CPU).
    HsqDone(ReqId),
    /// A block request has ended: its I/Os complete.
    ReqEnd(ReqId),
    /// A read's data is ready in the device: stream it over the bus.
    ReadReady { req: ReqId, last_ready: SimTime },
    /// The eMMC command queue engine (`cqe.rs`).
    Cqe(cqe::CqeEv),
    /// The rtsx SD host driver's own events (`rtsx.rs`).
    Rtsx(rtsx::RtsxEv),
    /// A discard or flush issued synchronously (`erase.rs`).
    Discard(erase::DiscardEv),
    /// Not a timed step of the driver: a command for the device at its time
    /// (`sched` hands it to the device).
    Dev(device::Input),
}

/// What the driver does once the block layer has ended a request it emitted.
#[derive(Clone, Copy, Debug)]
enum AfterEnd {
    Nothing,
    /// The dispatcher goes on (`queue_rq` returned).
    DispNext,
    /// blk-mq's restart: the completion reruns the queue.
    Kick,
    /// A discard waiting for idle goes on (`erase.rs`).
    SyncIdle,
    /// Both, in that order.
    SyncIdleThenKick,
}

/// `ev` at `t`: a step of the driver, or a command reaching the device.
#[inline]
fn sched(ctx: &mut impl DriverCtx, t: SimTime, ev: MmcEv) {
    match ev {
        MmcEv::Dev(input) => ctx.device_at(t, input),
        ev => ctx.schedule(t, Event::Mmc(ev)),
    }
}

/// The MMC driver: all of its state.
pub struct Mmc {
    kind: DriverKind,
    host: HostConfig,
    /// The card's cache is on: a flush sends CMD6 FLUSH_CACHE (`erase.rs`).
    cache_on: bool,
    /// The time of the input being handled.
    now: SimTime,
    mmc: MmcLegacy,
    hsq: MmcHsq,
    cqe: cqe::MmcCqe,
    rtsx: rtsx::Rtsx,
    disc: erase::Erase,
    /// The MMC bus (CMD and DAT lines; CQE's CMD line is its own, `cqe.rs`).
    bus: FifoResource,
    /// The bus's data rate (`host.bus.data_bytes_per_s`) and a command's time
    /// (`host.bus.command_ns()`), fixed once the bus mode is negotiated.
    bus_rate: Rate,
    cmd_ns: u64,
    /// When the device releases busy for each write request (indexed by request id).
    dev_ready_at: Vec<SimTime>,
    /// What follows each request end the driver emitted, in order.
    after_end: std::collections::VecDeque<AfterEnd>,
    /// The device's outputs of a command given synchronously.
    dev_emits: Vec<(SimTime, device::Output)>,
}

/// The MMC variants' needs of the presets: mmc-cqe needs the host's `[cqe]` section.
pub(crate) fn check(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    cqe::MmcCqe::new(kind, host).map(|_| ())
}

impl Mmc {
    pub fn new(kind: DriverKind, host: &HostConfig, device: &DeviceConfig) -> Result<Mmc, String> {
        Ok(Mmc {
            kind,
            host: host.clone(),
            cache_on: device.cache_on(),
            now: 0,
            mmc: MmcLegacy::default(),
            hsq: MmcHsq::default(),
            cqe: cqe::MmcCqe::new(kind, host)?,
            rtsx: rtsx::Rtsx::default(),
            disc: erase::Erase::new(device, host),
            bus: FifoResource::new(),
            bus_rate: Rate::new(host.bus.data_bytes_per_s),
            cmd_ns: host.bus.command_ns(),
            dev_ready_at: Vec::new(),
            after_end: std::collections::VecDeque::new(),
            dev_emits: Vec::new(),
        })
    }

    /// blk-mq tags: the CQE's task IDs when the engine runs (mmc_init_queue), else `nr`.
    pub fn tags(&self, nr: u32) -> u32 {
        self.cqe.tags(nr)
    }

    /// Ends request `r` in the block layer; then `after`.
    fn end_request(&mut self, ctx: &mut impl DriverCtx, r: ReqId, after: AfterEnd) {
        self.after_end.push_back(after);
        ctx.emit(Output::EndRequest(r));
    }

    /// Command `input` reaches the device now; its outputs are handled at once.
    fn device_now(&mut self, ctx: &mut impl DriverCtx, input: device::Input) {
        let mut emits = std::mem::take(&mut self.dev_emits);
        ctx.device(input, &mut emits);
        for (at, out) in emits.drain(..) {
            self.device_output(ctx, at, out);
        }
        self.dev_emits = emits;
    }

    /// The wiring from the device's outputs to the driver's steps.
    fn device_output(&mut self, ctx: &mut impl DriverCtx, at: SimTime, out: device::Output) {
        match out {
            device::Output::ReadReady { tag, last_ready } => {
                sched(
                    ctx,
                    at,
                    MmcEv::ReadReady {
                        req: tag,
                        last_ready,
                    },
                );
            }
            device::Output::HpbHints { .. } => {
                unreachable!("HPB runs on UFS only (driver::configure_device)")
            }
            device::Output::Done { tag, .. } if tag == rtsx::STOP_TAG => {
                self.rtsx_stop_answered(ctx, at);
            }
            device::Output::Done { tag, .. } if self.disc.busy_cmd_of(tag) => {
                self.discard_busy_end(ctx, tag, at);
            }
            device::Output::Done { tag, .. } => {
                // A write or flush released busy at `at`: known now, so the driver's
                // busy polling can be computed against it.
                let i = tag as usize;
                if self.dev_ready_at.len() <= i {
                    self.dev_ready_at.resize(i + 1, 0);
                }
                self.dev_ready_at[i] = at;
                self.irq_after_write(ctx, tag, at);
            }
        }
    }

    #[inline]
    fn event(&mut self, ctx: &mut impl DriverCtx, ev: &MmcEv) {
        let now = self.now;
        // By reference: each arm loads only its own fields from where the caller put
        // the event (a copy of the whole event there reloaded what was just stored in
        // other widths, a store-forwarding stall on every event).
        match *ev {
            MmcEv::DispStart => self.disp_next(ctx, now),
            MmcEv::DispPrepared(r) => self.disp_prepared(ctx, r),
            MmcEv::DispWoken => {
                let r = self
                    .mmc
                    .prepared
                    .take()
                    .expect("woken dispatcher has a prepared request");
                self.disp_proceed(ctx, now, r);
            }
            MmcEv::DispPosted(prev) => match prev {
                Some(p) => self.end_request(ctx, p, AfterEnd::DispNext),
                None => self.disp_next(ctx, now),
            },
            MmcEv::BusIssue(r) => self.bus_issue(ctx, r),
            MmcEv::ReadReady { req, last_ready } => {
                if let DriverKind::MmcCqe { .. } = self.kind {
                    self.cqe_read_ready(ctx, req, last_ready);
                } else {
                    self.bus_read_data(ctx, req, last_ready);
                }
            }
            MmcEv::Irq(r) => self.irq(ctx, r),
            MmcEv::WorkerRun => self.worker_run(ctx),
            MmcEv::HsqQueued(r) => self.hsq_queued(ctx, r),
            MmcEv::HsqDone(r) => {
                self.hsq.in_flight -= 1;
                // blk-mq's restart: a completion reruns the queue that was refused.
                self.end_request(ctx, r, AfterEnd::Kick);
            }
            MmcEv::ReqEnd(r) => self.end_request(ctx, r, AfterEnd::Nothing),
            MmcEv::Cqe(e) => self.cqe_handle(ctx, e),
            MmcEv::Rtsx(e) => self.rtsx_event(ctx, e),
            MmcEv::Discard(e) => self.discard_handle(ctx, e),
            MmcEv::Dev(_) => unreachable!("device inputs go to the device (sched)"),
        }
    }
}

impl HostDriver for Mmc {
    #[inline]
    fn handle(&mut self, now: SimTime, input: Input, ctx: &mut impl DriverCtx) {
        self.now = now;
        match &input {
            Input::Start => {}
            Input::Kick { core } => self.kick(ctx, *core),
            Input::Event(Event::Mmc(ev)) => self.event(ctx, ev),
            Input::Event(ev) => unreachable!("another driver's event {ev:?}"),
            Input::Device { at, out } => self.device_output(ctx, *at, *out),
            Input::Ended(_) => {
                let irq_core = self.host.irq_core;
                match self
                    .after_end
                    .pop_front()
                    .expect("an end this driver emitted")
                {
                    AfterEnd::Nothing => {}
                    AfterEnd::DispNext => self.disp_next(ctx, now),
                    AfterEnd::Kick => self.kick(ctx, irq_core),
                    AfterEnd::SyncIdle => self.mmc_sync_host_idle(ctx, now),
                    AfterEnd::SyncIdleThenKick => {
                        self.mmc_sync_host_idle(ctx, now);
                        self.kick(ctx, irq_core);
                    }
                }
            }
        }
    }

    fn report(&self, sys: &mut SystemStats) {
        sys.bus_busy_ns = self.bus.busy_ns();
    }
}

/// The legacy MMC driver's state (one request on the bus, one prepared).
#[derive(Default)]
pub(crate) struct MmcLegacy {
    /// The core of the kblockd worker running the dispatch loop, if any.
    pub(crate) dispatcher: Option<u32>,
    /// Prepared request waiting in mmc_blk_rw_wait.
    pub(crate) prepared: Option<ReqId>,
    /// Request on the bus or in the device.
    pub(crate) active: Option<ReqId>,
    /// Finished on the hardware, waiting for CMD13 polling and post_req (mq->complete_req).
    pub(crate) complete_req: Option<ReqId>,
    /// The kworker holds complete_lock until then.
    pub(crate) lock_free_at: SimTime,
    pub(crate) worker_queued: bool,
}

/// The host software queue's state (mmc_hsq.c).
#[derive(Default)]
pub(crate) struct MmcHsq {
    /// Requests in slots, not yet started, in dispatch order.
    pub(crate) queue: std::collections::VecDeque<ReqId>,
    /// The request on the hardware (`hsq->mrq`).
    pub(crate) hw: Option<ReqId>,
    /// Requests dispatched to the driver and not yet completed (`mq->in_flight`).
    pub(crate) in_flight: u32,
    /// The dynamic variant's raised limit is in force (set at each pump).
    pub(crate) burst: bool,
}

impl Mmc {
    /// blk_mq_run_hw_queue(async): if nobody is dispatching, a kblockd worker wakes on
    /// `core` and becomes the dispatcher.
    pub(crate) fn kick(&mut self, ctx: &mut impl DriverCtx, core: u32) {
        if self.mmc.dispatcher.is_some() || !ctx.block().has_queued() {
            return;
        }
        // An hsq past its in-flight limit is run all the same, as blk_mq_run_hw_queue
        // runs any queue with requests pending: the worker takes one request, queue_rq
        // refuses it and it waits on the dispatch list (`disp_next`).
        if self.cqe.full() {
            return; // every task slot is taken; a completion reruns the queue
        }
        self.mmc.dispatcher = Some(core);
        let t = ctx.wake(core, self.now);
        sched(ctx, t, MmcEv::DispStart);
    }

    pub(crate) fn disp_core(&self) -> u32 {
        self.mmc.dispatcher.expect("dispatcher exists")
    }

    /// The dispatch loop takes the next request and prepares it, or ends.
    pub(crate) fn disp_next(&mut self, ctx: &mut impl DriverCtx, at: SimTime) {
        debug_assert!(self.mmc.prepared.is_none());
        let Some(core) = self.mmc.dispatcher else {
            return;
        };
        if self.cqe.full() {
            // MMC_CQE_QUEUE_FULL: BLK_STS_RESOURCE until a task completes.
            self.mmc.dispatcher = None;
            return;
        }
        match ctx.block().dispatch(at) {
            Some(r) => {
                let sync = ctx.block().req(r).discard || self.mmc_flush_is_sync(ctx, r);
                if let DriverKind::MmcHsq { .. } = self.kind {
                    if !sync && self.hsq.in_flight >= self.hsq_limit() {
                        // mmc_mq_queue_rq answers BLK_STS_RESOURCE past the in-flight
                        // limit (counted per issue type: reads and writes only): the
                        // request goes back on the dispatch list and the loop ends; a
                        // completion reruns the queue (blk_mq_dispatch_rq_list).
                        ctx.block().requeue(r);
                        if ctx.tracing() {
                            ctx.blk_trace(at, r, BlkAction::Requeue, core);
                        }
                        self.mmc.dispatcher = None;
                        return;
                    }
                }
                if ctx.tracing() {
                    ctx.blk_trace(at, r, BlkAction::Issue, core);
                }
                if sync {
                    // MMC_ISSUE_SYNC: no prep or DMA map; driver/mmc/erase.rs.
                    return self.mmc_sync_dispatch(ctx, core, at, r);
                }
                let cost = self.mmc_prep_ns(ctx, r);
                let end = ctx.cpu().run_kernel(core, at, cost, "prep+dma map");
                match self.kind {
                    DriverKind::MmcLegacy | DriverKind::SdRtsx { .. } => {
                        sched(ctx, end, MmcEv::DispPrepared(r))
                    }
                    DriverKind::MmcHsq { .. } => {
                        // Counted in flight from queue_rq on.
                        self.hsq.in_flight += 1;
                        sched(ctx, end, MmcEv::HsqQueued(r));
                    }
                    DriverKind::Ufs | DriverKind::UfsHpb { .. } | DriverKind::UfsMcq => {
                        unreachable!("the ufs driver has its own dispatch")
                    }
                    DriverKind::MmcCqe { .. } => self.cqe_issue(ctx, core, end, r),
                }
            }
            None => {
                // Nothing left: the worker goes back to sleep.
                self.mmc.dispatcher = None;
            }
        }
    }

    /// mmc_blk_rw_wait: wait while another request is on the hardware.
    pub(crate) fn disp_prepared(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        if self.mmc.active.is_some() {
            self.mmc.prepared = Some(r);
        } else {
            self.disp_proceed(ctx, now, r);
        }
    }

    /// CMD13 polling after a write until the card is out of busy, from `core`, starting
    /// at `at`; returns when the polling context continues.
    pub(crate) fn poll_busy(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        prev: ReqId,
    ) -> SimTime {
        if let DriverKind::SdRtsx { .. } = self.kind {
            return self.rtsx_cmd13(ctx, core, at, prev);
        }
        let ready = self.dev_ready_at.get(prev as usize).copied().unwrap_or(0);
        let mut t = at;
        let mut backoff_us = 32u64;
        loop {
            // A synchronous CMD13: issue, wait for the command-complete interrupt, wake up.
            t = ctx
                .cpu()
                .run_kernel(core, t, self.host.mmc.cmd13_ns, "cmd13");
            t = self.bus_cmds(ctx, t, &[13], Some(prev));
            ctx.sys().cmd13 += 1;
            let answered_busy = t < ready;
            t = self.irq_run(ctx, t, self.host.costs.irq_ns, prev);
            t = ctx.wake(core, t);
            if !answered_busy {
                return t;
            }
            if self.host.mmc.cmd13_mode == Cmd13Mode::Backoff {
                // mmc_poll_for_busy's usleep_range(d, 2d) arms an hrtimer whose soft
                // expiry is d and hard expiry 2d (hrtimer_set_expires_range_ns); the
                // clock event is programmed for the hard expiry, so on a core with no
                // earlier timer (the polling thread sleeps, NO_HZ idle) it fires at 2d.
                t += 2 * backoff_us * 1000;
                t = ctx.wake(core, t);
                backoff_us = (backoff_us * 2).min(32_768);
            }
        }
    }

    /// The previous request is off the hardware: complete it (CMD13 for writes), start
    /// `r`, then post-process the previous one.
    pub(crate) fn disp_proceed(&mut self, ctx: &mut impl DriverCtx, at: SimTime, r: ReqId) {
        if ctx.block().req(r).discard || self.mmc_flush_is_sync(ctx, r) {
            return self.mmc_sync_legacy_idle(ctx, at, r);
        }
        let core = self.disp_core();
        // complete_lock: if the kworker is completing the previous request, wait for it.
        let mut t = if self.mmc.lock_free_at > at {
            ctx.wake(core, self.mmc.lock_free_at)
        } else {
            at
        };
        let prev = self.mmc.complete_req.take();
        if let Some(p) = prev {
            if ctx.block().req(p).dir() == Dir::Write {
                t = self.poll_busy(ctx, core, t, p);
            }
        }
        t = ctx
            .cpu()
            .run_kernel(core, t, self.host.mmc.start_ns, "mmc start");
        self.mmc.active = Some(r);
        ctx.trace(
            t,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        sched(ctx, t, MmcEv::BusIssue(r));
        if let Some(p) = prev {
            let cost = self.mmc_post_ns(ctx, p);
            t = ctx.cpu().run_kernel(core, t, cost, "post+complete");
        }
        sched(ctx, t, MmcEv::DispPosted(prev));
    }

    /// Request prep (mmc_blk_rw_rq_prep, with a write's bounce copy) and DMA map.
    pub(crate) fn mmc_prep_ns(&self, ctx: &mut impl DriverCtx, r: ReqId) -> u64 {
        let m = &self.host.mmc;
        let bytes = ctx.block().req(r).bytes();
        m.prep_ns + m.prep_per_4k_ns * bytes.div_ceil(4096) + self.bounce_ns(ctx, r, Dir::Write)
    }

    /// Post-processing (DMA unmap, a read's bounce copy) and ending the block request.
    pub(crate) fn mmc_post_ns(&self, ctx: &mut impl DriverCtx, r: ReqId) -> u64 {
        let m = &self.host.mmc;
        let bytes = ctx.block().req(r).bytes();
        m.post_ns
            + m.post_per_4k_ns * bytes.div_ceil(4096)
            + self.bounce_ns(ctx, r, Dir::Read)
            + ctx.end_cost(r)
    }

    /// The bounce-buffer copy of request `r` if the host has a bounce buffer and `r` moves
    /// data in direction `dir` (writes are copied in before the transfer, reads out after).
    pub(crate) fn bounce_ns(&self, ctx: &mut impl DriverCtx, r: ReqId, dir: Dir) -> u64 {
        let q = ctx.block().req(r);
        match (&self.host.mmc.bounce_bytes, &self.host.memory) {
            (Some(_), Some(mem)) if q.dir() == dir => {
                crate::engine::transfer_ns(q.bytes(), mem.copy_bytes_per_s)
            }
            _ => 0,
        }
    }

    /// A flush request that the legacy or hsq MMC driver runs synchronously: REQ_OP_FLUSH
    /// is MMC_ISSUE_SYNC (mmc_issue_type), so queue_rq waits for the host to be idle and
    /// runs mmc_blk_issue_flush inline (driver/mmc/erase.rs `sync_issue`): CMD6 FLUSH_CACHE
    /// if the card's cache is on, nothing if it is off (`DeviceConfig::cache_on`;
    /// the queue sends flushes regardless, `buffered::queue_cache`). Linux 3.19's mmcqd
    /// does the same (mmc_blk_issue_rq: finish the ongoing transfer, then the flush).
    /// mmc-cqe sends its flush as a DCMD instead (mmc_blk_cqe_issue_flush).
    pub(crate) fn mmc_flush_is_sync(&self, ctx: &mut impl DriverCtx, r: ReqId) -> bool {
        ctx.block().req(r).flush
            && matches!(self.kind, DriverKind::MmcLegacy | DriverKind::MmcHsq { .. })
    }

    /// The request goes on the bus: CMD23 + CMD18/CMD25 (or CMD17/CMD24), then data.
    pub(crate) fn bus_issue(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        if let DriverKind::SdRtsx { .. } = self.kind {
            return self.rtsx_issue(ctx, r);
        }
        debug_assert!(
            !ctx.block().req(r).flush,
            "MMC flushes are issued synchronously"
        );
        let now = self.now;
        let (dir, sector, sectors) = {
            let q = ctx.block().req(r);
            (q.dir(), q.sector, q.sectors)
        };
        let multi = sectors > 1;
        let cmd23 = self.host.mmc.cmd23;
        let opcode = match (dir, multi) {
            (Dir::Read, false) => 17,
            (Dir::Read, true) => 18,
            (Dir::Write, false) => 24,
            (Dir::Write, true) => 25,
        };
        let cmd_end = if multi && cmd23 {
            self.bus_cmds(ctx, now, &[23, opcode], Some(r))
        } else {
            self.bus_cmds(ctx, now, &[opcode], Some(r))
        };
        let op = match dir {
            Dir::Read => DevOp::Read,
            Dir::Write => DevOp::Write,
        };
        let cmd = DevCommand {
            tag: r,
            op,
            lba: sector,
            sectors,
            // REQ_FUA: mmc_blk_rw_rq_prep's reliable write (CMD23 with bit 31).
            fua: ctx.fua(r),
            hpb: 0,
        };
        match dir {
            Dir::Read => {
                ctx.sys().device_host_read_bytes += sectors as u64 * 512;
                sched(ctx, cmd_end, MmcEv::Dev(device::Input::Command(cmd)));
            }
            Dir::Write => {
                ctx.sys().device_host_write_bytes += sectors as u64 * 512;
                let bytes = sectors as u64 * 512;
                let dur = self.bus_rate.ns(bytes);
                let mut data_end = self.bus_data(ctx, cmd_end, dur, Dir::Write, r);
                if multi && !cmd23 {
                    data_end = self.bus_cmds(ctx, data_end, &[12], Some(r));
                }
                sched(ctx, data_end, MmcEv::Dev(device::Input::Command(cmd)));
                if !self.host.mmc.busy_detect {
                    // Transfer-complete interrupt at the end of data; busy is polled.
                    let t = self.irq_run(ctx, data_end, self.host.costs.irq_ns, r);
                    sched(ctx, t, MmcEv::Irq(r));
                }
            }
        }
    }

    /// The device released busy after a write at `at`.
    pub(crate) fn irq_after_write(&mut self, ctx: &mut impl DriverCtx, r: ReqId, at: SimTime) {
        if let DriverKind::SdRtsx { .. } = self.kind {
            return self.rtsx_write_accepted(ctx, r, at);
        }
        ctx.trace(at, Some(r), TraceKind::DeviceDone);
        if let DriverKind::MmcCqe { .. } = self.kind {
            return sched(ctx, at, MmcEv::Cqe(cqe::CqeEv::BusyEnd(r)));
        }
        if self.host.mmc.busy_detect {
            let t = self.irq_run(ctx, at, self.host.costs.irq_ns, r);
            sched(ctx, t, MmcEv::Irq(r));
        }
    }

    /// Read data streams out of the device over the bus, then the interrupt.
    pub(crate) fn bus_read_data(
        &mut self,
        ctx: &mut impl DriverCtx,
        r: ReqId,
        last_ready: SimTime,
    ) {
        if let DriverKind::SdRtsx { .. } = self.kind {
            return self.rtsx_read_data(ctx, r, last_ready);
        }
        let now = self.now;
        ctx.trace(last_ready, Some(r), TraceKind::DeviceDone);
        let bytes = ctx.block().req(r).bytes();
        let (_, mut end) = self.bus_read_stream(ctx, now, bytes, last_ready, r);
        if ctx.block().req(r).sectors > 1 && !self.host.mmc.cmd23 {
            end = self.bus_cmds(ctx, end, &[12], Some(r));
        }
        let t = self.irq_run(ctx, end, self.host.costs.irq_ns, r);
        sched(ctx, t, MmcEv::Irq(r));
    }

    /// hsq: `mmc_hsq_request` puts the prepared request in a slot and pumps: if the
    /// hardware is idle the request starts from the dispatcher's context. queue_rq
    /// returns at once and the dispatcher goes on.
    pub(crate) fn hsq_queued(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        let core = self.disp_core();
        self.hsq.queue.push_back(r);
        let (queued, in_flight) = (self.hsq.queue.len() as u32, self.hsq.in_flight);
        ctx.trace(now, Some(r), TraceKind::DriverQueued { queued, in_flight });
        let mut t = now;
        if self.hsq.hw.is_none() {
            t = self.hsq_start(ctx, core, now, false);
        }
        self.disp_next(ctx, t);
    }

    /// How many requests queue_rq lets into the driver now.
    pub(crate) fn hsq_limit(&self) -> u32 {
        let DriverKind::MmcHsq {
            depth,
            max_in_flight,
            burst_in_flight,
        } = self.kind
        else {
            unreachable!("hsq limit asked of another driver");
        };
        let limit = if self.hsq.burst {
            burst_in_flight
        } else {
            max_in_flight
        };
        limit.min(depth)
    }

    /// Starts the next queued request on the hardware from `core` at `at`.
    pub(crate) fn hsq_start(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        in_irq: bool,
    ) -> SimTime {
        if let DriverKind::MmcHsq {
            burst_in_flight: 1..,
            ..
        } = self.kind
        {
            // mmc_hsq_modify_threshold: the slots from the head while they hold 4 KiB
            // writes; two or more raise the depth (slots taken in dispatch order here).
            let four_k_writes = self
                .hsq
                .queue
                .iter()
                .take_while(|&&r| {
                    let q = ctx.block().req(r);
                    q.dir() == Dir::Write && q.bytes() == 4096
                })
                .count();
            self.hsq.burst = four_k_writes >= 2;
        }
        let next = self.hsq.queue.pop_front().expect("a queued request");
        let cost = self.host.mmc.start_ns;
        let t = if in_irq {
            ctx.cpu().run_irq_l(core, at, cost, "hsq start")
        } else {
            ctx.cpu().run_kernel(core, at, cost, "hsq start")
        };
        self.hsq.hw = Some(next);
        self.mmc.active = Some(next);
        let in_ctx = if in_irq { Ctx::Irq } else { Ctx::Task };
        ctx.trace(t, Some(next), TraceKind::Started { core, ctx: in_ctx });
        sched(ctx, t, MmcEv::BusIssue(next));
        t
    }

    /// hsq completion (`mmc_hsq_finalize_request`), from the interrupt (or the IRQ thread
    /// with always_defer_done): the block completion is raised — it runs here if the
    /// request was submitted on this CPU, else on its CPU after an IPI — then the next
    /// request is started from the same context: no context switch, no CMD13.
    pub(crate) fn hsq_irq(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        let h = &self.host;
        let irq_core = h.irq_core;
        let mut t = now;
        if h.mmc.always_defer_done {
            t = ctx.wake(irq_core, t);
        }
        self.hsq.hw = None;
        self.mmc.active = None;
        let in_irq = !self.host.mmc.always_defer_done;
        let (done, after) = self.complete_on_submitter(ctx, r, t, in_irq);
        sched(ctx, done, MmcEv::HsqDone(r));
        t = after;
        if !self.hsq.queue.is_empty() {
            self.hsq_start(ctx, irq_core, t, in_irq);
        } else {
            // mmc_hsq_wait_for_idle: a discard waiting in queue_rq goes on.
            self.mmc_sync_host_idle(ctx, t);
        }
    }

    /// `blk_mq_complete_request` from the completion context on the IRQ core at `at`
    /// (interrupt context if `in_irq`, else a task there): the block completion (DMA
    /// unmap, request end) runs in that context if the request was submitted on that
    /// CPU, else on its submitting CPU after an IPI. Returns (completion end, when the
    /// IRQ-core context goes on).
    pub(crate) fn complete_on_submitter(
        &mut self,
        ctx: &mut impl DriverCtx,
        r: ReqId,
        at: SimTime,
        in_irq: bool,
    ) -> (SimTime, SimTime) {
        let irq_core = self.host.irq_core;
        let cost = self.mmc_post_ns(ctx, r);
        let req_cpu = ctx.block().req(r).cpu;
        if req_cpu == irq_core {
            let done = if in_irq {
                ctx.cpu().run_irq_l(irq_core, at, cost, "post+complete")
            } else {
                ctx.cpu().run_kernel(irq_core, at, cost, "post+complete")
            };
            (done, done)
        } else {
            (ctx.cpu().run_kernel(req_cpu, at, cost, "post+complete"), at)
        }
    }

    /// mmc_request_done → mmc_blk_mq_req_done: record the request to complete; wake the
    /// dispatcher if it waits, else queue the kworker.
    pub(crate) fn irq(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        if let DriverKind::MmcHsq { .. } = self.kind {
            return self.hsq_irq(ctx, r);
        }
        let now = self.now;
        debug_assert_eq!(self.mmc.active, Some(r));
        self.mmc.active = None;
        debug_assert!(self.mmc.complete_req.is_none());
        self.mmc.complete_req = Some(r);
        if self.mmc.prepared.is_some() {
            let core = self.disp_core();
            let t = ctx.wake(core, now);
            sched(ctx, t, MmcEv::DispWoken);
        } else if !self.mmc.worker_queued {
            self.mmc.worker_queued = true;
            let t = ctx.wake(self.host.irq_core, now);
            sched(ctx, t, MmcEv::WorkerRun);
        }
    }

    /// The mmc_complete kworker: completes the request unless the dispatcher took it.
    pub(crate) fn worker_run(&mut self, ctx: &mut impl DriverCtx) {
        let now = self.now;
        self.mmc.worker_queued = false;
        let Some(p) = self.mmc.complete_req.take() else {
            return;
        };
        let core = self.host.irq_core;
        let mut t = now;
        if ctx.block().req(p).dir() == Dir::Write {
            t = self.poll_busy(ctx, core, t, p);
        }
        let cost = self.mmc_post_ns(ctx, p);
        t = ctx.cpu().run_kernel(core, t, cost, "post+complete");
        self.mmc.lock_free_at = t;
        sched(ctx, t, MmcEv::ReqEnd(p));
    }
}
