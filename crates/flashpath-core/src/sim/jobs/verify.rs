//! fio's verify (verify.c, iolog.c, io_u.c, backend.c of fio 3.33), as a real check of
//! what the simulated device returns.
//!
//! The data a job writes is a content tag per 4 KiB block: a 32-bit digest of what
//! fio's verify header carries (the job's seed, the write's number `numberio`, the
//! block's offset). The device keeps the tag with the physical location of the data
//! (`device::content`) and a read returns the tags of what it really read, so a verify
//! read compares what the device gave back with what fio expects.
//!
//! ```text
//!  write I/O ─▶ log_io_piece (list in write order; sorted by offset, overlaps dropped,
//!               when the job has no random map) ─▶ device write: tags staged per 4 KiB
//!  verify read ◀─ get_next_verify (oldest piece; waits while its write is in flight)
//!     └─ reaped: per verify_interval, header block then data blocks compared
//!        (verify_header's checks in fio's order, then the checksum), CPU cost booked
//!        on the reaping core; the first failure ends the job (td->error = EILSEQ)
//! ```
//!
//! Phases, as fio runs them: the write phase (`do_io`), with `verify_backlog` a batch
//! of `verify_backlog_batch` verify reads each time `verify_backlog` pieces are logged
//! (`check_get_verify`); then, once every write has completed, the verify phase
//! (`do_verify`) reads the rest of the pieces in order. With `verify_only` the write
//! phase is a dry run (`do_dry_run`): pieces are logged, nothing is written.
//! Verify reads are ordinary reads in the job's statistics.
//!
//! A failure is EILSEQ: whether it ends the job or is counted and passed over
//! (continue_on_error) is sim/jobs/errors.rs; with verify_async the reads are checked on
//! the job's verify threads (sim/jobs/verify_async.rs).
//!
//! Leaves out: the fsync and cache invalidation fio does before its verify phase
//! (`fio_io_sync`), trim verification, verify_state files.
//! Units: bytes, 4 KiB blocks.

use std::collections::{BTreeMap, VecDeque};

use crate::device::content::{ERASED, UNWRITTEN};
pub use crate::workload::verify_algo::{default_cost_per_4k_ns, VerifyAlgo, VerifyConfig};
use crate::workload::{Dir, IoSource, IoSpec};

/// How a verify read failed, as fio reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// verify_header: the magic is not fio's (`found`: the 16-bit magic read; 0 for
    /// zeroes, ffff for erased flash).
    BadMagic {
        found: u16,
    },
    BadNumberio {
        found: u16,
        wanted: u16,
    },
    BadSeed {
        found: u64,
        wanted: u64,
    },
    /// The header is right but the data under it is not (`<algo>: verify failed`).
    Checksum,
}

/// The first verify failure of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyFailure {
    pub kind: FailureKind,
    pub algo: VerifyAlgo,
    /// The failing header's offset and length (fio's `offset`, `length`).
    pub offset: u64,
    pub len: u64,
    /// The verify read (fio's "requested block").
    pub req_offset: u64,
    pub req_len: u64,
    /// The job submits asynchronously (fio reaps in io_u_queued_complete).
    pub async_reap: bool,
    /// A verify_async thread found it (verify_async_thread's td_verror).
    pub verify_thread: bool,
}

impl VerifyFailure {
    /// fio's message for it (verify.c verify_header / log_verify_failure), naming
    /// `file`. fio prints it on standard error.
    pub fn message(&self, file: &str) -> String {
        let tail = format!(
            " at file {file} offset {}, length {} (requested block: offset={}, length={})",
            self.offset, self.len, self.req_offset, self.req_len
        );
        match &self.kind {
            FailureKind::BadMagic { found } => {
                format!("verify: bad magic header {found:x}, wanted acca{tail}")
            }
            FailureKind::BadNumberio { found, wanted } => {
                format!("verify: bad header numberio {found}, wanted {wanted}{tail}")
            }
            FailureKind::BadSeed { found, wanted } => {
                format!("verify: bad header rand_seed {found}, wanted {wanted}{tail}")
            }
            FailureKind::Checksum => {
                // IO_U_F_VER_LIST | IO_U_F_IN_CUR_DEPTH, as fio prints them for a read
                // from its verify list.
                format!(
                    "{}: verify failed at file {file} offset {}, length {} (requested block: offset={}, length={}, flags=88)",
                    self.algo.name(),
                    self.offset,
                    self.len,
                    self.req_offset,
                    self.req_len
                )
            }
        }
    }

    /// fio's `verror` for the job (`err=84 (<this>)`): where the error was seen.
    pub fn verror(&self) -> &'static str {
        if self.verify_thread {
            "file:verify.c:1441, func=async_verify, error=Invalid or incomplete multibyte or wide character"
        } else if self.async_reap {
            "file:io_u.c:2190, func=io_u_queued_complete, error=Invalid or incomplete multibyte or wide character"
        } else {
            "file:io_u.c:2152, func=io_u_sync_complete, error=Invalid or incomplete multibyte or wide character"
        }
    }
}

/// EILSEQ: fio's error for a verify failure.
pub use crate::sim::errors::EILSEQ;

/// The content tag of 4 KiB block `lpn` written by write `numberio` of the job with
/// `seed`: never `UNWRITTEN` or `ERASED`.
pub fn content_tag(seed: u32, numberio: u32, lpn: u64) -> u32 {
    let mut x = ((seed as u64) << 32 | numberio as u64) ^ lpn.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    let t = (x ^ (x >> 32)) as u32;
    if t == UNWRITTEN || t == ERASED {
        1
    } else {
        t
    }
}

