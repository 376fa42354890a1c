//! End-to-end runs of the preset device through the harness.
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DevStatus, DeviceConfig};

fn preset() -> DeviceConfig {
    DeviceConfig::from_toml_str(include_str!(
        "../../../presets/devices/emmc51-hs400-32g.toml"
    ))
    .unwrap()
}

#[test]
fn preset_write_then_read_qd1() {
    let mut h = Harness::new(&preset(), 1);
    let mut t_write = 0;
    for i in 0..4096u64 {
        let c = h.next(DevOp::Write, i * 8, 8);
        assert_eq!(c.status, DevStatus::Ok);
        t_write += c.done - c.issued;
    }
    let c = h.next(DevOp::Flush, 0, 0);
    assert_eq!(c.status, DevStatus::Ok);
    h.run_until_idle();
    let mut t_read = 0;
    for i in 0..4096u64 {
        let c = h.next(DevOp::Read, ((i * 7919) % 4096) * 8, 8);
        t_read += c.done - c.issued;
    }
    let s = h.dev.stats().clone();
    eprintln!(
        "avg write {} ns, avg read {} ns, {s:?}",
        t_write / 4096,
        t_read / 4096
    );
    assert_eq!(s.host_write_slots, 4096);
    assert_eq!(s.host_slots_programmed, 4096);
}

/// Same commands, same seed: the same completions, to the nanosecond.
#[test]
fn runs_are_deterministic() {
    let run = || {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().blocks_per_plane = 24;
        cfg.capacity_bytes = 16 << 20;
        let mut h = Harness::new(&cfg, 7);
        let mut x = 12345u64;
        let mut trace = Vec::new();
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lpn = (x >> 33) % 4096;
            let op = if i % 3 == 0 {
                DevOp::Read
            } else {
                DevOp::Write
            };
            let c = h.next(op, lpn * 8, 8);
            trace.push((c.first, c.done));
        }
        (trace, h.dev.stats().clone())
    };
    let (a, sa) = run();
    let (b, sb) = run();
    assert_eq!(sa, sb);
    assert!(a == b);
    assert!(sa.gc_copies > 0 && sa.erases > 0);
}
