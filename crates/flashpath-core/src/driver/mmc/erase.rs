//! Discard requests (fio trims: ioctl(BLKDISCARD) → blkdev_issue_discard) in the MMC
//! drivers: legacy, hsq and cqe (docs/kernel-behaviour.md §1, §3; linux drivers/mmc/core/
//! block.c mmc_blk_issue_discard_rq, core.c mmc_erase / mmc_do_erase, queue.c
//! mmc_issue_type). UFS sends a discard as SCSI UNMAP through a transfer request slot
//! like any command (`driver/ufs/mod.rs`); SD cards (sd-rtsx) are refused before a run.
//!
//! ```text
//!  kblockd: queue_rq ── MMC_ISSUE_SYNC ── mmc_blk_wait_for_idle ─┐
//!     legacy: mmc_blk_rw_wait(NULL): the request on the bus ends (CMD13, post, end)
//!     hsq:    mmc_hsq_wait_for_idle: the software queue drains
//!     cqe:    cqhci_wait_for_idle: every task completes; then cqhci_off (CQHCI_HALT,
//!             poll CQHCI_CTL: the host preset's `cqe.halt`)
//!                                                                 ▼
//!  mmc_erase → mmc_do_erase, each a synchronous command from the dispatcher
//!  (issue, response, interrupt, wake-up):
//!     CMD35 ERASE_GROUP_START (from) ─ CMD36 ERASE_GROUP_END (to) ─ CMD38 ERASE (arg)
//!     CMD38 has an R1b response: DAT0 busy while the device unmaps (its `Done`);
//!     busy-detecting hosts take the busy-end interrupt, others poll CMD13 (as a write);
//!     R1 (timeout above max_busy_timeout, see below): CMD13 polling on every host
//!  blk_mq_end_request inline; queue_rq returns; the dispatcher goes on
//!  cqe: the next cqhci_request clears the halt (the queue resumes)
//! ```
//!
//! The CMD38 argument is DISCARD (0x3) on the modelled eMMC 4.5+ parts (mmc_can_discard:
//! EXT_CSD feature support), TRIM (0x1) before. No other command or data uses the bus
//! while the sequence runs: the dispatcher is inside queue_rq and the host is idle.
//!
//! max_discard_sectors and discard_granularity come from the device's registers and
//! the host's busy timeout as the kernel computes them (`host/discard_limits.rs`: MMC
//! mmc_queue_setup_discard → mmc_calc_max_discard; UFS sd_config_discard from the Block
//! Limits VPD page). A discard longer than max_discard_sectors is split where
//! blk_bio_discard_split splits it (granularity-aligned). mmc_erase issues one
//! mmc_do_erase per request, two when the card can fit only one erase group in the
//! host's busy timeout (card->eg_boundary) and the range crosses a group boundary.
//! CMD38 is R1b unless its erase timeout (TRIM_MULT × 300 ms per group touched)
//! exceeds the host's max_busy_timeout on a host without MMC_CAP_NEED_RSP_BUSY: then R1,
//! and the core polls for the end of busy (CMD13, as on hosts without busy detection)
//! even where the host could detect busy itself.
//!
//! Flush requests (REQ_OP_FLUSH) on mmc-legacy and mmc-hsq take the same MMC_ISSUE_SYNC
//! path: after the wait for idle, mmc_blk_issue_flush → mmc_flush_cache sends CMD6
//! SWITCH (FLUSH_CACHE) with an R1b response if the card's cache is on — DAT0 busy
//! while the device programs its cache, the busy-end interrupt (or CMD13 polling), then
//! __mmc_switch's CMD13 for the switch status — and nothing if it is off; the request
//! ends inline.
//!
//! Leaves out: secure discard / secure trim, REQ_OP_WRITE_ZEROES, the INAND CMD38 quirk,
//! the erase-group alignment of MMC_ERASE_ARG (never chosen for eMMC 4.5+).
//! Units: ns, 512-byte sectors.

