//! The MMC block driver's dispatch (drivers/mmc/core/block.c, queue.c): the legacy path
//! (one request on the bus, the next prepared meanwhile, CMD13 polling after a write,
//! the mmc_complete kworker) and the host software queue (mmc_hsq.c: slots, the next
//! request started from the completion interrupt, no CMD13), their bus commands on an
//! SDHCI-class host, the busy and read-data ends. The rtsx SD host (sim/rtsx.rs) and the
//! command queue engine (sim/cqe.rs) take over from here where they differ. Units: ns.

use super::*;

/// The legacy MMC driver's state (one request on the bus, one prepared).
#[derive(Default)]
pub(super) struct MmcLegacy {
    /// The core of the kblockd worker running the dispatch loop, if any.
    pub(super) dispatcher: Option<u32>,
    /// Prepared request waiting in mmc_blk_rw_wait.
    pub(super) prepared: Option<ReqId>,
    /// Request on the bus or in the device.
    pub(super) active: Option<ReqId>,
    /// Finished on the hardware, waiting for CMD13 polling and post_req (mq->complete_req).
    pub(super) complete_req: Option<ReqId>,
    /// The kworker holds complete_lock until then.
    pub(super) lock_free_at: SimTime,
    pub(super) worker_queued: bool,
}

/// The host software queue's state (mmc_hsq.c).
#[derive(Default)]
pub(super) struct MmcHsq {
    /// Requests in slots, not yet started, in dispatch order.
    pub(super) queue: std::collections::VecDeque<ReqId>,
    /// The request on the hardware (`hsq->mrq`).
    pub(super) hw: Option<ReqId>,
    /// Requests dispatched to the driver and not yet completed (`mq->in_flight`).
    pub(super) in_flight: u32,
    /// The dynamic variant's raised limit is in force (set at each pump).
    pub(super) burst: bool,
}

impl Sim {
    /// blk_mq_run_hw_queue(async): if nobody is dispatching, a kblockd worker wakes on
    /// `core` and becomes the dispatcher.
    pub(super) fn kick(&mut self, core: u32) {
        if self.driver.is_some() {
            return self.driver_input(driver::Input::Kick { core });
        }
        if self.mmc.dispatcher.is_some() || !self.block.has_queued() {
            return;
        }
        // An hsq past its in-flight limit is run all the same, as blk_mq_run_hw_queue
        // runs any queue with requests pending: the worker takes one request, queue_rq
        // refuses it and it waits on the dispatch list (`disp_next`).
        if self.cqe.full() {
            return; // every task slot is taken; a completion reruns the queue
        }
        self.mmc.dispatcher = Some(core);
        let t = self.wake(core, self.now);
        self.q.push(t, Ev::DispStart);
    }

    pub(super) fn disp_core(&self) -> u32 {
        self.mmc.dispatcher.expect("dispatcher exists")
    }

    /// The dispatch loop takes the next request and prepares it, or ends.
    pub(super) fn disp_next(&mut self, at: SimTime) {
        debug_assert!(self.mmc.prepared.is_none());
        let Some(core) = self.mmc.dispatcher else {
            return;
        };
        if self.cqe.full() {
            // MMC_CQE_QUEUE_FULL: BLK_STS_RESOURCE until a task completes.
            self.mmc.dispatcher = None;
            return;
        }
        match self.block.dispatch(at) {
            Some(r) => {
                let sync = self.block.req(r).discard || self.mmc_flush_is_sync(r);
                if let DriverKind::MmcHsq { .. } = self.cfg.driver {
                    if !sync && self.hsq.in_flight >= self.hsq_limit() {
                        // mmc_mq_queue_rq answers BLK_STS_RESOURCE past the in-flight
                        // limit (counted per issue type: reads and writes only): the
                        // request goes back on the dispatch list and the loop ends; a
                        // completion reruns the queue (blk_mq_dispatch_rq_list).
                        self.block.requeue(r);
                        if self.trace.is_some() {
                            self.blk_rq(at, r, BlkAction::Requeue, core);
                        }
                        self.mmc.dispatcher = None;
                        return;
                    }
                }
                if self.trace.is_some() {
                    self.blk_rq(at, r, BlkAction::Issue, core);
                }
                if sync {
                    // MMC_ISSUE_SYNC: no prep or DMA map; sim/discard.rs.
                    return self.mmc_sync_dispatch(core, at, r);
                }
                let cost = self.mmc_prep_ns(r);
                let end = self.cpu.run_kernel(core, at, cost, "prep+dma map");
                match self.cfg.driver {
                    DriverKind::MmcLegacy | DriverKind::SdRtsx { .. } => {
                        self.q.push(end, Ev::DispPrepared(r))
                    }
                    DriverKind::MmcHsq { .. } => {
                        // Counted in flight from queue_rq on.
                        self.hsq.in_flight += 1;
                        self.q.push(end, Ev::HsqQueued(r));
                    }
                    DriverKind::Ufs | DriverKind::UfsHpb { .. } => {
                        unreachable!("the ufs driver has its own dispatch")
                    }
                    DriverKind::MmcCqe { .. } => self.cqe_issue(core, end, r),
                }
            }
            None => {
                // Nothing left: the worker goes back to sleep.
                self.mmc.dispatcher = None;
            }
        }
    }

