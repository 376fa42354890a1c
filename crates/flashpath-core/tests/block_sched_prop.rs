//! Property test of the block layer's schedulers against a linear reference.
//!
//! `BlockLayer` keeps mq-deadline's requests in ordered indexes (sort trees, FIFOs, an
//! end-sector hash, the one-hit cache) and `none`'s in per-CPU lists. The reference
//! below applies the same rules (host/block.rs module doc: Linux 5.4's elv_merge order,
//! attempt_back/front_merge on sort-tree neighbours, REQ_NOMERGE, insert merges, FIFO
//! inheritance; none's last-8-of-this-CPU scan) by scanning one list of requests, as
//! the block layer did before it had indexes. Random submit/dispatch/complete sequences,
//! on a tiny sector range with small size limits and few tags so that overlaps, size
//! failures, tag waits and expired deadlines are frequent, must give the same
//! dispatched requests (sector, sectors, bios), the same completions and admissions,
//! and the same merge counts.
use flashpath_core::host::block::{Bio, BlockLayer, ReqId};
use flashpath_core::host::Scheduler;
use flashpath_core::workload::Dir;
use proptest::prelude::*;
use std::collections::VecDeque;

const MAX_SECTORS: u32 = 16;
const MAX_DISCARD: u32 = 24;
const NR_REQUESTS: u32 = 6;
const READ_EXPIRE: u64 = 500_000_000;
const WRITE_EXPIRE: u64 = 5_000_000_000;
const FIFO_BATCH: u32 = 16;
const WRITES_STARVED: u32 = 2;
const SW_QUEUE_MERGE_SCAN: usize = 8;

#[derive(Clone, Debug)]
struct RReq {
    dir: Dir,
    discard: bool,
    cpu: u32,
    sector: u64,
    sectors: u32,
    bios: Vec<u32>,
    queued_at: u64,
    nomerge: bool,
    /// (start when sorted, sequence)
    sort: (u64, u64),
    fifo: u64,
    /// Sequence of the last hashing.
    hash: u64,
    /// Unique (never reused) name, for `last_merge`.
    name: u64,
    /// In the scheduler (false: a new request before its insertion).
    inserted: bool,
}

impl RReq {
    fn end(&self) -> u64 {
        self.sector + self.sectors as u64
    }
}

/// The reference: one list of queued requests, every lookup a scan.
struct Reference {
    deadline: bool,
    queued: Vec<RReq>,
    tag_wait: VecDeque<Bio>,
    tags_used: u32,
    last_merge: Option<u64>,
    seq: u64,
    names: u64,
    last_start: [u64; 2],
    batch_left: u32,
    batch_dir: Dir,
    starved: u32,
    merges: u64,
    bio_merges: [u64; 2],
}

impl Reference {
    fn new(deadline: bool) -> Self {
        Reference {
            deadline,
            queued: Vec::new(),
            tag_wait: VecDeque::new(),
            tags_used: 0,
            last_merge: None,
            seq: 0,
            names: 0,
            last_start: [0, 0],
            batch_left: 0,
            batch_dir: Dir::Read,
            starved: 0,
            merges: 0,
            bio_merges: [0, 0],
        }
    }

    fn seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
    fn limit(discard: bool) -> u32 {
        if discard {
            MAX_DISCARD
        } else {
            MAX_SECTORS
        }
    }
    fn at(&self, name: u64) -> usize {
        self.queued.iter().position(|r| r.name == name).unwrap()
    }
    fn ok(r: &RReq, b: &Bio) -> bool {
        !r.nomerge && r.dir == b.dir && r.discard == b.discard
    }

    fn bio_merge(&mut self, i: usize, b: &Bio, back: bool) {
        let r = &mut self.queued[i];
        r.sectors += b.sectors;
        if back {
            r.bios.push(b.io);
        } else {
            r.sector = b.sector;
            r.bios.insert(0, b.io);
        }
        self.merges += 1;
        self.bio_merges[b.dir.index()] += 1;
    }

