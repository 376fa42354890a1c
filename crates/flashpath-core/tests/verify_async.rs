//! fio's verify_async (sim/jobs/verify_async.rs): the checksum work of verify reads moves
//! from the job's thread to verify threads on other cores; an io_u is free again only
//! once a verify thread has checked it.

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{
    instant_hardware, Precondition, Sim, SimConfig, VerifyAlgo, VerifyConfig,
};
use flashpath_core::stats::JobStats;
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const PER_4K_NS: u64 = 20_000;

fn verify(threads: u32, cpus: Vec<u32>) -> VerifyConfig {
    VerifyConfig {
        async_threads: threads,
        async_cpus: cpus,
        ..VerifyConfig::new(VerifyAlgo::Md5)
    }
}

/// A sequential 4 KiB write job at QD 16 over 4 MiB, then its verify phase, on a
/// 4-core host whose md5 costs 20 us per 4 KiB and whose hardware takes no time: the
/// verify phase is bound by the checksum's CPU.
fn run(threads: u32, cpus: Vec<u32>) -> (JobStats, Vec<u64>) {
    let mut host = HostConfig::ideal(4);
    host.costs.syscall_ns = 1_000;
    host.costs.aio_submit_ns = 1_000;
    host.costs.aio_reap_ns = 500;
    host.costs.verify_per_4k_ns[VerifyAlgo::Md5 as usize] = PER_4K_NS;
    let mut device = DeviceConfig::small_test_device();
    instant_hardware(&mut host, &mut device);
    let mut j = JobConfig::simple("v", Pattern::Sequential, 0, 4096, 4 << 20);
    j.submission = Submission::Async {
        depth: 16,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j.verify = Some(verify(threads, cpus));
    let r = Sim::new(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![j],
        precondition: Precondition::Off,
    })
    .unwrap()
    .run();
    (r.jobs[0].clone(), r.system.core_busy_ns.clone())
}

#[test]
fn verify_async_moves_the_checksum_off_the_job_thread() {
    let blocks = (4 << 20) / 4096u64;
    let (sync, sync_busy) = run(0, Vec::new());
    // Three verify threads: the scheduler puts them on the three cores the job's
    // thread (core 1, the first after the IRQ core) leaves idle.
    let (asyn, async_busy) = run(3, Vec::new());
    for j in [&sync, &asyn] {
        assert_eq!(j.verify_failure, None);
        assert_eq!(j.dirs[0].ios, blocks, "every block read back");
        assert_eq!(j.errors.total, 0);
    }
    // The job thread (pinned to core 1) checks every block itself without
    // verify_async: at least blocks x 20 us of its core.
    assert!(sync_busy[1] >= blocks * PER_4K_NS, "{sync_busy:?}");
    // With it, its core keeps only the I/O work; the checksums run elsewhere.
    assert!(
        async_busy[1] + blocks * PER_4K_NS <= sync_busy[1],
        "{sync_busy:?} {async_busy:?}"
    );
    let elsewhere: u64 = async_busy
        .iter()
        .enumerate()
        .filter(|(c, _)| *c != 1)
        .map(|(_, b)| b)
        .sum();
    assert!(elsewhere >= blocks * PER_4K_NS, "{async_busy:?}");
    // The same CPU time is spent (the job process's user time), on more cores at once:
    // the verify phase is faster.
    assert_eq!(sync.usr_ns, asyn.usr_ns);
    let (rs, ra) = (
        sync.dir_runtime_ns[0].unwrap(),
        asyn.dir_runtime_ns[0].unwrap(),
    );
    assert!(ra * 2 < rs, "verify phase: sync {rs} ns, async {ra} ns");
}

#[test]
fn verify_async_cpus_pins_the_verify_threads() {
    let blocks = (4 << 20) / 4096u64;
    let (one, busy) = run(4, vec![3]);
    assert_eq!(one.dirs[0].ios, blocks);
    // Every checksum on core 3, none on the others but the job's own I/O work.
    assert_eq!(busy[3], blocks * PER_4K_NS, "{busy:?}");
    assert_eq!(busy[0] + busy[2], 0, "{busy:?}");
    // Four threads pinned to one core check one block at a time: the verify phase
    // lasts at least every checksum end to end.
    let r1 = one.dir_runtime_ns[0].unwrap();
    assert!(r1 >= blocks * PER_4K_NS, "{r1} ns");
}

#[test]
fn verify_async_runs_are_deterministic() {
    let a = run(3, Vec::new());
    let b = run(3, Vec::new());
    assert_eq!(a.0.dir_runtime_ns, b.0.dir_runtime_ns);
    assert_eq!(a.1, b.1);
}
