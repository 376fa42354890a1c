//! fio's steady-state detection (fio 3.33 steadystate.c, `steadystate`/`ss`,
//! `steadystate_duration`/`ss_dur`, `steadystate_ramp_time`/`ss_ramp`).
//!
//! fio's helper thread runs `steadystate_check` on a 1000 ms timer (helper_thread.c,
//! `STEADYSTATE_MSEC`) armed when the helper starts, before any job takes its epoch.
//! Each check walks the jobs in order. A running job's I/Os and bytes completed since
//! the previous check (`td->io_blocks`, `td->io_bytes`, all directions) become rates:
//! `1000 * delta / rate_time`, `rate_time` the whole milliseconds since that check (or
//! since the job's epoch). Once `ss_ramp` plus one second has passed since the job's
//! epoch, the rates are summed over the reporting group (`group_reporting`) or kept per
//! job, and stored in a ring of `ss_dur` one-second samples held by the group's last job
//! (the only one with `FIO_SS_DATA`). When the ring is full, every check evaluates the
//! criterion over it: the largest deviation from the mean (`iops`, `bw`) or the slope
//! of a least-squares line (`iops_slope`, `bw_slope`), absolute or in percent of the
//! mean. Below the limit, the job (or every job of the group) is marked
//! `FIO_SS_ATTAINED` and terminated (`fio_mark_td_terminate`): it issues nothing more,
//! reaps what is in flight and ends, whatever its runtime or time_based say.
//!
//! The arithmetic is fio's, integer divisions and all (`sum_y / dur` in the slope's
//! percentage is an integer division). The timer here: the first tick one second after
//! the first reported job starts, less 1 ns. fio arms its timer before any job reads
//! its epoch (`helper_thread_create` precedes `run_threads`, and each job sets up before
//! its epoch); simulated jobs start with no setup time, so the timer is taken as armed
//! 1 ns before the first job's epoch, the least gap that keeps fio's order. A job
//! starting with the run with `ss_ramp=R` s therefore records its first sample at
//! R + 2 s less 1 ns and, at a constant rate, attains at R + 1 + `ss_dur` s (less 1
//! ns); with `ss_ramp=0` it records from the first tick and attains at `ss_dur` s.
//! Real fio's gap is its setup time (milliseconds), so it attains that much earlier.
//! The ticks stop once every steady-state job has finished.

use crate::engine::SimTime;
use crate::sim::{Ev, Sim, ThreadState};

pub use crate::workload::steady_state::{SsCriterion, SteadyStateConfig};

/// What fio's report shows of a job's steady state (`thread_stat`'s ss fields).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateResult {
    pub criterion: SsCriterion,
    pub pct: bool,
    pub limit: f64,
    pub dur_s: u64,
    pub attained: bool,
    /// The last value of the criterion, of the deviation and of the slope.
    pub criterion_value: f64,
    pub max_deviation: f64,
    pub slope: f64,
    /// The ring's samples in the order fio's JSON prints them (bytes/s and IOPS); zeros
    /// where none was recorded, and all zeros for a job that does not hold its group's
    /// samples.
    pub bw: Vec<u64>,
    pub iops: Vec<u64>,
}

impl SteadyStateResult {
    /// fio's `steadystate_bw_mean`: the integer mean of the ring.
    pub fn bw_mean(&self) -> u64 {
        self.bw.iter().sum::<u64>() / self.dur_s.max(1)
    }
    /// fio's `steadystate_iops_mean`.
    pub fn iops_mean(&self) -> u64 {
        self.iops.iter().sum::<u64>() / self.dur_s.max(1)
    }
}

const ATTAINED: u32 = 1 << 3;
const RAMP_OVER: u32 = 1 << 4;
const DATA: u32 = 1 << 5;
const BUFFER_FULL: u32 = 1 << 7;

/// One second, fio's `STEADYSTATE_MSEC`.
const TICK_NS: SimTime = 1_000_000_000;

