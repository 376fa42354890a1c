//! fio's io_submit_mode=offload (sim/jobs/offload.rs) against the arithmetic of its rule: the
//! job thread issues I/O k at max(k × gap, the time an io_u is free), whatever the
//! device does, and the queue builds up until its iodepth workers are all busy; inline
//! submission follows completions instead.

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::HostConfig;
use flashpath_core::sim::{IoDone, IoObserver, IoQueued, Sim, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{JobConfig, Pattern, RateProcess, Submission};
use std::sync::{Arc, Mutex};

/// Each I/O's issue (fio's start_time) and each completion (t_start, t_issued, t_done),
/// in the order they happen.
#[derive(Default, Clone)]
struct Seen {
    queued: Vec<u64>,
    done: Vec<(u64, u64, u64, Option<u64>)>,
}

struct Rec(Arc<Mutex<Seen>>);

impl IoObserver for Rec {
    fn queued(&mut self, io: &IoQueued) {
        self.0.lock().unwrap().queued.push(io.t);
    }
    fn done(&mut self, io: &IoDone) {
        let d = (io.t_start, io.t_issued, io.t_done, io.slat);
        self.0.lock().unwrap().done.push(d);
    }
}

/// The device serves one command at a time (the legacy MMC driver) in `service_ns`.
fn run(host: HostConfig, job: JobConfig, service_ns: u64) -> Result<(RunResult, Seen), String> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut sim = Sim::new(SimConfig {
        driver: host.default_driver,
        host,
        device: DeviceConfig::ideal(1 << 30, service_ns),
        jobs: vec![job],
        precondition: false.into(),
    })?;
    sim.add_observer(Box::new(Rec(seen.clone())));
    sim.run_until(u64::MAX);
    sim.close_observers()?;
    let r = sim.finish();
    let s = seen.lock().unwrap().clone();
    Ok((r, s))
}

