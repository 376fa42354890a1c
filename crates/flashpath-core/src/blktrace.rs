//! blktrace's binary format from a run's block events: what `blktrace -d DEV -o -`
//! would have captured, one stream per CPU, for `blkparse` and `btt`.
//!
//! Each event is a `struct blk_io_trace` (include/uapi/linux/blktrace_api.h, version 7),
//! 48 bytes in the host's byte order (here little-endian; blkparse detects the order from
//! the magic), followed by `pdu_len` bytes of payload:
//! ```text
//!  0 u32 magic = 0x65617400 | 7     4 u32 sequence (per CPU, from 1)
//!  8 u64 time (ns)                 16 u64 sector
//! 24 u32 bytes                     28 u32 action = category bits << 16 | action code
//! 32 u32 pid                       36 u32 device = major << 20 | minor (the kernel's dev_t)
//! 40 u32 cpu                       44 u16 error     46 u16 pdu_len
//! ```
//! As in the kernel's `__blk_add_trace` (Linux 5.4, kernel/trace/blktrace.c):
//! ```text
//! what |= ddir_act[op_is_write(op) ? WRITE : READ];
//! what |= MASK_TC_BIT(op_flags, SYNC); ... MASK_TC_BIT(op_flags, PREFLUSH); ...
//! if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE) what |= BLK_TC_ACT(BLK_TC_DISCARD);
//! if (op == REQ_OP_FLUSH) what |= BLK_TC_ACT(BLK_TC_FLUSH);
//! ```
//! every event carries its direction's category: READ (with AHEAD for readahead's
//! REQ_RAHEAD bios); WRITE with SYNC, as O_DIRECT writes, WB_SYNC_ALL writeback (fsync,
//! O_SYNC) and the journal's writes are REQ_SYNC, plain WRITE for the flusher's
//! background writeback; a discard (REQ_OP_DISCARD = 3, so op_is_write) WRITE, SYNC (the
//! BLKDISCARD ioctl's blkdev_issue_discard ends in submit_bio_wait, which sets REQ_SYNC;
//! bio_split copies it to the pieces) and DISCARD; blk-flush's flush request
//! (`flush_rq->cmd_flags = REQ_OP_FLUSH | REQ_PREFLUSH`, REQ_OP_FLUSH = 2, so not a
//! write) READ and FLUSH (BLK_TC_PREFLUSH is BLK_TC_FLUSH), with 0 bytes and sector 0
//! (blk_rq_trace_sector of a request whose sector was never set). Request events (I, D,
//! R, C) carry FS, P and U carry READ (their op is 0), and U's payload is the plug depth as
//! a big-endian u64. blkparse shows these as RWBS `R`, `RA`, `WS`, `W`, `DS` and `FN`
//! ([`rwbs`]). A request's events carry the flags of its first bio (the kernel's: of the
//! bio that allocated it; they differ only after a front merge of another kind).
//! Task names go in BLK_TN_PROCESS notes (pdu = the 16-byte comm).
//! Times start at the first reported job's start.

use crate::device::config::Interface;
use crate::engine::SimTime;
use crate::host::DriverKind;
use crate::trace::{pid, BlkAction, BlkOp, Trace, TraceChunk, TraceKind};
use crate::workload::Dir;

pub const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
pub const BLK_IO_TRACE_VERSION: u32 = 7;
/// Size of `struct blk_io_trace`.
pub const RECORD_BYTES: usize = 48;

const BLK_TC_SHIFT: u32 = 16;
const BLK_TC_READ: u32 = 1 << 0;
const BLK_TC_WRITE: u32 = 1 << 1;
const BLK_TC_FLUSH: u32 = 1 << 2;
const BLK_TC_SYNC: u32 = 1 << 3;
const BLK_TC_QUEUE: u32 = 1 << 4;
const BLK_TC_REQUEUE: u32 = 1 << 5;
const BLK_TC_ISSUE: u32 = 1 << 6;
const BLK_TC_COMPLETE: u32 = 1 << 7;
const BLK_TC_FS: u32 = 1 << 8;
const BLK_TC_NOTIFY: u32 = 1 << 10;
const BLK_TC_AHEAD: u32 = 1 << 11;
const BLK_TC_META: u32 = 1 << 12;
const BLK_TC_DISCARD: u32 = 1 << 13;
const BLK_TC_FUA: u32 = 1 << 15;