/// fio's `struct steadystate_data` of one job thread.
#[derive(Clone, Debug)]
struct SsData {
    /// The window in seconds (`ss->dur`).
    dur: usize,
    state: u32,
    head: usize,
    tail: usize,
    iops_data: Vec<u64>,
    bw_data: Vec<u64>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
    prev_time: SimTime,
    prev_iops: u64,
    prev_bytes: u64,
}

/// The run's steady-state jobs (empty when no job has `ss_dur`: nothing is scheduled).
#[derive(Default)]
pub(in crate::sim) struct SteadyState {
    /// Per thread (preconditioning ones included): `None` without `ss_dur`.
    data: Vec<Option<SsData>>,
    /// The timer is armed.
    armed: bool,
}

impl SteadyState {
    pub(in crate::sim) fn on(&self) -> bool {
        self.data.iter().any(Option::is_some)
    }
}

/// `td_steadystate_init` and `steadystate_setup`: each steady-state job's state, its
/// group's consistency, and the ring of the jobs that hold samples.
impl SsData {
    /// This second's samples at the window's tail.
    fn store(&mut self, iops: u64, bw: u64) {
        self.bw_data[self.tail] = bw;
        self.iops_data[self.tail] = iops;
    }

    /// The criterion's sample `k` (IOPS or bandwidth).
    fn sample(&self, use_iops: bool, k: usize) -> u64 {
        if use_iops {
            self.iops_data[k]
        } else {
            self.bw_data[k]
        }
    }

    /// The state fio's steadystate_setup gives a job: its criterion bits, the ramp
    /// already over when there is none, the window's x sums (0..n) precomputed.
    fn new(c: &SteadyStateConfig) -> SsData {
        let n = c.dur_s;
        let mut state = crit_bits(c.criterion);
        if c.pct {
            state |= 1 << 6;
        }
        if c.ramp_ns == 0 {
            state |= RAMP_OVER;
        }
        SsData {
            dur: n as usize,
            state,
            head: 0,
            tail: 0,
            iops_data: Vec::new(),
            bw_data: Vec::new(),
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_x: n * (n - 1) / 2,
            sum_x_sq: (n - 1) * n * (2 * n - 1) / 6,
            sum_xy: 0,
            oldest_y: 0,
            prev_time: 0,
            prev_iops: 0,
            prev_bytes: 0,
        }
    }
}

pub(in crate::sim) fn setup(sim: &mut Sim) -> Result<(), String> {
    let jobs = &sim.cfg.jobs;
    let from = sim.prefill;
    let mut data: Vec<Option<SsData>> = vec![None; jobs.len()];
    for (i, j) in jobs.iter().enumerate().skip(from) {
        let Some(c) = &j.steadystate else { continue };
        if c.dur_s == 0 {
            continue;
        }
        data[i] = Some(SsData::new(c));
    }
    // "steadystate options must be consistent within reporting groups": every job of a
    // group (those without steady state too) has the same options.
    for i in from..jobs.len() {
        for k in from..i {
            if jobs[k].group_id == jobs[i].group_id && !same(&jobs[k], &jobs[i]) {
                return Err(format!(
                    "job '{}' rejected: steadystate options must be consistent within reporting groups (fio 3.33 td_steadystate_init)",
                    jobs[i].name
                ));
            }
        }
    }
    // steadystate_setup: a job without group_reporting holds its own samples; with it,
    // the last job of each run of the same group does.
    let mut prev_gid: Option<u32> = None;
    let mut prev: Option<usize> = None;
    let gr = |i: usize| {
        jobs[i]
            .steadystate
            .as_ref()
            .is_some_and(|c| c.group_reporting)
    };
    for i in from..jobs.len() {
        if data[i].is_none() {
            continue;
        }
        if !gr(i) {
            alloc(&mut data[i]);
            continue;
        }
        if prev_gid != Some(jobs[i].group_id) {
            if let Some(p) = prev {
                alloc(&mut data[p]);
            }
            prev_gid = Some(jobs[i].group_id);
        }
        prev = Some(i);
    }
    if let Some(p) = prev.filter(|&p| gr(p)) {
        alloc(&mut data[p]);
    }
    sim.ss = SteadyState { data, armed: false };
    Ok(())
}

