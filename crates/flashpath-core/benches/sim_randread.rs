//! Simulated I/Os per wall-clock second for the hot paths beyond `sim_speed`'s, on the
//! shipped presets: the published hsq random-write job's shape, 20 psync threads of
//! 4 KiB random writes on mmc-hsq-v6 (its refused requests parked and rerun); UFS HPB:
//! 16 psync threads of 4 KiB random reads over 4 GiB on ufs21-64g with ufs-hpb (the HPB
//! iozone sweep's shape: prep, HPB READ, hints, map loads); and the allocation-unit FTL:
//! 4 psync threads of 4 KiB random writes on the 2011 eMMC (small-write log, log
//! cleaning with AU merges); and buffered I/O through the page cache on the 32 GB eMMC
//! with the SC9863A phone's 1 GiB cache: one psync thread reading 2 GiB in order in
//! 128 KiB reads (readahead; the cache fills, then each new page evicts the oldest), and
//! one reading 4 KiB at random over 4 GiB (a page cache lookup, a miss, a fill and an
//! eviction each). Each starts with `--precondition sequential`. Criterion reports the
//! time of one run; I/Os (pages, for the sequential read) per second = their count /
//! that time.
//! (`cargo bench -p flashpath-core --bench sim_randread`; runs once in `cargo test`.)
//! The eMMC's libaio QD32 random reads are `sim_speed`'s `emmc_randread_4k_qd32`.

mod common;

use common::{device, host, psync_threads};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern};

const EMMC_HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

/// 20 psync threads of 4 KiB random writes, `ios` in all, on mmc-hsq-v6, each over its
/// own 64 MiB.
fn hsq_config(ios: u64) -> SimConfig {
    SimConfig {
        driver: DriverKind::parse("mmc-hsq-v6").unwrap(),
        host: host(EMMC_HOST),
        device: device(
            include_str!("../../../presets/devices/emmc51-hs400-32g.toml"),
            &[],
        ),
        jobs: psync_threads(20, 0, 64 << 20, ios),
        precondition: Precondition::Sequential,
    }
}

/// 16 psync threads of 4 KiB random reads, `ios` in all, each over its own 256 MiB, on
/// ufs21-64g with ufs-hpb (device control mode).
fn hpb_config(ios: u64) -> SimConfig {
    SimConfig {
        driver: DriverKind::parse("ufs-hpb").unwrap(),
        host: host(include_str!("../../../presets/hosts/sd835-phone.toml")),
        device: device(include_str!("../../../presets/devices/ufs21-64g.toml"), &[]),
        jobs: psync_threads(16, 100, 256 << 20, ios),
        precondition: Precondition::Sequential,
    }
}

/// 4 psync threads of 4 KiB random writes, `ios` in all, each over its own 64 MiB, on
/// the 2011 eMMC's allocation-unit FTL (mmc-legacy): the small-write log and its
/// cleaning (every AU with data in it merged).
fn au_config(ios: u64) -> SimConfig {
    SimConfig {
        driver: DriverKind::MmcLegacy,
        host: host(EMMC_HOST),
        device: device(
            include_str!("../../../presets/devices/emmc441-2011-au-8g.toml"),
            &[],
        ),
        jobs: psync_threads(4, 0, 64 << 20, ios),
        precondition: Precondition::Sequential,
    }
}

/// One psync thread of buffered reads (`pattern`, `bs` bytes each) over `span` bytes,
/// `bytes` in all, on the 32 GB eMMC with sprd-sc9863a's 1 GiB page cache.
fn buffered_config(pattern: Pattern, bs: u64, span: u64, bytes: u64) -> SimConfig {
    let mut job = JobConfig::simple("bench", pattern, 100, bs, span);
    job.direct = false;
    job.io_limit = bytes;
    SimConfig {
        driver: DriverKind::MmcLegacy,
        host: host(EMMC_HOST),
        device: device(
            include_str!("../../../presets/devices/emmc51-hs400-32g.toml"),
            &[],
        ),
        jobs: vec![job],
        precondition: Precondition::Sequential,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    let ios = common::ios() / 5;
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
    // 2 GiB under `cargo bench` (2 × the cache: half the pages evict one).
    let pages = common::ios() / 2;
    let cfg = buffered_config(Pattern::Sequential, 128 << 10, 2 << 30, pages * 4096);
    g.throughput(Throughput::Elements(pages));
    g.bench_function("buffered_seqread_128k_psync_pages", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let ios = common::ios() / 5;
    let cfg = buffered_config(Pattern::Random, 4096, 4 << 30, ios * 4096);
    g.throughput(Throughput::Elements(ios));
    g.bench_function("buffered_randread_4k_psync", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
