//! The ext4 journal (sim/kernel/journal.rs) on a host with `[fs]`: an O_SYNC write waits for
//! its data writeback, then the jbd2 log write, then the commit block; fdatasync commits
//! only when the write changed more than timestamps; without `[fs]` nothing changes.

mod common;

use flashpath_core::config::preset;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{pid, BlkAction, BlkOp, Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-8g.toml");
const HOST: &str = include_str!("../../../presets/hosts/jetson-tx1.toml");
const KIB: u64 = 1024;
/// The TX1 preset's journal: 2080 MiB into the device, 128 MiB long.
const JOURNAL_SECTOR: u64 = 2080 * 1024 * 1024 / 512;

/// The TX1 preset without its `[fs]` section (its last table): the raw block device.
fn no_fs() -> &'static str {
    HOST.split("\n[fs]").next().unwrap()
}

fn system(host: &str) -> (HostConfig, DeviceConfig) {
    common::system(host, DEVICE)
}

fn write_job(bs: u64, n: u64) -> JobConfig {
    let mut j = JobConfig::simple("w", Pattern::Sequential, 0, bs, bs * n);
    j.direct = false;
    j
}

fn traced(host: &str, jobs: Vec<JobConfig>) -> (Trace, RunResult) {
    common::traced(system(host), DriverKind::MmcLegacy, jobs, false)
}

/// (time, sector, sectors) of the block events `action` on writes with data, in time
/// order (flush requests, which carry no sectors, are left out).
fn blk(tr: &Trace, action: BlkAction) -> Vec<(u64, u64, u32)> {
    tr.sorted()
        .into_iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action: a,
                sector,
                sectors,
                dir: Dir::Write,
                ..
            } if a == action && sectors > 0 => Some((e.t, sector, sectors)),
            _ => None,
        })
        .collect()
}

#[test]
fn an_o_sync_write_waits_for_its_data_then_the_log_then_the_commit_block() {
    let n = 4;
    let mut j = write_job(128 * KIB, n);
    j.o_sync = true;
    let (tr, r) = traced(HOST, vec![j]);
    let issued = blk(&tr, BlkAction::Issue);
    let done = blk(&tr, BlkAction::Complete);
    assert_eq!(
        issued.len() as u64,
        3 * n,
        "data, log, commit per write: {issued:?}"
    );
    assert_eq!(done.len(), issued.len());
    for w in 0..n as usize {
        let (data, log, commit) = (3 * w, 3 * w + 1, 3 * w + 2);
        // The 128 KiB of data in the file, then descriptor + inode block, then the
        // commit block right after them in the log.
        assert!(issued[data].1 < JOURNAL_SECTOR && issued[data].2 == 256);
        assert_eq!(issued[log].2, 16, "descriptor + inode block");
        assert_eq!(issued[commit].2, 8, "commit block");
        assert!(issued[log].1 >= JOURNAL_SECTOR);
        assert_eq!(issued[commit].1, issued[log].1 + 16);
        // Each starts only once the one before it has ended.
        assert!(done[data].0 <= issued[log].0);
        assert!(done[log].0 <= issued[commit].0);
        if w + 1 < n as usize {
            assert!(done[commit].0 < issued[data + 3].0);
        }
    }
    // The data bios are the writer's; the journal's are kjournald2's (blkparse's task).
    let mut queued = 0;
    for e in &tr.events {
        if let TraceKind::Block {
            action: BlkAction::Queue,
            sector,
            sectors: 1..,
            pid: p,
            ..
        } = e.kind
        {
            let want = if sector >= JOURNAL_SECTOR {
                pid::JBD2
            } else {
                pid::THREAD
            };
            assert_eq!(p, want, "Q at sector {sector}");
            queued += 1;
        }
    }
    assert_eq!(queued, 3 * n);
    // The last commit ends before the job's last system call returns.
    assert!(done.last().unwrap().0 < r.jobs[0].end_ns);
    let c = &r.system.cache;
    assert_eq!(c.commits, n);
    assert_eq!(c.journal_bytes, n * 3 * 4 * KIB);
    // The eMMC queue declares a write cache and FUA (MMC_BLK_REL_WR), so each commit
    // block's REQ_PREFLUSH reaches the driver as a flush request; the write-through
    // card's cache is off, so mmc_flush_cache sends nothing.
    assert_eq!(c.flushes, n, "one preflush per commit");
    assert!(
        tr.commands(6).is_empty(),
        "no CMD6 FLUSH_CACHE: {:?}",
        tr.commands(6)
    );
    assert_eq!(
        r.system.device_host_write_bytes,
        n * 128 * KIB + c.journal_bytes,
        "the device writes the data and the journal blocks"
    );
    // The write's spans are its data request's: hw is one 128 KiB write, not three.
    let plain = traced(no_fs(), {
        let mut j = write_job(128 * KIB, n);
        j.o_sync = true;
        vec![j]
    })
    .1;
    let hw = |r: &RunResult| r.jobs[0].spans.get(flashpath_core::stats::Span::Hw).mean();
    assert!((hw(&r) - hw(&plain)).abs() < 0.05 * hw(&plain));
    assert!(r.jobs[0].dirs[1].lat.mean() > plain.jobs[0].dirs[1].lat.mean() * 1.3);
}

