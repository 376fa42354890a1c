//! The block queue's discard limits and what a run with trims needs: max_discard_sectors
//! and discard_granularity come from the device's registers and the host's busy timeout
//! as the kernel computes them (`host/discard_limits.rs`: MMC mmc_queue_setup_discard →
//! mmc_calc_max_discard; UFS sd_config_discard from the Block Limits VPD page). A
//! discard longer than max_discard_sectors is split where blk_bio_discard_split splits
//! it (granularity-aligned). The drivers issue discards: UFS as SCSI UNMAP
//! (`driver/ufs/`), MMC through its synchronous erase sequence (`driver/mmc/erase.rs`);
//! SD cards are refused before a run.
//! Units: 512-byte sectors.

use crate::device::config::Interface;
use crate::host::discard_limits::{self as lim, MmcDiscardLimits};
use crate::sim::Sim;
use crate::workload::{Submission, Trim};

/// The queue's discard limits for the run's device and host: (max_discard_sectors,
/// discard_granularity, the MMC core's limits), or why they cannot be computed.
fn limits(cfg: &crate::sim::SimConfig) -> Result<(u32, u32, Option<MmcDiscardLimits>), String> {
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
pub(in crate::sim) fn setup(sim: &mut Sim) {
    if let Ok((max, granularity, _)) = limits(&sim.cfg) {
        sim.block.set_discard_limits(max, granularity);
    }
}

/// What `Sim::new` refuses about trims.
pub(in crate::sim) fn check(cfg: &crate::sim::SimConfig) -> Result<(), String> {
    // A replay's trims (sim/jobs/replay.rs) are synchronous whatever the engine.
    let replay_trims = |j: &crate::workload::JobConfig| j.replay.as_ref().is_some_and(|r| r.trims);
    for j in cfg
        .jobs
        .iter()
        .filter(|j| j.trim != Trim::None || replay_trims(j))
        // A trim of a regular file fails in its ioctl (sim/jobs/errors.rs): no discard.
        .filter(|j| j.trim_errno.is_none())
    {
        crate::driver::refuse_trims(cfg.driver).map_err(|e| format!("job '{}': {e}", j.name))?;
        let (max, _, _) = limits(cfg).map_err(|e| format!("job '{}': {e}", j.name))?;
        if max == 0 {
            return Err(format!(
                "job '{}': the device takes no discards (max_discard_sectors 0)",
                j.name
            ));
        }
        crate::driver::check_trims(cfg.driver, &cfg.host)
            .map_err(|e| format!("job '{}': {e}", j.name))?;
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
