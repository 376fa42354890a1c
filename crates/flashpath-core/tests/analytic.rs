//! Analytic tests: cases whose answer queueing arithmetic gives exactly, and invariants
//! that hold on every run (Little's law, every I/O completes once, determinism).

use flashpath_core::config::preset;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{Cmd13Mode, HostConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

/// A host with every cost set to a distinct value, so a missing or doubled step shows.
fn costed_host() -> HostConfig {
    let mut h = HostConfig::ideal(4);
    h.costs.syscall_ns = 5_000;
    h.costs.pin_per_4k_ns = 300;
    h.costs.pin_per_4k_read_ns = 400;
    h.costs.block_submit_ns = 2_000;
    h.costs.irq_ns = 3_000;
    h.costs.wakeup_ns = 11_000;
    h.costs.task_wakeup_ns = 11_000;
    h.costs.complete_ns = 1_700;
    h.costs.syscall_return_ns = 2_300;
    h.mmc.prep_ns = 4_000;
    h.mmc.prep_per_4k_ns = 100;
    h.mmc.start_ns = 3_100;
    h.mmc.post_ns = 2_900;
    h.mmc.post_per_4k_ns = 70;
    h.mmc.cmd13_ns = 1_300;
    h.bus.cmd_overhead_ns = 700;
    h.bus.ncr_clocks = 8;
    h
}

fn qd1_job(pattern: Pattern, read_pct: u32, ios: u64) -> JobConfig {
    JobConfig::simple("qd1", pattern, read_pct, 4096, 4096 * ios)
}

#[test]
fn qd1_read_bandwidth_is_bs_over_the_sum_of_the_path() {
    let host = costed_host();
    let read_ns = 50_000;
    let dev = DeviceConfig::ideal(1 << 30, read_ns);
    let ios = 200;
    let res = run(SimConfig {
        host: host.clone(),
        device: dev,
        driver: host.default_driver,
        jobs: vec![qd1_job(Pattern::Random, 100, ios)],
        precondition: false.into(),
    })
    .unwrap();
    let c = &host.costs;
    let m = &host.mmc;
    let cmd = host.bus.command_ns();
    // Thread: syscall, pin, bio; kblockd wakes and dispatches: prep, start; bus: CMD23 +
    // CMD18; device; data; irq; mmc_complete kworker wakes: post + bio end; thread
    // wakes; syscall return.
    let path = c.syscall_ns
        + c.pin_per_4k_read_ns
        + c.block_submit_ns
        + c.wakeup_ns
        + m.prep_ns
        + m.prep_per_4k_ns
        + m.start_ns
        + 2 * cmd
        + read_ns
        + host.bus.data_ns(4096)
        + c.irq_ns
        + c.wakeup_ns
        + m.post_ns
        + m.post_per_4k_ns
        + c.complete_ns
        + c.wakeup_ns
        + c.syscall_return_ns;
    let j = &res.jobs[0];
    assert_eq!(j.dirs[0].ios, ios);
    assert_eq!(j.dirs[0].clat.min(), path);
    assert_eq!(j.dirs[0].clat.max(), path);
    assert_eq!(j.runtime_ns, ios * path);
    let bw = j.dirs[0].bytes as f64 / (j.runtime_ns as f64 / 1e9);
    let expect = 4096.0 / (path as f64 / 1e9);
    assert!((bw - expect).abs() < 1e-6 * expect, "{bw} vs {expect}");
}

/// A QD1 4 KiB write's completion latency on `host`: the thread's and the dispatcher's
/// work, CMD23 + CMD25 and the data, then `after_data` (the device's busy and how the
/// host learns it ended), then the completion back to the thread.
fn qd1_write_path(host: &HostConfig, after_data: u64) -> u64 {
    let c = &host.costs;
    let m = &host.mmc;
    c.syscall_ns
        + c.pin_per_4k_ns
        + c.block_submit_ns
        + c.wakeup_ns
        + m.prep_ns
        + m.prep_per_4k_ns
        + m.start_ns
        + 2 * host.bus.command_ns()
        + host.bus.data_ns(4096)
        + after_data
        + m.post_ns
        + m.post_per_4k_ns
        + c.complete_ns
        + c.wakeup_ns
        + c.syscall_return_ns
}

#[test]
fn qd1_write_adds_one_synchronous_cmd13_round_trip() {
    let host = costed_host();
    let write_ns = 30_000;
    let dev = DeviceConfig::ideal_rw(1 << 30, 50_000, write_ns);
    let res = run(SimConfig {
        host: host.clone(),
        device: dev,
        driver: host.default_driver,
        jobs: vec![qd1_job(Pattern::Sequential, 0, 50)],
        precondition: false.into(),
    })
    .unwrap();
    let c = &host.costs;
    let cmd13_round = host.mmc.cmd13_ns + host.bus.command_ns() + c.irq_ns + c.wakeup_ns;
    let path = qd1_write_path(&host, write_ns + c.irq_ns + c.wakeup_ns + cmd13_round);
    let j = &res.jobs[0];
    assert_eq!(j.dirs[1].clat.min(), path);
    assert_eq!(j.dirs[1].clat.max(), path);
    assert_eq!(res.system.cmd13, 50);
}

/// Linux >= 5.15 without busy detection: the transfer-complete interrupt comes at the
/// end of the data, then CMD13 polls with usleep_range(d, 2d) between them, d doubling
/// from 32 us; each sleep lasts to its hard expiry, 2d (nothing else wakes the core).
#[test]
fn backoff_polls_sleep_to_the_hard_expiry_of_usleep_range() {
    let mut host = costed_host();
    host.mmc.busy_detect = false;
    host.mmc.cmd13_mode = Cmd13Mode::Backoff;
    let write_ns = 1_000_000;
    let dev = DeviceConfig::ideal_rw(1 << 30, 50_000, write_ns);
    let ios = 20;
    let res = run(SimConfig {
        host: host.clone(),
        device: dev,
        driver: host.default_driver,
        jobs: vec![qd1_job(Pattern::Sequential, 0, ios)],
        precondition: false.into(),
    })
    .unwrap();
    let c = &host.costs;
    let m = &host.mmc;
    let cmd = host.bus.command_ns();
    // From the end of the data: the interrupt and the poller's wake-up, then rounds of
    // CMD13 (CPU, bus), interrupt and wake-up; after a busy answer a sleep of 2d and a
    // wake-up. The device is ready write_ns after the data.
    let mut t = c.irq_ns + c.wakeup_ns;
    let (mut d, mut polls) = (32_000u64, 0u64);
    loop {
        t += m.cmd13_ns + cmd;
        polls += 1;
        let busy = t < write_ns;
        t += c.irq_ns + c.wakeup_ns;
        if !busy {
            break;
        }
        t += 2 * d + c.wakeup_ns;
        d = (2 * d).min(32_768_000);
    }
    // 1 ms of busy: sleeps of 64, 128, 256 and 512 us, then the fifth CMD13 is ready.
    assert_eq!(polls, 5);
    let path = qd1_write_path(&host, t);
    let j = &res.jobs[0];
    assert_eq!(j.dirs[1].clat.min(), path);
    assert_eq!(j.dirs[1].clat.max(), path);
    assert_eq!(res.system.cmd13, polls * ios);
}

fn preset_system() -> (HostConfig, DeviceConfig) {
    let host = preset::load_host(HOST, "host", &[]).unwrap();
    let dev = preset::load_device(DEVICE, "device", &[]).unwrap();
    (host, dev)
}

fn mixed_jobs(n: usize) -> Vec<JobConfig> {
    (0..n)
        .map(|i| {
            let mut j = JobConfig::simple(
                "mix",
                if i % 2 == 0 {
                    Pattern::Random
                } else {
                    Pattern::Sequential
                },
                [100, 0, 70][i % 3],
                4096 << (i % 3),
                64 << 20,
            );
            j.io_limit = 8 << 20;
            j.seed = 1000 + i as u64;
            if i % 4 == 3 {
                j.submission = Submission::Async {
                    depth: 8,
                    batch_submit: 2,
                    batch_complete_min: 1,
                };
            }
            j
        })
        .collect()
}

#[test]
fn littles_law_holds_for_every_job() {
    let (host, dev) = preset_system();
    let res = run(SimConfig {
        driver: host.default_driver,
        host,
        device: dev,
        jobs: mixed_jobs(8),
        precondition: true.into(),
    })
    .unwrap();
    for j in &res.jobs {
        let rt = j.runtime_ns as f64;
        let mean_outstanding = j.outstanding_area as f64 / rt;
        let ios = (j.dirs[0].ios + j.dirs[1].ios) as f64;
        let lat_sum = (j.dirs[0].lat.sum() + j.dirs[1].lat.sum()) as f64;
        let iops = ios / rt;
        let mean_lat = lat_sum / ios;
        let little = iops * mean_lat;
        assert!(
            (mean_outstanding - little).abs() <= 0.01 * little,
            "job {}: outstanding {mean_outstanding} vs IOPS x latency {little}",
            j.job
        );
    }
}

#[test]
fn every_io_completes_once_and_runs_are_deterministic() {
    let (host, dev) = preset_system();
    let cfg = SimConfig {
        driver: host.default_driver,
        host,
        device: dev,
        jobs: mixed_jobs(6),
        precondition: true.into(),
    };
    let a = run(cfg.clone()).unwrap();
    for (j, c) in a.jobs.iter().zip(&cfg.jobs) {
        let bytes = j.dirs[0].bytes + j.dirs[1].bytes;
        assert_eq!(bytes, c.io_limit, "job {} moved exactly its io_size", j.job);
    }
    let b = run(cfg).unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

mod swarm {
    //! Swarm test: random small configurations; every run ends, every I/O completes
    //! exactly once (the simulator asserts it in `finish`), and each job moves exactly
    //! its io_size.
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn random_configurations_complete(
            njobs in 1usize..6,
            seed in 0u64..1000,
            bs_shift in 0u32..5,
            read_pct in prop::sample::select(vec![0u32, 30, 100]),
            random in any::<bool>(),
            depth in 1u32..16,
            async_engine in any::<bool>(),
            scheduler_none in any::<bool>(),
        ) {
            let (mut host, dev) = preset_system();
            if !scheduler_none {
                host.block.scheduler = flashpath_core::host::Scheduler::MqDeadline;
            }
            let jobs: Vec<JobConfig> = (0..njobs)
                .map(|i| {
                    let bs = 4096u64 << ((bs_shift + i as u32) % 5);
                    let mut j = JobConfig::simple(
                        "swarm",
                        if random { Pattern::Random } else { Pattern::Sequential },
                        read_pct,
                        bs,
                        8 << 20,
                    );
                    j.offset = (i as u64) << 22;
                    j.io_limit = 2 << 20;
                    j.seed = seed + i as u64;
                    if async_engine {
                        j.submission = Submission::Async { depth, batch_submit: 1 + depth / 4, batch_complete_min: 1 };
                    }
                    j
                })
                .collect();
            let res = run(SimConfig {
                driver: host.default_driver,
                host,
                device: dev,
                jobs: jobs.clone(),
                precondition: false.into(),
            })
            .unwrap();
            for (j, c) in res.jobs.iter().zip(&jobs) {
                prop_assert_eq!(j.dirs[0].bytes + j.dirs[1].bytes, c.io_limit);
            }
        }
    }
}
