//! Requests that enter at the block layer from outside the simulation: a request source
//! whose caller (the coming NBD server of `flashpath serve`, a test's script) hands the
//! simulation block requests at given times and takes their completions, advancing
//! simulated time itself with `Sim::run_until`.
//!
//! ```text
//!  caller ──submit_external(at, request)──▶ Ev::External at `at` ──▶ bios ──▶ block layer
//!     ▲                                                                        │
//!     └──────── take_external_done ◀── the block request ends (req_end) ◀──────┘
//! ```
//!
//! What is simulated: from the bios on. A request is cut into the bios the kernel builds
//! for a direct I/O (`kernel_bio_sectors`, split again at the queue's max_sectors, as
//! a fio job's direct I/O is) and submitted from the caller's `core` at `at`; they go
//! through the block layer, the host driver, the bus and the device as any other bios.
//! Its completion is when its last block request ends (blk_mq_end_request), before any
//! task would wake for it. What is left out: everything above the block layer (the
//! system call, page cache, filesystem) is the caller's own, so no CPU time is booked for
//! it.
//!
//! A request reads, writes (with REQ_FUA or not), discards or flushes:
//! - a FUA write on a queue with native FUA carries REQ_FUA (a reliable write on eMMC,
//!   the FUA bit on UFS); on a queue with a write cache but no native FUA, blk-flush
//!   sends the write and then a flush request (REQ_POSTFLUSH), and the request is done
//!   when that ends; on a queue without a write cache the flag is dropped
//!   (blk_insert_flush), as the kernel does for an O_SYNC direct write;
//! - a discard is REQ_OP_DISCARD bios, split at the queue's max_discard_sectors; on a
//!   queue that takes no discards it ends at once, unsimulated (a discard is a hint);
//! - a flush is an empty REQ_PREFLUSH request (blkdev_issue_flush); on a queue without
//!   a write cache it ends at once, as generic_make_request_checks drops it.
//!
//! A simulation built for a request source (`Sim::for_external`) runs no fio jobs.
//! Units: ns, bytes.

use super::{buffered::CacheIo, kernel_bio_sectors, Ev, Io, Sim};
use crate::engine::SimTime;
use crate::workload::Dir;

/// What a request from outside does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalOp {
    Read,
    /// `fua`: REQ_FUA (done only once the data is on the medium).
    Write {
        fua: bool,
    },
    /// REQ_OP_DISCARD.
    Discard,
    /// An empty flush request (offset and length 0): the device's write cache to the
    /// medium.
    Flush,
}

/// A request from outside: `len` bytes at byte `offset` of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalRequest {
    /// The caller's name for it, given back with its completion.
    pub id: u64,
    pub op: ExternalOp,
    /// Bytes from the start of the device; a multiple of 512 (0 for a flush).
    pub offset: u64,
    /// Bytes, a multiple of 512, at least 512 (0 for a flush).
    pub len: u64,
    /// The host core its bios are submitted from (blk-mq's software queue, and the CPU
    /// its completion is sent to).
    pub core: u32,
}

/// A request from outside that has completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalDone {
    pub id: u64,
    /// When it entered the block layer (its `submit_external` time).
    pub arrived: SimTime,
    /// When its last block request ended.
    pub done: SimTime,
}

/// The request source's state: the callers' ids of the I/Os in flight (by I/O slot),
/// which of them still have their post-flush to send, and the completions not yet
/// taken.
#[derive(Default)]
pub(super) struct External {
    ids: Vec<u64>,
    /// The submitting core of a FUA write whose post-flush is still to send.
    postflush: Vec<Option<u32>>,
    in_flight: usize,
    done: Vec<ExternalDone>,
}

/// The job thread of an external I/O: none.
pub(super) const NO_THREAD: u32 = u32::MAX;

impl Sim {
    /// A simulation of `cfg`'s host, driver and device with no fio jobs (`cfg.jobs`
    /// empty), fed by `submit_external`. `sequential` preconditioning maps the whole
    /// device; random preconditioning runs jobs and is refused.
    pub fn for_external(cfg: super::SimConfig) -> Result<Sim, String> {
        if !cfg.jobs.is_empty() {
            return Err("a simulation fed by a request source runs no fio jobs".into());
        }
        if cfg.precondition.layout(cfg.driver) == super::Precondition::Random {
            return Err(
                "random preconditioning runs jobs before the requests: with a request source, \
                 precondition is sequential or off"
                    .into(),
            );
        }
        let sequential = cfg.precondition.layout(cfg.driver) == super::Precondition::Sequential;
        let mut sim = Sim::build(cfg)?;
        if sequential {
            // With no jobs to name a region, the whole device is mapped in address order
            // (as `build` maps the jobs' regions).
            let sectors = sim.cfg.device.capacity_bytes / 512;
            sim.dev.precondition(0, sectors);
        }
        sim.ext = Some(Box::default());
        Ok(sim)
    }