/// `steadystate_alloc`: the job holds a ring of its own `ss_dur` samples.
fn alloc(d: &mut Option<SsData>) {
    if let Some(d) = d {
        d.bw_data = vec![0; d.dur];
        d.iops_data = vec![0; d.dur];
        d.state |= DATA;
    }
}

fn crit_bits(c: SsCriterion) -> u32 {
    match c {
        SsCriterion::Iops => 1,
        SsCriterion::Bw => 2,
        SsCriterion::IopsSlope => 1 | 4,
        SsCriterion::BwSlope => 2 | 4,
    }
}

/// fio compares `dur`, `limit`, `ramp_time` and `state` (a job without steady state has
/// them all zero).
fn same(a: &crate::workload::JobConfig, b: &crate::workload::JobConfig) -> bool {
    let key = |j: &crate::workload::JobConfig| {
        j.steadystate.as_ref().filter(|c| c.dur_s > 0).map(|c| {
            (
                c.dur_s,
                c.limit.to_bits(),
                c.ramp_ns / 1000,
                crit_bits(c.criterion),
                c.pct,
            )
        })
    };
    key(a) == key(b)
}

impl Sim {
    /// A reported job thread starts (its epoch): the steady-state timer is armed with
    /// the first one; the job's previous-check time is its epoch.
    pub(in crate::sim) fn ss_thread_started(&mut self, t: usize) {
        let now = self.now;
        if let Some(d) = self.ss.data.get_mut(t).and_then(Option::as_mut) {
            d.prev_time = now;
        }
        if !self.ss.armed && self.ss.on() {
            self.ss.armed = true;
            self.q.push(now + TICK_NS - 1, Ev::SteadyStateCheck);
        }
    }

    /// Some steady-state job has not finished: the timer keeps running.
    pub(in crate::sim) fn ss_wanted(&self) -> bool {
        self.ss
            .data
            .iter()
            .zip(&self.threads)
            .any(|(d, th)| d.is_some() && th.state != ThreadState::Finished)
    }

    /// fio's `steadystate_check`, once a second.
    pub(in crate::sim) fn ss_check(&mut self) {
        let now = self.now;
        let mut prev_gid: Option<u32> = None;
        let (mut group_bw, mut group_iops, mut group_over) = (0u64, 0u64, 0u32);
        for i in 0..self.threads.len() {
            let running = matches!(
                self.threads[i].state,
                ThreadState::Running | ThreadState::Sleeping | ThreadState::Delayed
            );
            let (gid, gr) = {
                let j = &self.cfg.jobs[i];
                (
                    j.group_id,
                    j.steadystate.as_ref().is_some_and(|c| c.group_reporting),
                )
            };
            let st = &self.threads[i].stats;
            let td_iops = st.dirs[0].ios + st.dirs[1].ios + st.trim.ios;
            let td_bytes = st.dirs[0].bytes + st.dirs[1].bytes + st.trim.bytes;
            let Some(ss) = self.ss.data[i].as_mut() else {
                continue;
            };
            if !running || ss.state & ATTAINED != 0 {
                continue;
            }
            if !gr || prev_gid != Some(gid) {
                group_bw = 0;
                group_iops = 0;
                group_over = 0;
            }
            prev_gid = Some(gid);
            let epoch = self.threads[i].start;
            let ramp_ns = self.cfg.jobs[i]
                .steadystate
                .as_ref()
                .map_or(0, |c| c.ramp_ns);
            if ramp_ns > 0 && ss.state & RAMP_OVER == 0 {
                // utime_since(epoch, now) >= ramp_time + 1 s, in microseconds.
                if (now - epoch) / 1000 >= ramp_ns / 1000 + 1_000_000 {
                    ss.state |= RAMP_OVER;
                }
            }
            // mtime_since: whole milliseconds.
            let rate_time = (now - ss.prev_time) / 1_000_000;
            ss.prev_time = now;
            if ss.state & RAMP_OVER != 0 {
                // fio divides by rate_time as it is; 0 ms (a job started within a
                // millisecond of the tick) would trap in fio: taken as 1 ms here.
                let rt = rate_time.max(1);
                group_bw = group_bw
                    .wrapping_add(1000u64.wrapping_mul(td_bytes.wrapping_sub(ss.prev_bytes)) / rt);
                group_iops = group_iops
                    .wrapping_add(1000u64.wrapping_mul(td_iops.wrapping_sub(ss.prev_iops)) / rt);
                group_over += 1;
            }
            ss.prev_iops = td_iops;
            ss.prev_bytes = td_bytes;
            if gr && ss.state & DATA == 0 {
                continue;
            }
            if group_over == 0 {
                continue;
            }
            let cfg = self.cfg.jobs[i]
                .steadystate
                .clone()
                .expect("steady-state job");
            let hit = if cfg.criterion.is_slope() {
                slope(ss, &cfg, group_iops, group_bw)
            } else {
                deviation(ss, &cfg, group_iops, group_bw)
            };
            if hit {
                if gr {
                    for k in 0..self.threads.len() {
                        if self.cfg.jobs[k].group_id == gid {
                            if let Some(d) = self.ss.data[k].as_mut() {
                                d.state |= ATTAINED;
                            }
                            self.ss_terminate(k);
                        }
                    }
                } else {
                    if let Some(d) = self.ss.data[i].as_mut() {
                        d.state |= ATTAINED;
                    }
                    self.ss_terminate(i);
                }
            }
        }
        if self.ss_wanted() {
            self.q.push(now + TICK_NS, Ev::SteadyStateCheck);
        }
    }

