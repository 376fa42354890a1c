//! The block layer (blk-mq with one hardware queue, as MMC has): bios are split at
//! max_sectors_kb, merged into a queued request when contiguous (back and front merge,
//! then request-to-request), held by the scheduler, and handed to the driver one at a
//! time when it asks. Tags bound the requests alive (nr_requests); a bio that finds none
//! waits for one, as its submitter would sleep in `blk_mq_get_tag`.
//!
//! Schedulers: `none` dispatches in arrival order; `mq-deadline` dispatches reads before
//! writes (unless writes were passed over `writes_starved` times), in sector order from
//! the last dispatch in batches of `fifo_batch`, and the oldest request first once its
//! deadline (read 500 ms, write 5 s) has expired.
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

use super::Scheduler;
use crate::engine::SimTime;
use crate::workload::Dir;

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

pub struct BlockLayer {
    sched: Scheduler,
    nr_requests: u32,
    max_sectors: u32,
    /// The queue's max_discard_sectors (0: the device takes no discards).
    max_discard_sectors: u32,
    reqs: Vec<Request>,
    free: Vec<ReqId>,
    /// Requests in the scheduler, in arrival order.
    queued: Vec<ReqId>,
    /// Flush requests, dispatched before the scheduler's requests.
    flushes: std::collections::VecDeque<ReqId>,
    flush_in_flight: bool,
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
            reqs: Vec::with_capacity(nr_requests as usize),
            free: Vec::new(),
            queued: Vec::with_capacity(nr_requests as usize),
            flushes: std::collections::VecDeque::new(),
            flush_in_flight: false,
            tag_wait: std::collections::VecDeque::new(),
            tags_used: 0,
            last_start: [0, 0],
            batch_left: 0,
            batch_dir: Dir::Read,
            starved: 0,
            merges: 0,
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

    /// Requests waiting in the scheduler.
    pub fn queued_len(&self) -> usize {
        self.queued.len() + self.flushes.len()
    }
    /// Bios waiting for a tag.
    pub fn tag_waiters(&self) -> usize {
        self.tag_wait.len()
    }
    pub fn has_queued(&self) -> bool {
        !self.queued.is_empty() || (!self.flushes.is_empty() && !self.flush_in_flight)
    }

