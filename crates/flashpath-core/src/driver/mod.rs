//! Host controller drivers as layers: what sits between the block layer's dispatch and
//! the bus or link to the device.
//!
//! ```text
//!  block layer ──Input::Kick (a queue run on a core)──▶ ┌─────────────┐
//!  its own timed steps ──Input::Event─────────────────▶ │   driver    │ ──ctx.device──▶ device
//!  the device's later outputs ──Input::Device─────────▶ │ (its state, │ ◀─ immediate outputs
//!                                                       │ bus / link) │
//!  block completion ◀──Output::EndRequest, then Input::Ended ─┘
//! ```
//!
//! A driver has the device's shape: `handle(now, input, ctx)`. It owns all of its state
//! and its bus or link; it is built from the `--driver` choice in one place (`build`).
//! What it needs from the kernel around it (the block layer's requests, time on a core,
//! a kworker's wake-up, a timer, the device, the trace) it asks of [`DriverCtx`], which
//! the simulation lends for the length of one call. A command given to the device comes
//! back with the device's immediate outputs, which the driver handles on the spot; the
//! device's later outputs arrive as `Input::Device`. The end of a block request, whose
//! completion can run the queue again (and so reach the driver), is an [`Output`]: the
//! simulation carries it out as soon as the call returns and tells the driver with
//! `Input::Ended`, so the driver's own steps after it run where they ran in the kernel.
//!
//! The drivers: UFS (`ufs/`, HPB inside it) and MMC (`mmc/`: the legacy path, the host
//! software queue, the command queue engine, the rtsx SD host, discards and flushes).
//! The `--driver` choices and what other code may ask of them: `kind.rs`.
//! Leaves out: drivers as loadable pieces (the set is closed and dispatched here once).
//! Units: ns (`SimTime`), bytes.

use crate::device::{self, DeviceConfig};
use crate::engine::SimTime;
use crate::host::block::{BlockLayer, ReqId};
use crate::host::cpu::Cpu;
use crate::host::{DriverKind, HostConfig};
use crate::stats::SystemStats;
use crate::trace::{BlkAction, TraceKind};

pub mod kind;
pub mod mmc;
pub mod ufs;

/// A driver's own timed steps, kept in the simulation's event queue.
#[derive(Debug)]
pub enum Event {
    Ufs(ufs::UfsEv),
    Mmc(mmc::MmcEv),
}

/// What reaches a driver.
#[derive(Debug)]
pub enum Input {
    /// The driver is probed, before the jobs start (init-time work: HPB's pinned
    /// regions).
    Start,
    /// blk_mq_run_hw_queue after requests were inserted from `core`.
    Kick { core: u32 },
    /// One of its own timed steps is due.
    Event(Event),
    /// The device emitted `out`, effective at `at`.
    Device { at: SimTime, out: device::Output },
    /// The block layer has ended request `r` (after `Output::EndRequest`).
    Ended(ReqId),
}

/// What a driver hands on, carried out in order when its call returns.
#[derive(Debug)]
pub enum Output {
    /// The block layer ends request `r` (`blk_mq_end_request`): its bios complete.
    EndRequest(ReqId),
}

/// The kernel around a driver, lent for one call.
pub trait DriverCtx {
    /// The block layer's request table and queues.
    fn block(&mut self) -> &mut BlockLayer;
    /// The host's cores.
    fn cpu(&mut self) -> &mut Cpu;
    /// The kernel's trace of a block request event (D, R) for request `r` by the
    /// dispatching task on `core`, when tracing.
    fn blk_trace(&mut self, at: SimTime, r: ReqId, action: BlkAction, core: u32);
    /// The D of request `r` issued directly by its submitter on `core` (blk-mq without
    /// an elevator: `blk_mq_try_issue_directly`), when tracing.
    fn blk_trace_direct(&mut self, at: SimTime, r: ReqId, core: u32);
    /// The device gets `input` now; what it emits at once is pushed onto `emits` (its
    /// timers are the simulation's).
    fn device(&mut self, input: device::Input, emits: &mut Vec<(SimTime, device::Output)>);
    /// The driver's step `ev` runs at `at`.
    fn schedule(&mut self, at: SimTime, ev: Event);
    /// The device gets `input` at `at`.
    fn device_at(&mut self, at: SimTime, input: device::Input);
    /// A sleeping kernel context (a kworker) wakes on `core` at `at`: returns when it
    /// runs.
    fn wake(&mut self, core: u32, at: SimTime) -> SimTime;
    /// Records a driver event (a request's `Started` stamps its hardware span).
    fn trace(&mut self, t: SimTime, req: Option<ReqId>, kind: TraceKind);
    /// Whether the event trace is on.
    fn tracing(&self) -> bool;
    /// The completion interrupt of request `r` is raised at `at`: it leaves the
    /// hardware.
    fn irq_raised(&mut self, r: ReqId, at: SimTime);
    /// The run's counters.
    fn sys(&mut self) -> &mut SystemStats;
    /// CPU time of the block layer's completion of request `r` (bio end_io, the
    /// submitter's wake-up work), booked by the driver where it runs.
    fn end_cost(&self, r: ReqId) -> u64;
    /// Whether request `r` is a REQ_FUA write.
    fn fua(&self, r: ReqId) -> bool;
    /// Whether some job still runs (periodic timers stop with the jobs).
    fn jobs_running(&self) -> bool;
    /// Hands `o` on: carried out, in order with the others, when the call returns.
    fn emit(&mut self, o: Output);
    /// The device's L2P entries of `n` 4 KiB blocks from `first`, as a READ BUFFER
    /// carries them when its data leaves the device.
    fn device_map_entries(&mut self, first: u32, n: u32, buf: &mut Vec<u32>);
}

