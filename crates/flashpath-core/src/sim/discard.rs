//! Discard requests (fio trims: ioctl(BLKDISCARD) → blkdev_issue_discard) in the MMC
//! drivers: legacy, hsq and cqe (kernel-behaviour §1, §3; linux drivers/mmc/core/
//! block.c mmc_blk_issue_discard_rq, core.c mmc_erase / mmc_do_erase, queue.c
//! mmc_issue_type). UFS sends a discard as SCSI UNMAP through a transfer request slot
//! like any command (`sim/ufs.rs`); SD cards (sd-rtsx) are refused before a run.
//!
//! ```text
//!  kblockd: queue_rq ── MMC_ISSUE_SYNC ── mmc_blk_wait_for_idle ─┐
//!     legacy: mmc_blk_rw_wait(NULL): the request on the bus ends (CMD13, post, end)
//!     hsq:    mmc_hsq_wait_for_idle: the software queue drains
//!     cqe:    cqhci_wait_for_idle: every task completes; then cqhci_off (CQHCI_HALT)
//!                                                                 ▼
//!  mmc_erase → mmc_do_erase, each a synchronous command from the dispatcher
//!  (issue, response, interrupt, wake-up):
//!     CMD35 ERASE_GROUP_START (from) ─ CMD36 ERASE_GROUP_END (to) ─ CMD38 ERASE (arg)
//!     CMD38 has an R1b response: DAT0 busy while the device unmaps (its `Done`);
//!     busy-detecting hosts take the busy-end interrupt, others poll CMD13 (as a write)
//!  blk_mq_end_request inline; queue_rq returns; the dispatcher goes on
//!  cqe: the next cqhci_request clears the halt (the queue resumes)
//! ```
//!
//! The CMD38 argument is DISCARD (0x3) on the modelled eMMC 4.5+ parts (mmc_can_discard:
//! EXT_CSD feature support), TRIM (0x1) before. No other command or data uses the bus
//! while the sequence runs: the dispatcher is inside queue_rq and the host is idle.
//!
//! max_discard_sectors (mmc_queue_setup_discard → mmc_calc_max_discard): hosts with a
//! busy timeout (SDHCI's max_busy_timeout) fit one erase group's TRIM/DISCARD timeout
//! (300 ms × EXT_CSD TRIM_MULT per group) in the budget, so max_discard is one erase
//! group and mmc_erase splits a range crossing an erase-group boundary in two
//! mmc_do_erase sequences (`card->eg_boundary`). The erase group is 512 KiB here
//! (HC_ERASE_GRP_SIZE = 1, the common value of eMMC 5.1 parts: an estimate, the
//! presets do not name one). UFS (sd.c sd_config_discard, UNMAP): the device's Block
//! Limits VPD MAXIMUM UNMAP LBA COUNT, capped at SD_MAX_WS16_BLOCKS (0x7fffff blocks of
//! 4 KiB); taken as that cap (estimate).
//!
//! Leaves out: discard_granularity alignment of the bios (fio's trims are block-size
//! aligned), secure discard / secure trim, REQ_OP_WRITE_ZEROES, the INAND CMD38 quirk,
//! the erase-group alignment of MMC_ERASE_ARG (never chosen for eMMC 4.5+).
//! Units: ns, 512-byte sectors.

use super::{Ev, Sim};
use crate::device::{self, DevCommand, DevOp};
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::host::DriverKind;
use crate::trace::{Ctx, TraceKind};
use crate::workload::{Dir, Submission, Trim};

/// The eMMC erase group: 512 KiB (HC_ERASE_GRP_SIZE 1; estimate, see the module doc).
pub const MMC_ERASE_GROUP_SECTORS: u64 = 1024;
/// UFS: SD_MAX_WS16_BLOCKS (0x7fffff) logical blocks of 4 KiB, in 512-byte sectors.
pub const UFS_MAX_UNMAP_SECTORS: u64 = 0x7f_ffff * 8;

#[derive(Clone, Copy, Debug)]
pub(super) enum DiscardEv {
    /// CMD38's R1b response is in (its busy is the device's erase time).
    Cmd38Response(ReqId),
    /// The busy-end interrupt of CMD38 has run (busy-detecting hosts).
    BusyIrq(ReqId),
}

/// A discard being issued (one mmc_do_erase at a time).
#[derive(Clone, Copy, Debug)]
struct Active {
    req: ReqId,
    core: u32,
    /// First sector of the mmc_do_erase in progress, and the end of the request.
    from: u64,
    end: u64,
    /// End of the mmc_do_erase in progress (exclusive).
    to: u64,
}

#[derive(Default)]
pub(super) struct DiscardState {
    /// A discard waiting in queue_rq for the host to be idle (hsq, cqe), with the
    /// dispatcher's core.
    waiting: Option<(ReqId, u32)>,
    active: Option<Active>,
    /// mmc-cqe: the engine is halted (cqhci_off ran; no cqhci_request since).
    cqe_halted: bool,
}

