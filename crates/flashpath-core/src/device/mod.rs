//! The flash device behind the bus: controller firmware, L2P map cache, write buffer,
//! FTL and NAND. (Interface fixed here; the model lives in the submodules.)
//!
//! Contract with the host side (driver + bus), in simulated time:
//! - Read: the host sends the command; the bus delivers `Input::Command` when the
//!   command has arrived. The device emits `Output::ReadReady { tag, last_ready }` at
//!   the instant the first data is in its buffer, ready to stream out; `last_ready` is
//!   when the last byte will be ready. The bus streams the data and never finishes
//!   before `last_ready` + the last chunk's transfer.
//! - Write: the bus delivers `Input::Command` once all the data has crossed the bus
//!   into the device. The device emits `Output::Done { tag }` when it has accepted the
//!   data (busy released on DAT0): after firmware work and, if the write buffer is
//!   full, after space has been freed by the background drain.
//!   A write with `fua` (reliable write / FUA) is done only once its data is programmed.
//! - Flush / Discard: `Output::Done` when finished.
//! - SD multi-block streams (open-ended CMD18/CMD25 closed by CMD12; `Input::Continue`,
//!   `Input::Stop`): a read or write `Command` opens a stream; `Continue` carries the
//!   next data of the same stream at the next address when the host started no new
//!   command (data only). It costs no command decode (only the per-4 KiB firmware work),
//!   and a continued read may use the NAND from when the previous part of the stream was
//!   ready: the card kept reading ahead while the host clock was stopped. `Stop`
//!   (CMD12) closes the stream: after a write the card programs everything it holds
//!   (a partial row padded, as a flush) and emits `Done { tag }` when done — the R1b
//!   busy the host waits out; after a read it emits `Done` after the firmware work.
//!
//! The device serves one host command at a time unless the interface queues commands
//! (eMMC without CQ: one); background work (buffer drain, GC) runs alongside.
//!
//! Choices made by the model (page-mapped device and ideal device alike):
//! - A read emits only `ReadReady`, never `Done`: the host finishes a read when the bus
//!   transfer ends. A read outside the capacity emits `Done { status: OutOfRange }`
//!   instead of `ReadReady`.
//! - Any command reaching past the capacity (or a read/write/discard of 0 sectors) gets
//!   `Done { status: OutOfRange }` after the per-command firmware time.
//! - The device's internal timers (`Input::ProgramDone`, `Input::GcStep`,
//!   `Input::HousekeepingStep`) come back to
//!   it through the outbox like any timer; the host never sends them.
//! - Several commands may be outstanding (interfaces with a command queue: UFS; eMMC
//!   without CQ sends one at a time). Reads are served concurrently: each books the
//!   controller, dies and channels it needs, in arrival order, so reads on different
//!   dies overlap. Writes are accepted one at a time: a write whose data arrives while
//!   another is still being admitted to the write buffer waits in a FIFO (its firmware
//!   decode is booked on arrival) and is admitted, in arrival order, once the previous
//!   one is `Done`. Reads also run alongside the background drain and GC, queueing
//!   behind them on the dies they need. (The ideal device serves every command in
//!   arrival order on one resource.)
//! - UFS HPB (`hpb`): an HPB READ (`DevOp::HpbRead`) carries the host's copy of the
//!   first block's L2P entry; the page-mapped read skips the map lookup for it when it
//!   is still current. `DevOp::ReadBuffer` returns a subregion's entries (the engine
//!   copies them with `Device::hpb_entries` when the data is ready), `DevOp::WriteBuffer`
//!   inactivates regions. In device control mode the device emits `Output::HpbHints`
//!   for a command, before its `ReadReady`/`Done`; the host applies them when that
//!   command's response arrives.
//! - eMMC command queuing (`cq`, the mmc-cqe driver): the task table and the Queue
//!   Status Register live in `cq::TaskQueue`, held by the engine beside the device. A
//!   queued read's `Input::Command` is delivered when its CMD45 has arrived (the device
//!   fetches the data at once, so reads of different dies overlap); its `ReadReady`
//!   then marks the task ready, and the data waits in the controller until the host's
//!   CMD46 (the read buffer is not bounded). A write's `Input::Command` is still
//!   delivered after its data (CMD47) has crossed the bus; the host sends no other data
//!   before that write's `Done` (DAT0 busy), so one write at a time still holds.
//! - `Device::precondition(lba, sectors)` maps a range as already written, instantly
//!   (an aged device without simulating the fill); `harness::Harness` runs a device
//!   alone at QD1 (tests, benches, probes).
//! - Sub-4 KiB or unaligned writes map whole 4 KiB units (counted in
//!   `DeviceStats::partial_writes`); a discard unmaps only the 4 KiB units it covers.
//!
//! ```text
//!   Input::Command ─▶ Device ─▶ Output::ReadReady { tag, last_ready }   (reads)
//!                       │  ▲    Output::Done { tag, status }           (write/flush/discard)
//!                       ▼  │
//!          timers: ProgramDone { die }, GcStep { die }
//! ```
//!
//! Submodules: `config` (presets, validation, `DeviceConfig::ideal`), `page_mapped`
//! (the eMMC model and its timing), `ftl` (page map, GC bookkeeping), `map_cache`
//! (L2P segment LRU), `write_buffer` (buffer slots), `housekeeping` (foreground
//! housekeeping at block turnover; a child of `page_mapped`).

