//! The SDMA bounce buffer (`mmc.bounce_buffer`, Linux <= 4.14 mmc_queue_bounce_pre/post):
//! a write's data is copied into the buffer during the request's prep, before the
//! command goes out; a read's is copied out after the transfer, before the request
//! ends. On a host whose only software cost is that copy, one thread doing one request
//! at a time sees it exactly in its request-pre (writes) or request-post (reads), and
//! nowhere else.

use flashpath_core::config::preset::load_host;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig, MemoryConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::stats::{RunResult, Span};
use flashpath_core::workload::{JobConfig, Pattern};

const BS: u64 = 64 << 10;
const HW: u64 = 200_000;
/// 64 KiB at 655.36 MB/s is exactly 100 us.
const COPY_RATE: u64 = 655_360_000;
const COPY_NS: u64 = 100_000;

fn host(bounce: bool, driver: &str) -> HostConfig {
    let mut h = HostConfig::ideal(1);
    h.bus.data_bytes_per_s = u64::MAX / 4;
    h.bus.clock_hz = u64::MAX / 4;
    h.block.max_request_bytes = BS;
    h.mmc.bounce_bytes = bounce.then_some(BS);
    if driver == "mmc-cqe" {
        h.cqe = Some(flashpath_core::host::CqeHostConfig {
            dcmd: true,
            request_ns: 0,
            sqs_idle_ns: 1_000,
            sqs_block_counter: 1,
            halt_ns: None,
        });
    }
    h.memory = Some(MemoryConfig {
        size_bytes: 1 << 30,
        cache_bytes: 256 << 20,
        dirty_background_ratio: 10,
        dirty_ratio: 20,
        dirty_expire_ns: 30_000_000_000,
        dirty_writeback_interval_ns: 5_000_000_000,
        copy_bytes_per_s: COPY_RATE,
        page_op_ns: 0,
        write_page_op_ns: 0,
        writeback_page_op_ns: 0,
        read_ahead_kb: 128,
    });
    h
}

fn sim(bounce: bool, read_pct: u32, driver: &str) -> RunResult {
    let j = JobConfig::simple("t", Pattern::Random, read_pct, BS, 16 << 20);
    run(SimConfig {
        host: host(bounce, driver),
        device: DeviceConfig::ideal(1 << 30, HW),
        driver: DriverKind::parse(driver).unwrap(),
        jobs: vec![j],
        precondition: false.into(),
    })
    .unwrap()
}

fn mean(r: &RunResult, s: Span) -> f64 {
    let h = r.jobs[0].spans.get(s);
    h.sum() as f64 / h.count() as f64
}

#[test]
fn a_write_copies_into_the_bounce_buffer_in_pre_a_read_out_of_it_in_post() {
    for driver in ["mmc-legacy", "mmc-cqe"] {
        for (read_pct, copied, untouched) in
            [(0, Span::Pre, Span::Post), (100, Span::Post, Span::Pre)]
        {
            let plain = sim(false, read_pct, driver);
            let bounced = sim(true, read_pct, driver);
            let what = format!("{driver}, {read_pct} % reads");
            assert_eq!(
                mean(&bounced, copied) - mean(&plain, copied),
                COPY_NS as f64,
                "{what}: the copy of 64 KiB lands in {copied:?}"
            );
            assert_eq!(
                mean(&bounced, untouched),
                mean(&plain, untouched),
                "{what}: {untouched:?} does not change"
            );
            // The CQE's queue-status polling runs on its own timer, so the phase of a
            // request against it moves by a few ns when the host's timing changes.
            assert!(
                (mean(&bounced, Span::Hw) - mean(&plain, Span::Hw)).abs() < 10.0,
                "{what}: the transfer does not change"
            );
        }
    }
}

#[test]
fn requests_larger_than_the_bounce_buffer_are_refused_by_the_preset() {
    let text = include_str!("../../../presets/hosts/cortex-a9-sdma.toml");
    load_host(text, "a9.toml", &[]).expect("the shipped preset loads");
    let set = [("block.max_sectors_kb".to_string(), "128".to_string())];
    let msg = load_host(text, "a9.toml", &set).unwrap_err().to_string();
    assert!(
        msg.contains("block.max_sectors_kb") && msg.contains("bounce"),
        "{msg}"
    );
}
