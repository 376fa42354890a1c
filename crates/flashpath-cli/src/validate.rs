//! `flashpath validate`: runs every shipped reproduction and sets the simulated figures
//! beside the published ones; fails if any figure leaves its tolerance or any
//! before/after comparison leaves its range.

use crate::measure::{self, JobFigures};
use crate::repro::{self, Catalogue};
use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const USAGE: &str =
    "usage: flashpath validate [--jobs DIR] [--only TEXT] [--in-sample] [--json FILE|-] [--plot FILE]";

pub fn command(args: &[String]) -> Result<()> {
    let mut dir = None;
    let mut only = None;
    let mut out_of_sample = true;
    let mut json_to = None;
    let mut plot_to = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--in-sample" => {
                out_of_sample = false;
                i += 1;
            }
            "--jobs" | "--only" | "--json" | "--plot" => {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| anyhow!("{} needs a value ({USAGE})", args[i]))?;
                match args[i].as_str() {
                    "--jobs" => dir = Some(v.clone()),
                    "--only" => only = Some(v.clone()),
                    "--plot" => {
                        crate::plot::check_target(v)?;
                        plot_to = Some(v.clone())
                    }
                    _ => json_to = Some(v.clone()),
                }
                i += 2;
            }
            other => bail!("validate: unknown argument '{other}' ({USAGE})"),
        }
    }
    let cat = repro::load(&repro::jobs_dir(dir.as_deref()))?;
    // The table is written whole once the reproductions have run: a full disk or a
    // closed pipe is then one line naming what failed ("writing the output: ...").
    let mut table = Vec::new();
    let mut records = Records::default();
    let failed = validate(
        &cat,
        only.as_deref(),
        out_of_sample,
        &mut table,
        &mut records,
    )?;
    if let Some(p) = &plot_to {
        crate::plot::draw("validate", &records.json(), p)?;
    }
    crate::emit_table_or_json(
        json_to.as_deref(),
        &String::from_utf8_lossy(&table),
        &records.json(),
    )?;
    if failed > 0 {
        bail!("validate: {failed} check(s) outside their tolerance");
    }
    Ok(())
}

/// The report as data (`--json`): one record per line of the table (`kind`: figure,
/// range, prediction, comparison, out_of_sample), and the summary lines.
#[derive(Default)]
pub struct Records {
    rows: Vec<Value>,
    summary: Vec<String>,
}

impl Records {
    fn json(&self) -> String {
        serde_json::to_string_pretty(&json!({"records": self.rows, "summary": self.summary}))
            .expect("JSON of plain values")
    }
}

