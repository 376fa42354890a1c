//! Trims (fio's BLKDISCARD) through every layer, on the event trace (driver/mmc/erase.rs,
//! driver/ufs/mod.rs): the MMC drivers run a discard synchronously once the host is idle —
//! CMD35, CMD36, CMD38 and (without busy detection) CMD13 polling, nothing else on the
//! bus meanwhile; mmc-cqe halts the engine around it with no task in flight; UFS sends
//! UNMAP through a transfer request slot. The FTL unmaps what a discard covers, and a
//! read of an unmapped block costs no NAND read.

mod common;

use flashpath_core::device::cq::CqPolicy;
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use flashpath_core::host::block::ReqId;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Pattern, Trim};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const HOST_CQE: &str = include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml");
const UFS_DEVICE: &str = include_str!("../../../presets/devices/ufs21-64g.toml");
const UFS_HOST: &str = include_str!("../../../presets/hosts/sd835-phone.toml");

/// A psync thread trimming `n` random 4 KiB blocks of its own 8 MiB region.
fn trim_job(n: u64, slot: u64) -> JobConfig {
    let mut j = JobConfig::simple("trim", Pattern::Random, 0, 4096, 4096 * n);
    j.trim = Trim::Only;
    j.offset = slot * (8 << 20);
    j
}

/// `threads` psync writers (4 KiB random), regions after the trimmer's.
fn writers(threads: usize, n: u64) -> Vec<JobConfig> {
    (0..threads)
        .map(|i| {
            let mut j = JobConfig::simple("w", Pattern::Random, 0, 4096, 4096 * n);
            j.offset = (i as u64 + 1) * (8 << 20);
            j.seed = 11 + i as u64;
            j
        })
        .collect()
}

fn traced(
    sys: (HostConfig, DeviceConfig),
    driver: DriverKind,
    jobs: Vec<JobConfig>,
) -> (Trace, RunResult) {
    common::traced(sys, driver, jobs, true)
}

/// Every discard (a CMD35) with the time window from its CMD35 to its completion, the
/// commands of that request in the window, and whether anything else used the bus.
struct DiscardWindow {
    req: ReqId,
    start: u64,
    end: u64,
    opcodes: Vec<u8>,
    foreign_bus: usize,
}

fn discard_windows(tr: &Trace) -> Vec<DiscardWindow> {
    let ev = tr.sorted();
    let mut out = Vec::new();
    for (i, e) in ev.iter().enumerate() {
        let (TraceKind::Command { opcode: 35, .. }, Some(r)) = (e.kind, e.req) else {
            continue;
        };
        let end = ev[i..]
            .iter()
            .find(|x| x.req == Some(r) && x.kind == TraceKind::Completed)
            .expect("the discard completes")
            .t;
        let mut w = DiscardWindow {
            req: r,
            start: e.t,
            end,
            opcodes: Vec::new(),
            foreign_bus: 0,
        };
        for x in ev.iter().filter(|x| x.t >= e.t && x.t <= end) {
            match x.kind {
                TraceKind::Command { opcode, .. } if x.req == Some(r) => w.opcodes.push(opcode),
                TraceKind::Command { .. } | TraceKind::Data { .. } if x.req != Some(r) => {
                    w.foreign_bus += 1
                }
                TraceKind::Data { .. } => w.foreign_bus += 1, // a discard moves no data
                _ => {}
            }
        }
        out.push(w);
    }
    out
}

/// CMD35, CMD36, CMD38, then CMD13 polls exactly when the host has no busy detection.
fn assert_erase_sequences(tr: &Trace, n: usize, busy_detect: bool) {
    let ws = discard_windows(tr);
    assert_eq!(ws.len(), n, "one CMD35 per trim");
    for w in &ws {
        assert_eq!(
            &w.opcodes[..3],
            &[35, 36, 38],
            "r{}: {:?}",
            w.req,
            w.opcodes
        );
        let polls = &w.opcodes[3..];
        assert!(polls.iter().all(|&o| o == 13), "{:?}", w.opcodes);
        assert_eq!(polls.is_empty(), busy_detect, "{:?}", w.opcodes);
        assert_eq!(
            w.foreign_bus, 0,
            "r{}: another request used the bus during the discard",
            w.req
        );
        assert!(w.end > w.start);
    }
}

