//! iozone's throughput tests on the simulated system.
//!
//! Each iozone process (or thread, `-T`) is one simulated job thread with its own file,
//! doing what iozone's child does (iozone.c, thread_write_test, thread_rwrite_test,
//! thread_read_test, thread_rread_test, thread_ranread_test, thread_ranwrite_test): one
//! read(2) or write(2) of a record at a time (O_DIRECT with `-I`, else through the page
//! cache), in record order for the sequential tests and in iozone's shuffled order
//! (`order.rs`) for the random ones, every record of the file once. The files lie on the
//! block device one after another, each on a 4 KiB boundary, skipping an ext4 host's
//! journal. The tests of one throughput test run one after the other in one simulation,
//! so the device carries its state from one to the next; between them the simulated
//! system idles for the sleep(2)s throughput_test() takes (2 s after each test, 2 s more
//! before the random tests). The children of a test start together, as the parent
//! releases them (the start barrier).
//!
//! **Stonewalling** (iozone's default; `-x` turns it off): the first child to finish
//! raises a shared flag. Readers and the rewriter (`Stop::Break`) stop at their next
//! record; they count the records done before the flag, then take their time after the
//! fsync (`-e`). The initial and random writers (`Stop::Measure`) take their time and
//! count at their next record (after an fsync with `-e`), but go on writing to the end
//! of the file. The engine reproduces this by runs of the same simulation that differ
//! only after the moment in question (every run of a phase starts from the same state,
//! the simulator being deterministic):
//! - a probe run finds the flag's time: the first child's end (after its fsync with
//!   `-e`) for a `Break` test, its last write's return for a `Measure` test;
//! - a `Break` test then runs with every child stopped at that time (fio's runtime: a
//!   thread stops issuing at its first I/O completion at or after it), then fsyncs;
//! - a `Measure` test is measured in a run where its children stop there (then fsync),
//!   and runs in full (each child to the end of its file, then fsync) for the parent's
//!   time and for the tests after it.
//!
//! A stopped child's count leaves out the record it had in flight when the flag rose,
//! as iozone's `so_far -= reclen/1024` does. A child that does not include close(2) in its
//! time (no `-c`) fsyncs its file again after taking its time, before it exits: the
//! parent's time includes that fsync, the child's does not, so such a test is measured
//! in a run without it and runs with it.
//!
//! Leaves out: the children's staggered start (each polls the flag with select(1 us),
//! i.e. up to the timer slack); the lseek(2) before each record of the random tests (a
//! system call's CPU time; the read or write is one system call here, as fio's psync);
//! the second fsync at exit after the timed one (`-e` without `-c`: nothing is left to
//! write); the fsync at exit of direct I/O on a host with ext4 (not modelled by the
//! core; `-e` with `-I` there is an error); a stopped writer's mid-run fsync in the full
//! run; sync(2) between tests (with `-e`, or without `-c`, every child has synced its
//! file; otherwise dirty pages are left to the flusher); close(2), open(2), unlink(2),
//! O_TRUNC (no filesystem is modelled: the files are device regions); with `-T`, iozone's
//! threads share one random generator, so their orders race: each simulated thread
//! takes the process order. A child that completes its last record while the first
//! finisher is in its fsync (`-e`) is counted as having lost that record to the flag.
//!
//! Units: bytes, ns.

use super::args::{Args, Test};
use super::order::record_order;
use super::report::{ChildTimes, TestTimes};
use crate::run;
use anyhow::{bail, Result};
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{Precondition, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::Trace;
use flashpath_core::workload::{BlockSizes, Dir, Distribution, JobConfig, Pattern};
use std::sync::Arc;

/// The simulated system the tests run on.
pub struct System {
    pub host: HostConfig,
    pub device: DeviceConfig,
    pub driver: DriverKind,
    pub precondition: Precondition,
    /// Show the progress display (off where another command shows its own: calibrate).
    pub progress: bool,
}

/// Files start on filesystem-block boundaries.
const FILE_ALIGN: u64 = 4096;

/// throughput_test()'s `sleep(2)` between tests.
const SLEEP_NS: u64 = 2_000_000_000;

/// How a test's children behave when the stonewall flag rises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Leave the loop: thread_rwrite_test, thread_read_test, thread_rread_test,
    /// thread_ranread_test (`if(*stop_flag) break;`).
    Break,
    /// Take the time, then write on to the end of the file: thread_write_test and
    /// thread_ranwrite_test ("Writer must finish even though told to stop").
    Measure,
}

