//! A request source from outside the simulation (sim/external.rs): block requests handed
//! in at given times, the simulation advanced by its caller, the completions taken
//! back. Checked against the same requests issued by a replay job: when each request
//! enters the block layer at the time and from the core the replay job's did, it is
//! dispatched and ends at exactly the same times (the system call above the block layer
//! is the only difference, and a request source has none).
mod common;

use flashpath_core::engine::SimTime;
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{ExternalOp, ExternalRequest, Precondition, Sim, SimConfig};
use flashpath_core::trace::{BlkAction, Trace, TraceKind};
use flashpath_core::workload::{Dir, JobConfig, Replay, ReplayKind, ReplayOp};

const SPRD: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const EMMC: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const SD835: &str = include_str!("../../../presets/hosts/sd835-phone.toml");
const UFS: &str = include_str!("../../../presets/devices/ufs21-64g.toml");
const LAPTOP: &str = include_str!("../../../presets/hosts/x86-laptop-rtsx.toml");
const SD: &str = include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml");

/// The script: (direction, offset, length), one every 100 ms: writes of 4 KiB to 2 MiB
/// (the largest split into several bios and requests) at scattered offsets, then reads
/// of the same ranges and rewrites of some.
fn script() -> Vec<(Dir, u64, u64)> {
    let sizes = [4096u64, 16384, 65536, 131072, 524288, 2 << 20, 12288, 8192];
    let ranges: Vec<(u64, u64)> = (0..12u64)
        .map(|i| {
            let offset = ((i * 7919) % 509) * (4 << 20) + (i % 5) * 4096;
            (offset, sizes[i as usize % sizes.len()])
        })
        .collect();
    let mut s: Vec<(Dir, u64, u64)> = ranges.iter().map(|&(o, l)| (Dir::Write, o, l)).collect();
    for (i, &(o, l)) in ranges.iter().enumerate() {
        s.push((Dir::Read, o, l));
        if i % 3 == 0 {
            s.push((Dir::Write, o, l));
        }
    }
    s
}

/// The replay job issues request `n` 100 ms after request n - 1, the first at 100 ms;
/// each ends well within its 100 ms.
const GAP: SimTime = 100_000_000;

fn config(host: &str, device: &str, driver: DriverKind, jobs: Vec<JobConfig>) -> SimConfig {
    let (host, device) = common::system(host, device);
    SimConfig {
        host,
        device,
        driver,
        jobs,
        // Never written before the script: the same device state for both runs (a
        // request source's sequential layout maps the whole device, a job's its region).
        precondition: Precondition::Off,
    }
}

/// Per request `n` of the script: (first Q, first D, last C) of the block events over
/// its sectors in its 100 ms window, and the core its first bio was queued on.
fn block_times(trace: &Trace, script: &[(Dir, u64, u64)]) -> Vec<(SimTime, SimTime, SimTime, u32)> {
    script
        .iter()
        .enumerate()
        .map(|(n, &(_, offset, len))| {
            let (a, b) = (offset / 512, (offset + len) / 512);
            let window = GAP * (n as u64 + 1)..GAP * (n as u64 + 2);
            let mut q = (SimTime::MAX, 0);
            let (mut d, mut c) = (SimTime::MAX, 0);
            for e in &trace.events {
                if let TraceKind::Block {
                    action,
                    sector,
                    cpu,
                    ..
                } = e.kind
                {
                    if sector < a || sector >= b || !window.contains(&e.t) {
                        continue;
                    }
                    match action {
                        BlkAction::Queue if e.t < q.0 => q = (e.t, cpu),
                        BlkAction::Issue => d = d.min(e.t),
                        BlkAction::Complete => c = c.max(e.t),
                        _ => {}
                    }
                }
            }
            assert!(
                q.0 != SimTime::MAX && d != SimTime::MAX && c > 0,
                "request {n}"
            );
            (q.0, d, c, q.1)
        })
        .collect()
}

