//! Device presets: `RawDeviceConfig` (TOML, strings with units) → `validate` →
//! `DeviceConfig` (typed, checked). Also `DeviceConfig::ideal`, a device with a fixed
//! service time and no NAND, for analytic tests of the host side.
//!
//! Units: times in ns, sizes in bytes, rates in bytes/s (all integers).

use super::gc_policy::GcPacing;
use crate::config::{bytes_field, ns_field, rate_field, ConfigError};
use crate::engine::{transfer_ns, NS_PER_MS};
use serde::Deserialize;

/// The FTL maps logical 4 KiB units (LPNs); every size is a multiple of it.
pub const LPN_BYTES: u64 = 4096;
/// The host addresses 512-byte sectors.
pub const SECTOR_BYTES: u64 = 512;
pub const SECTORS_PER_LPN: u64 = LPN_BYTES / SECTOR_BYTES;

// ---------------------------------------------------------------- raw (TOML) side

/// A device preset as written in `presets/devices/*.toml`. Every value is a string with
/// its unit ("60us", "16KiB", "400MB/s") except counts. Every field is required;
/// they are `Option`s so that `validate` can name a missing one by its dotted path.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDeviceConfig {
    /// Preset name, e.g. "emmc51-hs400-32g".
    pub name: Option<String>,
    /// Always "device" for a device preset.
    pub kind: Option<String>,
    /// One line saying what the device is and what it is calibrated against.
    pub description: Option<String>,
    /// Host interface: "emmc" (later "ufs", "sd").
    pub interface: Option<String>,
    /// The fastest bus speed mode the card or eMMC supports (optional; absent: any the
    /// host offers). eMMC: "legacy", "hs52", "ddr52", "hs200", "hs400"; SD: "default-speed",
    /// "high-speed", "sdr50", "ddr50", "sdr104"; UFS: its fastest HS gear, "hs-g1" ..
    /// "hs-g5". The host runs the slower of its own mode and this one (`CardBusMode`;
    /// UFS: the driver's link, driver/ufs/link.rs).
    pub bus_mode: Option<String>,
    /// UFS: bQueueDepth of the device descriptor, 1-256 (optional; required by
    /// `ufs-mcq`).
    pub queue_depth: Option<u32>,
    /// The host presets the device goes with (the board it was measured on, or one of
    /// its class), first the one `--device NAME` alone runs it on; optional.
    pub hosts: Option<Vec<String>>,
    /// The host drivers that run it on those hosts, first the one taken when the host's
    /// own default does not fit the device; optional.
    pub drivers: Option<Vec<String>>,
    pub geometry: Option<RawGeometry>,
    pub nand: Option<RawNand>,
    pub controller: Option<RawController>,
    pub map_cache: Option<RawMapCache>,
    pub write_buffer: Option<RawWriteBuffer>,
    pub ftl: Option<RawFtl>,
    /// eMMC erase parameters (`[ext_csd]`); optional, required by trims on an eMMC.
    pub ext_csd: Option<RawExtCsd>,
    /// UFS Block Limits VPD page (`[block_limits]`); optional, required by trims on UFS.
    pub block_limits: Option<RawBlockLimits>,
    /// UFS Host Performance Booster descriptors and policy (`[hpb]`); optional, required
    /// by the HPB drivers (`ufs-hpb`, `ufs-hpb-hcm`).
    pub hpb: Option<super::hpb::RawHpb>,
    /// UFS WriteBooster (`[write_booster]`): the SLC write buffer; optional.
    pub write_booster: Option<super::write_booster::RawWriteBooster>,
    /// Allocation units (`[allocation_unit]`): required with `ftl.kind =
    /// "allocation-unit"`, refused otherwise.
    pub allocation_unit: Option<super::allocation_unit::RawAllocationUnit>,
    /// Page types of the cells (`[page_types]`, `nand_timing`); optional.
    pub page_types: Option<super::nand_timing::RawPageTypes>,
    /// Read retry (`[read_retry]`, `nand_timing`); optional.
    pub read_retry: Option<super::nand_timing::RawReadRetry>,
    /// The device's wear at the start of the run (`[wear]`, `nand_timing`); optional.
    pub wear: Option<super::nand_timing::RawWear>,
    /// The declared estimates (`config/estimates.rs`), read and checked there.
    pub estimates: Option<toml::Value>,
}

/// The eMMC registers the Linux MMC core reads for discards (mmc.c mmc_decode_csd,
/// mmc_decode_ext_csd; core.c mmc_init_erase, mmc_calc_max_discard): `[ext_csd]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawExtCsd {
    /// EXT_CSD[175] ERASE_GROUP_DEF bit 0 as Linux reads it (0 or 1): 1 selects the
    /// high-capacity erase groups and timeouts.
    pub erase_group_def: Option<u32>,
    /// EXT_CSD[224] HC_ERASE_GRP_SIZE: the high-capacity erase group in 512 KiB units.
    pub hc_erase_grp_size: Option<u32>,
    /// EXT_CSD[223] ERASE_TIMEOUT_MULT: an ERASE's timeout per erase group, × 300 ms.
    pub erase_timeout_mult: Option<u32>,
    /// EXT_CSD[232] TRIM_MULT: a TRIM's or DISCARD's timeout per erase group, × 300 ms.
    pub trim_mult: Option<u32>,
    /// CSD ERASE_GRP_SIZE (5 bits): with ERASE_GRP_MULT, the erase group used while
    /// ERASE_GROUP_DEF is 0: (size + 1) × (mult + 1) sectors.
    pub csd_erase_grp_size: Option<u32>,
    /// CSD ERASE_GRP_MULT (5 bits).
    pub csd_erase_grp_mult: Option<u32>,
}