const fn act(cat: u32) -> u32 {
    cat << BLK_TC_SHIFT
}

const TA_QUEUE: u32 = 1 | act(BLK_TC_QUEUE);
const TA_BACKMERGE: u32 = 2 | act(BLK_TC_QUEUE);
const TA_FRONTMERGE: u32 = 3 | act(BLK_TC_QUEUE);
const TA_GETRQ: u32 = 4 | act(BLK_TC_QUEUE);
const TA_REQUEUE: u32 = 6 | act(BLK_TC_REQUEUE);
const TA_ISSUE: u32 = 7 | act(BLK_TC_ISSUE);
const TA_COMPLETE: u32 = 8 | act(BLK_TC_COMPLETE);
const TA_PLUG: u32 = 9 | act(BLK_TC_QUEUE);
const TA_UNPLUG_IO: u32 = 10 | act(BLK_TC_QUEUE);
const TA_INSERT: u32 = 12 | act(BLK_TC_QUEUE);
/// BLK_TA_SPLIT: no category of its own (only the bio's).
const TA_SPLIT: u32 = 13;
/// BLK_TN_PROCESS: establishes a pid → name mapping.
pub const TN_PROCESS: u32 = act(BLK_TC_NOTIFY);

/// The traced block device: its name (files are `<name>.blktrace.<cpu>`) and number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkDevice {
    pub name: &'static str,
    pub major: u32,
    pub minor: u32,
}

impl BlkDevice {
    /// The device the driver creates: the MMC block driver's `mmcblk0` (major 179,
    /// MMC_BLOCK_MAJOR) for eMMC and SD hosts, the SCSI disk `sda` (8:0) for UFS.
    pub fn for_driver(driver: DriverKind) -> BlkDevice {
        match driver.interface() {
            Interface::Ufs => BlkDevice {
                name: "sda",
                major: 8,
                minor: 0,
            },
            Interface::Emmc | Interface::Sd => BlkDevice {
                name: "mmcblk0",
                major: 179,
                minor: 0,
            },
        }
    }
    /// The kernel's dev_t: MKDEV(major, minor) with 20 minor bits.
    pub fn dev_t(&self) -> u32 {
        (self.major << 20) | self.minor
    }
    /// The file blktrace writes for `cpu`.
    pub fn file_name(&self, cpu: u32) -> String {
        format!("{}.blktrace.{}", self.name, cpu)
    }
}

/// One `struct blk_io_trace`, without its payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub sequence: u32,
    pub time: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu_len: u16,
}

impl Record {
    /// The record's 48 bytes (little-endian).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..4].copy_from_slice(&(BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION).to_le_bytes());
        b[4..8].copy_from_slice(&self.sequence.to_le_bytes());
        b[8..16].copy_from_slice(&self.time.to_le_bytes());
        b[16..24].copy_from_slice(&self.sector.to_le_bytes());
        b[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        b[28..32].copy_from_slice(&self.action.to_le_bytes());
        b[32..36].copy_from_slice(&self.pid.to_le_bytes());
        b[36..40].copy_from_slice(&self.device.to_le_bytes());
        b[40..44].copy_from_slice(&self.cpu.to_le_bytes());
        b[44..46].copy_from_slice(&self.error.to_le_bytes());
        b[46..48].copy_from_slice(&self.pdu_len.to_le_bytes());
        b
    }
}