fn stop_of(test: Test) -> Stop {
    match test {
        Test::InitialWrite | Test::RandomWrite => Stop::Measure,
        Test::Rewrite | Test::Read | Test::Reread | Test::RandomRead => Stop::Break,
    }
}

/// throughput_test()'s sync(); sleep(2) before a test (the random tests only).
fn sleep_before(test: Test) -> u64 {
    if test.random() {
        SLEEP_NS
    } else {
        0
    }
}

/// One test of a throughput test, and the idle time before it.
#[derive(Clone, Copy, Debug)]
struct Phase {
    test: Test,
    gap_ns: u64,
}

fn phases(a: &Args) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::new();
    for test in a.tests() {
        // Every test ends with sync(); sleep(2).
        let after_previous = if out.is_empty() { 0 } else { SLEEP_NS };
        out.push(Phase {
            test,
            gap_ns: after_previous + sleep_before(test),
        });
    }
    out
}

/// How a phase's children run in one simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Form {
    /// Stop issuing at the first completion this long after the start (the flag).
    stop_after_ns: Option<u64>,
    /// An fsync of the file when done.
    fsync: bool,
}

/// The offsets of the files of `count` processes.
fn layout(count: u64, file_bytes: u64, host: &HostConfig, dev: &DeviceConfig) -> Result<Vec<u64>> {
    let stride = file_bytes.div_ceil(FILE_ALIGN) * FILE_ALIGN;
    let journal = host.fs.as_ref().map(|fs| {
        (
            fs.journal_offset_bytes,
            fs.journal_offset_bytes + fs.journal_bytes,
        )
    });
    let mut at = 0u64;
    let mut offsets = Vec::new();
    for _ in 0..count {
        if let Some((lo, hi)) = journal {
            if at < hi && lo < at + stride {
                at = hi.div_ceil(FILE_ALIGN) * FILE_ALIGN;
            }
        }
        if at + stride > dev.capacity_bytes {
            let beside = if journal.is_some() {
                " beside the ext4 journal"
            } else {
                ""
            };
            bail!(
                "iozone: {count} files of {} kB do not fit on device '{}' ({} bytes){beside}",
                file_bytes / 1024,
                dev.name,
                dev.capacity_bytes
            );
        }
        offsets.push(at);
        at += stride;
    }
    Ok(offsets)
}

/// One phase's children in the result of a run.
#[derive(Clone, Debug)]
struct PhaseRun {
    start_ns: u64,
    ends_ns: Vec<u64>,
    bytes: Vec<u64>,
}

impl PhaseRun {
    fn first_end_ns(&self) -> u64 {
        *self.ends_ns.iter().min().expect("a phase has children")
    }
}

struct Runner<'a> {
    a: &'a Args,
    sys: &'a System,
    count: usize,
    offsets: Vec<u64>,
    size: u64,
    order: Arc<[u64]>,
    phases: Vec<Phase>,
}

