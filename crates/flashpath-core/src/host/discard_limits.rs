//! The queue's discard limits as the kernel (v5.4-5.10) computes them from the device's
//! registers and the host's busy timeout, and the splits that follow from them. Pure
//! arithmetic: `sim/kernel/discard.rs` applies them and `driver/mmc/erase.rs` runs the erase sequence.
//!
//! MMC (drivers/mmc/core/queue.c mmc_queue_setup_discard, core.c mmc_init_erase,
//! mmc_calc_max_discard, mmc_do_calc_max_discard, mmc_mmc_erase_timeout, mmc_do_erase,
//! mmc_erase; mmc.c mmc_decode_ext_csd, mmc_set_erase_size):
//! - erase_size: the high-capacity erase group (HC_ERASE_GRP_SIZE × 512 KiB) when
//!   EXT_CSD ERASE_GROUP_DEF is 1, else the CSD's (ERASE_GRP_SIZE+1)×(ERASE_GRP_MULT+1)
//!   sectors; erase_shift its log2 when a power of two.
//! - pref_erase (mmc_init_erase): 512 KiB / 1 / 2 / 4 MiB for cards under 128 MiB /
//!   512 MiB / 1 GiB / above, rounded up to a multiple of erase_size (at least one).
//!   The kernel takes the card size from the CSD; a sector-addressed eMMC over 2 GB
//!   reports C_SIZE 0xFFF there (JEDEC), which lands in the same ≥ 1 GiB row as its
//!   real capacity, used here.
//! - Timeouts per erase group (mmc_mmc_erase_timeout, EXT_CSD_REV >= 6): TRIM and
//!   DISCARD 300 ms × TRIM_MULT; ERASE 300 ms × ERASE_TIMEOUT_MULT (ERASE_GROUP_DEF 1).
//!   The product with the group count is 32-bit and wraps as in C (the search below
//!   stops when the timeout stops growing).
//! - max_discard_sectors: ERASE_GROUP_DEF 0 → pref_erase (the erase timeout would
//!   depend on the clock). Otherwise the smaller of mmc_do_calc_max_discard(ERASE) and
//!   (TRIM) (mmc_can_trim: SEC_GB_CL_EN, assumed on the modelled 4.5+ parts): the
//!   largest group count whose timeout fits the host's max_busy_timeout (0: the
//!   MMC_ERASE_TIMEOUT_MS default, 60 s), found by doubling steps, but never fewer
//!   groups than pref_erase holds; one group less (a range may touch one more group
//!   than it covers), unless only one fits: then card->eg_boundary is set and mmc_erase
//!   splits a range crossing an erase-group boundary in two mmc_do_erase.
//! - discard_granularity = pref_erase (0 if above max_discard).
//! - mmc_do_erase: CMD38's busy timeout is the DISCARD timeout of the groups the range
//!   touches; above a non-zero max_busy_timeout (and without MMC_CAP_NEED_RSP_BUSY) the
//!   command goes out as R1 and the core polls for the end of busy, even on a host that
//!   detects busy in hardware.
//!
//! SCSI/UFS (drivers/scsi/sd.c sd_read_block_limits, sd_config_discard with
//! SD_LBP_UNMAP): max_discard_sectors = min_not_zero(MAXIMUM UNMAP LBA COUNT,
//! SD_MAX_WS16_BLOCKS) logical blocks; discard_granularity = max(physical block, OPTIMAL
//! UNMAP GRANULARITY × logical block), the 4 KiB logical block here (the model's UFS
//! logical and physical blocks are 4 KiB; the VPD granularity is taken as one block).
//!
//! Block layer (v5.4 block/blk-lib.c __blkdev_issue_discard: bios of up to
//! bio_allowed_max_sectors; block/blk-merge.c blk_bio_discard_split at blk_queue_split):
//! a discard longer than max_discard_sectors (rounded down to the granularity) is split
//! there, the first piece ending on a granularity boundary (discard_alignment 0), so
//! every later piece starts aligned. (5.9+ also cuts the first bio at the first
//! granularity boundary in __blkdev_issue_discard: not modelled, the hosts are 5.4.)
//!
//! Units: 512-byte sectors, milliseconds.

use crate::device::config::ExtCsdErase;

/// drivers/mmc/core/core.c: the max erase timeout when the host gives no max_busy_timeout.
pub const MMC_ERASE_TIMEOUT_MS: u32 = 60_000;
/// drivers/scsi/sd.h: the largest WRITE SAME(16) / UNMAP the disk driver sends, in blocks.
pub const SD_MAX_WS16_BLOCKS: u32 = 0x7f_ffff;
/// The model's UFS logical block (bLogicalBlockSize 12: 4 KiB), in sectors.
pub const UFS_LOGICAL_BLOCK_SECTORS: u32 = 8;

