//! Trace replay (workload/replay.rs, sim/jobs/replay.rs): the I/Os a replay job issues are the
//! trace's, in its order, at the times fio's iolog_delay gives, through the job's engine.
mod common;

use flashpath_core::engine::SimTime;
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{IoDone, IoObserver, IoQueued, Precondition, Sim, SimConfig};
use flashpath_core::workload::{Dir, JobConfig, Replay, ReplayKind, ReplayOp, Submission};
use std::sync::{Arc, Mutex};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

#[derive(Default)]
struct Seen {
    queued: Vec<IoQueued>,
    done: Vec<IoDone>,
    start: SimTime,
}

struct Recorder(Arc<Mutex<Seen>>);

impl IoObserver for Recorder {
    fn job_started(&mut self, _job: usize, t: SimTime, _m: SimTime) {
        self.0.lock().unwrap().start = t;
    }
    fn queued(&mut self, io: &IoQueued) {
        self.0.lock().unwrap().queued.push(*io);
    }
    fn done(&mut self, io: &IoDone) {
        self.0.lock().unwrap().done.push(*io);
    }
}

fn run(job: JobConfig) -> (Seen, flashpath_core::stats::RunResult) {
    let (host, device) = common::system(HOST, DEVICE);
    let mut sim = Sim::new(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![job],
        precondition: Precondition::Sequential,
    })
    .unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    sim.add_observer(Box::new(Recorder(seen.clone())));
    sim.run_until(u64::MAX);
    sim.close_observers().unwrap();
    let r = sim.finish();
    let s = std::mem::take(&mut *seen.lock().unwrap());
    (s, r)
}

fn op(kind: ReplayKind, offset: u64, len: u64, delay_us: u64) -> ReplayOp {
    ReplayOp {
        kind,
        offset,
        len,
        delay_ns: delay_us * 1000,
    }
}

fn job(ops: Vec<ReplayOp>) -> JobConfig {
    JobConfig::replayed("r", Replay::from_ops("test", ops), 0, 64 << 20)
}

#[test]
fn the_trace_is_issued_in_order_with_its_offsets_and_sizes() {
    use ReplayKind::*;
    let ops = vec![
        op(Mark, 0, 0, 0),
        op(Write, 8192, 4096, 0),
        op(Read, 1 << 20, 16384, 0),
        op(Write, 512, 3584, 0),
        op(Read, 0, 4096, 0),
        op(Mark, 0, 0, 0),
    ];
    let (s, r) = run(job(ops.clone()));
    let got: Vec<(Dir, u64, u64)> = s.queued.iter().map(|q| (q.dir, q.offset, q.len)).collect();
    assert_eq!(
        got,
        vec![
            (Dir::Write, 8192, 4096),
            (Dir::Read, 1 << 20, 16384),
            (Dir::Write, 512, 3584),
            (Dir::Read, 0, 4096)
        ]
    );
    let j = &r.jobs[0];
    assert_eq!((j.dirs[0].ios, j.dirs[1].ios), (2, 2));
    assert_eq!((j.dirs[0].bytes, j.dirs[1].bytes), (20480, 7680));
}

#[test]
fn delays_count_from_the_last_issue_and_waits_from_the_start() {
    use ReplayKind::*;
    // v3-style delays (µs after the previous issue), a file action's delay, and a v2
    // wait until 50 ms after the start.
    let ops = vec![
        op(Read, 0, 4096, 0),
        op(Read, 4096, 4096, 1000),
        op(Mark, 0, 0, 3000),
        op(Read, 8192, 4096, 2000),
        op(WaitUntil, 0, 0, 50_000),
        op(Read, 12288, 4096, 0),
        // A delay shorter than the time since the last issue: no sleep (iolog_delay).
        op(Read, 16384, 4096, 1),
    ];
    let (s, _) = run(job(ops));
    let t: Vec<SimTime> = s.queued.iter().map(|q| q.t - s.start).collect();
    assert_eq!(t[0], 0);
    assert_eq!(t[1], 1_000_000);
    assert_eq!(t[2], 6_000_000, "3 ms to the file action, 2 ms more");
    assert_eq!(t[3], 50_000_000);
    // The fifth waits only for the fourth's completion (a synchronous engine).
    assert_eq!(t[4], s.done[3].t_done - s.start);
    assert!(s.done[3].t_done - s.start > 50_000_000 + 1000);
}

#[test]
fn an_async_engine_keeps_the_trace_in_flight_and_syncs_and_trims_drain_it() {
    use ReplayKind::*;
    let mut ops: Vec<ReplayOp> = (0..16).map(|i| op(Write, i * 65536, 65536, 0)).collect();
    ops.push(op(Sync, 0, 0, 0));
    ops.push(op(Trim, 0, 1 << 20, 0));
    ops.extend((0..8).map(|i| op(Read, i * 4096, 4096, 0)));
    let mut j = job(ops);
    j.submission = Submission::Async {
        depth: 8,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    let (s, r) = run(j);
    assert_eq!(s.queued.len(), 25);
    // Up to 8 writes in flight before any completes.
    let first_done = s.done[0].t_done;
    assert_eq!(s.queued.iter().filter(|q| q.t < first_done).count(), 8);
    // The trim is queued after every write is done and the fsync ended.
    let trim = s.queued.iter().find(|q| q.trim).unwrap();
    let last_write_done = s
        .done
        .iter()
        .filter(|d| !d.trim && d.dir == Dir::Write)
        .map(|d| d.t_done)
        .max()
        .unwrap();
    assert!(trim.t > last_write_done);
    assert_eq!(r.jobs[0].sync_lat.count(), 1);
    assert!(trim.t >= last_write_done + r.jobs[0].sync_lat.max() - 100_000);
    // The reads wait for the trim (the thread is blocked in its ioctl).
    let trim_done = s.done.iter().find(|d| d.trim).unwrap().t_done;
    assert!(s
        .queued
        .iter()
        .filter(|q| q.dir == Dir::Read)
        .all(|q| q.t >= trim_done));
    assert_eq!(r.jobs[0].trim.ios, 1);
}

#[test]
fn a_replay_with_trims_is_refused_where_trims_are_not_modelled() {
    use ReplayKind::*;
    const SD: &str = include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml");
    let (host, device) = common::system(HOST, SD);
    let cfg = |driver, ops| SimConfig {
        host: host.clone(),
        device: device.clone(),
        driver,
        jobs: vec![job(ops)],
        precondition: Precondition::Sequential,
    };
    let e = Sim::new(cfg(
        DriverKind::SdRtsx { multi_seq: false },
        vec![op(Trim, 0, 65536, 0)],
    ))
    .err()
    .unwrap();
    assert!(e.contains("trims on an SD card"), "{e}");
    // Without trims the same replay is fine there.
    assert!(Sim::new(cfg(
        DriverKind::SdRtsx { multi_seq: false },
        vec![op(Write, 0, 65536, 0)]
    ))
    .is_ok());
}