impl Runner<'_> {
    fn job(&self, k: usize, c: usize, form: Form) -> JobConfig {
        let test = self.phases[k].test;
        let rec = self.a.record_bytes;
        let (pattern, read_pct) = match (test.random(), test.writes()) {
            (true, w) => (Pattern::Random, if w { 0 } else { 100 }),
            (false, w) => (Pattern::Sequential, if w { 0 } else { 100 }),
        };
        let mut j = JobConfig::simple("iozone", pattern, read_pct, rec, self.size);
        j.bs = [BlockSizes::Fixed(rec), BlockSizes::Fixed(rec)];
        j.offset = self.offsets[c];
        if test.random() {
            j.distribution = Distribution::Order(self.order.clone());
        }
        j.direct = self.a.direct;
        j.end_fsync = form.fsync;
        j.runtime_ns = form.stop_after_ns;
        // The first child of a later test waits for every earlier child; all wait the
        // sleeps before they are released together.
        j.stonewall = k > 0 && c == 0;
        j.startdelay_ns = self.phases[k].gap_ns;
        j.seed = 0x10_2017 ^ ((k * self.count + c) as u64);
        j
    }

    /// Runs phases 0..forms.len() with these forms.
    fn pass(&self, forms: &[Form], traced: bool) -> Result<(RunResult, Option<Trace>)> {
        let mut jobs = Vec::new();
        for (k, &form) in forms.iter().enumerate() {
            for c in 0..self.count {
                jobs.push(self.job(k, c, form));
            }
        }
        let cfg = SimConfig {
            host: self.sys.host.clone(),
            device: self.sys.device.clone(),
            driver: self.sys.driver,
            jobs,
            precondition: self.sys.precondition,
        };
        run::simulate_traced(cfg, self.sys.progress, traced)
    }

    fn phase_run(&self, res: &RunResult, k: usize) -> PhaseRun {
        let jobs = &res.jobs[k * self.count..(k + 1) * self.count];
        let dir = if self.phases[k].test.writes() {
            Dir::Write
        } else {
            Dir::Read
        };
        let start_ns = jobs[0].start_ns;
        assert!(
            jobs.iter().all(|j| j.start_ns == start_ns),
            "the children of a test start together"
        );
        PhaseRun {
            start_ns,
            ends_ns: jobs.iter().map(|j| j.end_ns).collect(),
            bytes: jobs.iter().map(|j| j.dirs[dir.index()].bytes).collect(),
        }
    }
}

