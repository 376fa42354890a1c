//! The workload: fio job threads and the offsets, sizes and directions of their I/Os.
//!
//! A job thread runs fio's loop: pick the next I/O (direction by `rwmixread`, size by the
//! block-size spec, offset by the sequential cursor or the random generator), submit it
//! through its ioengine, and wait as the engine does (a synchronous engine waits for each
//! I/O; an asynchronous one keeps up to `iodepth` in flight, submitting `iodepth_batch` at
//! a time and reaping at least `iodepth_batch_complete_min`). Think time and rate limits
//! delay the next submission in simulated time.
//!
//! Trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`): a trim I/O is fio's
//! `do_io_u_trim`, ioctl(BLKDISCARD) on the block device, which the kernel runs as
//! `blkdev_issue_discard` and the caller waits for; fio's psync, libaio and io_uring
//! engines all issue it that way (libaio/io_uring: `FIO_Q_COMPLETED` inline once nothing
//! is queued), so a trim job submits one trim at a time whatever its engine. trimwrite
//! trims a block, then writes the same block (fio's `set_rw_ddir`: the next direction is
//! TRIM when the last write and trim positions meet), counting both in the job's bytes
//! (fio adds the region once more to the bytes to do). A job on regular files
//! (`trim_errno`) gets ENOTTY from that ioctl instead: no discard (sim/jobs/errors.rs).
//!
//! Random offsets come from the run's seeded stream (fio's tausworthe: the sequence
//! differs from fio's while the distribution is the same), or from fio's own LFSR with
//! `random_generator=lfsr` (workload/lfsr.rs: fio's sequence). Rate processes and the
//! minimum-rate check are in workload/rate.rs.
//!
//! Verify (fio's verify family) is sim/jobs/verify.rs. Leaves out: trim_percentage/trim_backlog (verify trims), file layout (a job
//! addresses the raw device).
//! Units: bytes, nanoseconds.

pub mod error_policy;
mod files;
mod gauss;
mod lfsr;
mod offsets;
mod rate;
mod replay;
pub mod steady_state;
mod strided;
pub mod verify_algo;

pub use files::{FileExtent, FileService, Files};
pub use gauss::Gauss;
pub use lfsr::Lfsr;
pub use offsets::OffsetGen;
pub use rate::{MinRate, MinRateLimits, PoissonClock, RateProcess};
pub use replay::{Replay, ReplayKind, ReplayOp, ReplayOpen, ReplaySource, VecSource};
pub use strided::StridedZones;

use crate::engine::SimTime;

/// Data direction of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    Read = 0,
    Write = 1,
}

impl Dir {
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The trims of a job (fio's `rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Trim {
    /// No trims: reads and writes as `read_pct` says.
    #[default]
    None,
    /// Every I/O is a trim (a discard request).
    Only,
    /// Each block is trimmed, then written (the write at the trim's offset and length).
    ThenWrite,
}

/// Whether offsets follow each other or are drawn at random.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Random,
}

/// How random offsets are distributed over the region.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Every block equally likely; with the random map (default) each block once per pass.
    Uniform,
    /// Zipf with exponent theta (> 0, != 1 handled by the generic inverse); hot blocks
    /// are spread over the region by a fixed permutation as fio does.
    Zipf(f64),
    /// Pareto with shape h in (0, 1).
    Pareto(f64),
    /// fio's normal:dev (workload/gauss.rs): a bell over the blocks, hashed over the
    /// region; the deviation in percent of the region.
    Normal(f64),
    /// The region's blocks in a fixed order the caller gives (block indices, each block
    /// the job's smallest block size), taken in turn and repeated when exhausted: a
    /// benchmark's own shuffle, such as iozone's record order for its random tests.
    /// Shared, since every thread of a run may use the same order.
    Order(std::sync::Arc<[u64]>),
    /// fio's zoned / zoned_abs (io_u.c __get_next_rand_offset_zoned): a uniform draw of
    /// 1..=100 picks the zone whose cumulative access percentage covers it, then a
    /// uniform block inside the zone. Zones follow each other from the region's start.
    Zoned(std::sync::Arc<[Zone]>),
}

/// Which generator draws uniform random blocks (fio's random_generator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RandomGenerator {
    /// The job's seeded stream, with the random map unless norandommap (fio's
    /// tausworthe and tausworthe64 play this part: the distribution is theirs).
    #[default]
    Stream,
    /// fio's LFSR (workload/lfsr.rs) from this seed: each block once per pass, in fio's
    /// own order, without a random map.
    Lfsr { seed: u64 },
}

/// One zone of a zoned distribution: its share of the accesses and of the region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// Percent of the I/Os (the zones' shares add up to 100).
    pub access_percent: u32,
    /// The zone's extent: percent of the region (`zoned`) or bytes (`zoned_abs`).
    pub size: ZoneSize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneSize {
    Percent(u64),
    Bytes(u64),
}

