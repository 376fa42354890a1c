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
