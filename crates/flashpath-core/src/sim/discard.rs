//! Discard requests (fio trims: ioctl(BLKDISCARD) → blkdev_issue_discard) in the MMC
//! drivers: legacy, hsq and cqe (docs/kernel-behaviour.md §1, §3; linux drivers/mmc/core/
//! block.c mmc_blk_issue_discard_rq, core.c mmc_erase / mmc_do_erase, queue.c
//! mmc_issue_type). UFS sends a discard as SCSI UNMAP through a transfer request slot
//! like any command (`sim/ufs.rs`); SD cards (sd-rtsx) are refused before a run.
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

use super::{Ev, Sim};
use crate::device::config::Interface;
use crate::device::{self, DevCommand, DevOp};
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::host::discard_limits::{self as lim, MmcDiscardLimits};
use crate::host::DriverKind;
use crate::trace::{Ctx, TraceKind};
use crate::workload::{Dir, Submission, Trim};

#[derive(Clone, Copy, Debug)]
pub(super) enum DiscardEv {
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

#[derive(Default)]
pub(super) struct DiscardState {
    /// A discard waiting in queue_rq for the host to be idle (hsq, cqe), with the
    /// dispatcher's core.
    waiting: Option<(ReqId, u32)>,
    active: Option<Active>,
    /// mmc-cqe: the engine is halted (cqhci_off ran; no cqhci_request since).
    cqe_halted: bool,
    /// The queue's discard_granularity, sectors (0: none).
    granularity: u32,
    /// The MMC core's discard limits (eMMC devices whose preset gives `[ext_csd]`).
    mmc: Option<MmcDiscardLimits>,
}

impl DiscardState {
    /// Whether request `r` is the discard whose erase sequence runs, or the flush whose
    /// CMD6 runs (the command's busy is the device's `Done` for it).
    #[inline]
    pub(super) fn busy_cmd_of(&self, r: ReqId) -> bool {
        self.active.is_some_and(|a| a.req == r)
    }

    /// blk_bio_discard_split: the next discard request's length (sectors) of the
    /// `remaining` sectors at `sector`, under `max` sectors.
    pub(super) fn split(&self, sector: u64, remaining: u64, max: u64) -> u64 {
        lim::discard_split(sector, remaining, max as u32, self.granularity)
    }

