//! A page-mapped flash device (eMMC 5.x without command queue): controller firmware,
//! L2P map cache, write buffer with background drain, page-mapped FTL with greedy GC,
//! NAND channels × dies × planes.
//!
//! ```text
//!  host cmd ─▶ [controller CPU] fw_per_command + fw_per_4kib·n
//!                 │ read: per LPN: write buffer? ─ yes ─▶ ready
//!                 │       map segment cached? ─ no ─▶ [die of map page] tR ─▶ [channel] map page
//!                 │       page register holds the page? ─ no ─▶ [die] tR
//!                 │       [channel] 4 KiB units out ─▶ ReadReady(first ready, last ready)
//!                 │ write: [controller CPU] copy into write buffer (waits for space) ─▶ Done
//!                 ▼
//!  drain (background): a full row (page × planes) ─▶ next die round-robin:
//!        [channel] data in ─▶ [die] tPROG ─▶ ProgramDone: L2P updated, buffer space freed
//!  GC (background, per die, when free blocks < threshold): greedy victim, row by row:
//!        [die] tR (─▶ [channel] out + in if via controller) ─▶ GC row tPROG; then tBERS
//! ```
//!
//! Every resource (controller CPU, each channel, each die) is a `FifoResource`: booking
//! order is service order, so background programs, GC steps and map write-backs delay
//! host work that needs the same die or channel. Die `d` sits on channel
//! `d % channels`, so round-robin over dies alternates channels.
//!
//! Choices and what is left out (document any change here):
//! - Reads emit `ReadReady` and no `Done` (the host finishes a read when the bus
//!   transfer ends); a command outside the capacity gets `Done { OutOfRange }` instead.
//! - Writes are mapped in 4 KiB units; a write that covers part of a 4 KiB unit is
//!   treated as covering all of it (no read-modify-write), and counted.
//! - An array read loads one plane's page register; a command that reads another plane
//!   of the same row right after shares that tR (a multi-plane read). The registers
//!   keep the last page read per plane until a program, erase or map read uses the die;
//!   a later command finds its page there (no tR) only if the preset's
//!   `controller.reuse_page_register` says the firmware trusts them across commands.
//!   No cache read, no program/erase suspend.
//! - NAND times by page type and read retry (`super::nand_timing`): a row's tR and
//!   tPROG are its page type's (its index in the block); an array read of host data or
//!   of a GC victim first books the failed retry steps its page needs (tR and transfer
//!   each), from its block's P/E cycles and data age. Map pages use the map's own
//!   tR/tPROG (`map_cache.t_read`/`t_prog`: the SLC-mode times where firmware keeps
//!   the map in SLC-mode blocks of a TLC die, else the mean tR/tPROG) and do not retry
//!   (SLC-mode pages have short retry tables and rarely need them).
//! - Host data is programmed one row per die at a time; the drain goes to the next die
//!   in round-robin order and waits for it if it is busy, skipping only a die that has
//!   no block to write into until its GC frees one. With `cache_program` (ONFI PROGRAM
//!   PAGE CACHE, 80h-15h) a programming die also takes the next row of the same block:
//!   its data crosses the channel into the cache register once the running program's
//!   data has moved to the data register (from the running program's array start; tCBSY
//!   not modelled), and its array program starts when the running one ends. Without it
//!   the die is held from the row's data-in to the end of its program.
//! - Map pages live in a reserved area outside the data blocks: a miss costs tR plus
//!   the channel transfer of the segment from the die holding it (initially
//!   `segment % dies`). A dirty segment is written back when evicted, or when more than
//!   `map_dirty_limit` segments are dirty (oldest first); written-back segments are
//!   gathered into a map page that is programmed (channel + tPROG) on the next die in
//!   turn when full. Map updates of programs, GC moves and discards mark segments dirty
//!   (loading them in the background if needed). Map pages do not count in write
//!   amplification. Flush does not write back dirty map segments.
//! - A write needs no map lookup: the controller finds buffered data before the map on
//!   reads, and the L2P entry moves to NAND when the program completes (if no newer
//!   write or discard superseded it meanwhile; then the programmed copy is stale).
//! - GC moves are committed to the map when the step is booked; a GC row is programmed
//!   when it is full. GC and host data use separate open blocks per die.
//! - With `gc_pacing` (`super::gc_policy`), a die below the GC threshold takes a host row
//!   only once its GC has made the copies the host rows before it owe (at the victim's
//!   valid/invalid ratio), or the row has waited one slice (bBackgroundOpsTermLat); below
//!   the urgent floor, only once the copies are made. The drain skips a die held so.
//! - Writes are admitted to the buffer one at a time, in arrival order; a write whose
//!   data arrives during another's admission waits in `write_queue` (UFS queues them).
//! - A write is done once its data is in the buffer, except in write-through mode and
//!   for a FUA write (eMMC reliable write, CMD23 bit 31, which JEDEC forces past the
//!   cache to non-volatile storage; SCSI FUA on UFS): those are done once the buffer is
//!   clean, i.e. once their data and everything buffered before it is programmed (the
//!   buffer drains in arrival order; a partial row goes out padded, as for a flush).
//! - An SLC cache only as UFS WriteBooster (`write_booster_flush.rs`); no wear levelling
//!   beyond FIFO reuse of erased blocks, no power loss.
//!   Foreground housekeeping (`housekeeping.rs`, `ftl.housekeeping_move`): a die whose
//!   host block is full then moves that much data (time and counters only).
//! - Content (`super::content`, when tracked): a write's tags go into its buffer slots
//!   as it is admitted (a coalesced overwrite replaces the slot's tag), into the NAND
//!   slots of its row when the row's program is issued, and with each GC copy; an erase
//!   forgets its block's tags. A read returns, per 4 KiB, the tag of the buffer slot or
//!   NAND slot its map entry (or, for the first block of an HPB READ, the host's entry)
//!   names, zero for an unmapped block.
//!
//! Units: ns, bytes. No random stream: the pages that need read retries are a hash of
//! the run's seed, the page and its block's erase count.

use super::config::{GcCopy, NandDeviceConfig, LPN_BYTES, SECTORS_PER_LPN};
use super::content::{BlockTags, Port, UNWRITTEN};
use super::ftl::{Lpn, PageMap, Ppa, Stream, BUF_FLAG, UNMAPPED};
use super::gc_policy::GcPolicy;
use super::hpb::{HpbControl, HpbDevice, HpbDeviceConfig, HPB_ENTRY_BYTES};
use super::map_cache::{MapAccess, MapCache};
use super::nand_timing::BlockAges;
use super::write_buffer::{SlotState, WriteBuffer};
use super::{DevCommand, DevOp, DevStatus, DeviceStats, Input, Output};
use crate::engine::{Divisor, FifoResource, Outbox, Rate, SimTime};
use crate::trace::{NandSlice, NandUnit};

#[path = "housekeeping.rs"]
mod housekeeping;
#[path = "write_booster_flush.rs"]
mod write_booster_flush;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct ActiveWrite {
    tag: u32,
    next: Lpn,
    end: Lpn,
    /// When the data admitted so far is in the buffer.
    ready: SimTime,
    /// Set while waiting for buffer space: since when.
    stalled_since: Option<SimTime>,
    /// Done only once programmed (write-through mode, or a reliable/FUA write).
    through: bool,
}

#[derive(Clone, Copy, Debug)]
struct GcState {
    victim: u32,
    row: u32,
    scheduled: bool,
}

/// The host program running on a die: (buffer slot, lpn, ppa) per 4 KiB; with cache
/// program, also the next row, waiting in the cache register for the array.
struct DieProgram {
    units: Vec<(u32, Lpn, Ppa)>,
    active: bool,
    /// Cache program: the row sent while `units` programs (it programs next).
    cached: Vec<(u32, Lpn, Ppa)>,
    cached_active: bool,
    /// When the running program's array phase starts: its data has left the cache
    /// register for the data register, so the next row's data may come in.
    array_start: SimTime,
    /// When the cached row's array phase starts (the running program's end).
    cached_array_start: SimTime,
    /// Block of the running program's row (cache program stays within a block).
    block: u32,
}

pub struct PageMappedDevice {
    c: NandDeviceConfig,
    capacity_sectors: u64,
    /// As a multiply (`engine::Divisor`): every read divides a slot by it.
    slots_per_page: Divisor,
    slots_per_row: u32,
    /// `c.channels` and `c.map_entries_per_segment`, likewise.
    channels_div: Divisor,
    segment_div: Divisor,
    /// `c.channel_bytes_per_s` and `c.buffer_copy_bytes_per_s` as `engine::Rate`s: a
    /// read's page and a write's row cross the channel, a write's data the buffer.
    channel_rate: Rate,
    buffer_copy_rate: Rate,
    ftl: PageMap,
    map: MapCache,
    buf: WriteBuffer,
    ctrl: FifoResource,
    channels: Vec<FifoResource>,
    dies: Vec<FifoResource>,
    /// Page id (`ppa / slots_per_page`) held in each die-plane's page register.
    page_reg: Vec<u32>,
    die_prog: Vec<DieProgram>,
    gc: Vec<GcState>,
    /// When host rows may go while GC runs (`super::gc_policy`).
    gc_policy: GcPolicy,
    rr: u32,
    active_write: Option<ActiveWrite>,
    /// Writes whose data arrived while `active_write` was being admitted, in arrival order.
    write_queue: std::collections::VecDeque<ActiveWrite>,
    /// A flush waiting for the buffer to drain: (tag, firmware done).
    flush: Option<(u32, SimTime)>,
    /// Write-through writes and FUA (reliable) writes whose data is in the buffer, done
    /// once the buffer is clean, i.e. their data and all buffered before it is
    /// programmed (tag, data in).
    programming_writes: Vec<(u32, SimTime)>,
    buffer_data_ready: SimTime,
    /// When the last read's data was all ready (an SD stream continues reading from there).
    stream_read_ready: SimTime,
    /// The LPN after the last read's end: where an SD stream's read-ahead goes on.
    stream_next_lpn: Lpn,
    /// A write arrived since the last SD stop (CMD12 commits only after writes).
    open_write: bool,
    /// Die holding each map segment's current copy in NAND.
    seg_die: Vec<u16>,
    /// Dirty segments gathered for the next map page program, and its die.
    map_batch_bytes: u64,
    map_batch_die: u32,
    stats: DeviceStats,
    take_scratch: Vec<(u32, u32)>,
    /// The LPN of the last write hinted (`Model::prefetch_write`).
    prefetched: Lpn,
    gc_scratch: Vec<(Lpn, Ppa)>,
    /// Die and channel work booked, when recording (timelines).
    nand_log: Option<Vec<NandSlice>>,
    /// UFS HPB, when the device has it and the host uses it (`super::hpb`).
    hpb: Option<HpbDevice>,
    /// Content tags, when tracked (`super::content`).
    content: Option<Box<PmContent>>,
    /// When each block's data was programmed (read retry grows with its age).
    ages: BlockAges,
    /// The run's seed: which pages need read retries (`super::nand_timing`).
    seed: u64,
    /// Rows of foreground housekeeping still to move, per die (`housekeeping.rs`).
    hk_rows: Vec<u32>,
    /// UFS WriteBooster's SLC buffer, when the device has one (`write_booster_flush.rs`).
    wb: Option<Box<super::write_booster::SlcBuffer>>,
}

/// The tags of the data the device holds: per write buffer slot and per NAND slot.
struct PmContent {
    port: Port,
    nand: BlockTags,
    buf: Vec<u32>,
    /// A deliberately broken GC (tests of verify): each copy takes the tag of the
    /// slot after its source.
    gc_fault: bool,
}

impl PageMappedDevice {
    /// Records the die and channel work booked from now on.
    pub fn record_nand(&mut self) {
        self.nand_log = Some(Vec::new());
    }