pub mod allocation_unit;
pub mod block_arrays;
pub mod config;
pub mod content;
pub mod cq;
pub mod ftl;
pub mod gc_policy;
pub mod harness;
pub mod hpb;
pub mod l2p;
pub mod map_cache;
pub mod nand_timing;
pub mod page_mapped;
pub mod reverse_map;
pub mod write_booster;
pub mod write_buffer;

pub use config::{validate, DeviceConfig, DeviceModel, RawDeviceConfig};

pub use crate::engine::{Outbox, SimTime};

/// A 512-byte sector address, as the host addresses the device.
pub type Lba = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevOp {
    Read,
    Write,
    Flush,
    Discard,
    /// UFS HPB READ (F8h): a read carrying the host's copy of its first block's L2P
    /// entry (`DevCommand::hpb`).
    HpbRead,
    /// UFS HPB READ BUFFER (F9h, buffer 01h): the L2P entries of subregion
    /// `DevCommand::hpb` (a global index); `lba`/`sectors` name the subregion's range.
    ReadBuffer,
    /// UFS HPB WRITE BUFFER (FAh): buffer 01h inactivates region `DevCommand::hpb`,
    /// buffer 03h (`hpb` = [`HPB_ALL_REGIONS`]) all regions.
    WriteBuffer,
}

/// `DevCommand::hpb` of a WRITE BUFFER 03h: every region.
pub const HPB_ALL_REGIONS: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevCommand {
    /// The host's name for the command (a request id); echoed in outputs.
    pub tag: u32,
    pub op: DevOp,
    /// First 512-byte sector.
    pub lba: Lba,
    /// Length in 512-byte sectors (0 for Flush).
    pub sectors: u32,
    /// A write that must be in non-volatile storage before it is done: the host's
    /// REQ_FUA as an eMMC reliable write (CMD23 bit 31; mmc_blk_rw_rq_prep `do_rel_wr`,
    /// or the CQE task descriptor's REL_WRITE) or a SCSI WRITE(10) with FUA (UFS). The
    /// device holds busy until the data is programmed, as in write-through mode.
    pub fua: bool,
    /// The HPB command's argument (`DevOp::HpbRead`: the entry; `ReadBuffer`: the
    /// subregion; `WriteBuffer`: the region); 0 for other commands. A field of its own
    /// rather than data in `DevOp`: it fits the command's padding, so events stay small.
    pub hpb: u32,
}

impl DevCommand {
    /// A cache flush (eMMC CMD6 FLUSH_CACHE, SCSI SYNCHRONIZE CACHE) named `tag`.
    pub fn flush(tag: u32) -> Self {
        DevCommand {
            tag,
            op: DevOp::Flush,
            lba: 0,
            sectors: 0,
            fua: false,
            hpb: 0,
        }
    }
}

/// How a command ended (fio counts non-Ok like `err=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevStatus {
    Ok,
    /// The command reached past the device's capacity (or had no sectors).
    OutOfRange,
}

