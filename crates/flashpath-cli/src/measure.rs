//! One simulated fio run reduced to the figures people compare: per job row (as fio
//! reports it, so `group_reporting` gives one row) and direction (fio's three: read,
//! write, trim), bandwidth, IOPS and completion latency. The figures are read back from fio's own JSON report, so they are
//! exactly what `flashpath fio --output-format=json` prints.

use crate::run::{self, Options};
use crate::{jobmap, report};
use anyhow::{anyhow, Context, Result};
use flashpath_core::sim::SimConfig;
use flashpath_fio::parse::Env;
use flashpath_fio::report::{write_formats, Format};

/// One direction of one reported job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirFigures {
    pub ios: u64,
    pub io_bytes: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub clat_mean_ns: f64,
    /// Mean submission and total latency (`slat_ns.mean`, `lat_ns.mean`).
    pub slat_mean_ns: f64,
    pub lat_mean_ns: f64,
    /// Every completion-latency percentile fio's JSON gives (`clat_ns.percentile`, its
    /// `percentile_list`): (percentile, ns), in its order.
    pub clat_pcts: Vec<(f64, f64)>,
    /// `clat_ns.min`, `.max`, `.stddev`.
    pub clat_min_ns: f64,
    pub clat_max_ns: f64,
    pub clat_stdev_ns: f64,
    /// The bandwidth samples' range, KiB/s (`bw_min`, `bw_max`; fio's `bw (KiB/s): min=,
    /// max=`), and their count (0: no samples).
    pub bw_min_kib: f64,
    pub bw_max_kib: f64,
    pub bw_samples: u64,
}

/// One job row of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFigures {
    pub name: String,
    /// read, write, trim (as [`DIRS`])
    pub dirs: [DirFigures; 3],
    /// flashpath's spans: (name, mean ns), in report order.
    pub spans: Vec<(String, f64)>,
    /// The same per direction (as [`DIRS`]), as the report prints them: only when the
    /// job has spans in more than one direction, else all empty.
    pub dir_spans: [Vec<(String, f64)>; 3],
    /// The run's own counters (JSON root `flashpath`): (`group.name`, value), e.g.
    /// `device.map_misses`, `hpb.hits`; the same in every row of a run.
    pub counters: Vec<(String, f64)>,
    /// fio's `job_runtime` of the row, ms.
    pub runtime_ms: f64,
    /// Busy times of the row's measured window (`flashpath.occupancy`), if reported.
    pub occupancy: Option<Occupancy>,
    /// fio's `lat (msec)` line: the share of I/Os (percent) in each millisecond bucket,
    /// by fio's bucket name (`2`, `4`, ..., `2000`, `>=2000`; JSON `latency_ms`).
    pub lat_ms: Vec<(String, f64)>,
}

/// Busy times over a job row's measured window, ns (`jobs[i].flashpath.occupancy`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Occupancy {
    pub window_ns: f64,
    pub core_busy_ns: Vec<f64>,
    pub hw_busy_ns: f64,
}

fn find_span(set: &[(String, f64)], name: &str) -> Option<f64> {
    set.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}

impl DirFigures {
    /// The completion-latency percentile `p` fio reported (its `percentile_list`), ns.
    pub fn clat_pct_ns(&self, p: f64) -> Option<f64> {
        self.clat_pcts
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-6)
            .map(|(_, ns)| *ns)
    }
}

impl JobFigures {
    /// Mean of a span in ns, if reported.
    pub fn span(&self, name: &str) -> Option<f64> {
        find_span(&self.spans, name)
    }
    /// Mean of a span of direction `d` (index into [`DIRS`]) in ns: its own if the
    /// report splits the spans by direction, the job's if `d` is its only direction.
    pub fn dir_span(&self, d: usize, name: &str) -> Option<f64> {
        if !self.dir_spans[d].is_empty() {
            return find_span(&self.dir_spans[d], name);
        }
        let only_d = self.dirs[d].ios > 0
            && self
                .dirs
                .iter()
                .enumerate()
                .all(|(k, x)| k == d || x.ios == 0);
        if only_d {
            self.span(name)
        } else {
            None
        }
    }
    /// Whether the report splits the spans by direction.
    pub fn spans_split(&self) -> bool {
        self.dir_spans.iter().any(|s| !s.is_empty())
    }
    /// Bytes per I/O over all directions (a trim counts the bytes it discards, as fio
    /// counts them).
    pub fn io_size(&self) -> Option<f64> {
        let ios: u64 = self.dirs.iter().map(|d| d.ios).sum();
        let bytes: u64 = self.dirs.iter().map(|d| d.io_bytes).sum();
        (ios > 0).then(|| bytes as f64 / ios as f64)
    }
    /// Bandwidth of all directions, bytes/s (trims count as fio's trim bandwidth does).
    pub fn bw_bytes(&self) -> f64 {
        self.dirs.iter().map(|d| d.bw_bytes).sum()
    }
}

