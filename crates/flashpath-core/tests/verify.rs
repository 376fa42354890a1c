//! fio's verify against the simulated device (sim/jobs/verify.rs, device/content.rs): a
//! verify job passes over a device whose FTL moves data (write buffer, GC), and fails,
//! as fio reports it, when the device returns the wrong data.

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{
    FailureKind, Precondition, Sim, SimConfig, VerifyAlgo, VerifyConfig, VerifyFailure,
};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{JobConfig, Pattern, Submission};

fn verify(algo: VerifyAlgo, interval: u64) -> VerifyConfig {
    VerifyConfig {
        interval,
        ..VerifyConfig::new(algo)
    }
}

/// A 48 MiB page-mapped device with few spare blocks: a random-write job over most of
/// it keeps GC busy.
fn gc_device() -> DeviceConfig {
    DeviceConfig::small_test_device()
}

fn cfg(jobs: Vec<JobConfig>) -> SimConfig {
    SimConfig {
        host: HostConfig::ideal(2),
        device: gc_device(),
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: Precondition::Random,
    }
}

/// A randwrite job of `bs` over `size` bytes, verified with crc32c. It writes twice
/// the region without a random map (blocks written 0, 1, 2... times), so erase blocks
/// are left partly valid and GC copies.
fn randwrite(size: u64, bs: u64, depth: u32) -> JobConfig {
    let mut j = JobConfig::simple("v", Pattern::Random, 0, bs, size);
    j.norandommap = true;
    j.io_limit = 2 * size;
    if depth > 1 {
        j.submission = Submission::Async {
            depth,
            batch_submit: 1,
            batch_complete_min: 1,
        };
    }
    j.verify = Some(verify(VerifyAlgo::Crc32c, bs));
    j
}

/// Runs until `f` says stop (checked every 20 us of simulated time), calls `at` once,
/// then runs to the end.
fn run_with(
    cfg: SimConfig,
    mut when: impl FnMut(&Sim) -> bool,
    at: impl FnOnce(&mut Sim),
) -> RunResult {
    let mut sim = Sim::new(cfg).unwrap();
    let mut t = 0;
    let mut at = Some(at);
    while sim.run_until(t) {
        if at.is_some() && when(&sim) {
            (at.take().unwrap())(&mut sim);
        }
        t += 20_000;
    }
    assert!(at.is_none(), "the run ended before the fault was injected");
    sim.finish()
}

#[test]
fn a_random_write_verify_job_passes_with_gc_active() {
    let size = 40 << 20;
    let r = Sim::new(cfg(vec![randwrite(size, 4096, 4)])).unwrap().run();
    let j = &r.jobs[0];
    assert_eq!(j.verify_failure, None);
    let n = size / 4096;
    assert_eq!(j.dirs[1].ios, 2 * n);
    // Every block written is read back once (fio drops older pieces of a block).
    assert!(
        j.dirs[0].ios > n * 3 / 4 && j.dirs[0].ios < n,
        "{}",
        j.dirs[0].ios
    );
    let d = &r.system.device;
    assert!(d.gc_copies > 1000 && d.erases > 10, "GC moved data: {d:?}");
}

