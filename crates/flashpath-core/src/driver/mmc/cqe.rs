//! The eMMC 5.1 command queue engine driver (`mmc-cqe`): linux drivers/mmc/host/
//! cqhci-core.c with the CQE paths of drivers/mmc/core/block.c and queue.c
//! (docs/kernel-behaviour.md §3).
//!
//! ```text
//!  kblockd: queue_rq ─ prep + DMA map + cqhci_request (descriptors, doorbell) ─▶ returns
//!     │ doorbell bit (one per task ID = blk-mq tag; tags = min(card 32, host 31|32))
//!     ▼                                          CQE hardware, CMD line
//!  CMD44 + CMD45 ─▶ device task table (device::cq) ─ read: NAND fetch starts at once
//!  CMD13 SQS (idle: every SSC1.CIT; busy: at block BLOCK_CNT−CBC of each transfer)
//!     │ QSR = the task the device runs next (its policy)           DAT lines
//!     ▼
//!  CMD46 + read data ──────────────────────────┐ one transfer at a time; a write
//!  CMD47 + write data, DAT0 busy until `Done` ─┤ holds DAT0 until the device took it
//!                                              ▼
//!  TCN interrupt (IRQ core): cqhci_irq ─▶ mmc_cqe_request_done ─▶ blk_mq_complete_request
//!     (on the submitting CPU: inline or after an IPI) ─▶ DMA unmap, request end
//! ```
//!
//! The CPU does not wait for the previous request (no `mmc_blk_rw_wait`), polls no
//! CMD13 (the CQE handles queue status and busy), and has no pre_req overlap of its
//! own: prep and DMA map run in queue_rq right before the doorbell. The CQE hardware
//! picks the next task from the QSR as soon as the bus is free, without the CPU.
//!
//! Choices and what is left out:
//! - The CMD line is a resource of its own: CMD44/45/13 go out while data is on the
//!   DAT lines (eMMC 5.1 allows queue management commands during a transfer; SSC1.CBC
//!   relies on it). CMD46/47 precede their data. `SystemStats::bus_busy_ns` counts the
//!   DAT lines only (and no write busy), `SystemStats::cmd13` only software CMD13s.
//! - After an answer with no ready task the next CMD13 waits the idle timer (SSC1.CIT),
//!   also when a new task was queued meanwhile.
//! - Flush: with MMC_CAP2_CQE_DCMD (`cqe.dcmd`) a flush is a direct command in slot 31
//!   (mmc_cqe_issue_type → MMC_ISSUE_DCMD; cqhci_prep_dcmd_desc sets QBAR, the queue
//!   barrier): the CQE sends no task queued after it (their CMD44/45 wait) and sends
//!   the DCMD — CMD6 FLUSH_CACHE, R1b — once every earlier task has completed; DAT0 is
//!   busy until the device has flushed; then its completion interrupt, and the waiting
//!   tasks are queued. Without DCMD the flush would halt the queue (not modelled: an
//!   error before the run). Discard/trim: queue_rq waits until no task is in flight
//!   (cqhci_wait_for_idle), cqhci_off halts the engine, the legacy CMD35/36/38 run, and
//!   the next cqhci_request resumes the queue (driver/mmc/erase.rs). Not modelled:
//!   task error recovery (halt, CMD48, requeue) and interrupt coalescing.
//!
//! Units: ns.

use super::{sched, AfterEnd, Mmc, MmcEv};
use crate::device::cq::{TaskQueue, CMDQ_DEPTH};
use crate::device::{self, DevCommand, DevOp};
use crate::driver::DriverCtx;
use crate::engine::{FifoResource, SimTime};
use crate::host::block::ReqId;
use crate::host::{DriverKind, HostConfig};
use crate::trace::{Ctx, TraceKind};
use crate::workload::Dir;

#[derive(Clone, Copy, Debug)]
pub enum CqeEv {
    /// cqhci_request has rung the doorbell for the task (its CPU work is done).
    Doorbell(ReqId),
    /// CMD45's response is in: the device holds the task.
    Queued(ReqId),
    /// Send CMD13 (SQS): the idle timer expired, or the transfer reached block
    /// BLOCK_CNT − CBC.
    Poll,
    /// A CMD13 (SQS) response is in: the device's Queue Status Register.
    Status,
    /// A read's data transfer has ended.
    ReadEnd(ReqId),
    /// A write's DAT0 busy was released (the device's `Done`).
    BusyEnd(ReqId),
    /// The block completion of the task has run.
    Done(ReqId),
}

