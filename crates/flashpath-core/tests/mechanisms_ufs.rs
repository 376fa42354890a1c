//! Mechanism tests for the UFS host driver (`--driver ufs`) on the event trace: several
//! commands outstanding in the device but never more than the 32 UTP slots, one
//! doorbell per command, a full-duplex link (read data and write data overlap on the
//! two directions, each direction serves one UPIU at a time), completions out of
//! submission order; an analytic QD1 read; driver/device compatibility errors.

mod common;

use flashpath_core::config::preset;

use flashpath_core::device::config::Interface;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::ufs_config::UfsHostConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run, Sim, SimConfig};
use flashpath_core::trace::{Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern};
use std::collections::HashMap;

const DEVICE: &str = include_str!("../../../presets/devices/ufs21-64g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sd835-phone.toml");
const EMMC: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

const COMMAND: u8 = 0x01;
const RESPONSE: u8 = 0x21;
const RTT: u8 = 0x31;

fn preset_system() -> (HostConfig, DeviceConfig) {
    common::system(HOST, DEVICE)
}

fn jobs(threads: usize, pattern: Pattern, read_pct: u32, ios: u64) -> Vec<JobConfig> {
    common::spread_jobs(threads, pattern, read_pct, ios, 11)
}

fn traced(jobs: Vec<JobConfig>) -> Trace {
    traced_pre(jobs, false)
}

/// With `precondition`, the regions are written first (async, depth 32; traced too).
fn traced_pre(jobs: Vec<JobConfig>, precondition: bool) -> Trace {
    common::traced(preset_system(), DriverKind::Ufs, jobs, precondition).0
}

/// Link occupancy of one direction: (start, end, kind) in start order.
/// Host→device: COMMAND UPIUs and DATA OUT; device→host: RTT, DATA IN, RESPONSE.
fn link(tr: &Trace, to_device: bool) -> Vec<(u64, u64, TraceKind)> {
    let mut v: Vec<_> = tr
        .events
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Command { opcode, end } => {
                let h2d = opcode == COMMAND;
                assert!(
                    matches!(opcode, COMMAND | RESPONSE | RTT),
                    "UPIU {opcode:#x}"
                );
                (h2d == to_device).then_some((e.t, end, e.kind))
            }
            TraceKind::Data { dir, end } => {
                ((dir == Dir::Write) == to_device).then_some((e.t, end, e.kind))
            }
            _ => None,
        })
        .collect();
    v.sort_by_key(|x| (x.0, x.1));
    v
}

/// Commands in the device (COMMAND UPIU arrived, RESPONSE not yet sent) at most, over
/// the run; and requests holding a UTP slot (doorbell rung, block completion not run).
fn max_outstanding(tr: &Trace) -> (i64, i64) {
    let mut dev = Vec::new();
    let mut slots = Vec::new();
    for e in &tr.events {
        match e.kind {
            TraceKind::Command {
                opcode: COMMAND,
                end,
            } => dev.push((end, 1)),
            TraceKind::Command {
                opcode: RESPONSE, ..
            } => dev.push((e.t, -1)),
            TraceKind::Started { .. } => slots.push((e.t, 1)),
            TraceKind::Completed => slots.push((e.t, -1)),
            _ => {}
        }
    }
    let peak = |mut v: Vec<(u64, i64)>| {
        // Ends before starts at the same instant.
        v.sort();
        let (mut n, mut m) = (0, 0);
        for (_, d) in v {
            n += d;
            m = m.max(n);
        }
        assert_eq!(n, 0, "every command ends");
        m
    };
    (peak(dev), peak(slots))
}

#[test]
fn several_commands_are_outstanding_in_the_device() {
    let tr = traced(jobs(20, Pattern::Random, 100, 50));
    let (dev, slots) = max_outstanding(&tr);
    // 20 QD1 threads: up to 20 commands queued in the device at once (MMC: one).
    assert!(dev > 8, "at most {dev} commands in the device");
    assert!(slots <= 20, "{slots} slots for 20 threads");
}

#[test]
fn never_more_than_32_commands_outstanding() {
    // 40 QD1 threads: 40 requests at once, but only 32 UTP transfer request slots.
    let tr = traced(jobs(40, Pattern::Random, 100, 40));
    let (dev, slots) = max_outstanding(&tr);
    assert_eq!(slots, 32, "the 32 slots are all used and never exceeded");
    assert!(dev <= 32 && dev > 16, "{dev} in the device");
    for e in &tr.events {
        if let TraceKind::DriverQueued { in_flight, .. } = e.kind {
            assert!(in_flight <= 32);
        }
    }
}

