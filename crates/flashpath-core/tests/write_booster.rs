//! UFS WriteBooster (device/write_booster.rs, device/write_booster_flush.rs,
//! driver/ufs/write_booster.rs, driver/ufs/auto_hibern8.rs) on the UFS 3.1 preset with
//! its buffer cut to 64 MiB: the buffer takes exactly its capacity of a sustained
//! write and the rest goes to TLC at TLC speed (the burst-then-TLC curve, in the time
//! arithmetic of the two rates);
//! an idle gap flushes it, explicitly after the device's idle delay or in hibern8 after
//! the host's auto-hibern8 timer, and not when the host leaves the flags off or the gap
//! is shorter than the timer; a kernel without WriteBooster leaves the buffer unused.

mod common;

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/ufs31-512g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sm8650-phone.toml");
const MIB: u64 = 1 << 20;
/// The test's buffer: 64 MiB (16384 slots of 4 KiB).
const WB: u64 = 64 * MIB;

fn system() -> (HostConfig, DeviceConfig) {
    let (host, mut dev) = common::system(HOST, DEVICE);
    dev.write_booster.as_mut().unwrap().size_bytes = WB;
    (host, dev)
}

/// A sequential write of `size` bytes in 512 KiB blocks at QD8, thinking `think_ns`
/// after every `every` blocks.
fn writer(size: u64, think_ns: u64, every: u32) -> JobConfig {
    let mut j = JobConfig::simple("w", Pattern::Sequential, 0, 512 * 1024, size);
    j.submission = Submission::Async {
        depth: 8,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j.thinktime_ns = think_ns;
    j.thinktime_blocks = every;
    j
}

fn run_on((host, device): (HostConfig, DeviceConfig), job: JobConfig) -> RunResult {
    run(SimConfig {
        host,
        device,
        driver: DriverKind::Ufs,
        jobs: vec![job],
        precondition: Precondition::Sequential,
    })
    .unwrap()
}

fn seconds(r: &RunResult) -> f64 {
    r.jobs[0].runtime_ns as f64 / 1e9
}

#[test]
fn a_sustained_write_fills_the_buffer_then_goes_to_tlc_at_tlc_speed() {
    let size = 256 * MIB;
    let r = run_on(system(), writer(size, 0, 1));
    let w = r.system.device.wb;
    // Capacity arithmetic: the buffer takes exactly its 16384 slots (whole rows), the
    // rest of the 65536 goes to TLC; nothing is flushed while the writes run.
    assert_eq!(w.slc_slots, WB / 4096);
    assert_eq!(w.tlc_slots, (size - WB) / 4096);
    assert_eq!(w.used_peak_slots, WB / 4096);
    // The two rates, each from a run that stays on one side.
    let burst = run_on(system(), writer(WB, 0, 1));
    assert_eq!(burst.system.device.wb.tlc_slots, 0);
    let mut off = system();
    off.0.ufs.as_mut().unwrap().wb.on = false;
    let tlc = run_on(off, writer(size, 0, 1));
    assert_eq!(
        tlc.system.device.wb,
        Default::default(),
        "WriteBooster off: unused"
    );
    let slc_rate = WB as f64 / seconds(&burst);
    let tlc_rate = size as f64 / seconds(&tlc);
    assert!(
        slc_rate > 2.5 * tlc_rate,
        "the buffer writes faster than TLC: {slc_rate:.3e} vs {tlc_rate:.3e} B/s"
    );
    // The curve: the burst at the buffer's rate, then TLC's rate for the rest.
    let expected = WB as f64 / slc_rate + (size - WB) as f64 / tlc_rate;
    let got = seconds(&r);
    assert!(
        (got - expected).abs() / expected < 0.05,
        "burst then TLC: {got:.4} s, the two rates give {expected:.4} s"
    );
}

/// Two bursts of 48 MiB (together more than the 64 MiB buffer) with `gap_ns` of idle
/// between them, on a host whose driver sets the flush flags as given.
fn two_bursts(gap_ns: u64, explicit: bool, hibern8: bool) -> RunResult {
    let (mut host, dev) = system();
    let wb = &mut host.ufs.as_mut().unwrap().wb;
    wb.buf_flush = explicit;
    wb.flush_during_h8 = hibern8;
    // 96 blocks of 512 KiB per burst.
    run_on((host, dev), writer(96 * MIB, gap_ns, 96))
}

#[test]
fn an_idle_gap_flushes_the_buffer_explicitly_or_in_hibern8() {
    let overflow = 32 * MIB / 4096;
    // No flush allowed: the second burst overflows the buffer by 32 MiB.
    let none = two_bursts(500_000_000, false, false).system.device.wb;
    assert_eq!((none.tlc_slots, none.flushed_slots), (overflow, 0));
    // Explicit flush (fWriteBoosterBufferFlushEn): idle 10 ms (the preset's delay), then
    // the first burst is moved out and the second fits.
    let explicit = two_bursts(500_000_000, true, false).system.device.wb;
    assert_eq!(explicit.tlc_slots, 0);
    assert!(explicit.flushed_slots >= 48 * MIB / 4096);
    // Hibern8 only: the host's auto-hibern8 (150 ms) puts the link in hibern8 during a
    // 500 ms gap, and the device flushes there.
    let h8 = two_bursts(500_000_000, false, true).system.device.wb;
    assert_eq!(h8.tlc_slots, 0);
    assert!(h8.flushed_slots >= 48 * MIB / 4096);
    // A 100 ms gap is shorter than the auto-hibern8 timer: no hibern8, no flush.
    let short = two_bursts(100_000_000, false, true).system.device.wb;
    assert_eq!((short.tlc_slots, short.flushed_slots), (overflow, 0));
}

#[test]
fn a_kernel_without_writebooster_support_leaves_the_buffer_off() {
    let (_, dev) = system();
    // Linux 5.4 predates ufshcd's WriteBooster (5.8): the flags stay at their power-on 0.
    let raw = HOST.replace("kernel = \"6.1\"", "kernel = \"5.4\"");
    let host = flashpath_core::config::preset::load_host(&raw, "host", &[]).unwrap();
    assert!(!host.ufs.as_ref().unwrap().wb.on);
    let r = run_on((host, dev), writer(96 * MIB, 0, 1));
    assert_eq!(r.system.device.wb, Default::default());
    // Asking for it on such a kernel is an error naming the field.
    let bad = HOST
        .replace("kernel = \"6.1\"", "kernel = \"5.4\"")
        .replace("[ufs]\n", "[ufs]\nwb_on = true\n");
    let e = flashpath_core::config::preset::load_host(&bad, "host", &[]).unwrap_err();
    assert!(e.to_string().contains("ufs.wb_on"), "{e}");
    assert!(e.to_string().contains("5.8"), "{e}");
}
