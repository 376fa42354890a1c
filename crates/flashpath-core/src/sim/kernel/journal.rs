//! The ext4 journal (jbd2) of a host with `[fs] kind = "ext4"` (host/fs_config.rs):
//! which writes put the file's inode in the running transaction, and the commit that
//! fsync, fdatasync and O_SYNC writes wait for (Linux 3.19: fs/ext4/fsync.c
//! ext4_sync_file, fs/jbd2/commit.c jbd2_journal_commit_transaction, fs/jbd2/journal.c
//! kjournald2 / jbd2_log_start_commit / jbd2_log_wait_commit).
//!
//! **The file** (one per job thread, its region of the device): fio lays out a file for
//! a write-only job with fallocate and no data (filesetup.c extend_file: the file is
//! written only for jobs that read or with overwrite=1), so its blocks start as
//! unwritten extents; blocks of a job that reads start written.
//! **Metadata**: every write system call updates mtime/ctime (file_update_time ->
//! ext4_dirty_inode): the inode joins the running transaction (`blocks_update` blocks)
//! and its i_sync_tid becomes the running tid. Writeback of unwritten blocks converts
//! them (ext4_writepages -> ext4_map_blocks -> ext4_ext_convert_to_initialized, in the
//! writer's context: data=ordered without dioread_nolock, the 3.19 default; its CPU
//! cost is part of `memory.writeback_page_op`): the inode counts `blocks_convert` and
//! i_datasync_tid is set too. Simplification: the coarse timestamp granularity (a new
//! mtime only once per clock tick) is not modelled: every write dirties the inode.
//!
//! **fsync** (ext4_sync_file, data=ordered, after filemap_write_and_wait_range): the tid
//! to wait for is i_datasync_tid for fdatasync / O_DSYNC, i_sync_tid otherwise. If it is
//! already committed, a cache flush follows when the queue has a write cache
//! (blkdev_issue_flush, as on the block device; `buffered::queue_cache`). Otherwise the
//! caller asks for its commit (jbd2_log_start_commit wakes kjournald2) and sleeps until
//! it is done (jbd2_log_wait_commit); if the commit will not carry the barrier (its
//! commit block was already sent) a flush follows as well.
//!
//! **A commit** (kjournald2, a kernel thread on the IRQ core, woken like other kernel
//! work): `commit_start` + `commit_per_block` per log block on its core, then the
//! descriptor block and the transaction's metadata blocks go to the journal as one write
//! (jbd2 submits them buffer by buffer inside a plug: contiguous, they merge into one
//! request); it sleeps until it ends, wakes, builds the commit block (`commit_per_block`)
//! and sends it REQ_FLUSH|REQ_FUA (barrier=1): on a queue without a write cache the
//! block layer drops both flags (a plain write); with one, a flush request goes first,
//! then the commit block as a FUA write where the queue has native FUA (eMMC: a
//! reliable write, CMD23 bit 31, done by the device only once programmed; UFS: WRITE(10)
//! with FUA), else as a plain write and another flush after it (blk-flush's emulation).
//! On eMMC the queue has both flags even when the card's cache is off (MMC_BLK_REL_WR),
//! so a write-through card still gets the flush request, which the driver ends without
//! a command. It sleeps until that ends, wakes, runs
//! `commit_end` and wakes the waiters; a commit asked for meanwhile starts at once. The
//! running transaction's commit timer (`commit_interval`, commit=5) asks for a commit
//! too. The journal requests are real device writes but are no fio I/O: they count at
//! the device, not in any job's spans.
//!
//! Leaves out: checkpointing (the journaled blocks written in place when the log fills;
//! the log wraps to its start instead), the journal superblock update after mount, new
//! block allocation (fio's files are preallocated), ordered-data writeout by the commit
//! (fsync and O_SYNC write the range first), atime (relatime), direct I/O with the sync
//! family (an error), the revoke records. Units: ns, bytes.

