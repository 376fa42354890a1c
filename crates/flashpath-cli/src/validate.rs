//! `flashpath validate`: runs every shipped reproduction and sets the simulated figures
//! beside the published ones; fails if any figure leaves its tolerance or any
//! before/after comparison leaves its range.

use crate::measure::{self, JobFigures};
use crate::repro::{self, Catalogue};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;

const USAGE: &str = "usage: flashpath validate [--jobs DIR] [--only TEXT]";

pub fn command(args: &[String]) -> Result<()> {
    let mut dir = None;
    let mut only = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--jobs" | "--only" => {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| anyhow!("{} needs a value ({USAGE})", args[i]))?;
                if args[i] == "--jobs" {
                    dir = Some(v.clone());
                } else {
                    only = Some(v.clone());
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
    let failed = validate(&cat, only.as_deref(), &mut table)?;
    crate::emit(&String::from_utf8_lossy(&table))?;
    if failed > 0 {
        bail!("validate: {failed} check(s) outside their tolerance");
    }
    Ok(())
}

/// Runs the reproductions (those whose name contains `only`, and the ones the selected
/// comparisons need) and writes the report; returns how many checks failed.
pub fn validate(
    cat: &Catalogue,
    only: Option<&str>,
    out: &mut impl std::io::Write,
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
            figures.add(ok, bad);
            abs_err.push((err.abs(), ok));
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
            figures.add(ok, bad);
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
    writeln!(out)?;
    writeln!(out, "{}", summary(&figures, &ranges, predictions, &abs_err))?;
    Ok(figures.unexpected + ranges.unexpected)
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
/// of the single published values (`abs_err`: |error| in % and whether it was within
/// tolerance), over those within tolerance and over all.
fn summary(figures: &Tally, ranges: &Tally, predictions: usize, abs_err: &[(f64, bool)]) -> String {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let all: Vec<f64> = abs_err.iter().map(|e| e.0).collect();
    let within: Vec<f64> = abs_err.iter().filter(|e| e.1).map(|e| e.0).collect();
    let mut s = format!(
        "validate: {} published figures: {} within tolerance, {} declared known failures, \
         {} unexpected",
        figures.total(),
        figures.within,
        figures.known,
        figures.unexpected
    );
    if !within.is_empty() {
        s += &format!(
            " (mean |error| {:.1} % over the {} single values within tolerance, {:.1} % over \
             all {})",
            mean(&within),
            within.len(),
            mean(&all),
            all.len()
        );
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
