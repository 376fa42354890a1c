//! The UFS driver's HPB steps (ufshpb.c as the UFS driver calls it; the state machine is
//! `host::ufshpb`, the device side `device::hpb`): where each step runs and what it
//! costs.
//!
//! ```text
//!  queuecommand ─▶ ufshpb_prep (hpb_prep on the issuing core) ─▶ HPB READ | READ | WRITE
//!  IRQ completion of any SCSI command with hints ─▶ ufshpb_rsp_upiu (hpb_rsp)
//!        ─▶ queue_work(ufshpb-wq, map_work)
//!  map_work (kworker: wake-up + hpb_map_work) ─▶ per command: hpb_map_req, a tag
//!        (BLK_MQ_REQ_NOWAIT; none free: sleep 3 ms and retry), head of the dispatch
//!        list, queue run from the worker ─▶ READ BUFFER / WRITE BUFFER as a SCSI command
//!  READ BUFFER completion (hpb_map_compl in the IRQ) ─▶ entries in host memory, VALID
//!  host control mode: the cold timer every timeout_polling_interval (200 ms) walks the
//!        LRU and kicks map_work (the only kick of an activation reached by counting)
//! ```
//!
//! The READ BUFFER's entries are what the device's map held when its data left the
//! device (`DriverCtx::device_map_entries` at ReadReady). The map_work kworker runs on the IRQ
//! core (an unbound workqueue's worker is woken near the CPU that queued it). The
//! driver's requests take a block-layer tag and a UTP slot like any command. Leaves
//! out: the 5.15-only WRITE BUFFER 03h at init; device resets (hpb_op 2).
//! Units: ns; entries and regions as ufshpb.c counts them.

use super::{Ufs, UfsEv};
use crate::device::hpb::{HpbControl, HpbHints, HPB_READ, HPB_READ_BUFFER, HPB_WRITE_BUFFER};
use crate::device::{DevCommand, DevOp, DeviceConfig};
use crate::driver::{DriverCtx, Event};
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::host::ufs_config::UfsHpbHostConfig;
use crate::host::ufshpb::{HcmParams, MapWork, Prep, UfsHpb};
use crate::host::{DriverKind, HostConfig};
use crate::trace::TraceKind;
use crate::workload::Dir;

/// What a UFS command carries for the device (indexed by request id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum HpbCmd {
    /// Not HPB's: the request's own READ/WRITE/UNMAP/SYNC CACHE.
    #[default]
    Scsi,
    HpbRead {
        entry: u32,
    },
    ReadBuffer {
        srgn: u32,
    },
    WriteBuffer {
        rgn: u32,
    },
}

/// A 3 ms sleep before retrying a request allocation (ufshpb_get_req's usleep_range).
const REQ_RETRY_NS: u64 = 3_000_000;
/// Attempts at a request allocation (ufshpb.h HPB_MAP_REQ_RETRIES).
const MAP_REQ_RETRIES: u32 = 5;

#[derive(Debug)]
pub enum HpbEv {
    /// The map_work kworker runs.
    Work,
    /// Host control mode's cold timer (`ufshpb_read_to_handler`).
    ColdTick,
}

pub(super) struct HpbState {
    pub(super) drv: UfsHpb,
    /// The host preset's hpb_* costs.
    costs: UfsHpbHostConfig,
    cmd: Vec<HpbCmd>,
    hints: Vec<Option<HpbHints>>,
    entries: Vec<Vec<u32>>,
    work_queued: bool,
    cold_armed: bool,
    /// Failed request allocations of the running map_work.
    alloc_tries: u32,
}

/// The driver must find what it needs: an `[hpb]` device section, HPB 2.0 for host
/// control mode, and the host preset's `hpb_*` costs.
pub(crate) fn check(
    kind: DriverKind,
    host: &HostConfig,
    device: &DeviceConfig,
) -> Result<(), String> {
    let DriverKind::UfsHpb { control } = kind else {
        return Ok(());
    };
    let Some(h) = &device.hpb else {
        return Err(format!(
            "driver '{}' needs a device with an [hpb] section; device '{}' has none",
            kind.name(),
            device.name
        ));
    };
    if control == HpbControl::Host && h.version != crate::device::hpb::HpbVersion::V2 {
        return Err(format!(
            "driver 'ufs-hpb-hcm' needs HPB 2.0 (host control mode is a JESD220-3A feature); device '{}' has hpb.version = \"1.0\"",
            device.name
        ));
    }
    if host.ufs.as_ref().is_some_and(|u| u.hpb.is_none()) {
        return Err(format!(
            "driver '{}' needs the hpb_* fields of the [ufs] section in host preset '{}'",
            kind.name(),
            host.name
        ));
    }
    Ok(())
}