/// Block sizes for one direction.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockSizes {
    Fixed(u64),
    /// Any multiple of `min` in `min..=max` (or any size with `unaligned`), uniformly.
    Range {
        min: u64,
        max: u64,
        unaligned: bool,
    },
    /// (size, weight%) pairs; weights sum to 100.
    Split(Vec<(u64, u32)>),
}

impl BlockSizes {
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(4096),
        }
    }
    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(4096),
        }
    }
}

/// How the thread submits I/O (fio's ioengine semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submission {
    /// psync, sync, pvsync, pvsync2, mmap: one I/O per system call, waits for it.
    Sync,
    /// libaio, io_uring, posixaio: up to `depth` in flight.
    Async {
        depth: u32,
        /// I/Os submitted per `io_submit`/`io_uring_enter` (fio's iodepth_batch, 1 by default).
        batch_submit: u32,
        /// Completions waited for before the thread runs again (iodepth_batch_complete_min).
        batch_complete_min: u32,
    },
}

/// One job thread's workload, typed and validated (the CLI builds it from fio options).
#[derive(Clone, Debug, PartialEq)]
pub struct JobConfig {
    pub name: String,
    pub pattern: Pattern,
    /// Share of reads in percent: 100 for read-only, 0 for write-only.
    pub read_pct: u32,
    /// Block sizes for reads and writes.
    pub bs: [BlockSizes; 2],
    /// Trims of the job (`Trim::None`: none; `read_pct` is then 0).
    pub trim: Trim,
    /// Block sizes of trims (fio's third `bs` value).
    pub bs_trim: BlockSizes,
    /// First byte of the job's region on the device.
    pub offset: u64,
    /// Length of the region in bytes.
    pub size: u64,
    /// Bytes from the region's start to the end of the file or device it is in (fio's
    /// `real_file_size - file_offset`); a sequential stream that reaches it behaves
    /// differently from one that reaches the region's end (workload/offsets.rs). Never
    /// taken below `size`.
    pub file_end: u64,
    /// Bytes to transfer before the job ends (fio's io_size; = size by default).
    pub io_limit: u64,
    /// Whether another pass starts when one ends (a pass ends where fio marks the file
    /// done: workload/offsets.rs).
    pub passes: Passes,
    /// Sequential: bytes skipped after each I/O (fio's `rw=read:N`; may be negative).
    pub seq_skip: i64,
    /// Random: a new random offset only every N I/Os, sequential in between (`rw=randread:N`).
    pub rand_every: u32,
    pub distribution: Distribution,
    /// Allow repeated blocks within a pass (fio's norandommap).
    pub norandommap: bool,
    /// The generator of uniform random blocks (fio's random_generator).
    pub generator: RandomGenerator,
    pub submission: Submission,
    /// O_DIRECT; false: buffered I/O through the page cache (sim/kernel/buffered.rs).
    pub direct: bool,
    /// fio's fsync=N / fdatasync=N: an fsync after every N writes (0 = never). On the
    /// block device both do the same (blkdev_fsync ignores datasync).
    pub fsync_every: u32,
    /// fio's end_fsync: one fsync when the job's I/O is done.
    pub end_fsync: bool,
    /// fio's sync=1: the file is opened with O_SYNC.
    pub o_sync: bool,
    /// The fsyncs of `fsync_every` are fdatasyncs (fio's fdatasync=N). They differ only
    /// on a filesystem (sim/kernel/journal.rs).
    pub fdatasync: bool,
    /// `o_sync` is O_DSYNC (fio's sync=dsync): each write is followed by an fdatasync.
    pub o_dsync: bool,
    /// Stop after this much simulated time (fio's runtime), if set.
    pub runtime_ns: Option<u64>,
    /// Keep going until runtime even after io_limit is reached.
    pub time_based: bool,
    /// Statistics start this long after the job starts.
    pub ramp_ns: u64,
    /// The job starts this long after the run (or its stonewall) starts.
    pub startdelay_ns: u64,
    /// Sleep this long every `thinktime_blocks` I/Os.
    pub thinktime_ns: u64,
    pub thinktime_blocks: u32,
    /// Upper bound on bytes/s per direction (0 = none).
    pub rate_bytes_per_s: [u64; 2],
    /// Upper bound on IOPS per direction (0 = none).
    pub rate_iops: [u64; 2],
    /// How the rate limit spaces the I/Os (fio's rate_process; workload/rate.rs).
    pub rate_process: RateProcess,
    /// fio's rate_min / rate_iops_min / rate_cycle: the job fails when its rate falls
    /// below (workload/rate.rs).
    pub rate_min: MinRateLimits,
    /// Polled completion (io_uring's hipri: IORING_SETUP_IOPOLL; pvsync2's hipri:
    /// RWF_HIPRI): see sim/kernel/iopoll.rs.
    pub hipri: bool,
    /// Completions reaped per io_getevents/io_uring_enter at most (fio's
    /// iodepth_batch_complete_max; 0: all that are there).
    pub reap_max: u32,
    /// fio's flow control (flow, flow_id, flow_sleep; sim/jobs/flow.rs), if the job has a
    /// flow weight.
    pub flow: Option<FlowConfig>,
    /// fio's latency profile (latency_target and its family; sim/jobs/lat_target.rs).
    pub lat_target: Option<LatTarget>,
    /// libaio's userspace_reap: when the thread polls for completions
    /// (iodepth_batch_complete_min=0, sim/kernel/iopoll.rs) it reads the ring in user space,
    /// without io_getevents.
    pub user_reap: bool,
    /// Seed of this thread's random streams.
    pub seed: u64,
    /// Wait until every earlier job has finished (fio's stonewall).
    pub stonewall: bool,
    /// Host core the thread runs on; `None` lets the simulator spread threads.
    pub cpu: Option<u32>,
    /// The posix_fadvise advice given for the job's file before its I/O (fio's
    /// fadvise_hint); it shapes readahead of buffered reads (sim/kernel/buffered.rs).
    pub fadvise: Fadvise,
    /// A scripted job: exactly these I/Os, in this order (absolute device offsets), in
    /// place of the pattern, block sizes and region. Each I/O's latency (the system
    /// call's, submission to return) is kept in `JobStats::script_lat_ns`, in order. A
    /// front end that times a fixed sequence of accesses (flashbench) uses it. Only
    /// with synchronous submission, without trims; `size`/`io_limit` must be the total.
    pub script: Option<std::sync::Arc<[IoSpec]>>,
    /// fio's exitall: when this job's thread ends, the threads `exit_what` names stop
    /// issuing (their I/Os in flight complete).
    pub exitall: bool,
    /// Which threads exitall stops.
    pub exit_what: ExitWhat,
    /// fio's reporting group (groupid: a stonewall or new_group starts the next).
    pub group_id: u32,
    /// fio's number_ios: the job ends after this many I/Os if nothing ends it sooner
    /// (0: no cap).
    pub max_ios: u64,
    /// fio's blockalign: random offsets are multiples of it (0: the smallest block
    /// size, fio's default).
    pub block_align: u64,
    /// fio's wait_for: the job starts only once these jobs (indices into the run's job
    /// list, all earlier than this one) have finished, besides its stonewall turn.
    pub wait_for: Vec<usize>,
    /// The job's files when it has several (fio's nrfiles, or a list of file names):
    /// each its own extent of the device; `size` is then their total and `offset` the
    /// first one's (`workload/files.rs`). `None`: the one region `offset..offset + size`.
    pub files: Option<Files>,
    /// fio's null engine (`sim/jobs/null_engine.rs`): no system call, no kernel, no device.
    pub null_engine: bool,
    /// fio's io_submit_mode=offload (`sim/jobs/offload.rs`): the thread only generates the
    /// I/Os, at the rate; a pool of `depth` submit workers queues and reaps them.
    pub offload: bool,
    /// fio's zonemode=strided (`workload/strided.rs`).
    pub zones: Option<StridedZones>,
    /// A replay job (fio's read_iolog, `workload/replay.rs`): its I/O comes from the
    /// source, in place of the pattern, block sizes and io size; the job ends when the
    /// source does. Its region (`offset`, `size`) is the span the trace covers.
    pub replay: Option<Replay>,
    /// fio's verify family (`sim/jobs/verify.rs`); `None`: verify=0.
    pub verify: Option<verify_algo::VerifyConfig>,
    /// fio's continue_on_error and ignore_error (`sim/jobs/errors.rs`).
    pub errors: error_policy::ErrorPolicy,
    /// The errno a trim's ioctl(BLKDISCARD) fails with (fio's os_trim on Linux): ENOTTY
    /// for a job on regular files; `None` on the block device, where it is a discard.
    pub trim_errno: Option<i32>,
    /// fio's steady-state detection (`steadystate`, `ss_dur`, `ss_ramp`): the job (or
    /// its group) ends once the criterion holds (`sim/jobs/steadystate.rs`).
    pub steadystate: Option<steady_state::SteadyStateConfig>,
    /// fio's fill_device on a filesystem or device with less free space than the job
    /// would write: the region (`offset..offset + size`, `io_limit` = `size`) ends where
    /// the free space does, and once the job has issued it, its next write fails with
    /// ENOSPC (`sim/jobs/fill_device.rs`): the job then ends without error.
    pub fill_enospc: bool,
}

