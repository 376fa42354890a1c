//! A run's timeline as Chrome trace-event JSON (the object format: `traceEvents` and
//! `displayTimeUnit`), which Perfetto's UI and chrome://tracing open.
//!
//! Processes and tracks (pid / tid):
//! - 1 "host CPU": core c's task work (user threads) on tid 3c, its kernel work (kernel
//!   threads and workers that preempt user threads) on tid 3c+1, its interrupt-context
//!   work on tid 3c+2 (the lanes of host/cpu.rs: higher lanes preempt lower ones, whose
//!   slice is drawn stretched by the time the preemption took). Slices are labelled with what
//!   the work is (syscall submit, prep+dma map, irq handler, post+complete, ...).
//! - 2 "bus": commands on tid 0, data transfers on tid 1.
//! - 3 "NAND": die d on tid d (array read, program, erase, and the time its register is
//!   read out or filled over the channel), channel c on tid 1000 + c.
//! - 4 "requests": each block request's spans as async events (b/e with the request's
//!   instance id): queued (allocated → dispatched to the driver), dispatched (→ started
//!   on the hardware), hardware (→ its interrupt), post (→ completed); and on tid 1 the
//!   block events as blktrace records them (instant events Q, M, F, G, I, D, C, P, U with
//!   the sector range, CPU and task in `args`).
//!
//! Times are microseconds with nanosecond decimals, from the first reported job's start.
//! Work before it (preconditioning) is left out. Output is deterministic.

use crate::engine::SimTime;
use crate::trace::{
    BlkAction, CpuSlice, NandSlice, NandUnit, Trace, TraceChunk, TraceEvent, TraceKind,
};
use std::fmt::Write;

const PID_CPU: u32 = 1;
const PID_BUS: u32 = 2;
const PID_NAND: u32 = 3;
const PID_REQ: u32 = 4;
/// Channel tracks' tids start here (die tracks are the die numbers).
pub const CHANNEL_TID: u32 = 1000;

