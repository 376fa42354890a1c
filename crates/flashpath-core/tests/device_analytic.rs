//! Closed-form checks of the device model: QD1 latencies on an idle device are exactly
//! the sum of the modelled steps; a sequential overwrite has write amplification 1.0;
//! the ideal device gives QD1 bandwidth = block size / service time.
use flashpath_core::device::harness::Harness;
use flashpath_core::device::nand_timing::NandTiming;
use flashpath_core::device::{DevOp, DevStatus, DeviceConfig};
use flashpath_core::engine::{transfer_ns, NS_PER_S};

/// The shipped preset's geometry with round, pinned timings (the preset's own values
/// move with calibration; these tests pin the arithmetic).
fn preset() -> DeviceConfig {
    let mut cfg = DeviceConfig::from_toml_str(include_str!(
        "../../../presets/devices/emmc51-hs400-32g.toml"
    ))
    .unwrap();
    let n = cfg.nand_mut().unwrap();
    n.fw_per_command_ns = 10_000;
    n.fw_per_4kib_ns = 500;
    n.map_lookup_ns = 1_000;
    n.t_read_ns = 60_000;
    n.map_t_read_ns = 60_000;
    n.channel_bytes_per_s = 400_000_000;
    n.buffer_copy_bytes_per_s = 800_000_000;
    n.map_entries_per_segment = 1024;
    n.map_entry_bytes = 4;
    // One tR for every page type (the page-type tests below turn them on).
    n.timing = NandTiming::uniform();
    cfg
}

/// The preset with its own page types (MLC, Micron L95B profile) and pinned times.
fn preset_with_page_types() -> DeviceConfig {
    let own = DeviceConfig::from_toml_str(include_str!(
        "../../../presets/devices/emmc51-hs400-32g.toml"
    ))
    .unwrap();
    let mut cfg = preset();
    cfg.nand_mut().unwrap().timing = own.nand().unwrap().timing.clone();
    cfg
}

/// Writes 3 rows on every die (LPN 0.., rows round-robin over the dies), flushes, and
/// loads map segment 0: reads of LPN 0.. then cost firmware, lookup, their row's tR and
/// 4 KiB over the channel.
fn three_rows_per_die(cfg: &DeviceConfig) -> Harness {
    let n = cfg.nand().unwrap();
    let mut h = Harness::new(cfg, 1);
    h.next(DevOp::Write, 0, 3 * n.dies() * 8 * n.slots_per_row());
    h.next(DevOp::Flush, 0, 0);
    // An unwritten LPN of segment 0: the map page is read, no data page.
    h.next(DevOp::Read, 1000 * 8, 8);
    h.run_until_idle();
    h
}

/// (d) On the preset's geometry: a 4 KiB read whose map segment is cached costs
/// firmware, lookup, tR and 4 KiB over the channel; one whose segment is not cached
/// adds the map page's tR and transfer before the lookup.
#[test]
fn qd1_4k_read_is_the_sum_of_its_steps() {
    let cfg = preset();
    let n = cfg.nand().unwrap().clone();
    let mut h = Harness::new(&cfg, 1);
    // Two rows of data at LPN 0.. (die 0 and die 1), flushed to NAND.
    h.next(DevOp::Write, 0, 2 * 8 * n.slots_per_row());
    h.next(DevOp::Flush, 0, 0);
    // Push segment 0 out of the map cache with reads of unwritten LPNs elsewhere.
    let per_seg = n.map_entries_per_segment as u64 * 8;
    for s in 1..=n.map_cache_segments() as u64 {
        h.next(DevOp::Read, s * per_seg, 8);
    }
    h.run_until_idle();
    let fw = n.fw_per_command_ns + n.fw_per_4kib_ns;
    let x4k = transfer_ns(4096, n.channel_bytes_per_s);
    let xseg = transfer_ns(n.map_segment_bytes(), n.channel_bytes_per_s);

    let t = h.now() + 10_000_000;
    let miss = h.run(t, DevOp::Read, 0, 8);
    assert_eq!(
        miss.done - t,
        fw + n.t_read_ns + xseg + n.map_lookup_ns + n.t_read_ns + x4k
    );
    assert_eq!(
        miss.done - t,
        151_980,
        "10 + 0.5 + 60 + 10.24 + 1 + 60 + 10.24 us"
    );
    assert_eq!(miss.first, miss.done);

    // LPN 8 is on die 1 (the second row): segment cached now, die 1 idle.
    let t = miss.done + 10_000_000;
    let hit = h.run(t, DevOp::Read, 8 * 8, 8);
    assert_eq!(hit.done - t, fw + n.map_lookup_ns + n.t_read_ns + x4k);
    assert_eq!(hit.done - t, 81_740, "10 + 0.5 + 1 + 60 + 10.24 us");
    let s = h.dev.stats();
    assert_eq!(s.nand_page_reads, 2);
}

