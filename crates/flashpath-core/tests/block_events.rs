//! Block-layer events (blktrace's Q, X, M, G, I, D, C, P, U) in the order the kernel's
//! trace points emit them, and plugging only where Linux 5.4 plugs: io_submit of more
//! than two iocbs, __blkdev_direct_IO (async, or sync above 1 MiB), flushed early at 16
//! requests or after a request of 128 KiB or more.

mod common;

use flashpath_core::trace::{pid, BlkAction, BlkOp, Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern, Submission};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

fn letters(jobs: Vec<JobConfig>) -> (String, Trace) {
    let sys = common::system(HOST, DEVICE);
    let driver = sys.0.default_driver;
    let (tr, _) = common::traced(sys, driver, jobs, false);
    let mut ev: Vec<_> = tr
        .events
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block { action, .. } => Some((e.t, action)),
            _ => None,
        })
        .enumerate()
        .collect();
    ev.sort_by_key(|&(i, (t, _))| (t, i));
    let s = ev
        .iter()
        .map(|(_, (_, a))| match a {
            BlkAction::Queue => "Q".to_string(),
            BlkAction::BackMerge => "M".into(),
            BlkAction::FrontMerge => "F".into(),
            BlkAction::GetRq => "G".into(),
            BlkAction::Insert => "I".into(),
            BlkAction::Issue => "D".into(),
            BlkAction::Requeue => "R".into(),
            BlkAction::Complete => "C".into(),
            BlkAction::Plug => "P".into(),
            BlkAction::Unplug { depth } => format!("U{depth}"),
            BlkAction::Split { .. } => "X".into(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    (s, tr)
}

fn job(bs: u64, ios: u64, submission: Submission) -> JobConfig {
    let mut j = JobConfig::simple("j", Pattern::Sequential, 100, bs, bs * ios);
    j.submission = submission;
    j
}

#[test]
fn psync_up_to_1mib_does_not_plug() {
    let (s, _) = letters(vec![job(4096, 3, Submission::Sync)]);
    assert_eq!(s, "Q G I D C Q G I D C Q G I D C");
}

#[test]
fn psync_above_1mib_plugs_and_flushes_after_each_large_request() {
    // 2 MiB in two 1 MiB bios (BIO_MAX_PAGES), each split at max_sectors_kb 512
    // (Linux 5.4's blk_queue_split: Q of the bio, X, Q of the rest, then the front
    // piece's request, then the rest's); each new request finds a plugged one of
    // 128 KiB or more, so the plug is flushed first (BLK_PLUG_FLUSH_SIZE).
    let (s, tr) = letters(vec![job(2 << 20, 1, Submission::Sync)]);
    let head: Vec<&str> = s.split(' ').take(17).collect();
    assert_eq!(head.join(" "), "Q X Q G P G U1 I P Q X Q G U1 I P G", "{s}");
    // The events' ranges: the whole bio, the front piece (with the rest's start), the
    // rest.
    let q_x: Vec<(BlkAction, u64, u32)> = tr
        .sorted()
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action: a @ (BlkAction::Queue | BlkAction::Split { .. }),
                sector,
                sectors,
                ..
            } => Some((a, sector, sectors)),
            _ => None,
        })
        .take(3)
        .collect();
    assert_eq!(
        q_x,
        vec![
            (BlkAction::Queue, 0, 2048),
            (BlkAction::Split { new_sector: 1024 }, 0, 1024),
            (BlkAction::Queue, 1024, 1024),
        ]
    );
}

/// `letters` on the sprd board running Linux `major.minor`, with the task of each D.
fn letters_on(major: u32, minor: u32, jobs: Vec<JobConfig>) -> (String, Vec<u32>) {
    let mut sys = common::system(HOST, DEVICE);
    sys.0.kernel = flashpath_core::host::Kernel::new(major, minor);
    let driver = sys.0.default_driver;
    let (tr, _) = common::traced(sys, driver, jobs, false);
    let mut s = Vec::new();
    let mut d_tasks = Vec::new();
    for e in tr.sorted() {
        if let TraceKind::Block { action, pid: p, .. } = e.kind {
            s.push(match action {
                BlkAction::Queue => "Q".to_string(),
                BlkAction::GetRq => "G".into(),
                BlkAction::Insert => "I".into(),
                BlkAction::Issue => {
                    d_tasks.push(p);
                    "D".into()
                }
                BlkAction::Complete => "C".into(),
                BlkAction::Plug => "P".into(),
                BlkAction::Unplug { depth } => format!("U{depth}"),
                a => format!("{a:?}"),
            });
        }
    }
    (s.join(" "), d_tasks)
}

