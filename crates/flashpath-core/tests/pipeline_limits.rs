//! The white paper's pipeline limits as analytic tests: a host whose
//! software costs are fixed spans per request — `pre` (the system call, on the thread's
//! core) and `post` (the return to the thread, on its core), everything else free — a
//! bus too fast to matter, and a device of fixed service time `hw` that serves one
//! request at a time. Queueing arithmetic then gives the throughput:
//! (a) one thread on one core: size / (pre + hw + post);
//! (b) many threads on one core: the core is the bottleneck once hw < pre + post, so
//!     throughput → size / (pre + post), and never more;
//! (c) N cores, at least N threads: min(N × size / (pre + post), size / hw).
//! The runs' own spans must also say where the time went: pre, hw and post means equal
//! the configured costs when nothing waits.

use flashpath_core::device::config::Interface;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig, UfsHostConfig};
use flashpath_core::sim::{run, SimConfig};
use flashpath_core::stats::{RunResult, Span};
use flashpath_core::workload::{JobConfig, Pattern};

const BS: u64 = 4096;
const RAMP: u64 = 10_000_000;
const RUNTIME: u64 = 200_000_000;

/// Software costs only in the system call (pre) and its return (post); a bus so fast
/// its commands and data round to nothing.
fn host(cores: u32, pre: u64, post: u64) -> HostConfig {
    let mut h = HostConfig::ideal(cores);
    h.costs.syscall_ns = pre;
    h.costs.syscall_return_ns = post;
    h.bus.data_bytes_per_s = u64::MAX / 4;
    h.bus.clock_hz = u64::MAX / 4;
    let mut u = UfsHostConfig::ideal();
    u.link_bytes_per_s = u64::MAX / 4;
    h.ufs = Some(u);
    h
}

fn drivers() -> [DriverKind; 3] {
    [
        DriverKind::parse("mmc-legacy").unwrap(),
        DriverKind::parse("mmc-hsq-v6").unwrap(),
        DriverKind::Ufs,
    ]
}

/// `threads` psync readers of random 4 KiB blocks, all running for the same
/// `RUNTIME` after a `RAMP` that is not measured (the steady state, as fio's
/// time_based + ramp_time give it).
fn sim(driver: DriverKind, cores: u32, threads: usize, pre: u64, hw: u64, post: u64) -> RunResult {
    let jobs = (0..threads)
        .map(|i| {
            let mut j = JobConfig::simple("t", Pattern::Random, 100, BS, 64 << 20);
            j.time_based = true;
            j.runtime_ns = Some(RUNTIME);
            j.ramp_ns = RAMP;
            j.seed = 7 + i as u64;
            j
        })
        .collect();
    let mut device = DeviceConfig::ideal(1 << 30, hw);
    if driver == DriverKind::Ufs {
        device.interface = Interface::Ufs;
    }
    run(SimConfig {
        host: host(cores, pre, post),
        device,
        driver,
        jobs,
        precondition: false.into(),
    })
    .unwrap()
}

/// Bytes per second of all jobs together over the measured window.
fn throughput(r: &RunResult) -> f64 {
    let bytes: u64 = r.jobs.iter().map(|j| j.dirs[0].bytes).sum();
    bytes as f64 / (RUNTIME as f64 / 1e9)
}

fn rate(bytes: u64, ns: f64) -> f64 {
    bytes as f64 / (ns / 1e9)
}

fn mean(r: &RunResult, s: Span) -> f64 {
    let (sum, n) = r.jobs.iter().fold((0u128, 0u64), |(a, b), j| {
        let h = j.spans.get(s);
        (a + h.sum(), b + h.count())
    });
    sum as f64 / n as f64
}

fn within(got: f64, want: f64, pct: f64, what: &str) {
    assert!(
        (got - want).abs() <= want * pct / 100.0,
        "{what}: {got:.0} B/s vs {want:.0} B/s (more than {pct} % apart)"
    );
}

/// One I/O per job may straddle the measured window's end.
fn at_most(got: f64, limit: f64, threads: usize, what: &str) {
    let edge = rate(BS * threads as u64, RUNTIME as f64);
    assert!(
        got <= limit + edge,
        "{what}: {got:.0} B/s beats the limit {limit:.0} B/s"
    );
}

#[test]
fn a_one_thread_on_one_core_runs_at_size_over_the_sum_of_the_spans() {
    let (pre, hw, post) = (40_000, 70_000, 25_000);
    for d in drivers() {
        let r = sim(d, 1, 1, pre, hw, post);
        within(
            throughput(&r),
            rate(BS, (pre + hw + post) as f64),
            1.0,
            d.name(),
        );
        // Nothing waits, so the spans are the configured costs (the bus adds a few ns
        // of rounding to hw).
        assert_eq!(mean(&r, Span::Pre), pre as f64, "{}", d.name());
        assert!(
            (mean(&r, Span::Hw) - hw as f64).abs() < 10.0,
            "{}",
            d.name()
        );
        assert_eq!(mean(&r, Span::Post), post as f64, "{}", d.name());
        let j = &r.jobs[0];
        assert_eq!(
            j.spans.get(Span::Pre).sum()
                + j.spans.get(Span::Hw).sum()
                + j.spans.get(Span::Post).sum(),
            j.dirs[0].lat.sum(),
            "pre + hw + post is fio's total latency of every I/O"
        );
        let share = j.spans.software_share().unwrap();
        let (m_pre, m_hw, m_post) = (
            mean(&r, Span::Pre),
            mean(&r, Span::Hw),
            mean(&r, Span::Post),
        );
        assert!((share - (m_pre + m_post) / (m_pre + m_hw + m_post)).abs() < 1e-12);
    }
}