/// The device runs HPB only for an HPB driver, in the driver's mode (bHPBControl as
/// the driver finds it).
pub(crate) fn configure_device(kind: DriverKind, device: &mut DeviceConfig) {
    match kind {
        DriverKind::UfsHpb { control } => {
            if let Some(h) = &mut device.hpb {
                h.control = control;
            }
        }
        _ => device.hpb = None,
    }
}

impl HpbState {
    /// The HPB driver of an HPB driver `kind`, when the device has an `[hpb]` section.
    pub(super) fn new(
        kind: DriverKind,
        host: &HostConfig,
        device: &DeviceConfig,
    ) -> Option<Box<HpbState>> {
        let DriverKind::UfsHpb { .. } = kind else {
            return None;
        };
        let h = device.hpb?;
        let lpns = (device.capacity_bytes / 4096) as u32;
        let host_hpb = host.ufs.as_ref().and_then(|u| u.hpb);
        let hcm = host_hpb.map_or(HcmParams::default(), |c| c.hcm);
        Some(Box::new(HpbState {
            drv: UfsHpb::new(&h, lpns, hcm),
            costs: host_hpb.expect("check() found the hpb_* costs"),
            cmd: Vec::new(),
            hints: Vec::new(),
            entries: Vec::new(),
            work_queued: false,
            cold_armed: false,
            alloc_tries: 0,
        }))
    }

    /// The per-request tables reach request id `r` (ids are a bounded arena).
    fn track(&mut self, r: ReqId) {
        if self.cmd.len() <= r as usize {
            self.cmd.resize(r as usize + 1, HpbCmd::Scsi);
            self.hints.resize(r as usize + 1, None);
            self.entries.resize_with(r as usize + 1, Vec::new);
        }
    }
}

impl Ufs {
    /// Init: pinned regions' loads are queued (ufshpb_hpb_lu_prepared kicks map_work).
    pub(super) fn hpb_setup(&mut self, ctx: &mut impl DriverCtx) {
        if self.hpb.as_ref().is_some_and(|h| h.drv.work_pending()) {
            self.hpb_queue_work(0, 0, ctx);
        }
    }

    /// `ufshpb_prep` for request `r` about to be issued: what it carries, and the CPU
    /// time the step costs (0 without HPB).
    pub(super) fn hpb_prep(&mut self, now: SimTime, r: ReqId, ctx: &mut impl DriverCtx) -> u64 {
        let Some(h) = self.hpb.as_deref_mut() else {
            return 0;
        };
        let q = ctx.block().req(r);
        h.track(r);
        if q.passthrough {
            return 0; // the driver's own READ/WRITE BUFFER: set when it was built
        }
        h.cmd[r as usize] = HpbCmd::Scsi;
        if q.flush {
            return 0;
        }
        let lpn = (q.sector / 8) as u32;
        let n = (q.sector + q.sectors as u64).div_ceil(8) as u32 - lpn;
        if q.discard || q.dir() == Dir::Write {
            h.drv.prep_write(lpn, n);
        } else if let Prep::Hpb { entry } = h.drv.prep_read(now, lpn, n) {
            h.cmd[r as usize] = HpbCmd::HpbRead { entry };
        }
        let prep_ns = h.costs.prep_ns;
        self.hpb_arm_cold_timer(now, ctx);
        prep_ns
    }