/// The single-queue block layer of older kernels: before 4.10 every direct I/O plugs
/// (do_blockdev_direct_IO), and blk_flush_plug_list inserts the requests (I) before it
/// traces the unplug (U); the MMC driver's mmcqd thread fetches each request (D).
/// From 4.10 a small synchronous direct I/O is not plugged (__blkdev_direct_IO_simple):
/// its request is inserted at once. From 4.16 MMC is blk-mq (kblockd's worker issues).
#[test]
fn older_kernels_plug_insert_and_fetch_as_the_single_queue_layer_does() {
    let jobs = || vec![job(4096, 2, Submission::Sync)];
    let (s, d) = letters_on(3, 19, jobs());
    assert_eq!(s, "Q G P I U1 D C Q G P I U1 D C");
    assert!(d.iter().all(|&p| p == pid::MMCQD), "{d:?}");
    let (s, d) = letters_on(4, 14, jobs());
    assert_eq!(s, "Q G I D C Q G I D C");
    assert!(d.iter().all(|&p| p == pid::MMCQD), "{d:?}");
    let (s, d) = letters_on(5, 4, jobs());
    assert_eq!(s, "Q G I D C Q G I D C");
    assert!(
        d.iter().all(|&p| (pid::KWORKER..pid::FLUSHER).contains(&p)),
        "{d:?}"
    );
    // The legacy plug is flushed at 16 requests only, not after one of 128 KiB: a 2 MiB
    // psync direct I/O (four 512 KiB requests) stays in one plug and is inserted at its
    // end; mmcqd fetches the next request while one is on the bus (D before the C).
    let (s, _) = letters_on(3, 19, vec![job(2 << 20, 1, Submission::Sync)]);
    assert_eq!(s, "Q G P Q G Q G Q G I I I I U4 D D C D C D C C", "{s}");
}

/// Before Linux 4.3 there was no blk_queue_split: bio_add_page kept each bio within
/// max_sectors, so every piece is a bio of its own (Q each, no X).
#[test]
fn before_4_3_bios_are_built_within_max_sectors() {
    let mut sys = common::system(HOST, DEVICE);
    sys.0.kernel = flashpath_core::host::Kernel::new(3, 19);
    let driver = sys.0.default_driver;
    let (tr, _) = common::traced(sys, driver, vec![job(2 << 20, 1, Submission::Sync)], false);
    let qs: Vec<(u64, u32)> = tr
        .sorted()
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Block {
                action: BlkAction::Queue,
                sector,
                sectors,
                ..
            } => Some((sector, sectors)),
            TraceKind::Block {
                action: BlkAction::Split { .. },
                ..
            } => panic!("no split before 4.3"),
            _ => None,
        })
        .collect();
    assert_eq!(
        qs,
        vec![(0, 1024), (1024, 1024), (2048, 1024), (3072, 1024)]
    );
}

#[test]
fn io_submit_of_more_than_two_plugs_once_and_merges() {
    // Eight sequential 4 KiB reads in one io_submit: one plug, the bios merge into one
    // request, inserted at the unplug.
    let sub = Submission::Async {
        depth: 8,
        batch_submit: 8,
        batch_complete_min: 8,
    };
    let (s, _) = letters(vec![job(4096, 8, sub)]);
    assert!(
        s.starts_with("Q G P Q M Q M Q M Q M Q M Q M Q M U1 I D C"),
        "{s}"
    );
}

