//! The block layer (blk-mq with one hardware queue, as MMC has): bios are split at
//! max_sectors_kb, merged into a queued request when contiguous (back or front merge,
//! then, with an elevator, request-to-request), held by the scheduler, and handed to the
//! driver one at a time when it asks. Tags bound the requests alive (nr_requests); a bio that finds none
//! waits for one, as its submitter would sleep in `blk_mq_get_tag`.
//!
//! Schedulers: `none` dispatches in arrival order; `mq-deadline` dispatches reads before
//! writes (unless writes were passed over `writes_starved` times), in sector order from
//! the last dispatch in batches of `fifo_batch`, and the oldest request first once its
//! deadline (read 500 ms, write 5 s) has expired.
//! Merging with mq-deadline follows Linux 5.4 (block/elevator.c elv_merge, blk-merge.c,
//! mq-deadline.c), on indexes as the kernel's (each O(log n)):
//! - a bio tries one request: the one-hit cache `last_merge` (the request last merged
//!   into, or the first inserted while it was empty) at its back, then its front; else
//!   the request the merge hash finds ending where the bio starts (the hash holds all
//!   mergeable requests by end sector; among equal ends the one (re)hashed last, as
//!   hlist_add_head puts it first); else the request of the bio's direction starting
//!   where the bio ends in the sort tree (dd_request_merge; among equal starts the first
//!   in tree order: the kernel's elv_rb_find returns whichever its descent meets first).
//!   A candidate of another kind (direction, discard) ends the search at that step.
//!   If the bio does not fit (max_sectors / max_discard_sectors), the request is marked
//!   REQ_NOMERGE (never merged again) and the bio gets a request of its own.
//! - after a back merge the request tries to absorb its successor in the sort tree
//!   (attempt_back_merge); after a front merge its predecessor tries to absorb it
//!   (attempt_front_merge), else it is re-sorted at its new start after the requests
//!   already starting there (dd_request_merged, elv_rb_add). The survivor takes the
//!   FIFO place of the absorbed request if that one was older (dd_merged_requests).
//! - a new request first tries to join the back of `last_merge`, then of the request the
//!   hash finds ending at its start, repeatedly (elv_attempt_insert_merge).
//!
//! The sort trees, FIFOs and hash are ordered maps keyed by (sector, sequence number):
//! every choice is deterministic.
//!
//! Flush requests (REQ_OP_FLUSH, from fsync's blkdev_issue_flush on a queue with a
//! volatile write cache) carry no data, never merge, and bypass the scheduler: the
//! flush machinery inserts them at the head of the dispatch list
//! (blk_mq_add_to_requeue_list(rq, add_front)), so they are dispatched first, one at a
//! time (blk-flush has one flush request per queue in flight; flushes that arrive
//! meanwhile wait for it; their coalescing into one flush is left out).
//! Discard requests (REQ_OP_DISCARD, from blkdev_issue_discard): a write operation (so
//! mq-deadline queues them with the writes), no data, bounded by the queue's
//! max_discard_sectors instead of max_sectors (the caller splits them:
//! __blkdev_issue_discard); they merge only with discards (blk_rq_merge_ok compares the
//! operation), contiguously, as on queues with max_discard_segments = 1 (MMC, and UFS's
//! single-descriptor UNMAP).
//! Leaves out: I/O priorities, zoned write locking, multiple hardware queues.
//! Units: 512-byte sectors, nanoseconds.

use super::{discard_limits, Scheduler};
use crate::engine::SimTime;
use crate::workload::Dir;
use std::collections::VecDeque;
use std::hash::BuildHasherDefault;

pub type ReqId = u32;

/// A bio: one contiguous piece of one fio I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// The fio I/O this bio belongs to.
    pub io: u32,
    pub dir: Dir,
    pub sector: u64,
    pub sectors: u32,
    /// CPU that submitted it (its blk-mq software queue).
    pub cpu: u32,
    /// When it entered the block layer (blktrace's Q).
    pub queued_at: SimTime,
    /// A discard (REQ_OP_DISCARD); `dir` is then Write.
    pub discard: bool,
    /// REQ_NOMERGE: a piece blk_queue_split cut off the front of a larger bio. It merges
    /// into no request, and its request takes no other bio or request.
    pub nomerge: bool,
}

/// A block request: one or more merged bios, contiguous on the device.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub dir: Option<Dir>,
    pub sector: u64,
    pub sectors: u32,
    /// fio I/Os carried (one entry per bio), in device order.
    pub bios: Vec<u32>,
    /// Q of the bio that allocated the request (blktrace's Q2G starts here).
    pub bio_queued_at: SimTime,
    /// When the request was allocated (G) — later than Q when the bio waited for a tag.
    pub got_at: SimTime,
    /// When the request entered the scheduler (I; deadline expiry counts from here).
    pub queued_at: SimTime,
    /// When the driver took it (D).
    pub dispatched_at: SimTime,
    /// When the driver started it on the hardware (queued in the command engine, or
    /// its command sent); `SimTime::MAX` until then.
    pub hw_at: SimTime,
    /// When the hardware raised the interrupt that finished it; `SimTime::MAX` until then.
    pub irq_at: SimTime,
    /// Software queue (CPU) it was inserted from.
    pub cpu: u32,
    /// A cache flush (REQ_OP_FLUSH): no data; `dir` is Write, `sectors` 0.
    pub flush: bool,
    /// A discard (REQ_OP_DISCARD): no data; `dir` is Write.
    pub discard: bool,
    /// A driver-private passthrough request (REQ_OP_DRV_IN/OUT, e.g. an HPB READ BUFFER):
    /// no bios, no disk accounting (no gendisk), never merged; it holds a tag.
    pub passthrough: bool,
}

impl Request {
    pub fn end(&self) -> u64 {
        self.sector + self.sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * 512
    }
    pub fn dir(&self) -> Dir {
        self.dir.expect("live request has a direction")
    }
}

/// The disk's I/O accounting as Linux 5.4 keeps it for /sys/block/<disk>/stat (the
/// fields fio reads), cumulative since the queue was created; fio reports the difference
/// of two snapshots. Requests are accounted from their allocation (G: rq->start_time_ns,
/// blk_account_io_start(rq, true)) to their completion (blk_account_io_done):
/// - `ios`, `ticks_ns`: completed requests and the sum of their lifetimes, per
///   op_stat_group: discards have their own group (STAT_DISCARD, not kept here). In 5.4
///   blkdev_issue_flush's empty flush is a REQ_OP_WRITE|REQ_PREFLUSH request; the flush
///   machinery clears its RQF_FLUSH_SEQ before ending it, so it counts as a write (the
///   internal flush_rq is not accounted; STAT_FLUSH only exists from 5.5).
/// - `merges`: bios merged into a request (bio_attempt_{back,front,discard}_merge call
///   blk_account_io_start(rq, false)), by rq_data_dir: a discard's merge counts as a
///   write. Request-with-request merges (attempt_merge) count none.
/// - `time_in_queue_jiffies`: each request of any kind adds
///   nsecs_to_jiffies64(lifetime), truncated per request ([`KERNEL_HZ`]).
/// - `io_ticks_ns`: time with at least one request in flight (part_in_flight > 0; a
///   request merged into another leaves flight, blk_account_io_merge). 5.4's
///   update_io_ticks approximates this by one jiffy per jiffy with an accounting event;
///   this keeps the quantity it approximates (Documentation/block/stat.rst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// When the snapshot was taken, ns.
    pub at_ns: SimTime,
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    pub ticks_ns: [u64; 2],
    pub time_in_queue_jiffies: u64,
    pub io_ticks_ns: u64,
}

/// The kernel's tick rate: kernel/Kconfig.hz's default (HZ_250), which arm64 and the
/// distribution kernels keep (estimate: the presets' vendor kernel configs are not
/// public).
pub const KERNEL_HZ: u64 = 250;

/// What the block layer did with a bio, for block-event traces (blktrace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioFate {
    /// Merged at the back (or, if not `back`, the front) of request `req`.
    Merged { bio: Bio, req: ReqId, back: bool },
    /// Started a new request `req` (allocated and inserted).
    NewRequest { bio: Bio, req: ReqId },
}