    fn try_merge(&mut self, b: &Bio) -> bool {
        if !self.deadline {
            // The last 8 requests of this CPU, newest first.
            let mine: Vec<usize> = (0..self.queued.len())
                .rev()
                .filter(|&i| self.queued[i].cpu == b.cpu)
                .take(SW_QUEUE_MERGE_SCAN)
                .collect();
            for i in mine {
                let r = &self.queued[i];
                if r.nomerge
                    || r.dir != b.dir
                    || r.discard != b.discard
                    || r.sectors + b.sectors > Self::limit(b.discard)
                {
                    continue;
                }
                if r.end() == b.sector {
                    self.bio_merge(i, b, true);
                    return true;
                }
                if b.sector + b.sectors as u64 == r.sector {
                    self.bio_merge(i, b, false);
                    return true;
                }
            }
            return false;
        }
        let end = b.sector + b.sectors as u64;
        let mut hit = None;
        if let Some(l) = self.last_merge {
            let r = &self.queued[self.at(l)];
            if Self::ok(r, b) {
                if r.end() == b.sector {
                    hit = Some((l, true));
                } else if r.sector == end {
                    hit = Some((l, false));
                }
            }
        }
        if hit.is_none() {
            let h = self
                .queued
                .iter()
                .filter(|r| r.inserted && !r.nomerge && r.end() == b.sector)
                .max_by_key(|r| r.hash);
            if let Some(r) = h.filter(|r| Self::ok(r, b)) {
                hit = Some((r.name, true));
            }
        }
        if hit.is_none() {
            let f = self
                .queued
                .iter()
                .filter(|r| r.inserted && r.dir == b.dir && r.sector == end)
                .min_by_key(|r| r.sort);
            if let Some(r) = f.filter(|r| Self::ok(r, b)) {
                hit = Some((r.name, false));
            }
        }
        let Some((name, back)) = hit else {
            return false;
        };
        let i = self.at(name);
        if self.queued[i].sectors + b.sectors > Self::limit(b.discard) {
            self.queued[i].nomerge = true;
            if self.last_merge == Some(name) {
                self.last_merge = None;
            }
            return false;
        }
        self.bio_merge(i, b, back);
        let (dir, key) = (self.queued[i].dir, self.queued[i].sort);
        let sorted = self.queued.iter().filter(|r| r.inserted && r.dir == dir);
        if back {
            let next = sorted.filter(|r| r.sort > key).min_by_key(|r| r.sort);
            let next = next.map(|r| r.name);
            if !next.is_some_and(|n| self.attempt_merge(name, n)) {
                let s = self.seq();
                self.queued[i].hash = s;
                self.last_merge = Some(name);
            }
        } else {
            let prev = sorted.filter(|r| r.sort < key).max_by_key(|r| r.sort);
            let prev = prev.map(|r| r.name);
            if !prev.is_some_and(|p| self.attempt_merge(p, name)) {
                let s = self.seq();
                let i = self.at(name);
                self.queued[i].sort = (self.queued[i].sector, s);
                self.last_merge = Some(name);
            }
        }
        true
    }

    fn attempt_merge(&mut self, req: u64, next: u64) -> bool {
        let (ri, ni) = (self.at(req), self.at(next));
        let (r, n) = (&self.queued[ri], &self.queued[ni]);
        if r.nomerge
            || n.nomerge
            || r.dir != n.dir
            || r.discard != n.discard
            || r.end() != n.sector
            || r.sectors + n.sectors > Self::limit(r.discard)
        {
            return false;
        }
        let n = self.queued.remove(ni);
        if self.last_merge == Some(next) {
            self.last_merge = None;
        }
        let s = self.seq();
        let ri = self.at(req);
        let r = &mut self.queued[ri];
        if n.queued_at < r.queued_at {
            if n.inserted {
                r.fifo = n.fifo;
            }
            r.queued_at = n.queued_at;
        }
        r.bios.extend_from_slice(&n.bios);
        r.sectors += n.sectors;
        r.hash = s;
        self.last_merge = Some(req);
        self.merges += 1;
        self.tags_used -= 1;
        true
    }

