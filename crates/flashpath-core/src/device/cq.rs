//! eMMC 5.1 command queue, device side: the task table behind CMD44/CMD45 and the
//! Queue Status Register (QSR) that CMD13 with the SQS bit reads (JEDEC eMMC 5.1
//! §6.6.39 "Command Queuing"; docs/kernel-behaviour.md §3).
//!
//! ```text
//!  CMD44+CMD45 ─▶ queue(tag, write) ─▶ [task table, ≤ CMDQ_DEPTH]
//!                   read: the FTL fetches the data at once (Input::Command) ─▶ data_ready
//!                   write: ready at once (the data comes with CMD47)
//!  CMD13 SQS   ─▶ report(): the one task the device will execute next, by its policy
//!  CMD46/47    ─▶ execute(tag): the task leaves the table
//! ```
//!
//! Readiness and order are the device's decision. A read is ready once its data is in
//! the controller's buffer; a write is ready at once, because the device takes one
//! write's data at a time and the bus already serialises them (the previous write holds
//! DAT0 busy until its `Done`). The device reports ONE ready task per status read (the
//! one its policy runs next), so the execution order is entirely the device's; some
//! parts do exactly that ("some eMMCs ... CMD13 can only query one slot at a time",
//! linux-mmc, Shawn Lin, 2025); others set several bits and let the host's CQE pick.
//!
//! Leaves out: task priority (Linux always queues "simple" tasks), the device's read
//! buffer limit (queued reads keep their data until executed, up to 32 × the request
//! size), task discard (CMD48) and error recovery.
//! The table holds at most 32 tasks, so a linear scan is the cheap choice.

/// EXT_CSD[307] CMDQ_DEPTH + 1 of the modelled card. Estimate: 32 is the largest depth
/// eMMC 5.1 allows and what eMMC 5.1 parts of the period report (the kernel takes
/// min(card, host) and disables queuing at 2 or less).
pub const CMDQ_DEPTH: u32 = 32;

/// Which ready task the device reports (and so executes) next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqPolicy {
    /// Reads whose data is buffered go first, oldest first; when no read is ready, the
    /// oldest write. Reads can overtake writes and each other (a read on a free die
    /// finishes its NAND fetch earlier).
    ReadsFirst,
    /// Strictly the oldest queued task, once it is ready: execution in queue order; NAND
    /// fetches of the queued reads still overlap across dies.
    OldestFirst,
}

impl CqPolicy {
    pub fn name(self) -> &'static str {
        match self {
            CqPolicy::ReadsFirst => "reads-first",
            CqPolicy::OldestFirst => "oldest-first",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Task {
    tag: u32,
    /// Queue order (CMD45 arrival).
    seq: u64,
    write: bool,
    ready: bool,
}

/// The device's task table.
#[derive(Clone, Debug)]
pub struct TaskQueue {
    policy: CqPolicy,
    tasks: Vec<Task>,
    seq: u64,
}

impl TaskQueue {
    pub fn new(policy: CqPolicy) -> TaskQueue {
        TaskQueue {
            policy,
            tasks: Vec::with_capacity(CMDQ_DEPTH as usize),
            seq: 0,
        }
    }

    /// Tasks queued and not yet executed.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// CMD45 arrived: the task with ID `tag` is queued. A write is ready at once; a read
    /// when `data_ready` says so.
    pub fn queue(&mut self, tag: u32, write: bool) {
        assert!(
            self.tasks.len() < CMDQ_DEPTH as usize,
            "more tasks queued than CMDQ_DEPTH"
        );
        assert!(
            self.tasks.iter().all(|t| t.tag != tag),
            "task ID {tag} queued twice"
        );
        self.tasks.push(Task {
            tag,
            seq: self.seq,
            write,
            ready: write,
        });
        self.seq += 1;
    }

    /// A queued read's data is in the controller's buffer.
    pub fn data_ready(&mut self, tag: u32) {
        let t = self
            .tasks
            .iter_mut()
            .find(|t| t.tag == tag)
            .expect("data ready for a queued read");
        debug_assert!(!t.write);
        t.ready = true;
    }

    /// The Queue Status Register as this device answers it: the task it runs next.
    pub fn report(&self) -> Option<u32> {
        match self.policy {
            CqPolicy::OldestFirst => self
                .tasks
                .iter()
                .min_by_key(|t| t.seq)
                .filter(|t| t.ready)
                .map(|t| t.tag),
            CqPolicy::ReadsFirst => {
                let oldest = |write: bool| {
                    self.tasks
                        .iter()
                        .filter(|t| t.ready && t.write == write)
                        .min_by_key(|t| t.seq)
                        .map(|t| t.tag)
                };
                oldest(false).or_else(|| oldest(true))
            }
        }
    }

    /// CMD46/CMD47 for `tag`: the task leaves the table.
    pub fn execute(&mut self, tag: u32) {
        let i = self
            .tasks
            .iter()
            .position(|t| t.tag == tag)
            .expect("executing a queued task");
        assert!(self.tasks[i].ready, "the host executes only a ready task");
        self.tasks.swap_remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_first_lets_a_ready_read_overtake_older_tasks() {
        let mut q = TaskQueue::new(CqPolicy::ReadsFirst);
        q.queue(0, false);
        q.queue(1, true);
        q.queue(2, false);
        assert_eq!(q.report(), Some(1), "no read ready: the write");
        q.data_ready(2);
        assert_eq!(q.report(), Some(2), "a ready read before the older write");
        q.data_ready(0);
        assert_eq!(q.report(), Some(0), "the oldest ready read");
        q.execute(0);
        assert_eq!(q.report(), Some(2));
        q.execute(2);
        q.execute(1);
        assert!(q.is_empty());
    }

    #[test]
    fn oldest_first_waits_for_the_head() {
        let mut q = TaskQueue::new(CqPolicy::OldestFirst);
        q.queue(5, false);
        q.queue(6, true);
        q.queue(7, false);
        q.data_ready(7);
        assert_eq!(q.report(), None, "the head read is not ready");
        q.data_ready(5);
        assert_eq!(q.report(), Some(5));
        q.execute(5);
        assert_eq!(q.report(), Some(6));
    }
}