/// Commits and journal bytes of `n` writes done twice over the same file (the second
/// pass overwrites written blocks), synced with fdatasync or fsync after each.
fn two_passes(n: u64, datasync: bool) -> (u64, Vec<(u64, u64, u32)>) {
    let mut j = write_job(64 * KIB, n);
    j.io_limit = 2 * j.size;
    j.fsync_every = 1;
    j.fdatasync = datasync;
    let (tr, r) = traced(HOST, vec![j]);
    assert_eq!(r.jobs[0].dirs[1].ios, 2 * n);
    let journal = blk(&tr, BlkAction::Issue)
        .into_iter()
        .filter(|x| x.1 >= JOURNAL_SECTOR)
        .collect();
    (r.system.cache.commits, journal)
}

#[test]
fn fdatasync_of_an_overwrite_commits_nothing_but_fsync_does() {
    let n = 4;
    // First pass: each write converts unwritten (fallocated) blocks, so fdatasync
    // commits; second pass: only timestamps change, so it does not.
    let (commits, journal) = two_passes(n, true);
    assert_eq!(commits, n);
    assert_eq!(journal.len() as u64, 2 * n);
    // fsync after each write but the last (fio issues none after a job's last write).
    let (commits, journal) = two_passes(n, false);
    assert_eq!(commits, 2 * n - 1, "fsync commits the timestamp change too");
    assert_eq!(journal.len() as u64, 4 * n - 2);
}

#[test]
fn without_fs_no_journal_write_is_sent() {
    let n = 4;
    let mut j = write_job(128 * KIB, n);
    j.o_sync = true;
    let (tr, r) = traced(no_fs(), vec![j]);
    let issued = blk(&tr, BlkAction::Issue);
    assert_eq!(issued.len() as u64, n);
    assert!(issued.iter().all(|x| x.1 < JOURNAL_SECTOR));
    assert_eq!(r.system.cache.commits, 0);
    assert_eq!(r.system.device_host_write_bytes, n * 128 * KIB);
}

#[test]
fn a_buffered_write_without_sync_is_committed_by_the_commit_timer() {
    // Writes that return from the cache put the inode (timestamps) in the running
    // transaction; commit=5s expires while the job thinks between its writes (1 s
    // each): one commit; end_fsync's writeback converts the fallocated blocks: another.
    let mut j = write_job(128 * KIB, 8);
    j.thinktime_ns = 1_000_000_000;
    j.end_fsync = true;
    let (tr, r) = traced(HOST, vec![j]);
    assert_eq!(r.system.cache.commits, 2);
    assert_eq!(r.system.cache.journal_bytes, 2 * 3 * 4 * KIB);
    let journal: Vec<_> = blk(&tr, BlkAction::Issue)
        .into_iter()
        .filter(|x| x.1 >= JOURNAL_SECTOR)
        .collect();
    // The timer's commit: 5 s after the first write, before any data was written back.
    let first = journal[0].0 - r.jobs[0].start_ns;
    assert!((5_000_000_000..5_010_000_000).contains(&first), "{first}");
    let data = blk(&tr, BlkAction::Issue)
        .into_iter()
        .find(|x| x.1 < JOURNAL_SECTOR)
        .unwrap();
    assert!(journal[1].0 < data.0);
    // Without [fs]: no journal.
    let mut j = write_job(128 * KIB, 8);
    j.thinktime_ns = 1_000_000_000;
    j.end_fsync = true;
    assert_eq!(traced(no_fs(), vec![j]).1.system.cache.commits, 0);
}

fn run_on(host: &str, jobs: Vec<JobConfig>) -> Result<RunResult, String> {
    let (host, device) = system(host);
    run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: false.into(),
    })
}