use super::{sched, Mmc, MmcEv};
use crate::device::config::Interface;
use crate::device::DeviceConfig;
use crate::device::{self, DevCommand, DevOp};
use crate::driver::DriverCtx;
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::host::discard_limits::{self as lim, MmcDiscardLimits};
use crate::host::{DriverKind, HostConfig};
use crate::trace::{Ctx, TraceKind};
use crate::workload::Dir;

#[derive(Clone, Copy, Debug)]
pub enum DiscardEv {
    /// The response of CMD38 (its R1b busy is the device's erase time) or of a flush's
    /// CMD6 (busy while the device programs its cache) is in.
    BusyCmdResponse(ReqId),
    /// The busy-end interrupt of that command has run (busy-detecting hosts).
    BusyIrq(ReqId),
}

/// A discard being issued (one mmc_do_erase at a time), or a flush's CMD6 (from = to =
/// end = 0, R1b).
#[derive(Clone, Copy, Debug)]
struct Active {
    req: ReqId,
    core: u32,
    /// First sector of the mmc_do_erase in progress, and the end of the request.
    from: u64,
    end: u64,
    /// End of the mmc_do_erase in progress (exclusive).
    to: u64,
    /// CMD38 of the mmc_do_erase in progress has an R1b response (else R1).
    r1b: bool,
}

/// Trims on an SD card are refused (SD erase is not modelled).
pub(crate) fn refuse_trims(kind: DriverKind) -> Result<(), String> {
    if let DriverKind::SdRtsx { .. } = kind {
        return Err(format!(
            "trims on an SD card (driver '{}': SD erase CMD32/CMD33/CMD38) are not modelled",
            kind.name()
        ));
    }
    Ok(())
}

/// mmc-cqe halts the engine before the erase sequence: the host preset's `cqe.halt`.
pub(crate) fn check_trims(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    if let DriverKind::MmcCqe { .. } = kind {
        if host.cqe.as_ref().and_then(|c| c.halt_ns).is_none() {
            return Err(format!(
                "host '{}' has no cqe.halt (cqhci_off before the erase sequence)",
                host.name
            ));
        }
    }
    Ok(())
}

/// The MMC_ISSUE_SYNC path's state.
#[derive(Default)]
pub(crate) struct Erase {
    /// A discard waiting in queue_rq for the host to be idle (hsq, cqe), with the
    /// dispatcher's core.
    waiting: Option<(ReqId, u32)>,
    active: Option<Active>,
    /// mmc-cqe: the engine is halted (cqhci_off ran; no cqhci_request since).
    cqe_halted: bool,
    /// The MMC core's discard limits (eMMC devices whose preset gives `[ext_csd]`, on a
    /// host with the busy-timeout fields; without them the run has no trims).
    mmc: Option<MmcDiscardLimits>,
}

impl Erase {
    pub(crate) fn new(device: &DeviceConfig, host: &HostConfig) -> Erase {
        let mmc = match device.interface {
            Interface::Emmc => lim::mmc_limits(device, host).ok(),
            Interface::Ufs | Interface::Sd => None,
        };
        Erase {
            mmc,
            ..Erase::default()
        }
    }

    /// Whether request `r` is the discard whose erase sequence runs, or the flush whose
    /// CMD6 runs (the command's busy is the device's `Done` for it).
    #[inline]
    pub(crate) fn busy_cmd_of(&self, r: ReqId) -> bool {
        self.active.is_some_and(|a| a.req == r)
    }
}

impl Mmc {
    pub(crate) fn discard_handle(&mut self, ctx: &mut impl DriverCtx, e: DiscardEv) {
        let now = self.now;
        match e {
            DiscardEv::BusyCmdResponse(r) => {
                let a = self.discard_active(r);
                if self.host.mmc.busy_detect && a.r1b {
                    return; // the busy-end interrupt follows (BusyIrq)
                }
                let core = a.core;
                // Command-complete interrupt at the R1 response; then CMD13 polling until
                // the card leaves the programming state (mmc_poll_for_busy).
                let mut t = self.irq_run(ctx, now, self.host.costs.irq_ns, r);
                t = ctx.wake(core, t);
                t = self.poll_busy(ctx, core, t, r);
                self.discard_erase_done(ctx, t, r);
            }
            DiscardEv::BusyIrq(r) => {
                let core = self.discard_active(r).core;
                let t = ctx.wake(core, now);
                self.discard_erase_done(ctx, t, r);
            }
        }
    }