    /// The die and channel work recorded so far.
    pub fn take_nand_slices(&mut self) -> Vec<NandSlice> {
        self.nand_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    #[cold]
    #[inline(never)]
    fn note_nand(&mut self, unit: NandUnit, start: SimTime, end: SimTime, label: &'static str) {
        if let Some(log) = &mut self.nand_log {
            log.push(NandSlice {
                unit,
                start,
                end,
                label,
            });
        }
    }

    /// Books `dur` on die `die` (recorded as `label` when recording).
    #[inline]
    fn book_die(
        &mut self,
        die: u32,
        label: &'static str,
        ready: SimTime,
        dur: u64,
    ) -> (SimTime, SimTime) {
        let (start, end) = self.dies[die as usize].book(ready, dur);
        if self.nand_log.is_some() {
            self.note_nand(NandUnit::Die(die), start, end, label);
        }
        (start, end)
    }

    /// Books `dur` on channel `ch` (recorded as `label` when recording).
    #[inline]
    fn book_ch(
        &mut self,
        ch: usize,
        label: &'static str,
        ready: SimTime,
        dur: u64,
    ) -> (SimTime, SimTime) {
        let (start, end) = self.channels[ch].book(ready, dur);
        if self.nand_log.is_some() {
            self.note_nand(NandUnit::Channel(ch as u32), start, end, label);
        }
        (start, end)
    }

    pub fn new(c: &NandDeviceConfig, capacity_bytes: u64) -> PageMappedDevice {
        let user_lpns = capacity_bytes.div_ceil(LPN_BYTES);
        assert!(user_lpns < BUF_FLAG as u64);
        let dies = c.dies();
        assert!(dies <= u16::MAX as u32 + 1);
        let ftl = PageMap::new(
            user_lpns as u32,
            dies,
            c.blocks_per_plane,
            c.slots_per_row(),
            c.pages_per_block,
            c.gc_threshold_blocks,
        );
        let segments = user_lpns.div_ceil(c.map_entries_per_segment as u64) as u32;
        let row = c.slots_per_row() as usize;
        PageMappedDevice {
            capacity_sectors: capacity_bytes / super::config::SECTOR_BYTES,
            slots_per_page: Divisor::new(c.slots_per_page()),
            slots_per_row: c.slots_per_row(),
            channels_div: Divisor::new(c.channels),
            segment_div: Divisor::new(c.map_entries_per_segment),
            channel_rate: Rate::new(c.channel_bytes_per_s),
            buffer_copy_rate: Rate::new(c.buffer_copy_bytes_per_s),
            ftl,
            map: MapCache::new(segments, c.map_cache_segments()),
            buf: WriteBuffer::new(c.write_buffer_slots()),
            ctrl: FifoResource::new(),
            channels: vec![FifoResource::new(); c.channels as usize],
            dies: vec![FifoResource::new(); dies as usize],
            page_reg: vec![NONE; (dies * c.planes_per_die) as usize],
            die_prog: (0..dies)
                .map(|_| DieProgram {
                    units: Vec::with_capacity(row),
                    active: false,
                    cached: Vec::with_capacity(row),
                    cached_active: false,
                    array_start: 0,
                    cached_array_start: 0,
                    block: NONE,
                })
                .collect(),
            gc: vec![
                GcState {
                    victim: NONE,
                    row: 0,
                    scheduled: false
                };
                dies as usize
            ],
            gc_policy: GcPolicy::new(
                c.gc_pacing,
                c.gc_threshold_blocks,
                c.slots_per_row() * c.pages_per_block,
                dies,
            ),
            rr: 0,
            active_write: None,
            write_queue: std::collections::VecDeque::new(),
            flush: None,
            programming_writes: Vec::new(),
            buffer_data_ready: 0,
            stream_read_ready: 0,
            stream_next_lpn: 0,
            open_write: false,
            seg_die: (0..segments).map(|s| (s % dies) as u16).collect(),
            map_batch_bytes: 0,
            map_batch_die: 0,
            stats: DeviceStats::default(),
            take_scratch: vec![(0, 0); row],
            prefetched: Lpn::MAX,
            gc_scratch: vec![(0, 0); row],
            nand_log: None,
            hpb: None,
            content: None,
            ages: BlockAges::new(dies * c.blocks_per_plane),
            seed: 0,
            hk_rows: vec![0; dies as usize],
            wb: None,
            c: c.clone(),
        }
    }

    /// The run's seed, which decides the pages that need read retries.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// The reported jobs start: the data is `[wear] data_age` old, and the device has
    /// been idle since it was written (its WriteBooster buffer flushed).
    pub fn age_data(&mut self) {
        self.ages.age_all(self.c.timing.wear_data_age_ns);
        self.wb_settle();
    }

    /// Row `row`'s index within its block (its page type follows from it).
    #[inline]
    fn row_in_block(&self, ppa: Ppa) -> u32 {
        self.ftl.row_in_block(ppa)
    }

    /// The failed attempts of an array read of the page holding `ppa` (`t_r` and the
    /// transfer of `bytes` to the controller's ECC each; `super::nand_timing`), booked
    /// from `t`. Returns when the last one ends (`t` if the page reads at once).
    fn read_retries(&mut self, ppa: Ppa, t_r: u64, bytes: u64, t: SimTime) -> SimTime {
        let block = self.ftl.block_of(ppa);
        let erases = self.ftl.erase_count(block);
        let age = self.ages.age(block, t);
        let page = self.slots_per_page.quotient(ppa);
        let steps = self.c.timing.retry_steps(self.seed, page, erases, age);
        if steps == 0 {
            return t;
        }
        self.stats.read_retry_reads += 1;
        self.stats.read_retry_steps += steps as u64;
        let die = self.ftl.die_of(ppa);
        let ch = self.channel_of(die);
        let xfer = self.channel_rate.ns(bytes);
        let mut t = t;
        for _ in 0..steps {
            let (_, tr_end) = self.book_die(die, "read retry", t, t_r);
            let (_, xend) = self.book_ch(ch, "retry out", tr_end, xfer);
            self.book_die(die, "retry out", tr_end, xend - tr_end);
            t = xend;
        }
        t
    }

    /// Keeps a content tag per 4 KiB from now on (see `super::content`).
    pub fn track_content(&mut self) {
        if self.content.is_none() {
            self.content = Some(Box::new(PmContent {
                port: Port::default(),
                nand: BlockTags::new(
                    self.ftl.blocks() + self.wb_blocks(),
                    self.ftl.slots_per_block(),
                ),
                buf: vec![UNWRITTEN; self.buf.capacity() as usize],
                gc_fault: false,
            }));
            // Data already on the device is data, but no fio write's.
            let c = self.content.as_mut().unwrap();
            let mut lpn = 0;
            while lpn < self.ftl.user_lpns() {
                if !self.ftl.run_touched(lpn) {
                    lpn = self.ftl.next_run_start(lpn);
                    continue;
                }
                let e = self.ftl.get(lpn);
                if e != UNMAPPED && e & BUF_FLAG == 0 {
                    c.nand.set(e, UNWRITTEN);
                }
                lpn += 1;
            }
        }
    }

    /// The host data port, when content is tracked.
    pub fn content_port(&mut self) -> Option<&mut Port> {
        self.content.as_mut().map(|c| &mut c.port)
    }

    /// The tag a read of `lpn` returns now (content tracked).
    pub fn content_of(&self, lpn: Lpn) -> u32 {
        let c = self.content.as_ref().expect("track_content first");
        let e = self.ftl.get(lpn);
        if e == UNMAPPED {
            UNWRITTEN
        } else if e & BUF_FLAG != 0 {
            c.buf[(e & !BUF_FLAG) as usize]
        } else {
            c.nand.get(e)
        }
    }

    /// Overwrites the tag where `lpn`'s data is now (tests: a corrupted block).
    pub fn corrupt_content(&mut self, lpn: Lpn, tag: u32) {
        let e = self.ftl.get(lpn);
        let c = self.content.as_mut().expect("track_content first");
        if e == UNMAPPED {
            return;
        }
        if e & BUF_FLAG != 0 {
            c.buf[(e & !BUF_FLAG) as usize] = tag;
        } else {
            c.nand.set(e, tag);
        }
    }

    /// Breaks GC on purpose (tests of verify): each copy takes its neighbour's data.
    pub fn break_gc_copy(&mut self) {
        self.content.as_mut().expect("track_content first").gc_fault = true;
    }

    /// Erase blocks holding content tags now.
    pub fn content_blocks_held(&self) -> usize {
        self.content.as_ref().map_or(0, |c| c.nand.blocks_held())
    }

    /// GC moved `lpn`'s data from `src` to `dst`: its tag moves with it.
    fn content_copy(&mut self, src: Ppa, dst: Ppa) {
        if let Some(c) = &mut self.content {
            let from = if c.gc_fault { src ^ 1 } else { src };
            let v = c.nand.get(from);
            c.nand.set(dst, v);
        }
    }

    fn content_erase(&mut self, block: u32) {
        if let Some(c) = &mut self.content {
            c.nand.erase(block);
        }
    }

    /// What read `cmd` returns, per 4 KiB, into the port (`hpb_first`: the first block
    /// is read where the host's HPB entry says).
    fn content_read(&mut self, cmd: &DevCommand, hpb_first: bool) {
        let (first, end) = Self::lpn_range(cmd);
        let Some(c) = &mut self.content else {
            return;
        };
        for lpn in first..end {
            let e = if lpn == first && hpb_first {
                cmd.hpb
            } else {
                self.ftl.get(lpn)
            };
            let v = if e == UNMAPPED {
                UNWRITTEN
            } else if e & BUF_FLAG != 0 {
                c.buf[(e & !BUF_FLAG) as usize]
            } else {
                c.nand.get(e)
            };
            c.port.push_read(cmd.tag, v);
        }
    }

    /// Turns the HPB commands on (a UFS device whose host uses HPB).
    pub fn enable_hpb(&mut self, cfg: HpbDeviceConfig) {
        self.hpb = Some(HpbDevice::new(cfg, self.ftl.user_lpns()));
    }

    /// The device's HPB state, if enabled.
    pub fn hpb(&self) -> Option<&HpbDevice> {
        self.hpb.as_ref()
    }

    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }
    pub fn page_map(&self) -> &PageMap {
        &self.ftl
    }
    pub fn write_buffer(&self) -> &WriteBuffer {
        &self.buf
    }
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }
    /// Busy time of (controller, channels, dies) so far.
    pub fn busy_ns(&self) -> (u64, Vec<u64>, Vec<u64>) {
        (
            self.ctrl.busy_ns(),
            self.channels.iter().map(|r| r.busy_ns()).collect(),
            self.dies.iter().map(|r| r.busy_ns()).collect(),
        )
    }
    /// No host command pending, nothing buffered, no GC running.
    pub fn is_quiescent(&self) -> bool {
        self.active_write.is_none()
            && self.write_queue.is_empty()
            && self.flush.is_none()
            && self.programming_writes.is_empty()
            && self.buf.is_clean()
            && self.gc.iter().all(|g| g.victim == NONE && !g.scheduled)
            && self.hk_rows.iter().all(|&r| r == 0)
            && self
                .wb
                .as_ref()
                .is_none_or(|w| w.flush_scheduled.iter().all(|&s| !s))
    }

    /// Full consistency check (slow; tests): the FTL's invariants, and every L2P entry
    /// that names a buffer slot names a live slot holding that LPN.
    pub fn check_invariants(&self) {
        self.ftl.check_invariants();
        let mut live = 0;
        for lpn in 0..self.ftl.user_lpns() {
            let e = self.ftl.get(lpn);
            if e != UNMAPPED && e & BUF_FLAG != 0 {
                let slot = e & !BUF_FLAG;
                let st = self.buf.state(slot);
                assert!(
                    st == SlotState::Waiting || st == SlotState::InFlight,
                    "lpn {lpn} names buffer slot {slot} in state {st:?}"
                );
                assert_eq!(self.buf.lpn(slot), lpn);
                live += 1;
            }
        }
        assert!(live <= self.buf.waiting() + self.buf.in_flight());
        assert!(
            self.buf.free_slots() + self.buf.waiting() + self.buf.in_flight()
                <= self.buf.capacity()
        );
    }

    /// Maps the sectors `lba..lba + sectors` as if they had been written sequentially and
    /// flushed, without simulated time passing and without counting host writes (a
    /// device already in use). Rows go round-robin over the dies; GC runs as needed, also
    /// instantly. The map cache and page registers are left as they were. Only on a
    /// quiescent device.
    pub fn precondition(&mut self, lba: u64, sectors: u64) {
        assert!(self.is_quiescent(), "precondition on a busy device");
        let first = (lba / SECTORS_PER_LPN) as Lpn;
        let end = (lba + sectors)
            .div_ceil(SECTORS_PER_LPN)
            .min(self.ftl.user_lpns() as u64) as Lpn;
        let dies = self.c.dies();
        if self.content.is_none() {
            // On a fresh device the layout is a formula (`ftl::PageMap::map_sequential`).
            if let Some(rr) = self.ftl.map_sequential(first, end, self.rr) {
                self.rr = rr;
                for d in 0..dies {
                    self.invalidate_registers(d);
                }
                return;
            }
        }
        let mut base = 0;
        let mut pos = self.slots_per_row;
        for lpn in first..end {
            if pos == self.slots_per_row {
                let d = loop {
                    if let Some(d) = (0..dies)
                        .map(|i| (self.rr + i) % dies)
                        .find(|&d| self.ftl.can_alloc_host(d))
                    {
                        break d;
                    }
                    let progressed = (0..dies).any(|d| self.instant_gc(d));
                    assert!(progressed, "precondition: device full");
                };
                base = self.ftl.alloc_row(d, Stream::Host).unwrap();
                pos = 0;
                self.rr = (d + 1) % dies;
                while self.ftl.needs_gc(d) && self.instant_gc(d) {}
            }
            let ppa = base + pos;
            self.ftl.supersede(lpn, UNMAPPED);
            self.ftl.place(ppa, lpn);
            self.ftl.complete(ppa, lpn, true);
            if let Some(c) = &mut self.content {
                // Data that is there, but no fio write's.
                c.nand.set(ppa, UNWRITTEN);
            }
            pos += 1;
        }
        for d in 0..dies {
            self.invalidate_registers(d);
        }
    }

    /// One whole GC pass on `die` taking no time (preconditioning). False if there was
    /// no victim.
    fn instant_gc(&mut self, die: u32) -> bool {
        let Some(victim) = self.ftl.pick_victim(die) else {
            return false;
        };
        let mut scratch = std::mem::take(&mut self.gc_scratch);
        for row in 0..self.ftl.rows_per_block() {
            let n = self.ftl.valid_in_row(victim, row, &mut scratch);
            for &(lpn, src) in &scratch[..n] {
                let dst = self
                    .ftl
                    .alloc_slot(die, Stream::Gc)
                    .expect("GC has a block");
                self.ftl.relocate(lpn, src, dst);
                self.content_copy(src, dst);
            }
        }
        self.gc_scratch = scratch;
        self.ftl.erase(victim);
        self.content_erase(victim);
        true
    }

    /// `step` on an input by value (tests and the device harness).
    pub fn handle(&mut self, now: SimTime, input: Input, out: &mut Outbox<Input, Output>) {
        self.step(now, &input, out)
    }

    /// One input: the device layer's `handle` (`Model::handle`).
    pub fn step(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>) {
        match *input {
            Input::Command(cmd) => {
                self.command(now, cmd, out);
                self.hpb_hints(now, cmd.tag, out);
                self.wb_command(now, out);
            }
            Input::WbFlushStep { die } => self.wb_flush_step(now, die, out),
            Input::WbIdleCheck => self.wb_idle_check(now, out),
            Input::Hibern8(enter) => self.wb_hibern8(now, enter, out),
            Input::ProgramDone { die } => self.program_done(now, die, out),
            Input::GcStep { die } => self.gc_step(now, die, out),
            Input::HousekeepingStep { die } => self.housekeeping_step(now, die, out),
            Input::Continue(cmd) => self.stream_continue(now, cmd, out),
            Input::Stop { tag } if self.open_write => {
                // CMD12 after a write: commit what the buffer holds, as a flush does.
                self.open_write = false;
                self.flush_cmd(now, DevCommand::flush(tag), out)
            }
            Input::Stop { tag } => {
                // CMD12 after a read: the firmware ends the read-ahead; the array reads
                // it had started by now still run to their end.
                self.read_ahead_until(now);
                let (_, t) = self.ctrl.book(now, self.c.fw_per_command_ns);
                out.emit(
                    t,
                    Output::Done {
                        tag,
                        status: DevStatus::Ok,
                    },
                );
            }
        }
    }

    fn command(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let end = cmd.lba + cmd.sectors as u64;
        let dataless = matches!(cmd.op, DevOp::Flush | DevOp::WriteBuffer);
        if end > self.capacity_sectors || (cmd.sectors == 0 && !dataless) {
            let (_, t) = self.ctrl.book(now, self.c.fw_per_command_ns);
            out.emit(
                t,
                Output::Done {
                    tag: cmd.tag,
                    status: DevStatus::OutOfRange,
                },
            );
            return;
        }
        match cmd.op {
            DevOp::Read => self.read(now, cmd, out),
            DevOp::Write => self.write(now, cmd, out),
            DevOp::Flush => self.flush_cmd(now, cmd, out),
            DevOp::Discard => self.discard(now, cmd, out),
            DevOp::HpbRead => self.read(now, cmd, out),
            DevOp::ReadBuffer => self.hpb_read_buffer(now, cmd, out),
            DevOp::WriteBuffer => self.hpb_write_buffer(now, cmd, out),
        }
    }

    // ------------------------------------------------------------ HPB (`super::hpb`)

    /// Device control mode: the response of command `tag` carries the hints decided so
    /// far (at most 2 + 2).
    fn hpb_hints(&mut self, now: SimTime, tag: u32, out: &mut Outbox<Input, Output>) {
        let Some(h) = &mut self.hpb else {
            return;
        };
        if h.cfg.control != HpbControl::Device {
            return;
        }
        if let Some(hints) = h.take_hints() {
            self.stats.hpb_hint_activations += hints.act_n as u64;
            self.stats.hpb_hint_inactivations += hints.inact_n as u64;
            out.emit(now, Output::HpbHints { tag, hints });
        }
    }

    /// HPB READ BUFFER: the subregion's map segments are looked up (cached, or read
    /// from NAND), converted to 8-byte entries and sent.
    fn hpb_read_buffer(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let (first, end) = Self::lpn_range(&cmd);
        let map_bytes = (end - first) as u64 * HPB_ENTRY_BYTES;
        let (_, mut t) = self.ctrl.book(now, self.c.fw_per_command_ns);
        let (s0, s1) = (self.segment_of(first), self.segment_of(end - 1));
        for seg in s0..=s1 {
            t = self.map_lookup(seg, t);
            self.stats.hpb_read_buffer_segments += 1;
        }
        let convert = self.c.fw_per_4kib_ns * map_bytes.div_ceil(LPN_BYTES);
        let (_, ready) = self.ctrl.book(t, convert);
        self.stats.hpb_read_buffers += 1;
        if let Some(h) = &mut self.hpb {
            h.note_loaded(cmd.hpb);
        }
        out.emit(
            ready,
            Output::ReadReady {
                tag: cmd.tag,
                last_ready: ready,
            },
        );
    }

    /// HPB WRITE BUFFER 01h/03h: the host dropped a region (or all).
    fn hpb_write_buffer(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let (_, t) = self.ctrl.book(now, self.c.fw_per_command_ns);
        self.stats.hpb_write_buffers += 1;
        if let Some(h) = &mut self.hpb {
            h.inactivate((cmd.hpb != super::HPB_ALL_REGIONS).then_some(cmd.hpb));
        }
        out.emit(
            t,
            Output::Done {
                tag: cmd.tag,
                status: DevStatus::Ok,
            },
        );
    }

    #[inline]
    fn lpn_range(cmd: &DevCommand) -> (Lpn, Lpn) {
        let first = cmd.lba / SECTORS_PER_LPN;
        let end = (cmd.lba + cmd.sectors as u64).div_ceil(SECTORS_PER_LPN);
        (first as Lpn, end as Lpn)
    }

    #[inline]
    fn fw_ns(&self, lpns: u32) -> u64 {
        self.c.fw_per_command_ns + self.c.fw_per_4kib_ns * lpns as u64
    }

    #[inline]
    fn channel_of(&self, die: u32) -> usize {
        self.channels_div.remainder(die) as usize
    }

    fn invalidate_registers(&mut self, die: u32) {
        let p = self.c.planes_per_die as usize;
        let lo = die as usize * p;
        self.page_reg[lo..lo + p].fill(NONE);
    }

    // ------------------------------------------------------------ map cache

    /// Looks `segment` up for a host command starting at `t`; returns when the entry is
    /// known. A miss reads the map page from NAND first.
    fn map_lookup(&mut self, segment: u32, t: SimTime) -> SimTime {
        let t = match self.map.access(segment, false) {
            MapAccess::Hit => {
                self.stats.map_hits += 1;
                t
            }
            MapAccess::Miss { evicted_dirty } => {
                self.stats.map_misses += 1;
                let loaded = self.map_load(segment, t);
                if let Some(seg) = evicted_dirty {
                    self.map_writeback(seg, loaded);
                }
                loaded
            }
        };
        self.ctrl.book(t, self.c.map_lookup_ns).1
    }

    /// A map update (program completed, GC move, discard): the segment becomes dirty;
    /// if it is not cached it is loaded first (background NAND read).
    fn map_update(&mut self, segment: u32, t: SimTime) {
        let mut t = t;
        if let MapAccess::Miss { evicted_dirty } = self.map.access(segment, true) {
            self.stats.map_update_loads += 1;
            t = self.map_load(segment, t);
            if let Some(seg) = evicted_dirty {
                self.map_writeback(seg, t);
            }
        }
        self.enforce_dirty_limit(t);
    }

    /// Writes back the oldest dirty segments while more are dirty than allowed. The
    /// check runs on every write, inline; the write-back, rarer, out of line
    /// (docs/performance.md).
    #[inline(always)]
    fn enforce_dirty_limit(&mut self, t: SimTime) {
        if self.map.dirty_count() > self.c.map_dirty_limit {
            self.write_back_dirty(t);
        }
    }

    /// `enforce_dirty_limit`'s write-back of the oldest dirty segments.
    #[inline(never)]
    fn write_back_dirty(&mut self, t: SimTime) {
        while self.map.dirty_count() > self.c.map_dirty_limit {
            let seg = self
                .map
                .pop_oldest_dirty()
                .expect("dirty count without a dirty segment");
            self.map_writeback(seg, t);
        }
    }

    /// Reads map page `segment` from the die holding it: tR, then the segment over the
    /// channel.
    fn map_load(&mut self, segment: u32, t: SimTime) -> SimTime {
        let die = self.seg_die[segment as usize] as u32;
        let ch = self.channel_of(die);
        let (_, tr_end) = self.book_die(die, "map read", t, self.c.map_t_read_ns);
        self.page_reg[(die * self.c.planes_per_die) as usize] = NONE;
        let xfer = self.channel_rate.ns(self.c.map_segment_bytes());
        let (_, end) = self.book_ch(ch, "map out", tr_end, xfer);
        self.book_die(die, "map out", tr_end, end - tr_end);
        self.stats.nand_map_reads += 1;
        end
    }

    /// Writes dirty segment `segment` back: it joins the map page being gathered, which
    /// is programmed (channel in, tPROG) on the next die in turn once it is full.
    fn map_writeback(&mut self, segment: u32, t: SimTime) {
        let seg_bytes = self.c.map_segment_bytes();
        self.stats.map_writebacks += 1;
        self.seg_die[segment as usize] = self.map_batch_die as u16;
        self.map_batch_bytes += seg_bytes;
        if self.map_batch_bytes + seg_bytes > self.c.page_bytes {
            let die = self.map_batch_die;
            let ch = self.channel_of(die);
            let start = t.max(self.dies[die as usize].free_at());
            let xfer = self.channel_rate.ns(self.map_batch_bytes);
            let (_, xend) = self.book_ch(ch, "map in", start, xfer);
            self.book_die(
                die,
                "map program",
                start,
                xend - start + self.c.map_t_prog_ns,
            );
            self.invalidate_registers(die);
            self.stats.map_page_programs += 1;
            self.map_batch_bytes = 0;
            self.map_batch_die = (die + 1) % self.c.dies();
        }
    }

    fn hpb_entry_check_ns(&self) -> u64 {
        self.hpb.as_ref().map_or(0, |h| h.cfg.entry_check_ns)
    }

    #[inline]
    fn segment_of(&self, lpn: Lpn) -> u32 {
        self.segment_div.quotient(lpn)
    }

    // ------------------------------------------------------------ read

    /// SD stream continuation (data only, no command decode). A read continues from
    /// when the previous part of the stream was ready (read-ahead while the host was
    /// away: the first `controller.read_ahead` bytes of it, or all of it when that is
    /// not bounded); its data is announced no earlier than now.
    fn stream_continue(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let end = cmd.lba + cmd.sectors as u64;
        if end > self.capacity_sectors || cmd.sectors == 0 {
            return self.command(now, cmd, out);
        }
        let (first, last) = Self::lpn_range(&cmd);
        let fw = self.c.fw_per_4kib_ns * (last - first) as u64;
        match cmd.op {
            DevOp::Read => {
                let from = self.stream_read_ready.min(now);
                let early_until = match self.c.read_ahead_bytes {
                    Some(b) => first.saturating_add((b / LPN_BYTES) as Lpn),
                    None => Lpn::MAX,
                };
                self.read_from(now, from, early_until, fw, false, cmd, out)
            }
            DevOp::Write => self.write_with(now, fw, cmd, out),
            _ => panic!("only reads and writes stream"),
        }
    }

    /// A bounded read-ahead ended by a stop at `now`: the card had gone on reading the
    /// stream's next `controller.read_ahead` bytes from when its last data was ready;
    /// each page read that had started by `now` holds its die and channel to its end
    /// (a later command waits for it), the rest never start. The data is discarded.
    /// Unbounded read-ahead (no `read_ahead`) is not booked: it stays the free credit
    /// of a continuation.
    fn read_ahead_until(&mut self, now: SimTime) {
        let Some(bytes) = self.c.read_ahead_bytes else {
            return;
        };
        let first = self.stream_next_lpn;
        let lpns = (self.capacity_sectors / SECTORS_PER_LPN) as Lpn;
        let end = first.saturating_add((bytes / LPN_BYTES) as Lpn).min(lpns);
        let avail = self.stream_read_ready;
        let mut last_tr = (NONE, NONE);
        let mut lpn = first;
        while lpn < end {
            let e = self.ftl.get(lpn);
            if e == UNMAPPED || e & BUF_FLAG != 0 {
                lpn += 1;
                continue;
            }
            let page = self.slots_per_page.quotient(e);
            let mut units = 1;
            while lpn + units < end {
                let n = self.ftl.get(lpn + units);
                if n == UNMAPPED || n & BUF_FLAG != 0 || self.slots_per_page.quotient(n) != page {
                    break;
                }
                units += 1;
            }
            let die = self.ftl.die_of(e);
            let same_row = last_tr == (die, self.ftl.row_of(e));
            if !same_row && avail.max(self.dies[die as usize].free_at()) >= now {
                // Its array read had not started when the stop came (the card reads
                // in stream order); a page of a row already read comes with it.
                break;
            }
            self.read_page(e, units, avail, &mut last_tr);
            self.stats.read_ahead_discarded_pages += 1;
            lpn += units;
        }
    }

    fn read(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let (first, end) = Self::lpn_range(&cmd);
        let fw = self.fw_ns(end - first);
        // An HPB READ's entry is used if it is still the first block's mapping.
        let hpb_valid = match cmd.op {
            DevOp::HpbRead => {
                let valid = cmd.hpb == self.ftl.get(first);
                if valid {
                    self.stats.hpb_entry_hits += 1;
                } else {
                    self.stats.hpb_entry_stale += 1;
                }
                valid
            }
            _ => false,
        };
        if let Some(h) = &mut self.hpb {
            h.note_read(first, end, !hpb_valid);
        }
        self.read_from(now, now, Lpn::MAX, fw, hpb_valid, cmd, out)
    }

    /// A read whose firmware work (`fw`) may start at `from` (now, or earlier for a
    /// read-ahead stream continuation, whose array reads of LPNs from `early_until` on
    /// start no earlier than `now`); `ReadReady` is emitted no earlier than `now`.
    /// `hpb_first`: an HPB READ whose entry is current, so its first block needs no
    /// map lookup.
    #[allow(clippy::too_many_arguments)]
    fn read_from(
        &mut self,
        now: SimTime,
        from: SimTime,
        early_until: Lpn,
        fw: u64,
        hpb_first: bool,
        cmd: DevCommand,
        out: &mut Outbox<Input, Output>,
    ) {
        let (first, end) = Self::lpn_range(&cmd);
        let n = end - first;
        self.stats.host_read_slots += n as u64;
        if !self.c.reuse_page_register {
            // The firmware reads the array for every command: no register is trusted
            // from an earlier one.
            self.page_reg.fill(NONE);
        }
        let (_, t0) = self.ctrl.book(from, fw);
        let mut first_ready = None;
        let mut last_ready = t0;
        let mut t_map = t0;
        let mut last_seg = NONE;
        // The current group: consecutive LPNs in one NAND page.
        let mut g_page = NONE;
        let mut g_ppa: Ppa = 0;
        let mut g_units = 0u32;
        let mut g_avail = 0;
        // (die, row) of the last array read of this command: a multi-plane read.
        let mut last_tr = (NONE, NONE);
        for lpn in first..end {
            let e = self.ftl.get(lpn);
            let in_buffer = e != UNMAPPED && e & BUF_FLAG != 0;
            let seg = self.segment_of(lpn);
            if lpn == first && hpb_first {
                // HPB READ with a current entry: the address is known without the map
                // (the entry is checked instead). The next block of the same segment
                // still needs the map: only the first block's entry is carried.
                t_map = self.ctrl.book(t_map, self.hpb_entry_check_ns()).1;
            } else if !in_buffer && seg != last_seg {
                t_map = self.map_lookup(seg, t_map);
                last_seg = seg;
            }
            let page = if in_buffer || e == UNMAPPED {
                NONE
            } else {
                self.slots_per_page.quotient(e)
            };
            if page != NONE && page == g_page {
                g_units += 1;
                continue;
            }
            // The group ends here: its data is ready before anything after it.
            if g_page != NONE {
                let r = self.read_page(g_ppa, g_units, g_avail, &mut last_tr);
                first_ready.get_or_insert(r);
                last_ready = last_ready.max(r);
                g_page = NONE;
            }
            if in_buffer {
                // Newest data is in the write buffer: found before any map lookup.
                self.stats.buffer_read_hits += 1;
                first_ready.get_or_insert(t0);
            } else if e == UNMAPPED {
                // Never written or discarded: the device returns zeroes.
                first_ready.get_or_insert(t_map);
                last_ready = last_ready.max(t_map);
            } else {
                g_page = page;
                g_ppa = e;
                g_units = 1;
                g_avail = if lpn >= early_until {
                    t_map.max(now)
                } else {
                    t_map
                };
            }
        }
        if g_page != NONE {
            let r = self.read_page(g_ppa, g_units, g_avail, &mut last_tr);
            first_ready.get_or_insert(r);
            last_ready = last_ready.max(r);
        }
        let first_ready = first_ready.unwrap_or(t0).max(now);
        self.stream_read_ready = last_ready;
        self.stream_next_lpn = end;
        if self.content.is_some() {
            self.content_read(&cmd, hpb_first);
        }
        out.emit(
            first_ready,
            Output::ReadReady {
                tag: cmd.tag,
                last_ready,
            },
        );
    }

    /// Reads `units` 4 KiB units of the page holding `ppa`, the address known at
    /// `avail`: tR unless the page register holds the page, then the channel transfer.
    /// Returns when the data is in the controller.
    fn read_page(
        &mut self,
        ppa: Ppa,
        units: u32,
        avail: SimTime,
        last_tr: &mut (u32, u32),
    ) -> SimTime {
        let slc = self.wb_holds(ppa);
        let die = if slc {
            self.wb.as_ref().unwrap().die_of(ppa)
        } else {
            self.ftl.die_of(ppa)
        };
        let ch = self.channel_of(die);
        let page = self.slots_per_page.quotient(ppa);
        let row = self.ftl.row_of(ppa);
        let plane = self.slots_per_page.quotient(self.ftl.slot_in_row(ppa));
        let reg = (die * self.c.planes_per_die + plane) as usize;
        let d = die as usize;
        let start = if self.page_reg[reg] == page {
            self.stats.page_register_hits += 1;
            avail.max(self.dies[d].free_at())
        } else if *last_tr == (die, row) {
            // The array read of this row for another plane loaded this one too.
            self.page_reg[reg] = page;
            self.stats.page_register_hits += 1;
            avail.max(self.dies[d].free_at())
        } else if slc {
            // WriteBooster's SLC page: one sense level, no retry (write_booster.rs).
            let t_r = self.wb.as_ref().unwrap().cfg.t_read_ns;
            let (_, e) = self.book_die(d as u32, "wb read", avail, t_r);
            self.page_reg[reg] = page;
            *last_tr = (die, row);
            self.stats.nand_page_reads += 1;
            self.stats.wb.slc_reads += 1;
            e
        } else {
            let row_in_block = self.row_in_block(ppa);
            self.stats.page_type_reads[self.c.timing.page_type(row_in_block)] += 1;
            let t_r = self.c.timing.t_read_row(row_in_block, self.c.t_read_ns);
            let mut t = avail;
            if self.c.timing.retry_possible() {
                t = self.read_retries(ppa, t_r, units as u64 * LPN_BYTES, t);
            }
            let (_, e) = self.book_die(d as u32, "read", t, t_r);
            self.page_reg[reg] = page;
            *last_tr = (die, row);
            self.stats.nand_page_reads += 1;
            e
        };
        let (_, end) = self.book_ch(
            ch,
            "data out",
            start,
            self.channel_rate.ns(units as u64 * LPN_BYTES),
        );
        // The die stays busy while its register is read out.
        assert!(start >= self.dies[d].free_at());
        self.book_die(d as u32, "data out", start, end - start);
        end
    }

    // ------------------------------------------------------------ write

    /// A write whose data is in: the firmware decodes it now; it is admitted to the
    /// buffer at once if no other write is being admitted, else it waits its turn in
    /// arrival order (interfaces with a command queue, e.g. UFS, deliver a write while
    /// the previous one is still being accepted).
    fn write(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let (first, end) = Self::lpn_range(&cmd);
        let fw = self.fw_ns(end - first) + self.c.fw_per_write_ns;
        self.write_with(now, fw, cmd, out)
    }

    /// A write whose firmware work takes `fw` (a command, or a stream continuation).
    fn write_with(
        &mut self,
        now: SimTime,
        fw: u64,
        cmd: DevCommand,
        out: &mut Outbox<Input, Output>,
    ) {
        self.open_write = true;
        let (first, end) = Self::lpn_range(&cmd);
        let n = end - first;
        if !cmd.lba.is_multiple_of(SECTORS_PER_LPN)
            || !(cmd.sectors as u64).is_multiple_of(SECTORS_PER_LPN)
        {
            self.stats.partial_writes += 1;
        }
        self.stats.host_write_slots += n as u64;
        let (_, t) = self.ctrl.book(now, fw);
        let w = ActiveWrite {
            tag: cmd.tag,
            next: first,
            end,
            ready: t,
            stalled_since: None,
            through: self.c.write_through || cmd.fua,
        };
        if self.active_write.is_some() {
            self.write_queue.push_back(w);
            return;
        }
        self.active_write = Some(w);
        self.continue_write(now, out);
    }

    /// Admits as much of the active write as the buffer has room for; completes it and
    /// goes on with the next queued write, or leaves it stalled until a program frees
    /// space.
    fn continue_write(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        while let Some(mut aw) = self.active_write {
            let mut admitted = 0u64;
            while aw.next < aw.end {
                let lpn = aw.next;
                let waiting = if self.c.write_buffer_coalesce {
                    self.ftl
                        .buffer_slot(lpn)
                        .filter(|&s| self.buf.state(s) == SlotState::Waiting)
                } else {
                    None
                };
                if let Some(s) = waiting {
                    // Still waiting for the drain: overwrite the buffered copy in place.
                    self.stats.coalesced_writes += 1;
                    if let Some(c) = &mut self.content {
                        c.buf[s as usize] = c.port.write_tag(aw.tag, lpn as u64);
                    }
                } else {
                    if self.buf.free_slots() == 0 {
                        break;
                    }
                    let slot = self.buf.insert(lpn);
                    self.ftl.supersede(lpn, BUF_FLAG | slot);
                    if let Some(c) = &mut self.content {
                        c.buf[slot as usize] = c.port.write_tag(aw.tag, lpn as u64);
                    }
                }
                admitted += 1;
                aw.next += 1;
            }
            if admitted > 0 {
                let copy = self.buffer_copy_rate.ns(admitted * LPN_BYTES);
                let (_, e) = self.ctrl.book(aw.ready.max(now), copy);
                aw.ready = e;
                self.buffer_data_ready = self.buffer_data_ready.max(e);
            }
            if aw.next == aw.end {
                if let Some(c) = &mut self.content {
                    c.port.end_write(aw.tag);
                }
                if let Some(since) = aw.stalled_since {
                    // Waited from when the data could have gone in until the last space freed.
                    self.stats.write_stall_ns += now.saturating_sub(since);
                }
                if aw.through {
                    // Busy until the data is in NAND: the partial row goes out padded.
                    self.programming_writes.push((aw.tag, aw.ready));
                } else {
                    out.emit(
                        aw.ready,
                        Output::Done {
                            tag: aw.tag,
                            status: DevStatus::Ok,
                        },
                    );
                }
                // The next write's data goes in after this one's (one buffer DMA stream).
                self.active_write = self.write_queue.pop_front().map(|mut w| {
                    w.ready = w.ready.max(aw.ready);
                    w
                });
            } else {
                if aw.stalled_since.is_none() {
                    self.stats.write_stalls += 1;
                    aw.stalled_since = Some(now.max(aw.ready));
                }
                self.active_write = Some(aw);
                break;
            }
        }
        self.try_drain(now, out);
    }

    // ------------------------------------------------------------ drain

    /// Starts programs while full rows (or, during a flush, any data) wait and the next
    /// die in round-robin order is free.
    fn try_drain(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        let dies = self.c.dies();
        loop {
            let waiting = self.buf.waiting();
            let committing = self.flush.is_some() || !self.programming_writes.is_empty();
            if waiting == 0 || (waiting < self.slots_per_row && !committing) {
                return;
            }
            let mut chosen = None;
            for i in 0..dies {
                let d = (self.rr + i) % dies;
                if !self.ftl.can_alloc_host(d) || !self.gc_gate(now, d) {
                    continue;
                }
                if self.die_accepts(d) {
                    chosen = Some(d);
                }
                break;
            }
            let Some(d) = chosen else {
                self.gc_hold(now);
                let any_busy = self.die_prog.iter().any(|p| p.active);
                let any_gc = self.gc.iter().any(|g| g.scheduled || g.victim != NONE);
                assert!(
                    any_busy || any_gc || (0..dies).any(|d| self.ftl.can_alloc_host(d)),
                    "device full: no die can take data and no GC can reclaim space"
                );
                return;
            };
            if !self.issue_program(now, d, out) {
                continue;
            }
            self.rr = (d + 1) % dies;
        }
    }

    /// Whether `die` takes a row now: it is idle, or (cache program) it is programming a
    /// row of the block the next row goes to and its cache register is empty; never while
    /// a housekeeping move holds it.
    fn die_accepts(&self, die: u32) -> bool {
        let p = &self.die_prog[die as usize];
        if self.housekeeping_holds(die) {
            return false;
        }
        if self.wb_takes_row(die) {
            // An SLC row waits for the die (cache program is modelled within TLC blocks).
            return !p.active;
        }
        !p.active
            || (self.c.cache_program
                && !p.cached_active
                && self.ftl.host_row_fits_open_block(die) == Some(p.block))
    }

    /// Programs up to one row of waiting buffer data on `die`. False if every slot
    /// taken was dead (nothing programmed).
    fn issue_program(&mut self, now: SimTime, die: u32, out: &mut Outbox<Input, Output>) -> bool {
        let mut take = std::mem::take(&mut self.take_scratch);
        let n = self.buf.take(&mut take) as u32;
        if n == 0 {
            self.take_scratch = take;
            return false;
        }
        let free = self.ftl.free_blocks(die);
        let slc = self.wb_takes_row(die);
        let (base, block, t_prog) = if slc {
            // WriteBooster: the row goes to the die's SLC ring (write_booster.rs).
            let w = self.wb.as_mut().unwrap();
            let base = w.alloc_row(die, &mut self.stats.wb);
            self.stats.wb.slc_slots += n as u64;
            (base, NONE, w.cfg.t_prog_ns)
        } else {
            let base = self
                .ftl
                .alloc_row(die, Stream::Host)
                .expect("can_alloc_host promised a row");
            let block = self.ftl.block_of(base);
            if base.is_multiple_of(self.ftl.slots_per_block()) {
                self.ages.programmed(block, now);
            }
            if self.wb.as_ref().is_some_and(|w| w.cfg.enabled) {
                self.stats.wb.tlc_slots += n as u64;
            }
            let t_prog = self
                .c
                .timing
                .t_prog_row(self.row_in_block(base), self.c.t_prog_ns);
            (base, block, t_prog)
        };
        let prog = &mut self.die_prog[die as usize];
        // A die that is programming takes this row into its cache register (80h-15h).
        let cached = prog.active;
        assert!(!prog.cached_active && prog.cached.is_empty());
        assert!(cached || prog.units.is_empty());
        let units = if cached {
            &mut prog.cached
        } else {
            &mut prog.units
        };
        for (i, &(slot, lpn)) in take[..n as usize].iter().enumerate() {
            let ppa = base + i as u32;
            if slc {
                self.wb.as_mut().unwrap().place(ppa, lpn);
            } else {
                self.ftl.place(ppa, lpn);
            }
            units.push((slot, lpn, ppa));
            if let Some(c) = &mut self.content {
                // The row's data leaves the buffer for the die now.
                c.nand.set(ppa, c.buf[slot as usize]);
            }
        }
        self.take_scratch = take;
        if !slc {
            self.gc_host_row(now, die, n, free);
        }
        self.stats.host_slots_programmed += n as u64;
        self.stats.padding_slots += (self.slots_per_row - n) as u64;
        self.stats.nand_page_programs += self.c.planes_per_die as u64;
        let ready = now.max(self.buffer_data_ready);
        let d = die as usize;
        let ch = self.channel_of(die);
        let xfer = self.channel_rate.ns(n as u64 * LPN_BYTES);
        let end = if cached {
            // The data goes into the cache register once the running program's data
            // has left it; the array takes it when the running program ends.
            let (_, xend) =
                self.book_ch(ch, "data in", ready.max(self.die_prog[d].array_start), xfer);
            let (array_start, end) = self.book_die(d as u32, "program", xend, t_prog);
            let prog = &mut self.die_prog[d];
            prog.cached_active = true;
            prog.cached_array_start = array_start;
            end
        } else {
            // The die is held from the data-in to the end of the program.
            let start = ready.max(self.dies[d].free_at());
            let (_, xend) = self.book_ch(ch, "data in", start, xfer);
            let (_, end) = self.book_die(d as u32, "program", start, xend - start + t_prog);
            let prog = &mut self.die_prog[d];
            prog.active = true;
            prog.array_start = xend;
            prog.block = block;
            end
        };
        self.invalidate_registers(die);
        out.timer(end, Input::ProgramDone { die });
        if !slc && self.housekeeping_due(base) {
            self.housekeeping_start(now, die, out);
        }
        if self.ftl.needs_gc(die) {
            self.schedule_gc(now, die, out);
        }
        true
    }

    fn program_done(&mut self, now: SimTime, die: u32, out: &mut Outbox<Input, Output>) {
        let mut units = std::mem::take(&mut self.die_prog[die as usize].units);
        assert!(self.die_prog[die as usize].active);
        // The row that finished is the running one (a cached row ends after it).
        let mut last_seg = NONE;
        let slc = units.first().is_some_and(|u| self.wb_holds(u.2));
        for &(slot, lpn, ppa) in &units {
            let current = self.ftl.get(lpn) == BUF_FLAG | slot;
            if slc {
                if current {
                    self.ftl.map_slc(lpn, ppa);
                }
            } else {
                self.ftl.complete(ppa, lpn, current);
            }
            if current {
                let seg = self.segment_of(lpn);
                if seg != last_seg {
                    self.map_update(seg, now);
                    last_seg = seg;
                }
            }
            self.buf.release(slot);
        }
        units.clear();
        if slc {
            self.wb_row_done(die, out);
        }
        let prog = &mut self.die_prog[die as usize];
        if prog.cached_active {
            // The cached row is programming now; the cache register is free.
            prog.units = std::mem::replace(&mut prog.cached, units);
            prog.cached_active = false;
            prog.array_start = prog.cached_array_start;
        } else {
            prog.units = units;
            prog.active = false;
        }
        // A GC that found no victim (blocks still being programmed) retries now.
        if self.ftl.needs_gc(die) {
            self.schedule_gc(now, die, out);
        }
        if self.active_write.is_some() {
            self.continue_write(now, out);
        } else {
            self.try_drain(now, out);
        }
        self.check_flush(now, out);
    }

    // ------------------------------------------------------------ flush, discard

    fn flush_cmd(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        let (_, t) = self.ctrl.book(now, self.c.fw_per_command_ns);
        assert!(self.flush.is_none(), "a flush arrived during a flush");
        self.flush = Some((cmd.tag, t));
        // The partial row goes out once the firmware has taken the flush in.
        self.try_drain(t, out);
        self.check_flush(now, out);
    }

    fn check_flush(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        if !self.programming_writes.is_empty() && self.buf.is_clean() {
            for (tag, t) in self.programming_writes.drain(..) {
                out.emit(
                    t.max(now),
                    Output::Done {
                        tag,
                        status: DevStatus::Ok,
                    },
                );
            }
        }
        if let Some((tag, t)) = self.flush {
            if self.buf.is_clean() {
                out.emit(
                    t.max(now),
                    Output::Done {
                        tag,
                        status: DevStatus::Ok,
                    },
                );
                self.flush = None;
            }
        }
    }

    fn discard(&mut self, now: SimTime, cmd: DevCommand, out: &mut Outbox<Input, Output>) {
        // Only whole 4 KiB units are unmapped.
        let first = cmd.lba.div_ceil(SECTORS_PER_LPN) as Lpn;
        let end = ((cmd.lba + cmd.sectors as u64) / SECTORS_PER_LPN) as Lpn;
        let (_, mut t) = self.ctrl.book(now, self.c.fw_per_command_ns);
        let mut last_seg = NONE;
        let mut lpn = first;
        while lpn < end {
            if !self.ftl.run_touched(lpn) {
                // Never written: nothing to unmap in this run of 64 LPNs.
                lpn = self.ftl.next_run_start(lpn).min(end);
                continue;
            }
            let e = self.ftl.get(lpn);
            if e != UNMAPPED {
                if e & BUF_FLAG != 0 && self.buf.state(e & !BUF_FLAG) == SlotState::Waiting {
                    self.buf.kill(e & !BUF_FLAG);
                }
                self.ftl.supersede(lpn, UNMAPPED);
                self.stats.discarded_slots += 1;
                let seg = self.segment_of(lpn);
                if seg != last_seg {
                    // The entry is cleared in the cached segment, which becomes dirty.
                    t = self.map_lookup(seg, t);
                    self.map.access(seg, true);
                    self.enforce_dirty_limit(t);
                    last_seg = seg;
                }
            }
            lpn += 1;
        }
        out.emit(
            t,
            Output::Done {
                tag: cmd.tag,
                status: DevStatus::Ok,
            },
        );
    }

    // ------------------------------------------------------------ garbage collection

    fn schedule_gc(&mut self, now: SimTime, die: u32, out: &mut Outbox<Input, Output>) {
        let g = &mut self.gc[die as usize];
        if !g.scheduled {
            g.scheduled = true;
            out.timer(now, Input::GcStep { die });
        }
    }

    /// One GC step on `die`: copy the next victim row with valid data, or erase the
    /// victim once it has none. The next step is due when this one's die work ends, so
    /// host work booked meanwhile goes between steps.
    fn gc_step(&mut self, now: SimTime, die: u32, out: &mut Outbox<Input, Output>) {
        let d = die as usize;
        self.gc[d].scheduled = false;
        if self.gc[d].victim == NONE {
            if !self.ftl.needs_gc(die) {
                self.try_drain(now, out);
                return;
            }
            let Some(v) = self.ftl.pick_victim(die) else {
                // Nothing reclaimable yet (blocks still being programmed): retry when a
                // program on this die completes.
                self.try_drain(now, out);
                return;
            };
            self.gc[d].victim = v;
            self.gc[d].row = 0;
            self.stats.gc_victims += 1;
            self.gc_policy.victim_picked(die, self.ftl.valid_in(v));
        }
        let victim = self.gc[d].victim;
        let rows = self.ftl.rows_per_block();
        let mut scratch = std::mem::take(&mut self.gc_scratch);
        while self.gc[d].row < rows {
            let row = self.gc[d].row;
            self.gc[d].row += 1;
            let n = self.ftl.valid_in_row(victim, row, &mut scratch);
            if n > 0 {
                self.gc_copy_row(now, die, &scratch[..n]);
                self.gc_scratch = scratch;
                let next = self.dies[d].free_at();
                self.gc[d].scheduled = true;
                out.timer(next, Input::GcStep { die });
                self.gc_paid(now, die, n as u32, out);
                return;
            }
        }
        self.gc_scratch = scratch;
        let (_, end) = self.book_die(d as u32, "erase", now, self.c.t_erase_ns);
        self.invalidate_registers(die);
        self.ftl.erase(victim);
        self.gc_policy.victim_erased(die);
        self.content_erase(victim);
        self.stats.erases += 1;
        self.gc[d].victim = NONE;
        self.gc[d].scheduled = true;
        out.timer(end, Input::GcStep { die });
        self.try_drain(now, out);
    }

    /// Whether a host row may be programmed on `die` now, as the GC policy says.
    #[inline]
    fn gc_gate(&self, now: SimTime, die: u32) -> bool {
        !self.gc_policy.paced()
            || self
                .gc_policy
                .gate(die, self.ftl.free_blocks(die), now)
                .open
    }

    /// A host row of `slots` slots goes to `die`, which had `free` free blocks: it owes
    /// GC copies (paced GC).
    #[inline]
    fn gc_host_row(&mut self, now: SimTime, die: u32, slots: u32, free: u32) {
        if !self.gc_policy.paced() {
            return;
        }
        let went = self.gc_policy.host_row(die, slots, free, now);
        if went.held_ns > 0 {
            self.stats.gc_host_holds += 1;
            self.stats.gc_host_hold_ns += went.held_ns;
        }
        self.stats.gc_slice_ends += went.by_slice as u64;
    }

    /// No die took the waiting row: the dies whose GC shut them out hold it.
    fn gc_hold(&mut self, now: SimTime) {
        if !self.gc_policy.paced() {
            return;
        }
        for d in 0..self.c.dies() {
            let free = self.ftl.free_blocks(d);
            if self.ftl.can_alloc_host(d) && !self.gc_policy.gate(d, free, now).open {
                self.gc_policy.hold(d, now);
            }
        }
    }

    /// A GC step copied `slots` slots on `die`: a host row held for that GC may go now.
    fn gc_paid(&mut self, now: SimTime, die: u32, slots: u32, out: &mut Outbox<Input, Output>) {
        if !self.gc_policy.paced() {
            return;
        }
        self.gc_policy.copied(die, slots);
        if self.ftl.free_blocks(die) < self.c.gc_pacing.map_or(0, |p| p.urgent_blocks) {
            self.stats.gc_urgent_steps += 1;
        }
        if self.gc_policy.holding(die) {
            self.try_drain(now, out);
        }
    }

    fn gc_copy_row(&mut self, now: SimTime, die: u32, valid: &[(Lpn, Ppa)]) {
        let d = die as usize;
        let ch = self.channel_of(die);
        let n = valid.len() as u64;
        let src = valid[0].1;
        let t_r = self
            .c
            .timing
            .t_read_row(self.row_in_block(src), self.c.t_read_ns);
        let mut t = now;
        if self.c.timing.retry_possible() {
            t = self.read_retries(src, t_r, n * LPN_BYTES, t);
        }
        let (_, tr_end) = self.book_die(d as u32, "gc read", t, t_r);
        self.invalidate_registers(die);
        let mut t_data = tr_end;
        if self.c.gc_copy == GcCopy::Controller {
            let (_, xend) = self.book_ch(ch, "gc out", tr_end, self.channel_rate.ns(n * LPN_BYTES));
            self.book_die(d as u32, "gc out", tr_end, xend - tr_end);
            t_data = xend;
        }
        let mut last_seg = NONE;
        for &(lpn, src) in valid {
            let dst = self
                .ftl
                .alloc_slot(die, Stream::Gc)
                .expect("GC ran out of free blocks (over-provisioning too small)");
            self.ftl.relocate(lpn, src, dst);
            self.content_copy(src, dst);
            self.stats.gc_copies += 1;
            let seg = self.segment_of(lpn);
            if seg != last_seg {
                self.map_update(seg, t_data);
                last_seg = seg;
            }
            if dst.is_multiple_of(self.ftl.slots_per_block()) {
                self.ages.programmed(self.ftl.block_of(dst), t_data);
            }
            if (dst + 1).is_multiple_of(self.slots_per_row) {
                // The GC row is full: program it.
                let t_prog = self
                    .c
                    .timing
                    .t_prog_row(self.row_in_block(dst), self.c.t_prog_ns);
                self.stats.nand_page_programs += self.c.planes_per_die as u64;
                match self.c.gc_copy {
                    GcCopy::Copyback => {
                        self.book_die(d as u32, "gc program", t_data, t_prog);
                    }
                    GcCopy::Controller => {
                        let start = t_data.max(self.dies[d].free_at());
                        let bytes = self.slots_per_row as u64 * LPN_BYTES;
                        let (_, xend) =
                            self.book_ch(ch, "gc in", start, self.channel_rate.ns(bytes));
                        self.book_die(d as u32, "gc program", start, xend - start + t_prog);
                    }
                }
            }
        }
    }
}

