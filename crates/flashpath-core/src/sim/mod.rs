//! The simulation: the event loop and the one place where the layers are wired together.
//!
//! ```text
//!  Thread ──submit (syscall, pin, bio)──▶ Block layer ──dispatch──▶ MMC driver (legacy)
//!    ▲                                                                 │ prep / pre_req
//!    │ wake-up, syscall return                                          ▼
//!    └── block completion ◀── post_req ◀── CMD13 ◀── IRQ ◀── bus ◀──▶ device
//! ```
//!
//! Each arrow that costs time costs it on a resource: a host core (`Cpu`), the MMC bus,
//! or inside the device. Events are handled in (time, insertion) order; `route` turns a
//! layer's output into the next layer's input, so the request path reads top to bottom
//! in `handle`.
//!
//! The legacy MMC path (docs/kernel-behaviour.md §1) in events: a thread that inserts a request
//! into the scheduler runs the hardware queue asynchronously (blk-mq with an elevator
//! inserts with `async = true`), so a kblockd worker wakes on the thread's core, becomes
//! the dispatcher and stays in `queue_rq` while there is work: it prepares the next
//! request (prep + DMA map) while the current one is on the bus,
//! sleeps in `mmc_blk_rw_wait`, is woken by the interrupt of the current one, polls CMD13
//! after a write, starts the prepared request, then runs `post_req` and ends the finished
//! request. A completion that finds no waiter goes to the `mmc_complete` kworker.

use crate::device::{self, DevCommand, DevOp, Device, DeviceConfig};
use crate::engine::{EventQueue, FifoResource, Outbox, SimTime};
use crate::host::block::{Bio, BlockLayer, ReqId};
use crate::host::cpu::Cpu;
use crate::host::{Cmd13Mode, DriverKind, HostConfig};
use crate::stats::{ddir_index, DirStats, JobStats, RunResult, Span, Spans, SystemStats};
use crate::trace::{self, BlkAction, Ctx, Trace, TraceKind};
use crate::workload::{
    rate_gate, Dir, ExitWhat, IoSource, JobConfig, MinRate, PoissonClock, Submission,
};
use flashpath_hist::{batch_bucket, depth_level_bucket};

mod blkev;
mod buffered;
mod cqe;
mod discard;
pub mod errors;
mod fill_device;
mod flow;
mod iopoll;
mod journal;
mod lat_target;
mod min_rate;
mod null_engine;
mod observer;
mod occupancy;
mod offload;
mod progress;
mod replay;
mod rtsx;
pub mod steadystate;
mod ufs;
mod ufs_hpb;
mod verify;
mod verify_async;
pub use buffered::CacheStats;
pub use observer::{IoDone, IoObserver, IoQueued};
pub use progress::{JobProgress, Phase, Progress};
pub use rtsx::IDLE_STOP_NS as RTSX_IDLE_STOP_NS;
pub use verify::{
    content_tag, default_cost_per_4k_ns, FailureKind, VerifyAlgo, VerifyConfig, VerifyFailure,
    EILSEQ, UNTRACKED_NUMBERIO,
};

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub host: HostConfig,
    pub device: DeviceConfig,
    pub driver: DriverKind,
    /// One entry per job thread (numjobs already expanded).
    pub jobs: Vec<JobConfig>,
    /// How every job's region holds data before the jobs start (reads of never-written
    /// blocks cost no NAND read).
    pub precondition: Precondition,
}

/// Whether the kernel gives the device's queue a write cache (QUEUE_FLAG_WC; see
/// `buffered::queue_cache`): then an O_DIRECT|O_SYNC write is a REQ_FUA write (not
/// modelled); without it the block layer strips the FUA and it is a plain write
/// (modelled).
pub fn queue_write_cache(cfg: &SimConfig) -> bool {
    buffered::queue_cache(cfg).write_cache
}

/// The data layout the jobs find on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Never written.
    Off,
    /// Written once in random 4 KiB order through the whole simulated path (not
    /// reported): the scattered layout of a device that has been in use.
    Random,
    /// Mapped at once in address order, as a file written sequentially (fio's layout,
    /// a camera filling an SD card) leaves it. No simulated time passes.
    Sequential,
    /// Random, except on SD cards (sd-rtsx drivers): Sequential, because random 4 KiB
    /// writes with the card's stop-commit semantics would take hours of simulated time.
    Auto,
}

impl From<bool> for Precondition {
    /// true: `Auto`; false: `Off`.
    fn from(on: bool) -> Self {
        if on {
            Precondition::Auto
        } else {
            Precondition::Off
        }
    }
}

impl Precondition {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Precondition::Off),
            "random" => Ok(Precondition::Random),
            "sequential" => Ok(Precondition::Sequential),
            "auto" => Ok(Precondition::Auto),
            other => Err(format!(
                "'{other}' is not a precondition (auto, random, sequential, off)"
            )),
        }
    }
    /// The name `--precondition` takes.
    pub fn name(self) -> &'static str {
        match self {
            Precondition::Off => "off",
            Precondition::Random => "random",
            Precondition::Sequential => "sequential",
            Precondition::Auto => "auto",
        }
    }
    /// The layout a run with `driver` gets: `Auto` resolved.
    pub fn layout(self, driver: DriverKind) -> Precondition {
        match self {
            Precondition::Auto if matches!(driver, DriverKind::SdRtsx { .. }) => {
                Precondition::Sequential
            }
            Precondition::Auto => Precondition::Random,
            p => p,
        }
    }
}

/// The what-if of an infinitely fast storage (the white paper's hw = 0): the device
/// serves every command in no time (an ideal device of the same capacity and interface)
/// and the bus or link moves commands and data in no time. The host's software stays
/// as it is, so a run measures what the software alone allows, size / (pre + post)
/// on one stream.
pub fn instant_hardware(host: &mut crate::host::HostConfig, device: &mut DeviceConfig) {
    let mut d = DeviceConfig::ideal(device.capacity_bytes, 0);
    d.interface = device.interface;
    // The card's registers stay: the kernel derives the queue's discard limits from them.
    d.ext_csd = device.ext_csd;
    d.block_limits = device.block_limits;
    d.name = format!("{} (instant)", device.name);
    *device = d;
    let fast = u64::MAX / 4;
    host.bus.data_bytes_per_s = fast;
    host.bus.clock_hz = fast;
    host.bus.ncr_clocks = 0;
    host.bus.cmd_overhead_ns = 0;
    if let Some(u) = &mut host.ufs {
        u.link_bytes_per_s = fast;
        u.frame_overhead_bytes = 0;
        u.hc_fetch_ns = 0;
    }
}

