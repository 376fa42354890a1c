//! Shipped reproductions: `jobs/*/reproductions.toml` name a job, the system it ran on
//! (presets, driver, overrides), the published figures with their tolerance, and
//! before/after comparisons whose change must fall in a stated range.

use crate::run::Options;
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    reproduction: Vec<RawReproduction>,
    #[serde(default)]
    comparison: Vec<Comparison>,
    #[serde(default)]
    out_of_sample: Vec<OutOfSample>,
    #[serde(default)]
    not_checked: Vec<NotChecked>,
}

/// A published figure (or sentence with a number) the manifest's source gives that no
/// check stands for, and why: `validate` lists them.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotChecked {
    pub figure: String,
    pub because: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReproduction {
    name: String,
    job: String,
    device: String,
    host: String,
    driver: String,
    #[serde(default)]
    set: Vec<String>,
    /// The data layout the jobs find (`--precondition`): auto, random, sequential, off.
    #[serde(default)]
    precondition: Option<String>,
    source: String,
    #[serde(default)]
    figure: Vec<Figure>,
    #[serde(default)]
    bound: Vec<Bound>,
    /// Metrics printed as predictions (no published figure to check against).
    #[serde(default)]
    predict: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub metric: String,
    pub published: f64,
    pub tolerance_pct: f64,
    /// A known, explained miss: the check is reported as such and does not fail the run,
    /// but passing it fails the run until the marker is removed (strict "expected failure").
    pub known_failure: Option<String>,
    /// No preset value was fitted to this figure: the check is a prediction (out of
    /// sample), not an in-sample agreement. `validate` says so beside it.
    #[serde(default)]
    pub prediction: bool,
}

/// A published range rather than a figure: the metric must lie in [min, max] (the white
/// paper's "software dominates (56-91 %)").
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    pub metric: String,
    pub min: f64,
    pub max: f64,
    /// As for figures.
    pub known_failure: Option<String>,
    /// As for figures.
    #[serde(default)]
    pub prediction: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub name: String,
    pub before: String,
    pub after: String,
    pub metric: String,
    pub min_change_pct: Option<f64>,
    pub max_change_pct: Option<f64>,
    /// As for figures.
    pub known_failure: Option<String>,
}

/// A set whose "after" figures `validate` predicts from a calibration on its "before"
/// figures only: the presets' declared estimates are fitted to `calibrate_on`'s
/// published figures, and `predict`'s figures are then out-of-sample predictions.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutOfSample {
    pub name: String,
    pub calibrate_on: Vec<String>,
    pub predict: Vec<String>,
    /// The calibration's runs move this much per job (fio's `io_size`, given before
    /// the job file), to keep `validate` affordable; the report prints how far their
    /// figures are from the whole runs' at the presets' values. The predictions run
    /// whole.
    pub io_size: Option<String>,
    /// Why the set is split this way.
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct Reproduction {
    pub name: String,
    /// The job file, as a path that exists.
    pub job: PathBuf,
    pub device: String,
    pub host: String,
    pub driver: String,
    /// `device.`/`host.` overrides, (field, value).
    pub sets: Vec<(String, String)>,
    pub precondition: Option<flashpath_core::sim::Precondition>,
    pub source: String,
    pub figures: Vec<Figure>,
    pub bounds: Vec<Bound>,
    /// Metrics printed as predictions (`predict = [...]`).
    pub predict: Vec<String>,
    /// The manifest it came from (for messages).
    pub manifest: PathBuf,
}

impl Reproduction {
    pub fn options(&self) -> Options {
        Options {
            device: Some(self.device.clone()),
            host: Some(self.host.clone()),
            driver: Some(self.driver.clone()),
            sets: self.sets.clone(),
            precondition: self.precondition,
            ..Options::default()
        }
    }
}

#[derive(Debug, Default)]
pub struct Catalogue {
    pub reproductions: Vec<Reproduction>,
    pub comparisons: Vec<Comparison>,
    pub out_of_sample: Vec<OutOfSample>,
    /// (the manifest's set, e.g. `rtsx`; the figure).
    pub not_checked: Vec<(String, NotChecked)>,
}