use crate::host::FS_BLOCK;
use crate::sim::buffered::CacheIo;
use crate::sim::{Ev, Sim};
use crate::workload::Dir;

/// Tags one descriptor block holds: 4096 B less the 12 B header and the 16 B UUID,
/// 12 B per tag with the 64bit feature (fs/jbd2/journal.c journal_tag_bytes; 8 B without
/// it). The smaller count is taken.
const TAGS_PER_DESCRIPTOR: u64 = (4096 - 12 - 16) / 12;

#[derive(Debug)]
pub(in crate::sim) enum JbdEv {
    /// kjournald2 runs (woken, or going on after a commit).
    Run,
    /// Its CPU work before a submission ended: the log blocks or the commit block go.
    Submit,
    /// Woken after a journal request ended.
    Woken,
    /// `commit_end` ran: the transaction is committed.
    Done,
    /// The commit timer of transaction `tid` expired.
    Timer(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// commit_start and the log blocks' work booked.
    Start,
    /// The descriptor + metadata write in flight.
    Log,
    /// The commit block's work booked.
    CommitPrep,
    /// The commit block's preflush, write, postflush in flight.
    PreFlush,
    Commit,
    PostFlush,
    /// commit_end booked.
    End,
}

#[derive(Clone, Copy, Debug, Default)]
struct Inode {
    sync_tid: u64,
    datasync_tid: u64,
    /// Transaction the inode's `blocks` count in.
    in_tid: u64,
    blocks: u64,
}

pub(in crate::sim) struct Journal {
    on: bool,
    running: u64,
    running_blocks: u64,
    commit_sequence: u64,
    commit_request: u64,
    committing: u64,
    commit_blocks: u64,
    phase: Phase,
    /// kjournald2 is awake (running or about to).
    busy: bool,
    /// Next free block of the log.
    head: u64,
    /// Journal requests in flight of the current step.
    pending: u32,
    /// The job thread the journal requests are attributed to (the one that asked).
    requester: u32,
    inodes: Vec<Inode>,
    /// One bit per 4 KiB block of the jobs' regions: still unwritten (fallocated).
    unwritten: Vec<u64>,
}

impl Journal {
    pub(in crate::sim) fn new(cfg: &crate::sim::SimConfig) -> Self {
        let on = cfg.host.fs.is_some();
        let mut unwritten = Vec::new();
        if on {
            let end = cfg
                .jobs
                .iter()
                .flat_map(|j| j.regions())
                .map(|(o, n)| o + n)
                .max()
                .unwrap_or(0);
            let blocks = end.div_ceil(FS_BLOCK);
            unwritten = vec![0u64; blocks.div_ceil(64) as usize];
            for written in [false, true] {
                for j in cfg.jobs.iter().filter(|j| (j.read_pct > 0) == written) {
                    for b in j
                        .regions()
                        .into_iter()
                        .flat_map(|(o, n)| o / FS_BLOCK..(o + n).div_ceil(FS_BLOCK))
                    {
                        let (w, bit) = ((b / 64) as usize, 1u64 << (b % 64));
                        if written {
                            unwritten[w] &= !bit;
                        } else {
                            unwritten[w] |= bit;
                        }
                    }
                }
            }
        }
        Journal {
            on,
            running: 1,
            running_blocks: 0,
            commit_sequence: 0,
            commit_request: 0,
            committing: 0,
            commit_blocks: 0,
            phase: Phase::Idle,
            busy: false,
            head: 0,
            pending: 0,
            requester: 0,
            inodes: vec![Inode::default(); cfg.jobs.len()],
            unwritten,
        }
    }
}

/// What `Sim::new` refuses on an ext4 host.
pub(in crate::sim) fn check(cfg: &crate::sim::SimConfig) -> Result<(), String> {
    let Some(fs) = &cfg.host.fs else {
        return Ok(());
    };
    let (jlo, jhi) = (
        fs.journal_offset_bytes,
        fs.journal_offset_bytes + fs.journal_bytes,
    );
    if jhi > cfg.device.capacity_bytes {
        return Err(format!(
            "host '{}': fs.journal_offset + fs.journal_size ({jhi} B) is beyond the device's capacity ({} B)",
            cfg.host.name, cfg.device.capacity_bytes
        ));
    }
    for j in &cfg.jobs {
        if let Some((o, n)) = j
            .regions()
            .into_iter()
            .find(|&(o, n)| o < jhi && jlo < o + n)
        {
            return Err(format!(
                "job '{}': its file (bytes {}..{}) overlaps the ext4 journal of host '{}' (bytes {jlo}..{jhi})",
                j.name,
                o,
                o + n,
                cfg.host.name
            ));
        }
        if j.direct
            && (j.fsync_every > 0
                || j.end_fsync
                || j.o_sync
                || j.replay.as_ref().is_some_and(|r| r.syncs))
        {
            return Err(format!(
                "job '{}': fsync/fdatasync/end_fsync/sync of direct I/O on an ext4 file (host '{}' has [fs]) is not modelled",
                j.name, cfg.host.name
            ));
        }
    }
    Ok(())
}

impl Sim {
    fn jbd_core(&self) -> u32 {
        self.cfg.host.irq_core
    }

