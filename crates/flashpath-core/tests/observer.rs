//! Per-I/O observers see every reported fio I/O once queued and once reaped, in time
//! order, with the latencies the job's statistics record; preconditioning is not seen.
mod common;

use flashpath_core::engine::SimTime;
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{IoDone, IoObserver, IoQueued, Precondition, Sim, SimConfig};
use flashpath_core::workload::{Dir, JobConfig, Pattern, Submission};
use std::sync::{Arc, Mutex};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

#[derive(Default)]
struct Seen {
    queued: Vec<IoQueued>,
    done: Vec<IoDone>,
    started: Vec<(usize, SimTime, SimTime)>,
    finished: Vec<(usize, SimTime)>,
    closed: Option<SimTime>,
}

struct Recorder(Arc<Mutex<Seen>>);

impl IoObserver for Recorder {
    fn job_started(&mut self, job: usize, t: SimTime, m: SimTime) {
        self.0.lock().unwrap().started.push((job, t, m));
    }
    fn queued(&mut self, io: &IoQueued) {
        self.0.lock().unwrap().queued.push(*io);
    }
    fn done(&mut self, io: &IoDone) {
        self.0.lock().unwrap().done.push(*io);
    }
    fn job_finished(&mut self, job: usize, t: SimTime) {
        self.0.lock().unwrap().finished.push((job, t));
    }
    fn close(&mut self, end: SimTime) -> Result<(), String> {
        self.0.lock().unwrap().closed = Some(end);
        Ok(())
    }
}

fn run_observed(jobs: Vec<JobConfig>) -> (Seen, flashpath_core::stats::RunResult) {
    let (host, device) = common::system(HOST, DEVICE);
    let mut sim = Sim::new(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: Precondition::Random,
    })
    .unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    sim.add_observer(Box::new(Recorder(seen.clone())));
    sim.run_until(u64::MAX);
    assert_eq!(sim.close_observers().unwrap().len(), 1);
    let r = sim.finish();
    let s = std::mem::take(&mut *seen.lock().unwrap());
    (s, r)
}

#[test]
fn every_reported_io_is_seen_queued_then_done_in_time_order() {
    let mut a = JobConfig::simple("a", Pattern::Random, 70, 4096, 8 << 20);
    a.io_limit = 2 << 20;
    a.submission = Submission::Async {
        depth: 8,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    a.ramp_ns = 2_000_000;
    let mut b = JobConfig::simple("b", Pattern::Sequential, 0, 16384, 8 << 20);
    b.offset = 8 << 20;
    b.io_limit = 1 << 20;
    let (s, r) = run_observed(vec![a, b]);
    // Preconditioning jobs are not seen: jobs are numbered as reported.
    let mut started: Vec<usize> = s.started.iter().map(|x| x.0).collect();
    started.sort();
    assert_eq!(started, vec![0, 1]);
    let (_, t0, m0) = s.started.iter().find(|x| x.0 == 0).copied().unwrap();
    assert_eq!(m0, t0 + 2_000_000);
    // Each queued I/O is reaped once, after it was queued.
    assert_eq!(s.queued.len(), s.done.len());
    for j in 0..2 {
        let q: Vec<_> = s.queued.iter().filter(|x| x.job == j).collect();
        let d: Vec<_> = s.done.iter().filter(|x| x.job == j).collect();
        let mut qk: Vec<_> = q.iter().map(|x| (x.t, x.offset, x.len)).collect();
        let mut dk: Vec<_> = d.iter().map(|x| (x.t_start, x.offset, x.len)).collect();
        qk.sort();
        dk.sort();
        assert_eq!(qk, dk, "job {j}");
        // Measured I/Os are exactly those in the statistics, with the same latencies.
        let st = &r.jobs[j];
        let reads: Vec<_> = d
            .iter()
            .filter(|x| x.measured && x.dir == Dir::Read)
            .collect();
        let writes: Vec<_> = d
            .iter()
            .filter(|x| x.measured && x.dir == Dir::Write)
            .collect();
        assert_eq!(reads.len() as u64, st.dirs[0].ios, "job {j}");
        assert_eq!(writes.len() as u64, st.dirs[1].ios, "job {j}");
        let bytes: u64 = reads.iter().map(|x| x.len).sum();
        assert_eq!(bytes, st.dirs[0].bytes);
        for x in &d {
            assert_eq!(x.lat, x.t_done - x.t_start);
            match x.slat {
                None => assert_eq!(x.clat, x.lat),
                Some(sl) => assert_eq!(sl + x.clat, x.lat),
            }
        }
        let fin = s.finished.iter().find(|f| f.0 == j).unwrap().1;
        assert!(d.iter().all(|x| x.t_done <= fin));
        assert_eq!(fin, st.end_ns);
    }
    // Ramp: job 0's I/Os started before its measurement are seen, unmeasured.
    assert!(s.done.iter().any(|x| x.job == 0 && !x.measured));
    assert!(s
        .done
        .iter()
        .all(|x| x.measured == (x.t_start >= if x.job == 0 { m0 } else { 0 })));
    // Calls come in simulated-time order.
    assert!(s.done.windows(2).all(|w| w[0].t_done <= w[1].t_done));
    assert!(s.queued.windows(2).all(|w| w[0].t <= w[1].t));
    assert_eq!(s.closed, Some(r.system.sim_end_ns));
}