/// fio's latency profile: the queue depth search of sim/jobs/lat_target.rs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatTarget {
    /// latency_target: the total latency an I/O may take.
    pub target_ns: u64,
    /// latency_window: how long each depth is tried.
    pub window_ns: u64,
    /// latency_percentile: the share of I/Os (percent) that must meet the target.
    pub percentile: f64,
    /// latency_run: keep searching instead of ending at the depth found.
    pub run: bool,
}

/// A job's place in fio's flow control (sim/jobs/flow.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// fio's flow_id: the jobs sharing it share a counter.
    pub id: u32,
    /// fio's flow: the job's weight (1..=1000).
    pub weight: u32,
    /// fio's flow_sleep: how long a stalled job sleeps before trying again (0: it
    /// spins).
    pub sleep_ns: u64,
}

pub use steady_state::{SsCriterion, SteadyStateConfig};

/// posix_fadvise advice on a file (mm/fadvise.c), as it changes the file's readahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fadvise {
    /// POSIX_FADV_NORMAL or no call: `ra_pages` = the device's read_ahead_kb.
    #[default]
    Normal,
    /// POSIX_FADV_SEQUENTIAL: the file's `ra_pages` is twice the device's.
    Sequential,
    /// POSIX_FADV_RANDOM: FMODE_RANDOM, so a page cache miss reads just the pages asked
    /// for (force_page_cache_readahead), without a readahead window or PG_readahead mark.
    Random,
}

