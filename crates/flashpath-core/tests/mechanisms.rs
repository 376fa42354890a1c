//! Mechanism tests on the event trace of small jobs: each host driver does what the
//! kernel code does, step by step (docs/kernel-behaviour.md §1-§3, §5).

mod common;

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::block::ReqId;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::trace::{BlkAction, Ctx, Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

fn preset_system() -> (HostConfig, DeviceConfig) {
    common::system(HOST, DEVICE)
}

fn jobs(threads: usize, pattern: Pattern, read_pct: u32, ios: u64) -> Vec<JobConfig> {
    common::spread_jobs(threads, pattern, read_pct, ios, 7)
}

fn traced(driver: DriverKind, jobs: Vec<JobConfig>) -> Trace {
    common::traced(preset_system(), driver, jobs, false).0
}

/// Data transfers on the bus never overlap each other.
fn assert_one_transfer_at_a_time(tr: &Trace) {
    let mut last_end = 0;
    let mut n = 0;
    for (s, e, _) in tr
        .bus_intervals()
        .into_iter()
        .filter(|x| matches!(x.2.kind, TraceKind::Data { .. }))
    {
        assert!(
            s >= last_end,
            "data transfer at {s} overlaps one ending {last_end}"
        );
        last_end = e;
        n += 1;
    }
    assert!(n > 0, "the trace has data transfers");
}

fn writes(tr: &Trace) -> Vec<ReqId> {
    tr.sorted()
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Data {
                dir: Dir::Write, ..
            } => e.req,
            _ => None,
        })
        .collect()
}

#[test]
fn legacy_has_one_transfer_on_the_bus_and_polls_cmd13_after_every_write() {
    let tr = traced(DriverKind::MmcLegacy, jobs(4, Pattern::Random, 50, 40));
    assert_one_transfer_at_a_time(&tr);
    // Every write request gets at least one CMD13 after its data, before the next start.
    let ev = tr.sorted();
    let w = writes(&tr);
    assert!(w.len() > 20);
    for r in w {
        let data_end = ev
            .iter()
            .find_map(|e| match e.kind {
                TraceKind::Data { end, .. } if e.req == Some(r) => Some(end),
                _ => None,
            })
            .unwrap();
        let polled = ev.iter().any(|e| {
            e.req == Some(r)
                && e.t >= data_end
                && matches!(e.kind, TraceKind::Command { opcode: 13, .. })
        });
        assert!(polled, "write request {r} was not followed by CMD13");
    }
    // Legacy starts every request from a task (the dispatcher), never from the interrupt.
    assert!(ev
        .iter()
        .all(|e| !matches!(e.kind, TraceKind::Started { ctx: Ctx::Irq, .. })));
}

fn hsq_invariants(depth: u32, max_in_flight: u32) {
    let driver = DriverKind::MmcHsq {
        depth,
        max_in_flight,
        burst_in_flight: 0,
    };
    let tr = traced(driver, jobs(8, Pattern::Random, 50, 30));
    assert_one_transfer_at_a_time(&tr);
    let ev = tr.sorted();
    // Never more queued than the depth, never more dispatched than the in-flight limit.
    let mut max_seen = 0;
    for e in &ev {
        if let TraceKind::DriverQueued { queued, in_flight } = e.kind {
            assert!(queued <= depth, "{queued} queued > depth {depth}");
            assert!(
                in_flight <= max_in_flight,
                "{in_flight} in flight > {max_in_flight}"
            );
            max_seen = max_seen.max(in_flight);
        }
    }
    assert_eq!(
        max_seen, max_in_flight,
        "the in-flight limit is reached under load"
    );
    // No CMD13 at all.
    assert!(tr.commands(13).is_empty(), "hsq polls no CMD13");
    // A request started while another one was on the hardware is started from that
    // one's interrupt, on the IRQ core, with no wake-up (context switch) in between.
    let irq_core = preset_system().0.irq_core;
    let mut from_irq = 0;
    for e in &ev {
        if let TraceKind::Started {
            core,
            ctx: Ctx::Irq,
        } = e.kind
        {
            assert_eq!(core, irq_core);
            from_irq += 1;
        }
    }
    assert!(
        from_irq > 50,
        "most requests start from the completion interrupt ({from_irq})"
    );
    // Between an interrupt and the start it triggers, the IRQ core wakes no task.
    let mut last_irq: Option<u64> = None;
    for e in &ev {
        match e.kind {
            TraceKind::Irq { .. } => last_irq = Some(e.t),
            TraceKind::Wakeup { core } if core == irq_core => last_irq = None,
            TraceKind::Started { ctx: Ctx::Irq, .. } => {
                assert!(
                    last_irq.is_some(),
                    "a start from the IRQ path follows an interrupt with no context switch"
                );
            }
            _ => {}
        }
    }
}

