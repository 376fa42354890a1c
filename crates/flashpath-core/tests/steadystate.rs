//! fio's steady-state detection (sim/jobs/steadystate.rs): the helper's check once a second,
//! the window of `ss_dur` one-second samples after `ss_ramp`, the criteria, and the job
//! or group ended when the criterion holds. A null-engine job paced by `rate_iops` runs
//! at an exactly known rate, so when it attains is arithmetic.
mod common;

use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::workload::{JobConfig, Pattern, SsCriterion, SteadyStateConfig, Submission};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const S: u64 = 1_000_000_000;

/// A time-based null job reading 4 KiB at `iops` I/Os a second for `runtime_s`.
fn paced(name: &str, iops: u64, runtime_s: u64, ss: Option<SteadyStateConfig>) -> JobConfig {
    let mut j = JobConfig::simple(name, Pattern::Random, 100, 4096, 1 << 30);
    j.null_engine = true;
    j.submission = Submission::Sync;
    j.rate_iops = [iops, 0];
    j.time_based = true;
    j.runtime_ns = Some(runtime_s * S);
    j.steadystate = ss;
    j
}

fn ss(criterion: SsCriterion, pct: bool, limit: f64, dur_s: u64, ramp_s: u64) -> SteadyStateConfig {
    SteadyStateConfig {
        criterion,
        pct,
        limit,
        dur_s,
        ramp_ns: ramp_s * S,
        group_reporting: false,
    }
}

fn sim(jobs: Vec<JobConfig>) -> RunResult {
    let (host, device) = common::system(HOST, DEVICE);
    run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs,
        precondition: Precondition::Random,
    })
    .unwrap()
}

/// The job ends at the check that attains (a check falls at k s less 1 ns): its
/// in-flight I/O (one null I/O, microseconds) completes after it.
fn ends_at_check(j: &flashpath_core::stats::JobStats, k: u64) {
    let check = k * S - 1;
    assert!(
        j.end_ns >= check && j.end_ns < check + 1_000_000,
        "ended at {} ns, the check is at {check}",
        j.end_ns
    );
}

/// A constant rate attains at the check after ss_ramp + 1 s + ss_dur s: samples start
/// with the first check that finds ss_ramp + 1 s elapsed (fio's `>=`, the timer armed
/// before the job's epoch), and the window is judged as soon as it is full. Every
/// sample is 1000 I/Os in 1000 ms.
#[test]
fn a_constant_rate_attains_when_the_first_window_fills() {
    let r = sim(vec![paced(
        "a",
        1000,
        60,
        Some(ss(SsCriterion::Iops, true, 1.0, 3, 2)),
    )]);
    let j = &r.jobs[0];
    ends_at_check(j, 2 + 1 + 3);
    let s = j.steadystate.as_ref().unwrap();
    assert!(s.attained);
    assert_eq!(s.iops, [1000, 1000, 1000]);
    assert_eq!(s.bw, [4096 * 1000; 3]);
    assert_eq!((s.iops_mean(), s.bw_mean()), (1000, 4096 * 1000));
    assert_eq!((s.criterion_value, s.max_deviation), (0.0, 0.0));

    // Without ss_ramp the first check's interval (999 whole ms from the epoch) is the
    // first sample: 1000 I/Os in 999 ms is 1001 IOPS; the window fills at ss_dur s.
    let r = sim(vec![paced(
        "a",
        1000,
        60,
        Some(ss(SsCriterion::Iops, true, 1.0, 3, 0)),
    )]);
    let j = &r.jobs[0];
    ends_at_check(j, 3);
    let s = j.steadystate.as_ref().unwrap();
    assert!(s.attained);
    assert_eq!(s.iops, [1001, 1000, 1000], "{s:?}");
    assert_eq!(s.bw[0], 4096 * 1000 * 1000 / 999);
    // mean 1000.33, largest deviation 0.67: 0.0666%.
    assert!((s.max_deviation - 2.0 / 3.0).abs() < 1e-9, "{s:?}");
    assert!((s.criterion_value - 100.0 * (2.0 / 3.0) / (3001.0 / 3.0)).abs() < 1e-9);
}

