//! Trace replay as a source of a job's I/O (fio's `read_iolog`): the front end reads the
//! trace (fio iolog v2/v3, blktrace) at the edge and hands the core a [`ReplaySource`]
//! it pulls one operation at a time, so a trace of any length replays in bounded memory.
//!
//! The core models fio's replay loop (iolog.c `read_iolog_get`, `iolog_delay`,
//! `ipo_special`; sim/jobs/replay.rs): before an operation the thread sleeps until
//! `last_issue + delay` (`last_issue`: when the previous I/O or file action was issued),
//! without reaping in between, as fio's `usec_sleep` does; a v2 `wait` sleeps until its
//! time since the job started; a file action (add/open/close) only moves `last_issue`.
//! I/Os go through the job's engine (any iodepth); a sync waits for the I/Os in flight,
//! then fsyncs; a trim (BLKDISCARD, which fio issues synchronously whatever the engine)
//! waits for the I/Os in flight and the thread blocks in it.
//!
//! Units: bytes, nanoseconds.

use std::sync::Arc;

/// What one replayed operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    Read,
    Write,
    /// A discard of the range (BLKDISCARD).
    Trim,
    /// fsync (or fdatasync, the same on a block device): flush what is dirty, then the
    /// device's cache.
    Sync,
    /// A file action (add, open, close): no I/O, but its time counts (`ipo_special`).
    Mark,
    /// v2 `wait`: sleep until `delay_ns` after the job started; `last_issue` unchanged.
    WaitUntil,
}

/// One operation of a replay, in trace order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayOp {
    pub kind: ReplayKind,
    /// Device offset in bytes (Read, Write, Trim).
    pub offset: u64,
    pub len: u64,
    /// Delay after the previous issue (fio's `ipo->delay`, already scaled by
    /// replay_time_scale and zero with replay_no_stall); for `WaitUntil`, the time since
    /// the job started.
    pub delay_ns: u64,
}

/// A replay's operations, pulled in order by the simulator. `None`: the trace is over.
/// A source that fails (a read error of its file) ends there and reports the error
/// through the front end that made it.
pub trait ReplaySource: Send {
    fn next_op(&mut self) -> Option<ReplayOp>;
}

/// Opens a fresh source at the trace's start (each run, each thread).
pub type ReplayOpen = Arc<dyn Fn() -> Result<Box<dyn ReplaySource>, String> + Send + Sync>;

/// A replay job: where its operations come from.
#[derive(Clone)]
pub struct Replay {
    pub open: ReplayOpen,
    /// The trace has syncs (a cache flush the driver must be able to send).
    pub syncs: bool,
    /// The trace has trims (discards the driver and device must take).
    pub trims: bool,
    /// For messages: the trace's name.
    pub name: String,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("name", &self.name)
            .field("syncs", &self.syncs)
            .field("trims", &self.trims)
            .finish()
    }
}

impl PartialEq for Replay {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.open, &other.open) && self.syncs == other.syncs
    }
}

/// A source over operations held in memory (tests, short generated traces).
pub struct VecSource {
    ops: Arc<[ReplayOp]>,
    next: usize,
}

impl ReplaySource for VecSource {
    fn next_op(&mut self) -> Option<ReplayOp> {
        let op = self.ops.get(self.next).copied();
        self.next += 1;
        op
    }
}

impl Replay {
    /// A replay of `ops` held in memory (tests, short traces).
    pub fn from_ops(name: &str, ops: Vec<ReplayOp>) -> Self {
        let syncs = ops.iter().any(|o| o.kind == ReplayKind::Sync);
        let trims = ops.iter().any(|o| o.kind == ReplayKind::Trim);
        let ops: Arc<[ReplayOp]> = ops.into();
        Replay {
            open: Arc::new(move || {
                Ok(Box::new(VecSource {
                    ops: ops.clone(),
                    next: 0,
                }) as Box<dyn ReplaySource>)
            }),
            syncs,
            trims,
            name: name.to_string(),
        }
    }
}