#[test]
fn legacy_discard_runs_cmd35_36_38_alone_on_the_bus() {
    let mut jobs = vec![trim_job(24, 0)];
    jobs.extend(writers(2, 48));
    let (tr, res) = traced(common::system(HOST, DEVICE), DriverKind::MmcLegacy, jobs);
    assert_erase_sequences(&tr, 24, true);
    assert_eq!(res.jobs[0].trim.ios, 24);
    assert_eq!(res.jobs[0].trim.bytes, 24 * 4096);
    assert_eq!(res.jobs[0].dirs[1].ios, 0, "trims are not writes");
    assert_eq!(res.jobs[1].dirs[1].ios, 48);
    // The writes really ran between the discards (the bus was shared over the run).
    let ws = discard_windows(&tr);
    let (first, last) = (ws[0].start, ws[ws.len() - 1].start);
    let between = tr
        .events
        .iter()
        .filter(|e| e.t > first && e.t < last)
        .filter(|e| matches!(e.kind, TraceKind::Data { .. }))
        .count();
    assert!(between > 0, "writes ran between the discards");
    let writes = tr
        .events
        .iter()
        .filter(|e| e.t >= tr.start)
        .filter(|e| {
            matches!(
                e.kind,
                TraceKind::Data {
                    dir: Dir::Write,
                    ..
                }
            )
        })
        .count();
    assert_eq!(writes, 96);
}

#[test]
fn legacy_discard_without_busy_detect_polls_cmd13() {
    let (mut host, dev) = common::system(HOST, DEVICE);
    host.mmc.busy_detect = false;
    let mut jobs = vec![trim_job(16, 0)];
    jobs.extend(writers(1, 32));
    let (tr, _) = traced((host, dev), DriverKind::MmcLegacy, jobs);
    assert_erase_sequences(&tr, 16, false);
}

#[test]
fn hsq_discard_waits_for_the_software_queue_to_drain() {
    let driver = DriverKind::MmcHsq {
        depth: 64,
        max_in_flight: 2,
        burst_in_flight: 0,
    };
    let mut jobs = vec![trim_job(24, 0)];
    jobs.extend(writers(4, 48));
    let (tr, res) = traced(common::system(HOST, DEVICE), driver, jobs);
    assert_erase_sequences(&tr, 24, true);
    // No request was started on the hardware while a discard ran.
    let ev = tr.sorted();
    for w in discard_windows(&tr) {
        let started = ev
            .iter()
            .filter(|e| e.t > w.start && e.t < w.end && e.req != Some(w.req))
            .filter(|e| matches!(e.kind, TraceKind::Started { .. }))
            .count();
        assert_eq!(started, 0);
    }
    assert_eq!(res.jobs[0].trim.ios, 24);
}

#[test]
fn cqe_discard_halts_an_idle_queue_and_resumes_it() {
    let driver = DriverKind::MmcCqe {
        policy: CqPolicy::ReadsFirst,
    };
    let mut jobs = vec![trim_job(16, 0)];
    jobs.extend(writers(4, 48));
    let (tr, res) = traced(common::system(HOST_CQE, DEVICE), driver, jobs);
    assert_erase_sequences(&tr, 16, true);
    let ev = tr.sorted();
    // Tasks in flight: queued in the engine (Started) and not completed.
    let mut in_flight: BTreeSet<ReqId> = BTreeSet::new();
    let mut halted: Option<ReqId> = None;
    let (mut halts, mut resumes) = (0, 0);
    for e in &ev {
        match (e.kind, e.req) {
            (TraceKind::CqeHalted, Some(r)) => {
                assert!(halted.is_none(), "halted twice");
                assert!(
                    in_flight.is_empty(),
                    "tasks {in_flight:?} in flight at the halt"
                );
                halted = Some(r);
                halts += 1;
            }
            (TraceKind::CqeResumed, Some(_)) => {
                assert!(halted.is_none(), "resumed while the discard ran");
                resumes += 1;
            }
            (TraceKind::Completed, Some(r)) if halted == Some(r) => halted = None,
            (TraceKind::Started { .. }, Some(r)) if halted != Some(r) => {
                assert!(halted.is_none(), "task r{r} queued during the halt");
                in_flight.insert(r);
            }
            (TraceKind::Completed, Some(r)) => {
                in_flight.remove(&r);
            }
            (TraceKind::Command { opcode, .. }, _) if halted.is_some() => {
                assert!(
                    matches!(opcode, 35 | 36 | 38 | 13),
                    "CMD{opcode} while the engine was halted"
                );
            }
            _ => {}
        }
    }
    assert_eq!(halts, 16);
    // Each halt is cleared by the next task (the last may find none after it).
    assert!((15..=16).contains(&resumes), "{resumes}");
    assert_eq!(res.jobs[0].trim.ios, 16);
    assert_eq!(
        res.jobs.iter().skip(1).map(|j| j.dirs[1].ios).sum::<u64>(),
        4 * 48
    );
}

