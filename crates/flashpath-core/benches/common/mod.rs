//! What the simulation benches share: presets loaded from their TOML text (read in with
//! `include_str!` at the bench, so a bench needs no files at run time), the jobs'
//! shapes, and the run length.

#![allow(dead_code)] // each bench uses part of it

use flashpath_core::config::preset;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::HostConfig;
use flashpath_core::workload::{JobConfig, Pattern, Submission};

/// I/Os per run: 1 M under `cargo bench`; in `cargo test --benches` one small run
/// keeps each bench from rotting.
pub fn ios() -> u64 {
    if std::env::args().any(|a| a == "--bench") {
        1_000_000
    } else {
        10_000
    }
}

/// The host preset of TOML text `toml`.
pub fn host(toml: &str) -> HostConfig {
    preset::load_host(toml, "host", &[]).unwrap()
}

/// The device preset of TOML text `toml`, with `sets` (`--set` key, value) applied.
pub fn device(toml: &str, sets: &[(&str, &str)]) -> DeviceConfig {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|&(k, v)| (k.to_string(), v.to_string()))
        .collect();
    preset::load_device(toml, "device", &sets).unwrap()
}

/// One libaio job at QD32 of `ios` 4 KiB random I/Os (`read_pct` % reads) over `size`
/// bytes.
pub fn qd32(read_pct: u32, size: u64, ios: u64) -> JobConfig {
    let mut job = JobConfig::simple("bench", Pattern::Random, read_pct, 4096, size);
    job.io_limit = 4096 * ios;
    job.submission = Submission::Async {
        depth: 32,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    job
}

/// `n` psync threads of 4 KiB random I/Os (`read_pct` % reads), `ios` in all, each over
/// its own `span` bytes, seeded 1..=n.
pub fn psync_threads(n: u64, read_pct: u32, span: u64, ios: u64) -> Vec<JobConfig> {
    (0..n)
        .map(|i| {
            let mut j = JobConfig::simple("bench", Pattern::Random, read_pct, 4096, span);
            j.offset = i * span;
            j.io_limit = 4096 * (ios / n);
            j.seed = 1 + i;
            j
        })
        .collect()
}