/// The jobs directory: `--jobs DIR`, else `./jobs`, else the source tree's.
pub fn jobs_dir(given: Option<&str>) -> PathBuf {
    if let Some(d) = given {
        return PathBuf::from(d);
    }
    let here = PathBuf::from("jobs");
    if here.join("hsq").is_dir() {
        return here;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../jobs"))
}

/// Reads every `DIR/*/reproductions.toml`, in directory-name order.
pub fn load(dir: &Path) -> Result<Catalogue> {
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the jobs directory", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("reproductions.toml").is_file())
        .collect();
    subdirs.sort();
    let mut cat = Catalogue::default();
    for d in subdirs {
        let m = d.join("reproductions.toml");
        let text =
            std::fs::read_to_string(&m).with_context(|| format!("{}: cannot read", m.display()))?;
        load_manifest(&m, &text, &mut cat)?;
    }
    check(&cat)?;
    Ok(cat)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(0, |i| i + 1)
}

/// Parses one manifest into the catalogue; errors name the file and line.
pub fn load_manifest(path: &Path, text: &str, cat: &mut Catalogue) -> Result<()> {
    let raw: RawManifest = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| {
            text[..s.start.min(text.len())].lines().count().max(1)
        });
        anyhow!(
            "{}:{line}: {}",
            path.display(),
            e.message().replace('\n', " ")
        )
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    for r in raw.reproduction {
        let at = |what: &str| format!("{}:{}", path.display(), line_of(text, what));
        let job = base.join(&r.job);
        if !job.is_file() {
            bail!("{}: job: '{}' does not exist", at(&r.job), job.display());
        }
        let mut sets = Vec::new();
        for s in &r.set {
            let (f, v) = s
                .split_once('=')
                .ok_or_else(|| anyhow!("{}: set: '{s}' is not FIELD=VALUE", at(s)))?;
            if !(f.starts_with("device.") || f.starts_with("host.")) {
                bail!(
                    "{}: set: '{s}': the field must start with device. or host.",
                    at(s)
                );
            }
            sets.push((f.to_string(), v.to_string()));
        }
        let precondition = match &r.precondition {
            Some(p) => Some(
                flashpath_core::sim::Precondition::parse(p)
                    .map_err(|e| anyhow!("{}: precondition: {e}", at(p)))?,
            ),
            None => None,
        };
        for f in &r.figure {
            crate::measure::check_metric(&f.metric)
                .map_err(|e| anyhow!("{}: {e}", at(&f.metric)))?;
            if !(f.tolerance_pct > 0.0 && f.published > 0.0) {
                bail!(
                    "{}: figure {}: published and tolerance_pct must be positive",
                    at(&f.metric),
                    f.metric
                );
            }
        }
        for m in &r.predict {
            crate::measure::check_metric(m).map_err(|e| anyhow!("{}: {e}", at(m)))?;
        }
        for b in &r.bound {
            crate::measure::check_metric(&b.metric)
                .map_err(|e| anyhow!("{}: {e}", at(&b.metric)))?;
            if b.min.is_nan() || b.max.is_nan() || b.min > b.max {
                bail!(
                    "{}: bound {}: min must not exceed max",
                    at(&b.metric),
                    b.metric
                );
            }
        }
        cat.reproductions.push(Reproduction {
            name: r.name,
            job,
            device: r.device,
            host: r.host,
            driver: r.driver,
            sets,
            precondition,
            source: r.source,
            figures: r.figure,
            bounds: r.bound,
            predict: r.predict,
            manifest: path.to_path_buf(),
        });
    }
    for c in raw.comparison {
        crate::measure::check_metric(&c.metric)
            .map_err(|e| anyhow!("{}:{}: {e}", path.display(), line_of(text, &c.metric)))?;
        cat.comparisons.push(c);
    }
    for o in raw.out_of_sample {
        if o.calibrate_on.is_empty() || o.predict.is_empty() {
            bail!(
                "{}:{}: out_of_sample '{}': calibrate_on and predict each name at least one reproduction",
                path.display(),
                line_of(text, &o.name),
                o.name
            );
        }
        cat.out_of_sample.push(o);
    }
    let set = base
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    for n in raw.not_checked {
        if n.figure.trim().is_empty() || n.because.trim().is_empty() {
            bail!(
                "{}:{}: not_checked: figure and because must both say something",
                path.display(),
                line_of(text, "[[not_checked]]")
            );
        }
        cat.not_checked.push((set.clone(), n));
    }
    Ok(())
}

fn check(cat: &Catalogue) -> Result<()> {
    let mut names = std::collections::BTreeSet::new();
    for r in &cat.reproductions {
        if !names.insert(r.name.as_str()) {
            bail!(
                "{}: reproduction name '{}' is used twice",
                r.manifest.display(),
                r.name
            );
        }
    }
    for c in &cat.comparisons {
        for n in [&c.before, &c.after] {
            if !names.contains(n.as_str()) {
                bail!("comparison '{}': no reproduction named '{n}'", c.name);
            }
        }
    }
    for o in &cat.out_of_sample {
        for n in o.calibrate_on.iter().chain(&o.predict) {
            let Some(r) = cat.reproductions.iter().find(|r| &r.name == n) else {
                bail!("out_of_sample '{}': no reproduction named '{n}'", o.name);
            };
            if r.figures.is_empty() && r.bounds.is_empty() {
                bail!(
                    "out_of_sample '{}': reproduction '{n}' has no published figure to calibrate on or predict",
                    o.name
                );
            }
        }
        let first = cat
            .reproductions
            .iter()
            .find(|r| r.name == o.calibrate_on[0])
            .expect("checked");
        for n in o.calibrate_on.iter().chain(&o.predict) {
            let r = cat
                .reproductions
                .iter()
                .find(|r| &r.name == n)
                .expect("checked");
            if (r.device.as_str(), r.host.as_str()) != (first.device.as_str(), first.host.as_str())
            {
                bail!(
                    "out_of_sample '{}': '{n}' runs on {} with {}, '{}' on {} with {}: one calibration is of one device and host",
                    o.name, r.device, r.host, first.name, first.device, first.host
                );
            }
        }
    }
    Ok(())
}
