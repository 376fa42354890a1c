//! UFS Host Performance Booster, device side (JESD220-3 HPB 1.0, JESD220-3A HPB 2.0):
//! what the device does with HPB READ (F8h), HPB READ BUFFER (F9h, buffer 01h) and HPB
//! WRITE BUFFER (FAh, buffers 01h/03h), and in device control mode which regions it asks
//! the host to activate or inactivate.
//!
//! ```text
//!  HPB READ (LBA, entry of the first block) ─▶ entry still the block's current L2P entry?
//!        yes ─▶ no map lookup for that block (entry check on the controller)
//!        no  ─▶ normal path: map cache, or the map segment read from NAND on a miss
//!  READ BUFFER (region, subregion) ─▶ the map segments of the subregion (cache or NAND)
//!        ─▶ entries × 8 B to the host (DATA IN)
//!  plain READ of an HPB-eligible length ─▶ count per subregion ─▶ threshold reached:
//!        hint "activate (region, subregion)"; the device's own active set full:
//!        hint "inactivate" its least recently read region ─▶ hints ride on the next
//!        RESPONSE UPIUs, at most 2 activations + 2 inactivations each
//! ```
//!
//! Sources (docs/ufs-hpb.md): descriptor fields and sizes (§2, §3); the entry check
//! (§11: the device "can access the physical block in NAND directly without searching
//! and uploading L2P mapping table"; Samsung US11775423B2 compares a signature carried
//! in the entry with stored signature information and uses the address when they
//! match); the hint format (§8: ≤ 2 activations, ≤ 2 inactivations per response).
//!
//! Inferences and estimates (no public firmware description exists):
//! - Entry check: the device honours the entry when it is still the block's current
//!   mapping (the signature of the patents tells it so without the map); a stale entry
//!   (the data moved by a host write the host had not yet seen, by GC, or a discard)
//!   falls back to the normal path. The simulator compares the entry with the FTL's
//!   current entry: exactly what the signature check decides.
//! - An HPB READ longer than one block (HPB 2.0 after the 5.15 pre-request removal)
//!   carries only the first block's entry: the device uses it for the first block and
//!   looks the others up as for a plain READ.
//! - READ BUFFER reads the subregion's map through the device's map cache (a segment
//!   not cached is read from NAND and cached), then converts it into 8-byte HPB entries
//!   (firmware per command plus per 4 KiB of entries).
//! - Device control policy: `activation_reads` plain READs of an eligible length to a
//!   subregion since it was last hinted make the device hint it (a subregion the host
//!   holds but has dirtied gets plain READs too, so it is re-hinted and reloaded, as
//!   the kernel's comment on re-requested subregions describes); the device keeps its
//!   own view of the active regions, at most `max_active_regions` minus the pinned
//!   ones, and when a new region would exceed it, hints the inactivation of the one
//!   it served least recently (by HPB READs and plain reads alike).
//!
//! Units: ns, bytes; L2P entries are the FTL's `Ppa` values.

use crate::config::{bytes_field, ns_field, ConfigError};
use serde::Deserialize;
use std::collections::VecDeque;

/// One HPB entry per 4 KiB logical block (ufshpb.h HPB_ENTRY_SIZE).
pub const HPB_ENTRY_BYTES: u64 = 8;
/// SCSI operation codes of HPB (ufshpb.h UFSHPB_READ, _READ_BUFFER, _WRITE_BUFFER).
pub const HPB_READ: u8 = 0xF8;
pub const HPB_READ_BUFFER: u8 = 0xF9;
pub const HPB_WRITE_BUFFER: u8 = 0xFA;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpbVersion {
    /// wHPBVersion 0x0100: HPB READ of one 4 KiB block only.
    V1,
    /// wHPBVersion 0x0200: HPB READ up to bMAX_DATA_SIZE_FOR_HPB_SINGLE_CMD.
    V2,
}

/// Who decides which regions are active (bHPBControl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpbControl {
    /// 1: the device hints activations and inactivations in responses.
    Device,
    /// 0: the host counts reads and activates; the device only answers (HPB 2.0).
    Host,
}

/// The `[hpb]` section of a UFS device preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawHpb {
    /// wHPBVersion: "1.0" or "2.0".
    pub version: Option<String>,
    /// 512 B × 2^bHPBRegionSize, e.g. "16MiB".
    pub region_size: Option<String>,
    /// 512 B × 2^bHPBSubRegionSize, e.g. "4MiB".
    pub subregion_size: Option<String>,
    /// wLUMaxActiveHPBRegions of the (one) HPB logical unit.
    pub max_active_regions: Option<u32>,
    /// wHPBPinnedRegionStartIdx and wNumHPBPinnedRegions.
    pub pinned_start: Option<u32>,
    pub pinned_count: Option<u32>,
    /// HPB 2.0: the largest HPB READ, bMAX_DATA_SIZE_FOR_HPB_SINGLE_CMD (4KiB..1MiB).
    pub max_single_cmd: Option<String>,
    /// Controller time to check an HPB READ's entry (replaces the map lookup).
    pub entry_check: Option<String>,
    /// Device control mode: plain READs of a subregion before the device hints it.
    pub activation_reads: Option<u32>,
}

