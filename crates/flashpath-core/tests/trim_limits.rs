//! Discard limits from the presets by the kernel's arithmetic (host/discard_limits.rs):
//! mmc_calc_max_discard against hand-computed cases, blk_bio_discard_split, the UFS
//! Block Limits cap; and on the event trace: one request for a large trim when the host
//! gives no busy timeout, mmc_erase's split at an erase-group boundary (eg_boundary),
//! CMD38 as R1 (polled) when its timeout exceeds max_busy_timeout, cqhci_off's cost.

mod common;

use flashpath_core::device::config::ExtCsdErase;
use flashpath_core::device::cq::CqPolicy;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::discard_limits::{
    discard_pieces, discard_split, mmc_discard_limits, mmc_pref_erase, ufs_max_discard_sectors,
};
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::trace::{Trace, TraceKind};
use flashpath_core::workload::{JobConfig, Pattern, Trim};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const HOST_CQE: &str = include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml");

const GB32: u64 = 31_268_536_320;

/// The shipped 32 GB device's registers: 512 KiB groups, ERASE 300 ms, TRIM 600 ms.
fn card() -> ExtCsdErase {
    ExtCsdErase {
        erase_group_def: true,
        hc_erase_grp_size: 1,
        erase_timeout_mult: 1,
        trim_mult: 2,
        csd_erase_grp_size: 31,
        csd_erase_grp_mult: 31,
    }
}

#[test]
fn max_discard_is_the_groups_that_fit_the_busy_timeout_less_one() {
    // pref_erase: a card over 1 GiB → 4 MiB = 8192 sectors = 8 groups (min_qty 8).
    assert_eq!(mmc_pref_erase(GB32, 1024), 8192);
    // 12000 ms fits exactly 20 TRIM groups (20 × 600) and 40 ERASE groups (40 × 300):
    // qty 20 and 40, one less each (a range may touch one more group than it covers):
    // min(19, 39) groups = 19 × 1024 sectors.
    let l = mmc_discard_limits(&card(), GB32, 12_000, false);
    assert_eq!(
        (l.erase_size, l.erase_shift, l.pref_erase),
        (1024, 10, 8192)
    );
    assert_eq!(l.max_discard, 19 * 1024);
    assert!(!l.eg_boundary);
    assert_eq!(l.granularity, 8192);
    // One millisecond less: 19 TRIM groups fit (11400 ms), 18 remain.
    assert_eq!(
        mmc_discard_limits(&card(), GB32, 11_999, false).max_discard,
        18 * 1024
    );
    // The sprd host's 10737 ms: 17 groups fit (10200 ms), 16 remain: 8 MiB.
    assert_eq!(
        mmc_discard_limits(&card(), GB32, 10_737, false).max_discard,
        16 * 1024
    );
    // No busy timeout: MMC_ERASE_TIMEOUT_MS (60 s) → 100 TRIM groups, 99 remain.
    assert_eq!(
        mmc_discard_limits(&card(), GB32, 0, false).max_discard,
        99 * 1024
    );
    // Below pref_erase's 8 groups the timeout does not count: 1000 ms still gives 8,
    // less one = 7 groups, which is below pref_erase: no granularity.
    let l = mmc_discard_limits(&card(), GB32, 1_000, false);
    assert_eq!((l.max_discard, l.granularity), (7 * 1024, 0));
}

#[test]
fn one_group_in_the_budget_sets_eg_boundary() {
    // 4 MiB groups (pref_erase = one group, min_qty 1); TRIM 600 ms, 1000 ms budget:
    // one TRIM group fits, two do not → qty 1: eg_boundary, max_discard one group.
    let c = ExtCsdErase {
        hc_erase_grp_size: 8,
        ..card()
    };
    let l = mmc_discard_limits(&c, GB32, 1_000, false);
    assert_eq!((l.erase_size, l.pref_erase), (8192, 8192));
    assert!(l.eg_boundary);
    assert_eq!(l.max_discard, 8192);
    // mmc_erase: a range crossing the boundary ends its first mmc_do_erase there.
    assert_eq!(l.first_erase_end(4096, 12288), 8192);
    assert_eq!(l.first_erase_end(8192, 16384), 16384);
}