/// Runs the reproductions (those whose name contains `only`, and the ones the selected
/// comparisons need) and writes the report, its records into `records`; returns how
/// many checks failed.
pub fn validate(
    cat: &Catalogue,
    only: Option<&str>,
    out_of_sample: bool,
    out: &mut impl std::io::Write,
    records: &mut Records,
) -> Result<usize> {
    let comparisons: Vec<_> = cat
        .comparisons
        .iter()
        .filter(|c| only.is_none_or(|o| c.before.contains(o) || c.after.contains(o)))
        .collect();
    let wanted: Vec<_> = cat
        .reproductions
        .iter()
        .filter(|r| {
            only.is_none_or(|o| r.name.contains(o))
                || comparisons
                    .iter()
                    .any(|c| c.before == r.name || c.after == r.name)
        })
        .collect();
    if wanted.is_empty() {
        bail!("validate: no reproduction matches");
    }
    let results = run_all(&wanted)?;
    let (mut figures, mut ranges) = (Tally::default(), Tally::default());
    let mut predictions = 0;
    let mut abs_err = Vec::new();
    writeln!(
        out,
        "{:34} {:20} {:>10} {:>10} {:>9} {:>6}",
        "reproduction", "metric", "simulated", "published", "error", "tol."
    )?;
    for r in &wanted {
        let rows = &results[&r.name];
        if r.figures.is_empty() && r.bounds.is_empty() {
            let default = [
                "read_bw_mib",
                "write_bw_mib",
                "read_clat_mean_ms",
                "write_clat_mean_ms",
            ]
            .map(String::from);
            let list = if r.predict.is_empty() {
                &default[..]
            } else {
                &r.predict[..]
            };
            for m in list {
                if let Ok(v) = measure::metric(rows, m) {
                    if v > 0.0 {
                        predictions += 1;
                        records.rows.push(json!({
                            "kind": "prediction", "reproduction": r.name, "metric": m,
                            "simulated": v, "sample": "predicted",
                        }));
                        writeln!(
                            out,
                            "{:34} {:20} {:>10.2} {:>10} {:>9} {:>6}  prediction",
                            r.name, m, v, "-", "-", "-"
                        )?;
                    }
                }
            }
            continue;
        }
        for f in &r.figures {
            let v = measure::metric(rows, &f.metric)
                .map_err(|e| anyhow!("reproduction '{}': {e}", r.name))?;
            let err = (v / f.published - 1.0) * 100.0;
            let ok = err.abs() <= f.tolerance_pct;
            let (bad, verdict) = verdict(ok, f.known_failure.as_deref());
            let verdict = predicted(f.prediction, verdict);
            figures.add(ok, bad);
            figures.predicted += f.prediction as usize;
            abs_err.push((err.abs(), ok, f.prediction));
            records.rows.push(json!({
                "kind": "figure", "reproduction": r.name, "metric": f.metric,
                "simulated": v, "published": f.published, "error_pct": err,
                "tolerance_pct": f.tolerance_pct, "within": ok, "verdict": verdict,
                "sample": if f.prediction { "predicted" } else { "in-sample" },
            }));
            writeln!(
                out,
                "{:34} {:20} {:>10.2} {:>10.2} {:>+8.1}% {:>5}%  {}",
                r.name, f.metric, v, f.published, err, f.tolerance_pct, verdict
            )?;
        }
        for b in &r.bounds {
            let v = measure::metric(rows, &b.metric)
                .map_err(|e| anyhow!("reproduction '{}': {e}", r.name))?;
            let ok = (b.min..=b.max).contains(&v);
            let (bad, verdict) = verdict(ok, b.known_failure.as_deref());
            let verdict = predicted(b.prediction, verdict);
            figures.add(ok, bad);
            figures.predicted += b.prediction as usize;
            records.rows.push(json!({
                "kind": "range", "reproduction": r.name, "metric": b.metric,
                "simulated": v, "min": b.min, "max": b.max, "within": ok,
                "verdict": verdict,
                "sample": if b.prediction { "predicted" } else { "in-sample" },
            }));
            writeln!(
                out,
                "{:34} {:20} {:>10.2} {:>21} {:>6}  {}",
                r.name,
                b.metric,
                v,
                format!("in [{}, {}]", b.min, b.max),
                "",
                verdict
            )?;
        }
    }
    writeln!(out)?;
    for r in wanted
        .iter()
        .filter(|r| !r.figures.is_empty() || !r.bounds.is_empty())
    {
        writeln!(out, "{:34} source: {}", r.name, r.source)?;
    }
    if !comparisons.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:34} {:20} {:>10} {:>10} {:>9} {:>16}",
            "comparison (before -> after)", "metric", "before", "after", "change", "range"
        )?;
    }
    for c in comparisons {
        let b = measure::metric(&results[&c.before], &c.metric)?;
        let a = measure::metric(&results[&c.after], &c.metric)?;
        let change = (a / b - 1.0) * 100.0;
        let ok = c.min_change_pct.is_none_or(|m| change >= m)
            && c.max_change_pct.is_none_or(|m| change <= m);
        let (bad, verdict) = verdict(ok, c.known_failure.as_deref());
        ranges.add(ok, bad);
        records.rows.push(json!({
            "kind": "comparison", "comparison": c.name, "metric": c.metric,
            "before": b, "after": a, "change_pct": change,
            "min_change_pct": c.min_change_pct, "max_change_pct": c.max_change_pct,
            "within": ok, "verdict": verdict,
        }));
        let bound = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:+}%"));
        writeln!(
            out,
            "{:34} {:20} {:>10.2} {:>10.2} {:>+8.1}% {:>16}  {}",
            c.name,
            c.metric,
            b,
            a,
            change,
            format!("[{}, {}]", bound(c.min_change_pct), bound(c.max_change_pct)),
            verdict
        )?;
    }
    if only.is_none() && !cat.not_checked.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "not checked: {} published figures or sentences, because:",
            cat.not_checked.len()
        )?;
        for (set, n) in &cat.not_checked {
            writeln!(out, "  {set}: {}: {}", n.figure, n.because)?;
        }
    }
    let oos = if out_of_sample {
        out_of_sample_section(cat, only, &wanted, &results, out, records)?
    } else {
        None
    };
    writeln!(out)?;
    let line = summary(&figures, &ranges, predictions, &abs_err);
    writeln!(out, "{line}")?;
    records.summary.push(line);
    if let Some(line) = oos {
        writeln!(out, "{line}")?;
        records.summary.push(line);
    }
    Ok(figures.unexpected + ranges.unexpected)
}

