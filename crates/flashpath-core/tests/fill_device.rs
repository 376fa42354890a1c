//! fio's fill_device (sim/jobs/fill_device.rs): a job whose region is the free space writes
//! it whole, then one more write fails with ENOSPC before reaching the device: counted
//! as issued (in the depth histograms), not in bytes or latencies, and the job ends
//! without error, one system call later.
mod common;

use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

fn fill_run(fill: bool, submission: Submission) -> flashpath_core::stats::RunResult {
    let (host, device) = common::system(HOST, DEVICE);
    let mut j = JobConfig::simple("fill", Pattern::Sequential, 0, 64 << 10, 4 << 20);
    j.offset = 1 << 20;
    j.fill_enospc = fill;
    j.submission = submission;
    run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![j],
        precondition: Precondition::Off,
    })
    .unwrap()
}

#[test]
fn the_write_past_the_free_space_fails_without_reaching_the_device() {
    for submission in [
        Submission::Sync,
        Submission::Async {
            depth: 4,
            batch_submit: 1,
            batch_complete_min: 1,
        },
    ] {
        let plain = fill_run(false, submission);
        let r = fill_run(true, submission);
        let (s, p) = (&r.jobs[0], &plain.jobs[0]);
        // The region is written once, exactly as without fill_device.
        assert_eq!(s.dirs[1].bytes, 4 << 20);
        assert_eq!(s.dirs[1].ios, 64);
        assert_eq!(s.dirs[1].clat.count(), 64);
        assert_eq!(r.system.device_host_write_bytes, 4 << 20);
        assert_eq!(
            r.system.device_host_write_bytes,
            plain.system.device_host_write_bytes
        );
        // The failed write: issued (depth histogram) but no bytes, no error.
        assert_eq!(s.enospc_write, Some(64 << 10));
        assert_eq!(p.enospc_write, None);
        assert_eq!(
            s.depth_hist.iter().sum::<u64>(),
            p.depth_hist.iter().sum::<u64>() + 1
        );
        assert!(s.error.is_none());
        // It costs the thread one system call: after the last write's completion with a
        // synchronous engine, beside the writes still in flight with an asynchronous one.
        let (h, _) = common::system(HOST, DEVICE);
        let call = match submission {
            Submission::Sync => h.costs.syscall_ns,
            Submission::Async { .. } => h.costs.aio_submit_ns + h.costs.syscall_ns,
        };
        assert_eq!(s.sys_ns, p.sys_ns + call, "{submission:?}");
        match submission {
            Submission::Sync => assert_eq!(s.end_ns, p.end_ns + call),
            Submission::Async { .. } => assert!(s.end_ns >= p.end_ns),
        }
    }
}