#[test]
fn without_erase_group_def_max_discard_is_pref_erase() {
    let c = ExtCsdErase {
        erase_group_def: false,
        ..card()
    };
    let l = mmc_discard_limits(&c, GB32, 10_737, false);
    // CSD group (31+1) × (31+1) = 1024 sectors; max_discard = pref_erase, no search.
    assert_eq!(
        (l.erase_size, l.max_discard, l.granularity),
        (1024, 8192, 8192)
    );
    assert!(!l.eg_boundary);
}

#[test]
fn cmd38_is_r1_when_its_timeout_exceeds_the_busy_timeout() {
    let l = mmc_discard_limits(&card(), GB32, 1_000, false);
    // One group: 600 ms ≤ 1000: R1b. Two groups (a 4 KiB range across a boundary):
    // 1200 ms > 1000: R1.
    assert!(l.discard_uses_r1b(0, 8));
    assert!(!l.discard_uses_r1b(1020, 1028));
    // MMC_CAP_NEED_RSP_BUSY keeps R1b; no busy timeout never converts.
    assert!(mmc_discard_limits(&card(), GB32, 1_000, true).discard_uses_r1b(0, 7168));
    assert!(mmc_discard_limits(&card(), GB32, 0, false).discard_uses_r1b(0, 7168));
}

#[test]
fn discard_splits_end_on_the_granularity() {
    // max 16384, granularity 8192: a discard from sector 4096 first ends at 16384.
    assert_eq!(discard_split(4096, 40_000, 16_384, 8192), 12_288);
    assert_eq!(discard_split(16_384, 40_000 - 12_288, 16_384, 8192), 16_384);
    assert_eq!(discard_split(0, 100, 16_384, 8192), 100);
    // max rounded down to the granularity: 17408 → 16384.
    assert_eq!(discard_split(0, 40_000, 17_408, 8192), 16_384);
    assert_eq!(discard_pieces(4096, 40_000, 16_384, 8192), 3);
    assert_eq!(discard_pieces(0, 40_000, 16_384, 0), 3);
}

#[test]
fn ufs_unmap_limit_is_the_vpd_count_capped_at_ws16() {
    assert_eq!(ufs_max_discard_sectors(u32::MAX), 0x7f_ffff * 8);
    assert_eq!(ufs_max_discard_sectors(1000), 8000);
}

fn count(tr: &Trace, opcode: u8) -> usize {
    tr.events
        .iter()
        .filter(|e| matches!(e.kind, TraceKind::Command { opcode: o, .. } if o == opcode))
        .count()
}

fn trim_run(
    sys: (HostConfig, DeviceConfig),
    driver: DriverKind,
    bs: u64,
    offset: u64,
    n: u64,
) -> (Trace, flashpath_core::stats::RunResult) {
    let mut j = JobConfig::simple("t", Pattern::Sequential, 0, bs, bs * n);
    j.trim = Trim::Only;
    j.offset = offset;
    common::traced(sys, driver, vec![j], false)
}

#[test]
fn no_busy_timeout_makes_a_32m_trim_one_request() {
    let mut sys = common::system(HOST, DEVICE);
    sys.0.mmc.max_busy_timeout_ms = Some(0);
    let (tr, res) = trim_run(sys, DriverKind::MmcLegacy, 32 << 20, 0, 2);
    assert_eq!(res.jobs[0].trim.ios, 2);
    assert_eq!(
        count(&tr, 35),
        2,
        "one request, one erase sequence per trim"
    );
    // The sprd host's 10737 ms: 8 MiB requests, four per trim.
    let (tr, _) = trim_run(
        common::system(HOST, DEVICE),
        DriverKind::MmcLegacy,
        32 << 20,
        0,
        2,
    );
    assert_eq!(count(&tr, 35), 8);
}