impl JobConfig {
    /// A plain job for tests: `pattern` I/O of `bs` bytes over `size` bytes at `offset`.
    pub fn simple(name: &str, pattern: Pattern, read_pct: u32, bs: u64, size: u64) -> Self {
        JobConfig {
            name: name.to_string(),
            pattern,
            read_pct,
            bs: [BlockSizes::Fixed(bs), BlockSizes::Fixed(bs)],
            trim: Trim::None,
            bs_trim: BlockSizes::Fixed(bs),
            offset: 0,
            size,
            io_limit: size,
            file_end: size,
            passes: Passes::Unlimited,
            seq_skip: 0,
            rand_every: 1,
            distribution: Distribution::Uniform,
            norandommap: false,
            generator: RandomGenerator::Stream,
            submission: Submission::Sync,
            direct: true,
            fsync_every: 0,
            end_fsync: false,
            o_sync: false,
            fdatasync: false,
            o_dsync: false,
            runtime_ns: None,
            time_based: false,
            ramp_ns: 0,
            startdelay_ns: 0,
            thinktime_ns: 0,
            thinktime_blocks: 1,
            rate_bytes_per_s: [0, 0],
            rate_iops: [0, 0],
            rate_process: RateProcess::Linear,
            rate_min: MinRateLimits {
                bytes_per_s: [0, 0],
                iops: [0, 0],
                cycle_ms: 1000,
            },
            hipri: false,
            reap_max: 0,
            flow: None,
            lat_target: None,
            user_reap: false,
            seed: 0x5eed,
            stonewall: false,
            cpu: None,
            fadvise: Fadvise::Normal,
            script: None,
            exitall: false,
            exit_what: ExitWhat::Group,
            group_id: 0,
            max_ios: 0,
            block_align: 0,
            wait_for: Vec::new(),
            files: None,
            errors: Default::default(),
            trim_errno: None,
            null_engine: false,
            offload: false,
            zones: None,
            replay: None,
            verify: None,
            steadystate: None,
            fill_enospc: false,
        }
    }

    /// The device regions the job's I/O covers (offset, size): its files' extents, or
    /// its one region.
    pub fn regions(&self) -> Vec<(u64, u64)> {
        match &self.files {
            Some(f) => f.extents.iter().map(|e| (e.offset, e.size)).collect(),
            None => vec![(self.offset, self.size)],
        }
    }

    /// A scripted job (see [`JobConfig::script`]): `ios` one after the other by one
    /// thread with O_DIRECT and synchronous system calls. Its region (`offset`, `size`)
    /// is the span the I/Os cover (what preconditioning fills).
    pub fn scripted(name: &str, ios: std::sync::Arc<[IoSpec]>) -> Self {
        let total: u64 = ios.iter().map(|io| io.len).sum();
        let start = ios.iter().map(|io| io.offset).min().unwrap_or(0);
        let end = ios.iter().map(|io| io.offset + io.len).max().unwrap_or(512);
        let mut j = JobConfig::simple(name, Pattern::Sequential, 0, 512, (end - start).max(512));
        j.offset = start;
        j.io_limit = total;
        j.script = Some(ios);
        j
    }

    /// A replay job (see [`JobConfig::replay`]) over the region the trace covers
    /// (`offset`, `size`: multiples of 512), synchronous until the caller sets an engine.
    pub fn replayed(name: &str, replay: Replay, offset: u64, size: u64) -> Self {
        let mut j = JobConfig::simple(name, Pattern::Sequential, 0, 512, size.max(512));
        j.offset = offset;
        j.io_limit = u64::MAX;
        j.replay = Some(replay);
        j
    }

    /// Effective queue depth of the thread.
    pub fn depth(&self) -> u32 {
        match self.submission {
            Submission::Sync => 1,
            Submission::Async { depth, .. } => depth.max(1),
        }
    }