/// The device's HPB descriptors and policy, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpbDeviceConfig {
    pub version: HpbVersion,
    /// bHPBControl as the running driver sets it (see `sim`: the driver chooses).
    pub control: HpbControl,
    pub region_bytes: u64,
    pub subregion_bytes: u64,
    pub max_active_regions: u32,
    pub pinned_start: u32,
    pub pinned_count: u32,
    /// HPB READ length limit in 4 KiB blocks as the host derives it: 1 for HPB 1.0;
    /// min(attribute + 1, 255) for 2.0 (ufshpb.c, "Use a correct max multi chunk").
    pub max_read_blocks: u32,
    pub entry_check_ns: u64,
    pub activation_reads: u32,
}

impl HpbDeviceConfig {
    pub fn entries_per_region(&self) -> u32 {
        (self.region_bytes / 4096) as u32
    }
    pub fn entries_per_subregion(&self) -> u32 {
        (self.subregion_bytes / 4096) as u32
    }
    pub fn subregions_per_region(&self) -> u32 {
        (self.region_bytes / self.subregion_bytes) as u32
    }
    /// Regions of an LU of `lpns` 4 KiB blocks (the last may be short).
    pub fn regions(&self, lpns: u32) -> u32 {
        lpns.div_ceil(self.entries_per_region())
    }
    /// Subregions of an LU of `lpns` blocks (the last may be short).
    pub fn subregions(&self, lpns: u32) -> u32 {
        lpns.div_ceil(self.entries_per_subregion())
    }
}

pub fn validate(h: &RawHpb, capacity_bytes: u64) -> Result<HpbDeviceConfig, ConfigError> {
    let need =
        |v: &Option<String>, f: &str| v.clone().ok_or_else(|| ConfigError::new(f, "is required"));
    let version = match need(&h.version, "version")?.as_str() {
        "1.0" => HpbVersion::V1,
        "2.0" => HpbVersion::V2,
        other => {
            return Err(ConfigError::new(
                "version",
                format!("'{other}' is not an HPB version (1.0, 2.0)"),
            ))
        }
    };
    let pow2 = |f: &str, s: String| -> Result<u64, ConfigError> {
        let b = bytes_field(f, &s)?;
        if b < 4096 || !b.is_power_of_two() {
            return Err(ConfigError::new(
                f,
                format!("{s} must be 512 B × 2^n and at least 4 KiB (one HPB entry)"),
            ));
        }
        Ok(b)
    };
    let region_bytes = pow2("region_size", need(&h.region_size, "region_size")?)?;
    let subregion_bytes = pow2("subregion_size", need(&h.subregion_size, "subregion_size")?)?;
    if subregion_bytes > region_bytes {
        return Err(ConfigError::new(
            "subregion_size",
            "is larger than the region (bHPBSubRegionSize must not exceed bHPBRegionSize)",
        ));
    }
    if region_bytes > capacity_bytes {
        return Err(ConfigError::new("region_size", "is larger than the device"));
    }
    let max_active_regions = h
        .max_active_regions
        .ok_or_else(|| ConfigError::new("max_active_regions", "is required"))?;
    if max_active_regions == 0 || max_active_regions > u16::MAX as u32 {
        return Err(ConfigError::new(
            "max_active_regions",
            "must be 1..=65535 (wLUMaxActiveHPBRegions; 0 disables HPB)",
        ));
    }
    let pinned_start = h.pinned_start.unwrap_or(0);
    let pinned_count = h.pinned_count.unwrap_or(0);
    let regions = (capacity_bytes / 4096).div_ceil(region_bytes / 4096);
    if pinned_count >= max_active_regions {
        return Err(ConfigError::new(
            "pinned_count",
            "must be below max_active_regions (the LRU holds the rest)",
        ));
    }
    if pinned_count > 0 && (pinned_start as u64 + pinned_count as u64) > regions {
        return Err(ConfigError::new(
            "pinned_start",
            format!("pinned regions run past the LU's {regions} regions"),
        ));
    }
    let max_read_blocks = match (version, &h.max_single_cmd) {
        (HpbVersion::V1, None) => 1,
        (HpbVersion::V1, Some(_)) => {
            return Err(ConfigError::new(
                "max_single_cmd",
                "is an HPB 2.0 attribute; HPB 1.0 reads are one 4 KiB block",
            ))
        }
        (HpbVersion::V2, None) => {
            return Err(ConfigError::new(
                "max_single_cmd",
                "is required for HPB 2.0 (bMAX_DATA_SIZE_FOR_HPB_SINGLE_CMD)",
            ))
        }
        (HpbVersion::V2, Some(s)) => {
            let b = bytes_field("max_single_cmd", s)?;
            if b % 4096 != 0 || !(4096..=1 << 20).contains(&b) {
                return Err(ConfigError::new(
                    "max_single_cmd",
                    format!("{s} must be 4KiB..1MiB in 4 KiB steps (attribute 00h..FFh)"),
                ));
            }
            // attribute = blocks − 1; the driver's limit is min(attribute + 1, 255).
            ((b / 4096) as u32).min(255)
        }
    };
    let entry_check_ns = ns_field("entry_check", &need(&h.entry_check, "entry_check")?)?;
    let activation_reads = h
        .activation_reads
        .ok_or_else(|| ConfigError::new("activation_reads", "is required"))?;
    if activation_reads == 0 {
        return Err(ConfigError::new("activation_reads", "must be at least 1"));
    }
    Ok(HpbDeviceConfig {
        version,
        control: HpbControl::Device,
        region_bytes,
        subregion_bytes,
        max_active_regions,
        pinned_start,
        pinned_count,
        max_read_blocks,
        entry_check_ns,
        activation_reads,
    })
}

