//! An allocation-unit FTL (SD cards, USB sticks, eMMC of about 2011): the logical space
//! is cut into allocation units (AUs) of several erase blocks each, every logical AU
//! lives in one physical AU, and only a few AUs can be "open" (taking writes) at once.
//!
//! ```text
//!  write ─▶ [controller] fw_per_command + fw_per_4kib·n
//!     │ under small_write_unit? ─▶ small-write log (page-mapped): program, done
//!     │ AU open and at or past its write pointer? ─▶ in place: gap copied from the old
//!     │        AU, whole units programmed, a partial last unit held in controller RAM
//!     │ AU open, write goes backwards (linear order) ─▶ close it, reopen below
//!     │ AU not open: open AUs all taken? ─▶ close the least recently written one
//!     │        (its remaining units copied from the old AU, old AU erased: the stall)
//!     │        ─▶ open: a fresh AU, the units before the write copied from the old one
//!     ▼ done once programmed (no volatile cache beyond the partial unit)
//!  read ─▶ [controller] fw ─▶ AU table entry cached? no ─▶ [die] tR + table page out
//!        ─▶ per page touched: a new row (page × planes) costs tR on its die, a page
//!           of a row already read in this command does not (multi-plane read); every
//!           page touched crosses the channel whole (ECC is decoded per page)
//! ```
//!
//! The mechanisms are those flashbench exposes (docs/flashbench.md, docs/published-results.md
//! §5): the AU size (reads crossing an AU boundary need a second AU table
//! entry), the page and multi-plane pair (reads crossing a page or row boundary move or
//! read more), the open-AU limit (writes to one AU more than the card keeps open close
//! an AU on nearly every write), the small-write buffer (writes under its unit go to a
//! page-mapped log and stay fast until it must be cleaned), and the FAT area (the
//! first AUs take writes in any order without closing).
//!
//! Choices and estimates (no firmware of such a card is public; document any change):
//! - A logical AU has one physical AU from the start (block mapping); a never-written
//!   or fully trimmed AU is "erased": opening it needs no copy, and its AU becomes the
//!   update AU itself. Reads cost NAND time whatever the data (an erased page is read).
//! - Open AUs in `linear` order take writes at or past their write pointer; skipped
//!   slots are copied from the old AU (NAND pages are programmed in order). A write
//!   below the pointer closes the AU and reopens it. Closing copies the rest of the AU
//!   from the old one and erases the old one.
//! - In `any` order (and always in the FAT area) an open AU is page-mapped: each write
//!   is appended to the update AU and programmed at once, its last unit padded. A close
//!   merges it into a fresh AU (every slot copied, both old AUs erased), unless every
//!   write so far continued the previous one from offset 0 in whole units; then the
//!   update AU is completed like a linear one (the log-block FTL's switch merge). FAT
//!   AUs are always open and do not count against the limit.
//! - Data is programmed in units of a page on every plane of a die (a row); the units
//!   of an AU are striped over the dies (unit u on die u mod dies). A linear write that
//!   ends inside a unit leaves that unit in controller RAM (one partial unit per open
//!   AU) until the unit is completed, the AU closed, a flush, or a FUA write.
//! - Reads: a die holds its page register until the page is out (no cache read), so
//!   the next row on the same die waits for the previous page's transfer.
//! - A copy of n units (open, gap, close, merge) is booked per die as n × (tR + tPROG
//!   plus two unit transfers) (through the controller; `gc_copy = "copyback"` drops
//!   the transfers), with the channel booked for all the transfers. It is a closed form
//!   of the pipelined copy, so a GC costs O(dies) work whatever the AU size.
//! - The small-write log: writes of fewer bytes than `small_write_unit` are programmed
//!   at once into the log (whole units, padded); newer data in the log wins over the
//!   AU. When the log is full it is cleaned: every AU with data in it is merged, then
//!   the log AUs are erased.
//! - The AU table: the controller holds the physical AU of the last `table_cache`
//!   logical AUs it used; another costs tR + one page out on die 0 (the table in the
//!   controller's system area).
//! - A discard that covers a whole AU erases it (booked on the dies, the command done
//!   after the firmware time); partial discards only drop small-write log entries.
//! - Every AU closed or merged counts as a GC (`gc_victims`), its copied slots as
//!   `gc_copies`, the time writes waited for them as `write_stall_ns`.
//! - The device reports no volatile cache (cards, eMMC before 4.5): the host sends no
//!   flush; a flush that comes anyway programs the partial units.
//! - Not modelled: NAND timelines (`record_nand` records nothing), wear levelling, bad
//!   blocks, power loss.
//!
//! - NAND times by page type and read retry (`super::nand_timing`): a host read's tR
//!   and a unit's tPROG are those of the row's page type (unit u of an AU is row
//!   u / dies of its die's blocks); a host read first books the retry steps its page
//!   needs, from the AU's erases, `[wear]` and the age of the AU's data (from when the
//!   AU was taken from the free list). Copies (closed form), old-page reads and table
//!   reads use the mean tR and do not retry.
//!
//! Units: ns, bytes; "slot" = 4 KiB logical unit; no random stream (read retries are a
//! hash of the run's seed, the page and its AU's erase count).

use super::config::{GcCopy, LPN_BYTES, SECTORS_PER_LPN};
use super::{DevCommand, DevOp, DevStatus, DeviceStats, Input, Output};
use crate::config::{bytes_field, ConfigError};
use crate::engine::{transfer_ns, FifoResource, Outbox, SimTime};
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};

const NONE: u32 = u32::MAX;
const NO_OPEN: u16 = u16::MAX;

/// The `[allocation_unit]` section of a device preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawAllocationUnit {
    /// Allocation unit size, a whole number of multi-plane erase blocks, e.g. "4MiB".
    pub size: Option<String>,
    /// AUs that can be open (taking writes) at once, besides the FAT area's.
    pub open: Option<u32>,
    /// "linear": an open AU takes writes only at or past its write pointer; "any": in
    /// any order (page-mapped inside the AU).
    pub order: Option<String>,
    /// The first N AUs are managed for random writes (FAT area): always open, any order.
    pub fat_aus: Option<u32>,
    /// AU table entries (logical → physical AU) the controller holds.
    pub table_cache: Option<u32>,
    /// Optional small-write buffer: writes of fewer bytes than this go to the log.
    pub small_write_unit: Option<String>,
    /// The small-write log's capacity, a whole number of AUs.
    pub small_write_buffer: Option<String>,
    /// The unit the small-write log maps: "512B" (sectors: a write never needs old
    /// data), "4KiB" or "page". A write that covers a mapped unit only in part must
    /// merge the rest of it: the old page holding it is read first (read-modify-write).
    /// Optional: absent = "512B".
    pub small_write_map: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuOrder {
    Linear,
    Any,
}

/// The small-write buffer of a device, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallWrite {
    pub unit_bytes: u64,
    pub buffer_bytes: u64,
    /// Sectors of the unit the log maps (`small_write_map`).
    pub map_sectors: u64,
}