/// The action word of a block event on a bio or request of direction `dir` and
/// operation `op`.
pub fn action_word(a: BlkAction, dir: Dir, op: BlkOp) -> u32 {
    let dir_cat = match (op, dir) {
        (BlkOp::Data, Dir::Read) => act(BLK_TC_READ),
        (BlkOp::Data, Dir::Write) => act(BLK_TC_WRITE | BLK_TC_SYNC),
        (BlkOp::ReadAhead, _) => act(BLK_TC_READ | BLK_TC_AHEAD),
        (BlkOp::Background, _) => act(BLK_TC_WRITE),
        (BlkOp::Discard, _) => act(BLK_TC_WRITE | BLK_TC_SYNC | BLK_TC_DISCARD),
        (BlkOp::Fua, _) => act(BLK_TC_WRITE | BLK_TC_SYNC | BLK_TC_FUA),
        (BlkOp::Flush, _) => act(BLK_TC_READ | BLK_TC_FLUSH),
        (BlkOp::Preflush, _) => act(BLK_TC_WRITE | BLK_TC_SYNC | BLK_TC_FLUSH),
    };
    match a {
        BlkAction::Queue => TA_QUEUE | dir_cat,
        BlkAction::BackMerge => TA_BACKMERGE | dir_cat,
        BlkAction::FrontMerge => TA_FRONTMERGE | dir_cat,
        BlkAction::GetRq => TA_GETRQ | dir_cat,
        BlkAction::Insert => TA_INSERT | dir_cat | act(BLK_TC_FS),
        BlkAction::Issue => TA_ISSUE | dir_cat | act(BLK_TC_FS),
        BlkAction::Requeue => TA_REQUEUE | dir_cat | act(BLK_TC_FS),
        BlkAction::Complete => TA_COMPLETE | dir_cat | act(BLK_TC_FS),
        BlkAction::Plug => TA_PLUG | act(BLK_TC_READ),
        BlkAction::Unplug { .. } => TA_UNPLUG_IO | act(BLK_TC_READ),
        BlkAction::Split { .. } => TA_SPLIT | dir_cat,
    }
}

/// The RWBS field blkparse prints for a record (blkparse_fmt.c `fill_rwbs`): F for a
/// flush, then D (discard), W (write), R (any other record with bytes) or N (none), then
/// F (FUA), A (readahead), S (sync), M (metadata).
pub fn rwbs(action: u32, bytes: u32) -> String {
    let has = |cat: u32| action & act(cat) != 0;
    let mut s = String::new();
    if has(BLK_TC_FLUSH) {
        s.push('F');
    }
    s.push(if has(BLK_TC_DISCARD) {
        'D'
    } else if has(BLK_TC_WRITE) {
        'W'
    } else if bytes != 0 {
        'R'
    } else {
        'N'
    });
    for (cat, c) in [
        (BLK_TC_FUA, 'F'),
        (BLK_TC_AHEAD, 'A'),
        (BLK_TC_SYNC, 'S'),
        (BLK_TC_META, 'M'),
    ] {
        if has(cat) {
            s.push(c);
        }
    }
    s
}

/// The task name blkparse shows for `p` on disk `dev`.
fn task_name(trace: &Trace, dev: &BlkDevice, p: u32) -> String {
    if let Some((_, n)) = trace.tasks.iter().find(|(q, _)| *q == p) {
        return n.clone();
    }
    match p {
        // An unbound worker of the first unbound pool: the per-CPU pools (normal and
        // high priority) take ids 0 .. 2 × CPUs - 1 (workqueue.c), so it is `u<2N>`;
        // the worker's own number is an estimate.
        pid::FLUSHER => return format!("kworker/u{}:1", 2 * trace.cores.max(1)),
        // jbd2_journal_init_dev names the thread after the disk and the journal inode
        // (ext4's is inode 8).
        pid::JBD2 => return format!("jbd2/{}-8", dev.name),
        pid::MMCQD => return "mmcqd/0".into(),
        pid::EXTERNAL => return "external".into(),
        _ => {}
    }
    if (pid::KWORKER..pid::FLUSHER).contains(&p) {
        return format!("kworker/{}:1H", p - pid::KWORKER);
    }
    format!("task{p}")
}

