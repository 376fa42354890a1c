//! fio's engine and rate modes through a whole run: polled completion (hipri,
//! iodepth_batch_complete_min=0: sim/kernel/iopoll.rs), fio's LFSR and normal offsets, Poisson
//! issue times and the minimum rate check (workload/rate.rs, sim/jobs/min_rate.rs).

use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{HostConfig, Kernel};
use flashpath_core::sim::{IoObserver, IoQueued, Sim, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{JobConfig, Pattern, RandomGenerator, RateProcess, Submission};
use std::sync::{Arc, Mutex};

/// A host whose every cost differs, so a missing or doubled step shows.
fn costed_host() -> HostConfig {
    let mut h = HostConfig::ideal(4);
    h.costs.syscall_ns = 5_000;
    h.costs.pin_per_4k_ns = 300;
    h.costs.pin_per_4k_read_ns = 400;
    h.costs.block_submit_ns = 2_000;
    h.costs.aio_submit_ns = 1_500;
    h.costs.aio_reap_ns = 1_100;
    h.costs.irq_ns = 3_000;
    h.costs.wakeup_ns = 11_000;
    h.costs.task_wakeup_ns = 11_000;
    h.costs.complete_ns = 1_700;
    h.costs.syscall_return_ns = 2_300;
    h.mmc.prep_ns = 4_000;
    h.mmc.start_ns = 3_100;
    h.mmc.post_ns = 2_900;
    h
}

#[derive(Default)]
struct Issues(Arc<Mutex<Vec<(u64, u64)>>>);

impl IoObserver for Issues {
    fn queued(&mut self, io: &IoQueued) {
        self.0.lock().unwrap().push((io.t, io.offset));
    }
}

/// Runs `jobs`; returns the result and each reported I/O's (queue time, offset).
fn run_jobs(
    host: HostConfig,
    jobs: Vec<JobConfig>,
) -> Result<(RunResult, Vec<(u64, u64)>), String> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sim = Sim::new(SimConfig {
        driver: host.default_driver,
        host,
        device: DeviceConfig::ideal(1 << 30, 50_000),
        jobs,
        precondition: false.into(),
    })?;
    sim.add_observer(Box::new(Issues(seen.clone())));
    sim.run_until(u64::MAX);
    sim.close_observers()?;
    let r = sim.finish();
    let s = std::mem::take(&mut *seen.lock().unwrap());
    Ok((r, s))
}

