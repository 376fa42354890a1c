//! Speed and scale (issue 32): simulated 4 KiB I/Os per wall-clock second, one core,
//! on the device a run starts with `--precondition sequential` (its layout is a formula:
//! no preconditioning writes are timed).
//! - `emmc_randread_4k_qd32`, `emmc_randwrite_4k_qd32`: the 32 GB eMMC preset on its
//!   board (sprd-sc9863a, mmc-legacy), libaio QD32 over 1 GiB (target: 2 M/s);
//! - `ufs40_1tb_randread_4k_qd32`: the UFS 4.0 preset at 1 TB (16 dies, `--set` as in
//!   docs/performance.md) on sm8650-phone with the ufs driver, over the whole device
//!   (target: 1 M/s);
//! - `ufs40_1tb_randwrite_4k_qd32`: random writes on the same, each one a page of its
//!   own in a region of the L2P written in part (its sparse tables: device/l2p.rs);
//! - `precondition_sequential_1tb`: building that 1 TB simulation, preconditioned
//!   (target: under 50 ms).
//!
//! Criterion reports the time of one run; I/Os per second = IOS / that time (the
//! throughput line). (`cargo bench -p flashpath-core --bench sim_speed`; in
//! `cargo test` each runs once, small.)

mod common;

use common::{device, host, qd32};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashpath_core::sim::{run, Precondition, Sim, SimConfig};

fn emmc(read_pct: u32, ios: u64) -> SimConfig {
    let host = host(include_str!("../../../presets/hosts/sprd-sc9863a.toml"));
    let device = device(
        include_str!("../../../presets/devices/emmc51-hs400-32g.toml"),
        &[],
    );
    SimConfig {
        driver: host.default_driver,
        host,
        device,
        jobs: vec![qd32(read_pct, 1 << 30, ios)],
        precondition: Precondition::Sequential,
    }
}

/// The UFS 4.0 preset with twice its dies and capacity: a 1 TB part.
fn ufs40_1tb(read_pct: u32, ios: u64) -> SimConfig {
    let host = host(include_str!("../../../presets/hosts/sm8650-phone.toml"));
    let device = device(
        include_str!("../../../presets/devices/ufs40-512g.toml"),
        &[
            ("geometry.capacity", "1022202216448B"),
            ("geometry.dies_per_channel", "4"),
        ],
    );
    let size = device.capacity_bytes;
    SimConfig {
        driver: host.default_driver,
        host,
        device,
        jobs: vec![qd32(read_pct, size, ios)],
        precondition: Precondition::Sequential,
    }
}

fn bench(c: &mut Criterion) {
    let ios = common::ios();
    let mut g = c.benchmark_group("speed");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ios));
    let cfg = emmc(100, ios);
    g.bench_function("emmc_randread_4k_qd32", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let cfg = emmc(0, ios);
    g.bench_function("emmc_randwrite_4k_qd32", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let cfg = ufs40_1tb(100, ios);
    g.bench_function("ufs40_1tb_randread_4k_qd32", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    let cfg = ufs40_1tb(0, ios);
    g.bench_function("ufs40_1tb_randwrite_4k_qd32", |b| {
        b.iter(|| run(cfg.clone()).unwrap())
    });
    g.throughput(Throughput::Elements(1));
    let cfg = ufs40_1tb(100, ios);
    g.bench_function("precondition_sequential_1tb", |b| {
        b.iter(|| Sim::new(cfg.clone()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