    /// fio_mark_td_terminate: the thread issues nothing more; what is in flight
    /// completes. A thread asleep in think time ends when it wakes (as with exitall).
    fn ss_terminate(&mut self, t: usize) {
        if t >= self.prefill && self.threads[t].state != ThreadState::Finished {
            self.threads[t].terminated = true;
        }
    }

    /// The job's steady-state result for its report (stat.c copies the td's `ss`).
    pub(in crate::sim) fn ss_result(&self, t: usize) -> Option<SteadyStateResult> {
        let d = self.ss.data.get(t)?.as_ref()?;
        let c = self.cfg.jobs[t].steadystate.as_ref()?;
        let (bw, iops) = ring_order(d);
        Some(SteadyStateResult {
            criterion: c.criterion,
            pct: c.pct,
            limit: c.limit,
            dur_s: c.dur_s,
            attained: d.state & ATTAINED != 0,
            criterion_value: d.criterion,
            max_deviation: d.deviation,
            slope: d.slope,
            bw,
            iops,
        })
    }
}

/// The ring's samples (bytes/s, IOPS) oldest first, as stat.c's JSON prints them; zeros
/// for a job that holds none.
fn ring_order(d: &SsData) -> (Vec<u64>, Vec<u64>) {
    let n = d.dur;
    let (mut bw, mut iops) = (vec![0; n], vec![0; n]);
    if d.state & DATA == 0 {
        return (bw, iops);
    }
    // stat.c: "if ss was attained or the buffer is not full, ss->head points to the
    // first element in the list. otherwise it actually points to the second element
    // in the list".
    let j = if d.state & ATTAINED != 0 || d.state & BUFFER_FULL == 0 {
        d.head
    } else if d.head == 0 {
        n - 1
    } else {
        d.head - 1
    };
    for l in 0..n {
        let k = (j + l) % n;
        bw[l] = d.bw_data[k];
        iops[l] = d.iops_data[k];
    }
    (bw, iops)
}

/// The ring's tail moves on (the criterion was not met).
fn advance(ss: &mut SsData, n: usize) {
    ss.tail = (ss.tail + 1) % n;
    if ss.tail <= ss.head {
        ss.head = (ss.head + 1) % n;
    }
}

