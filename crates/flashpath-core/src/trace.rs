//! An event trace of a run: what each driver, the bus and the device did to each request,
//! in time order. Off unless asked for (`Sim::enable_trace`); the mechanism tests read it
//! ("legacy never has two data transfers on the bus", "hsq starts the next request from the
//! interrupt"), and timeline exports can be built from it.

use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::workload::Dir;

/// The context a piece of driver work ran in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    /// A task (thread, kworker, kblockd): reaching it from an interrupt costs a wake-up.
    Task,
    /// Interrupt context (hard IRQ or the handler's bottom half on the same core).
    Irq,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// A command and its response on the command line, from `t` to `end`. `opcode` is the
    /// MMC/SD command index (12 = STOP_TRANSMISSION, 13 = SEND_STATUS, 44-47 = CQ, ...) or,
    /// for UFS, the UPIU transaction code.
    Command { opcode: u8, end: SimTime },
    /// A data transfer on the bus from `t` to `end`.
    Data { dir: Dir, end: SimTime },
    /// UFS: the COMMAND UPIU from `t` to `end` carries this HPB SCSI command (F8h HPB
    /// READ, F9h READ BUFFER, FAh WRITE BUFFER; `device::hpb`), beside its `Command`.
    Scsi { opcode: u8, end: SimTime },
    /// The driver took the request into its own queue: afterwards `queued` wait there
    /// (not started) and `in_flight` have been handed to the driver and not completed.
    DriverQueued { queued: u32, in_flight: u32 },
    /// The driver started the request on the hardware, from `ctx` on `core`.
    Started { core: u32, ctx: Ctx },
    /// The device finished the request's work (write accepted / read data ready).
    DeviceDone,
    /// The interrupt for the request ran on `core`.
    Irq { core: u32 },
    /// The block layer ended the request.
    Completed,
    /// A sleeping task woke on `core`: a context switch.
    Wakeup { core: u32 },
    /// mmc-cqe: `cqhci_off` halted the command queue engine (CQHCI_HALT) before a legacy
    /// command (a discard's CMD35/36/38; driver/mmc/erase.rs).
    CqeHalted,
    /// mmc-cqe: the next `cqhci_request` cleared the halt: the queue runs again.
    CqeResumed,
    /// A block-layer event as blktrace records it (`action`), for the bio or request
    /// `sector`..+`sectors`, on `cpu`, in the context of task `pid` (see [`pid`]).
    Block {
        action: BlkAction,
        sector: u64,
        sectors: u32,
        dir: Dir,
        /// The operation, where it is not the plain read or write `dir` says.
        op: BlkOp,
        cpu: u32,
        pid: u32,
    },
}

/// The operation of a block event's bio or request beyond its direction: what gives
/// blktrace's DISCARD and FLUSH categories (blktrace.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkOp {
    /// REQ_OP_READ, or REQ_OP_WRITE with REQ_SYNC (O_DIRECT writes, an fsync's or an
    /// O_SYNC write's writeback: WB_SYNC_ALL, the journal's writes), as `dir` says.
    Data,
    /// A REQ_RAHEAD read: readahead's bios (read_pages → mpage_readpages), `dir` Read.
    ReadAhead,
    /// A write without REQ_SYNC: the flusher's background or periodic writeback
    /// (WB_SYNC_NONE: wbc_to_write_flags sets REQ_BACKGROUND, which blktrace does not
    /// show), `dir` Write.
    Background,
    /// REQ_OP_DISCARD (`dir` is Write): a trim's bio or request.
    Discard,
    /// A REQ_FUA write on a queue with native FUA (the jbd2 commit block after its
    /// preflush; `dir` is Write).
    Fua,
    /// REQ_OP_FLUSH: the flush request of blk-flush (`flush_rq`), no data.
    Flush,
    /// The empty REQ_PREFLUSH write bio of blkdev_issue_flush (`dir` is Write), and its
    /// request.
    Preflush,
}

/// The block-layer events blktrace records (include/uapi/linux/blktrace_api.h), at the
/// kernel's trace points: Q `trace_block_bio_queue` (each bio entering blk-mq), M/F a bio
/// merged at the back/front of a request, G `trace_block_getrq` (request allocated),
/// I `trace_block_rq_insert`, D `trace_block_rq_issue` (`blk_mq_start_request`),
/// C `trace_block_rq_complete`, P/U `trace_block_plug`/`trace_block_unplug`, X
/// `trace_block_split` (blk_queue_split cut the event's bio off the front of a larger one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkAction {
    Queue,
    BackMerge,
    FrontMerge,
    GetRq,
    Insert,
    Issue,
    /// The driver refused the request; it went back on the dispatch list.
    Requeue,
    Complete,
    Plug,
    /// `depth`: requests in the plug when it was flushed.
    Unplug {
        depth: u32,
    },
    /// The event's sector range was split off the front of a bio whose rest, starting
    /// at `new_sector`, is queued again.
    Split {
        new_sector: u64,
    },
}

