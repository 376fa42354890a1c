//! What `flashpath calibrate` fits to: figures measured on a board, each tied to the
//! workload that produced it, so flashpath can run the same workload and compare.
//!
//! Two forms are read:
//! - **fio's JSON output** (`fio --output-format=json`). fio records each job's options
//!   (`jobs[i]."job options"`, and the job file's `[global]` section as `"global
//!   options"`), so the jobs are rebuilt as fio arguments and simulated as they ran.
//!   fio does not record `stonewall`: a job whose `groupid` differs from the one before
//!   it started a new group, so it gets `--stonewall` back. `numjobs=N` without
//!   `group_reporting` gives N identical entries, with it one: either way the job is
//!   rebuilt once. The figures taken are per job name (its clones added up) and
//!   direction: the bandwidth, and the 99th percentile of completion latency where
//!   one entry carries it (`--metrics` chooses).
//! - **A measurements TOML** for published tables, one `[[measurement]]` per figure:
//!   the workload (`job = "FILE.fio"`, relative to the TOML, `fio = ["--name=a", ...]`,
//!   `iozone = "-i 0 -t 1 ..."` with `processes = N` where it runs several counts, or
//!   `flashbench = "-O ... /dev/mmcblk0"`, one test), `metric` (as `validate`'s for
//!   fio; `iozone::figures` and `flashbench::figures` name theirs), `value`, and
//!   optionally `spread_pct` and `source`.

use crate::measure::{self, JobFigures, DIRS};
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use std::path::Path;

/// The run-to-run spread assumed when a measurement gives none, in percent: fio's
/// bandwidth on a phone's eMMC or UFS repeats within a few percent between runs of the
/// same job on a quiet board; a tail percentile moves more. These are estimates of
/// repeatability (not of the device) and `--spread` replaces them.
pub const DEFAULT_BW_SPREAD_PCT: f64 = 5.0;
pub const DEFAULT_PCT_SPREAD_PCT: f64 = 15.0;

/// Which of flashpath's front ends runs a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// fio arguments (a job file is one argument).
    Fio,
    /// An iozone command line, run at this many processes.
    Iozone { processes: u64 },
    /// A flashbench command line (one test).
    Flashbench,
}

/// A workload flashpath runs: a tool's arguments, on the calibration's system or on one
/// of its own (a reproduction's driver and overrides).
#[derive(Clone, Debug)]
pub struct Workload {
    pub tool: Tool,
    pub args: Vec<String>,
    pub system: Option<crate::run::Options>,
}

impl Workload {
    pub fn fio(args: Vec<String>) -> Workload {
        Workload {
            tool: Tool::Fio,
            args,
            system: None,
        }
    }
}

impl PartialEq for Workload {
    fn eq(&self, o: &Workload) -> bool {
        self.tool == o.tool && self.args == o.args && self.system.is_none() && o.system.is_none()
    }
}

/// One figure to fit.
#[derive(Clone, Debug)]
pub struct Target {
    /// Which workload (index into [`Measurements::workloads`]).
    pub workload: usize,
    /// Only the job rows of this name count (`None`: all rows).
    pub job: Option<String>,
    /// A metric as `validate` names them (`read_bw_mib`, `write_clat_p99_ms`).
    pub metric: String,
    pub value: f64,
    /// Relative spread, as a fraction (0.05 = 5 %).
    pub spread: f64,
    /// Where it came from, for the report: `FILE:JOB metric`.
    pub label: String,
}

#[derive(Clone, Debug, Default)]
pub struct Measurements {
    pub workloads: Vec<Workload>,
    pub targets: Vec<Target>,
}

/// Which figures a fio JSON gives (`--metrics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub bw: bool,
    pub p50: bool,
    pub p99: bool,
    pub clat_mean: bool,
}

impl Wanted {
    pub const DEFAULT: Wanted = Wanted {
        bw: true,
        p50: false,
        p99: true,
        clat_mean: false,
    };
    pub fn parse(list: &str) -> Result<Wanted> {
        let mut w = Wanted {
            bw: false,
            p50: false,
            p99: false,
            clat_mean: false,
        };
        for m in list.split(',').map(str::trim) {
            match m {
                "bw" => w.bw = true,
                "p50" => w.p50 = true,
                "p99" => w.p99 = true,
                "clat_mean" => w.clat_mean = true,
                _ => bail!("--metrics: unknown figure '{m}' (bw, p50, p99, clat_mean)"),
            }
        }
        Ok(w)
    }
}