/// fio's per-write rand_seed, as printed in a rand_seed mismatch.
fn write_seed(seed: u32, numberio: u32) -> u64 {
    let mut x = (seed as u64) << 32 | numberio as u64;
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

/// numberio of the writes of jobs the host does not follow (content of no verify job).
pub const UNTRACKED_NUMBERIO: u32 = u32::MAX;

/// The numberio of pattern data (verify=pattern: no write identity).
const PATTERN_NUMBERIO: u32 = u32::MAX - 1;

/// The most decode attempts (tag digests) a job spends naming stale data.
const DECODE_BUDGET: u64 = 1 << 24;

#[derive(Clone, Copy, Debug)]
struct Piece {
    offset: u64,
    len: u64,
    numberio: u32,
    in_flight: bool,
}

/// A verify read in flight: what it checks and what the device returned so far.
struct Reading {
    piece: Piece,
    tags: Vec<u32>,
}

/// One job's verify state.
pub(crate) struct JobVerify {
    pub cfg: VerifyConfig,
    seed: u32,
    /// No random map: pieces sorted by offset, overlaps dropped (fio's rb-tree).
    sorted: bool,
    list: VecDeque<Piece>,
    tree: BTreeMap<u64, Piece>,
    /// Writes issued (the next write's numberio).
    writes: u32,
    /// Writes in flight: io id -> (offset, numberio).
    writing: BTreeMap<u32, (u64, u32)>,
    /// The verify batch under way (fio's td->verify_batch).
    batch: u64,
    /// The last I/O taken was a read (fio's td->last_ddir).
    last_read: bool,
    /// The verify phase has begun.
    verifying: bool,
    /// verify_only: the dry run is done.
    dry_run_done: bool,
    pub failure: Option<VerifyFailure>,
    decode_left: u64,
    /// The write the last decoded tag came from: the next block read is most likely
    /// from it or a neighbour (`decode_near`).
    last_decoded: Option<(u32, u32)>,
    async_reap: bool,
    /// The verify phases so far (do_verify after each run): (start, end; None while
    /// under way).
    verify_phases: Vec<(crate::engine::SimTime, Option<crate::engine::SimTime>)>,
    /// The job only reads: every read is verified.
    read_only: bool,
    /// Bytes of the verify reads issued (they count in fio's io_bytes, which
    /// keep_running compares with io_size).
    verify_bytes: u64,
    /// verify_only: writes the dry runs after the first counted as issued, not yet
    /// booked in the job's stats (I/Os, bytes).
    dry_pending: (u64, u64),
}

/// What the job does next.
pub(crate) enum Next {
    /// An I/O; `verify`: a verify read, of the write with this numberio.
    Io {
        spec: IoSpec,
        verify: Option<u32>,
    },
    /// Nothing now: a write it must verify next is in flight, or the write phase's
    /// I/O must finish before the verify phase.
    Wait,
    Done,
}

impl JobVerify {
    pub fn new(
        cfg: VerifyConfig,
        seed: u64,
        randommap: bool,
        async_reap: bool,
        read_only: bool,
    ) -> Self {
        JobVerify {
            cfg,
            seed: (seed ^ (seed >> 32)) as u32,
            sorted: !randommap,
            list: VecDeque::new(),
            tree: BTreeMap::new(),
            writes: 0,
            writing: BTreeMap::new(),
            batch: 0,
            last_read: false,
            verifying: false,
            dry_run_done: false,
            failure: None,
            decode_left: DECODE_BUDGET,
            last_decoded: None,
            async_reap,
            verify_phases: Vec::new(),
            read_only,
            verify_bytes: 0,
            dry_pending: (0, 0),
        }
    }

    fn hist_len(&self) -> usize {
        if self.sorted {
            self.tree.len()
        } else {
            self.list.len()
        }
    }

    /// log_io_piece: a write is logged before it is issued.
    fn log(&mut self, p: Piece) {
        if !self.sorted {
            self.list.push_back(p);
            return;
        }
        // Drop every logged piece this one overlaps (fio keeps the newest).
        let end = p.offset + p.len;
        loop {
            let hit = self
                .tree
                .range(..end)
                .next_back()
                .filter(|(_, q)| q.offset + q.len > p.offset)
                .map(|(&k, _)| k);
            match hit {
                Some(k) => {
                    self.tree.remove(&k);
                }
                None => break,
            }
        }
        self.tree.insert(p.offset, p);
    }

    /// get_next_verify: the oldest piece (lowest offset when sorted), unless its write
    /// is still in flight.
    fn next_piece(&mut self) -> Option<Piece> {
        let p = if self.sorted {
            let (&k, p) = self.tree.iter().next()?;
            if p.in_flight {
                return None;
            }
            self.tree.remove(&k)
        } else {
            if self.list.front()?.in_flight {
                return None;
            }
            self.list.pop_front()
        };
        p
    }

    fn verify_io(&mut self, p: Piece) -> Next {
        self.last_read = true;
        self.verify_bytes += p.len;
        Next::Io {
            spec: IoSpec {
                dir: Dir::Read,
                trim: false,
                offset: p.offset,
                len: p.len,
            },
            verify: Some(p.numberio),
        }
    }

    /// The job's next I/O: `src_done` once the job's own I/O is all issued,
    /// `inflight` its I/Os in flight. A job that writes goes in fio's runs
    /// (`IoSource::run_over`): each run's writes, then once they have completed its
    /// verify phase, then keep_running's answer (`IoSource::next_run`).
    pub fn next(
        &mut self,
        src: &mut IoSource,
        src_done: bool,
        inflight: u32,
        now: crate::engine::SimTime,
    ) -> Next {
        if self.failure.is_some() {
            return Next::Done;
        }
        if self.cfg.only && !self.dry_run_done {
            return Next::Wait;
        }
        loop {
            if !self.verifying && !src_done && !src.run_over() {
                // check_get_verify: a batch every `backlog` logged pieces.
                if self.cfg.backlog > 0 && self.hist_len() > 0 {
                    let go = self.batch > 0
                        || (self.hist_len() as u64).is_multiple_of(self.cfg.backlog)
                            && !self.last_read;
                    if go {
                        if self.batch == 0 {
                            self.batch = if self.cfg.backlog_batch > 0 {
                                self.cfg.backlog_batch
                            } else {
                                self.cfg.backlog
                            };
                        }
                        if let Some(p) = self.next_piece() {
                            self.batch -= 1;
                            src.count_run_bytes(p.len);
                            return self.verify_io(p);
                        }
                    }
                }
                // None: the run (or the job's passes) is over, as if its bytes were done.
                if let Some(spec) = src.next_io() {
                    self.last_read = spec.dir == Dir::Read;
                    // A job that only reads verifies every read (verify_io_u with !td_rw).
                    let verify = (self.read_only && spec.dir == Dir::Read).then_some(0);
                    return Next::Io { spec, verify };
                }
            }
            if !self.cfg.do_verify || self.read_only {
                return Next::Done;
            }
            if !self.verifying {
                // do_verify starts once the run's I/O has all completed.
                if inflight > 0 {
                    return Next::Wait;
                }
                self.verifying = true;
                self.verify_phases.push((now, None));
            }
            match self.next_piece() {
                Some(p) => return self.verify_io(p),
                None if self.hist_len() > 0 || inflight > 0 => return Next::Wait,
                None => {}
            }
            // The verify phase is over.
            if let Some(ph) = self.verify_phases.last_mut() {
                ph.1.get_or_insert(now);
            }
            if src_done || !src.run_over() || !src.next_run(src.issued_bytes + self.verify_bytes) {
                return Next::Done;
            }
            // Another run.
            self.verifying = false;
            if self.cfg.only {
                let (ios, bytes) = self.dry_run(src);
                self.dry_pending.0 += ios;
                self.dry_pending.1 += bytes;
            }
        }
    }

    /// verify_only: the writes of the dry runs after the first (I/Os, bytes), for the
    /// job's stats.
    pub fn take_dry_pending(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.dry_pending)
    }

    /// The job's runtime per direction (read, write), as fio's update_runtime counts
    /// them: writes over the runs; reads over the verify phases (with the runs too for
    /// a job that also reads). From `start` (after ramp) to `end`.
    pub fn runtimes(
        &self,
        start: crate::engine::SimTime,
        end: crate::engine::SimTime,
        reads: bool,
    ) -> [Option<u64>; 2] {
        let end = end.max(start);
        let verifying: u64 = self
            .verify_phases
            .iter()
            .map(|&(a, b)| b.unwrap_or(end).min(end).saturating_sub(a.max(start)))
            .sum();
        let total = end - start;
        let read = if reads { total } else { verifying };
        [Some(read), Some(total - verifying)]
    }

    /// Whether the job has nothing more to issue.
    pub fn done(&self, src_done: bool) -> bool {
        self.failure.is_some()
            || (src_done
                && (!self.cfg.do_verify || self.hist_len() == 0 || self.read_only)
                && !self.cfg.only)
            || (self.cfg.only && self.dry_run_done && self.hist_len() == 0 && src_done)
    }

    /// do_dry_run: verify_only logs a run's writes without issuing them (to the end of
    /// the run, or of the job's I/O). fio counts them as done (io_u_sync_complete: bytes
    /// and issued I/Os, no runtime): returned as (I/Os, bytes).
    pub fn dry_run(&mut self, src: &mut IoSource) -> (u64, u64) {
        let (mut ios, mut bytes) = (0, 0);
        while !src.done() {
            let Some(spec) = src.next_io() else {
                break;
            };
            if spec.dir == Dir::Write && !spec.trim {
                ios += 1;
                bytes += spec.len;
                let n = self.writes;
                self.writes += 1;
                self.log(Piece {
                    offset: spec.offset,
                    len: spec.len,
                    numberio: n,
                    in_flight: false,
                });
            }
        }
        self.dry_run_done = true;
        (ios, bytes)
    }

    /// A write I/O `io` is issued: logged (in flight), numbered.
    pub fn write_issued(&mut self, io: u32, offset: u64, len: u64) -> u32 {
        let n = self.writes;
        self.writes += 1;
        if self.cfg.do_verify {
            self.log(Piece {
                offset,
                len,
                numberio: n,
                in_flight: true,
            });
        }
        self.writing.insert(io, (offset, n));
        n
    }

    /// The numberio of write `io` in flight.
    pub fn numberio_of(&self, io: u32) -> Option<u32> {
        self.writing.get(&io).map(|&(_, n)| n)
    }

    /// Write `io` was reaped: its piece may be verified.
    pub fn write_reaped(&mut self, io: u32) {
        let Some((offset, n)) = self.writing.remove(&io) else {
            return;
        };
        if self.sorted {
            if let Some(p) = self.tree.get_mut(&offset) {
                if p.numberio == n {
                    p.in_flight = false;
                }
            }
        } else if let Some(p) = self.list.iter_mut().rev().find(|p| p.numberio == n) {
            p.in_flight = false;
        }
    }

    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// The tag of 4 KiB block `lpn` written by this job's write `numberio`.
    pub fn write_tag(&self, numberio: u32, lpn: u64) -> u32 {
        if self.cfg.algo == VerifyAlgo::Pattern {
            // Every write holds the pattern: the same data whoever wrote it, when.
            let at = if self.cfg.pattern_per_offset { lpn } else { 0 };
            return content_tag(self.cfg.pattern_id, PATTERN_NUMBERIO, at);
        }
        content_tag(self.seed, numberio, lpn)
    }

    /// Checks what verify read of `p` returned (`tags`, one per 4 KiB); records the
    /// first failure. Per verify interval: the header block (verify_header's checks in
    /// fio's order), then the data under it (the checksum); `meta` checks the header
    /// only, `pattern` (no header) every block against the pattern.
    fn check(
        &mut self,
        p: Piece,
        tags: &[u32],
        decode: &mut dyn FnMut(u32, u64) -> Option<(u32, u32)>,
    ) {
        if self.cfg.algo == VerifyAlgo::Null {
            return;
        }
        let first_lpn = p.offset / 4096;
        let per = (self.cfg.interval / 4096).max(1) as usize;
        let hb = (self.cfg.header_offset / 4096) as usize;
        let nblocks = (p.len / 4096) as usize;
        let tag_at = |k: usize| tags.get(k).copied().unwrap_or(UNWRITTEN);
        let mut h = 0;
        while h < nblocks {
            let end = (h + per).min(nblocks);
            let fail = |kind| VerifyFailure {
                kind,
                algo: self.cfg.algo,
                offset: p.offset + h as u64 * 4096,
                // An interval below 4 KiB: the block's first interval fails first.
                len: (((end - h) * 4096) as u64).min(self.cfg.interval),
                req_offset: p.offset,
                req_len: p.len,
                async_reap: self.async_reap,
                verify_thread: self.cfg.async_threads > 0,
            };
            if self.cfg.algo == VerifyAlgo::Pattern {
                if (h..end).any(|k| tag_at(k) != self.write_tag(0, first_lpn + k as u64)) {
                    self.failure = Some(fail(FailureKind::Checksum));
                    return;
                }
                h = end;
                continue;
            }
            let hdr = (h + hb).min(end - 1);
            let hdr_lpn = first_lpn + hdr as u64;
            let found = tag_at(hdr);
            let wanted = content_tag(self.seed, p.numberio, hdr_lpn);
            // The write whose header the block holds: (job seed, numberio).
            let mut data_of = (self.seed, p.numberio);
            if found != wanted || self.cfg.any_writer {
                let kind = if found == UNWRITTEN || found == ERASED {
                    Some(FailureKind::BadMagic {
                        found: if found == ERASED { 0xffff } else { 0 },
                    })
                } else {
                    let hit = if found == wanted {
                        Some((self.seed, p.numberio))
                    } else {
                        decode(found, hdr_lpn)
                    };
                    match hit {
                        None => Some(FailureKind::BadMagic {
                            found: (found & 0xffff) as u16,
                        }),
                        Some(w) if self.cfg.any_writer => {
                            // Some fio write of this offset: its data must agree with it.
                            data_of = w;
                            None
                        }
                        Some((s, n)) if !self.cfg.seed_from_header => Some(FailureKind::BadSeed {
                            found: write_seed(s, n),
                            wanted: write_seed(self.seed, p.numberio),
                        }),
                        Some((_, n)) if self.cfg.check_numberio && n != p.numberio => {
                            Some(FailureKind::BadNumberio {
                                found: n as u16,
                                wanted: p.numberio as u16,
                            })
                        }
                        Some(w) => {
                            // Stale but whole: its own header and data agree.
                            data_of = w;
                            None
                        }
                    }
                };
                if let Some(kind) = kind {
                    self.failure = Some(fail(kind));
                    return;
                }
            }
            if self.cfg.algo != VerifyAlgo::Meta {
                let bad = (h..end).any(|k| {
                    k != hdr && tag_at(k) != content_tag(data_of.0, data_of.1, first_lpn + k as u64)
                });
                if bad {
                    self.failure = Some(fail(FailureKind::Checksum));
                    return;
                }
            }
            h = end;
        }
    }
}