/// What the device hands to the host side (through the engine's `route`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Read data starts to be ready at the emit time; all of it by `last_ready`.
    ReadReady { tag: u32, last_ready: SimTime },
    /// A write, flush or discard finished (or any command failed).
    Done { tag: u32, status: DevStatus },
    /// UFS HPB device control mode: the RESPONSE UPIU of command `tag` carries these
    /// activation/inactivation hints (emitted before the command's own output).
    HpbHints { tag: u32, hints: hpb::HpbHints },
}

/// Inputs of the device: host commands and the device's own timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Command(DevCommand),
    /// The host-data program running on `die` finished (tPROG done).
    ProgramDone {
        die: u32,
    },
    /// The next garbage-collection step on `die` is due.
    GcStep {
        die: u32,
    },
    /// The next row of a foreground housekeeping move on `die` is due (`housekeeping`).
    HousekeepingStep {
        die: u32,
    },
    /// WriteBooster (`write_booster`): the next flush row on `die` is due.
    WbFlushStep {
        die: u32,
    },
    /// WriteBooster: the device checks whether it has been idle long enough to flush.
    WbIdleCheck,
    /// UFS: the link enters (`true`) or leaves hibern8 (the host controller's
    /// auto-hibern8; sent by the UFS driver only to a device with WriteBooster).
    Hibern8(bool),
    /// SD: the open multi-block stream continues with this read or write, data only (no
    /// command; see the contract above).
    Continue(DevCommand),
    /// SD: CMD12 (STOP_TRANSMISSION) closes the open stream; `Done { tag }` follows.
    Stop {
        tag: u32,
    },
}

/// Counters, in 4 KiB units (slots) unless named otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    pub host_read_slots: u64,
    pub host_write_slots: u64,
    /// Reads served from the write buffer.
    pub buffer_read_hits: u64,
    /// Array reads of host data by page type (`nand_timing::PAGE_TYPES`: lower, centre,
    /// upper), as the row each lands on decides.
    pub page_type_reads: [u64; 3],
    /// Array reads that failed ECC at first and were read again (read retry).
    pub read_retry_reads: u64,
    /// Retry steps taken (each one more tR and transfer).
    pub read_retry_steps: u64,
    /// Page reads served from a die's page register (no tR).
    pub page_register_hits: u64,
    /// Pages an SD card read ahead of an open stream that a stop (CMD12) then ended:
    /// array reads done for nothing (`controller.read_ahead`).
    pub read_ahead_discarded_pages: u64,
    /// Array reads (tR) for host data.
    pub nand_page_reads: u64,
    /// Array reads of map pages (map-cache misses and map loads for updates).
    pub nand_map_reads: u64,
    /// Host data slots programmed to NAND.
    pub host_slots_programmed: u64,
    /// Unused slots of partly filled rows programmed at a flush.
    pub padding_slots: u64,
    /// Valid slots copied by GC.
    pub gc_copies: u64,
    pub gc_victims: u64,
    /// GC paced by host writes (`gc_policy`): host rows that waited for the GC copies
    /// they owed, and how long in all.
    pub gc_host_holds: u64,
    pub gc_host_hold_ns: u64,
    /// Held host rows that went when their wait reached the slice bound (`gc_slice`).
    pub gc_slice_ends: u64,
    /// GC steps (victim rows copied) taken below the urgent floor (critical).
    pub gc_urgent_steps: u64,
    pub erases: u64,
    /// Physical NAND pages programmed (host rows, GC rows and housekeeping rows, × planes).
    pub nand_page_programs: u64,
    pub map_hits: u64,
    pub map_misses: u64,
    /// Map loads caused by map updates (programs, GC, discard) rather than lookups.
    pub map_update_loads: u64,
    /// Dirty map segments written back (evicted, or over the dirty limit).
    pub map_writebacks: u64,
    /// Map pages programmed (each gathers several written-back segments).
    pub map_page_programs: u64,
    /// Writes that found the buffer full (counted once per wait).
    pub write_stalls: u64,
    pub write_stall_ns: u64,
    /// 4 KiB writes that overwrote data still waiting in the buffer.
    pub coalesced_writes: u64,
    /// Writes not aligned to 4 KiB (mapped as whole 4 KiB units).
    pub partial_writes: u64,
    pub discarded_slots: u64,
    /// HPB READs whose entry was current: the map lookup was skipped.
    pub hpb_entry_hits: u64,
    /// HPB READs whose entry was stale (data moved since the host loaded it): served
    /// through the normal map path.
    pub hpb_entry_stale: u64,
    /// HPB READ BUFFERs served (subregion map loads) and their map segment lookups.
    pub hpb_read_buffers: u64,
    pub hpb_read_buffer_segments: u64,
    /// HPB WRITE BUFFERs served (region inactivations).
    pub hpb_write_buffers: u64,
    /// Hints sent in responses (device control mode).
    pub hpb_hint_activations: u64,
    pub hpb_hint_inactivations: u64,
    /// Foreground housekeeping moves (`housekeeping`: one per host block opened) and
    /// the slots they moved.
    pub housekeeping_moves: u64,
    pub housekeeping_slots: u64,
    /// WriteBooster (`write_booster`): the SLC buffer's counters.
    pub wb: write_booster::WbStats,
}

