//! The disk's block-layer accounting (/sys/block/<disk>/stat as Linux 5.4 keeps it,
//! `host::block::DiskStats`) against independent counts from the block-event trace:
//! completed requests, bio merges, request lifetimes (G to C), time with a request in
//! flight; and fio's sampling window, which starts after preconditioning.

mod common;

use flashpath_core::host::block::{DiskStats, KERNEL_HZ};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{BlkAction, BlkOp, Trace, TraceKind};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

fn run(jobs: Vec<JobConfig>, precondition: bool) -> (Trace, RunResult) {
    let sys = common::system(HOST, DEVICE);
    let driver = sys.0.default_driver;
    common::traced(sys, driver, jobs, precondition)
}

/// The window fio reports: end sample minus start sample.
fn delta(r: &RunResult) -> DiskStats {
    let (a, b) = (&r.system.disk_start, &r.system.disk_end);
    DiskStats {
        at_ns: b.at_ns - a.at_ns,
        ios: [b.ios[0] - a.ios[0], b.ios[1] - a.ios[1]],
        merges: [b.merges[0] - a.merges[0], b.merges[1] - a.merges[1]],
        ticks_ns: [b.ticks_ns[0] - a.ticks_ns[0], b.ticks_ns[1] - a.ticks_ns[1]],
        time_in_queue_jiffies: b.time_in_queue_jiffies - a.time_in_queue_jiffies,
        io_ticks_ns: b.io_ticks_ns - a.io_ticks_ns,
    }
}

/// Data block events (time, action) of the trace, in time order.
fn block_events(tr: &Trace) -> Vec<(u64, BlkAction)> {
    let mut v: Vec<(u64, BlkAction)> = tr
        .events
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action,
                op: BlkOp::Data,
                ..
            } => Some((e.t, action)),
            _ => None,
        })
        .collect();
    v.sort_by_key(|&(t, _)| t);
    v
}

fn count(ev: &[(u64, BlkAction)], want: &[BlkAction]) -> u64 {
    ev.iter().filter(|(_, a)| want.contains(a)).count() as u64
}

