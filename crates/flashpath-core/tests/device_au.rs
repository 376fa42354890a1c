//! The allocation-unit FTL (device/allocation_unit.rs): property tests against a
//! reference map (a read returns the last write; closing or merging an AU never loses or
//! duplicates data; every physical AU has exactly one role), and analytic tests of the
//! mechanisms flashbench exposes (read boundary costs, open-AU limit, GC stall, small
//! writes, FAT area, trims), in exact arithmetic on a small device.
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use proptest::prelude::*;

/// 2 dies on one channel, 2 planes of 8 KiB pages (16 KiB units), 16 pages per block:
/// 512 KiB AUs (one 256 KiB multi-plane block per die), 40 logical AUs of 64 raw.
fn small(order: &str, open: u32, fat: u32, small_write: bool, table_cache: u32) -> DeviceConfig {
    small_dies(2, order, open, fat, small_write, table_cache)
}

/// `small` with 1 or 2 dies (1 die: 32 pages per block, the same 512 KiB AU).
fn small_dies(
    dies: u32,
    order: &str,
    open: u32,
    fat: u32,
    small_write: bool,
    table_cache: u32,
) -> DeviceConfig {
    let pages = 32 / dies;
    let sw = if small_write {
        "small_write_unit = \"16KiB\"\nsmall_write_buffer = \"512KiB\"\n"
    } else {
        ""
    };
    let text = format!(
        r#"
name = "au-test"
kind = "device"
description = "small AU device"
interface = "emmc"
[geometry]
capacity = "20MiB"
channels = 1
dies_per_channel = {dies}
planes_per_die = 2
page_size = "8KiB"
pages_per_block = {pages}
blocks_per_plane = 64
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
open = {open}
order = "{order}"
fat_aus = {fat}
table_cache = {table_cache}
{sw}"#
    );
    DeviceConfig::from_toml_str(&text).expect("test preset")
}

const AU_SECTORS: u64 = 1024; // 512 KiB
const SLOTS: u64 = 20 * 256; // 20 MiB in 4 KiB slots

#[derive(Clone, Debug)]
enum Op {
    /// Write `len` slots at slot `at` (clamped to the device).
    Write {
        at: u64,
        len: u64,
        fua: bool,
    },
    /// A write inside one of a few AUs (open-AU churn, backwards writes).
    Hot {
        au: u64,
        off: u64,
        len: u64,
    },
    Flush,
    /// Discard a whole AU.
    TrimAu(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SLOTS, 1..40u64, any::<bool>()).prop_map(|(at, len, fua)| Op::Write { at, len, fua: fua && len % 3 == 0 }),
        6 => (0..5u64, 0..128u64, 1..12u64).prop_map(|(au, off, len)| Op::Hot { au, off, len }),
        1 => Just(Op::Flush),
        1 => (0..40u64).prop_map(Op::TrimAu),
    ]
}

