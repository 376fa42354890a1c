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
//! device (`Device::hpb_entries` at ReadReady). The map_work kworker runs on the IRQ
//! core (an unbound workqueue's worker is woken near the CPU that queued it). The
//! driver's requests take a block-layer tag and a UTP slot like any command. Leaves
//! out: the 5.15-only WRITE BUFFER 03h at init; device resets (hpb_op 2).

use super::*;
use crate::device::hpb::{HpbControl, HpbHints, HPB_READ, HPB_READ_BUFFER, HPB_WRITE_BUFFER};
use crate::host::ufshpb::{HcmParams, MapWork, Prep, UfsHpb};

/// What a UFS command carries for the device (indexed by request id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum HpbCmd {
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
pub(super) enum HpbEv {
    /// The map_work kworker runs.
    Work,
    /// Host control mode's cold timer (`ufshpb_read_to_handler`).
    ColdTick,
}

pub(super) struct HpbState {
    pub(super) drv: UfsHpb,
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
pub(super) fn check(cfg: &SimConfig) -> Result<(), String> {
    let DriverKind::UfsHpb { control } = cfg.driver else {
        return Ok(());
    };
    let Some(h) = &cfg.device.hpb else {
        return Err(format!(
            "driver '{}' needs a device with an [hpb] section; device '{}' has none",
            cfg.driver.name(),
            cfg.device.name
        ));
    };
    if control == HpbControl::Host && h.version != crate::device::hpb::HpbVersion::V2 {
        return Err(format!(
            "driver 'ufs-hpb-hcm' needs HPB 2.0 (host control mode is a JESD220-3A feature); device '{}' has hpb.version = \"1.0\"",
            cfg.device.name
        ));
    }
    if cfg.host.ufs.as_ref().is_some_and(|u| u.hpb.is_none()) {
        return Err(format!(
            "driver '{}' needs the hpb_* fields of the [ufs] section in host preset '{}'",
            cfg.driver.name(),
            cfg.host.name
        ));
    }
    Ok(())
}

/// The device runs HPB only for an HPB driver, in the driver's mode (bHPBControl as
/// the driver finds it).
pub(super) fn configure_device(cfg: &mut SimConfig) {
    match cfg.driver {
        DriverKind::UfsHpb { control } => {
            if let Some(h) = &mut cfg.device.hpb {
                h.control = control;
            }
        }
        _ => cfg.device.hpb = None,
    }
}

impl HpbState {
    pub(super) fn new(cfg: &SimConfig) -> Option<Box<HpbState>> {
        let h = cfg.device.hpb?;
        let lpns = (cfg.device.capacity_bytes / 4096) as u32;
        let hcm = cfg
            .host
            .ufs
            .as_ref()
            .and_then(|u| u.hpb)
            .map_or(HcmParams::default(), |c| c.hcm);
        Some(Box::new(HpbState {
            drv: UfsHpb::new(&h, lpns, hcm),
            cmd: Vec::new(),
            hints: Vec::new(),
            entries: Vec::new(),
            work_queued: false,
            cold_armed: false,
            alloc_tries: 0,
        }))
    }
}

impl HpbState {
    /// The per-request tables reach request id `r` (ids are a bounded arena).
    fn track(&mut self, r: ReqId) {
        if self.cmd.len() <= r as usize {
            self.cmd.resize(r as usize + 1, HpbCmd::Scsi);
            self.hints.resize(r as usize + 1, None);
            self.entries.resize_with(r as usize + 1, Vec::new);
        }
    }
}

impl Sim {
    fn hpb_costs(&self) -> crate::host::ufs_config::UfsHpbHostConfig {
        self.ufs_cfg().hpb.expect("check() found the hpb_* costs")
    }

    /// Init: pinned regions' loads are queued (ufshpb_hpb_lu_prepared kicks map_work).
    pub(super) fn ufs_hpb_setup(&mut self) {
        if self.ufs.hpb.as_ref().is_some_and(|h| h.drv.work_pending()) {
            self.ufs_hpb_queue_work(0);
        }
    }

    /// `ufshpb_prep` for request `r` about to be issued: what it carries, and the CPU
    /// time the step costs (0 without HPB).
    pub(super) fn ufs_hpb_prep(&mut self, r: ReqId) -> u64 {
        let now = self.now;
        let Some(h) = self.ufs.hpb.as_deref_mut() else {
            return 0;
        };
        let q = self.block.req(r);
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
        self.ufs_hpb_arm_cold_timer();
        self.hpb_costs().prep_ns
    }