#[test]
fn a_corrupted_block_fails_the_verify_naming_its_offset() {
    // Sequential writes are verified in offset order (fio's rb-tree of pieces): the
    // last block is read last, so it can be corrupted once written, before its read.
    let size = 8 << 20;
    let mut j = JobConfig::simple("v", Pattern::Sequential, 0, 16384, size);
    j.verify = Some(verify(VerifyAlgo::Crc32c, 16384));
    let writes = size / 16384;
    let last = size - 16384;
    // Corrupt the second 4 KiB of the last block, a hundred reads into the verify
    // phase (its data long programmed): data under a good header.
    let r = run_with(
        cfg(vec![j.clone()]),
        |s| s.progress().1 >= size / 4096 + writes + 100,
        |s| {
            s.device_mut()
                .corrupt_content((last + 4096) / 4096, 0x1234_5678)
        },
    );
    let f = r.jobs[0]
        .verify_failure
        .clone()
        .expect("the corruption is found");
    assert_eq!(
        f,
        VerifyFailure {
            kind: FailureKind::Checksum,
            algo: VerifyAlgo::Crc32c,
            offset: last,
            len: 16384,
            req_offset: last,
            req_len: 16384,
            async_reap: false,
            verify_thread: false,
        }
    );
    assert_eq!(
        f.message("/dev/mmcblk0"),
        format!("crc32c: verify failed at file /dev/mmcblk0 offset {last}, length 16384 (requested block: offset={last}, length=16384, flags=88)")
    );
    // A corrupted header block: fio finds no magic there.
    let r = run_with(
        cfg(vec![j]),
        |s| s.progress().1 >= size / 4096 + writes + 100,
        |s| s.device_mut().corrupt_content(last / 4096, 0xdead_beef),
    );
    let f = r.jobs[0].verify_failure.clone().unwrap();
    assert_eq!(f.kind, FailureKind::BadMagic { found: 0xbeef });
    assert_eq!(
        f.message("/dev/mmcblk0"),
        format!("verify: bad magic header beef, wanted acca at file /dev/mmcblk0 offset {last}, length 16384 (requested block: offset={last}, length=16384)")
    );
}

#[test]
fn a_broken_gc_copy_is_caught_by_verify() {
    let size = 40 << 20;
    let r = run_with(
        cfg(vec![randwrite(size, 4096, 4)]),
        |_| true,
        |s| s.device_mut().page_mapped_mut().unwrap().break_gc_copy(),
    );
    let f = r.jobs[0]
        .verify_failure
        .clone()
        .expect("GC's bad copies are found");
    assert!(r.system.device.gc_copies > 0);
    // The copy took its neighbour's data: another block's fio data, or no fio data.
    assert!(
        matches!(
            f.kind,
            FailureKind::BadMagic { .. } | FailureKind::BadNumberio { .. }
        ),
        "{f:?}"
    );
    // The job stopped at its first failure (fio's td->error).
    assert!(r.jobs[0].dirs[0].ios < size / 4096);
}

#[test]
fn verify_runs_are_deterministic() {
    let run = || {
        let r = Sim::new(cfg(vec![randwrite(16 << 20, 8192, 8)]))
            .unwrap()
            .run();
        let j = &r.jobs[0];
        (
            j.dirs[0].ios,
            j.dirs[0].bytes,
            j.dirs[1].ios,
            j.end_ns,
            r.system.device.clone(),
        )
    };
    assert_eq!(run(), run());
}

/// Content tags are kept only for the erase blocks that hold data: a verify job over
/// 4 MiB of a 48 MiB device holds tags for about its region, not the device.
#[test]
fn content_memory_follows_the_data_written_not_the_device() {
    let mut j = JobConfig::simple("v", Pattern::Random, 0, 4096, 4 << 20);
    j.verify = Some(verify(VerifyAlgo::Crc32c, 4096));
    let mut sim = Sim::new(cfg(vec![j])).unwrap();
    sim.run_until(u64::MAX);
    let d = sim.device_mut().page_mapped().unwrap();
    let held = d.content_blocks_held();
    let block_bytes = d.page_map().slots_per_block() as u64 * 4096;
    let blocks = d.page_map().blocks() as u64;
    // Written twice (preconditioning, then the job): at most about twice the region's
    // blocks, far from the device's.
    assert!(
        held as u64 * block_bytes <= 2 * (4 << 20) + 4 * block_bytes,
        "{held} blocks of {block_bytes}"
    );
    assert!((held as u64) < blocks / 4, "{held} of {blocks}");
    let r = sim.finish();
    assert_eq!(r.jobs[0].verify_failure, None);
}