/// Writes one block event's records (its task's name note the first time the task
/// appears on the CPU, then the event, then its payload) into `buf`.
#[allow(clippy::too_many_arguments)]
fn write_event(
    buf: &mut Vec<u8>,
    named: &mut Vec<(u32, usize)>,
    tasks: &Trace,
    dev: &BlkDevice,
    cpu: usize,
    sequence: u32,
    time: u64,
    kind: TraceKind,
) {
    let TraceKind::Block {
        action,
        sector,
        sectors,
        dir,
        op,
        pid: p,
        ..
    } = kind
    else {
        unreachable!("only block events are written");
    };
    let device = dev.dev_t();
    // The kernel notes a task's name before its first event (trace_note_tsk);
    // interrupt context runs on the CPU's idle task (pid 0, one per CPU).
    let task = (p, if p == pid::IRQ { cpu } else { usize::MAX });
    if !named.contains(&task) {
        named.push(task);
        let mut comm = [0u8; 16];
        let name = if p == pid::IRQ {
            format!("swapper/{cpu}")
        } else {
            task_name(tasks, dev, p)
        };
        let n = name.len().min(15);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        let note = Record {
            time,
            action: TN_PROCESS,
            pid: p,
            device,
            cpu: cpu as u32,
            pdu_len: 16,
            ..Record::default()
        };
        buf.extend_from_slice(&note.encode());
        buf.extend_from_slice(&comm);
    }
    let pdu: Option<[u8; 8]> = match action {
        BlkAction::Unplug { depth } => Some((depth as u64).to_be_bytes()),
        // blk_add_trace_split: the rest's first sector, big-endian.
        BlkAction::Split { new_sector } => Some(new_sector.to_be_bytes()),
        _ => None,
    };
    let r = Record {
        sequence,
        time,
        sector,
        bytes: sectors * 512,
        action: action_word(action, dir, op),
        pid: p,
        device,
        cpu: cpu as u32,
        error: 0,
        pdu_len: pdu.map_or(0, |p| p.len() as u16),
    };
    buf.extend_from_slice(&r.encode());
    if let Some(p) = pdu {
        buf.extend_from_slice(&p);
    }
}

/// The blktrace stream of each CPU (index = CPU, all of the host's cores, empty where
/// nothing happened), as blktrace would write `<dev>.blktrace.<cpu>` (the whole trace
/// in memory; a long run streams with [`BlktraceStream`], which writes the same bytes).
pub fn encode(trace: &Trace, dev: &BlkDevice) -> Vec<Vec<u8>> {
    let cores = trace.cores.max(1) as usize;
    // Kernel buffers are in time order; records booked ahead are sorted in here. A
    // task's name is noted before its first event in time, on that event's CPU
    // (trace_note_tsk, when the task's btrace_seq is not the trace's).
    let mut evs: Vec<(u64, usize)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, TraceKind::Block { .. }))
        .map(|(i, e)| (e.t, i))
        .collect();
    evs.sort_by_key(|&(t, i)| (t, i));
    let mut named: Vec<(u32, usize)> = Vec::new();
    let mut sequence = vec![0u32; cores];
    let mut out = vec![Vec::new(); cores];
    for (t, i) in evs {
        let TraceKind::Block { cpu, .. } = trace.events[i].kind else {
            unreachable!("only block events were gathered");
        };
        let cpu = cpu as usize % cores;
        sequence[cpu] += 1;
        write_event(
            &mut out[cpu],
            &mut named,
            trace,
            dev,
            cpu,
            sequence[cpu],
            t.saturating_sub(trace.start),
            trace.events[i].kind,
        );
    }
    out
}

/// [`encode`] as the run goes, in bounded memory: fed the chunks `Sim::drain_trace`
/// hands over, it appends to [`BlktraceStream::out`] (per CPU; the caller moves the
/// bytes to the files and clears them) every block event older than the chunk's `now`
/// in time order, as the kernel's per-CPU buffers hold them, and keeps the events
/// booked ahead, the per-CPU sequence numbers and the tasks already named. Before the
/// reported jobs begin (times count from their start) it keeps the events.
pub struct BlktraceStream {
    dev: BlkDevice,
    /// Task names and cores, for the name notes.
    tasks: Trace,
    start: Option<SimTime>,
    ahead: Vec<(SimTime, u64, TraceKind)>,
    seq: u64,
    sequence: Vec<u32>,
    named: Vec<(u32, usize)>,
    /// Each CPU's bytes since the caller last took them.
    pub out: Vec<Vec<u8>>,
    /// The largest number of events kept between chunks (for tests).
    pub max_kept: usize,
}

impl BlktraceStream {
    pub fn new(dev: BlkDevice, cores: u32, tasks: Vec<(u32, String)>) -> Self {
        let n = cores.max(1) as usize;
        BlktraceStream {
            dev,
            tasks: Trace {
                tasks,
                cores,
                ..Trace::default()
            },
            start: None,
            ahead: Vec::new(),
            seq: 0,
            sequence: vec![0; n],
            named: Vec::new(),
            out: vec![Vec::new(); n],
            max_kept: 0,
        }
    }

