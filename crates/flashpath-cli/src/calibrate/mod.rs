//! `flashpath calibrate`: fits a preset's declared estimates to measurements of a real
//! board (fio's JSON output, or a small TOML of published figures) and writes the
//! fitted preset, with a report of the fit: each figure before and after, which fields
//! the data pin down and which they leave free, and prediction intervals.
//!
//! The steps:
//! 1. every declared estimate of the device's preset (and the host's, with
//!    `--out-host`) is **screened**: the measurements are simulated with the field at
//!    each end of its declared range. A field that moves no figure by its spread
//!    anywhere in its range is *free*: the measurements say nothing about it.
//! 2. the fields that move figures most, and not the same way as a field already taken
//!    (a field whose effect is a multiple of another's cannot be told apart from it),
//!    are **fitted** together (at most `--max-fields`, or those named with `--fit`) by
//!    COBYLA within their ranges (see `fit.rs`).
//! 3. at the fit, each fitted field's **1-sigma interval** comes from the sensitivity
//!    of the figures to it (the inverse of JᵀJ, in spreads): a field is *pinned* when
//!    that interval is under a fifth of its declared range.
//! 4. each `--predict JOB` runs at the fit and at the parameter sets that still fit
//!    within the spread (the edges of the joint 1-sigma region, and every free field at
//!    both ends of its range): the prediction is the range they give.

mod fit;
mod measurements;
pub mod out_of_sample;
mod params;
pub mod suite;
mod write;

use crate::run::{self, Options};
use anyhow::{anyhow, bail, Context, Result};
use fit::Problem;
use measurements::{Measurements, Spreads, Wanted};
use params::Param;
use serde_json::json;

/// calibrate's own options.
struct Args {
    files: Vec<String>,
    out: Option<String>,
    out_host: Option<String>,
    name: Option<String>,
    fit: Option<Vec<String>>,
    max_fields: usize,
    max_evals: usize,
    wanted: Wanted,
    spread: Option<f64>,
    predict: Vec<String>,
    /// `--json FILE|-`: the fit as data too (`-`: on standard output, not the table).
    json: Option<String>,
    /// `--plot FILE`: the figures before and after the fit, drawn.
    plot: Option<String>,
}

fn parse_args(rest: &[String]) -> Result<Args> {
    let mut a = Args {
        files: Vec::new(),
        out: None,
        out_host: None,
        name: None,
        fit: None,
        max_fields: 4,
        max_evals: 60,
        wanted: Wanted::DEFAULT,
        spread: None,
        predict: Vec::new(),
        json: None,
        plot: None,
    };
    let mut i = 0;
    while i < rest.len() {
        let mut take = |k: &str| run::option_value(rest, &mut i, k);
        let count = |k: &str, v: &str, max: usize| -> Result<usize> {
            v.parse::<usize>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| anyhow!("{k} {v}: expected a whole number from 1 to {max}"))
        };
        if let Some(v) = take("--out")? {
            a.out = Some(v);
        } else if let Some(v) = take("--out-host")? {
            a.out_host = Some(v);
        } else if let Some(v) = take("--name")? {
            a.name = Some(v);
        } else if let Some(v) = take("--fit")? {
            let list: Vec<String> = v
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if list.is_empty() {
                bail!("--fit needs FIELD[,FIELD...]");
            }
            a.fit = Some(list);
        } else if let Some(v) = take("--max-fields")? {
            a.max_fields = count("--max-fields", &v, 8)?;
        } else if let Some(v) = take("--max-evals")? {
            a.max_evals = count("--max-evals", &v, 10_000)?;
        } else if let Some(v) = take("--metrics")? {
            a.wanted = Wanted::parse(&v)?;
        } else if let Some(v) = take("--spread")? {
            let s: f64 = v
                .trim_end_matches('%')
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1000.0)
                .ok_or_else(|| {
                    anyhow!("--spread {v}: expected a percentage above 0 and below 1000")
                })?;
            a.spread = Some(s / 100.0);
        } else if let Some(v) = take("--predict")? {
            a.predict.push(v);
        } else if let Some(v) = take("--json")? {
            a.json = Some(v);
        } else if let Some(v) = take("--plot")? {
            crate::plot::check_target(&v)?;
            a.plot = Some(v);
        } else if rest[i].starts_with('-') && rest[i] != "-" {
            bail!(
                "calibrate: unknown option '{}' (flashpath calibrate --help)",
                rest[i]
            );
        } else {
            a.files.push(rest[i].clone());
        }
        i += 1;
    }
    Ok(a)
}