const READ_EXPIRE_NS: u64 = 500_000_000;
const WRITE_EXPIRE_NS: u64 = 5_000_000_000;
const WRITES_STARVED: u32 = 2;
const FIFO_BATCH: u32 = 16;
/// blk_mq_bio_list_merge looks at this many requests of a software queue (5.x).
const SW_QUEUE_MERGE_SCAN: u32 = 8;

/// `none`: blk-mq's per-CPU software queues, dispatched in arrival order.
#[derive(Default)]
struct Noop {
    /// Requests in arrival order.
    arrival: VecDeque<ReqId>,
    /// Each CPU's requests in arrival order (the merge candidates).
    per_cpu: Vec<VecDeque<ReqId>>,
}

/// A sort tree's key: a request's start sector, then the sequence number of its
/// (re)insertion, so that equal starts keep insertion order.
type SortKey = (u64, u32);

/// One entry of a [`SortedVec`], 16 bytes.
#[derive(Clone, Copy, Debug)]
struct SortEntry {
    sector: u64,
    seq: u32,
    id: ReqId,
}

impl SortEntry {
    #[inline(always)]
    fn key(&self) -> SortKey {
        (self.sector, self.seq)
    }
    #[inline(always)]
    fn pair(&self) -> (SortKey, ReqId) {
        (self.key(), self.id)
    }
}

/// A small ordered map on a sorted vector (mq-deadline's sort trees): binary searches,
/// and insertions and removals that move at most the scheduler's requests (nr_requests
/// entries of 16 bytes); no allocation once it has grown to that. Keys are unique.
#[derive(Clone, Debug, Default)]
struct SortedVec {
    v: Vec<SortEntry>,
}

impl SortedVec {
    #[inline]
    fn insert(&mut self, k: SortKey, id: ReqId) {
        // New keys are mostly the largest (sequence numbers).
        let i = match self.v.last() {
            Some(l) if l.key() < k => self.v.len(),
            _ => self.v.partition_point(|e| e.key() < k),
        };
        debug_assert!(self.v.get(i).is_none_or(|e| e.key() != k), "duplicate key");
        let (sector, seq) = k;
        self.v.insert(i, SortEntry { sector, seq, id });
    }
    #[inline]
    fn remove(&mut self, k: &SortKey) {
        let i = self.v.partition_point(|e| e.key() < *k);
        self.remove_at(k, i);
    }
    /// Removes `k`, which is at index `i`.
    #[inline]
    fn remove_at(&mut self, k: &SortKey, i: usize) {
        debug_assert!(self.v.get(i).is_some_and(|e| e.key() == *k), "missing key");
        self.v.remove(i);
    }
    /// The index of the first entry at or after `k`, and that entry.
    #[inline]
    fn index_from(&self, k: SortKey) -> (usize, Option<(SortKey, ReqId)>) {
        let i = self.v.partition_point(|e| e.key() < k);
        (i, self.v.get(i).map(SortEntry::pair))
    }
    /// The first entry at or after `k`.
    #[inline]
    fn first_from(&self, k: SortKey) -> Option<(SortKey, ReqId)> {
        self.index_from(k).1
    }
    /// The first entry after `k`.
    #[inline]
    fn after(&self, k: SortKey) -> Option<(SortKey, ReqId)> {
        let i = self.v.partition_point(|e| e.key() <= k);
        self.v.get(i).map(SortEntry::pair)
    }
    /// The last entry before `k`.
    #[inline]
    fn before(&self, k: SortKey) -> Option<(SortKey, ReqId)> {
        let i = self.v.partition_point(|e| e.key() < k);
        Some(self.v[i.checked_sub(1)?].pair())
    }
}

/// No request (end of a hash chain).
const NO_REQ: ReqId = ReqId::MAX;

/// mq-deadline's bookkeeping of one request (block/mq-deadline.c, block/elevator.c);
/// its REQ_NOMERGE flag also serves `none`'s software-queue merges.
#[derive(Clone, Copy, Debug)]
struct DdRq {
    /// In the scheduler (sort tree, FIFO).
    queued: bool,
    /// REQ_NOMERGE: a bio merge failed on its size (req_set_nomerge), or its bio was
    /// split off the front of a larger one (blk_queue_split).
    nomerge: bool,
    /// In the merge hash, at `hash_end`, between `hprev` and `hnext` of its chain.
    hashed: bool,
    hash_end: u64,
    hprev: ReqId,
    hnext: ReqId,
    /// Its key in its direction's sort tree: its start when (re)added, then the
    /// sequence number of that addition, so that equal starts keep insertion order.
    sort: SortKey,
    /// Its neighbours in its direction's FIFO (NO_REQ at the ends).
    fprev: ReqId,
    fnext: ReqId,
}

impl Default for DdRq {
    fn default() -> Self {
        DdRq {
            queued: false,
            nomerge: false,
            hashed: false,
            hash_end: 0,
            hprev: NO_REQ,
            hnext: NO_REQ,
            sort: (0, 0),
            fprev: NO_REQ,
            fnext: NO_REQ,
        }
    }
}

/// A multiplicative hasher for sector numbers (the hash map is only looked up by key,
/// never iterated, so its order cannot reach the results).
#[derive(Default)]
struct SectorHasher(u64);

impl std::hash::Hasher for SectorHasher {
    #[inline]
    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type SectorMap = std::collections::HashMap<u64, ReqId, BuildHasherDefault<SectorHasher>>;

/// mq-deadline's queues and merge indexes; every choice they make is deterministic.
struct Deadline {
    /// sort_list[dir]: requests by start sector; discards sort with the writes.
    sort: [SortedVec; 2],
    /// How many of each direction's sort-tree requests start at a sector of each
    /// bucket (a counting filter over start sectors): a bucket at zero answers "no
    /// request starts there" without the tree's binary search, which a front-merge
    /// lookup would otherwise pay on every bio.
    starts: [[u32; START_BUCKETS]; 2],
    /// fifo_list[dir]: its first and last request, linked through their `fprev` and
    /// `fnext`, by expiry, i.e. insertion order (a merged request may take the place of
    /// the one it absorbed).
    fifo: [(ReqId, ReqId); 2],
    /// Requests in each FIFO.
    fifo_live: [usize; 2],
    /// The elevator's hash of mergeable requests by end sector (elv_rqhash_*), of all
    /// directions and kinds: the head of each end sector's chain. As the kernel's
    /// buckets (hlist_add_head), a request is (re)hashed at the head of its chain, so
    /// among requests ending at one sector the lookup finds the one hashed last.
    hash: SectorMap,
    /// q->last_merge, the one-hit cache.
    last_merge: Option<ReqId>,
    /// The last sort-tree sequence number given.
    seq: u32,
    /// Per request id.
    rq: Vec<DdRq>,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline {
            sort: Default::default(),
            starts: [[0; START_BUCKETS]; 2],
            fifo: [(NO_REQ, NO_REQ); 2],
            fifo_live: [0; 2],
            hash: SectorMap::default(),
            last_merge: None,
            seq: 0,
            rq: Vec::new(),
        }
    }
}

/// Buckets of [`Deadline::starts`] (a power of two).
const START_BUCKETS: usize = 256;

#[inline(always)]
fn start_bucket(sector: u64) -> usize {
    (sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - START_BUCKETS.trailing_zeros())) as usize
}

impl Deadline {
    /// Adds `id` to direction `d`'s sort tree at `key` (start sector, sequence).
    #[inline]
    fn sort_insert(&mut self, d: usize, key: SortKey, id: ReqId) {
        self.starts[d][start_bucket(key.0)] += 1;
        self.sort[d].insert(key, id);
    }

    /// Takes the request at `key` out of direction `d`'s sort tree (at index `at` if
    /// the caller knows it).
    #[inline]
    fn sort_remove(&mut self, d: usize, key: SortKey, at: Option<usize>) {
        self.starts[d][start_bucket(key.0)] -= 1;
        match at {
            Some(i) => self.sort[d].remove_at(&key, i),
            None => self.sort[d].remove(&key),
        }
    }