    /// The discard requests a trim of `len` bytes at `offset` becomes.
    pub(super) fn pieces(&self, offset: u64, len: u64, max_bytes: u64) -> u32 {
        lim::discard_pieces(
            offset / 512,
            len / 512,
            (max_bytes / 512) as u32,
            self.granularity,
        )
    }
}

/// The queue's discard limits for the run's device and host: (max_discard_sectors,
/// discard_granularity, the MMC core's limits), or why they cannot be computed.
fn limits(cfg: &super::SimConfig) -> Result<(u32, u32, Option<MmcDiscardLimits>), String> {
    let dev = &cfg.device;
    match dev.interface {
        Interface::Emmc => {
            let Some(card) = &dev.ext_csd else {
                return Err(format!(
                    "device '{}' has no [ext_csd] section (erase group, TRIM_MULT...): the MMC core derives max_discard_sectors from it",
                    dev.name
                ));
            };
            let m = &cfg.host.mmc;
            let (Some(busy), Some(need_r1b)) = (m.max_busy_timeout_ms, m.need_rsp_busy) else {
                return Err(format!(
                    "host '{}' lacks mmc.max_busy_timeout or mmc.need_rsp_busy: mmc_calc_max_discard and mmc_do_erase need them",
                    cfg.host.name
                ));
            };
            let l = lim::mmc_discard_limits(card, dev.capacity_bytes, busy, need_r1b);
            Ok((l.max_discard, l.granularity, Some(l)))
        }
        Interface::Ufs => match &dev.block_limits {
            Some(b) => Ok((
                lim::ufs_max_discard_sectors(b.max_unmap_lba_count),
                lim::UFS_LOGICAL_BLOCK_SECTORS,
                None,
            )),
            None => Err(format!(
                "device '{}' has no [block_limits] section (MAXIMUM UNMAP LBA COUNT): sd_config_discard takes max_discard_sectors from it",
                dev.name
            )),
        },
        // SD erase (CMD32/33/38) is not modelled: trims on SD are refused.
        Interface::Sd => Ok((0, 0, None)),
    }
}

/// `Sim::new`: the queue's discard limits (none when the presets lack them: then the
/// run has no trims, `check` saw to it).
pub(super) fn setup(sim: &mut Sim) {
    if let Ok((max, granularity, mmc)) = limits(&sim.cfg) {
        sim.block.set_max_discard_sectors(max);
        sim.disc.granularity = granularity;
        sim.disc.mmc = mmc;
    }
}

/// What `Sim::new` refuses about trims.
pub(super) fn check(cfg: &super::SimConfig) -> Result<(), String> {
    // A replay's trims (sim/replay.rs) are synchronous whatever the engine.
    let replay_trims = |j: &crate::workload::JobConfig| j.replay.as_ref().is_some_and(|r| r.trims);
    for j in cfg
        .jobs
        .iter()
        .filter(|j| j.trim != Trim::None || replay_trims(j))
        // A trim of a regular file fails in its ioctl (sim/errors.rs): no discard.
        .filter(|j| j.trim_errno.is_none())
    {
        if let DriverKind::SdRtsx { .. } = cfg.driver {
            return Err(format!(
                "job '{}': trims on an SD card (driver '{}': SD erase CMD32/CMD33/CMD38) are not modelled",
                j.name,
                cfg.driver.name()
            ));
        }
        let (max, _, _) = limits(cfg).map_err(|e| format!("job '{}': {e}", j.name))?;
        if max == 0 {
            return Err(format!(
                "job '{}': the device takes no discards (max_discard_sectors 0)",
                j.name
            ));
        }
        if let DriverKind::MmcCqe { .. } = cfg.driver {
            if cfg.host.cqe.as_ref().and_then(|c| c.halt_ns).is_none() {
                return Err(format!(
                    "job '{}': host '{}' has no cqe.halt (cqhci_off before the erase sequence)",
                    j.name, cfg.host.name
                ));
            }
        }
        if !j.direct {
            return Err(format!(
                "job '{}': trims with direct=0 (BLKDISCARD beside the page cache) are not modelled; use direct=1",
                j.name
            ));
        }
        if !matches!(j.submission, Submission::Sync) && j.replay.is_none() {
            return Err(format!(
                "job '{}': trims are synchronous (BLKDISCARD); give the job a synchronous submission",
                j.name
            ));
        }
    }
    Ok(())
}

impl Sim {
    pub(super) fn discard_handle(&mut self, e: DiscardEv) {
        let now = self.now;
        match e {
            DiscardEv::BusyCmdResponse(r) => {
                let a = self.discard_active(r);
                if self.cfg.host.mmc.busy_detect && a.r1b {
                    return; // the busy-end interrupt follows (BusyIrq)
                }
                let core = a.core;
                // Command-complete interrupt at the R1 response; then CMD13 polling until
                // the card leaves the programming state (mmc_poll_for_busy).
                let mut t = self.irq_run(now, self.cfg.host.costs.irq_ns, r);
                t = self.wake(core, t);
                t = self.poll_busy(core, t, r);
                self.discard_erase_done(t, r);
            }
            DiscardEv::BusyIrq(r) => {
                let core = self.discard_active(r).core;
                let t = self.wake(core, now);
                self.discard_erase_done(t, r);
            }
        }
    }

    fn discard_active(&self, r: ReqId) -> Active {
        let a = self.disc.active.expect("a discard is being issued");
        assert_eq!(a.req, r, "one discard at a time");
        a
    }

    /// The dispatcher on `core` took discard `r` (or a flush the card's cache makes a
    /// no-op, `Sim::mmc_flush_is_noop`) at `at` (queue_rq, MMC_ISSUE_SYNC):
    /// mmc_blk_wait_for_idle, then the erase sequence (or the flush's inline end).
    pub(super) fn mmc_sync_dispatch(&mut self, core: u32, at: SimTime, r: ReqId) {
        match self.cfg.driver {
            // mmc_blk_rw_wait(mq, NULL) sleeps like a prepared request: it goes on in
            // `mmc_sync_legacy_idle` once the request on the bus has finished.
            DriverKind::MmcLegacy => self.q.push(at, Ev::DispPrepared(r)),
            DriverKind::MmcHsq { .. } | DriverKind::MmcCqe { .. } => {
                self.disc.waiting = Some((r, core));
                self.mmc_sync_host_idle(at);
            }
            DriverKind::Ufs | DriverKind::UfsHpb { .. } | DriverKind::SdRtsx { .. } => {
                unreachable!("discards on this driver do not take the MMC path")
            }
        }
    }

