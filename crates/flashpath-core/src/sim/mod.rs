//! The simulation: the event loop and the one place where the layers are wired together.
//!
//! ```text
//!  job thread (jobs/) ──system call, page cache (kernel/)──▶ block layer (host/block.rs)
//!     ▲                                                          │ Kick: run the queue
//!     │ wake-up, system call returns                              ▼
//!     └── block completion ◀── Output::EndRequest ◀── driver (driver/) ◀──▶ device (device/)
//! ```
//!
//! Each arrow that costs time costs it on a resource: a host core (`Cpu`), the driver's
//! bus or link, or inside the device. Events are handled in (time, insertion) order in
//! `handle`; a layer's output becomes the next layer's input here: the device's through
//! `route_device` (to the driver), the driver's through `driver_ctx.rs` (to the block
//! layer's completion).
//!
//! Here: the event loop and the run's set-up (`mod.rs`), the driver's context and its
//! outputs (`driver_ctx.rs`), the request source for requests from outside
//! (`external.rs`), and what watches a run (`observer.rs`, `progress.rs`,
//! `occupancy.rs`). fio's job threads are in `jobs/`, the kernel above the block layer
//! in `kernel/`.

use crate::device::{self, Device, DeviceConfig};
use crate::driver::{self, HostDriver};
use crate::engine::{EventQueue, Outbox, SimTime};
use crate::host::block::{Bio, BlockLayer, ReqId};
use crate::host::cpu::Cpu;
use crate::host::{DriverKind, HostConfig};
use crate::stats::{ddir_index, DirStats, JobStats, RunResult, Span, Spans, SystemStats};
use crate::trace::{self, BlkAction, Trace, TraceKind};
use crate::workload::{
    rate_gate, Dir, ExitWhat, IoSource, JobConfig, MinRate, PoissonClock, Submission,
};
use flashpath_hist::{batch_bucket, depth_level_bucket};

mod driver_ctx;
mod external;
mod jobs;
mod kernel;
mod observer;
mod occupancy;
mod progress;
pub use crate::driver::mmc::rtsx::IDLE_STOP_NS as RTSX_IDLE_STOP_NS;
pub use buffered::CacheStats;
pub use external::{ExternalDone, ExternalOp, ExternalRequest};
pub use jobs::{errors, steadystate};
use jobs::{flow, lat_target, null_engine, offload, replay, verify, verify_async};
use kernel::{blkev, buffered, discard, iopoll, journal};
pub use observer::{IoDone, IoObserver, IoQueued};
pub use progress::{JobProgress, Phase, Progress};
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
            Precondition::Auto if driver.interface() == crate::device::config::Interface::Sd => {
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
    /// A verify_async thread of a job has checked an io_u (sim/jobs/verify_async.rs).
    VerifyThread { job: u32, worker: u32 },
    /// The thread's submission work for its pending I/Os is done: bios go to the block layer.
    Submitted(u32),
    /// An input for the device.
    Dev(device::Input),
    /// A step of a host driver of the driver layer (`driver/`).
    Driver(driver::Event),
    /// Buffered I/O: page cache, writeback, fsync (`sim/kernel/buffered.rs`).
    Buf(buffered::BufEv),
    /// The ext4 journal's kjournald2 and commit timer (`sim/kernel/journal.rs`).
    Jbd(journal::JbdEv),
    /// fio's helper thread checks steady state (`sim/jobs/steadystate.rs`).
    SteadyStateCheck,
    /// io_submit_mode=offload's submit workers (`sim/jobs/offload.rs`).
    Offload(offload::OffloadEv),
    /// A request from outside enters the block layer (`sim/external.rs`).
    External(Box<ExternalRequest>),
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
    /// io_us reaped and held by verify_async threads (sim/jobs/verify_async.rs).
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
    /// A replay job's trace position (sim/jobs/replay.rs).
    replay: Option<Box<replay::ReplayThread>>,
    /// Polled completion (sim/kernel/iopoll.rs).
    spin: iopoll::Spin,
    /// rate_process=poisson: the issue clock (workload/rate.rs).
    poisson: Option<PoissonClock>,
    /// rate_min / rate_iops_min: fio's check state (workload/rate.rs).
    min_rate: Option<MinRate>,
    /// fio's flow control (sim/jobs/flow.rs).
    flow: Option<flow::FlowSeat>,
    /// A think-time or rate sleep of this length waits for the thread's I/Os in flight
    /// first (fio's handle_thinktime and rate_ddir call io_u_quiesce, then sleep).
    pause: Option<u64>,
    /// fio's latency profile (sim/jobs/lat_target.rs).
    lat: Option<lat_target::LatProfile>,
    /// io_submit_mode=offload's submit workers (sim/jobs/offload.rs).
    offload: Option<Box<offload::Pool>>,
}