/// Spreads given on the command line (`--spread PCT` for every figure).
#[derive(Clone, Copy, Debug)]
pub struct Spreads {
    pub bw: f64,
    pub pct: f64,
}

impl Default for Spreads {
    fn default() -> Self {
        Spreads {
            bw: DEFAULT_BW_SPREAD_PCT / 100.0,
            pct: DEFAULT_PCT_SPREAD_PCT / 100.0,
        }
    }
}

impl Measurements {
    fn workload(&mut self, w: Workload) -> usize {
        if let Some(i) = self.workloads.iter().position(|x| *x == w) {
            return i;
        }
        self.workloads.push(w);
        self.workloads.len() - 1
    }

    /// Reads one file: fio JSON (it starts with `{`) or a measurements TOML.
    pub fn add_file(&mut self, path: &str, wanted: Wanted, spreads: Spreads) -> Result<()> {
        let bytes = std::fs::read(path).with_context(|| format!("{path}: cannot read"))?;
        if bytes.len() > 64 << 20 {
            bail!(
                "{path}: {} bytes is more than a measurement file holds (64 MiB at most)",
                bytes.len()
            );
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| anyhow!("{path}: not UTF-8 text (fio JSON or a measurements TOML)"))?;
        // fio may print notes before its JSON (e.g. "fio: file hash not empty on exit").
        match text.find('{') {
            Some(start)
                if !text.trim_start().starts_with('#') && !text.trim_start().starts_with('[') =>
            {
                let v: serde_json::Value = serde_json::from_str(&text[start..]).map_err(|e| {
                    anyhow!(
                        "{path}:{}: not fio JSON: {e}",
                        e.line() + text[..start].lines().count()
                    )
                })?;
                self.add_fio_json(path, &v, wanted, spreads)
            }
            _ => self.add_toml(path, &text, spreads),
        }
    }

    /// The jobs of a fio JSON report as fio arguments, and their figures.
    pub fn add_fio_json(
        &mut self,
        path: &str,
        v: &serde_json::Value,
        wanted: Wanted,
        spreads: Spreads,
    ) -> Result<()> {
        let args = fio_args_of(path, v)?;
        let w = self.workload(Workload::fio(args));
        let rows = measure::figures_of(v).with_context(|| path.to_string())?;
        let mut names: Vec<&str> = Vec::new();
        for r in &rows {
            if !names.contains(&r.name.as_str()) {
                names.push(&r.name);
            }
        }
        let before = self.targets.len();
        for name in names {
            let mine: Vec<JobFigures> = rows.iter().filter(|r| r.name == name).cloned().collect();
            for (d, dir) in DIRS.iter().enumerate() {
                if mine.iter().all(|r| r.dirs[d].ios == 0) {
                    continue;
                }
                let mut metrics: Vec<(String, f64)> = Vec::new();
                if wanted.bw {
                    metrics.push((format!("{dir}_bw_mib"), spreads.bw));
                }
                if wanted.clat_mean {
                    metrics.push((format!("{dir}_clat_mean_us"), spreads.bw));
                }
                if mine.len() == 1 {
                    if wanted.p50 {
                        metrics.push((format!("{dir}_clat_p50_ms"), spreads.pct));
                    }
                    if wanted.p99 {
                        metrics.push((format!("{dir}_clat_p99_ms"), spreads.pct));
                    }
                }
                for (m, spread) in metrics {
                    let value = match measure::metric(&mine, &m) {
                        Ok(x) if x > 0.0 && x.is_finite() => x,
                        // A percentile fio did not report is not a figure.
                        _ => continue,
                    };
                    self.targets.push(Target {
                        workload: w,
                        job: Some(name.to_string()),
                        label: if stem(path) == name {
                            format!("{name} {m}")
                        } else {
                            format!("{}:{name} {m}", short(path))
                        },
                        metric: m,
                        value,
                        spread,
                    });
                }
            }
        }
        if self.targets.len() == before {
            bail!("{path}: no job of this fio report did any I/O: nothing to fit");
        }
        Ok(())
    }