/// The HPB sense data of one RESPONSE UPIU (`utp_hpb_rsp`, hpb_op 1): at most two
/// subregions to activate and two regions to inactivate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HpbHints {
    pub act: [(u16, u16); 2],
    pub act_n: u8,
    pub inact: [u16; 2],
    pub inact_n: u8,
}

impl HpbHints {
    pub fn is_empty(&self) -> bool {
        self.act_n == 0 && self.inact_n == 0
    }
    pub fn activations(&self) -> &[(u16, u16)] {
        &self.act[..self.act_n as usize]
    }
    pub fn inactivations(&self) -> &[u16] {
        &self.inact[..self.inact_n as usize]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    Act(u32),
    Inact(u32),
}

const NONE: u32 = u32::MAX;

/// The device's HPB state.
pub struct HpbDevice {
    pub cfg: HpbDeviceConfig,
    entries_per_srgn: u32,
    srgns_per_rgn: u32,
    /// Plain eligible READs per subregion since it was last hinted.
    reads: Vec<u16>,
    /// The subregion has an activation hint waiting to go out.
    hinted: Vec<bool>,
    /// The device's view: region active at the host (hinted, or pinned).
    active: Vec<bool>,
    /// Last time each region was served (a read touched it), for the inactivation choice.
    last_use: Vec<u64>,
    active_n: u32,
    pending: VecDeque<Hint>,
    clock: u64,
}

impl HpbDevice {
    pub fn new(cfg: HpbDeviceConfig, lpns: u32) -> HpbDevice {
        let rgns = cfg.regions(lpns) as usize;
        let srgns = cfg.subregions(lpns) as usize;
        let mut d = HpbDevice {
            cfg,
            entries_per_srgn: cfg.entries_per_subregion(),
            srgns_per_rgn: cfg.subregions_per_region(),
            reads: vec![0; srgns],
            hinted: vec![false; srgns],
            active: vec![false; rgns],
            last_use: vec![0; rgns],
            active_n: 0,
            pending: VecDeque::new(),
            clock: 0,
        };
        for r in cfg.pinned_start..cfg.pinned_start + cfg.pinned_count {
            d.active[r as usize] = true;
        }
        d
    }

    fn pinned(&self, rgn: u32) -> bool {
        rgn >= self.cfg.pinned_start && rgn < self.cfg.pinned_start + self.cfg.pinned_count
    }

    /// A read (plain or HPB) served blocks `first..end`: the regions were used now.
    /// A plain READ of an eligible length counts toward its subregions' activation.
    pub fn note_read(&mut self, first: u32, end: u32, plain: bool) {
        self.clock += 1;
        let eps = self.entries_per_srgn;
        let eligible = end - first <= self.cfg.max_read_blocks;
        let (s0, s1) = (first / eps, (end - 1) / eps);
        for s in s0..=s1 {
            let rgn = s / self.srgns_per_rgn;
            self.last_use[rgn as usize] = self.clock;
            if !plain || !eligible || self.cfg.control != HpbControl::Device {
                continue;
            }
            let c = &mut self.reads[s as usize];
            *c = c.saturating_add(1);
            if *c as u32 >= self.cfg.activation_reads && !self.hinted[s as usize] {
                self.reads[s as usize] = 0;
                self.hint_activation(s);
            }
        }
    }

