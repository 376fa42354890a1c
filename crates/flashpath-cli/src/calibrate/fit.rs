//! The fit: simulated figures as a function of the estimate fields, compared with the
//! measured ones in units of their spread, minimised within the declared ranges.
//!
//! A figure's residual is `z = ln(simulated / measured) / ln(1 + spread)`: a figure
//! off by its spread counts 1 whichever side it falls, and the objective is `Σ z²`
//! (χ²). The optimiser is COBYLA (the `cobyla` crate, a translation of NLopt's): it
//! needs no derivatives — a simulated figure is a step function of its inputs at small
//! scales, so finite-difference gradients mislead — it takes the declared ranges as
//! bounds natively, and it builds linear models from n + 1 points, so a fit of a few
//! fields costs tens of simulations, not hundreds. Simulations of one evaluation (one
//! per workload) run in parallel on all cores.

use super::measurements::{Measurements, Target, Tool, Workload};
use super::params::Param;
use crate::measure::{self, JobFigures};
use crate::run::Options;
use anyhow::{anyhow, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A point of the search: `(--set key, value)` for each moved field.
pub type Point = Vec<(String, String)>;

/// The simulated figures of every target at one point, or why it did not run.
pub type Outcome = Arc<std::result::Result<Vec<f64>, String>>;

pub struct Problem {
    pub opts: Options,
    pub meas: Measurements,
    cache: Mutex<HashMap<Point, Outcome>>,
    /// Simulations run (one per workload and point).
    pub runs: std::sync::atomic::AtomicUsize,
    /// What the progress line says (`fitting`, `screening`).
    pub phase: Mutex<String>,
}

impl Problem {
    pub fn new(opts: Options, meas: Measurements) -> Problem {
        Problem {
            opts,
            meas,
            cache: Mutex::new(HashMap::new()),
            runs: Default::default(),
            phase: Mutex::new(String::new()),
        }
    }

    /// Simulated figures of each target at each point (parallel over points and
    /// workloads); points seen before come from the cache.
    pub fn simulate(&self, points: &[Point]) -> Vec<Outcome> {
        let todo: Vec<Point> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let mut t: Vec<Point> = points
                .iter()
                .filter(|p| !cache.contains_key(*p))
                .cloned()
                .collect();
            t.sort();
            t.dedup();
            t
        };
        let jobs: Vec<(usize, usize)> = (0..todo.len())
            .flat_map(|p| (0..self.meas.workloads.len()).map(move |w| (p, w)))
            .collect();
        let rows = measure::parallel(&jobs, |&(p, w)| {
            let phase = self.phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let n = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            crate::run::progress::show_text(&format!("calibrate: {phase} (simulation {n})"));
            let w = &self.meas.workloads[w];
            let mut o = w.system.clone().unwrap_or_else(|| self.opts.clone());
            o.sets.extend(todo[p].iter().cloned());
            Ok(run_workload(&o, w).map_err(|e| format!("{e:#}")))
        })
        .expect("no item fails");
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            for (p, point) in todo.iter().enumerate() {
                let per_workload =
                    &rows[p * self.meas.workloads.len()..][..self.meas.workloads.len()];
                let out = self
                    .meas
                    .targets
                    .iter()
                    .map(|t| match &per_workload[t.workload] {
                        Ok(r) => figure(r, t),
                        Err(e) => Err(e.clone()),
                    })
                    .collect::<std::result::Result<Vec<f64>, String>>();
                cache.insert(point.clone(), Arc::new(out));
            }
        }
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        points.iter().map(|p| cache[p].clone()).collect()
    }

    pub fn simulate_one(&self, point: &Point) -> Outcome {
        self.simulate(std::slice::from_ref(point)).remove(0)
    }

    /// Residuals (in spreads) of simulated figures.
    pub fn z(&self, sim: &[f64]) -> Vec<f64> {
        self.meas
            .targets
            .iter()
            .zip(sim)
            .map(|(t, &s)| residual(t, s))
            .collect()
    }
}

/// What a workload's run gave: fio's job rows, or another tool's named figures.
#[derive(Clone, Debug)]
pub enum Ran {
    Fio(Vec<JobFigures>),
    Named(Vec<(String, f64)>),
}

/// Runs one workload quietly on the system `o` chooses.
pub fn run_workload(o: &Options, w: &Workload) -> Result<Ran> {
    Ok(match w.tool {
        Tool::Fio => Ran::Fio(measure::run_fio_quiet(o, &w.args)?),
        Tool::Iozone { processes } => {
            Ran::Named(crate::iozone::figures::figures(o, &w.args, processes)?)
        }
        Tool::Flashbench => Ran::Named(crate::flashbench::figures::figures(o, &w.args)?),
    })
}