impl DeviceStats {
    /// NAND slots written (host data, padding, GC copies) per host slot written.
    pub fn write_amplification(&self) -> f64 {
        if self.host_write_slots == 0 {
            return 0.0;
        }
        (self.host_slots_programmed + self.padding_slots + self.gc_copies) as f64
            / self.host_write_slots as f64
    }
}

/// What every device model (FTL) offers the device: the one interface `Device` calls.
/// The page-mapped FTL (`page_mapped`), the allocation-unit FTL (`allocation_unit`)
/// and the ideal device implement it.
pub trait Model {
    /// One input (a host command, a stream's next data or stop, a timer of its own).
    /// By reference: the input is an event the simulator has just taken off its queue,
    /// and a copy for the call would reload it whole while its parts are still being
    /// stored (a store-forwarding stall on every device step).
    fn handle(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>);
    /// Maps `sectors` from `lba` as already written (see `Device::precondition`).
    fn precondition(&mut self, lba: u64, sectors: u64);
    fn stats(&self) -> &DeviceStats;
    /// Records NAND die and channel work from now on (timelines), where modelled.
    fn record_nand(&mut self) {}
    /// The reported jobs start: the data on the device takes the age of `[wear]
    /// data_age` (`nand_timing`), where modelled.
    fn age_data(&mut self) {}
    /// A write to `lba` is on its way (it entered the host's block layer): the model may
    /// start bringing what that write will read into the processor's cache. A hint for
    /// the simulator's speed that changes no result.
    fn prefetch_write(&mut self, _lba: u64) {}
    /// The NAND work recorded so far.
    fn take_nand_slices(&mut self) -> Vec<crate::trace::NandSlice> {
        Vec::new()
    }
}

/// The device model chosen by the configuration.
pub struct Device {
    inner: Inner,
    capacity_sectors: u64,
}

// The ideal device is small enough; the page-mapped one is boxed.
#[allow(clippy::large_enum_variant)]
enum Inner {
    Ideal(IdealDevice),
    PageMapped(Box<page_mapped::PageMappedDevice>),
    AllocationUnit(Box<allocation_unit::AuDevice>),
}

impl Inner {
    #[inline]
    fn model(&mut self) -> &mut dyn Model {
        match self {
            Inner::Ideal(d) => d,
            Inner::PageMapped(d) => &mut **d,
            Inner::AllocationUnit(d) => &mut **d,
        }
    }
    fn model_ref(&self) -> &dyn Model {
        match self {
            Inner::Ideal(d) => d,
            Inner::PageMapped(d) => &**d,
            Inner::AllocationUnit(d) => &**d,
        }
    }
}

impl Device {
    /// Builds the device. `seed` is the run's: it decides which pages need read
    /// retries (`nand_timing`).
    pub fn new(cfg: &DeviceConfig, seed: u64) -> Device {
        let capacity_sectors = cfg.capacity_bytes / config::SECTOR_BYTES;
        let inner = match &cfg.model {
            DeviceModel::Ideal(i) => Inner::Ideal(IdealDevice {
                cfg: *i,
                busy: crate::engine::FifoResource::new(),
                capacity_sectors,
                stats: DeviceStats::default(),
                content: None,
            }),
            DeviceModel::PageMapped(n) => {
                let mut d = page_mapped::PageMappedDevice::new(n, cfg.capacity_bytes);
                d.set_seed(seed);
                if let Some(h) = cfg.hpb {
                    d.enable_hpb(h);
                }
                if let Some(w) = cfg.write_booster {
                    d.enable_write_booster(w);
                }
                Inner::PageMapped(Box::new(d))
            }
            DeviceModel::AllocationUnit(a) => {
                let mut d = allocation_unit::AuDevice::new(a, cfg.capacity_bytes);
                d.set_seed(seed);
                Inner::AllocationUnit(Box::new(d))
            }
        };
        Device {
            inner,
            capacity_sectors,
        }
    }

