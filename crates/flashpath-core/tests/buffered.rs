//! Buffered I/O (direct=0), writeback and the sync family (sim/kernel/buffered.rs): the page
//! cache's effect counted at the device, readahead windows, writer throttling, fsync and
//! O_SYNC ordering on the event trace.

mod common;

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{Ctx, Trace, TraceKind};
use flashpath_core::workload::{Dir, Fadvise, JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const SHIPPED_HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

/// A shipped host preset without its `[memory]` section (its last table), so that a test
/// can give its own cache size.
fn bare(host: &str) -> &str {
    host.split("\n[memory]").next().unwrap()
}
/// A test host: the SC9863A preset with a small page cache, so that the dirty thresholds
/// are reached in short runs (64 MiB: background 6.4 MiB, limit 12.8 MiB).
const MEMORY: &str = r#"
[memory]
size = "4GiB"
cache = "64MiB"
copy_rate = "2GB/s"
page_op = "0.5us"
"#;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn system() -> (HostConfig, DeviceConfig) {
    common::system(&format!("{}{MEMORY}", bare(SHIPPED_HOST)), DEVICE)
}

fn buffered(read_pct: u32, bs: u64, size: u64) -> JobConfig {
    let mut j = JobConfig::simple("b", Pattern::Sequential, read_pct, bs, size);
    j.direct = false;
    j
}

fn traced(jobs: Vec<JobConfig>) -> (Trace, RunResult) {
    common::traced(system(), DriverKind::MmcLegacy, jobs, false)
}

fn try_run(
    driver: DriverKind,
    jobs: Vec<JobConfig>,
    host: HostConfig,
) -> Result<RunResult, String> {
    run(SimConfig {
        host,
        device: system().1,
        driver,
        jobs,
        precondition: false.into(),
    })
}