fn ts(t: u64) -> String {
    format!("{}.{:03}", t / 1000, t % 1000)
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

struct Out {
    s: String,
    first: bool,
}

impl Out {
    fn ev(&mut self, body: std::fmt::Arguments) {
        if !self.first {
            self.s.push_str(",\n");
        }
        self.first = false;
        self.s.push('{');
        let _ = self.s.write_fmt(body);
        self.s.push('}');
    }
    fn meta(&mut self, what: &str, pid: u32, tid: u32, name: &str) {
        self.ev(format_args!(
            "\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{}\"}}",
            esc(name)
        ));
    }
    fn slice(&mut self, pid: u32, tid: u32, name: &str, start: u64, end: u64) {
        self.ev(format_args!(
            "\"ph\":\"X\",\"name\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{}",
            esc(name),
            ts(start),
            ts(end - start)
        ));
    }
    fn span(&mut self, id: u64, name: &str, start: u64, end: u64) {
        for (ph, t) in [("b", start), ("e", end)] {
            self.ev(format_args!(
                "\"ph\":\"{ph}\",\"cat\":\"request\",\"id\":{id},\"name\":\"{name}\",\"pid\":{PID_REQ},\"tid\":0,\"ts\":{}",
                ts(t)
            ));
        }
    }
}

/// The file's opening and the metadata events naming the processes and tracks.
fn header(o: &mut Out, cores: u32, dies: u32, chans: u32) {
    o.meta("process_name", PID_CPU, 0, "host CPU");
    for c in 0..cores {
        o.meta("thread_name", PID_CPU, 3 * c, &format!("core {c}"));
        o.meta(
            "thread_name",
            PID_CPU,
            3 * c + 1,
            &format!("core {c} kernel"),
        );
        o.meta("thread_name", PID_CPU, 3 * c + 2, &format!("core {c} irq"));
    }
    o.meta("process_name", PID_BUS, 0, "bus");
    o.meta("thread_name", PID_BUS, 0, "commands");
    o.meta("thread_name", PID_BUS, 1, "data");
    if dies + chans > 0 {
        o.meta("process_name", PID_NAND, 0, "NAND");
        for d in 0..dies {
            o.meta("thread_name", PID_NAND, d, &format!("die {d}"));
        }
        for c in 0..chans {
            o.meta(
                "thread_name",
                PID_NAND,
                CHANNEL_TID + c,
                &format!("channel {c}"),
            );
        }
    }
    o.meta("process_name", PID_REQ, 0, "block requests");
    o.meta("thread_name", PID_REQ, 1, "block events (blktrace)");
}

/// The die and channel counts the NAND slices show.
fn nand_units(nand: &[NandSlice], dies: &mut u32, chans: &mut u32) {
    for n in nand {
        match n.unit {
            NandUnit::Die(d) => *dies = (*dies).max(d + 1),
            NandUnit::Channel(c) => *chans = (*chans).max(c + 1),
        }
    }
}

fn cpu_slice(o: &mut Out, c: &CpuSlice, t0: u64) {
    if c.start >= t0 && c.end > c.start {
        let tid = 3 * c.core + c.lane as u32;
        o.slice(PID_CPU, tid, c.label, c.start - t0, c.end - t0);
    }
}

fn nand_slice(o: &mut Out, n: &NandSlice, t0: u64) {
    if n.start >= t0 && n.end > n.start {
        let tid = match n.unit {
            NandUnit::Die(d) => d,
            NandUnit::Channel(c) => CHANNEL_TID + c,
        };
        o.slice(PID_NAND, tid, n.label, n.start - t0, n.end - t0);
    }
}

/// A command or data transfer on the bus, as a slice (other events: nothing).
fn bus_event(o: &mut Out, e: &TraceEvent, t0: u64) {
    if e.t < t0 {
        return;
    }
    {
        let (tid, name, end) = match e.kind {
            TraceKind::Command { opcode, end } => (0, format!("CMD{opcode}"), end),
            TraceKind::Scsi { opcode, end } => {
                let what = match opcode {
                    crate::device::hpb::HPB_READ => "HPB READ",
                    crate::device::hpb::HPB_READ_BUFFER => "HPB READ BUFFER",
                    crate::device::hpb::HPB_WRITE_BUFFER => "HPB WRITE BUFFER",
                    _ => "SCSI",
                };
                (0, format!("{what} ({opcode:02X}h)"), end)
            }
            TraceKind::Data { dir, end } => (1, format!("{dir:?} data"), end),
            _ => return,
        };
        let name = match e.req {
            Some(r) => format!("{name} r{r}"),
            None => name,
        };
        if end > e.t {
            o.slice(PID_BUS, tid, &name, e.t - t0, end - t0);
        }
    }
}

/// The timeline of `trace` as Chrome trace-event JSON (the whole trace in memory; a
/// long run streams it with [`ChromeStream`], which writes the same bytes).
pub fn chrome_json(trace: &Trace) -> String {
    let t0 = trace.start;
    let mut o = Out {
        s: String::from(OPENING),
        first: true,
    };
    let (mut dies, mut chans) = (0u32, 0u32);
    nand_units(&trace.nand, &mut dies, &mut chans);
    header(&mut o, trace.cores, dies, chans);
    for c in &trace.cpu {
        cpu_slice(&mut o, c, t0);
    }
    for e in &trace.events {
        bus_event(&mut o, e, t0);
    }
    for n in &trace.nand {
        nand_slice(&mut o, n, t0);
    }
    request_spans(trace, &mut o);
    block_events(trace, &mut o);
    o.s.push_str(CLOSING);
    o.s
}

const OPENING: &str = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
const CLOSING: &str = "\n]}\n";

#[derive(Clone, Copy, Default)]
struct Open {
    queued: Option<u64>,
    dispatched: Option<u64>,
    started: Option<u64>,
    irq: Option<u64>,
}

/// The spans of each request instance, from its block and driver events in time order.
fn request_spans(trace: &Trace, o: &mut Out) {
    let t0 = trace.start;
    let mut idx: Vec<usize> = (0..trace.events.len())
        .filter(|&i| trace.events[i].req.is_some() && trace.events[i].t >= t0)
        .collect();
    idx.sort_by_key(|&i| (trace.events[i].t, i));
    let mut spans = Spans::default();
    for i in idx {
        spans.event(&trace.events[i], t0, o);
    }
}

/// The open spans of the requests in flight (indexed by request id: bounded by the
/// block layer's tags) and the next instance id.
#[derive(Default)]
struct Spans {
    open: Vec<Open>,
    next_id: u64,
}

impl Spans {
    /// Follows one event of a request (in time order, at or after `t0`).
    fn event(&mut self, e: &TraceEvent, t0: u64, o: &mut Out) {
        let r = e.req.expect("a request's event") as usize;
        if self.open.len() <= r {
            self.open.resize(r + 1, Open::default());
        }
        let st = &mut self.open[r];
        let t = e.t - t0;
        match e.kind {
            TraceKind::Block {
                action: BlkAction::GetRq,
                ..
            } => *st = Open::default().with_queued(t),
            TraceKind::Block {
                action: BlkAction::Issue,
                ..
            } => st.dispatched = Some(t),
            TraceKind::Started { .. } if st.started.is_none() => st.started = Some(t),
            TraceKind::Irq { .. } if st.started.is_some() && st.irq.is_none() => st.irq = Some(t),
            TraceKind::Completed => {
                let s = std::mem::take(st);
                let id = self.next_id;
                self.next_id += 1;
                let points = [
                    ("queued", s.queued),
                    ("dispatched", s.dispatched),
                    ("hardware", s.started),
                    ("post", s.irq),
                    ("", Some(t)),
                ];
                for w in points.windows(2) {
                    if let ((name, Some(a)), (_, Some(b))) = (w[0], w[1]) {
                        if b >= a {
                            o.span(id, name, a, b);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// blkparse's letter for an action.
pub fn action_letter(a: BlkAction) -> &'static str {
    match a {
        BlkAction::Queue => "Q",
        BlkAction::BackMerge => "M",
        BlkAction::FrontMerge => "F",
        BlkAction::GetRq => "G",
        BlkAction::Insert => "I",
        BlkAction::Issue => "D",
        BlkAction::Requeue => "R",
        BlkAction::Complete => "C",
        BlkAction::Plug => "P",
        BlkAction::Unplug { .. } => "U",
        BlkAction::Split { .. } => "X",
    }
}

/// The block events as instants, in time order.
fn block_events(trace: &Trace, o: &mut Out) {
    let t0 = trace.start;
    let mut idx: Vec<usize> = (0..trace.events.len())
        .filter(|&i| matches!(trace.events[i].kind, TraceKind::Block { .. }))
        .collect();
    idx.sort_by_key(|&i| (trace.events[i].t, i));
    for i in idx {
        block_event(&trace.events[i], t0, o);
    }
}

/// One block event as an instant.
fn block_event(e: &TraceEvent, t0: u64, o: &mut Out) {
    {
        let TraceKind::Block {
            action,
            sector,
            sectors,
            dir,
            op,
            cpu,
            pid,
        } = e.kind
        else {
            unreachable!("filtered");
        };
        // The RWBS blkparse would print for the same record (a trim: "DS").
        let rwbs =
            crate::blktrace::rwbs(crate::blktrace::action_word(action, dir, op), sectors * 512);
        o.ev(format_args!(
            "\"ph\":\"i\",\"s\":\"t\",\"name\":\"{}\",\"pid\":{PID_REQ},\"tid\":1,\"ts\":{},\"args\":{{\"sector\":{sector},\"sectors\":{sectors},\"dir\":\"{dir:?}\",\"rwbs\":\"{rwbs}\",\"cpu\":{cpu},\"task\":{pid}}}",
            action_letter(action),
            ts(e.t.saturating_sub(t0))
        ));
    }
}

impl Open {
    fn with_queued(mut self, t: u64) -> Self {
        self.queued = Some(t);
        self
    }
}

/// The five sections of the timeline after its metadata, in file order.
pub const SECTIONS: usize = 5;

/// [`chrome_json`] written as the run goes, in bounded memory: fed the chunks
/// `Sim::drain_trace` hands over, it appends each section's events to
/// [`ChromeStream::sections`] (which the caller moves to files and clears), in the order
/// [`chrome_json`] writes them: CPU slices, bus slices and NAND slices in booking
/// order; the request spans and block events in time order, which it can write for
/// everything older than the chunk's `now` (nothing recorded later is earlier). It
/// keeps what is booked ahead, the requests in flight and, before the reported jobs
/// begin, what may still fall after their start. The file is [`ChromeStream::head`],
/// then the sections, then [`ChromeStream::tail`]: the same bytes as [`chrome_json`]
/// of the whole trace.
#[derive(Default)]
pub struct ChromeStream {
    /// Each section's events since the caller last took them, each preceded by ",\n".
    pub sections: [String; SECTIONS],
    t0: Option<SimTime>,
    cores: u32,
    dies: u32,
    chans: u32,
    /// Request and block events booked ahead: (time, recording sequence, event).
    ahead: Vec<(SimTime, u64, TraceEvent)>,
    /// Before the reported jobs begin: what may fall after their start.
    early: TraceChunk,
    seq: u64,
    spans: Spans,
    /// The largest number of events and slices kept between chunks (for tests).
    pub max_kept: usize,
}

impl ChromeStream {
    pub fn new(cores: u32) -> Self {
        ChromeStream {
            cores,
            ..Default::default()
        }
    }

    fn out(&mut self, i: usize) -> Out {
        Out {
            s: std::mem::take(&mut self.sections[i]),
            first: false,
        }
    }

    /// Takes one chunk (see the type's doc).
    pub fn feed(&mut self, mut c: TraceChunk) {
        nand_units(&c.nand, &mut self.dies, &mut self.chans);
        let Some(t0) = c.start.or(self.t0) else {
            // The start is not known yet, but it is no earlier than `now`: what is
            // earlier than `now` is left out of the timeline, except block events
            // (written whatever their time).
            let now = c.now;
            let e = &mut self.early;
            e.events.extend(c.events);
            e.events
                .retain(|ev| ev.t >= now || matches!(ev.kind, TraceKind::Block { .. }));
            e.cpu.extend(c.cpu);
            e.cpu.retain(|s| s.start >= now);
            e.nand.extend(c.nand);
            e.nand.retain(|s| s.start >= now);
            self.max_kept = self
                .max_kept
                .max(e.events.len() + e.cpu.len() + e.nand.len());
            return;
        };
        self.t0 = Some(t0);
        if !self.early.events.is_empty()
            || !self.early.cpu.is_empty()
            || !self.early.nand.is_empty()
        {
            let mut e = std::mem::take(&mut self.early);
            e.events.append(&mut c.events);
            e.cpu.append(&mut c.cpu);
            e.nand.append(&mut c.nand);
            c.events = e.events;
            c.cpu = e.cpu;
            c.nand = e.nand;
        }
        let mut o = self.out(0);
        for s in &c.cpu {
            cpu_slice(&mut o, s, t0);
        }
        self.sections[0] = o.s;
        let mut o = self.out(1);
        for e in &c.events {
            bus_event(&mut o, e, t0);
        }
        self.sections[1] = o.s;
        let mut o = self.out(2);
        for n in &c.nand {
            nand_slice(&mut o, n, t0);
        }
        self.sections[2] = o.s;
        for e in c.events {
            let s = self.seq;
            self.seq += 1;
            let block = matches!(e.kind, TraceKind::Block { .. });
            if block || (e.req.is_some() && e.t >= t0) {
                self.ahead.push((e.t, s, e));
            }
        }
        self.write_before(c.now, t0);
    }

    /// Writes the request and block events earlier than `now`, in time order.
    fn write_before(&mut self, now: SimTime, t0: SimTime) {
        self.ahead.sort_by_key(|&(t, s, _)| (t, s));
        let k = self.ahead.partition_point(|&(t, _, _)| t < now);
        let mut req = self.out(3);
        let mut blk = self.out(4);
        for (_, _, e) in self.ahead.drain(..k) {
            if e.req.is_some() && e.t >= t0 {
                self.spans.event(&e, t0, &mut req);
            }
            if matches!(e.kind, TraceKind::Block { .. }) {
                block_event(&e, t0, &mut blk);
            }
        }
        self.sections[3] = req.s;
        self.sections[4] = blk.s;
        self.max_kept = self.max_kept.max(self.ahead.len());
    }

    /// The run is over: writes what is left (with `rest`, the trace's remainder from
    /// `Sim::take_trace`, as a last chunk).
    pub fn finish(&mut self, rest: TraceChunk) {
        let mut rest = rest;
        rest.now = SimTime::MAX;
        if rest.start.is_none() && self.t0.is_none() {
            // No reported job began: the whole trace's start is 0.
            rest.start = Some(0);
        }
        self.feed(rest);
    }

    /// The file's opening and metadata (known once the run is over).
    pub fn head(&self) -> String {
        let mut o = Out {
            s: String::from(OPENING),
            first: true,
        };
        header(&mut o, self.cores, self.dies, self.chans);
        o.s
    }

    /// The file's closing.
    pub fn tail() -> &'static str {
        CLOSING
    }
}
