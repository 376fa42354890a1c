//! Mechanism tests for UFS HPB (`--driver ufs-hpb`, `ufs-hpb-hcm`; host/ufshpb.rs,
//! device/hpb.rs, driver/ufs/hpb.rs): an HPB READ with a current entry costs the device no
//! map lookup; a write dirties the host entry and the next read of it is a plain READ
//! until the subregion is reloaded; HPB 1.0 never sends an HPB READ longer than 4 KiB;
//! a map load moves subregion / 4096 × 8 bytes over the link; device hints are at most
//! 2 + 2 per response; and, whatever the interleaving, the host never sends an entry it
//! knows to be stale and the device never uses a stale one.

mod common;

use flashpath_core::device::hpb::{
    HpbControl, HpbDeviceConfig, HpbHints, HpbVersion, HPB_READ, HPB_READ_BUFFER,
};
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::ufshpb::{HcmParams, MapWork, Miss, Prep, SrgnState, UfsHpb};
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::{BlkAction, Trace, TraceKind};
use flashpath_core::workload::{BlockSizes, Dir, JobConfig, Pattern};
use proptest::prelude::*;

const DEVICE: &str = include_str!("../../../presets/devices/ufs21-64g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sd835-phone.toml");

fn system() -> (HostConfig, DeviceConfig) {
    common::system(HOST, DEVICE)
}

const DCM: DriverKind = DriverKind::UfsHpb {
    control: HpbControl::Device,
};

/// `threads` psync threads of 4 KiB random reads, each over its own `region` bytes.
fn readers(threads: usize, region: u64, ios: u64) -> Vec<JobConfig> {
    (0..threads)
        .map(|i| {
            let mut j = JobConfig::simple("r", Pattern::Random, 100, 4096, region);
            j.offset = i as u64 * region;
            j.io_limit = ios * 4096;
            j.seed = 7 + i as u64;
            j
        })
        .collect()
}

fn run(jobs: Vec<JobConfig>, driver: DriverKind) -> (Trace, RunResult) {
    let (host, dev) = system();
    flashpath_core::sim::run_traced(flashpath_core::sim::SimConfig {
        host,
        device: dev,
        driver,
        jobs,
        precondition: flashpath_core::sim::Precondition::Sequential,
    })
    .unwrap()
}

#[test]
fn a_read_with_a_current_host_entry_costs_the_device_no_map_lookup() {
    // 4 threads over 4 × 512 MiB: far more map segments than the 1 MiB map cache holds.
    let (_, res) = run(readers(4, 512 << 20, 6000), DCM);
    let d = &res.system.device;
    let h = res.system.hpb.expect("HPB counters");
    assert!(h.hits > 10_000, "HPB READs: {h:?}");
    // Every HPB READ was checked, and none was stale (no writes in this run).
    assert_eq!(d.hpb_entry_hits, h.hits);
    assert_eq!(d.hpb_entry_stale, 0);
    // Map lookups: one per plain 4 KiB READ and one per map segment a READ BUFFER
    // needed; none for an HPB READ.
    let reads = d.host_read_slots;
    assert_eq!(
        d.map_hits + d.map_misses,
        reads - d.hpb_entry_hits + d.hpb_read_buffer_segments,
        "{d:?}"
    );
    // Without HPB every read looks the map up.
    let (_, off) = run(readers(4, 512 << 20, 6000), DriverKind::Ufs);
    let o = &off.system.device;
    assert_eq!(o.map_hits + o.map_misses, o.host_read_slots);
    assert!(off.system.hpb.is_none());
    // And the misses cost NAND map reads that HPB avoids.
    assert!(d.nand_map_reads * 5 < o.nand_map_reads, "{d:?} vs {o:?}");
}