/// The sets whose "after" figures are predicted from a calibration on their "before"
/// figures only (`[[out_of_sample]]` in the manifests): each set's calibration, its
/// predictions beside the published figures and the in-sample simulation of the same
/// figures; returns the summary line. Reported, not enforced: these are what flashpath
/// predicts, and a miss does not fail the run.
fn out_of_sample_section(
    cat: &Catalogue,
    only: Option<&str>,
    wanted: &[&repro::Reproduction],
    results: &BTreeMap<String, Vec<JobFigures>>,
    out: &mut impl std::io::Write,
    records: &mut Records,
) -> Result<Option<String>> {
    let sets: Vec<_> = cat
        .out_of_sample
        .iter()
        .filter(|o| {
            only.is_none_or(|t| {
                o.name.contains(t)
                    || o.calibrate_on
                        .iter()
                        .chain(&o.predict)
                        .any(|n| n.contains(t))
            })
        })
        .collect();
    if sets.is_empty() {
        return Ok(None);
    }
    writeln!(out)?;
    writeln!(
        out,
        "out of sample: each set's declared estimates calibrated on its before figures only, its after figures predicted"
    )?;
    let reports = crate::measure::parallel_shown(
        "validate: out of sample",
        &sets,
        |o| o.name.clone(),
        |o| Ok(crate::calibrate::out_of_sample::run(cat, o)),
    )?;
    let (mut errs, mut same_in_sample, mut within) = (Vec::new(), Vec::new(), 0);
    for (o, rep) in sets.iter().zip(reports) {
        writeln!(out)?;
        let rep = match rep {
            Ok(r) => r,
            Err(e) => {
                writeln!(out, "set {}: not calibrated: {e:#}", o.name)?;
                continue;
            }
        };
        writeln!(
            out,
            "set {}: calibrated on {} figures of {}; chi2 {:.2} -> {:.2}{}",
            rep.name,
            rep.figures,
            o.calibrate_on.join(", "),
            rep.chi2.0,
            rep.chi2.1,
            match &rep.shortened {
                Some((how, d)) => format!(
                    " (calibration runs shortened to {how}: their figures are within {:.1} % of the whole runs' at the presets' values)",
                    d * 100.0
                ),
                None => String::new(),
            }
        )?;
        for (k, was, now, verdict) in &rep.fitted {
            writeln!(out, "  {k}: {was} -> {now} ({verdict})")?;
        }
        writeln!(out, "  why this split: {}", o.why)?;
        writeln!(
            out,
            "{:34} {:20} {:>10} {:>10} {:>9} {:>6}  {:>18}",
            "  predicted reproduction",
            "metric",
            "predicted",
            "published",
            "error",
            "tol.",
            "in-sample error"
        )?;
        for r in &rep.rows {
            use crate::calibrate::out_of_sample::Published;
            let (err, ok) = r.published.error(r.predicted);
            let ins = wanted
                .iter()
                .any(|w| w.name == r.reproduction)
                .then(|| measure::metric(&results[&r.reproduction], &r.metric).ok())
                .flatten()
                .map(|v| r.published.error(v).0);
            if ok {
                within += 1;
            }
            errs.push(err.abs());
            if let Some(i) = ins {
                same_in_sample.push(i.abs());
            }
            let (value, min, max, tolerance) = match r.published {
                Published::Figure {
                    value,
                    tolerance_pct,
                } => (Some(value), None, None, Some(tolerance_pct)),
                Published::Range { min, max } => (None, Some(min), Some(max), None),
            };
            records.rows.push(json!({
                "kind": "out_of_sample", "set": rep.name, "reproduction": r.reproduction,
                "metric": r.metric, "simulated": r.predicted, "published": value,
                "min": min, "max": max, "tolerance_pct": tolerance, "error_pct": err,
                "within": ok, "in_sample_error_pct": ins, "sample": "out-of-sample",
            }));
            let (published, tol) = match r.published {
                Published::Figure {
                    value,
                    tolerance_pct,
                } => (format!("{value:.2}"), format!("{tolerance_pct}%")),
                Published::Range { min, max } => (format!("[{min}, {max}]"), "range".into()),
            };
            writeln!(
                out,
                "  {:32} {:20} {:>10.2} {:>10} {:>+8.1}% {:>6}  {:>17}",
                r.reproduction,
                r.metric,
                r.predicted,
                published,
                err,
                tol,
                ins.map_or("-".into(), |i| format!("{i:+.1}%"))
            )?;
        }
    }
    // Comparisons whose before run has no published figure: nothing to calibrate on.
    let none: Vec<&str> = cat
        .comparisons
        .iter()
        .filter(|c| {
            cat.reproductions
                .iter()
                .find(|r| r.name == c.before)
                .is_some_and(|r| r.figures.is_empty() && r.bounds.is_empty())
        })
        .map(|c| c.name.as_str())
        .collect();
    if !none.is_empty() && only.is_none() {
        writeln!(out)?;
        writeln!(
            out,
            "no out-of-sample row (their before runs have no published figure to calibrate on): {}",
            none.join("; ")
        )?;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Ok(Some(format!(
        "validate: out of sample: {} after figures predicted from before-only calibrations of {} sets, {within} within tolerance, mean |error| {:.1} % (the same figures in sample: {:.1} %)",
        errs.len(),
        sets.len(),
        mean(&errs),
        mean(&same_in_sample)
    )))
}

/// How the checks of one kind came out.
#[derive(Default)]
struct Tally {
    /// Within tolerance (or range), not marked.
    within: usize,
    /// Outside, and declared a known failure in the manifest.
    known: usize,
    /// Outside and not declared, or declared but now within: these fail the run.
    unexpected: usize,
    /// Of all of them, those no preset value was fitted to (`prediction = true`).
    predicted: usize,
}

impl Tally {
    fn add(&mut self, ok: bool, bad: bool) {
        match (ok, bad) {
            (true, false) => self.within += 1,
            (false, false) => self.known += 1,
            (_, true) => self.unexpected += 1,
        }
    }

    fn total(&self) -> usize {
        self.within + self.known + self.unexpected
    }
}

/// The report's last line: the checks against published figures (single values and
/// ranges), the before/after comparisons, the predictions, and the mean absolute error
/// of the single published values (`abs_err`: |error| in %, whether it was within
/// tolerance, whether it is a prediction), over those within tolerance and over all;
/// in-sample values and predictions apart when there are predictions.
fn summary(
    figures: &Tally,
    ranges: &Tally,
    predictions: usize,
    abs_err: &[(f64, bool, bool)],
) -> String {
    // " (mean |error| A % over the N LABELsingle values within tolerance, B % over all M)"
    let means = |label: &str, predicted: Option<bool>| -> String {
        let pick: Vec<(f64, bool)> = abs_err
            .iter()
            .filter(|e| predicted.is_none_or(|p| e.2 == p))
            .map(|e| (e.0, e.1))
            .collect();
        let within: Vec<f64> = pick.iter().filter(|e| e.1).map(|e| e.0).collect();
        if within.is_empty() {
            return String::new();
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let all: Vec<f64> = pick.iter().map(|e| e.0).collect();
        format!(
            "mean |error| {:.1} % over the {} {label}single values within tolerance, {:.1} % \
             over all {}",
            mean(&within),
            within.len(),
            mean(&all),
            all.len()
        )
    };
    let mut s = format!(
        "validate: {} published figures{}: {} within tolerance, {} declared known failures, \
         {} unexpected",
        figures.total(),
        if figures.predicted > 0 {
            format!(
                " ({} of them predictions: no preset value was fitted to them)",
                figures.predicted
            )
        } else {
            String::new()
        },
        figures.within,
        figures.known,
        figures.unexpected
    );
    let parts: Vec<String> = if abs_err.iter().any(|e| e.2) {
        vec![
            means("in-sample ", Some(false)),
            means("predicted ", Some(true)),
        ]
    } else {
        vec![means("", None)]
    };
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    if !parts.is_empty() {
        s += &format!(" ({})", parts.join("; "));
    }
    s += &format!(
        "; {} before/after comparisons: {} in range, {} declared known failures, {} \
         unexpected; {predictions} predicted values",
        ranges.total(),
        ranges.within,
        ranges.known,
        ranges.unexpected
    );
    s
}

/// A check's verdict, marked when the check is a prediction (no preset value fitted to
/// its figure).
fn predicted(prediction: bool, verdict: String) -> String {
    if prediction {
        format!("predicted, {verdict}")
    } else {
        verdict
    }
}

/// Whether a check fails the run, and what to print: a known failure that still fails
/// is reported with its reason; one that passes fails the run until its marker goes.
fn verdict(ok: bool, known: Option<&str>) -> (bool, String) {
    match (ok, known) {
        (true, None) => (false, "ok".into()),
        (false, None) => (true, "FAIL".into()),
        (false, Some(why)) => (false, format!("known failure: {why}")),
        (true, Some(_)) => (
            true,
            "PASSES but is marked known_failure: remove the marker".into(),
        ),
    }
}

/// Runs the reproductions on all cores; results by name.
fn run_all(list: &[&repro::Reproduction]) -> Result<BTreeMap<String, Vec<JobFigures>>> {
    let rows = measure::parallel_shown(
        "validate",
        list,
        |r| r.name.clone(),
        |r| {
            let args = vec![r.job.display().to_string()];
            measure::run_fio_quiet(&r.options(), &args)
                .map_err(|e| anyhow!("reproduction '{}': {e:#}", r.name))
        },
    )?;
    Ok(list.iter().map(|r| r.name.clone()).zip(rows).collect())
}