impl super::Model for PageMappedDevice {
    #[inline]
    fn handle(&mut self, now: SimTime, input: &Input, out: &mut Outbox<Input, Output>) {
        PageMappedDevice::step(self, now, input, out)
    }
    /// Prefetches the written LPN's L2P entry, and the reverse-map entry of the slot
    /// that the previous hinted write's LPN is in (its L2P entry, prefetched one write
    /// ago, is in the cache by now): the write's admission reads the one and
    /// invalidates the other, dozens of I/Os later, when the request reaches the device.
    #[inline]
    fn prefetch_write(&mut self, lba: u64) {
        let Ok(lpn) = Lpn::try_from(lba / super::config::SECTORS_PER_LPN) else {
            return;
        };
        self.ftl.prefetch_entry(lpn);
        let prev = std::mem::replace(&mut self.prefetched, lpn);
        self.ftl.prefetch_slot(prev);
    }
    fn precondition(&mut self, lba: u64, sectors: u64) {
        PageMappedDevice::precondition(self, lba, sectors)
    }
    fn stats(&self) -> &DeviceStats {
        PageMappedDevice::stats(self)
    }
    fn age_data(&mut self) {
        PageMappedDevice::age_data(self)
    }
    fn record_nand(&mut self) {
        PageMappedDevice::record_nand(self)
    }
    fn take_nand_slices(&mut self) -> Vec<NandSlice> {
        PageMappedDevice::take_nand_slices(self)
    }
}