    /// Checks the invariants the simulator relies on.
    pub fn validate(&self) -> Result<(), String> {
        let min_bs = self.bs[0].min().min(self.bs[1].min());
        if self.trim != Trim::None
            && (self.bs_trim.min() == 0
                || !self.bs_trim.min().is_multiple_of(512)
                || !self.bs_trim.max().is_multiple_of(512))
        {
            return Err(format!(
                "job '{}': trim block sizes must be non-zero multiples of 512 bytes",
                self.name
            ));
        }
        if self.trim == Trim::ThenWrite && self.bs_trim != self.bs[1] {
            return Err(format!(
                "job '{}': trimwrite writes each trimmed block again: trim and write block sizes must be the same",
                self.name
            ));
        }
        if self.trim != Trim::None && self.read_pct != 0 {
            return Err(format!("job '{}': a trim job does not read", self.name));
        }
        if min_bs == 0
            || !min_bs.is_multiple_of(512)
            || self.bs.iter().any(|b| !b.max().is_multiple_of(512))
        {
            return Err(format!(
                "job '{}': block sizes (fio's bs, bsrange, bssplit) must be non-zero multiples of 512 bytes",
                self.name
            ));
        }
        if self.size < self.bs[0].max().max(self.bs[1].max()) {
            return Err(format!(
                "job '{}': size {} is smaller than the block size",
                self.name, self.size
            ));
        }
        if !self.offset.is_multiple_of(512) {
            return Err(format!(
                "job '{}': offset must be a multiple of 512",
                self.name
            ));
        }
        if self.read_pct > 100 {
            return Err(format!("job '{}': rwmixread above 100", self.name));
        }
        if !self.time_based && self.io_limit == 0 {
            return Err(format!("job '{}': nothing to do (io size 0)", self.name));
        }
        if let Distribution::Order(order) = &self.distribution {
            let nblocks = (self.size / min_bs).max(1);
            if order.is_empty() {
                return Err(format!("job '{}': an empty block order", self.name));
            }
            if let Some(b) = order.iter().find(|&&b| b >= nblocks) {
                return Err(format!(
                    "job '{}': the block order names block {b}, beyond the region's {nblocks} blocks",
                    self.name
                ));
            }
        }
        if !self.block_align.is_multiple_of(512) || self.block_align > self.size {
            return Err(format!(
                "job '{}': blockalign {} must be a multiple of 512 within the region",
                self.name, self.block_align
            ));
        }
        if let Some(z) = &self.zones {
            // A zone larger than the region is cut at its end (ZoneCursor).
            if z.size == 0 || z.range == 0 || self.files.is_some() {
                return Err(format!(
                    "job '{}': zonemode=strided needs zonesize and zonerange above 0, and one file",
                    self.name
                ));
            }
        }
        if let Some(f) = &self.files {
            let total: u64 = f.extents.iter().map(|e| e.size).sum();
            let bs = self.bs[0]
                .max()
                .max(self.bs[1].max())
                .max(self.bs_trim.max());
            if f.extents.is_empty() || total != self.size {
                return Err(format!(
                    "job '{}': its files' sizes must add up to its size",
                    self.name
                ));
            }
            if let Some(e) = f
                .extents
                .iter()
                .find(|e| e.size < bs || e.offset % 512 != 0)
            {
                return Err(format!(
                    "job '{}': a file of {} bytes at {} is smaller than the block size or not 512-byte aligned",
                    self.name, e.size, e.offset
                ));
            }
            if matches!(self.distribution, Distribution::Order(_)) {
                return Err(format!(
                    "job '{}': a block order over several files is not modelled",
                    self.name
                ));
            }
        }
        if self.replay.is_some() {
            if self.script.is_some() || self.trim != Trim::None || self.time_based {
                return Err(format!(
                    "job '{}': a replay job takes its I/O from the trace: no script, trims pattern or time_based",
                    self.name
                ));
            }
            if let Submission::Async { batch_submit, .. } = self.submission {
                if batch_submit > 1 {
                    return Err(format!(
                        "job '{}': iodepth_batch above 1 with read_iolog is not modelled (fio's replay delays come between the I/Os of one batch)",
                        self.name
                    ));
                }
            }
            return Ok(());
        }
        if let Some(script) = &self.script {
            let total: u64 = script.iter().map(|io| io.len).sum();
            if self.submission != Submission::Sync || self.trim != Trim::None || self.time_based {
                return Err(format!(
                    "job '{}': a scripted job is synchronous, without trims or time_based",
                    self.name
                ));
            }
            if let Some(io) = script
                .iter()
                .find(|io| io.trim || io.len == 0 || io.len % 512 != 0 || io.offset % 512 != 0)
            {
                return Err(format!(
                    "job '{}': scripted I/O at {} of {} bytes is not a read or write in whole 512-byte sectors",
                    self.name, io.offset, io.len
                ));
            }
            if self.io_limit != total {
                return Err(format!(
                    "job '{}': a scripted job's io size must be its I/Os' total",
                    self.name
                ));
            }
            return Ok(());
        }
        if let RandomGenerator::Lfsr { seed } = self.generator {
            let nblocks = self.size / min_bs.max(1);
            if Lfsr::new(nblocks, seed).is_none() {
                return Err(format!(
                    "job '{}': fio: failed initializing LFSR",
                    self.name
                ));
            }
        }
        if self.rate_process == RateProcess::Poisson
            && self.rate_bytes_per_s == [0, 0]
            && self.rate_iops == [0, 0]
        {
            return Err(format!(
                "job '{}': rate_process=poisson needs a rate or rate_iops",
                self.name
            ));
        }
        if self.time_based && self.runtime_ns.is_none() {
            return Err(format!("job '{}': time_based needs a runtime", self.name));
        }
        Ok(())
    }
}