    /// The first request of direction `d`'s sort tree starting at `sector`, if any.
    #[inline]
    fn first_starting_at(&self, d: usize, sector: u64) -> Option<ReqId> {
        if self.starts[d][start_bucket(sector)] == 0 {
            return None;
        }
        match self.sort[d].first_from((sector, 0)) {
            Some(((s, _), id)) if s == sector => Some(id),
            _ => None,
        }
    }

    #[inline]
    fn next_seq(&mut self) -> u32 {
        if self.seq == u32::MAX {
            self.renumber();
        }
        self.seq += 1;
        self.seq
    }

    /// Sequence numbers only order requests of equal start within a tree: given anew
    /// in tree order (1, 2, ...) they keep every order, and leave room for 2^32 more.
    #[cold]
    fn renumber(&mut self) {
        let mut n = 0;
        for tree in &mut self.sort {
            for e in &mut tree.v {
                n += 1;
                e.seq = n;
                self.rq[e.id as usize].sort.1 = n;
            }
        }
        self.seq = n;
    }

    /// elv_rqhash_find: the mergeable request ending at `sector` hashed last.
    #[inline]
    fn hash_find(&self, sector: u64) -> Option<ReqId> {
        self.hash.get(&sector).copied()
    }

    /// elv_rqhash_add at `end`: the head of its chain.
    fn hash_add(&mut self, id: ReqId, end: u64) {
        let old = self.hash.insert(end, id).unwrap_or(NO_REQ);
        if old != NO_REQ {
            self.rq[old as usize].hprev = id;
        }
        let r = &mut self.rq[id as usize];
        r.hashed = true;
        r.hash_end = end;
        r.hprev = NO_REQ;
        r.hnext = old;
    }

    /// __elv_rqhash_del.
    fn hash_del(&mut self, id: ReqId) {
        let r = self.rq[id as usize];
        if !r.hashed {
            return;
        }
        if r.hprev != NO_REQ {
            self.rq[r.hprev as usize].hnext = r.hnext;
        } else if r.hnext != NO_REQ {
            self.hash.insert(r.hash_end, r.hnext);
        } else {
            self.hash.remove(&r.hash_end);
        }
        if r.hnext != NO_REQ {
            self.rq[r.hnext as usize].hprev = r.hprev;
        }
        let r = &mut self.rq[id as usize];
        r.hashed = false;
        r.hprev = NO_REQ;
        r.hnext = NO_REQ;
    }

    /// The FIFO head of direction `d` (the request that expires first).
    #[inline]
    fn fifo_head(&self, d: usize) -> Option<ReqId> {
        let h = self.fifo[d].0;
        (h != NO_REQ).then_some(h)
    }

    /// `id` joins the end of direction `d`'s FIFO.
    fn fifo_push(&mut self, d: usize, id: ReqId) {
        let tail = self.fifo[d].1;
        self.link(d, tail, id, NO_REQ);
        self.fifo_live[d] += 1;
    }

    /// Makes `b` follow `a` in direction `d`'s FIFO (NO_REQ for `a`: `b` is first; for
    /// `b`: `a` is last).
    #[inline]
    fn join(&mut self, d: usize, a: ReqId, b: ReqId) {
        match a {
            NO_REQ => self.fifo[d].0 = b,
            a => self.rq[a as usize].fnext = b,
        }
        match b {
            NO_REQ => self.fifo[d].1 = a,
            b => self.rq[b as usize].fprev = a,
        }
    }

    /// `id` goes between `prev` and `next` (neighbours, or NO_REQ at an end).
    #[inline]
    fn link(&mut self, d: usize, prev: ReqId, id: ReqId, next: ReqId) {
        self.join(d, prev, id);
        self.join(d, id, next);
    }

    /// `id` leaves direction `d`'s FIFO, its neighbours joined.
    #[inline]
    fn unlink(&mut self, d: usize, id: ReqId) {
        let r = &mut self.rq[id as usize];
        let (prev, next) = (r.fprev, r.fnext);
        r.fprev = NO_REQ;
        r.fnext = NO_REQ;
        self.join(d, prev, next);
    }

    /// A request left direction `d`'s FIFO.
    fn fifo_left(&mut self, d: usize, id: ReqId) {
        self.unlink(d, id);
        self.fifo_live[d] -= 1;
    }

    /// `req` moves to the FIFO place of `next`, just before it (`next` is about to
    /// leave, and `req` is then where `next` was).
    fn fifo_take_place(&mut self, d: usize, req: ReqId, next: ReqId) {
        self.unlink(d, req);
        let prev = self.rq[next as usize].fprev;
        self.link(d, prev, req, next);
    }
}

pub struct BlockLayer {
    sched: Scheduler,
    nr_requests: u32,
    max_sectors: u32,
    /// The queue's max_discard_sectors (0: the device takes no discards).
    max_discard_sectors: u32,
    /// The queue's discard_granularity, sectors (0: none).
    discard_granularity: u32,
    reqs: Vec<Request>,
    free: Vec<ReqId>,
    /// Requests in the scheduler (flushes apart).
    nqueued: usize,
    /// `none`'s queues.
    noop: Noop,
    /// mq-deadline's queues and merge indexes.
    dd: Deadline,
    /// Flush requests, dispatched before the scheduler's requests.
    flushes: std::collections::VecDeque<ReqId>,
    flush_in_flight: bool,
    /// Requests the driver refused (BLK_STS_RESOURCE), back on the hardware queue's
    /// dispatch list (`hctx->dispatch`): out of the scheduler, so they merge no more,
    /// and dispatched before it when the queue is rerun.
    parked: VecDeque<ReqId>,
    /// Bios waiting for a tag, in arrival order.
    tag_wait: std::collections::VecDeque<Bio>,
    tags_used: u32,
    // mq-deadline state
    last_start: [u64; 2],
    batch_left: u32,
    batch_dir: Dir,
    starved: u32,
    /// Counters.
    pub merges: u64,
    /// Requests allocated (each is inserted, and its insertion runs the queue).
    pub requests_made: u64,
    pub requests_dispatched: u64,
    /// The disk's accounting ([`DiskStats`]); `io_ticks_ns` up to `busy_since`.
    disk: DiskStats,
    /// Requests accounted in flight, and since when the count was non-zero.
    in_flight: u32,
    busy_since: SimTime,
    /// When Some, what happened to each bio is appended here (the caller drains it).
    pub log: Option<Vec<BioFate>>,
}

impl BlockLayer {
    pub fn new(sched: Scheduler, nr_requests: u32, max_request_bytes: u64) -> Self {
        BlockLayer {
            sched,
            nr_requests,
            max_sectors: (max_request_bytes / 512) as u32,
            max_discard_sectors: 0,
            discard_granularity: 0,
            reqs: Vec::with_capacity(nr_requests as usize),
            free: Vec::new(),
            nqueued: 0,
            noop: Noop::default(),
            dd: Deadline::default(),
            flushes: std::collections::VecDeque::new(),
            flush_in_flight: false,
            parked: VecDeque::new(),
            tag_wait: std::collections::VecDeque::new(),
            tags_used: 0,
            last_start: [0, 0],
            batch_left: 0,
            batch_dir: Dir::Read,
            starved: 0,
            merges: 0,
            requests_made: 0,
            requests_dispatched: 0,
            disk: DiskStats::default(),
            in_flight: 0,
            busy_since: 0,
            log: None,
        }
    }

    pub fn max_sectors(&self) -> u32 {
        self.max_sectors
    }

    /// The queue's max_discard_sectors (blk_queue_max_discard_sectors).
    pub fn set_max_discard_sectors(&mut self, sectors: u32) {
        self.max_discard_sectors = sectors;
    }
    /// The queue's max_discard_sectors and discard_granularity (sectors), as the driver
    /// sets them from the device's registers (`host/discard_limits.rs`).
    pub fn set_discard_limits(&mut self, max_sectors: u32, granularity: u32) {
        self.max_discard_sectors = max_sectors;
        self.discard_granularity = granularity;
    }
    /// blk_bio_discard_split: the next discard request's length (sectors) of the
    /// `remaining` sectors at `sector`, under `max` sectors.
    pub fn discard_split(&self, sector: u64, remaining: u64, max: u64) -> u64 {
        discard_limits::discard_split(sector, remaining, max as u32, self.discard_granularity)
    }
    /// The discard requests a trim of `len` bytes at `offset` becomes, in pieces of at
    /// most `max_bytes` (__blkdev_issue_discard, then blk_bio_discard_split).
    pub fn discard_pieces(&self, offset: u64, len: u64, max_bytes: u64) -> u32 {
        discard_limits::discard_pieces(
            offset / 512,
            len / 512,
            (max_bytes / 512) as u32,
            self.discard_granularity,
        )
    }
    pub fn max_discard_sectors(&self) -> u32 {
        self.max_discard_sectors
    }