    fn add_toml(&mut self, path: &str, text: &str, spreads: Spreads) -> Result<()> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            measurement: Vec<RawMeasurement>,
        }
        /// A command line: one string (split at white space) or a list of arguments.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Line {
            Text(String),
            Args(Vec<String>),
        }
        impl Line {
            fn args(self) -> Vec<String> {
                match self {
                    Line::Text(t) => t.split_whitespace().map(str::to_string).collect(),
                    Line::Args(a) => a,
                }
            }
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawMeasurement {
            name: Option<String>,
            job: Option<String>,
            fio: Option<Vec<String>>,
            iozone: Option<Line>,
            flashbench: Option<Line>,
            processes: Option<u64>,
            metric: String,
            value: f64,
            spread_pct: Option<f64>,
            #[allow(dead_code)]
            source: Option<String>,
        }
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            });
            anyhow!(
                "{path}:{line}: not fio JSON or a measurements TOML ([[measurement]] tables): {}",
                e.message().replace('\n', " ")
            )
        })?;
        if raw.measurement.is_empty() {
            bail!("{path}: no [[measurement]]: nothing to fit");
        }
        let base = Path::new(path).parent().unwrap_or(Path::new("."));
        // Where each [[measurement]] starts, for the errors (when the headers are
        // written in the plain form, one per table).
        let mut starts: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("[[measurement]]"))
            .map(|(i, _)| i + 1)
            .collect();
        if starts.len() != raw.measurement.len() {
            starts.clear();
        }
        for (i, m) in raw.measurement.into_iter().enumerate() {
            let at = match starts.get(i) {
                Some(line) => format!("{path}:{line}: measurement {}", i + 1),
                None => format!("{path}: measurement {}", i + 1),
            };
            let given = [
                m.job.is_some(),
                m.fio.is_some(),
                m.iozone.is_some(),
                m.flashbench.is_some(),
            ];
            if given.iter().filter(|&&g| g).count() != 1 {
                bail!(
                    "{at}: give the workload as one of job = \"FILE.fio\", fio = [ARGS], iozone = \"ARGS\" or flashbench = \"ARGS\""
                );
            }
            if m.processes.is_some() && m.iozone.is_none() {
                bail!("{at}: processes = N is for an iozone command line");
            }
            if !(m.value.is_finite() && m.value > 0.0) {
                bail!("{at}: value must be a positive number (got {})", m.value);
            }
            let (tool, args, metric) = if let Some(j) = m.job {
                let p = base.join(&j);
                if !p.is_file() {
                    bail!("{at}: job '{}' does not exist", p.display());
                }
                (Tool::Fio, vec![p.to_string_lossy().into_owned()], m.metric)
            } else if let Some(a) = m.fio {
                if a.is_empty() {
                    bail!("{at}: fio = [] has no arguments");
                }
                (Tool::Fio, a, m.metric)
            } else if let Some(l) = m.iozone {
                let a = l.args();
                let (_, processes) = crate::iozone::figures::check(&a, &m.metric, m.processes)
                    .map_err(|e| anyhow!("{at}: iozone {e:#}"))?;
                (Tool::Iozone { processes }, a, m.metric)
            } else if let Some(l) = m.flashbench {
                let a = l.args();
                let metric = crate::flashbench::figures::check(&a, &m.metric)
                    .map_err(|e| anyhow!("{at}: {e:#}"))?;
                (Tool::Flashbench, a, metric)
            } else {
                unreachable!("one workload was given")
            };
            if tool == Tool::Fio {
                measure::check_metric(&metric).map_err(|e| anyhow!("{at}: {e}"))?;
            }
            let spread = match m.spread_pct {
                Some(s) if s.is_finite() && s > 0.0 && s < 1000.0 => s / 100.0,
                Some(s) => bail!("{at}: spread_pct must be above 0 and below 1000 (got {s})"),
                None if metric.contains("_clat_p") => spreads.pct,
                None => spreads.bw,
            };
            let w = self.workload(Workload {
                tool,
                args,
                system: None,
            });
            let name = m.name.unwrap_or_else(|| format!("#{}", i + 1));
            self.targets.push(Target {
                workload: w,
                job: None,
                label: format!("{}:{name} {metric}", short(path)),
                metric,
                value: m.value,
                spread,
            });
        }
        Ok(())
    }
}