fn check(host: &str, device: &str, driver: DriverKind) {
    let script = script();
    // The replay job: psync, direct, one I/O at a time, 100 ms apart.
    let ops: Vec<ReplayOp> = script
        .iter()
        .map(|&(dir, offset, len)| ReplayOp {
            kind: match dir {
                Dir::Read => ReplayKind::Read,
                Dir::Write => ReplayKind::Write,
            },
            offset,
            len,
            delay_ns: GAP,
        })
        .collect();
    let job = JobConfig::replayed("r", Replay::from_ops("script", ops), 0, 4 << 30);
    let mut sim = Sim::new(config(host, device, driver, vec![job])).unwrap();
    sim.enable_trace();
    sim.run_until(u64::MAX);
    let replayed = block_times(&sim.take_trace().unwrap(), &script);
    sim.finish();

    // The same requests from outside, each entering the block layer when and where the
    // replay job's did, handed in two at a time as a server would (the simulation run
    // up to the later one's arrival in between).
    let mut sim = Sim::for_external(config(host, device, driver, vec![])).unwrap();
    sim.enable_trace();
    let mut done = Vec::new();
    for (k, pair) in script.chunks(2).enumerate() {
        for (i, &(dir, offset, len)) in pair.iter().enumerate() {
            let n = 2 * k + i;
            let (at, _, _, core) = replayed[n];
            sim.submit_external(
                at,
                ExternalRequest {
                    id: 100 + n as u64,
                    op: match dir {
                        Dir::Read => ExternalOp::Read,
                        _ => ExternalOp::Write { fua: false },
                    },
                    offset,
                    len,
                    core,
                },
            )
            .unwrap();
        }
        let until = replayed[(2 * k + 1).min(script.len() - 1)].0;
        sim.run_until(until);
        done.extend(sim.take_external_done());
    }
    assert!(!sim.run_until(u64::MAX), "nothing left to run");
    done.extend(sim.take_external_done());
    assert_eq!(sim.external_in_flight(), 0);
    let external = block_times(&sim.take_trace().unwrap(), &script);
    let r = sim.finish();
    assert!(r.jobs.is_empty());
    assert!(r.system.device_host_read_bytes > 0 && r.system.device_host_write_bytes > 0);

    assert_eq!(done.len(), script.len());
    for (n, (want, got)) in replayed.iter().zip(&external).enumerate() {
        assert_eq!(
            want, got,
            "{driver:?}: request {n} {:?} (Q, D, C, core)",
            script[n]
        );
        let d = done.iter().find(|d| d.id == 100 + n as u64).unwrap();
        assert_eq!(
            (d.arrived, d.done),
            (want.0, want.2),
            "{driver:?}: request {n}"
        );
    }
    // Completion order is time order.
    assert!(done.windows(2).all(|w| w[0].done <= w[1].done));
}

#[test]
fn external_requests_complete_as_the_same_requests_replayed_on_mmc() {
    check(SPRD, EMMC, DriverKind::MmcLegacy);
    check(SPRD, EMMC, DriverKind::parse("mmc-hsq").unwrap());
}

#[test]
fn external_requests_complete_as_the_same_requests_replayed_on_ufs_and_sd() {
    check(SD835, UFS, DriverKind::Ufs);
    check(LAPTOP, SD, DriverKind::parse("sd-rtsx").unwrap());
}

#[test]
fn bad_external_requests_are_errors() {
    let mut sim = Sim::for_external(config(SPRD, EMMC, DriverKind::MmcLegacy, vec![])).unwrap();
    let ok = ExternalRequest {
        id: 1,
        op: ExternalOp::Read,
        offset: 0,
        len: 4096,
        core: 0,
    };
    let cap = common::system(SPRD, EMMC).1.capacity_bytes;
    for (bad, why) in [
        (ExternalRequest { len: 0, ..ok }, "multiples of 512"),
        (ExternalRequest { offset: 100, ..ok }, "multiples of 512"),
        (ExternalRequest { offset: cap, ..ok }, "past the device"),
        (
            ExternalRequest {
                offset: u64::MAX - 511,
                ..ok
            },
            "past the device",
        ),
        (
            ExternalRequest { core: 99, ..ok },
            "not one of the host's cores",
        ),
    ] {
        let e = sim.submit_external(0, bad).unwrap_err();
        assert!(e.contains(why), "{e}");
    }
    sim.submit_external(5_000, ok).unwrap();
    sim.run_until(1_000_000);
    let e = sim.submit_external(10, ok).unwrap_err();
    assert!(e.contains("before the simulated time"), "{e}");
    assert_eq!(sim.take_external_done().len(), 1);
    // A simulation with jobs takes none; one for a request source runs no jobs.
    let job = JobConfig::replayed("r", Replay::from_ops("s", vec![]), 0, 1 << 20);
    let mut with_jobs =
        Sim::new(config(SPRD, EMMC, DriverKind::MmcLegacy, vec![job.clone()])).unwrap();
    assert!(with_jobs
        .submit_external(0, ok)
        .unwrap_err()
        .contains("not built for a request source"));
    assert!(Sim::for_external(config(SPRD, EMMC, DriverKind::MmcLegacy, vec![job])).is_err());
    let mut random = config(SPRD, EMMC, DriverKind::MmcLegacy, vec![]);
    random.precondition = Precondition::Random;
    let e = Sim::for_external(random).err().unwrap();
    assert!(e.contains("random preconditioning"), "{e}");
}