    /// The size bound of a request of this kind.
    #[inline]
    fn limit(&self, discard: bool) -> u32 {
        if discard {
            self.max_discard_sectors
        } else {
            self.max_sectors
        }
    }

    pub fn req(&self, id: ReqId) -> &Request {
        &self.reqs[id as usize]
    }

    /// Requests waiting in the scheduler or on the dispatch list.
    pub fn queued_len(&self) -> usize {
        self.nqueued + self.flushes.len() + self.parked.len()
    }
    /// Bios waiting for a tag.
    pub fn tag_waiters(&self) -> usize {
        self.tag_wait.len()
    }
    pub fn has_queued(&self) -> bool {
        self.nqueued > 0
            || !self.parked.is_empty()
            || (!self.flushes.is_empty() && !self.flush_in_flight)
    }

    /// The driver refused `id`, just dispatched (queue_rq answered BLK_STS_RESOURCE):
    /// blk_mq_dispatch_rq_list requeues it (`__blk_mq_requeue_request`, blktrace's R)
    /// onto the dispatch list, ahead of the scheduler's requests. (Only reads and
    /// writes are refused: flushes and discards are MMC_ISSUE_SYNC.)
    pub fn requeue(&mut self, id: ReqId) {
        debug_assert!(!self.reqs[id as usize].flush, "a flush is never refused");
        self.requests_dispatched -= 1;
        self.parked.push_front(id);
    }

    /// Tries to merge `bio` into a queued request; true if it did.
    fn try_merge(&mut self, bio: &Bio) -> bool {
        match self.sched {
            Scheduler::None => self.sw_queue_merge(bio),
            Scheduler::MqDeadline => self.dd_bio_merge(bio),
        }
    }

    /// Without an elevator blk-mq only looks at the last `SW_QUEUE_MERGE_SCAN` requests
    /// of the submitting CPU's software queue (blk_mq_bio_list_merge), so bios from
    /// threads on other CPUs do not merge, and requests never merge with each other.
    fn sw_queue_merge(&mut self, bio: &Bio) -> bool {
        let max = self.limit(bio.discard);
        let Some(list) = self.noop.per_cpu.get(bio.cpu as usize) else {
            return false;
        };
        let mut hit = None;
        for &id in list.iter().rev().take(SW_QUEUE_MERGE_SCAN as usize) {
            let r = &self.reqs[id as usize];
            if self.dd.rq[id as usize].nomerge
                || r.dir != Some(bio.dir)
                || r.discard != bio.discard
                || r.sectors + bio.sectors > max
            {
                continue;
            }
            if r.end() == bio.sector {
                hit = Some((id, true));
                break;
            }
            if bio.sector + bio.sectors as u64 == r.sector {
                hit = Some((id, false));
                break;
            }
        }
        let Some((id, back)) = hit else {
            return false;
        };
        self.bio_merge(id, bio, back);
        true
    }

    /// Adds `bio` to request `id` at its back (or front) and counts the merge
    /// (bio_attempt_{back,front}_merge: blk_account_io_start(rq, false)).
    fn bio_merge(&mut self, id: ReqId, bio: &Bio, back: bool) {
        let r = &mut self.reqs[id as usize];
        r.sectors += bio.sectors;
        if back {
            r.bios.push(bio.io);
        } else {
            r.sector = bio.sector;
            r.bios.insert(0, bio.io);
        }
        self.merges += 1;
        self.disk.merges[bio.dir.index()] += 1;
        if self.log.is_some() {
            self.note(BioFate::Merged {
                bio: *bio,
                req: id,
                back,
            });
        }
    }

    /// elv_bio_merge_ok → blk_rq_merge_ok: the request may take a bio of this kind (no
    /// REQ_NOMERGE, same operation and direction). Size is checked by the merge itself.
    #[inline]
    fn dd_merge_ok(&self, id: ReqId, bio: &Bio) -> bool {
        let r = &self.reqs[id as usize];
        !self.dd.rq[id as usize].nomerge && r.dir == Some(bio.dir) && r.discard == bio.discard
    }

    /// elv_merge: the one request the bio may merge into, and whether at its back.
    fn dd_elv_merge(&self, bio: &Bio) -> Option<(ReqId, bool)> {
        let end = bio.sector + bio.sectors as u64;
        // The one-hit cache (blk_try_merge: back before front).
        if let Some(l) = self.dd.last_merge {
            if self.dd_merge_ok(l, bio) {
                let r = &self.reqs[l as usize];
                if r.end() == bio.sector {
                    return Some((l, true));
                }
                if r.sector == end {
                    return Some((l, false));
                }
            }
        }
        // elv_rqhash_find: a request ending where the bio starts, of any kind; only the
        // first one found is considered.
        if let Some(h) = self.dd.hash_find(bio.sector) {
            if self.dd_merge_ok(h, bio) {
                return Some((h, true));
            }
        }
        // dd_request_merge → elv_rb_find(sort_list[dir], bio_end_sector): a request of
        // the bio's direction starting where the bio ends.
        let d = bio.dir.index();
        if let Some(f) = self.dd.first_starting_at(d, end) {
            if self.dd_merge_ok(f, bio) {
                return Some((f, false));
            }
        }
        None
    }

    /// blk_mq_sched_try_merge with mq-deadline (dd_bio_merge).
    fn dd_bio_merge(&mut self, bio: &Bio) -> bool {
        let Some((id, back)) = self.dd_elv_merge(bio) else {
            return false;
        };
        // ll_{back,front}_merge_fn: too large → req_set_nomerge, and the bio gets a
        // request of its own (no other candidate is tried).
        if self.reqs[id as usize].sectors + bio.sectors > self.limit(bio.discard) {
            self.dd_set_nomerge(id);
            return false;
        }
        self.bio_merge(id, bio, back);
        let d = self.reqs[id as usize].dir().index();
        let key = self.dd.rq[id as usize].sort;
        if back {
            // attempt_back_merge: with its successor in the sort tree (elv_latter_request).
            let next = self.dd.sort[d].after(key).map(|(_, n)| n);
            if !next.is_some_and(|n| self.attempt_merge(id, n)) {
                // elv_merged_request(BACK): its end moved in the hash.
                self.dd_hash_reposition(id);
                self.dd.last_merge = Some(id);
            }
        } else {
            // attempt_front_merge: with its predecessor (elv_former_request), found from
            // its place in the tree, which still has its old start.
            let prev = self.dd.sort[d].before(key).map(|(_, p)| p);
            if !prev.is_some_and(|p| self.attempt_merge(p, id)) {
                // elv_merged_request(FRONT) → dd_request_merged: re-sorted at its new
                // start, after the requests that already start there (elv_rb_add).
                self.dd.sort_remove(d, key, None);
                self.dd_sort_add(id);
                self.dd.last_merge = Some(id);
            }
        }
        true
    }

