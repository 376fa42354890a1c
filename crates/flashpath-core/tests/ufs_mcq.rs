//! UFS multi-circular queue mode (`--driver ufs-mcq`, driver/ufs/mcq.rs): more than the
//! single doorbell's 32 commands in flight, min(the host's MAC, the device's bQueueDepth)
//! less the reserved tag; the same jobs run as on `ufs`; a kernel before 6.3 or a host
//! without MAC is refused with the reason.

mod common;

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig, Kernel};
use flashpath_core::trace::TraceKind;
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/ufs40-512g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sm8650-phone.toml");

/// The UFS 4.0 preset on a Snapdragon 8 Gen 3 host running 6.6 with a MAC of 64.
fn system() -> (HostConfig, DeviceConfig) {
    let (mut host, dev) = common::system(HOST, DEVICE);
    host.kernel = Kernel::new(6, 6);
    host.ufs.as_mut().unwrap().mcq_mac = Some(64);
    (host, dev)
}

/// 4 KiB random reads at QD `depth` over 1 GiB, `ios` of them.
fn reader(depth: u32, ios: u64) -> JobConfig {
    let mut j = JobConfig::simple("r", Pattern::Random, 100, 4096, 1 << 30);
    j.io_limit = ios * 4096;
    j.submission = Submission::Async {
        depth,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j
}

/// The most commands the driver had outstanding in the device.
fn most_in_flight(driver: DriverKind, system: (HostConfig, DeviceConfig)) -> (u32, f64) {
    let (trace, r) = common::traced(system, driver, vec![reader(96, 20_000)], true);
    let most = trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::DriverQueued { in_flight, .. } => Some(in_flight),
            _ => None,
        })
        .max()
        .unwrap();
    let j = &r.jobs[0];
    (most, j.dirs[0].ios as f64 * 1e9 / j.runtime_ns as f64)
}

#[test]
fn mcq_keeps_more_than_32_commands_in_flight() {
    let (sdb, sdb_iops) = most_in_flight(DriverKind::Ufs, system());
    // The single doorbell: the preset's 31 tags (32 slots, one reserved).
    assert_eq!(sdb, 31);
    let (mcq, mcq_iops) = most_in_flight(DriverKind::UfsMcq, system());
    // min(MAC 64, bQueueDepth 64) = 64 slots, one tag reserved: 63 in flight.
    assert_eq!(mcq, 63);
    assert!(mcq_iops >= sdb_iops, "{mcq_iops} vs {sdb_iops}");
    // A device queueing 32 holds MCQ to 31 as well.
    let (h, mut d) = system();
    d.ufs_queue_depth = Some(32);
    assert_eq!(most_in_flight(DriverKind::UfsMcq, (h, d)).0, 31);
}

#[test]
fn mcq_needs_linux_6_3_and_the_controllers_mac() {
    let run = |(host, device): (HostConfig, DeviceConfig)| {
        flashpath_core::sim::run(flashpath_core::sim::SimConfig {
            host,
            device,
            driver: DriverKind::UfsMcq,
            jobs: vec![reader(4, 100)],
            precondition: flashpath_core::sim::Precondition::Sequential,
        })
        .map(|_| ())
    };
    let (mut host, dev) = system();
    host.kernel = Kernel::new(6, 1);
    let e = run((host, dev)).unwrap_err();
    assert!(e.contains("ufs-mcq") && e.contains("6.3"), "{e}");
    let (mut host, dev) = system();
    host.ufs.as_mut().unwrap().mcq_mac = None;
    let e = run((host, dev)).unwrap_err();
    assert!(e.contains("mcq_mac"), "{e}");
    assert!(run(system()).is_ok());
}