/// A target's figure from its workload's run.
pub fn figure(ran: &Ran, t: &Target) -> std::result::Result<f64, String> {
    let rows = match ran {
        Ran::Fio(rows) => rows,
        Ran::Named(figs) => {
            return figs
                .iter()
                .find(|(n, _)| *n == t.metric)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    let names: Vec<&str> = figs.iter().map(|(n, _)| n.as_str()).collect();
                    format!(
                        "{}: the simulated run has no figure '{}' (it has {})",
                        t.label,
                        t.metric,
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )
                })
        }
    };
    let mine: Vec<JobFigures> = match &t.job {
        Some(name) => rows.iter().filter(|r| &r.name == name).cloned().collect(),
        None => rows.to_vec(),
    };
    if mine.is_empty() {
        return Err(format!(
            "{}: the simulated run has no job '{}'",
            t.label,
            t.job.as_deref().unwrap_or("")
        ));
    }
    measure::metric(&mine, &t.metric).map_err(|e| format!("{}: {e}", t.label))
}

/// `ln(simulated / measured) / ln(1 + spread)`; a figure simulated as zero is far off.
pub fn residual(t: &Target, sim: f64) -> f64 {
    let r = (sim.max(1e-12) / t.value).ln() / (1.0 + t.spread).ln();
    if r.is_finite() {
        r
    } else {
        1e6
    }
}

pub fn chi2(z: &[f64]) -> f64 {
    z.iter().map(|x| x * x).sum()
}

/// The `--set` pairs of the fitted fields at `u` (and the chosen values of choices).
pub fn point_of(params: &[&Param], u: &[f64], fixed: &Point) -> Point {
    let mut p: Point = params
        .iter()
        .zip(u)
        .map(|(p, &x)| (p.key.clone(), p.written_at(x)))
        .collect();
    p.extend(fixed.iter().cloned());
    p
}

/// What one field does to the figures across its whole range, the others at the
/// preset's values.
#[derive(Clone, Debug)]
pub struct Screen {
    /// The largest change of any figure, in its spreads, at either end of the range.
    pub effect: f64,
    /// Change of each figure from the low end to the high end, in spreads.
    pub direction: Vec<f64>,
    /// Why the field could not be moved to an end, if it could not.
    pub failed: Option<String>,
}

/// Screens each field by running the measurements at both ends of its range (or at
/// each of its choices).
pub fn screen(prob: &Problem, params: &[Param], base_z: &[f64]) -> Vec<Screen> {
    let ends = |p: &Param| -> Vec<Point> {
        if p.is_range() {
            vec![
                vec![(p.key.clone(), p.written_at(0.0))],
                vec![(p.key.clone(), p.written_at(1.0))],
            ]
        } else {
            p.choices()
                .iter()
                .map(|c| vec![(p.key.clone(), c.clone())])
                .collect()
        }
    };
    let points: Vec<Point> = params.iter().flat_map(ends).collect();
    let outs = prob.simulate(&points);
    let mut k = 0;
    params
        .iter()
        .map(|p| {
            let n = ends(p).len();
            let mine = &outs[k..k + n];
            k += n;
            let mut zs = Vec::new();
            for (i, o) in mine.iter().enumerate() {
                match o.as_ref() {
                    Ok(sim) => zs.push(prob.z(sim)),
                    Err(e) => {
                        return Screen {
                            effect: 0.0,
                            direction: Vec::new(),
                            failed: Some(format!("at {}: {e}", ends(p)[i][0].1)),
                        }
                    }
                }
            }
            let effect = zs
                .iter()
                .flat_map(|z| z.iter().zip(base_z).map(|(a, b)| (a - b).abs()))
                .fold(0.0, f64::max);
            let direction = zs[zs.len() - 1]
                .iter()
                .zip(&zs[0])
                .map(|(h, l)| h - l)
                .collect();
            Screen {
                effect,
                direction,
                failed: None,
            }
        })
        .collect()
}