/// The CQE's (and its driver's) state.
pub(crate) struct MmcCqe {
    on: bool,
    /// Queue depth: min(card CMDQ_DEPTH, host slots).
    depth: u32,
    request_ns: u64,
    sqs_idle_ns: u64,
    sqs_block_counter: u64,
    /// Tasks handed to the CQE (doorbell) and not completed (`mq->in_flight`).
    in_flight: u32,
    /// Tasks with their doorbell rung and not yet executed (CMD46/47).
    pending: u32,
    /// The CMD line.
    cmd: FifoResource,
    /// The device's task table.
    dev: TaskQueue,
    /// The task whose data is on the DAT lines, or whose write holds DAT0 busy.
    executing: Option<ReqId>,
    /// The task named by the last QSR answer, to execute when the bus is free.
    next: Option<ReqId>,
    /// A CMD13 (SQS) is timed or on the line.
    poll_pending: bool,
    /// When the last QSR answer named no task.
    last_empty: Option<SimTime>,
    /// When the last byte of each queued read is ready in the device (by request id).
    last_ready: Vec<SimTime>,
    /// A flush DCMD whose doorbell rang, not yet completed.
    dcmd: Option<ReqId>,
    /// Tasks queued before the DCMD that have not completed (its queue barrier).
    dcmd_before: u32,
    /// Tasks whose doorbell rang after the DCMD: their CMD44/45 wait for it.
    after_barrier: Vec<ReqId>,
}

/// mmc-cqe sends a cache flush as a DCMD: the host needs the DCMD slot.
pub(crate) fn check_flushes(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    if let DriverKind::MmcCqe { .. } = kind {
        if !host.cqe.as_ref().is_some_and(|c| c.dcmd) {
            return Err(format!(
                "fsync/fdatasync/end_fsync/sync need a cache flush, which driver '{}' sends as a DCMD: host '{}' has no DCMD slot (cqe.dcmd = false; the halted-queue flush is not modelled)",
                kind.name(),
                host.name
            ));
        }
    }
    Ok(())
}

impl MmcCqe {
    /// The engine for `driver` on `host`: inert unless the driver is mmc-cqe, which
    /// needs the host's `[cqe]` section.
    pub(crate) fn new(driver: DriverKind, host: &HostConfig) -> Result<MmcCqe, String> {
        let (on, policy) = match driver {
            DriverKind::MmcCqe { policy } => (true, policy),
            _ => (false, crate::device::cq::CqPolicy::OldestFirst),
        };
        let c = match (&host.cqe, on) {
            (Some(c), _) => Some(c.clone()),
            (None, true) => {
                return Err(format!(
                    "driver '{}' needs a [cqe] section in the host preset, which '{}' \
                     does not have (the shipped sprd-sc9863a-cqe has one)",
                    driver.name(),
                    host.name
                ))
            }
            (None, false) => None,
        };
        let (depth, request_ns, sqs_idle_ns, cbc) = match c {
            Some(c) => (
                CMDQ_DEPTH.min(c.slots()),
                c.request_ns,
                c.sqs_idle_ns,
                c.sqs_block_counter as u64,
            ),
            None => (CMDQ_DEPTH, 0, 1, 0),
        };
        Ok(MmcCqe {
            on,
            depth,
            request_ns,
            sqs_idle_ns,
            sqs_block_counter: cbc,
            in_flight: 0,
            pending: 0,
            cmd: FifoResource::new(),
            dev: TaskQueue::new(policy),
            executing: None,
            next: None,
            poll_pending: false,
            last_empty: None,
            last_ready: Vec::new(),
            dcmd: None,
            dcmd_before: 0,
            after_barrier: Vec::new(),
        })
    }

    /// blk-mq tags: the task IDs when the engine runs (mmc_init_queue), else `nr`.
    pub(crate) fn tags(&self, nr: u32) -> u32 {
        if self.on {
            nr.min(self.depth)
        } else {
            nr
        }
    }

    /// Every task slot is taken: queue_rq would answer BLK_STS_RESOURCE.
    pub(crate) fn full(&self) -> bool {
        self.on && self.in_flight >= self.depth
    }
}