/// `steadystate_slope`.
fn slope(ss: &mut SsData, c: &SteadyStateConfig, iops: u64, bw: u64) -> bool {
    let n = c.dur_s as usize;
    let dur = c.dur_s;
    let use_iops = c.criterion.is_iops();
    ss.store(iops, bw);
    let new_val = if use_iops { iops } else { bw };
    let y = |ss: &SsData, k: usize| ss.sample(use_iops, k);
    if ss.state & BUFFER_FULL != 0 || ss.tail.wrapping_sub(ss.head) == n - 1 {
        if ss.state & BUFFER_FULL == 0 {
            ss.sum_y = 0;
            for i in 0..n {
                ss.sum_y = ss.sum_y.wrapping_add(y(ss, i));
                let j = (ss.head + i) % n;
                ss.sum_xy = ss.sum_xy.wrapping_add((i as u64).wrapping_mul(y(ss, j)));
            }
            ss.state |= BUFFER_FULL;
        } else {
            ss.sum_y = ss.sum_y.wrapping_sub(ss.oldest_y).wrapping_add(new_val);
            ss.sum_xy = ss
                .sum_xy
                .wrapping_sub(ss.sum_y)
                .wrapping_add(dur.wrapping_mul(new_val));
        }
        ss.oldest_y = y(ss, ss.head);
        ss.slope = (ss.sum_xy as f64 - ss.sum_x as f64 * ss.sum_y as f64 / dur as f64)
            / (ss.sum_x_sq as f64 - ss.sum_x as f64 * ss.sum_x as f64 / dur as f64);
        ss.criterion = if c.pct {
            // `ss->sum_y / ss->dur`: an integer division in fio.
            100.0 * ss.slope / (ss.sum_y / dur) as f64
        } else {
            ss.slope
        };
        if ss.criterion.abs() < c.limit {
            return true;
        }
    }
    advance(ss, n);
    false
}

