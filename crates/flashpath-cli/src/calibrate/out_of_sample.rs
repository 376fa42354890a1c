//! Out-of-sample validation: for a reproduction set with a "before" and an "after"
//! (hsq off and on, the rtsx patch, O_DIRECT and buffered), the presets' declared
//! estimates are calibrated on the before runs' published figures alone, and the after
//! runs' figures are then predicted with the calibrated values. Their error is what
//! flashpath predicts of what it was not fitted to.

use super::fit::{self, Problem};
use super::measurements::{Measurements, Target, Workload};
use super::params::Param;
use crate::measure;
use crate::repro::{Catalogue, OutOfSample, Reproduction};
use anyhow::{anyhow, Result};

/// One predicted figure.
pub struct Row {
    pub reproduction: String,
    pub metric: String,
    pub predicted: f64,
    /// The published figure and its tolerance, or a published range.
    pub published: Published,
}

#[derive(Clone, Copy)]
pub enum Published {
    Figure { value: f64, tolerance_pct: f64 },
    Range { min: f64, max: f64 },
}

impl Published {
    /// The error of `predicted` against the figure, or against the nearer end of the
    /// range (0 inside), in percent; and whether it is within the tolerance or range.
    pub fn error(self, predicted: f64) -> (f64, bool) {
        match self {
            Published::Figure {
                value,
                tolerance_pct,
            } => {
                let e = (predicted / value - 1.0) * 100.0;
                (e, e.abs() <= tolerance_pct)
            }
            Published::Range { min, max } => {
                let e = if predicted < min {
                    (predicted / min - 1.0) * 100.0
                } else if predicted > max {
                    (predicted / max - 1.0) * 100.0
                } else {
                    0.0
                };
                (e, (min..=max).contains(&predicted))
            }
        }
    }
}

/// One set's calibration and predictions.
pub struct Report {
    pub name: String,
    /// (field, preset value, calibrated value, what the before figures say of it).
    pub fitted: Vec<(String, String, String, &'static str)>,
    /// Figures calibrated on, and χ² over them before and after.
    pub figures: usize,
    pub chi2: (f64, f64),
    pub rows: Vec<Row>,
    /// How the calibration's runs were shortened, and what that changed at the presets'
    /// values (largest relative difference of a figure).
    pub shortened: Option<(String, f64)>,
}

fn find<'a>(cat: &'a Catalogue, name: &str) -> &'a Reproduction {
    cat.reproductions
        .iter()
        .find(|r| r.name == name)
        .expect("the catalogue checked the names")
}

/// The published figures of `reps` as calibration targets (a figure's tolerance is its
/// spread; a published range [min, max] counts its middle, its ends one spread away).
fn targets(reps: &[&Reproduction], prefix: &[String]) -> Measurements {
    let mut m = Measurements::default();
    for r in reps {
        let mut args = prefix.to_vec();
        args.push(r.job.display().to_string());
        m.workloads.push(Workload {
            system: Some(r.options()),
            ..Workload::fio(args)
        });
        let w = m.workloads.len() - 1;
        for f in &r.figures {
            m.targets.push(Target {
                workload: w,
                job: None,
                metric: f.metric.clone(),
                value: f.published,
                spread: f.tolerance_pct / 100.0,
                label: format!("{} {}", r.name, f.metric),
            });
        }
        for b in &r.bounds {
            let mid = (b.min + b.max) / 2.0;
            if mid > 0.0 {
                m.targets.push(Target {
                    workload: w,
                    job: None,
                    metric: b.metric.clone(),
                    value: mid,
                    spread: ((b.max - b.min) / 2.0 / mid).max(0.01),
                    label: format!("{} {}", r.name, b.metric),
                });
            }
        }
    }
    m
}