#[test]
fn sequential_libaio_reads_count_requests_and_bio_merges() {
    let mut j = JobConfig::simple("seq", Pattern::Sequential, 100, 4096, 8 << 20);
    j.submission = Submission::Async {
        depth: 16,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let (tr, r) = run(vec![j], false);
    let d = delta(&r);
    let ev = block_events(&tr);
    let bios = count(&ev, &[BlkAction::Queue]);
    let requests = count(&ev, &[BlkAction::GetRq]);
    let completed = count(&ev, &[BlkAction::Complete]);
    let merged = count(&ev, &[BlkAction::BackMerge, BlkAction::FrontMerge]);
    assert_eq!(bios, 2048, "one 4 KiB bio per I/O");
    assert_eq!(d.ios, [completed, 0]);
    assert_eq!(requests, completed);
    assert_eq!(
        d.ios[0], r.system.requests,
        "every dispatched request completed"
    );
    assert!(d.merges[0] > 0, "queued sequential bios merge: {d:?}");
    assert_eq!(d.merges, [merged, 0]);
    // No request-with-request merges here, so every bio either made a request or merged.
    assert_eq!(d.merges[0], bios - requests);
    assert_eq!(r.system.merges, d.merges[0]);
}

#[test]
fn random_qd1_reads_never_merge() {
    let j = JobConfig::simple("rand", Pattern::Random, 100, 4096, 4 << 20);
    let (_, r) = run(vec![j], false);
    let d = delta(&r);
    assert_eq!(d.ios, [1024, 0]);
    assert_eq!(d.merges, [0, 0]);
}

#[test]
fn qd1_ticks_and_busy_time_are_the_request_lifetimes() {
    // One thread, one request at a time: the lifetimes (G to C) never overlap, so the
    // ticks are their sum and so is the time with a request in flight.
    let j = JobConfig::simple("rand", Pattern::Random, 100, 4096, 2 << 20);
    let (tr, r) = run(vec![j], false);
    let d = delta(&r);
    let ev = block_events(&tr);
    let mut lifetimes = Vec::new();
    let mut got = None;
    for &(t, a) in &ev {
        match a {
            BlkAction::GetRq => {
                assert!(got.is_none(), "QD1: one request at a time");
                got = Some(t);
            }
            BlkAction::Complete => lifetimes.push(t - got.take().expect("G before C")),
            _ => {}
        }
    }
    assert_eq!(lifetimes.len(), 512);
    let sum: u64 = lifetimes.iter().sum();
    assert_eq!(d.ios[0], 512);
    assert_eq!(d.ticks_ns[0], sum);
    assert_eq!(d.io_ticks_ns, sum);
    assert_eq!(d.ticks_ns[1], 0);
    let jiffy = 1_000_000_000 / KERNEL_HZ;
    let tiq: u64 = lifetimes.iter().map(|l| l / jiffy).sum();
    assert_eq!(d.time_in_queue_jiffies, tiq);
    // The window: from the start of the run to the job's end.
    assert_eq!(d.at_ns, r.jobs[0].end_ns);
    assert!(d.io_ticks_ns < d.at_ns);
}

#[test]
fn preconditioning_is_outside_the_window() {
    let j = JobConfig::simple("rand", Pattern::Random, 100, 4096, 4 << 20);
    let (_, r) = run(vec![j], true);
    let d = delta(&r);
    assert_eq!(d.ios, [1024, 0], "the job's own reads only");
    let pre = &r.system.disk_start;
    assert!(pre.ios[1] >= 1, "the preconditioning wrote: {pre:?}");
    assert_eq!(r.system.disk_end.ios[1], pre.ios[1]);
    assert_eq!(d.at_ns, r.jobs[0].end_ns - pre.at_ns);
    assert!(pre.at_ns > 0 && pre.at_ns <= r.jobs[0].start_ns);
}

mod block_level {
    use flashpath_core::host::block::{Bio, BlockLayer};
    use flashpath_core::host::Scheduler;
    use flashpath_core::workload::Dir;

    fn bio(io: u32, sector: u64, discard: bool) -> Bio {
        Bio {
            io,
            dir: Dir::Write,
            sector,
            sectors: 8,
            cpu: 0,
            queued_at: 0,
            discard,
            nomerge: false,
        }
    }

    #[test]
    fn flushes_count_as_writes_discards_apart_request_merges_count_none() {
        let mut b = BlockLayer::new(Scheduler::MqDeadline, 16, 512 * 1024);
        b.set_max_discard_sectors(1024);
        b.submit(10, bio(1, 0, false)); // X [0,8), G at 10
        b.submit(20, bio(2, 16, false)); // Y [16,24)
        b.submit(30, bio(3, 8, false)); // back merge into X, which then absorbs Y
        b.submit(30, bio(4, 100, true)); // discard D
        b.submit(30, bio(5, 108, true)); // merges into D
        b.submit_flush(40, 6, 0); // 5.4: REQ_OP_WRITE|REQ_PREFLUSH, a write
        let mut ios = Vec::new();
        let mut done = Vec::new();
        while let Some(id) = b.dispatch(50) {
            done.push(id);
        }
        assert_eq!(done.len(), 3);
        for (k, id) in done.into_iter().enumerate() {
            b.complete(100 + k as u64 * 10, id, &mut ios);
        }
        let d = b.disk_stats(1000);
        // Bio merges only (X+Y is a request merge), the discard's counted as a write.
        assert_eq!(d.merges, [0, 2]);
        assert_eq!(b.merges, 3);
        // The data request and the flush; the discard is STAT_DISCARD.
        assert_eq!(d.ios, [0, 2]);
        // Busy from the first G (10) to the last completion (120), nothing after.
        assert_eq!(d.io_ticks_ns, 110);
        assert_eq!(d.at_ns, 1000);
    }

    #[test]
    fn a_snapshot_counts_busy_time_up_to_now() {
        let mut b = BlockLayer::new(Scheduler::None, 16, 512 * 1024);
        b.submit(5, bio(1, 0, false));
        assert_eq!(b.disk_stats(25).io_ticks_ns, 20);
        let id = b.dispatch(25).unwrap();
        let mut ios = Vec::new();
        b.complete(45, id, &mut ios);
        let d = b.disk_stats(100);
        assert_eq!((d.io_ticks_ns, d.ticks_ns[1], d.ios[1]), (40, 40, 1));
    }
}