/// How far from the last decoded write `decode_near` looks.
const NEAR: u32 = 64;

/// `decode`, trying first the writes of `last`'s job numbered within `NEAR` of it: a
/// verify read of what a sequential job wrote finds each block's write next to the
/// previous block's, where a search from the newest write would spend its budget on
/// a long job's other writes.
fn decode_near(
    jobs: &[(u32, u32)],
    last: Option<(u32, u32)>,
    tag: u32,
    lpn: u64,
    budget: &mut u64,
) -> Option<(u32, u32)> {
    let (seed, n) = last?;
    let writes = jobs.iter().find(|j| j.0 == seed)?.1;
    for d in 0..=NEAR {
        for m in [n.checked_add(d), n.checked_sub(d).filter(|_| d > 0)]
            .into_iter()
            .flatten()
            .filter(|&m| m < writes)
        {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            if content_tag(seed, m, lpn) == tag {
                return Some((seed, m));
            }
        }
    }
    None
}

/// The write among `jobs` ((seed, writes issued) each) whose tag for `lpn` is `tag`,
/// newest first, spending at most `budget` digests.
fn decode(jobs: &[(u32, u32)], tag: u32, lpn: u64, budget: &mut u64) -> Option<(u32, u32)> {
    for &(seed, writes) in jobs {
        for n in (0..writes).rev() {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            if content_tag(seed, n, lpn) == tag {
                return Some((seed, n));
            }
        }
    }
    None
}