/// An allocation-unit device, validated (geometry and timing as the page-mapped one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuDeviceConfig {
    /// Geometry, NAND timing and controller costs.
    pub nand: AuNand,
    pub gc_copy: GcCopy,
    pub au_bytes: u64,
    pub open_aus: u32,
    pub order: AuOrder,
    pub fat_aus: u32,
    pub table_cache: u32,
    pub small_write: Option<SmallWrite>,
}

/// The geometry, NAND timing and controller costs of an AU device, as
/// `config::validate` has checked them for either FTL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuNand {
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
    pub fw_per_command_ns: u64,
    pub fw_per_4kib_ns: u64,
    /// tR/tPROG by page type, read retry and wear (`super::nand_timing`).
    pub timing: super::nand_timing::NandTiming,
}

impl AuDeviceConfig {
    pub fn dies(&self) -> u32 {
        self.nand.channels * self.nand.dies_per_channel
    }
    /// Bytes of one program unit (a page on every plane of a die).
    pub fn unit_bytes(&self) -> u64 {
        self.nand.page_bytes * self.nand.planes_per_die as u64
    }
    /// Bytes of one multi-plane erase block.
    pub fn block_bytes(&self) -> u64 {
        self.unit_bytes() * self.nand.pages_per_block as u64
    }
    pub fn raw_bytes(&self) -> u64 {
        self.block_bytes() * self.nand.blocks_per_plane as u64 * self.dies() as u64
    }
    /// Physical AUs the NAND holds.
    pub fn physical_aus(&self) -> u64 {
        self.raw_bytes() / self.au_bytes
    }
    /// Physical AUs the small-write log takes.
    pub fn log_aus(&self) -> u64 {
        self.small_write
            .map_or(0, |s| s.buffer_bytes / self.au_bytes)
    }
}

/// Checks `[allocation_unit]` and the FTL fields an AU device takes.
pub fn validate(
    raw: &super::RawDeviceConfig,
    nand: AuNand,
    capacity_bytes: u64,
) -> Result<AuDeviceConfig, ConfigError> {
    for (present, field) in [
        (raw.map_cache.is_some(), "map_cache"),
        (raw.write_buffer.is_some(), "write_buffer"),
        (
            raw.controller
                .as_ref()
                .is_some_and(|c| c.reuse_page_register.is_some()),
            "controller.reuse_page_register",
        ),
        (
            raw.ftl
                .as_ref()
                .is_some_and(|f| f.gc_threshold_blocks.is_some()),
            "ftl.gc_threshold_blocks",
        ),
        (
            raw.ftl
                .as_ref()
                .is_some_and(|f| f.gc_urgent_blocks.is_some()),
            "ftl.gc_urgent_blocks",
        ),
        (
            raw.ftl.as_ref().is_some_and(|f| f.gc_slice.is_some()),
            "ftl.gc_slice",
        ),
    ] {
        if present {
            return Err(ConfigError::new(
                field,
                "is a page-mapped FTL setting; this device's ftl.kind is \"allocation-unit\"",
            ));
        }
    }
    let gc_copy = match raw.ftl.as_ref().and_then(|f| f.gc_copy.as_deref()) {
        Some("copyback") => GcCopy::Copyback,
        Some("controller") => GcCopy::Controller,
        Some(other) => {
            return Err(ConfigError::new(
                "ftl.gc_copy",
                format!("'{other}' is not \"copyback\" or \"controller\""),
            ))
        }
        None => return Err(ConfigError::new("ftl.gc_copy", "is missing")),
    };
    let a = raw
        .allocation_unit
        .as_ref()
        .ok_or_else(|| ConfigError::new("allocation_unit", "is missing"))?;
    let need = |v: &Option<u32>, f: &str| {
        v.ok_or_else(|| ConfigError::new(format!("allocation_unit.{f}"), "is missing"))
    };
    let size = a
        .size
        .as_deref()
        .ok_or_else(|| ConfigError::new("allocation_unit.size", "is missing"))?;
    let au_bytes = bytes_field("allocation_unit.size", size)?;
    let mut cfg = AuDeviceConfig {
        nand,
        gc_copy,
        au_bytes,
        open_aus: need(&a.open, "open")?,
        order: match a.order.as_deref() {
            Some("linear") => AuOrder::Linear,
            Some("any") => AuOrder::Any,
            Some(o) => {
                return Err(ConfigError::new(
                    "allocation_unit.order",
                    format!("'{o}' is not \"linear\" or \"any\""),
                ))
            }
            None => return Err(ConfigError::new("allocation_unit.order", "is missing")),
        },
        fat_aus: need(&a.fat_aus, "fat_aus")?,
        table_cache: need(&a.table_cache, "table_cache")?,
        small_write: None,
    };
    let per_die = cfg.block_bytes() * cfg.dies() as u64;
    if au_bytes == 0 || au_bytes % per_die != 0 {
        return Err(ConfigError::new(
            "allocation_unit.size",
            format!(
                "{size} is not a whole number of erase blocks on every die ({per_die} bytes: \
                 page × planes × pages_per_block × dies)"
            ),
        ));
    }
    if !(1..=64).contains(&cfg.open_aus) {
        return Err(ConfigError::new(
            "allocation_unit.open",
            format!("{} is outside 1..=64", cfg.open_aus),
        ));
    }
    if !(1..=1024).contains(&cfg.table_cache) {
        return Err(ConfigError::new(
            "allocation_unit.table_cache",
            format!("{} is outside 1..=1024", cfg.table_cache),
        ));
    }
    match (&a.small_write_unit, &a.small_write_buffer) {
        (None, None) if a.small_write_map.is_some() => {
            return Err(ConfigError::new(
                "allocation_unit.small_write_map",
                "is the small-write log's mapping unit: it needs small_write_unit and small_write_buffer",
            ))
        }
        (None, None) => {}
        (Some(u), Some(b)) => {
            let unit_bytes = bytes_field("allocation_unit.small_write_unit", u)?;
            let buffer_bytes = bytes_field("allocation_unit.small_write_buffer", b)?;
            if unit_bytes < 2 * LPN_BYTES || unit_bytes > au_bytes {
                return Err(ConfigError::new(
                    "allocation_unit.small_write_unit",
                    format!("{u} is outside 8KiB..=the AU size"),
                ));
            }
            if buffer_bytes == 0 || buffer_bytes % au_bytes != 0 {
                return Err(ConfigError::new(
                    "allocation_unit.small_write_buffer",
                    format!("{b} is not a whole number of AUs ({au_bytes} bytes)"),
                ));
            }
            let map_sectors = match a.small_write_map.as_deref() {
                None | Some("512B") => 1,
                Some("4KiB") => SECTORS_PER_LPN,
                Some("page") => cfg.nand.page_bytes / 512,
                Some(other) => {
                    return Err(ConfigError::new(
                        "allocation_unit.small_write_map",
                        format!("'{other}' is not \"512B\", \"4KiB\" or \"page\""),
                    ))
                }
            };
            cfg.small_write = Some(SmallWrite {
                unit_bytes,
                buffer_bytes,
                map_sectors,
            });
        }
        (Some(_), None) => {
            return Err(ConfigError::new(
                "allocation_unit.small_write_buffer",
                "is missing (small_write_unit needs it)",
            ))
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "allocation_unit.small_write_unit",
                "is missing (small_write_buffer needs it)",
            ))
        }
    }
    let logical = capacity_bytes.div_ceil(au_bytes);
    if cfg.fat_aus as u64 > logical {
        return Err(ConfigError::new(
            "allocation_unit.fat_aus",
            format!("{} is more than the device's {logical} AUs", cfg.fat_aus),
        ));
    }
    // Every logical AU has a physical one; each open AU and FAT AU an update AU; the
    // log its AUs; a merge one fresh AU.
    let need_aus = logical + cfg.open_aus as u64 + cfg.fat_aus as u64 + cfg.log_aus() + 1;
    if cfg.physical_aus() < need_aus {
        return Err(ConfigError::new(
            "geometry.capacity",
            format!(
                "{capacity_bytes} bytes in {au_bytes}-byte AUs needs {need_aus} physical AUs \
                 (logical + open + FAT + log + 1); the NAND holds {}",
                cfg.physical_aus()
            ),
        ));
    }
    if cfg.physical_aus() * (au_bytes / LPN_BYTES) >= u32::MAX as u64 {
        return Err(ConfigError::new(
            "geometry.capacity",
            "the raw capacity exceeds the model's limit of 16 TiB",
        ));
    }
    Ok(cfg)
}