    /// The device command of request `r`: `cmd` (the request's own) unless HPB made it
    /// an HPB READ, or it is the driver's READ BUFFER (the subregion's range) or WRITE
    /// BUFFER.
    pub(super) fn hpb_command(&self, r: ReqId, mut cmd: DevCommand) -> DevCommand {
        let Some(h) = self.hpb.as_deref() else {
            return cmd;
        };
        match h.cmd.get(r as usize).copied().unwrap_or_default() {
            HpbCmd::Scsi => {}
            HpbCmd::HpbRead { entry } => {
                cmd.op = DevOp::HpbRead;
                cmd.hpb = entry;
            }
            HpbCmd::ReadBuffer { srgn } => {
                let (first, n) = h.drv.srgn_blocks(srgn);
                cmd.op = DevOp::ReadBuffer;
                cmd.hpb = srgn;
                cmd.lba = first as u64 * 8;
                cmd.sectors = n * 8;
            }
            HpbCmd::WriteBuffer { rgn } => {
                cmd.op = DevOp::WriteBuffer;
                cmd.hpb = rgn;
                cmd.lba = 0;
                cmd.sectors = 0;
            }
        }
        cmd
    }

    /// Traces the HPB SCSI command a COMMAND UPIU carries.
    pub(super) fn hpb_trace(&mut self, r: ReqId, s: SimTime, e: SimTime, ctx: &mut impl DriverCtx) {
        let Some(h) = self.hpb.as_deref() else {
            return;
        };
        let opcode = match h.cmd.get(r as usize).copied().unwrap_or_default() {
            HpbCmd::Scsi => return,
            HpbCmd::HpbRead { .. } => HPB_READ,
            HpbCmd::ReadBuffer { .. } => HPB_READ_BUFFER,
            HpbCmd::WriteBuffer { .. } => HPB_WRITE_BUFFER,
        };
        ctx.trace(s, Some(r), TraceKind::Scsi { opcode, end: e });
    }

    /// The device's output: the response of `tag` will carry `hints`.
    pub(super) fn hpb_hints(&mut self, tag: ReqId, hints: HpbHints) {
        if let Some(h) = self.hpb.as_deref_mut() {
            h.track(tag);
            h.hints[tag as usize] = Some(hints);
        }
    }

    /// The device's output: the READ BUFFER's data leaves the device now.
    pub(super) fn hpb_read_buffer_data(&mut self, r: ReqId, ctx: &mut impl DriverCtx) {
        let Some(h) = self.hpb.as_deref_mut() else {
            return;
        };
        if let HpbCmd::ReadBuffer { srgn } = h.cmd[r as usize] {
            let (first, n) = h.drv.srgn_blocks(srgn);
            let buf = &mut h.entries[r as usize];
            buf.clear();
            ctx.device_map_entries(first, n, buf);
        }
    }

    /// In the completion of request `r` on `core` from `at` (`ufshcd_transfer_rsp_status`
    /// → `ufshpb_rsp_upiu`, then a READ BUFFER's end_io): returns when the HPB work is
    /// done.
    pub(super) fn hpb_complete(
        &mut self,
        now: SimTime,
        r: ReqId,
        core: u32,
        at: SimTime,
        ctx: &mut impl DriverCtx,
    ) -> SimTime {
        let Some(h) = self.hpb.as_deref_mut() else {
            return at;
        };
        let costs = h.costs;
        let mut t = at;
        if let Some(hints) = h.hints.get_mut(r as usize).and_then(Option::take) {
            t = ctx
                .cpu()
                .run_irq_l(core, t, costs.rsp_ns, "ufshpb_rsp_upiu");
            h.drv.rsp_hints(&hints);
            self.hpb_queue_work(now, t, ctx);
        }
        let h = self.hpb.as_deref_mut().expect("HPB is on");
        if let HpbCmd::ReadBuffer { srgn } = h.cmd[r as usize] {
            t = ctx
                .cpu()
                .run_irq_l(core, t, costs.map_compl_ns, "ufshpb map done");
            let entries = std::mem::take(&mut h.entries[r as usize]);
            h.drv.map_done(srgn, &entries);
            h.entries[r as usize] = entries;
            h.cmd[r as usize] = HpbCmd::Scsi;
        } else if let HpbCmd::WriteBuffer { .. } = h.cmd[r as usize] {
            h.cmd[r as usize] = HpbCmd::Scsi;
        }
        t
    }

