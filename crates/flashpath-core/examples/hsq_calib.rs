//! Runs the four hsq workloads (docs/published-results.md §1) on the shipped presets, straight through
//! the core: `cargo run --release -p flashpath-core --example hsq_calib [size_MiB] [--set k=v]...`.
use flashpath_core::config::preset;
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size_mib: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let sets: Vec<(String, String)> = args
        .iter()
        .filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let hs: Vec<_> = sets
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("host.").map(|k| (k.to_string(), v.clone())))
        .collect();
    let ds: Vec<_> = sets
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("device.")
                .map(|k| (k.to_string(), v.clone()))
        })
        .collect();
    let driver = args
        .iter()
        .find_map(|a| a.strip_prefix("--driver="))
        .map(|d| flashpath_core::host::DriverKind::parse(d).unwrap());
    let host = preset::load_host(
        include_str!("../../../presets/hosts/sprd-sc9863a.toml"),
        "host",
        &hs,
    )
    .unwrap();
    let dev = preset::load_device(
        include_str!("../../../presets/devices/emmc51-hs400-32g.toml"),
        "dev",
        &ds,
    )
    .unwrap();
    let hsq = driver.is_some_and(|d| d != flashpath_core::host::DriverKind::MmcLegacy);
    for (name, pat, rd, legacy, with_hsq) in [
        ("read", Pattern::Sequential, 100, 59.66, 60.68),
        ("randread", Pattern::Random, 100, 27.04, 31.36),
        ("write", Pattern::Sequential, 0, 69.68, 71.66),
        ("randwrite", Pattern::Random, 0, 35.96, 68.76),
    ] {
        let publ = if hsq { with_hsq } else { legacy };
        let jobs = (0..20)
            .map(|i| {
                let mut j = JobConfig::simple("test", pat, rd, 4096, 1 << 30);
                j.io_limit = size_mib << 20;
                j.seed = 0x1234 + i;
                j
            })
            .collect();
        let t = std::time::Instant::now();
        let res = run(SimConfig {
            host: host.clone(),
            device: dev.clone(),
            driver: driver.unwrap_or(host.default_driver),
            jobs,
            precondition: true.into(),
        })
        .unwrap();
        let bytes: u64 = res
            .jobs
            .iter()
            .map(|j| j.dirs[0].bytes + j.dirs[1].bytes)
            .sum();
        let end = res.jobs.iter().map(|j| j.end_ns).max().unwrap()
            - res.jobs.iter().map(|j| j.start_ns).min().unwrap();
        let mibs = bytes as f64 / (1 << 20) as f64 / (end as f64 / 1e9);
        let ios: u64 = res.jobs.iter().map(|j| j.dirs[0].ios + j.dirs[1].ios).sum();
        let lat: f64 = res
            .jobs
            .iter()
            .map(|j| j.dirs[0].clat.sum() as f64 + j.dirs[1].clat.sum() as f64)
            .sum::<f64>()
            / ios as f64;
        println!(
            "{name:10} {mibs:7.2} MiB/s (published {publ:6.2}, {:+5.1} %)  mean clat {:.0} us  reqs {} merges {} cmd13 {}  [{:.2} s wall, {:.2} M I/O/s]",
            (mibs / publ - 1.0) * 100.0,
            lat / 1000.0,
            res.system.requests,
            res.system.merges,
            res.system.cmd13,
            t.elapsed().as_secs_f64(),
            ios as f64 / t.elapsed().as_secs_f64() / 1e6
        );
        let sim = res.system.sim_end_ns as f64;
        let cores: Vec<String> = res
            .system
            .core_busy_ns
            .iter()
            .map(|&b| format!("{:.0}", b as f64 / sim * 100.0))
            .collect();
        println!(
            "           busy %: bus {:.0}, cores [{}]",
            res.system.bus_busy_ns as f64 / sim * 100.0,
            cores.join(" ")
        );
        let d = &res.system.device;
        println!(
            "           device: read slots {} page-reg hits {} nand reads {} map miss {} buf hits {}",
            d.host_read_slots, d.page_register_hits, d.nand_page_reads, d.map_misses, d.buffer_read_hits
        );
    }
}