/// The UFS logical unit's Block Limits VPD page (B0h) as the SCSI disk driver reads it
/// (sd.c sd_read_block_limits): `[block_limits]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawBlockLimits {
    /// MAXIMUM UNMAP LBA COUNT (bytes 20-23), in logical blocks, 1..=FFFFFFFFh (0 means
    /// UNMAP is not implemented: the disk driver would use WRITE SAME, not modelled).
    pub max_unmap_lba_count: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawGeometry {
    /// User capacity the host sees (eMMC SEC_COUNT × 512), e.g. "31268536320B".
    pub capacity: Option<String>,
    /// Independent NAND channels (buses) from the controller.
    pub channels: Option<u32>,
    /// Dies (chip enables / LUNs) sharing each channel.
    pub dies_per_channel: Option<u32>,
    /// Planes per die; a program unit is one page on every plane (multi-plane).
    pub planes_per_die: Option<u32>,
    /// NAND page size (data area), a multiple of 4 KiB, e.g. "16KiB".
    pub page_size: Option<String>,
    /// Pages per (single-plane) erase block.
    pub pages_per_block: Option<u32>,
    /// Erase blocks per plane; raw capacity = channels × dies × planes × blocks × pages × page.
    pub blocks_per_plane: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawNand {
    /// Array read time tR (page to page register), e.g. "60us".
    pub t_read: Option<String>,
    /// Page program time tPROG (register to array), e.g. "700us".
    pub t_prog: Option<String>,
    /// Block erase time tBERS, e.g. "3.5ms".
    pub t_erase: Option<String>,
    /// Channel (ONFI/Toggle) data rate, e.g. "400MB/s" for Toggle DDR 400 MT/s × 8 bit.
    pub channel_rate: Option<String>,
    /// Cache program (PROGRAM PAGE CACHE, 80h-15h): the die takes the next row's data
    /// into its cache register while the previous row programs, and starts programming
    /// it as soon as the previous program ends (within one block). Optional: absent =
    /// false (every program waits for the die, then transfers its data, then programs).
    pub cache_program: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawController {
    /// Firmware time per command (decode, dispatch, status), e.g. "15us".
    pub fw_per_command: Option<String>,
    /// Additional firmware time per 4 KiB of data in the command, e.g. "1us".
    pub fw_per_4kib: Option<String>,
    /// Firmware time a write command takes beyond `fw_per_command`: its FTL work (the
    /// L2P update, block allocation and write-buffer bookkeeping), which no other value
    /// costs. Optional (page-mapped FTL): absent = 0.
    pub fw_per_write: Option<String>,
    /// Whether a read command whose page a die's page register still holds (from an
    /// earlier command, with no program, erase or map read on the die since) is served
    /// from the register without an array read (tR). Firmware-specific.
    pub reuse_page_register: Option<bool>,
    /// How far an SD card reads ahead of an open multiple-block read (CMD18) while the
    /// host's clock is stopped between requests (the SD specification allows it; the
    /// card's buffer bounds it), e.g. "64KiB": a continuation finds that much of its
    /// data already read, and a CMD12 that ends the stream leaves the dies busy with
    /// the read-ahead already started. Optional: absent = the whole next request is
    /// read ahead and an ended read-ahead costs nothing.
    pub read_ahead: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawMapCache {
    /// L2P entries per map segment (one map page in NAND), e.g. 4096.
    pub entries_per_segment: Option<u32>,
    /// Size of one L2P entry, e.g. "4B".
    pub entry_size: Option<String>,
    /// Controller SRAM given to cached map segments, e.g. "1MiB".
    pub size: Option<String>,
    /// Controller time to look an entry up in a cached segment, e.g. "1us".
    pub t_lookup: Option<String>,
    /// Most cached segments that may be dirty: past it, the oldest dirty segment is
    /// written back to NAND (dirty segments are also written back when evicted). A count
    /// of segments, at least 1; the cache's size in segments means "only on eviction".
    pub dirty_limit: Option<u32>,
    /// Array read time of a map page (tR of the blocks the map lives in), e.g. "30us"
    /// where firmware keeps the map in SLC-mode blocks of a TLC die (one sense level
    /// against the TLC page's two or three). Optional: absent = nand.t_read (the map
    /// in blocks like the data's).
    pub t_read: Option<String>,
    /// Program time of a map page (likewise), e.g. "250us". Optional: absent =
    /// nand.t_prog.
    pub t_prog: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWriteBuffer {
    /// Write buffer capacity (SRAM/DRAM), a multiple of 4 KiB, e.g. "1MiB".
    pub size: Option<String>,
    /// Rate at which the controller moves host data into the buffer, e.g. "800MB/s".
    pub copy_rate: Option<String>,
    /// Whether a write of an LPN still waiting in the buffer overwrites it in place
    /// (only the newest copy is programmed) or takes a new slot (every write is programmed).
    pub coalesce: Option<bool>,
    /// "write-back" (default): a write is done once its data is in the buffer (a volatile
    /// cache the host flushes). "write-through": a write is done only once its data is
    /// programmed (an eMMC with CACHE_CTRL off, or firmware that programs before it
    /// releases busy): no volatile cache, so a flush programs nothing (an eMMC host's
    /// flush request sends no command; a UFS host sends none).
    pub mode: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawFtl {
    /// "page-mapped" (default: `device/page_mapped.rs`) or "allocation-unit"
    /// (`device/allocation_unit.rs`, with an `[allocation_unit]` section; no
    /// `[map_cache]`, `[write_buffer]` or `gc_threshold_blocks`).
    pub kind: Option<String>,
    /// Garbage collection starts on a die when its free blocks fall below this (≥ 2).
    pub gc_threshold_blocks: Option<u32>,
    /// How GC moves a valid page: "copyback" (on-die, no channel transfer) or
    /// "controller" (read out over the channel and written back in).
    pub gc_copy: Option<String>,
    /// Foreground housekeeping (`device/housekeeping.rs`): data the firmware moves on a
    /// die, inside the busy of the write that made it open a new host block ("0B" or
    /// absent: none).
    pub housekeeping_move: Option<String>,
    /// GC paced by host writes (`device/gc_policy.rs`), with `gc_slice`: below
    /// `gc_threshold_blocks` a host row waits for the GC copies it owes, at most
    /// `gc_slice`; below this many free blocks (critical) it waits for all of them.
    /// Unset: GC is never paced and host rows never wait for it.
    pub gc_urgent_blocks: Option<u32>,
    /// The longest a host row waits for a paced GC slice (bBackgroundOpsTermLat, a
    /// multiple of 10 ms).
    pub gc_slice: Option<String>,
}

// ---------------------------------------------------------------- typed side

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    Emmc,
    Ufs,
    Sd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcCopy {
    /// On-die copyback: tR + tPROG on the die, nothing on the channel.
    Copyback,
    /// Through the controller: tR, channel out, channel in, tPROG.
    Controller,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConfig {
    pub name: String,
    pub description: String,
    pub interface: Interface,
    /// User capacity in bytes (a multiple of 512).
    pub capacity_bytes: u64,
    pub model: DeviceModel,
    /// eMMC erase registers (`[ext_csd]`), if the preset gives them.
    pub ext_csd: Option<ExtCsdErase>,
    /// UFS Block Limits VPD values (`[block_limits]`), if the preset gives them.
    pub block_limits: Option<UfsBlockLimits>,
    /// UFS HPB (`[hpb]`), if the device supports it. The simulation clears it when the
    /// driver does not use HPB, and sets its control mode from the driver.
    pub hpb: Option<super::hpb::HpbDeviceConfig>,
    /// UFS WriteBooster (`[write_booster]`), if the device has it; its flags are set by
    /// the driver (`driver::configure_device`), off until then.
    pub write_booster: Option<super::write_booster::WriteBoosterConfig>,
    /// The fastest bus mode the device supports (`bus_mode`), if the preset limits it.
    pub bus_mode: Option<CardBusMode>,
    /// UFS: the fastest M-PHY HS gear the device supports (`bus_mode = "hs-g4"`), if the
    /// preset limits it; the link runs the slower of it and the host's gear.
    pub ufs_max_gear: Option<u32>,
    /// UFS: the device descriptor's bQueueDepth (`queue_depth`), if the preset gives it:
    /// commands the device queues (MCQ's depth is the smaller of it and the host's MAC).
    pub ufs_queue_depth: Option<u32>,
    /// The host presets it goes with (`hosts`), first the one picked by default.
    pub hosts: Vec<String>,
    /// The drivers that run it (`drivers`), first the one picked by default.
    pub drivers: Vec<String>,
}

/// A bus speed mode of an eMMC or SD card: what its data lines move and the clock.
/// The rates count the CRC16 and start/end bits of each 512-byte block: on SD's 4 lines
/// a block is 1024 data clocks + 16 + 2 at SDR (1042 clocks; SD Physical Layer), 512 +
/// 16 + 2 at DDR; on eMMC's 8 lines 512 + 16 + 2 at SDR and 256 + 16 + 2 at DDR (JEDEC
/// JESD84: CRC16 per line, on both edges at DDR). HS400 keeps the host preset's own figure
/// (no shipped host runs faster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardBusMode {
    pub name: &'static str,
    pub clock_hz: u64,
    pub data_bytes_per_s: u64,
}

impl CardBusMode {
    /// The mode named `name` on `interface`, if it exists there.
    pub fn parse(interface: Interface, name: &str) -> Option<CardBusMode> {
        // (name, clock, data clocks per 512-byte block incl. CRC and start/end bits)
        let modes: &[(&'static str, u64, u64)] = match interface {
            Interface::Sd => &[
                ("default-speed", 25_000_000, 1042),
                ("high-speed", 50_000_000, 1042),
                ("sdr50", 100_000_000, 1042),
                ("ddr50", 50_000_000, 530),
                ("sdr104", 208_000_000, 1042),
            ],
            Interface::Emmc => &[
                ("legacy", 26_000_000, 530),
                ("hs52", 52_000_000, 530),
                ("ddr52", 52_000_000, 274),
                ("hs200", 200_000_000, 530),
                ("hs400", 200_000_000, 274),
            ],
            Interface::Ufs => &[],
        };
        modes
            .iter()
            .find(|m| m.0 == name)
            .map(|&(name, clock_hz, clocks)| CardBusMode {
                name,
                clock_hz,
                data_bytes_per_s: clock_hz * 512 / clocks,
            })
    }
}

/// The eMMC's erase registers, validated (`[ext_csd]`; field docs on `RawExtCsd`).
/// The model is an eMMC 4.5+ part (EXT_CSD_REV >= 6, SEC_FEATURE_SUPPORT with
/// SEC_GB_CL_EN): TRIM and DISCARD take TRIM_MULT's timeout (mmc_mmc_erase_timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtCsdErase {
    pub erase_group_def: bool,
    pub hc_erase_grp_size: u8,
    pub erase_timeout_mult: u8,
    pub trim_mult: u8,
    pub csd_erase_grp_size: u8,
    pub csd_erase_grp_mult: u8,
}

/// A UFS logical unit's Block Limits VPD page, validated (`[block_limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UfsBlockLimits {
    /// MAXIMUM UNMAP LBA COUNT in 4 KiB logical blocks (at least 1).
    pub max_unmap_lba_count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceModel {
    /// Fixed service times, no NAND: for analytic tests of the host side.
    Ideal(IdealConfig),
    /// Page-mapped FTL over NAND (eMMC 5.x, UFS).
    PageMapped(Box<NandDeviceConfig>),
    /// Allocation-unit FTL over NAND (SD cards, USB sticks, eMMC of ~2011).
    AllocationUnit(Box<super::allocation_unit::AuDeviceConfig>),
}

/// A device that answers every command after a fixed time, one command at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdealConfig {
    /// Command arrival → `ReadReady` (all data ready at once).
    pub read_ns: u64,
    /// Command (with data) arrival → `Done`.
    pub write_ns: u64,
    /// Flush and discard: arrival → `Done`.
    pub other_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NandDeviceConfig {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub page_bytes: u64,
    pub pages_per_block: u32,
    pub blocks_per_plane: u32,
    pub t_read_ns: u64,
    pub t_prog_ns: u64,
    pub t_erase_ns: u64,
    pub channel_bytes_per_s: u64,
    /// Cache program (80h-15h): a second row may be sent to a programming die.
    pub cache_program: bool,
    pub fw_per_command_ns: u64,
    pub fw_per_4kib_ns: u64,
    /// `controller.fw_per_write` (0 when absent).
    pub fw_per_write_ns: u64,
    /// A read command is served from a page register that still holds its page from an
    /// earlier command (no tR); false: every command reads the array (a read of several
    /// planes of one row within a command still shares one tR).
    pub reuse_page_register: bool,
    /// `controller.read_ahead` (None: unbounded, and free when a stream ends).
    pub read_ahead_bytes: Option<u64>,
    pub map_entries_per_segment: u32,
    pub map_entry_bytes: u64,
    pub map_cache_bytes: u64,
    pub map_lookup_ns: u64,
    pub map_dirty_limit: u32,
    /// Array read and program time of map pages (`map_cache.t_read`, `.t_prog`).
    pub map_t_read_ns: u64,
    pub map_t_prog_ns: u64,
    pub write_buffer_bytes: u64,
    pub buffer_copy_bytes_per_s: u64,
    /// Overwrites of data still waiting in the buffer replace it in place.
    pub write_buffer_coalesce: bool,
    /// A write completes only once its data is programmed (no volatile cache).
    pub write_through: bool,
    pub gc_threshold_blocks: u32,
    pub gc_copy: GcCopy,
    /// tR/tPROG by page type, read retry and wear (`nand_timing`).
    pub timing: super::nand_timing::NandTiming,
    /// Bytes moved by foreground housekeeping each time a die opens a new host block
    /// (0: off; see `housekeeping.rs`).
    pub housekeeping_move_bytes: u64,
    /// GC paced by host writes (None: never paced).
    pub gc_pacing: Option<GcPacing>,
}

impl NandDeviceConfig {
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }
    /// 4 KiB slots in one NAND page.
    pub fn slots_per_page(&self) -> u32 {
        (self.page_bytes / LPN_BYTES) as u32
    }
    /// 4 KiB slots in one program unit (a page on every plane of a die).
    pub fn slots_per_row(&self) -> u32 {
        self.slots_per_page() * self.planes_per_die
    }
    /// 4 KiB slots in one multi-plane block (a block on every plane).
    pub fn slots_per_block(&self) -> u32 {
        self.slots_per_row() * self.pages_per_block
    }
    pub fn raw_bytes(&self) -> u64 {
        self.dies() as u64
            * self.planes_per_die as u64
            * self.blocks_per_plane as u64
            * self.pages_per_block as u64
            * self.page_bytes
    }
    pub fn map_segment_bytes(&self) -> u64 {
        self.map_entries_per_segment as u64 * self.map_entry_bytes
    }
    /// Map segments that fit in the map cache (rounded down).
    pub fn map_cache_segments(&self) -> u32 {
        (self.map_cache_bytes / self.map_segment_bytes()) as u32
    }
    pub fn write_buffer_slots(&self) -> u32 {
        (self.write_buffer_bytes / LPN_BYTES) as u32
    }
    /// Channel time to move `bytes` (rounded up).
    pub fn channel_ns(&self, bytes: u64) -> u64 {
        transfer_ns(bytes, self.channel_bytes_per_s)
    }
}

impl DeviceConfig {
    /// The device holds written data in a volatile cache that a flush must program: an
    /// eMMC (CACHE_CTRL on: the kernel enables the cache when CACHE_SIZE > 0) or UFS
    /// device with a write-back buffer, or the ideal device. A write-through device has
    /// none; on eMMC its flush is then a no-op in the driver (mmc_flush_cache sends CMD6
    /// FLUSH_CACHE only while the cache is on).
    pub fn cache_on(&self) -> bool {
        match self.interface {
            Interface::Emmc | Interface::Ufs => match &self.model {
                DeviceModel::PageMapped(n) => n.write_buffer_bytes > 0 && !n.write_through,
                // The ideal device answers a flush after its fixed `other` time.
                DeviceModel::Ideal(_) => true,
                // Allocation-unit devices (cards, eMMC before 4.5) report no cache.
                DeviceModel::AllocationUnit(_) => false,
            },
            Interface::Sd => false,
        }
    }
    /// A device with a fixed service time for every command (reads and writes alike).
    pub fn ideal(capacity_bytes: u64, service_ns: u64) -> DeviceConfig {
        Self::ideal_rw(capacity_bytes, service_ns, service_ns)
    }
    /// A device with fixed read and write service times; flush and discard take 0 ns.
    pub fn ideal_rw(capacity_bytes: u64, read_ns: u64, write_ns: u64) -> DeviceConfig {
        assert!(capacity_bytes.is_multiple_of(SECTOR_BYTES) && capacity_bytes > 0);
        DeviceConfig {
            name: "ideal".into(),
            description: "fixed service time, no NAND".into(),
            interface: Interface::Emmc,
            capacity_bytes,
            model: DeviceModel::Ideal(IdealConfig {
                read_ns,
                write_ns,
                other_ns: 0,
            }),
            ext_csd: None,
            block_limits: None,
            hpb: None,
            write_booster: None,
            bus_mode: None,
            ufs_max_gear: None,
            ufs_queue_depth: None,
            hosts: Vec::new(),
            drivers: Vec::new(),
        }
    }

    /// A small page-mapped device for tests and examples: 2 channels × 1 die × 2 planes,
    /// 16 KiB pages, 16 pages per block, 64 blocks per plane (64 MiB raw), 48 MiB user
    /// capacity, round timings (tR 50 us, tPROG 500 us, tBERS 2 ms, 400 MB/s channel,
    /// 10 us + 1 us/4 KiB firmware, 4 KiB map segments, 16 cached, 1 us lookup,
    /// 256 KiB buffer at 1 GB/s). Fields are public: tests adjust what they need.
    pub fn small_test_device() -> DeviceConfig {
        let nand = NandDeviceConfig {
            channels: 2,
            dies_per_channel: 1,
            planes_per_die: 2,
            page_bytes: 16 * 1024,
            pages_per_block: 16,
            blocks_per_plane: 64,
            t_read_ns: 50_000,
            t_prog_ns: 500_000,
            t_erase_ns: 2_000_000,
            channel_bytes_per_s: 400_000_000,
            cache_program: false,
            fw_per_command_ns: 10_000,
            fw_per_4kib_ns: 1_000,
            fw_per_write_ns: 0,
            reuse_page_register: true,
            read_ahead_bytes: None,
            map_entries_per_segment: 1024,
            map_entry_bytes: 4,
            map_cache_bytes: 16 * 4096,
            map_lookup_ns: 1_000,
            map_dirty_limit: 16,
            map_t_read_ns: 50_000,
            map_t_prog_ns: 500_000,
            write_buffer_bytes: 256 * 1024,
            buffer_copy_bytes_per_s: 1_000_000_000,
            write_buffer_coalesce: true,
            write_through: false,
            gc_threshold_blocks: 3,
            gc_copy: GcCopy::Controller,
            timing: super::nand_timing::NandTiming::uniform(),
            housekeeping_move_bytes: 0,
            gc_pacing: None,
        };
        let capacity_bytes = 48 << 20;
        check_capacity(capacity_bytes, &nand).expect("small test device is consistent");
        DeviceConfig {
            name: "small-test".into(),
            description: "small page-mapped device for tests".into(),
            interface: Interface::Emmc,
            capacity_bytes,
            model: DeviceModel::PageMapped(Box::new(nand)),
            ext_csd: None,
            block_limits: None,
            hpb: None,
            write_booster: None,
            bus_mode: None,
            ufs_max_gear: None,
            ufs_queue_depth: None,
            hosts: Vec::new(),
            drivers: Vec::new(),
        }
    }

    /// The NAND configuration, mutable (tests).
    pub fn nand_mut(&mut self) -> Option<&mut NandDeviceConfig> {
        match &mut self.model {
            DeviceModel::PageMapped(n) => Some(n),
            _ => None,
        }
    }

    /// The allocation-unit configuration, if that is the model.
    pub fn allocation_unit(&self) -> Option<&super::allocation_unit::AuDeviceConfig> {
        match &self.model {
            DeviceModel::AllocationUnit(a) => Some(a),
            _ => None,
        }
    }

    /// Parses and validates a TOML device preset (no file I/O).
    pub fn from_toml_str(text: &str) -> Result<DeviceConfig, ConfigError> {
        let raw: RawDeviceConfig =
            toml::from_str(text).map_err(|e| ConfigError::new("", e.to_string()))?;
        validate(&raw)
    }

    pub fn nand(&self) -> Option<&NandDeviceConfig> {
        match &self.model {
            DeviceModel::PageMapped(n) => Some(n),
            _ => None,
        }
    }
}

/// A required field: missing is an error naming it.
fn req<'a, T>(v: &'a Option<T>, field: &str) -> Result<&'a T, ConfigError> {
    v.as_ref()
        .ok_or_else(|| ConfigError::new(field, "is missing"))
}

fn count_in(field: &str, v: u32, max: u32) -> Result<u32, ConfigError> {
    if v == 0 || v > max {
        return Err(ConfigError::new(
            field,
            format!("{v} is outside the plausible range 1..={max}"),
        ));
    }
    Ok(v)
}

fn positive(field: &str, v: u32) -> Result<u32, ConfigError> {
    if v == 0 {
        return Err(ConfigError::new(field, "must be at least 1"));
    }
    Ok(v)
}

fn time_in(field: &str, s: &str, min_ns: u64, max_ns: u64) -> Result<u64, ConfigError> {
    let v = ns_field(field, s)?;
    if v < min_ns || v > max_ns {
        return Err(ConfigError::new(
            field,
            format!("{s} is outside the plausible range {min_ns}ns..={max_ns}ns"),
        ));
    }
    Ok(v)
}

fn multiple_of_4k(field: &str, s: &str) -> Result<u64, ConfigError> {
    let v = bytes_field(field, s)?;
    if v == 0 || v % LPN_BYTES != 0 {
        return Err(ConfigError::new(
            field,
            format!("{s} must be a non-zero multiple of 4KiB"),
        ));
    }
    Ok(v)
}

/// Checks a raw preset and converts it; errors name the dotted field.
pub fn validate(raw: &RawDeviceConfig) -> Result<DeviceConfig, ConfigError> {
    let kind = req(&raw.kind, "kind")?;
    if kind != "device" {
        return Err(ConfigError::new(
            "kind",
            format!("'{kind}' is not \"device\""),
        ));
    }
    let interface = match req(&raw.interface, "interface")?.as_str() {
        "emmc" => Interface::Emmc,
        "ufs" => Interface::Ufs,
        "sd" => Interface::Sd,
        other => {
            return Err(ConfigError::new(
                "interface",
                format!("'{other}' is not one of emmc, ufs, sd"),
            ))
        }
    };
    let g = req(&raw.geometry, "geometry")?;
    let capacity = req(&g.capacity, "geometry.capacity")?;
    let capacity_bytes = bytes_field("geometry.capacity", capacity)?;
    if capacity_bytes == 0 || capacity_bytes % SECTOR_BYTES != 0 {
        return Err(ConfigError::new(
            "geometry.capacity",
            format!("{capacity} must be a non-zero multiple of 512 bytes"),
        ));
    }
    let channels = count_in(
        "geometry.channels",
        *req(&g.channels, "geometry.channels")?,
        256,
    )?;
    let dies_per_channel = count_in(
        "geometry.dies_per_channel",
        *req(&g.dies_per_channel, "geometry.dies_per_channel")?,
        256,
    )?;
    let planes_per_die = count_in(
        "geometry.planes_per_die",
        *req(&g.planes_per_die, "geometry.planes_per_die")?,
        16,
    )?;
    let page_size = req(&g.page_size, "geometry.page_size")?;
    let page_bytes = multiple_of_4k("geometry.page_size", page_size)?;
    let pages_per_block = positive(
        "geometry.pages_per_block",
        *req(&g.pages_per_block, "geometry.pages_per_block")?,
    )?;
    let blocks_per_plane = positive(
        "geometry.blocks_per_plane",
        *req(&g.blocks_per_plane, "geometry.blocks_per_plane")?,
    )?;
    if page_bytes > 64 * 1024 {
        return Err(ConfigError::new(
            "geometry.page_size",
            format!("{page_size} is larger than any NAND page (64KiB)"),
        ));
    }
    if pages_per_block < 2 {
        return Err(ConfigError::new(
            "geometry.pages_per_block",
            "a block must hold at least 2 pages (the page is larger than the block)",
        ));
    }

    let n = req(&raw.nand, "nand")?;
    let t_read = req(&n.t_read, "nand.t_read")?;
    let t_prog = req(&n.t_prog, "nand.t_prog")?;
    let t_erase = req(&n.t_erase, "nand.t_erase")?;
    let channel_rate = req(&n.channel_rate, "nand.channel_rate")?;
    let t_read_ns = time_in("nand.t_read", t_read, 1_000, 10 * NS_PER_MS)?;
    let t_prog_ns = time_in("nand.t_prog", t_prog, 1_000, 20 * NS_PER_MS)?;
    let t_erase_ns = time_in("nand.t_erase", t_erase, 100_000, 100 * NS_PER_MS)?;
    if t_prog_ns <= t_read_ns {
        return Err(ConfigError::new(
            "nand.t_prog",
            format!("{t_prog} must exceed nand.t_read = {t_read}"),
        ));
    }
    if t_erase_ns < t_prog_ns {
        return Err(ConfigError::new(
            "nand.t_erase",
            format!("{t_erase} must be at least nand.t_prog = {t_prog}"),
        ));
    }
    let channel_bytes_per_s = rate_field("nand.channel_rate", channel_rate)?;
    if !(1_000_000..=10_000_000_000).contains(&channel_bytes_per_s) {
        return Err(ConfigError::new(
            "nand.channel_rate",
            format!("{channel_rate} is outside 1MB/s..10GB/s"),
        ));
    }

    let c = req(&raw.controller, "controller")?;
    let fw_per_command_ns = time_in(
        "controller.fw_per_command",
        req(&c.fw_per_command, "controller.fw_per_command")?,
        0,
        NS_PER_MS,
    )?;
    let fw_per_4kib_ns = time_in(
        "controller.fw_per_4kib",
        req(&c.fw_per_4kib, "controller.fw_per_4kib")?,
        0,
        NS_PER_MS,
    )?;
    let fw_per_write_ns = match &c.fw_per_write {
        None => 0,
        Some(v) => time_in("controller.fw_per_write", v, 0, NS_PER_MS)?,
    };
    // Page types, read retry and wear: the same for either FTL (`nand_timing`).
    let timing = super::nand_timing::validate(
        raw.page_types.as_ref(),
        raw.read_retry.as_ref(),
        raw.wear.as_ref(),
        pages_per_block,
    )?;
    let ftl_kind = raw
        .ftl
        .as_ref()
        .and_then(|f| f.kind.as_deref())
        .unwrap_or("page-mapped");
    match ftl_kind {
        "page-mapped" => {
            if raw.allocation_unit.is_some() {
                return Err(ConfigError::new(
                    "allocation_unit",
                    "is a section of ftl.kind = \"allocation-unit\"; this device's FTL is page-mapped",
                ));
            }
        }
        "allocation-unit" => {
            let nand = super::allocation_unit::AuNand {
                channels,
                dies_per_channel,
                planes_per_die,
                page_bytes,
                pages_per_block,
                blocks_per_plane,
                t_read_ns,
                t_prog_ns,
                t_erase_ns,
                channel_bytes_per_s,
                fw_per_command_ns,
                fw_per_4kib_ns,
                timing,
            };
            let model = super::allocation_unit::validate(raw, nand, capacity_bytes)?;
            for (present, field) in [
                (raw.block_limits.is_some(), "block_limits"),
                (raw.hpb.is_some(), "hpb"),
                (raw.write_booster.is_some(), "write_booster"),
                (c.fw_per_write.is_some(), "controller.fw_per_write"),
            ] {
                if present {
                    return Err(ConfigError::new(
                        field,
                        "is not modelled with an allocation-unit FTL",
                    ));
                }
            }
            let ext_csd = ext_csd_of(raw, interface)?;
            return Ok(DeviceConfig {
                name: crate::config::text_field("name", req(&raw.name, "name")?)?.to_string(),
                description: crate::config::text_field(
                    "description",
                    req(&raw.description, "description")?,
                )?
                .to_string(),
                interface,
                capacity_bytes,
                model: DeviceModel::AllocationUnit(Box::new(model)),
                ext_csd,
                block_limits: None,
                hpb: None,
                write_booster: None,
                bus_mode: bus_mode_of(raw, interface)?,
                ufs_max_gear: None,
                ufs_queue_depth: None,
                hosts: names_of(&raw.hosts, "hosts")?,
                drivers: names_of(&raw.drivers, "drivers")?,
            });
        }
        other => {
            return Err(ConfigError::new(
                "ftl.kind",
                format!("'{other}' is not \"page-mapped\" or \"allocation-unit\""),
            ))
        }
    }
    let reuse_page_register = *req(&c.reuse_page_register, "controller.reuse_page_register")?;
    let read_ahead_bytes = match &c.read_ahead {
        None => None,
        Some(v) => {
            let b = bytes_field("controller.read_ahead", v)?;
            if b % 4096 != 0 || b > 64 << 20 {
                return Err(ConfigError::new(
                    "controller.read_ahead",
                    format!("{v} must be a multiple of 4KiB, at most 64MiB (a card's buffer)"),
                ));
            }
            Some(b)
        }
    };

    let m = req(&raw.map_cache, "map_cache")?;
    let map_entries_per_segment = positive(
        "map_cache.entries_per_segment",
        *req(&m.entries_per_segment, "map_cache.entries_per_segment")?,
    )?;
    let entry_size = req(&m.entry_size, "map_cache.entry_size")?;
    let map_entry_bytes = bytes_field("map_cache.entry_size", entry_size)?;
    if !(1..=16).contains(&map_entry_bytes) {
        return Err(ConfigError::new(
            "map_cache.entry_size",
            format!("{entry_size} is not 1..16 bytes"),
        ));
    }
    let segment_bytes = map_entries_per_segment as u64 * map_entry_bytes;
    if segment_bytes > page_bytes {
        return Err(ConfigError::new(
            "map_cache.entries_per_segment",
            format!(
                "a segment of {segment_bytes} bytes does not fit in one NAND page ({page_bytes})"
            ),
        ));
    }
    let map_size = req(&m.size, "map_cache.size")?;
    let map_cache_bytes = bytes_field("map_cache.size", map_size)?;
    if map_cache_bytes < segment_bytes {
        return Err(ConfigError::new(
            "map_cache.size",
            format!("{map_size} holds no segment of {segment_bytes} bytes"),
        ));
    }
    // Controller SRAM/DRAM beyond 4 GiB is a unit mistake (and would not fit the model's
    // 32-bit segment counts).
    if map_cache_bytes > 4 << 30 {
        return Err(ConfigError::new(
            "map_cache.size",
            format!("{map_size} is absurd for a controller's map cache (over 4GiB)"),
        ));
    }
    let map_lookup_ns = time_in(
        "map_cache.t_lookup",
        req(&m.t_lookup, "map_cache.t_lookup")?,
        0,
        100_000,
    )?;

    let map_dirty_limit = positive(
        "map_cache.dirty_limit",
        *req(&m.dirty_limit, "map_cache.dirty_limit")?,
    )?;
    let map_t_read_ns = match &m.t_read {
        Some(v) => time_in("map_cache.t_read", v, 1_000, 10 * NS_PER_MS)?,
        None => t_read_ns,
    };
    let map_t_prog_ns = match &m.t_prog {
        Some(v) => time_in("map_cache.t_prog", v, 1_000, 20 * NS_PER_MS)?,
        None => t_prog_ns,
    };
    if map_t_prog_ns <= map_t_read_ns {
        return Err(ConfigError::new(
            "map_cache.t_prog",
            format!(
                "{} ns must exceed the map pages' read time ({map_t_read_ns} ns)",
                map_t_prog_ns
            ),
        ));
    }

    let w = req(&raw.write_buffer, "write_buffer")?;
    let wb_size = req(&w.size, "write_buffer.size")?;
    let copy_rate = req(&w.copy_rate, "write_buffer.copy_rate")?;
    let write_buffer_bytes = multiple_of_4k("write_buffer.size", wb_size)?;
    if write_buffer_bytes > 4 << 30 {
        return Err(ConfigError::new(
            "write_buffer.size",
            format!("{wb_size} is absurd for a controller's write buffer (over 4GiB)"),
        ));
    }
    let buffer_copy_bytes_per_s = rate_field("write_buffer.copy_rate", copy_rate)?;
    let write_buffer_coalesce = *req(&w.coalesce, "write_buffer.coalesce")?;
    let write_through = match w.mode.as_deref() {
        None | Some("write-back") => false,
        Some("write-through") => true,
        Some(other) => {
            return Err(ConfigError::new(
                "write_buffer.mode",
                format!("'{other}' is not \"write-back\" or \"write-through\""),
            ))
        }
    };
    if buffer_copy_bytes_per_s < 1_000_000 {
        return Err(ConfigError::new(
            "write_buffer.copy_rate",
            format!("{copy_rate} is below 1MB/s"),
        ));
    }

    let f = req(&raw.ftl, "ftl")?;
    let gc_threshold_blocks = *req(&f.gc_threshold_blocks, "ftl.gc_threshold_blocks")?;
    if gc_threshold_blocks < 2 {
        return Err(ConfigError::new(
            "ftl.gc_threshold_blocks",
            "must be at least 2 (one block is reserved for GC's own copies)",
        ));
    }
    let gc_copy = match req(&f.gc_copy, "ftl.gc_copy")?.as_str() {
        "copyback" => GcCopy::Copyback,
        "controller" => GcCopy::Controller,
        other => {
            return Err(ConfigError::new(
                "ftl.gc_copy",
                format!("'{other}' is not \"copyback\" or \"controller\""),
            ))
        }
    };
    let housekeeping_move_bytes = match &f.housekeeping_move {
        None => 0,
        Some(s) => {
            let v = bytes_field("ftl.housekeeping_move", s)?;
            let block = pages_per_block as u64 * page_bytes * planes_per_die as u64;
            if v % LPN_BYTES != 0 || v > block {
                return Err(ConfigError::new(
                    "ftl.housekeeping_move",
                    format!("{s} must be a multiple of 4KiB, at most one block ({block} bytes)"),
                ));
            }
            v
        }
    };
    let gc_pacing = match (f.gc_urgent_blocks, &f.gc_slice) {
        (None, None) => None,
        (Some(urgent_blocks), Some(slice)) => {
            if urgent_blocks < 1 || urgent_blocks > gc_threshold_blocks {
                return Err(ConfigError::new(
                    "ftl.gc_urgent_blocks",
                    format!("{urgent_blocks} must be 1..=ftl.gc_threshold_blocks = {gc_threshold_blocks}"),
                ));
            }
            // bBackgroundOpsTermLat: 1..=255 units of 10 ms (JESD220G, Device Descriptor).
            let slice_ns = time_in("ftl.gc_slice", slice, 10 * NS_PER_MS, 2550 * NS_PER_MS)?;
            if slice_ns % (10 * NS_PER_MS) != 0 {
                return Err(ConfigError::new(
                    "ftl.gc_slice",
                    format!("{slice} is not a multiple of 10ms (bBackgroundOpsTermLat's unit)"),
                ));
            }
            Some(GcPacing {
                urgent_blocks,
                slice_ns,
            })
        }
        (Some(_), None) => {
            return Err(ConfigError::new(
                "ftl.gc_slice",
                "missing: ftl.gc_urgent_blocks paces GC, which needs the slice bound",
            ))
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "ftl.gc_urgent_blocks",
                "missing: ftl.gc_slice is set, so GC is paced, which needs the urgent floor",
            ))
        }
    };

    let nand = NandDeviceConfig {
        channels,
        dies_per_channel,
        planes_per_die,
        page_bytes,
        pages_per_block,
        blocks_per_plane,
        t_read_ns,
        t_prog_ns,
        t_erase_ns,
        channel_bytes_per_s,
        cache_program: n.cache_program.unwrap_or(false),
        fw_per_command_ns,
        fw_per_4kib_ns,
        fw_per_write_ns,
        reuse_page_register,
        read_ahead_bytes,
        map_entries_per_segment,
        map_entry_bytes,
        map_cache_bytes,
        map_lookup_ns,
        map_dirty_limit,
        map_t_read_ns,
        map_t_prog_ns,
        write_buffer_bytes,
        buffer_copy_bytes_per_s,
        write_buffer_coalesce,
        write_through,
        gc_threshold_blocks,
        gc_copy,
        timing,
        housekeeping_move_bytes,
        gc_pacing,
    };
    check_capacity(capacity_bytes, &nand).map_err(|r| ConfigError::new("geometry.capacity", r))?;
    if write_buffer_bytes < nand.slots_per_row() as u64 * LPN_BYTES {
        return Err(ConfigError::new(
            "write_buffer.size",
            format!(
                "{} is smaller than one program unit (page × planes = {} bytes)",
                wb_size,
                nand.slots_per_row() as u64 * LPN_BYTES
            ),
        ));
    }
    let ext_csd = ext_csd_of(raw, interface)?;
    let block_limits = match &raw.block_limits {
        None => None,
        Some(_) if interface != Interface::Ufs => {
            return Err(ConfigError::new(
                "block_limits",
                "is a UFS (SCSI VPD) section; this device is not UFS",
            ))
        }
        Some(b) => {
            let v = *req(&b.max_unmap_lba_count, "block_limits.max_unmap_lba_count")?;
            let max_unmap_lba_count = u32::try_from(v).map_err(|_| {
                ConfigError::new(
                    "block_limits.max_unmap_lba_count",
                    format!("{v} does not fit the 32-bit VPD field"),
                )
            })?;
            if max_unmap_lba_count == 0 {
                return Err(ConfigError::new(
                    "block_limits.max_unmap_lba_count",
                    "0 (no UNMAP): sd_discard_mode would choose WRITE SAME, which is not modelled",
                ));
            }
            Some(UfsBlockLimits {
                max_unmap_lba_count,
            })
        }
    };
    let hpb = match &raw.hpb {
        None => None,
        Some(_) if interface != Interface::Ufs => {
            return Err(ConfigError::new(
                "hpb",
                "is a UFS feature (Host Performance Booster); this device is not UFS",
            ))
        }
        Some(h) => Some(super::hpb::validate(h, capacity_bytes).map_err(|e| e.within("hpb"))?),
    };
    let write_booster = match &raw.write_booster {
        None => None,
        Some(_) if interface != Interface::Ufs => {
            return Err(ConfigError::new(
                "write_booster",
                "is a UFS feature (JESD220E WriteBooster); this device is not UFS",
            ))
        }
        Some(w) => {
            Some(super::write_booster::validate(w, &nand).map_err(|e| e.within("write_booster"))?)
        }
    };
    Ok(DeviceConfig {
        name: crate::config::text_field("name", req(&raw.name, "name")?)?.to_string(),
        description: crate::config::text_field(
            "description",
            req(&raw.description, "description")?,
        )?
        .to_string(),
        interface,
        capacity_bytes,
        model: DeviceModel::PageMapped(Box::new(nand)),
        ext_csd,
        block_limits,
        hpb,
        write_booster,
        bus_mode: bus_mode_of(raw, interface)?,
        ufs_max_gear: ufs_gear_of(raw, interface)?,
        ufs_queue_depth: queue_depth_of(raw, interface)?,
        hosts: names_of(&raw.hosts, "hosts")?,
        drivers: names_of(&raw.drivers, "drivers")?,
    })
}