    fn discard_active(&self, r: ReqId) -> Active {
        let a = self.disc.active.expect("a discard is being issued");
        assert_eq!(a.req, r, "one discard at a time");
        a
    }

    /// The dispatcher on `core` took discard `r` (or a flush the card's cache makes a
    /// no-op, `mmc_flush_noop`) at `at` (queue_rq, MMC_ISSUE_SYNC):
    /// mmc_blk_wait_for_idle, then the erase sequence (or the flush's inline end).
    pub(crate) fn mmc_sync_dispatch(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        r: ReqId,
    ) {
        match self.kind {
            // mmc_blk_rw_wait(mq, NULL) sleeps like a prepared request: it goes on in
            // `mmc_sync_legacy_idle` once the request on the bus has finished.
            DriverKind::MmcLegacy => sched(ctx, at, MmcEv::DispPrepared(r)),
            DriverKind::MmcHsq { .. } | DriverKind::MmcCqe { .. } => {
                self.disc.waiting = Some((r, core));
                self.mmc_sync_host_idle(ctx, at);
            }
            DriverKind::Ufs
            | DriverKind::UfsHpb { .. }
            | DriverKind::UfsMcq
            | DriverKind::SdRtsx { .. } => {
                unreachable!("discards on this driver do not take the MMC path")
            }
        }
    }

    /// Hook of the hsq and cqe completion paths: if the host has nothing in flight, a
    /// discard (or no-op flush) waiting for idle goes on from `at`.
    pub(crate) fn mmc_sync_host_idle(&mut self, ctx: &mut impl DriverCtx, at: SimTime) {
        let Some((r, core)) = self.disc.waiting else {
            return;
        };
        let idle = match self.kind {
            DriverKind::MmcHsq { .. } => self.hsq.hw.is_none() && self.hsq.queue.is_empty(),
            DriverKind::MmcCqe { .. } => self.cqe_idle(),
            _ => true,
        };
        if !idle {
            return;
        }
        self.disc.waiting = None;
        // The dispatcher slept in wait_event unless the host was idle when it came.
        let mut t = if at > ctx.block().req(r).dispatched_at {
            ctx.wake(core, at)
        } else {
            at
        };
        if let DriverKind::MmcCqe { .. } = self.kind {
            // __mmc_start_request of CMD35: cqhci_off writes CQHCI_HALT and polls for
            // the halt (immediate with no task in flight): `cqe.halt`.
            let halt = self.host.cqe.as_ref().and_then(|c| c.halt_ns);
            let halt = halt.expect("cqe.halt (checked before the run)");
            t = ctx.cpu().run_kernel(core, t, halt, "cqhci off");
            self.disc.cqe_halted = true;
            ctx.trace(t, Some(r), TraceKind::CqeHalted);
        }
        self.sync_issue(ctx, core, t, r);
    }

    /// Hook of cqhci_request: the first request after a halt clears it.
    pub(crate) fn discard_cqe_resume(&mut self, ctx: &mut impl DriverCtx, at: SimTime, r: ReqId) {
        if self.disc.cqe_halted {
            self.disc.cqe_halted = false;
            ctx.trace(at, Some(r), TraceKind::CqeResumed);
        }
    }