    /// mmc_blk_rw_wait: wait while another request is on the hardware.
    pub(super) fn disp_prepared(&mut self, r: ReqId) {
        let now = self.now;
        if self.mmc.active.is_some() {
            self.mmc.prepared = Some(r);
        } else {
            self.disp_proceed(now, r);
        }
    }

    /// CMD13 polling after a write until the card is out of busy, from `core`, starting
    /// at `at`; returns when the polling context continues.
    pub(super) fn poll_busy(&mut self, core: u32, at: SimTime, prev: ReqId) -> SimTime {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_cmd13(core, at, prev);
        }
        let ready = self.dev_ready_at.get(prev as usize).copied().unwrap_or(0);
        let mut t = at;
        let mut backoff_us = 32u64;
        loop {
            // A synchronous CMD13: issue, wait for the command-complete interrupt, wake up.
            t = self
                .cpu
                .run_kernel(core, t, self.cfg.host.mmc.cmd13_ns, "cmd13");
            t = self.bus_cmds(t, &[13], Some(prev));
            self.sys.cmd13 += 1;
            let answered_busy = t < ready;
            t = self.irq_run(t, self.cfg.host.costs.irq_ns, prev);
            t = self.wake(core, t);
            if !answered_busy {
                return t;
            }
            if self.cfg.host.mmc.cmd13_mode == Cmd13Mode::Backoff {
                // mmc_poll_for_busy's usleep_range(d, 2d) arms an hrtimer whose soft
                // expiry is d and hard expiry 2d (hrtimer_set_expires_range_ns); the
                // clock event is programmed for the hard expiry, so on a core with no
                // earlier timer (the polling thread sleeps, NO_HZ idle) it fires at 2d.
                t += 2 * backoff_us * 1000;
                t = self.wake(core, t);
                backoff_us = (backoff_us * 2).min(32_768);
            }
        }
    }

    /// The previous request is off the hardware: complete it (CMD13 for writes), start
    /// `r`, then post-process the previous one.
    pub(super) fn disp_proceed(&mut self, at: SimTime, r: ReqId) {
        if self.block.req(r).discard || self.mmc_flush_is_sync(r) {
            return self.mmc_sync_legacy_idle(at, r);
        }
        let core = self.disp_core();
        // complete_lock: if the kworker is completing the previous request, wait for it.
        let mut t = if self.mmc.lock_free_at > at {
            self.wake(core, self.mmc.lock_free_at)
        } else {
            at
        };
        let prev = self.mmc.complete_req.take();
        if let Some(p) = prev {
            if self.block.req(p).dir() == Dir::Write {
                t = self.poll_busy(core, t, p);
            }
        }
        t = self
            .cpu
            .run_kernel(core, t, self.cfg.host.mmc.start_ns, "mmc start");
        self.mmc.active = Some(r);
        self.tr(
            t,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        self.q.push(t, Ev::BusIssue(r));
        if let Some(p) = prev {
            let cost = self.mmc_post_ns(p);
            t = self.cpu.run_kernel(core, t, cost, "post+complete");
        }
        self.q.push(t, Ev::DispPosted(prev));
    }

    /// Request prep (mmc_blk_rw_rq_prep, with a write's bounce copy) and DMA map.
    pub(super) fn mmc_prep_ns(&self, r: ReqId) -> u64 {
        let m = &self.cfg.host.mmc;
        let bytes = self.block.req(r).bytes();
        m.prep_ns + m.prep_per_4k_ns * bytes.div_ceil(4096) + self.bounce_ns(r, Dir::Write)
    }

    /// Post-processing (DMA unmap, a read's bounce copy) and ending the block request.
    pub(super) fn mmc_post_ns(&self, r: ReqId) -> u64 {
        let m = &self.cfg.host.mmc;
        let bytes = self.block.req(r).bytes();
        m.post_ns
            + m.post_per_4k_ns * bytes.div_ceil(4096)
            + self.bounce_ns(r, Dir::Read)
            + self.end_cost(r)
    }

    /// The bounce-buffer copy of request `r` if the host has a bounce buffer and `r` moves
    /// data in direction `dir` (writes are copied in before the transfer, reads out after).
    pub(super) fn bounce_ns(&self, r: ReqId, dir: Dir) -> u64 {
        let q = self.block.req(r);
        match (&self.cfg.host.mmc.bounce_bytes, &self.cfg.host.memory) {
            (Some(_), Some(mem)) if q.dir() == dir => {
                crate::engine::transfer_ns(q.bytes(), mem.copy_bytes_per_s)
            }
            _ => 0,
        }
    }

    /// A flush request that the legacy or hsq MMC driver runs synchronously: REQ_OP_FLUSH
    /// is MMC_ISSUE_SYNC (mmc_issue_type), so queue_rq waits for the host to be idle and
    /// runs mmc_blk_issue_flush inline (sim/discard.rs `sync_issue`): CMD6 FLUSH_CACHE
    /// if the card's cache is on, nothing if it is off (`buffered::device_cache_on`;
    /// the queue sends flushes regardless, `buffered::queue_cache`). Linux 3.19's mmcqd
    /// does the same (mmc_blk_issue_rq: finish the ongoing transfer, then the flush).
    /// mmc-cqe sends its flush as a DCMD instead (mmc_blk_cqe_issue_flush).
    pub(super) fn mmc_flush_is_sync(&self, r: ReqId) -> bool {
        self.block.req(r).flush
            && matches!(
                self.cfg.driver,
                DriverKind::MmcLegacy | DriverKind::MmcHsq { .. }
            )
    }

    /// The request is a FUA write: it carries the journal's commit block on a queue with
    /// native FUA (sim/journal.rs). A REQ_FUA bio does not merge in the kernel
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

    /// The request goes on the bus: CMD23 + CMD18/CMD25 (or CMD17/CMD24), then data.
    pub(super) fn bus_issue(&mut self, r: ReqId) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_issue(r);
        }
        debug_assert!(
            !self.block.req(r).flush,
            "MMC flushes are issued synchronously"
        );
        let now = self.now;
        let (dir, sector, sectors) = {
            let q = self.block.req(r);
            (q.dir(), q.sector, q.sectors)
        };
        let multi = sectors > 1;
        let cmd23 = self.cfg.host.mmc.cmd23;
        let opcode = match (dir, multi) {
            (Dir::Read, false) => 17,
            (Dir::Read, true) => 18,
            (Dir::Write, false) => 24,
            (Dir::Write, true) => 25,
        };
        let cmd_end = if multi && cmd23 {
            self.bus_cmds(now, &[23, opcode], Some(r))
        } else {
            self.bus_cmds(now, &[opcode], Some(r))
        };
        let h = &self.cfg.host;
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
            fua: self.req_fua(r),
            hpb: 0,
        };
        match dir {
            Dir::Read => {
                self.sys.device_host_read_bytes += sectors as u64 * 512;
                self.q.push(cmd_end, Ev::Dev(device::Input::Command(cmd)));
            }
            Dir::Write => {
                self.sys.device_host_write_bytes += sectors as u64 * 512;
                let bytes = sectors as u64 * 512;
                let dur = h.bus.data_ns(bytes);
                let mut data_end = self.bus_data(cmd_end, dur, Dir::Write, r);
                if multi && !cmd23 {
                    data_end = self.bus_cmds(data_end, &[12], Some(r));
                }
                self.q.push(data_end, Ev::Dev(device::Input::Command(cmd)));
                if !self.cfg.host.mmc.busy_detect {
                    // Transfer-complete interrupt at the end of data; busy is polled.
                    let t = self.irq_run(data_end, self.cfg.host.costs.irq_ns, r);
                    self.q.push(t, Ev::Irq(r));
                }
            }
        }
    }

    /// The device released busy after a write at `at`.
    pub(super) fn irq_after_write(&mut self, r: ReqId, at: SimTime) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_write_accepted(r, at);
        }
        self.tr(at, Some(r), TraceKind::DeviceDone);
        if let DriverKind::MmcCqe { .. } = self.cfg.driver {
            return self.q.push(at, Ev::Cqe(cqe::CqeEv::BusyEnd(r)));
        }
        if self.cfg.host.mmc.busy_detect {
            let t = self.irq_run(at, self.cfg.host.costs.irq_ns, r);
            self.q.push(t, Ev::Irq(r));
        }
    }

    /// Read data streams out of the device over the bus, then the interrupt.
    pub(super) fn bus_read_data(&mut self, r: ReqId, last_ready: SimTime) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_read_data(r, last_ready);
        }
        let now = self.now;
        self.tr(last_ready, Some(r), TraceKind::DeviceDone);
        let bytes = self.block.req(r).bytes();
        let (_, mut end) = self.bus_read_stream(now, bytes, last_ready, r);
        if self.block.req(r).sectors > 1 && !self.cfg.host.mmc.cmd23 {
            end = self.bus_cmds(end, &[12], Some(r));
        }
        let t = self.irq_run(end, self.cfg.host.costs.irq_ns, r);
        self.q.push(t, Ev::Irq(r));
    }

    /// hsq: `mmc_hsq_request` puts the prepared request in a slot and pumps: if the
    /// hardware is idle the request starts from the dispatcher's context. queue_rq
    /// returns at once and the dispatcher goes on.
    pub(super) fn hsq_queued(&mut self, r: ReqId) {
        let now = self.now;
        let core = self.disp_core();
        self.hsq.queue.push_back(r);
        let (queued, in_flight) = (self.hsq.queue.len() as u32, self.hsq.in_flight);
        self.tr(now, Some(r), TraceKind::DriverQueued { queued, in_flight });
        let mut t = now;
        if self.hsq.hw.is_none() {
            t = self.hsq_start(core, now, false);
        }
        self.disp_next(t);
    }

    /// How many requests queue_rq lets into the driver now.
    pub(super) fn hsq_limit(&self) -> u32 {
        let DriverKind::MmcHsq {
            depth,
            max_in_flight,
            burst_in_flight,
        } = self.cfg.driver
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
    pub(super) fn hsq_start(&mut self, core: u32, at: SimTime, in_irq: bool) -> SimTime {
        if let DriverKind::MmcHsq {
            burst_in_flight: 1..,
            ..
        } = self.cfg.driver
        {
            // mmc_hsq_modify_threshold: the slots from the head while they hold 4 KiB
            // writes; two or more raise the depth (slots taken in dispatch order here).
            let four_k_writes = self
                .hsq
                .queue
                .iter()
                .take_while(|&&r| {
                    let q = self.block.req(r);
                    q.dir() == Dir::Write && q.bytes() == 4096
                })
                .count();
            self.hsq.burst = four_k_writes >= 2;
        }
        let next = self.hsq.queue.pop_front().expect("a queued request");
        let cost = self.cfg.host.mmc.start_ns;
        let t = if in_irq {
            self.cpu.run_irq_l(core, at, cost, "hsq start")
        } else {
            self.cpu.run_kernel(core, at, cost, "hsq start")
        };
        self.hsq.hw = Some(next);
        self.mmc.active = Some(next);
        let ctx = if in_irq { Ctx::Irq } else { Ctx::Task };
        self.tr(t, Some(next), TraceKind::Started { core, ctx });
        self.q.push(t, Ev::BusIssue(next));
        t
    }

    /// hsq completion (`mmc_hsq_finalize_request`), from the interrupt (or the IRQ thread
    /// with always_defer_done): the block completion is raised — it runs here if the
    /// request was submitted on this CPU, else on its CPU after an IPI — then the next
    /// request is started from the same context: no context switch, no CMD13.
    pub(super) fn hsq_irq(&mut self, r: ReqId) {
        let now = self.now;
        let h = &self.cfg.host;
        let irq_core = h.irq_core;
        let mut t = now;
        if h.mmc.always_defer_done {
            t = self.wake(irq_core, t);
        }
        self.hsq.hw = None;
        self.mmc.active = None;
        let in_irq = !self.cfg.host.mmc.always_defer_done;
        let (done, after) = self.complete_on_submitter(r, t, in_irq);
        self.q.push(done, Ev::HsqDone(r));
        t = after;
        if !self.hsq.queue.is_empty() {
            self.hsq_start(irq_core, t, in_irq);
        } else {
            // mmc_hsq_wait_for_idle: a discard waiting in queue_rq goes on.
            self.mmc_sync_host_idle(t);
        }
    }

    /// `blk_mq_complete_request` from the completion context on the IRQ core at `at`
    /// (interrupt context if `in_irq`, else a task there): the block completion (DMA
    /// unmap, request end) runs in that context if the request was submitted on that
    /// CPU, else on its submitting CPU after an IPI. Returns (completion end, when the
    /// IRQ-core context goes on).
    pub(super) fn complete_on_submitter(
        &mut self,
        r: ReqId,
        at: SimTime,
        in_irq: bool,
    ) -> (SimTime, SimTime) {
        let irq_core = self.cfg.host.irq_core;
        let cost = self.mmc_post_ns(r);
        let req_cpu = self.block.req(r).cpu;
        if req_cpu == irq_core {
            let done = if in_irq {
                self.cpu.run_irq_l(irq_core, at, cost, "post+complete")
            } else {
                self.cpu.run_kernel(irq_core, at, cost, "post+complete")
            };
            (done, done)
        } else {
            (self.cpu.run_kernel(req_cpu, at, cost, "post+complete"), at)
        }
    }

    /// mmc_request_done → mmc_blk_mq_req_done: record the request to complete; wake the
    /// dispatcher if it waits, else queue the kworker.
    pub(super) fn irq(&mut self, r: ReqId) {
        if let DriverKind::MmcHsq { .. } = self.cfg.driver {
            return self.hsq_irq(r);
        }
        let now = self.now;
        debug_assert_eq!(self.mmc.active, Some(r));
        self.mmc.active = None;
        debug_assert!(self.mmc.complete_req.is_none());
        self.mmc.complete_req = Some(r);
        if self.mmc.prepared.is_some() {
            let core = self.disp_core();
            let t = self.wake(core, now);
            self.q.push(t, Ev::DispWoken);
        } else if !self.mmc.worker_queued {
            self.mmc.worker_queued = true;
            let t = self.wake(self.cfg.host.irq_core, now);
            self.q.push(t, Ev::WorkerRun);
        }
    }

    /// The mmc_complete kworker: completes the request unless the dispatcher took it.
    pub(super) fn worker_run(&mut self) {
        let now = self.now;
        self.mmc.worker_queued = false;
        let Some(p) = self.mmc.complete_req.take() else {
            return;
        };
        let core = self.cfg.host.irq_core;
        let mut t = now;
        if self.block.req(p).dir() == Dir::Write {
            t = self.poll_busy(core, t, p);
        }
        let cost = self.mmc_post_ns(p);
        t = self.cpu.run_kernel(core, t, cost, "post+complete");
        self.mmc.lock_free_at = t;
        self.q.push(t, Ev::ReqEnd(p));
    }
}
