//! Mechanism tests of the eMMC command queue engine driver (`mmc-cqe`) on the event
//! trace (docs/kernel-behaviour.md §3): CMD44+CMD45 queue a task, CMD13 (SQS) reads the
//! device's queue status, CMD46/CMD47 execute the task the device chose, one data
//! transfer at a time, completion by interrupt with no software CMD13.

mod common;

use flashpath_core::config::preset;

use flashpath_core::device::cq::CqPolicy;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::block::ReqId;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{Sim, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{Trace, TraceEvent, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern};
use std::collections::HashMap;

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const HOST_CQE: &str = include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml");

const READS_FIRST: DriverKind = DriverKind::MmcCqe {
    policy: CqPolicy::ReadsFirst,
};
const OLDEST_FIRST: DriverKind = DriverKind::MmcCqe {
    policy: CqPolicy::OldestFirst,
};

fn system() -> (HostConfig, DeviceConfig) {
    common::system(HOST_CQE, DEVICE)
}

fn jobs(threads: usize, pattern: Pattern, read_pct: u32, ios: u64) -> Vec<JobConfig> {
    common::spread_jobs(threads, pattern, read_pct, ios, 7)
}

/// Runs with the trace on; the regions are preconditioned so that reads go to NAND.
fn traced(driver: DriverKind, jobs: Vec<JobConfig>) -> (Trace, RunResult) {
    common::traced(system(), driver, jobs, true)
}

fn command(e: &TraceEvent) -> Option<(u8, u64)> {
    match e.kind {
        TraceKind::Command { opcode, end } => Some((opcode, end)),
        _ => None,
    }
}

/// Order in which tasks were queued (CMD45) and executed (CMD46/47).
fn orders(tr: &Trace) -> (Vec<ReqId>, Vec<ReqId>) {
    let mut q = Vec::new();
    let mut x = Vec::new();
    for e in tr.sorted() {
        match command(&e) {
            Some((45, _)) => q.push(e.req.unwrap()),
            Some((46 | 47, _)) => x.push(e.req.unwrap()),
            _ => {}
        }
    }
    (q, x)
}

/// Tasks executed before a task that was queued earlier (request ids are reused, so
/// each execution is matched to the queueing that precedes it).
fn overtakes(tr: &Trace) -> usize {
    let mut queued: Vec<ReqId> = Vec::new(); // queued, not executed, in queue order
    let mut n = 0;
    for e in tr.sorted() {
        match command(&e) {
            Some((45, _)) => queued.push(e.req.unwrap()),
            Some((46 | 47, _)) => {
                let r = e.req.unwrap();
                let i = queued.iter().position(|&x| x == r).expect("queued first");
                if i > 0 {
                    n += 1;
                }
                queued.remove(i);
            }
            _ => {}
        }
    }
    n
}

#[test]
fn one_data_transfer_at_a_time_and_a_write_holds_the_bus_until_the_device_takes_it() {
    let (tr, _) = traced(READS_FIRST, jobs(20, Pattern::Random, 50, 30));
    let ev = tr.sorted();
    // The DAT lines are free again at the end of a read's data or at a write's Done.
    let mut done_at: HashMap<ReqId, Vec<u64>> = HashMap::new();
    for e in &ev {
        if e.kind == TraceKind::DeviceDone {
            done_at.entry(e.req.unwrap()).or_default().push(e.t);
        }
    }
    let mut free_at = 0;
    let mut writes = 0;
    for e in &ev {
        if let TraceKind::Data { dir, end } = e.kind {
            assert!(
                e.t >= free_at,
                "data of {:?} at {} while the bus is taken until {free_at}",
                e.req,
                e.t
            );
            free_at = match dir {
                Dir::Read => end,
                Dir::Write => {
                    writes += 1;
                    // The write's Done is the first one at or after its data.
                    *done_at[&e.req.unwrap()]
                        .iter()
                        .find(|&&t| t >= end)
                        .expect("every write is taken by the device")
                }
            };
        }
    }
    assert!(writes > 100, "{writes} writes");
}

#[test]
fn never_more_tasks_queued_than_the_queue_depth_and_the_queue_fills() {
    let (host, _) = system();
    let depth = host.cqe.as_ref().unwrap().slots();
    assert_eq!(depth, 31, "32 slots, slot 31 kept for DCMD");
    let (tr, _) = traced(
        READS_FIRST,
        jobs(40, Pattern::Random, 100, 20)
            .into_iter()
            .map(|mut j| {
                // io_uring-like async submission at depth 4: 160 I/Os can be outstanding.
                j.submission = flashpath_core::workload::Submission::Async {
                    depth: 4,
                    batch_submit: 1,
                    batch_complete_min: 1,
                };
                j
            })
            .collect(),
    );
    let mut max_driver = 0;
    for e in tr.sorted() {
        if let TraceKind::DriverQueued { queued, in_flight } = e.kind {
            assert!(queued <= in_flight && in_flight <= depth);
            max_driver = max_driver.max(in_flight);
        }
    }
    // Independently, from the commands: queued in the device (CMD45 in, CMD46/47 not yet).
    let mut in_device: i64 = 0;
    let mut max_device = 0;
    for e in tr.sorted() {
        match command(&e) {
            Some((45, _)) => in_device += 1,
            Some((46 | 47, _)) => in_device -= 1,
            _ => {}
        }
        assert!(in_device >= 0 && in_device <= depth as i64);
        max_device = max_device.max(in_device);
    }
    assert_eq!(max_driver, depth, "the driver fills every task slot");
    // The blk-mq tag is the task ID: every task ID is a slot below the depth.
    assert!(tr.commands(44).iter().all(|e| e.req.unwrap() < depth));
    assert!(
        max_device >= 20,
        "the device holds many tasks ({max_device})"
    );
}

#[test]
fn each_task_is_queued_with_cmd44_and_cmd45_before_it_is_executed() {
    let (tr, _) = traced(READS_FIRST, jobs(20, Pattern::Random, 50, 30));
    let mut ends = 0;
    // Request ids are reused: check per (request, occurrence) in time order instead.
    let mut open: HashMap<ReqId, (Option<u64>, Option<u64>)> = HashMap::new();
    for e in tr.sorted() {
        let Some((op, end)) = command(&e) else {
            continue;
        };
        match op {
            44 => {
                let r = e.req.unwrap();
                assert!(
                    open.insert(r, (Some(end), None)).is_none(),
                    "task {r} re-queued before execution"
                );
            }
            45 => {
                let s = open.get_mut(&e.req.unwrap()).expect("CMD44 before CMD45");
                assert!(e.t >= s.0.unwrap(), "CMD45 after CMD44's response");
                assert!(s.1.is_none());
                s.1 = Some(end);
            }
            46 | 47 => {
                let r = e.req.unwrap();
                let (_, q) = open.remove(&r).expect("CMD44 before CMD46/47");
                let q = q.expect("CMD45 before CMD46/47");
                assert!(
                    e.t >= q,
                    "task {r} executed at {} before CMD45 ended at {q}",
                    e.t
                );
                ends += 1;
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "every queued task was executed");
    assert!(ends > 600, "{ends} tasks");
    // CMD13 comes from the CQE (queue status), never for a request.
    assert!(tr.commands(13).iter().all(|e| e.req.is_none()));
}

#[test]
fn the_device_reorders_mixed_random_io_and_oldest_first_keeps_queue_order() {
    let (tr, _) = traced(READS_FIRST, jobs(20, Pattern::Random, 50, 30));
    let n = overtakes(&tr);
    assert!(n > 20, "reads-first: tasks overtake older ones ({n})");
    // Reads overtake writes; completion (block layer) order differs from queue order too.
    let (queued, executed) = orders(&tr);
    assert_eq!(queued.len(), executed.len());
    assert_ne!(queued, executed);

    // Even a pure read stream is reordered by reads-first: a read whose die was free has
    // its data first.
    let (tr, _) = traced(READS_FIRST, jobs(20, Pattern::Random, 100, 30));
    assert!(
        overtakes(&tr) > 10,
        "reads-first reorders reads across dies"
    );

    // Oldest-first: the device names the oldest task only, so tasks execute in the order
    // they were queued, for a pure read stream and a mixed one alike.
    for read_pct in [100, 50] {
        let (tr, _) = traced(OLDEST_FIRST, jobs(20, Pattern::Random, read_pct, 30));
        assert_eq!(overtakes(&tr), 0, "oldest-first, {read_pct}% reads");
        let (q, x) = orders(&tr);
        assert_eq!(q, x);
    }
}

#[test]
fn no_software_cmd13_and_no_polling_while_a_write_is_busy() {
    let (tr, res) = traced(READS_FIRST, jobs(20, Pattern::Random, 0, 30));
    assert_eq!(res.system.cmd13, 0, "the CPU sends no CMD13");
    let ev = tr.sorted();
    let cmd13: Vec<&TraceEvent> = ev
        .iter()
        .filter(|e| matches!(command(e), Some((13, _))))
        .collect();
    assert!(!cmd13.is_empty(), "the CQE reads the queue status");
    assert!(cmd13.iter().all(|e| e.req.is_none()));
    // Between a write's data end and its Done (DAT0 busy) nobody polls: busy is the
    // controller's to detect. At most the transfer's own queue-status read (SSC1.CBC,
    // late when CMD44/45 held the CMD line) falls there; a polling loop would put
    // several in each busy window (tens of us against an idle timer of 10.66 us).
    let mut busy: Vec<(u64, u64)> = Vec::new();
    let mut data_end: HashMap<ReqId, u64> = HashMap::new();
    for e in &ev {
        match e.kind {
            TraceKind::Data {
                dir: Dir::Write,
                end,
            } => {
                data_end.insert(e.req.unwrap(), end);
            }
            TraceKind::DeviceDone => {
                if let Some(s) = data_end.remove(&e.req.unwrap()) {
                    busy.push((s, e.t));
                }
            }
            _ => {}
        }
    }
    assert!(busy.len() > 500);
    let mut long = 0;
    for &(s, d) in &busy {
        let n = cmd13.iter().filter(|c| c.t >= s && c.t < d).count();
        assert!(n <= 1, "{n} CMD13s in the busy window {s}..{d}");
        if d - s > 30_000 {
            long += 1;
        }
    }
    assert!(
        long > 100,
        "busy windows are long enough to show a loop ({long})"
    );
    // Each task completes with its own interrupt; none is started from one.
    let irqs = ev
        .iter()
        .filter(|e| matches!(e.kind, TraceKind::Irq { .. }))
        .count();
    let tasks = ev
        .iter()
        .filter(|e| matches!(command(e), Some((46 | 47, _))))
        .count();
    assert_eq!(irqs, tasks, "one TCN interrupt per task");
}

#[test]
fn queued_reads_overlap_their_nand_fetches_across_dies() {
    // At queue depth, reads finish faster than one device read at a time could: the
    // device's time per 4 KiB read alone is fw 37 + lookup 1 + tR 54 + channel 10 us.
    let (_, res) = traced(READS_FIRST, jobs(20, Pattern::Random, 100, 50));
    let ios: u64 = res.jobs.iter().map(|j| j.dirs[0].ios).sum();
    let span = res.jobs.iter().map(|j| j.end_ns).max().unwrap()
        - res.jobs.iter().map(|j| j.start_ns).min().unwrap();
    let per_io_ns = span / ios;
    assert!(
        per_io_ns < 102_000 * 2 / 3,
        "{per_io_ns} ns per read: no overlap of device reads"
    );
}

#[test]
fn cqe_driver_needs_the_hosts_cqe_section() {
    let host = preset::load_host(HOST, "host", &[]).unwrap();
    let dev = preset::load_device(DEVICE, "device", &[]).unwrap();
    let err = Sim::new(SimConfig {
        host,
        device: dev,
        driver: READS_FIRST,
        jobs: jobs(1, Pattern::Random, 100, 4),
        precondition: false.into(),
    })
    .err()
    .expect("refused");
    assert!(
        err.contains("[cqe]") && err.contains("sprd-sc9863a"),
        "{err}"
    );
    // A host preset that selects the driver without the section is a preset error.
    let bad = HOST.replace("driver = \"mmc-legacy\"", "driver = \"mmc-cqe\"");
    let e = preset::load_host(&bad, "h.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("mmc.driver") && e.contains("[cqe]"), "{e}");
}

#[test]
fn cqe_host_preset_is_sprd_sc9863a_plus_cqe() {
    let base = preset::load_host(HOST, "host", &[]).unwrap();
    let mut cqe = preset::load_host(HOST_CQE, "host", &[]).unwrap();
    assert!(cqe.cqe.is_some() && base.cqe.is_none());
    cqe.cqe = None;
    cqe.name = base.name.clone();
    cqe.description = base.description.clone();
    assert_eq!(
        cqe, base,
        "outside [cqe] the two presets are the same board"
    );
}

#[test]
fn driver_names_round_trip() {
    for name in ["mmc-cqe", "mmc-cqe-oldest-first"] {
        assert_eq!(DriverKind::parse(name).unwrap().name(), name);
    }
    let e = DriverKind::parse("mmc-cq").unwrap_err();
    assert!(e.contains("mmc-cqe-oldest-first"), "{e}");
}