    fn fs(&self) -> &crate::host::FsConfig {
        self.cfg.host.fs.as_ref().expect("an ext4 host")
    }

    /// Inode `t` joins the running transaction with `blocks` metadata blocks (or more,
    /// if it is already in it with fewer).
    fn jbd_join(&mut self, t: u32, blocks: u64, datasync: bool) {
        let running = self.jbd.running;
        let ino = &mut self.jbd.inodes[t as usize];
        let before = if ino.in_tid == running { ino.blocks } else { 0 };
        ino.in_tid = running;
        ino.blocks = before.max(blocks);
        ino.sync_tid = running;
        if datasync {
            ino.datasync_tid = running;
        }
        let added = ino.blocks - before;
        let was_empty = self.jbd.running_blocks == 0;
        self.jbd.running_blocks += added;
        if was_empty && added > 0 && self.unfinished > 0 {
            // The new transaction's t_expires: the commit timer (jbd2 start_this_handle).
            let at = self.now + self.fs().commit_interval_ns;
            self.q.push(at, Ev::Jbd(JbdEv::Timer(running)));
        }
    }

    /// A write system call of job thread `t` on its file: file_update_time.
    #[inline]
    pub(in crate::sim) fn jbd_note_write(&mut self, t: u32) {
        if self.jbd.on {
            let b = self.fs().blocks_update;
            self.jbd_join(t, b, false);
        }
    }

    /// Writeback maps pages a..b of thread `t`'s file: unwritten blocks are converted.
    #[inline]
    pub(in crate::sim) fn jbd_note_writeback(&mut self, t: u32, a: u64, b: u64) {
        if !self.jbd.on {
            return;
        }
        let (lo, hi) = (a * 4096 / FS_BLOCK, (b * 4096).div_ceil(FS_BLOCK));
        let mut converted = false;
        for blk in lo..hi {
            let (w, bit) = ((blk / 64) as usize, 1u64 << (blk % 64));
            if let Some(word) = self.jbd.unwritten.get_mut(w) {
                if *word & bit != 0 {
                    *word &= !bit;
                    converted = true;
                }
            }
        }
        if converted {
            let n = self.fs().blocks_convert;
            self.jbd_join(t, n, true);
        }
    }

    /// ext4_sync_file's choice for thread `t`: the tid to wait for, if not committed.
    pub(in crate::sim) fn jbd_needs_commit(&self, t: u32, datasync: bool) -> Option<u64> {
        if !self.jbd.on {
            return None;
        }
        let ino = &self.jbd.inodes[t as usize];
        let tid = if datasync {
            ino.datasync_tid
        } else {
            ino.sync_tid
        };
        (tid > self.jbd.commit_sequence).then_some(tid)
    }