/// Jobs that write the union of the jobs' regions once, in random 4 KiB order (each
/// block once: the random map), leaving the scattered layout of an aged device.
/// Each region is widened to whole 4 KiB blocks (within `capacity`): a job region of
/// 512-byte sectors still finds its blocks written.
fn precondition_jobs(jobs: &[JobConfig], capacity: u64) -> Vec<JobConfig> {
    let mut regions: Vec<(u64, u64)> = jobs
        .iter()
        .filter(|j| !j.null_engine)
        .flat_map(|j| j.regions())
        .map(|(offset, size)| {
            let a = offset / 4096 * 4096;
            let b = (offset + size).div_ceil(4096) * 4096;
            (a, b.min(capacity / 4096 * 4096))
        })
        .filter(|(a, b)| b > a)
        .collect();
    regions.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in regions {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
        .into_iter()
        .map(|(a, b)| {
            let len = b - a;
            let bs = 4096;
            let mut j = JobConfig::simple(
                "precondition",
                crate::workload::Pattern::Random,
                0,
                bs,
                len / bs * bs,
            );
            j.offset = a;
            j.submission = Submission::Async {
                depth: 32,
                batch_submit: 1,
                batch_complete_min: 1,
            };
            j
        })
        .collect()
}

#[derive(Debug)]
enum Ev {
    /// A job thread may start (after startdelay or its stonewall).
    ThreadStart(u32),
    /// A job thread runs: reaps completions and issues what it may.
    ThreadRun(u32),
    /// A job thread's ramp is over: its measured window starts (sim/occupancy.rs).
    MeasureStart(u32),
    /// A verify_async thread of a job has checked an io_u (sim/verify_async.rs).
    VerifyThread { job: u32, worker: u32 },
    /// The thread's submission work for its pending I/Os is done: bios go to the block layer.
    Submitted(u32),
    /// The kblockd worker starts the dispatch loop.
    DispStart,
    /// The dispatcher finished prep + pre_req of a request: `mmc_blk_rw_wait`.
    DispPrepared(ReqId),
    /// The dispatcher was woken by the interrupt of the request on the bus.
    DispWoken,
    /// The dispatcher ended the previous request and returns from queue_rq.
    DispPosted(Option<ReqId>),
    /// The request is started on the bus.
    BusIssue(ReqId),
    /// The interrupt handler for the request on the bus has run.
    Irq(ReqId),
    /// The `mmc_complete` kworker runs.
    WorkerRun,
    /// hsq: the dispatcher finished prep + pre_req; `mmc_hsq_request` takes the request.
    HsqQueued(ReqId),
    /// hsq: the block completion of the request has run (on its submitting CPU).
    HsqDone(ReqId),
    /// A block request has ended: its I/Os complete.
    ReqEnd(ReqId),
    /// A read's data is ready in the device: stream it over the bus.
    ReadReady { req: ReqId, last_ready: SimTime },
    /// An input for the device.
    Dev(device::Input),
    /// A step of the UFS host driver (`ufs.rs`).
    Ufs(ufs::UfsEv),
    /// The eMMC command queue engine (sim/cqe.rs).
    Cqe(cqe::CqeEv),
    /// The rtsx SD host driver's own events (`sim/rtsx.rs`).
    Rtsx(rtsx::RtsxEv),
    /// Buffered I/O: page cache, writeback, fsync (`sim/buffered.rs`).
    Buf(buffered::BufEv),
    /// The ext4 journal's kjournald2 and commit timer (`sim/journal.rs`).
    Jbd(journal::JbdEv),
    /// A discard request's synchronous issue in the MMC drivers (`sim/discard.rs`).
    Discard(discard::DiscardEv),
    /// fio's helper thread checks steady state (`sim/steadystate.rs`).
    SteadyStateCheck,
    /// io_submit_mode=offload's submit workers (`sim/offload.rs`).
    Offload(offload::OffloadEv),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    NotStarted,
    /// Its turn came, but a job it waits for (wait_for) has not finished.
    Waiting,
    /// Has CPU work booked or is runnable.
    Running,
    /// Asleep waiting for completions.
    Sleeping,
    /// Asleep on a timer (a replay delay, fio's usec_sleep): completions wait for it.
    Delayed,
    Finished,
}

struct Io {
    thread: u32,
    dir: Dir,
    offset: u64,
    len: u64,
    parts_left: u32,
    /// fio's io_u issue start (before the system call).
    t_start: SimTime,
    /// Submission returned (end of slat).
    t_issued: SimTime,
    /// The block layer finished the I/O.
    t_done: SimTime,
    /// The first of its requests started on the hardware (`SimTime::MAX`: not yet).
    t_hw: SimTime,
    /// The last of its requests' interrupts (0: none yet).
    t_irq: SimTime,
    /// Not a fio I/O but a page cache read, a writeback or a flush (`thread` is the job
    /// it is done for: the reader, the job that dirtied the pages, the fsync caller).
    cache: buffered::CacheIo,
    /// A trim (BLKDISCARD): its bios are discards; `dir` is Write.
    trim: bool,
    /// An O_SYNC/O_DSYNC direct write's bios carry REQ_FUA (`o_sync_direct`).
    fua: bool,
    /// An O_SYNC/O_DSYNC direct write by a synchronous system call: blkdev_write_iter
    /// ends it with generic_write_sync (blkdev_fsync) once the write is done. Cleared
    /// when that fsync starts.
    sync_after: bool,
}

impl Io {
    /// A direct I/O of thread `t` fio starts now: `spec`, in `nbios` bios.
    fn direct(t: u32, spec: &crate::workload::IoSpec, nbios: u32, now: SimTime) -> Io {
        Io {
            thread: t,
            dir: spec.dir,
            offset: spec.offset,
            len: spec.len,
            parts_left: nbios,
            t_start: now,
            t_issued: 0,
            t_done: 0,
            t_hw: SimTime::MAX,
            t_irq: 0,
            cache: buffered::CacheIo::None,
            trim: spec.trim,
            fua: false,
            sync_after: false,
        }
    }
}

struct Thread {
    cfg: usize,
    core: u32,
    state: ThreadState,
    src: IoSource,
    depth: u32,
    inflight: u32,
    /// io_us reaped and held by verify_async threads (sim/verify_async.rs).
    held: u32,
    /// I/Os issued (from fio's point of view: from the start of the system call) and
    /// not yet reaped; integrated over time for Little's law.
    outstanding: u32,
    /// I/Os chosen and being submitted by the current system call.
    submitting: Vec<u32>,
    /// Completed I/Os not yet reaped by the thread.
    completed: Vec<u32>,
    start: SimTime,
    measure_start: SimTime,
    /// The busy times at the start of its measured window (sim/occupancy.rs).
    occ_mark: Option<occupancy::Mark>,
    end: SimTime,
    ios_since_think: u32,
    /// exitall: another job of the group ended; issue nothing more.
    terminated: bool,
    stats: JobStats,
    last_change: SimTime,
    /// A replay job's trace position (sim/replay.rs).
    replay: Option<Box<replay::ReplayThread>>,
    /// Polled completion (sim/iopoll.rs).
    spin: iopoll::Spin,
    /// rate_process=poisson: the issue clock (workload/rate.rs).
    poisson: Option<PoissonClock>,
    /// rate_min / rate_iops_min: fio's check state (workload/rate.rs).
    min_rate: Option<MinRate>,
    /// fio's flow control (sim/flow.rs).
    flow: Option<flow::FlowSeat>,
    /// A think-time or rate sleep of this length waits for the thread's I/Os in flight
    /// first (fio's handle_thinktime and rate_ddir call io_u_quiesce, then sleep).
    pause: Option<u64>,
    /// fio's latency profile (sim/lat_target.rs).
    lat: Option<lat_target::LatProfile>,
    /// io_submit_mode=offload's submit workers (sim/offload.rs).
    offload: Option<Box<offload::Pool>>,
}

/// The legacy MMC driver's state (one request on the bus, one prepared).
#[derive(Default)]
struct MmcLegacy {
    /// The core of the kblockd worker running the dispatch loop, if any.
    dispatcher: Option<u32>,
    /// Prepared request waiting in mmc_blk_rw_wait.
    prepared: Option<ReqId>,
    /// Request on the bus or in the device.
    active: Option<ReqId>,
    /// Finished on the hardware, waiting for CMD13 polling and post_req (mq->complete_req).
    complete_req: Option<ReqId>,
    /// The kworker holds complete_lock until then.
    lock_free_at: SimTime,
    worker_queued: bool,
}

/// The host software queue's state (mmc_hsq.c).
#[derive(Default)]
struct MmcHsq {
    /// Requests in slots, not yet started, in dispatch order.
    queue: std::collections::VecDeque<ReqId>,
    /// The request on the hardware (`hsq->mrq`).
    hw: Option<ReqId>,
    /// Requests dispatched to the driver and not yet completed (`mq->in_flight`).
    in_flight: u32,
    /// The dynamic variant's raised limit is in force (set at each pump).
    burst: bool,
}

pub struct Sim {
    cfg: SimConfig,
    /// Some job writes O_DIRECT|O_SYNC: its bios may carry REQ_FUA (`req_fua`).
    any_fua_job: bool,
    hsq: MmcHsq,
    ufs: ufs::UfsState,
    cqe: cqe::MmcCqe,
    q: EventQueue<Ev>,
    now: SimTime,
    cpu: Cpu,
    bus: FifoResource,
    block: BlockLayer,
    dev: Device,
    dev_out: Outbox<device::Input, device::Output>,
    mmc: MmcLegacy,
    threads: Vec<Thread>,
    ios: Vec<Io>,
    free_ios: Vec<u32>,
    /// When the device releases busy for each write request (indexed by request id).
    dev_ready_at: Vec<SimTime>,
    scratch: Vec<u32>,
    sys: SystemStats,
    unfinished: usize,
    /// Leading preconditioning jobs, not reported.
    prefill: usize,
    /// The event trace, when enabled.
    trace: Option<Trace>,
    /// The rtsx SD host driver's state.
    rtsx: rtsx::Rtsx,
    /// Page cache and writeback state (`sim/buffered.rs`).
    buf: buffered::Buffered,
    /// The ext4 journal of a host with `[fs]` (`sim/journal.rs`).
    jbd: journal::Journal,
    /// The submitting thread's plug, for block-event traces.
    blk_plug: blkev::PlugTrace,
    /// A discard request waiting for the MMC host to be idle (`sim/discard.rs`).
    disc: discard::DiscardState,
    /// Followers of the reported jobs' I/Os (`sim/observer.rs`).
    observers: Vec<Box<dyn IoObserver>>,
    /// fio's flow_id groups (sim/flow.rs).
    flows: Vec<flow::FlowGroup>,
    /// fio's verify, when some job verifies (`sim/verify.rs`); the device then tracks
    /// content.
    verify: Option<Box<verify::Verify>>,
    /// fio's steady-state detection (`sim/steadystate.rs`).
    ss: steadystate::SteadyState,
    /// The time some request was on the hardware (`sim/occupancy.rs`).
    hw_busy: occupancy::HwBusy,
}

impl Sim {
    pub fn new(mut cfg: SimConfig) -> Result<Self, String> {
        if cfg.jobs.is_empty() {
            return Err("no jobs to run".into());
        }
        let mut prefill = 0;
        let layout = cfg.precondition.layout(cfg.driver);
        let instant_pre = layout == Precondition::Sequential;
        if layout == Precondition::Random {
            let mut pre = precondition_jobs(&cfg.jobs, cfg.device.capacity_bytes);
            prefill = pre.len();
            cfg.jobs[0].stonewall = true;
            for j in &mut cfg.jobs {
                for w in &mut j.wait_for {
                    *w += prefill;
                }
            }
            pre.append(&mut cfg.jobs);
            cfg.jobs = pre;
        }
        for (i, j) in cfg.jobs.iter().enumerate() {
            if let Some(&w) = j.wait_for.iter().find(|&&w| w >= i) {
                return Err(format!(
                    "job '{}': it waits for job {w}, which is not an earlier job",
                    j.name
                ));
            }
            j.validate()?;
            if let Some(c) = j.cpu.filter(|&c| c >= cfg.host.cores) {
                return Err(format!(
                    "job '{}': CPU {c} is not one of host '{}''s cores (0..{})",
                    j.name,
                    cfg.host.name,
                    cfg.host.cores - 1
                ));
            }
            let cap = cfg.device.capacity_bytes;
            let beyond = j.regions().into_iter().find(|&(o, n)| o + n > cap);
            if let Some((o, n)) = beyond.filter(|_| !j.null_engine) {
                return Err(format!(
                    "job '{}': region {}..{} is beyond the device's {} bytes",
                    j.name,
                    o,
                    o + n,
                    cap
                ));
            }
        }
        check_driver(&cfg)?;
        let card_mode = cfg.device.bus_mode;
        cfg.host.bus.negotiate(card_mode);
        ufs_hpb::check(&cfg)?;
        ufs_hpb::configure_device(&mut cfg);
        iopoll::check(&cfg)?;
        offload::check(&cfg)?;
        buffered::check(&cfg)?;
        journal::check(&cfg)?;
        discard::check(&cfg)?;
        let verify = verify::setup(&cfg)?;
        let host = &cfg.host;
        let cqe = cqe::MmcCqe::new(cfg.driver, host)?;
        let (flows, mut flow_seats) = flow::seats(&cfg);
        let threads = cfg
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                // Spread threads over the cores, starting after the IRQ core, as the
                // scheduler's load balancing would for busy threads.
                let core =
                    j.cpu.unwrap_or((host.irq_core + 1 + i as u32) % host.cores) % host.cores;
                Ok(Thread {
                    cfg: i,
                    core,
                    state: ThreadState::NotStarted,
                    src: IoSource::new(j),
                    depth: j.depth(),
                    inflight: 0,
                    held: 0,
                    outstanding: 0,
                    submitting: Vec::new(),
                    completed: Vec::new(),
                    start: 0,
                    measure_start: 0,
                    occ_mark: None,
                    end: 0,
                    ios_since_think: 0,
                    terminated: false,
                    stats: JobStats {
                        job: i,
                        name: j.name.clone(),
                        dirs: [DirStats::default(), DirStats::default()],
                        trim: DirStats::default(),
                        runtime_ns: 0,
                        start_ns: 0,
                        end_ns: 0,
                        ctx: 0,
                        outstanding_area: 0,
                        depth_hist: [0; 7],
                        submit_hist: [0; 7],
                        complete_hist: [0; 7],
                        sys_ns: 0,
                        usr_ns: 0,
                        spans: Spans::default(),
                        dir_spans: Default::default(),
                        sync_lat: Default::default(),
                        script_lat_ns: Vec::new(),
                        error: None,
                        errors: Default::default(),
                        last_verror: None,
                        lat_depth: None,
                        verify_failure: None,
                        dir_runtime_ns: [None, None],
                        steadystate: None,
                        enospc_write: None,
                        occupancy: None,
                    },
                    last_change: 0,
                    replay: match &j.replay {
                        Some(r) => Some(Box::new(replay::ReplayThread::new((r.open)()?))),
                        None => None,
                    },
                    spin: iopoll::Spin {
                        on: Sim::spins(j),
                        ..Default::default()
                    },
                    poisson: (j.rate_process == crate::workload::RateProcess::Poisson)
                        .then(|| PoissonClock::new(j.seed)),
                    min_rate: j.rate_min.any().then(MinRate::default),
                    flow: flow_seats[i].take(),
                    pause: None,
                    lat: None,
                    offload: offload::Pool::new(j, core),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let n = threads.len();
        let mut sim = Sim {
            any_fua_job: cfg.jobs.iter().any(|j| j.direct && j.o_sync),
            prefill,
            trace: None,
            blk_plug: blkev::PlugTrace::default(),
            disc: discard::DiscardState::default(),
            observers: Vec::new(),
            flows,
            verify,
            ss: steadystate::SteadyState::default(),
            hw_busy: Default::default(),
            rtsx: rtsx::Rtsx::default(),
            buf: buffered::Buffered::new(&cfg),
            jbd: journal::Journal::new(&cfg),
            hsq: MmcHsq::default(),
            ufs: ufs::UfsState::new(ufs_hpb::HpbState::new(&cfg)),
            cpu: Cpu::new(host.cores),
            bus: FifoResource::new(),
            block: BlockLayer::new(
                host.block.scheduler,
                // With CQE the blk-mq tags are the task IDs (mmc_init_queue).
                cqe.tags(host.block.nr_requests),
                host.block.max_request_bytes,
            ),
            cqe,
            dev: Device::new(&cfg.device, cfg.jobs[0].seed),
            dev_out: Outbox::new(),
            mmc: MmcLegacy::default(),
            threads,
            ios: Vec::new(),
            free_ios: Vec::new(),
            dev_ready_at: Vec::new(),
            scratch: Vec::new(),
            sys: SystemStats::default(),
            unfinished: n,
            q: EventQueue::new(),
            now: 0,
            cfg,
        };
        discard::setup(&mut sim);
        steadystate::setup(&mut sim)?;
        sim.ufs_hpb_setup();
        if sim.verify.is_some() {
            sim.dev.track_content();
            sim.verify_async_setup();
        }
        if instant_pre {
            for j in precondition_jobs(&sim.cfg.jobs, sim.cfg.device.capacity_bytes) {
                sim.dev.precondition(j.offset / 512, j.size / 512);
            }
        }
        // Jobs before the first stonewall start at once; the others when their turn comes.
        for t in 0..n {
            if sim.cfg.jobs[t].stonewall && t > 0 {
                break;
            }
            sim.q
                .push(sim.cfg.jobs[t].startdelay_ns, Ev::ThreadStart(t as u32));
        }
        Ok(sim)
    }

    /// Records an event trace from now on (see [`crate::trace`]).
    pub fn enable_trace(&mut self) {
        let tasks = (self.prefill..self.threads.len())
            .map(|t| (trace::pid::THREAD + t as u32, self.cfg.jobs[t].name.clone()))
            .collect();
        self.trace = Some(Trace {
            tasks,
            cores: self.cfg.host.cores,
            ..Trace::default()
        });
        self.block.log = Some(Vec::new());
        if self.prefill == 0 {
            self.record_work();
        }
    }

    /// CPU and NAND work is recorded for the reported jobs only (not preconditioning).
    fn record_work(&mut self) {
        self.cpu.record();
        self.dev.record_nand();
    }

    /// Ends the trace: the recorded trace, with the CPU and NAND work booked so far.
    pub fn take_trace(&mut self) -> Option<Trace> {
        let mut tr = self.trace.take()?;
        tr.cpu = self.cpu.take_slices();
        tr.nand = self.dev.take_nand_slices();
        Some(tr)
    }

    /// Hands over what the trace recorded since the last call (see
    /// [`trace::TraceChunk`]) and keeps only what may still change, so a writer that
    /// calls it between `run_until` steps streams the trace in bounded memory. `None`
    /// when the trace is off. `Sim::take_trace` gives what is left at the end.
    pub fn drain_trace(&mut self) -> Option<trace::TraceChunk> {
        let now = self.now;
        let tr = self.trace.as_mut()?;
        tr.floor = now;
        let events = std::mem::take(&mut tr.events);
        let chunk = trace::TraceChunk {
            events,
            cpu: self.cpu.drain_final_slices(now),
            nand: self.dev.take_nand_slices(),
            now,
            start: tr.started.then_some(tr.start),
            cores: tr.cores,
        };
        Some(chunk)
    }

    /// Adds a follower of the reported jobs' I/Os (see [`IoObserver`]).
    pub fn add_observer(&mut self, o: Box<dyn IoObserver>) {
        self.observers.push(o);
    }

    /// Ends the run's observers: each is closed at the end of the simulated run, and
    /// handed back. The first error an observer reports is returned.
    pub fn close_observers(&mut self) -> Result<Vec<Box<dyn IoObserver>>, String> {
        let mut v = std::mem::take(&mut self.observers);
        for o in &mut v {
            o.close(self.now)?;
        }
        Ok(v)
    }

    /// The simulated device (tests: fault injection between run steps).
    pub fn device_mut(&mut self) -> &mut Device {
        &mut self.dev
    }

    /// The trace recorded so far, if enabled.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    /// Runs to completion.
    pub fn run(mut self) -> RunResult {
        self.run_until(u64::MAX);
        self.finish()
    }

    /// Handles events up to simulated time `limit`; returns false when nothing is left.
    pub fn run_until(&mut self, limit: SimTime) -> bool {
        while let Some(t) = self.q.peek_time() {
            if t > limit {
                return true;
            }
            let (t, ev) = self.q.pop().expect("peeked");
            if matches!(ev, Ev::SteadyStateCheck) && !self.ss_wanted() {
                continue; // a check after the last steady-state job ended: time stays
            }
            debug_assert!(t >= self.now, "time never goes backwards");
            self.now = t;
            self.sys.events += 1;
            self.handle(ev);
        }
        false
    }

    /// When the next event is due, if any: a caller stepping the simulation in slices
    /// of simulated time skips the idle ones (a thinktime of hours costs no wall time).
    pub fn next_event_at(&self) -> Option<SimTime> {
        self.q.peek_time()
    }

    /// Simulated time and I/Os completed so far (for progress reports).
    pub fn progress(&self) -> (SimTime, u64) {
        let ios = self
            .threads
            .iter()
            .map(|t| t.stats.dirs[0].ios + t.stats.dirs[1].ios + t.stats.trim.ios)
            .sum();
        (self.now, ios)
    }

    pub fn finish(mut self) -> RunResult {
        assert_eq!(self.unfinished, 0, "every job thread finishes");
        assert!(
            self.ios.len() == self.free_ios.len(),
            "every I/O completes exactly once"
        );
        self.sys = self.system_stats();
        if let Some(v) = &mut self.verify {
            for (t, j) in v.jobs.iter_mut().enumerate() {
                if let Some(j) = j {
                    let th = &mut self.threads[t];
                    th.stats.verify_failure = j.failure.take();
                    th.stats.dir_runtime_ns =
                        j.runtimes(th.measure_start, th.end, self.cfg.jobs[t].read_pct > 0);
                }
            }
        }
        let prefill = self.prefill;
        for t in prefill..self.threads.len() {
            self.threads[t].stats.steadystate = self.ss_result(t);
        }
        RunResult {
            jobs: self
                .threads
                .into_iter()
                .skip(prefill)
                .map(|mut t| {
                    t.stats.job -= prefill;
                    t.stats.close_spans();
                    t.stats
                })
                .collect(),
            system: self.sys,
        }
    }

    /// The run's system statistics as they stand now.
    fn system_stats(&self) -> SystemStats {
        let mut sys = self.sys.clone();
        sys.sim_end_ns = self.now;
        sys.core_busy_ns = self.cpu.busy_ns();
        sys.bus_busy_ns = self.bus.busy_ns();
        let (h2d, d2h) = self.ufs_link_busy_ns();
        sys.link_busy_ns = [h2d, d2h];
        sys.requests = self.block.requests_dispatched;
        sys.merges = self.block.merges;
        sys.cache = self.buf_stats();
        sys.device = self.dev.stats().clone();
        sys.hpb = self.ufs.hpb.as_ref().map(|h| h.drv.stats);
        sys.au = self.dev.allocation_unit().map(|a| a.au_stats().clone());
        sys
    }

    /// The request path: every event, in order.
    fn handle(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::ThreadStart(t) => self.thread_start(t),
            Ev::ThreadRun(t) => self.thread_run(t),
            Ev::MeasureStart(t) => self.occupancy_ramp_end(t),
            Ev::VerifyThread { job, worker } => self.verify_thread_done(job, worker as usize),
            Ev::Submitted(t) => self.submitted(t),
            Ev::DispStart => self.disp_next(now),
            Ev::DispPrepared(r) => self.disp_prepared(r),
            Ev::DispWoken => {
                let r = self
                    .mmc
                    .prepared
                    .take()
                    .expect("woken dispatcher has a prepared request");
                self.disp_proceed(now, r);
            }
            Ev::DispPosted(prev) => {
                if let Some(p) = prev {
                    self.req_end(p);
                }
                self.disp_next(now);
            }
            Ev::BusIssue(r) => self.bus_issue(r),
            Ev::ReadReady { req, last_ready } => {
                if let DriverKind::MmcCqe { .. } = self.cfg.driver {
                    self.cqe_read_ready(req, last_ready);
                } else {
                    self.bus_read_data(req, last_ready);
                }
            }
            Ev::Irq(r) => self.irq(r),
            Ev::WorkerRun => self.worker_run(),
            Ev::HsqQueued(r) => self.hsq_queued(r),
            Ev::HsqDone(r) => {
                self.hsq.in_flight -= 1;
                self.req_end(r);
                // blk-mq's restart: a completion reruns the queue that was refused.
                let core = self.cfg.host.irq_core;
                self.kick(core);
            }
            Ev::ReqEnd(r) => self.req_end(r),
            Ev::Dev(input) => self.device(input),
            Ev::Ufs(e) => self.ufs_handle(e),
            Ev::Cqe(e) => self.cqe_handle(e),
            Ev::Offload(e) => self.offload_handle(e),
            Ev::Rtsx(e) => self.rtsx_event(e),
            Ev::Buf(e) => self.buf_handle(e),
            Ev::Jbd(e) => self.jbd_handle(e),
            Ev::Discard(e) => self.discard_handle(e),
            Ev::SteadyStateCheck => self.ss_check(),
        }
    }

    /// The wiring from the device's outputs to the host side.
    fn route_device(&mut self) {
        let (timers, emits) = self.dev_out.drain();
        let timers: Vec<_> = timers.collect();
        let emits: Vec<_> = emits.collect();
        for (at, input) in timers {
            self.q.push(at, Ev::Dev(input));
        }
        for (at, out) in emits {
            if self.cfg.driver.is_ufs() {
                match out {
                    device::Output::ReadReady { tag, last_ready } => {
                        self.ufs_on_read_ready(tag, at, last_ready)
                    }
                    device::Output::Done { tag, .. } => self.ufs_on_done(tag, at),
                    device::Output::HpbHints { tag, hints } => self.ufs_hpb_hints(tag, hints),
                }
                continue;
            }
            match out {
                device::Output::ReadReady { tag, last_ready } => {
                    self.q.push(
                        at,
                        Ev::ReadReady {
                            req: tag,
                            last_ready,
                        },
                    );
                }
                device::Output::HpbHints { .. } => {
                    unreachable!("HPB runs on UFS only (ufs_hpb::configure_device)")
                }
                device::Output::Done { tag, .. } if tag == rtsx::STOP_TAG => {
                    self.rtsx_stop_answered(at);
                }
                device::Output::Done { tag, .. } if self.disc.busy_cmd_of(tag) => {
                    self.discard_busy_end(tag, at);
                }
                device::Output::Done { tag, .. } => {
                    // A write or flush released busy at `at`: known now, so the driver's
                    // busy polling can be computed against it.
                    let i = tag as usize;
                    if self.dev_ready_at.len() <= i {
                        self.dev_ready_at.resize(i + 1, 0);
                    }
                    self.dev_ready_at[i] = at;
                    self.irq_after_write(tag, at);
                }
            }
        }
    }

    fn device(&mut self, input: device::Input) {
        if self.verify.is_some() {
            self.verify_stage_write(&input);
        }
        let now = self.now;
        let mut out = std::mem::take(&mut self.dev_out);
        self.dev.handle(now, input, &mut out);
        self.dev_out = out;
        self.route_device();
    }

    // ---------------------------------------------------------------- threads

    fn thread_start(&mut self, t: u32) {
        let now = self.now;
        let waits = &self.cfg.jobs[self.threads[t as usize].cfg].wait_for;
        if waits
            .iter()
            .any(|&w| self.threads[w].state != ThreadState::Finished)
        {
            // wait_for: started by the last of its waitees' ends (`thread_finish`).
            self.threads[t as usize].state = ThreadState::Waiting;
            return;
        }
        let cfg = &self.cfg.jobs[self.threads[t as usize].cfg];
        let ramp = cfg.ramp_ns;
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Running;
        th.start = now;
        th.measure_start = now.saturating_add(ramp);
        th.last_change = now;
        th.stats.start_ns = now;
        if cfg.lat_target.is_some() {
            self.lat_target_start(t);
        }
        self.occupancy_start(t);
        if self.verify.is_some() {
            self.verify_dry_run(t);
        }
        if t as usize >= self.prefill {
            let job = t as usize - self.prefill;
            for o in &mut self.observers {
                o.job_started(job, now, now + ramp);
            }
            self.ss_thread_started(t as usize);
        }
        if t as usize == self.prefill {
            self.dev.age_data();
        }
        if t as usize == self.prefill && self.trace.is_some() {
            if let Some(tr) = &mut self.trace {
                tr.start = now;
                tr.started = true;
            }
            if self.prefill > 0 {
                self.record_work();
            }
        }
        self.thread_run(t);
    }

    /// fio's disk statistics samples: once preconditioning is over, and at the end.
    fn disk_sample(&mut self, t: u32) {
        let now = self.now;
        if (t as usize) < self.prefill
            && self.threads[..self.prefill]
                .iter()
                .all(|x| x.state == ThreadState::Finished)
        {
            self.sys.disk_start = self.block.disk_stats(now);
        }
        if self.unfinished == 0 {
            self.sys.disk_end = self.block.disk_stats(now);
        }
    }

    /// fio's exitall (td_exitall → fio_terminate_threads): the threads `exit_what`
    /// names stop issuing: `group`, those of `t`'s reporting group; `stonewall`, those
    /// running now; `all`, every one, those not started yet too. A thread asleep in
    /// think time or a rate limit ends when it wakes (fio's signal would end the sleep at
    /// once: an approximation).
    fn exit_group(&mut self, t: usize) {
        let (what, group) = (self.cfg.jobs[t].exit_what, self.cfg.jobs[t].group_id);
        for i in self.prefill..self.threads.len() {
            let th = &mut self.threads[i];
            let named = match what {
                ExitWhat::Group => self.cfg.jobs[i].group_id == group,
                ExitWhat::Stonewall => matches!(
                    th.state,
                    ThreadState::Running | ThreadState::Sleeping | ThreadState::Delayed
                ),
                ExitWhat::All => true,
            };
            if i == t || !named || th.state == ThreadState::Finished {
                continue;
            }
            th.terminated = true;
        }
    }

    fn job_done_issuing(&self, t: u32) -> bool {
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        if let Some(rt) = cfg.runtime_ns {
            if self.now >= th.start.saturating_add(cfg.ramp_ns).saturating_add(rt) {
                return true;
            }
        }
        let src_done = th.src.done();
        if src_done && cfg.fill_enospc {
            // The free space is written: the next write fails (sim/fill_device.rs), and
            // fio then skips the job's verify phase (td->terminate).
            return true;
        }
        if let Some(j) = self
            .verify
            .as_ref()
            .and_then(|v| v.jobs[t as usize].as_ref())
        {
            return th.terminated || j.done(src_done);
        }
        th.terminated || src_done
    }

    fn account_outstanding(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if now > th.last_change {
            let from = th.last_change.max(th.measure_start);
            if now > from {
                th.stats.outstanding_area += th.outstanding as u128 * (now - from) as u128;
            }
            th.last_change = now;
        }
    }

    /// The thread runs: it reaps what completed, then issues as its engine allows.
    fn thread_run(&mut self, t: u32) {
        if self.threads[t as usize].offload.is_some() {
            return self.offload_run(t);
        }
        let now = self.now;
        // Reap completions (their completion latency ends now, when fio sees them), at
        // most iodepth_batch_complete_max of them (the rest wait for the next reap).
        let mut done = std::mem::take(&mut self.threads[t as usize].completed);
        let reap_max = self.cfg.jobs[self.threads[t as usize].cfg].reap_max as usize;
        if reap_max > 0 && done.len() > reap_max {
            self.threads[t as usize].completed = done.split_off(reap_max);
        }
        if !done.is_empty() {
            self.account_outstanding(t);
        }
        if !done.is_empty() {
            let b = batch_bucket(done.len() as u32);
            self.threads[t as usize].stats.complete_hist[b] += 1;
        }
        // An O_SYNC direct write's system call goes on with its fsync (synchronous
        // engines: one I/O at a time).
        if let [io] = done[..] {
            if self.ios[io as usize].sync_after {
                done.clear();
                self.threads[t as usize].completed = done;
                return self.o_sync_direct_fsync(t, io);
            }
        }
        if !done.is_empty() && self.threads[t as usize].lat.is_some() {
            self.lat_target_reaped(t, &done);
        }
        let mut verified_4k = 0;
        for &io in &done {
            if self.verify.is_some() {
                verified_4k += self.verify_reaped(t, io);
            }
            self.record_io(t, io);
        }
        if !done.is_empty() && self.threads[t as usize].min_rate.is_some() {
            self.check_min_rate(t);
        }
        done.clear();
        let rest = std::mem::replace(&mut self.threads[t as usize].completed, done);
        self.threads[t as usize].completed.extend(rest);
        if verified_4k > 0 {
            // fio checks what it read in the completion path, on the reaping thread's
            // core, before it goes on.
            return self.verify_cpu(t, verified_4k);
        }
        if self.buf_sync_due(t) {
            return;
        }

        if self.job_done_issuing(t) {
            if self.fill_enospc(t) {
                return;
            }
            if self.threads[t as usize].inflight == 0 && self.threads[t as usize].held > 0 {
                // verify_async: the verify threads still hold io_us.
                return self.verify_async_block(t);
            }
            if self.threads[t as usize].inflight == 0 {
                if self.buf_end_fsync(t) {
                    return;
                }
                self.thread_finish(t);
            } else {
                self.wait_for_completions(t);
            }
            return;
        }
        if self.threads[t as usize].lat.is_some() && self.lat_target_check(t) {
            // The latency profile quiesces the queue before it moves on.
            self.wait_for_completions(t);
            return;
        }
        let th = &mut self.threads[t as usize];
        if let Some(len) = th.pause {
            // Quiesced for a think-time or rate sleep: then the sleep, on a timer
            // (completions wait for the thread to wake).
            if th.inflight > 0 {
                self.wait_for_completions(t);
            } else {
                th.pause = None;
                th.state = ThreadState::Delayed;
                self.q.push(now + len, Ev::ThreadRun(t));
            }
            return;
        }
        if th.held > 0 && th.inflight + th.held >= th.depth {
            // verify_async: every io_u is in flight or with a verify thread.
            return self.verify_async_block(t);
        }
        if th.inflight >= th.depth {
            self.wait_for_completions(t);
            return;
        }
        if th.flow.is_some() && self.flow_stalled(t) {
            return;
        }
        let th = &self.threads[t as usize];
        if th.replay.is_some() {
            if !self.replay_step(t) {
                return;
            }
            if self.threads[t as usize].terminated {
                // The replay's trace is over.
                return self.thread_run(t);
            }
        }
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        let submission = cfg.submission;
        // Think time every `thinktime_blocks` I/Os, and rate limits.
        let mut gate = now;
        let think = cfg.thinktime_ns > 0 && th.ios_since_think >= cfg.thinktime_blocks.max(1);
        if think {
            gate = now.saturating_add(cfg.thinktime_ns);
        }
        let th = &mut self.threads[t as usize];
        if let Some(p) = &mut th.poisson {
            // rate_process=poisson (workload/rate.rs): each issue draws the next gap.
            for i in 0..2 {
                let iops = if cfg.rate_iops[i] > 0 {
                    cfg.rate_iops[i]
                } else {
                    cfg.rate_bytes_per_s[i] / cfg.bs[i].min().max(1)
                };
                if iops > 0 {
                    let at = p.next_issue_ns(i, th.src.issued_per_dir[i], iops);
                    gate = gate.max(th.start + at);
                }
            }
        }
        let th = &self.threads[t as usize];
        for d in [Dir::Read, Dir::Write] {
            let i = d.index();
            if th.poisson.is_none() && (cfg.rate_bytes_per_s[i] > 0 || cfg.rate_iops[i] > 0) {
                // fio's clock counts what was issued (usec_for_io: rate_io_issue_bytes).
                let s = &th.src;
                let g = rate_gate(
                    th.start,
                    s.issued_bytes_per_dir[i],
                    s.issued_per_dir[i],
                    cfg.rate_bytes_per_s[i],
                    cfg.rate_iops[i],
                );
                gate = gate.max(g);
            }
        }
        if think {
            self.threads[t as usize].ios_since_think = 0;
        }
        if gate > now {
            // fio quiesces before it sleeps (io_u_quiesce in handle_thinktime and
            // rate_ddir), then sleeps the time it computed before.
            let th = &mut self.threads[t as usize];
            if th.inflight > 0 {
                th.pause = Some(gate - now);
                self.wait_for_completions(t);
            } else {
                th.state = ThreadState::Delayed;
                self.q.push(gate, Ev::ThreadRun(t));
            }
            return;
        }
        // Choose the I/Os of this system call and book its CPU work.
        let batch = match submission {
            Submission::Sync => 1,
            Submission::Async { batch_submit, .. } => batch_submit.max(1),
        };
        let costs = &self.cfg.host.costs;
        let (c_syscall, c_aio, c_pin, c_pin_read, c_block) = (
            costs.syscall_ns,
            costs.aio_submit_ns,
            costs.pin_per_4k_ns,
            costs.pin_per_4k_read_ns,
            costs.block_submit_ns,
        );
        let null = cfg.null_engine;
        let mut cost = match submission {
            _ if null => 0,
            Submission::Sync => c_syscall,
            Submission::Async { .. } => c_aio,
        };
        let max_bytes = self.cfg.host.block.max_request_bytes;
        let splits = self.cfg.host.kernel.splits_bios();
        let max_discard_bytes = (self.block.max_discard_sectors() as u64 * 512).max(512);
        let direct = cfg.direct;
        let trim_errno = cfg.trim_errno;
        let mut trim_failed = None;
        let mut picked = std::mem::take(&mut self.threads[t as usize].submitting);
        for _ in 0..batch {
            let th = &mut self.threads[t as usize];
            if th.inflight + th.held + picked.len() as u32 >= th.depth {
                break;
            }
            let src_done = th.src.done();
            let mut verify_of = None;
            let spec = match self
                .verify
                .as_mut()
                .and_then(|v| v.jobs[t as usize].as_mut())
            {
                None if src_done => break,
                None => match th.src.next_io() {
                    Some(spec) => spec,
                    None => break,
                },
                Some(j) => {
                    let next = j.next(
                        &mut th.src,
                        src_done,
                        th.inflight + picked.len() as u32,
                        now,
                    );
                    // verify_only: a later run's dry run, counted as issued.
                    let (ios, bytes) = j.take_dry_pending();
                    th.stats.dirs[1].ios += ios;
                    th.stats.dirs[1].bytes += bytes;
                    th.stats.depth_hist[0] += ios;
                    match next {
                        verify::Next::Io { spec, verify } => {
                            verify_of = verify;
                            spec
                        }
                        verify::Next::Wait | verify::Next::Done => break,
                    }
                }
            };
            if spec.trim && trim_errno.is_some() {
                // fio's os_trim: ioctl(BLKDISCARD) on a regular file fails in the system
                // call (a trim job runs one at a time: nothing else is picked).
                trim_failed = trim_errno;
                break;
            }
            let nbios = if spec.trim {
                // __blkdev_issue_discard and blk_bio_discard_split: pieces of at most
                // max_discard_sectors, granularity-aligned.
                self.disc.pieces(spec.offset, spec.len, max_discard_bytes)
            } else {
                rw_pieces(spec.len, max_bytes, splits)
            };
            if null {
                cost += null_engine::per_io_cost(&self.cfg.host.costs);
            } else if let Submission::Async { .. } = submission {
                cost += c_syscall;
            }
            if null {
                // No kernel work.
            } else if spec.trim {
                // ioctl(BLKDISCARD): no pages to pin; the discard bios.
                cost += c_block * nbios as u64;
            } else if direct {
                // Buffered I/O books its page cache work in sim/buffered.rs.
                let pin = match spec.dir {
                    Dir::Read => c_pin_read,
                    _ => c_pin,
                };
                cost += pin * spec.len.div_ceil(4096) + c_block * nbios as u64;
            }
            let io = self.alloc_io(Io::direct(t, &spec, nbios, now));
            if direct && !null && !spec.trim && spec.dir == Dir::Write {
                self.o_sync_direct(t, io);
            }
            if let Some(v) = &mut self.verify {
                verify::issued(v, t as usize, io, &spec, verify_of);
            }
            self.observe_queued(t, &spec);
            picked.push(io);
        }
        if let Some(errno) = trim_failed {
            self.threads[t as usize].submitting = picked;
            return self.trim_failed(t, errno, c_syscall);
        }
        if picked.is_empty() && self.threads[t as usize].src.exhausted() {
            // The job's last pass ended: it issues nothing more (job_done_issuing).
            self.threads[t as usize].submitting = picked;
            return self.thread_run(t);
        }
        if picked.is_empty() {
            // A verifying job waits for a write it must verify next, or for the write
            // phase to end: a completion wakes it.
            self.threads[t as usize].submitting = picked;
            self.threads[t as usize].state = ThreadState::Sleeping;
            return;
        }
        self.account_outstanding(t);
        if self.threads[t as usize].flow.is_some() {
            self.flow_issued(t, picked.len() as u64);
        }
        let th = &mut self.threads[t as usize];
        th.outstanding += picked.len() as u32;
        th.stats.submit_hist[batch_bucket(picked.len() as u32)] += 1;
        th.submitting = picked;
        th.state = ThreadState::Running;
        if null {
            th.stats.usr_ns += cost;
        } else {
            th.stats.sys_ns += cost;
        }
        let core = th.core;
        let end = self.cpu.run_l(core, now, cost, "syscall submit");
        self.q.push(end, Ev::Submitted(t));
    }

    fn alloc_io(&mut self, io: Io) -> u32 {
        match self.free_ios.pop() {
            Some(i) => {
                self.ios[i as usize] = io;
                i
            }
            None => {
                self.ios.push(io);
                (self.ios.len() - 1) as u32
            }
        }
    }

    /// The system call's work is done: the bios enter the block layer (one plug: they
    /// are inserted together and the queue is run once).
    fn submitted(&mut self, t: u32) {
        let job = &self.cfg.jobs[self.threads[t as usize].cfg];
        if job.null_engine {
            return self.null_submitted(t);
        }
        if !job.direct {
            return self.buf_submitted(t);
        }
        let picked = std::mem::take(&mut self.threads[t as usize].submitting);
        let core = self.threads[t as usize].core;
        self.submit_direct(t, core, &picked);
        let mut picked = picked;
        picked.clear();
        self.threads[t as usize].submitting = picked;
        self.after_submit(t);
    }

    /// The direct I/Os `picked` of thread `t` leave their system call on `core` now:
    /// their bios enter the block layer (one plug: inserted together, the queue run once).
    fn submit_direct(&mut self, t: u32, core: u32, picked: &[u32]) {
        let now = self.now;
        self.account_outstanding(t);
        let max_rw_sectors = self.block.max_sectors() as u64;
        let max_discard_sectors = self.block.max_discard_sectors() as u64;
        let kernel_bio = kernel_bio_sectors(max_rw_sectors, self.cfg.host.kernel.splits_bios());
        let tracing = self.trace.is_some();
        let made = self.block.requests_made;
        if tracing {
            self.blk_syscall_start(t, picked.len());
        }
        for &io in picked {
            let (dir, offset, len) = self.note_issued(t, io);
            let discard = self.ios[io as usize].trim;
            let max_sectors = if discard {
                max_discard_sectors
            } else {
                max_rw_sectors
            };
            let mut sector = offset / 512;
            let end = (offset + len) / 512;
            if tracing {
                self.blk_io_start(t, picked.len(), len);
            }
            let mut pieces = 0;
            while sector < end {
                let n = if discard {
                    self.disc.split(sector, end - sector, max_sectors)
                } else {
                    (end - sector).min(kernel_bio)
                } as u32;
                let bio = Bio {
                    io,
                    dir,
                    sector,
                    sectors: n,
                    cpu: core,
                    queued_at: now,
                    discard,
                    // REQ_FUA is one of REQ_NOMERGE_FLAGS.
                    nomerge: self.ios[io as usize].fua,
                };
                pieces += self.submit_kernel_bio(bio, max_sectors as u32);
                sector += n as u64;
            }
            // The system call booked (and `parts_left` counts) as many bios as went in.
            debug_assert_eq!(pieces, self.ios[io as usize].parts_left, "bios of I/O {io}");
            if tracing {
                self.blk_io_end(now, t);
            }
        }
        if tracing {
            self.blk_syscall_end(now, t);
        }
        // Inserting a new request runs the hardware queue (asynchronously, from kblockd);
        // a bio merged into a queued request runs nothing (blk_mq_make_request).
        if self.block.requests_made != made {
            self.kick(core);
        }
    }

    /// A bio enters the block layer now (blktrace's Q, then its fate: merged or a new
    /// request, when tracing).
    fn submit_bio(&mut self, bio: Bio) {
        if self.trace.is_some() {
            self.blk_queue(self.now, &bio);
        }
        self.enter_bio(bio);
    }

    /// A bio the kernel built as large as it could (`kernel_bio_sectors`) enters the
    /// block layer now; one larger than `max_sectors` is split there (blk_queue_split):
    /// Q of the whole, then for each piece cut off the front an X and the Q of the
    /// rest, the piece itself going on as REQ_NOMERGE; the last piece is mergeable.
    /// Returns how many bios entered the block layer.
    fn submit_kernel_bio(&mut self, bio: Bio, max_sectors: u32) -> u32 {
        if bio.sectors <= max_sectors {
            self.submit_bio(bio);
            return 1;
        }
        let mut pieces = 1;
        let now = self.now;
        let tracing = self.trace.is_some();
        if tracing {
            self.blk_queue(now, &bio);
        }
        let mut rest = bio;
        while rest.sectors > max_sectors {
            let front = Bio {
                sectors: max_sectors,
                nomerge: true,
                ..rest
            };
            rest.sector += max_sectors as u64;
            rest.sectors -= max_sectors;
            if tracing {
                self.blk_split(now, &front, rest.sector);
                self.blk_queue(now, &rest);
            }
            self.enter_bio(front);
            pieces += 1;
        }
        self.enter_bio(rest);
        pieces
    }

    /// A bio (at most max_sectors, already Q'd) goes into the block layer now: merged
    /// or a new request, traced when tracing.
    fn enter_bio(&mut self, bio: Bio) {
        let now = self.now;
        self.block.submit(now, bio);
        if self.trace.is_some() {
            self.blk_fates(now, true);
        }
    }

    /// An I/O of thread `t` leaves its system call for the kernel now: its submission
    /// time, the thread's in-flight count and fio's depth histogram. Returns (direction,
    /// offset, length).
    fn note_issued(&mut self, t: u32, io: u32) -> (Dir, u64, u64) {
        let x = &mut self.ios[io as usize];
        x.t_issued = self.now;
        let r = (x.dir, x.offset, x.len);
        let th = &mut self.threads[t as usize];
        th.inflight += 1;
        th.ios_since_think += 1;
        th.stats.depth_hist[depth_level_bucket(th.inflight)] += 1;
        r
    }

    /// What the thread does once its system call has returned (or its dispatch loop ended).
    fn after_submit(&mut self, t: u32) {
        let now = self.now;
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        match cfg.submission {
            Submission::Sync => {
                // The hardware queue runs from kblockd, so the I/O cannot have finished
                // within the submitting event: the thread sleeps until it does.
                assert!(
                    th.completed.is_empty(),
                    "a sync I/O completed inside its submission"
                );
                self.threads[t as usize].state = ThreadState::Sleeping;
            }
            Submission::Async {
                batch_complete_min, ..
            } => {
                let more = th.inflight < th.depth && !self.job_done_issuing(t);
                let reap =
                    th.completed.len() as u32 >= batch_complete_min.max(1).min(th.inflight.max(1));
                if more || reap {
                    let cost = if reap {
                        self.cfg.host.costs.aio_reap_ns
                    } else {
                        0
                    };
                    let end = self.cpu.run_l(th.core, now, cost, "aio reap");
                    self.q.push(end, Ev::ThreadRun(t));
                } else {
                    self.wait_for_completions(t);
                }
            }
        }
    }

    fn record_io(&mut self, t: u32, io: u32) {
        let now = self.now;
        let x = &self.ios[io as usize];
        let (dir, len, t_start, t_issued) = (x.dir, x.len, x.t_start, x.t_issued);
        let (t_hw, t_irq, trim, offset) = (x.t_hw, x.t_irq, x.trim, x.offset);
        debug_assert!(x.t_done <= now);
        self.free_ios.push(io);
        if !trim {
            self.buf.note_done(t, dir);
        }
        let th = &mut self.threads[t as usize];
        th.inflight -= 1;
        th.outstanding -= 1;
        let sync = matches!(self.cfg.jobs[th.cfg].submission, Submission::Sync);
        if self.cfg.jobs[th.cfg].script.is_some() {
            th.stats.script_lat_ns.push(now - t_start);
        }
        let (slat, clat) = if sync {
            (None, now - t_start)
        } else if self.cfg.jobs[th.cfg].null_engine {
            // fio's null commit never calls io_u_queued: no slat sample.
            (None, now - t_issued)
        } else {
            (Some(t_issued - t_start), now - t_issued)
        };
        let measured = t_start >= th.measure_start;
        if !self.observers.is_empty() && t as usize >= self.prefill {
            let d = IoDone {
                job: t as usize - self.prefill,
                dir,
                trim,
                offset,
                len,
                t_start,
                t_issued: if sync { now } else { t_issued },
                t_done: now,
                slat,
                clat,
                lat: now - t_start,
                measured,
            };
            for o in &mut self.observers {
                o.done(&d);
            }
        }
        let th = &mut self.threads[t as usize];
        if !measured {
            return;
        }
        let since = now.saturating_sub(th.measure_start);
        let stats = if trim {
            &mut th.stats.trim
        } else {
            &mut th.stats.dirs[dir.index()]
        };
        stats.record(since, len, slat, clat, now - t_start);
        if t_hw != SimTime::MAX && t_irq >= t_hw {
            th.stats.spans_of(ddir_index(dir, trim)).record_io(
                t_hw - t_start,
                t_irq - t_hw,
                now - t_irq,
            );
        }
    }

    fn thread_finish(&mut self, t: u32) {
        let now = self.now;
        self.account_outstanding(t);
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Finished;
        th.end = now;
        th.stats.end_ns = now;
        th.stats.runtime_ns = now.saturating_sub(th.measure_start);
        self.occupancy_finish(t);
        self.unfinished -= 1;
        self.flow_exit(t);
        if t as usize >= self.prefill {
            for o in &mut self.observers {
                o.job_finished(t as usize - self.prefill, now);
            }
        }
        self.disk_sample(t);
        if self.cfg.jobs[t as usize].exitall {
            self.exit_group(t as usize);
        }
        // wait_for: a job whose turn came starts once all it waits for have finished.
        for i in 0..self.threads.len() {
            if self.threads[i].state == ThreadState::Waiting
                && self.cfg.jobs[i]
                    .wait_for
                    .iter()
                    .all(|&w| self.threads[w].state == ThreadState::Finished)
            {
                self.threads[i].state = ThreadState::Running;
                self.q.push(now, Ev::ThreadStart(i as u32));
            }
        }
        // Stonewall: the next group starts when every earlier job has finished.
        let all_before_done = |sim: &Sim, upto: usize| {
            sim.threads[..upto]
                .iter()
                .all(|x| x.state == ThreadState::Finished)
        };
        let n = self.threads.len();
        let mut i = 0;
        while i < n {
            if self.threads[i].state == ThreadState::NotStarted {
                if self.cfg.jobs[i].stonewall && all_before_done(self, i) {
                    // Start this job and the ones after it up to the next stonewall.
                    let mut j = i;
                    while j < n && (j == i || !self.cfg.jobs[j].stonewall) {
                        let d = self.cfg.jobs[j].startdelay_ns;
                        self.threads[j].state = ThreadState::Running;
                        self.q
                            .push(now.saturating_add(d), Ev::ThreadStart(j as u32));
                        j += 1;
                    }
                }
                break;
            }
            i += 1;
        }
    }

    /// The block layer finished a request: its I/Os complete; their threads wake.
    fn req_end(&mut self, r: ReqId) {
        let now = self.now;
        let mut ios = std::mem::take(&mut self.scratch);
        ios.clear();
        self.tr(now, Some(r), TraceKind::Completed);
        if self.trace.is_some() {
            self.blk_rq(now, r, BlkAction::Complete, 0);
        }
        self.record_request_spans(r);
        if self.verify.is_some() {
            self.verify_read_data(r);
        }
        let (hw_at, irq_at) = {
            let q = self.block.req(r);
            (q.hw_at, q.irq_at)
        };
        // A request that ended without an interrupt leaves the hardware now.
        self.hw_busy.end(r, now, now);
        let admitted = self.block.complete(now, r, &mut ios);
        if self.trace.is_some() {
            // Bios that waited for a tag got their requests (or merged) now.
            self.blk_fates(now, false);
        }
        for &io in &ios {
            let x = &mut self.ios[io as usize];
            x.t_hw = x.t_hw.min(hw_at);
            if irq_at != SimTime::MAX {
                x.t_irq = x.t_irq.max(irq_at);
            }
            x.parts_left -= 1;
            if x.parts_left > 0 {
                continue;
            }
            x.t_done = now;
            let t = x.thread;
            if x.cache != buffered::CacheIo::None {
                if matches!(
                    x.cache,
                    buffered::CacheIo::Fill { .. } | buffered::CacheIo::Writeback { .. }
                ) {
                    // A page cache request's own life: made by the reader or the
                    // flusher (pre), on the hardware, then its pages unlocked or out
                    // of writeback (post), for the job it was done for.
                    let (t_start, t_hw, t_irq) = (x.t_start, x.t_hw, x.t_irq);
                    let th = &self.threads[t as usize];
                    if t_start >= th.measure_start && t_hw != SimTime::MAX && t_irq >= t_hw {
                        self.buf_request_spans(io, t_hw - t_start, t_irq - t_hw, t_irq);
                    }
                }
                self.buf_io_done(io);
                continue;
            }
            self.io_done(t, io);
        }
        self.scratch = ios;
        self.buf_tags_freed();
        if admitted > 0 {
            // Requests that waited for a tag: the completion reruns the queue.
            self.kick(self.cfg.host.irq_core);
        }
    }

    /// blktrace's spans of a request that completes now, counted as btt counts them:
    /// Q2G, G2I and I2D once per request (to the job of its first bio); D2C and Q2C once
    /// per bio it carries (btt's `update_d2c` adds a merged request's D2C for each bio),
    /// to each bio's job.
    fn record_request_spans(&mut self, r: ReqId) {
        let now = self.now;
        let q = self.block.req(r);
        let Some(&first) = q.bios.first() else {
            return;
        };
        let (bq, g, i, d) = (q.bio_queued_at, q.got_at, q.queued_at, q.dispatched_at);
        let x = &self.ios[first as usize];
        let th = &mut self.threads[x.thread as usize];
        if x.t_start >= th.measure_start {
            th.stats
                .spans_of(ddir_index(x.dir, x.trim))
                .record_request(g - bq, i - g, d - i);
        }
        for k in 0..self.block.req(r).bios.len() {
            let io = self.block.req(r).bios[k];
            let x = &self.ios[io as usize];
            let th = &mut self.threads[x.thread as usize];
            if x.t_start >= th.measure_start {
                let s = th.stats.spans_of(ddir_index(x.dir, x.trim));
                s.record(Span::D2c, now - d);
                s.record(Span::Q2c, now - x.t_issued);
            }
        }
    }

    fn io_done(&mut self, t: u32, io: u32) {
        if self.threads[t as usize].offload.is_some() {
            return self.offload_done(t, io);
        }
        let now = self.now;
        let costs = &self.cfg.host.costs;
        let (wakeup, ret, reap) = (costs.wakeup_ns, costs.syscall_return_ns, costs.aio_reap_ns);
        let th = &mut self.threads[t as usize];
        th.completed.push(io);
        if th.state != ThreadState::Sleeping {
            return; // it will see the completion when it gets back
        }
        let sync = matches!(self.cfg.jobs[th.cfg].submission, Submission::Sync);
        let need = match self.cfg.jobs[th.cfg].submission {
            Submission::Sync => 1,
            Submission::Async {
                batch_complete_min, ..
            } => batch_complete_min.max(1).min(th.inflight),
        };
        if (th.completed.len() as u32) < need {
            return;
        }
        if th.spin.waiting {
            // io_uring's iopoll saw it (sim/iopoll.rs): no wake-up.
            let end = self.iopoll_seen(t);
            self.q.push(end, Ev::ThreadRun(t));
            return;
        }
        th.state = ThreadState::Running;
        th.stats.ctx += 1;
        // The thread wakes on its own core, not where select_idle_sibling would put it
        // (`wake_thread`, used by the buffered path). Known inaccuracy: without an
        // elevator, placement decides which lockstep threads share a software queue and
        // so how much they merge (with mq-deadline, as on the hsq board, any queued
        // request is a candidate and placement does not matter for merging; see the
        // notes at the top of jobs/hsq/reproductions.toml).
        let cost = wakeup + if sync { ret } else { reap };
        let end = self.cpu.run_l(th.core, now, cost, "wakeup+return");
        self.q.push(end, Ev::ThreadRun(t));
    }

    // ---------------------------------------------------------------- shared driver steps

    /// Records a driver event: a request's start on the hardware is stamped for its
    /// spans (always); the event goes to the trace when tracing is on.
    #[inline]
    fn tr(&mut self, t: SimTime, req: Option<ReqId>, kind: TraceKind) {
        if let (Some(r), TraceKind::Started { .. }) = (req, kind) {
            self.block.mark_hw_start(r, t);
            self.hw_busy.start(r, t, self.now);
        }
        if let Some(tr) = &mut self.trace {
            tr.push(t, req, kind);
        }
    }

    /// A sleeping kernel context (the MMC dispatcher, a worker, an IRQ thread) wakes on
    /// `core` at `at` (scheduler wake-up and context switch); it preempts the user thread
    /// running there (host/cpu.rs). Returns when it runs.
    fn wake(&mut self, core: u32, at: SimTime) -> SimTime {
        let end = self
            .cpu
            .run_kernel(core, at, self.cfg.host.costs.wakeup_ns, "wakeup");
        self.tr(end, None, TraceKind::Wakeup { core });
        end
    }

    /// Sleeping user thread `t` wakes at `at` (try_to_wake_up): unless pinned, it moves to
    /// an idle core if its own is busy (select_idle_sibling, `Cpu::wake_core`), and runs
    /// there once the task work booked before it is done. Returns when it runs.
    fn wake_thread(&mut self, t: u32, at: SimTime) -> SimTime {
        let th = &self.threads[t as usize];
        let mut core = th.core;
        if self.cfg.jobs[th.cfg].cpu.is_none() {
            core = self.cpu.wake_core(core, at);
            self.threads[t as usize].core = core;
        }
        let end = self
            .cpu
            .run_l(core, at, self.cfg.host.costs.wakeup_ns, "wakeup");
        self.tr(end, None, TraceKind::Wakeup { core });
        end
    }

    /// `n` commands (with responses) on the command line from `at`, the first with
    /// `opcode`... each traced with its own opcode; returns when the last response is in.
    fn bus_cmds(&mut self, at: SimTime, opcodes: &[u8], req: Option<ReqId>) -> SimTime {
        let cmd_ns = self.cfg.host.bus.command_ns();
        let mut t = at;
        for &opcode in opcodes {
            let (s, e) = self.bus.book(t, cmd_ns);
            self.tr(s, req, TraceKind::Command { opcode, end: e });
            t = e;
        }
        t
    }

    /// A data transfer of `dur` on the bus from `at`; returns its end.
    fn bus_data(&mut self, at: SimTime, dur: u64, dir: Dir, req: ReqId) -> SimTime {
        let (s, e) = self.bus.book(at, dur);
        self.tr(s, Some(req), TraceKind::Data { dir, end: e });
        e
    }

    /// Read data of `bytes` streams out over the bus from `at`; the last 4 KiB cannot
    /// leave before `last_ready`, when the device has all of it. Returns (start, end).
    fn bus_read_stream(
        &mut self,
        at: SimTime,
        bytes: u64,
        last_ready: SimTime,
        r: ReqId,
    ) -> (SimTime, SimTime) {
        let bus = &self.cfg.host.bus;
        let tail = last_ready + bus.data_ns(bytes.min(4096));
        let (start, mut end) = self.bus.book(at, bus.data_ns(bytes));
        if tail > end {
            self.bus.book(end, tail - end);
            end = tail;
        }
        self.tr(
            start,
            Some(r),
            TraceKind::Data {
                dir: Dir::Read,
                end,
            },
        );
        (start, end)
    }

    /// The interrupt handler runs on the IRQ core from `at` for `cost`.
    fn irq_run(&mut self, at: SimTime, cost: u64, req: ReqId) -> SimTime {
        self.block.mark_irq(req, at);
        self.hw_busy.end(req, at, self.now);
        let core = self.cfg.host.irq_core;
        let t = self.cpu.run_irq_l(core, at, cost, "irq handler");
        self.tr(t, Some(req), TraceKind::Irq { core });
        t
    }

    // ---------------------------------------------------------------- MMC legacy driver

    /// blk_mq_run_hw_queue(async): if nobody is dispatching, a kblockd worker wakes on
    /// `core` and becomes the dispatcher.
    fn kick(&mut self, core: u32) {
        if self.cfg.driver.is_ufs() {
            return self.ufs_kick(core);
        }
        if self.mmc.dispatcher.is_some() || !self.block.has_queued() {
            return;
        }
        // An hsq past its in-flight limit is run all the same, as blk_mq_run_hw_queue
        // runs any queue with requests pending: the worker takes one request, queue_rq
        // refuses it and it waits on the dispatch list (`disp_next`).
        if self.cqe.full() {
            return; // every task slot is taken; a completion reruns the queue
        }
        self.mmc.dispatcher = Some(core);
        let t = self.wake(core, self.now);
        self.q.push(t, Ev::DispStart);
    }

    fn disp_core(&self) -> u32 {
        self.mmc.dispatcher.expect("dispatcher exists")
    }

    /// The dispatch loop takes the next request and prepares it, or ends.
    fn disp_next(&mut self, at: SimTime) {
        debug_assert!(self.mmc.prepared.is_none());
        let Some(core) = self.mmc.dispatcher else {
            return;
        };
        if self.cqe.full() {
            // MMC_CQE_QUEUE_FULL: BLK_STS_RESOURCE until a task completes.
            self.mmc.dispatcher = None;
            return;
        }
        match self.block.dispatch(at) {
            Some(r) => {
                let sync = self.block.req(r).discard || self.mmc_flush_is_sync(r);
                if let DriverKind::MmcHsq { .. } = self.cfg.driver {
                    if !sync && self.hsq.in_flight >= self.hsq_limit() {
                        // mmc_mq_queue_rq answers BLK_STS_RESOURCE past the in-flight
                        // limit (counted per issue type: reads and writes only): the
                        // request goes back on the dispatch list and the loop ends; a
                        // completion reruns the queue (blk_mq_dispatch_rq_list).
                        self.block.requeue(r);
                        if self.trace.is_some() {
                            self.blk_rq(at, r, BlkAction::Requeue, core);
                        }
                        self.mmc.dispatcher = None;
                        return;
                    }
                }
                if self.trace.is_some() {
                    self.blk_rq(at, r, BlkAction::Issue, core);
                }
                if sync {
                    // MMC_ISSUE_SYNC: no prep or DMA map; sim/discard.rs.
                    return self.mmc_sync_dispatch(core, at, r);
                }
                let cost = self.mmc_prep_ns(r);
                let end = self.cpu.run_kernel(core, at, cost, "prep+dma map");
                match self.cfg.driver {
                    DriverKind::MmcLegacy | DriverKind::SdRtsx { .. } => {
                        self.q.push(end, Ev::DispPrepared(r))
                    }
                    DriverKind::MmcHsq { .. } => {
                        // Counted in flight from queue_rq on.
                        self.hsq.in_flight += 1;
                        self.q.push(end, Ev::HsqQueued(r));
                    }
                    DriverKind::Ufs | DriverKind::UfsHpb { .. } => {
                        unreachable!("the ufs driver has its own dispatch")
                    }
                    DriverKind::MmcCqe { .. } => self.cqe_issue(core, end, r),
                }
            }
            None => {
                // Nothing left: the worker goes back to sleep.
                self.mmc.dispatcher = None;
            }
        }
    }

    /// mmc_blk_rw_wait: wait while another request is on the hardware.
    fn disp_prepared(&mut self, r: ReqId) {
        let now = self.now;
        if self.mmc.active.is_some() {
            self.mmc.prepared = Some(r);
        } else {
            self.disp_proceed(now, r);
        }
    }

    /// CMD13 polling after a write until the card is out of busy, from `core`, starting
    /// at `at`; returns when the polling context continues.
    fn poll_busy(&mut self, core: u32, at: SimTime, prev: ReqId) -> SimTime {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_cmd13(core, at, prev);
        }
        let ready = self.dev_ready_at.get(prev as usize).copied().unwrap_or(0);
        let mut t = at;
        let mut backoff_us = 32u64;
        loop {
            // A synchronous CMD13: issue, wait for the command-complete interrupt, wake up.
            t = self
                .cpu
                .run_kernel(core, t, self.cfg.host.mmc.cmd13_ns, "cmd13");
            t = self.bus_cmds(t, &[13], Some(prev));
            self.sys.cmd13 += 1;
            let answered_busy = t < ready;
            t = self.irq_run(t, self.cfg.host.costs.irq_ns, prev);
            t = self.wake(core, t);
            if !answered_busy {
                return t;
            }
            if self.cfg.host.mmc.cmd13_mode == Cmd13Mode::Backoff {
                // mmc_poll_for_busy's usleep_range(d, 2d) arms an hrtimer whose soft
                // expiry is d and hard expiry 2d (hrtimer_set_expires_range_ns); the
                // clock event is programmed for the hard expiry, so on a core with no
                // earlier timer (the polling thread sleeps, NO_HZ idle) it fires at 2d.
                t += 2 * backoff_us * 1000;
                t = self.wake(core, t);
                backoff_us = (backoff_us * 2).min(32_768);
            }
        }
    }

    /// The previous request is off the hardware: complete it (CMD13 for writes), start
    /// `r`, then post-process the previous one.
    fn disp_proceed(&mut self, at: SimTime, r: ReqId) {
        if self.block.req(r).discard || self.mmc_flush_is_sync(r) {
            return self.mmc_sync_legacy_idle(at, r);
        }
        let core = self.disp_core();
        // complete_lock: if the kworker is completing the previous request, wait for it.
        let mut t = if self.mmc.lock_free_at > at {
            self.wake(core, self.mmc.lock_free_at)
        } else {
            at
        };
        let prev = self.mmc.complete_req.take();
        if let Some(p) = prev {
            if self.block.req(p).dir() == Dir::Write {
                t = self.poll_busy(core, t, p);
            }
        }
        t = self
            .cpu
            .run_kernel(core, t, self.cfg.host.mmc.start_ns, "mmc start");
        self.mmc.active = Some(r);
        self.tr(
            t,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        self.q.push(t, Ev::BusIssue(r));
        if let Some(p) = prev {
            let cost = self.mmc_post_ns(p);
            t = self.cpu.run_kernel(core, t, cost, "post+complete");
        }
        self.q.push(t, Ev::DispPosted(prev));
    }

    /// Request prep (mmc_blk_rw_rq_prep, with a write's bounce copy) and DMA map.
    fn mmc_prep_ns(&self, r: ReqId) -> u64 {
        let m = &self.cfg.host.mmc;
        let bytes = self.block.req(r).bytes();
        m.prep_ns + m.prep_per_4k_ns * bytes.div_ceil(4096) + self.bounce_ns(r, Dir::Write)
    }

    /// Post-processing (DMA unmap, a read's bounce copy) and ending the block request.
    fn mmc_post_ns(&self, r: ReqId) -> u64 {
        let m = &self.cfg.host.mmc;
        let bytes = self.block.req(r).bytes();
        m.post_ns
            + m.post_per_4k_ns * bytes.div_ceil(4096)
            + self.bounce_ns(r, Dir::Read)
            + self.end_cost(r)
    }

    /// The bounce-buffer copy of request `r` if the host has a bounce buffer and `r` moves
    /// data in direction `dir` (writes are copied in before the transfer, reads out after).
    fn bounce_ns(&self, r: ReqId, dir: Dir) -> u64 {
        let q = self.block.req(r);
        match (&self.cfg.host.mmc.bounce_bytes, &self.cfg.host.memory) {
            (Some(_), Some(mem)) if q.dir() == dir => {
                crate::engine::transfer_ns(q.bytes(), mem.copy_bytes_per_s)
            }
            _ => 0,
        }
    }

    /// A flush request that the legacy or hsq MMC driver runs synchronously: REQ_OP_FLUSH
    /// is MMC_ISSUE_SYNC (mmc_issue_type), so queue_rq waits for the host to be idle and
    /// runs mmc_blk_issue_flush inline (sim/discard.rs `sync_issue`): CMD6 FLUSH_CACHE
    /// if the card's cache is on, nothing if it is off (`buffered::device_cache_on`;
    /// the queue sends flushes regardless, `buffered::queue_cache`). Linux 3.19's mmcqd
    /// does the same (mmc_blk_issue_rq: finish the ongoing transfer, then the flush).
    /// mmc-cqe sends its flush as a DCMD instead (mmc_blk_cqe_issue_flush).
    fn mmc_flush_is_sync(&self, r: ReqId) -> bool {
        self.block.req(r).flush
            && matches!(
                self.cfg.driver,
                DriverKind::MmcLegacy | DriverKind::MmcHsq { .. }
            )
    }

    /// The request is a FUA write: it carries the journal's commit block on a queue with
    /// native FUA (sim/journal.rs). A REQ_FUA bio does not merge in the kernel
    /// (REQ_NOMERGE_FLAGS; blk-flush inserts its request past the scheduler), so it is
    /// its request's only bio.
    /// Only the journal and O_SYNC direct writes are FUA, so without `[fs]` or such a
    /// job the bios are not looked at: this runs for every write request on the bus.
    fn req_fua(&self, r: ReqId) -> bool {
        let q = self.block.req(r);
        (self.cfg.host.fs.is_some() || self.any_fua_job)
            && q.dir == Some(Dir::Write)
            && !q.flush
            && q.bios.iter().any(|&io| {
                let x = &self.ios[io as usize];
                x.fua || x.cache == buffered::CacheIo::JournalFua
            })
    }

    /// CPU cost of ending a block request: one bio completion per I/O it carries.
    fn end_cost(&self, r: ReqId) -> u64 {
        self.cfg.host.costs.complete_ns * self.block.req(r).bios.len() as u64
    }

    /// The request goes on the bus: CMD23 + CMD18/CMD25 (or CMD17/CMD24), then data.
    fn bus_issue(&mut self, r: ReqId) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_issue(r);
        }
        debug_assert!(
            !self.block.req(r).flush,
            "MMC flushes are issued synchronously"
        );
        let now = self.now;
        let (dir, sector, sectors) = {
            let q = self.block.req(r);
            (q.dir(), q.sector, q.sectors)
        };
        let multi = sectors > 1;
        let cmd23 = self.cfg.host.mmc.cmd23;
        let opcode = match (dir, multi) {
            (Dir::Read, false) => 17,
            (Dir::Read, true) => 18,
            (Dir::Write, false) => 24,
            (Dir::Write, true) => 25,
        };
        let cmd_end = if multi && cmd23 {
            self.bus_cmds(now, &[23, opcode], Some(r))
        } else {
            self.bus_cmds(now, &[opcode], Some(r))
        };
        let h = &self.cfg.host;
        let op = match dir {
            Dir::Read => DevOp::Read,
            Dir::Write => DevOp::Write,
        };
        let cmd = DevCommand {
            tag: r,
            op,
            lba: sector,
            sectors,
            // REQ_FUA: mmc_blk_rw_rq_prep's reliable write (CMD23 with bit 31).
            fua: self.req_fua(r),
            hpb: 0,
        };
        match dir {
            Dir::Read => {
                self.sys.device_host_read_bytes += sectors as u64 * 512;
                self.q.push(cmd_end, Ev::Dev(device::Input::Command(cmd)));
            }
            Dir::Write => {
                self.sys.device_host_write_bytes += sectors as u64 * 512;
                let bytes = sectors as u64 * 512;
                let dur = h.bus.data_ns(bytes);
                let mut data_end = self.bus_data(cmd_end, dur, Dir::Write, r);
                if multi && !cmd23 {
                    data_end = self.bus_cmds(data_end, &[12], Some(r));
                }
                self.q.push(data_end, Ev::Dev(device::Input::Command(cmd)));
                if !self.cfg.host.mmc.busy_detect {
                    // Transfer-complete interrupt at the end of data; busy is polled.
                    let t = self.irq_run(data_end, self.cfg.host.costs.irq_ns, r);
                    self.q.push(t, Ev::Irq(r));
                }
            }
        }
    }

    /// The device released busy after a write at `at`.
    fn irq_after_write(&mut self, r: ReqId, at: SimTime) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_write_accepted(r, at);
        }
        self.tr(at, Some(r), TraceKind::DeviceDone);
        if let DriverKind::MmcCqe { .. } = self.cfg.driver {
            return self.q.push(at, Ev::Cqe(cqe::CqeEv::BusyEnd(r)));
        }
        if self.cfg.host.mmc.busy_detect {
            let t = self.irq_run(at, self.cfg.host.costs.irq_ns, r);
            self.q.push(t, Ev::Irq(r));
        }
    }

    /// Read data streams out of the device over the bus, then the interrupt.
    fn bus_read_data(&mut self, r: ReqId, last_ready: SimTime) {
        if let DriverKind::SdRtsx { .. } = self.cfg.driver {
            return self.rtsx_read_data(r, last_ready);
        }
        let now = self.now;
        self.tr(last_ready, Some(r), TraceKind::DeviceDone);
        let bytes = self.block.req(r).bytes();
        let (_, mut end) = self.bus_read_stream(now, bytes, last_ready, r);
        if self.block.req(r).sectors > 1 && !self.cfg.host.mmc.cmd23 {
            end = self.bus_cmds(end, &[12], Some(r));
        }
        let t = self.irq_run(end, self.cfg.host.costs.irq_ns, r);
        self.q.push(t, Ev::Irq(r));
    }

    /// hsq: `mmc_hsq_request` puts the prepared request in a slot and pumps: if the
    /// hardware is idle the request starts from the dispatcher's context. queue_rq
    /// returns at once and the dispatcher goes on.
    fn hsq_queued(&mut self, r: ReqId) {
        let now = self.now;
        let core = self.disp_core();
        self.hsq.queue.push_back(r);
        let (queued, in_flight) = (self.hsq.queue.len() as u32, self.hsq.in_flight);
        self.tr(now, Some(r), TraceKind::DriverQueued { queued, in_flight });
        let mut t = now;
        if self.hsq.hw.is_none() {
            t = self.hsq_start(core, now, false);
        }
        self.disp_next(t);
    }

    /// How many requests queue_rq lets into the driver now.
    fn hsq_limit(&self) -> u32 {
        let DriverKind::MmcHsq {
            depth,
            max_in_flight,
            burst_in_flight,
        } = self.cfg.driver
        else {
            unreachable!("hsq limit asked of another driver");
        };
        let limit = if self.hsq.burst {
            burst_in_flight
        } else {
            max_in_flight
        };
        limit.min(depth)
    }

    /// Starts the next queued request on the hardware from `core` at `at`.
    fn hsq_start(&mut self, core: u32, at: SimTime, in_irq: bool) -> SimTime {
        if let DriverKind::MmcHsq {
            burst_in_flight: 1..,
            ..
        } = self.cfg.driver
        {
            // mmc_hsq_modify_threshold: the slots from the head while they hold 4 KiB
            // writes; two or more raise the depth (slots taken in dispatch order here).
            let four_k_writes = self
                .hsq
                .queue
                .iter()
                .take_while(|&&r| {
                    let q = self.block.req(r);
                    q.dir() == Dir::Write && q.bytes() == 4096
                })
                .count();
            self.hsq.burst = four_k_writes >= 2;
        }
        let next = self.hsq.queue.pop_front().expect("a queued request");
        let cost = self.cfg.host.mmc.start_ns;
        let t = if in_irq {
            self.cpu.run_irq_l(core, at, cost, "hsq start")
        } else {
            self.cpu.run_kernel(core, at, cost, "hsq start")
        };
        self.hsq.hw = Some(next);
        self.mmc.active = Some(next);
        let ctx = if in_irq { Ctx::Irq } else { Ctx::Task };
        self.tr(t, Some(next), TraceKind::Started { core, ctx });
        self.q.push(t, Ev::BusIssue(next));
        t
    }

    /// hsq completion (`mmc_hsq_finalize_request`), from the interrupt (or the IRQ thread
    /// with always_defer_done): the block completion is raised — it runs here if the
    /// request was submitted on this CPU, else on its CPU after an IPI — then the next
    /// request is started from the same context: no context switch, no CMD13.
    fn hsq_irq(&mut self, r: ReqId) {
        let now = self.now;
        let h = &self.cfg.host;
        let irq_core = h.irq_core;
        let mut t = now;
        if h.mmc.always_defer_done {
            t = self.wake(irq_core, t);
        }
        self.hsq.hw = None;
        self.mmc.active = None;
        let in_irq = !self.cfg.host.mmc.always_defer_done;
        let (done, after) = self.complete_on_submitter(r, t, in_irq);
        self.q.push(done, Ev::HsqDone(r));
        t = after;
        if !self.hsq.queue.is_empty() {
            self.hsq_start(irq_core, t, in_irq);
        } else {
            // mmc_hsq_wait_for_idle: a discard waiting in queue_rq goes on.
            self.mmc_sync_host_idle(t);
        }
    }

    /// `blk_mq_complete_request` from the completion context on the IRQ core at `at`
    /// (interrupt context if `in_irq`, else a task there): the block completion (DMA
    /// unmap, request end) runs in that context if the request was submitted on that
    /// CPU, else on its submitting CPU after an IPI. Returns (completion end, when the
    /// IRQ-core context goes on).
    fn complete_on_submitter(&mut self, r: ReqId, at: SimTime, in_irq: bool) -> (SimTime, SimTime) {
        let irq_core = self.cfg.host.irq_core;
        let cost = self.mmc_post_ns(r);
        let req_cpu = self.block.req(r).cpu;
        if req_cpu == irq_core {
            let done = if in_irq {
                self.cpu.run_irq_l(irq_core, at, cost, "post+complete")
            } else {
                self.cpu.run_kernel(irq_core, at, cost, "post+complete")
            };
            (done, done)
        } else {
            (self.cpu.run_kernel(req_cpu, at, cost, "post+complete"), at)
        }
    }

    /// mmc_request_done → mmc_blk_mq_req_done: record the request to complete; wake the
    /// dispatcher if it waits, else queue the kworker.
    fn irq(&mut self, r: ReqId) {
        if let DriverKind::MmcHsq { .. } = self.cfg.driver {
            return self.hsq_irq(r);
        }
        let now = self.now;
        debug_assert_eq!(self.mmc.active, Some(r));
        self.mmc.active = None;
        debug_assert!(self.mmc.complete_req.is_none());
        self.mmc.complete_req = Some(r);
        if self.mmc.prepared.is_some() {
            let core = self.disp_core();
            let t = self.wake(core, now);
            self.q.push(t, Ev::DispWoken);
        } else if !self.mmc.worker_queued {
            self.mmc.worker_queued = true;
            let t = self.wake(self.cfg.host.irq_core, now);
            self.q.push(t, Ev::WorkerRun);
        }
    }

    /// The mmc_complete kworker: completes the request unless the dispatcher took it.
    fn worker_run(&mut self) {
        let now = self.now;
        self.mmc.worker_queued = false;
        let Some(p) = self.mmc.complete_req.take() else {
            return;
        };
        let core = self.cfg.host.irq_core;
        let mut t = now;
        if self.block.req(p).dir() == Dir::Write {
            t = self.poll_busy(core, t, p);
        }
        let cost = self.mmc_post_ns(p);
        t = self.cpu.run_kernel(core, t, cost, "post+complete");
        self.mmc.lock_free_at = t;
        self.q.push(t, Ev::ReqEnd(p));
    }
}