pub struct Sim {
    cfg: SimConfig,
    /// Some job writes O_DIRECT|O_SYNC: its bios may carry REQ_FUA (`req_fua`).
    any_fua_job: bool,
    /// The host driver (`driver/`); out of its place while it handles an input
    /// (`driver_input`).
    driver: Option<Box<driver::Driver>>,
    /// The driver's outputs (`driver_input`), kept for their allocation.
    driver_out: Vec<driver::Output>,
    q: EventQueue<Ev>,
    now: SimTime,
    cpu: Cpu,
    block: BlockLayer,
    dev: Device,
    /// The device's outboxes, one per nesting level of `device_step` (the driver can
    /// reach the device again while it handles what the device emitted); `dev_depth` in
    /// use. They stay in place: moved out and back for each step, an outbox was
    /// reloaded just after it was stored in other widths (a store-forwarding stall).
    dev_outs: Vec<Outbox<device::Input, device::Output>>,
    dev_depth: usize,
    threads: Vec<Thread>,
    ios: Vec<Io>,
    free_ios: Vec<u32>,
    scratch: Vec<u32>,
    sys: SystemStats,
    unfinished: usize,
    /// Leading preconditioning jobs, not reported.
    prefill: usize,
    /// The event trace, when enabled.
    trace: Option<Trace>,
    /// Page cache and writeback state (`sim/kernel/buffered.rs`).
    buf: buffered::Buffered,
    /// The ext4 journal of a host with `[fs]` (`sim/kernel/journal.rs`).
    jbd: journal::Journal,
    /// The submitting thread's plug, for block-event traces.
    blk_plug: blkev::PlugTrace,
    /// Followers of the reported jobs' I/Os (`sim/observer.rs`).
    observers: Vec<Box<dyn IoObserver>>,
    /// fio's flow_id groups (sim/jobs/flow.rs).
    flows: Vec<flow::FlowGroup>,
    /// fio's verify, when some job verifies (`sim/jobs/verify.rs`); the device then tracks
    /// content.
    verify: Option<Box<verify::Verify>>,
    /// fio's steady-state detection (`sim/jobs/steadystate.rs`).
    ss: steadystate::SteadyState,
    /// The time some request was on the hardware (`sim/occupancy.rs`).
    hw_busy: occupancy::HwBusy,
    /// The request source of a simulation fed from outside (`sim/external.rs`).
    ext: Option<Box<external::External>>,
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Result<Self, String> {
        if cfg.jobs.is_empty() {
            return Err("no jobs to run".into());
        }
        Sim::build(cfg)
    }