/// A whole calibration: screening, the choice of fields, the fit and the
/// sensitivities at it.
pub struct Auto {
    /// The fields screened, and what each does across its range.
    pub screened: Vec<Param>,
    pub screens: Vec<Screen>,
    /// Indices into `screened` of the fields fitted.
    pub picked: Vec<usize>,
    /// The fitted range fields (in the order of `fit.u`) and choices fields.
    pub ranges: Vec<Param>,
    pub choices: Vec<Param>,
    pub base_sim: Vec<f64>,
    pub base_z: Vec<f64>,
    pub fit: Fit,
    /// d z / d u of each fitted range field, and its 1-sigma half-width in `u`
    /// (`None`: the data do not tell it apart).
    pub jac: Vec<Vec<f64>>,
    pub sigma: Vec<Option<f64>>,
    /// Fitted range fields the data do not pin (no finite 1-sigma at the fit) that were
    /// put back to the preset's value: the figures have no say on them, so the fit's
    /// wandering is not a calibration.
    pub kept: Vec<bool>,
}

/// Screens `params` (or only `chosen`, all of which are then fitted), picks at most
/// `max_fields` to fit, fits them and measures their sensitivities at the fit.
pub fn auto(
    prob: &Problem,
    params: &[Param],
    chosen: Option<Vec<Param>>,
    max_fields: usize,
    max_evals: usize,
) -> Result<Auto> {
    let n_targets = prob.meas.targets.len();
    set_phase(prob, "the preset's own values");
    let base_sim = match prob.simulate_one(&Vec::new()).as_ref() {
        Ok(s) => s.clone(),
        Err(e) => return Err(anyhow!("the measurements' jobs do not run: {e}")),
    };
    let base_z = prob.z(&base_sim);
    let given = chosen.is_some();
    let screened: Vec<Param> =
        chosen.unwrap_or_else(|| params.iter().filter(|p| p.is_range()).cloned().collect());
    set_phase(
        prob,
        &format!(
            "screening {} declared estimates at both ends of their ranges",
            screened.len()
        ),
    );
    let screens = screen(prob, &screened, &base_z);
    let picked: Vec<usize> = if given {
        (0..screened.len()).collect()
    } else {
        pick(&screens, max_fields.min(n_targets))
    };
    if picked.is_empty() {
        return Err(anyhow!(
            "no declared estimate moves any figure by its spread: the measurements pin nothing down (see --spread, or name fields with --fit)"
        ));
    }
    let ranges: Vec<Param> = picked
        .iter()
        .map(|&i| screened[i].clone())
        .filter(Param::is_range)
        .collect();
    let choices: Vec<Param> = picked
        .iter()
        .map(|&i| screened[i].clone())
        .filter(|p| !p.is_range())
        .collect();
    let (r, c): (Vec<&Param>, Vec<&Param>) = (ranges.iter().collect(), choices.iter().collect());
    let mut fitted = fit(prob, &r, &c, max_evals)?;
    set_phase(prob, "sensitivities at the fit");
    let jac = jacobian(prob, &r, &fitted);
    let sigma: Vec<Option<f64>> = covariance(&jac).iter().map(|c| c.map(f64::sqrt)).collect();
    // Fields the figures do not pin go back to the preset's values, if the figures fit
    // as well there (χ² up by less than 1).
    let mut kept = vec![false; r.len()];
    if sigma.iter().any(Option::is_none) {
        let mut u = fitted.u.clone();
        for (i, s) in sigma.iter().enumerate() {
            if s.is_none() {
                u[i] = r[i].u_of_preset();
            }
        }
        if let Ok(sim) = prob.simulate_one(&point_of(&r, &u, &fitted.fixed)).as_ref() {
            let c = chi2(&prob.z(sim));
            if c <= fitted.chi2 + 1.0 {
                for (i, s) in sigma.iter().enumerate() {
                    kept[i] = s.is_none();
                }
                fitted.u = u;
                fitted.sim = sim.clone();
                fitted.chi2 = c;
            }
        }
    }
    Ok(Auto {
        screened,
        screens,
        picked,
        ranges,
        choices,
        base_sim,
        base_z,
        fit: fitted,
        jac,
        sigma,
        kept,
    })
}

pub fn set_phase(prob: &Problem, s: &str) {
    *prob.phase.lock().unwrap_or_else(|e| e.into_inner()) = s.to_string();
}

/// Whether two fields move the figures the same way (|cos| > 0.98).
pub fn collinear(a: &[f64], b: &[f64]) -> bool {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    na > 0.0 && nb > 0.0 && (dot / (na * nb)).abs() > 0.98
}