/// Which timeout mmc_mmc_erase_timeout takes (EXT_CSD_REV >= 6, ERASE_GROUP_DEF 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraseArg {
    /// MMC_ERASE_ARG: HC erase timeout (300 ms × ERASE_TIMEOUT_MULT) per group.
    Erase,
    /// MMC_TRIM_ARG and MMC_DISCARD_ARG: 300 ms × TRIM_MULT per group.
    TrimOrDiscard,
}

/// What the MMC core derives for discards from the card and the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmcDiscardLimits {
    /// card->erase_size, sectors.
    pub erase_size: u32,
    /// card->erase_shift (0 if erase_size is not a power of two).
    pub erase_shift: u32,
    /// card->pref_erase, sectors.
    pub pref_erase: u32,
    /// The queue's max_discard_sectors (0: discards not supported).
    pub max_discard: u32,
    /// The queue's discard_granularity, sectors (0: none).
    pub granularity: u32,
    /// card->eg_boundary: mmc_erase splits at the first erase-group boundary.
    pub eg_boundary: bool,
    /// card->ext_csd.trim_timeout and hc_erase_timeout, ms per group.
    pub trim_timeout_ms: u32,
    pub hc_erase_timeout_ms: u32,
    /// host->max_busy_timeout, ms (0: none).
    pub max_busy_timeout_ms: u32,
    /// MMC_CAP_NEED_RSP_BUSY.
    pub need_rsp_busy: bool,
}

impl MmcDiscardLimits {
    /// mmc_mmc_erase_timeout for `qty` erase groups (32-bit, wrapping as in C).
    pub fn erase_timeout_ms(&self, arg: EraseArg, qty: u32) -> u32 {
        let per_group = match arg {
            EraseArg::TrimOrDiscard => self.trim_timeout_ms,
            EraseArg::Erase => self.hc_erase_timeout_ms,
        };
        per_group.wrapping_mul(qty)
    }

    /// mmc_do_erase's qty: the erase groups the inclusive range `from..=to` touches.
    pub fn groups_touched(&self, from: u64, to: u64) -> u32 {
        let q = if self.erase_shift != 0 {
            (to >> self.erase_shift) - (from >> self.erase_shift) + 1
        } else {
            to / self.erase_size as u64 - from / self.erase_size as u64 + 1
        };
        q as u32
    }

    /// mmc_do_erase of the range `from..end` (DISCARD): whether CMD38 goes out with an
    /// R1b response (the host may wait for busy itself) or R1 (the core polls).
    pub fn discard_uses_r1b(&self, from: u64, end: u64) -> bool {
        let busy =
            self.erase_timeout_ms(EraseArg::TrimOrDiscard, self.groups_touched(from, end - 1));
        self.need_rsp_busy || self.max_busy_timeout_ms == 0 || busy <= self.max_busy_timeout_ms
    }

    /// mmc_erase: the end (exclusive) of the first mmc_do_erase of `from..end`.
    pub fn first_erase_end(&self, from: u64, end: u64) -> u64 {
        let rem = self.erase_size as u64 - from % self.erase_size as u64;
        if self.eg_boundary && end - from > rem {
            from + rem
        } else {
            end
        }
    }
}

/// mmc_init_erase's pref_erase for a card of `capacity_bytes` and erase groups of
/// `erase_size` sectors.
pub fn mmc_pref_erase(capacity_bytes: u64, erase_size: u32) -> u32 {
    let mib = capacity_bytes >> 20;
    let mut pref: u32 = match mib {
        0..=127 => 512 * 1024 / 512,
        128..=511 => 1024 * 1024 / 512,
        512..=1023 => 2 * 1024 * 1024 / 512,
        _ => 4 * 1024 * 1024 / 512,
    };
    if pref < erase_size {
        pref = erase_size;
    } else {
        let sz = pref % erase_size;
        if sz != 0 {
            pref += erase_size - sz;
        }
    }
    pref
}

/// The MMC core's discard limits for `device` on `host`, or why they cannot be
/// computed (the card's `[ext_csd]` registers and the host's busy-timeout fields).
pub fn mmc_limits(
    device: &crate::device::DeviceConfig,
    host: &super::HostConfig,
) -> Result<MmcDiscardLimits, String> {
    let Some(card) = &device.ext_csd else {
        return Err(format!(
            "device '{}' has no [ext_csd] section (erase group, TRIM_MULT...): the MMC core derives max_discard_sectors from it",
            device.name
        ));
    };
    let m = &host.mmc;
    let (Some(busy), Some(need_r1b)) = (m.max_busy_timeout_ms, m.need_rsp_busy) else {
        return Err(format!(
            "host '{}' lacks mmc.max_busy_timeout or mmc.need_rsp_busy: mmc_calc_max_discard and mmc_do_erase need them",
            host.name
        ));
    };
    Ok(mmc_discard_limits(
        card,
        device.capacity_bytes,
        busy,
        need_r1b,
    ))
}