    /// Takes one chunk (see the type's doc).
    pub fn feed(&mut self, c: &TraceChunk) {
        if self.start.is_none() {
            self.start = c.start;
        }
        for e in &c.events {
            if let TraceKind::Block { .. } = e.kind {
                self.ahead.push((e.t, self.seq, e.kind));
            }
            self.seq += 1;
        }
        let Some(start) = self.start else {
            self.max_kept = self.max_kept.max(self.ahead.len());
            return;
        };
        self.ahead.sort_by_key(|&(t, s, _)| (t, s));
        let k = self.ahead.partition_point(|&(t, _, _)| t < c.now);
        let cores = self.out.len();
        for (t, _, kind) in self.ahead.drain(..k) {
            let TraceKind::Block { cpu, .. } = kind else {
                unreachable!("only block events are kept");
            };
            let cpu = cpu as usize % cores;
            self.sequence[cpu] += 1;
            write_event(
                &mut self.out[cpu],
                &mut self.named,
                &self.tasks,
                &self.dev,
                cpu,
                self.sequence[cpu],
                t.saturating_sub(start),
                kind,
            );
        }
        self.max_kept = self.max_kept.max(self.ahead.len());
    }

    /// The run is over: writes what is left (`rest`: the trace's remainder).
    pub fn finish(&mut self, rest: &TraceChunk) {
        let mut last = TraceChunk {
            events: rest.events.clone(),
            now: SimTime::MAX,
            start: rest.start.or(self.start).or(Some(0)),
            ..TraceChunk::default()
        };
        last.cores = rest.cores;
        self.feed(&last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One record against `struct blk_io_trace`'s layout, field by field: a 4 KiB
    /// O_DIRECT write (WRITE|SYNC) issued (D, so FS) on CPU 3 by pid 104 on mmcblk0.
    #[test]
    fn record_layout_matches_struct_blk_io_trace() {
        let dev = BlkDevice::for_driver(DriverKind::MmcLegacy);
        assert_eq!(dev.dev_t(), 179 << 20);
        let r = Record {
            sequence: 0x0102_0304,
            time: 0x1122_3344_5566_7788,
            sector: 0x0000_0001_0000_0008,
            bytes: 4096,
            action: action_word(BlkAction::Issue, Dir::Write, BlkOp::Data),
            pid: 104,
            device: dev.dev_t(),
            cpu: 3,
            error: 0,
            pdu_len: 0,
        };
        // __BLK_TA_ISSUE = 7 | (ISSUE 1<<6 | FS 1<<8 | WRITE 1<<1 | SYNC 1<<3) << 16
        assert_eq!(r.action, 0x014a_0007);
        let b = r.encode();
        #[rustfmt::skip]
        let want: [u8; 48] = [
            0x07, 0x74, 0x61, 0x65,                         // magic 0x65617407
            0x04, 0x03, 0x02, 0x01,                         // sequence
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // time
            0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // sector
            0x00, 0x10, 0x00, 0x00,                         // bytes
            0x07, 0x00, 0x4a, 0x01,                         // action
            0x68, 0x00, 0x00, 0x00,                         // pid
            0x00, 0x00, 0x30, 0x0b,                         // device 179:0
            0x03, 0x00, 0x00, 0x00,                         // cpu
            0x00, 0x00,                                     // error
            0x00, 0x00,                                     // pdu_len
        ];
        assert_eq!(b, want);
    }

    #[test]
    fn actions_carry_blktraces_category_bits() {
        assert_eq!(
            action_word(BlkAction::Queue, Dir::Read, BlkOp::Data),
            0x0011_0001
        );
        assert_eq!(
            action_word(BlkAction::BackMerge, Dir::Read, BlkOp::Data),
            0x0011_0002
        );
        assert_eq!(
            action_word(BlkAction::FrontMerge, Dir::Write, BlkOp::Data),
            0x001a_0003
        );
        assert_eq!(
            action_word(BlkAction::GetRq, Dir::Read, BlkOp::Data),
            0x0011_0004
        );
        assert_eq!(
            action_word(BlkAction::Insert, Dir::Read, BlkOp::Data),
            0x0111_000c
        );
        assert_eq!(
            action_word(BlkAction::Complete, Dir::Read, BlkOp::Data),
            0x0181_0008
        );
        assert_eq!(
            action_word(BlkAction::Plug, Dir::Write, BlkOp::Data),
            0x0011_0009
        );
        assert_eq!(
            action_word(BlkAction::Unplug { depth: 3 }, Dir::Read, BlkOp::Data),
            0x0011_000a
        );
        assert_eq!(TN_PROCESS, 0x0400_0000);
    }

    /// A trim's bio and request: WRITE (REQ_OP_DISCARD is a write op), SYNC (from
    /// submit_bio_wait) and DISCARD (1 << 13); blk-flush's flush request: READ
    /// (REQ_OP_FLUSH is not) and FLUSH (1 << 2).
    #[test]
    fn discards_and_flushes_carry_their_categories() {
        let d = |a| action_word(a, Dir::Write, BlkOp::Discard);
        // QUEUE 0x10 | WRITE 0x2 | SYNC 0x8 | DISCARD 0x2000
        assert_eq!(d(BlkAction::Queue), 0x201a_0001);
        assert_eq!(d(BlkAction::GetRq), 0x201a_0004);
        assert_eq!(d(BlkAction::BackMerge), 0x201a_0002);
        // ... | FS 0x100 | ISSUE 0x40 or COMPLETE 0x80
        assert_eq!(d(BlkAction::Insert), 0x211a_000c);
        assert_eq!(d(BlkAction::Issue), 0x214a_0007);
        // ... | FS 0x100 | REQUEUE 0x20
        assert_eq!(d(BlkAction::Requeue), 0x212a_0006);
        assert_eq!(d(BlkAction::Complete), 0x218a_0008);
        let f = |a| action_word(a, Dir::Write, BlkOp::Flush);
        // READ 0x1 | FLUSH 0x4 | FS 0x100 | ISSUE 0x40 or COMPLETE 0x80
        assert_eq!(f(BlkAction::Issue), 0x0145_0007);
        assert_eq!(f(BlkAction::Complete), 0x0185_0008);
    }

    /// blkparse's RWBS of each kind of record: `R`, `WS`, `DS` (a discard replaces the
    /// W), `FN` (a flush request moves no bytes), `N` for a plug.
    #[test]
    fn task_names_are_the_kernels() {
        let tr = Trace {
            cores: 8,
            tasks: vec![(pid::THREAD, "fio-job".into())],
            ..Trace::default()
        };
        let mmc = BlkDevice::for_driver(DriverKind::MmcLegacy);
        let ufs = BlkDevice::for_driver(DriverKind::Ufs);
        assert_eq!(task_name(&tr, &mmc, pid::THREAD), "fio-job");
        assert_eq!(task_name(&tr, &mmc, pid::KWORKER + 3), "kworker/3:1H");
        assert_eq!(task_name(&tr, &mmc, pid::FLUSHER), "kworker/u16:1");
        assert_eq!(task_name(&tr, &mmc, pid::JBD2), "jbd2/mmcblk0-8");
        assert_eq!(task_name(&tr, &ufs, pid::JBD2), "jbd2/sda-8");
        assert_eq!(task_name(&tr, &mmc, pid::MMCQD), "mmcqd/0");
    }

    #[test]
    fn rwbs_is_blkparses() {
        let w = |op, dir| action_word(BlkAction::Issue, dir, op);
        assert_eq!(rwbs(w(BlkOp::Data, Dir::Read), 4096), "R");
        assert_eq!(rwbs(w(BlkOp::Data, Dir::Write), 4096), "WS");
        assert_eq!(rwbs(w(BlkOp::Discard, Dir::Write), 4096), "DS");
        assert_eq!(rwbs(w(BlkOp::Flush, Dir::Write), 0), "FN");
        assert_eq!(rwbs(w(BlkOp::Fua, Dir::Write), 4096), "WFS");
        assert_eq!(rwbs(w(BlkOp::ReadAhead, Dir::Read), 4096), "RA");
        assert_eq!(rwbs(w(BlkOp::Background, Dir::Write), 4096), "W");
        let plug = action_word(BlkAction::Plug, Dir::Read, BlkOp::Data);
        assert_eq!(rwbs(plug, 0), "N");
    }
}
