//! Simulated I/Os per wall-clock second for the hot paths, on the shipped eMMC and
//! board presets: 4 KiB random reads, direct I/O, libaio at QD32 (mmc-legacy); and the
//! published hsq random-write job's shape, 20 psync threads of 4 KiB random writes on
//! mmc-hsq-v6 (its refused requests parked and rerun); and UFS HPB: 16 psync threads of
//! 4 KiB random reads over 4 GiB on ufs21-64g with ufs-hpb (the HPB iozone sweep's
//! shape: prep, HPB READ, hints, map loads); and the allocation-unit FTL: 4 psync threads
//! of 4 KiB random writes on the 2011 eMMC (small-write log, log cleaning with AU
//! merges). Criterion reports the time of
//! one run; I/Os per second = IOS / that time.
//! (`cargo bench -p flashpath-core --bench sim_randread`; runs once in `cargo test`.)

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashpath_core::config::preset;
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

fn config(ios: u64) -> SimConfig {
    let host = preset::load_host(HOST, "host", &[]).unwrap();
    let device = preset::load_device(DEVICE, "device", &[]).unwrap();
    let mut job = JobConfig::simple("bench", Pattern::Random, 100, 4096, 1 << 30);
    job.io_limit = 4096 * ios;
    job.submission = Submission::Async {
        depth: 32,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    SimConfig {
        driver: host.default_driver,
        host,
        device,
        jobs: vec![job],
        precondition: true.into(),
    }
}

/// 20 psync threads of 4 KiB random writes, `ios` in all, on mmc-hsq-v6, each over its
/// own 64 MiB.
fn hsq_config(ios: u64) -> SimConfig {
    let host = preset::load_host(HOST, "host", &[]).unwrap();
    let device = preset::load_device(DEVICE, "device", &[]).unwrap();
    let jobs = (0..20u64)
        .map(|i| {
            let mut j = JobConfig::simple("bench", Pattern::Random, 0, 4096, 64 << 20);
            j.offset = i * (64 << 20);
            j.io_limit = 4096 * (ios / 20);
            j.seed = 1 + i;
            j
        })
        .collect();
    SimConfig {
        driver: flashpath_core::host::DriverKind::parse("mmc-hsq-v6").unwrap(),
        host,
        device,
        jobs,
        // Mapped at once: no preconditioning writes in the measured time.
        precondition: flashpath_core::sim::Precondition::Sequential,
    }
}

/// 16 psync threads of 4 KiB random reads, `ios` in all, each over its own 256 MiB, on
/// ufs21-64g with ufs-hpb (device control mode).
fn hpb_config(ios: u64) -> SimConfig {
    let host = preset::load_host(
        include_str!("../../../presets/hosts/sd835-phone.toml"),
        "host",
        &[],
    )
    .unwrap();
    let device = preset::load_device(
        include_str!("../../../presets/devices/ufs21-64g.toml"),
        "device",
        &[],
    )
    .unwrap();
    let jobs = (0..16u64)
        .map(|i| {
            let mut j = JobConfig::simple("bench", Pattern::Random, 100, 4096, 256 << 20);
            j.offset = i * (256 << 20);
            j.io_limit = 4096 * (ios / 16);
            j.seed = 1 + i;
            j
        })
        .collect();
    SimConfig {
        driver: flashpath_core::host::DriverKind::parse("ufs-hpb").unwrap(),
        host,
        device,
        jobs,
        precondition: flashpath_core::sim::Precondition::Sequential,
    }
}

/// 4 psync threads of 4 KiB random writes, `ios` in all, each over its own 64 MiB, on
/// the 2011 eMMC's allocation-unit FTL (mmc-legacy): the small-write log and its
/// cleaning (every AU with data in it merged).
fn au_config(ios: u64) -> SimConfig {
    let host = preset::load_host(HOST, "host", &[]).unwrap();
    let device = preset::load_device(
        include_str!("../../../presets/devices/emmc441-2011-au-8g.toml"),
        "device",
        &[],
    )
    .unwrap();
    let jobs = (0..4u64)
        .map(|i| {
            let mut j = JobConfig::simple("bench", Pattern::Random, 0, 4096, 64 << 20);
            j.offset = i * (64 << 20);
            j.io_limit = 4096 * (ios / 4);
            j.seed = 1 + i;
            j
        })
        .collect();
    SimConfig {
        driver: flashpath_core::host::DriverKind::MmcLegacy,
        host,
        device,
        jobs,
        precondition: flashpath_core::sim::Precondition::Sequential,
    }
}

fn bench(c: &mut Criterion) {
    // In test mode (`cargo test --benches`) one small run keeps the bench from rotting.
    let ios: u64 = if std::env::args().any(|a| a == "--bench") {
        1_000_000
    } else {
        10_000
    };
    let cfg = config(ios);
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ios));
    g.bench_function("randread_4k_libaio_qd32", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let ios = ios / 5;
    let cfg = hsq_config(ios);
    g.throughput(Throughput::Elements(ios));
    g.bench_function("hsq_randwrite_4k_psync_20threads", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let ios = ios * 5 / 2;
    let cfg = hpb_config(ios);
    g.throughput(Throughput::Elements(ios));
    g.bench_function("ufs_hpb_randread_4k_psync_16threads", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let cfg = au_config(ios);
    g.throughput(Throughput::Elements(ios));
    g.bench_function("au_randwrite_4k_psync_4threads", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
