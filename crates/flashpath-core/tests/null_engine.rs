//! fio's null engine: no system call, no kernel, no device. Each I/O costs the thread
//! the host's `syscall_return` (fio's own per-I/O work, an upper bound) and completes
//! when committed, so a job's rate is exactly one I/O per that cost, whatever the depth,
//! and the device sees nothing.
mod common;

use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

#[test]
fn a_null_job_runs_at_fios_own_per_io_cost_and_touches_nothing() {
    for depth in [1, 16] {
        let (host, device) = common::system(HOST, DEVICE);
        let per_io = host.costs.syscall_return_ns;
        // Larger than the device: a null job has no file.
        let mut j = JobConfig::simple("n", Pattern::Random, 100, 4096, 64 << 30);
        j.io_limit = 4 << 20;
        j.null_engine = true;
        j.submission = Submission::Async {
            depth,
            batch_submit: depth,
            batch_complete_min: 1,
        };
        let r = run(SimConfig {
            host,
            device,
            driver: DriverKind::MmcLegacy,
            jobs: vec![j],
            precondition: Precondition::Random,
        })
        .unwrap();
        let s = &r.jobs[0];
        assert_eq!(s.dirs[0].ios, 1024);
        assert_eq!(s.end_ns - s.start_ns, 1024 * per_io, "depth {depth}");
        assert_eq!(s.usr_ns, 1024 * per_io);
        assert_eq!(s.sys_ns, 0);
        // No slat sample (null's commit never calls io_u_queued).
        assert_eq!(s.dirs[0].slat.count(), 0);
        assert_eq!(r.system.requests, 0);
        assert_eq!(r.system.device.host_read_slots, 0);
    }
}