/// `flashpath calibrate ...`
pub fn command(args: &[String]) -> Result<()> {
    if args.iter().any(|a| {
        a == "--measure"
            || a.starts_with("--measure=")
            || a == "--suite"
            || a.starts_with("--suite=")
    }) {
        return suite::command(args);
    }
    let (mut opts, rest) = run::split_options(args)?;
    if opts.blktrace.is_some() || opts.trace.is_some() {
        bail!("calibrate: --blktrace and --trace record one run; calibrate runs many (use them with `flashpath fio`)");
    }
    let a = parse_args(&rest)?;
    if a.files.is_empty() {
        bail!("calibrate: no measurements given (fio JSON files or a measurements TOML; flashpath calibrate --help)");
    }
    let out = a.out.clone().ok_or_else(|| {
        anyhow!("calibrate: --out FILE.toml is needed: where the fitted device preset goes")
    })?;
    for job in &a.predict {
        if !std::path::Path::new(job).is_file() {
            bail!("--predict {job}: no such job file");
        }
    }
    let spreads = match a.spread {
        Some(s) => Spreads { bw: s, pct: s },
        None => Spreads::default(),
    };
    let mut meas = Measurements::default();
    for f in &a.files {
        meas.add_file(f, a.wanted, spreads)?;
    }
    // The system, pinned: the host and driver the presets pick stay those while the
    // fields move.
    let (host, device, driver) = run::system_announced(&opts)?;
    // Its simulations run in other threads.
    run::announce();
    let device_spec = opts
        .device
        .clone()
        .unwrap_or(crate::presets::DEFAULT_DEVICE.to_string());
    let host_spec = opts.host.clone().unwrap_or(host.name.clone());
    opts.host = Some(host_spec.clone());
    opts.driver = Some(driver.name().to_string());
    let (dev_text, dev_origin) = crate::presets::text_of("device", &device_spec)?;
    let (host_text, host_origin) = crate::presets::text_of("host", &host_spec)?;
    let err = |e: flashpath_core::config::preset::PresetError| anyhow!("{e}");
    let mut params: Vec<Param> =
        flashpath_core::config::estimates::declared(&dev_text, &dev_origin)
            .map_err(err)?
            .into_iter()
            .map(|e| Param::new("device", e))
            .collect();
    let host_params: Vec<Param> =
        flashpath_core::config::estimates::declared(&host_text, &host_origin)
            .map_err(err)?
            .into_iter()
            .map(|e| Param::new("host", e))
            .collect();
    if a.out_host.is_some() {
        params.extend(host_params.iter().cloned());
    }
    // A field the user set is the user's: it is not moved.
    params.retain(|p| !opts.sets.iter().any(|(k, _)| *k == p.key));
    if params.is_empty() {
        bail!("calibrate: {dev_origin} declares no estimates calibration may move (an [estimates] table declares them)");
    }
    let chosen: Option<Vec<Param>> = match &a.fit {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|f| find_param(f, &params, &host_params, a.out_host.is_some(), &opts))
                .collect::<Result<Vec<_>>>()?,
        ),
    };

    let prob = Problem::new(opts.clone(), meas);
    let n_targets = prob.meas.targets.len();
    let auto = fit::auto(&prob, &params, chosen, a.max_fields, a.max_evals).map_err(|e| {
        anyhow!(
            "calibrate: {e:#} (device {}, driver {})",
            device.name,
            driver.name()
        )
    })?;
    let fit::Auto {
        screened,
        screens,
        picked,
        base_sim,
        base_z,
        fit: fitted,
        jac,
        sigma,
        ..
    } = &auto;
    let ranges: Vec<&Param> = auto.ranges.iter().collect();
    let choices: Vec<&Param> = auto.choices.iter().collect();

    // 4. Predictions.
    let free: Vec<&Param> = screened
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            !picked.contains(i) && screens[*i].failed.is_none() && screens[*i].effect < 1.0
        })
        .map(|(_, p)| p)
        .collect();
    let predictions = if a.predict.is_empty() {
        Vec::new()
    } else {
        predict(&prob, &a.predict, &ranges, fitted, jac, &free)?
    };
    run::progress::end_steps();

    // The report.
    let fitted_z = prob.z(&fitted.sim);
    let mut r = String::new();
    r.push_str(&format!(
        "calibrate: {} on {} ({}), {} figures from {} workloads; {} simulations\n",
        device.name,
        host.name,
        driver.name(),
        n_targets,
        prob.meas.workloads.len(),
        prob.runs.load(std::sync::atomic::Ordering::Relaxed)
    ));
    r.push_str(&format!(
        "fit: COBYLA over {} field{} ({} evaluations), chi2 {:.2} -> {:.2} (sum of squared errors in spreads over {n_targets} figures)\n",
        ranges.len() + choices.len(),
        if ranges.len() + choices.len() == 1 { "" } else { "s" },
        fitted.evaluations,
        fit::chi2(base_z),
        fitted.chi2
    ));
    r.push_str(
        "\nfitted fields (1-sigma: the values that keep the figures within about one spread):\n",
    );
    let mut rows: Vec<[String; 6]> = vec![[
        "field".into(),
        "preset".into(),
        "fitted".into(),
        "1-sigma".into(),
        "may be".into(),
        "the data".into(),
    ]];
    let mut fields_json = Vec::new();
    for (i, p) in ranges.iter().enumerate() {
        let u = fitted.u[i];
        let (interval, verdict) = match sigma[i] {
            Some(s) if s < 0.1 => (
                format!("{} .. {}", p.written_at(u - s), p.written_at(u + s)),
                "pin it down".to_string(),
            ),
            Some(s) => (
                format!("{} .. {}", p.written_at(u - s), p.written_at(u + s)),
                "leave it loose".to_string(),
            ),
            None if auto.kept[i] => ("-".into(), "do not pin it: the preset's value kept".into()),
            None if jac[i].iter().all(|d| d.abs() < 1e-9) => {
                ("-".into(), "do not move with it here".into())
            }
            None => ("-".into(), "cannot tell it apart from the others".into()),
        };
        fields_json.push(json!({
            "field": p.key, "preset": p.est.value, "fitted": p.written_at(u),
            "sigma": (interval != "-").then_some(&interval), "may_be": p.est.bounds.show(),
            "the_data": verdict,
        }));
        rows.push([
            p.key.clone(),
            p.est.value.clone(),
            p.written_at(u),
            interval,
            p.est.bounds.show(),
            verdict,
        ]);
    }
    for (k, v) in &fitted.fixed {
        let p = choices
            .iter()
            .find(|p| &p.key == k)
            .expect("a fitted choice");
        fields_json.push(json!({
            "field": k, "preset": p.est.value, "fitted": v, "sigma": null,
            "may_be": p.est.bounds.show(), "the_data": "chosen",
        }));
        rows.push([
            k.clone(),
            p.est.value.clone(),
            v.clone(),
            "-".into(),
            p.est.bounds.show(),
            "chosen".into(),
        ]);
    }
    r.push_str(&table(&rows));
    let mut notes = Vec::new();
    for (i, p) in screened.iter().enumerate() {
        if picked.contains(&i) {
            continue;
        }
        let s = &screens[i];
        let why = if let Some(f) = &s.failed {
            format!("not fitted: the system does not run with it {f}")
        } else if s.effect < 1.0 {
            format!(
                "free: across {} it moves no figure by its spread (at most {:.2} spreads)",
                p.est.bounds.show(),
                s.effect
            )
        } else if let Some(j) = picked
            .iter()
            .find(|&&j| fit::collinear(&s.direction, &screens[j].direction))
        {
            format!(
                "not fitted: it moves the figures as {} does (up to {:.1} spreads)",
                screened[*j].key, s.effect
            )
        } else {
            format!("not fitted: moves figures up to {:.1} spreads, but at most {} fields are fitted (--max-fields, or name them with --fit)", s.effect, a.max_fields.min(n_targets))
        };
        notes.push(format!("  {}: {why}\n", p.key));
    }
    if !notes.is_empty() {
        r.push_str("\nthe other declared estimates:\n");
        for n in notes {
            r.push_str(&n);
        }
    }
    if a.out_host.is_none() && !host_params.is_empty() {
        r.push_str(&format!(
            "  the host's {} declared estimates are held at {}'s values (--out-host FILE fits them too)\n",
            host_params.len(),
            host.name
        ));
    }
    r.push_str("\nfigures (error: simulated against measured):\n");
    let mut rows: Vec<[String; 6]> = vec![[
        "measurement".into(),
        "measured".into(),
        "preset".into(),
        "fitted".into(),
        "spread".into(),
        "fitted off by".into(),
    ]];
    let mut figures_json = Vec::new();
    for (k, t) in prob.meas.targets.iter().enumerate() {
        figures_json.push(json!({
            "measurement": t.label, "measured": t.value, "preset": base_sim[k],
            "fitted": fitted.sim[k], "spread": t.spread, "fitted_off_spreads": fitted_z[k],
        }));
        let pct = |s: f64| format!("{:+.1} %", (s / t.value - 1.0) * 100.0);
        rows.push([
            t.label.clone(),
            fmt(t.value),
            format!("{} ({})", fmt(base_sim[k]), pct(base_sim[k])),
            format!("{} ({})", fmt(fitted.sim[k]), pct(fitted.sim[k])),
            format!("{:.0} %", t.spread * 100.0),
            format!("{:.1} spreads", fitted_z[k].abs()),
        ]);
    }
    r.push_str(&table(&rows));
    if !predictions.is_empty() {
        r.push_str("\npredictions (at the fit; range over the parameter sets that fit the measurements within their spread):\n");
        let mut rows: Vec<[String; 4]> = vec![[
            "figure".into(),
            "at the fit".into(),
            "range".into(),
            "sets".into(),
        ]];
        for p in &predictions {
            rows.push([
                p.label.clone(),
                fmt(p.at_fit),
                format!("{} .. {}", fmt(p.lo), fmt(p.hi)),
                p.sets.to_string(),
            ]);
        }
        r.push_str(&table(&rows));
    }

    // The fitted presets.
    let from = files_list(&a.files);
    let name = a.name.clone().unwrap_or_else(|| stem(&out));
    let mut written = Vec::new();
    for (scope, text, origin, path) in [
        ("device", &dev_text, &dev_origin, Some(&out)),
        ("host", &host_text, &host_origin, a.out_host.as_ref()),
    ] {
        let Some(path) = path else { continue };
        let mut vals: Vec<write::Fitted> = ranges
            .iter()
            .zip(&fitted.u)
            .enumerate()
            .filter(|(i, (p, _))| p.key.starts_with(&format!("{scope}.")) && !auto.kept[*i])
            .map(|(i, (p, &u))| write::Fitted {
                field: p.est.field.clone(),
                value: p.written_at(u),
                from: match sigma[i] {
                    Some(s) if s < 0.1 => from.clone(),
                    Some(s) => format!(
                        "{from}, which leave it loose ({} .. {} at 1 sigma)",
                        p.written_at(u - s),
                        p.written_at(u + s)
                    ),
                    None => {
                        format!("{from}, which do not pin it down (any value of its range may fit)")
                    }
                },
            })
            .collect();
        for (k, v) in &fitted.fixed {
            if let Some(field) = k.strip_prefix(&format!("{scope}.")) {
                vals.push(write::Fitted {
                    field: field.to_string(),
                    value: v.clone(),
                    from: from.clone(),
                });
            }
        }
        let pname = if scope == "host" {
            a.out_host.as_deref().map(stem).unwrap_or_default()
        } else {
            name.clone()
        };
        let header = format!(
            "# Fitted by `flashpath calibrate` to {from}: {} value{} marked \"calibrated\" below\n# (and in [estimates]); every other value is {}'s.\n\n",
            vals.len(),
            if vals.len() == 1 { "" } else { "s" },
            origin
        );
        let text = write::fitted_preset(text, origin, &pname, &vals, &header)?;
        // The result must load as it is written.
        let check = if scope == "device" {
            flashpath_core::config::preset::load_device(&text, path, &[]).map(|_| ())
        } else {
            flashpath_core::config::preset::load_host(&text, path, &[]).map(|_| ())
        };
        check.map_err(|e| anyhow!("the fitted {scope} preset does not load: {e}"))?;
        std::fs::write(path, &text)
            .with_context(|| format!("{path}: cannot write the fitted preset"))?;
        written.push(format!(
            "{path} ({scope} preset '{pname}', {} value{} calibrated)",
            vals.len(),
            if vals.len() == 1 { "" } else { "s" }
        ));
    }
    r.push_str(&format!("\nwrote {}\n", written.join(", ")));
    let data = serde_json::to_string_pretty(&json!({
        "device": device.name, "host": host.name, "driver": driver.name(),
        "chi2_preset": fit::chi2(base_z), "chi2_fitted": fitted.chi2,
        "evaluations": fitted.evaluations, "fields": fields_json, "figures": figures_json,
        "predictions": predictions.iter().map(|p| json!({
            "figure": p.label, "at_fit": p.at_fit, "min": p.lo, "max": p.hi, "sets": p.sets,
        })).collect::<Vec<_>>(),
        "wrote": written,
    }))
    .expect("JSON of plain values");
    if let Some(p) = &a.plot {
        crate::plot::draw("calibrate", &data, p)?;
    }
    crate::emit_table_or_json(a.json.as_deref(), &r, &data)
}