#[test]
fn one_doorbell_and_one_command_upiu_per_request() {
    let tr = traced(jobs(12, Pattern::Random, 50, 40));
    let mut started = 0;
    let mut commands = 0;
    let mut completed = 0;
    // Per request id: doorbells since its last completion (ids are reused).
    let mut open: HashMap<u32, u32> = HashMap::new();
    for e in tr.sorted() {
        let r = e.req.unwrap_or(u32::MAX);
        match e.kind {
            TraceKind::Started { .. } => {
                started += 1;
                let n = open.entry(r).or_default();
                *n += 1;
                assert_eq!(*n, 1, "request {r} rang the doorbell twice");
            }
            TraceKind::Command {
                opcode: COMMAND, ..
            } => commands += 1,
            TraceKind::Completed => {
                completed += 1;
                assert_eq!(open.remove(&r), Some(1));
            }
            _ => {}
        }
    }
    assert_eq!(started, 12 * 40);
    assert_eq!(commands, started);
    assert_eq!(completed, started);
}

#[test]
fn the_link_is_full_duplex_one_upiu_at_a_time_per_direction() {
    // Preconditioned: reads go to NAND, so read data streams while writes go in.
    let tr = traced_pre(jobs(16, Pattern::Random, 50, 60), true);
    let h2d = link(&tr, true);
    let d2h = link(&tr, false);
    for side in [&h2d, &d2h] {
        for w in side.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "overlap on one direction: {:?} {:?}",
                w[0],
                w[1]
            );
        }
    }
    // Read data (device→host) and write data (host→device) at the same time.
    let reads: Vec<_> = d2h
        .iter()
        .filter(|x| matches!(x.2, TraceKind::Data { .. }))
        .collect();
    let writes: Vec<_> = h2d
        .iter()
        .filter(|x| matches!(x.2, TraceKind::Data { .. }))
        .collect();
    assert!(!reads.is_empty() && !writes.is_empty());
    let overlapping = reads
        .iter()
        .filter(|r| writes.iter().any(|w| w.0 < r.1 && r.0 < w.1))
        .count();
    assert!(overlapping > 0, "no read data overlapped write data");
    // Every write's DATA OUT follows a READY_TO_TRANSFER for it.
    let rtts = d2h
        .iter()
        .filter(|x| matches!(x.2, TraceKind::Command { opcode: RTT, .. }))
        .count();
    assert_eq!(rtts, writes.len());
}

#[test]
fn completions_may_come_out_of_submission_order() {
    let tr = traced(jobs(16, Pattern::Random, 50, 40));
    let mut start: HashMap<u32, u64> = HashMap::new();
    let mut spans = Vec::new();
    for e in tr.sorted() {
        match e.kind {
            TraceKind::Started { .. } => {
                start.insert(e.req.unwrap(), e.t);
            }
            TraceKind::Completed => spans.push((start.remove(&e.req.unwrap()).unwrap(), e.t)),
            _ => {}
        }
    }
    // Completion order (spans are pushed in it) against doorbell order.
    let overtaken = spans.windows(2).filter(|w| w[1].0 < w[0].0).count();
    assert!(overtaken > 0, "every request completed in doorbell order");
}