    fn hint_activation(&mut self, srgn: u32) {
        let rgn = srgn / self.srgns_per_rgn;
        if !self.active[rgn as usize] {
            let cap = self.cfg.max_active_regions - self.cfg.pinned_count;
            if self.active_n >= cap {
                // Make room: the active region served least recently.
                let mut victim = NONE;
                let mut oldest = u64::MAX;
                for (r, &a) in self.active.iter().enumerate() {
                    let r = r as u32;
                    if a && !self.pinned(r) && r != rgn && self.last_use[r as usize] < oldest {
                        oldest = self.last_use[r as usize];
                        victim = r;
                    }
                }
                if victim != NONE {
                    self.active[victim as usize] = false;
                    self.active_n -= 1;
                    self.pending.push_back(Hint::Inact(victim));
                }
            }
            self.active[rgn as usize] = true;
            self.active_n += 1;
        }
        self.hinted[srgn as usize] = true;
        self.pending.push_back(Hint::Act(srgn));
    }

    /// The host loaded `srgn` (READ BUFFER served): its hint is answered.
    pub fn note_loaded(&mut self, srgn: u32) {
        self.hinted[srgn as usize] = false;
        self.reads[srgn as usize] = 0;
    }

    /// WRITE BUFFER 01h (one region) or 03h (all, `None`): the host dropped them.
    pub fn inactivate(&mut self, rgn: Option<u32>) {
        let rgns = match rgn {
            Some(r) => r..r + 1,
            None => 0..self.active.len() as u32,
        };
        for r in rgns {
            if self.active[r as usize] && !self.pinned(r) {
                self.active[r as usize] = false;
                self.active_n -= 1;
            }
        }
    }

    /// Takes the hints for the next RESPONSE UPIU: at most 2 + 2, in the order they
    /// were decided.
    pub fn take_hints(&mut self) -> Option<HpbHints> {
        if self.pending.is_empty() {
            return None;
        }
        let mut h = HpbHints::default();
        let mut rest = VecDeque::new();
        while let Some(x) = self.pending.pop_front() {
            match x {
                Hint::Act(s) if h.act_n < 2 => {
                    let rgn = s / self.srgns_per_rgn;
                    h.act[h.act_n as usize] = (rgn as u16, (s % self.srgns_per_rgn) as u16);
                    h.act_n += 1;
                }
                Hint::Inact(r) if h.inact_n < 2 => {
                    h.inact[h.inact_n as usize] = r as u16;
                    h.inact_n += 1;
                }
                other => rest.push_back(other),
            }
            if h.act_n == 2 && h.inact_n == 2 {
                break;
            }
        }
        rest.append(&mut self.pending);
        self.pending = rest;
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(max_active: u32, reads: u32) -> HpbDeviceConfig {
        HpbDeviceConfig {
            version: HpbVersion::V1,
            control: HpbControl::Device,
            region_bytes: 16 << 20,
            subregion_bytes: 4 << 20,
            max_active_regions: max_active,
            pinned_start: 0,
            pinned_count: 0,
            max_read_blocks: 1,
            entry_check_ns: 1000,
            activation_reads: reads,
        }
    }

    #[test]
    fn hints_go_out_at_most_two_plus_two_per_response() {
        // 1 GiB LU, 64 regions of 4 subregions; 2 regions may be active.
        let mut d = HpbDevice::new(cfg(2, 1), 1 << 18);
        for s in 0..12u32 {
            // One eligible plain read in every subregion of regions 0, 1, 2.
            let lpn = s * 1024;
            d.note_read(lpn, lpn + 1, true);
        }
        // 12 activations; region 2 needs room: region 0 (least recently read) goes.
        let mut acts = 0;
        let mut inacts = 0;
        while let Some(h) = d.take_hints() {
            assert!(h.act_n <= 2 && h.inact_n <= 2);
            acts += h.act_n as u32;
            inacts += h.inact_n as u32;
        }
        assert_eq!((acts, inacts), (12, 1));
    }

    #[test]
    fn long_reads_and_hpb_reads_do_not_count_toward_activation() {
        let mut d = HpbDevice::new(cfg(8, 2), 1 << 18);
        d.note_read(0, 2, true); // 8 KiB: not eligible in HPB 1.0
        d.note_read(0, 1, false); // an HPB READ
        d.note_read(0, 1, true);
        assert!(d.take_hints().is_none());
        d.note_read(0, 1, true);
        let h = d.take_hints().unwrap();
        assert_eq!(h.activations(), &[(0, 0)]);
        // Not hinted again before the host loads it.
        d.note_read(0, 1, true);
        d.note_read(0, 1, true);
        assert!(d.take_hints().is_none());
        d.note_loaded(0);
        d.note_read(0, 1, true);
        d.note_read(0, 1, true);
        assert_eq!(d.take_hints().unwrap().activations(), &[(0, 0)]);
    }
}
