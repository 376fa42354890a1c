//! Mechanism tests for the rtsx SD host driver (docs/kernel-behaviour.md §5, driver/mmc/rtsx.rs) on the
//! shipped SD card and laptop presets: which commands go on the bus, when, and what the
//! card does with CMD12 after a write.

mod common;

use flashpath_core::device::{DevCommand, DevOp, DevStatus, Device, DeviceConfig, Input, Output};
use flashpath_core::engine::Outbox;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::RTSX_IDLE_STOP_NS;
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{Trace, TraceEvent, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern};

const DEVICE: &str = include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml");
const HOST: &str = include_str!("../../../presets/hosts/x86-laptop-rtsx.toml");

const LEGACY: DriverKind = DriverKind::SdRtsx { multi_seq: false };
const MULTISEQ: DriverKind = DriverKind::SdRtsx { multi_seq: true };
const KIB512: u64 = 512 * 1024;

fn system() -> (HostConfig, DeviceConfig) {
    common::system(HOST, DEVICE)
}

/// One psync thread doing `n` I/Os of 512 KiB (one request each: max_sectors_kb 512).
fn job(pattern: Pattern, read_pct: u32, n: u64) -> JobConfig {
    let mut j = JobConfig::simple("t", pattern, read_pct, KIB512, KIB512 * n);
    j.offset = 64 << 20;
    j
}

fn run(driver: DriverKind, jobs: Vec<JobConfig>) -> (Trace, RunResult) {
    common::traced(system(), driver, jobs, true)
}

/// Commands with `opcode`, in time order.
fn cmds(tr: &Trace, opcode: u8) -> Vec<TraceEvent> {
    tr.commands(opcode)
}

/// Each request's data on the bus: (request, direction, first start, last end), in order.
/// Request ids are reused, so requests are told apart by their start (one at a time on
/// this path: a request starts after the previous one completed).
fn transfers(tr: &Trace) -> Vec<(u32, Dir, u64, u64)> {
    let mut v: Vec<(u32, Dir, u64, u64)> = Vec::new();
    let mut open = false;
    for e in tr.sorted() {
        match e.kind {
            TraceKind::Started { .. } => open = true,
            TraceKind::Data { dir, end } => {
                if open {
                    v.push((e.req.unwrap(), dir, e.t, end));
                    open = false;
                } else {
                    let x = v.last_mut().unwrap();
                    x.3 = x.3.max(end);
                }
            }
            _ => {}
        }
    }
    v
}

fn count_between(ev: &[TraceEvent], from: u64, to: u64) -> usize {
    ev.iter().filter(|e| e.t >= from && e.t < to).count()
}

#[test]
fn multiseq_streams_sequential_requests_without_cmd12_or_cmd13() {
    for (read_pct, open_op) in [(100, 18), (0, 25)] {
        let (tr, _) = run(MULTISEQ, vec![job(Pattern::Sequential, read_pct, 8)]);
        let xs = transfers(&tr);
        assert_eq!(xs.len(), 8);
        // One command opens the stream; the other seven requests are data only.
        assert_eq!(cmds(&tr, open_op).len(), 1, "op {open_op}");
        let first = xs[0].2;
        let last_end = xs[7].3;
        let stops = cmds(&tr, 12);
        assert_eq!(
            count_between(&stops, first, last_end),
            0,
            "no CMD12 between sequential requests"
        );
        // The core's CMD13 after writes is answered by the driver: nothing on the bus.
        assert!(cmds(&tr, 13).is_empty());
        // The only stop is the idle one, after the stream.
        assert_eq!(stops.len(), 1);
        assert!(stops[0].t > last_end);
    }
}

#[test]
fn multiseq_idle_stop_comes_150ms_after_the_last_request() {
    let (tr, _) = run(MULTISEQ, vec![job(Pattern::Sequential, 100, 4)]);
    let xs = transfers(&tr);
    let last_end = xs.last().unwrap().3;
    let stops = cmds(&tr, 12);
    assert_eq!(stops.len(), 1);
    let after = stops[0].t - last_end;
    // Re-armed when the last request's kworker finishes (interrupt + wake-up after its
    // data), fired 150 ms later (+ the kworker's wake-up).
    assert!(
        (RTSX_IDLE_STOP_NS..RTSX_IDLE_STOP_NS + 100_000).contains(&after),
        "idle stop {after} ns after the last data"
    );

    // A pause shorter than 150 ms keeps the stream open; a longer one lets the idle
    // work stop it, and the next request opens a new one with CMD18.
    for (think_ms, stops_between, cmd18) in [(100u64, 0usize, 1usize), (200, 1, 2)] {
        let mut j = job(Pattern::Sequential, 100, 2);
        j.thinktime_ns = think_ms * 1_000_000;
        let (tr, _) = run(MULTISEQ, vec![j]);
        let xs = transfers(&tr);
        assert_eq!(xs.len(), 2);
        let stops = cmds(&tr, 12);
        assert_eq!(
            count_between(&stops, xs[0].3, xs[1].2),
            stops_between,
            "think {think_ms} ms"
        );
        assert_eq!(cmds(&tr, 18).len(), cmd18, "think {think_ms} ms");
    }
}