/// `steadystate_deviation`.
fn deviation(ss: &mut SsData, c: &SteadyStateConfig, iops: u64, bw: u64) -> bool {
    let n = c.dur_s as usize;
    let use_iops = c.criterion.is_iops();
    ss.store(iops, bw);
    let y = |ss: &SsData, k: usize| ss.sample(use_iops, k);
    if ss.state & BUFFER_FULL != 0 || ss.tail.wrapping_sub(ss.head) == n - 1 {
        if ss.state & BUFFER_FULL == 0 {
            ss.sum_y = (0..n).fold(0u64, |s, i| s.wrapping_add(y(ss, i)));
            ss.state |= BUFFER_FULL;
        } else {
            ss.sum_y = ss
                .sum_y
                .wrapping_sub(ss.oldest_y)
                .wrapping_add(y(ss, ss.tail));
        }
        ss.oldest_y = y(ss, ss.head);
        let mean = ss.sum_y as f64 / n as f64;
        ss.deviation = 0.0;
        for i in 0..n {
            let diff = y(ss, i) as f64 - mean;
            ss.deviation = ss.deviation.max(diff.abs());
        }
        ss.criterion = if c.pct {
            100.0 * ss.deviation / mean
        } else {
            ss.deviation
        };
        if ss.criterion < c.limit {
            return true;
        }
    }
    advance(ss, n);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(c: &SteadyStateConfig) -> SsData {
        let n = c.dur_s as usize;
        let mut d = SsData::new(c);
        d.state |= RAMP_OVER | DATA;
        d.iops_data = vec![0; n];
        d.bw_data = vec![0; n];
        d
    }

    fn cfg(criterion: SsCriterion, pct: bool, limit: f64, dur_s: u64) -> SteadyStateConfig {
        SteadyStateConfig {
            criterion,
            pct,
            limit,
            dur_s,
            ramp_ns: 0,
            group_reporting: false,
        }
    }

    /// The least-squares slope of a line is its slope, in the first full window and in
    /// each window the incremental sums (`sum_xy - sum_y + dur * new`) move on to; the
    /// percentage is of the integer mean.
    #[test]
    fn slope_of_a_line_through_the_rolling_window() {
        let c = cfg(SsCriterion::IopsSlope, false, 0.5, 4);
        let mut d = data(&c);
        // Not judged before the window is full.
        for y in [10, 20, 30] {
            assert!(!slope(&mut d, &c, y, 0));
            assert_eq!(d.state & BUFFER_FULL, 0);
        }
        assert!(!slope(&mut d, &c, 40, 0));
        assert_eq!(d.slope, 10.0);
        for y in [50, 60, 70] {
            assert!(!slope(&mut d, &c, y, 0));
            assert_eq!(d.slope, 10.0, "window ending at {y}");
            assert_eq!(d.sum_y, 4 * y - 60);
        }
        // A flat stretch: the slope falls, then the window is flat and it holds.
        for y in [70, 70] {
            assert!(!slope(&mut d, &c, y, 0));
        }
        assert!(slope(&mut d, &c, 70, 0));
        assert_eq!(d.slope, 0.0);

        // Percent: 100 * slope / (sum_y / dur) with an integer mean: y = 1, 2, 4 has
        // slope 1.5 and sum_y / dur = 7 / 3 = 2, so 75% (not 64.3%).
        let c = cfg(SsCriterion::BwSlope, true, 80.0, 3);
        let mut d = data(&c);
        assert!(!slope(&mut d, &c, 0, 1));
        assert!(!slope(&mut d, &c, 0, 2));
        assert!(slope(&mut d, &c, 0, 4));
        assert_eq!(d.slope, 1.5);
        assert_eq!(d.criterion, 75.0);
        // A falling line counts by its magnitude.
        let c = cfg(SsCriterion::BwSlope, false, 2.0, 3);
        let mut d = data(&c);
        for y in [9, 8] {
            assert!(!slope(&mut d, &c, 0, y));
        }
        assert!(slope(&mut d, &c, 0, 7));
        assert_eq!(d.slope, -1.0);
    }

    /// The deviation is the largest distance of a sample from the window's mean; the
    /// limit is strict (a deviation of exactly the limit does not attain).
    #[test]
    fn deviation_over_the_window_and_its_strict_limit() {
        let c = cfg(SsCriterion::Iops, false, 2.0, 3);
        let mut d = data(&c);
        for y in [100, 104] {
            assert!(!deviation(&mut d, &c, y, 0));
        }
        // 100, 104, 102: mean 102, deviation 2: not below 2.
        assert!(!deviation(&mut d, &c, 102, 0));
        assert_eq!(d.deviation, 2.0);
        // 104, 102, 103 (the 100 rolled out): mean 103, deviation 1.
        assert!(deviation(&mut d, &c, 103, 0));
        assert_eq!(d.sum_y, 309);
        assert_eq!(d.deviation, 1.0);

        let c = cfg(SsCriterion::Bw, true, 10.0, 2);
        let mut d = data(&c);
        assert!(!deviation(&mut d, &c, 0, 90));
        // 90, 110: mean 100, 10% off: not below 10%.
        assert!(!deviation(&mut d, &c, 0, 110));
        assert_eq!(d.criterion, 10.0);
        assert!(deviation(&mut d, &c, 0, 105));
    }

    /// stat.c's order of the ring: oldest first, whether attained, full or not.
    #[test]
    fn the_ring_reads_oldest_first() {
        let c = cfg(SsCriterion::Iops, false, 0.0, 3);
        let mut d = data(&c);
        for y in 1..=5 {
            assert!(!deviation(&mut d, &c, y, 0));
        }
        // Samples 3, 4, 5 are in the ring; head is one past the oldest (stat.c's note).
        assert_eq!(ring_order(&d).1, [3, 4, 5]);
        // Not full: from the first.
        let mut d = data(&c);
        deviation(&mut d, &c, 7, 0);
        assert_eq!(ring_order(&d).1, [7, 0, 0]);
        // Attained: the tail stays on the newest; head is the oldest.
        let c = cfg(SsCriterion::Iops, false, 1.0, 3);
        let mut d = data(&c);
        for y in [1, 5, 6] {
            assert!(!deviation(&mut d, &c, y, 0));
        }
        assert!(deviation(&mut d, &c, 5, 0));
        d.state |= ATTAINED;
        assert_eq!(ring_order(&d).1, [5, 6, 5]);
        // Attained on the first full window.
        let mut d = data(&c);
        for y in [5, 6] {
            assert!(!deviation(&mut d, &c, y, 0));
        }
        assert!(deviation(&mut d, &c, 5, 0));
        d.state |= ATTAINED;
        assert_eq!(ring_order(&d).1, [5, 6, 5]);
    }
}