#[test]
fn hpb_1_0_never_sends_an_hpb_read_longer_than_4k() {
    let mut jobs = readers(4, 256 << 20, 3000);
    for j in &mut jobs {
        j.bs[0] = BlockSizes::Range {
            min: 4096,
            max: 16384,
            unaligned: false,
        };
    }
    let (tr, res) = run(jobs, DCM);
    let h = res.system.hpb.unwrap();
    assert!(h.hits > 0 && h.too_long > 0, "{h:?}");
    // Every HPB READ's request is 8 sectors: the size of its D (dispatch) event, the
    // request's last D before its COMMAND UPIU (request ids are reused).
    let mut d_sectors = std::collections::HashMap::new();
    let mut n = 0;
    for e in &tr.events {
        match (e.req, e.kind) {
            (
                Some(r),
                TraceKind::Block {
                    action: BlkAction::Issue,
                    sectors,
                    ..
                },
            ) => {
                d_sectors.insert(r, sectors);
            }
            (
                Some(r),
                TraceKind::Scsi {
                    opcode: HPB_READ, ..
                },
            ) => {
                n += 1;
                assert_eq!(d_sectors.get(&r), Some(&8), "HPB READ of request {r}");
            }
            _ => {}
        }
    }
    assert_eq!(n as u64, h.hits);
    // The state machine's rule, checked directly: 8 KiB is too long for HPB 1.0.
    let mut d = hpb(HpbVersion::V1, 1);
    load(&mut d, 0);
    assert_eq!(d.prep_read(0, 0, 2), Prep::Plain(Miss::TooLong));
    assert!(matches!(d.prep_read(0, 0, 1), Prep::Hpb { .. }));
    // HPB 2.0 with a 32 KiB limit: 8 blocks go, 9 do not.
    let mut d = hpb(HpbVersion::V2, 8);
    load(&mut d, 0);
    assert!(matches!(d.prep_read(0, 0, 8), Prep::Hpb { .. }));
    assert_eq!(d.prep_read(0, 0, 9), Prep::Plain(Miss::TooLong));
    // A read into an unloaded subregion is not eligible; spanning two valid ones, it is.
    assert_eq!(d.prep_read(0, 1020, 8), Prep::Plain(Miss::Invalid));
    load(&mut d, 1);
    assert!(matches!(d.prep_read(0, 1020, 8), Prep::Hpb { .. }));
}

#[test]
fn a_map_load_moves_subregion_over_4096_times_8_bytes_over_the_link() {
    let (tr, res) = run(readers(2, 128 << 20, 2000), DCM);
    let (host, _) = system();
    let ufs = host.ufs.unwrap();
    let h = res.system.hpb.unwrap();
    assert!(h.map_req > 0);
    // 4 MiB subregions: 1024 entries × 8 B = 8 KiB of DATA IN per READ BUFFER.
    let want = ufs.upiu_ns(4 << 20 >> 12 << 3);
    let rb = tr
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                TraceKind::Scsi {
                    opcode: HPB_READ_BUFFER,
                    ..
                }
            )
        })
        .count();
    assert_eq!(rb as u64, h.map_req);
    // The host's reads are 4 KiB: the only 8 KiB DATA IN UPIUs are the READ BUFFERs'.
    let four_k = ufs.upiu_ns(4096);
    let mut seen = 0;
    for e in &tr.events {
        if let TraceKind::Data {
            dir: Dir::Read,
            end,
        } = e.kind
        {
            let d = end - e.t;
            assert!(d == want || d == four_k, "DATA IN of {d} ns");
            seen += (d == want) as u64;
        }
    }
    assert_eq!(seen, h.map_req);
}

#[test]
fn device_hints_are_at_most_two_plus_two_per_response() {
    let (_, res) = run(readers(8, 256 << 20, 1500), DCM);
    let d = &res.system.device;
    let h = res.system.hpb.unwrap();
    assert!(h.rb_noti > 0);
    assert!(d.hpb_hint_activations <= 2 * h.rb_noti);
    assert!(d.hpb_hint_inactivations <= 2 * h.rb_noti);
    assert_eq!(h.rb_active, d.hpb_hint_activations);
}

// ---------------------------------------------------------------- the state machine

fn hpb(version: HpbVersion, max_blocks: u32) -> UfsHpb {
    let cfg = HpbDeviceConfig {
        version,
        control: HpbControl::Device,
        region_bytes: 16 << 20,
        subregion_bytes: 4 << 20,
        max_active_regions: 4,
        pinned_start: 0,
        pinned_count: 0,
        max_read_blocks: max_blocks,
        entry_check_ns: 1000,
        activation_reads: 1,
    };
    // A 256 MiB LU: 16 regions, 64 subregions.
    UfsHpb::new(&cfg, 65536, HcmParams::default())
}

fn hint(r: u16, s: u16) -> HpbHints {
    HpbHints {
        act: [(r, s), (0, 0)],
        act_n: 1,
        ..Default::default()
    }
}

/// Loads subregion `srgn` (global) through a hint and map_work, with entries lpn + 1000.
fn load(d: &mut UfsHpb, srgn: u32) {
    d.rsp_hints(&hint((srgn / 4) as u16, (srgn % 4) as u16));
    loop {
        match d.map_work_step(0) {
            Some(MapWork::Load { srgn: s, first, n }) => {
                let e: Vec<u32> = (first..first + n).map(|l| l + 1000).collect();
                d.map_done(s, &e);
            }
            Some(MapWork::Unmap { .. }) => {}
            None => break,
        }
    }
}