/// fio's exit_what (fio_terminate_threads): the threads an exitall job's end stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitWhat {
    /// The threads of its reporting group.
    #[default]
    Group,
    /// Every thread running now (TD_RUNNING or later), whatever its group; later
    /// stonewall turns still run.
    Stonewall,
    /// Every thread, those not started yet too: they start and end at once.
    All,
}

/// When a pass over the region ends, whether the job starts another (and `io_limit`
/// still bounds its bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Passes {
    /// Always (time_based jobs; a front end's own jobs).
    #[default]
    Unlimited,
    /// fio 3.33's keep_running, asked before each run of do_io (a run ends with its
    /// pass): the first `loops` runs always go; after them another goes only when
    /// `io_size` was given (`more`), less than `limit` bytes (io_size or size, not
    /// times loops) have moved and at least one largest block is left.
    Fio { loops: u32, limit: u64, more: bool },
}

/// When and how big: the next I/O a job thread wants to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoSpec {
    /// `Write` for a trim (REQ_OP_DISCARD is a write operation).
    pub dir: Dir,
    /// A trim (discard), not a write.
    pub trim: bool,
    pub offset: u64,
    pub len: u64,
}

/// Draws the I/O sequence of one job thread.
pub struct IoSource {
    read_pct: u32,
    bs: [BlockSizes; 2],
    trim: Trim,
    bs_trim: BlockSizes,
    /// trimwrite: the trim whose write comes next (offset, length).
    write_after_trim: Option<(u64, u64)>,
    gen: OffsetGen,
    /// The job's files, when it has several: they give the offsets, not `gen`.
    files: Option<Box<files::FileCursor>>,
    /// zonemode=strided: the zones give the offsets, not `gen`.
    zones: Option<Box<strided::ZoneCursor>>,
    rng: crate::engine::SimRng,
    script: Option<std::sync::Arc<[IoSpec]>>,
    /// The I/O comes from a script or a replay (`next_fixed`), not the pattern.
    fixed: bool,
    /// A replay job's next I/O, set by the simulator's replay step (sim/jobs/replay.rs).
    pub replay_next: Option<IoSpec>,
    pub issued_bytes: u64,
    pub issued_ios: u64,
    /// Reads and writes issued (fio's io_issues, per direction; trims count as writes).
    pub issued_per_dir: [u64; 2],
    /// Bytes issued per direction (fio's rate_io_issue_bytes, the rate's clock).
    pub issued_bytes_per_dir: [u64; 2],
    /// `JobConfig::passes`, the passes ended so far, and the largest block size.
    passes: Passes,
    passes_done: u32,
    max_bs: u64,
    /// The last pass allowed is over: the job issues nothing more.
    exhausted: bool,
    /// `JobConfig::io_limit`, `max_ios` and `time_based`: when the job has issued all.
    io_limit: u64,
    max_ios: u64,
    time_based: bool,
    /// A job that writes and verifies after writing: its I/O goes in fio's runs
    /// (`Runs`), each followed by a verify phase.
    runs: Option<Runs>,
}

/// fio 3.33's thread_main loop for a job that writes and verifies (do_verify): each
/// turn runs do_io (a run of the job's I/O), then do_verify (the pieces that run
/// logged), then asks keep_running whether another turn goes. A run ends where fio's
/// do_io stops: the region is done (get_io_u finds no block: the random map is full,
/// a sequential cursor is at the end), or, on an asynchronous engine, the run has
/// issued `total` bytes (do_io's `bytes_issued`, which io_queue_event counts only for
/// queued I/O: a synchronous engine's completed I/O adds nothing to it).
#[derive(Clone, Copy, Debug)]
struct Runs {
    /// do_io's total_bytes: `size` (at least `io_size` for random writes without a
    /// random map), plus `size` with verify_backlog; u64::MAX on a synchronous engine.
    total: u64,
    /// Bytes issued in this run: the job's I/O and verify_backlog's reads.
    issued: u64,
    /// The run is over: the job issues nothing until `next_run`.
    over: bool,
}