#[test]
fn qd1_read_is_the_sum_of_the_modelled_steps() {
    let mut host = HostConfig::ideal(1);
    host.costs.syscall_ns = 5_000;
    host.costs.pin_per_4k_ns = 300;
    host.costs.pin_per_4k_read_ns = 400;
    host.costs.block_submit_ns = 2_000;
    host.costs.irq_ns = 3_000;
    host.costs.wakeup_ns = 11_000;
    host.costs.task_wakeup_ns = 11_000;
    host.costs.complete_ns = 1_700;
    host.costs.syscall_return_ns = 2_300;
    let mut u = UfsHostConfig::ideal();
    u.queuecommand_ns = 4_100;
    u.queuecommand_per_4k_ns = 170;
    u.doorbell_ns = 450;
    u.hc_fetch_ns = 900;
    u.completion_ns = 2_600;
    u.completion_per_4k_ns = 130;
    u.frame_payload_bytes = 288;
    u.frame_overhead_bytes = 8;
    host.ufs = Some(u.clone());
    let read_ns = 50_000;
    let mut dev = DeviceConfig::ideal(1 << 30, read_ns);
    dev.interface = Interface::Ufs;
    let ios = 100;
    let res = run(SimConfig {
        host: host.clone(),
        device: dev,
        driver: DriverKind::Ufs,
        jobs: vec![JobConfig::simple(
            "qd1",
            Pattern::Random,
            100,
            4096,
            4096 * ios,
        )],
        precondition: false.into(),
    })
    .unwrap();
    let c = &host.costs;
    // Link: 32-byte UPIUs in one 288-byte frame; 4 KiB DATA IN = 4128 bytes in 15 frames.
    let upiu = |bytes: u64, frames: u64| (bytes + 8 * frames) * 1_000_000_000 / 1_166_080_000 + 1;
    assert_eq!(u.upiu_ns(0), upiu(32, 1));
    assert_eq!(u.upiu_ns(4096), upiu(4128, 15));
    // Thread: syscall, pin, bio, queuecommand + doorbell (direct issue, scheduler none);
    // controller fetch; COMMAND UPIU; device; DATA IN; RESPONSE; hard IRQ; driver
    // completion; block completion inline (one core); thread wakes; syscall returns.
    let path = c.syscall_ns
        + c.pin_per_4k_read_ns
        + c.block_submit_ns
        + u.queuecommand_ns
        + u.queuecommand_per_4k_ns
        + u.doorbell_ns
        + u.hc_fetch_ns
        + u.upiu_ns(0)
        + read_ns
        + u.upiu_ns(4096)
        + u.upiu_ns(0)
        + c.irq_ns
        + u.completion_ns
        + u.completion_per_4k_ns
        + c.complete_ns
        + c.wakeup_ns
        + c.syscall_return_ns;
    let j = &res.jobs[0];
    assert_eq!(j.dirs[0].ios, ios);
    assert_eq!(j.dirs[0].clat.min(), path);
    assert_eq!(j.dirs[0].clat.max(), path);
    assert_eq!(j.runtime_ns, ios * path);
}

#[test]
fn completion_on_another_cluster_goes_through_an_ipi() {
    // Two cores in separate cache domains: the thread on core 1, the IRQ on core 0. The
    // block completion runs on core 1 after an IPI (one more interrupt entry).
    let mut host = HostConfig::ideal(2);
    host.costs.irq_ns = 3_000;
    host.costs.complete_ns = 1_700;
    let mut u = UfsHostConfig::ideal();
    u.completion_ns = 2_600;
    let one_domain = {
        let mut h = host.clone();
        h.ufs = Some(u.clone());
        h
    };
    u.llc_cores = 1;
    host.ufs = Some(u);
    let lat = |host: HostConfig| {
        let mut dev = DeviceConfig::ideal(1 << 30, 40_000);
        dev.interface = Interface::Ufs;
        let res = run(SimConfig {
            host,
            device: dev,
            driver: DriverKind::Ufs,
            jobs: vec![JobConfig::simple(
                "qd1",
                Pattern::Random,
                100,
                4096,
                4096 * 10,
            )],
            precondition: false.into(),
        })
        .unwrap();
        res.jobs[0].dirs[0].clat.max()
    };
    assert_eq!(lat(host) - lat(one_domain), 3_000);
}

#[test]
fn driver_and_device_interfaces_must_match() {
    let (host, _) = preset_system();
    let emmc = preset::load_device(EMMC, "emmc", &[]).unwrap();
    let err = Sim::new(SimConfig {
        host: host.clone(),
        device: emmc,
        driver: DriverKind::Ufs,
        jobs: jobs(1, Pattern::Random, 100, 1),
        precondition: false.into(),
    })
    .err()
    .unwrap();
    assert_eq!(
        err,
        "driver 'ufs' needs a device with interface = \"ufs\"; device 'emmc51-hs400-32g' has interface = \"emmc\""
    );
    let (_, ufs) = preset_system();
    let err = Sim::new(SimConfig {
        host: host.clone(),
        device: ufs.clone(),
        driver: DriverKind::MmcLegacy,
        jobs: jobs(1, Pattern::Random, 100, 1),
        precondition: false.into(),
    })
    .err()
    .unwrap();
    assert!(
        err.starts_with("driver 'mmc-legacy' needs a device with interface = \"emmc\""),
        "{err}"
    );
    let mut no_ufs = host;
    no_ufs.ufs = None;
    let err = Sim::new(SimConfig {
        host: no_ufs,
        device: ufs,
        driver: DriverKind::Ufs,
        jobs: jobs(1, Pattern::Random, 100, 1),
        precondition: false.into(),
    })
    .err()
    .unwrap();
    assert_eq!(
        err,
        "driver 'ufs' needs a [ufs] section in host preset 'sd835-phone'"
    );
}