/// The run's verify state: every job's, and the verify reads in flight.
pub(crate) struct Verify {
    /// Per thread (None: the job does not verify).
    pub jobs: Vec<Option<JobVerify>>,
    reads: BTreeMap<u32, Reading>,
    /// Per thread, its verify_async threads (sim/jobs/verify_async.rs).
    pub pools: Vec<Option<crate::sim::verify_async::Pool>>,
}

impl Verify {
    pub fn new(jobs: Vec<Option<JobVerify>>) -> Self {
        Verify {
            jobs,
            reads: BTreeMap::new(),
            pools: Vec::new(),
        }
    }

    /// Verify read `io` of the piece at `offset`, `len` written by write `numberio`
    /// is issued.
    pub fn read_issued(&mut self, io: u32, offset: u64, len: u64, numberio: u32) {
        self.reads.insert(
            io,
            Reading {
                piece: Piece {
                    offset,
                    len,
                    numberio,
                    in_flight: false,
                },
                tags: vec![UNWRITTEN; (len / 4096) as usize],
            },
        );
    }

    /// Whether `io` is a verify read in flight.
    pub fn is_read(&self, io: u32) -> bool {
        self.reads.contains_key(&io)
    }

    /// A read request covering sectors `sector..end` returned `tags` (one per 4 KiB
    /// from `sector`'s block): the part that falls in verify read `io`.
    pub fn read_data(&mut self, io: u32, sector: u64, tags: &[u32]) {
        let Some(r) = self.reads.get_mut(&io) else {
            return;
        };
        let first = sector / 8;
        let io_first = r.piece.offset / 4096;
        for (i, &t) in tags.iter().enumerate() {
            let lpn = first + i as u64;
            if lpn >= io_first {
                if let Some(slot) = r.tags.get_mut((lpn - io_first) as usize) {
                    *slot = t;
                }
            }
        }
    }