/// `hosts` or `drivers`: names, none empty or given twice (whether each names a preset
/// or a driver that fits is the front end's and the simulator's to say).
fn names_of(v: &Option<Vec<String>>, field: &str) -> Result<Vec<String>, ConfigError> {
    let v = v.clone().unwrap_or_default();
    for (i, n) in v.iter().enumerate() {
        if n.trim().is_empty() {
            return Err(ConfigError::new(field, "has an empty name"));
        }
        if v[..i].contains(n) {
            return Err(ConfigError::new(field, format!("names '{n}' twice")));
        }
    }
    Ok(v)
}

/// `bus_mode`, if given: a mode of the device's interface.
fn bus_mode_of(
    raw: &RawDeviceConfig,
    interface: Interface,
) -> Result<Option<CardBusMode>, ConfigError> {
    let Some(name) = &raw.bus_mode else {
        return Ok(None);
    };
    if interface == Interface::Ufs {
        // A UFS link's gear (`ufs_gear_of`).
        return Ok(None);
    }
    CardBusMode::parse(interface, name)
        .map(Some)
        .ok_or_else(|| {
            let known = match interface {
                Interface::Sd => "default-speed, high-speed, sdr50, ddr50, sdr104",
                Interface::Emmc => "legacy, hs52, ddr52, hs200, hs400",
                Interface::Ufs => unreachable!("ufs_gear_of"),
            };
            ConfigError::new(
                "bus_mode",
                format!("'{name}' is not a bus mode of this interface ({known})"),
            )
        })
}