#[test]
fn multiseq_stops_on_a_direction_change_and_on_a_jump() {
    // Sequential offsets, random directions: every change of direction is a stop.
    let mut j = job(Pattern::Sequential, 50, 40);
    j.seed = 11;
    let (tr, _) = run(MULTISEQ, vec![j]);
    let xs = transfers(&tr);
    let stops = cmds(&tr, 12);
    let changes = xs.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(changes >= 5, "the mix changes direction ({changes})");
    for w in xs.windows(2) {
        let n = count_between(&stops, w[0].3, w[1].2);
        assert_eq!(
            n,
            (w[0].1 != w[1].1) as usize,
            "one stop per direction change"
        );
        if w[0].1 != w[1].1 {
            // The stop is on the next request's critical path: it carries that request.
            let s = stops
                .iter()
                .find(|s| s.t >= w[0].3 && s.t < w[1].2)
                .unwrap();
            assert_eq!(s.req, Some(w[1].0));
        }
    }
    assert_eq!(stops.len(), changes + 1, "plus the idle stop at the end");

    // Random 512 KiB reads: a request that does not continue the previous one (nearly
    // all of them) pays a CMD12 and a new CMD18 before its data; one that happens to
    // follow it continues the stream.
    let mut j = job(Pattern::Random, 100, 16);
    j.size = 1 << 30;
    let (tr, _) = run(MULTISEQ, vec![j]);
    let xs = transfers(&tr);
    let stops = cmds(&tr, 12);
    let opens = cmds(&tr, 18);
    assert!(opens.len() >= 14, "{} CMD18s", opens.len());
    for w in xs.windows(2) {
        let n = count_between(&stops, w[0].3, w[1].2);
        assert!(n <= 1);
        assert_eq!(
            n,
            count_between(&opens, w[0].3, w[1].2),
            "a stop, then a new command"
        );
    }
}

#[test]
fn legacy_stops_every_multi_block_request_and_polls_after_writes() {
    for (read_pct, open_op, cmd13s) in [(100, 18, 0), (0, 25, 8)] {
        let (tr, _) = run(LEGACY, vec![job(Pattern::Sequential, read_pct, 8)]);
        let xs = transfers(&tr);
        let opens = cmds(&tr, open_op);
        let stops = cmds(&tr, 12);
        let polls = cmds(&tr, 13);
        assert_eq!((opens.len(), stops.len(), polls.len()), (8, 8, cmd13s));
        for (i, x) in xs.iter().enumerate() {
            let next = xs.get(i + 1).map_or(u64::MAX, |n| n.2);
            // CMD12 after the request's data, before the next request's command.
            assert_eq!(count_between(&stops, x.3, next), 1);
            assert_eq!(stops.iter().find(|s| s.t >= x.3).unwrap().req, Some(x.0));
            if cmd13s > 0 {
                let stop = stops.iter().find(|s| s.t >= x.3).unwrap().t;
                assert_eq!(count_between(&polls, stop, next), 1, "CMD13 after the stop");
            }
        }
    }
}