    /// Verify read `io` of thread `t` was reaped: checked now. Returns the 4 KiB
    /// blocks checked (for the CPU cost) and the failure found, if any (the caller
    /// decides whether it ends the job: sim/jobs/errors.rs).
    pub fn read_reaped(&mut self, io: u32, t: usize) -> (u64, Option<VerifyFailure>) {
        let Some(r) = self.reads.remove(&io) else {
            return (0, None);
        };
        let mut j = self.jobs[t].take().expect("a verifying job");
        // A read reaped after the job's failure is checked too (fio verifies what
        // cleanup_pending_aio reaps): its failure is logged, the job's stays the first.
        let first = j.failure.take();
        {
            // This job's writes first, then the other jobs' that write fio headers.
            let (seed, writes) = (j.seed, j.writes);
            let others = &self.jobs;
            let mut budget = j.decode_left;
            let mut last = j.last_decoded;
            j.check(r.piece, &r.tags, &mut |tag, lpn| {
                let writers: Vec<(u32, u32)> = std::iter::once((seed, writes))
                    .chain(others.iter().flatten().map(|o| (o.seed, o.writes)))
                    .collect();
                let hit = decode_near(&writers, last, tag, lpn, &mut budget)
                    .or_else(|| decode(&writers, tag, lpn, &mut budget));
                last = hit.or(last);
                hit
            });
            j.decode_left = budget;
            j.last_decoded = last;
        }
        let failure = std::mem::replace(&mut j.failure, first);
        self.jobs[t] = Some(j);
        (r.piece.len.div_ceil(4096), failure)
    }
}

/// Checks the verify jobs of a run and builds their state (None: no job verifies, the
/// device tracks no content).
pub(crate) fn setup(cfg: &crate::sim::SimConfig) -> Result<Option<Box<Verify>>, String> {
    if cfg.jobs.iter().all(|j| j.verify.is_none()) {
        return Ok(None);
    }
    let mut jobs = Vec::with_capacity(cfg.jobs.len());
    for j in &cfg.jobs {
        let Some(v) = &j.verify else {
            jobs.push(None);
            continue;
        };
        let name = &j.name;
        if !j.direct {
            return Err(format!(
                "job '{name}': verify with buffered I/O (direct=0) is not modelled: the page cache keeps no content; use direct=1"
            ));
        }
        if j.trim != crate::workload::Trim::None {
            return Err(format!("job '{name}': verify of trims is not modelled"));
        }
        if j.time_based {
            return Err(format!(
                "job '{name}': verify with time_based is not modelled"
            ));
        }
        if j.script.is_some() {
            return Err(format!("job '{name}': a scripted job does not verify"));
        }
        let sizes = [j.bs[0].min(), j.bs[0].max(), j.bs[1].min(), j.bs[1].max()];
        let unaligned = matches!(
            j.bs[1],
            crate::workload::BlockSizes::Range {
                unaligned: true,
                ..
            }
        ) || matches!(
            j.bs[0],
            crate::workload::BlockSizes::Range {
                unaligned: true,
                ..
            }
        );
        if sizes.iter().any(|b| !b.is_multiple_of(4096))
            || unaligned
            || !j.offset.is_multiple_of(4096)
            || (j.block_align != 0 && !j.block_align.is_multiple_of(4096))
        {
            return Err(format!(
                "job '{name}': verify needs block sizes and offsets in whole 4 KiB blocks (the device keeps content per 4 KiB)"
            ));
        }
        // An interval below 4 KiB that divides it puts whole headers in each 4 KiB
        // block, all of the write that wrote the block (block sizes are whole 4 KiB
        // blocks): the block's tag checks them all.
        let whole = v.interval.is_multiple_of(4096)
            || (v.interval.is_multiple_of(512) && 4096 % v.interval == 0);
        if v.interval == 0 || !whole {
            return Err(format!(
                "job '{name}': verify_interval={} is neither a multiple nor a divisor of 4 KiB in 512-byte sectors (the device keeps content per 4 KiB)",
                v.interval
            ));
        }
        let randommap = j.pattern == crate::workload::Pattern::Random && !j.norandommap;
        let async_reap = matches!(j.submission, crate::workload::Submission::Async { .. });
        let read_only = j.read_pct == 100;
        jobs.push(Some(JobVerify::new(
            v.clone(),
            j.seed,
            randommap,
            async_reap,
            read_only,
        )));
    }
    Ok(Some(Box::new(Verify::new(jobs))))
}

