//! The allocation-unit FTL in the whole simulation: the seed's §5 flashbench scenario on
//! the 2011 eMMC preset (each access an O_DIRECT|O_SYNC system call through the host,
//! the MMC driver and the bus, as flashbench's are), and what fio sees on such devices.
mod common;

use common::system;
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{Dir, IoSpec, JobConfig, Pattern};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const EMMC_2011: &str = include_str!("../../../presets/devices/emmc441-2011-au-8g.toml");
const SD_README: &str = include_str!("../../../presets/devices/sd-flashbench-readme-4g.toml");
const LEXAR: &str = include_str!("../../../presets/devices/microsd-lexar-633x-32g.toml");
const RTSX_HOST: &str = include_str!("../../../presets/hosts/x86-laptop-rtsx.toml");
const MIB: u64 = 1 << 20;

/// `job` alone on the system, its region mapped at once (a device in use).
fn run_one(host: &str, dev: &str, driver: DriverKind, job: JobConfig) -> RunResult {
    let (host, device) = system(host, dev);
    run(SimConfig {
        host,
        device,
        driver,
        jobs: vec![job],
        precondition: Precondition::Sequential,
    })
    .unwrap()
}

/// `ios` as flashbench issues them, O_DIRECT, one at a time. (flashbench adds O_SYNC:
/// on this eMMC's queue a REQ_FUA, i.e. reliable, write, which the host side does not
/// model for direct I/O; the AU device would only program a partial unit at once,
/// and these writes are whole units.)
fn scripted(host: &str, dev: &str, driver: DriverKind, ios: Vec<IoSpec>) -> RunResult {
    run_one(host, dev, driver, JobConfig::scripted("probe", ios.into()))
}

fn write(offset: u64, len: u64) -> IoSpec {
    IoSpec {
        dir: Dir::Write,
        trim: false,
        offset,
        len,
    }
}

/// §5: writes to 8 places 8 MiB apart, round after round, each place's next write just
/// after its previous one.
fn eight_places(len: u64, rounds: u64) -> Vec<IoSpec> {
    let mut v = Vec::new();
    for r in 0..rounds {
        for p in 0..8 {
            v.push(write(64 * MIB + p * 8 * MIB + r * len, len));
        }
    }
    v
}

#[test]
fn seed_5_eight_places_force_a_gc_of_about_100ms_on_nearly_every_write() {
    for len in [32 << 10, 64 << 10, 128 << 10] {
        let r = scripted(HOST, EMMC_2011, DriverKind::MmcLegacy, eight_places(len, 4));
        let lat = &r.jobs[0].script_lat_ns;
        assert_eq!(lat.len(), 32);
        // The first 7 places open free AUs; from the 8th on every write closes the
        // least recently written AU (7 open): its copy and erase, ~100 ms.
        let stalls: Vec<u64> = lat[7..].iter().map(|&ns| ns / 1_000_000).collect();
        assert!(
            stalls.iter().all(|&ms| (85..=125).contains(&ms)),
            "{len}: {stalls:?} ms"
        );
        assert!(lat[..7].iter().all(|&ns| ns < 20_000_000), "{len}: {lat:?}");
        assert_eq!(r.system.device.gc_victims, 32 - 7);
    }
}

#[test]
fn seed_5_writes_under_16k_go_to_the_small_write_buffer_and_stay_fast() {
    for len in [4 << 10, 8 << 10, 12 << 10] {
        let r = scripted(HOST, EMMC_2011, DriverKind::MmcLegacy, eight_places(len, 4));
        let lat = &r.jobs[0].script_lat_ns;
        assert!(lat.iter().all(|&ns| ns < 3_000_000), "{len}: {lat:?}");
        assert_eq!(r.system.device.gc_victims, 0);
        assert_eq!(r.system.au.as_ref().unwrap().small_writes, 32);
    }
}

#[test]
fn seven_places_never_collect() {
    // 7 places: all stay open, so 32 KiB writes never wait for a close.
    let ios: Vec<IoSpec> = eight_places(32 << 10, 4)
        .into_iter()
        .filter(|io| (io.offset - 64 * MIB) / (8 * MIB) < 7)
        .collect();
    let r = scripted(HOST, EMMC_2011, DriverKind::MmcLegacy, ios);
    assert_eq!(r.system.device.gc_victims, 0);
    assert!(r.jobs[0].script_lat_ns.iter().all(|&ns| ns < 20_000_000));
}

fn fio_like(
    host: &str,
    dev: &str,
    driver: DriverKind,
    pattern: Pattern,
    bs: u64,
    region: u64,
    io: u64,
) -> RunResult {
    let mut j = JobConfig::simple("fio", pattern, 0, bs, region);
    j.offset = 16 * MIB;
    j.io_limit = io;
    run_one(host, dev, driver, j)
}