#[test]
fn ufs_unmap_goes_through_a_transfer_request_slot() {
    let (host, dev) = common::system(UFS_HOST, UFS_DEVICE);
    let param_ns = host.ufs.as_ref().unwrap().upiu_ns(24);
    let (tr, res) = traced((host, dev), DriverKind::Ufs, vec![trim_job(20, 0)]);
    let ev = tr.sorted();
    let mut seqs: BTreeMap<ReqId, Vec<String>> = BTreeMap::new();
    let mut unmaps = 0;
    for e in ev.iter().filter(|e| e.t >= tr.start) {
        let Some(r) = e.req else { continue };
        let s = seqs.entry(r).or_default();
        match e.kind {
            TraceKind::DriverQueued { in_flight, .. } => {
                assert!(in_flight >= 1);
                s.push("slot".into());
            }
            TraceKind::Command { opcode, .. } => s.push(format!("{opcode:#x}")),
            TraceKind::Data { dir, end } => {
                assert_eq!(dir, Dir::Write, "the parameter list goes out");
                assert_eq!(end - e.t, param_ns, "24 bytes of DATA OUT");
                s.push("out".into());
            }
            TraceKind::Completed => {
                let seq = std::mem::take(s);
                assert_eq!(seq, ["slot", "0x1", "0x31", "out", "0x21"], "r{r}");
                unmaps += 1;
            }
            _ => {}
        }
    }
    assert_eq!(unmaps, 20);
    assert_eq!(res.jobs[0].trim.ios, 20);
    // The only data written is the preconditioning of the trimmed region.
    assert_eq!(
        res.system.device_host_write_bytes,
        20 * 4096,
        "an UNMAP writes no data"
    );
}

#[test]
fn trimwrite_trims_then_writes_each_block() {
    let mut j = JobConfig::simple("tw", Pattern::Sequential, 0, 8192, 8192 * 16);
    j.trim = Trim::ThenWrite;
    j.io_limit *= 2;
    let (tr, res) = traced(common::system(HOST, DEVICE), DriverKind::MmcLegacy, vec![j]);
    let s = &res.jobs[0];
    assert_eq!((s.trim.ios, s.dirs[1].ios), (16, 16));
    assert_eq!((s.trim.bytes, s.dirs[1].bytes), (16 * 8192, 16 * 8192));
    // On the bus: CMD35 .. CMD38, then the write (CMD25 with CMD23, CMD13 for its busy)
    // of the same block.
    let ops: Vec<u8> = tr
        .sorted()
        .iter()
        .filter(|e| e.t >= tr.start)
        .filter_map(|e| match e.kind {
            TraceKind::Command { opcode, .. } => Some(opcode),
            _ => None,
        })
        .collect();
    let pattern = [35, 36, 38, 23, 25, 13];
    assert_eq!(ops.len(), 16 * pattern.len(), "{ops:?}");
    assert!(ops.chunks(6).all(|c| c == pattern), "{ops:?}");
    // Each write goes where the trim before it went.
    let ev = tr.sorted();
    let mut last_trim = None;
    let mut pairs = 0;
    for e in ev.iter().filter(|e| e.t >= tr.start) {
        if let TraceKind::Block {
            action: flashpath_core::trace::BlkAction::Queue,
            sector,
            sectors,
            ..
        } = e.kind
        {
            match last_trim.take() {
                None => last_trim = Some((sector, sectors)),
                Some(t) => {
                    assert_eq!(t, (sector, sectors));
                    pairs += 1;
                }
            }
        }
    }
    assert_eq!(pairs, 16);
}

#[test]
fn a_discard_fitting_the_busy_timeout_is_one_erase_sequence() {
    // 512 KiB trims at a 256 KiB offset cross a 512 KiB erase-group boundary; with the
    // shipped presets 8 MiB fit the busy timeout (no eg_boundary): one CMD38 each. The
    // split at a boundary is in tests/trim_limits.rs.
    let mut j = JobConfig::simple("t", Pattern::Sequential, 0, 512 << 10, 4 << 20);
    j.trim = Trim::Only;
    j.offset = 256 << 10;
    let (tr, res) = traced(common::system(HOST, DEVICE), DriverKind::MmcLegacy, vec![j]);
    assert_eq!(res.jobs[0].trim.ios, 8);
    let cmd38 = tr
        .events
        .iter()
        .filter(|e| matches!(e.kind, TraceKind::Command { opcode: 38, .. }))
        .count();
    assert_eq!(cmd38, 8);
}