impl IoSource {
    pub fn new(cfg: &JobConfig) -> Self {
        let mut align = cfg.bs[0].min().min(cfg.bs[1].min());
        if cfg.trim == Trim::Only {
            align = cfg.bs_trim.min();
        }
        if cfg.block_align > 0 {
            align = cfg.block_align;
        }
        IoSource {
            read_pct: cfg.read_pct,
            bs: cfg.bs.clone(),
            trim: cfg.trim,
            bs_trim: cfg.bs_trim.clone(),
            write_after_trim: None,
            gen: OffsetGen::new(cfg, align),
            files: cfg
                .files
                .as_ref()
                .map(|f| Box::new(files::FileCursor::new(cfg, f, align))),
            zones: cfg
                .zones
                .map(|z| Box::new(strided::ZoneCursor::new(cfg, z, align))),
            rng: crate::engine::SimRng::new(cfg.seed, 1),
            script: cfg.script.clone(),
            fixed: cfg.script.is_some() || cfg.replay.is_some(),
            replay_next: None,
            issued_bytes: 0,
            issued_ios: 0,
            issued_per_dir: [0; 2],
            issued_bytes_per_dir: [0; 2],
            passes: cfg.passes,
            passes_done: 0,
            max_bs: cfg.bs[0].max().max(cfg.bs[1].max()).max(cfg.bs_trim.max()),
            io_limit: cfg.io_limit,
            max_ios: cfg.max_ios,
            time_based: cfg.time_based,
            exhausted: false,
            runs: Self::runs(cfg),
        }
    }

    /// The runs of a job that writes and verifies after writing (None otherwise).
    fn runs(cfg: &JobConfig) -> Option<Runs> {
        let v = cfg.verify.as_ref()?;
        if !v.do_verify || cfg.read_pct == 100 || cfg.time_based || cfg.script.is_some() {
            return None;
        }
        let total = match cfg.submission {
            Submission::Sync => u64::MAX,
            Submission::Async { .. } => {
                // fio's io_size option (0 when not given); a front end's own job
                // (passes unlimited) has its whole bytes as its io_size.
                let io_size = match cfg.passes {
                    Passes::Fio {
                        limit, more: true, ..
                    } => limit,
                    Passes::Fio { .. } => 0,
                    Passes::Unlimited => cfg.io_limit,
                };
                let mut t = cfg.size;
                if cfg.pattern == Pattern::Random && cfg.norandommap {
                    t = t.max(io_size);
                }
                if v.backlog > 0 {
                    t += cfg.size;
                }
                t
            }
        };
        Some(Runs {
            total,
            issued: 0,
            over: false,
        })
    }

    /// A verifying job's run is over (`Runs`): it issues nothing until `next_run`.
    /// Asked before each I/O of the run, verify_backlog's reads too (do_io checks its
    /// bytes before it gets an io_u).
    pub fn run_over(&mut self) -> bool {
        match &mut self.runs {
            Some(r) => {
                r.over |= r.issued >= r.total;
                r.over
            }
            None => false,
        }
    }

    /// A verify_backlog read of `len` bytes was issued in the run (do_io counts it).
    pub fn count_run_bytes(&mut self, len: u64) {
        if let Some(r) = &mut self.runs {
            r.issued += len;
        }
    }

    /// After a run and its verify phase, fio's keep_running: whether another run goes
    /// (from the region's start: fio reopens the file, fio_file_reset), given the
    /// bytes the job has moved, `io_bytes` (its reads and writes, verify reads
    /// included: fio's td->io_bytes). The first `loops` runs always go; then another
    /// only with `io_size` while less than it has moved. A job that has issued all
    /// (io_size times loops, number_ios) does nothing more (do_io issues nothing).
    pub fn next_run(&mut self, io_bytes: u64) -> bool {
        if self.runs.is_none() || self.exhausted {
            return false;
        }
        self.passes_done += 1;
        let again = !self.done()
            && match self.passes {
                Passes::Unlimited => true,
                Passes::Fio { loops, limit, more } => {
                    self.passes_done < loops
                        || (more && io_bytes < limit && limit - io_bytes >= self.max_bs)
                }
            };
        if again {
            self.gen.reset();
            if let Some(f) = &mut self.files {
                f.new_run();
            }
            if let Some(r) = &mut self.runs {
                r.issued = 0;
                r.over = false;
            }
        } else {
            self.exhausted = true;
        }
        again
    }

    /// Whether the job has issued all it will: its bytes (fio's
    /// io_issue_bytes_exceeded; never for a time_based job, which its runtime ends), its
    /// I/O count (exceeds_number_ios), or its last pass is over.
    #[inline]
    pub fn done(&self) -> bool {
        (!self.time_based && self.issued_bytes >= self.io_limit)
            || (self.max_ios > 0 && self.issued_ios >= self.max_ios)
            || self.exhausted
    }

    /// Whether the job's passes are over (it issues nothing more, whatever `io_limit`).
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    fn pick_bs(&mut self, dir: Dir, trim: bool) -> u64 {
        let bs = if trim {
            &self.bs_trim
        } else {
            &self.bs[dir.index()]
        };
        match bs {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range {
                min,
                max,
                unaligned,
            } => {
                let step = if *unaligned { 512 } else { *min };
                let n = (max - min) / step + 1;
                min + self.rng.below(n) * step
            }
            BlockSizes::Split(v) => {
                // fio's get_next_buflen: a draw in [0, 100) against the running sum
                // of the percentages, in the order fio keeps them; a zero share is
                // skipped, and a draw past the sum takes the last size with a share
                // (percentages that do not add to 100 are used as given, as fio does).
                let r = self.rng.below(100);
                let mut sum = 0u64;
                let mut last = None;
                for (b, w) in v {
                    if *w == 0 {
                        continue;
                    }
                    last = Some(*b);
                    sum += u64::from(*w);
                    if r < sum {
                        return *b;
                    }
                }
                last.or(v.last().map(|(b, _)| *b)).unwrap_or(4096)
            }
        }
    }