    /// jbd2_trans_will_send_data_barrier: the commit of `tid` has not sent its commit
    /// block yet.
    pub(in crate::sim) fn jbd_will_send_barrier(&self, tid: u64) -> bool {
        tid == self.jbd.running
            || (tid == self.jbd.committing
                && matches!(
                    self.jbd.phase,
                    Phase::Start | Phase::Log | Phase::CommitPrep
                ))
    }

    /// jbd2_log_start_commit for `tid`, asked by thread `t`: kjournald2 is woken.
    pub(in crate::sim) fn jbd_start_commit(&mut self, tid: u64, t: u32) {
        if tid > self.jbd.commit_request {
            self.jbd.commit_request = tid;
            self.jbd.requester = t;
        }
        if !self.jbd.busy {
            self.jbd.busy = true;
            let core = self.jbd_core();
            let at = self.wake(core, self.now);
            self.q.push(at, Ev::Jbd(JbdEv::Run));
        }
    }

    pub(in crate::sim) fn jbd_handle(&mut self, e: JbdEv) {
        match e {
            JbdEv::Run => self.jbd_run(),
            JbdEv::Submit => self.jbd_submit(),
            JbdEv::Woken => self.jbd_woken(),
            JbdEv::Done => {
                self.jbd.commit_sequence = self.jbd.committing;
                self.jbd.phase = Phase::Idle;
                self.buf.stats.commits += 1;
                let seq = self.jbd.commit_sequence;
                self.buf_commit_done(seq);
                self.jbd_run();
            }
            JbdEv::Timer(tid) => {
                if tid == self.jbd.running && self.jbd.running_blocks > 0 && self.unfinished > 0 {
                    let t = self.jbd.requester;
                    self.jbd_start_commit(tid, t);
                }
            }
        }
    }

    /// kjournald2's loop: commit the running transaction if a commit was asked for.
    fn jbd_run(&mut self) {
        if self.jbd.phase != Phase::Idle {
            return;
        }
        if self.jbd.commit_request <= self.jbd.commit_sequence || self.jbd.running_blocks == 0 {
            self.jbd.busy = false;
            return;
        }
        self.jbd.busy = true;
        self.jbd.committing = self.jbd.running;
        self.jbd.commit_blocks = self.jbd.running_blocks;
        self.jbd.running += 1;
        self.jbd.running_blocks = 0;
        let n = self.jbd.commit_blocks;
        let log = n + n.div_ceil(TAGS_PER_DESCRIPTOR);
        let fs = self.fs();
        let cost = fs.commit_start_ns + fs.commit_per_block_ns * log;
        self.jbd.phase = Phase::Start;
        let core = self.jbd_core();
        let end = self.cpu.run_kernel(core, self.now, cost, "jbd2 commit");
        self.q.push(end, Ev::Jbd(JbdEv::Submit));
    }

    /// `blocks` journal blocks written at the log head (wrapping to the log's start when
    /// they do not fit before its end), as bios of `kind` from kjournald2's core.
    fn jbd_write(&mut self, blocks: u64, at: crate::engine::SimTime, kind: CacheIo) {
        let total = self.fs().journal_bytes / FS_BLOCK;
        if self.jbd.head + blocks > total {
            self.jbd.head = 0;
        }
        let off = self.fs().journal_offset_bytes + self.jbd.head * FS_BLOCK;
        self.jbd.head += blocks;
        let len = blocks * FS_BLOCK;
        self.buf.stats.journal_bytes += len;
        let max = self.block.max_sectors() as u64 * 512;
        let core = self.jbd_core();
        let t = self.jbd.requester;
        let mut pos = off;
        while pos < off + len {
            let n = (off + len - pos).min(max);
            let io = self.alloc_cache_io(t, Dir::Write, pos, n, kind);
            self.buf.batch.push(crate::host::block::Bio {
                io,
                dir: Dir::Write,
                sector: pos / 512,
                sectors: (n / 512) as u32,
                cpu: core,
                queued_at: at,
                discard: false,
                nomerge: false,
            });
            self.jbd.pending += 1;
            pos += n;
        }
        self.submit_batch(at, core);
    }

