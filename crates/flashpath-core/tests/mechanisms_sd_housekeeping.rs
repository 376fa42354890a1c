//! Foreground housekeeping at block turnover (device/housekeeping.rs): the exact delay it
//! adds on a small device, and the rtsx 1 MiB random-write tail it causes on the shipped
//! SD card, which goes away when it is turned off (`ftl.housekeeping_move=0B`).

mod common;

use flashpath_core::config::preset;
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use flashpath_core::host::DriverKind;
use flashpath_core::stats::RunResult;
use flashpath_core::trace::NandUnit;
use flashpath_core::workload::{Dir, JobConfig, Pattern};

const DEVICE: &str = include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml");
const HOST: &str = include_str!("../../../presets/hosts/x86-laptop-rtsx.toml");
const MIB: u64 = 1 << 20;

/// Small device (2 dies, each on its own channel; rows of 32 KiB, 16 rows per block;
/// tR 50 us, tPROG 500 us, 32 KiB over the channel in 81 920 ns), moving `rows` rows
/// per block filled.
fn small(rows: u64) -> DeviceConfig {
    let mut cfg = DeviceConfig::small_test_device();
    cfg.nand_mut().unwrap().housekeeping_move_bytes = rows * 32 * 1024;
    cfg
}

/// 1 MiB fills the first block of both dies (16 rows each); after its flush, one 32 KiB
/// write goes to die 0, which is still moving: it waits for exactly the move, whose rows
/// each cost tR + out + in + tPROG after die 0's last host program.
#[test]
fn the_next_row_waits_for_the_move_exactly() {
    const ROW: u64 = 50_000 + 2 * 81_920 + 500_000;
    let mut h = Harness::new(&small(2), 1);
    h.dev.record_nand();
    h.next(DevOp::Write, 0, 2048);
    h.next(DevOp::Flush, 0, 0);
    let slices = h.dev.take_nand_slices();
    let last_prog = |die: u32| {
        slices
            .iter()
            .filter(|s| s.unit == NandUnit::Die(die) && s.label == "program")
            .map(|s| s.end)
            .max()
            .unwrap()
    };
    let p0 = last_prog(0);
    assert_eq!(h.dev.stats().housekeeping_moves, 2, "one per die");
    let w = h.next(DevOp::Write, 2048, 64);
    let f = h.next(DevOp::Flush, 0, 0);
    assert!(
        w.done < p0 + 2 * ROW,
        "the write is accepted into the buffer"
    );
    // The row's data goes in when the move ends, then it programs.
    assert_eq!(f.done, p0 + 2 * ROW + 81_920 + 500_000);
    let s = h.dev.stats();
    assert_eq!(
        (s.housekeeping_slots, s.nand_page_programs),
        (2 * 2 * 8, (32 + 4 + 1) * 2)
    );
    let hk_end = h
        .dev
        .take_nand_slices()
        .iter()
        .filter(|s| s.unit == NandUnit::Die(0) && s.label == "hk program")
        .map(|s| s.end)
        .max()
        .unwrap();
    assert_eq!(hk_end, p0 + 2 * ROW);

    // Without housekeeping the same row programs at once.
    let mut h = Harness::new(&small(0), 1);
    h.next(DevOp::Write, 0, 2048);
    h.next(DevOp::Flush, 0, 0);
    let w = h.next(DevOp::Write, 2048, 64);
    let f = h.next(DevOp::Flush, 0, 0);
    assert!(f.done < w.done + 2 * ROW);
    assert_eq!(h.dev.stats().housekeeping_moves, 0);
}

fn sd(housekeeping: bool) -> (flashpath_core::host::HostConfig, DeviceConfig) {
    let (host, _) = common::system(HOST, DEVICE);
    let over: Vec<(String, String)> = if housekeeping {
        Vec::new()
    } else {
        vec![("ftl.housekeeping_move".into(), "0B".into())]
    };
    (host, preset::load_device(DEVICE, "device", &over).unwrap())
}

/// fio's randwrite-1M job of docs/published-results.md §2 (psync, QD1, 1 MiB over 1 GiB), cut to
/// `n` writes.
fn randwrite(n: u64) -> JobConfig {
    let mut j = JobConfig::simple("w", Pattern::Random, 0, MIB, 1 << 30);
    j.io_limit = n * MIB;
    j
}

/// The writes' completion latencies as fio's histogram holds them (bin values, ns,
/// sorted; fio's bins are within 1/64 of the value).
fn sorted_clat(r: &RunResult) -> Vec<u64> {
    let h = &r.jobs[0].dirs[Dir::Write.index()].clat;
    let mut v = Vec::new();
    for (i, &n) in h.counts().iter().enumerate() {
        v.extend(std::iter::repeat_n(
            flashpath_hist::plat_idx_to_val(i),
            n as usize,
        ));
    }
    v
}

#[test]
fn rtsx_write_tail_comes_from_housekeeping_and_goes_without_it() {
    // 144 MiB: each die fills at least 3 of its 18 MiB blocks.
    const N: u64 = 144;
    for multi_seq in [false, true] {
        let driver = DriverKind::SdRtsx { multi_seq };
        let run = |hk| common::traced(sd(hk), driver, vec![randwrite(N)], true).1;
        let (on, off) = (run(true), run(false));
        let (c_on, c_off) = (sorted_clat(&on), sorted_clat(&off));
        assert_eq!(c_on.len() as u64, N);
        let body = c_off[c_off.len() / 2];
        // Off: no write is 15 ms over the median (with multiseq, a random offset that
        // follows the previous write continues the stream without CMD12: that write is
        // fast and the next one commits both, ~12 ms over).
        assert!(
            *c_off.last().unwrap() < body + 15_000_000,
            "{multi_seq}: off {c_off:?}"
        );
        // On: the writes whose rows wait behind a 512 KiB move (16 rows of
        // tR + 2 x 82 us + tPROG: ~25 ms) are that much longer; one per block filled.
        let moves = on.system.device.housekeeping_moves;
        assert!(moves >= 6, "{moves}");
        let long = c_on.iter().filter(|&&c| c > body + 18_000_000).count() as u64;
        assert!(
            long >= moves / 2 / 2 && long <= moves,
            "{multi_seq}: {long} long writes for {moves} moves: {c_on:?}"
        );
        assert!(*c_on.last().unwrap() < body + 35_000_000);
        assert_eq!(off.system.device.housekeeping_moves, 0);
    }
}

#[test]
fn the_preset_key_reads_sizes_and_rejects_odd_ones() {
    let load = |v: &str| {
        preset::load_device(
            DEVICE,
            "device",
            &[("ftl.housekeeping_move".into(), v.into())],
        )
    };
    let bytes = |v| load(v).unwrap().nand().unwrap().housekeeping_move_bytes;
    assert_eq!(bytes("512KiB"), 512 * 1024);
    assert_eq!(bytes("0B"), 0);
    let e = load("6KiB").unwrap_err().to_string();
    assert!(
        e.contains("ftl.housekeeping_move") && e.contains("multiple of 4KiB"),
        "{e}"
    );
    let e = load("64MiB").unwrap_err().to_string();
    assert!(e.contains("at most one block"), "{e}");
    // The shipped preset moves one UHS recording unit.
    let shipped = common::system(HOST, DEVICE).1;
    assert_eq!(shipped.nand().unwrap().housekeeping_move_bytes, 512 * 1024);
}