/// UFS `bus_mode`, if given: the device's fastest HS gear, "hs-g1" .. "hs-g5".
fn ufs_gear_of(raw: &RawDeviceConfig, interface: Interface) -> Result<Option<u32>, ConfigError> {
    let Some(name) = raw
        .bus_mode
        .as_ref()
        .filter(|_| interface == Interface::Ufs)
    else {
        return Ok(None);
    };
    match name
        .strip_prefix("hs-g")
        .and_then(|g| g.parse::<u32>().ok())
    {
        Some(g @ 1..=5) => Ok(Some(g)),
        _ => Err(ConfigError::new(
            "bus_mode",
            format!("'{name}' is not a UFS link gear (hs-g1, hs-g2, hs-g3, hs-g4, hs-g5)"),
        )),
    }
}

/// UFS `queue_depth` (bQueueDepth), if given.
fn queue_depth_of(raw: &RawDeviceConfig, interface: Interface) -> Result<Option<u32>, ConfigError> {
    match raw.queue_depth {
        None => Ok(None),
        Some(_) if interface != Interface::Ufs => Err(ConfigError::new(
            "queue_depth",
            "is a UFS device descriptor field (bQueueDepth); this device is not UFS",
        )),
        Some(q @ 1..=256) => Ok(Some(q)),
        Some(q) => Err(ConfigError::new(
            "queue_depth",
            format!("{q} is not 1..=256 (bQueueDepth)"),
        )),
    }
}