#[test]
fn interrupt_aggregation_takes_several_completions_per_interrupt() {
    let (mut host, dev) = preset_system();
    let u = host.ufs.as_mut().unwrap();
    u.intr_aggr = Some((4, 80_000));
    let mut sim = Sim::new(SimConfig {
        host,
        device: dev,
        driver: DriverKind::Ufs,
        jobs: jobs(16, Pattern::Random, 100, 20),
        precondition: false.into(),
    })
    .unwrap();
    sim.enable_trace();
    sim.run_until(u64::MAX);
    let tr = sim.trace().unwrap().clone();
    sim.finish();
    // Irq events of one interrupt share their handler's instant; count distinct instants.
    let mut per_instant: HashMap<u64, u32> = HashMap::new();
    for e in &tr.events {
        if let TraceKind::Irq { .. } = e.kind {
            *per_instant.entry(e.t).or_default() += 1;
        }
    }
    let total: u32 = per_instant.values().sum();
    assert_eq!(total, 16 * 20);
    assert!(
        per_instant.values().any(|&n| n == 4),
        "no interrupt took 4 completions"
    );
    assert!(per_instant.values().all(|&n| n <= 4));
}

#[test]
fn device_accepts_queued_writes_in_arrival_order_and_loses_none() {
    use flashpath_core::device::{DevCommand, DevOp, Device, Input, Outbox, Output};
    // A 64 KiB write buffer (16 slots) and 12 writes of 16 KiB arriving together: most
    // wait in the device's queue, several stall for buffer space.
    let mut cfg = DeviceConfig::small_test_device();
    cfg.nand_mut().unwrap().write_buffer_bytes = 64 * 1024;
    let mut d = Device::new(&cfg, 1);
    let mut out = Outbox::new();
    for tag in 0..12u32 {
        let cmd = DevCommand {
            tag,
            op: DevOp::Write,
            lba: tag as u64 * 32,
            sectors: 32,
            fua: false,
            hpb: 0,
        };
        d.handle(1_000, &Input::Command(cmd), &mut out);
    }
    let mut done = Vec::new();
    let mut timers: Vec<(u64, Input)> = Vec::new();
    loop {
        let (t, e) = out.drain();
        timers.extend(t);
        done.extend(e);
        if timers.is_empty() {
            break;
        }
        timers.sort_by_key(|x| x.0);
        let (at, input) = timers.remove(0);
        d.handle(at, &input, &mut out);
    }
    let tags: Vec<u32> = done
        .iter()
        .map(|(_, o)| match o {
            Output::Done { tag, .. } => *tag,
            o => panic!("unexpected {o:?}"),
        })
        .collect();
    assert_eq!(
        tags,
        (0..12).collect::<Vec<_>>(),
        "accepted in arrival order"
    );
    let times: Vec<u64> = done.iter().map(|x| x.0).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(d.stats().write_stalls > 0, "the buffer filled");
    assert_eq!(d.stats().host_write_slots, 12 * 4);
    let pm = d.page_mapped().unwrap();
    pm.check_invariants();
    for lpn in 0..48 {
        assert_ne!(pm.page_map().get(lpn), u32::MAX, "lpn {lpn} lost");
    }
}

#[test]
fn link_busy_time_is_counted_per_direction() {
    // The run's link statistics are the UPIU and data occupancy of each direction on the
    // trace; the eMMC bus counter stays 0 on UFS.
    let (tr, r) = common::traced(
        preset_system(),
        DriverKind::Ufs,
        jobs(8, Pattern::Random, 50, 40),
        true,
    );
    let busy = |to_device| -> u64 { link(&tr, to_device).iter().map(|x| x.1 - x.0).sum() };
    assert_eq!(r.system.link_busy_ns, [busy(true), busy(false)]);
    assert!(r.system.link_busy_ns.iter().all(|&b| b > 0));
    assert_eq!(r.system.bus_busy_ns, 0);
}

/// Without an elevator (the phone's `none`), blk-mq issues a request from the
/// submitting task (blk_mq_try_issue_directly): its D is the job thread's; the requests
/// kblockd dispatches after a completion freed a slot are its worker's; none is issued
/// from interrupt context.
#[test]
fn direct_issue_is_traced_by_the_submitter() {
    use flashpath_core::trace::{pid, BlkAction};
    let tr = traced(jobs(4, Pattern::Random, 100, 200));
    let (mut by_thread, mut by_worker) = (0, 0);
    for e in &tr.events {
        if let TraceKind::Block {
            action: BlkAction::Issue,
            pid: p,
            ..
        } = e.kind
        {
            if p >= pid::THREAD {
                by_thread += 1;
            } else {
                assert!((pid::KWORKER..pid::FLUSHER).contains(&p), "D by {p}");
                by_worker += 1;
            }
        }
    }
    assert!(by_thread > 0, "{by_thread} {by_worker}");
    assert_eq!(by_thread + by_worker, 800);
}
