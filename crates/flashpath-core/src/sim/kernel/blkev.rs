//! Block-layer events for traces (blktrace's Q, M/F, G, I, D, C, P/U), recorded only
//! when the trace is on. The block layer reports what it did with each bio
//! (`BlockLayer::log`); the events get their time, CPU and task here.
//!
//! Plugging follows Linux 5.4: `io_submit` plugs when it submits more than two iocbs
//! (AIO_PLUG_THRESHOLD), `__blkdev_direct_IO` (any async direct I/O, and sync direct I/O
//! of more than BIO_MAX_PAGES = 256 pages) plugs around its bios, `__blkdev_direct_IO_simple`
//! (sync, up to 1 MiB) does not. Under a plug, `blk_mq_make_request` emits P when the first
//! request joins the plug, and flushes the plug (U, then the I of each request) before
//! adding a request when it already holds BLK_MAX_REQUEST_COUNT (16) requests or its last
//! one is at least BLK_PLUG_FLUSH_SIZE (128 KiB); `blk_finish_plug` flushes it at the end.
//! The simulator inserts the requests at once either way (one plug, one queue run): only
//! the recorded events differ.
//!
//! On older kernels (`Kernel`): before 4.10 every direct I/O plugs (do_blockdev_direct_IO);
//! on the single-queue block layer (MMC before 4.16, SCSI before 4.19) `blk_queue_bio`
//! flushes the plug only at 16 requests, and `blk_flush_plug_list` inserts the requests
//! (I each) before it traces U (queue_unplugged); the MMC driver's mmcqd thread fetches
//! them (D).
//!
//! I events carry the sector range of the bio that started the request (later bios
//! appear as M/F): btt accounts a request's bytes as its I plus its merges, so this is
//! what it needs to pair every Q with its D and C.

use crate::device::config::Interface;
use crate::engine::SimTime;
use crate::host::block::{Bio, BioFate, ReqId};
use crate::sim::{Sim, Submission};
use crate::trace::{pid, BlkAction, BlkOp, TraceKind};
use crate::workload::Dir;

/// BIO_MAX_PAGES × 4 KiB: larger sync direct I/O goes through `__blkdev_direct_IO`.
const SIMPLE_DIO_MAX_BYTES: u64 = 256 * 4096;
const AIO_PLUG_THRESHOLD: usize = 2;
const BLK_MAX_REQUEST_COUNT: u32 = 16;
const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

/// The plug of the submitting thread while its system call runs (trace only).
#[derive(Default)]
pub(in crate::sim) struct PlugTrace {
    active: bool,
    /// The plug covers the whole system call (io_submit), not each I/O.
    whole_call: bool,
    /// Requests added to the plug, with the bio that started each (for their I).
    reqs: Vec<(ReqId, Bio)>,
    /// The flush request being submitted comes from blkdev_issue_flush's bio.
    preflush: bool,
    /// Flush requests whose empty REQ_PREFLUSH bio was traced (Q, G): their own C
    /// follows the flush request's.
    preflush_reqs: Vec<ReqId>,
}

impl Sim {
    /// The task that submits a bio of `io`, or None for preconditioning I/O: the job
    /// thread, except for the flusher's background writeback and the journal's writes,
    /// which their kernel threads submit (the job is the one they are done for).
    fn bio_task(&self, io: u32) -> Option<u32> {
        use crate::sim::buffered::CacheIo;
        let x = &self.ios[io as usize];
        let t = x.thread;
        (t as usize >= self.prefill).then_some(match x.cache {
            CacheIo::Writeback { sync: false } => pid::FLUSHER,
            CacheIo::Journal | CacheIo::JournalFua => pid::JBD2,
            CacheIo::External => pid::EXTERNAL,
            _ => pid::THREAD + t,
        })
    }

    /// The operation and flags of I/O `io`'s bios, as blktrace shows them.
    fn io_op(&self, io: u32) -> BlkOp {
        use crate::sim::buffered::CacheIo;
        let x = &self.ios[io as usize];
        match x.cache {
            _ if x.trim => BlkOp::Discard,
            _ if x.fua => BlkOp::Fua,
            CacheIo::JournalFua => BlkOp::Fua,
            CacheIo::Fill { ahead: true } => BlkOp::ReadAhead,
            CacheIo::Writeback { sync: false } => BlkOp::Background,
            _ => BlkOp::Data,
        }
    }

    fn blk_ev(&mut self, at: SimTime, req: Option<ReqId>, action: BlkAction, bio: &Bio, pid: u32) {
        let op = if bio.discard {
            BlkOp::Discard
        } else {
            self.io_op(bio.io)
        };
        self.blk_ev_op(at, req, action, bio, op, pid);
    }

    fn blk_ev_op(
        &mut self,
        at: SimTime,
        req: Option<ReqId>,
        action: BlkAction,
        bio: &Bio,
        op: BlkOp,
        pid: u32,
    ) {
        self.tr(
            at,
            req,
            TraceKind::Block {
                action,
                sector: bio.sector,
                sectors: bio.sectors,
                dir: bio.dir,
                op,
                cpu: bio.cpu,
                pid,
            },
        );
    }