#[test]
fn hsq_as_merged_keeps_its_limits_and_starts_from_the_interrupt() {
    hsq_invariants(64, 3);
}

#[test]
fn hsq_as_published_keeps_its_limits_and_starts_from_the_interrupt() {
    // The measured series (v4-v7) refused only past in_flight > 2: three in flight.
    let v6 = DriverKind::parse("mmc-hsq-v6").unwrap();
    assert_eq!(
        v6,
        DriverKind::MmcHsq {
            depth: 32,
            max_in_flight: 3,
            burst_in_flight: 0
        }
    );
    assert_eq!(v6.name(), "mmc-hsq-v6");
    hsq_invariants(32, 3);
}

#[test]
fn hsq_with_the_stated_limit_of_two_keeps_it() {
    let strict = DriverKind::parse("mmc-hsq-limit2").unwrap();
    assert_eq!(strict.name(), "mmc-hsq-limit2");
    hsq_invariants(32, 2);
}

/// A request hsq refuses (queue_rq's BLK_STS_RESOURCE past the in-flight limit) is
/// requeued (R) onto the dispatch list: it takes no more bios, and it is the next
/// request issued (D) when a completion reruns the queue.
#[test]
fn a_request_hsq_refuses_waits_on_the_dispatch_list_and_merges_no_more() {
    // The convoy of docs/published-results.md §1's sequential read: threads reading the same blocks,
    // so bios merge into the queued requests.
    let convoy = (0..12)
        .map(|i| {
            let mut j = JobConfig::simple("t", Pattern::Sequential, 100, 4096, 4096 * 150);
            j.seed = 7 + i;
            j
        })
        .collect();
    let tr = traced(DriverKind::parse("mmc-hsq-v6").unwrap(), convoy);
    let mut parked: Option<ReqId> = None;
    let (mut requeues, mut merges, mut issues) = (0, 0, 0);
    for e in tr.sorted() {
        let TraceKind::Block { action, .. } = e.kind else {
            continue;
        };
        let r = e.req;
        match action {
            BlkAction::Requeue => {
                assert!(
                    parked.is_none() || parked == r,
                    "one request waits at a time"
                );
                parked = r;
                requeues += 1;
            }
            BlkAction::BackMerge | BlkAction::FrontMerge => {
                assert!(r != parked, "a bio merged into the refused request {r:?}");
                merges += 1;
            }
            BlkAction::Issue => {
                if let Some(p) = parked.take() {
                    assert_eq!(r, Some(p), "the refused request is issued first");
                }
                issues += 1;
            }
            _ => {}
        }
    }
    assert!(requeues > 20, "the limit refuses requests ({requeues})");
    assert!(merges > 20, "the convoy merges ({merges})");
    assert!(issues > 100);
}

fn max_in_flight_seen(driver: DriverKind, read_pct: u32) -> u32 {
    let tr = traced(driver, jobs(12, Pattern::Random, read_pct, 40));
    tr.events
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::DriverQueued { in_flight, .. } => Some(in_flight),
            _ => None,
        })
        .max()
        .unwrap()
}

#[test]
fn dynamic_hsq_raises_its_depth_only_for_4k_writes() {
    let dynamic = DriverKind::parse("mmc-hsq-dynamic").unwrap();
    assert_eq!(dynamic.name(), "mmc-hsq-dynamic");
    // 4 KiB random writes from 12 threads: two 4 KiB writes at the head raise the limit to 6.
    assert_eq!(max_in_flight_seen(dynamic, 0), 6);
    // Reads never do: the merged limit of 3 holds.
    assert_eq!(max_in_flight_seen(dynamic, 100), 3);
}
