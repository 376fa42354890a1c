//! Buffered I/O (fio direct=0) through the page cache, background writeback, and the sync
//! family (fsync=N, fdatasync=N, end_fsync, sync=1 / O_SYNC) with cache flushes.
//!
//! The jobs do I/O on the block device itself: one inode, its pages keyed by device page
//! index (host/page_cache.rs). No filesystem is modelled. An asynchronous submission runs
//! as libaio's does (`buf_async`): each iocb to its end inside io_submit.
//!
//! **Reads** (generic_file_buffered_read, 5.x): page by page from the request's first page.
//! A page found uptodate is copied to user memory (`memory.copy_rate` on the thread's core,
//! plus `memory.page_op` for the lookup). An absent page calls the sync readahead with the
//! request's remaining pages; a page carrying the PG_readahead mark calls the async
//! readahead first; a locked page (its read in flight) puts the thread to sleep until the
//! read bio ends (wait_on_page_locked), then the copy continues. A woken thread that is
//! not pinned runs on an idle core if its own is busy at that instant, the waker's work
//! of the instant included (try_to_wake_up → select_idle_sibling). Readahead bios are `Io`s of
//! the reading thread whose completion unlocks pages instead of completing a fio I/O.
//!
//! **fadvise** (fio's fadvise_hint, mm/fadvise.c generic_fadvise, before the job's I/O):
//! POSIX_FADV_SEQUENTIAL doubles the file's `ra_pages`; POSIX_FADV_RANDOM sets
//! FMODE_RANDOM, with which a miss calls force_page_cache_readahead instead of the
//! on-demand readahead below: the read's own pages, at most max(io_pages, ra_pages), in
//! 2 MiB chunks, no window and no mark (the readahead state is untouched).
//!
//! **On-demand readahead** (mm/readahead.c, 5.4, `ondemand_readahead`), in pages, with
//! `ra_pages = read_ahead_kb / 4` (the file's, after fadvise) and
//! `io_pages = max_sectors_kb / 4`:
//! - max = ra_pages, or min(req, io_pages) if the request is larger than ra_pages and
//!   io_pages is larger than ra_pages;
//! - offset 0 → initial window; offset == start+size-async_size or start+size (the
//!   expected one) → start += size, size = next(size), async_size = size;
//! - a marked page hit without that state → start = first absent page after offset
//!   (within max, else no readahead), size = next(start - offset + req), async = size;
//! - req > max → initial; the previous read ended on this page or the one before → initial;
//! - else context readahead: h = cached pages just before offset (up to max); if h > req:
//!   h doubled if h >= offset, start = offset, size = min(h + req, max), async = 1;
//!   otherwise a plain read of req pages that leaves the state alone.
//! - initial: start = offset, size = get_init_ra_size(req, max) (roundup_pow_of_two(req),
//!   ×4 if ≤ max/32, ×2 if ≤ max/4, else max), async = size - req if size > req else size;
//! - then, if offset == start and size == async (the read would hit its own mark at
//!   once), the next window is merged in: add = next(size); size+add ≤ max → size += add,
//!   async = add; else size = max, async = max/2;
//! - next(cur) = get_next_ra_size: 4·cur if cur < max/16, 2·cur if cur ≤ max/2, else max;
//! - submission (__do_page_cache_readahead): pages start..start+size that are absent are
//!   allocated locked and read, contiguous runs as one bio (split at max_sectors); the page
//!   at start+size-async gets PG_readahead. With 4 KiB sequential reads and
//!   read_ahead_kb 128: windows of 4, 8, 16, 32, 32... pages (16, 32, 64, 128 KiB).
//!
//! **Older kernels** (`Kernel::readahead_*`, from the mm/readahead.c of each version):
//! before 4.19 the readit merge adds the next window uncapped (so a first 128 KiB read
//! with read_ahead_kb 128 reads 256 KiB: two windows); before 4.10 max has no io_pages
//! term and force_page_cache_readahead stops at ra_pages; before 4.4 both are also
//! capped at 512 pages (max_sane_readahead).
//!
//! **Writes** (generic_perform_write): page by page; a partial page that is not uptodate is
//! read first (block_write_begin reads the 4 KiB block); the data is copied in and the page
//! marked dirty. After the write, balance_dirty_pages: with dirtyable memory = `memory.cache`,
//! bg = cache × dirty_background_ratio, limit = cache × dirty_ratio, the flusher is woken
//! once dirty pages pass bg; if dirty + writeback pages pass the limit the writer sleeps
//! until they are back at the freerun ceiling (bg + limit) / 2. Simplification: Linux
//! pauses writers in proportion between the ceiling and the limit (the position ratio and
//! the bandwidth estimate); here a writer runs free below the limit and, at it, sleeps until
//! writeback brings the total to the ceiling — the same bound on dirty memory and the same
//! steady state (writers at the device's write rate), without the rate estimator.
//!
//! **Writeback** (the flusher kworker, fs-writeback.c): it runs on the IRQ core, woken when
//! dirty pages pass bg and every dirty_writeback_interval, when it writes everything if
//! the inode has been dirty longer than dirty_expire (kupdate: the inode's dirtied_when).
//! It writes dirty pages in offset order from where it stopped (writeback_index, cyclic),
//! chunks of MAX_WRITEBACK_PAGES (1024), contiguous pages as one bio of up to
//! max_sectors_kb, and stops while the block layer has bios waiting for tags (the real
//! kworker sleeps in blk_mq_get_tag), until background writeback is below bg again.
//! Each writeback `Io` is attributed to the job thread that dirtied its first page
//! (`Io::thread`), so spans of writeback requests can be charged to that job.
//!
//! **fsync / fdatasync** (blkdev_fsync: filemap_write_and_wait_range, then
//! blkdev_issue_flush; datasync makes no difference on a block device): the caller writes
//! the dirty pages of the range (one pass, as bios from its own core), waits until every
//! writeback bio submitted up to then has ended, then, if the queue has a write cache
//! (`queue_cache`), sends a flush request (REQ_OP_FLUSH) and waits for it: on eMMC
//! (mmc-legacy, mmc-hsq) the dispatcher runs it synchronously (MMC_ISSUE_SYNC,
//! driver/mmc/erase.rs): it waits for the host to be idle, then mmc_flush_cache sends CMD6
//! SWITCH FLUSH_CACHE with an R1b busy (the busy-end interrupt, or CMD13 polling, then a
//! CMD13 for the switch status) and the request ends inline; on UFS a SYNCHRONIZE CACHE
//! command UPIU without data; on mmc-cqe a DCMD behind a queue barrier (driver/mmc/cqe.rs;
//! hosts without a DCMD slot: an error). The eMMC queue has a write cache whenever the
//! card does reliable writes, even with its cache off (write-through preset): then
//! mmc_flush_cache sends nothing and the legacy and hsq drivers end the flush inline,
//! after waiting for idle.
//! A UFS queue has one when the device has a write-back buffer (WCE); an SD card's has
//! none here (blk_queue_write_cache only when the card reports a cache, which the modelled
//! kernels' SD path does not) so the flush is dropped as generic_make_request_checks does.
//! fio's fsync=N issues it after every N writes once the writes in flight have completed;
//! its latency goes to the job's sync statistics (fio's JSON `sync`). end_fsync is one
//! fsync at the end, not counted there (fio runs it in TD_FSYNCING; io_u.c should_account
//! counts only TD_RUNNING and TD_VERIFYING). sync=1 (O_SYNC): each write is followed by the
//! fsync of its range (generic_write_sync) before the system call returns.
//! Limitation: a page rewritten while under writeback before an fsync is not waited for
//! by that fsync (Linux's WB_SYNC_ALL waits for it and writes it again).
//!
//! **On ext4** (a host with `[fs]`, sim/kernel/journal.rs): the jobs' regions are ext4 files and
//! fsync follows ext4_sync_file (data=ordered): after the writeback wait above, if the
//! file's inode is in a transaction not yet committed (i_sync_tid; i_datasync_tid for
//! fdatasync=N and O_DSYNC, set only by writeback converting unwritten blocks), the
//! caller wakes kjournald2 and sleeps (`FsyncPhase::Commit`) until the commit (log
//! blocks, then the commit block) is done; a flush follows only if that commit will not
//! carry the barrier. An O_SYNC write's spans are then recorded when the caller has its
//! writeback's result, so the journal requests are not in them. Writes note the mtime
//! change at entry (file_update_time), writeback bios the conversion of unwritten blocks.