/// Calibrates on `o.calibrate_on` and predicts `o.predict`.
pub fn run(cat: &Catalogue, o: &OutOfSample) -> Result<Report> {
    let before: Vec<&Reproduction> = o.calibrate_on.iter().map(|n| find(cat, n)).collect();
    let after: Vec<&Reproduction> = o.predict.iter().map(|n| find(cat, n)).collect();
    let first = before[0];
    let declared = |kind: &str, spec: &str| -> Result<Vec<Param>> {
        let (text, origin) = crate::presets::text_of(kind, spec)?;
        Ok(flashpath_core::config::estimates::declared(&text, &origin)
            .map_err(|e| anyhow!("{e}"))?
            .into_iter()
            .map(|e| Param::new(kind, e))
            .collect())
    };
    let mut params = declared("device", &first.device)?;
    params.extend(declared("host", &first.host)?);
    // A field a reproduction sets is that reproduction's: not calibrated.
    params.retain(|p| {
        !before
            .iter()
            .chain(&after)
            .any(|r| r.sets.iter().any(|(k, _)| *k == p.key))
    });
    let prefix: Vec<String> = o.io_size.iter().map(|s| format!("--io_size={s}")).collect();
    let prob = Problem::new(first.options(), targets(&before, &prefix));
    let n = prob.meas.targets.len();
    let auto = fit::auto(&prob, &params, None, 4, 40)
        .map_err(|e| anyhow!("out_of_sample '{}': {e:#}", o.name))?;
    let point = fit::point_of(
        &auto.ranges.iter().collect::<Vec<_>>(),
        &auto.fit.u,
        &auto.fit.fixed,
    );
    // The shortened runs against the whole ones, at the presets' values.
    let shortened = match &o.io_size {
        None => None,
        Some(s) => {
            let full = Problem::new(first.options(), targets(&before, &[]));
            let sim = full.simulate_one(&Vec::new());
            let sim = sim
                .as_ref()
                .as_ref()
                .map_err(|e| anyhow!("out_of_sample '{}': {e}", o.name))?;
            let worst = sim
                .iter()
                .zip(&auto.base_sim)
                .map(|(a, b)| (b / a - 1.0).abs())
                .fold(0.0, f64::max);
            Some((format!("--io_size={s} per job"), worst))
        }
    };
    // The after runs, whole, with the calibrated values.
    fit::set_phase(&prob, &format!("out-of-sample {}: predicting", o.name));
    let runs = measure::parallel(&after, |r| {
        let mut opts = r.options();
        opts.sets.extend(point.iter().cloned());
        measure::run_fio_quiet(&opts, &[r.job.display().to_string()]).map_err(|e| {
            anyhow!(
                "out_of_sample '{}': reproduction '{}': {e:#}",
                o.name,
                r.name
            )
        })
    })?;
    let mut rows = Vec::new();
    for (r, res) in after.iter().zip(&runs) {
        let figures = r.figures.iter().map(|f| {
            let p = Published::Figure {
                value: f.published,
                tolerance_pct: f.tolerance_pct,
            };
            (&f.metric, p)
        });
        let bounds = r.bounds.iter().map(|b| {
            let p = Published::Range {
                min: b.min,
                max: b.max,
            };
            (&b.metric, p)
        });
        for (metric, published) in figures.chain(bounds) {
            rows.push(Row {
                reproduction: r.name.clone(),
                metric: metric.clone(),
                predicted: measure::metric(res, metric)?,
                published,
            });
        }
    }
    let fitted = auto
        .ranges
        .iter()
        .zip(&auto.fit.u)
        .zip(&auto.sigma)
        .zip(&auto.kept)
        .map(|(((p, &u), s), &kept)| {
            let verdict = match s {
                Some(s) if *s < 0.1 => "pinned",
                Some(_) => "loose",
                None if kept => "not pinned: the preset's value kept",
                None => "not pinned",
            };
            (p.key.clone(), p.est.value.clone(), p.written_at(u), verdict)
        })
        .chain(auto.fit.fixed.iter().map(|(k, v)| {
            let p = auto.choices.iter().find(|p| &p.key == k).expect("fitted");
            (k.clone(), p.est.value.clone(), v.clone(), "chosen")
        }))
        .collect();
    Ok(Report {
        name: o.name.clone(),
        fitted,
        figures: n,
        chi2: (fit::chi2(&auto.base_z), auto.fit.chi2),
        rows,
        shortened,
    })
}