    fn new_request(&mut self, now: u64, b: &Bio) {
        self.tags_used += 1;
        self.names += 1;
        let name = self.names;
        self.queued.push(RReq {
            dir: b.dir,
            discard: b.discard,
            cpu: b.cpu,
            sector: b.sector,
            sectors: b.sectors,
            bios: vec![b.io],
            queued_at: now,
            // A bio split off the front of a larger one: REQ_NOMERGE from the start.
            nomerge: b.nomerge,
            sort: (0, 0),
            fifo: 0,
            hash: 0,
            name,
            inserted: false,
        });
        if !self.deadline {
            self.queued.last_mut().unwrap().inserted = true;
            return;
        }
        // elv_attempt_insert_merge.
        if let Some(l) = self.last_merge {
            if self.attempt_merge(l, name) {
                return;
            }
        }
        let mut rq = name;
        let mut merged = false;
        loop {
            let start = self.queued[self.at(rq)].sector;
            let h = self
                .queued
                .iter()
                .filter(|r| r.inserted && !r.nomerge && r.end() == start)
                .max_by_key(|r| r.hash)
                .map(|r| r.name);
            match h {
                Some(h) if self.attempt_merge(h, rq) => {
                    merged = true;
                    rq = h;
                }
                _ => break,
            }
        }
        if merged {
            return;
        }
        let (s1, s2, s3) = (self.seq(), self.seq(), self.seq());
        let i = self.at(name);
        let r = &mut self.queued[i];
        r.sort = (r.sector, s1);
        r.hash = s2;
        r.fifo = s3;
        r.inserted = true;
        // Only a mergeable request becomes the one-hit cache (and is hashed).
        if self.last_merge.is_none() && !r.nomerge {
            self.last_merge = Some(name);
        }
    }

    fn submit(&mut self, now: u64, b: Bio) -> bool {
        if !b.nomerge && self.try_merge(&b) {
            return true;
        }
        if self.tags_used >= NR_REQUESTS {
            self.tag_wait.push_back(b);
            return false;
        }
        self.new_request(now, &b);
        true
    }

    fn fifo_head(&self, dir: Dir) -> Option<usize> {
        (0..self.queued.len())
            .filter(|&i| self.queued[i].dir == dir)
            .min_by_key(|&i| self.queued[i].fifo)
    }

    fn pick(&mut self, now: u64) -> usize {
        if !self.deadline {
            return 0;
        }
        let has = |d: Dir| self.queued.iter().any(|r| r.dir == d);
        let (has_read, has_write) = (has(Dir::Read), has(Dir::Write));
        let batch_on = match self.batch_dir {
            Dir::Read => has_read,
            Dir::Write => has_write,
        };
        let dir = if self.batch_left > 0 && batch_on {
            self.batch_left -= 1;
            self.batch_dir
        } else {
            let d = if has_read && has_write {
                if self.starved >= WRITES_STARVED {
                    self.starved = 0;
                    Dir::Write
                } else {
                    self.starved += 1;
                    Dir::Read
                }
            } else if has_read {
                Dir::Read
            } else {
                Dir::Write
            };
            self.batch_dir = d;
            self.batch_left = FIFO_BATCH - 1;
            let head = self.fifo_head(d).unwrap();
            let expire = if d == Dir::Read {
                READ_EXPIRE
            } else {
                WRITE_EXPIRE
            };
            if self.queued[head].queued_at + expire <= now {
                return head;
            }
            d
        };
        let pos = self.last_start[dir.index()];
        (0..self.queued.len())
            .filter(|&i| self.queued[i].dir == dir && self.queued[i].sector >= pos)
            .min_by_key(|&i| self.queued[i].sort)
            .or_else(|| self.fifo_head(dir))
            .unwrap()
    }

    fn dispatch(&mut self, now: u64) -> Option<RReq> {
        if self.queued.is_empty() {
            return None;
        }
        let i = self.pick(now);
        let r = self.queued.remove(i);
        if self.last_merge == Some(r.name) {
            self.last_merge = None;
        }
        self.last_start[r.dir.index()] = r.sector;
        Some(r)
    }

    fn complete(&mut self, now: u64, r: RReq, ios: &mut Vec<u32>) -> usize {
        ios.extend_from_slice(&r.bios);
        self.tags_used -= 1;
        let mut admitted = 0;
        while self.tags_used < NR_REQUESTS {
            let Some(b) = self.tag_wait.pop_front() else {
                break;
            };
            if b.nomerge || !self.try_merge(&b) {
                self.new_request(now, &b);
            }
            admitted += 1;
        }
        admitted
    }
}

#[derive(Clone, Debug)]
enum Op {
    Submit {
        dt: u64,
        write: bool,
        discard: bool,
        /// Split off the front of a larger bio (REQ_NOMERGE).
        nomerge: bool,
        sector: u64,
        sectors: u32,
        cpu: u32,
    },
    Dispatch {
        dt: u64,
    },
    Complete {
        dt: u64,
        k: usize,
    },
}