    /// The simulation of `cfg` (its jobs may be none: `Sim::for_external`).
    fn build(mut cfg: SimConfig) -> Result<Self, String> {
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
        driver::configure_device(cfg.driver, &cfg.host, &mut cfg.device);
        iopoll::check(&cfg)?;
        offload::check(&cfg)?;
        buffered::check(&cfg)?;
        journal::check(&cfg)?;
        discard::check(&cfg)?;
        let verify = verify::setup(&cfg)?;
        let host = &cfg.host;
        let drv = driver::build(cfg.driver, host, &cfg.device)?;
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
            observers: Vec::new(),
            flows,
            verify,
            ss: steadystate::SteadyState::default(),
            hw_busy: Default::default(),
            ext: None,
            buf: buffered::Buffered::new(&cfg),
            jbd: journal::Journal::new(&cfg),
            driver_out: Vec::new(),
            cpu: Cpu::new(host.cores),
            block: BlockLayer::new(
                host.block.scheduler,
                // With CQE the blk-mq tags are the task IDs (mmc_init_queue).
                drv.tags(host.block.nr_requests),
                host.block.max_request_bytes,
            ),
            driver: Some(drv),
            // With no jobs (a request source), JobConfig's default seed.
            dev: Device::new(&cfg.device, cfg.jobs.first().map_or(0x5eed, |j| j.seed)),
            dev_outs: Vec::new(),
            dev_depth: 0,
            threads,
            ios: Vec::new(),
            free_ios: Vec::new(),
            scratch: Vec::new(),
            sys: SystemStats::default(),
            unfinished: n,
            q: EventQueue::new(),
            now: 0,
            cfg,
        };
        discard::setup(&mut sim);
        steadystate::setup(&mut sim)?;
        sim.driver_input(driver::Input::Start);
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
        while let Some((t, ev)) = self.q.pop_due(limit) {
            if matches!(ev, Ev::SteadyStateCheck) && !self.ss_wanted() {
                continue; // a check after the last steady-state job ended: time stays
            }
            debug_assert!(t >= self.now, "time never goes backwards");
            self.now = t;
            self.sys.events += 1;
            self.handle(ev);
        }
        !self.q.is_empty()
    }

    /// When the next event is due, if any: a caller stepping the simulation in slices
    /// of simulated time skips the idle ones (a thinktime of hours costs no wall time).
    pub fn next_event_at(&self) -> Option<SimTime> {
        self.q.peek_time()
    }

    /// The simulated time reached.
    pub fn now(&self) -> SimTime {
        self.now
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
        assert_eq!(
            self.external_in_flight(),
            0,
            "the caller ran the requests from outside to their end (sim/external.rs)"
        );
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
        sys.requests = self.block.requests_dispatched;
        sys.merges = self.block.merges;
        sys.cache = self.buf_stats();
        sys.device = self.dev.stats().clone();
        if let Some(d) = &self.driver {
            d.report(&mut sys);
        }
        sys.au = self.dev.allocation_unit().map(|a| a.au_stats().clone());
        sys
    }

    /// The request path: every event, in order.
    // run_until is the only caller: inlined there, the popped event is matched where it
    // lands instead of being passed on by pointer.
    #[inline(always)]
    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::ThreadStart(t) => self.thread_start(t),
            Ev::ThreadRun(t) => self.thread_run(t),
            Ev::MeasureStart(t) => self.occupancy_ramp_end(t),
            Ev::VerifyThread { job, worker } => self.verify_thread_done(job, worker as usize),
            Ev::Submitted(t) => self.submitted(t),
            Ev::Dev(input) => self.device(input),
            Ev::Driver(e) => self.driver_input(driver::Input::Event(e)),
            Ev::Offload(e) => self.offload_handle(e),
            Ev::Buf(e) => self.buf_handle(e),
            Ev::Jbd(e) => self.jbd_handle(e),
            Ev::SteadyStateCheck => self.ss_check(),
            Ev::External(r) => self.external_arrive(*r),
        }
    }

    /// An input for the device from the event queue: its outputs go to the driver.
    fn device(&mut self, input: device::Input) {
        let d = self.device_step(input);
        let mut i = 0;
        while let Some(&(at, out)) = self.dev_outs[d].emits().get(i) {
            self.driver_input(driver::Input::Device { at, out });
            i += 1;
        }
        self.device_done(d);
    }

    /// The device handles `input` now (the one place it is stepped): its timers go to
    /// the event queue. Returns the nesting level whose outbox (`dev_outs`) holds what
    /// it emitted at once, for the caller to hand on and then release with
    /// `device_done` (meanwhile the driver can reach the device again, a level down).
    #[inline(always)]
    fn device_step(&mut self, input: device::Input) -> usize {
        if self.verify.is_some() {
            self.verify_stage_write(&input);
        }
        let now = self.now;
        let d = self.dev_depth;
        if d == self.dev_outs.len() {
            self.dev_outs.push(Outbox::new());
        }
        self.dev_depth = d + 1;
        let out = &mut self.dev_outs[d];
        self.dev.handle(now, &input, out);
        for (at, input) in out.drain_timers() {
            self.q.push(at, Ev::Dev(input));
        }
        d
    }

    /// The caller of `device_step` at level `d` has handed on the device's outputs.
    #[inline(always)]
    fn device_done(&mut self, d: usize) {
        debug_assert_eq!(self.dev_depth, d + 1, "device steps end in nesting order");
        self.dev_outs[d].clear();
        self.dev_depth = d;
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
            .run_l(core, at, self.cfg.host.costs.task_wakeup_ns, "wakeup");
        self.tr(end, None, TraceKind::Wakeup { core });
        end
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
/// `kernel_bio_sectors`, each split at max_sectors (`submit_kernel_bio`). The common
/// case (one bio) inline at every I/O; the division for larger ones out of line.
#[inline(always)]
fn rw_pieces(len: u64, max_bytes: u64, splits: bool) -> u32 {
    let bio = kernel_bio_sectors(max_bytes / 512, splits) * 512;
    if len <= bio.min(max_bytes) {
        return (len > 0) as u32; // one bio, not split (most I/Os): no division
    }
    split_pieces(len, bio, max_bytes)
}

/// `rw_pieces` of an I/O larger than a bio or than max_bytes.
#[inline(never)]
fn split_pieces(len: u64, bio: u64, max_bytes: u64) -> u32 {
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
    driver::check(cfg.driver, &cfg.host, &cfg.device)
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
    driver::check_sections(driver, host)
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
        // The one-bio shortcut gives the counting's answer around its edges.
        for splits in [true, false] {
            for max in [4 * K, 384 * K, 512 * K, 2048 * K] {
                let bio = kernel_bio_sectors(max / 512, splits) * 512;
                for len in [0, 512, 4 * K, max - 512, max, max + 512, bio, bio + 512] {
                    let counted = (len / bio) * bio.div_ceil(max) + (len % bio).div_ceil(max);
                    assert_eq!(
                        rw_pieces(len, max, splits) as u64,
                        counted,
                        "{len} at {max}"
                    );
                }
            }
        }
    }
}