/// Start and end of each data transfer of `dir` on the bus, in time order.
fn transfers(tr: &Trace, dir: Dir) -> Vec<(u64, u64)> {
    tr.bus_intervals()
        .into_iter()
        .filter_map(|(s, e, ev)| match ev.kind {
            TraceKind::Data { dir: d, .. } if d == dir => Some((s, e)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sequential_write_with_end_fsync_writes_every_byte_once() {
    // 96 MiB through a 64 MiB cache: background writeback, throttling and eviction of
    // written pages all happen; end_fsync writes the rest.
    let mut j = buffered(0, 128 * KIB, 96 * MIB);
    j.end_fsync = true;
    let (tr, r) = traced(vec![j]);
    let c = &r.system.cache;
    // Every page was dirtied, and only writeback cleans a page: all clean at the end with
    // exactly the file's bytes written at the device means each byte was written once.
    assert_eq!(c.dirty_left_bytes, 0);
    assert_eq!(
        c.device_write_slots * 4096,
        96 * MIB,
        "counted at the device"
    );
    assert_eq!(r.system.device_host_write_bytes, 96 * MIB);
    assert_eq!(c.writeback_bytes, 96 * MIB);
    assert!(c.evictions > 0, "the file is larger than the cache");
    assert_eq!(c.flushes, 1);
    assert_eq!(tr.commands(6).len(), 1, "one CMD6 FLUSH_CACHE");
    assert_eq!(
        r.system.device_host_read_bytes, 0,
        "whole-page writes read nothing"
    );
    // The writes reached the device as large requests (writeback, not 128 KiB writes).
    assert!(r.system.requests < 96 * MIB / (128 * KIB));
}

#[test]
fn a_reread_that_fits_in_the_cache_issues_no_device_reads() {
    let size = 4 * MIB;
    // Written then read back: every page is in the cache.
    let mut w = buffered(0, 64 * KIB, size);
    w.end_fsync = true;
    let mut rd = buffered(100, 64 * KIB, size);
    rd.stonewall = true;
    let (_, r) = traced(vec![w, rd]);
    assert_eq!(r.system.device_host_read_bytes, 0);
    assert_eq!(r.jobs[1].dirs[0].bytes, size);
    assert_eq!(r.system.cache.miss_pages, 0);

    // Read twice: the second pass adds no device read.
    let once = traced(vec![buffered(100, 64 * KIB, size)]).1;
    let mut again = buffered(100, 64 * KIB, size);
    again.stonewall = true;
    let twice = traced(vec![buffered(100, 64 * KIB, size), again]).1;
    let read1 = once.system.device_host_read_bytes;
    assert!(
        read1 >= size && read1 <= size + 256 * KIB,
        "readahead past the end: {read1}"
    );
    assert_eq!(twice.system.device_host_read_bytes, read1);
}

#[test]
fn readahead_stops_at_a_regular_files_end() {
    use flashpath_core::workload::{FileExtent, FileService, Files};
    // The same 4 MiB read on the block device reads ahead past the region (the device
    // is the file); on a regular file of 4 MiB, readahead stops at its end (i_size),
    // even with the next file's extent right behind it.
    let size = 4 * MIB;
    let dev = traced(vec![buffered(100, 64 * KIB, size)]).1;
    assert!(dev.system.device_host_read_bytes > size);
    let mut j = buffered(100, 64 * KIB, size);
    j.files = Some(Files {
        extents: vec![
            FileExtent { offset: 0, size },
            FileExtent { offset: size, size },
        ],
        service: FileService::Sequential,
    });
    j.size = 2 * size;
    j.io_limit = size;
    let file = traced(vec![j]).1;
    assert_eq!(file.jobs[0].dirs[0].bytes, size);
    assert_eq!(file.system.device_host_read_bytes, size);
}

#[test]
fn readahead_windows_ramp_up_per_the_kernel_rules() {
    // 4 KiB reads: get_init_ra_size(1, 32) = 4 pages, then ×2 (get_next_ra_size) to 32.
    let r = traced(vec![buffered(100, 4 * KIB, 2 * MIB)]).1;
    let w = &r.system.cache.readahead_bytes;
    // Every call is recorded while there are fewer than READAHEAD_KEPT.
    assert_eq!(r.system.cache.readahead_calls, w.len() as u64);
    assert_eq!(
        &w[..6],
        &[
            16 * KIB,
            32 * KIB,
            64 * KIB,
            128 * KIB,
            128 * KIB,
            128 * KIB
        ]
    );
    assert!(w[3..].iter().all(|&b| b == 128 * KIB));
    // 16+32+64 KiB, then 128 KiB windows whose mark is their first page: the 16th
    // (at 2032 KiB) is reached inside the 2 MiB and starts the 17th, so 2288 KiB in all.
    let total: u64 = w.iter().sum();
    assert_eq!(total, (16 + 32 + 64 + 17 * 128) * KIB);
    assert_eq!(w.len(), 3 + 17);

    // 128 KiB reads: initial window = max (32 pages), its mark at page 16 (async 16).
    let r = traced(vec![buffered(100, 128 * KIB, 2 * MIB)]).1;
    assert!(r
        .system
        .cache
        .readahead_bytes
        .iter()
        .all(|&b| b == 128 * KIB));
    // The async readahead overlaps the device with the copy: once the window runs ahead,
    // reads find their pages uptodate.
    assert!(r.system.cache.hit_pages > r.system.cache.miss_pages);

    // Random 4 KiB reads far apart: standalone reads of one page, no window.
    let mut j = buffered(100, 4 * KIB, 256 * MIB);
    j.pattern = Pattern::Random;
    j.io_limit = 200 * 4 * KIB;
    let r = traced(vec![j]).1;
    let w = &r.system.cache.readahead_bytes;
    let single = w.iter().filter(|&&b| b == 4 * KIB).count();
    assert!(
        single * 10 >= w.len() * 9,
        "random reads read one page: {w:?}"
    );
}

/// Before 4.19 (the TX1's 3.19, the phone's 4.4) the readit merge is not capped at max:
/// the first 128 KiB read with read_ahead_kb 128 reads two windows (256 KiB, its mark at
/// page 32), and from then on the window is one request ahead, as on 5.4.
#[test]
fn before_4_10_the_first_window_merges_uncapped() {
    let host = format!("{}{MEMORY}", bare(SHIPPED_HOST));
    assert!(host.contains("kernel = \"5.4\""));
    let run_on = |host: &str| {
        let system = common::system(host, DEVICE);
        common::traced(
            system,
            DriverKind::MmcLegacy,
            vec![buffered(100, 128 * KIB, 2 * MIB)],
            false,
        )
        .1
    };
    for kernel in ["3.19", "4.4", "4.18"] {
        let old = host.replace("kernel = \"5.4\"", &format!("kernel = \"{kernel}\""));
        let w = run_on(&old).system.cache.readahead_bytes.clone();
        assert_eq!(w[0], 256 * KIB, "{kernel}: {w:?}");
        assert!(w[1..].iter().all(|&b| b == 128 * KIB), "{kernel}: {w:?}");
    }
    let w = run_on(&host).system.cache.readahead_bytes.clone();
    assert!(w.iter().all(|&b| b == 128 * KIB), "{w:?}");
}

#[test]
fn writers_are_throttled_at_the_dirty_limit() {
    let bs = 64 * KIB;
    let r = traced(vec![buffered(0, bs, 48 * MIB)]).1;
    let cache = 64 * MIB / 4096;
    let limit = cache * 20 / 100 * 4096;
    let bg = cache * 10 / 100 * 4096;
    let max = r.system.cache.max_dirty_bytes;
    assert!(
        max <= limit + bs,
        "dirty {max} past the limit {limit} by more than one write"
    );
    assert!(
        max > bg,
        "the writer ran past the background threshold ({max})"
    );
    // Throttled: the job could not finish faster than the device took the data beyond
    // what the cache may hold dirty.
    let wrote = r.system.device_host_write_bytes;
    assert!(wrote >= 48 * MIB - limit - bs, "wrote {wrote}");
    let rate = 48.0 * MIB as f64 / (r.jobs[0].runtime_ns as f64 / 1e9);
    assert!(
        rate < 400e6,
        "throttled to the device's pace, not the copy rate: {rate}"
    );
}

#[test]
fn fsync_waits_for_all_dirty_data_and_issues_one_flush() {
    // 2 MiB of 4 KiB writes (under the background threshold: nothing is written back
    // until the fsync after the 512th write).
    let mut j = buffered(0, 4 * KIB, 2 * MIB);
    j.fsync_every = 512;
    // One write after it (page 0 again, left dirty): fio picks the sync before a next
    // I/O, and issues none after the job's last write.
    j.io_limit += 4 * KIB;
    let (tr, r) = traced(vec![j]);
    assert_eq!(r.jobs[0].sync_lat.count(), 1);
    assert_eq!(r.system.cache.flushes, 1);
    let flush = tr.commands(6);
    assert_eq!(flush.len(), 1);
    let writes = transfers(&tr, Dir::Write);
    let written: u64 = r.system.cache.device_write_slots * 4096;
    assert_eq!(written, 2 * MIB);
    let last_data = writes.iter().map(|x| x.1).max().unwrap();
    assert!(flush[0].t >= last_data, "the flush follows every write");
    // The fsync returned after the flush.
    assert!(r.jobs[0].end_ns > flush[0].t);
    let fsync = r.jobs[0].sync_lat.max();
    let first_data = writes.iter().map(|x| x.0).min().unwrap();
    assert!(
        fsync > flush[0].t - first_data,
        "fsync {fsync} spans the writeback"
    );
}

#[test]
fn o_sync_write_latency_includes_the_device_write_and_the_flush() {
    let n = 16;
    let mut j = buffered(0, 4 * KIB, n * 4 * KIB);
    j.o_sync = true;
    let (tr, r) = traced(vec![j]);
    let flush = tr.commands(6);
    assert_eq!(flush.len() as u64, n, "one flush per write");
    let writes = transfers(&tr, Dir::Write);
    assert_eq!(writes.len() as u64, n);
    // Each write's data goes to the device before its flush, and the next write's after.
    let mut spans = 0u64;
    for i in 0..n as usize {
        assert!(writes[i].1 <= flush[i].t);
        if i + 1 < n as usize {
            assert!(flush[i].t < writes[i + 1].0);
        }
        let TraceKind::Command { end, .. } = flush[i].kind else {
            unreachable!()
        };
        spans += end - writes[i].0;
    }
    let lat = &r.jobs[0].dirs[1].lat;
    assert_eq!(lat.count(), n);
    assert!(lat.mean() > spans as f64 / n as f64);
    // Without O_SYNC the same writes return from the cache.
    let plain = traced(vec![buffered(0, 4 * KIB, n * 4 * KIB)]).1;
    assert!(plain.jobs[0].dirs[1].lat.mean() * 5.0 < lat.mean());
    assert_eq!(plain.system.device_host_write_bytes, 0);
}

#[test]
fn fsync_on_direct_io_only_flushes() {
    let mut j = JobConfig::simple("d", Pattern::Sequential, 0, 4 * KIB, 32 * 4 * KIB);
    j.fsync_every = 8;
    let (tr, r) = traced(vec![j]);
    // After the 8th, 16th and 24th write: none after the last (fio's loop ends first).
    assert_eq!(r.jobs[0].sync_lat.count(), 3);
    assert_eq!(tr.commands(6).len(), 3);
    assert_eq!(r.system.cache.writeback_bytes, 0);
}

#[test]
fn a_card_with_its_cache_off_gets_flushes_that_send_no_command() {
    // The eMMC queue declares a write cache for any card with reliable write
    // (MMC_BLK_REL_WR), so fsync sends flush requests even to a write-through card;
    // mmc_flush_cache finds CACHE_CTRL off and sends nothing: the legacy and hsq
    // drivers end each flush inline (MMC_ISSUE_SYNC) with no bus command.
    const WT: &str = include_str!("../../../presets/devices/emmc51-hs400-8g.toml");
    let sys = common::system(&format!("{}{MEMORY}", bare(SHIPPED_HOST)), WT);
    for driver in ["mmc-legacy", "mmc-hsq"] {
        let mut j = JobConfig::simple("d", Pattern::Sequential, 0, 4 * KIB, 32 * 4 * KIB);
        j.fsync_every = 8;
        let drv = DriverKind::parse(driver).unwrap();
        let (tr, r) = common::traced(sys.clone(), drv, vec![j], false);
        // No fsync after the last write.
        assert_eq!(r.jobs[0].sync_lat.count(), 3, "{driver}");
        assert_eq!(r.system.cache.flushes, 3, "{driver}");
        assert!(tr.commands(6).is_empty(), "{driver}: no CMD6 FLUSH_CACHE");
        // Nothing on the bus but the 32 writes' CMD23 + CMD25 and their CMD13 polls.
        assert_eq!(tr.commands(25).len(), 32, "{driver}");
        // Each flush is a request of its own, started and completed without hardware:
        // its fsync takes less than one 4 KiB write does.
        let write = r.jobs[0].dirs[1].lat.mean();
        let s = r.jobs[0].sync_lat.max();
        assert!(
            (s as f64) < write,
            "{driver}: fsync {s} ns, write {write} ns"
        );
    }
}

/// REQ_OP_FLUSH is MMC_ISSUE_SYNC on the legacy and hsq drivers: queue_rq waits for the
/// host to be idle, then the dispatcher (a task) sends CMD6 FLUSH_CACHE (R1b), takes its
/// busy-end interrupt, checks the switch status with CMD13 and ends the request inline:
/// nothing else uses the bus meanwhile, although other threads keep reads queued.
#[test]
fn a_flush_runs_alone_in_the_dispatcher_once_the_host_is_idle() {
    for driver in ["mmc-legacy", "mmc-hsq"] {
        let mut w = JobConfig::simple("w", Pattern::Sequential, 0, 4 * KIB, 64 * 4 * KIB);
        w.fsync_every = 4;
        // A 65th write, so the 16th fsync (after the 64th) is issued: fio picks a sync
        // only before a next I/O.
        w.io_limit += 4 * KIB;
        let mut jobs = vec![w];
        for i in 0..3 {
            let mut rd = JobConfig::simple("r", Pattern::Random, 100, 4 * KIB, 2 * MIB);
            rd.offset = (64 + 8 * i) * MIB;
            rd.seed = 11 + i;
            jobs.push(rd);
        }
        let drv = DriverKind::parse(driver).unwrap();
        let (tr, r) = common::traced(system(), drv, jobs, false);
        assert_eq!(r.system.cache.flushes, 16, "{driver}");
        let ev = tr.sorted();
        let bus = tr.bus_intervals();
        let flushes = tr.commands(6);
        assert_eq!(flushes.len(), 16, "{driver}: one CMD6 per fsync");
        for f in &flushes {
            let started = ev
                .iter()
                .rev()
                .find(|e| {
                    e.t <= f.t && e.req == f.req && matches!(e.kind, TraceKind::Started { .. })
                })
                .expect("the flush was started");
            assert!(
                matches!(started.kind, TraceKind::Started { ctx: Ctx::Task, .. }),
                "{driver}: the dispatcher sends the flush"
            );
            // The switch status: the first CMD13 of this request after its CMD6.
            let status_end = bus
                .iter()
                .find_map(|(s, e, x)| {
                    let cmd13 = matches!(x.kind, TraceKind::Command { opcode: 13, .. });
                    (cmd13 && x.req == f.req && *s >= f.t).then_some(*e)
                })
                .expect("CMD13 after the flush's busy");
            for (s, e, x) in &bus {
                if *s < status_end && *e > started.t {
                    assert_eq!(
                        x.req, f.req,
                        "{driver}: bus used by another request during the flush ({s}..{e})"
                    );
                }
            }
        }
        // The readers' requests went on around the flushes.
        assert!(transfers(&tr, Dir::Read).len() > 1000, "{driver}");
    }
}

#[test]
fn buffered_runs_are_deterministic() {
    let jobs = || {
        let mut w = buffered(0, 16 * KIB, 24 * MIB);
        w.end_fsync = true;
        let mut rd = buffered(100, 16 * KIB, 24 * MIB);
        rd.offset = 64 * MIB;
        vec![w, rd]
    };
    let a = traced(jobs()).1;
    let b = traced(jobs()).1;
    assert_eq!(a.system.sim_end_ns, b.system.sim_end_ns);
    assert_eq!(a.system.events, b.system.events);
    for (x, y) in a.jobs.iter().zip(&b.jobs) {
        assert_eq!(x.dirs[0].lat.sum(), y.dirs[0].lat.sum());
        assert_eq!(x.dirs[1].lat.sum(), y.dirs[1].lat.sum());
    }
}

#[test]
fn unsupported_combinations_are_errors_naming_them() {
    let (host, _) = common::system(bare(SHIPPED_HOST), DEVICE);
    let e = try_run(DriverKind::MmcLegacy, vec![buffered(0, 4096, MIB)], host)
        .map(|_| ())
        .expect_err("an error");
    assert!(e.contains("[memory]"), "{e}");
    // An asynchronous buffered job runs (libaio's io_submit carries each iocb to its
    // end): no error.
    let mut j = buffered(0, 4096, MIB);
    j.submission = Submission::Async {
        depth: 4,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    try_run(DriverKind::MmcLegacy, vec![j], system().0).expect("buffered libaio runs");
    // O_DIRECT|O_SYNC on a queue with a write cache but no native FUA (a host without
    // CMD23: no reliable write) needs the flush sequence's post-flush: refused.
    let mut j = JobConfig::simple("d", Pattern::Sequential, 0, 4096, MIB);
    j.o_sync = true;
    let mut host = system().0;
    host.mmc.cmd23 = false;
    let e = try_run(DriverKind::MmcLegacy, vec![j], host)
        .map(|_| ())
        .expect_err("an error");
    assert!(e.contains("sync=1") && e.contains("no native FUA"), "{e}");
    let (cqe, _) = common::system(
        &include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml")
            .replace("dcmd = true", "dcmd = false"),
        DEVICE,
    );
    let mut j = JobConfig::simple("d", Pattern::Sequential, 0, 4096, MIB);
    j.end_fsync = true;
    let drv = DriverKind::parse("mmc-cqe").unwrap();
    let e = try_run(drv, vec![j], cqe)
        .map(|_| ())
        .expect_err("an error");
    assert!(e.contains("mmc-cqe") && e.contains("cqe.dcmd"), "{e}");
    // A bad [memory] value is a one-line error naming the field.
    let bad = format!(
        "{}{}",
        bare(SHIPPED_HOST),
        MEMORY.replace("page_op", "dirty_ratio = 5\npage_op")
    );
    let e = flashpath_core::config::preset::load_host(&bad, "host", &[])
        .map(|_| ())
        .expect_err("an error");
    assert!(e.to_string().contains("memory.dirty_ratio"), "{e}");
}

#[test]
fn dirty_data_below_the_background_threshold_waits_for_dirty_expire() {
    // One 4 KiB write, 40 s of think time, another: the first page is written by the
    // periodic writeback (every 5 s) once it has been dirty for 30 s, not before.
    let mut j = buffered(0, 4 * KIB, 8 * KIB);
    j.thinktime_ns = 40_000_000_000;
    let (tr, r) = traced(vec![j]);
    let w = transfers(&tr, Dir::Write);
    assert_eq!(w.len(), 1, "the second page is still dirty at the end");
    assert!(
        w[0].0 >= 30_000_000_000 && w[0].0 < 36_000_000_000,
        "written at {}",
        w[0].0
    );
    assert_eq!(r.system.cache.dirty_left_bytes, 4 * KIB);
}

#[test]
fn reclaim_passes_dirty_pages_once_per_pass_not_at_every_eviction() {
    // 4 MiB written (1,024 pages: below the 6.4 MiB background threshold, so they stay
    // dirty until dirty_expire, 30 s, long after this run), then 256 MiB read through
    // the 64 MiB cache (16,384 pages). Reclaim meets the dirty pages, moves them to the
    // young end, and meets them again only once the clean pages after them are gone:
    // about once per 15,000 evictions. Walking past them at each eviction would scan
    // 1,024 pages more per eviction.
    let w = buffered(0, 64 * KIB, 4 * MIB);
    let mut r = buffered(100, 128 * KIB, 256 * MIB);
    r.offset = 512 * MIB;
    r.stonewall = true;
    let (_, res) = traced(vec![w, r]);
    let c = &res.system.cache;
    assert_eq!(
        c.dirty_left_bytes,
        4 * MIB,
        "the written pages stayed dirty"
    );
    assert!(c.evictions > 45_000, "{} evictions", c.evictions);
    let passes = c.evictions.div_ceil(16_384 - 1_024) + 1;
    assert!(
        c.scanned > c.evictions && c.scanned <= c.evictions + 1_024 * passes,
        "{} pages scanned for {} evictions",
        c.scanned,
        c.evictions
    );
}

#[test]
fn hsq_and_sd_drivers_carry_buffered_io() {
    // hsq: the flush goes through the software queue like a write (CMD6, R1b).
    let mut j = buffered(0, 64 * KIB, 8 * MIB);
    j.end_fsync = true;
    let hsq = DriverKind::parse("mmc-hsq").unwrap();
    let (tr, r) = common::traced(system(), hsq, vec![j.clone()], false);
    assert_eq!(r.system.cache.device_write_slots * 4096, 8 * MIB);
    assert_eq!(tr.commands(6).len(), 1);
    // SD (rtsx): no volatile cache, so fsync sends no flush.
    let sd = common::system(
        &format!(
            "{}{MEMORY}",
            bare(include_str!("../../../presets/hosts/x86-laptop-rtsx.toml"))
        ),
        include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml"),
    );
    let drv = sd.0.default_driver;
    let (_, r) = common::traced(sd, drv, vec![j], false);
    assert_eq!(r.system.cache.flushes, 0);
    assert_eq!(r.system.cache.dirty_left_bytes, 0);
    assert_eq!(r.system.device_host_write_bytes, 8 * MIB);
}

#[test]
fn concurrent_fsyncs_flush_one_at_a_time_on_ufs_and_mmc() {
    // Four writers with fsync=64 on their own regions: their flushes queue behind each
    // other (one flush in flight), every one completes.
    let jobs = || {
        (0..4)
            .map(|i| {
                let mut j = buffered(0, 4 * KIB, MIB);
                j.offset = i * 16 * MIB;
                j.fsync_every = 64;
                // One write past the 4th fsync (page 0 again, left dirty): fio issues
                // no sync after a job's last write.
                j.io_limit += 4 * KIB;
                j
            })
            .collect::<Vec<_>>()
    };
    let ufs = common::system(
        &format!(
            "{}{MEMORY}",
            bare(include_str!("../../../presets/hosts/sd835-phone.toml"))
        ),
        include_str!("../../../presets/devices/ufs21-64g.toml"),
    );
    let (_, r) = common::traced(ufs, DriverKind::Ufs, jobs(), false);
    assert_eq!(r.system.cache.flushes, 16);
    assert!(r.jobs.iter().all(|j| j.sync_lat.count() == 4));
    assert_eq!(r.system.cache.device_write_slots * 4096, 4 * MIB);
    let (tr, r) = traced(jobs());
    assert_eq!(tr.commands(6).len(), 16);
    assert!(r.jobs.iter().all(|j| j.sync_lat.count() == 4));
}

#[test]
fn cqe_flushes_with_a_dcmd_behind_a_queue_barrier() {
    // Two writers with fsync=64 and a reader: each flush is a CMD6 DCMD sent when the
    // tasks queued before it have completed; DAT0 is busy meanwhile (no data moves).
    let cqe = common::system(
        &format!(
            "{}{MEMORY}",
            bare(include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml"))
        ),
        DEVICE,
    );
    let mut jobs: Vec<JobConfig> = (0..2)
        .map(|i| {
            let mut j = buffered(0, 4 * KIB, MIB);
            j.offset = i * 16 * MIB;
            j.fsync_every = 64;
            // One write past the 4th fsync (no sync after a job's last write).
            j.io_limit += 4 * KIB;
            j
        })
        .collect();
    let mut rd = JobConfig::simple("r", Pattern::Random, 100, 4 * KIB, 8 * MIB);
    rd.offset = 64 * MIB;
    rd.io_limit = 400 * 4 * KIB;
    jobs.push(rd);
    let drv = DriverKind::parse("mmc-cqe").unwrap();
    let (tr, r) = common::traced(cqe, drv, jobs, false);
    assert_eq!(r.system.cache.flushes, 8);
    assert!(r.jobs[..2].iter().all(|j| j.sync_lat.count() == 4));
    assert_eq!(r.system.cache.device_write_slots * 4096, 2 * MIB);
    let flushes = tr.commands(6);
    assert_eq!(flushes.len(), 8);
    let ev = tr.sorted();
    for f in &flushes {
        let done = ev
            .iter()
            .find(|e| e.req == f.req && e.t >= f.t && e.kind == TraceKind::DeviceDone)
            .expect("the flush ends")
            .t;
        let busy = transfers(&tr, Dir::Read)
            .into_iter()
            .chain(transfers(&tr, Dir::Write))
            .any(|(s, e)| s < done && e > f.t);
        assert!(!busy, "data moved during the flush {}..{done}", f.t);
        // The barrier: every task queued (CMD45) before the DCMD completed before it.
        for q in ev
            .iter()
            .filter(|e| e.t < f.t && matches!(e.kind, TraceKind::Command { opcode: 45, .. }))
        {
            let completed = ev.iter().any(|e| {
                e.req == q.req && e.kind == TraceKind::Completed && e.t >= q.t && e.t <= f.t
            });
            assert!(
                completed,
                "a task queued at {} was still open at the DCMD",
                q.t
            );
        }
    }
}

#[test]
fn fadvise_sequential_doubles_the_window_and_random_reads_only_what_is_asked() {
    // POSIX_FADV_SEQUENTIAL: ra_pages = 2 × 32, so the ramp goes on to 256 KiB windows:
    // get_init_ra_size(1, 64) = 4 pages, then ×4 while below max/16 = 4 (no), ×2 up to max.
    let mut j = buffered(100, 4 * KIB, 2 * MIB);
    j.fadvise = Fadvise::Sequential;
    let r = traced(vec![j]).1;
    let w = &r.system.cache.readahead_bytes;
    assert_eq!(
        &w[..6],
        &[
            16 * KIB,
            32 * KIB,
            64 * KIB,
            128 * KIB,
            256 * KIB,
            256 * KIB
        ]
    );
    assert!(w[4..].iter().all(|&b| b == 256 * KIB));
    // POSIX_FADV_NORMAL is the bdi's 128 KiB (the test above).
    let mut j = buffered(100, 4 * KIB, 2 * MIB);
    j.fadvise = Fadvise::Normal;
    let r = traced(vec![j]).1;
    assert_eq!(
        r.system.cache.readahead_bytes.iter().max(),
        Some(&(128 * KIB))
    );

    // POSIX_FADV_RANDOM (FMODE_RANDOM): force_page_cache_readahead reads the pages of the
    // read() and nothing more, with no mark, so even a sequential reader misses every page
    // and no read is ever ahead of the reader.
    for bs in [4 * KIB, 128 * KIB] {
        let mut j = buffered(100, bs, 2 * MIB);
        j.fadvise = Fadvise::Random;
        let (tr, r) = traced(vec![j]);
        let c = &r.system.cache;
        assert!(c.readahead_bytes.iter().all(|&b| b == bs), "{bs}");
        assert_eq!(c.readahead_bytes.len() as u64, 2 * MIB / bs);
        // Each read() misses once, on its first page (its pages arrive in one bio).
        assert_eq!(c.miss_pages, 2 * MIB / bs);
        assert_eq!(
            r.system.device_host_read_bytes,
            2 * MIB,
            "nothing read past the end"
        );
        // One read at a time: no transfer starts before the previous read's data is in.
        let t = transfers(&tr, Dir::Read);
        assert_eq!(t.len() as u64, 2 * MIB / bs);
        assert!(t.windows(2).all(|p| p[1].0 >= p[0].1));
    }
    // A read larger than max(io_pages, ra_pages) (512 KiB, 32 pages) is read in pieces of
    // that size, each when the reader reaches its first page.
    let mut j = buffered(100, 1024 * KIB, 2 * MIB);
    j.fadvise = Fadvise::Random;
    let r = traced(vec![j]).1;
    assert!(r
        .system
        .cache
        .readahead_bytes
        .iter()
        .all(|&b| b == 512 * KIB));
}

#[test]
fn a_cache_of_a_few_windows_still_makes_progress() {
    // 256 KiB of cache (64 pages, two 128 KiB readahead windows) for a reader, a writer
    // and a read-modify-writer: pages are reclaimed as reads end and writeback cleans.
    let tiny = MEMORY.replace("cache = \"64MiB\"", "cache = \"256KiB\"");
    let sys = common::system(&format!("{}{tiny}", bare(SHIPPED_HOST)), DEVICE);
    let rd = buffered(100, 128 * KIB, 4 * MIB);
    let mut w = buffered(0, 64 * KIB, 4 * MIB);
    w.offset = 16 * MIB;
    w.end_fsync = true;
    let mut rmw = buffered(0, 2 * KIB, 256 * KIB);
    rmw.offset = 32 * MIB;
    rmw.end_fsync = true;
    let (_, r) = common::traced(sys, DriverKind::MmcLegacy, vec![rd, w, rmw], false);
    assert_eq!(r.jobs[0].dirs[0].bytes, 4 * MIB);
    assert!(r.system.cache.evictions > 0);
    assert_eq!(r.system.cache.dirty_left_bytes, 0);
    // Every page of the 2 KiB writer was read before its first half was written. With
    // 6 pages of background threshold, a page may be written back between its two
    // halves and written again: at least every byte once.
    assert!(r.system.device_host_read_bytes >= 4 * MIB + 256 * KIB);
    assert!(r.system.cache.device_write_slots * 4096 >= 4 * MIB + 256 * KIB);
}