#[test]
fn b_many_threads_on_one_core_never_beat_size_over_pre_plus_post() {
    let (pre, post) = (40_000, 25_000);
    let limit = rate(BS, (pre + post) as f64);
    for d in drivers() {
        // hw < pre + post: the core is the bottleneck.
        let r = sim(d, 1, 8, pre, 30_000, post);
        let got = throughput(&r);
        at_most(got, limit, 8, d.name());
        if d != DriverKind::parse("mmc-hsq-v6").unwrap() {
            // The core never idles: it runs the software of one request while the
            // device serves another. (hsq: see `mmc_kworkers_queue_behind_threads`.)
            within(got, limit, 3.0, d.name());
        }
        // hw > pre + post: the device is the bottleneck, still under the software limit.
        let r = sim(d, 1, 8, pre, 150_000, post);
        let got = throughput(&r);
        at_most(got, limit, 8, d.name());
        within(got, rate(BS, 150_000.0), 3.0, d.name());
    }
}

#[test]
fn c_several_cores_overlap_the_software_up_to_the_device() {
    // UFS: the submitting thread issues the command itself (blk-mq's direct issue) and
    // the completion runs from the interrupt on the submitting core, so the software
    // of a request is exactly pre on its thread's core and post on the same core.
    // MMC: the dispatcher (kblockd) and the completion worker (mmc_complete) are kernel
    // contexts that preempt the fio threads on their core (WQ_HIGHPRI), so they do not
    // wait behind the threads' system calls and the device never idles for them.
    let (pre, post) = (40_000, 25_000);
    for d in drivers() {
        for cores in [2u32, 4] {
            for hw in [10_000u64, 20_000, 50_000] {
                let r = sim(d, cores, 4 * cores as usize, pre, hw, post);
                let want = (cores as f64 * rate(BS, (pre + post) as f64)).min(rate(BS, hw as f64));
                let got = throughput(&r);
                let what = format!("{} cores={cores} hw={hw}", d.name());
                within(got, want, 3.0, &what);
                at_most(got, want, 4 * cores as usize, &what);
            }
        }
    }
}

/// A mixed job keeps its spans per direction: with reads of 4 KiB and writes of 16 KiB
/// and a pinning cost per 4 KiB in the system call, one thread at a time gives a read
/// pre of syscall + 1 pin and a write pre of syscall + 4 pins exactly; each direction's
/// spans count its own I/Os, and the job's spans are the two merged.
#[test]
fn a_mixed_jobs_spans_are_kept_per_direction() {
    let (pre, hw, post, pin) = (20_000, 60_000, 10_000, 1_000);
    for d in drivers() {
        let mut h = host(1, pre, post);
        h.costs.pin_per_4k_ns = pin;
        h.costs.pin_per_4k_read_ns = pin;
        let mut j = JobConfig::simple("mix", Pattern::Random, 50, BS, 64 << 20);
        j.bs[1] = flashpath_core::workload::BlockSizes::Fixed(4 * BS);
        j.time_based = true;
        j.runtime_ns = Some(RUNTIME);
        j.ramp_ns = RAMP;
        let mut device = DeviceConfig::ideal(1 << 30, hw);
        if d == DriverKind::Ufs {
            device.interface = Interface::Ufs;
        }
        let r = run(SimConfig {
            host: h,
            device,
            driver: d,
            jobs: vec![j],
            precondition: false.into(),
        })
        .unwrap();
        let j = &r.jobs[0];
        let (rd, wr) = (
            j.dir_spans[0].as_ref().expect("read spans"),
            j.dir_spans[1].as_ref().expect("write spans"),
        );
        assert!(j.dir_spans[2].is_none(), "no trims, no trim spans");
        assert!(j.dirs[0].ios > 100 && j.dirs[1].ios > 100, "{}", d.name());
        for s in [Span::Pre, Span::Hw, Span::Post] {
            assert_eq!(rd.get(s).count(), j.dirs[0].ios, "{} {s:?}", d.name());
            assert_eq!(wr.get(s).count(), j.dirs[1].ios, "{} {s:?}", d.name());
        }
        for s in Span::ALL {
            let (a, b) = (rd.get(s), wr.get(s));
            assert_eq!(j.spans.get(s).count(), a.count() + b.count(), "{s:?}");
            assert_eq!(j.spans.get(s).sum(), a.sum() + b.sum(), "{s:?}");
        }
        assert_eq!(rd.get(Span::Pre).mean(), (pre + pin) as f64, "{}", d.name());
        assert_eq!(
            wr.get(Span::Pre).mean(),
            (pre + 4 * pin) as f64,
            "{}",
            d.name()
        );
        // hw and post within the few ns of bus commands (a write's CMD13 on MMC).
        for x in [rd, wr] {
            assert!(
                (x.get(Span::Hw).mean() - hw as f64).abs() < 10.0,
                "{}",
                d.name()
            );
            assert!(
                (x.get(Span::Post).mean() - post as f64).abs() < 10.0,
                "{}",
                d.name()
            );
        }
    }
}

