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

use crate::trace::{BlkAction, NandUnit, Trace, TraceKind};
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

/// The timeline of `trace` as Chrome trace-event JSON.
pub fn chrome_json(trace: &Trace) -> String {
    let t0 = trace.start;
    let mut o = Out {
        s: String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"),
        first: true,
    };
    o.meta("process_name", PID_CPU, 0, "host CPU");
    for c in 0..trace.cores {
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
    let (mut dies, mut chans) = (0u32, 0u32);
    for n in &trace.nand {
        match n.unit {
            NandUnit::Die(d) => dies = dies.max(d + 1),
            NandUnit::Channel(c) => chans = chans.max(c + 1),
        }
    }
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

    for c in &trace.cpu {
        if c.start >= t0 && c.end > c.start {
            let tid = 3 * c.core + c.lane as u32;
            o.slice(PID_CPU, tid, c.label, c.start - t0, c.end - t0);
        }
    }
    for e in &trace.events {
        if e.t < t0 {
            continue;
        }
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
            _ => continue,
        };
        let name = match e.req {
            Some(r) => format!("{name} r{r}"),
            None => name,
        };
        if end > e.t {
            o.slice(PID_BUS, tid, &name, e.t - t0, end - t0);
        }
    }
    for n in &trace.nand {
        if n.start >= t0 && n.end > n.start {
            let tid = match n.unit {
                NandUnit::Die(d) => d,
                NandUnit::Channel(c) => CHANNEL_TID + c,
            };
            o.slice(PID_NAND, tid, n.label, n.start - t0, n.end - t0);
        }
    }
    request_spans(trace, &mut o);
    block_events(trace, &mut o);
    o.s.push_str("\n]}\n");
    o.s
}

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
    let mut open: Vec<Open> = Vec::new();
    let mut next_id = 0u64;
    for i in idx {
        let e = &trace.events[i];
        let r = e.req.expect("filtered") as usize;
        if open.len() <= r {
            open.resize(r + 1, Open::default());
        }
        let st = &mut open[r];
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
                let id = next_id;
                next_id += 1;
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
        let e = &trace.events[i];
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