/// A criterion that cannot hold (a deviation below 0) never attains: the job runs to
/// its runtime, and the report keeps the last window.
#[test]
fn a_criterion_never_met_runs_to_the_runtime() {
    let r = sim(vec![paced(
        "a",
        1000,
        8,
        Some(ss(SsCriterion::Iops, false, 0.0, 3, 0)),
    )]);
    let j = &r.jobs[0];
    assert!(
        j.end_ns >= 8 * S && j.end_ns < 8 * S + 2_000_000,
        "{}",
        j.end_ns
    );
    let s = j.steadystate.as_ref().unwrap();
    assert!(!s.attained);
    assert_eq!(s.iops, [1000, 1000, 1000], "{s:?}");
    assert_eq!(s.criterion_value, 0.0);
}

/// The slope criterion on a constant rate: slope 0, attained at the same check.
#[test]
fn the_slope_of_a_constant_rate_is_zero() {
    let r = sim(vec![paced(
        "a",
        1000,
        60,
        Some(ss(SsCriterion::BwSlope, true, 1.0, 4, 1)),
    )]);
    let j = &r.jobs[0];
    ends_at_check(j, 1 + 1 + 4);
    let s = j.steadystate.as_ref().unwrap();
    assert!(s.attained);
    assert_eq!(s.slope, 0.0);
    assert_eq!(s.bw, [4096 * 1000; 4]);
}

/// group_reporting: the group's rates are summed into its last job's window, and every
/// job of the group ends at the check that attains. Without it each job has its own.
#[test]
fn a_reporting_group_is_judged_as_one() {
    let mut c = ss(SsCriterion::Iops, true, 1.0, 3, 1);
    c.group_reporting = true;
    let jobs = vec![
        paced("a", 1000, 60, Some(c.clone())),
        paced("b", 1000, 60, Some(c.clone())),
    ];
    let r = sim(jobs);
    for j in &r.jobs {
        ends_at_check(j, 1 + 1 + 3);
        assert!(j.steadystate.as_ref().unwrap().attained);
    }
    assert_eq!(r.jobs[1].steadystate.as_ref().unwrap().iops, [2000; 3]);
    // The first job holds no samples (stat.c shows the group's last job's).
    assert_eq!(r.jobs[0].steadystate.as_ref().unwrap().iops, [0; 3]);

    // Per job: the slower job's window is its own; each ends at its own check.
    c.group_reporting = false;
    let mut slow = c.clone();
    slow.dur_s = 5;
    let mut jobs = vec![
        paced("a", 1000, 60, Some(c.clone())),
        paced("b", 500, 60, Some(slow)),
    ];
    jobs[1].group_id = 1;
    let r = sim(jobs);
    ends_at_check(&r.jobs[0], 5);
    ends_at_check(&r.jobs[1], 7);
    assert_eq!(r.jobs[0].steadystate.as_ref().unwrap().iops, [1000; 3]);
    assert_eq!(r.jobs[1].steadystate.as_ref().unwrap().iops, [500; 5]);
}

/// fio rejects a reporting group whose jobs' steady-state options differ (a job
/// without them included).
#[test]
fn a_group_with_different_options_is_rejected() {
    let c = ss(SsCriterion::Iops, true, 1.0, 3, 1);
    let (host, device) = common::system(HOST, DEVICE);
    let e = run(SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs: vec![paced("a", 1000, 5, Some(c)), paced("b", 1000, 5, None)],
        precondition: Precondition::Random,
    })
    .err()
    .unwrap();
    assert!(e.contains("consistent within reporting groups"), "{e}");
}

/// The checks stop with the last steady-state job: a job that ends by its size before
/// attaining leaves the run's end where it ended.
#[test]
fn checks_end_with_the_jobs() {
    let mut j = paced("a", 1000, 60, Some(ss(SsCriterion::Iops, false, 0.0, 3, 0)));
    j.time_based = false;
    j.io_limit = 2500 * 4096;
    let r = sim(vec![j]);
    let j = &r.jobs[0];
    assert_eq!(j.dirs[0].ios, 2500);
    assert!(!j.steadystate.as_ref().unwrap().attained);
    assert_eq!(r.system.sim_end_ns, j.end_ns);
}