/// An open AU: where its new data goes.
#[derive(Clone, Debug)]
struct OpenAu {
    lau: u32,
    /// The update AU (physical).
    pau: u32,
    /// Linear: the next logical slot offset expected; any order: the next physical
    /// slot of the update AU.
    wp: u32,
    /// Slots from here to `wp` are in controller RAM (a partial unit), not programmed.
    ram_from: u32,
    /// Any order: logical slot offset → physical slot offset in `pau` (NONE: not here).
    map: Vec<u32>,
    last_use: u64,
    fat: bool,
    /// Any order: every write so far continued the previous one from offset 0 and
    /// filled whole units, so the update AU holds its slots at their own offsets (a
    /// close then only completes it, as a linear AU's: the log-block FTL's switch
    /// merge).
    in_order: bool,
}

/// Where a slot's newest data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// In controller RAM (a partial unit of an open AU) at this physical slot.
    Ram(u32),
    /// Programmed at this physical slot (`pau × slots_per_au + offset`).
    Nand(u32),
}

impl Loc {
    fn slot(self) -> u32 {
        match self {
            Loc::Ram(p) | Loc::Nand(p) => p,
        }
    }
}

struct Log {
    paus: Vec<u32>,
    /// Next free log position (slot index over `paus`).
    fill: u32,
    cap: u32,
    /// Logical slot → log position.
    map: HashMap<u64, u32>,
    /// Log entries per logical AU.
    per_au: HashMap<u32, u32>,
}

/// Counters of the AU FTL beyond `DeviceStats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuStats {
    /// Open AUs closed (remaining units copied into place).
    pub closes: u64,
    /// AUs merged into a fresh AU (any order, FAT area, log cleaning).
    pub merges: u64,
    /// Writes sent to the small-write log, and the times it was cleaned.
    pub small_writes: u64,
    pub log_cleans: u64,
    /// AU table entries read from NAND.
    pub table_misses: u64,
    /// Old pages read to merge a small write that covers a mapped unit in part.
    pub small_write_rmw_reads: u64,
}

pub struct AuDevice {
    c: AuDeviceConfig,
    capacity_sectors: u64,
    dies: u32,
    spp: u32,
    spu: u32,
    upa: u32,
    spa: u32,
    ctrl: FifoResource,
    channels: Vec<FifoResource>,
    die_res: Vec<FifoResource>,
    /// Logical AU → physical AU holding its data.
    data: Vec<u32>,
    /// The logical AU holds no data (never written, or trimmed whole).
    erased: Vec<bool>,
    open: Vec<OpenAu>,
    open_of: Vec<u16>,
    free: VecDeque<u32>,
    clock: u64,
    /// AU table entries held, most recent last.
    table: Vec<u32>,
    log: Option<Log>,
    stats: DeviceStats,
    au: AuStats,
    /// Content tags per physical slot (tests, verify; `super::content`): the host's tag
    /// for the data, or the number of the write command that put it there when the host
    /// staged none.
    content: Option<Vec<u32>>,
    write_seq: u32,
    /// Data of host commands in and out, when content is tracked.
    port: super::content::Port,
    /// The write command being served (its staged tags).
    cur_write: u32,
    /// When each physical AU was opened (its data's age) and how often it was erased
    /// (read retry, `super::nand_timing`).
    ages: super::nand_timing::BlockAges,
    erases: Vec<u32>,
    /// The time of the input being handled.
    now: SimTime,
    /// The run's seed: which pages need read retries.
    seed: u64,
}