#[test]
fn jobs_the_ext4_model_cannot_run_are_errors() {
    let mut j = write_job(128 * KIB, 4);
    j.offset = 2080 * 1024 * 1024 - 128 * KIB;
    let e = run_on(HOST, vec![j]).err().unwrap();
    assert!(e.contains("overlaps the ext4 journal"), "{e}");
    let mut d = JobConfig::simple("d", Pattern::Sequential, 0, 4096, 4096 * 8);
    d.fsync_every = 2;
    let e = run_on(HOST, vec![d]).err().unwrap();
    assert!(e.contains("direct I/O on an ext4 file"), "{e}");
}

#[test]
fn bad_fs_values_name_their_line_and_field() {
    let line_of = |key: &str| {
        let fs = HOST.lines().position(|l| l == "[fs]").unwrap();
        fs + 1
            + HOST
                .lines()
                .skip(fs)
                .position(|l| l.starts_with(key))
                .unwrap()
    };
    for (key, bad, reason) in [
        ("kind", "\"xfs\"", "'xfs' is not modelled"),
        (
            "journal_size",
            "\"1MiB\"",
            "must be 1024 to 10240000 blocks",
        ),
        (
            "journal_offset",
            "\"1000B\"",
            "must be a multiple of the 4KiB block",
        ),
        ("blocks_update", "0", "must be 1..=64"),
        ("commit_start", "\"fast\"", ""),
    ] {
        let text: String = HOST
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i + 1 == line_of(key) {
                    format!("{key} = {bad}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let e = preset::load_host(&text, "tx1.toml", &[])
            .err()
            .unwrap()
            .to_string();
        let want = format!("tx1.toml:{}: fs.{key}: {reason}", line_of(key));
        assert!(e.starts_with(&want), "{e} (want {want})");
        assert_eq!(e.lines().count(), 1);
    }
}

#[test]
fn on_a_volatile_cache_the_commit_block_is_a_reliable_write_after_a_flush() {
    // The same O_SYNC writes on the 32 GB part of the family, whose write-back cache
    // is volatile: jbd2's commit block goes with REQ_PREFLUSH|REQ_FUA. The eMMC queue
    // has native FUA (MMC_BLK_REL_WR), so the block layer's flush sequence is a flush,
    // then the commit block as a reliable write (no flush after it); the commit
    // carried the barrier, so ext4_sync_file sends no flush of its own.
    const WB: &str = include_str!("../../../presets/devices/emmc51-hs400-32g-mlc.toml");
    let n = 3;
    let mut j = write_job(128 * KIB, n);
    j.o_sync = true;
    let (tr, r) = common::traced(
        common::system(HOST, WB),
        DriverKind::MmcLegacy,
        vec![j],
        false,
    );
    let (issued, done) = (blk(&tr, BlkAction::Issue), blk(&tr, BlkAction::Complete));
    // CMD6 SWITCH FLUSH_CACHE: when each flush is sent.
    let flushes: Vec<u64> = tr.commands(6).iter().map(|e| e.t).collect();
    assert_eq!(flushes.len() as u64, n, "one flush per commit: {flushes:?}");
    assert_eq!(r.system.cache.flushes, n);
    assert_eq!(
        issued.len() as u64,
        3 * n,
        "data, log, commit per write: {issued:?}"
    );
    // blktrace shows the commit blocks' requests as REQ_FUA writes ("WFS").
    let fua: Vec<u64> = tr
        .sorted()
        .into_iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action: BlkAction::Issue,
                op: BlkOp::Fua,
                sector,
                ..
            } => Some(sector),
            _ => None,
        })
        .collect();
    let commits: Vec<u64> = (0..n as usize).map(|w| issued[3 * w + 2].1).collect();
    assert_eq!(fua, commits);
    // The device preset's program time (pSLC-mode program, see its t_prog).
    let t_prog = 410_000;
    for w in 0..n as usize {
        let (log, commit) = (3 * w + 1, 3 * w + 2);
        // The preflush after the log is written, before the commit block.
        assert!(
            done[log].0 <= flushes[w] && flushes[w] < issued[commit].0,
            "write {w}"
        );
        // The log write is done from the cache; the reliable write only once programmed.
        assert!(done[log].0 - issued[log].0 < t_prog, "write {w}");
        assert!(done[commit].0 - issued[commit].0 > t_prog, "write {w}");
        if w + 1 < n as usize {
            assert!(
                done[commit].0 < issued[3 * w + 3].0,
                "the next write waits for it"
            );
        }
    }
}