#[test]
fn eg_boundary_splits_a_trim_in_two_erase_sequences() {
    let mut sys = common::system(HOST, DEVICE);
    sys.0.mmc.max_busy_timeout_ms = Some(1_000);
    sys.1.ext_csd = Some(ExtCsdErase {
        hc_erase_grp_size: 8,
        ..card()
    });
    // 4 MiB trims at a 2 MiB offset: each one request (max_discard one 4 MiB group)
    // crossing one group boundary: two CMD35/36/38 sequences.
    let (tr, res) = trim_run(sys, DriverKind::MmcLegacy, 4 << 20, 2 << 20, 4);
    assert_eq!(res.jobs[0].trim.ios, 4);
    assert_eq!(count(&tr, 38), 8);
    assert_eq!(count(&tr, 35), 8);
}

#[test]
fn cmd38_over_the_busy_timeout_is_polled_even_with_busy_detection() {
    // 1000 ms: max_discard 7 groups (3.5 MiB); a 3.5 MiB trim at an unaligned offset
    // touches 8 groups: 4800 ms of TRIM timeout > 1000 → R1 and CMD13 polling.
    let mut sys = common::system(HOST, DEVICE);
    sys.0.mmc.max_busy_timeout_ms = Some(1_000);
    assert!(sys.0.mmc.busy_detect);
    let (tr, _) = trim_run(sys.clone(), DriverKind::MmcLegacy, 7 << 19, 4096, 3);
    assert_eq!(count(&tr, 38), 3);
    assert!(count(&tr, 13) >= 3, "CMD13 polls after each R1 CMD38");
    // MMC_CAP_NEED_RSP_BUSY: R1b, the busy-end interrupt, no CMD13.
    sys.0.mmc.need_rsp_busy = Some(true);
    let (tr, _) = trim_run(sys, DriverKind::MmcLegacy, 7 << 19, 4096, 3);
    assert_eq!(count(&tr, 38), 3);
    assert_eq!(count(&tr, 13), 0);
}

#[test]
fn cqe_halt_costs_cqe_halt() {
    let driver = DriverKind::MmcCqe {
        policy: CqPolicy::ReadsFirst,
    };
    let run = |halt_ns: u64| {
        let mut sys = common::system(HOST_CQE, DEVICE);
        sys.0.cqe.as_mut().unwrap().halt_ns = Some(halt_ns);
        trim_run(sys, driver, 4096, 0, 10)
    };
    let (tr_a, a) = run(2_000);
    let (tr_b, b) = run(502_000);
    let halts = |tr: &Trace| {
        tr.events
            .iter()
            .filter(|e| e.kind == TraceKind::CqeHalted)
            .count()
    };
    assert_eq!((halts(&tr_a), halts(&tr_b)), (10, 10));
    // Alone on an idle host, each trim waits for its halt on the dispatcher: 500 us
    // more per trim, nothing else changes.
    let (ja, jb) = (&a.jobs[0], &b.jobs[0]);
    assert_eq!(ja.trim.ios, 10);
    assert_eq!(
        jb.end_ns - jb.start_ns - (ja.end_ns - ja.start_ns),
        10 * 500_000
    );
    // A missing cqe.halt is refused for trims on mmc-cqe.
    let mut sys = common::system(HOST_CQE, DEVICE);
    sys.0.cqe.as_mut().unwrap().halt_ns = None;
    let mut j = JobConfig::simple("t", Pattern::Sequential, 0, 4096, 4096);
    j.trim = Trim::Only;
    let Err(err) = flashpath_core::sim::run(flashpath_core::sim::SimConfig {
        host: sys.0,
        device: sys.1,
        driver,
        jobs: vec![j],
        precondition: true.into(),
    }) else {
        panic!("trims on mmc-cqe without cqe.halt must be refused");
    };
    assert!(err.contains("cqe.halt"), "{err}");
}