fn dt() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => Just(0u64),
        3 => 1..1_000_000u64,
        // Past the read (0.5 s) and sometimes the write (5 s) deadline.
        1 => 100_000_000..3_000_000_000u64,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (dt(), any::<bool>(), 0..5u32, 0..12u64, 1..4u32, 0..3u32).prop_map(
            |(dt, write, d, sector, n, cpu)| Op::Submit {
                dt,
                write,
                discard: write && d == 0,
                // blk_queue_split marks only read and write pieces.
                nomerge: d == 4,
                // Starts on 4-sector boundaries of a 48-sector range; 4, 8 or 12
                // sectors: overlaps, equal starts and equal ends are common.
                sector: sector * 4,
                sectors: n * 4,
                cpu,
            }
        ),
        3 => dt().prop_map(|dt| Op::Dispatch { dt }),
        3 => (dt(), 0..8usize).prop_map(|(dt, k)| Op::Complete { dt, k }),
    ]
}

fn run(sched: Scheduler, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut b = BlockLayer::new(sched, NR_REQUESTS, MAX_SECTORS as u64 * 512);
    b.set_max_discard_sectors(MAX_DISCARD);
    let mut r = Reference::new(sched == Scheduler::MqDeadline);
    let mut now = 0u64;
    let mut io = 0u32;
    // Dispatched, not completed: the block layer's id and the reference's request.
    let mut flight: Vec<(ReqId, RReq)> = Vec::new();
    for op in ops {
        match *op {
            Op::Submit {
                dt,
                write,
                discard,
                nomerge,
                sector,
                sectors,
                cpu,
            } => {
                now += dt;
                io += 1;
                let bio = Bio {
                    io,
                    dir: if write { Dir::Write } else { Dir::Read },
                    sector,
                    sectors,
                    cpu,
                    queued_at: now,
                    discard,
                    nomerge,
                };
                prop_assert_eq!(b.submit(now, bio), r.submit(now, bio), "submit {:?}", bio);
            }
            Op::Dispatch { dt } => {
                now += dt;
                let got = b.dispatch(now);
                let want = r.dispatch(now);
                match (got, want) {
                    (None, None) => {}
                    (Some(id), Some(w)) => {
                        let q = b.req(id);
                        prop_assert_eq!(
                            (q.sector, q.sectors, &q.bios, q.discard),
                            (w.sector, w.sectors, &w.bios, w.discard),
                            "dispatch at {}",
                            now
                        );
                        prop_assert_eq!(q.queued_at, w.queued_at);
                        flight.push((id, w));
                    }
                    (g, w) => prop_assert!(false, "dispatch: {:?} vs {:?}", g, w),
                }
            }
            Op::Complete { dt, k } => {
                now += dt;
                if flight.is_empty() {
                    continue;
                }
                let (id, w) = flight.remove(k % flight.len());
                let (mut got, mut want) = (Vec::new(), Vec::new());
                let a = b.complete(now, id, &mut got);
                let e = r.complete(now, w, &mut want);
                prop_assert_eq!((a, got), (e, want));
            }
        }
        prop_assert_eq!(b.queued_len(), r.queued.len());
        prop_assert_eq!(b.tag_waiters(), r.tag_wait.len());
        prop_assert_eq!(b.merges, r.merges);
        prop_assert_eq!(b.disk_stats(now).merges, r.bio_merges);
    }
    // Drain: everything left comes out in the same order.
    loop {
        now += 1_000;
        let (got, want) = (b.dispatch(now), r.dispatch(now));
        match (got, want) {
            (None, None) => break,
            (Some(id), Some(w)) => {
                let q = b.req(id);
                prop_assert_eq!(
                    (q.sector, q.sectors, &q.bios),
                    (w.sector, w.sectors, &w.bios)
                );
            }
            (g, w) => prop_assert!(false, "drain: {:?} vs {:?}", g, w),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn mq_deadline_matches_the_linear_reference(ops in prop::collection::vec(op(), 1..300)) {
        run(Scheduler::MqDeadline, &ops)?;
    }

    #[test]
    fn none_matches_the_linear_reference(ops in prop::collection::vec(op(), 1..300)) {
        run(Scheduler::None, &ops)?;
    }
}