fn stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map_or(path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn short(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or(path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// An option value as fio's command line takes it (`--k=v`, or `--k` for a flag).
fn arg(k: &str, v: &serde_json::Value) -> Result<String> {
    let v = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => (*b as u8).to_string(),
        other => bail!("option '{k}' has the value {other}, not a string"),
    };
    Ok(if v.is_empty() {
        format!("--{k}")
    } else {
        format!("--{k}={v}")
    })
}

/// fio arguments that run the jobs of a fio JSON report as they ran.
pub fn fio_args_of(path: &str, v: &serde_json::Value) -> Result<Vec<String>> {
    let jobs = v["jobs"]
        .as_array()
        .filter(|j| !j.is_empty())
        .ok_or_else(|| anyhow!("{path}: not a fio JSON report (no \"jobs\")"))?;
    let mut args = Vec::new();
    if let Some(g) = v["global options"].as_object() {
        for (k, x) in g {
            args.push(arg(k, x).with_context(|| format!("{path}: global options"))?);
        }
    }
    let mut prev: Option<(&str, i64, &serde_json::Value)> = None;
    let mut copies = 0u64;
    for (i, j) in jobs.iter().enumerate() {
        let name = j["jobname"]
            .as_str()
            .ok_or_else(|| anyhow!("{path}: job {} has no jobname", i + 1))?;
        if j["error"].as_i64().unwrap_or(0) != 0 {
            bail!(
                "{path}: job '{name}' ended with error {} on the board: its figures are not a measurement",
                j["error"]
            );
        }
        let group = j["groupid"].as_i64().unwrap_or(0);
        let opts = &j["job options"];
        if !opts.is_object() {
            bail!("{path}: job '{name}' has no \"job options\" (fio 2.x JSON?): its workload is unknown");
        }
        let numjobs: u64 = opts["numjobs"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1)
            .max(1);
        // A clone of the job before (numjobs without group_reporting) is not a job.
        if prev == Some((name, group, opts)) {
            copies += 1;
            if !copies.is_multiple_of(numjobs) {
                continue;
            }
        } else {
            copies = 0;
        }
        let new_group = prev.is_some_and(|(_, g, _)| g != group);
        prev = Some((name, group, opts));
        args.push(format!("--name={name}"));
        if new_group {
            args.push("--stonewall".into());
        }
        for (k, x) in opts.as_object().into_iter().flatten() {
            if k == "name" {
                continue;
            }
            args.push(arg(k, x).with_context(|| format!("{path}: job '{name}'"))?);
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(jobs: serde_json::Value, global: Option<serde_json::Value>) -> serde_json::Value {
        let mut v = serde_json::json!({ "jobs": jobs });
        if let Some(g) = global {
            v["global options"] = g;
        }
        v
    }

    #[test]
    fn stonewall_comes_back_from_the_group_ids() {
        let v = report(
            serde_json::json!([
                {"jobname": "seq", "groupid": 0, "job options": {"rw": "read", "bs": "128k"}},
                {"jobname": "rnd", "groupid": 1, "job options": {"rw": "randread", "time_based": ""}},
            ]),
            Some(serde_json::json!({"filename": "/dev/mmcblk0", "direct": "1"})),
        );
        assert_eq!(
            fio_args_of("x", &v).unwrap(),
            [
                "--direct=1",
                "--filename=/dev/mmcblk0",
                "--name=seq",
                "--bs=128k",
                "--rw=read",
                "--name=rnd",
                "--stonewall",
                "--rw=randread",
                "--time_based"
            ]
        );
    }

    #[test]
    fn numjobs_clones_are_one_job() {
        let o = serde_json::json!({"name": "a", "rw": "randread", "numjobs": "2"});
        let v = report(
            serde_json::json!([
                {"jobname": "a", "groupid": 0, "job options": o},
                {"jobname": "a", "groupid": 0, "job options": o},
                {"jobname": "a", "groupid": 0, "job options": o},
                {"jobname": "a", "groupid": 0, "job options": o},
            ]),
            None,
        );
        let args = fio_args_of("x", &v).unwrap();
        assert_eq!(
            args.iter().filter(|a| *a == "--name=a").count(),
            2,
            "{args:?}"
        );
        let v = report(
            serde_json::json!([{"jobname": "a", "groupid": 0, "job options": o}]),
            None,
        );
        assert_eq!(
            fio_args_of("x", &v)
                .unwrap()
                .iter()
                .filter(|a| *a == "--name=a")
                .count(),
            1
        );
    }

    #[test]
    fn a_failed_job_is_not_a_measurement() {
        let v = report(
            serde_json::json!([{"jobname": "a", "groupid": 0, "error": 5, "job options": {}}]),
            None,
        );
        let e = fio_args_of("b.json", &v).unwrap_err().to_string();
        assert!(e.contains("b.json: job 'a' ended with error 5"), "{e}");
        assert!(fio_args_of("b.json", &serde_json::json!({})).is_err());
    }

    #[test]
    fn metrics_list() {
        assert!(!Wanted::parse("bw").unwrap().p99);
        assert!(Wanted::parse("bw,p99,p50,clat_mean").unwrap().p50);
        assert!(Wanted::parse("iops").is_err());
    }
}