/// The queue's max_discard_sectors for the run's driver and device.
pub(super) fn max_discard_sectors(cfg: &super::SimConfig) -> u32 {
    use crate::device::config::Interface;
    match cfg.device.interface {
        Interface::Emmc => MMC_ERASE_GROUP_SECTORS as u32,
        Interface::Ufs => UFS_MAX_UNMAP_SECTORS as u32,
        // SD erase (CMD32/33/38) is not modelled: trims on SD are refused.
        Interface::Sd => 0,
    }
}

/// What `Sim::new` refuses about trims.
pub(super) fn check(cfg: &super::SimConfig) -> Result<(), String> {
    for j in cfg.jobs.iter().filter(|j| j.trim != Trim::None) {
        if let DriverKind::SdRtsx { .. } = cfg.driver {
            return Err(format!(
                "job '{}': trims on an SD card (driver '{}': SD erase CMD32/CMD33/CMD38) are not modelled",
                j.name,
                cfg.driver.name()
            ));
        }
        if !j.direct {
            return Err(format!(
                "job '{}': trims with direct=0 (BLKDISCARD beside the page cache) are not modelled; use direct=1",
                j.name
            ));
        }
        if !matches!(j.submission, Submission::Sync) {
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
            DiscardEv::Cmd38Response(r) => {
                if self.cfg.host.mmc.busy_detect {
                    return; // the busy-end interrupt follows (BusyIrq)
                }
                let core = self.discard_active(r).core;
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

    /// The dispatcher on `core` took discard `r` at `at` (queue_rq, MMC_ISSUE_SYNC):
    /// mmc_blk_wait_for_idle, then the erase sequence.
    pub(super) fn discard_dispatch(&mut self, core: u32, at: SimTime, r: ReqId) {
        match self.cfg.driver {
            // mmc_blk_rw_wait(mq, NULL) sleeps like a prepared request: it goes on in
            // `discard_legacy_idle` once the request on the bus has finished.
            DriverKind::MmcLegacy => self.q.push(at, Ev::DispPrepared(r)),
            DriverKind::MmcHsq { .. } | DriverKind::MmcCqe { .. } => {
                self.disc.waiting = Some((r, core));
                self.discard_host_idle(at);
            }
            DriverKind::Ufs | DriverKind::SdRtsx { .. } => {
                unreachable!("discards on this driver do not take the MMC path")
            }
        }
    }

    /// Hook of the hsq and cqe completion paths: if the host has nothing in flight, a
    /// discard waiting for idle goes on from `at`.
    pub(super) fn discard_host_idle(&mut self, at: SimTime) {
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
            // the halt (immediate with no task in flight). Its register work is costed
            // like a request start (estimate).
            t = self
                .cpu
                .run_kernel(core, t, self.cfg.host.mmc.start_ns, "cqhci off");
            self.disc.cqe_halted = true;
            self.tr(t, Some(r), TraceKind::CqeHalted);
        }
        self.discard_erase(core, t, r);
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
    /// the erase sequence.
    pub(super) fn discard_legacy_idle(&mut self, at: SimTime, r: ReqId) {
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
        self.discard_erase(core, t, r);
    }

    /// mmc_blk_issue_discard_rq → mmc_erase on `core` from `at`.
    fn discard_erase(&mut self, core: u32, at: SimTime, r: ReqId) {
        let (from, end) = {
            let q = self.block.req(r);
            (q.sector, q.end())
        };
        self.tr(
            at,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        let to = erase_end(from, end);
        self.disc.active = Some(Active {
            req: r,
            core,
            from,
            end,
            to,
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
        t = self
            .cpu
            .run_kernel(a.core, t, self.cfg.host.mmc.cmd13_ns, "cmd38");
        let end = self.bus_cmds(t, &[38], Some(r));
        let cmd = DevCommand {
            tag: r,
            op: DevOp::Discard,
            lba: a.from,
            sectors: (a.to - a.from) as u32,
        };
        // The device first (its Done is known at once), then the response.
        self.q.push(end, Ev::Dev(device::Input::Command(cmd)));
        self.q.push(end, Ev::Discard(DiscardEv::Cmd38Response(r)));
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
        if self.cfg.host.mmc.busy_detect {
            let t = self.irq_run(at, self.cfg.host.costs.irq_ns, r);
            self.q.push(t, Ev::Discard(DiscardEv::BusyIrq(r)));
        }
    }

    /// One mmc_do_erase finished at `at` (the dispatcher runs): the next piece, or the
    /// request ends inline and queue_rq returns.
    fn discard_erase_done(&mut self, at: SimTime, r: ReqId) {
        let mut a = self.discard_active(r);
        if a.to < a.end {
            a.from = a.to;
            a.to = erase_end(a.from, a.end);
            self.disc.active = Some(a);
            return self.discard_do_erase(at);
        }
        self.disc.active = None;
        let cost = self.end_cost(r);
        let t = self.cpu.run_kernel(a.core, at, cost, "discard end");
        self.q.push(t, Ev::DispPosted(Some(r)));
    }
}

/// The end of the mmc_do_erase starting at `from` within `..end`: mmc_erase splits a
/// range that crosses an erase-group boundary when one group fits the busy timeout.
fn erase_end(from: u64, end: u64) -> u64 {
    let boundary = (from / MMC_ERASE_GROUP_SECTORS + 1) * MMC_ERASE_GROUP_SECTORS;
    end.min(boundary)
}