fn write_bw(r: &RunResult) -> f64 {
    let d = &r.jobs[0].dirs[1];
    d.bytes as f64 / (r.jobs[0].runtime_ns as f64 / 1e9)
}

#[test]
fn random_4k_writes_over_more_aus_than_open_collapse() {
    let sd = DriverKind::SdRtsx { multi_seq: false };
    // The Lexar card keeps 5 AUs open in any order: random 4 KiB writes inside 4 AUs
    // each program one padded row; over 32 AUs nearly every write merges an AU.
    let narrow = fio_like(RTSX_HOST, LEXAR, sd, Pattern::Random, 4096, 16 * MIB, MIB);
    let wide = fio_like(RTSX_HOST, LEXAR, sd, Pattern::Random, 4096, 128 * MIB, MIB);
    let (bn, bw) = (write_bw(&narrow), write_bw(&wide));
    assert_eq!(narrow.system.device.gc_victims, 0);
    assert!(wide.system.device.gc_victims > 200);
    assert!(bn > 20.0 * bw, "4 AUs {bn:.0} B/s, 32 AUs {bw:.0} B/s");
    // The README's card keeps 2 open in linear order only: random writes collapse even
    // inside 2 AUs (each backwards write closes and reopens its AU), while two
    // sequential streams into 2 AUs stay at full speed.
    let linear = fio_like(
        RTSX_HOST,
        SD_README,
        sd,
        Pattern::Random,
        4096,
        8 * MIB,
        MIB,
    );
    // About half of the random writes land below their AU's write pointer.
    let closes = linear.system.device.gc_victims;
    assert!((90..=170).contains(&closes), "{closes}");
}

#[test]
fn full_au_sequential_writes_run_at_the_program_rate_without_copies() {
    let sd = DriverKind::SdRtsx { multi_seq: false };
    let r = fio_like(
        RTSX_HOST,
        SD_README,
        sd,
        Pattern::Sequential,
        4 * MIB,
        32 * MIB,
        32 * MIB,
    );
    assert_eq!(r.system.device.gc_copies, 0);
    // One die, 16 KiB per program: 4 MiB = 256 × (transfer + tPROG) on the device,
    // plus the bus and host time per 4 MiB (at 93 MB/s, 45 ms): between the NAND rate
    // alone and that plus the bus.
    let (host, dev) = system(RTSX_HOST, SD_README);
    let _ = host;
    let a = dev.allocation_unit().unwrap();
    let unit_ns = 16384.0 * 1e9 / a.nand.channel_bytes_per_s as f64 + a.nand.t_prog_ns as f64;
    let nand = 16384.0 / unit_ns * 1e9;
    let bus = 93e6;
    let with_bus = 1.0 / (1.0 / nand + 1.0 / bus);
    let bw = write_bw(&r);
    assert!(
        bw <= nand && bw > 0.9 * with_bus,
        "{bw:.0} vs {nand:.0}/{with_bus:.0}"
    );
}

#[test]
fn trims_of_whole_aus_spare_the_copies_and_fsync_sends_no_flush() {
    use flashpath_core::workload::{BlockSizes, Trim};
    // 1 MiB written 2 MiB into an AU that holds data: its first 2 MiB are copied into
    // the new AU first. After a trim of the whole AU there is nothing to copy.
    let write = || {
        let mut j = JobConfig::simple("write", Pattern::Sequential, 0, MIB, MIB);
        j.offset = 16 * MIB + 2 * MIB;
        j.stonewall = true;
        j
    };
    let mut trim = JobConfig::simple("trim", Pattern::Sequential, 0, 4 * MIB, 4 * MIB);
    trim.offset = 16 * MIB;
    trim.trim = Trim::Only;
    trim.bs_trim = BlockSizes::Fixed(4 * MIB);
    let (host, device) = system(HOST, EMMC_2011);
    let cfg = |jobs| SimConfig {
        host: host.clone(),
        device: device.clone(),
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: Precondition::Sequential,
    };
    let plain = run(cfg(vec![write()])).unwrap();
    assert_eq!(plain.system.device.gc_copies, 2 * MIB / 4096);
    let trimmed = run(cfg(vec![trim, write()])).unwrap();
    assert_eq!(trimmed.system.device.discarded_slots, 4 * MIB / 4096);
    assert_eq!(trimmed.system.device.gc_copies, 0);

    // fsync after every write on an SD card: its queue has no write cache flag, so the
    // kernel sends no flush (the empty REQ_PREFLUSH bio ends at submission), and
    // O_DIRECT|O_SYNC writes are plain writes.
    let mut j = JobConfig::simple("fsync", Pattern::Sequential, 0, 64 << 10, 4 * MIB);
    j.offset = 16 * MIB;
    j.fsync_every = 1;
    j.o_sync = true;
    let sd = DriverKind::SdRtsx { multi_seq: false };
    let r = run_one(RTSX_HOST, SD_README, sd, j);
    assert_eq!(r.system.cache.flushes, 0);
    // After each write but the last (fio picks a sync only before a next I/O).
    assert_eq!(r.jobs[0].sync_lat.count(), 63);
}