/// The shape every host controller driver has.
pub trait HostDriver {
    /// Handles `input` at `now`, asking `ctx` for what the kernel around it does and
    /// emitting to it what it hands on.
    fn handle(&mut self, now: SimTime, input: Input, ctx: &mut impl DriverCtx);
    /// Adds what the driver counted to the run's statistics.
    fn report(&self, sys: &mut SystemStats);
}

/// The drivers of this layer, dispatched here once (a closed set: calls into the
/// driver are static, so the simulation's calls to it inline as before).
// One driver per run, kept in one Box: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Driver {
    Ufs(ufs::Ufs),
    Mmc(mmc::Mmc),
}

impl HostDriver for Driver {
    #[inline]
    fn handle(&mut self, now: SimTime, input: Input, ctx: &mut impl DriverCtx) {
        match self {
            Driver::Ufs(d) => d.handle(now, input, ctx),
            Driver::Mmc(d) => d.handle(now, input, ctx),
        }
    }

    fn report(&self, sys: &mut SystemStats) {
        match self {
            Driver::Ufs(d) => d.report(sys),
            Driver::Mmc(d) => d.report(sys),
        }
    }
}

/// Checks that the presets carry what driver `kind` needs (beyond the device's
/// interface).
pub fn check(kind: DriverKind, host: &HostConfig, device: &DeviceConfig) -> Result<(), String> {
    ufs::check(kind, host)?;
    ufs::mcq::check(kind, host, device)?;
    ufs::hpb::check(kind, host, device)
}

/// Sets up the device as driver `kind` finds it (HPB's control mode).
pub fn configure_device(kind: DriverKind, host: &HostConfig, device: &mut DeviceConfig) {
    ufs::hpb::configure_device(kind, device);
    if kind.is_ufs() {
        ufs::write_booster::configure_device(host, device);
    }
}

impl Driver {
    /// The blk-mq tags the queue gets (`nr`: the host's nr_requests).
    pub fn tags(&self, nr: u32) -> u32 {
        match self {
            Driver::Ufs(d) => d.tags(nr),
            Driver::Mmc(d) => d.tags(nr),
        }
    }
}

/// What the driver needs of the host preset's sections beyond `check` (mmc-cqe: the
/// `[cqe]` section): the error `build` gives.
pub fn check_sections(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    mmc::check(kind, host)
}

/// Why driver `kind` cannot run trims, before the queue's limits are looked at.
pub fn refuse_trims(kind: DriverKind) -> Result<(), String> {
    mmc::erase::refuse_trims(kind)
}

/// What driver `kind` needs of `host` to run trims.
pub fn check_trims(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    mmc::erase::check_trims(kind, host)
}

/// What driver `kind` needs of `host` to send cache flushes.
pub fn check_flushes(kind: DriverKind, host: &HostConfig) -> Result<(), String> {
    mmc::cqe::check_flushes(kind, host)
}

/// The driver of `kind` for `host` and `device`.
pub fn build(
    kind: DriverKind,
    host: &HostConfig,
    device: &DeviceConfig,
) -> Result<Box<Driver>, String> {
    Ok(Box::new(match kind {
        DriverKind::Ufs | DriverKind::UfsHpb { .. } | DriverKind::UfsMcq => {
            Driver::Ufs(ufs::Ufs::new(kind, host, device))
        }
        DriverKind::MmcLegacy
        | DriverKind::MmcHsq { .. }
        | DriverKind::MmcCqe { .. }
        | DriverKind::SdRtsx { .. } => Driver::Mmc(mmc::Mmc::new(kind, host, device)?),
    }))
}
