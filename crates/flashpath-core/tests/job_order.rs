//! fio's wait_for: a job starts once the jobs it waits for have finished, within its
//! stonewall turn; waiting for a later job is an error.
mod common;

use flashpath_core::host::DriverKind;
use flashpath_core::sim::{run, Precondition, SimConfig};
use flashpath_core::workload::{JobConfig, Pattern};

const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

fn job(i: u64, wait_for: Vec<usize>) -> JobConfig {
    let mut j = JobConfig::simple("j", Pattern::Random, 100, 4096, 16 << 20);
    j.offset = i * (16 << 20);
    j.io_limit = 1 << 20;
    j.wait_for = wait_for;
    j
}

fn cfg(jobs: Vec<JobConfig>) -> SimConfig {
    let (host, device) = common::system(HOST, DEVICE);
    SimConfig {
        host,
        device,
        driver: DriverKind::MmcLegacy,
        jobs,
        // Random: preconditioning jobs come first, so the indices are shifted.
        precondition: Precondition::Random,
    }
}

#[test]
fn a_job_waits_for_the_named_jobs_only() {
    // Jobs 0 and 1 run together; job 2 waits for job 0 only, so it starts when job 0
    // ends, while job 1 may still run.
    let r = run(cfg(vec![job(0, vec![]), job(1, vec![]), job(2, vec![0])])).unwrap();
    let (a, b, c) = (&r.jobs[0], &r.jobs[1], &r.jobs[2]);
    assert_eq!(a.start_ns, b.start_ns);
    assert!(c.start_ns >= a.end_ns, "{} < {}", c.start_ns, a.end_ns);
    assert!(c.start_ns < a.end_ns + 1_000_000);
    // Without wait_for all three start together.
    let r = run(cfg(vec![job(0, vec![]), job(1, vec![]), job(2, vec![])])).unwrap();
    assert_eq!(r.jobs[2].start_ns, r.jobs[0].start_ns);
}

#[test]
fn waiting_for_a_later_job_is_an_error() {
    let e = run(cfg(vec![job(0, vec![1]), job(1, vec![])])).unwrap_err();
    assert!(e.contains("not an earlier job"), "{e}");
}
