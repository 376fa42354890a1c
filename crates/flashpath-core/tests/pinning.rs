//! Job threads pinned to host cores (fio's cpus_allowed/cpumask as `JobConfig::cpu`):
//! their system-call work runs on that core, and a core the host lacks is an error.
mod common;

use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

fn cfg(cpus: [Option<u32>; 2]) -> SimConfig {
    let (host, device) = common::system(HOST, DEVICE);
    let jobs = cpus
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut j = JobConfig::simple("t", Pattern::Random, 100, 4096, 16 << 20);
            j.offset = i as u64 * (16 << 20);
            j.io_limit = 2 << 20;
            j.cpu = c;
            j
        })
        .collect();
    SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: Precondition::Sequential,
    }
}

#[test]
fn pinned_threads_run_on_their_core() {
    let r = run(cfg([Some(5), Some(5)])).unwrap();
    let busy = &r.system.core_busy_ns;
    let irq = 0; // sprd-sc9863a's irq_core
    let sys: u64 = r.jobs.iter().map(|j| j.sys_ns).sum();
    // Both threads' system-call time is on core 5; no other core but the interrupt
    // core does any work.
    assert!(busy[5] >= sys, "{busy:?} {sys}");
    for (c, &b) in busy.iter().enumerate() {
        if c != 5 && c != irq {
            assert_eq!(b, 0, "core {c}: {busy:?}");
        }
    }
    // Unpinned, they are spread over two cores.
    let r = run(cfg([None, None])).unwrap();
    assert!(r.system.core_busy_ns[5] < sys);
}

#[test]
fn a_core_the_host_lacks_is_an_error() {
    let e = run(cfg([Some(8), None])).unwrap_err();
    assert!(e.contains("CPU 8") && e.contains("0..7"), "{e}");
}