#[test]
fn trims_on_sd_and_async_submission_are_refused() {
    let sd_dev = include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml");
    let sd_host = include_str!("../../../presets/hosts/x86-laptop-rtsx.toml");
    let (host, device) = common::system(sd_host, sd_dev);
    let err = run(SimConfig {
        host,
        device,
        driver: DriverKind::SdRtsx { multi_seq: false },
        jobs: vec![trim_job(4, 0)],
        precondition: false.into(),
    })
    .expect_err("refused");
    assert!(err.contains("trims on an SD card"), "{err}");
    let (host, device) = common::system(HOST, DEVICE);
    let mut j = trim_job(4, 0);
    j.submission = flashpath_core::workload::Submission::Async {
        depth: 4,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let err = run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![j],
        precondition: false.into(),
    })
    .expect_err("refused");
    assert!(err.contains("trims are synchronous"), "{err}");
}

#[derive(Clone, Debug)]
enum Cmd {
    Write(u64, u32),
    /// A discard in sectors: any 512-byte alignment and length.
    Discard(u64, u32),
}

fn cmd(sectors: u64) -> impl Strategy<Value = Cmd> {
    prop_oneof![
        6 => (0..sectors / 8, 1..32u32).prop_map(|(l, n)| Cmd::Write(l, n)),
        3 => (0..sectors, 1..512u32).prop_map(|(s, n)| Cmd::Discard(s, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// After random writes and trims (unaligned too), with GC running: an LPN is mapped
    /// iff it was written after the last trim covering all of it (a trim unmaps only
    /// the 4 KiB units it covers whole); no physical slot has two owners; reading the
    /// trimmed blocks reads no NAND page.
    #[test]
    fn trims_unmap_exactly_what_they_cover(cmds in prop::collection::vec(cmd(4096 * 8), 1..300)) {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().blocks_per_plane = 24;
        cfg.capacity_bytes = 16 << 20;
        let mut h = Harness::new(&cfg, 1);
        let lpns = h.dev.capacity_sectors() / 8;
        let mut mapped = BTreeSet::new();
        for c in &cmds {
            match *c {
                Cmd::Write(l, n) => {
                    let n = (n as u64).min(lpns - l);
                    h.next(DevOp::Write, l * 8, (n * 8) as u32);
                    mapped.extend(l..l + n);
                }
                Cmd::Discard(s, n) => {
                    let n = (n as u64).min(lpns * 8 - s);
                    h.next(DevOp::Discard, s, n as u32);
                    for l in s.div_ceil(8)..(s + n) / 8 {
                        mapped.remove(&l);
                    }
                }
            }
        }
        // Rewrites of a hot set drive GC over blocks the trims emptied.
        for i in 0..6000u64 {
            let l = (i * 7) % 512;
            h.next(DevOp::Write, l * 8, 8);
            mapped.insert(l);
        }
        h.next(DevOp::Flush, 0, 0);
        h.run_until_idle();
        let d = h.dev.page_mapped().unwrap();
        d.check_invariants();
        let ftl = d.page_map();
        let mut owners = BTreeSet::new();
        for lpn in 0..lpns as u32 {
            let e = ftl.get(lpn);
            if mapped.contains(&(lpn as u64)) {
                prop_assert!(e != flashpath_core::device::ftl::UNMAPPED, "lpn {} lost", lpn);
                prop_assert_eq!(ftl.owner(e), Some(lpn));
                prop_assert!(owners.insert(e), "slot {} owned twice", e);
            } else {
                prop_assert_eq!(e, flashpath_core::device::ftl::UNMAPPED, "lpn {} still mapped", lpn);
            }
        }
        let valid: u32 = (0..ftl.blocks()).map(|b| ftl.valid_in(b)).sum();
        prop_assert_eq!(valid as usize, mapped.len());
        // Reads of unmapped blocks touch no NAND page.
        let before = h.dev.stats().nand_page_reads;
        for lpn in (0..lpns).filter(|l| !mapped.contains(l)).take(64) {
            h.next(DevOp::Read, lpn * 8, 8);
        }
        prop_assert_eq!(h.dev.stats().nand_page_reads, before);
    }
}