#[test]
fn io_submit_of_one_plugs_in_blkdev_direct_io() {
    let sub = Submission::Async {
        depth: 1,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let (s, _) = letters(vec![job(4096, 2, sub)]);
    assert_eq!(s, "Q G P U1 I D C Q G P U1 I D C");
}

#[test]
fn block_events_are_only_recorded_for_reported_jobs() {
    // Preconditioning I/O (run before the jobs) leaves no block events.
    let sys = common::system(HOST, DEVICE);
    let driver = sys.0.default_driver;
    let (tr, _) = common::traced(sys, driver, vec![job(4096, 4, Submission::Sync)], true);
    let qs = tr
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                TraceKind::Block {
                    action: BlkAction::Queue,
                    ..
                }
            )
        })
        .count();
    assert_eq!(qs, 4);
    assert!(tr
        .events
        .iter()
        .all(|e| e.t >= tr.start || !matches!(e.kind, TraceKind::Block { .. })));
}

/// The operation and flags of every bio the kernel built (its Q; the Q of a split's
/// rest, which follows the X, is left out), with its direction, bytes and task.
fn queued(jobs: Vec<JobConfig>) -> Vec<(BlkOp, Dir, u64, u32)> {
    let sys = common::system(HOST, DEVICE);
    let driver = sys.0.default_driver;
    let (tr, _) = common::traced(sys, driver, jobs, false);
    let mut rest_of_split = None;
    let mut q = Vec::new();
    for e in tr.events {
        match e.kind {
            TraceKind::Block {
                action: BlkAction::Split { new_sector },
                ..
            } => rest_of_split = Some(new_sector),
            TraceKind::Block {
                action: BlkAction::Queue,
                op,
                dir,
                sector,
                sectors,
                pid,
                ..
            } if rest_of_split.take() != Some(sector) => {
                q.push((op, dir, sectors as u64 * 512, pid))
            }
            _ => {}
        }
    }
    q
}

/// Each bio carries the flags of the path that made it (blkparse's RWBS): readahead's
/// reads are REQ_RAHEAD (`RA`); the flusher's background writeback has no REQ_SYNC
/// (`W`) and the flusher submits it; an fsync's writeback (WB_SYNC_ALL, submitted by the
/// caller) and O_DIRECT writes are REQ_SYNC (`WS`).
#[test]
fn bios_carry_the_flags_of_their_path() {
    let mut r = job(128 << 10, 16, Submission::Sync);
    r.direct = false;
    let q = queued(vec![r]);
    assert!(!q.is_empty());
    assert!(
        q.iter()
            .all(|&(op, dir, _, p)| op == BlkOp::ReadAhead && dir == Dir::Read && p == pid::THREAD),
        "{q:?}"
    );

    // 512 MiB of buffered writes pass the sprd board's background threshold (10 % of
    // its 1 GiB cache): the flusher writes back while the job writes; end_fsync writes
    // the rest. Every byte goes to the device once, by one path or the other.
    let size = 512u64 << 20;
    let mut w = JobConfig::simple("w", Pattern::Sequential, 0, 128 << 10, size);
    w.direct = false;
    w.end_fsync = true;
    let q = queued(vec![w]);
    let bytes = |want: BlkOp, task: u32| -> u64 {
        q.iter()
            .filter(|&&(op, dir, _, p)| op == want && dir == Dir::Write && p == task)
            .map(|&(_, _, b, _)| b)
            .sum()
    };
    let (background, sync) = (
        bytes(BlkOp::Background, pid::FLUSHER),
        bytes(BlkOp::Data, pid::THREAD),
    );
    assert!(background > 0 && sync > 0, "{background} {sync}");
    assert_eq!(background + sync, size);
    // Writeback builds bios of up to 1 MiB (BIO_MAX_PAGES), split at max_sectors_kb 512.
    assert!(q
        .iter()
        .any(|&(op, _, b, _)| op == BlkOp::Background && b == 1 << 20));

    let mut d = job(128 << 10, 4, Submission::Sync);
    d.read_pct = 0;
    let q = queued(vec![d]);
    assert!(
        q.iter()
            .all(|&(op, dir, _, p)| op == BlkOp::Data && dir == Dir::Write && p == pid::THREAD),
        "{q:?}"
    );
}
