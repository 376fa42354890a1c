//! Memory grows with the data touched, not the capacity: building a 256 GiB device
//! allocates about as little as a 32 GiB one (per-block arrays only); a sequential
//! precondition of a terabyte costs no map; data written costs the L2P's 4 bytes per
//! page and a bounded reverse map (the rest of it goes to the scratch file).
use flashpath_core::device::{Device, DeviceConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
/// Bytes allocated so far (never decreases).
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
/// Bytes live now.
static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(l.size(), Ordering::Relaxed);
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
}

/// The tests here measure the process's allocations: one at a time.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
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

/// The UFS 4.0 preset at 1 TB: 16 dies of 512 Gbit.
fn terabyte() -> DeviceConfig {
    let text = include_str!("../../../presets/devices/ufs40-512g.toml")
        .replace(
            "capacity = \"511101108224B\"",
            "capacity = \"1022202216448B\"",
        )
        .replace("dies_per_channel = 2", "dies_per_channel = 4");
    let cfg = DeviceConfig::from_toml_str(&text).unwrap();
    assert_eq!(cfg.capacity_bytes, 1_022_202_216_448);
    cfg
}

#[test]
fn a_sequential_fill_of_a_terabyte_costs_no_map() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = terabyte();
    let mut d = Device::new(&cfg, 1);
    let before = LIVE.load(Ordering::Relaxed);
    d.precondition(0, cfg.capacity_bytes / 512);
    let used = LIVE.load(Ordering::Relaxed) - before;
    eprintln!("1 TB sequential precondition: {used} bytes");
    // Only the reverse maps of the 16 dies' partly filled last blocks (135 KiB each);
    // a map of entries would be 1 GiB of L2P and 1 GiB of reverse map.
    assert!(used < 3 << 20, "{used} bytes");
    let pm = d.page_mapped().unwrap();
    assert_eq!(pm.page_map().l2p_entries(), 0);
    assert!(pm.page_map().touched_blocks() <= 16);
}

#[test]
fn written_pages_cost_the_l2p_and_a_bounded_reverse_map() {
    use flashpath_core::device::ftl::PageMap;
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // A 32 GiB-class geometry: 4 dies of 1048 blocks of 256 rows of 8 slots (32 GiB
    // raw), 29 GiB of user data.
    let user = 7_634_896;
    // Every LPN once, in a scattered order (a full random precondition).
    let order: Vec<u32> = (0..user as u64)
        .map(|i| (i * 2_654_435_761 % user as u64) as u32)
        .collect();
    let before = LIVE.load(Ordering::Relaxed);
    let mut m = PageMap::new(user, 4, 1048, 8, 256, 4);
    for (i, &lpn) in order.iter().enumerate() {
        m.write_direct(i as u32 % 4, lpn).expect("room");
    }
    let used = LIVE.load(Ordering::Relaxed) - before;
    let l2p = m.l2p_bytes();
    eprintln!(
        "{user} pages written: {used} bytes, {:.2} per page; the L2P {l2p} bytes, {:.4} per page; {} blocks' reverse maps in the file",
        used as f64 / user as f64,
        l2p as f64 / user as f64,
        m.moved_blocks()
    );
    // The L2P: its 117 regions are dense, each 4 bytes per LPN and 672 bytes (its
    // directory entry and its own 664); the 117th holds 32,720 LPNs, in 32 pieces of 4
    // KiB. Besides, the room a table is rebuilt in: the largest one's 12,289 entries
    // of 8 bytes (device/l2p.rs).
    assert_eq!(
        l2p,
        116 * (256 << 10) + 32 * 4096 + 117 * (8 + 664) + 12_289 * 8,
        "the L2P's bytes"
    );
    assert!(l2p as f64 / user as f64 <= 4.025);
    // The reverse map: 16 MiB of closed blocks and the 4 open ones (8 KiB each); the
    // per-block arrays (valid and erase counts, states, the reverse map's index): under
    // 64 bytes for each of the 4,192 blocks.
    assert!(
        used <= l2p + (16 << 20) + 4 * 8 * 1024 + 4192 * 64,
        "{used} bytes"
    );
    assert!(
        m.moved_blocks() > 1500,
        "the rest of the reverse map is in the file"
    );
    m.check_invariants();
}

/// Writes scattered over a terabyte cost the L2P a few bytes per page written, not
/// per page of the device: 1 M random 4 KiB pages over a sequentially filled 1 TiB
/// of LPNs (4,096 regions of 256 MiB, about 256 pages each).
#[test]
fn scattered_writes_cost_a_few_bytes_per_page_written() {
    use flashpath_core::device::ftl::PageMap;
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let user: u32 = 1 << 28;
    // 16 dies of 1,460 blocks of 768 rows of 16 slots: 7 % more slots than LPNs.
    let mut m = PageMap::new(user, 16, 1460, 16, 768, 4);
    m.map_sequential(0, user, 0).expect("a fresh map");
    assert_eq!(m.l2p_bytes(), 4096 * 8, "a directory, and no entry");
    let mut x = 1u64;
    let mut written = std::collections::HashSet::new();
    for i in 0..1_000_000u32 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let lpn = ((x >> 33) % user as u64) as u32;
        m.write_direct(i % 16, lpn).expect("room");
        written.insert(lpn);
    }
    let l2p = m.l2p_bytes();
    let per_page = l2p as f64 / written.len() as f64;
    eprintln!(
        "{} pages written over 2^28: the L2P {l2p} bytes, {per_page:.1} per page",
        written.len()
    );
    assert_eq!(m.l2p_entries(), written.len());
    // A table costs 8 bytes a bucket, three quarters full at most and above three
    // eighths after it doubles: at most 21.4 bytes per entry, with its region's 672
    // bytes. A chunk of 64 entries per page written would cost 256 bytes.
    assert!(
        l2p <= (written.len() as f64 * 64.0 / 3.0) as usize + 4096 * (8 + 664),
        "{l2p} bytes"
    );
    assert!(per_page < 24.0, "{per_page:.1} bytes per page");
}