#[test]
fn a_write_dirties_the_entry_and_the_next_read_is_plain_until_the_reload() {
    let mut d = hpb(HpbVersion::V1, 1);
    assert_eq!(d.prep_read(0, 5, 1), Prep::Plain(Miss::Inactive));
    load(&mut d, 0);
    assert_eq!(d.prep_read(0, 5, 1), Prep::Hpb { entry: 1005 });
    d.prep_write(5, 1);
    assert_eq!(d.prep_read(0, 5, 1), Prep::Plain(Miss::Dirty));
    // Its neighbours stay usable.
    assert_eq!(d.prep_read(0, 6, 1), Prep::Hpb { entry: 1006 });
    // The device hints the subregion: INVALID at once, then reloaded.
    d.rsp_hints(&hint(0, 0));
    assert_eq!(d.srgn_state(0), SrgnState::Invalid);
    assert_eq!(d.prep_read(0, 6, 1), Prep::Plain(Miss::Invalid));
    load(&mut d, 0);
    assert_eq!(d.prep_read(0, 5, 1), Prep::Hpb { entry: 1005 });
    // A discard dirties like a write.
    d.prep_write(8, 4);
    assert_eq!(d.prep_read(0, 10, 1), Prep::Plain(Miss::Dirty));
}

#[test]
fn the_lru_evicts_the_least_recently_activated_region() {
    let mut d = hpb(HpbVersion::V1, 1);
    for r in 0..4 {
        load(&mut d, r * 4);
    }
    assert_eq!(d.lru_len(), 4);
    // Region 0 is reactivated (moves to the tail); region 4 then evicts region 1.
    load(&mut d, 1);
    load(&mut d, 16);
    assert_eq!(d.lru_len(), 4);
    assert!(matches!(d.prep_read(0, 0, 1), Prep::Hpb { .. }));
    assert_eq!(d.prep_read(0, 4 * 1024, 1), Prep::Plain(Miss::Inactive));
    assert_eq!(d.stats.inactivations, 1);
}

#[derive(Clone, Debug)]
enum Op {
    Read(u32),
    Write(u32, u32),
    Hint(u32),
    /// Run map_work; its loads' data leave the device at once or after the next op.
    Work(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..8192).prop_map(Op::Read),
        2 => ((0u32..8192), (1u32..16)).prop_map(|(l, n)| Op::Write(l, n)),
        2 => (0u32..8).prop_map(Op::Hint),
        2 => any::<bool>().prop_map(Op::Work),
    ]
}

