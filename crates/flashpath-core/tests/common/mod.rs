//! Set-up shared by the mechanism tests: presets, thread layouts, traced runs.
#![allow(dead_code)] // each test file uses its own part

use flashpath_core::config::preset;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run_traced, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::Trace;
use flashpath_core::workload::{JobConfig, Pattern};

/// A host and a device from preset texts.
pub fn system(host: &str, device: &str) -> (HostConfig, DeviceConfig) {
    let host = preset::load_host(host, "host", &[]).unwrap();
    let dev = preset::load_device(device, "device", &[]).unwrap();
    (host, dev)
}

/// `threads` psync threads, each doing `ios` 4 KiB I/Os of `pattern` (read_pct reads)
/// on its own region (8 MiB apart), seeded from `seed`.
pub fn spread_jobs(
    threads: usize,
    pattern: Pattern,
    read_pct: u32,
    ios: u64,
    seed: u64,
) -> Vec<JobConfig> {
    (0..threads)
        .map(|i| {
            let mut j = JobConfig::simple("t", pattern, read_pct, 4096, 4096 * ios);
            j.offset = i as u64 * (8 << 20);
            j.seed = seed + i as u64;
            j
        })
        .collect()
}

/// Runs `jobs` on the system with the event trace on.
pub fn traced(
    (host, device): (HostConfig, DeviceConfig),
    driver: DriverKind,
    jobs: Vec<JobConfig>,
    precondition: bool,
) -> (Trace, RunResult) {
    run_traced(SimConfig {
        host,
        device,
        driver,
        jobs,
        precondition: precondition.into(),
    })
    .unwrap()
}