    /// A plug or unplug on the submitting thread's CPU (no sector range).
    fn blk_plug_ev(&mut self, at: SimTime, action: BlkAction, cpu: u32, pid: u32) {
        self.tr(
            at,
            None,
            TraceKind::Block {
                action,
                sector: 0,
                sectors: 0,
                dir: Dir::Read,
                op: BlkOp::Data,
                cpu,
                pid,
            },
        );
    }

    /// Whether the I/Os of this system call are submitted under one plug (`io_submit`
    /// with more than AIO_PLUG_THRESHOLD iocbs), and whether each I/O has its own plug.
    fn blk_plug_mode(&self, t: u32, n: usize, len: u64) -> (bool, bool) {
        let th = &self.threads[t as usize];
        match self.cfg.jobs[th.cfg].submission {
            Submission::Async { .. } => (n > AIO_PLUG_THRESHOLD, n <= AIO_PLUG_THRESHOLD),
            Submission::Sync => (
                false,
                !self.cfg.host.kernel.simple_dio() || len > SIMPLE_DIO_MAX_BYTES,
            ),
        }
    }

    /// Whether the disk's queue is the single-queue block layer (no blk-mq).
    fn blk_legacy(&self) -> bool {
        !self.cfg.host.kernel.blk_mq(self.cfg.driver)
    }