    /// Hook of the hsq and cqe completion paths: if the host has nothing in flight, a
    /// discard (or no-op flush) waiting for idle goes on from `at`.
    pub(super) fn mmc_sync_host_idle(&mut self, at: SimTime) {
        let Some((r, core)) = self.disc.waiting else {
            return;
        };
        let idle = match self.cfg.driver {
            DriverKind::MmcHsq { .. } => self.hsq.hw.is_none() && self.hsq.queue.is_empty(),
            DriverKind::MmcCqe { .. } => self.cqe_idle(),
            _ => true,
        };
        if !idle {
            return;
        }
        self.disc.waiting = None;
        // The dispatcher slept in wait_event unless the host was idle when it came.
        let mut t = if at > self.block.req(r).dispatched_at {
            self.wake(core, at)
        } else {
            at
        };
        if let DriverKind::MmcCqe { .. } = self.cfg.driver {
            // __mmc_start_request of CMD35: cqhci_off writes CQHCI_HALT and polls for
            // the halt (immediate with no task in flight): `cqe.halt`.
            let halt = self.cfg.host.cqe.as_ref().and_then(|c| c.halt_ns);
            let halt = halt.expect("cqe.halt (checked before the run)");
            t = self.cpu.run_kernel(core, t, halt, "cqhci off");
            self.disc.cqe_halted = true;
            self.tr(t, Some(r), TraceKind::CqeHalted);
        }
        self.sync_issue(core, t, r);
    }

    /// Hook of cqhci_request: the first request after a halt clears it.
    pub(super) fn discard_cqe_resume(&mut self, at: SimTime, r: ReqId) {
        if self.disc.cqe_halted {
            self.disc.cqe_halted = false;
            self.tr(at, Some(r), TraceKind::CqeResumed);
        }
    }

    /// Legacy: the previous request is off the bus (mmc_blk_rw_wait): complete it as
    /// mmc_blk_mq_complete_prev_req does (CMD13 after a write, post_req, end), then
    /// the erase sequence (or the no-op flush's end).
    pub(super) fn mmc_sync_legacy_idle(&mut self, at: SimTime, r: ReqId) {
        let core = self.disp_core();
        let mut t = if self.mmc.lock_free_at > at {
            self.wake(core, self.mmc.lock_free_at)
        } else {
            at
        };
        if let Some(p) = self.mmc.complete_req.take() {
            if self.block.req(p).dir() == Dir::Write {
                t = self.poll_busy(core, t, p);
            }
            let cost = self.mmc_post_ns(p);
            t = self.cpu.run_kernel(core, t, cost, "post+complete");
            self.q.push(t, Ev::ReqEnd(p));
        }
        self.sync_issue(core, t, r);
    }

