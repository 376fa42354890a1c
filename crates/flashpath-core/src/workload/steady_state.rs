//! fio's steady-state options as a job states them (`steadystate`, `ss_dur`,
//! `ss_ramp`); the detection itself runs in `sim/jobs/steadystate.rs`.
//! Units: ns, whole seconds for the window, as fio keeps them.

/// The criterion (fio's `steadystate=` word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsCriterion {
    /// Largest deviation of IOPS from their mean.
    Iops,
    /// Slope of the IOPS samples.
    IopsSlope,
    /// Largest deviation of bandwidth (bytes/s) from its mean.
    Bw,
    /// Slope of the bandwidth samples.
    BwSlope,
}

impl SsCriterion {
    pub fn is_iops(self) -> bool {
        matches!(self, SsCriterion::Iops | SsCriterion::IopsSlope)
    }
    pub fn is_slope(self) -> bool {
        matches!(self, SsCriterion::IopsSlope | SsCriterion::BwSlope)
    }
}

/// A job's steady-state options (fio's `ss_state`, `ss_limit`, `ss_dur`, `ss_ramp_time`).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateConfig {
    pub criterion: SsCriterion,
    /// The limit is a percentage of the mean (`FIO_SS_PCT`).
    pub pct: bool,
    /// The limit: percent, IOPS, or bytes/s (IOPS or bytes/s per second for slopes).
    pub limit: f64,
    /// The window, in whole seconds (fio: `ss_dur / 1000000`); at least 1.
    pub dur_s: u64,
    /// `ss_ramp`, in ns (fio keeps microseconds).
    pub ramp_ns: u64,
    /// The job reports with its group (fio's `group_reporting`): the group is judged.
    pub group_reporting: bool,
}