/// Page types: with Linux's MLC pairing, row 0 of a block is a lower page and row 2 an
/// upper page; their tR are the L95B profile's 48 and 64 us scaled so that the mean over
/// a 256-page block (129 lower, 127 upper pages) is the preset's 60 us:
/// 60 · 48 / 55.9375 = 51.486 us and 60 · 64 / 55.9375 = 68.648 us.
#[test]
fn qd1_reads_pay_their_page_type_tr() {
    let cfg = preset_with_page_types();
    let n = cfg.nand().unwrap().clone();
    let mut h = three_rows_per_die(&cfg);
    let fixed = n.fw_per_command_ns + n.fw_per_4kib_ns + n.map_lookup_ns;
    let x4k = transfer_ns(4096, n.channel_bytes_per_s);
    let rows = 8 * n.slots_per_row() as u64 * n.dies() as u64; // sectors per row round
    let mut tr = Vec::new();
    for row in 0..3 {
        let t = h.now() + 10_000_000;
        let c = h.run(t, DevOp::Read, row * rows, 8);
        tr.push(c.done - t - fixed - x4k);
    }
    let near = |a: u64, b: f64| (a as f64 - b).abs() <= 2.0;
    assert!(near(tr[0], 51_486.0), "{tr:?}");
    assert!(near(tr[1], 51_486.0), "row 1 is a lower page: {tr:?}");
    assert!(near(tr[2], 68_648.0), "row 2 is an upper page: {tr:?}");
}

/// Read retry: on an aged device each read of a page costs its row's tR and transfer
/// once, plus the same again per retry step; the device counts the steps.
#[test]
fn each_retry_step_costs_one_more_tr_and_transfer() {
    let mut cfg = preset_with_page_types();
    {
        let t = &mut cfg.nand_mut().unwrap().timing;
        *t = DeviceConfig::from_toml_str(include_str!(
            "../../../presets/devices/emmc51-hs400-32g.toml"
        ))
        .unwrap()
        .nand()
        .unwrap()
        .timing
        .clone();
        t.wear_pe_cycles = 3000;
        t.wear_data_age_ns = 365 * 86_400 * NS_PER_S;
    }
    let n = cfg.nand().unwrap().clone();
    let mut h = three_rows_per_die(&cfg);
    h.dev.age_data();
    let base = h.dev.stats().read_retry_steps;
    let fixed = n.fw_per_command_ns + n.fw_per_4kib_ns + n.map_lookup_ns;
    let x4k = transfer_ns(4096, n.channel_bytes_per_s);
    let mut steps = 0;
    // Rows 0 and 2 on every die and plane: one 4 KiB of each page, so that no read finds
    // its page in a register.
    let spp = n.slots_per_page() as u64;
    let per_round = n.dies() as u64 * n.slots_per_row() as u64;
    for row in [0u64, 2] {
        let tr = n.timing.t_read_row(row as u32, n.t_read_ns);
        for lpn in (0..per_round)
            .step_by(spp as usize)
            .map(|i| i + row * per_round)
        {
            let t = h.now() + 10_000_000;
            let c = h.run(t, DevOp::Read, lpn * 8, 8);
            let extra = c.done - t - fixed - tr - x4k;
            assert_eq!(extra % (tr + x4k), 0, "lpn {lpn}: {extra}");
            steps += extra / (tr + x4k);
        }
    }
    assert_eq!(h.dev.stats().read_retry_steps - base, steps);
    assert!(steps > 0, "a device at 3000 P/E with year-old data retries");
}

/// On the preset's geometry: a 4 KiB write to an idle device with buffer space is acknowledged
/// after firmware + the copy into the buffer.
#[test]
fn qd1_4k_write_ack_is_firmware_plus_copy() {
    let cfg = preset();
    let n = cfg.nand().unwrap().clone();
    let mut h = Harness::new(&cfg, 1);
    let c = h.run(1_000, DevOp::Write, 800, 8);
    let expect =
        n.fw_per_command_ns + n.fw_per_4kib_ns + transfer_ns(4096, n.buffer_copy_bytes_per_s);
    assert_eq!(c.done - 1_000, expect);
    assert_eq!(c.done - 1_000, 15_620, "10 + 0.5 + 5.12 us");
}

/// (c) Writing the whole device sequentially twice: every block GC picks has no valid
/// data left, so nothing is copied and write amplification is exactly 1.0.
#[test]
fn sequential_overwrite_twice_has_write_amplification_one() {
    let cfg = DeviceConfig::small_test_device();
    let mut h = Harness::new(&cfg, 1);
    let sectors = h.dev.capacity_sectors();
    let chunk = 256u32; // 128 KiB writes
    for _ in 0..2 {
        let mut lba = 0;
        while lba < sectors {
            let c = h.next(DevOp::Write, lba, chunk);
            assert_eq!(c.status, DevStatus::Ok);
            lba += chunk as u64;
        }
    }
    h.next(DevOp::Flush, 0, 0);
    h.run_until_idle();
    let s = h.dev.stats();
    let lpns = sectors / 8;
    assert_eq!(s.host_write_slots, 2 * lpns);
    assert_eq!(s.host_slots_programmed, 2 * lpns);
    assert_eq!(s.gc_copies, 0);
    assert_eq!(s.padding_slots, 0);
    assert!(s.erases > 0, "the second pass must have reclaimed blocks");
    assert_eq!(s.write_amplification(), 1.0);
    h.dev.page_mapped().unwrap().check_invariants();
}

/// The ideal device: QD1 bandwidth = block size / service time.
#[test]
fn ideal_device_qd1_bandwidth() {
    let cfg = DeviceConfig::ideal(1 << 30, 100_000);
    let mut h = Harness::new(&cfg, 1);
    let n = 1000u64;
    for i in 0..n {
        let c = h.next(DevOp::Read, i * 8, 8);
        assert_eq!(c.done - c.issued, 100_000);
    }
    // The last command arrived at `now` and finished 100 us later.
    let elapsed = h.now() + 100_000;
    assert_eq!(elapsed, n * 100_000);
    assert_eq!(n * 4096 * NS_PER_S / elapsed, 40_960_000, "4 KiB / 100 us");
}
