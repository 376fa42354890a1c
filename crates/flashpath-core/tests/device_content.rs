//! Content tags through both FTLs (device/content.rs): random writes, trims and reads,
//! with the background drain and GC running between commands, always read back the
//! last tag written (or zeroes after a trim), from wherever the FTL put the data.
use flashpath_core::device::content::UNWRITTEN;
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Write { at: u64, len: u64 },
    Read { at: u64, len: u64 },
    Trim { at: u64, len: u64 },
    Flush,
}

fn ops(blocks: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        8 => (0..blocks, 1..16u64).prop_map(|(at, len)| Op::Write { at, len }),
        // A hot spot: overwrites that leave erase blocks partly valid.
        4 => (0..64u64, 1..4u64).prop_map(|(at, len)| Op::Write { at, len }),
        4 => (0..blocks, 1..16u64).prop_map(|(at, len)| Op::Read { at, len }),
        1 => (0..blocks, 1..32u64).prop_map(|(at, len)| Op::Trim { at, len }),
        1 => Just(Op::Flush),
    ];
    prop::collection::vec(op, 1500..2500)
}

/// Runs `ops` (in 4 KiB blocks) on a device with content tracked, checking every read
/// against a reference of the last write; `trim_unit`: the blocks a trim is rounded to
/// (whole AUs on the AU device). Returns the device's GC copies.
fn check(cfg: &DeviceConfig, ops: &[Op], trim_unit: u64) -> Result<u64, TestCaseError> {
    let blocks = cfg.capacity_bytes / 4096;
    let mut h = Harness::new(cfg, 1);
    h.dev.precondition(0, blocks * 8);
    h.dev.track_content();
    let mut reference = vec![UNWRITTEN; blocks as usize];
    let mut next = 1u32;
    for o in ops {
        match *o {
            Op::Write { at, len } => {
                let len = len.min(blocks - at);
                let tags: Vec<u32> = (0..len as u32).map(|i| next + i).collect();
                next += len as u32;
                let tag = h.next_tag();
                h.dev
                    .content_port()
                    .unwrap()
                    .stage_write(tag, at, tags.clone());
                h.next(DevOp::Write, at * 8, (len * 8) as u32);
                reference[at as usize..(at + len) as usize].copy_from_slice(&tags);
            }
            Op::Read { at, len } => {
                let len = len.min(blocks - at);
                let tag = h.next_tag();
                h.next(DevOp::Read, at * 8, (len * 8) as u32);
                let got = h.dev.content_port().unwrap().take_read(tag);
                prop_assert_eq!(
                    &got[..],
                    &reference[at as usize..(at + len) as usize],
                    "read of blocks {}..{}",
                    at,
                    at + len
                );
            }
            Op::Trim { at, len } => {
                let a = at / trim_unit * trim_unit;
                let e = ((at + len).div_ceil(trim_unit) * trim_unit).min(blocks);
                h.next(DevOp::Discard, a * 8, ((e - a) * 8) as u32);
                reference[a as usize..e as usize].fill(UNWRITTEN);
            }
            Op::Flush => {
                h.next(DevOp::Flush, 0, 0);
            }
        }
    }
    h.run_until_idle();
    // Everything, once the background work is over.
    for b in (0..blocks).step_by(16) {
        let tag = h.next_tag();
        let len = 16.min(blocks - b);
        h.next(DevOp::Read, b * 8, (len * 8) as u32);
        let got = h.dev.content_port().unwrap().take_read(tag);
        prop_assert_eq!(&got[..], &reference[b as usize..(b + len) as usize]);
    }
    Ok(h.dev.stats().gc_copies)
}

/// 16 MiB on 24 MiB of NAND: GC runs after a few thousand blocks written.
fn page_mapped() -> DeviceConfig {
    let mut cfg = DeviceConfig::small_test_device();
    cfg.nand_mut().unwrap().blocks_per_plane = 24;
    cfg.capacity_bytes = 16 << 20;
    cfg
}

/// 10 MiB of 512 KiB AUs, 2 open, with the small-write log.
fn allocation_unit() -> DeviceConfig {
    let text = r#"
name = "au-content"
kind = "device"
description = "small AU device"
interface = "sd"
[geometry]
capacity = "10MiB"
channels = 1
dies_per_channel = 2
planes_per_die = 2
page_size = "8KiB"
pages_per_block = 16
blocks_per_plane = 32
[nand]
t_read = "50us"
t_prog = "500us"
t_erase = "2ms"
channel_rate = "100MB/s"
[controller]
fw_per_command = "10us"
fw_per_4kib = "1us"
[ftl]
kind = "allocation-unit"
gc_copy = "controller"
[allocation_unit]
size = "512KiB"
open = 2
order = "linear"
fat_aus = 1
table_cache = 4
small_write_unit = "16KiB"
small_write_buffer = "512KiB"
"#;
    DeviceConfig::from_toml_str(text).expect("test preset")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn page_mapped_reads_return_the_last_write(ops in ops(4096)) {
        let gc = check(&page_mapped(), &ops, 1)?;
        prop_assert!(gc > 0, "GC copied data");
    }

    #[test]
    fn allocation_unit_reads_return_the_last_write(ops in ops(2560)) {
        let copies = check(&allocation_unit(), &ops, 128)?;
        prop_assert!(copies > 0, "AU closes and merges copied data");
    }
}

#[test]
fn ideal_device_reads_return_the_last_write() {
    let cfg = DeviceConfig::ideal(1 << 20, 1000);
    let mut h = Harness::new(&cfg, 1);
    h.dev.track_content();
    let tag = h.next_tag();
    h.dev
        .content_port()
        .unwrap()
        .stage_write(tag, 2, vec![7, 8]);
    h.next(DevOp::Write, 16, 16);
    let tag = h.next_tag();
    h.next(DevOp::Read, 8, 32);
    assert_eq!(
        h.dev.content_port().unwrap().take_read(tag),
        vec![0, 7, 8, 0]
    );
}

/// Content tracking off: no port, nothing kept.
#[test]
fn without_tracking_the_device_keeps_no_content() {
    let mut h = Harness::new(&page_mapped(), 1);
    assert!(h.dev.content_port().is_none());
    h.next(DevOp::Write, 0, 8);
    assert_eq!(h.dev.page_mapped().unwrap().content_blocks_held(), 0);
}