/// A libaio read job of `ios` 4 KiB I/Os at `depth` and `iops`.
fn job(depth: u32, ios: u64, iops: u64, offload: bool) -> JobConfig {
    let mut j = JobConfig::simple("r", Pattern::Random, 100, 4096, 4096 * ios);
    j.submission = Submission::Async {
        depth,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j.rate_iops = [iops, 0];
    j.offload = offload;
    j
}

const SERVICE_NS: u64 = 100_000;

#[test]
fn offload_issues_at_the_rate_until_every_worker_is_busy() {
    // 20 000 IOPS (a gap of 50 µs) against a device that serves one I/O per 100 µs.
    let (depth, ios, gap) = (8u32, 400u64, 50_000u64);
    let (r, s) = run(
        HostConfig::ideal(4),
        job(depth, ios, 1_000_000_000 / gap, true),
        SERVICE_NS,
    )
    .unwrap();
    assert_eq!(s.queued.len() as u64, ios);
    // fio's rule, exactly (the ideal host costs nothing): I/O k is issued at k × gap
    // (the rate clock counts issued I/Os), unless all `depth` io_us are out: then when
    // the completion that frees one is reaped.
    let mut done_at: Vec<u64> = s.done.iter().map(|d| d.2).collect();
    done_at.sort_unstable();
    let mut at_rate = 0;
    for (k, &t) in s.queued.iter().enumerate() {
        let free = if k >= depth as usize {
            done_at[k - depth as usize]
        } else {
            0
        };
        assert_eq!(t, (k as u64 * gap).max(free), "I/O {k}");
        if t == k as u64 * gap {
            at_rate += 1;
        }
    }
    // The queue builds up: outstanding grows by one every 100 µs (two issues, one
    // completion) until the 8 workers are busy, about 2 × depth issues in.
    assert!((14..=17).contains(&at_rate), "{at_rate} issued at the rate");
    // Then the device's rate holds: the queue stays full, so the completions come as
    // fast as from an inline job that keeps `depth` I/Os queued without a rate.
    let per_io = |d: &[u64]| (d[d.len() - 1] - d[20]) as f64 / (d.len() - 21) as f64;
    let offload_period = per_io(&done_at);
    let (_, full) = run(HostConfig::ideal(4), job(depth, ios, 0, false), SERVICE_NS).unwrap();
    let mut full_at: Vec<u64> = full.done.iter().map(|d| d.2).collect();
    full_at.sort_unstable();
    let full_period = per_io(&full_at);
    assert!(offload_period > gap as f64, "{offload_period}");
    assert!(
        (offload_period / full_period - 1.0).abs() < 0.01,
        "{offload_period} vs {full_period}"
    );
    // Each worker queues one I/O at a time: fio's IO depths 1=100%, one I/O per
    // io_submit and per reap.
    let j = &r.jobs[0];
    assert_eq!(j.depth_hist.iter().sum::<u64>(), ios);
    assert_eq!(j.depth_hist[0], ios, "{:?}", j.depth_hist);
    assert_eq!(j.submit_hist[1], ios, "{:?}", j.submit_hist);
    assert_eq!(j.complete_hist[1], ios, "{:?}", j.complete_hist);
    // Once the pool is full the job thread waits for an io_u inside get_io_u, before
    // it stamps the I/O's start: that wait is in no latency (slat runs from the stamp
    // to the io_submit's return).
    let max_out = max_outstanding(&s);
    assert_eq!(max_out, depth as usize);
    let late = s.done.iter().filter(|d| d.3.unwrap() > 0).count();
    assert_eq!(late, 0, "the ideal host hands over in no time: slat is 0");
}

#[test]
fn inline_submission_follows_completions() {
    // The same rate and device at depth 1 inline: each I/O is issued when the one
    // before it has been reaped (one per device service, 111.2 µs), not one per 50 µs.
    let (ios, gap) = (200u64, 50_000u64);
    let (_, s) = run(
        HostConfig::ideal(4),
        job(1, ios, 1_000_000_000 / gap, false),
        SERVICE_NS,
    )
    .unwrap();
    let service = s.done[0].2;
    assert!(service > gap * 2, "{service}");
    for (k, &t) in s.queued.iter().enumerate() {
        assert_eq!(t, k as u64 * service, "I/O {k}");
    }
    // Offload at depth 1 issues the first I/O on time, and then each one as the
    // previous completes too: one worker, one io_u.
    let (_, o) = run(
        HostConfig::ideal(4),
        job(1, ios, 1_000_000_000 / gap, true),
        SERVICE_NS,
    )
    .unwrap();
    assert_eq!(o.queued, s.queued);
}

#[test]
fn below_the_device_rate_every_io_is_on_time_and_poisson_keeps_its_mean() {
    // 2 000 IOPS against 10 000: every issue on the rate, nothing waits.
    let (_, s) = run(HostConfig::ideal(4), job(4, 300, 2000, true), SERVICE_NS).unwrap();
    for (k, &t) in s.queued.iter().enumerate() {
        assert_eq!(t, k as u64 * 500_000);
    }
    let service = s.done[0].2 - s.done[0].1;
    assert!(s.done.iter().all(|d| d.2 - d.1 == service));
    // Poisson gaps: bursts queue behind one another but the issue clock is not moved
    // by them (offload): the mean gap stays 1/rate.
    let mut j = job(32, 4000, 5000, true);
    j.rate_process = RateProcess::Poisson;
    let (_, p) = run(HostConfig::ideal(4), j.clone(), SERVICE_NS).unwrap();
    // Same seed, same run.
    let (_, again) = run(HostConfig::ideal(4), j, SERVICE_NS).unwrap();
    assert_eq!(p.queued, again.queued);
    assert_eq!(p.done, again.done);
    let mean = *p.queued.last().unwrap() as f64 / (p.queued.len() - 1) as f64;
    assert!((mean - 200_000.0).abs() < 200_000.0 * 0.05, "{mean}");
    assert!(max_outstanding(&p) > 1, "a burst queues");
}

#[test]
fn a_costed_host_books_the_hand_over_and_the_workers_system_calls() {
    let mut h = HostConfig::ideal(4);
    h.costs.syscall_ns = 5_000;
    h.costs.aio_submit_ns = 1_500;
    h.costs.block_submit_ns = 2_000;
    h.costs.pin_per_4k_read_ns = 400;
    h.costs.aio_reap_ns = 1_100;
    h.costs.wakeup_ns = 11_000;
    h.costs.task_wakeup_ns = 11_000;
    let (r, s) = run(h.clone(), job(4, 100, 1000, true), SERVICE_NS).unwrap();
    // A worker is a QD1 libaio thread: its clat is an inline QD1 job's.
    let (_, inline) = run(h, job(1, 100, 1000, false), SERVICE_NS).unwrap();
    let clat = inline.done[0].2 - inline.done[0].1;
    // Issued on the rate (1 ms apart: the device is idle by then).
    for (k, &t) in s.queued.iter().enumerate() {
        assert_eq!(t, k as u64 * 1_000_000);
    }
    for d in &s.done {
        // slat: the futex wake on the job's core, then the worker's wake-up and its
        // io_submit (aio + syscall + pin + one bio).
        assert_eq!(d.3, Some(5_000 + 11_000 + 1_500 + 5_000 + 400 + 2_000));
        // clat: the device, then the worker's wake-up and reap.
        assert_eq!(d.2 - d.1, clat);
    }
    // The job's own CPU: one futex wake per I/O (fio's cpu line is the job thread's).
    assert_eq!(r.jobs[0].sys_ns, 100 * 5_000);
}

#[test]
fn offload_refuses_what_it_does_not_model() {
    let mut j = job(4, 10, 1000, true);
    j.submission = Submission::Sync;
    let e = run(HostConfig::ideal(4), j, SERVICE_NS).err().unwrap();
    assert!(
        e.contains("io_submit_mode=offload with a synchronous engine"),
        "{e}"
    );
    let mut j = job(4, 10, 1000, true);
    j.direct = false;
    let e = run(HostConfig::ideal(4), j, SERVICE_NS).err().unwrap();
    assert!(e.contains("buffered I/O"), "{e}");
}

/// The most I/Os issued and not yet completed at once.
fn max_outstanding(s: &Seen) -> usize {
    let mut ev: Vec<(u64, i32)> = s.queued.iter().map(|&t| (t, 1)).collect();
    // A completion at the same instant as an issue frees its io_u first.
    ev.extend(s.done.iter().map(|d| (d.2, -1)));
    ev.sort_unstable();
    let (mut n, mut m) = (0i32, 0i32);
    for (_, d) in ev {
        n += d;
        m = m.max(n);
    }
    m as usize
}