    /// The device command of request `r`: `cmd` (the request's own) unless HPB made it
    /// an HPB READ, or it is the driver's READ BUFFER (the subregion's range) or WRITE
    /// BUFFER.
    pub(super) fn ufs_hpb_command(&self, r: ReqId, mut cmd: DevCommand) -> DevCommand {
        let Some(h) = self.ufs.hpb.as_deref() else {
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
    pub(super) fn ufs_hpb_trace(&mut self, r: ReqId, s: SimTime, e: SimTime) {
        let Some(h) = self.ufs.hpb.as_deref() else {
            return;
        };
        let opcode = match h.cmd.get(r as usize).copied().unwrap_or_default() {
            HpbCmd::Scsi => return,
            HpbCmd::HpbRead { .. } => HPB_READ,
            HpbCmd::ReadBuffer { .. } => HPB_READ_BUFFER,
            HpbCmd::WriteBuffer { .. } => HPB_WRITE_BUFFER,
        };
        self.tr(s, Some(r), TraceKind::Scsi { opcode, end: e });
    }

    /// Routed device output: the response of `tag` will carry `hints`.
    pub(super) fn ufs_hpb_hints(&mut self, tag: ReqId, hints: HpbHints) {
        if let Some(h) = self.ufs.hpb.as_deref_mut() {
            h.track(tag);
            h.hints[tag as usize] = Some(hints);
        }
    }

    /// Routed device output: the READ BUFFER's data leaves the device now.
    pub(super) fn ufs_hpb_read_buffer_data(&mut self, r: ReqId) {
        let Some(h) = self.ufs.hpb.as_deref_mut() else {
            return;
        };
        if let HpbCmd::ReadBuffer { srgn } = h.cmd[r as usize] {
            let (first, n) = h.drv.srgn_blocks(srgn);
            let buf = &mut h.entries[r as usize];
            buf.clear();
            self.dev.hpb_entries(first, n, buf);
        }
    }

    /// In the completion of request `r` on `core` from `at` (`ufshcd_transfer_rsp_status`
    /// → `ufshpb_rsp_upiu`, then a READ BUFFER's end_io): returns when the HPB work is
    /// done.
    pub(super) fn ufs_hpb_complete(&mut self, r: ReqId, core: u32, at: SimTime) -> SimTime {
        if self.ufs.hpb.is_none() {
            return at;
        }
        let costs = self.hpb_costs();
        let mut t = at;
        let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
        if let Some(hints) = h.hints.get_mut(r as usize).and_then(Option::take) {
            t = self.cpu.run_irq_l(core, t, costs.rsp_ns, "ufshpb_rsp_upiu");
            h.drv.rsp_hints(&hints);
            self.ufs_hpb_queue_work(t);
        }
        let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
        if let HpbCmd::ReadBuffer { srgn } = h.cmd[r as usize] {
            t = self
                .cpu
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
    fn ufs_hpb_queue_work(&mut self, at: SimTime) {
        let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
        if h.work_queued {
            return;
        }
        h.work_queued = true;
        let core = self.cfg.host.irq_core;
        let t = self.wake(core, at.max(self.now));
        let t = self
            .cpu
            .run_kernel(core, t, self.hpb_costs().map_work_ns, "ufshpb map_work");
        self.q.push(t, Ev::Ufs(ufs::UfsEv::Hpb(HpbEv::Work)));
    }

    pub(super) fn ufs_hpb_event(&mut self, ev: HpbEv) {
        match ev {
            HpbEv::Work => self.ufs_hpb_map_work(),
            HpbEv::ColdTick => {
                let now = self.now;
                let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
                h.cold_armed = false;
                h.drv.cold_tick(now);
                // ufshpb_read_to_handler ends by kicking map_work.
                self.ufs_hpb_queue_work(now);
                self.ufs_hpb_arm_cold_timer();
            }
        }
    }

    /// Host control mode: the cold timer runs every polling interval while the jobs
    /// run (it stops with them so that the run can end).
    fn ufs_hpb_arm_cold_timer(&mut self) {
        let live = self.unfinished > 0;
        let Some(h) = self.ufs.hpb.as_deref_mut() else {
            return;
        };
        if h.drv.mode != HpbControl::Host || h.cold_armed || !live {
            return;
        }
        h.cold_armed = true;
        let at = self.now + h.drv.hcm.timeout_polling_interval_ns;
        self.q.push(at, Ev::Ufs(ufs::UfsEv::Hpb(HpbEv::ColdTick)));
    }

    /// The map_work item: inactivations, then activations, each command issued in turn.
    fn ufs_hpb_map_work(&mut self) {
        let core = self.cfg.host.irq_core;
        let costs = self.hpb_costs();
        let mut t = self.now;
        loop {
            let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
            if !h.drv.work_pending() {
                break;
            }
            if self.block.tags_used() >= self.cfg.host.block.nr_requests {
                // BLK_MQ_REQ_NOWAIT failed: usleep_range(3000, 3100) and try again, at
                // most HPB_MAP_REQ_RETRIES (5) attempts; then the subregion waits on the
                // list for map_work's next run.
                h.alloc_tries += 1;
                if h.alloc_tries >= MAP_REQ_RETRIES {
                    h.alloc_tries = 0;
                    break;
                }
                let at = self.wake(core, t + REQ_RETRY_NS);
                self.q.push(at, Ev::Ufs(ufs::UfsEv::Hpb(HpbEv::Work)));
                return; // the worker sleeps; map_work stays queued
            }
            h.alloc_tries = 0;
            let Some(w) = h.drv.map_work_step(t) else {
                break;
            };
            t = self
                .cpu
                .run_kernel(core, t, costs.map_req_ns, "ufshpb map req");
            let (dir, bytes, cmd) = match w {
                MapWork::Load { srgn, .. } => (
                    Dir::Read,
                    h.drv.map_bytes(srgn),
                    HpbCmd::ReadBuffer { srgn },
                ),
                MapWork::Unmap { rgn } => (Dir::Write, 0, HpbCmd::WriteBuffer { rgn }),
            };
            let r = self
                .block
                .submit_passthrough(t, core, dir, bytes)
                .expect("a tag was free");
            let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
            h.track(r);
            h.cmd[r as usize] = cmd;
            // blk_execute_rq_nowait runs the hardware queue from this worker.
            if self.ufs.slots < self.ufs_cfg().nutrs {
                self.ufs_issue_from(core, t);
            }
        }
        let h = self.ufs.hpb.as_deref_mut().expect("HPB is on");
        h.work_queued = false;
    }
}