/// The largest bio the kernel builds for a read or write: BIO_MAX_PAGES (256) pages.
const BIO_MAX_BYTES: u64 = 1 << 20;

/// The size (sectors) of the bios the kernel builds for reads and writes: as large as
/// BIO_MAX_PAGES allows on a kernel that splits bios in the block layer (Linux 4.3+,
/// `Kernel::splits_bios`); before, bio_add_page also kept each within max_sectors.
fn kernel_bio_sectors(max_sectors: u64, splits: bool) -> u64 {
    let most = BIO_MAX_BYTES / 512;
    if splits {
        most
    } else {
        most.min(max_sectors)
    }
}

/// How many block-layer bios a read or write of `len` bytes becomes: bios of
/// `kernel_bio_sectors`, each split at max_sectors (`submit_kernel_bio`).
fn rw_pieces(len: u64, max_bytes: u64, splits: bool) -> u32 {
    let bio = kernel_bio_sectors(max_bytes / 512, splits) * 512;
    let (whole, last) = (len / bio, len % bio);
    (whole * bio.div_ceil(max_bytes) + last.div_ceil(max_bytes)) as u32
}

/// The driver must speak the device's interface and find its host section.
fn check_driver(cfg: &SimConfig) -> Result<(), String> {
    use crate::device::config::Interface;
    let name = |i: Interface| match i {
        Interface::Emmc => "emmc",
        Interface::Ufs => "ufs",
        Interface::Sd => "sd",
    };
    let want = cfg.driver.interface();
    if cfg.device.interface != want {
        return Err(format!(
            "driver '{}' needs a device with interface = \"{}\"; device '{}' has interface = \"{}\"",
            cfg.driver.name(),
            name(want),
            cfg.device.name,
            name(cfg.device.interface)
        ));
    }
    if cfg.driver.is_ufs() && cfg.host.ufs.is_none() {
        return Err(format!(
            "driver '{}' needs a [ufs] section in host preset '{}'",
            cfg.driver.name(),
            cfg.host.name
        ));
    }
    Ok(())
}

