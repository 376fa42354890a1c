//! The shipped device presets load and validate.
use flashpath_core::device::DeviceConfig;

#[test]
fn emmc51_preset_loads() {
    let text = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
    let cfg = DeviceConfig::from_toml_str(text).expect("preset validates");
    assert_eq!(cfg.capacity_bytes, 31_268_536_320);
    let n = cfg.nand().unwrap();
    assert_eq!(n.dies(), 4);
    assert!(n.raw_bytes() > cfg.capacity_bytes);
}