/// The card commits its buffer at CMD12 after a write: busy until the partial row is
/// programmed (padded), like a flush; with nothing buffered it answers after firmware.
#[test]
fn stop_after_a_write_commits_the_buffer() {
    let (_, cfg) = system();
    let n = cfg.nand().unwrap().clone();
    let mut d = Device::new(&cfg, 1);
    let mut out: Outbox<Input, Output> = Outbox::new();
    let w = DevCommand {
        tag: 1,
        op: DevOp::Write,
        lba: 0,
        sectors: 32,
        fua: false,
        hpb: 0,
    };
    d.handle(0, &Input::Command(w), &mut out);
    let ack = out.emits()[0].0;
    assert!(
        out.timers().is_empty(),
        "16 KiB of a 32 KiB row: nothing programmed yet"
    );
    out.clear();
    d.handle(ack, &Input::Stop { tag: 9 }, &mut out);
    assert!(out.emits().is_empty(), "busy while programming");
    let (prog_at, die) = match out.timers() {
        [(t, Input::ProgramDone { die })] => (*t, *die),
        x => panic!("one program expected: {x:?}"),
    };
    let expect = ack + n.fw_per_command_ns + n.channel_ns(16 * 1024) + n.t_prog_ns;
    assert_eq!(prog_at, expect);
    out.clear();
    d.handle(prog_at, &Input::ProgramDone { die }, &mut out);
    assert_eq!(
        out.emits(),
        &[(
            prog_at,
            Output::Done {
                tag: 9,
                status: DevStatus::Ok
            }
        )]
    );
    assert_eq!(d.stats().padding_slots, 4, "the half row is padded");
    // A continued stream costs no command decoding.
    out.clear();
    let t = prog_at + 1_000_000;
    d.handle(t, &Input::Continue(DevCommand { lba: 32, ..w }), &mut out);
    let copy = flashpath_core::engine::transfer_ns(16 * 1024, n.buffer_copy_bytes_per_s);
    assert_eq!(out.emits()[0].0, t + 4 * n.fw_per_4kib_ns + copy);
}

fn clat_mean_ns(r: &RunResult, dir: Dir) -> f64 {
    let h = &r.jobs[0].dirs[dir.index()].clat;
    h.sum() as f64 / h.count() as f64
}

/// The published shape on a short GNOME Disks-like run (10 samples of 10 MiB, 1.28 GB
/// apart): multiseq cuts the time of a sequential write sample by a third or more and
/// speeds sequential reads a little.
#[test]
fn published_shape_sequential_samples() {
    let sample = |read_pct: u32, think_ns: u64| {
        let mut j = JobConfig::simple("g", Pattern::Sequential, read_pct, 10 << 20, 16 << 30);
        j.io_limit = 10 * (10 << 20);
        j.seq_skip = 1_280_000_000 - (10 << 20);
        j.thinktime_ns = think_ns;
        j
    };
    let w = |d| clat_mean_ns(&run(d, vec![sample(0, 300_000_000)]).1, Dir::Write);
    let (wl, wm) = (w(LEGACY), w(MULTISEQ));
    assert!(wm < wl * 0.8, "write sample {wl} -> {wm} ns");
    let r = |d| clat_mean_ns(&run(d, vec![sample(100, 0)]).1, Dir::Read);
    let (rl, rm) = (r(LEGACY), r(MULTISEQ));
    let gain = rl / rm - 1.0;
    assert!((0.02..0.10).contains(&gain), "read gain {gain}");
}

/// Single-block transfers (CMD17/CMD24) have no CMD12; the card programs a single-block
/// write before it leaves busy, so each such write takes at least tPROG; in SEQ_RW a
/// single-block command stops the stream first.
#[test]
fn single_block_writes_hold_busy_and_stop_a_stream() {
    let (_, dev) = system();
    let t_prog = dev.nand().unwrap().t_prog_ns as f64;
    let mut j = JobConfig::simple("s", Pattern::Random, 50, 512, 1 << 20);
    j.offset = 64 << 20;
    j.io_limit = 64 * 512;
    let (tr, res) = run(LEGACY, vec![j.clone()]);
    assert!(cmds(&tr, 12).is_empty());
    let writes = res.jobs[0].dirs[Dir::Write.index()].ios;
    assert!(writes > 10);
    assert_eq!(cmds(&tr, 24).len() as u64, writes);
    assert!(clat_mean_ns(&res, Dir::Write) > t_prog);

    // A 512 KiB sequential read opens a stream; the single-block read after it stops it.
    let mut a = job(Pattern::Sequential, 100, 1);
    a.stonewall = true;
    let mut b = JobConfig::simple("b", Pattern::Sequential, 100, 512, 512);
    b.offset = a.offset + KIB512;
    b.stonewall = true;
    let (tr, _) = run(MULTISEQ, vec![a, b]);
    assert_eq!(cmds(&tr, 17).len(), 1);
    let stop = cmds(&tr, 12)[0].t;
    assert!(stop < cmds(&tr, 17)[0].t, "CMD12 before the CMD17");
}