    /// attempt_merge(req, next): `next` joins the back of `req` if both may merge, are of
    /// one kind, are contiguous and fit in one request (ll_merge_requests_fn, which does
    /// not mark them REQ_NOMERGE when they do not). `next` may not be inserted yet
    /// (elv_attempt_insert_merge). True if they merged; `next` is then freed.
    fn attempt_merge(&mut self, req: ReqId, next: ReqId) -> bool {
        let (r, n) = (&self.reqs[req as usize], &self.reqs[next as usize]);
        if self.dd.rq[req as usize].nomerge
            || self.dd.rq[next as usize].nomerge
            || r.dir != n.dir
            || r.discard != n.discard
            || r.end() != n.sector
            || r.sectors + n.sectors > self.limit(r.discard)
        {
            return false;
        }
        // dd_merged_requests: if next expires first, req takes its FIFO place and time.
        let older = n.queued_at < r.queued_at;
        let inserted = self.dd.rq[next as usize].queued;
        if older && inserted {
            let d = self.reqs[req as usize].dir().index();
            self.dd.fifo_take_place(d, req, next);
        }
        if inserted {
            self.dd_remove(next);
        }
        let o = std::mem::take(&mut self.reqs[next as usize]);
        let r = &mut self.reqs[req as usize];
        r.bios.extend_from_slice(&o.bios);
        r.sectors += o.sectors;
        if older {
            // The merged request's life began with the older of the two: its
            // allocation (G), insertion (I) and the Q of the bio that allocated it.
            r.queued_at = o.queued_at;
            r.got_at = o.got_at;
            r.bio_queued_at = o.bio_queued_at;
        }
        self.release(next, o.bios);
        self.merges += 1;
        // blk_account_io_merge: the merged-away request leaves flight.
        self.in_flight -= 1;
        // elv_merge_requests.
        self.dd_hash_reposition(req);
        self.dd.last_merge = Some(req);
        true
    }

    /// elv_attempt_insert_merge: before a new request is inserted, it may join the back of
    /// the one-hit cache, or of the request the hash finds ending where it starts, and
    /// so on up the chain. True if it merged (and is gone).
    fn dd_insert_merge(&mut self, id: ReqId) -> bool {
        if let Some(l) = self.dd.last_merge {
            if self.attempt_merge(l, id) {
                return true;
            }
        }
        let mut rq = id;
        let mut merged = false;
        while let Some(h) = self.dd.hash_find(self.reqs[rq as usize].sector) {
            if !self.attempt_merge(h, rq) {
                break;
            }
            merged = true;
            rq = h;
        }
        merged
    }

    /// dd_insert_request: into the sort tree, the merge hash and the FIFO (a REQ_NOMERGE
    /// request into neither the hash nor the one-hit cache: `rq_mergeable` is false).
    fn dd_insert(&mut self, id: ReqId) {
        if self.dd_insert_merge(id) {
            return;
        }
        let d = self.reqs[id as usize].dir().index();
        self.dd.rq[id as usize].queued = true;
        self.dd_sort_add(id);
        if !self.dd.rq[id as usize].nomerge {
            self.dd_hash_reposition(id);
            if self.dd.last_merge.is_none() {
                self.dd.last_merge = Some(id);
            }
        }
        self.dd.fifo_push(d, id);
        self.nqueued += 1;
    }

    fn dd_sort_add(&mut self, id: ReqId) {
        let r = &self.reqs[id as usize];
        let (d, sector) = (r.dir().index(), r.sector);
        let key = (sector, self.dd.next_seq());
        self.dd.rq[id as usize].sort = key;
        self.dd.sort_insert(d, key, id);
    }

    /// elv_rqhash_reposition: (re)hashed at its end, first among equal ends.
    fn dd_hash_reposition(&mut self, id: ReqId) {
        self.dd.hash_del(id);
        self.dd.hash_add(id, self.reqs[id as usize].end());
    }

    /// req_set_nomerge: never merged again; out of the hash and the one-hit cache
    /// (elv_rqhash_find drops such requests when it meets them).
    fn dd_set_nomerge(&mut self, id: ReqId) {
        self.dd.rq[id as usize].nomerge = true;
        self.dd.hash_del(id);
        if self.dd.last_merge == Some(id) {
            self.dd.last_merge = None;
        }
    }

    /// deadline_remove_request: out of the FIFO, the sort tree, the hash and the cache.
    fn dd_remove(&mut self, id: ReqId) {
        self.dd_remove_at(id, None)
    }

    /// dd_remove, with the request's index in its sort tree if known.
    fn dd_remove_at(&mut self, id: ReqId, at: Option<usize>) {
        let d = self.reqs[id as usize].dir().index();
        let rq = &mut self.dd.rq[id as usize];
        rq.queued = false;
        let sort = rq.sort;
        self.dd.fifo_left(d, id);
        self.dd.sort_remove(d, sort, at);
        self.dd.hash_del(id);
        if self.dd.last_merge == Some(id) {
            self.dd.last_merge = None;
        }
        self.nqueued -= 1;
    }

    /// Hands a new request to the scheduler.
    fn insert(&mut self, id: ReqId) {
        match self.sched {
            Scheduler::None => {
                let cpu = self.reqs[id as usize].cpu as usize;
                if self.noop.per_cpu.len() <= cpu {
                    self.noop.per_cpu.resize_with(cpu + 1, VecDeque::new);
                }
                self.noop.per_cpu[cpu].push_back(id);
                self.noop.arrival.push_back(id);
                self.nqueued += 1;
            }
            Scheduler::MqDeadline => self.dd_insert(id),
        }
    }

    fn release(&mut self, id: ReqId, mut bios: Vec<u32>) {
        bios.clear();
        self.reqs[id as usize].bios = bios;
        self.reqs[id as usize].dir = None;
        self.reqs[id as usize].flush = false;
        self.reqs[id as usize].discard = false;
        self.reqs[id as usize].passthrough = false;
        self.free.push(id);
        self.tags_used -= 1;
    }