proptest! {
    /// Whatever the interleaving of reads, writes (and discards), hints and map loads
    /// whose data is snapshot before or after a later write: an HPB READ's entry is
    /// either the block's current mapping, or one the device detects as stale because
    /// the write it missed reached the device after the load's snapshot (the ISSUED
    /// window the kernel leaves open) — never an entry the host had marked dirty.
    #[test]
    fn the_host_never_sends_an_entry_it_knows_is_stale(ops in prop::collection::vec(op(), 1..300)) {
        let mut d = hpb(HpbVersion::V1, 1);
        // The device's mapping of the first 8192 blocks: a version per block.
        let mut truth: Vec<u32> = (0..8192).collect();
        let mut version = 8192u32;
        // Writes made while a load was in flight, per block: the window.
        let mut racy = vec![false; 8192];
        let mut deferred: Vec<(u32, u32, u32)> = Vec::new();
        for o in ops {
            // Loads whose data left the device before this op complete now.
            for (s, first, n) in deferred.drain(..) {
                let e: Vec<u32> = (first..first + n).map(|l| truth.get(l as usize).copied().unwrap_or(l)).collect();
                d.map_done(s, &e);
            }
            match o {
                Op::Read(l) => {
                    if let Prep::Hpb { entry } = d.prep_read(0, l, 1) {
                        prop_assert!(entry == truth[l as usize] || racy[l as usize],
                            "block {l}: entry {entry}, current {}", truth[l as usize]);
                    }
                }
                Op::Write(l, n) => {
                    let n = n.min(8192 - l);
                    for b in l..l + n {
                        truth[b as usize] = version;
                        version += 1;
                        let s = b / 1024;
                        racy[b as usize] = d.srgn_state(s) == SrgnState::Issued;
                    }
                    d.prep_write(l, n);
                }
                Op::Hint(s) => { d.rsp_hints(&hint((s / 4) as u16, (s % 4) as u16)); }
                Op::Work(now) => {
                    while let Some(w) = d.map_work_step(0) {
                        if let MapWork::Load { srgn, first, n } = w {
                            if now {
                                let e: Vec<u32> = (first..first + n).map(|l| truth[l as usize]).collect();
                                d.map_done(srgn, &e);
                                for b in first..first + n { racy[b as usize] = false; }
                            } else {
                                // Snapshot later (after the next op): a write in
                                // between is the window.
                                deferred.push((srgn, first, n));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn hpb_runs_are_deterministic() {
    let a = run(readers(4, 256 << 20, 2000), DCM).1;
    let b = run(readers(4, 256 << 20, 2000), DCM).1;
    assert_eq!(a.system.hpb, b.system.hpb);
    assert_eq!(a.system.device, b.system.device);
    assert_eq!(a.system.sim_end_ns, b.system.sim_end_ns);
}

#[test]
fn hpb_drivers_refuse_a_device_without_hpb_and_hcm_needs_hpb_2() {
    let (host, mut dev) = system();
    let jobs = readers(1, 64 << 20, 10);
    let cfg = |dev: DeviceConfig, driver| flashpath_core::sim::SimConfig {
        host: host.clone(),
        device: dev,
        driver,
        jobs: jobs.clone(),
        precondition: flashpath_core::sim::Precondition::Off,
    };
    let hcm = DriverKind::UfsHpb {
        control: HpbControl::Host,
    };
    let e = flashpath_core::sim::Sim::new(cfg(dev.clone(), hcm))
        .err()
        .unwrap();
    assert!(e.contains("needs HPB 2.0"), "{e}");
    dev.hpb = None;
    let e = flashpath_core::sim::Sim::new(cfg(dev, DCM)).err().unwrap();
    assert!(e.contains("[hpb] section"), "{e}");
}

#[test]
fn host_control_mode_loads_one_subregion_at_a_time_and_unmaps_what_it_evicts() {
    let (host, mut dev) = system();
    let h = dev.hpb.as_mut().unwrap();
    h.version = HpbVersion::V2;
    h.max_read_blocks = 8;
    // 4 active regions for 16 regions read: the LRU must choose.
    h.max_active_regions = 4;
    let mut jobs = readers(4, 64 << 20, 12_000);
    for j in &mut jobs {
        j.bs[0] = BlockSizes::Range {
            min: 4096,
            max: 32768,
            unaligned: false,
        };
    }
    let hcm = DriverKind::UfsHpb {
        control: HpbControl::Host,
    };
    let (tr, res) = flashpath_core::sim::run_traced(flashpath_core::sim::SimConfig {
        host,
        device: dev,
        driver: hcm,
        jobs,
        precondition: flashpath_core::sim::Precondition::Sequential,
    })
    .unwrap();
    let h = res.system.hpb.unwrap();
    let d = &res.system.device;
    assert!(h.map_req > 0 && h.hits > 0, "{h:?}");
    // Host control: no device hints, WRITE BUFFER 01h for every eviction.
    assert_eq!(d.hpb_hint_activations, 0);
    assert_eq!(h.umap_req, h.inactivations);
    assert_eq!(d.hpb_write_buffers, h.umap_req);
    assert!(h.activations <= 4 + h.inactivations);
    // inflight_map_req = 1: never two READ BUFFERs between COMMAND and completion.
    let mut open = std::collections::HashSet::new();
    let mut most = 0;
    for e in tr.sorted() {
        match (e.req, e.kind) {
            (
                Some(r),
                TraceKind::Scsi {
                    opcode: HPB_READ_BUFFER,
                    ..
                },
            ) => {
                open.insert(r);
                most = most.max(open.len());
            }
            (Some(r), TraceKind::Completed) => {
                open.remove(&r);
            }
            _ => {}
        }
    }
    assert_eq!(most, 1);
    // Loads come only when map_work runs: at the 200 ms polls (no hints here), so at
    // most one per poll of the run.
    let polls = res.system.sim_end_ns / 200_000_000 + 1;
    assert!(h.map_req <= polls, "{} loads in {polls} polls", h.map_req);
}

#[test]
fn host_control_parameters_are_checked_as_sysfs_checks_them() {
    use flashpath_core::config::preset;
    let load = |f: &str, v: &str| {
        preset::load_host(HOST, "host", &[(format!("ufs.{f}"), v.to_string())])
            .map(|h| h.ufs.unwrap().hpb.unwrap().hcm)
    };
    let p = load("hpb_activation_thld", "4").unwrap();
    assert_eq!((p.activation_thld, p.inflight_map_req), (4, 1));
    for (f, v, why) in [
        (
            "hpb_eviction_thld_exit",
            "8",
            "must exceed hpb_activation_thld",
        ),
        (
            "hpb_eviction_thld_enter",
            "100",
            "must exceed hpb_eviction_thld_exit",
        ),
        ("hpb_inflight_map_req", "32", "queue depth - 1"),
        ("hpb_timeout_polling_interval", "600ms", "at most half"),
    ] {
        let e = load(f, v).unwrap_err().to_string();
        assert!(e.contains(f) && e.contains(why), "{e}");
    }
}