    #[inline]
    pub fn handle(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>) {
        self.inner.model().handle(now, input, out)
    }

    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    /// A write to `lba` entered the host's block layer ([`Model::prefetch_write`]).
    #[inline]
    pub fn prefetch_write(&mut self, lba: u64) {
        self.inner.model().prefetch_write(lba)
    }

    /// Maps `sectors` sectors from `lba` as already written (sequentially, flushed),
    /// instantly and without counting host writes: a device that has been in use. Must
    /// be called while the device is quiescent (before any command, or after all
    /// background work). A no-op on the ideal device.
    pub fn precondition(&mut self, lba: u64, sectors: u64) {
        assert!(
            lba + sectors <= self.capacity_sectors,
            "precondition past capacity"
        );
        self.inner.model().precondition(lba, sectors)
    }

    pub fn stats(&self) -> &DeviceStats {
        self.inner.model_ref().stats()
    }

    /// The reported jobs start now: the data on the device is `[wear] data_age` old.
    pub fn age_data(&mut self) {
        self.inner.model().age_data()
    }

    /// The current L2P entries of 4 KiB blocks `first..first + n` (what a READ BUFFER's
    /// data carries when it leaves the device), appended to `out`. The ideal device
    /// has no map: its entries are the block numbers.
    pub fn hpb_entries(&self, first: u32, n: u32, out: &mut Vec<u32>) {
        match &self.inner {
            Inner::PageMapped(d) => out.extend((first..first + n).map(|l| d.page_map().get(l))),
            _ => out.extend(first..first + n),
        }
    }

    /// Records NAND die and channel work from now on (timelines; page-mapped model only).
    pub fn record_nand(&mut self) {
        self.inner.model().record_nand()
    }

    /// The NAND work recorded so far.
    pub fn take_nand_slices(&mut self) -> Vec<crate::trace::NandSlice> {
        self.inner.model().take_nand_slices()
    }

    /// The page-mapped model, if that is what runs (for tests and reports).
    pub fn page_mapped(&self) -> Option<&page_mapped::PageMappedDevice> {
        match &self.inner {
            Inner::PageMapped(d) => Some(d),
            _ => None,
        }
    }

    /// The allocation-unit model, if that is what runs (for tests and reports).
    pub fn allocation_unit(&self) -> Option<&allocation_unit::AuDevice> {
        match &self.inner {
            Inner::AllocationUnit(d) => Some(d),
            _ => None,
        }
    }

    /// Keeps a content tag per 4 KiB from now on (`content`): writes take the tags the
    /// host stages in `content_port`, reads return the tags of what they read there.
    pub fn track_content(&mut self) {
        match &mut self.inner {
            Inner::Ideal(d) => {
                if d.content.is_none() {
                    let lpns = self.capacity_sectors.div_ceil(config::SECTORS_PER_LPN);
                    d.content = Some(Box::new((
                        content::Port::default(),
                        vec![content::UNWRITTEN; lpns as usize],
                    )));
                }
            }
            Inner::PageMapped(d) => d.track_content(),
            Inner::AllocationUnit(d) => d.track_content(),
        }
    }

    /// The host's data port, when content is tracked (`None` otherwise: the one test a
    /// command pays when nothing is tracked).
    #[inline]
    pub fn content_port(&mut self) -> Option<&mut content::Port> {
        match &mut self.inner {
            Inner::Ideal(d) => d.content.as_mut().map(|c| &mut c.0),
            Inner::PageMapped(d) => d.content_port(),
            Inner::AllocationUnit(d) => d.content_port(),
        }
    }