/// fio's directions, in the order of its reports (`jobs[i].read`, `.write`, `.trim`).
pub const DIRS: [&str; 3] = ["read", "write", "trim"];

/// Runs the fio arguments on the system the options describe (no progress line).
pub fn run_fio_quiet(opts: &Options, fio_args: &[String]) -> Result<Vec<JobFigures>> {
    let env = Env::from_process();
    let inv = crate::run::parse_fio(fio_args, &env)?;
    let (mut host, device, driver) = run::system(opts)?;
    let plan = jobmap::plan(&inv, &device, jobmap::journal(&host))?;
    plan.apply(&mut host)?;
    let result = run::simulate(
        SimConfig {
            host,
            device,
            driver,
            jobs: plan.jobs,
            precondition: opts
                .precondition
                .unwrap_or(flashpath_core::sim::Precondition::Auto),
        },
        false,
    )?;
    let rep = report::build(&plan.metas, &result, plan.global_options);
    let mut buf = Vec::new();
    write_formats(&rep, &[Format::Json], &mut buf).context("building the JSON report")?;
    let v: serde_json::Value =
        serde_json::from_slice(&buf).context("reading back the JSON report")?;
    figures_of(&v)
}

/// The figures of a fio JSON report.
pub fn figures_of(v: &serde_json::Value) -> Result<Vec<JobFigures>> {
    let jobs = v["jobs"]
        .as_array()
        .ok_or_else(|| anyhow!("JSON report has no jobs"))?;
    let mut counters = Vec::new();
    if let Some(groups) = v["flashpath"].as_object() {
        for (g, o) in groups {
            for (k, x) in o.as_object().into_iter().flatten() {
                counters.push((format!("{g}.{k}"), x.as_f64().unwrap_or(0.0)));
            }
        }
    }
    jobs.iter()
        .map(|j| {
            let dir = |d: &str| {
                let x = &j[d];
                DirFigures {
                    ios: x["total_ios"].as_u64().unwrap_or(0),
                    io_bytes: x["io_bytes"].as_u64().unwrap_or(0),
                    bw_bytes: x["bw_bytes"].as_f64().unwrap_or(0.0),
                    iops: x["iops"].as_f64().unwrap_or(0.0),
                    clat_mean_ns: x["clat_ns"]["mean"].as_f64().unwrap_or(0.0),
                    slat_mean_ns: x["slat_ns"]["mean"].as_f64().unwrap_or(0.0),
                    lat_mean_ns: x["lat_ns"]["mean"].as_f64().unwrap_or(0.0),
                    clat_pcts: x["clat_ns"]["percentile"]
                        .as_object()
                        .map(|o| {
                            o.iter()
                                .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_f64()?)))
                                .collect()
                        })
                        .unwrap_or_default(),
                    clat_min_ns: x["clat_ns"]["min"].as_f64().unwrap_or(0.0),
                    clat_max_ns: x["clat_ns"]["max"].as_f64().unwrap_or(0.0),
                    clat_stdev_ns: x["clat_ns"]["stddev"].as_f64().unwrap_or(0.0),
                    bw_min_kib: x["bw_min"].as_f64().unwrap_or(0.0),
                    bw_max_kib: x["bw_max"].as_f64().unwrap_or(0.0),
                    bw_samples: x["bw_samples"].as_u64().unwrap_or(0),
                }
            };
            let means = |fp: &serde_json::Value| -> Vec<(String, f64)> {
                fp["spans"]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .map(|(k, v)| (k.clone(), v["mean_ns"].as_f64().unwrap_or(0.0)))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let fp = &j["flashpath"];
            let o = &fp["occupancy"];
            let occupancy = o.is_object().then(|| Occupancy {
                window_ns: o["window_ns"].as_f64().unwrap_or(0.0),
                core_busy_ns: o["core_busy_ns"]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(0.0)).collect())
                    .unwrap_or_default(),
                hw_busy_ns: o["hw_busy_ns"].as_f64().unwrap_or(0.0),
            });
            Ok(JobFigures {
                name: j["jobname"].as_str().unwrap_or("?").to_string(),
                dirs: DIRS.map(dir),
                spans: means(fp),
                dir_spans: DIRS.map(|d| means(&fp[d])),
                counters: counters.clone(),
                runtime_ms: j["job_runtime"].as_f64().unwrap_or(0.0),
                occupancy,
                lat_ms: j["latency_ms"]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// The one job row a per-row metric needs.
fn one_job_row<'a>(rows: &'a [JobFigures], name: &str) -> Result<&'a JobFigures> {
    match rows {
        [r] => Ok(r),
        _ => Err(anyhow!(
            "metric '{name}' needs one job row (use group_reporting), the run has {}",
            rows.len()
        )),
    }
}