fn uring_qd1(ios: u64) -> JobConfig {
    let mut j = JobConfig::simple("u", Pattern::Random, 100, 4096, 4096 * ios);
    j.submission = Submission::Async {
        depth: 1,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j
}

#[test]
fn io_uring_hipri_spins_on_its_core_instead_of_sleeping() {
    let ios = 200;
    let host = costed_host();
    let (plain, _) = run_jobs(host.clone(), vec![uring_qd1(ios)]).unwrap();
    let mut j = uring_qd1(ios);
    j.hipri = true;
    let (polled, _) = run_jobs(host.clone(), vec![j]).unwrap();
    let (p, q) = (&plain.jobs[0], &polled.jobs[0]);
    // QD1 on an ideal device: each I/O's path is the same but for the submitter's
    // wake-up, which polling does not have; the interrupt still comes (no poll queue).
    let w = host.costs.wakeup_ns;
    assert_eq!(q.dirs[0].clat.min() + w, p.dirs[0].clat.min());
    assert_eq!(q.dirs[0].clat.max() + w, p.dirs[0].clat.max());
    assert_eq!(q.runtime_ns + ios * w, p.runtime_ns);
    // No context switch; the submitter's core is busy the whole run: the system call
    // work and the spin (system time), with the kernel work that preempts it there.
    assert_eq!(p.ctx, ios);
    assert_eq!(q.ctx, 0);
    let busiest = |r: &RunResult| *r.system.core_busy_ns.iter().max().unwrap() as f64;
    assert!(busiest(&polled) > 0.99 * q.runtime_ns as f64);
    assert!(busiest(&plain) < 0.5 * p.runtime_ns as f64);
    assert!(
        q.sys_ns as f64 > 0.9 * q.runtime_ns as f64,
        "{} {}",
        q.sys_ns,
        q.runtime_ns
    );
    assert!((p.sys_ns as f64) < 0.1 * p.runtime_ns as f64);
    // fio polling an async engine (iodepth_batch_complete_min=0) spins the same way.
    let mut j = uring_qd1(ios);
    j.submission = Submission::Async {
        depth: 1,
        batch_submit: 1,
        batch_complete_min: 0,
    };
    let (busy, _) = run_jobs(host.clone(), vec![j.clone()]).unwrap();
    assert_eq!(busy.jobs[0].runtime_ns, q.runtime_ns);
    assert_eq!(busy.jobs[0].ctx, 0);
    // libaio's userspace_reap then reaps without io_getevents.
    j.user_reap = true;
    let (user, _) = run_jobs(host.clone(), vec![j]).unwrap();
    assert_eq!(
        user.jobs[0].runtime_ns + ios * host.costs.aio_reap_ns,
        q.runtime_ns
    );
}

#[test]
fn pvsync2_hipri_sleeps_as_without_it_on_a_queue_that_cannot_poll() {
    let mut j = JobConfig::simple("p", Pattern::Random, 100, 4096, 4096 * 100);
    let (plain, _) = run_jobs(costed_host(), vec![j.clone()]).unwrap();
    j.hipri = true;
    let (hipri, _) = run_jobs(costed_host(), vec![j]).unwrap();
    assert_eq!(plain.jobs[0].runtime_ns, hipri.jobs[0].runtime_ns);
    assert_eq!(plain.jobs[0].ctx, hipri.jobs[0].ctx);
}

#[test]
fn hipri_is_refused_where_the_kernel_refuses_it() {
    let mut old = costed_host();
    old.kernel = Kernel::new(4, 4);
    let mut j = uring_qd1(10);
    j.hipri = true;
    let e = run_jobs(old.clone(), vec![j.clone()]).err().unwrap();
    assert!(e.contains("IORING_SETUP_IOPOLL, from Linux 5.1"), "{e}");
    let mut s = JobConfig::simple("p", Pattern::Random, 100, 4096, 4096 * 10);
    s.hipri = true;
    let e = run_jobs(old, vec![s]).err().unwrap();
    assert!(e.contains("RWF_HIPRI, from Linux 4.6"), "{e}");
    j.direct = false;
    let e = run_jobs(costed_host(), vec![j]).err().unwrap();
    assert!(e.contains("EOPNOTSUPP"), "{e}");
}

#[test]
fn lfsr_jobs_visit_each_block_once_in_fios_order() {
    let mut j = JobConfig::simple("l", Pattern::Random, 100, 4096, 4096 * 1000);
    j.generator = RandomGenerator::Lfsr { seed: 0xb189_9bed };
    j.io_limit = 4096 * 2000;
    let (r, seen) = run_jobs(costed_host(), vec![j]).unwrap();
    assert_eq!(r.jobs[0].dirs[0].ios, 2000);
    let blocks: Vec<u64> = seen.iter().map(|&(_, o)| o / 4096).collect();
    // fio 3.33's first blocks with this seed (workload/lfsr.rs).
    assert_eq!(blocks[..5], [443, 733, 878, 503, 763]);
    for pass in blocks.chunks(1000) {
        let mut p = pass.to_vec();
        p.sort_unstable();
        p.dedup();
        assert_eq!(p.len(), 1000, "each block once per pass");
    }
    assert_eq!(
        blocks[..1000],
        blocks[1000..],
        "the next pass repeats the order"
    );
}

#[test]
fn poisson_issues_have_exponential_gaps_of_the_rate() {
    // 1000 IOPS on a path far shorter than 1 ms: the gaps are the process's.
    let mut j = JobConfig::simple("p", Pattern::Random, 100, 4096, 4096 * 4000);
    j.rate_iops = [1000, 0];
    j.rate_process = RateProcess::Poisson;
    let (r, seen) = run_jobs(costed_host(), vec![j.clone()]).unwrap();
    let gaps: Vec<f64> = seen.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
    // Exponential: mean 1 ms, standard deviation = mean (the path, ~0.1 ms, only
    // delays an issue whose gap is shorter: a small bias of both).
    assert!((mean / 1e6 - 1.0).abs() < 0.06, "mean {mean}");
    assert!((sd / mean - 1.0).abs() < 0.1, "cv {}", sd / mean);
    let iops = r.jobs[0].dirs[0].ios as f64 / (r.jobs[0].runtime_ns as f64 / 1e9);
    assert!((iops / 1000.0 - 1.0).abs() < 0.06, "{iops}");
    // The linear process keeps the same mean with near-even gaps.
    j.rate_process = RateProcess::Linear;
    let (_, seen) = run_jobs(costed_host(), vec![j]).unwrap();
    let gaps: Vec<f64> = seen.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!(sd / mean < 0.1, "cv {}", sd / mean);
}

#[test]
fn a_job_below_its_minimum_rate_fails_at_the_first_cycle_after_the_settle_period() {
    // ~97 IOPS (10 ms think time) against rate_iops_min=1000: the baseline at 2 s, the
    // failure at the check 1 s (rate_cycle) later, as fio 3.33 fails (3006 ms there).
    let mut j = JobConfig::simple("slow", Pattern::Random, 100, 4096, 4 << 20);
    j.thinktime_ns = 10_000_000;
    j.time_based = true;
    j.runtime_ns = Some(4_000_000_000);
    j.rate_min.iops = [1000, 0];
    let (r, _) = run_jobs(costed_host(), vec![j.clone()]).unwrap();
    let s = &r.jobs[0];
    let e = s.error.as_ref().expect("the job fails");
    assert_eq!(e.errno, 5);
    assert_eq!(e.func, "check_min_rate");
    assert!(
        e.message
            .starts_with("slow: rate_iops_min=1000 not met, got 9")
            && e.message.ends_with(" IOPS"),
        "{}",
        e.message
    );
    assert!(
        (3_000_000_000..3_020_000_000).contains(&s.runtime_ns),
        "{}",
        s.runtime_ns
    );
    // Met: no error, the whole runtime.
    j.rate_min.iops = [50, 0];
    let (r, _) = run_jobs(costed_host(), vec![j]).unwrap();
    assert!(r.jobs[0].error.is_none());
    assert!(r.jobs[0].runtime_ns >= 4_000_000_000);
}

/// `j`, named `name`, in flow group 7 with `weight` and `sleep_ns`, for 200 ms.
fn flow_job(mut j: JobConfig, name: &str, weight: u32, sleep_ns: u64) -> JobConfig {
    j.name = name.into();
    j.time_based = true;
    j.runtime_ns = Some(200_000_000);
    j.flow = Some(flashpath_core::workload::FlowConfig {
        id: 7,
        weight,
        sleep_ns,
    });
    j
}

/// The first job's reads over the second's.
fn read_ratio(r: &RunResult) -> f64 {
    r.jobs[0].dirs[0].ios as f64 / r.jobs[1].dirs[0].ios as f64
}

#[test]
fn flow_weights_share_the_issues_and_a_stalled_job_spins_or_sleeps() {
    let job = |name: &str, weight: u32, sleep_ns: u64| {
        let j = JobConfig::simple(name, Pattern::Random, 100, 4096, 4 << 20);
        flow_job(j, name, weight, sleep_ns)
    };
    let (r, _) = run_jobs(costed_host(), vec![job("a", 3, 0), job("b", 1, 0)]).unwrap();
    let b = &r.jobs[1];
    let ratio = read_ratio(&r);
    assert!((ratio - 3.0).abs() < 0.02, "{ratio}");
    // b spins while it waits for a: its system time is most of the run.
    assert!(
        b.sys_ns as f64 > 0.5 * b.runtime_ns as f64,
        "{} {}",
        b.sys_ns,
        b.runtime_ns
    );
    // With flow_sleep the stalled job sleeps instead: same ratio, little system time.
    let (r, _) = run_jobs(
        costed_host(),
        vec![job("a", 3, 50_000), job("b", 1, 50_000)],
    )
    .unwrap();
    let b = &r.jobs[1];
    let ratio = read_ratio(&r);
    assert!((ratio - 3.0).abs() < 0.1, "{ratio}");
    assert!((b.sys_ns as f64) < 0.2 * b.runtime_ns as f64);
    // Different groups do not hold each other.
    let mut c = job("c", 1, 0);
    c.flow.as_mut().unwrap().id = 8;
    let (r, _) = run_jobs(costed_host(), vec![job("a", 3, 0), c]).unwrap();
    let ratio = read_ratio(&r);
    assert!((ratio - 1.0).abs() < 0.05, "{ratio}");
}

#[test]
fn flow_sleep_with_an_async_engine_quiesces_the_queue_before_it_sleeps() {
    // flow.fio's shape: two libaio jobs at depth 32 sharing a flow group 3:1.
    let job = |name: &str, weight: u32, sleep_ns: u64| {
        flow_job(aio_job(32, 1 << 16), name, weight, sleep_ns)
    };
    let (r, _) = run_jobs(
        costed_host(),
        vec![job("a", 3, 100_000), job("b", 1, 100_000)],
    )
    .unwrap();
    let (a, b) = (&r.jobs[0], &r.jobs[1]);
    let ratio = read_ratio(&r);
    assert!((ratio - 3.0).abs() < 0.1, "{ratio}");
    // Each stall drains the staller's queue (io_u_quiesce) before it sleeps, and a job
    // runs ahead of its share after a few issues (3 for a, 1 for b), so neither queue
    // ever holds more than 4. Spinning instead (flow_sleep=0) reaps nothing, so the
    // queue a job built before it stalled stays in flight and grows to the depth.
    let deepest = |s: &flashpath_core::stats::JobStats| s.depth_hist.iter().rposition(|&n| n > 0);
    assert_eq!(deepest(a), Some(2), "{:?}", a.depth_hist);
    assert!(deepest(b) <= Some(2), "{:?}", b.depth_hist);
    let (r, _) = run_jobs(costed_host(), vec![job("a", 3, 0), job("b", 1, 0)]).unwrap();
    assert!(deepest(&r.jobs[0]) >= Some(5), "{:?}", r.jobs[0].depth_hist);
    // While it waits and sleeps b is off its core: little system time.
    assert!((b.sys_ns as f64) < 0.2 * b.runtime_ns as f64);
}

#[test]
fn think_time_with_an_async_engine_quiesces_then_sleeps() {
    // fio's handle_thinktime: io_u_quiesce (reap every I/O in flight), then sleep.
    // 500 writes, then 700 ms of think time, over 2.7 s: a queue of 4 drained before
    // each sleep restarts from empty, so each cycle's first issue finds the queue empty
    // and the next two find 1 and 2 in flight (buckets 1 and 2-3). Before the fix a
    // completion woke the sleeper early and the run ended with the thread finished
    // twice (a panic).
    let mut j = aio_job(4, 1 << 14);
    j.read_pct = 0;
    j.time_based = true;
    j.runtime_ns = Some(2_700_000_000);
    j.thinktime_ns = 700_000_000;
    j.thinktime_blocks = 500;
    let (r, _) = run_jobs(costed_host(), vec![j]).unwrap();
    let s = &r.jobs[0];
    let cycles = s.depth_hist[0];
    assert!(cycles >= 3, "{:?}", s.depth_hist);
    // (A reap of two completions at once in the steady state adds to bucket 2-3.)
    assert!(s.depth_hist[1] >= 2 * cycles, "{:?}", s.depth_hist);
    assert_eq!(s.dirs[1].ios, 500 * cycles, "each cycle writes its 500");
    // The sleep that began before the runtime's end runs out, as fio 3.33's usec_sleep.
    assert!(s.runtime_ns > 2_700_000_000);
}

#[test]
fn a_rate_limited_async_job_issues_on_the_rate_clock_of_issued_ios() {
    // rate_iops=1000 at depth 32 on storage much faster than 1 ms: fio's clock counts
    // issued I/Os (usec_for_io), so the second I/O already waits its turn, after the
    // queue is quiesced: every issue finds an empty queue, none is a burst.
    let mut j = aio_job(32, 1 << 14);
    j.time_based = true;
    j.runtime_ns = Some(1_000_000_000);
    j.rate_iops = [1000, 0];
    let (r, _) = run_jobs(costed_host(), vec![j]).unwrap();
    let s = &r.jobs[0];
    assert_eq!(s.dirs[0].ios, 1000);
    assert_eq!(s.depth_hist[0], 1000, "{:?}", s.depth_hist);
}

fn aio_job(depth: u32, ios: u64) -> JobConfig {
    let mut j = JobConfig::simple("lp", Pattern::Random, 100, 4096, 4096 * ios);
    j.submission = Submission::Async {
        depth,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j
}

#[test]
fn latency_profile_finds_the_deepest_queue_within_the_target() {
    use flashpath_core::workload::LatTarget;
    // Total latency at each depth, steady state (max over a plain run).
    let lat_at = |d: u32| {
        let (r, _) = run_jobs(costed_host(), vec![aio_job(d, 4000)]).unwrap();
        r.jobs[0].dirs[0].lat.max()
    };
    let lats: Vec<u64> = (1..=16).map(lat_at).collect();
    assert!(lats.windows(2).all(|w| w[0] <= w[1]), "{lats:?}");
    // A target between depth 5's and depth 6's: with percentile 100 every I/O over it
    // fails its depth, so the search ends on 5.
    let target = (lats[4] + lats[5]) / 2;
    assert!(lats[4] < target && target < lats[5], "{lats:?}");
    let mut j = aio_job(16, 100_000);
    j.io_limit = 4096 * 20_000;
    j.lat_target = Some(LatTarget {
        target_ns: target,
        window_ns: 20_000_000,
        percentile: 100.0,
        run: false,
    });
    let (r, _) = run_jobs(costed_host(), vec![j.clone()]).unwrap();
    let s = &r.jobs[0];
    assert!(s.error.is_none());
    assert_eq!(s.lat_depth, Some(5), "{lats:?}");
    // The final run restarts the statistics at the depth found and lasts one more
    // window (its success with the depth unchanged ends the job: fio's td->done):
    // every I/O within the target.
    assert!(
        (20_000_000..21_000_000).contains(&s.runtime_ns),
        "{}",
        s.runtime_ns
    );
    assert!(s.dirs[0].ios > 100);
    assert!(s.dirs[0].lat.max() <= target);
    // A target below depth 1's latency is fatal, with fio's message and ETIMEDOUT.
    j.lat_target.as_mut().unwrap().target_ns = lats[0] / 2;
    let (r, _) = run_jobs(costed_host(), vec![j]).unwrap();
    let e = r.jobs[0].error.as_ref().expect("fatal at depth 1");
    assert_eq!((e.errno, e.func), (110, "max latency exceeded"));
    assert!(
        e.message.starts_with("fio: latency of ")
            && e.message.contains(&format!(
                "exceeds specified max ({} nsec): %FILE% read ",
                lats[0] / 2
            )),
        "{}",
        e.message
    );
}
