//! Memory grows with the data touched, not the capacity: building a 256 GiB device
//! allocates about as little as a 32 GiB one (per-block arrays only).
use flashpath_core::device::{Device, DeviceConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(l.size(), Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static A: Counting = Counting;

const PRESET: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

fn bytes_to_build(cfg: &DeviceConfig) -> usize {
    let before = ALLOCATED.load(Ordering::Relaxed);
    let d = Device::new(cfg, 1);
    let used = ALLOCATED.load(Ordering::Relaxed) - before;
    drop(d);
    used
}

#[test]
fn building_grows_with_blocks_not_with_capacity() {
    let small = DeviceConfig::from_toml_str(PRESET).unwrap();
    // The same device with 8× the blocks and capacity: 256 GiB-class.
    let big_text = PRESET
        .replace("blocks_per_plane = 1048", "blocks_per_plane = 8384")
        .replace(
            "capacity = \"31268536320B\"",
            "capacity = \"250148290560B\"",
        );
    let big = DeviceConfig::from_toml_str(&big_text).unwrap();
    assert_eq!(big.capacity_bytes, 8 * small.capacity_bytes);
    let s = bytes_to_build(&small);
    let b = bytes_to_build(&big);
    eprintln!("32 GiB: {s} bytes, 256 GiB: {b} bytes");
    // A flat L2P would be 4 B per 4 KiB: 29 MiB and 233 MiB.
    assert!(s < 2 << 20, "32 GiB device allocated {s} bytes");
    assert!(b < 4 << 20, "256 GiB device allocated {b} bytes");
}
