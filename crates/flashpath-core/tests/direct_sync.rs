//! O_DIRECT|O_SYNC writes on the raw block device (fio's `direct=1 sync=1`, flashbench's
//! open flags): blkdev_write_iter sends the write with REQ_FUA (dio_bio_write_op, from
//! the 4.10 rewrite) where the queue has a write cache and native FUA, and a
//! synchronous system call then runs generic_write_sync → blkdev_fsync → a flush
//! request. An asynchronous one (-EIOCBQUEUED) skips the fsync. Without a write cache
//! (SD cards) both are stripped: a plain write.
mod common;

use flashpath_core::host::{DriverKind, Kernel};
use flashpath_core::sim::{run_traced, Precondition, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{BlkAction, BlkOp, Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern, Submission};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const N: u64 = 8;

fn o_sync_writes(kernel: Option<Kernel>, submission: Submission) -> (Trace, RunResult) {
    let (mut host, device) = common::system(HOST, DEVICE);
    if let Some(k) = kernel {
        host.kernel = k;
    }
    let mut j = JobConfig::simple("osync", Pattern::Sequential, 0, 4096, 64 << 20);
    j.io_limit = N * 4096;
    j.o_sync = true;
    j.submission = submission;
    run_traced(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![j],
        precondition: Precondition::Sequential,
    })
    .unwrap()
}

/// (time, op) of each write request's issue (D).
fn write_issues(tr: &Trace) -> Vec<(u64, BlkOp)> {
    tr.sorted()
        .into_iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action: BlkAction::Issue,
                dir: Dir::Write,
                sectors,
                op,
                ..
            } if sectors > 0 => Some((e.t, op)),
            _ => None,
        })
        .collect()
}

#[test]
fn psync_o_sync_writes_are_fua_then_flushed() {
    let (tr, r) = o_sync_writes(None, Submission::Sync);
    let writes = write_issues(&tr);
    assert_eq!(writes.len() as u64, N);
    assert!(writes.iter().all(|w| w.1 == BlkOp::Fua), "{writes:?}");
    // blkdev_fsync after each write: a flush request, CMD6 FLUSH_CACHE on the bus,
    // before the next write is issued.
    assert_eq!(r.system.cache.flushes, N);
    let cmd6: Vec<u64> = tr.commands(6).iter().map(|e| e.t).collect();
    assert_eq!(cmd6.len() as u64, N);
    for w in 0..N as usize - 1 {
        assert!(
            writes[w].0 < cmd6[w] && cmd6[w] < writes[w + 1].0,
            "write {w}"
        );
    }
    // A reliable write is done once programmed: every write takes the device's
    // program time at least (the preset's pSLC-mode t_prog).
    let lat = &r.jobs[0].dirs[1].lat;
    assert!(lat.min() >= 410_000, "{}", lat.min());
}

#[test]
fn async_o_sync_writes_are_fua_without_the_fsync() {
    let batch = Submission::Async {
        depth: 4,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let (tr, r) = o_sync_writes(None, batch);
    let writes = write_issues(&tr);
    assert_eq!(writes.len() as u64, N);
    assert!(writes.iter().all(|w| w.1 == BlkOp::Fua));
    assert_eq!(r.system.cache.flushes, 0);
    assert!(tr.commands(6).is_empty());
}

#[test]
fn before_4_10_o_sync_writes_carry_no_fua_and_are_flushed() {
    let (tr, r) = o_sync_writes(Some(Kernel::new(4, 9)), Submission::Sync);
    let writes = write_issues(&tr);
    assert_eq!(writes.len() as u64, N);
    assert!(writes.iter().all(|w| w.1 == BlkOp::Data), "{writes:?}");
    assert_eq!(r.system.cache.flushes, N);
    // Asynchronous O_SYNC direct writes then finished in a completion work item: not
    // modelled, refused.
    let (host, device) = common::system(HOST, DEVICE);
    let mut host = host;
    host.kernel = Kernel::new(4, 9);
    let mut j = JobConfig::simple("osync", Pattern::Sequential, 0, 4096, 1 << 20);
    j.o_sync = true;
    j.submission = Submission::Async {
        depth: 4,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let e = flashpath_core::sim::run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![j],
        precondition: Precondition::Sequential,
    })
    .unwrap_err();
    assert!(e.contains("before 4.10"), "{e}");
}