impl Mmc {
    pub(crate) fn cqe_handle(&mut self, ctx: &mut impl DriverCtx, e: CqeEv) {
        let now = self.now;
        match e {
            CqeEv::Doorbell(r) if ctx.block().req(r).flush => {
                self.cqe.dcmd = Some(r);
                self.cqe.dcmd_before = self.cqe.in_flight;
                self.cqe_pump(ctx);
                self.disp_next(ctx, now);
            }
            CqeEv::Doorbell(r) if self.cqe.dcmd.is_some() => {
                // Behind the queue barrier.
                self.cqe.after_barrier.push(r);
                self.disp_next(ctx, now);
            }
            CqeEv::Doorbell(r) => {
                let end = self.cqe_cmds(ctx, now, &[44, 45], Some(r));
                sched(ctx, end, MmcEv::Cqe(CqeEv::Queued(r)));
                // queue_rq returned: the dispatcher takes the next request.
                self.disp_next(ctx, now);
            }
            CqeEv::Queued(r) => self.cqe_queued(ctx, r),
            CqeEv::Poll => {
                let end = self.cqe_cmds(ctx, now, &[13], None);
                sched(ctx, end, MmcEv::Cqe(CqeEv::Status));
            }
            CqeEv::Status => {
                self.cqe.poll_pending = false;
                debug_assert!(self.cqe.next.is_none());
                match self.cqe.dev.report() {
                    Some(t) => self.cqe.next = Some(t),
                    None => self.cqe.last_empty = Some(now),
                }
                self.cqe_pump(ctx);
            }
            CqeEv::ReadEnd(r) | CqeEv::BusyEnd(r) => {
                assert_eq!(self.cqe.executing, Some(r), "the bus was this task's");
                self.cqe.executing = None;
                self.cqe_complete(ctx, r);
                if self.cqe.dcmd == Some(r) {
                    // The barrier is lifted: the tasks behind it are queued.
                    self.cqe.dcmd = None;
                    for w in std::mem::take(&mut self.cqe.after_barrier) {
                        let end = self.cqe_cmds(ctx, now, &[44, 45], Some(w));
                        sched(ctx, end, MmcEv::Cqe(CqeEv::Queued(w)));
                    }
                }
                self.cqe_pump(ctx);
            }
            CqeEv::Done(r) if ctx.block().req(r).flush => {
                self.end_request(ctx, r, AfterEnd::SyncIdle);
            }
            CqeEv::Done(r) => {
                self.cqe.in_flight -= 1;
                if self.cqe.dcmd.is_some() {
                    self.cqe.dcmd_before -= 1;
                    self.cqe_pump(ctx);
                }
                // Then cqhci_wait_for_idle: a discard waiting in queue_rq goes on; and
                // mmc_cqe_request_done reruns the queue that was refused as full.
                self.end_request(ctx, r, AfterEnd::SyncIdleThenKick);
            }
        }
    }