    /// Hands the simulation `req`, which enters the block layer at `at` (not earlier
    /// than the simulated time reached). Checked here; nothing happens until
    /// `run_until` reaches `at`.
    pub fn submit_external(&mut self, at: SimTime, req: ExternalRequest) -> Result<(), String> {
        if self.ext.is_none() {
            return Err(
                "this simulation was not built for a request source (Sim::for_external)".into(),
            );
        }
        if at < self.now {
            return Err(format!(
                "request {}: it arrives at {at} ns, before the simulated time reached ({} ns)",
                req.id, self.now
            ));
        }
        if req.op == ExternalOp::Flush {
            if req.offset != 0 || req.len != 0 {
                return Err(format!(
                    "request {}: a flush has offset and length 0 (got {} and {})",
                    req.id, req.offset, req.len
                ));
            }
        } else if req.len == 0 || !req.len.is_multiple_of(512) || !req.offset.is_multiple_of(512) {
            return Err(format!(
                "request {}: offset {} and length {} must be multiples of 512 bytes (a length of at least 512)",
                req.id, req.offset, req.len
            ));
        }
        let cap = self.cfg.device.capacity_bytes;
        if req.offset.checked_add(req.len).is_none_or(|e| e > cap) {
            return Err(format!(
                "request {}: {} bytes at {} end past the device's {cap} bytes",
                req.id, req.len, req.offset
            ));
        }
        if req.core >= self.cfg.host.cores {
            return Err(format!(
                "request {}: core {} is not one of the host's cores (0..{})",
                req.id,
                req.core,
                self.cfg.host.cores - 1
            ));
        }
        self.ext.as_mut().expect("checked").in_flight += 1;
        self.q.push(at, Ev::External(Box::new(req)));
        Ok(())
    }

    /// The requests from outside completed since the last call, in completion order.
    pub fn take_external_done(&mut self) -> Vec<ExternalDone> {
        self.ext
            .as_mut()
            .map_or_else(Vec::new, |e| std::mem::take(&mut e.done))
    }

    /// Requests from outside submitted and not yet completed.
    pub fn external_in_flight(&self) -> usize {
        self.ext.as_ref().map_or(0, |e| e.in_flight)
    }

    /// `req` enters the block layer now: its bios, as a direct I/O's, from its core.
    /// (Cold: kept out of the event loop's `handle`, which the fio runs' hot path is.)
    #[cold]
    pub(super) fn external_arrive(&mut self, req: ExternalRequest) {
        let now = self.now;
        let qc = super::buffered::queue_cache(&self.cfg);
        let unsimulated = match req.op {
            ExternalOp::Flush => !qc.write_cache,
            ExternalOp::Discard => self.block.max_discard_sectors() == 0,
            _ => false,
        };
        if unsimulated {
            let ext = self.ext.as_mut().expect("a request source's simulation");
            ext.in_flight -= 1;
            ext.done.push(ExternalDone {
                id: req.id,
                arrived: now,
                done: now,
            });
            return;
        }
        let fua = req.op == (ExternalOp::Write { fua: true }) && qc.write_cache;
        let io = self.alloc_io(Io {
            thread: NO_THREAD,
            dir: if req.op == ExternalOp::Read {
                Dir::Read
            } else {
                Dir::Write
            },
            offset: req.offset,
            len: req.len,
            parts_left: 0,
            t_start: now,
            t_issued: now,
            t_done: 0,
            t_hw: SimTime::MAX,
            t_irq: 0,
            cache: CacheIo::External,
            trim: req.op == ExternalOp::Discard,
            // Native FUA: the bios carry it (the driver sends a reliable write or the
            // FUA bit; req_fua looks at the bios once any I/O may carry it).
            fua: fua && qc.fua,
            sync_after: false,
        });
        if fua && qc.fua {
            self.any_fua_job = true;
        }
        let ext = self.ext.as_mut().expect("a request source's simulation");
        if ext.ids.len() <= io as usize {
            ext.ids.resize(io as usize + 1, 0);
            ext.postflush.resize(io as usize + 1, None);
        }
        ext.ids[io as usize] = req.id;
        // A write cache without native FUA: the write, then a flush (REQ_POSTFLUSH).
        ext.postflush[io as usize] = (fua && !qc.fua).then_some(req.core);
        if req.op == ExternalOp::Flush {
            self.ios[io as usize].parts_left = 1;
            self.submit_preflush(now, io, req.core);
            self.kick(req.core);
            return;
        }
        let max_sectors = self.block.max_sectors() as u64;
        let kernel_bio = kernel_bio_sectors(max_sectors, self.cfg.host.kernel.splits_bios());
        let made = self.block.requests_made;
        // Counted once its bios are in: their requests end in later events.
        let max_discard = self.block.max_discard_sectors() as u64;
        self.ios[io as usize].parts_left =
            self.submit_io_bios(io, req.core, kernel_bio, max_sectors, max_discard);
        if self.block.requests_made != made {
            self.kick(req.core);
        }
    }

    /// The last block request of external I/O `io` ended now.
    #[cold]
    pub(super) fn external_io_done(&mut self, io: u32) {
        let ext = self.ext.as_mut().expect("a request source's simulation");
        if let Some(core) = ext.postflush[io as usize].take() {
            // The write is on the device; its post-flush goes now (from the submitting
            // core: where blk-flush's state machine queues it is not modelled).
            let now = self.now;
            let x = &mut self.ios[io as usize];
            x.parts_left = 1;
            x.offset = 0;
            x.len = 0;
            self.submit_preflush(now, io, core);
            self.kick(core);
            return;
        }
        let x = &self.ios[io as usize];
        let arrived = x.t_start;
        let ext = self.ext.as_mut().expect("a request source's simulation");
        ext.in_flight -= 1;
        ext.done.push(ExternalDone {
            id: ext.ids[io as usize],
            arrived,
            done: self.now,
        });
        self.free_ios.push(io);
    }
}