/// Whether `driver` can run `device` on `host`: the checks [`Sim::new`] makes of the
/// three (the device's interface, the host's `[ufs]` or `[cqe]` section, the device's
/// `[hpb]` and its version), without a job. The front end uses it to pick a host and
/// driver for a device and to name the ones that fit.
pub fn fits(
    host: &crate::host::HostConfig,
    device: &crate::device::DeviceConfig,
    driver: DriverKind,
) -> Result<(), String> {
    let cfg = SimConfig {
        host: host.clone(),
        device: device.clone(),
        driver,
        jobs: Vec::new(),
        precondition: Precondition::Off,
    };
    check_driver(&cfg)?;
    ufs_hpb::check(&cfg)?;
    cqe::MmcCqe::new(driver, host).map(|_| ())
}

/// Runs a whole simulation.
pub fn run(cfg: SimConfig) -> Result<RunResult, String> {
    Ok(Sim::new(cfg)?.run())
}

/// Runs a whole simulation with the event trace on.
pub fn run_traced(cfg: SimConfig) -> Result<(Trace, RunResult), String> {
    let mut sim = Sim::new(cfg)?;
    sim.enable_trace();
    sim.run_until(u64::MAX);
    let trace = sim.take_trace().expect("the trace was enabled");
    Ok((trace, sim.finish()))
}