    /// The MMC_ISSUE_SYNC request `r` starts in the dispatcher on `core` at `at`.
    fn sync_issue(&mut self, core: u32, at: SimTime, r: ReqId) {
        self.tr(
            at,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        if !self.block.req(r).flush {
            self.discard_erase(core, at, r)
        } else if crate::sim::buffered::device_cache_on(&self.cfg) {
            self.mmc_flush_cmd6(core, at, r)
        } else {
            self.mmc_flush_noop(core, at, r)
        }
    }

    /// mmc_blk_issue_flush on a card whose cache is on: mmc_flush_cache → mmc_switch
    /// (EXT_CSD FLUSH_CACHE = 1), a synchronous CMD6 with an R1b response: DAT0 busy
    /// until the device has programmed its cache. Busy-detecting hosts take the busy-end
    /// interrupt, others poll CMD13 (Linux 3.19's __mmc_switch loop); then __mmc_switch
    /// checks the switch status with one more CMD13 (send_status) where the busy was
    /// detected, and the request ends inline.
    fn mmc_flush_cmd6(&mut self, core: u32, at: SimTime, r: ReqId) {
        self.disc.active = Some(Active {
            req: r,
            core,
            from: 0,
            end: 0,
            to: 0,
            r1b: true,
        });
        self.busy_cmd(core, at, 6, DevCommand::flush(r));
    }

    /// mmc_blk_issue_flush on a card whose cache is off: mmc_flush_cache sends nothing
    /// (it issues CMD6 FLUSH_CACHE only while EXT_CSD CACHE_CTRL is on), and the request
    /// ends inline (blk_mq_end_request) before queue_rq returns. No bus command, no
    /// interrupt.
    fn mmc_flush_noop(&mut self, core: u32, at: SimTime, r: ReqId) {
        let cost = self.end_cost(r);
        let t = self.cpu.run_kernel(core, at, cost, "flush end");
        self.q.push(t, Ev::DispPosted(Some(r)));
    }

    /// mmc_blk_issue_discard_rq → mmc_erase on `core` from `at`.
    fn discard_erase(&mut self, core: u32, at: SimTime, r: ReqId) {
        let (from, end) = {
            let q = self.block.req(r);
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
        self.discard_do_erase(at);
    }

    /// mmc_do_erase of the active range piece: CMD35, CMD36 (synchronous commands),
    /// CMD38 (R1b: busy until the device has unmapped the range).
    fn discard_do_erase(&mut self, at: SimTime) {
        let a = self.disc.active.expect("a discard is being issued");
        let r = a.req;
        let mut t = self.discard_sync_cmd(a.core, at, 35, r);
        t = self.discard_sync_cmd(a.core, t, 36, r);
        let cmd = DevCommand {
            tag: r,
            op: DevOp::Discard,
            lba: a.from,
            sectors: (a.to - a.from) as u32,
            fua: false,
            hpb: 0,
        };
        self.busy_cmd(a.core, t, 38, cmd);
    }

    /// A command with a busy response (CMD38 ERASE, CMD6 SWITCH) from the dispatcher on
    /// `core` at `at`: issued (costed as a CMD13's), on the CMD line, then the device
    /// runs `cmd` (DAT0 busy until its `Done`) and the response comes in.
    fn busy_cmd(&mut self, core: u32, at: SimTime, opcode: u8, cmd: DevCommand) {
        let r = cmd.tag;
        let t = self
            .cpu
            .run_kernel(core, at, self.cfg.host.mmc.cmd13_ns, "mmc busy cmd");
        let end = self.bus_cmds(t, &[opcode], Some(r));
        // The device first (its Done is known at once), then the response.
        self.q.push(end, Ev::Dev(device::Input::Command(cmd)));
        self.q.push(end, Ev::Discard(DiscardEv::BusyCmdResponse(r)));
    }

    /// A synchronous command from the dispatcher (mmc_wait_for_cmd): issue (costed as a
    /// CMD13's), command and response, the command-complete interrupt, the wake-up.
    /// Intermediate interrupts do not end the request's hardware span.
    fn discard_sync_cmd(&mut self, core: u32, at: SimTime, opcode: u8, r: ReqId) -> SimTime {
        let h = &self.cfg.host;
        let (issue, irq, irq_core) = (h.mmc.cmd13_ns, h.costs.irq_ns, h.irq_core);
        let mut t = self.cpu.run_kernel(core, at, issue, "mmc cmd");
        t = self.bus_cmds(t, &[opcode], Some(r));
        t = self.cpu.run_irq_l(irq_core, t, irq, "irq handler");
        self.wake(core, t)
    }

    /// Routed device output: the device finished unmapping (DAT0 busy released) at `at`.
    pub(super) fn discard_busy_end(&mut self, r: ReqId, at: SimTime) {
        let i = r as usize;
        if self.dev_ready_at.len() <= i {
            self.dev_ready_at.resize(i + 1, 0);
        }
        self.dev_ready_at[i] = at;
        self.tr(at, Some(r), TraceKind::DeviceDone);
        if self.cfg.host.mmc.busy_detect && self.discard_active(r).r1b {
            let t = self.irq_run(at, self.cfg.host.costs.irq_ns, r);
            self.q.push(t, Ev::Discard(DiscardEv::BusyIrq(r)));
        }
    }

    /// One mmc_do_erase (or the flush's CMD6) finished at `at` (the dispatcher runs): the
    /// next piece, or the request ends inline and queue_rq returns.
    fn discard_erase_done(&mut self, at: SimTime, r: ReqId) {
        let mut a = self.discard_active(r);
        if self.block.req(r).flush {
            self.disc.active = None;
            let mut t = at;
            if self.cfg.host.mmc.busy_detect {
                // __mmc_switch's send_status: CMD13 for SWITCH_ERROR.
                t = self.discard_sync_cmd(a.core, t, 13, r);
                self.sys.cmd13 += 1;
            }
            let cost = self.end_cost(r);
            let t = self.cpu.run_kernel(a.core, t, cost, "flush end");
            self.q.push(t, Ev::DispPosted(Some(r)));
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
            return self.discard_do_erase(at);
        }
        self.disc.active = None;
        let cost = self.end_cost(r);
        let t = self.cpu.run_kernel(a.core, at, cost, "discard end");
        self.q.push(t, Ev::DispPosted(Some(r)));
    }
}