/// I/O `io` of thread `t` was issued: a write is logged and numbered, a verify read
/// remembered.
pub(crate) fn issued(v: &mut Verify, t: usize, io: u32, spec: &IoSpec, verify_of: Option<u32>) {
    if let Some(n) = verify_of {
        v.read_issued(io, spec.offset, spec.len, n);
    } else if spec.dir == Dir::Write && !spec.trim {
        if let Some(j) = v.jobs[t].as_mut() {
            j.write_issued(io, spec.offset, spec.len);
        }
    }
}

impl crate::sim::Sim {
    /// A write command reaches the device: the data of its 4 KiB blocks, from the I/Os
    /// its bios carry, is staged in the device's port.
    pub(in crate::sim) fn verify_stage_write(&mut self, input: &crate::device::Input) {
        let (crate::device::Input::Command(c) | crate::device::Input::Continue(c)) = input else {
            return;
        };
        if c.op != crate::device::DevOp::Write || c.sectors == 0 {
            return;
        }
        let v = self.verify.as_ref().expect("verifying");
        let req = self.block.req(c.tag);
        let first = c.lba / 8;
        let end = (c.lba + c.sectors as u64).div_ceil(8);
        let mut tags = Vec::with_capacity((end - first) as usize);
        for lpn in first..end {
            let byte = lpn * 4096;
            let io = req.bios.iter().copied().find(|&io| {
                let x = &self.ios[io as usize];
                byte + 4096 > x.offset && byte < x.offset + x.len
            });
            let tag = match io {
                Some(io) => {
                    let x = &self.ios[io as usize];
                    let t = x.thread as usize;
                    match v.jobs[t].as_ref() {
                        Some(j) => match j.numberio_of(io) {
                            Some(n) => j.write_tag(n, lpn),
                            None => content_tag(j.seed(), UNTRACKED_NUMBERIO, lpn),
                        },
                        // A job that writes no fio headers.
                        None => content_tag(self.cfg.jobs[t].seed as u32, UNTRACKED_NUMBERIO, lpn),
                    }
                }
                None => UNWRITTEN,
            };
            tags.push(tag);
        }
        if let Some(port) = self.dev.content_port() {
            port.stage_write(c.tag, first, tags);
        }
    }

    /// A request ends: if it read, what the device returned goes to its verify reads.
    pub(in crate::sim) fn verify_read_data(&mut self, r: crate::host::block::ReqId) {
        let Some(port) = self.dev.content_port() else {
            return;
        };
        let tags = port.take_read(r);
        if tags.is_empty() {
            return;
        }
        let req = self.block.req(r);
        let sector = req.sector;
        let v = self.verify.as_mut().expect("verifying");
        for &io in &req.bios {
            if v.is_read(io) {
                v.read_data(io, sector, &tags);
            }
        }
    }

    /// verify_only: the dry run logs the job's writes at its start.
    pub(in crate::sim) fn verify_dry_run(&mut self, t: u32) {
        let v = self.verify.as_mut().expect("verifying");
        if let Some(j) = v.jobs[t as usize].as_mut() {
            if j.cfg.only {
                let th = &mut self.threads[t as usize];
                let (ios, bytes) = j.dry_run(&mut th.src);
                th.stats.dirs[1].ios += ios;
                th.stats.dirs[1].bytes += bytes;
                // io_u_mark_depth(td, 1) for each.
                th.stats.depth_hist[0] += ios;
            }
        }
    }

    /// I/O `io` of thread `t` is reaped: a write's piece may now be verified; a verify
    /// read is checked. Returns the 4 KiB blocks checked.
    pub(in crate::sim) fn verify_reaped(&mut self, t: u32, io: u32) -> u64 {
        let v = self.verify.as_mut().expect("verifying");
        if v.is_read(io) {
            let (blocks, failure) = v.read_reaped(io, t as usize);
            if self.verify_async_on(t) {
                // verify_io_u_async: the io_u goes to the verify threads' list.
                self.verify_async_push(t, blocks, failure);
                return 0;
            }
            if let Some(f) = failure {
                self.verify_error(t, f);
            }
            return blocks;
        }
        if let Some(j) = v.jobs[t as usize].as_mut() {
            j.write_reaped(io);
        }
        0
    }

