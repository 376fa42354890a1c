//! The replay step of a job thread (fio's `read_iolog_get` with `iolog_delay` and
//! `ipo_special`; workload/replay.rs describes the source): before the thread issues,
//! it takes the trace's next operation and waits for its time.
//!
//! ```text
//!  thread_run ─▶ replay_step ─┬─ Mark (file action): wait, last_issue = now, next op
//!                             ├─ WaitUntil (v2 wait): wait until start + t, next op
//!                             ├─ Sync: drain the I/Os in flight, wait, fsync (buffered.rs)
//!                             ├─ Trim: drain, wait, issue; the thread blocks in it
//!                             ├─ Read/Write: wait, issue through the job's engine
//!                             └─ end of trace: the job issues nothing more
//! ```
//!
//! A wait is fio's `usec_sleep`: the thread sleeps on a timer (`ThreadState::Delayed`)
//! and completions that arrive meanwhile are reaped when it wakes. fio's `time_offset`
//! (the overshoot of a real sleep carried to the next delay) is always zero here: a
//! simulated sleep ends on time.
//!
//! Units: nanoseconds, bytes.

use crate::engine::SimTime;
use crate::sim::{Ev, Sim, ThreadState};
use crate::workload::{Dir, IoSpec, ReplayKind, ReplayOp, ReplaySource};

/// A replay thread's position in its trace.
pub(in crate::sim) struct ReplayThread {
    src: Box<dyn ReplaySource>,
    /// The operation taken from the source and not yet done.
    pending: Option<ReplayOp>,
    /// fio's `td->last_issue`: when the last I/O or file action was issued.
    last_issue: SimTime,
    /// A trim is in flight: the thread is in its ioctl until the I/Os in flight end.
    blocking: bool,
}

impl ReplayThread {
    pub(in crate::sim) fn new(src: Box<dyn ReplaySource>) -> Self {
        ReplayThread {
            src,
            pending: None,
            last_issue: 0,
            blocking: false,
        }
    }
}

impl Sim {
    /// Hook of `thread_run` for a replay job, once the thread has a free slot: true if
    /// the next I/O is set (`IoSource::replay_next`) and may be issued now, or the trace
    /// is over (the thread is then `terminated`); false if the thread sleeps, waits for
    /// its I/Os in flight, or fsyncs.
    pub(in crate::sim) fn replay_step(&mut self, t: u32) -> bool {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        let start = th.start;
        let inflight = th.inflight;
        let Some(r) = th.replay.as_mut() else {
            return true;
        };
        if th.src.replay_next.is_some() {
            return true;
        }
        if r.blocking {
            if inflight > 0 {
                th.state = ThreadState::Sleeping;
                return false;
            }
            r.blocking = false;
        }
        loop {
            let op = match r.pending {
                Some(op) => op,
                None => match r.src.next_op() {
                    Some(op) => {
                        r.pending = Some(op);
                        op
                    }
                    None => {
                        // read_iolog_get: the list is empty, td->done = 1.
                        th.terminated = true;
                        return true;
                    }
                },
            };
            // A sync and a trim wait for the I/Os in flight first (the async engines
            // answer FIO_Q_BUSY while anything is queued), then for their time.
            if matches!(op.kind, ReplayKind::Sync | ReplayKind::Trim) && inflight > 0 {
                th.state = ThreadState::Sleeping;
                return false;
            }
            let gate = match op.kind {
                ReplayKind::WaitUntil => start.saturating_add(op.delay_ns),
                _ => r.last_issue.saturating_add(op.delay_ns),
            };
            if gate > now {
                th.state = ThreadState::Delayed;
                self.q.push(gate, Ev::ThreadRun(t));
                return false;
            }
            r.pending = None;
            match op.kind {
                ReplayKind::WaitUntil => continue,
                ReplayKind::Mark => {
                    r.last_issue = now;
                    continue;
                }
                ReplayKind::Sync => {
                    r.last_issue = now;
                    self.buf_fsync_now(t);
                    return false;
                }
                ReplayKind::Read | ReplayKind::Write | ReplayKind::Trim => {
                    r.last_issue = now;
                    let trim = op.kind == ReplayKind::Trim;
                    r.blocking = trim;
                    th.src.replay_next = Some(IoSpec {
                        dir: if op.kind == ReplayKind::Read {
                            Dir::Read
                        } else {
                            Dir::Write
                        },
                        trim,
                        offset: op.offset,
                        len: op.len,
                    });
                    return true;
                }
            }
        }
    }
}