impl AuDevice {
    pub fn new(c: &AuDeviceConfig, capacity_bytes: u64) -> AuDevice {
        let spp = (c.nand.page_bytes / LPN_BYTES) as u32;
        let spu = spp * c.nand.planes_per_die;
        let spa = (c.au_bytes / LPN_BYTES) as u32;
        let logical = capacity_bytes.div_ceil(c.au_bytes) as u32;
        let physical = c.physical_aus() as u32;
        let mut free: VecDeque<u32> = (logical..physical).collect();
        let log = c.small_write.map(|_| {
            let paus: Vec<u32> = (0..c.log_aus())
                .map(|_| free.pop_front().expect("validated"))
                .collect();
            Log {
                cap: paus.len() as u32 * spa,
                paus,
                fill: 0,
                map: HashMap::new(),
                per_au: HashMap::new(),
            }
        });
        AuDevice {
            dies: c.dies(),
            spp,
            spu,
            upa: spa / spu,
            spa,
            capacity_sectors: capacity_bytes / 512,
            ctrl: FifoResource::new(),
            channels: (0..c.nand.channels).map(|_| FifoResource::new()).collect(),
            die_res: (0..c.dies()).map(|_| FifoResource::new()).collect(),
            data: (0..logical).collect(),
            erased: vec![true; logical as usize],
            open: Vec::new(),
            open_of: vec![NO_OPEN; logical as usize],
            free,
            clock: 0,
            table: Vec::new(),
            log,
            stats: DeviceStats::default(),
            au: AuStats::default(),
            content: None,
            write_seq: 0,
            port: super::content::Port::default(),
            cur_write: 0,
            ages: super::nand_timing::BlockAges::new(physical),
            erases: vec![0; physical as usize],
            now: 0,
            seed: 0,
            c: c.clone(),
        }
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    pub fn au_stats(&self) -> &AuStats {
        &self.au
    }

    /// Keeps a content tag per physical slot from now on (tests, verify): each host
    /// write carries its staged tags (`content_port`), or its command number from 1 if
    /// none were staged, and every copy carries the tag.
    pub fn track_content(&mut self) {
        if self.content.is_none() {
            let n = self.c.physical_aus() as usize * self.spa as usize;
            self.content = Some(vec![0; n]);
        }
    }

    /// The host data port, when content is tracked.
    pub fn content_port(&mut self) -> Option<&mut super::content::Port> {
        self.content.as_ref()?;
        Some(&mut self.port)
    }

    /// Overwrites the tag where logical slot `slot`'s data is now (tests).
    pub fn corrupt_content(&mut self, slot: u64, tag: u32) {
        let p = self.locate(slot).slot() as usize;
        self.content.as_mut().expect("track_content first")[p] = tag;
    }

    /// The tag of the data a read of 4 KiB slot `slot` returns (0: never written),
    /// with `track_content`.
    pub fn content_of(&self, slot: u64) -> u32 {
        let tags = self.content.as_ref().expect("track_content first");
        tags[self.locate(slot).slot() as usize]
    }

    /// Number of AUs open now (FAT area excluded).
    pub fn open_count(&self) -> usize {
        self.open.iter().filter(|o| !o.fat).count()
    }

    /// Checks the FTL's invariants (tests): every physical AU is exactly one of a
    /// logical AU's data, an update AU, a log AU or free.
    pub fn check(&self) -> Result<(), String> {
        let mut owner = vec![0u8; self.c.physical_aus() as usize];
        let mut claim = |p: u32, what: &str| -> Result<(), String> {
            let o = &mut owner[p as usize];
            if *o != 0 {
                return Err(format!("physical AU {p} claimed twice ({what})"));
            }
            *o = 1;
            Ok(())
        };
        for (l, &p) in self.data.iter().enumerate() {
            let i = self.open_of[l];
            if i != NO_OPEN && self.open[i as usize].pau == p {
                continue; // an erased AU that is its own update AU
            }
            claim(p, "data")?;
        }
        for o in &self.open {
            claim(o.pau, "update")?;
        }
        if let Some(log) = &self.log {
            for &p in &log.paus {
                claim(p, "log")?;
            }
        }
        for &p in &self.free {
            claim(p, "free")?;
        }
        if let Some(i) = owner.iter().position(|&o| o == 0) {
            return Err(format!("physical AU {i} is lost"));
        }
        if self.open_count() > self.c.open_aus as usize {
            return Err("more open AUs than the limit".into());
        }
        Ok(())
    }

    pub fn handle(&mut self, now: SimTime, input: Input, out: &mut Outbox<Input, Output>) {
        self.now = now;
        match input {
            Input::Command(cmd) => self.command(now, cmd, self.c.nand.fw_per_command_ns, out),
            // An SD stream's next data: no command to decode.
            Input::Continue(cmd) => self.command(now, cmd, 0, out),
            Input::Stop { tag } => {
                let (_, t) = self.ctrl.book(now, self.c.nand.fw_per_command_ns);
                out.emit(t, done(tag, DevStatus::Ok));
            }
            Input::Hibern8(_) => {}
            Input::ProgramDone { .. }
            | Input::GcStep { .. }
            | Input::HousekeepingStep { .. }
            | Input::WbFlushStep { .. }
            | Input::WbIdleCheck => {
                panic!("the allocation-unit device sets no timers")
            }
        }
    }

    fn command(
        &mut self,
        now: SimTime,
        cmd: DevCommand,
        fw_cmd: u64,
        out: &mut Outbox<Input, Output>,
    ) {
        let end = cmd.lba + cmd.sectors as u64;
        let dataless = cmd.op == DevOp::Flush;
        if end > self.capacity_sectors || (cmd.sectors == 0 && !dataless) {
            let (_, t) = self.ctrl.book(now, self.c.nand.fw_per_command_ns);
            out.emit(t, done(cmd.tag, DevStatus::OutOfRange));
            return;
        }
        let first = cmd.lba / SECTORS_PER_LPN;
        let last = end.div_ceil(SECTORS_PER_LPN);
        let fw = fw_cmd + self.c.nand.fw_per_4kib_ns * (last - first);
        let (_, t) = self.ctrl.book(now, fw);
        match cmd.op {
            DevOp::Read | DevOp::HpbRead => {
                let (first_ready, last_ready) = self.read(t, cmd.lba, end);
                if self.content.is_some() {
                    // The data of the locations the read used.
                    for slot in first..last {
                        let v = self.content_of(slot);
                        self.port.push_read(cmd.tag, v);
                    }
                }
                out.emit(
                    first_ready.max(now),
                    Output::ReadReady {
                        tag: cmd.tag,
                        last_ready,
                    },
                );
            }
            DevOp::Write => {
                self.cur_write = cmd.tag;
                let t = self.write(t, cmd.lba, end, cmd.fua);
                if self.content.is_some() {
                    self.port.end_write(cmd.tag);
                }
                if !cmd.lba.is_multiple_of(SECTORS_PER_LPN) || !end.is_multiple_of(SECTORS_PER_LPN)
                {
                    self.stats.partial_writes += 1;
                }
                out.emit(t, done(cmd.tag, DevStatus::Ok));
            }
            DevOp::Flush => {
                let mut end = t;
                for i in 0..self.open.len() {
                    end = end.max(self.seal_ram(t, i));
                }
                out.emit(end, done(cmd.tag, DevStatus::Ok));
            }
            DevOp::Discard => {
                self.discard(t, cmd.lba, end);
                out.emit(t, done(cmd.tag, DevStatus::Ok));
            }
            DevOp::ReadBuffer | DevOp::WriteBuffer => {
                out.emit(t, done(cmd.tag, DevStatus::OutOfRange));
            }
        }
    }

    /// Marks the AUs of `sectors` from `lba` as holding data (an aged device).
    pub fn precondition(&mut self, lba: u64, sectors: u64) {
        if sectors == 0 {
            return;
        }
        let a = (lba / SECTORS_PER_LPN / self.spa as u64) as usize;
        let b = ((lba + sectors - 1) / SECTORS_PER_LPN / self.spa as u64) as usize;
        for e in &mut self.erased[a..=b] {
            *e = false;
        }
    }

    // ------------------------------------------------------------------ locations

    fn au_of(&self, slot: u64) -> (u32, u32) {
        (
            (slot / self.spa as u64) as u32,
            (slot % self.spa as u64) as u32,
        )
    }

    fn phys(&self, pau: u32, off: u32) -> u32 {
        pau * self.spa + off
    }

    /// Where the newest data of logical slot `slot` is: the log, then an open AU's RAM
    /// or update AU, then the data AU.
    fn locate(&self, slot: u64) -> Loc {
        if let Some(log) = &self.log {
            if let Some(&pos) = log.map.get(&slot) {
                let p = self.phys(log.paus[(pos / self.spa) as usize], pos % self.spa);
                return Loc::Nand(p);
            }
        }
        let (lau, off) = self.au_of(slot);
        let i = self.open_of[lau as usize];
        if i != NO_OPEN {
            let o = &self.open[i as usize];
            let at = if o.map.is_empty() {
                (off < o.wp).then_some(off)
            } else {
                (o.map[off as usize] != NONE).then(|| o.map[off as usize])
            };
            if let Some(at) = at {
                let p = self.phys(o.pau, at);
                return if at >= o.ram_from && at < o.wp {
                    Loc::Ram(p)
                } else {
                    Loc::Nand(p)
                };
            }
        }
        Loc::Nand(self.phys(self.data[lau as usize], off))
    }

    fn die_of(&self, phys_slot: u32) -> usize {
        ((phys_slot % self.spa / self.spu) % self.dies) as usize
    }

    fn xfer(&self, bytes: u64) -> u64 {
        transfer_ns(bytes, self.c.nand.channel_bytes_per_s)
    }

    // ------------------------------------------------------------------ reads

    /// A read of sectors `lba..end` whose firmware work ended at `t`: (first, last)
    /// data ready.
    fn read(&mut self, t: SimTime, lba: u64, end: u64) -> (SimTime, SimTime) {
        let first = lba / SECTORS_PER_LPN;
        let last = end.div_ceil(SECTORS_PER_LPN);
        self.stats.host_read_slots += last - first;
        let page_x = self.xfer(self.c.nand.page_bytes);
        let mut t_issue = t;
        let mut lau_seen = NONE;
        let mut last_page = NONE;
        let mut last_row = NONE;
        let (mut first_ready, mut last_ready) = (SimTime::MAX, t);
        for slot in first..last {
            let (lau, _) = self.au_of(slot);
            if lau != lau_seen {
                lau_seen = lau;
                t_issue = t_issue.max(self.table_lookup(t_issue, lau));
            }
            let loc = self.locate(slot);
            let Loc::Nand(p) = loc else {
                first_ready = first_ready.min(t_issue);
                continue;
            };
            let page = p / self.spp;
            if page == last_page {
                continue;
            }
            last_page = page;
            let row = p / self.spu;
            let die = self.die_of(p);
            let ch = die % self.channels.len();
            let read_end = if row == last_row {
                // Another plane of the row just read: the same multi-plane tR.
                t_issue
            } else {
                last_row = row;
                self.stats.nand_page_reads += 1;
                let row_in_block = self.row_in_block(p);
                self.stats.page_type_reads[self.c.nand.timing.page_type(row_in_block)] += 1;
                let t_r = self
                    .c
                    .nand
                    .timing
                    .t_read_row(row_in_block, self.c.nand.t_read_ns);
                let mut t = t_issue;
                if self.c.nand.timing.retry_possible() {
                    t = self.read_retries(p, t_r, t);
                }
                self.die_res[die].book(t, t_r).1
            };
            let e = self.page_out(die, ch, read_end, page_x);
            first_ready = first_ready.min(e);
            last_ready = last_ready.max(e);
        }
        if first_ready == SimTime::MAX {
            first_ready = t_issue;
        }
        (first_ready, last_ready.max(first_ready))
    }

    /// Looks AU `lau` up in the AU table; a miss reads the table page. Returns when the
    /// physical AU is known.
    fn table_lookup(&mut self, t: SimTime, lau: u32) -> SimTime {
        if let Some(i) = self.table.iter().position(|&a| a == lau) {
            let a = self.table.remove(i);
            self.table.push(a);
            return t;
        }
        if self.table.len() == self.c.table_cache as usize {
            self.table.remove(0);
        }
        self.table.push(lau);
        self.au.table_misses += 1;
        self.stats.nand_map_reads += 1;
        // The table lives in the controller's system area on die 0.
        let (die, ch) = (0, 0);
        let (_, r) = self.die_res[die].book(t, self.c.nand.t_read_ns);
        let x = self.xfer(self.c.nand.page_bytes);
        self.page_out(die, ch, r, x)
    }

    /// Moves a page from `die`'s page register out over channel `ch` once it is read
    /// (`ready`); the die stays busy until then (no cache read: its next array read
    /// would overwrite the register). Returns when the page is out.
    fn page_out(&mut self, die: usize, ch: usize, ready: SimTime, x: u64) -> SimTime {
        let (_, e) = self.channels[ch].book(ready, x);
        let held = self.die_res[die].free_at().max(ready);
        if e > held {
            self.die_res[die].book(held, e - held);
        }
        e
    }

    // ------------------------------------------------------------------ writes

    /// A write of slots `first..last` whose data is in the controller at `t`; returns
    /// when it is done.
    /// A write of sectors `lba..end`.
    fn write(&mut self, t: SimTime, lba: u64, end: u64, fua: bool) -> SimTime {
        let first = lba / SECTORS_PER_LPN;
        let last = end.div_ceil(SECTORS_PER_LPN);
        self.write_seq += 1;
        self.stats.host_write_slots += last - first;
        if let Some(sw) = self.c.small_write {
            if (last - first) * LPN_BYTES < sw.unit_bytes {
                let t = self.merge_reads(t, lba, end, sw.map_sectors);
                return self.log_write(t, first, last);
            }
        }
        let mut t = t;
        let mut slot = first;
        while slot < last {
            let (lau, off) = self.au_of(slot);
            t = self.table_lookup(t, lau);
            let end = (last - slot).min((self.spa - off) as u64) as u32 + off;
            t = self.au_write(t, lau, off, end, fua);
            slot += (end - off) as u64;
        }
        t
    }

    /// Writes offsets `o..e` of logical AU `lau`.
    fn au_write(&mut self, t: SimTime, lau: u32, o: u32, e: u32, fua: bool) -> SimTime {
        let base = lau as u64 * self.spa as u64;
        self.drop_log_entries(lau, base + o as u64, base + e as u64);
        self.clock += 1;
        let fat = lau < self.c.fat_aus;
        let any = fat || self.c.order == AuOrder::Any;
        let mut t_gc = t;
        let mut i = self.open_of[lau as usize];
        if i != NO_OPEN {
            let op = &self.open[i as usize];
            let reopen = if any {
                op.wp + (e - o) > self.spa
            } else {
                o < op.ram_from
            };
            if reopen {
                // Backwards in a linear AU, or the update AU is full.
                t_gc = self.close(t, i as usize);
                i = NO_OPEN;
            }
        }
        if i == NO_OPEN {
            if !fat && self.open_count() == self.c.open_aus as usize {
                let lru = (0..self.open.len())
                    .filter(|&k| !self.open[k].fat)
                    .min_by_key(|&k| self.open[k].last_use)
                    .expect("an open AU");
                t_gc = self.close(t_gc, lru);
            }
            let (k, t_open) = self.open_au(t_gc, lau, o, any, fat);
            t_gc = t_open;
            i = k as u16;
        }
        if t_gc > t {
            self.stats.write_stalls += 1;
            self.stats.write_stall_ns += t_gc - t;
        }
        let k = i as usize;
        self.open[k].last_use = self.clock;
        self.erased[lau as usize] = false;
        let mut end = if any {
            self.write_any(t_gc, k, o, e)
        } else {
            self.write_linear(t_gc, k, o, e)
        };
        if fua {
            end = end.max(self.seal_ram(end, k));
        }
        end
    }

    /// Opens AU `lau` for a first write at offset `o`: returns its index in `open`
    /// and when it can take the write.
    fn open_au(&mut self, t: SimTime, lau: u32, o: u32, any: bool, fat: bool) -> (usize, SimTime) {
        let erased = self.erased[lau as usize];
        let mut t_end = t;
        let (pau, wp, ram_from) = if any {
            (self.alloc(), 0, 0)
        } else if erased {
            // Nothing to keep: the erased data AU takes the writes itself.
            let p = self.data[lau as usize];
            (p, o, o - o % self.spu)
        } else {
            let p = self.alloc();
            // The units before the write come over from the old AU first (in order);
            // the part of the write's own unit before it is read into RAM.
            let head = o / self.spu;
            let old = self.data[lau as usize];
            t_end = self.copy_units(t, head);
            self.copy_content(old, p, 0, o);
            self.stats.gc_copies += (head * self.spu) as u64;
            if !o.is_multiple_of(self.spu) {
                t_end = t_end.max(self.read_old_page(t, old, o));
            }
            (p, o, o - o % self.spu)
        };
        let map = if any {
            vec![NONE; self.spa as usize]
        } else {
            Vec::new()
        };
        self.open.push(OpenAu {
            lau,
            pau,
            wp,
            ram_from,
            map,
            last_use: self.clock,
            fat,
            in_order: true,
        });
        let k = self.open.len() - 1;
        self.open_of[lau as usize] = k as u16;
        (k, t_end)
    }

    /// Takes open AU `k` off the open list.
    fn remove_open(&mut self, k: usize) -> OpenAu {
        let a = self.open.swap_remove(k);
        if k < self.open.len() {
            let moved = self.open[k].lau;
            self.open_of[moved as usize] = k as u16;
        }
        self.open_of[a.lau as usize] = NO_OPEN;
        a
    }

    fn alloc(&mut self) -> u32 {
        let pau = self
            .free
            .pop_front()
            .expect("validate keeps a free AU for every open, FAT, log and merge AU");
        // Its data is programmed from now on (read retry counts the data's age).
        self.ages.programmed(pau, self.now);
        pau
    }

    /// The run's seed, which decides the pages that need read retries.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Row index within its erase block of physical slot `p` (its page type follows):
    /// unit u of an AU is on die u mod dies, the die's units in order.
    fn row_in_block(&self, p: u32) -> u32 {
        (p % self.spa / self.spu / self.dies) % self.c.nand.pages_per_block
    }

    /// The failed attempts of an array read of the page holding physical slot `p` (tR
    /// `t_r` and the page out to the ECC each; `super::nand_timing`), from `t`; returns
    /// when the last one ends (`t` if the page reads at once).
    fn read_retries(&mut self, p: u32, t_r: u64, t: SimTime) -> SimTime {
        let pau = p / self.spa;
        let erases = self.erases[pau as usize];
        let age = self.ages.age(pau, t);
        let steps = self
            .c
            .nand
            .timing
            .retry_steps(self.seed, p / self.spp, erases, age);
        if steps == 0 {
            return t;
        }
        self.stats.read_retry_reads += 1;
        self.stats.read_retry_steps += steps as u64;
        let die = self.die_of(p);
        let ch = die % self.channels.len();
        let x = self.xfer(self.c.nand.page_bytes);
        let mut t = t;
        for _ in 0..steps {
            let (_, r) = self.die_res[die].book(t, t_r);
            t = self.page_out(die, ch, r, x);
        }
        t
    }

    /// The reported jobs start: the data on the device is `wear.data_age` old.
    pub fn age_data(&mut self) {
        self.ages.age_all(self.c.nand.timing.wear_data_age_ns);
    }

    /// In-order data into an open linear AU.
    fn write_linear(&mut self, t: SimTime, k: usize, o: u32, e: u32) -> SimTime {
        let (lau, pau, wp, ram_from) = {
            let a = &self.open[k];
            (a.lau, a.pau, a.wp, a.ram_from)
        };
        let old = self.data[lau as usize];
        let mut t_end = t;
        let ua = ram_from / self.spu;
        let ue = e / self.spu;
        let uo = o / self.spu;
        if o > wp {
            // The gap comes from the old AU.
            self.copy_content(old, pau, wp, o);
        }
        // Units before the write's first unit: completed from the old AU.
        let copy_to = uo.min(ue);
        if copy_to > ua {
            t_end = t_end.max(self.copy_units(t, copy_to - ua));
            self.stats.gc_copies += ((o.min(copy_to * self.spu)).saturating_sub(wp)) as u64;
        }
        let first_new = ua.max(uo);
        if first_new < ue {
            let mut t0 = t;
            if o > wp && !o.is_multiple_of(self.spu) && first_new == uo {
                // The write's first unit starts with old data: read it.
                t0 = self.read_old_page(t, old, o);
            }
            t_end = t_end.max(self.program_units(t0, pau, first_new, ue));
        }
        self.set_content(lau, pau, o, e);
        self.stats.host_slots_programmed += (e - o) as u64;
        let a = &mut self.open[k];
        a.wp = wp.max(e);
        a.ram_from = a.wp - a.wp % self.spu;
        t_end
    }

    /// Data into an open AU that takes any order (page-mapped inside the AU): appended
    /// at the update AU's next free unit and programmed at once, the last unit padded
    /// (a page-mapped area keeps no partial unit in RAM).
    fn write_any(&mut self, t: SimTime, k: usize, o: u32, e: u32) -> SimTime {
        let (pau, fill, lau) = (self.open[k].pau, self.open[k].wp, self.open[k].lau);
        let n = e - o;
        let a = &mut self.open[k];
        if o != fill {
            a.in_order = false;
        }
        for i in 0..n {
            a.map[(o + i) as usize] = fill + i;
        }
        let u0 = fill / self.spu;
        let u1 = (fill + n).div_ceil(self.spu);
        let padded = (u1 * self.spu).min(self.spa);
        if padded > fill + n {
            a.in_order = false;
        }
        a.wp = padded;
        a.ram_from = padded;
        if let Some(c) = &mut self.content {
            let base = (pau * self.spa + fill) as usize;
            let lbase = lau as u64 * self.spa as u64 + o as u64;
            for i in 0..n as usize {
                c[base + i] = tag_for(&self.port, self.cur_write, self.write_seq, lbase + i as u64);
            }
        }
        self.stats.host_slots_programmed += n as u64;
        self.stats.padding_slots += (padded - fill - n) as u64;
        self.program_units(t, pau, u0, u1)
    }

    /// Programs open AU `k`'s partial unit (padded), e.g. for a flush or FUA write.
    fn seal_ram(&mut self, t: SimTime, k: usize) -> SimTime {
        let a = &self.open[k];
        if a.ram_from == a.wp {
            return t;
        }
        let (lau, pau, wp) = (a.lau, a.pau, a.wp);
        let unit_end = (wp / self.spu + 1) * self.spu;
        let end = if a.map.is_empty() {
            // The rest of the unit comes from the old AU (already in order).
            let old = self.data[lau as usize];
            self.copy_content(old, pau, wp, unit_end.min(self.spa));
            self.copy_units(t, 1)
        } else {
            self.stats.padding_slots += (unit_end - wp) as u64;
            self.program_units(t, pau, wp / self.spu, wp / self.spu + 1)
        };
        let a = &mut self.open[k];
        a.wp = unit_end.min(self.spa);
        a.ram_from = a.wp;
        end
    }

    /// Closes open AU `k`: returns when its data is all in one physical AU again.
    fn close(&mut self, t: SimTime, k: usize) -> SimTime {
        self.stats.gc_victims += 1;
        if !self.open[k].map.is_empty() && !self.open[k].in_order {
            let lau = self.open[k].lau;
            return self.merge(t, lau);
        }
        self.au.closes += 1;
        let a = self.remove_open(k);
        let lau = a.lau;
        let old = self.data[lau as usize];
        let mut end = t;
        if old == a.pau {
            // An erased AU written in place: only the partial unit is programmed.
            if a.ram_from < a.wp {
                self.stats.padding_slots += (self.spu - a.wp % self.spu) as u64;
                end = self.program_units(t, a.pau, a.wp / self.spu, a.wp / self.spu + 1);
            }
        } else {
            // The rest (from the partial unit on) comes from the old AU, which is then
            // erased.
            let units = self.upa - a.ram_from / self.spu;
            end = self.copy_units(t, units);
            self.copy_content(old, a.pau, a.wp, self.spa);
            self.stats.gc_copies += (self.spa - a.wp) as u64;
            end = end.max(self.erase(end, old));
            self.free.push_back(old);
            self.data[lau as usize] = a.pau;
        }
        self.erased[lau as usize] = false;
        end
    }

    /// Merges logical AU `lau` (wherever its newest data is: log, open AU, RAM, data
    /// AU) into a fresh AU; the old data and update AUs are erased.
    fn merge(&mut self, t: SimTime, lau: u32) -> SimTime {
        self.merge_keeping_log(t, lau, false)
    }

    /// `merge`; with `keep_log` the AU's log entries are left for the caller to drop
    /// (the log clean drops them all at once).
    fn merge_keeping_log(&mut self, t: SimTime, lau: u32, keep_log: bool) -> SimTime {
        self.au.merges += 1;
        let dst = self.alloc();
        let base = lau as u64 * self.spa as u64;
        if let Some(mut c) = self.content.take() {
            for off in 0..self.spa {
                let from = self.locate(base + off as u64).slot();
                c[self.phys(dst, off) as usize] = c[from as usize];
            }
            self.content = Some(c);
        }
        if !keep_log {
            self.drop_log_entries(lau, base, base + self.spa as u64);
        }
        let mut end = self.copy_units(t, self.upa);
        self.stats.gc_copies += self.spa as u64;
        let old = self.data[lau as usize];
        let i = self.open_of[lau as usize];
        if i != NO_OPEN {
            let a = self.remove_open(i as usize);
            if a.pau != old {
                end = end.max(self.erase(end, a.pau));
                self.free.push_back(a.pau);
            }
        }
        end = end.max(self.erase(end, old));
        self.free.push_back(old);
        self.data[lau as usize] = dst;
        self.erased[lau as usize] = false;
        end
    }

    /// A small write: programmed at once into the log (whole units, padded).
    fn log_write(&mut self, t: SimTime, first: u64, last: u64) -> SimTime {
        self.au.small_writes += 1;
        let n = (last - first) as u32;
        let units = n.div_ceil(self.spu);
        let mut t = t;
        if self.log.as_ref().expect("log").fill + units * self.spu > self.log.as_ref().unwrap().cap
        {
            let t0 = t;
            t = self.clean_log(t);
            self.stats.write_stalls += 1;
            self.stats.write_stall_ns += t - t0;
        }
        let log = self.log.as_mut().expect("log");
        let pos = log.fill;
        log.fill += units * self.spu;
        for (i, slot) in (first..last).enumerate() {
            if log.map.insert(slot, pos + i as u32).is_none() {
                *log.per_au
                    .entry((slot / self.spa as u64) as u32)
                    .or_insert(0) += 1;
            }
        }
        let pau = log.paus[(pos / self.spa) as usize];
        let off = pos % self.spa;
        if let Some(c) = &mut self.content {
            let b = (pau * self.spa + off) as usize;
            for (i, slot) in (first..last).enumerate() {
                c[b + i] = tag_for(&self.port, self.cur_write, self.write_seq, slot);
            }
        }
        self.stats.host_slots_programmed += n as u64;
        self.stats.padding_slots += (units * self.spu - n) as u64;
        self.program_units(t, pau, off / self.spu, off / self.spu + units)
    }

    /// A small write of sectors `lba..end` into a log mapping units of `ms` sectors: a
    /// unit the write covers only in part keeps the rest of its data, so the old page
    /// holding that rest is read into the controller first (read-modify-write), one
    /// read per old page; a unit with no data yet needs none. A write inside one unit
    /// reads its page once; one straddling two units reads two pages (in parallel if
    /// they are on two dies). Returns when the merged data is in the controller.
    fn merge_reads(&mut self, t: SimTime, lba: u64, end: u64, ms: u64) -> SimTime {
        if ms == 1 {
            return t;
        }
        let head = lba / ms * ms;
        let tail = end.div_ceil(ms) * ms;
        if head == lba && tail == end {
            return t;
        }
        // The old pages to read, in the order met, without repeats: one or two (the
        // head's and the tail's) kept inline; the Vec takes more, where the unit's other
        // slots were logged apart and lie in several pages.
        let mut pages: ([u32; 2], usize, Vec<u32>) = ([0; 2], 0, Vec::new());
        // The unit's sectors outside the write, at each end.
        for (from, to) in [(head, lba), (end, tail)] {
            if from >= to {
                continue;
            }
            for slot in from / SECTORS_PER_LPN..to.div_ceil(SECTORS_PER_LPN) {
                let (lau, _) = self.au_of(slot);
                // A never-written AU has no old data, unless the log holds some.
                if self.erased[lau as usize]
                    && !self.log.as_ref().is_some_and(|l| l.map.contains_key(&slot))
                {
                    continue;
                }
                let Loc::Nand(p) = self.locate(slot) else {
                    continue;
                };
                let page = p / self.spp;
                let (inline, n, more) = &mut pages;
                if inline[..*n].contains(&page) || more.contains(&page) {
                    continue;
                }
                if *n < inline.len() {
                    inline[*n] = page;
                    *n += 1;
                } else {
                    more.push(page);
                }
            }
        }
        let mut ready = t;
        let (inline, n, more) = pages;
        for page in inline[..n].iter().chain(&more).copied() {
            let p = page * self.spp;
            ready = ready.max(self.read_old_page(t, p / self.spa, p % self.spa));
            self.au.small_write_rmw_reads += 1;
        }
        ready
    }

    /// Merges every AU with data in the log, then erases the log.
    fn clean_log(&mut self, t: SimTime) -> SimTime {
        self.au.log_cleans += 1;
        let mut aus: Vec<u32> = self
            .log
            .as_ref()
            .expect("log")
            .per_au
            .keys()
            .copied()
            .collect();
        aus.sort_unstable();
        let mut end = t;
        for lau in aus {
            self.stats.gc_victims += 1;
            end = self.merge_keeping_log(end, lau, true);
        }
        let paus = self.log.as_ref().expect("log").paus.clone();
        let mut e2 = end;
        for p in paus {
            e2 = e2.max(self.erase(end, p));
        }
        let log = self.log.as_mut().expect("log");
        log.fill = 0;
        log.map.clear();
        log.per_au.clear();
        e2
    }

    /// Drops log entries of slots `from..to` of `lau` (newer data is going elsewhere).
    fn drop_log_entries(&mut self, lau: u32, from: u64, to: u64) {
        let Some(log) = &mut self.log else {
            return;
        };
        let Some(&n) = log.per_au.get(&lau) else {
            return;
        };
        let mut left = n;
        for s in from..to {
            if log.map.remove(&s).is_some() {
                left -= 1;
            }
        }
        if left == 0 {
            log.per_au.remove(&lau);
        } else {
            log.per_au.insert(lau, left);
        }
    }

    fn discard(&mut self, t: SimTime, lba: u64, end: u64) {
        let first = lba.div_ceil(SECTORS_PER_LPN);
        let last = end / SECTORS_PER_LPN;
        if first >= last {
            return;
        }
        self.stats.discarded_slots += last - first;
        let spa = self.spa as u64;
        for lau in (first / spa) as u32..=((last - 1) / spa) as u32 {
            let base = lau as u64 * spa;
            let (a, b) = (first.max(base), last.min(base + spa));
            self.drop_log_entries(lau, a, b);
            if a != base || b != base + spa {
                continue;
            }
            // The whole AU: drop its open state and erase it.
            let i = self.open_of[lau as usize];
            let old = self.data[lau as usize];
            if i != NO_OPEN {
                let op = self.remove_open(i as usize);
                if op.pau != old {
                    self.erase(t, op.pau);
                    self.free.push_back(op.pau);
                }
            }
            if !self.erased[lau as usize] {
                self.erase(t, old);
                self.erased[lau as usize] = true;
            }
        }
    }

    // ------------------------------------------------------------------ NAND work

    /// Programs units `u0..u1` of physical AU `pau` with data the controller holds,
    /// each on its die once the die is free; returns when the last is programmed.
    fn program_units(&mut self, t: SimTime, pau: u32, u0: u32, u1: u32) -> SimTime {
        let x = self.xfer(self.c.unit_bytes());
        let mut end = t;
        for u in u0..u1 {
            let slot = self.phys(pau, u * self.spu);
            let die = self.die_of(slot);
            let ch = die % self.channels.len();
            let start = t.max(self.die_res[die].free_at());
            let (s, e) = self.channels[ch].book(start, x);
            let t_prog = self
                .c
                .nand
                .timing
                .t_prog_row(self.row_in_block(slot), self.c.nand.t_prog_ns);
            let (_, p) = self.die_res[die].book(s, e - s + t_prog);
            end = end.max(p);
            self.stats.nand_page_programs += self.c.nand.planes_per_die as u64;
        }
        end
    }

    /// Copies `n` units between AUs (tR, transfers, tPROG per unit), in closed form
    /// per die; returns when the last is programmed.
    fn copy_units(&mut self, t: SimTime, n: u32) -> SimTime {
        if n == 0 {
            return t;
        }
        let x = match self.c.gc_copy {
            GcCopy::Controller => 2 * self.xfer(self.c.unit_bytes()),
            GcCopy::Copyback => 0,
        };
        let mut end = t;
        let nch = self.channels.len();
        for d in 0..self.dies {
            let units = n / self.dies + u32::from(d < n % self.dies);
            if units == 0 {
                continue;
            }
            let per = self.c.nand.t_read_ns + self.c.nand.t_prog_ns + x;
            let (_, e) = self.die_res[d as usize].book(t, units as u64 * per);
            end = end.max(e);
            if x > 0 {
                let (_, e) = self.channels[d as usize % nch].book(t, units as u64 * x);
                end = end.max(e);
            }
            self.stats.nand_page_reads += units as u64;
            self.stats.nand_page_programs += units as u64 * self.c.nand.planes_per_die as u64;
        }
        end
    }

    /// Reads the page of old AU `old` holding offset `off` into the controller.
    fn read_old_page(&mut self, t: SimTime, old: u32, off: u32) -> SimTime {
        let die = self.die_of(self.phys(old, off));
        let ch = die % self.channels.len();
        let (_, r) = self.die_res[die].book(t, self.c.nand.t_read_ns);
        self.stats.nand_page_reads += 1;
        let x = self.xfer(self.c.nand.page_bytes);
        self.page_out(die, ch, r, x)
    }

    /// Erases physical AU `pau`: its blocks on every die, in parallel over the dies.
    fn erase(&mut self, t: SimTime, pau: u32) -> SimTime {
        if let Some(c) = &mut self.content {
            let b = (pau * self.spa) as usize;
            c[b..b + self.spa as usize].fill(0);
        }
        let blocks = self.c.au_bytes / self.c.block_bytes();
        let per_die = blocks.div_ceil(self.dies as u64);
        self.stats.erases += blocks;
        self.erases[pau as usize] += 1;
        let mut end = t;
        for d in 0..self.dies as usize {
            end = end.max(self.die_res[d].book(t, per_die * self.c.nand.t_erase_ns).1);
        }
        end
    }

    // ------------------------------------------------------------------ content tags

    fn set_content(&mut self, lau: u32, pau: u32, o: u32, e: u32) {
        let Some(c) = &mut self.content else {
            return;
        };
        let b = (pau * self.spa) as usize;
        let lbase = lau as u64 * self.spa as u64;
        for off in o..e {
            c[b + off as usize] = tag_for(
                &self.port,
                self.cur_write,
                self.write_seq,
                lbase + off as u64,
            );
        }
    }

    fn copy_content(&mut self, from: u32, to: u32, o: u32, e: u32) {
        if from == to || o >= e {
            return;
        }
        if let Some(c) = &mut self.content {
            let (f, d) = ((from * self.spa) as usize, (to * self.spa) as usize);
            c.copy_within(f + o as usize..f + e as usize, d + o as usize);
        }
    }
}

impl super::Model for AuDevice {
    #[inline]
    fn handle(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>) {
        AuDevice::handle(self, now, *input, out)
    }
    fn precondition(&mut self, lba: u64, sectors: u64) {
        AuDevice::precondition(self, lba, sectors)
    }
    fn stats(&self) -> &DeviceStats {
        AuDevice::stats(self)
    }
    fn age_data(&mut self) {
        AuDevice::age_data(self)
    }
}

/// The tag write command `cur` carries for logical slot `slot`: the host's staged tag,
/// or the command's number when it staged none.
fn tag_for(port: &super::content::Port, cur: u32, write_seq: u32, slot: u64) -> u32 {
    if port.has_write(cur) {
        port.write_tag(cur, slot)
    } else {
        write_seq
    }
}

fn done(tag: u32, status: DevStatus) -> Output {
    Output::Done { tag, status }
}