    /// fio's get_next_buflen for a block-size range in a sequential stream: a size that
    /// fits in what is left of the region, if the smallest does (fio draws again until
    /// one fits; this takes the largest that fits, aligned to the smallest).
    #[inline]
    fn fit_in_room(&self, d: usize, len: u64) -> u64 {
        let bs = match d {
            2 => &self.bs_trim,
            _ => &self.bs[d],
        };
        if let BlockSizes::Fixed(_) = bs {
            return len;
        }
        if self.files.is_some() || self.zones.is_some() {
            return len;
        }
        let min = bs.min().max(1);
        match self.gen.seq_room(d) {
            Some(room) if len > room && room >= min => room - room % min,
            _ => len,
        }
    }

    /// The offset of the next I/O of `len` bytes in direction `d` (0 read, 1 write,
    /// 2 trim); None when the job's last pass is over.
    #[inline(always)]
    fn next_offset(&mut self, d: usize, len: u64) -> Option<u64> {
        if let Some(f) = &mut self.files {
            if let Some(r) = &mut self.runs {
                let o = f.next_in_run(d, len);
                r.over |= o.is_none();
                return o;
            }
            return Some(f.next(len));
        }
        if let Some(z) = &mut self.zones {
            return Some(z.next(len));
        }
        if let Some(o) = self.gen.next_in(d, len) {
            return Some(o);
        }
        // The region is done (fio: the file is done; keep_running decides, for a
        // verifying job after the run's verify phase: `next_run`).
        if let Some(r) = &mut self.runs {
            r.over = true;
            return None;
        }
        self.passes_done += 1;
        let again = match self.passes {
            Passes::Unlimited => true,
            Passes::Fio { loops, limit, more } => {
                self.passes_done < loops
                    || (more
                        && self.issued_bytes < limit
                        && limit - self.issued_bytes >= self.max_bs)
            }
        };
        if again {
            self.gen.reset();
            if let Some(o) = self.gen.next_in(d, len) {
                return Some(o);
            }
        }
        self.exhausted = true;
        None
    }

    /// The next I/O of a script or a replay.
    fn next_fixed(&mut self) -> IoSpec {
        let io = match &self.script {
            Some(script) => script[self.issued_ios as usize],
            None => self
                .replay_next
                .take()
                .expect("a replay I/O is set before the thread picks it"),
        };
        self.issued_bytes += io.len;
        self.issued_ios += 1;
        io
    }

    /// The next I/O; None when the job's passes are over (`exhausted`).
    pub fn next_io(&mut self) -> Option<IoSpec> {
        if self.fixed {
            return Some(self.next_fixed());
        }
        if self.exhausted || self.run_over() {
            return None;
        }
        if let Some((offset, len)) = self.write_after_trim.take() {
            self.issued_bytes += len;
            self.issued_ios += 1;
            return Some(IoSpec {
                dir: Dir::Write,
                trim: false,
                offset,
                len,
            });
        }
        if self.trim != Trim::None {
            let len = self.pick_bs(Dir::Write, true);
            let len = self.fit_in_room(2, len);
            let offset = self.next_offset(2, len)?;
            self.issued_bytes += len;
            self.issued_ios += 1;
            if self.trim == Trim::ThenWrite {
                self.write_after_trim = Some((offset, len));
            }
            return Some(IoSpec {
                dir: Dir::Write,
                trim: true,
                offset,
                len,
            });
        }
        let dir = match self.read_pct {
            100 => Dir::Read,
            0 => Dir::Write,
            p => {
                if self.rng.below(100) < p as u64 {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let len = self.pick_bs(dir, false);
        let len = self.fit_in_room(dir.index(), len);
        let offset = self.next_offset(dir.index(), len)?;
        self.issued_bytes += len;
        self.issued_ios += 1;
        self.count_run_bytes(len);
        self.issued_per_dir[dir.index()] += 1;
        self.issued_bytes_per_dir[dir.index()] += len;
        Some(IoSpec {
            dir,
            trim: false,
            offset,
            len,
        })
    }
}

/// Earliest time a rate-limited thread may issue again, given what it has issued since
/// `start` (fio's rate/rate_iops: the average since the start never exceeds the limit).
pub fn rate_gate(start: SimTime, bytes: u64, ios: u64, rate_bps: u64, rate_iops: u64) -> SimTime {
    let mut t = start;
    if rate_bps > 0 {
        t = t.max(start + (bytes as u128 * 1_000_000_000 / rate_bps as u128) as u64);
    }
    if rate_iops > 0 {
        t = t.max(start + (ios as u128 * 1_000_000_000 / rate_iops as u128) as u64);
    }
    t
}