/// The limits from busy time (`JobStats::occupancy`), which hold at any queue depth: a
/// core or the hardware is busy at most all of the window, so bytes / (its busy time)
/// bounds the throughput. For job `j`: (its throughput, the busiest core's bound, the
/// hardware's bound), all over its own measured window.
fn busy_bounds(r: &RunResult, j: usize) -> (f64, f64, f64) {
    let s = &r.jobs[j];
    let o = s.occupancy.as_ref().expect("a measured window");
    assert_eq!(o.window_ns, s.runtime_ns);
    let bytes: u64 = s.dirs.iter().map(|d| d.bytes).sum();
    let w = o.window_ns as f64;
    let core = *o.core_busy_ns.iter().max().unwrap() as f64;
    (
        rate(bytes, w),
        rate(bytes, core),
        rate(bytes, o.hw_busy_ns as f64),
    )
}

/// One request at a time, nothing waits: the busiest core does pre + post per I/O and
/// the hardware hw, so the busy-time bounds are the paper's size / (pre + post) and
/// size / hw exactly (to the I/O straddling the window's ends). Many threads on one
/// core with hw < pre + post: the core never idles, its bound is the throughput (3 %),
/// while the mean pre span (which now includes the wait for the core) puts the paper's
/// pipelined formula size / max(pre, hw, post) below the throughput. Several cores:
/// at every setting the bounds are never below the throughput, and the tighter one is
/// the queueing answer min(N size / (pre + post), size / hw) within 3 %.
#[test]
fn d_busy_time_bounds_hold_at_any_depth_and_equal_the_papers_at_depth_one() {
    let (pre, hw, post) = (40_000u64, 70_000u64, 25_000u64);
    for d in drivers() {
        let r = sim(d, 1, 1, pre, hw, post);
        let (x, core, hwb) = busy_bounds(&r, 0);
        within(core, rate(BS, (pre + post) as f64), 0.2, d.name());
        within(hwb, rate(BS, hw as f64), 0.2, d.name());
        within(x, rate(BS, (pre + hw + post) as f64), 1.0, d.name());

        let r = sim(d, 1, 8, pre, 30_000, post);
        let xs: f64 = (0..8).map(|j| busy_bounds(&r, j).0).sum();
        for j in 0..8 {
            let (x, core, hwb) = busy_bounds(&r, j);
            assert!(
                x <= core.min(hwb),
                "{} job {j}: {x} > {core}, {hwb}",
                d.name()
            );
        }
        // The core's bound for all the jobs together (their windows nearly coincide).
        let total_bytes: u64 = r.jobs.iter().map(|j| j.dirs[0].bytes).sum();
        let o = r.jobs[0].occupancy.as_ref().unwrap();
        let core_all = rate(total_bytes, *o.core_busy_ns.iter().max().unwrap() as f64);
        assert!(xs <= core_all * 1.005, "{}: {xs} > {core_all}", d.name());
        if d != DriverKind::parse("mmc-hsq-v6").unwrap() {
            within(core_all, xs, 3.0, d.name());
        }
        let spans_pipelined = rate(
            BS,
            mean(&r, Span::Pre)
                .max(mean(&r, Span::Hw))
                .max(mean(&r, Span::Post)),
        );
        assert!(
            spans_pipelined < xs,
            "{}: the spans' formula is not a bound at depth 8 ({spans_pipelined} vs {xs})",
            d.name()
        );

        for cores in [2u32, 4] {
            for hw in [10_000u64, 50_000] {
                let n = 4 * cores as usize;
                let r = sim(d, cores, n, pre, hw, post);
                let o = r.jobs[0].occupancy.as_ref().unwrap();
                let total_bytes: u64 = r.jobs.iter().map(|j| j.dirs[0].bytes).sum();
                let xs: f64 = (0..n).map(|j| busy_bounds(&r, j).0).sum();
                let core_all = rate(total_bytes, *o.core_busy_ns.iter().max().unwrap() as f64);
                let hw_all = rate(total_bytes, o.hw_busy_ns as f64);
                let what = format!("{} cores={cores} hw={hw}", d.name());
                for j in 0..n {
                    let (x, core, hwb) = busy_bounds(&r, j);
                    assert!(x <= core.min(hwb), "{what} job {j}: {x} > {core}, {hwb}");
                }
                assert!(
                    xs <= core_all.min(hw_all) * 1.005,
                    "{what}: {xs} > {core_all}, {hw_all}"
                );
                let want = (cores as f64 * rate(BS, (pre + post) as f64)).min(rate(BS, hw as f64));
                within(core_all.min(hw_all), want, 3.0, &what);
            }
        }
    }
}