    /// Overwrites the tag of the data `lpn` reads now (tests: a corrupted block).
    pub fn corrupt_content(&mut self, lpn: u64, tag: u32) {
        match &mut self.inner {
            Inner::Ideal(d) => {
                d.content.as_mut().expect("track_content first").1[lpn as usize] = tag
            }
            Inner::PageMapped(d) => d.corrupt_content(lpn as u32, tag),
            Inner::AllocationUnit(d) => d.corrupt_content(lpn, tag),
        }
    }

    /// The page-mapped model, mutable (tests: fault injection).
    pub fn page_mapped_mut(&mut self) -> Option<&mut page_mapped::PageMappedDevice> {
        match &mut self.inner {
            Inner::PageMapped(d) => Some(d),
            _ => None,
        }
    }

    /// The allocation-unit model, mutable (tests: content tracking).
    pub fn allocation_unit_mut(&mut self) -> Option<&mut allocation_unit::AuDevice> {
        match &mut self.inner {
            Inner::AllocationUnit(d) => Some(d),
            _ => None,
        }
    }
}

/// Fixed service times, one command at a time, no NAND.
struct IdealDevice {
    cfg: config::IdealConfig,
    busy: crate::engine::FifoResource,
    capacity_sectors: u64,
    stats: DeviceStats,
    /// Content tags per 4 KiB, when tracked: no FTL, so the logical block is the place.
    content: Option<Box<(content::Port, Vec<u32>)>>,
}

impl Model for IdealDevice {
    fn precondition(&mut self, _lba: u64, _sectors: u64) {}
    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
    fn handle(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>) {
        let cmd = match *input {
            // Fixed service times: a continued stream costs what a command does.
            Input::Command(cmd) | Input::Continue(cmd) => cmd,
            Input::Stop { tag } => {
                out.emit(
                    now,
                    Output::Done {
                        tag,
                        status: DevStatus::Ok,
                    },
                );
                return;
            }
            // No WriteBooster buffer to flush.
            Input::Hibern8(_) => return,
            _ => panic!("the ideal device sets no timers"),
        };
        if cmd.lba + cmd.sectors as u64 > self.capacity_sectors {
            out.emit(
                now,
                Output::Done {
                    tag: cmd.tag,
                    status: DevStatus::OutOfRange,
                },
            );
            return;
        }
        let slots = (cmd.sectors as u64).div_ceil(config::SECTORS_PER_LPN);
        if let Some(c) = &mut self.content {
            let (port, tags) = &mut **c;
            let first = cmd.lba / config::SECTORS_PER_LPN;
            let end = (cmd.lba + cmd.sectors as u64).div_ceil(config::SECTORS_PER_LPN);
            match cmd.op {
                DevOp::Read | DevOp::HpbRead => {
                    for lpn in first..end {
                        port.push_read(cmd.tag, tags[lpn as usize]);
                    }
                }
                DevOp::Write => {
                    for lpn in first..end {
                        tags[lpn as usize] = port.write_tag(cmd.tag, lpn);
                    }
                    port.end_write(cmd.tag);
                }
                DevOp::Discard => {
                    let first = cmd.lba.div_ceil(config::SECTORS_PER_LPN);
                    let end = (cmd.lba + cmd.sectors as u64) / config::SECTORS_PER_LPN;
                    for lpn in first..end {
                        tags[lpn as usize] = content::UNWRITTEN;
                    }
                }
                _ => {}
            }
        }
        let dur = match cmd.op {
            DevOp::Read | DevOp::HpbRead => {
                self.stats.host_read_slots += slots;
                self.cfg.read_ns
            }
            DevOp::ReadBuffer => self.cfg.read_ns,
            DevOp::WriteBuffer => self.cfg.other_ns,
            DevOp::Write => {
                self.stats.host_write_slots += slots;
                self.cfg.write_ns
            }
            DevOp::Flush | DevOp::Discard => self.cfg.other_ns,
        };
        let (_, end) = self.busy.book(now, dur);
        let o = match cmd.op {
            DevOp::Read | DevOp::HpbRead | DevOp::ReadBuffer => Output::ReadReady {
                tag: cmd.tag,
                last_ready: end,
            },
            _ => Output::Done {
                tag: cmd.tag,
                status: DevStatus::Ok,
            },
        };
        out.emit(end, o);
    }
}