    /// Legacy: the previous request is off the bus (mmc_blk_rw_wait): complete it as
    /// mmc_blk_mq_complete_prev_req does (CMD13 after a write, post_req, end), then
    /// the erase sequence (or the no-op flush's end).
    pub(crate) fn mmc_sync_legacy_idle(&mut self, ctx: &mut impl DriverCtx, at: SimTime, r: ReqId) {
        let core = self.disp_core();
        let mut t = if self.mmc.lock_free_at > at {
            ctx.wake(core, self.mmc.lock_free_at)
        } else {
            at
        };
        if let Some(p) = self.mmc.complete_req.take() {
            if ctx.block().req(p).dir() == Dir::Write {
                t = self.poll_busy(ctx, core, t, p);
            }
            let cost = self.mmc_post_ns(ctx, p);
            t = ctx.cpu().run_kernel(core, t, cost, "post+complete");
            sched(ctx, t, MmcEv::ReqEnd(p));
        }
        self.sync_issue(ctx, core, t, r);
    }

    /// The MMC_ISSUE_SYNC request `r` starts in the dispatcher on `core` at `at`.
    fn sync_issue(&mut self, ctx: &mut impl DriverCtx, core: u32, at: SimTime, r: ReqId) {
        ctx.trace(
            at,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        if !ctx.block().req(r).flush {
            self.discard_erase(ctx, core, at, r)
        } else if self.cache_on {
            self.mmc_flush_cmd6(ctx, core, at, r)
        } else {
            self.mmc_flush_noop(ctx, core, at, r)
        }
    }

    /// mmc_blk_issue_flush on a card whose cache is on: mmc_flush_cache → mmc_switch
    /// (EXT_CSD FLUSH_CACHE = 1), a synchronous CMD6 with an R1b response: DAT0 busy
    /// until the device has programmed its cache. Busy-detecting hosts take the busy-end
    /// interrupt, others poll CMD13 (Linux 3.19's __mmc_switch loop); then __mmc_switch
    /// checks the switch status with one more CMD13 (send_status) where the busy was
    /// detected, and the request ends inline.
    fn mmc_flush_cmd6(&mut self, ctx: &mut impl DriverCtx, core: u32, at: SimTime, r: ReqId) {
        self.disc.active = Some(Active {
            req: r,
            core,
            from: 0,
            end: 0,
            to: 0,
            r1b: true,
        });
        self.busy_cmd(ctx, core, at, 6, DevCommand::flush(r));
    }

    /// mmc_blk_issue_flush on a card whose cache is off: mmc_flush_cache sends nothing
    /// (it issues CMD6 FLUSH_CACHE only while EXT_CSD CACHE_CTRL is on), and the request
    /// ends inline (blk_mq_end_request) before queue_rq returns. No bus command, no
    /// interrupt.
    fn mmc_flush_noop(&mut self, ctx: &mut impl DriverCtx, core: u32, at: SimTime, r: ReqId) {
        let cost = ctx.end_cost(r);
        let t = ctx.cpu().run_kernel(core, at, cost, "flush end");
        sched(ctx, t, MmcEv::DispPosted(Some(r)));
    }

    /// mmc_blk_issue_discard_rq → mmc_erase on `core` from `at`.
    fn discard_erase(&mut self, ctx: &mut impl DriverCtx, core: u32, at: SimTime, r: ReqId) {
        let (from, end) = {
            let q = ctx.block().req(r);
            (q.sector, q.end())
        };
        let l = self
            .disc
            .mmc
            .expect("MMC discard limits (checked before the run)");
        let to = l.first_erase_end(from, end);
        self.disc.active = Some(Active {
            req: r,
            core,
            from,
            end,
            to,
            r1b: l.discard_uses_r1b(from, to),
        });
        self.discard_do_erase(ctx, at);
    }

    /// mmc_do_erase of the active range piece: CMD35, CMD36 (synchronous commands),
    /// CMD38 (R1b: busy until the device has unmapped the range).
    fn discard_do_erase(&mut self, ctx: &mut impl DriverCtx, at: SimTime) {
        let a = self.disc.active.expect("a discard is being issued");
        let r = a.req;
        let mut t = self.discard_sync_cmd(ctx, a.core, at, 35, r);
        t = self.discard_sync_cmd(ctx, a.core, t, 36, r);
        let cmd = DevCommand {
            tag: r,
            op: DevOp::Discard,
            lba: a.from,
            sectors: (a.to - a.from) as u32,
            fua: false,
            hpb: 0,
        };
        self.busy_cmd(ctx, a.core, t, 38, cmd);
    }

    /// A command with a busy response (CMD38 ERASE, CMD6 SWITCH) from the dispatcher on
    /// `core` at `at`: issued (costed as a CMD13's), on the CMD line, then the device
    /// runs `cmd` (DAT0 busy until its `Done`) and the response comes in.
    fn busy_cmd(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        opcode: u8,
        cmd: DevCommand,
    ) {
        let r = cmd.tag;
        let t = ctx
            .cpu()
            .run_kernel(core, at, self.host.mmc.cmd13_ns, "mmc busy cmd");
        let end = self.bus_cmds(ctx, t, &[opcode], Some(r));
        // The device first (its Done is known at once), then the response.
        sched(ctx, end, MmcEv::Dev(device::Input::Command(cmd)));
        sched(ctx, end, MmcEv::Discard(DiscardEv::BusyCmdResponse(r)));
    }

    /// A synchronous command from the dispatcher (mmc_wait_for_cmd): issue (costed as a
    /// CMD13's), command and response, the command-complete interrupt, the wake-up.
    /// Intermediate interrupts do not end the request's hardware span.
    fn discard_sync_cmd(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        opcode: u8,
        r: ReqId,
    ) -> SimTime {
        let h = &self.host;
        let (issue, irq, irq_core) = (h.mmc.cmd13_ns, h.costs.irq_ns, h.irq_core);
        let mut t = ctx.cpu().run_kernel(core, at, issue, "mmc cmd");
        t = self.bus_cmds(ctx, t, &[opcode], Some(r));
        t = ctx.cpu().run_irq_l(irq_core, t, irq, "irq handler");
        ctx.wake(core, t)
    }

    /// The device's output: the device finished unmapping (DAT0 busy released) at `at`.
    pub(crate) fn discard_busy_end(&mut self, ctx: &mut impl DriverCtx, r: ReqId, at: SimTime) {
        let i = r as usize;
        if self.dev_ready_at.len() <= i {
            self.dev_ready_at.resize(i + 1, 0);
        }
        self.dev_ready_at[i] = at;
        ctx.trace(at, Some(r), TraceKind::DeviceDone);
        if self.host.mmc.busy_detect && self.discard_active(r).r1b {
            let t = self.irq_run(ctx, at, self.host.costs.irq_ns, r);
            sched(ctx, t, MmcEv::Discard(DiscardEv::BusyIrq(r)));
        }
    }

    /// One mmc_do_erase (or the flush's CMD6) finished at `at` (the dispatcher runs): the
    /// next piece, or the request ends inline and queue_rq returns.
    fn discard_erase_done(&mut self, ctx: &mut impl DriverCtx, at: SimTime, r: ReqId) {
        let mut a = self.discard_active(r);
        if ctx.block().req(r).flush {
            self.disc.active = None;
            let mut t = at;
            if self.host.mmc.busy_detect {
                // __mmc_switch's send_status: CMD13 for SWITCH_ERROR.
                t = self.discard_sync_cmd(ctx, a.core, t, 13, r);
                ctx.sys().cmd13 += 1;
            }
            let cost = ctx.end_cost(r);
            let t = ctx.cpu().run_kernel(a.core, t, cost, "flush end");
            sched(ctx, t, MmcEv::DispPosted(Some(r)));
            return;
        }
        if a.to < a.end {
            // mmc_erase's second mmc_do_erase: the rest of the range.
            a.from = a.to;
            a.to = a.end;
            a.r1b = self
                .disc
                .mmc
                .is_some_and(|l| l.discard_uses_r1b(a.from, a.to));
            self.disc.active = Some(a);
            return self.discard_do_erase(ctx, at);
        }
        self.disc.active = None;
        let cost = ctx.end_cost(r);
        let t = ctx.cpu().run_kernel(a.core, at, cost, "discard end");
        sched(ctx, t, MmcEv::DispPosted(Some(r)));
    }
}