/// The fields to fit: those that move a figure by at least a spread. The first is the
/// one that moves the figures most; each next one is the one whose effect is least
/// like those already taken (the largest part of its effect that no combination of
/// theirs gives), so the fitted fields are the ones the data can tell apart.
pub fn pick(screens: &[Screen], max: usize) -> Vec<usize> {
    let mut left: Vec<usize> = (0..screens.len())
        .filter(|&i| screens[i].failed.is_none() && screens[i].effect >= 1.0)
        .collect();
    let mut out: Vec<usize> = Vec::new();
    // Orthonormal basis of the taken fields' effects.
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let residual = |v: &[f64], basis: &[Vec<f64>]| -> Vec<f64> {
        let mut r = v.to_vec();
        for b in basis {
            let k = dot(&r, b);
            for (x, y) in r.iter_mut().zip(b) {
                *x -= k * y;
            }
        }
        r
    };
    while out.len() < max && !left.is_empty() {
        let score = |i: usize| {
            if basis.is_empty() {
                screens[i].effect
            } else {
                dot(
                    &residual(&screens[i].direction, &basis),
                    &residual(&screens[i].direction, &basis),
                )
                .sqrt()
            }
        };
        let (k, best) = left
            .iter()
            .enumerate()
            .map(|(k, &i)| (k, score(i)))
            .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
        let i = left.remove(k);
        // What is left of its effect must itself be worth a spread.
        if !out.is_empty() && best < 1.0 {
            break;
        }
        let r = residual(&screens[i].direction, &basis);
        let n = dot(&r, &r).sqrt();
        if n > 0.0 {
            basis.push(r.iter().map(|x| x / n).collect());
        }
        out.push(i);
    }
    out
}

/// The result of a fit.
#[derive(Clone, Debug)]
pub struct Fit {
    /// `u` of each fitted range field.
    pub u: Vec<f64>,
    /// The chosen value of each fitted choices field.
    pub fixed: Point,
    pub chi2: f64,
    pub sim: Vec<f64>,
    /// Objective evaluations COBYLA made.
    pub evaluations: usize,
}