/// A field named with `--fit`: `device.F`, `host.F`, or `F` (the device's, else the
/// host's).
fn find_param(
    f: &str,
    params: &[Param],
    host_params: &[Param],
    fitting_host: bool,
    opts: &Options,
) -> Result<Param> {
    let keys = [f.to_string(), format!("device.{f}"), format!("host.{f}")];
    if let Some(p) = keys
        .iter()
        .find_map(|k| params.iter().find(|p| &p.key == k))
    {
        return Ok(p.clone());
    }
    if keys.iter().any(|k| host_params.iter().any(|p| &p.key == k)) && !fitting_host {
        bail!("--fit {f}: a host field is fitted only with --out-host FILE (where the fitted host preset goes)");
    }
    if keys.iter().any(|k| opts.sets.iter().any(|(s, _)| s == k)) {
        bail!("--fit {f}: it is also given with --set, which holds it");
    }
    bail!(
        "--fit {f}: not a declared estimate of these presets (`flashpath presets --estimates {}` lists them)",
        opts.device.as_deref().unwrap_or(crate::presets::DEFAULT_DEVICE)
    )
}

struct Prediction {
    label: String,
    at_fit: f64,
    lo: f64,
    hi: f64,
    sets: usize,
}

/// Runs the prediction jobs at the fit and at the parameter sets that fit within the
/// spread: the fit moved along each axis of the joint 1-sigma region (χ² up by its
/// 68 % quantile, checked by simulation, halved once if the linear estimate
/// overshoots), and each free field at both ends of its range (kept only if the
/// measurements still fit there).
fn predict(
    prob: &Problem,
    jobs: &[String],
    ranges: &[&Param],
    f: &fit::Fit,
    jac: &[Vec<f64>],
    free: &[&Param],
) -> Result<Vec<Prediction>> {
    let n = ranges.len();
    let q = fit::chi2_68(n);
    let cov = fit::covariance(jac);
    let mut candidates: Vec<fit::Point> = Vec::new();
    for i in 0..n {
        let s = cov[i].map_or(1.0, |c| (c * q).sqrt()).min(1.0);
        for sign in [-1.0, 1.0] {
            for scale in [1.0, 0.5] {
                let mut u = f.u.clone();
                u[i] = (u[i] + sign * s * scale).clamp(0.0, 1.0);
                candidates.push(fit::point_of(ranges, &u, &f.fixed));
            }
        }
    }
    for p in free {
        for end in [0.0, 1.0] {
            let mut point = fit::point_of(ranges, &f.u, &f.fixed);
            point.push((p.key.clone(), p.written_at(end)));
            candidates.push(point);
        }
    }
    fit::set_phase(prob, "the parameter sets that fit");
    let outs = prob.simulate(&candidates);
    let mut sets: Vec<fit::Point> = vec![fit::point_of(ranges, &f.u, &f.fixed)];
    let mut k = 0;
    while k < candidates.len() {
        // Axis candidates come in pairs (whole step, half step): the half only if the
        // whole overshoots.
        let is_axis = k < 4 * n;
        let ok = |o: &fit::Outcome| {
            o.as_ref()
                .as_ref()
                .is_ok_and(|s| fit::chi2(&prob.z(s)) <= f.chi2 + q)
        };
        if is_axis {
            if ok(&outs[k]) {
                sets.push(candidates[k].clone());
            } else if ok(&outs[k + 1]) {
                sets.push(candidates[k + 1].clone());
            }
            k += 2;
        } else {
            if ok(&outs[k]) {
                sets.push(candidates[k].clone());
            }
            k += 1;
        }
    }
    let mut out = Vec::new();
    for job in jobs {
        let items: Vec<&fit::Point> = sets.iter().collect();
        fit::set_phase(prob, &format!("predicting {job}"));
        let runs = crate::measure::parallel(&items, |p| {
            let mut o = prob.opts.clone();
            o.sets.extend(p.iter().cloned());
            crate::measure::run_fio_quiet(&o, std::slice::from_ref(job))
                .with_context(|| format!("--predict {job}"))
        })?;
        let figs: Vec<Vec<(String, f64)>> = runs
            .iter()
            .map(|rows| prediction_figures(job, rows))
            .collect();
        for (i, (label, at_fit)) in figs[0].iter().enumerate() {
            let vals: Vec<f64> = figs.iter().filter_map(|f| f.get(i).map(|x| x.1)).collect();
            out.push(Prediction {
                label: label.clone(),
                at_fit: *at_fit,
                lo: vals.iter().copied().fold(f64::INFINITY, f64::min),
                hi: vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                sets: vals.len(),
            });
        }
    }
    Ok(out)
}