/// Runs one throughput test of `count` processes: each test's measurements, and the
/// event trace of the run iozone makes if `traced`.
pub fn run(
    a: &Args,
    sys: &System,
    count: u64,
    traced: bool,
) -> Result<(Vec<TestTimes>, Option<Trace>)> {
    let ext4 = sys.host.fs.is_some();
    if !a.direct && sys.host.memory.is_none() {
        bail!(
            "iozone: without -I the files go through the page cache, which needs a [memory] section in host preset '{}'",
            sys.host.name
        );
    }
    if a.direct && ext4 && a.include_flush {
        bail!(
            "iozone: -e with -I on host '{}': the fsync of direct I/O on an ext4 file is not modelled",
            sys.host.name
        );
    }
    // The fsync at exit, without -c: left out for direct I/O on ext4 (not modelled; the
    // file has nothing dirty, only its timestamps).
    let direct_on_ext4 = a.direct && ext4;
    let exit_fsync = !(a.include_close || direct_on_ext4);
    let records = a.records();
    let offsets = layout(count, a.file_kb * 1024, &sys.host, &sys.device)?;
    let phases = phases(a);
    // The shuffled order only for the random tests (a record number per record).
    let order: Arc<[u64]> = if phases.iter().any(|p| p.test.random()) {
        record_order(records).into()
    } else {
        Arc::from([])
    };
    let r = Runner {
        a,
        sys,
        count: count as usize,
        offsets,
        size: records * a.record_bytes,
        order,
        phases,
    };
    let e = a.include_flush;
    // Per phase: the form of iozone's run, the first finishers, the run its children
    // are measured in (when not the full run), and its start in the probe.
    let mut real: Vec<Form> = Vec::new();
    let mut first: Vec<Vec<bool>> = Vec::new();
    let mut measured: Vec<Option<PhaseRun>> = Vec::new();
    let mut probed_start: Vec<Option<u64>> = Vec::new();
    for k in 0..r.phases.len() {
        let what = format!("{:?}, {count} process(es)", r.phases[k].test);
        if sys.progress {
            run::progress::show_step("iozone", k + 1, r.phases.len(), &what);
        }
        let stop = stop_of(r.phases[k].test);
        // The child's time includes the fsync of -e. After taking its time, a child
        // without -c fsyncs its file again before it exits, which the parent waits for.
        let mut timed = Form {
            stop_after_ns: None,
            fsync: e,
        };
        if a.stonewall {
            // The probe: until the flag rises it runs as iozone's run does. A reader
            // raises the flag after its timed fsync, a writer before it.
            let probe = Form {
                stop_after_ns: None,
                fsync: stop == Stop::Break && e,
            };
            let mut forms = real.clone();
            forms.push(probe);
            let p = r.phase_run(&r.pass(&forms, false)?.0, k);
            let flag_ns = p.first_end_ns();
            first.push(p.ends_ns.iter().map(|&t| t == flag_ns).collect());
            timed.stop_after_ns = Some(flag_ns - p.start_ns);
            probed_start.push(Some(p.start_ns));
        } else {
            first.push(vec![true; r.count]);
            probed_start.push(None);
        }
        // iozone's run: readers stop at the flag, writers write on to the end.
        let full = Form {
            stop_after_ns: match stop {
                Stop::Break => timed.stop_after_ns,
                Stop::Measure => None,
            },
            fsync: e || exit_fsync,
        };
        if timed != full {
            let mut forms = real.clone();
            forms.push(timed);
            measured.push(Some(r.phase_run(&r.pass(&forms, false)?.0, k)));
        } else {
            measured.push(None);
        }
        real.push(full);
    }
    let (res, trace) = r.pass(&real, traced)?;
    let mut tests = Vec::new();
    for (k, phase) in r.phases.iter().enumerate() {
        let full = r.phase_run(&res, k);
        if let Some(s) = probed_start[k] {
            assert_eq!(s, full.start_ns, "runs of a test start at the same time");
        }
        let timed = measured[k].as_ref().unwrap_or(&full);
        assert_eq!(timed.start_ns, full.start_ns);
        let children = (0..r.count)
            .map(|c| {
                let bytes = timed.bytes[c];
                let counted = if first[k][c] {
                    bytes
                } else {
                    bytes.saturating_sub(a.record_bytes)
                };
                ChildTimes {
                    actual_kb: counted / 1024,
                    start_ns: timed.start_ns,
                    end_ns: timed.ends_ns[c],
                }
            })
            .collect();
        tests.push(TestTimes {
            test: phase.test,
            children,
            parent_start_ns: full.start_ns,
            parent_end_ns: *full.ends_ns.iter().max().expect("children"),
        });
    }
    Ok((tests, trace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iozone::args::parse_line as args;

    #[test]
    fn sleeps_between_tests() {
        let gaps: Vec<(Test, u64)> = phases(&args("-t 1 -i 0 -i 1 -i 2"))
            .iter()
            .map(|p| (p.test, p.gap_ns / SLEEP_NS))
            .collect();
        assert_eq!(
            gaps,
            vec![
                (Test::InitialWrite, 0),
                (Test::Rewrite, 1),
                (Test::Read, 1),
                (Test::Reread, 1),
                (Test::RandomRead, 2),
                (Test::RandomWrite, 2),
            ]
        );
        let gaps: Vec<u64> = phases(&args("-t 1 -i 2 -+n"))
            .iter()
            .map(|p| p.gap_ns / SLEEP_NS)
            .collect();
        assert_eq!(gaps, vec![1, 2]);
    }

    #[test]
    fn files_follow_each_other_around_the_journal() {
        let host = crate::presets::load_host("jetson-tx1", &[]).unwrap();
        let dev = crate::presets::load_device("emmc51-hs400-8g", &[]).unwrap();
        let fs = host.fs.clone().expect("jetson-tx1 has [fs]");
        let (lo, hi) = (
            fs.journal_offset_bytes,
            fs.journal_offset_bytes + fs.journal_bytes,
        );
        let size = 100 << 20;
        let offsets = layout(40, size, &host, &dev).unwrap();
        for w in offsets.windows(2) {
            assert!(w[1] >= w[0] + size);
        }
        for &o in &offsets {
            assert_eq!(o % FILE_ALIGN, 0);
            assert!(
                o + size <= lo || o >= hi,
                "file at {o} overlaps the journal"
            );
        }
        let sd835 = crate::presets::load_host("sd835-phone", &[]).unwrap();
        let ufs = crate::presets::load_device("ufs21-64g", &[]).unwrap();
        let o = layout(3, 5000, &sd835, &ufs).unwrap();
        assert_eq!(o, vec![0, 8192, 16384]);
        let err = layout(2, ufs.capacity_bytes, &sd835, &ufs).unwrap_err();
        assert!(err.to_string().contains("do not fit"), "{err}");
    }
}