/// The MMC core's discard limits for `card` of `capacity_bytes` on a host with
/// `max_busy_timeout_ms` (0: none) and MMC_CAP_NEED_RSP_BUSY `need_rsp_busy`.
pub fn mmc_discard_limits(
    card: &ExtCsdErase,
    capacity_bytes: u64,
    max_busy_timeout_ms: u32,
    need_rsp_busy: bool,
) -> MmcDiscardLimits {
    // mmc_set_erase_size (write_blkbits 9: 512-byte write blocks).
    let erase_size = if card.erase_group_def {
        (card.hc_erase_grp_size as u32) << 10
    } else {
        (card.csd_erase_grp_size as u32 + 1) * (card.csd_erase_grp_mult as u32 + 1)
    };
    let erase_shift = if erase_size.is_power_of_two() {
        erase_size.trailing_zeros()
    } else {
        0
    };
    let pref_erase = mmc_pref_erase(capacity_bytes, erase_size);
    let mut l = MmcDiscardLimits {
        erase_size,
        erase_shift,
        pref_erase,
        max_discard: 0,
        granularity: 0,
        eg_boundary: false,
        trim_timeout_ms: 300 * card.trim_mult as u32,
        hc_erase_timeout_ms: 300 * card.erase_timeout_mult as u32,
        max_busy_timeout_ms,
        need_rsp_busy,
    };
    // mmc_calc_max_discard.
    l.max_discard = if !card.erase_group_def {
        pref_erase
    } else {
        let max_erase = do_calc_max_discard(&mut l, EraseArg::Erase);
        let max_trim = do_calc_max_discard(&mut l, EraseArg::TrimOrDiscard);
        if max_trim < max_erase || max_erase == 0 {
            max_trim
        } else {
            max_erase
        }
    };
    // mmc_queue_setup_discard.
    l.granularity = if pref_erase > l.max_discard {
        0
    } else {
        pref_erase
    };
    l
}

/// mmc_do_calc_max_discard (an MMC card: erase_shift or division by erase_size).
fn do_calc_max_discard(l: &mut MmcDiscardLimits, arg: EraseArg) -> u32 {
    let max_busy = if l.max_busy_timeout_ms != 0 {
        l.max_busy_timeout_ms
    } else {
        MMC_ERASE_TIMEOUT_MS
    };
    let (max_qty, min_qty) = if l.erase_shift != 0 {
        (u32::MAX >> l.erase_shift, l.pref_erase >> l.erase_shift)
    } else {
        (u32::MAX / l.erase_size, l.pref_erase / l.erase_size)
    };
    let mut qty: u32 = 0;
    let mut last_timeout: u32 = 0;
    loop {
        let mut y = 0;
        let mut x: u32 = 1;
        while x != 0 && x <= max_qty && max_qty - x >= qty {
            let timeout = l.erase_timeout_ms(arg, qty + x);
            if qty + x > min_qty && timeout > max_busy {
                break;
            }
            if timeout < last_timeout {
                break;
            }
            last_timeout = timeout;
            y = x;
            x <<= 1;
        }
        qty += y;
        if y == 0 {
            break;
        }
    }
    if qty == 0 {
        return 0;
    }
    if qty == 1 {
        l.eg_boundary = true;
    } else {
        qty -= 1;
    }
    if l.erase_shift != 0 {
        qty << l.erase_shift
    } else {
        qty * l.erase_size
    }
}

/// sd_config_discard (SD_LBP_UNMAP): max_discard_sectors of a UFS logical unit whose
/// Block Limits VPD reports `max_unmap_lba_count` (min_not_zero with SD_MAX_WS16_BLOCKS).
pub fn ufs_max_discard_sectors(max_unmap_lba_count: u32) -> u32 {
    let blocks = match max_unmap_lba_count {
        0 => SD_MAX_WS16_BLOCKS,
        n => n.min(SD_MAX_WS16_BLOCKS),
    };
    blocks * UFS_LOGICAL_BLOCK_SECTORS
}

/// blk_bio_discard_split: the length of the next discard request cut from `remaining`
/// sectors at `sector`, for a queue with `max_discard` and `granularity` (sectors;
/// discard_alignment 0).
pub fn discard_split(sector: u64, remaining: u64, max_discard: u32, granularity: u32) -> u64 {
    let g = granularity.max(1) as u64;
    let max = max_discard as u64 - max_discard as u64 % g;
    assert!(max > 0, "max_discard_sectors below the discard granularity");
    if remaining <= max {
        return remaining;
    }
    let mut split = max;
    let tmp = (sector + split) % g;
    if split > tmp {
        split -= tmp;
    }
    split
}

/// The number of discard requests `discard_split` cuts `sectors` at `sector` into.
pub fn discard_pieces(mut sector: u64, sectors: u64, max_discard: u32, granularity: u32) -> u32 {
    let end = sector + sectors;
    let mut n = 0;
    while sector < end {
        sector += discard_split(sector, end - sector, max_discard, granularity);
        n += 1;
    }
    n
}