/// A row's mean pre, hw and post spans, ns.
fn pre_hw_post(r: &JobFigures, name: &str) -> Result<(f64, f64, f64)> {
    let span = |s: &str| {
        r.span(s)
            .ok_or_else(|| anyhow!("metric '{name}': the report has no spans"))
    };
    Ok((span("pre")?, span("hw")?, span("post")?))
}

/// A named figure of a run (`write_bw_mib`, `read_clat_p95_ms`, ...), over all job rows:
/// bandwidth and IOPS add up, mean latency is weighted by I/Os, percentiles need one row.
pub fn metric(rows: &[JobFigures], name: &str) -> Result<f64> {
    if let Some((_, v)) = rows
        .first()
        .and_then(|r| r.counters.iter().find(|(k, _)| k == name))
    {
        return Ok(*v);
    }
    // `runtime_ms@PREFIX`: the summed runtimes of the rows whose job name starts with
    // PREFIX (stonewalled jobs one after another: the time of the whole sequence).
    if let Some(prefix) = name.strip_prefix("runtime_ms@") {
        let picked: Vec<_> = rows.iter().filter(|r| r.name.starts_with(prefix)).collect();
        if picked.is_empty() {
            return Err(anyhow!("metric '{name}': no job named {prefix}..."));
        }
        return Ok(picked.iter().map(|r| r.runtime_ms).sum());
    }
    // A span's mean: `pre_us`, `hw_us`, `d2c_us`, ... (one job row); one direction's:
    // `read_hw_us`, `write_pre_us`, ...
    if let Some(span) = name.strip_suffix("_us") {
        let (d, span) = match span.split_once('_') {
            Some((dir, s)) if DIRS.contains(&dir) => (DIRS.iter().position(|&x| x == dir), s),
            _ => (None, span),
        };
        if SPANS.contains(&span) {
            let r = one_job_row(rows, name)?;
            let mean = match d {
                Some(d) => r.dir_span(d, span),
                None => r.span(span),
            };
            return mean.map(|ns| ns / 1e3).ok_or_else(|| match d {
                Some(d) => anyhow!("metric '{name}': the report has no {} spans", DIRS[d]),
                None => anyhow!("metric '{name}': the report has no spans"),
            });
        }
    }
    // The paper's software share: (pre + post) / (pre + hw + post) of the mean spans.
    if name == "software_share_pct" {
        let r = one_job_row(rows, name)?;
        let (pre, hw, post) = pre_hw_post(r, name)?;
        let total = pre + hw + post;
        return Ok(if total > 0.0 {
            (pre + post) / total * 100.0
        } else {
            0.0
        });
    }
    // The white paper's single-stream speeds from the spans, MiB/s: "theoretical",
    // size / (pre + hw + post), and "theoretical max (hw = 0)", size / (pre + post).
    if name == "theoretical_mib" || name == "theoretical_max_mib" {
        let r = one_job_row(rows, name)?;
        let size = r
            .io_size()
            .ok_or_else(|| anyhow!("metric '{name}': the job did no I/O"))?;
        let (pre, hw, post) = pre_hw_post(r, name)?;
        let ns = if name == "theoretical_mib" {
            pre + hw + post
        } else {
            pre + post
        };
        // Spans of no time (a run without spans' content): no speed to speak of.
        return Ok(if ns > 0.0 {
            size / (ns / 1e9) / 1048576.0
        } else {
            0.0
        });
    }
    // fio's `lat (msec)` line: `lat_msec_20_pct` is its "20=" bucket (10 < lat <= 20
    // ms), `lat_msec_ge2000_pct` its ">=2000".
    if let Some(bucket) = name
        .strip_prefix("lat_msec_")
        .and_then(|b| b.strip_suffix("_pct"))
    {
        let r = one_job_row(rows, name)?;
        let key = match bucket.strip_prefix("ge") {
            Some(n) => format!(">={n}"),
            None => bucket.to_string(),
        };
        return r
            .lat_ms
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                anyhow!(
                    "metric '{name}': fio has no `lat (msec)` bucket '{key}' (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000, >=2000 as ge2000)"
                )
            });
    }
    let (dir, what) = name
        .split_once('_')
        .ok_or_else(|| anyhow!("unknown metric '{name}' ({METRICS})"))?;
    let d = DIRS
        .iter()
        .position(|&x| x == dir)
        .ok_or_else(|| anyhow!("unknown metric '{name}' ({METRICS})"))?;
    let sum = |f: &dyn Fn(&DirFigures) -> f64| rows.iter().map(|r| f(&r.dirs[d])).sum::<f64>();
    let ios = sum(&|x| x.ios as f64);
    let one_row = || -> Result<&DirFigures> { Ok(&one_job_row(rows, name)?.dirs[d]) };
    Ok(match what {
        "bw_mib" => sum(&|x| x.bw_bytes) / 1048576.0,
        "bw_mb" => sum(&|x| x.bw_bytes) / 1e6,
        "iops" => sum(&|x| x.iops),
        "clat_mean_ms" | "clat_mean_us" => {
            if ios == 0.0 {
                return Err(anyhow!("metric '{name}': no {dir} I/Os in the run"));
            }
            let ns = sum(&|x| x.clat_mean_ns * x.ios as f64) / ios;
            if what.ends_with("ms") {
                ns / 1e6
            } else {
                ns / 1e3
            }
        }
        "clat_min_ms" => one_row()?.clat_min_ns / 1e6,
        "clat_max_ms" => one_row()?.clat_max_ns / 1e6,
        "clat_stdev_ms" => one_row()?.clat_stdev_ns / 1e6,
        "bw_min_kib" | "bw_max_kib" => {
            let r = one_row()?;
            if r.bw_samples == 0 {
                return Err(anyhow!(
                    "metric '{name}': the job took no bandwidth samples"
                ));
            }
            if what == "bw_min_kib" {
                r.bw_min_kib
            } else {
                r.bw_max_kib
            }
        }
        _ => {
            // Any percentile fio reported: `clat_p10_ms`, `clat_p99.5_ms`.
            if let Some(p) = percentile_of(what) {
                let r = one_row()?;
                return r.clat_pct_ns(p).map(|ns| ns / 1e6).ok_or_else(|| {
                    anyhow!(
                        "metric '{name}': fio reported no {p}th percentile (its percentile_list)"
                    )
                });
            }
            return Err(anyhow!("unknown metric '{name}' ({METRICS})"));
        }
    })
}

