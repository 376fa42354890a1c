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
use crate::host::discard_limits as lim;
use crate::sim::Sim;
use crate::workload::{Submission, Trim};

/// The queue's discard limits for the run's device and host: (max_discard_sectors,
/// discard_granularity), or why they cannot be computed.
fn limits(cfg: &crate::sim::SimConfig) -> Result<(u32, u32), String> {
    let dev = &cfg.device;
    match dev.interface {
        Interface::Emmc => {
            lim::mmc_limits(dev, &cfg.host).map(|l| (l.max_discard, l.granularity))
        }
        Interface::Ufs => match &dev.block_limits {
            Some(b) => Ok((
                lim::ufs_max_discard_sectors(b.max_unmap_lba_count),
                lim::UFS_LOGICAL_BLOCK_SECTORS,
            )),
            None => Err(format!(
                "device '{}' has no [block_limits] section (MAXIMUM UNMAP LBA COUNT): sd_config_discard takes max_discard_sectors from it",
                dev.name
            )),
        },
        // SD erase (CMD32/33/38) is not modelled: trims on SD are refused.
        Interface::Sd => Ok((0, 0)),
    }
}

/// `Sim::new`: the queue's discard limits (none when the presets lack them: then the
/// run has no trims, `check` saw to it).
pub(in crate::sim) fn setup(sim: &mut Sim) {
    if let Ok((max, granularity)) = limits(&sim.cfg) {
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
        let (max, _) = limits(cfg).map_err(|e| format!("job '{}': {e}", j.name))?;
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