#[cfg(test)]
mod tests {
    use super::{kernel_bio_sectors, rw_pieces};

    const K: u64 = 1024;

    /// Bios of up to 1 MiB, each split at max_sectors (4.3+), or bios built within
    /// max_sectors and 1 MiB (before): the pieces differ where max_sectors does not
    /// divide 1 MiB.
    #[test]
    fn a_read_or_write_becomes_the_kernels_bios() {
        assert_eq!(kernel_bio_sectors(1024, true), 2048);
        assert_eq!(kernel_bio_sectors(1024, false), 1024);
        assert_eq!(
            kernel_bio_sectors(4096, false),
            2048,
            "BIO_MAX_PAGES before 4.3 too"
        );
        for splits in [true, false] {
            assert_eq!(rw_pieces(4 * K, 512 * K, splits), 1);
            assert_eq!(rw_pieces(1024 * K, 512 * K, splits), 2);
            assert_eq!(rw_pieces(2052 * K, 512 * K, splits), 5);
            // max_sectors above 1 MiB: 1 MiB bios either way.
            assert_eq!(rw_pieces(2048 * K, 2048 * K, splits), 2);
        }
        // 3 MiB at 384 KiB: three 1 MiB bios of 384 + 384 + 256, or 384 KiB bios.
        assert_eq!(rw_pieces(3072 * K, 384 * K, true), 9);
        assert_eq!(rw_pieces(3072 * K, 384 * K, false), 8);
    }
}