/// One request from outside at `at` on `sim`, run to its end: (arrived, done).
fn one(sim: &mut Sim, at: SimTime, op: ExternalOp, offset: u64, len: u64) -> (SimTime, SimTime) {
    let id = at;
    sim.submit_external(
        at,
        ExternalRequest {
            id,
            op,
            offset,
            len,
            core: 0,
        },
    )
    .unwrap();
    sim.run_until(u64::MAX);
    let d = sim.take_external_done();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].id, id);
    (d[0].arrived, d[0].done)
}

#[test]
fn flushes_discards_and_fua_writes_from_outside() {
    // eMMC with CMD23: a write cache and native FUA (a reliable write waits for NAND).
    let mut sim = Sim::for_external(config(SPRD, EMMC, DriverKind::MmcLegacy, vec![])).unwrap();
    let lat = |(a, d): (SimTime, SimTime)| d - a;
    let plain = lat(one(&mut sim, 0, ExternalOp::Write { fua: false }, 0, 65536));
    let fua = lat(one(
        &mut sim,
        GAP,
        ExternalOp::Write { fua: true },
        1 << 20,
        65536,
    ));
    assert!(
        fua > 2 * plain,
        "a reliable write {fua} ns, a cached one {plain} ns"
    );
    // CMD6 FLUSH_CACHE with its R1b busy.
    let flush = lat(one(&mut sim, 2 * GAP, ExternalOp::Flush, 0, 0));
    assert!(flush > 0);
    // A discard of the first write's 64 KiB: its 16 slots are invalid from then on.
    let discard = lat(one(&mut sim, 3 * GAP, ExternalOp::Discard, 0, 65536));
    assert!(discard > 0);
    let r = sim.finish();
    assert_eq!(r.system.requests, 4);
    assert_eq!(r.system.device.discarded_slots, 16);
    assert_eq!(r.system.device_host_write_bytes, 2 * 65536);

    // Without CMD23 and with the card's cache on: no native FUA, so blk-flush sends the
    // write, then a flush; the FUA write takes a write and a flush at least.
    let mut c = config(SPRD, EMMC, DriverKind::MmcLegacy, vec![]);
    c.host.mmc.cmd23 = false;
    let mut sim = Sim::for_external(c).unwrap();
    let plain = lat(one(&mut sim, 0, ExternalOp::Write { fua: false }, 0, 65536));
    let flush = lat(one(&mut sim, GAP, ExternalOp::Flush, 0, 0));
    let fua = lat(one(
        &mut sim,
        2 * GAP,
        ExternalOp::Write { fua: true },
        1 << 20,
        65536,
    ));
    // (More than the two: the post-flush finds the write's data still in the cache.)
    assert!(
        fua > plain + flush,
        "FUA {fua} ns, write {plain}, flush {flush}"
    );
    let r = sim.finish();
    assert_eq!(
        r.system.requests, 4,
        "the post-flush is a request of its own"
    );

    // An SD card's queue has no write cache: a flush ends at once, unsimulated.
    let mut sim = Sim::for_external(config(
        LAPTOP,
        SD,
        DriverKind::parse("sd-rtsx").unwrap(),
        vec![],
    ))
    .unwrap();
    assert_eq!(lat(one(&mut sim, 0, ExternalOp::Flush, 0, 0)), 0);
    let bad = ExternalRequest {
        id: 9,
        op: ExternalOp::Flush,
        offset: 512,
        len: 0,
        core: 0,
    };
    assert!(sim
        .submit_external(GAP, bad)
        .unwrap_err()
        .contains("a flush has offset and length 0"));
    assert_eq!(sim.finish().system.requests, 0);
}