    /// queue_rq (mmc_blk_cqe_issue_rw_rq) on the dispatcher's `core`: prep and DMA map
    /// ended at `at`; cqhci_request writes the descriptors and rings the doorbell.
    pub(crate) fn cqe_issue(&mut self, ctx: &mut impl DriverCtx, core: u32, at: SimTime, r: ReqId) {
        let t = ctx
            .cpu()
            .run_kernel(core, at, self.cqe.request_ns, "cqe request");
        self.discard_cqe_resume(ctx, t, r);
        if ctx.block().req(r).flush {
            // The DCMD slot (31) is not one of the task slots.
            ctx.trace(
                t,
                Some(r),
                TraceKind::Started {
                    core,
                    ctx: Ctx::Task,
                },
            );
            sched(ctx, t, MmcEv::Cqe(CqeEv::Doorbell(r)));
            return;
        }
        self.cqe.in_flight += 1;
        self.cqe.pending += 1;
        assert!(
            self.cqe.in_flight <= self.cqe.depth,
            "a task slot per request"
        );
        ctx.trace(
            t,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        let (queued, in_flight) = (self.cqe.pending, self.cqe.in_flight);
        ctx.trace(t, Some(r), TraceKind::DriverQueued { queued, in_flight });
        sched(ctx, t, MmcEv::Cqe(CqeEv::Doorbell(r)));
    }

    /// No task and no DCMD in flight (cqhci_is_idle).
    pub(crate) fn cqe_idle(&self) -> bool {
        self.cqe.in_flight == 0 && self.cqe.dcmd.is_none()
    }

    /// `n` commands on the CQE's own CMD line from `at`, traced; returns when the last
    /// response is in.
    fn cqe_cmds(
        &mut self,
        ctx: &mut impl DriverCtx,
        at: SimTime,
        opcodes: &[u8],
        req: Option<ReqId>,
    ) -> SimTime {
        let cmd_ns = self.cmd_ns;
        super::bus::commands(&mut self.cqe.cmd, ctx, cmd_ns, at, opcodes, req)
    }

    /// The device holds task `r`: a read starts fetching its data now.
    fn cqe_queued(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let (dir, lba, sectors) = {
            let q = ctx.block().req(r);
            (q.dir(), q.sector, q.sectors)
        };
        self.cqe.dev.queue(r, dir == Dir::Write);
        if dir == Dir::Read {
            ctx.sys().device_host_read_bytes += sectors as u64 * 512;
            self.device_now(
                ctx,
                device::Input::Command(DevCommand {
                    tag: r,
                    op: DevOp::Read,
                    lba,
                    sectors,
                    fua: false,
                    hpb: 0,
                }),
            );
        }
        self.cqe_pump(ctx);
    }

    /// The device has the first data of read `r` in its buffer (all of it by
    /// `last_ready`): the task is ready.
    pub(crate) fn cqe_read_ready(
        &mut self,
        ctx: &mut impl DriverCtx,
        r: ReqId,
        last_ready: SimTime,
    ) {
        ctx.trace(last_ready, Some(r), TraceKind::DeviceDone);
        let i = r as usize;
        if self.cqe.last_ready.len() <= i {
            self.cqe.last_ready.resize(i + 1, 0);
        }
        self.cqe.last_ready[i] = last_ready;
        self.cqe.dev.data_ready(r);
        self.cqe_pump(ctx);
    }

    /// The CQE's loop: with the DAT lines free, execute the task the device named, or
    /// ask the device (CMD13 SQS) once the idle timer allows.
    fn cqe_pump(&mut self, ctx: &mut impl DriverCtx) {
        let now = self.now;
        if self.cqe.executing.is_some() {
            return;
        }
        if let Some(d) = self.cqe.dcmd {
            if self.cqe.dcmd_before == 0 {
                return self.cqe_dcmd(ctx, d);
            }
        }
        if let Some(t) = self.cqe.next.take() {
            return self.cqe_execute(ctx, t);
        }
        if self.cqe.poll_pending || self.cqe.dev.is_empty() {
            return;
        }
        self.cqe.poll_pending = true;
        let at = match self.cqe.last_empty {
            Some(t) => now.max(t + self.cqe.sqs_idle_ns),
            None => now,
        };
        sched(ctx, at, MmcEv::Cqe(CqeEv::Poll));
    }

    /// CMD46/CMD47 for task `r`, then its data; a status poll at block BLOCK_CNT − CBC.
    fn cqe_execute(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        self.cqe.dev.execute(r);
        self.cqe.pending -= 1;
        self.cqe.executing = Some(r);
        let (dir, lba, sectors) = {
            let q = ctx.block().req(r);
            (q.dir(), q.sector, q.sectors)
        };
        let bytes = sectors as u64 * 512;
        let dur = self.bus_rate.ns(bytes);
        let start = match dir {
            Dir::Read => {
                let cmd_end = self.cqe_cmds(ctx, now, &[46], Some(r));
                let last_ready = self.cqe.last_ready[r as usize];
                let (start, end) = self.bus_read_stream(ctx, cmd_end, bytes, last_ready, r);
                sched(ctx, end, MmcEv::Cqe(CqeEv::ReadEnd(r)));
                start
            }
            Dir::Write => {
                let cmd_end = self.cqe_cmds(ctx, now, &[47], Some(r));
                let (start, end) = self.bus.book(cmd_end, dur);
                ctx.trace(
                    start,
                    Some(r),
                    TraceKind::Data {
                        dir: Dir::Write,
                        end,
                    },
                );
                ctx.sys().device_host_write_bytes += bytes;
                let cmd = DevCommand {
                    tag: r,
                    op: DevOp::Write,
                    lba,
                    sectors,
                    // REQ_FUA: the task descriptor's REL_WRITE (cqhci_prep_task_desc).
                    fua: ctx.fua(r),
                    hpb: 0,
                };
                // DAT0 stays busy until the device's Done (BusyEnd).
                sched(ctx, end, MmcEv::Dev(device::Input::Command(cmd)));
                start
            }
        };
        // SSC1.CBC: CMD13 during block BLOCK_CNT − CBC of this transfer.
        debug_assert!(!self.cqe.poll_pending);
        let before = (sectors as u64).saturating_sub(self.cqe.sqs_block_counter);
        let at = start + self.bus_rate.ns(before * 512);
        self.cqe.poll_pending = true;
        sched(ctx, at, MmcEv::Cqe(CqeEv::Poll));
    }

    /// The flush DCMD: CMD6 (FLUSH_CACHE) on the CMD line; DAT0 busy until the device has
    /// flushed (its `Done` comes back as `BusyEnd`).
    fn cqe_dcmd(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        self.cqe.executing = Some(r);
        let end = self.cqe_cmds(ctx, now, &[6], Some(r));
        let cmd = DevCommand::flush(r);
        sched(ctx, end, MmcEv::Dev(device::Input::Command(cmd)));
    }

    /// Task completion notification: cqhci_irq on the IRQ core, then the block
    /// completion on the submitting CPU.
    fn cqe_complete(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        let t = self.irq_run(ctx, now, self.host.costs.irq_ns, r);
        let (done, _) = self.complete_on_submitter(ctx, r, t, true);
        sched(ctx, done, MmcEv::Cqe(CqeEv::Done(r)));
    }
}