/// The `[ext_csd]` section, if any: eMMC devices only.
fn ext_csd_of(
    raw: &RawDeviceConfig,
    interface: Interface,
) -> Result<Option<ExtCsdErase>, ConfigError> {
    match &raw.ext_csd {
        None => Ok(None),
        Some(_) if interface != Interface::Emmc => Err(ConfigError::new(
            "ext_csd",
            "is an eMMC register section; this device is not an eMMC",
        )),
        Some(e) => Ok(Some(validate_ext_csd(e)?)),
    }
}

fn validate_ext_csd(e: &RawExtCsd) -> Result<ExtCsdErase, ConfigError> {
    let erase_group_def = match *req(&e.erase_group_def, "ext_csd.erase_group_def")? {
        0 => false,
        1 => true,
        v => {
            return Err(ConfigError::new(
                "ext_csd.erase_group_def",
                format!("{v} is not 0 or 1"),
            ))
        }
    };
    // A register byte: 0 (no high-capacity erase / no timeout given) is not modelled.
    let byte = |field: &str, v: &Option<u32>| -> Result<u8, ConfigError> {
        let v = *req(v, field)?;
        if !(1..=255).contains(&v) {
            return Err(ConfigError::new(
                field,
                format!("{v} is outside 1..=255 (an EXT_CSD byte; 0 is not modelled)"),
            ));
        }
        Ok(v as u8)
    };
    let five_bits = |field: &str, v: &Option<u32>| -> Result<u8, ConfigError> {
        let v = *req(v, field)?;
        if v > 31 {
            return Err(ConfigError::new(
                field,
                format!("{v} is outside 0..=31 (a 5-bit CSD field)"),
            ));
        }
        Ok(v as u8)
    };
    Ok(ExtCsdErase {
        erase_group_def,
        hc_erase_grp_size: byte("ext_csd.hc_erase_grp_size", &e.hc_erase_grp_size)?,
        erase_timeout_mult: byte("ext_csd.erase_timeout_mult", &e.erase_timeout_mult)?,
        trim_mult: byte("ext_csd.trim_mult", &e.trim_mult)?,
        csd_erase_grp_size: five_bits("ext_csd.csd_erase_grp_size", &e.csd_erase_grp_size)?,
        csd_erase_grp_mult: five_bits("ext_csd.csd_erase_grp_mult", &e.csd_erase_grp_mult)?,
    })
}