    /// Tries to merge `bio` into a queued request; true if it did. With an elevator
    /// any queued request is a candidate (elv_merge); without one, blk-mq only looks at
    /// the last `SW_QUEUE_MERGE_SCAN` requests of the submitting CPU's software queue
    /// (blk_mq_bio_list_merge), so bios from threads on other CPUs do not merge.
    fn try_merge(&mut self, bio: &Bio) -> bool {
        let max = self.limit(bio.discard);
        let mut hit = None;
        let per_cpu = self.sched == Scheduler::None;
        let mut scanned = 0;
        for (i, &id) in self.queued.iter().enumerate().rev() {
            let r = &self.reqs[id as usize];
            if per_cpu {
                if r.cpu != bio.cpu {
                    continue;
                }
                scanned += 1;
                if scanned > SW_QUEUE_MERGE_SCAN {
                    break;
                }
            }
            if r.dir != Some(bio.dir) || r.discard != bio.discard || r.sectors + bio.sectors > max {
                continue;
            }
            if r.end() == bio.sector {
                hit = Some((i, true));
                break;
            }
            if bio.sector + bio.sectors as u64 == r.sector {
                hit = Some((i, false));
                break;
            }
        }
        let Some((i, back)) = hit else {
            return false;
        };
        let id = self.queued[i];
        {
            let r = &mut self.reqs[id as usize];
            r.sectors += bio.sectors;
            if back {
                r.bios.push(bio.io);
            } else {
                r.sector = bio.sector;
                r.bios.insert(0, bio.io);
            }
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
        if per_cpu {
            // blk-mq's software queues do not merge requests with each other.
            return true;
        }
        // The grown request may now touch a neighbour: merge the two (attempt_*_merge).
        let (s, e, dir, discard) = {
            let r = &self.reqs[id as usize];
            (r.sector, r.end(), r.dir, r.discard)
        };
        let sectors = self.reqs[id as usize].sectors;
        if let Some(j) = self.queued.iter().position(|&o| {
            let q = &self.reqs[o as usize];
            o != id
                && q.dir == dir
                && q.discard == discard
                && q.sectors + sectors <= max
                && (q.sector == e || q.end() == s)
        }) {
            let other = self.queued.remove(j);
            let o = std::mem::take(&mut self.reqs[other as usize]);
            let r = &mut self.reqs[id as usize];
            if o.sector == e {
                r.bios.extend_from_slice(&o.bios);
            } else {
                r.sector = o.sector;
                let mut v = o.bios.clone();
                v.extend_from_slice(&r.bios);
                r.bios = v;
            }
            r.sectors += o.sectors;
            if o.queued_at < r.queued_at {
                // The merged request's life began with the older of the two: its
                // allocation (G), insertion (I) and the Q of the bio that allocated it.
                r.queued_at = o.queued_at;
                r.got_at = o.got_at;
                r.bio_queued_at = o.bio_queued_at;
            }
            self.release(other, o.bios);
            self.merges += 1;
            // blk_account_io_merge: the merged-away request leaves flight.
            self.in_flight -= 1;
        }
        true
    }

    fn release(&mut self, id: ReqId, mut bios: Vec<u32>) {
        bios.clear();
        self.reqs[id as usize].bios = bios;
        self.reqs[id as usize].dir = None;
        self.reqs[id as usize].flush = false;
        self.reqs[id as usize].discard = false;
        self.free.push(id);
        self.tags_used -= 1;
    }

    fn new_request(&mut self, now: SimTime, bio: &Bio) -> ReqId {
        self.tags_used += 1;
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.reqs.push(Request::default());
                (self.reqs.len() - 1) as ReqId
            }
        };
        if self.in_flight == 0 {
            self.busy_since = now;
        }
        self.in_flight += 1;
        let r = &mut self.reqs[id as usize];
        r.dir = Some(bio.dir);
        r.sector = bio.sector;
        r.sectors = bio.sectors;
        r.cpu = bio.cpu;
        r.bios.clear();
        r.bios.push(bio.io);
        r.bio_queued_at = bio.queued_at;
        r.got_at = now;
        r.queued_at = now;
        r.dispatched_at = 0;
        r.hw_at = SimTime::MAX;
        r.irq_at = SimTime::MAX;
        r.flush = false;
        r.discard = bio.discard;
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
            },
        );
        self.reqs[id as usize].flush = true;
        self.flushes.push_back(id);
    }

    /// Submits a bio (already split to at most max_sectors). Returns false if it had to
    /// wait for a tag.
    pub fn submit(&mut self, now: SimTime, bio: Bio) -> bool {
        assert!(bio.sectors > 0 && bio.sectors <= self.limit(bio.discard));
        if self.try_merge(&bio) {
            return true;
        }
        if self.tags_used >= self.nr_requests {
            self.tag_wait.push_back(bio);
            return false;
        }
        let id = self.new_request(now, &bio);
        self.queued.push(id);
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
        if self.queued.is_empty() {
            return None;
        }
        let idx = match self.sched {
            Scheduler::None => 0,
            Scheduler::MqDeadline => self.deadline_pick(now),
        };
        let id = self.queued.remove(idx);
        let r = &mut self.reqs[id as usize];
        r.dispatched_at = now;
        self.last_start[r.dir().index()] = r.sector;
        self.requests_dispatched += 1;
        Some(id)
    }

    fn oldest(&self, dir: Dir) -> Option<usize> {
        // `queued` is in arrival order, so the first of a direction is its FIFO head.
        self.queued
            .iter()
            .position(|&id| self.reqs[id as usize].dir == Some(dir))
    }

    fn deadline_pick(&mut self, now: SimTime) -> usize {
        let has_read = self.oldest(Dir::Read);
        let has_write = self.oldest(Dir::Write);
        // Continue the current batch in sector order if possible.
        let dir = if self.batch_left > 0
            && match self.batch_dir {
                Dir::Read => has_read.is_some(),
                Dir::Write => has_write.is_some(),
            } {
            self.batch_left -= 1;
            self.batch_dir
        } else {
            let d = match (has_read, has_write) {
                (Some(_), Some(_)) => {
                    if self.starved >= WRITES_STARVED {
                        self.starved = 0;
                        Dir::Write
                    } else {
                        self.starved += 1;
                        Dir::Read
                    }
                }
                (Some(_), None) => Dir::Read,
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
            if self.reqs[self.queued[head] as usize].queued_at + expire <= now {
                return head;
            }
            d
        };
        // Sector order: mq-deadline's next_rq is the successor of the last dispatched
        // request in its sector-sorted tree, where a request equal in sector to another
        // sorts after it. So: the lowest sector at or after the last dispatched start,
        // the earliest arrival among equals; none left above it → the FIFO head.
        let pos = self.last_start[dir.index()];
        let mut best: Option<(u64, usize)> = None;
        for (i, &id) in self.queued.iter().enumerate() {
            let r = &self.reqs[id as usize];
            if r.dir == Some(dir) && r.sector >= pos && best.is_none_or(|(s, _)| r.sector < s) {
                best = Some((r.sector, i));
            }
        }
        match best {
            Some((_, i)) => i,
            None => self.oldest(dir).expect("direction has a request"),
        }
    }

    /// The driver finished `id`: frees its tag and returns its I/Os. Bios that waited
    /// for a tag are admitted; `admitted` receives how many were.
    pub fn complete(&mut self, now: SimTime, id: ReqId, ios: &mut Vec<u32>) -> usize {
        let r = &self.reqs[id as usize];
        if r.flush {
            self.flush_in_flight = false;
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
        ios.extend_from_slice(&bios);
        self.release(id, bios);
        let mut admitted = 0;
        while self.tags_used < self.nr_requests {
            let Some(bio) = self.tag_wait.pop_front() else {
                break;
            };
            if !self.try_merge(&bio) {
                let id = self.new_request(now, &bio);
                self.queued.push(id);
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