/// [`parallel`], showing on standard error (see `run::progress`) which item starts,
/// as `command: [7/52] label`.
pub fn parallel_shown<T: Sync, R: Send>(
    command: &str,
    items: &[T],
    label: impl Fn(&T) -> String + Sync,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let started = std::sync::atomic::AtomicUsize::new(0);
    let r = parallel(items, |item| {
        let i = started.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        run::progress::show_step(command, i, items.len(), &label(item));
        f(item)
    });
    run::progress::end_steps();
    r
}

/// Maps `f` over `items` on all cores, keeping the order; the first error wins.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<R>>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    // An embedded caller's stop reaches the workers (their runs end as interrupted,
    // an error), and this thread keeps asking the caller while they work.
    let stop = crate::embed::share();
    let running = std::sync::atomic::AtomicUsize::new(workers.min(items.len()));
    std::thread::scope(|s| {
        for _ in 0..workers.min(items.len()) {
            s.spawn(|| {
                // Counted out however the worker ends (a panic too).
                struct Out<'a>(&'a std::sync::atomic::AtomicUsize);
                impl Drop for Out<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, std::sync::atomic::Ordering::Release);
                    }
                }
                let _out = Out(&running);
                crate::embed::inherit(stop.clone());
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    *slots[i].lock().unwrap() = Some(f(item));
                }
            });
        }
        if stop.is_some() {
            while running.load(std::sync::atomic::Ordering::Acquire) > 0 {
                crate::embed::stop_requested();
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every item ran"))
        .collect()
}

/// The percentile of a `clat_pX_ms` metric (X in (0, 100]).
fn percentile_of(what: &str) -> Option<f64> {
    let p: f64 = what
        .strip_prefix("clat_p")?
        .strip_suffix("_ms")?
        .parse()
        .ok()?;
    (p > 0.0 && p <= 100.0).then_some(p)
}

/// Checks a metric name without a run.
pub fn check_metric(name: &str) -> Result<()> {
    if name
        .strip_prefix("runtime_ms@")
        .is_some_and(|p| !p.is_empty())
    {
        return Ok(());
    }
    // The run's own counters (JSON root `flashpath`): the names a run with HPB reports.
    let sys = flashpath_core::stats::SystemStats {
        hpb: Some(Default::default()),
        ..Default::default()
    };
    let counters: Vec<(String, f64)> = report::counters(&sys)
        .into_iter()
        .flat_map(|(g, c)| c.into_iter().map(move |(k, _)| (format!("{g}.{k}"), 0.0)))
        .collect();
    // Any percentile is a name (whether fio reports it depends on the job's
    // percentile_list); so is any of fio's `lat (msec)` buckets.
    let asked = name
        .split_once('_')
        .and_then(|(_, what)| percentile_of(what));
    let probe = [JobFigures {
        name: String::new(),
        dirs: std::array::from_fn(|_| DirFigures {
            ios: 1,
            clat_pcts: asked.map(|p| (p, 0.0)).into_iter().collect(),
            bw_samples: 1,
            ..DirFigures::default()
        }),
        spans: SPANS.iter().map(|s| (s.to_string(), 0.0)).collect(),
        dir_spans: std::array::from_fn(|_| SPANS.iter().map(|s| (s.to_string(), 0.0)).collect()),
        counters,
        runtime_ms: 0.0,
        occupancy: None,
        lat_ms: LAT_MS_BUCKETS
            .iter()
            .map(|b| (b.to_string(), 0.0))
            .collect(),
    }];
    metric(&probe, name).map(|_| ())
}

/// fio's `lat (msec)` buckets (stat.c's msec names; JSON `latency_ms`).
const LAT_MS_BUCKETS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

pub const METRICS: &str = "DIR_bw_mib, DIR_bw_mb, DIR_iops, DIR_clat_mean_ms, DIR_clat_mean_us, \
DIR_clat_pX_ms (any percentile fio reports: p50, p99.9, ...), DIR_clat_min_ms, DIR_clat_max_ms, \
DIR_clat_stdev_ms, DIR_bw_min_kib and DIR_bw_max_kib (the bandwidth samples' range) with DIR \
read, write or trim; lat_msec_N_pct (fio's `lat (msec)` bucket N: 2, 4, 10, ..., 2000, ge2000); SPAN_us with SPAN pre, hw, post, q2g, \
g2i, i2d, d2c or q2c, and DIR_SPAN_us for one direction's; software_share_pct; \
theoretical_mib and theoretical_max_mib (size / (pre + hw + post) and size / (pre + post)); the run's \
counters device.NAME and hpb.NAME (as in the JSON root flashpath); runtime_ms@PREFIX (summed runtimes \
of the jobs whose name starts with PREFIX)";

/// The spans the JSON report carries (`jobs[i].flashpath.spans`).
pub const SPANS: [&str; 8] = ["pre", "hw", "post", "q2g", "g2i", "i2d", "d2c", "q2c"];

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<JobFigures> {
        let d = |bw: f64, ios: u64, mean: f64| DirFigures {
            ios,
            io_bytes: ios * 4096,
            bw_bytes: bw,
            iops: ios as f64,
            clat_mean_ns: mean,
            clat_pcts: vec![
                (50.0, 1e6),
                (90.0, 1.5e6),
                (95.0, 2e6),
                (99.0, 3e6),
                (99.9, 4e6),
            ],
            ..DirFigures::default()
        };
        vec![
            JobFigures {
                name: "a".into(),
                dirs: [d(1048576.0, 100, 1e6), d(0.0, 0, 0.0), d(0.0, 0, 0.0)],
                spans: vec![("pre".into(), 141_000.0), ("hw".into(), 1_360_000.0)],
                dir_spans: Default::default(),
                counters: Vec::new(),
                runtime_ms: 0.0,
                occupancy: None,
                lat_ms: Vec::new(),
            },
            JobFigures {
                name: "b".into(),
                dirs: [
                    d(2097152.0, 300, 2e6),
                    d(0.0, 0, 0.0),
                    d(524288.0, 128, 5e5),
                ],
                spans: Vec::new(),
                dir_spans: Default::default(),
                counters: Vec::new(),
                runtime_ms: 0.0,
                occupancy: None,
                lat_ms: Vec::new(),
            },
        ]
    }

    #[test]
    fn metrics_add_bandwidth_and_weight_latency_by_ios() {
        let r = rows();
        assert_eq!(metric(&r, "read_bw_mib").unwrap(), 3.0);
        assert_eq!(metric(&r, "read_bw_mb").unwrap(), 3.145728);
        assert_eq!(metric(&r, "read_iops").unwrap(), 400.0);
        assert_eq!(metric(&r, "read_clat_mean_ms").unwrap(), 1.75);
        assert_eq!(metric(&r[..1], "read_clat_p50_ms").unwrap(), 1.0);
        assert_eq!(metric(&r[..1], "read_clat_p90_ms").unwrap(), 1.5);
        assert_eq!(metric(&r[..1], "read_clat_p95_ms").unwrap(), 2.0);
        assert_eq!(metric(&r[..1], "read_clat_p99.9_ms").unwrap(), 4.0);
        assert_eq!(metric(&r[..1], "pre_us").unwrap(), 141.0);
        assert_eq!(metric(&r[..1], "hw_us").unwrap(), 1360.0);
        assert!(metric(&r[..1], "post_us").is_err(), "not reported");
        assert!(metric(&r, "pre_us").is_err(), "needs one row");
        assert!(metric(&r, "software_share_pct").is_err(), "needs one row");
        assert!(
            metric(&r[..1], "software_share_pct").is_err(),
            "post is not reported"
        );
        assert!(metric(&r[..1], "foo_us").is_err());
        let e = metric(&r, "read_clat_p99_ms").unwrap_err().to_string();
        assert!(e.contains("needs one job row"), "{e}");
        assert!(metric(&r, "write_clat_mean_ms").is_err());
        assert!(metric(&r, "read_speed").is_err());
        // fio's third direction.
        assert_eq!(metric(&r, "trim_bw_mib").unwrap(), 0.5);
        assert_eq!(metric(&r, "trim_iops").unwrap(), 128.0);
        assert_eq!(metric(&r, "trim_clat_mean_us").unwrap(), 500.0);
        assert!(metric(&r, "discard_bw_mib").is_err());
        // Table 2's direct-write row: 128 KiB, pre 141, hw 1360, post 53 us: "81"
        // and "644" MiB/s.
        let mut w = r[0].clone();
        w.dirs[0].io_bytes = w.dirs[0].ios * 131072;
        w.spans.push(("post".into(), 53_000.0));
        let th = metric(std::slice::from_ref(&w), "theoretical_mib").unwrap();
        let max = metric(std::slice::from_ref(&w), "theoretical_max_mib").unwrap();
        assert!((th - 80.43).abs() < 0.01, "{th}");
        assert!((max - 644.33).abs() < 0.01, "{max}");
        assert!(
            metric(&r[..1], "theoretical_mib").is_err(),
            "post is not reported"
        );
        assert!(metric(&r, "theoretical_max_mib").is_err(), "needs one row");
        // Any reported percentile, the extremes, the samples' range, fio's buckets.
        let mut x = r[0].clone();
        x.dirs[0].clat_pcts = vec![(1.0, 11_338_000.0), (99.5, 12_518_000.0)];
        x.dirs[0].clat_min_ns = 11_253_000.0;
        x.dirs[0].clat_max_ns = 34_579_000.0;
        x.dirs[0].clat_stdev_ns = 742_160.0;
        x.dirs[0].bw_min_kib = 81920.0;
        x.dirs[0].bw_max_kib = 88064.0;
        x.dirs[0].bw_samples = 12;
        x.lat_ms = vec![("20".into(), 99.9), (">=2000".into(), 0.1)];
        let one = std::slice::from_ref(&x);
        assert_eq!(metric(one, "read_clat_p1_ms").unwrap(), 11.338);
        assert_eq!(metric(one, "read_clat_p99.5_ms").unwrap(), 12.518);
        let e = metric(one, "read_clat_p10_ms").unwrap_err().to_string();
        assert!(e.contains("no 10th percentile"), "{e}");
        assert_eq!(metric(one, "read_clat_min_ms").unwrap(), 11.253);
        assert_eq!(metric(one, "read_clat_max_ms").unwrap(), 34.579);
        assert_eq!(metric(one, "read_clat_stdev_ms").unwrap(), 0.74216);
        assert_eq!(metric(one, "read_bw_min_kib").unwrap(), 81920.0);
        assert_eq!(metric(one, "read_bw_max_kib").unwrap(), 88064.0);
        assert!(metric(&r[..1], "read_bw_min_kib").is_err(), "no samples");
        assert_eq!(metric(one, "lat_msec_20_pct").unwrap(), 99.9);
        assert_eq!(metric(one, "lat_msec_ge2000_pct").unwrap(), 0.1);
        assert!(metric(one, "lat_msec_30_pct").is_err());
        assert!(check_metric("write_clat_p99.5_ms").is_ok());
        assert!(check_metric("write_clat_p0_ms").is_err());
        assert!(check_metric("lat_msec_50_pct").is_ok());
        assert!(check_metric("lat_msec_5_pct").is_err());
        assert!(check_metric("write_bw_max_kib").is_ok());
        // Size and bandwidth of a row count its trims.
        assert_eq!(r[1].io_size(), Some(4096.0));
        assert_eq!(r[1].bw_bytes(), 2097152.0 + 524288.0);
    }

    /// `DIR_SPAN_us`: a direction's own spans where the report splits them; the job's
    /// where that direction is its only one; else none.
    #[test]
    fn a_directions_span_metric() {
        let r = rows();
        // Row a reads only: its spans are the reads'.
        assert_eq!(metric(&r[..1], "read_hw_us").unwrap(), 1360.0);
        assert!(metric(&r[..1], "write_hw_us").is_err());
        // Row b reads and trims, without split spans: no direction's spans.
        let mut b = r[1].clone();
        b.spans = vec![("hw".into(), 9e5)];
        assert!(metric(std::slice::from_ref(&b), "read_hw_us").is_err());
        b.dir_spans[0] = vec![("hw".into(), 7e5)];
        b.dir_spans[2] = vec![("hw".into(), 2e6)];
        assert_eq!(
            metric(std::slice::from_ref(&b), "read_hw_us").unwrap(),
            700.0
        );
        assert_eq!(
            metric(std::slice::from_ref(&b), "trim_hw_us").unwrap(),
            2000.0
        );
        assert_eq!(metric(std::slice::from_ref(&b), "hw_us").unwrap(), 900.0);
        let e = metric(std::slice::from_ref(&b), "write_hw_us").unwrap_err();
        assert!(e.to_string().contains("no write spans"), "{e}");
        assert!(check_metric("trim_q2c_us").is_ok());
        assert!(check_metric("reads_hw_us").is_err());
    }
}