/// Task ids of the simulated tasks in block events and timelines.
pub mod pid {
    /// Interrupt context (no task of its own).
    pub const IRQ: u32 = 0;
    /// The kblockd/kworker on core `c` is `KWORKER + c`.
    pub const KWORKER: u32 = 100;
    /// The flusher: the writeback work (wb_workfn) on an unbound kworker, which submits
    /// background and periodic writeback.
    pub const FLUSHER: u32 = 900;
    /// The filesystem's journal thread (kjournald2: `jbd2/<disk>-8`), which submits the
    /// journal's writes and its commit block.
    pub const JBD2: u32 = 901;
    /// The MMC block driver's queue thread of the single-queue block layer (before
    /// 4.16: `mmcqd/0`), which fetches (D) every request.
    pub const MMCQD: u32 = 902;
    /// The task that submits the requests of a request source from outside the
    /// simulation (sim/external.rs).
    pub const EXTERNAL: u32 = 903;
    /// fio job thread `t` (numjobs expanded, preconditioning jobs first) is `THREAD + t`.
    pub const THREAD: u32 = 1000;
}

/// What a slice of CPU work was doing (timeline labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSlice {
    pub core: u32,
    pub start: SimTime,
    pub end: SimTime,
    /// Which of the core's lanes ran it (host/cpu.rs).
    pub lane: CpuLane,
    pub label: &'static str,
}

/// The lanes of a host core, lowest priority first (host/cpu.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuLane {
    /// User threads in their system calls.
    Task = 0,
    /// Kernel threads, workers and softirq work that preempt user threads.
    Kernel = 1,
    /// Hard interrupt context.
    Irq = 2,
}

/// A NAND resource: a die or a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NandUnit {
    Die(u32),
    Channel(u32),
}

/// A slice of NAND work: array read, program, erase, map read/program, or a transfer
/// over the channel (on the channel, and on the die whose register is read or filled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandSlice {
    pub unit: NandUnit,
    pub start: SimTime,
    pub end: SimTime,
    pub label: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub t: SimTime,
    pub req: Option<ReqId>,
    pub kind: TraceKind,
}

/// Recorded events in the order they were recorded (not necessarily time order: work is
/// booked ahead on resources). `sorted()` gives time order.
///
/// Whatever is recorded is booked at or after the simulated time of its recording (the
/// event loop only moves forward, and work starts once it is ready), so a writer that
/// drains the trace while the run goes (`Sim::drain_trace`) can write everything older
/// than the current time in time order and keep only what is booked ahead. `floor`
/// holds the time of the last drain; a record earlier than it is a simulator bug
/// (checked in debug builds).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<TraceEvent>,
    /// CPU work on the host cores (task and interrupt lanes), in booking order.
    pub cpu: Vec<CpuSlice>,
    /// NAND die and channel work, in booking order.
    pub nand: Vec<NandSlice>,
    /// When the reported jobs began (after preconditioning): exports start here.
    pub start: SimTime,
    /// Task names by pid (fio job threads), for exports.
    pub tasks: Vec<(u32, String)>,
    /// Host cores.
    pub cores: u32,
    /// `start` is set: the reported jobs have begun.
    pub started: bool,
    /// No record may be earlier than this (the time of the last drain).
    pub floor: SimTime,
}

/// What [`crate::sim::Sim::drain_trace`] hands over: the events recorded since the last
/// drain, in recording order, the CPU slices that can no longer change (in booking
/// order), and the NAND slices booked since the last drain. Nothing recorded later can
/// be earlier than `now`.
#[derive(Clone, Debug, Default)]
pub struct TraceChunk {
    pub events: Vec<TraceEvent>,
    pub cpu: Vec<CpuSlice>,
    pub nand: Vec<NandSlice>,
    pub now: SimTime,
    /// The reported jobs' start (`Trace::start`), once they have begun.
    pub start: Option<SimTime>,
    /// Host cores and task names (as in `Trace`).
    pub cores: u32,
}

impl Trace {
    #[inline]
    pub fn push(&mut self, t: SimTime, req: Option<ReqId>, kind: TraceKind) {
        debug_assert!(
            t >= self.floor,
            "a trace event at {t} ns is recorded after the trace was drained at {} ns",
            self.floor
        );
        self.events.push(TraceEvent { t, req, kind });
    }

    /// The trace as one last chunk for a streaming writer (what `Sim::take_trace`
    /// leaves after the drains).
    pub fn into_chunk(self) -> TraceChunk {
        TraceChunk {
            events: self.events,
            cpu: self.cpu,
            nand: self.nand,
            now: SimTime::MAX,
            start: self.started.then_some(self.start),
            cores: self.cores,
        }
    }

    /// The events in time order (stable: equal times keep recording order).
    pub fn sorted(&self) -> Vec<TraceEvent> {
        let mut v = self.events.clone();
        v.sort_by_key(|e| e.t);
        v
    }

    /// Bus occupancy intervals (commands and data), in start order.
    pub fn bus_intervals(&self) -> Vec<(SimTime, SimTime, TraceEvent)> {
        let mut v: Vec<_> = self
            .events
            .iter()
            .filter_map(|e| match e.kind {
                TraceKind::Command { end, .. } | TraceKind::Data { end, .. } => {
                    Some((e.t, end, *e))
                }
                _ => None,
            })
            .collect();
        v.sort_by_key(|x| (x.0, x.1));
        v
    }

    /// Commands with this opcode, in time order.
    pub fn commands(&self, opcode: u8) -> Vec<TraceEvent> {
        self.sorted()
            .into_iter()
            .filter(|e| matches!(e.kind, TraceKind::Command { opcode: o, .. } if o == opcode))
            .collect()
    }
}