use crate::device::config::Interface;
use crate::engine::SimTime;
use crate::host::page_cache::{PageCache, PageState, PAGE};
use crate::sim::{Ev, Io, Sim, ThreadState};
use crate::stats::ddir_index;
use crate::workload::{Dir, Fadvise, Submission};
use std::collections::{BTreeSet, HashMap};

/// MAX_WRITEBACK_PAGES (fs/fs-writeback.c): pages written per writeback chunk.
const MAX_WRITEBACK_PAGES: u64 = 1024;
/// How many readahead calls `CacheStats::readahead_bytes` records.
pub const READAHEAD_KEPT: usize = 4096;

/// force_page_cache_readahead reads in chunks of 2 MiB (mm/readahead.c).
const FORCE_RA_CHUNK_PAGES: u64 = (2 << 20) / PAGE;
/// MAX_READAHEAD before 4.4: max_sane_readahead's cap (512 pages, 2 MiB), which
/// bounded both the on-demand window and force_page_cache_readahead.
const OLD_MAX_READAHEAD_PAGES: u64 = 512;

/// What an `Io` that is not a fio I/O does when it ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::sim) enum CacheIo {
    /// A fio I/O (direct).
    #[default]
    None,
    /// A read bio filling locked pages: readahead's (`ahead`, REQ_RAHEAD) or the read
    /// of a block before a partial write (ll_rw_block, no flags).
    Fill { ahead: bool },
    /// A writeback bio; its pages end writeback. `sync`: WB_SYNC_ALL writeback (fsync,
    /// O_SYNC: REQ_SYNC); else the flusher's (WB_SYNC_NONE, REQ_BACKGROUND).
    Writeback { sync: bool },
    /// A cache flush request for an fsync.
    Flush,
    /// A journal write or the flush of a commit (sim/kernel/journal.rs).
    Journal,
    /// The commit block written REQ_FUA on a queue with native FUA (sim/kernel/journal.rs):
    /// the driver sends it as a reliable write (eMMC) or with the FUA bit (UFS).
    JournalFua,
    /// A request from outside the simulation (`sim/external.rs`): no job thread.
    External,
}

#[derive(Debug)]
pub(in crate::sim) enum BufEv {
    /// The thread goes on with its buffered operation.
    Step(u32),
    /// A woken thread is placed on a core and runs.
    Woken(u32),
    /// The operation's CPU work ended: the system call returns.
    OpDone(u32),
    /// The flusher kworker runs.
    Flusher,
    /// The dirty_writeback_interval timer.
    Periodic,
    /// The CPU work that built a batch of page cache bios ended: they go to the block
    /// layer (slot in `Buffered::deferred`).
    Submit(u32),
}