/// Fits the range fields with COBYLA from the preset's values, for each combination
/// of the choices fields; the best fit wins (ties: the first combination).
pub fn fit(prob: &Problem, ranges: &[&Param], choices: &[&Param], max_evals: usize) -> Result<Fit> {
    let mut combos: Vec<Point> = vec![Vec::new()];
    for c in choices {
        combos = combos
            .into_iter()
            .flat_map(|p| {
                c.choices().iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((c.key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    if combos.len() > 16 {
        return Err(anyhow!(
            "--fit: {} combinations of choices fields is more than calibrate tries (16)",
            combos.len()
        ));
    }
    let mut best: Option<Fit> = None;
    for fixed in combos {
        let f = fit_ranges(prob, ranges, &fixed, max_evals)?;
        if best.as_ref().is_none_or(|b| f.chi2 < b.chi2) {
            best = Some(f);
        }
    }
    best.ok_or_else(|| anyhow!("nothing to fit"))
}

fn fit_ranges(prob: &Problem, ranges: &[&Param], fixed: &Point, max_evals: usize) -> Result<Fit> {
    let error: Mutex<Option<String>> = Mutex::new(None);
    let evals = std::sync::atomic::AtomicUsize::new(0);
    let objective = |u: &[f64]| -> f64 {
        let point = point_of(ranges, u, fixed);
        match prob.simulate_one(&point).as_ref() {
            Ok(sim) => chi2(&prob.z(sim)),
            Err(e) => {
                error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(e.clone());
                // A point the system cannot run (e.g. a geometry that does not add up)
                // is far from a fit: the optimiser moves away.
                1e12
            }
        }
    };
    let u0: Vec<f64> = ranges.iter().map(|p| p.u_of_preset()).collect();
    let u = if ranges.is_empty() {
        Vec::new()
    } else {
        let f = |u: &[f64], _: &mut ()| -> f64 {
            evals.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *prob.phase.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "fitting {} field{}, evaluation {}",
                ranges.len(),
                if ranges.len() == 1 { "" } else { "s" },
                evals.load(std::sync::atomic::Ordering::Relaxed)
            );
            objective(u)
        };
        let bounds = vec![(0.0, 1.0); ranges.len()];
        let cons: Vec<&dyn cobyla::Func<()>> = Vec::new();
        let tols = cobyla::StopTols {
            ftol_abs: 1e-3,
            xtol_abs: vec![2e-3; ranges.len()],
            ..cobyla::StopTols::default()
        };
        match cobyla::minimize(
            f,
            &u0,
            &bounds,
            &cons,
            (),
            max_evals,
            cobyla::RhoBeg::All(0.25),
            Some(tols),
        ) {
            Ok((_, x, _)) => x,
            Err((_, x, _)) => x,
        }
    };
    let point = point_of(ranges, &u, fixed);
    let sim = match prob.simulate_one(&point).as_ref() {
        Ok(s) => s.clone(),
        Err(e) => {
            let first = error.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(anyhow!(
                "the fit ended where the system does not run: {}",
                first.unwrap_or(e.clone())
            ));
        }
    };
    Ok(Fit {
        chi2: chi2(&prob.z(&sim)),
        u,
        fixed: fixed.clone(),
        sim,
        evaluations: evals.into_inner(),
    })
}

/// d z / d u of each target for each fitted field at the fit (central differences,
/// one-sided at a bound), in spreads per unit of the declared range.
pub fn jacobian(prob: &Problem, ranges: &[&Param], fit: &Fit) -> Vec<Vec<f64>> {
    const H: f64 = 0.05;
    let mut points = Vec::new();
    let mut steps = Vec::new();
    for i in 0..ranges.len() {
        let lo = (fit.u[i] - H).max(0.0);
        let hi = (fit.u[i] + H).min(1.0);
        for x in [lo, hi] {
            let mut u = fit.u.clone();
            u[i] = x;
            points.push(point_of(ranges, &u, &fit.fixed));
        }
        steps.push(hi - lo);
    }
    let outs = prob.simulate(&points);
    let base = prob.z(&fit.sim);
    (0..ranges.len())
        .map(|i| {
            let z = |o: &Outcome| match o.as_ref() {
                Ok(s) => prob.z(s),
                Err(_) => base.clone(),
            };
            let (l, h) = (z(&outs[2 * i]), z(&outs[2 * i + 1]));
            h.iter().zip(&l).map(|(a, b)| (a - b) / steps[i]).collect()
        })
        .collect()
}

/// `(JᵀJ)⁻¹` of column vectors `cols` (one per field), or `None` where a field's
/// column is (numerically) a combination of the others: the data do not tell it apart.
pub fn covariance(cols: &[Vec<f64>]) -> Vec<Option<f64>> {
    let n = cols.len();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut f: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| dot(&cols[i], &cols[j])).collect())
        .collect();
    // Gauss-Jordan with an identity beside; a pivot far below its diagonal's size
    // marks the field as not identifiable.
    let mut inv: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    let scale: Vec<f64> = (0..n).map(|i| f[i][i]).collect();
    let mut ok = vec![true; n];
    for c in 0..n {
        if f[c][c].is_nan() || f[c][c] <= 1e-9 * scale[c].max(1e-300) || scale[c] < 1e-12 {
            ok[c] = false;
            continue;
        }
        let p = f[c][c];
        for j in 0..n {
            f[c][j] /= p;
            inv[c][j] /= p;
        }
        for r in 0..n {
            if r != c && f[r][c] != 0.0 {
                let k = f[r][c];
                for j in 0..n {
                    f[r][j] -= k * f[c][j];
                    inv[r][j] -= k * inv[c][j];
                }
            }
        }
    }
    (0..n)
        .map(|i| (ok[i] && inv[i][i] > 0.0).then(|| inv[i][i]))
        .collect()
}

/// χ² quantile at 68.27 % for k degrees of freedom (k = 1..6), the joint 1-sigma
/// region of k fitted fields.
pub fn chi2_68(k: usize) -> f64 {
    [1.0, 1.0, 2.30, 3.53, 4.72, 5.89, 7.04]
        .get(k)
        .copied()
        .unwrap_or(1.0 + 1.2 * k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covariance_of_independent_and_collinear_columns() {
        let c = covariance(&[vec![2.0, 0.0], vec![0.0, 4.0]]);
        assert_eq!(c, vec![Some(0.25), Some(1.0 / 16.0)]);
        // The second field moves the figures exactly as the first does.
        let c = covariance(&[vec![1.0, 1.0], vec![2.0, 2.0]]);
        assert!(c[1].is_none(), "{c:?}");
        // A field that moves nothing.
        let c = covariance(&[vec![1.0, 0.0], vec![0.0, 0.0]]);
        assert_eq!(c[0], Some(1.0));
        assert!(c[1].is_none());
    }

    #[test]
    fn residuals_count_spreads_on_a_log_scale() {
        let t = Target {
            workload: 0,
            job: None,
            metric: "read_bw_mib".into(),
            value: 100.0,
            spread: 0.05,
            label: String::new(),
        };
        assert!((residual(&t, 105.0) - 1.0).abs() < 1e-12);
        assert!((residual(&t, 100.0 / 1.05) + 1.0).abs() < 1e-12);
        assert_eq!(residual(&t, 100.0), 0.0);
        assert!(residual(&t, 0.0) < -100.0);
    }
}