fn check_device(cfg: &DeviceConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(cfg, 1);
    h.dev.allocation_unit_mut().unwrap().track_content();
    let mut reference = vec![0u32; SLOTS as usize];
    let mut seq = 0u32;
    for o in ops {
        let (at, len, fua) = match *o {
            Op::Write { at, len, fua } => (at, len.min(SLOTS - at), fua),
            Op::Hot { au, off, len } => {
                let at = au * 128 + off;
                (at, len.min(SLOTS - at), false)
            }
            Op::Flush => {
                h.next(DevOp::Flush, 0, 0);
                continue;
            }
            Op::TrimAu(au) => {
                h.next(DevOp::Discard, au * AU_SECTORS, AU_SECTORS as u32);
                reference[(au * 128) as usize..((au + 1) * 128) as usize].fill(0);
                continue;
            }
        };
        seq += 1;
        let c = h.run_fua(h.now(), DevOp::Write, at * 8, (len * 8) as u32, fua);
        // The next command comes once this one is done.
        h.next(DevOp::Read, at * 8, 8);
        prop_assert!(c.done >= c.issued);
        reference[at as usize..(at + len) as usize].fill(seq);
        let au = h.dev.allocation_unit().unwrap();
        au.check().map_err(TestCaseError::fail)?;
    }
    let au = h.dev.allocation_unit().unwrap();
    for s in 0..SLOTS {
        prop_assert_eq!(au.content_of(s), reference[s as usize], "slot {}", s);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn linear_reads_return_the_last_write(ops in prop::collection::vec(op(), 1..120)) {
        check_device(&small("linear", 2, 0, false, 1), &ops)?;
    }

    #[test]
    fn any_order_fat_and_log_return_the_last_write(ops in prop::collection::vec(op(), 1..120)) {
        check_device(&small("any", 3, 2, true, 2), &ops)?;
    }

    #[test]
    fn linear_with_log_and_fat_returns_the_last_write(ops in prop::collection::vec(op(), 1..120)) {
        check_device(&small("linear", 2, 1, true, 1), &ops)?;
    }
}

// ---------------------------------------------------------------- analytic

const T_R: u64 = 50_000;
const T_PROG: u64 = 500_000;
const FW_CMD: u64 = 10_000;
const FW_4K: u64 = 1_000;
/// 8 KiB over 100 MB/s.
const PAGE_X: u64 = 81_920;
/// 16 KiB over 100 MB/s.
const UNIT_X: u64 = 163_840;

/// Read time of `sectors` at `lba` right after an idle gap, from arrival to last data.
fn read_ns(h: &mut Harness, lba: u64, sectors: u32) -> u64 {
    let at = h.now() + 100_000_000;
    let c = h.run(at, DevOp::Read, lba, sectors);
    c.done - c.issued
}

#[test]
fn read_boundaries_cost_a_page_a_row_and_an_au_table_read() {
    // One die: every page read is tR then the page out, the die held until it is out
    // (no cache read), and the AU table entry read the same way on a miss.
    let cfg = small_dies(1, "linear", 2, 0, false, 1);
    let mut h = Harness::new(&cfg, 1);
    let page = T_R + PAGE_X;
    // 1 KiB reads (2 sectors): fw (command + one 4 KiB unit), the table entry (the
    // one-entry table misses: the reads alternate AUs), the page.
    let one = FW_CMD + FW_4K + page + page;
    assert_eq!(read_ns(&mut h, 4 * AU_SECTORS + 100, 2), one);
    assert_eq!(read_ns(&mut h, 100, 2), one);
    // Across a 4 KiB boundary inside a page: one more 4 KiB unit of firmware only.
    assert_eq!(read_ns(&mut h, 4 * AU_SECTORS + 7, 2), one + FW_4K);
    // Across the 8 KiB page boundary inside a row: the other plane's page comes from
    // the same multi-plane tR, and crosses the channel too.
    assert_eq!(read_ns(&mut h, 15, 2), one + FW_4K + PAGE_X);
    // Across a 16 KiB row boundary: a second tR once the first page is out, then its
    // page.
    assert_eq!(read_ns(&mut h, 4 * AU_SECTORS + 31, 2), one + FW_4K + page);
    // Across an AU boundary: the row step plus the second AU's table entry.
    assert_eq!(
        read_ns(&mut h, 2 * AU_SECTORS - 1, 2),
        one + FW_4K + 2 * page
    );

    // Two dies: rows alternate dies, so a row boundary's second tR runs beside the
    // first and only its page waits for the channel: the same step as a page boundary.
    let cfg = small_dies(2, "linear", 2, 0, false, 1);
    let mut h = Harness::new(&cfg, 1);
    let r8 = read_ns(&mut h, 15, 2);
    let r16 = read_ns(&mut h, 4 * AU_SECTORS + 31, 2);
    assert_eq!(r8, r16);
}

#[test]
fn in_order_writes_to_open_aus_copy_nothing_beyond_the_limit_every_write_closes_one() {
    // Chunks of 64 KiB written round-robin into N AUs, as flashbench -O does.
    let run = |n_aus: u64| {
        let cfg = small("linear", 2, 0, false, 64);
        let mut h = Harness::new(&cfg, 1);
        for a in 0..n_aus {
            h.dev.precondition(a * 12 * AU_SECTORS, AU_SECTORS);
        }
        let mut times = Vec::new();
        for chunk in 0..8u64 {
            for a in 0..n_aus {
                let c = h.next(DevOp::Write, a * 12 * AU_SECTORS + chunk * 128, 128);
                times.push(c.done - c.issued);
            }
        }
        let s = h.dev.stats().clone();
        (times, s)
    };
    let (t2, s2) = run(2);
    // Two open AUs: each opened once (a fresh AU), 4 units per write, no copy at all.
    // (The first writes at offset 0 copy nothing; later chunks continue in place.)
    assert_eq!(s2.gc_copies, 0);
    assert_eq!(s2.gc_victims, 0);
    // Each 64 KiB write: fw, 4 units over 2 dies (2 each: transfer + program, the
    // channel shared): the steady time is the same for every write.
    assert!(t2[2..].iter().all(|&t| t == t2[2]), "{t2:?}");
    let (t3, s3) = run(3);
    // Three AUs, two open: from the third write on, every write closes one.
    assert_eq!(s3.gc_victims, 3 * 8 - 2);
    let steady2 = t2[2];
    let slow = t3[3..].iter().filter(|&&t| t > 10 * steady2).count();
    assert_eq!(slow, t3.len() - 3, "{t3:?}");
}

#[test]
fn a_close_copies_the_rest_of_the_au_by_closed_form() {
    // One die pair, controller copy: closing an AU whose first 4 units are written
    // copies its other 28 units (14 per die), each tR + 2 unit transfers + tPROG, then
    // erases the old AU (one block per die).
    let cfg = small("linear", 1, 0, false, 64);
    let mut h = Harness::new(&cfg, 1);
    h.dev.precondition(0, 2 * AU_SECTORS);
    let a = h.next(DevOp::Write, 0, 128);
    let _ = a;
    // Let every die go idle, then write into the second AU: the first closes.
    let at = h.now() + 1_000_000_000;
    let c = h.run(at, DevOp::Write, AU_SECTORS, 128);
    let per_die = 14 * (T_R + T_PROG + 2 * UNIT_X);
    let erase = 2_000_000;
    // fw (command + 16 units), table miss (tR + page), then the close, then the 4 new
    // units, alternating dies on the one channel: each unit's transfer waits for its
    // die, the next die's for the channel: 3 transfers and 2 programs on the critical
    // path.
    let fw = FW_CMD + 16 * FW_4K;
    let table = T_R + PAGE_X;
    let close = per_die + erase;
    let program = 3 * UNIT_X + 2 * T_PROG;
    assert_eq!(c.done - c.issued, fw + table + close + program);
    assert_eq!(h.dev.stats().gc_copies, 128 - 16);
}

#[test]
fn small_writes_go_to_the_log_and_stay_fast_until_it_is_cleaned() {
    let cfg = small("linear", 2, 0, true, 64);
    let mut h = Harness::new(&cfg, 1);
    for a in 0..8 {
        h.dev.precondition(a * 2 * AU_SECTORS, AU_SECTORS);
    }
    // 8 KiB writes to 8 AUs in turn (more than the 2 open): all logged, none closes.
    let mut worst = 0;
    for i in 0..32u64 {
        let a = i % 8;
        let c = h.next(DevOp::Write, a * 2 * AU_SECTORS + (i / 8) * 16, 16);
        worst = worst.max(c.done - c.issued);
    }
    assert_eq!(h.dev.stats().gc_victims, 0);
    assert!(worst < 2 * (UNIT_X + T_PROG), "worst small write {worst}");
    // 32 KiB writes (not small) to the same 8 AUs: each closes an open AU.
    for i in 0..8u64 {
        h.next(DevOp::Write, i * 2 * AU_SECTORS + 512, 64);
    }
    assert_eq!(h.dev.stats().gc_victims, 8 - 2);
    let au = h.dev.allocation_unit().unwrap();
    assert_eq!(au.au_stats().small_writes, 32);
}

#[test]
fn fat_area_takes_random_order_writes_without_closing() {
    let cfg = small("linear", 2, 1, false, 64);
    let mut h = Harness::new(&cfg, 1);
    h.dev.precondition(0, 2 * AU_SECTORS);
    // Backwards 16 KiB writes: in the FAT AU (AU 0) they append; in AU 1 each closes
    // the AU and reopens it.
    for i in (0..8u64).rev() {
        h.next(DevOp::Write, i * 32, 32);
    }
    assert_eq!(h.dev.stats().gc_victims, 0);
    for i in (0..8u64).rev() {
        h.next(DevOp::Write, AU_SECTORS + i * 32, 32);
    }
    assert_eq!(h.dev.stats().gc_victims, 7);
}

#[test]
fn trimmed_aus_are_written_without_copies() {
    let cfg = small("linear", 2, 0, false, 64);
    let mut h = Harness::new(&cfg, 1);
    h.dev.precondition(0, 4 * AU_SECTORS);
    h.next(DevOp::Discard, 0, AU_SECTORS as u32);
    // A write in the middle of a trimmed AU: nothing to copy before it.
    h.next(DevOp::Write, 512, 64);
    assert_eq!(h.dev.stats().gc_copies, 0);
    // The same write in an AU holding data copies the units before it (32 slots, 8
    // units of 4).
    h.next(DevOp::Write, AU_SECTORS + 512, 64);
    assert_eq!(h.dev.stats().gc_copies, 64);
}

#[test]
fn full_au_sequential_writes_only_erase() {
    let cfg = small("linear", 2, 0, false, 64);
    let mut h = Harness::new(&cfg, 1);
    h.dev.precondition(0, 8 * AU_SECTORS);
    for a in 0..8u64 {
        h.next(DevOp::Write, a * AU_SECTORS, AU_SECTORS as u32);
    }
    let s = h.dev.stats();
    assert_eq!(s.gc_copies, 0);
    assert_eq!(s.gc_victims, 6);
    // Every close erased the old AU (one block per die).
    assert_eq!(s.erases, 6 * 2);
}