    /// An empty REQ_PREFLUSH request (the flush sequence of the commit block).
    fn jbd_flush(&mut self, now: crate::engine::SimTime) {
        let core = self.jbd_core();
        let t = self.jbd.requester;
        let io = self.alloc_cache_io(t, Dir::Write, 0, 0, CacheIo::Journal);
        self.block.submit_flush(now, io, core);
        self.buf.stats.flushes += 1;
        self.jbd.pending += 1;
        self.kick(core);
    }

    fn jbd_submit(&mut self) {
        let core = self.jbd_core();
        let cost = self.cfg.host.costs.block_submit_ns;
        // submit_bio of the buffers: the requests reach the block layer when it ends.
        let end = self.cpu.run_kernel(core, self.now, cost, "jbd2 submit");
        match self.jbd.phase {
            Phase::Start => {
                let n = self.jbd.commit_blocks;
                self.jbd.phase = Phase::Log;
                self.jbd_write(n + n.div_ceil(TAGS_PER_DESCRIPTOR), end, CacheIo::Journal);
            }
            Phase::CommitPrep => {
                if crate::sim::buffered::queue_cache(&self.cfg).write_cache {
                    self.jbd.phase = Phase::PreFlush;
                    self.jbd_flush(end);
                } else {
                    self.jbd.phase = Phase::Commit;
                    self.jbd_write(1, end, CacheIo::Journal);
                }
            }
            p => unreachable!("journal submission in phase {p:?}"),
        }
    }

    /// Hook of `buf_io_done`: a journal request ended.
    pub(in crate::sim) fn jbd_io_done(&mut self) {
        self.jbd.pending -= 1;
        if self.jbd.pending > 0 {
            return;
        }
        let qc = crate::sim::buffered::queue_cache(&self.cfg);
        match self.jbd.phase {
            // The block layer's flush sequence goes on from the completion, without
            // kjournald2: the commit block, as a FUA write where the queue has native FUA.
            Phase::PreFlush => {
                self.jbd.phase = Phase::Commit;
                let now = self.now;
                let kind = if qc.fua {
                    CacheIo::JournalFua
                } else {
                    CacheIo::Journal
                };
                self.jbd_write(1, now, kind);
            }
            // Without native FUA the flush sequence emulates it: a flush after the write.
            Phase::Commit if qc.write_cache && !qc.fua => {
                self.jbd.phase = Phase::PostFlush;
                let now = self.now;
                self.jbd_flush(now);
            }
            Phase::Log | Phase::Commit | Phase::PostFlush => {
                // wait_on_buffer returns: kjournald2 wakes.
                let core = self.jbd_core();
                let at = self.wake(core, self.now);
                self.q.push(at, Ev::Jbd(JbdEv::Woken));
            }
            p => unreachable!("journal request ended in phase {p:?}"),
        }
        if self.block.has_queued() {
            self.kick(self.cfg.host.irq_core);
        }
    }

    fn jbd_woken(&mut self) {
        let core = self.jbd_core();
        let now = self.now;
        match self.jbd.phase {
            Phase::Log => {
                self.jbd.phase = Phase::CommitPrep;
                let cost = self.fs().commit_per_block_ns;
                let end = self.cpu.run_kernel(core, now, cost, "jbd2 commit block");
                self.q.push(end, Ev::Jbd(JbdEv::Submit));
            }
            Phase::Commit | Phase::PostFlush => {
                self.jbd.phase = Phase::End;
                let cost = self.fs().commit_end_ns;
                let end = self.cpu.run_kernel(core, now, cost, "jbd2 commit end");
                self.q.push(end, Ev::Jbd(JbdEv::Done));
            }
            p => unreachable!("kjournald2 woken in phase {p:?}"),
        }
    }
}