    /// The CPU work of checking `blocks` 4 KiB blocks on thread `t`'s core; the thread
    /// goes on when it is done.
    pub(in crate::sim) fn verify_cpu(&mut self, t: u32, blocks: u64) {
        let algo = self.verify.as_ref().expect("verifying").jobs[t as usize]
            .as_ref()
            .map(|j| j.cfg.algo)
            .expect("a verifying job");
        let cost = self.cfg.host.costs.verify_per_4k_ns(algo) * blocks;
        let th = &mut self.threads[t as usize];
        th.state = crate::sim::ThreadState::Running;
        // User time: fio's verify_io_u runs in fio itself.
        th.stats.usr_ns += cost;
        let core = th.core;
        let end = self.cpu.run_l(core, self.now, cost, "verify");
        self.q.push(end, crate::sim::Ev::ThreadRun(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{JobConfig, Pattern};

    fn vcfg(backlog: u64, batch: u64) -> VerifyConfig {
        VerifyConfig {
            backlog,
            backlog_batch: batch,
            ..VerifyConfig::new(VerifyAlgo::Crc32c)
        }
    }

    /// The I/Os a write-only job asks for, as (read?, offset), with every I/O reaped at
    /// once (`inflight` 0) until `n` writes are issued.
    fn sequence(j: &mut JobVerify, src: &mut IoSource, writes: u64) -> Vec<(bool, u64)> {
        let mut out = Vec::new();
        let mut io = 0;
        loop {
            let src_done = src.issued_ios >= writes;
            match j.next(src, src_done, 0, 0) {
                Next::Io { spec, verify } => {
                    if verify.is_none() {
                        j.write_issued(io, spec.offset, spec.len);
                        j.write_reaped(io);
                    }
                    io += 1;
                    out.push((verify.is_some(), spec.offset));
                }
                Next::Wait => panic!("nothing in flight to wait for"),
                Next::Done => return out,
            }
        }
    }

    #[test]
    fn decoding_near_the_last_write_finds_a_long_jobs_early_writes() {
        // A job of a million writes; block 7 was written by write 3. From the newest
        // write, the search would spend its budget first; next to the last write
        // decoded (write 5 of the block before), it takes a few digests.
        let writers = [(9u32, 1_000_000u32)];
        let tag = content_tag(9, 3, 7);
        let mut budget = 1000;
        assert_eq!(decode(&writers, tag, 7, &mut budget), None);
        let mut budget = 1000;
        assert_eq!(
            decode_near(&writers, Some((9, 5)), tag, 7, &mut budget),
            Some((9, 3))
        );
        // 5, then 6 and 4, then 7 and 3.
        assert_eq!(budget, 1000 - 5);
        // Beyond the window, or with nothing decoded yet: not found there.
        let mut budget = 1000;
        assert_eq!(
            decode_near(&writers, Some((9, 500)), tag, 7, &mut budget),
            None
        );
        assert_eq!(decode_near(&writers, None, tag, 7, &mut budget), None);
    }

    #[test]
    fn pieces_are_verified_in_write_order_with_a_random_map_and_by_offset_without() {
        let mut job = JobConfig::simple("v", Pattern::Random, 0, 4096, 64 * 4096);
        let mut src = IoSource::new(&job);
        let mut j = JobVerify::new(vcfg(0, 0), 1, true, false, false);
        let s = sequence(&mut j, &mut src, 64);
        let w: Vec<&(bool, u64)> = s.iter().filter(|x| !x.0).collect();
        let r: Vec<&(bool, u64)> = s.iter().filter(|x| x.0).collect();
        assert_eq!(w.len(), 64);
        assert_eq!(
            r.iter().map(|x| x.1).collect::<Vec<_>>(),
            w.iter().map(|x| x.1).collect::<Vec<_>>()
        );
        // norandommap, twice the region: fio's rb-tree keeps the newest piece of each
        // block, read back by offset.
        job.norandommap = true;
        let mut src = IoSource::new(&job);
        let mut j = JobVerify::new(vcfg(0, 0), 1, false, false, false);
        let s = sequence(&mut j, &mut src, 128);
        let r: Vec<u64> = s.iter().filter(|x| x.0).map(|x| x.1).collect();
        let mut written: Vec<u64> = s.iter().filter(|x| !x.0).map(|x| x.1).collect();
        written.sort_unstable();
        written.dedup();
        assert_eq!(r, written);
    }

    /// A job that writes and verifies, over 16 blocks, with `passes`.
    fn runs_job(pattern: Pattern, passes: crate::workload::Passes) -> JobConfig {
        let mut job = JobConfig::simple("v", pattern, 0, 4096, 16 * 4096);
        job.verify = Some(vcfg(0, 0));
        job.passes = passes;
        job.io_limit = 1 << 30;
        job
    }

    /// The I/Os of a job until it is done (every I/O reaped at once), as
    /// (read?, offset) runs: the lengths of its alternating write and read stretches.
    fn stretches(j: &mut JobVerify, src: &mut IoSource) -> Vec<(bool, usize)> {
        let mut out: Vec<(bool, usize)> = Vec::new();
        let mut io = 0;
        loop {
            let src_done = src.done();
            match j.next(src, src_done, 0, 0) {
                Next::Io { spec, verify } => {
                    if verify.is_none() {
                        j.write_issued(io, spec.offset, spec.len);
                        j.write_reaped(io);
                    }
                    io += 1;
                    match out.last_mut() {
                        Some(l) if l.0 == verify.is_some() => l.1 += 1,
                        _ => out.push((verify.is_some(), 1)),
                    }
                }
                Next::Wait => panic!("nothing in flight to wait for"),
                Next::Done => return out,
            }
        }
    }

    #[test]
    fn each_run_over_the_region_is_verified_before_the_next_as_fio_runs_them() {
        use crate::workload::Passes;
        // io_size four times the region: a run (the random map fills), its verify
        // phase, and keep_running counts the verify reads too: 2 runs, not 4.
        for pattern in [Pattern::Random, Pattern::Sequential] {
            let job = runs_job(
                pattern,
                Passes::Fio {
                    loops: 1,
                    limit: 64 * 4096,
                    more: true,
                },
            );
            let mut src = IoSource::new(&job);
            let mut j = JobVerify::new(vcfg(0, 0), 1, pattern == Pattern::Random, false, false);
            assert_eq!(
                stretches(&mut j, &mut src),
                vec![(false, 16), (true, 16), (false, 16), (true, 16)],
                "{pattern:?}"
            );
            assert!(j.failure.is_none());
        }
        // loops=3: three runs whatever was moved.
        let job = runs_job(
            Pattern::Random,
            Passes::Fio {
                loops: 3,
                limit: 16 * 4096,
                more: false,
            },
        );
        let mut src = IoSource::new(&job);
        let mut j = JobVerify::new(vcfg(0, 0), 1, true, false, false);
        assert_eq!(stretches(&mut j, &mut src).len(), 6);
    }

    #[test]
    fn verify_backlog_reads_a_batch_each_time_the_backlog_fills() {
        let job = JobConfig::simple("v", Pattern::Sequential, 0, 4096, 64 * 4096);
        let mut src = IoSource::new(&job);
        let mut j = JobVerify::new(vcfg(8, 2), 1, false, false, false);
        let s = sequence(&mut j, &mut src, 64);
        let kinds: String = s.iter().map(|x| if x.0 { 'r' } else { 'w' }).collect();
        // 8 logged: 2 reads (6 left); 2 more writes make 8 again; and so on.
        assert!(kinds.starts_with("wwwwwwwwrrwwrrwwrr"), "{kinds}");
        assert_eq!(kinds.matches('r').count(), 64);
        // Reads go in offset order, each after its write.
        let r: Vec<u64> = s.iter().filter(|x| x.0).map(|x| x.1).collect();
        assert!(r.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_piece_whose_write_is_in_flight_waits() {
        let job = JobConfig::simple("v", Pattern::Sequential, 0, 4096, 2 * 4096);
        let mut src = IoSource::new(&job);
        let mut j = JobVerify::new(vcfg(0, 0), 1, false, false, false);
        for io in 0..2 {
            let Next::Io { spec, .. } = j.next(&mut src, false, io, 0) else {
                panic!()
            };
            j.write_issued(io, spec.offset, spec.len);
        }
        // The write phase is over but its writes are in flight: do_verify waits.
        assert!(matches!(j.next(&mut src, true, 2, 0), Next::Wait));
        j.write_reaped(0);
        j.write_reaped(1);
        assert!(matches!(
            j.next(&mut src, true, 0, 5),
            Next::Io {
                verify: Some(0),
                ..
            }
        ));
        assert_eq!(j.runtimes(0, 9, false), [Some(4), Some(5)]);
    }

    /// Checks `tags` (the 4 KiB blocks read) against the piece of 16 KiB at 8 KiB that
    /// write 3 of a 4-write job seeded 9 wrote; the failure found.
    fn check_piece(cfg: &VerifyConfig, tags: &[u32]) -> Option<VerifyFailure> {
        let p = Piece {
            offset: 8192,
            len: 16384,
            numberio: 3,
            in_flight: false,
        };
        let mut j = JobVerify::new(cfg.clone(), 0, true, false, false);
        j.seed = 9;
        j.writes = 4;
        let writers = [(9u32, 4u32)];
        let mut budget = 100;
        j.check(p, tags, &mut |t, l| decode(&writers, t, l, &mut budget));
        j.failure
    }

    #[test]
    fn an_interval_below_4k_checks_every_block_as_headers() {
        // verify=meta, verify_interval=512: each 4 KiB block holds eight headers of
        // the write that wrote it; a stale block fails at its first interval.
        let mut cfg = vcfg(0, 0);
        cfg.algo = VerifyAlgo::Meta;
        cfg.interval = 512;
        let mut tags: Vec<u32> = (2..6).map(|l| content_tag(9, 3, l)).collect();
        let check = |tags: &[u32]| check_piece(&cfg, tags).map(|f| (f.kind, f.offset, f.len));
        assert_eq!(check(&tags), None);
        tags[2] = content_tag(9, 1, 4);
        assert_eq!(
            check(&tags),
            Some((
                FailureKind::BadNumberio {
                    found: 1,
                    wanted: 3
                },
                8192 + 2 * 4096,
                512
            ))
        );
    }

    #[test]
    fn header_failures_follow_fios_checks_in_order() {
        let mut cfg = vcfg(0, 0);
        cfg.interval = 16384;
        let good: Vec<u32> = (2..6).map(|l| content_tag(9, 3, l)).collect();
        let stale: Vec<u32> = (2..6).map(|l| content_tag(9, 1, l)).collect();
        let check = |cfg: &VerifyConfig, tags: &[u32]| check_piece(cfg, tags).map(|f| f.kind);
        assert_eq!(check(&cfg, &good), None);
        assert_eq!(
            check(&cfg, &[0, good[1], good[2], good[3]]),
            Some(FailureKind::BadMagic { found: 0 })
        );
        assert_eq!(
            check(&cfg, &stale),
            Some(FailureKind::BadNumberio {
                found: 1,
                wanted: 3
            })
        );
        let mut mixed = good.clone();
        mixed[2] = stale[2];
        assert_eq!(check(&cfg, &mixed), Some(FailureKind::Checksum));
        // meta checks the header alone.
        let mut meta = cfg.clone();
        meta.algo = VerifyAlgo::Meta;
        assert_eq!(check(&meta, &mixed), None);
        // A job mixing reads and writes without a backlog checks the seed first.
        let mut rw = cfg.clone();
        rw.seed_from_header = false;
        assert!(matches!(
            check(&rw, &stale),
            Some(FailureKind::BadSeed { .. })
        ));
        // verify_only: any whole fio write of the offset passes, a torn one does not.
        let mut only = cfg.clone();
        only.any_writer = true;
        only.check_numberio = false;
        assert_eq!(check(&only, &stale), None);
        assert_eq!(check(&only, &mixed), Some(FailureKind::Checksum));
        // verify_offset: the header is the second block.
        let mut off = cfg.clone();
        off.header_offset = 4096;
        assert_eq!(
            check(&off, &[0, good[1], good[2], good[3]]),
            Some(FailureKind::Checksum)
        );
        assert_eq!(
            check(&off, &[good[0], 0, good[2], good[3]]),
            Some(FailureKind::BadMagic { found: 0 })
        );
    }

    #[test]
    fn default_costs_are_fios_crctest_rates() {
        // crc32c at 4224.1 MiB/s: 4 KiB in 925 ns.
        assert_eq!(default_cost_per_4k_ns(VerifyAlgo::Crc32c), 925);
        assert_eq!(default_cost_per_4k_ns(VerifyAlgo::Md5), 10414);
        assert_eq!(default_cost_per_4k_ns(VerifyAlgo::Null), 0);
    }
}