#[test]
fn a_card_slower_than_the_host_brings_the_bus_down_to_its_mode() {
    let (mut host, device) = system(RTSX_HOST, SD_README);
    let sdr104 = host.bus.data_bytes_per_s;
    // High Speed: 50 MHz × 4 lines, 512 bytes per 1042 clocks.
    host.bus.negotiate(device.bus_mode);
    assert_eq!(host.bus.data_bytes_per_s, 50_000_000 * 512 / 1042);
    assert_eq!(
        (host.bus.clock_hz, host.bus.mode.as_str()),
        (50_000_000, "high-speed")
    );
    // A UHS-I SDR104 card on the same host keeps the host's own (calibrated) rate.
    let (mut host, lexar) = system(RTSX_HOST, LEXAR);
    host.bus.negotiate(lexar.bus_mode);
    assert_eq!(host.bus.data_bytes_per_s, sdr104);
    // In a run: 4 MiB of sequential reads cannot beat the card's bus.
    let sd = DriverKind::SdRtsx { multi_seq: false };
    let mut j = JobConfig::simple("read", Pattern::Sequential, 100, MIB, 4 * MIB);
    j.offset = 16 * MIB;
    let r = run_one(RTSX_HOST, SD_README, sd, j);
    let bw = r.jobs[0].dirs[0].bytes as f64 / (r.jobs[0].runtime_ns as f64 / 1e9);
    assert!(bw < 24_570_000.0 && bw > 15e6, "{bw}");
}

/// Sub-page writes (issue 30): the 2011 eMMC's small-write log maps whole 8 KiB pages, so
/// a 4 KiB write into a page that holds data first reads the old page (read-modify-write),
/// one straddling two pages reads both, and a whole page reads none; where the write
/// falls against the page boundary shows in its time. Mapped by sectors ("512B"), no
/// write reads and the time is flat.
#[test]
fn sub_page_writes_read_the_old_page_and_depend_on_where_they_fall() {
    let sectors = EMMC_2011.replace("small_write_map = \"page\"", "small_write_map = \"512B\"");
    assert_ne!(sectors, EMMC_2011);
    let at = |dev: &str, offset: u64, len: u64| {
        let r = scripted(HOST, dev, DriverKind::MmcLegacy, vec![write(offset, len)]);
        let au = r.system.au.as_ref().unwrap();
        assert_eq!(au.small_writes, 1);
        (r.jobs[0].script_lat_ns[0], au.small_write_rmw_reads)
    };
    let base = 64 * MIB;
    let (whole, n0) = at(EMMC_2011, base, 8 << 10);
    let (inside, n1) = at(EMMC_2011, base + (4 << 10), 4 << 10);
    let (straddle, n2) = at(EMMC_2011, base + (6 << 10), 4 << 10);
    assert_eq!((n0, n1, n2), (0, 1, 2));
    assert!(inside > whole, "{inside} vs {whole}");
    assert!(straddle > inside, "{straddle} vs {inside}");
    let (flat_inside, m1) = at(&sectors, base + (4 << 10), 4 << 10);
    let (flat_straddle, m2) = at(&sectors, base + (6 << 10), 4 << 10);
    assert_eq!((m1, m2), (0, 0));
    assert!(flat_inside < inside);
    // Without reads, where the write falls changes nothing but its slots (two 4 KiB
    // slots for the straddling one, one more slot's transfer).
    assert!(
        flat_straddle - flat_inside < straddle - inside,
        "{flat_straddle} {flat_inside} {straddle} {inside}"
    );
    // A never-written AU has nothing to merge.
    let fresh = {
        let (host, device) = system(HOST, EMMC_2011);
        run(SimConfig {
            host,
            device,
            driver: DriverKind::MmcLegacy,
            jobs: vec![JobConfig::scripted(
                "probe",
                vec![write(base + (4 << 10), 4 << 10)].into(),
            )],
            precondition: Precondition::Off,
        })
        .unwrap()
    };
    assert_eq!(fresh.system.au.as_ref().unwrap().small_write_rmw_reads, 0);
}