/// Bandwidth and p99 completion latency of each job name and direction of a run.
fn prediction_figures(job: &str, rows: &[crate::measure::JobFigures]) -> Vec<(String, f64)> {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let mine: Vec<_> = rows.iter().filter(|r| r.name == name).cloned().collect();
        for (d, dir) in crate::measure::DIRS.iter().enumerate() {
            if mine.iter().all(|r| r.dirs[d].ios == 0) {
                continue;
            }
            for m in [format!("{dir}_bw_mib"), format!("{dir}_clat_p99_ms")] {
                if let Ok(v) = crate::measure::metric(&mine, &m) {
                    out.push((format!("{}:{name} {m}", stem(job)), v));
                }
            }
        }
    }
    out
}

fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .map_or(path.to_string(), |s| s.to_string_lossy().into_owned())
}

fn files_list(files: &[String]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            std::path::Path::new(f)
                .file_name()
                .map_or(f.clone(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    if names.len() <= 4 {
        names.join(", ")
    } else {
        format!("{}, ... ({} files)", names[..3].join(", "), names.len())
    }
}

/// A figure with 4 significant digits.
fn fmt(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let w: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(" ");
        for (i, c) in r.iter().enumerate() {
            line.push(' ');
            line.push_str(c);
            if i + 1 < N {
                line.push_str(&" ".repeat(w[i] - c.chars().count() + 1));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
