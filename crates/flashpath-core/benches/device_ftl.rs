//! The device's hot paths: the FTL mapping alone (4 KiB write with GC, L2P lookup) and
//! the whole device model per 4 KiB command (random read, random write with drain and
//! GC through the event queue). Criterion reports time per element.
//! (`cargo bench -p flashpath-core --bench device_ftl`; runs once in `cargo test`.)

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use flashpath_core::device::ftl::{PageMap, Stream};
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use flashpath_core::engine::SimRng;

const PRESET: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

/// A 4-die FTL: 2 GiB raw, 1.75 GiB user, 32 KiB rows, 4 MiB multi-plane blocks.
fn ftl() -> PageMap {
    // 4 dies × 128 blocks × 1024 slots (row 8 × 128 rows) × 4 KiB = 2 GiB raw.
    PageMap::new(458_752, 4, 128, 8, 128, 4)
}

fn gc_once(ftl: &mut PageMap, die: u32, buf: &mut [(u32, u32)]) {
    let victim = ftl.pick_victim(die).expect("a victim");
    for row in 0..ftl.rows_per_block() {
        let n = ftl.valid_in_row(victim, row, buf);
        for &(lpn, src) in &buf[..n] {
            let dst = ftl.alloc_slot(die, Stream::Gc).unwrap();
            ftl.relocate(lpn, src, dst);
        }
    }
    ftl.erase(victim);
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("device");
    g.throughput(Throughput::Elements(1));

    // Mapping only: random 4 KiB overwrites of a full FTL (GC included, amortised).
    let mut f = ftl();
    let user = f.user_lpns();
    let mut buf = vec![(0, 0); 8];
    for lpn in 0..user {
        let die = lpn % 4;
        while f.needs_gc(die) {
            gc_once(&mut f, die, &mut buf);
        }
        f.write_direct(die, lpn).unwrap();
    }
    let mut rng = SimRng::new(1, 0);
    let mut die = 0;
    g.bench_function("ftl_write_4k_random_with_gc", |b| {
        b.iter(|| {
            let lpn = rng.below(user as u64) as u32;
            die = (die + 1) % 4;
            while f.needs_gc(die) {
                gc_once(&mut f, die, &mut buf);
            }
            f.write_direct(die, lpn).unwrap()
        })
    });
    g.bench_function("ftl_lookup_4k_random", |b| {
        b.iter(|| black_box(f.get(rng.below(user as u64) as u32)))
    });

    // Whole device, QD1, 4 KiB random reads over 1 GiB of the preset (prefilled).
    let cfg = DeviceConfig::from_toml_str(PRESET).unwrap();
    let mut h = Harness::new(&cfg, 1);
    h.dev.precondition(0, 2 << 20);
    let lpns = (1u64 << 30) / 4096;
    g.bench_function("device_read_4k_random_1GiB", |b| {
        b.iter(|| h.next(DevOp::Read, rng.below(lpns) * 8, 8))
    });
    // Whole device, QD1, 4 KiB random writes over 1 GiB: buffer, drain, map updates,
    // GC, and the event queue of the harness.
    g.bench_function("device_write_4k_random_1GiB", |b| {
        b.iter(|| h.next(DevOp::Write, rng.below(lpns) * 8, 8))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