    /// Thread `t`'s system call starts submitting its `n` I/Os.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_syscall_start(&mut self, t: u32, n: usize) {
        let whole = self.blk_plug_mode(t, n, 0).0;
        self.blk_plug.whole_call = whole;
        self.blk_plug.active = whole;
    }

    /// One I/O of `len` bytes of the `n` of the call is submitted.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_io_start(&mut self, t: u32, n: usize, len: u64) {
        if !self.blk_plug.whole_call && self.blk_plug_mode(t, n, len).1 {
            self.blk_plug.active = true;
        }
    }

    /// The I/O's bios are all submitted: its own plug (if any) is finished.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_io_end(&mut self, at: SimTime, t: u32) {
        if !self.blk_plug.whole_call && self.blk_plug.active {
            self.blk_plug_finish(at, t);
        }
    }

    /// The system call ends: the io_submit plug (if any) is finished.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_syscall_end(&mut self, at: SimTime, t: u32) {
        if self.blk_plug.whole_call {
            self.blk_plug_finish(at, t);
        }
        self.blk_plug.whole_call = false;
    }

    /// Q for a bio about to enter the block layer.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_queue(&mut self, at: SimTime, bio: &Bio) {
        if let Some(p) = self.bio_task(bio.io) {
            self.blk_ev(at, None, BlkAction::Queue, bio, p);
        }
    }

    /// X: blk_queue_split cut `front` off a bio whose rest starts at `rest_sector`.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_split(&mut self, at: SimTime, front: &Bio, rest_sector: u64) {
        if let Some(p) = self.bio_task(front.io) {
            let new_sector = rest_sector;
            self.blk_ev(at, None, BlkAction::Split { new_sector }, front, p);
        }
    }

    /// Turns what the block layer did with the bios since the last call into M/F, G, I
    /// (and P/U under `plug`).
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_fates(&mut self, at: SimTime, plugged: bool) {
        let Some(mut log) = self.block.log.take() else {
            return;
        };
        let mut pl = std::mem::take(&mut self.blk_plug);
        for fate in log.drain(..) {
            match fate {
                BioFate::Merged { bio, back, req } => {
                    if let Some(p) = self.bio_task(bio.io) {
                        let a = if back {
                            BlkAction::BackMerge
                        } else {
                            BlkAction::FrontMerge
                        };
                        self.blk_ev(at, Some(req), a, &bio, p);
                    }
                }
                BioFate::NewRequest { bio, req } => {
                    let Some(p) = self.bio_task(bio.io) else {
                        continue;
                    };
                    if bio.sectors == 0 {
                        // Only a flush request is made from an empty bio (submit_flush;
                        // `submit` takes none), and its fate may be read after the
                        // request is gone. blk-flush's flush request is never G'd or
                        // inserted; the empty bio of blkdev_issue_flush is queued and
                        // gets a request (blk_mq_make_request: Q, G; blk_insert_flush:
                        // no I).
                        if pl.preflush {
                            self.blk_ev_op(at, None, BlkAction::Queue, &bio, BlkOp::Preflush, p);
                            self.blk_ev_op(
                                at,
                                Some(req),
                                BlkAction::GetRq,
                                &bio,
                                BlkOp::Preflush,
                                p,
                            );
                            pl.preflush_reqs.push(req);
                        }
                        continue;
                    }
                    self.blk_ev(at, Some(req), BlkAction::GetRq, &bio, p);
                    match plugged {
                        true if pl.active => {
                            let legacy = self.blk_legacy();
                            let flush = match pl.reqs.last() {
                                None => false,
                                Some(&(last, _)) => {
                                    pl.reqs.len() as u32 >= BLK_MAX_REQUEST_COUNT
                                        || (!legacy
                                            && self.block.req(last).sectors as u64 * 512
                                                >= BLK_PLUG_FLUSH_SIZE)
                                }
                            };
                            if flush {
                                self.blk_unplug_inner(at, &mut pl, bio.cpu, p);
                            }
                            if pl.reqs.is_empty() {
                                self.blk_plug_ev(at, BlkAction::Plug, bio.cpu, p);
                            }
                            pl.reqs.push((req, bio));
                        }
                        _ => self.blk_ev(at, Some(req), BlkAction::Insert, &bio, p),
                    }
                }
            }
        }
        self.block.log = Some(log);
        self.blk_plug = pl;
    }

    fn blk_unplug_inner(&mut self, at: SimTime, pl: &mut PlugTrace, cpu: u32, p: u32) {
        if pl.reqs.is_empty() {
            return;
        }
        let depth = pl.reqs.len() as u32;
        let legacy = self.blk_legacy();
        if !legacy {
            self.blk_plug_ev(at, BlkAction::Unplug { depth }, cpu, p);
        }
        for (req, bio) in pl.reqs.drain(..) {
            self.blk_ev(at, Some(req), BlkAction::Insert, &bio, p);
        }
        if legacy {
            self.blk_plug_ev(at, BlkAction::Unplug { depth }, cpu, p);
        }
    }

    /// `blk_finish_plug` on thread `t`: U and the I of each plugged request.
    fn blk_plug_finish(&mut self, at: SimTime, t: u32) {
        let mut pl = std::mem::take(&mut self.blk_plug);
        pl.active = false;
        if (t as usize) < self.prefill {
            pl.reqs.clear();
        } else {
            let cpu = self.threads[t as usize].core;
            self.blk_unplug_inner(at, &mut pl, cpu, pid::THREAD + t);
        }
        self.blk_plug = pl;
    }

    /// blkdev_issue_flush (an fsync's cache flush) for fio I/O `io` from `core`: its
    /// empty REQ_PREFLUSH bio becomes blk-flush's flush request. Traced as the kernel
    /// traces it: Q and G of the bio (WRITE|SYNC|PREFLUSH, blkparse's `FWS`), D and C of
    /// the flush request (`FN`), then the C of the bio's own request, which
    /// blk_flush_complete_seq ends (blk_mq_end_request) once the flush is done.
    pub(in crate::sim) fn submit_preflush(&mut self, now: SimTime, io: u32, core: u32) {
        self.block.submit_flush(now, io, core);
        if self.trace.is_some() {
            self.blk_plug.preflush = true;
            self.blk_fates(now, false);
            self.blk_plug.preflush = false;
        }
    }

    /// D or R (by kblockd's worker on `core`, the dispatching task's core) or C (on the
    /// request's CPU, in interrupt context) for request `r`.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_rq(&mut self, at: SimTime, r: ReqId, action: BlkAction, core: u32) {
        self.blk_rq_by(at, r, action, core, false);
    }

    /// D of request `r` issued directly by its submitter on `core` (blk-mq without an
    /// elevator: `blk_mq_try_issue_directly` runs queue_rq in the submitting task).
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn blk_rq_direct(&mut self, at: SimTime, r: ReqId, core: u32) {
        self.blk_rq_by(at, r, BlkAction::Issue, core, true);
    }

    fn blk_rq_by(&mut self, at: SimTime, r: ReqId, action: BlkAction, core: u32, direct: bool) {
        let q = self.block.req(r);
        let Some(&io) = q.bios.first() else {
            return;
        };
        let Some(submitter) = self.bio_task(io) else {
            return;
        };
        // D and R happen in the dispatching task (kblockd's kworker, mmcqd on the
        // single-queue MMC driver, or the submitter issuing directly), C in interrupt
        // context on the request's CPU.
        let mmcqd = self.cfg.driver.interface() != Interface::Ufs && self.blk_legacy();
        let (cpu, p) = match action {
            BlkAction::Issue | BlkAction::Requeue if direct => (core, submitter),
            BlkAction::Issue | BlkAction::Requeue if mmcqd => (core, pid::MMCQD),
            BlkAction::Issue | BlkAction::Requeue => (core, pid::KWORKER + core),
            _ => (q.cpu, pid::IRQ),
        };
        let bio = Bio {
            io,
            dir: q.dir(),
            sector: q.sector,
            sectors: q.sectors,
            cpu,
            queued_at: q.bio_queued_at,
            discard: q.discard,
            nomerge: false,
        };
        // A flush request is blk-flush's flush_rq (REQ_OP_FLUSH), not a write; the
        // others carry their first bio's flags.
        let op = match (q.flush, q.discard) {
            (true, _) => BlkOp::Flush,
            (false, true) => BlkOp::Discard,
            (false, false) if self.req_fua(r) => BlkOp::Fua,
            (false, false) => self.io_op(io),
        };
        self.blk_ev_op(at, Some(r), action, &bio, op, p);
        if action == BlkAction::Complete {
            if let Some(i) = self.blk_plug.preflush_reqs.iter().position(|&x| x == r) {
                self.blk_plug.preflush_reqs.swap_remove(i);
                self.blk_ev_op(at, Some(r), action, &bio, BlkOp::Preflush, p);
            }
        }
    }
}