    /// `queue_work(ufshpb_wq, &hpb->map_work)`: a kworker wakes unless one is queued.
    fn hpb_queue_work(&mut self, now: SimTime, at: SimTime, ctx: &mut impl DriverCtx) {
        let h = self.hpb.as_deref_mut().expect("HPB is on");
        if h.work_queued {
            return;
        }
        h.work_queued = true;
        let map_work_ns = h.costs.map_work_ns;
        let core = self.irq_core;
        let t = ctx.wake(core, at.max(now));
        let t = ctx
            .cpu()
            .run_kernel(core, t, map_work_ns, "ufshpb map_work");
        ctx.schedule(t, Event::Ufs(UfsEv::Hpb(HpbEv::Work)));
    }

    pub(super) fn hpb_event(&mut self, now: SimTime, ev: HpbEv, ctx: &mut impl DriverCtx) {
        match ev {
            HpbEv::Work => self.hpb_map_work(now, ctx),
            HpbEv::ColdTick => {
                let h = self.hpb.as_deref_mut().expect("HPB is on");
                h.cold_armed = false;
                h.drv.cold_tick(now);
                // ufshpb_read_to_handler ends by kicking map_work.
                self.hpb_queue_work(now, now, ctx);
                self.hpb_arm_cold_timer(now, ctx);
            }
        }
    }

    /// Host control mode: the cold timer runs every polling interval while the jobs
    /// run (it stops with them so that the run can end).
    fn hpb_arm_cold_timer(&mut self, now: SimTime, ctx: &mut impl DriverCtx) {
        let live = ctx.jobs_running();
        let Some(h) = self.hpb.as_deref_mut() else {
            return;
        };
        if h.drv.mode != HpbControl::Host || h.cold_armed || !live {
            return;
        }
        h.cold_armed = true;
        let at = now + h.drv.hcm.timeout_polling_interval_ns;
        ctx.schedule(at, Event::Ufs(UfsEv::Hpb(HpbEv::ColdTick)));
    }

    /// The map_work item: inactivations, then activations, each command issued in turn.
    fn hpb_map_work(&mut self, now: SimTime, ctx: &mut impl DriverCtx) {
        let core = self.irq_core;
        let mut t = now;
        loop {
            let nr_requests = self.nr_requests;
            let h = self.hpb.as_deref_mut().expect("HPB is on");
            if !h.drv.work_pending() {
                break;
            }
            if ctx.block().tags_used() >= nr_requests {
                // BLK_MQ_REQ_NOWAIT failed: usleep_range(3000, 3100) and try again, at
                // most HPB_MAP_REQ_RETRIES (5) attempts; then the subregion waits on the
                // list for map_work's next run.
                h.alloc_tries += 1;
                if h.alloc_tries >= MAP_REQ_RETRIES {
                    h.alloc_tries = 0;
                    break;
                }
                let at = ctx.wake(core, t + REQ_RETRY_NS);
                ctx.schedule(at, Event::Ufs(UfsEv::Hpb(HpbEv::Work)));
                return; // the worker sleeps; map_work stays queued
            }
            h.alloc_tries = 0;
            let Some(w) = h.drv.map_work_step(t) else {
                break;
            };
            t = ctx
                .cpu()
                .run_kernel(core, t, h.costs.map_req_ns, "ufshpb map req");
            let (dir, bytes, cmd) = match w {
                MapWork::Load { srgn, .. } => (
                    Dir::Read,
                    h.drv.map_bytes(srgn),
                    HpbCmd::ReadBuffer { srgn },
                ),
                MapWork::Unmap { rgn } => (Dir::Write, 0, HpbCmd::WriteBuffer { rgn }),
            };
            let r = ctx
                .block()
                .submit_passthrough(t, core, dir, bytes)
                .expect("a tag was free");
            h.track(r);
            h.cmd[r as usize] = cmd;
            // blk_execute_rq_nowait runs the hardware queue from this worker.
            if self.slots < self.cfg.nutrs {
                self.queuecommand(now, core, t, true, ctx);
            }
        }
        let h = self.hpb.as_deref_mut().expect("HPB is on");
        h.work_queued = false;
    }
}