    /// Takes a tag and makes a fresh request of `bio`'s range, direction and CPU, in
    /// no scheduler structure yet: mergeable unless its bio was split off the front of a
    /// larger one (the bio's REQ_NOMERGE is the request's). It carries no bio yet.
    fn fresh_request(&mut self, now: SimTime, bio: &Bio) -> ReqId {
        self.tags_used += 1;
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.reqs.push(Request::default());
                self.dd.rq.push(DdRq::default());
                (self.reqs.len() - 1) as ReqId
            }
        };
        self.dd.rq[id as usize] = DdRq {
            nomerge: bio.nomerge,
            ..DdRq::default()
        };
        let r = &mut self.reqs[id as usize];
        r.dir = Some(bio.dir);
        r.sector = bio.sector;
        r.sectors = bio.sectors;
        r.cpu = bio.cpu;
        r.bios.clear();
        r.bio_queued_at = bio.queued_at;
        r.got_at = now;
        r.queued_at = now;
        r.dispatched_at = 0;
        r.hw_at = SimTime::MAX;
        r.irq_at = SimTime::MAX;
        r.flush = false;
        r.discard = bio.discard;
        r.passthrough = false;
        id
    }

    fn new_request(&mut self, now: SimTime, bio: &Bio) -> ReqId {
        self.requests_made += 1;
        if self.in_flight == 0 {
            self.busy_since = now;
        }
        self.in_flight += 1;
        let id = self.fresh_request(now, bio);
        self.reqs[id as usize].bios.push(bio.io);
        if self.log.is_some() {
            self.note(BioFate::NewRequest { bio: *bio, req: id });
        }
        id
    }

    #[cold]
    #[inline(never)]
    fn note(&mut self, fate: BioFate) {
        if let Some(log) = &mut self.log {
            log.push(fate);
        }
    }

    /// The disk's accounting as read at `now` (the stat file's snapshot).
    pub fn disk_stats(&self, now: SimTime) -> DiskStats {
        let mut d = self.disk;
        d.at_ns = now;
        if self.in_flight > 0 {
            d.io_ticks_ns += now - self.busy_since;
        }
        d
    }

    /// The driver started `id` on the hardware at `t` (the first start counts).
    #[inline]
    pub fn mark_hw_start(&mut self, id: ReqId, t: SimTime) {
        let r = &mut self.reqs[id as usize];
        r.hw_at = r.hw_at.min(t);
    }

    /// The hardware raised the interrupt finishing `id` at `t` (the first one counts:
    /// status polls after it are the driver's work).
    #[inline]
    pub fn mark_irq(&mut self, id: ReqId, t: SimTime) {
        let r = &mut self.reqs[id as usize];
        r.irq_at = r.irq_at.min(t);
    }

    /// Submits a cache flush for fio I/O `io` from `cpu` (the flush request borrows
    /// the tag of the request that carries it, so it does not wait for one).
    pub fn submit_flush(&mut self, now: SimTime, io: u32, cpu: u32) {
        let id = self.new_request(
            now,
            &Bio {
                io,
                dir: Dir::Write,
                sector: 0,
                sectors: 0,
                cpu,
                queued_at: now,
                discard: false,
                nomerge: false,
            },
        );
        self.reqs[id as usize].flush = true;
        self.flushes.push_back(id);
    }

    /// Tags in use (requests allocated and not completed).
    pub fn tags_used(&self) -> u32 {
        self.tags_used
    }

    /// A driver's passthrough request (`blk_mq_alloc_request(q, REQ_OP_DRV_IN/OUT,
    /// BLK_MQ_REQ_NOWAIT)` then `blk_execute_rq_nowait(rq, at_head)`): takes a tag if one
    /// is free (None otherwise) and goes to the head of the dispatch list, bypassing the
    /// scheduler (blk_mq_sched_bypass_insert). `bytes` of data in direction `dir`.
    pub fn submit_passthrough(
        &mut self,
        now: SimTime,
        cpu: u32,
        dir: Dir,
        bytes: u64,
    ) -> Option<ReqId> {
        if self.tags_used >= self.nr_requests {
            return None;
        }
        // Its data, as a bio would describe it; no fio I/O, never merged.
        let data = Bio {
            io: u32::MAX,
            dir,
            sector: 0,
            sectors: bytes.div_ceil(512) as u32,
            cpu,
            queued_at: now,
            discard: false,
            nomerge: true,
        };
        let id = self.fresh_request(now, &data);
        self.reqs[id as usize].passthrough = true;
        self.parked.push_front(id);
        Some(id)
    }

    /// Submits a bio (already split to at most max_sectors). Returns false if it had to
    /// wait for a tag. A REQ_NOMERGE bio tries no merge (bio_mergeable).
    pub fn submit(&mut self, now: SimTime, bio: Bio) -> bool {
        assert!(bio.sectors > 0 && bio.sectors <= self.limit(bio.discard));
        if !bio.nomerge && self.try_merge(&bio) {
            return true;
        }
        if self.tags_used >= self.nr_requests {
            self.tag_wait.push_back(bio);
            return false;
        }
        let id = self.new_request(now, &bio);
        self.insert(id);
        true
    }

    /// The next request for the driver, chosen by the scheduler, or None.
    pub fn dispatch(&mut self, now: SimTime) -> Option<ReqId> {
        if !self.flush_in_flight && !self.flushes.is_empty() {
            let id = self.flushes.pop_front().expect("a flush waits");
            self.flush_in_flight = true;
            self.reqs[id as usize].dispatched_at = now;
            self.requests_dispatched += 1;
            return Some(id);
        }
        if let Some(id) = self.parked.pop_front() {
            self.reqs[id as usize].dispatched_at = now;
            self.requests_dispatched += 1;
            return Some(id);
        }
        if self.nqueued == 0 {
            return None;
        }
        let id = match self.sched {
            Scheduler::None => {
                let id = self.noop.arrival.pop_front().expect("a request waits");
                // Arrival order restricted to one CPU is that CPU's order.
                let cpu = self.reqs[id as usize].cpu as usize;
                let head = self.noop.per_cpu[cpu].pop_front();
                debug_assert_eq!(head, Some(id));
                self.nqueued -= 1;
                id
            }
            Scheduler::MqDeadline => {
                let (id, at) = self.deadline_pick(now);
                self.dd_remove_at(id, at);
                id
            }
        };
        let r = &mut self.reqs[id as usize];
        r.dispatched_at = now;
        self.last_start[r.dir().index()] = r.sector;
        self.requests_dispatched += 1;
        Some(id)
    }

    /// The FIFO head of a direction (the request that expires first).
    fn oldest(&mut self, dir: Dir) -> Option<ReqId> {
        self.dd.fifo_head(dir.index())
    }

    /// The request to dispatch, and its index in its sort tree if the pick found it
    /// there (its removal then needs no search).
    fn deadline_pick(&mut self, now: SimTime) -> (ReqId, Option<usize>) {
        let has_read = self.dd.fifo_live[Dir::Read.index()] > 0;
        let has_write = self.dd.fifo_live[Dir::Write.index()] > 0;
        // Continue the current batch in sector order if possible.
        let dir = if self.batch_left > 0
            && match self.batch_dir {
                Dir::Read => has_read,
                Dir::Write => has_write,
            } {
            self.batch_left -= 1;
            self.batch_dir
        } else {
            let d = match (has_read, has_write) {
                (true, true) => {
                    if self.starved >= WRITES_STARVED {
                        self.starved = 0;
                        Dir::Write
                    } else {
                        self.starved += 1;
                        Dir::Read
                    }
                }
                (true, false) => Dir::Read,
                _ => Dir::Write,
            };
            self.batch_dir = d;
            self.batch_left = FIFO_BATCH - 1;
            // A new batch starts at the FIFO head if its deadline has passed.
            let head = self.oldest(d).expect("direction has a request");
            let expire = if d == Dir::Read {
                READ_EXPIRE_NS
            } else {
                WRITE_EXPIRE_NS
            };
            if self.reqs[head as usize].queued_at + expire <= now {
                return (head, None);
            }
            d
        };
        // Sector order: mq-deadline's next_rq is the successor of the last dispatched
        // request in its sector-sorted tree, where a request equal in sector to another
        // sorts after it. So: the lowest sector at or after the last dispatched start,
        // the first in the tree among equals; none left above it → the FIFO head.
        let pos = self.last_start[dir.index()];
        match self.dd.sort[dir.index()].index_from((pos, 0)) {
            (i, Some((_, id))) => (id, Some(i)),
            (_, None) => (self.oldest(dir).expect("direction has a request"), None),
        }
    }

    /// The driver finished `id`: frees its tag and returns its I/Os. Bios that waited
    /// for a tag are admitted; `admitted` receives how many were.
    pub fn complete(&mut self, now: SimTime, id: ReqId, ios: &mut Vec<u32>) -> usize {
        let r = &self.reqs[id as usize];
        if r.flush {
            self.flush_in_flight = false;
        }
        if r.passthrough {
            // No gendisk: not accounted, no bios.
            let bios = std::mem::take(&mut self.reqs[id as usize].bios);
            self.release(id, bios);
            return self.admit_waiters(now);
        }
        // blk_account_io_done.
        let life = now - r.got_at;
        if !r.discard {
            let d = r.dir().index();
            self.disk.ios[d] += 1;
            self.disk.ticks_ns[d] += life;
        }
        self.disk.time_in_queue_jiffies += life / (1_000_000_000 / KERNEL_HZ);
        self.in_flight -= 1;
        if self.in_flight == 0 {
            self.disk.io_ticks_ns += now - self.busy_since;
        }
        let bios = std::mem::take(&mut self.reqs[id as usize].bios);
        // Most requests are one bio: a push, not a copy through memcpy.
        match bios[..] {
            [b] => ios.push(b),
            _ => ios.extend_from_slice(&bios),
        }
        self.release(id, bios);
        self.admit_waiters(now)
    }

    /// Bios that waited for a tag get one while tags are free; returns how many.
    fn admit_waiters(&mut self, now: SimTime) -> usize {
        let mut admitted = 0;
        while self.tags_used < self.nr_requests {
            let Some(bio) = self.tag_wait.pop_front() else {
                break;
            };
            if bio.nomerge || !self.try_merge(&bio) {
                let id = self.new_request(now, &bio);
                self.insert(id);
            }
            admitted += 1;
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bio(io: u32, dir: Dir, sector: u64, sectors: u32) -> Bio {
        Bio {
            io,
            dir,
            sector,
            sectors,
            cpu: 0,
            queued_at: 0,
            discard: false,
            nomerge: false,
        }
    }

    #[test]
    fn back_front_and_request_merges() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 8, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 8, 8));
        b.submit(0, bio(2, Dir::Write, 16, 8)); // back merge
        b.submit(0, bio(3, Dir::Write, 0, 8)); // front merge
        b.submit(0, bio(4, Dir::Write, 32, 8)); // separate
        b.submit(0, bio(5, Dir::Write, 24, 8)); // back merge, then joins [32,40)
        assert_eq!(b.queued_len(), 1);
        let id = b.dispatch(0).unwrap();
        let r = b.req(id);
        assert_eq!((r.sector, r.sectors), (0, 40));
        assert_eq!(r.bios, vec![3, 1, 2, 5, 4]);
    }

    /// A bio split off the front of a larger one (REQ_NOMERGE) merges into nothing, and
    /// its request takes no bio and joins no request, with either scheduler; a bio
    /// beside it without the flag still merges elsewhere.
    #[test]
    fn a_split_off_bio_and_its_request_never_merge() {
        for sched in [Scheduler::MqDeadline, Scheduler::None] {
            let mut b = BlockLayer::new(sched, 8, 512 * 1024);
            b.submit(0, bio(1, Dir::Write, 0, 8));
            let front = Bio {
                nomerge: true,
                ..bio(2, Dir::Write, 8, 8)
            };
            b.submit(0, front); // would back-merge into [0,8)
            b.submit(0, bio(3, Dir::Write, 16, 8)); // would back-merge into [8,16)
            b.submit(0, bio(4, Dir::Write, 24, 8)); // back-merges into [16,24)
            assert_eq!(b.queued_len(), 3, "{sched:?}");
            let mut got = Vec::new();
            while let Some(id) = b.dispatch(0) {
                let r = b.req(id);
                got.push((r.sector, r.sectors, r.bios.clone()));
            }
            got.sort();
            assert_eq!(
                got,
                vec![(0, 8, vec![1]), (8, 8, vec![2]), (16, 16, vec![3, 4])],
                "{sched:?}"
            );
        }
    }

    #[test]
    fn a_merged_request_keeps_the_older_requests_stamps() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 8, 512 * 1024);
        let at = |t: SimTime, io: u32, sector: u64| Bio {
            queued_at: t,
            ..bio(io, Dir::Write, sector, 8)
        };
        b.submit(2, at(1, 1, 0)); // X [0,8): Q 1, G = I = 2
        b.submit(5, at(5, 2, 16)); // Y [16,24)
                                   // [8,16) front-merges into Y, which then joins X: one request, born with X.
        b.submit(9, at(9, 3, 8));
        assert_eq!(b.queued_len(), 1);
        let id = b.dispatch(12).unwrap();
        let r = b.req(id);
        assert_eq!(r.bios, vec![1, 3, 2]);
        assert_eq!((r.bio_queued_at, r.got_at, r.queued_at), (1, 2, 2));
        assert!(r.bio_queued_at <= r.got_at && r.got_at <= r.queued_at);
    }

    #[test]
    fn without_elevator_only_the_same_cpu_merges() {
        let mut b = BlockLayer::new(Scheduler::None, 8, 512 * 1024);
        b.submit(
            0,
            Bio {
                cpu: 1,
                ..bio(1, Dir::Read, 0, 8)
            },
        );
        b.submit(
            0,
            Bio {
                cpu: 2,
                ..bio(2, Dir::Read, 8, 8)
            },
        ); // other CPU: no merge
        b.submit(
            0,
            Bio {
                cpu: 1,
                ..bio(3, Dir::Read, 8, 8)
            },
        ); // same CPU: back merge
        assert_eq!(b.queued_len(), 2);
        assert_eq!(b.merges, 1);
    }

    #[test]
    fn no_merge_across_directions_or_limit() {
        let mut b = BlockLayer::new(Scheduler::None, 8, 4096);
        b.submit(0, bio(1, Dir::Write, 0, 8));
        b.submit(0, bio(2, Dir::Read, 8, 8));
        b.submit(0, bio(3, Dir::Write, 8, 8));
        assert_eq!(b.queued_len(), 3);
    }

    #[test]
    fn tags_bound_requests() {
        let mut b = BlockLayer::new(Scheduler::None, 2, 512 * 1024);
        assert!(b.submit(0, bio(1, Dir::Read, 0, 8)));
        assert!(b.submit(0, bio(2, Dir::Read, 100, 8)));
        assert!(!b.submit(0, bio(3, Dir::Read, 200, 8)));
        let id = b.dispatch(0).unwrap();
        let mut ios = Vec::new();
        assert_eq!(b.complete(1, id, &mut ios), 1);
        assert_eq!(ios, vec![1]);
        assert_eq!(b.queued_len(), 2);
    }

    #[test]
    fn a_flush_bypasses_the_queue_and_never_merges() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 0, 8));
        b.submit_flush(0, 2, 0);
        b.submit(0, bio(3, Dir::Write, 8, 8)); // merges with the write, not the flush
        assert_eq!(b.queued_len(), 2);
        let f = b.dispatch(1).unwrap();
        assert!(b.req(f).flush);
        assert_eq!((b.req(f).sectors, b.req(f).bios.clone()), (0, vec![2]));
        let w = b.dispatch(1).unwrap();
        assert!(!b.req(w).flush);
        assert_eq!(b.req(w).sectors, 16);
        // One flush in flight at a time.
        b.submit_flush(2, 4, 0);
        assert!(!b.has_queued());
        assert_eq!(b.dispatch(2), None);
        let mut ios = Vec::new();
        b.complete(3, f, &mut ios);
        assert!(b.has_queued());
        let f2 = b.dispatch(3).unwrap();
        assert!(b.req(f2).flush);
    }

    #[test]
    fn discards_merge_only_with_discards_up_to_max_discard_sectors() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 4096);
        b.set_max_discard_sectors(16);
        let d = |io, sector| Bio {
            discard: true,
            ..bio(io, Dir::Write, sector, 8)
        };
        b.submit(0, bio(1, Dir::Write, 0, 8));
        b.submit(0, d(2, 8)); // contiguous with the write: no merge
        b.submit(0, d(3, 16)); // back merge with the discard (16 sectors: the limit)
        b.submit(0, d(4, 24)); // over max_discard_sectors: a request of its own
        b.submit(0, bio(5, Dir::Write, 32, 8)); // contiguous with a discard: no merge
        assert_eq!(b.queued_len(), 4);
        let order: Vec<(u64, u32, bool)> = std::iter::from_fn(|| {
            b.dispatch(1).map(|id| {
                let r = b.req(id);
                (r.sector, r.sectors, r.discard)
            })
        })
        .collect();
        assert_eq!(
            order,
            vec![(0, 8, false), (8, 16, true), (24, 8, true), (32, 8, false)]
        );
    }

    /// Dispatches everything at `now`: (sector, sectors, bios) in order.
    fn drain(b: &mut BlockLayer, now: SimTime) -> Vec<(u64, u32, Vec<u32>)> {
        std::iter::from_fn(|| {
            b.dispatch(now).map(|id| {
                let r = b.req(id);
                (r.sector, r.sectors, r.bios.clone())
            })
        })
        .collect()
    }

    #[test]
    fn back_merge_takes_the_request_hashed_last_among_equal_ends() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Read, 100, 8)); // the one-hit cache, not adjacent
        b.submit(0, bio(2, Dir::Read, 0, 8)); // [0,8)
        b.submit(0, bio(3, Dir::Read, 4, 4)); // [4,8): ends at 8 too, hashed later
        b.submit(0, bio(4, Dir::Read, 8, 8)); // joins [4,8), not [0,8)
        assert_eq!(b.merges, 1);
        assert_eq!(
            drain(&mut b, 0),
            vec![(0, 8, vec![2]), (4, 12, vec![3, 4]), (100, 8, vec![1])]
        );
        // A request of another kind found first by the hash ends the back-merge lookup.
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Read, 100, 8));
        b.submit(0, bio(2, Dir::Read, 0, 8));
        b.submit(0, bio(3, Dir::Write, 0, 8)); // ends at 8, hashed last
        b.submit(0, bio(4, Dir::Read, 8, 8));
        assert_eq!(b.merges, 0);
        assert_eq!(b.queued_len(), 4);
    }

    #[test]
    fn the_one_hit_cache_comes_before_the_hash() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Read, 0, 8)); // last_merge
        b.submit(0, bio(2, Dir::Read, 0, 8)); // same range, hashed later
        b.submit(0, bio(3, Dir::Read, 8, 8)); // last_merge takes it
        assert_eq!(drain(&mut b, 0), vec![(0, 16, vec![1, 3]), (0, 8, vec![2])]);
    }

    #[test]
    fn the_start_filter_answers_as_the_sort_tree() {
        let mut dd = Deadline::default();
        // Two start sectors in one bucket of the filter.
        let s1 = 8;
        let s2 = (2..)
            .map(|k| k * 8)
            .find(|&s| start_bucket(s) == start_bucket(s1))
            .unwrap();
        dd.sort_insert(0, (s1, 1), 7);
        assert_eq!(dd.first_starting_at(0, s1), Some(7));
        assert_eq!(
            dd.first_starting_at(0, s2),
            None,
            "same bucket, other sector"
        );
        assert_eq!(dd.first_starting_at(1, s1), None, "other direction");
        dd.sort_insert(0, (s1, 2), 8);
        assert_eq!(dd.first_starting_at(0, s1), Some(7), "the first inserted");
        dd.sort_remove(0, (s1, 1), None);
        assert_eq!(dd.first_starting_at(0, s1), Some(8));
        dd.sort_remove(0, (s1, 2), Some(0));
        assert_eq!(dd.first_starting_at(0, s1), None);
        assert!(dd.starts.iter().flatten().all(|&c| c == 0));
    }

    /// Past the last sequence number the trees are renumbered in their order: requests
    /// of equal start keep their insertion order, and the keys the requests hold still
    /// find them.
    #[test]
    fn sequence_numbers_wrap_without_reordering() {
        let mut dd = Deadline {
            rq: vec![DdRq::default(); 8],
            seq: u32::MAX - 2,
            ..Deadline::default()
        };
        for id in 0..8u32 {
            let d = (id % 2) as usize;
            let key = ((id as u64 / 4) * 8, dd.next_seq());
            dd.rq[id as usize].sort = key;
            dd.sort_insert(d, key, id);
        }
        assert!(dd.seq < 10, "renumbered: {}", dd.seq);
        // Direction 0 holds 0, 2 at sector 0 and 4, 6 at sector 8, in that order.
        let order = |dd: &Deadline, d: usize| dd.sort[d].v.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(order(&dd, 0), vec![0, 2, 4, 6]);
        assert_eq!(order(&dd, 1), vec![1, 3, 5, 7]);
        assert_eq!(dd.first_starting_at(0, 8), Some(4));
        for id in [2u32, 5, 0, 7] {
            let key = dd.rq[id as usize].sort;
            dd.sort_remove((id % 2) as usize, key, None);
        }
        assert_eq!(order(&dd, 0), vec![4, 6]);
        assert_eq!(order(&dd, 1), vec![1, 3]);
    }

    /// Requests merged, front-merged and dispatched leave every count of the filter at
    /// zero, and the FIFO's list empty.
    #[test]
    fn a_drained_scheduler_leaves_no_count_and_no_fifo_link() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 64, 64 * 1024);
        let mut io = 0;
        for round in 0..20u64 {
            for k in 0..10u64 {
                let sector = (k * 37 + round * 11) % 64 * 8;
                let dir = if k % 3 == 0 { Dir::Write } else { Dir::Read };
                io += 1;
                b.submit(round, bio(io, dir, sector, 8));
            }
            for _ in 0..7 {
                if let Some(id) = b.dispatch(round) {
                    let mut ios = Vec::new();
                    b.complete(round, id, &mut ios);
                }
            }
        }
        while let Some(id) = b.dispatch(100) {
            b.complete(100, id, &mut Vec::new());
        }
        assert!(b.merges > 0, "the mix merged");
        assert!(b.dd.starts.iter().flatten().all(|&c| c == 0));
        assert_eq!(b.dd.fifo, [(NO_REQ, NO_REQ); 2]);
        assert_eq!(b.dd.fifo_live, [0, 0]);
    }

    #[test]
    fn a_front_merge_re_sorts_the_request_after_equal_starts() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Read, 8, 8)); // Y [8,16), last_merge
        b.submit(0, bio(2, Dir::Read, 0, 16)); // X [0,16)
                                               // Front merge into Y (the cache): Y [0,16); its predecessor X ends at 16, not 0,
                                               // so Y is re-sorted at 0 after X, though Y arrived first.
        b.submit(0, bio(3, Dir::Read, 0, 8));
        assert_eq!(b.merges, 1);
        assert_eq!(
            drain(&mut b, 0),
            vec![(0, 16, vec![2]), (0, 16, vec![3, 1])]
        );
    }

    #[test]
    fn request_merges_only_with_the_sort_tree_neighbour() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 0, 8)); // R [0,8), last_merge
        b.submit(0, bio(2, Dir::Write, 16, 8)); // Q [16,24)
        b.submit(0, bio(3, Dir::Write, 8, 8)); // back into R, whose successor Q joins
        assert_eq!(b.merges, 2);
        assert_eq!(drain(&mut b, 0), vec![(0, 24, vec![1, 3, 2])]);
        // An overlapping request between them in sector order: R's successor is X,
        // which does not start at R's end, so R and Q stay apart.
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 0, 8)); // R
        b.submit(0, bio(2, Dir::Write, 4, 8)); // X [4,12)
        b.submit(0, bio(3, Dir::Write, 16, 8)); // Q
        b.submit(0, bio(4, Dir::Write, 8, 8)); // back into R (the cache)
        assert_eq!(b.merges, 1);
        assert_eq!(
            drain(&mut b, 0),
            vec![(0, 16, vec![1, 4]), (4, 8, vec![2]), (16, 8, vec![3])]
        );
        // After a front merge the predecessor absorbs the request.
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 16, 8)); // C [16,24), last_merge
        b.submit(0, bio(2, Dir::Write, 0, 8)); // B [0,8)
        b.submit(0, bio(3, Dir::Write, 8, 8)); // front into C, then B absorbs C
        assert_eq!(drain(&mut b, 0), vec![(0, 24, vec![2, 3, 1])]);
    }

    #[test]
    fn a_bio_too_large_for_its_candidate_marks_it_nomerge() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 16 * 512);
        b.submit(0, bio(1, Dir::Read, 0, 12)); // R [0,12)
        b.submit(0, bio(2, Dir::Read, 12, 8)); // 20 > 16: a request of its own
                                               // R is REQ_NOMERGE now: a 4-sector bio that would fit gets a request too.
        b.submit(0, bio(3, Dir::Read, 12, 4));
        assert_eq!(b.merges, 0);
        assert_eq!(
            drain(&mut b, 0),
            vec![(0, 12, vec![1]), (12, 8, vec![2]), (12, 4, vec![3])]
        );
    }

    #[test]
    fn an_expired_fifo_head_goes_first_and_a_merge_inherits_the_older_place() {
        let s = 1_000_000_000;
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        let w = |io, sector| bio(io, Dir::Write, sector, 8);
        b.submit(0, w(1, 116)); // C, oldest, last_merge
        b.submit(1, w(2, 200)); // D
        b.submit(2, w(3, 100)); // B
        b.submit(3, w(4, 0)); // L, lowest sector
                              // Front merge into C [108,124); B [100,108) absorbs it and takes C's FIFO place.
        b.submit(4, w(5, 108));
        assert_eq!(b.queued_len(), 3);
        // Deadlines expired (write 5 s): the batch starts at the FIFO head, B, then
        // continues in sector order, then wraps to the FIFO head.
        assert_eq!(
            drain(&mut b, 6 * s),
            vec![(100, 24, vec![3, 5, 1]), (200, 8, vec![2]), (0, 8, vec![4]),]
        );
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, w(1, 300));
        b.submit(1, w(2, 100));
        b.submit(2, w(3, 200));
        // Not expired: sector order from the last dispatch (0).
        assert_eq!(b.dispatch(s).map(|id| b.req(id).sector), Some(100));
        // A new batch after fifo_batch dispatches would check the FIFO; here the batch
        // goes on in sector order.
        assert_eq!(b.dispatch(6 * s).map(|id| b.req(id).sector), Some(200));
        assert_eq!(b.dispatch(6 * s).map(|id| b.req(id).sector), Some(300));
    }

    #[test]
    fn deadline_prefers_reads_and_sector_order() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.submit(0, bio(1, Dir::Write, 0, 8));
        b.submit(0, bio(2, Dir::Read, 300, 8));
        b.submit(0, bio(3, Dir::Read, 100, 8));
        let order: Vec<u64> =
            std::iter::from_fn(|| b.dispatch(10).map(|id| b.req(id).sector)).collect();
        assert_eq!(order, vec![100, 300, 0]);
    }
}