#[cfg(test)]
mod tests {
    //! Outbox-level tests on `DeviceConfig::small_test_device()`: fw 10 us + 1 us per
    //! 4 KiB, map lookup 1 us, tR 50 us, tPROG 500 us, channel 400 MB/s (4 KiB =
    //! 10 240 ns), buffer copy 1 GB/s (4 KiB = 4 096 ns), rows of 8 slots (2 planes ×
    //! 16 KiB), map segments of 4 KiB (1024 LPNs).
    use super::*;
    use crate::device::{DeviceConfig, DeviceModel, Input};

    const FW: u64 = 10_000;
    const FW4K: u64 = 1_000;
    const LOOKUP: u64 = 1_000;
    const TR: u64 = 50_000;
    const TPROG: u64 = 500_000;
    const X4K: u64 = 10_240;
    const COPY4K: u64 = 4_096;

    fn dev() -> PageMappedDevice {
        let cfg = DeviceConfig::small_test_device();
        PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes)
    }

    /// Delivers the timers the device set (one round: programs, drains).
    fn run_timers(d: &mut PageMappedDevice, out: &mut Outbox<Input, Output>) {
        let (timers, _) = out.drain();
        let timers: Vec<_> = timers.collect();
        for (t, i) in timers {
            d.handle(t, i, out);
        }
    }

    /// The device emitted exactly one ReadReady for `tag`, all its data ready at `t`.
    fn assert_read_ready(out: &Outbox<Input, Output>, tag: u32, t: SimTime) {
        assert_eq!(
            out.emits(),
            &[(t, Output::ReadReady { tag, last_ready: t })]
        );
    }

    fn cmd(tag: u32, op: DevOp, lba: u64, sectors: u32) -> Input {
        Input::Command(DevCommand {
            tag,
            op,
            lba,
            sectors,
            fua: false,
            hpb: 0,
        })
    }

    #[test]
    fn read_of_unwritten_lpn_costs_firmware_and_map_load() {
        let mut d = dev();
        let mut out = Outbox::new();
        d.handle(1_000, cmd(7, DevOp::Read, 0, 8), &mut out);
        // Map miss: tR + 4 KiB segment over the channel, then the lookup; no data read.
        let t = 1_000 + FW + FW4K + TR + X4K + LOOKUP;
        assert_read_ready(&out, 7, t);
        assert!(out.timers().is_empty());
        out.clear();
        d.handle(t, cmd(8, DevOp::Read, 8, 8), &mut out);
        let t2 = t + FW + FW4K + LOOKUP;
        assert_read_ready(&out, 8, t2);
        assert_eq!((d.stats().map_misses, d.stats().map_hits), (1, 1));
    }

    /// A map page is read at the map's own tR (`map_cache.t_read`: SLC-mode blocks of
    /// a TLC die), not the data's: the miss above with a 20 us map read.
    #[test]
    fn a_map_miss_costs_the_map_pages_read_time() {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().map_t_read_ns = 20_000;
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        d.handle(1_000, cmd(7, DevOp::Read, 0, 8), &mut out);
        assert_read_ready(&out, 7, 1_000 + FW + FW4K + 20_000 + X4K + LOOKUP);
        assert_eq!(d.stats().nand_map_reads, 1);
    }

    /// The test device with `read_ahead`, LPNs 0..128 written and programmed; the time
    /// after the last program.
    fn written(read_ahead: Option<u64>) -> (PageMappedDevice, SimTime) {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().read_ahead_bytes = read_ahead;
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 0, 128 * 8), &mut out);
        // The write stream ends (CMD12 commits the buffer): the stream that follows
        // is a read.
        d.handle(1, Input::Stop { tag: 1 }, &mut out);
        let mut timers: Vec<(SimTime, Input)> = out.timers().to_vec();
        out.clear();
        let mut last = 0;
        while !timers.is_empty() {
            timers.sort_by_key(|&(t, _)| t);
            let (t, input) = timers.remove(0);
            last = t;
            d.handle(t, input, &mut out);
            timers.extend_from_slice(out.timers());
            out.clear();
        }
        (d, last + 1_000_000)
    }

    /// Write hints (`Model::prefetch_write`) on programmed, buffered, unwritten and
    /// out-of-range LPNs change nothing the device answers.
    #[test]
    fn write_hints_change_no_answer() {
        let run = |hint: bool| {
            let (mut d, t) = written(None);
            let mut out = Outbox::new();
            let mut seen = Vec::new();
            d.handle(t, cmd(3, DevOp::Write, 8 * 200, 8), &mut out); // buffered
            seen.extend_from_slice(out.emits());
            out.clear();
            if hint {
                for lba in [0, 8 * 5, 8 * 200, 8 * 500, u64::MAX / 2, u64::MAX] {
                    super::super::Model::prefetch_write(&mut d, lba);
                }
            }
            for (i, lba) in [0u64, 8 * 5, 8 * 200, 8 * 500].into_iter().enumerate() {
                d.handle(
                    t + 10 + i as u64,
                    cmd(10 + i as u32, DevOp::Write, lba, 8),
                    &mut out,
                );
                d.handle(
                    t + 20 + i as u64,
                    cmd(20 + i as u32, DevOp::Read, lba, 8),
                    &mut out,
                );
                seen.extend_from_slice(out.emits());
                out.clear();
            }
            (seen, d.stats().clone())
        };
        let (with, with_stats) = run(true);
        let (without, without_stats) = run(false);
        assert!(!with.is_empty());
        assert_eq!(with, without);
        assert_eq!(format!("{with_stats:?}"), format!("{without_stats:?}"));
    }

    /// The device of [`written`] after a read stream's first part (LPNs 0..8): the
    /// device, an empty outbox and when that part's data was all ready.
    fn streamed(read_ahead: Option<u64>) -> (PageMappedDevice, Outbox<Input, Output>, SimTime) {
        let (mut d, t) = written(read_ahead);
        let mut out = Outbox::new();
        d.handle(t, cmd(2, DevOp::Read, 0, 8 * 8), &mut out);
        let t1 = ready(&out);
        out.clear();
        (d, out, t1)
    }

    /// `last_ready` of the one ReadReady in `out`.
    fn ready(out: &Outbox<Input, Output>) -> SimTime {
        match out.emits() {
            [(_, Output::ReadReady { last_ready, .. })] => *last_ready,
            other => panic!("{other:?}"),
        }
    }

    /// A CMD12 that ends an open read finds the card's bounded read-ahead started: the
    /// next command's read on the same die waits for it, and the pages count as
    /// discarded. Unbounded (no `read_ahead`), the stop costs nothing.
    #[test]
    fn a_stop_after_a_read_leaves_the_started_read_ahead_on_the_dies() {
        let run = |read_ahead: Option<u64>| {
            let (mut d, mut out, t1) = streamed(read_ahead);
            // The host comes back 5 us after the data and stops the stream; a random
            // read (LPN 100) follows at once.
            d.handle(t1 + 5_000, Input::Stop { tag: 2 }, &mut out);
            out.clear();
            d.handle(t1 + 5_000, cmd(3, DevOp::Read, 100 * 8, 8), &mut out);
            (ready(&out) - t1, d.stats().read_ahead_discarded_pages)
        };
        let (free, none) = run(None);
        let (paid, pages) = run(Some(64 * 1024));
        assert_eq!(none, 0);
        assert!(pages >= 1, "{pages}");
        assert!(
            paid > free,
            "the random read waits for the read-ahead: {paid} vs {free}"
        );
        // At most one array read of a row and its transfer (8 slots) ahead of it on its
        // die.
        assert!(paid - free <= TR + 8 * X4K, "{paid} vs {free}");
    }

    /// A stream continuation finds only `read_ahead` bytes already read: the rest of it
    /// is read from when it arrives. Unbounded, all of it was read ahead.
    #[test]
    fn a_continuation_finds_only_the_read_ahead_already_read() {
        let run = |read_ahead: Option<u64>| {
            let (mut d, mut out, t1) = streamed(read_ahead);
            let now = t1 + 2_000_000;
            d.handle(
                now,
                Input::Continue(DevCommand {
                    tag: 3,
                    op: DevOp::Read,
                    lba: 8 * 8,
                    sectors: 32 * 8,
                    fua: false,
                    hpb: 0,
                }),
                &mut out,
            );
            ready(&out) as i64 - now as i64
        };
        assert!(run(None) < 0, "all read ahead before the host came back");
        assert!(
            run(Some(64 * 1024)) > 0,
            "the part past 64 KiB is read after"
        );
    }

    /// Three rows written at once on the 2-die test device: rows go to die 0, die 1,
    /// die 0. Returns the ProgramDone timers of die 0 after both of its programs ran.
    fn die0_program_ends(cache_program: bool) -> Vec<SimTime> {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().cache_program = cache_program;
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 0, 3 * 64), &mut out);
        let mut ends = Vec::new();
        let mut timers: Vec<(SimTime, Input)> = out.timers().to_vec();
        out.clear();
        while !timers.is_empty() {
            timers.sort_by_key(|&(t, _)| t);
            let (t, input) = timers.remove(0);
            if input == (Input::ProgramDone { die: 0 }) {
                ends.push(t);
            }
            d.handle(t, input, &mut out);
            timers.extend_from_slice(out.timers());
            out.clear();
        }
        assert_eq!(d.stats().host_slots_programmed, 24);
        assert!(d.write_buffer().is_clean());
        ends
    }

    #[test]
    fn cache_program_starts_the_next_row_when_the_previous_program_ends() {
        let ack = FW + 24 * FW4K + 24 * COPY4K;
        let first = ack + 8 * X4K + TPROG;
        // Cache program: the third row crossed the channel into die 0's cache register
        // while the first programmed; its program follows the first back to back.
        assert_eq!(die0_program_ends(true), vec![first, first + TPROG]);
        // Without it, die 0 takes the row's data only once the first program is done,
        // after the map load (tR + 4 KiB out) that the first program's map update booked
        // on die 0 at its end.
        assert_eq!(
            die0_program_ends(false),
            vec![first, first + TR + X4K + 8 * X4K + TPROG]
        );
    }

    #[test]
    fn write_is_acknowledged_from_the_buffer_and_drained_by_row() {
        let mut d = dev();
        let mut out = Outbox::new();
        // 4 KiB: below a row, nothing is programmed yet.
        d.handle(0, cmd(1, DevOp::Write, 0, 8), &mut out);
        assert_eq!(
            out.emits(),
            &[(
                FW + FW4K + COPY4K,
                Output::Done {
                    tag: 1,
                    status: DevStatus::Ok
                }
            )]
        );
        assert!(out.timers().is_empty());
        out.clear();
        // 28 KiB more completes the first row (8 slots): one program on die 0.
        let t0 = 100_000;
        d.handle(t0, cmd(2, DevOp::Write, 8, 56), &mut out);
        let ack = t0 + FW + 7 * FW4K + 7 * COPY4K;
        assert_eq!(
            out.emits(),
            &[(
                ack,
                Output::Done {
                    tag: 2,
                    status: DevStatus::Ok
                }
            )]
        );
        // The program starts when the data is in: 8 × 4 KiB over the channel, then tPROG.
        let done = ack + 8 * X4K + TPROG;
        assert_eq!(out.timers(), &[(done, Input::ProgramDone { die: 0 })]);
        out.clear();
        d.handle(done, Input::ProgramDone { die: 0 }, &mut out);
        assert!(out.is_empty());
        assert_eq!(d.stats().host_slots_programmed, 8);
        assert_eq!(d.write_buffer().free_slots(), d.write_buffer().capacity());
        // The map update loaded segment 0 (dirty) on die 0 in the background.
        assert_eq!(d.stats().map_update_loads, 1);
        let tmap = done + TR + X4K;
        // Reading LPN 0 back: map hit, tR on die 0, 4 KiB out.
        let t1 = 2_000_000;
        assert!(tmap < t1);
        d.handle(t1, cmd(3, DevOp::Read, 0, 8), &mut out);
        let r = t1 + FW + FW4K + LOOKUP + TR + X4K;
        assert_read_ready(&out, 3, r);
        out.clear();
        // LPN 1 sits in the same 16 KiB page: the page register still holds it.
        d.handle(r, cmd(4, DevOp::Read, 8, 8), &mut out);
        let r2 = r + FW + FW4K + LOOKUP + X4K;
        assert_read_ready(&out, 4, r2);
        out.clear();
        // LPN 4 is on the other plane: a new array read.
        d.handle(r2, cmd(5, DevOp::Read, 32, 8), &mut out);
        let r3 = r2 + FW + FW4K + LOOKUP + TR + X4K;
        assert_read_ready(&out, 5, r3);
        assert_eq!(d.stats().page_register_hits, 1);
    }

    #[test]
    fn without_register_reuse_every_command_reads_the_array() {
        let mut cfg = DeviceConfig::small_test_device();
        if let DeviceModel::PageMapped(n) = &mut cfg.model {
            n.reuse_page_register = false;
        }
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        // 32 KiB = one row: LPN 0-3 on plane 0, LPN 4-7 on plane 1 of die 0.
        d.handle(0, cmd(1, DevOp::Write, 0, 64), &mut out);
        run_timers(&mut d, &mut out);
        out.clear();
        let t1 = 2_000_000;
        d.handle(t1, cmd(2, DevOp::Read, 0, 8), &mut out);
        let r = t1 + FW + FW4K + LOOKUP + TR + X4K;
        assert_read_ready(&out, 2, r);
        out.clear();
        // LPN 1, same page, next command: the register is not trusted, tR again.
        d.handle(r, cmd(3, DevOp::Read, 8, 8), &mut out);
        let r2 = r + FW + FW4K + LOOKUP + TR + X4K;
        assert_read_ready(&out, 3, r2);
        out.clear();
        assert_eq!(d.stats().page_register_hits, 0);
        assert_eq!(d.stats().nand_page_reads, 2);
        // One command over both planes of the row still shares one tR (multi-plane).
        let t3 = 3_000_000;
        d.handle(t3, cmd(4, DevOp::Read, 24, 16), &mut out);
        assert_eq!(d.stats().nand_page_reads, 3);
        assert_eq!(d.stats().page_register_hits, 1);
    }

    #[test]
    fn read_of_buffered_data_skips_map_and_nand() {
        let mut d = dev();
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 80, 8), &mut out);
        out.clear();
        d.handle(50_000, cmd(2, DevOp::Read, 80, 8), &mut out);
        let t = 50_000 + FW + FW4K;
        assert_read_ready(&out, 2, t);
        assert_eq!(d.stats().buffer_read_hits, 1);
        assert_eq!(d.stats().map_hits + d.stats().map_misses, 0);
    }

    #[test]
    fn a_read_mixing_nand_and_buffer_streams_in_lba_order() {
        let mut d = dev();
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 0, 64), &mut out);
        run_timers(&mut d, &mut out);
        out.clear();
        // LPN 1 rewritten: its newest data waits in the buffer.
        d.handle(1_000_000, cmd(2, DevOp::Write, 8, 8), &mut out);
        out.clear();
        let t = 2_000_000;
        d.handle(t, cmd(3, DevOp::Read, 0, 24), &mut out);
        // LPN 0: tR + 4 KiB; LPN 1 from the buffer; LPN 2 from the page register.
        let t0 = t + FW + 3 * FW4K + LOOKUP;
        let first = t0 + TR + X4K;
        let last = first + X4K;
        assert_eq!(
            out.emits(),
            &[(
                first,
                Output::ReadReady {
                    tag: 3,
                    last_ready: last
                }
            )]
        );
        assert_eq!(d.stats().buffer_read_hits, 1);
        assert_eq!(d.stats().page_register_hits, 1);
    }

    #[test]
    fn a_multi_page_read_overlaps_dies_and_streams_in_order() {
        let mut d = dev();
        let mut out = Outbox::new();
        // 64 KiB = two rows: row 0 on die 0, row 1 on die 1 (round-robin).
        d.handle(0, cmd(1, DevOp::Write, 0, 128), &mut out);
        let (timers, _) = out.drain();
        let timers: Vec<_> = timers.collect();
        assert_eq!(timers.len(), 2);
        let end = timers.iter().map(|t| t.0).max().unwrap();
        for (t, i) in timers {
            d.handle(t, i, &mut out);
        }
        out.clear();
        // Warm the map, then read 32 KiB: 2 pages on die 0 (multi-plane row) and
        // nothing else; then the next 32 KiB on die 1.
        let t = end + 1_000_000;
        d.handle(t, cmd(2, DevOp::Read, 0, 128), &mut out);
        let t0 = t + FW + 16 * FW4K + LOOKUP;
        // die 0: tR, plane 0 out (4 × 4 KiB), plane 1 shares the tR and goes out next;
        // die 1 (other channel): tR in parallel, its 2 pages out on channel 1.
        let first = t0 + TR + 4 * X4K;
        let die1_last = t0 + TR + 8 * X4K;
        let die0_last = t0 + TR + 8 * X4K;
        assert_eq!(
            out.emits(),
            &[(
                first,
                Output::ReadReady {
                    tag: 2,
                    last_ready: die0_last.max(die1_last)
                }
            )]
        );
        assert_eq!(d.stats().nand_page_reads, 2);
    }

    #[test]
    fn a_full_buffer_stalls_the_write_until_a_program_frees_space() {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().write_buffer_bytes = 64 * 1024; // 16 slots = 2 rows
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        // 96 KiB = 24 slots: 16 fit, 2 programs start, the write waits for one.
        d.handle(0, cmd(1, DevOp::Write, 0, 192), &mut out);
        assert!(out.emits().is_empty());
        let fw = FW + 24 * FW4K;
        let copied = fw + 16 * COPY4K;
        let p0 = copied + 8 * X4K + TPROG;
        assert_eq!(
            out.timers(),
            &[
                (p0, Input::ProgramDone { die: 0 }),
                (p0, Input::ProgramDone { die: 1 })
            ]
        );
        out.clear();
        d.handle(p0, Input::ProgramDone { die: 0 }, &mut out);
        // 8 slots freed: the rest goes in, the write is done, a third program starts on
        // die 0 (round-robin after die 1), once the copy is done.
        let ack = p0 + 8 * COPY4K;
        assert_eq!(
            out.emits(),
            &[(
                ack,
                Output::Done {
                    tag: 1,
                    status: DevStatus::Ok
                }
            )]
        );
        // Die 0 is busy with the background map load of the program's map update.
        let die0_free = p0 + TR + X4K;
        let p2 = ack.max(die0_free) + 8 * X4K + TPROG;
        assert_eq!(out.timers(), &[(p2, Input::ProgramDone { die: 0 })]);
        assert_eq!(d.stats().write_stalls, 1);
        assert_eq!(d.stats().write_stall_ns, p0 - copied);
    }

    /// One 4 KiB write at LBA 0 that the device must program before it is done (sent
    /// at 0 with `input`): in the buffer after fw + copy but not done; its partial row
    /// goes out padded at once, as for a flush, and it is done when the program ends.
    fn assert_done_once_programmed(mut d: PageMappedDevice, input: Input) {
        let mut out = Outbox::new();
        d.handle(0, input, &mut out);
        let copied = FW + FW4K + COPY4K;
        let p = copied + X4K + TPROG;
        assert!(out.emits().is_empty(), "not done before the program");
        assert_eq!(out.timers(), &[(p, Input::ProgramDone { die: 0 })]);
        out.clear();
        d.handle(p, Input::ProgramDone { die: 0 }, &mut out);
        assert_eq!(
            out.emits(),
            &[(
                p,
                Output::Done {
                    tag: 1,
                    status: DevStatus::Ok
                }
            )]
        );
        assert_eq!(d.stats().padding_slots, 7);
        assert!(d.is_quiescent());
    }

    #[test]
    fn write_through_write_is_done_once_its_data_is_programmed() {
        let mut cfg = DeviceConfig::small_test_device();
        let DeviceModel::PageMapped(n) = &mut cfg.model else {
            unreachable!()
        };
        n.write_through = true;
        let d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        assert_done_once_programmed(d, cmd(1, DevOp::Write, 0, 8));
    }

    #[test]
    fn a_fua_write_on_a_write_back_device_is_done_once_programmed() {
        // A reliable write (eMMC CMD23 bit 31) or SCSI FUA write bypasses the volatile
        // buffer's early Done: the device answers as in write-through mode.
        let fua = Input::Command(DevCommand {
            tag: 1,
            op: DevOp::Write,
            lba: 0,
            sectors: 8,
            fua: true,
            hpb: 0,
        });
        assert_done_once_programmed(dev(), fua);
    }

    #[test]
    fn a_fua_write_waits_for_the_data_buffered_before_it() {
        // A plain write is done from the buffer; a FUA write after it is done once the
        // buffer is clean: both 4 KiB units go out in one padded row.
        let mut d = dev();
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 0, 8), &mut out);
        let copied = FW + FW4K + COPY4K;
        assert_eq!(
            out.emits(),
            &[(
                copied,
                Output::Done {
                    tag: 1,
                    status: DevStatus::Ok
                }
            )]
        );
        out.clear();
        let fua = Input::Command(DevCommand {
            tag: 2,
            op: DevOp::Write,
            lba: 8,
            sectors: 8,
            fua: true,
            hpb: 0,
        });
        d.handle(copied, fua, &mut out);
        assert!(out.emits().is_empty(), "not done before the program");
        let (timers, _) = out.drain();
        let timers: Vec<_> = timers.collect();
        assert_eq!(timers.len(), 1);
        let (p, input) = timers[0];
        assert!(p >= copied + FW + FW4K + COPY4K + TPROG);
        d.handle(p, input, &mut out);
        assert_eq!(
            out.emits(),
            &[(
                p,
                Output::Done {
                    tag: 2,
                    status: DevStatus::Ok
                }
            )]
        );
        assert_eq!(d.stats().padding_slots, 6, "one row: both units and 6 pads");
        assert!(d.is_quiescent());
    }

    #[test]
    fn flush_waits_for_the_partial_row() {
        let mut d = dev();
        let mut out = Outbox::new();
        d.handle(0, cmd(1, DevOp::Write, 0, 8), &mut out);
        let ack = FW + FW4K + COPY4K;
        out.clear();
        d.handle(ack, cmd(2, DevOp::Flush, 0, 0), &mut out);
        // One slot programmed with 7 slots of padding.
        let p = ack + FW + X4K + TPROG;
        assert!(out.emits().is_empty());
        assert_eq!(out.timers(), &[(p, Input::ProgramDone { die: 0 })]);
        out.clear();
        d.handle(p, Input::ProgramDone { die: 0 }, &mut out);
        assert_eq!(
            out.emits(),
            &[(
                p,
                Output::Done {
                    tag: 2,
                    status: DevStatus::Ok
                }
            )]
        );
        assert_eq!(d.stats().padding_slots, 7);
        // A flush with nothing buffered is only firmware.
        out.clear();
        d.handle(p, cmd(3, DevOp::Flush, 0, 0), &mut out);
        assert_eq!(
            out.emits(),
            &[(
                p + FW,
                Output::Done {
                    tag: 3,
                    status: DevStatus::Ok
                }
            )]
        );
    }

    #[test]
    fn discard_unmaps_buffered_and_programmed_data() {
        let mut d = dev();
        let mut out = Outbox::new();
        // One full row (LPN 0..8) goes to NAND; LPN 8 stays waiting in the buffer.
        d.handle(0, cmd(1, DevOp::Write, 0, 72), &mut out);
        run_timers(&mut d, &mut out);
        out.clear();
        let t = 2_000_000;
        d.handle(t, cmd(2, DevOp::Discard, 0, 72), &mut out);
        // Firmware, then one map lookup for segment 0 (cached by the program's update).
        let done = t + FW + LOOKUP;
        assert_eq!(
            out.emits(),
            &[(
                done,
                Output::Done {
                    tag: 2,
                    status: DevStatus::Ok
                }
            )]
        );
        assert_eq!(d.stats().discarded_slots, 9);
        assert_eq!(d.write_buffer().waiting(), 0);
        d.check_invariants();
        out.clear();
        // Reading discarded data costs only firmware and the map lookup.
        d.handle(done, cmd(3, DevOp::Read, 0, 8), &mut out);
        let r = done + FW + FW4K + LOOKUP;
        assert_read_ready(&out, 3, r);
        // A flush has nothing left to program: the dead slot is dropped.
        out.clear();
        d.handle(r, cmd(4, DevOp::Flush, 0, 0), &mut out);
        assert_eq!(
            out.emits(),
            &[(
                r + FW,
                Output::Done {
                    tag: 4,
                    status: DevStatus::Ok
                }
            )]
        );
        assert!(out.timers().is_empty());
    }

    #[test]
    fn dirty_segments_over_the_limit_are_written_back_in_map_pages() {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().map_dirty_limit = 1;
        cfg.nand_mut().unwrap().map_cache_bytes = 2 * 4096;
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes);
        let mut out = Outbox::new();
        // One row in each of segments 0..5 (1024 LPNs = 8192 sectors apart).
        let mut t = 0;
        for s in 0..5u64 {
            out.clear();
            d.handle(t, cmd(s as u32, DevOp::Write, s * 8192, 64), &mut out);
            let (timers, emits) = out.drain();
            let timers: Vec<_> = timers.collect();
            let ack = emits.map(|e| e.0).max().unwrap();
            for (at, i) in timers {
                d.handle(at, i, &mut out);
            }
            t = ack.max(t) + 10_000_000;
        }
        let s = d.stats();
        // Each program loads and dirties its segment; the one before it goes back (4 of
        // them, evicted clean later), and 4 segments of 4 KiB fill one 16 KiB map page.
        assert_eq!(s.map_update_loads, 5);
        assert_eq!(s.map_writebacks, 4);
        assert_eq!(s.map_page_programs, 1);
        // Segment 1 started on die 1 and now lives in the map page on die 0; its data
        // row is on die 1. A lookup misses and loads it from die 0.
        assert_eq!(d.seg_die[1], 0);
        out.clear();
        d.handle(t, cmd(9, DevOp::Read, 8192 + 16, 8), &mut out);
        assert_eq!(d.stats().map_misses, 1);
        let r = t + FW + FW4K + TR + X4K + LOOKUP + TR + X4K;
        assert_read_ready(&out, 9, r);
    }

    #[test]
    fn gc_copies_the_victims_valid_row_then_erases_it() {
        // One die, one plane: rows of 4 slots, blocks of 2 rows, 8 blocks, GC below 2
        // free blocks.
        let mut cfg = DeviceConfig::small_test_device();
        let n = cfg.nand_mut().unwrap();
        n.channels = 1;
        n.planes_per_die = 1;
        n.pages_per_block = 2;
        n.blocks_per_plane = 8;
        n.gc_threshold_blocks = 2;
        n.write_buffer_bytes = 64 * 1024;
        let mut d = PageMappedDevice::new(cfg.nand().unwrap(), 40 * 4096);
        let mut out = Outbox::new();
        const TBERS: u64 = 2_000_000;
        // Blocks 0..4 hold LPN 0..40; then LPN 0..4 again (block 5, row 0): block 0
        // keeps LPN 4..8 valid. Free: blocks 6 and 7.
        d.precondition(0, 40 * 8);
        d.precondition(0, 4 * 8);
        assert_eq!(d.page_map().free_blocks(0), 2);
        // LPN 8..12 → block 5 row 1.
        d.handle(0, cmd(1, DevOp::Write, 64, 32), &mut out);
        let ack = FW + 4 * FW4K + 4 * COPY4K;
        let p1 = ack + 4 * X4K + TPROG;
        assert_eq!(out.timers(), &[(p1, Input::ProgramDone { die: 0 })]);
        out.clear();
        d.handle(p1, Input::ProgramDone { die: 0 }, &mut out);
        // The map update loaded segment 0 on die 0.
        assert!(d.dies[0].free_at() == p1 + TR + X4K && out.is_empty());
        // LPN 16..20 needs a new block (6): one free block left, GC starts now.
        let t = 1_000_000;
        d.handle(t, cmd(2, DevOp::Write, 128, 32), &mut out);
        let p2 = t + ack + 4 * X4K + TPROG;
        assert_eq!(
            out.timers(),
            &[
                (p2, Input::ProgramDone { die: 0 }),
                (t, Input::GcStep { die: 0 })
            ]
        );
        out.clear();
        // Victim: block 0 (4 valid, the lowest of the 4-valid blocks). Its row 1 is read
        // after the host program (FIFO on the die), moved out and in over the channel,
        // and programmed as a full GC row in block 7.
        d.handle(t, Input::GcStep { die: 0 }, &mut out);
        let read = p2 + TR + 4 * X4K;
        let gc_prog = read + 4 * X4K + TPROG;
        assert_eq!(out.timers(), &[(gc_prog, Input::GcStep { die: 0 })]);
        assert_eq!((d.stats().gc_victims, d.stats().gc_copies), (1, 4));
        assert_eq!(d.page_map().free_blocks(0), 0);
        out.clear();
        d.handle(p2, Input::ProgramDone { die: 0 }, &mut out);
        assert!(out.is_empty(), "GC already scheduled: {:?}", out.timers());
        // No valid row left: erase (tBERS) and look again when it is done.
        d.handle(gc_prog, Input::GcStep { die: 0 }, &mut out);
        assert_eq!(out.timers(), &[(gc_prog + TBERS, Input::GcStep { die: 0 })]);
        assert_eq!(d.stats().erases, 1);
        assert_eq!(d.page_map().erase_count(0), 1);
        assert_eq!(d.page_map().free_blocks(0), 1);
        d.check_invariants();
    }

    #[test]
    fn out_of_range_commands_fail() {
        let mut d = dev();
        let mut out = Outbox::new();
        let end = d.capacity_sectors();
        d.handle(0, cmd(1, DevOp::Read, end - 4, 8), &mut out);
        assert_eq!(
            out.emits(),
            &[(
                FW,
                Output::Done {
                    tag: 1,
                    status: DevStatus::OutOfRange
                }
            )]
        );
    }
}