#[derive(Clone, Copy, Debug, Default)]
struct Ra {
    start: u64,
    size: u64,
    async_size: u64,
    prev_page: Option<u64>,
    /// The file's `f_ra.ra_pages`: read_ahead_kb / 4, doubled by POSIX_FADV_SEQUENTIAL.
    ra_pages: u64,
    /// FMODE_RANDOM (POSIX_FADV_RANDOM).
    random: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    /// Back to fio's loop (fsync=N: record the sync latency).
    Resume { record: bool },
    /// An O_SYNC write: complete the write I/O.
    Write(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FsyncPhase {
    /// The system call entry is booked; the pass over dirty pages comes next.
    Start,
    /// Waiting for writeback bios up to `seq_hi`.
    Wait,
    /// The flush request is in flight.
    Flush,
    /// Waiting for the journal commit of transaction `seq_hi` (ext4, sim/kernel/journal.rs);
    /// `barrier`: a flush follows (the commit will not carry it).
    Commit { barrier: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Idle,
    Read {
        io: u32,
        pos: u64,
        end: u64,
    },
    Write {
        io: u32,
        pos: u64,
        end: u64,
    },
    /// A writer asleep in balance_dirty_pages.
    Throttled {
        io: u32,
    },
    Fsync {
        start: SimTime,
        lo: u64,
        hi: u64,
        seq_hi: u64,
        phase: FsyncPhase,
        after: After,
    },
}

#[derive(Clone, Copy, Debug)]
struct BufThread {
    ra: Ra,
    op: Op,
    /// Writes completed since the last fsync (fio's fsync_blocks counter).
    writes: u32,
    end_fsync_done: bool,
    /// fio's `td->last_was_sync`: the last I/O the job completed was an fsync
    /// (io_u.c io_completed); end_fsync is then skipped (`should_fsync`).
    last_was_sync: bool,
    /// Asleep on a locked page.
    waiting_page: Option<u64>,
    /// Spans of the request this system call waited for (its fio direction index, pre,
    /// hw, irq time): recorded when the call returns, so post runs to the thread having
    /// its result.
    awaited: Option<(usize, u64, u64, SimTime)>,
    /// I/Os of the current io_submit (asynchronous engines), the rest of them waiting in
    /// the thread's `submitting` list.
    call_ios: u32,
}

/// Counters of the buffered path (in `SystemStats::cache`).
#[derive(Clone, Debug, Default)]
pub struct CacheStats {
    /// Pages copied from the cache without waiting for a read.
    pub hit_pages: u64,
    /// Pages a read had to wait for (absent or locked when reached).
    pub miss_pages: u64,
    /// Pages each readahead call submitted, in order (bytes): the first
    /// `READAHEAD_KEPT` calls, so the record stays bounded however long the run.
    pub readahead_bytes: Vec<u64>,
    /// Readahead calls that submitted pages, all of them.
    pub readahead_calls: u64,
    /// Most dirty + writeback bytes at any time.
    pub max_dirty_bytes: u64,
    /// Dirty bytes left in the cache at the end of the run.
    pub dirty_left_bytes: u64,
    /// Bytes written back (flusher and fsync).
    pub writeback_bytes: u64,
    /// Flush requests sent to the device.
    pub flushes: u64,
    pub evictions: u64,
    /// Pages reclaim looked at to find them, dropped or not (/proc/vmstat's pgscan).
    pub scanned: u64,
    /// Host-data 4 KiB slots the device was asked to write (its own counter).
    pub device_write_slots: u64,
    /// ext4 journal commits (sim/kernel/journal.rs).
    pub commits: u64,
    /// Bytes written to the ext4 journal (log and commit blocks).
    pub journal_bytes: u64,
}

pub(in crate::sim) struct Buffered {
    cache: Option<PageCache>,
    threads: Vec<BufThread>,
    flusher_busy: bool,
    /// The flusher sleeps for a tag (bios wait in the block layer).
    flusher_blocked: bool,
    wb_index: u64,
    periodic_armed: bool,
    wb_seq: u64,
    wb_inflight: BTreeSet<u64>,
    wb_seq_of: HashMap<u32, u64>,
    /// Bios built by the current page cache operation, submitted when its CPU work ends.
    pub(in crate::sim) batch: Vec<crate::host::block::Bio>,
    /// Batches waiting for their CPU work to end (`BufEv::Submit`), and free slots.
    deferred: Vec<(Vec<crate::host::block::Bio>, u32)>,
    free_deferred: Vec<u32>,
    /// Start of the system call the bios being built serve (sync readahead, O_SYNC):
    /// their requests' pre runs from it.
    origin: Option<SimTime>,
    pub stats: CacheStats,
}

impl Buffered {
    pub(in crate::sim) fn new(cfg: &crate::sim::SimConfig) -> Self {
        let any = cfg.jobs.iter().any(|j| !j.direct);
        let cache = match (&cfg.host.memory, any) {
            (Some(m), true) => Some(PageCache::new((m.cache_bytes / PAGE).max(1))),
            _ => None,
        };
        let bdi_ra_pages = cfg.host.memory.as_ref().map_or(0, |m| m.read_ahead_kb / 4);
        Buffered {
            cache,
            threads: cfg
                .jobs
                .iter()
                .map(|j| BufThread {
                    // file_ra_state_init, then generic_fadvise's change of the file's state.
                    ra: Ra {
                        ra_pages: match j.fadvise {
                            Fadvise::Sequential => bdi_ra_pages * 2,
                            Fadvise::Normal | Fadvise::Random => bdi_ra_pages,
                        },
                        random: j.fadvise == Fadvise::Random,
                        ..Ra::default()
                    },
                    op: Op::Idle,
                    writes: 0,
                    end_fsync_done: false,
                    last_was_sync: false,
                    waiting_page: None,
                    awaited: None,
                    call_ios: 0,
                })
                .collect(),
            flusher_busy: false,
            flusher_blocked: false,
            wb_index: 0,
            periodic_armed: false,
            wb_seq: 0,
            wb_inflight: BTreeSet::new(),
            wb_seq_of: HashMap::new(),
            batch: Vec::new(),
            deferred: Vec::new(),
            free_deferred: Vec::new(),
            origin: None,
            stats: CacheStats::default(),
        }
    }

    /// Counts a completed write for fio's fsync=N.
    pub(in crate::sim) fn note_done(&mut self, t: u32, dir: Dir) {
        self.threads[t as usize].last_was_sync = false;
        if dir == Dir::Write {
            self.threads[t as usize].writes += 1;
        }
    }
}

/// What `Sim::new` refuses: buffered jobs without `[memory]`;
/// the sync family on drivers whose flush is not modelled.
pub(in crate::sim) fn check(cfg: &crate::sim::SimConfig) -> Result<(), String> {
    for j in &cfg.jobs {
        if !j.direct && cfg.host.memory.is_none() {
            return Err(format!(
                "job '{}': buffered I/O (direct=0) needs a [memory] section in host preset '{}'",
                j.name, cfg.host.name
            ));
        }
        // O_DIRECT|O_SYNC (`Sim::o_sync_direct`): a FUA write where the queue has native
        // FUA; the flush sequence's post-flush that emulates FUA on a queue without it
        // is not modelled, nor the completion work item that ran an asynchronous
        // O_SYNC direct write's fsync before the 4.10 rewrite.
        if j.direct && j.o_sync {
            let qc = queue_cache(cfg);
            if qc.write_cache && !qc.fua {
                return Err(format!(
                    "job '{}': sync=1 with direct=1 on a queue with a write cache but no native FUA (the flush sequence's post-flush) is not modelled",
                    j.name
                ));
            }
            if qc.write_cache
                && !matches!(j.submission, Submission::Sync)
                && !cfg.host.kernel.dsync_dio_fua()
            {
                return Err(format!(
                    "job '{}': sync=1 with direct=1 and an asynchronous engine on Linux {} (before 4.10 the fsync ran from the direct I/O's completion work item) is not modelled",
                    j.name, cfg.host.kernel
                ));
            }
        }
        let syncs = j.fsync_every > 0
            || j.end_fsync
            || j.o_sync
            || j.replay.as_ref().is_some_and(|r| r.syncs);
        if syncs && queue_cache(cfg).write_cache {
            crate::driver::check_flushes(cfg.driver, &cfg.host)
                .map_err(|e| format!("job '{}': {e}", j.name))?;
        }
    }
    Ok(())
}

/// The write cache flags the kernel gives the device's queue (blk_queue_write_cache(q,
/// write_cache, fua)): with `write_cache` the block layer keeps REQ_PREFLUSH and sends
/// flush requests to the driver; with `fua` a REQ_FUA write goes to the driver as such,
/// without it the flush sequence emulates FUA with a flush after the write. Without
/// `write_cache` both flags are dropped (generic_make_request_checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) struct QueueCache {
    pub write_cache: bool,
    pub fua: bool,
}

/// The queue's write cache flags for this device and host:
/// - eMMC (drivers/mmc/core/block.c mmc_blk_alloc_req): a card with reliable write
///   (EXT_CSD REL_WR_SEC_C or WR_REL_PARAM EN_REL_WR, which every eMMC 4.3+ part
///   reports; flashpath assumes every modelled eMMC does) behind a host with CMD23
///   (MMC_BLK_CMD23) gets MMC_BLK_REL_WR and both flags, whether or not its cache is on:
///   so from 2.6.39 through 6.x. REQ_FUA writes become reliable writes. From 5.18 a
///   card whose cache is on gets `write_cache` without CMD23 too (taken here for every
///   host: no shipped eMMC host lacks CMD23).
/// - UFS (drivers/scsi/sd.c sd_set_flush_flag): `write_cache` from the caching mode
///   page's WCE bit (the device has a write-back buffer), `fua` from DPOFUA, which UFS
///   devices report (JESD220 supports FUA in WRITE(10); estimate that every modelled
///   part sets it).
/// - SD cards: none (the modelled kernels declare no cache for SD).
pub(in crate::sim) fn queue_cache(cfg: &crate::sim::SimConfig) -> QueueCache {
    let cache_on = cfg.device.cache_on();
    match cfg.device.interface {
        Interface::Emmc => {
            let rel_wr = cfg.host.mmc.cmd23;
            QueueCache {
                write_cache: rel_wr || cache_on,
                fua: rel_wr,
            }
        }
        Interface::Ufs => QueueCache {
            write_cache: cache_on,
            fua: cache_on,
        },
        Interface::Sd => QueueCache {
            write_cache: false,
            fua: false,
        },
    }
}

fn init_ra_size(req: u64, max: u64) -> u64 {
    let n = req.max(1).next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Sim {
    fn cache(&mut self) -> &mut PageCache {
        self.buf
            .cache
            .as_mut()
            .expect("buffered jobs have a page cache")
    }

    fn mem(&self) -> &crate::host::MemoryConfig {
        self.cfg.host.memory.as_ref().expect("checked in Sim::new")
    }

    fn copy_ns(&self, bytes: u64) -> u64 {
        crate::engine::transfer_ns(bytes, self.mem().copy_bytes_per_s)
    }

    fn thresholds(&self) -> (u64, u64) {
        let m = self.mem();
        let pages = m.cache_bytes / PAGE;
        (
            pages * m.dirty_background_ratio as u64 / 100,
            pages * m.dirty_ratio as u64 / 100,
        )
    }

    pub(in crate::sim) fn buf_handle(&mut self, e: BufEv) {
        match e {
            BufEv::Step(t) => self.buf_step(t),
            BufEv::Woken(t) => self.buf_woken(t),
            BufEv::OpDone(t) => self.buf_op_done(t),
            BufEv::Flusher => self.flusher_run(),
            BufEv::Periodic => self.periodic(),
            BufEv::Submit(slot) => {
                let (mut bios, core) = std::mem::take(&mut self.buf.deferred[slot as usize]);
                let now = self.now;
                let max = self.block.max_sectors();
                for mut bio in bios.drain(..) {
                    bio.queued_at = now;
                    let _pieces = self.submit_kernel_bio(bio, max);
                    // One kernel bio per cache `Io` (`cache_bios`, the journal's writes).
                    debug_assert_eq!(_pieces, self.ios[bio.io as usize].parts_left);
                }
                // The slot keeps its (empty) vector for the next batch.
                self.buf.deferred[slot as usize].0 = bios;
                self.buf.free_deferred.push(slot);
                self.kick(core);
            }
        }
    }

    /// The bios built since the last call go to the block layer at `at`, when the CPU
    /// work that built them (page allocation or writepages, on `core`) has ended.
    pub(in crate::sim) fn submit_batch(&mut self, at: SimTime, core: u32) {
        if self.buf.batch.is_empty() {
            return;
        }
        let slot = match self.buf.free_deferred.pop() {
            Some(s) => s,
            None => {
                self.buf.deferred.push((Vec::new(), core));
                (self.buf.deferred.len() - 1) as u32
            }
        };
        // Swap vectors: the batch goes to the slot, the slot's empty one is reused.
        let d = &mut self.buf.deferred[slot as usize];
        std::mem::swap(&mut d.0, &mut self.buf.batch);
        d.1 = core;
        self.q.push(at, Ev::Buf(BufEv::Submit(slot)));
    }

    /// A page cache request ended with these spans (pre, hw, irq time). If its job's
    /// system call waits for it (a read on its pages, an O_SYNC write's writeback), they
    /// are recorded when that call returns; otherwise now, post ending here.
    pub(in crate::sim) fn buf_request_spans(&mut self, io: u32, pre: u64, hw: u64, irq: SimTime) {
        let now = self.now;
        let x = &self.ios[io as usize];
        let (t, lo, hi, kind, d) = (
            x.thread as usize,
            x.offset / PAGE,
            (x.offset + x.len).div_ceil(PAGE),
            x.cache,
            ddir_index(x.dir, false),
        );
        let bt = &self.buf.threads[t];
        let waited = match (kind, bt.op) {
            (CacheIo::Fill { .. }, Op::Read { .. }) => {
                bt.waiting_page.is_some_and(|p| p >= lo && p < hi)
            }
            (
                CacheIo::Writeback { .. },
                Op::Fsync {
                    after: After::Write(_),
                    lo: a,
                    hi: b,
                    ..
                },
            ) => lo < b && a < hi,
            _ => false,
        };
        if waited {
            if let Some((pd, p, h, i)) = self.buf.threads[t].awaited.replace((d, pre, hw, irq)) {
                self.threads[t].stats.spans_of(pd).record_io(p, h, now - i);
            }
        } else {
            self.threads[t]
                .stats
                .spans_of(d)
                .record_io(pre, hw, now - irq);
        }
    }

    /// Hook of `submitted` for a buffered job's read or write.
    pub(in crate::sim) fn buf_submitted(&mut self, t: u32) {
        self.account_outstanding(t);
        let mut picked = std::mem::take(&mut self.threads[t as usize].submitting);
        debug_assert!(
            picked.len() == 1 || self.buf_async(t),
            "a synchronous engine submits one I/O per call"
        );
        let io = picked.remove(0);
        self.buf.threads[t as usize].call_ios = picked.len() as u32 + 1;
        // The call's other iocbs, run one after another by this same call.
        self.threads[t as usize].submitting = picked;
        self.buf_start(t, io);
    }

    /// The job submits with an asynchronous engine: libaio's io_submit, which runs a
    /// buffered iocb to its end in the submitting call (aio_read/aio_write without
    /// IOCB_NOWAIT: generic_file_read_iter and generic_perform_write block as a pread
    /// would), then posts its completion; io_getevents finds it at once.
    fn buf_async(&self, t: u32) -> bool {
        !matches!(
            self.cfg.jobs[self.threads[t as usize].cfg].submission,
            Submission::Sync
        )
    }

    /// The read or write `io` starts in the thread's system call.
    fn buf_start(&mut self, t: u32, io: u32) {
        let now = self.now;
        let (dir, offset, len) = self.note_issued(t, io);
        self.threads[t as usize].state = ThreadState::Running;
        if !self.buf.periodic_armed {
            self.buf.periodic_armed = true;
            let at = now + self.mem().dirty_writeback_interval_ns;
            self.q.push(at, Ev::Buf(BufEv::Periodic));
        }
        let end = offset + len;
        if dir == Dir::Write {
            // file_update_time (ext4: the inode joins the running transaction).
            self.jbd_note_write(t);
        }
        self.buf.threads[t as usize].op = match dir {
            Dir::Read => Op::Read {
                io,
                pos: offset,
                end,
            },
            Dir::Write => Op::Write {
                io,
                pos: offset,
                end,
            },
        };
        self.buf_step(t);
    }

    /// Books `cost` on the thread's core from now and continues with `ev` at its end.
    fn buf_book(&mut self, t: u32, cost: u64, ev: BufEv) {
        let core = self.threads[t as usize].core;
        self.threads[t as usize].stats.sys_ns += cost;
        let end = self.cpu.run(core, self.now, cost);
        self.q.push(end, Ev::Buf(ev));
    }

    /// The thread sleeps (its op stays as it is) until something wakes it.
    fn buf_sleep(&mut self, t: u32) {
        self.threads[t as usize].state = ThreadState::Sleeping;
    }

    /// A sleeping thread wakes and steps on.
    fn buf_wake(&mut self, t: u32) {
        if self.threads[t as usize].state != ThreadState::Sleeping {
            return;
        }
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Running;
        th.stats.ctx += 1;
        // Where it runs is chosen once the waker's work of this instant is booked: the
        // waker goes on running on its core (e.g. mmcqd preparing the next request).
        self.q.push(self.now, Ev::Buf(BufEv::Woken(t)));
    }

    /// The woken thread is placed on a core and runs there.
    fn buf_woken(&mut self, t: u32) {
        let at = self.wake_thread(t, self.now);
        self.q.push(at, Ev::Buf(BufEv::Step(t)));
    }

    fn buf_step(&mut self, t: u32) {
        match self.buf.threads[t as usize].op {
            Op::Read { .. } => self.read_step(t),
            Op::Write { .. } => self.write_step(t),
            Op::Throttled { io } => self.throttle_check(t, io),
            Op::Fsync { .. } => self.fsync_step(t),
            Op::Idle => unreachable!("a step without an operation"),
        }
    }

    fn read_step(&mut self, t: u32) {
        let Op::Read { io, mut pos, end } = self.buf.threads[t as usize].op else {
            unreachable!()
        };
        let page_op = self.mem().page_op_ns;
        let mut acc = 0u64;
        let last = end.div_ceil(PAGE);
        loop {
            if pos >= end {
                self.buf.threads[t as usize].op = Op::Read { io, pos, end };
                return self.buf_book(t, acc, BufEv::OpDone(t));
            }
            let idx = pos / PAGE;
            let state = self.cache().state(idx);
            let marked = state.is_some() && self.cache().has_readahead(idx);
            let must_break = match state {
                None | Some(PageState::Locked) => true,
                Some(_) => marked,
            };
            if must_break && acc > 0 {
                self.buf.threads[t as usize].op = Op::Read { io, pos, end };
                return self.buf_book(t, acc, BufEv::Step(t));
            }
            match state {
                None => {
                    self.buf.stats.miss_pages += 1;
                    // Sync readahead: the request serves this system call from its entry.
                    self.buf.origin = Some(self.ios[io as usize].t_start);
                    self.sync_readahead(t, idx, last - idx);
                    self.buf.origin = None;
                    if self.cache().state(idx).is_none() {
                        // No clean page to reclaim: wait for writeback to free one.
                        self.buf.threads[t as usize].op = Op::Read { io, pos, end };
                        self.buf.threads[t as usize].waiting_page = None;
                        self.flusher_wake();
                        return self.buf_sleep(t);
                    }
                    self.buf.threads[t as usize].op = Op::Read { io, pos, end };
                    self.buf.threads[t as usize].waiting_page = Some(idx);
                    return self.buf_sleep(t);
                }
                Some(PageState::Locked) => {
                    if self.cache().take_readahead(idx) {
                        self.readahead(t, idx, last - idx, true);
                    }
                    self.buf.stats.miss_pages += 1;
                    self.buf.threads[t as usize].op = Op::Read { io, pos, end };
                    self.buf.threads[t as usize].waiting_page = Some(idx);
                    return self.buf_sleep(t);
                }
                Some(s) => {
                    if marked {
                        self.cache().take_readahead(idx);
                        if !matches!(s, PageState::Writeback { .. }) {
                            self.readahead(t, idx, last - idx, true);
                        }
                    }
                    let n = end.min((idx + 1) * PAGE) - pos;
                    acc += self.copy_ns(n) + page_op;
                    self.cache().touch(idx);
                    self.buf.stats.hit_pages += 1;
                    self.buf.threads[t as usize].ra.prev_page = Some(idx);
                    pos += n;
                }
            }
        }
    }

    /// page_cache_sync_readahead for a miss at page `idx` of a read of `req` pages: on an
    /// FMODE_RANDOM file force_page_cache_readahead, else ondemand_readahead.
    fn sync_readahead(&mut self, t: u32, idx: u64, req: u64) {
        let ra = self.buf.threads[t as usize].ra;
        if !ra.random {
            return self.readahead(t, idx, req, false);
        }
        // force_page_cache_readahead: at most max(io_pages, ra_pages) pages from 4.10,
        // ra_pages from 4.4, 512 before; read in 2 MiB chunks with no lookahead mark; the
        // readahead state is left alone.
        let io_pages = self.cfg.host.block.max_request_bytes / PAGE;
        let kernel = self.cfg.host.kernel;
        let cap = if kernel.readahead_io_pages() {
            io_pages.max(ra.ra_pages)
        } else if kernel.readahead_capped_at_512() {
            OLD_MAX_READAHEAD_PAGES
        } else {
            ra.ra_pages
        };
        let mut left = req.min(cap);
        let mut at = idx;
        let eof = self.eof_page(t, idx);
        while left > 0 {
            let chunk = left.min(FORCE_RA_CHUNK_PAGES);
            self.ra_submit(t, at, chunk, 0, eof);
            at += chunk;
            left -= chunk;
        }
    }

    /// ondemand_readahead (see the module doc) for a read at page `idx` of `req` pages.
    fn readahead(&mut self, t: u32, idx: u64, req: u64, hit_marker: bool) {
        let ra_pages = self.buf.threads[t as usize].ra.ra_pages;
        let io_pages = self.cfg.host.block.max_request_bytes / PAGE;
        let kernel = self.cfg.host.kernel;
        let mut max = if kernel.readahead_capped_at_512() {
            // max_sane_readahead (3.19, 4.1).
            ra_pages.min(OLD_MAX_READAHEAD_PAGES)
        } else {
            ra_pages
        };
        if kernel.readahead_io_pages() && req > max && io_pages > max {
            max = req.min(io_pages);
        }
        let mut ra = self.buf.threads[t as usize].ra;
        let initial = |ra: &mut Ra| {
            ra.start = idx;
            ra.size = init_ra_size(req, max);
            ra.async_size = if ra.size > req {
                ra.size - req
            } else {
                ra.size
            };
        };
        if idx == 0 {
            initial(&mut ra);
        } else if idx == ra.start + ra.size - ra.async_size || idx == ra.start + ra.size {
            ra.start += ra.size;
            ra.size = next_ra_size(ra.size, max);
            ra.async_size = ra.size;
        } else if hit_marker {
            let start = (idx + 1..=idx + max).find(|&i| self.cache().state(i).is_none());
            let Some(start) = start else {
                return;
            };
            ra.start = start;
            ra.size = next_ra_size(start - idx + req, max);
            ra.async_size = ra.size;
        } else if req > max || ra.prev_page.is_some_and(|p| idx >= p && idx - p <= 1) {
            initial(&mut ra);
        } else {
            // try_context_readahead: the pages cached just before `idx`.
            let mut h = 0;
            while h < max && idx > h && self.cache().state(idx - 1 - h).is_some() {
                h += 1;
            }
            if h <= req {
                // A standalone small read: read as is, the state stays.
                let eof = self.eof_page(t, idx);
                return self.ra_submit(t, idx, req, 0, eof);
            }
            if h >= idx {
                h *= 2;
            }
            ra.start = idx;
            ra.size = (h + req).min(max);
            ra.async_size = 1;
        }
        // readit: a read that would hit its own mark at once merges the next window.
        if idx == ra.start && ra.size == ra.async_size {
            let add = next_ra_size(ra.size, max);
            if !kernel.readahead_merge_capped() {
                // Before 4.19 the merge is not capped: the window may reach 2 × max.
                ra.async_size = add;
                ra.size += add;
            } else if ra.size + add <= max {
                ra.async_size = add;
                ra.size += add;
            } else {
                ra.size = max;
                ra.async_size = max >> 1;
            }
        }
        self.buf.threads[t as usize].ra = ra;
        let eof = self.eof_page(t, idx);
        self.ra_submit(t, ra.start, ra.size, ra.async_size, eof);
    }

    /// The end (in pages, rounded up) of the file a read of thread `t` at page `idx` is
    /// in: the block device's, or the job's regular file's (i_size; readahead reads
    /// nothing past it, __do_page_cache_readahead's end_index).
    fn eof_page(&self, t: u32, idx: u64) -> u64 {
        let files = self.cfg.jobs[self.threads[t as usize].cfg].files.as_ref();
        files
            .and_then(|f| {
                f.extents
                    .iter()
                    .find(|e| (e.offset..e.offset + e.size).contains(&(idx * PAGE)))
            })
            .map_or(self.cfg.device.capacity_bytes, |e| e.offset + e.size)
            .div_ceil(PAGE)
    }

    /// __do_page_cache_readahead: absent pages of start..start+size are allocated locked
    /// and read, contiguous runs as bios; the page at start+size-async is marked.
    /// Pages at or past `eof` (the read's file's end in pages, `eof_page`) are not read.
    fn ra_submit(&mut self, t: u32, start: u64, size: u64, async_size: u64, eof: u64) {
        let end = (start + size).min(eof);
        let mark = (start + size)
            .checked_sub(async_size)
            .filter(|_| async_size > 0);
        let mut run: Option<(u64, u64)> = None;
        let mut pages = 0u64;
        let mut bios = 0u64;
        for i in start..end {
            let absent = self.cache().state(i).is_none();
            if absent && self.cache().insert_locked(i).is_ok() {
                if Some(i) == mark {
                    self.cache().set_readahead(i);
                }
                pages += 1;
                run = match run {
                    Some((a, b)) if b == i => Some((a, i + 1)),
                    Some((a, b)) => {
                        bios += self.fill_bios(t, a, b, true);
                        Some((i, i + 1))
                    }
                    None => Some((i, i + 1)),
                };
            } else if let Some((a, b)) = run.take() {
                bios += self.fill_bios(t, a, b, true);
                if absent {
                    break; // no page to allocate
                }
            }
        }
        if let Some((a, b)) = run {
            bios += self.fill_bios(t, a, b, true);
        }
        if pages == 0 {
            return;
        }
        let st = &mut self.buf.stats;
        st.readahead_calls += 1;
        if st.readahead_bytes.len() < READAHEAD_KEPT {
            st.readahead_bytes.push(pages * PAGE);
        }
        let cost = self.mem().page_op_ns * pages + self.cfg.host.costs.block_submit_ns * bios;
        let core = self.threads[t as usize].core;
        self.threads[t as usize].stats.sys_ns += cost;
        let end = self.cpu.run(core, self.now, cost);
        self.submit_batch(end, core);
    }

    /// Read bios for pages a..b (already locked) of thread `t`, readahead's if `ahead`;
    /// returns how many.
    fn fill_bios(&mut self, t: u32, a: u64, b: u64, ahead: bool) -> u64 {
        let core = self.threads[t as usize].core;
        self.cache_bios(t, a, b, Dir::Read, CacheIo::Fill { ahead }, core)
    }

    /// Bios of `kind` for pages a..b, each its own `Io` attributed to thread `t`,
    /// submitted from `core`: as large as the kernel builds them (mpage, ext4 writeback:
    /// up to BIO_MAX_PAGES on a kernel that splits bios, else within max_sectors), each
    /// split at max_sectors when submitted; the `Io` ends when all its pieces have (the
    /// split pieces are chained to it). Returns how many block-layer bios they make.
    fn cache_bios(&mut self, t: u32, a: u64, b: u64, dir: Dir, kind: CacheIo, core: u32) -> u64 {
        let max = self.block.max_sectors() as u64 * 512;
        let splits = self.cfg.host.kernel.splits_bios();
        let bio_max = crate::sim::kernel_bio_sectors(max / 512, splits) * 512;
        let now = self.now;
        let writeback = matches!(kind, CacheIo::Writeback { .. });
        if writeback {
            // ext4 maps the blocks (unwritten extents converted) before the bios.
            self.jbd_note_writeback(t, a, b);
        }
        let mut off = a * PAGE;
        let end = b * PAGE;
        let mut n = 0;
        while off < end {
            let len = (end - off).min(bio_max);
            let io = self.alloc_cache_io(t, dir, off, len, kind);
            let pieces = crate::sim::rw_pieces(len, max, splits);
            self.ios[io as usize].parts_left = pieces;
            if writeback {
                self.buf.wb_seq += 1;
                self.buf.wb_inflight.insert(self.buf.wb_seq);
                self.buf.wb_seq_of.insert(io, self.buf.wb_seq);
                self.buf.stats.writeback_bytes += len;
            }
            self.buf.batch.push(crate::host::block::Bio {
                io,
                dir,
                sector: off / 512,
                sectors: (len / 512) as u32,
                cpu: core,
                queued_at: now,
                discard: false,
                nomerge: false,
            });
            off += len;
            n += pieces as u64;
        }
        n
    }

    /// An `Io` the page cache issues now for job thread `t` (one bio: readahead fill,
    /// writeback or flush).
    pub(in crate::sim) fn alloc_cache_io(
        &mut self,
        t: u32,
        dir: Dir,
        offset: u64,
        len: u64,
        kind: CacheIo,
    ) -> u32 {
        let now = self.now;
        let t_start = self.buf.origin.unwrap_or(now);
        self.alloc_io(Io {
            thread: t,
            dir,
            offset,
            len,
            parts_left: 1,
            t_start,
            t_issued: now,
            t_done: 0,
            t_hw: SimTime::MAX,
            t_irq: 0,
            cache: kind,
            trim: false,
            fua: false,
            sync_after: false,
        })
    }

    fn write_step(&mut self, t: u32) {
        let Op::Write { io, mut pos, end } = self.buf.threads[t as usize].op else {
            unreachable!()
        };
        let page_op = self.mem().page_op_ns;
        let write_page_op = self.mem().write_page_op_ns;
        let now = self.now;
        let mut acc = 0u64;
        loop {
            if pos >= end {
                self.buf.threads[t as usize].op = Op::Throttled { io };
                return self.buf_book(t, acc, BufEv::Step(t));
            }
            let idx = pos / PAGE;
            let n = end.min((idx + 1) * PAGE) - pos;
            let state = self.cache().state(idx);
            let partial = n < PAGE;
            let wait = state == Some(PageState::Locked) || (state.is_none() && partial);
            if wait && acc > 0 {
                self.buf.threads[t as usize].op = Op::Write { io, pos, end };
                return self.buf_book(t, acc, BufEv::Step(t));
            }
            if wait {
                self.buf.threads[t as usize].op = Op::Write { io, pos, end };
                if state.is_none() {
                    // Read-modify-write: the block is read first.
                    if self.cache().insert_locked(idx).is_err() {
                        self.flusher_wake();
                        self.buf.threads[t as usize].waiting_page = None;
                        return self.buf_sleep(t);
                    }
                    let bios = self.fill_bios(t, idx, idx + 1, false);
                    let cost = page_op + self.cfg.host.costs.block_submit_ns * bios;
                    let core = self.threads[t as usize].core;
                    let end = self.cpu.run(core, now, cost);
                    self.submit_batch(end, core);
                }
                self.buf.threads[t as usize].waiting_page = Some(idx);
                return self.buf_sleep(t);
            }
            match self.cache().write(idx, t, now) {
                Ok(_) => {}
                Err(_) => {
                    // No clean page to reclaim: wait for writeback to free one.
                    self.buf.threads[t as usize].op = Op::Write { io, pos, end };
                    self.buf.threads[t as usize].waiting_page = None;
                    if acc > 0 {
                        return self.buf_book(t, acc, BufEv::Step(t));
                    }
                    self.flusher_wake();
                    return self.buf_sleep(t);
                }
            }
            let c = self.cache();
            let total = (c.dirty() + c.writeback()) * PAGE;
            self.buf.stats.max_dirty_bytes = self.buf.stats.max_dirty_bytes.max(total);
            acc += self.copy_ns(n) + write_page_op;
            pos += n;
        }
    }

    /// balance_dirty_pages after a write's copy (see the module doc).
    fn throttle_check(&mut self, t: u32, io: u32) {
        let (bg, limit) = self.thresholds();
        let (dirty, wb) = {
            let c = self.cache();
            (c.dirty(), c.writeback())
        };
        if dirty > bg {
            self.flusher_wake();
        }
        if dirty + wb > limit {
            self.buf.threads[t as usize].op = Op::Throttled { io };
            return self.buf_sleep(t);
        }
        let job = &self.cfg.jobs[self.threads[t as usize].cfg];
        if job.o_sync {
            let x = &self.ios[io as usize];
            let (lo, hi) = (x.offset / PAGE, (x.offset + x.len).div_ceil(PAGE));
            let start = x.t_start;
            return self.fsync_start(t, start, lo, hi, After::Write(io), false);
        }
        self.buf.threads[t as usize].op = Op::Throttled { io };
        self.buf_op_done(t);
    }

    /// The read or write system call returns; or an fsync ends.
    fn buf_op_done(&mut self, t: u32) {
        let now = self.now;
        let ret = self.cfg.host.costs.syscall_return_ns;
        let op = std::mem::replace(&mut self.buf.threads[t as usize].op, Op::Idle);
        let io = match op {
            Op::Read { io, .. } | Op::Write { io, .. } | Op::Throttled { io } => Some(io),
            Op::Fsync { start, after, .. } => match after {
                After::Write(io) => Some(io),
                After::Resume { record } => {
                    self.buf.threads[t as usize].last_was_sync = record;
                    if record && start >= self.threads[t as usize].measure_start {
                        let end = now + ret;
                        self.threads[t as usize].stats.sync_lat.record(end - start);
                    }
                    None
                }
            },
            Op::Idle => unreachable!("no operation to end"),
        };
        if let Some(io) = io {
            self.ios[io as usize].t_done = now;
            self.threads[t as usize].completed.push(io);
        }
        self.threads[t as usize].state = ThreadState::Running;
        if io.is_some() && self.buf_async(t) {
            return self.buf_call_next(t);
        }
        let core = self.threads[t as usize].core;
        let end = self.cpu.run(core, now, ret);
        if let Some((d, pre, hw, irq)) = self.buf.threads[t as usize].awaited.take() {
            self.threads[t as usize]
                .stats
                .spans_of(d)
                .record_io(pre, hw, end - irq);
        }
        self.q.push(end, Ev::ThreadRun(t));
    }

    /// An iocb of an asynchronous engine's io_submit is done (its completion posted):
    /// the call goes on with its next iocb, or returns. fio takes the return as every
    /// iocb's issue time (the end of its submission latency); their completions wait
    /// to be reaped.
    fn buf_call_next(&mut self, t: u32) {
        let now = self.now;
        if let Some((d, pre, hw, irq)) = self.buf.threads[t as usize].awaited.take() {
            self.threads[t as usize]
                .stats
                .spans_of(d)
                .record_io(pre, hw, now - irq);
        }
        if !self.threads[t as usize].submitting.is_empty() {
            let io = self.threads[t as usize].submitting.remove(0);
            return self.buf_start(t, io);
        }
        let n = self.buf.threads[t as usize].call_ios as usize;
        let done = &self.threads[t as usize].completed;
        for &io in &done[done.len() - n..] {
            self.ios[io as usize].t_issued = now;
        }
        self.after_submit(t);
    }

    /// O_SYNC/O_DSYNC on a direct write of job thread `t` (blkdev_write_iter): its bios
    /// carry REQ_FUA where the kernel sets it (`Kernel::dsync_dio_fua`) and the queue
    /// keeps it (a write cache and native FUA; without a write cache submit_bio_checks
    /// strips it); a synchronous system call then runs generic_write_sync, i.e.
    /// blkdev_fsync (nothing dirty to write, then blkdev_issue_flush: a flush request
    /// where the queue has a write cache). An asynchronous one returns -EIOCBQUEUED and
    /// skips it. The check runs on every direct write, inline; the flags of an O_SYNC
    /// job's write out of line (docs/performance.md).
    #[inline(always)]
    pub(in crate::sim) fn o_sync_direct(&mut self, t: u32, io: u32) {
        if self.cfg.jobs[self.threads[t as usize].cfg].o_sync {
            self.o_sync_direct_flags(t, io);
        }
    }

    /// `o_sync_direct`'s flags of an O_SYNC job's write.
    #[inline(never)]
    fn o_sync_direct_flags(&mut self, t: u32, io: u32) {
        let job = &self.cfg.jobs[self.threads[t as usize].cfg];
        let qc = queue_cache(&self.cfg);
        let fua = qc.write_cache && qc.fua && self.cfg.host.kernel.dsync_dio_fua();
        let sync = matches!(job.submission, Submission::Sync);
        let x = &mut self.ios[io as usize];
        x.fua = fua;
        x.sync_after = sync;
    }

    /// The O_SYNC direct write `io` is done: its system call goes on with blkdev_fsync
    /// over the written range, and returns when that ends.
    pub(in crate::sim) fn o_sync_direct_fsync(&mut self, t: u32, io: u32) {
        let x = &mut self.ios[io as usize];
        x.sync_after = false;
        let (lo, hi) = (x.offset / PAGE, (x.offset + x.len).div_ceil(PAGE));
        let start = x.t_start;
        self.fsync_start(t, start, lo, hi, After::Write(io), false);
    }

    /// Hook of `thread_run` after reaping: fio's fsync=N. True if the thread is busy with
    /// it (or waits for its I/Os to drain first).
    /// fio's get_rw_ddir picks the sync before the next I/O, so a job whose last write
    /// completes the count ends without it (do_io's loop ends first: 16 writes with
    /// fsync=4 make 3 fsyncs).
    pub(in crate::sim) fn buf_sync_due(&mut self, t: u32) -> bool {
        let n = self.cfg.jobs[self.threads[t as usize].cfg].fsync_every;
        if n == 0 || self.buf.threads[t as usize].writes < n || self.job_done_issuing(t) {
            return false;
        }
        if self.threads[t as usize].inflight > 0 {
            self.threads[t as usize].state = ThreadState::Sleeping;
            return true;
        }
        self.buf.threads[t as usize].writes = 0;
        let now = self.now;
        let datasync = self.cfg.jobs[self.threads[t as usize].cfg].fdatasync;
        self.observe_sync(t, datasync);
        self.fsync_start(t, now, 0, u64::MAX, After::Resume { record: true }, true);
        true
    }

    /// Observers see an fsync fio queues (sim/observer.rs `sync_queued`).
    fn observe_sync(&mut self, t: u32, datasync: bool) {
        if self.observers.is_empty() || (t as usize) < self.prefill {
            return;
        }
        let (job, now) = (t as usize - self.prefill, self.now);
        for o in &mut self.observers {
            o.sync_queued(job, now, datasync);
        }
    }

    /// Hook of `thread_run` when the job is done issuing and drained: end_fsync.
    pub(in crate::sim) fn buf_end_fsync(&mut self, t: u32) -> bool {
        let job = &self.cfg.jobs[self.threads[t as usize].cfg];
        let bt = &self.buf.threads[t as usize];
        if !job.end_fsync || bt.end_fsync_done || bt.last_was_sync {
            return false;
        }
        self.buf.threads[t as usize].end_fsync_done = true;
        let now = self.now;
        self.observe_sync(t, false);
        self.fsync_start(t, now, 0, u64::MAX, After::Resume { record: false }, true);
        true
    }

    /// A replayed sync (sim/jobs/replay.rs): fsync(2) from the thread now.
    pub(in crate::sim) fn buf_fsync_now(&mut self, t: u32) {
        let now = self.now;
        self.observe_sync(t, false);
        self.fsync_start(t, now, 0, u64::MAX, After::Resume { record: true }, true);
    }

    fn fsync_start(&mut self, t: u32, start: SimTime, lo: u64, hi: u64, after: After, entry: bool) {
        self.threads[t as usize].state = ThreadState::Running;
        self.buf.threads[t as usize].op = Op::Fsync {
            start,
            lo,
            hi,
            seq_hi: 0,
            phase: FsyncPhase::Start,
            after,
        };
        let cost = if entry {
            self.cfg.host.costs.syscall_ns
        } else {
            0
        };
        self.buf_book(t, cost, BufEv::Step(t));
    }

    fn fsync_step(&mut self, t: u32) {
        let Op::Fsync {
            start,
            lo,
            hi,
            seq_hi,
            phase,
            after,
        } = self.buf.threads[t as usize].op
        else {
            unreachable!()
        };
        let set = |sim: &mut Sim, seq_hi, phase| {
            sim.buf.threads[t as usize].op = Op::Fsync {
                start,
                lo,
                hi,
                seq_hi,
                phase,
                after,
            }
        };
        match phase {
            FsyncPhase::Start => {
                // filemap_fdatawrite_range: the dirty pages of the range, from this core.
                let mut pages = 0;
                let mut bios = 0;
                if let After::Write(io) = after {
                    // O_SYNC: the writeback serves the write system call from its entry.
                    self.buf.origin = Some(self.ios[io as usize].t_start);
                }
                if self.buf.cache.is_some() {
                    let mut from = lo;
                    while let Some(a) = self.cache().next_dirty(from).filter(|&a| a < hi) {
                        let mut b = a;
                        while b < hi && self.cache().state(b) == Some(PageState::Dirty) {
                            b += 1;
                        }
                        let owner = self.cache().owner(a).unwrap_or(t);
                        for i in a..b {
                            self.cache().start_writeback(i);
                        }
                        pages += b - a;
                        let core = self.threads[t as usize].core;
                        let kind = CacheIo::Writeback { sync: true };
                        bios += self.cache_bios(owner, a, b, Dir::Write, kind, core);
                        from = b;
                    }
                }
                self.buf.origin = None;
                let seq_hi = self.buf.wb_seq;
                set(self, seq_hi, FsyncPhase::Wait);
                if pages > 0 {
                    let core = self.threads[t as usize].core;
                    let cost = self.mem().writeback_page_op_ns * pages
                        + self.cfg.host.costs.block_submit_ns * bios;
                    self.threads[t as usize].stats.sys_ns += cost;
                    let end = self.cpu.run(core, self.now, cost);
                    self.submit_batch(end, core);
                    self.q.push(end, Ev::Buf(BufEv::Step(t)));
                    return;
                }
                self.fsync_step(t)
            }
            FsyncPhase::Wait => {
                let waiting = self.buf.wb_inflight.first().is_some_and(|&s| s <= seq_hi);
                if waiting {
                    return self.buf_sleep(t);
                }
                let job = &self.cfg.jobs[self.threads[t as usize].cfg];
                let datasync = match after {
                    After::Write(_) => job.o_dsync,
                    After::Resume { record: true } => job.fdatasync,
                    After::Resume { record: false } => false, // end_fsync
                };
                if let Some(tid) = self.jbd_needs_commit(t, datasync) {
                    // ext4_sync_file: jbd2_complete_transaction. The thread has its
                    // data writeback's result: an O_SYNC write's spans end here.
                    if let Some((d, p, h, i)) = self.buf.threads[t as usize].awaited.take() {
                        let post = self.now - i;
                        self.threads[t as usize]
                            .stats
                            .spans_of(d)
                            .record_io(p, h, post);
                    }
                    let barrier =
                        queue_cache(&self.cfg).write_cache && !self.jbd_will_send_barrier(tid);
                    set(self, tid, FsyncPhase::Commit { barrier });
                    self.jbd_start_commit(tid, t);
                    return self.buf_sleep(t);
                }
                self.fsync_flush(t)
            }
            FsyncPhase::Commit { barrier: true } => self.fsync_flush(t),
            FsyncPhase::Commit { barrier: false } | FsyncPhase::Flush => self.buf_op_done(t),
        }
    }

    /// The end of an fsync: blkdev_issue_flush if the queue has a write cache.
    fn fsync_flush(&mut self, t: u32) {
        if !queue_cache(&self.cfg).write_cache {
            return self.buf_op_done(t);
        }
        // blkdev_issue_flush: an empty REQ_PREFLUSH bio, a flush request.
        if let Op::Fsync { phase, .. } = &mut self.buf.threads[t as usize].op {
            *phase = FsyncPhase::Flush;
        }
        let now = self.now;
        let core = self.threads[t as usize].core;
        let io = self.alloc_cache_io(t, Dir::Write, 0, 0, CacheIo::Flush);
        self.submit_preflush(now, io, core);
        self.buf.stats.flushes += 1;
        let cost = self.cfg.host.costs.block_submit_ns;
        self.threads[t as usize].stats.sys_ns += cost;
        self.cpu.run(core, now, cost);
        self.kick(core);
        self.buf_sleep(t);
    }

    /// Hook of the journal: transaction `seq` is committed; fsyncs waiting for it or an
    /// earlier one wake.
    pub(in crate::sim) fn buf_commit_done(&mut self, seq: u64) {
        for w in 0..self.buf.threads.len() {
            if let Op::Fsync {
                phase: FsyncPhase::Commit { .. },
                seq_hi,
                ..
            } = self.buf.threads[w].op
            {
                if seq_hi <= seq {
                    self.buf_wake(w as u32);
                }
            }
        }
    }

    /// Hook of `req_end`: a cache `Io` ended (all its parts). Out of line: a direct
    /// I/O's completion, which shares the caller, does not pay for its code.
    #[inline(never)]
    pub(in crate::sim) fn buf_io_done(&mut self, io: u32) {
        let now = self.now;
        let x = &self.ios[io as usize];
        let (kind, t, lo, hi) = (
            x.cache,
            x.thread,
            x.offset / PAGE,
            (x.offset + x.len).div_ceil(PAGE),
        );
        self.free_ios.push(io);
        match kind {
            CacheIo::Fill { .. } => {
                for i in lo..hi {
                    self.cache().fill_done(i);
                }
                for w in 0..self.buf.threads.len() {
                    let bt = &self.buf.threads[w];
                    // Waiting for one of these pages, or for a page to reclaim (these
                    // are clean now).
                    let wake = match bt.waiting_page {
                        Some(p) => p >= lo && p < hi,
                        None => matches!(bt.op, Op::Read { .. } | Op::Write { .. }),
                    };
                    if wake {
                        self.buf.threads[w].waiting_page = None;
                        self.buf_wake(w as u32);
                    }
                }
            }
            CacheIo::Writeback { .. } => {
                for i in lo..hi {
                    self.cache().end_writeback(i, now);
                }
                if let Some(s) = self.buf.wb_seq_of.remove(&io) {
                    self.buf.wb_inflight.remove(&s);
                }
                let (bg, limit) = self.thresholds();
                let freerun = (bg + limit) / 2;
                let total = {
                    let c = self.cache();
                    c.dirty() + c.writeback()
                };
                let first = self.buf.wb_inflight.first().copied();
                for w in 0..self.buf.threads.len() {
                    let wake = match self.buf.threads[w].op {
                        Op::Throttled { .. } => total <= freerun,
                        Op::Fsync {
                            phase: FsyncPhase::Wait,
                            seq_hi,
                            ..
                        } => first.is_none_or(|s| s > seq_hi),
                        Op::Read { .. } | Op::Write { .. } => {
                            self.buf.threads[w].waiting_page.is_none()
                        }
                        _ => false,
                    };
                    if wake {
                        self.buf_wake(w as u32);
                    }
                }
            }
            CacheIo::Flush => {
                self.buf_wake(t);
                // flush_end_io runs the queue: a flush that waited for this one goes.
                if self.block.has_queued() {
                    self.kick(self.cfg.host.irq_core);
                }
            }
            CacheIo::Journal | CacheIo::JournalFua => self.jbd_io_done(),
            CacheIo::None => unreachable!("a fio I/O is not a cache I/O"),
            CacheIo::External => unreachable!("an external I/O ends in external_io_done"),
        }
    }

    fn block_tags_waiting(&self) -> usize {
        self.block.tag_waiters()
    }

    /// Hook of `req_end`: a request ended; a flusher asleep for a tag goes on once no
    /// bio waits for one.
    #[inline]
    pub(in crate::sim) fn buf_tags_freed(&mut self) {
        if self.buf.flusher_blocked && self.block_tags_waiting() == 0 {
            self.flusher_continue();
        }
    }

    /// Wakes the flusher kworker if it is idle.
    fn flusher_wake(&mut self) {
        if self.buf.flusher_busy {
            return;
        }
        self.buf.flusher_busy = true;
        self.buf.flusher_blocked = false;
        let core = self.cfg.host.irq_core;
        let at = self.wake(core, self.now);
        self.q.push(at, Ev::Buf(BufEv::Flusher));
    }

    fn flusher_continue(&mut self) {
        if self.buf.flusher_blocked {
            self.buf.flusher_blocked = false;
            let core = self.cfg.host.irq_core;
            let at = self.wake(core, self.now);
            self.q.push(at, Ev::Buf(BufEv::Flusher));
        }
    }

    /// wb_writeback: one chunk of dirty pages in offset order from writeback_index.
    fn flusher_run(&mut self) {
        let now = self.now;
        let (bg, _) = self.thresholds();
        let expire = self.mem().dirty_expire_ns;
        let (dirty, since) = {
            let c = self.cache();
            (c.dirty(), c.dirtied_when())
        };
        let background = dirty > bg;
        let kupdate = since.is_some_and(|s| now >= s + expire);
        if dirty == 0 || !(background || kupdate) {
            self.buf.flusher_busy = false;
            return;
        }
        if self.block_tags_waiting() > 0 {
            // Asleep in blk_mq_get_tag until a request completes.
            self.buf.flusher_blocked = true;
            return;
        }
        let mut budget = MAX_WRITEBACK_PAGES;
        let mut pages = 0;
        let mut bios = 0;
        let mut from = self.buf.wb_index;
        while budget > 0 {
            let a = match self.cache().next_dirty(from) {
                Some(a) => a,
                None => match self.cache().next_dirty(0) {
                    Some(a) => a, // cyclic: wrap to the start of the file
                    None => break,
                },
            };
            let mut b = a;
            while b - a < budget && self.cache().state(b) == Some(PageState::Dirty) {
                b += 1;
            }
            let owner = self.cache().owner(a).unwrap_or(0);
            for i in a..b {
                self.cache().start_writeback(i);
            }
            let core = self.cfg.host.irq_core;
            let kind = CacheIo::Writeback { sync: false };
            bios += self.cache_bios(owner, a, b, Dir::Write, kind, core);
            pages += b - a;
            budget -= b - a;
            from = b;
            if background && self.cache().dirty() <= bg {
                break;
            }
        }
        self.buf.wb_index = from;
        let core = self.cfg.host.irq_core;
        let cost =
            self.mem().writeback_page_op_ns * pages + self.cfg.host.costs.block_submit_ns * bios;
        let end = self.cpu.run(core, now, cost);
        self.submit_batch(end, core);
        self.q.push(end, Ev::Buf(BufEv::Flusher));
    }

    /// The periodic writeback timer (wb_workfn every dirty_writeback_interval).
    fn periodic(&mut self) {
        let now = self.now;
        let expire = self.mem().dirty_expire_ns;
        if self
            .cache()
            .dirtied_when()
            .is_some_and(|s| now >= s + expire)
        {
            self.flusher_wake();
        }
        if self.unfinished > 0 {
            let at = now + self.mem().dirty_writeback_interval_ns;
            self.q.push(at, Ev::Buf(BufEv::Periodic));
        } else {
            self.buf.periodic_armed = false;
        }
    }

    /// The page cache's statistics as they stand now (at the end: dirty pages left).
    pub(in crate::sim) fn buf_stats(&self) -> CacheStats {
        let mut s = self.buf.stats.clone();
        if let Some(c) = &self.buf.cache {
            s.dirty_left_bytes = c.dirty() * PAGE;
            s.evictions = c.evictions;
            s.scanned = c.scanned;
        }
        s.device_write_slots = self.dev.stats().host_write_slots;
        s
    }
}