/// Capacity must fit the raw NAND with room for GC on every die: each die needs its
/// share of user data plus `gc_threshold_blocks + 2` spare blocks (host and GC open
/// blocks), and physical addresses must fit in 31 bits.
pub fn check_capacity(capacity_bytes: u64, n: &NandDeviceConfig) -> Result<(), String> {
    // In u128: absurd geometries must be reported, not overflow.
    let dies = n.channels as u128 * n.dies_per_channel as u128;
    let block_bytes = n.planes_per_die as u128 * n.pages_per_block as u128 * n.page_bytes as u128;
    let raw = dies * n.blocks_per_plane as u128 * block_bytes;
    if capacity_bytes as u128 > raw {
        return Err(format!(
            "{capacity_bytes} bytes exceeds the raw NAND capacity {raw} bytes"
        ));
    }
    if raw / LPN_BYTES as u128 >= (1 << 31) {
        return Err(format!(
            "raw capacity {raw} bytes exceeds the model's limit of 8 TiB"
        ));
    }
    let user_lpns = capacity_bytes.div_ceil(LPN_BYTES) as u128;
    // Each die may end up holding its round-robin share, rounded up.
    let per_die_slots = user_lpns.div_ceil(dies);
    let per_die_blocks = per_die_slots.div_ceil(block_bytes / LPN_BYTES as u128);
    let spare = n.blocks_per_plane as i128 - per_die_blocks as i128;
    let need = n.gc_threshold_blocks as i128 + 2;
    if spare < need {
        return Err(format!(
            "leaves {spare} spare blocks per die; over-provisioning needs at least \
             ftl.gc_threshold_blocks + 2 = {need}"
        ));
    }
    Ok(())
}
