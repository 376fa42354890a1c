//! `flashpath compare`: one job run across configurations — a grid of `--vary` axes —
//! shown as a table (one row per job, direction and figure; one column per
//! configuration, with the change from the first) and as JSON. Where the job is a shipped
//! reproduction run on the configuration it was published for, the published figure and
//! the error are shown beside the simulated one.

use crate::measure::{self, JobFigures, DIRS};
use crate::repro;
use crate::run::{self, Options};
use anyhow::{anyhow, bail, Context, Result};
use std::fmt::Write as _;

const USAGE: &str = "usage: flashpath compare --vary KEY=V1,V2[,..] [--vary ...] [--json FILE|-] \
[--plot FILE.svg|png|pdf] [--device X] [--host X] [--driver X] [--set F=V] fio-args (KEY: driver, device, host, \
device.FIELD, host.FIELD)";

/// One axis of the grid.
#[derive(Clone, Debug)]
struct Axis {
    key: String,
    values: Vec<String>,
}

fn parse_axis(spec: &str) -> Result<Axis> {
    let (key, vals) = spec
        .split_once('=')
        .ok_or_else(|| anyhow!("--vary {spec}: expected KEY=V1,V2 ({USAGE})"))?;
    let ok_key = matches!(key, "driver" | "device" | "host")
        || key.starts_with("device.")
        || key.starts_with("host.");
    if !ok_key {
        bail!("--vary {spec}: '{key}' is not driver, device, host, device.FIELD or host.FIELD");
    }
    let values: Vec<String> = vals.split(',').map(str::to_string).collect();
    if values.iter().any(|v| v.is_empty()) {
        bail!("--vary {spec}: empty value");
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// A configuration of the grid: the base options with one value per axis.
#[derive(Clone, Debug)]
struct Config {
    label: String,
    opts: Options,
}

fn grid(base: &Options, axes: &[Axis]) -> Vec<Config> {
    let mut out = vec![Config {
        label: String::new(),
        opts: base.clone(),
    }];
    for a in axes {
        let mut next = Vec::new();
        for c in &out {
            for v in &a.values {
                let mut o = c.opts.clone();
                match a.key.as_str() {
                    "driver" => o.driver = Some(v.clone()),
                    "device" => o.device = Some(v.clone()),
                    "host" => o.host = Some(v.clone()),
                    f => {
                        o.sets.retain(|(k, _)| k != f);
                        o.sets.push((f.to_string(), v.clone()));
                    }
                }
                let sep = if c.label.is_empty() { "" } else { " " };
                next.push(Config {
                    label: format!("{}{sep}{}={v}", c.label, a.key),
                    opts: o,
                });
            }
        }
        out = next;
    }
    out
}

/// The figures a row of the table shows: (label, metric suffix). The spans are the
/// direction's own (`DIR_pre_us`, ...): where the time of its I/Os went.
const FIGURES: [(&str, &str); 7] = [
    ("bw MiB/s", "bw_mib"),
    ("IOPS", "iops"),
    ("clat mean us", "clat_mean_us"),
    ("clat p99 ms", "clat_p99_ms"),
    ("pre us", "pre_us"),
    ("hw us", "hw_us"),
    ("post us", "post_us"),
];

/// Published figures that apply to a configuration: those of the shipped reproductions
/// with the same job file whose system resolves to the same host, device and driver.
fn published_for(
    cat: &repro::Catalogue,
    job: Option<&std::path::Path>,
    opts: &Options,
) -> Vec<repro::Figure> {
    let Some(job) = job.and_then(|j| j.canonicalize().ok()) else {
        return Vec::new();
    };
    let Ok(mine) = run::system(opts) else {
        return Vec::new();
    };
    cat.reproductions
        .iter()
        .filter(|r| r.job.canonicalize().ok().as_ref() == Some(&job))
        .filter(|r| run::system(&r.options()).ok().as_ref() == Some(&mine))
        .flat_map(|r| r.figures.clone())
        .collect()
}

pub fn command(args: &[String]) -> Result<()> {
    let mut axes = Vec::new();
    let mut json_to: Option<String> = None;
    let mut plot_to: Option<String> = None;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let value = |i: usize| {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| anyhow!("{a} needs a value ({USAGE})"))
        };
        if a == "--vary" {
            axes.push(parse_axis(&value(i)?)?);
            i += 2;
        } else if let Some(v) = a.strip_prefix("--vary=") {
            axes.push(parse_axis(v)?);
            i += 1;
        } else if a == "--plot" {
            plot_to = Some(value(i)?);
            i += 2;
        } else if let Some(v) = a.strip_prefix("--plot=") {
            plot_to = Some(v.to_string());
            i += 1;
        } else if a == "--json" {
            json_to = Some(value(i)?);
            i += 2;
        } else if let Some(v) = a.strip_prefix("--json=") {
            json_to = Some(v.to_string());
            i += 1;
        } else {
            rest.push(a.clone());
            i += 1;
        }
    }
    if let Some(p) = &plot_to {
        crate::plot::check_target(p)?;
    }
    if axes.is_empty() {
        bail!("compare needs at least one --vary ({USAGE})");
    }
    // Two axes of one key would set it twice per configuration, the later winning.
    for (k, a) in axes.iter().enumerate() {
        if axes[..k].iter().any(|b| b.key == a.key) {
            bail!(
                "--vary {}: given twice; list its values in one --vary ({}=V1,V2)",
                a.key,
                a.key
            );
        }
    }
    let (base, fio_args) = run::split_options(&rest)?;
    if base.blktrace.is_some() || base.trace.is_some() {
        bail!("compare does not write traces (--blktrace, --trace): use flashpath fio");
    }
    if fio_args.is_empty() {
        bail!("compare needs a job file or fio arguments ({USAGE})");
    }
    let configs = grid(&base, &axes);
    // Fail early on a configuration that does not load.
    for c in &configs {
        run::system(&c.opts).with_context(|| format!("configuration {}", c.label))?;
    }
    let results = measure::parallel_shown(
        "compare",
        &configs,
        |c| c.label.clone(),
        |c| {
            measure::run_fio_quiet(&c.opts, &fio_args)
                .with_context(|| format!("configuration {}", c.label))
        },
    )?;
    // Published figures, when the job is a shipped reproduction.
    let job_file = match fio_args.as_slice() {
        [one] if std::path::Path::new(one).is_file() => Some(std::path::PathBuf::from(one)),
        _ => None,
    };
    let published: Vec<Vec<repro::Figure>> = match repro::load(&repro::jobs_dir(None)) {
        Ok(cat) => configs
            .iter()
            .map(|c| published_for(&cat, job_file.as_deref(), &c.opts))
            .collect(),
        Err(_) => vec![Vec::new(); configs.len()],
    };
    let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
    let table = render_table(&labels, &results, &published);
    let json = render_json(&labels, &results, &published);
    if let Some(p) = &plot_to {
        crate::plot::draw("compare", &json, p)?;
    }
    crate::emit_table_or_json(json_to.as_deref(), &table, &json)
}

/// A figure's value in a run's row, or None where the row has no such I/O.
fn value(rows: &JobFigures, dir: usize, metric: &str) -> Option<f64> {
    if rows.dirs[dir].ios == 0 {
        return None;
    }
    measure::metric(
        std::slice::from_ref(rows),
        &format!("{}_{metric}", DIRS[dir]),
    )
    .ok()
}

fn published_of(figs: &[repro::Figure], dir: usize, metric: &str) -> Option<f64> {
    let name = format!("{}_{metric}", DIRS[dir]);
    let alt = match metric {
        "clat_mean_us" => Some((format!("{}_clat_mean_ms", DIRS[dir]), 1000.0)),
        // A reproduction's spans are its job's (one direction in every shipped one).
        "pre_us" | "hw_us" | "post_us" => Some((metric.to_string(), 1.0)),
        _ => None,
    };
    figs.iter().find_map(|f| {
        if f.metric == name {
            Some(f.published)
        } else {
            alt.as_ref()
                .filter(|(a, _)| *a == f.metric)
                .map(|(_, k)| f.published * k)
        }
    })
}

fn render_table(
    labels: &[&str],
    results: &[Vec<JobFigures>],
    published: &[Vec<repro::Figure>],
) -> String {
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["job".to_string(), "dir".into(), "figure".into()];
    head.extend(labels.iter().map(|l| l.to_string()));
    cells.push(head);
    let first = &results[0];
    for (j, row0) in first.iter().enumerate() {
        for (d, _) in DIRS.iter().enumerate() {
            if row0.dirs[d].ios == 0 {
                continue;
            }
            for (label, m) in FIGURES {
                let mut line = vec![row0.name.clone(), DIRS[d].to_string(), label.to_string()];
                let base = value(row0, d, m);
                for (c, res) in results.iter().enumerate() {
                    let v = res.get(j).and_then(|r| value(r, d, m));
                    let mut cell = match v {
                        None => "-".to_string(),
                        Some(x) => fmt_num(x),
                    };
                    if let (Some(x), Some(b), true) = (v, base, c > 0) {
                        let _ = write!(cell, " ({:+.1}%)", (x / b - 1.0) * 100.0);
                    }
                    if let (Some(x), Some(p)) = (v, published_of(&published[c], d, m)) {
                        let _ =
                            write!(cell, " [pub {} {:+.1}%]", fmt_num(p), (x / p - 1.0) * 100.0);
                    }
                    line.push(cell);
                }
                cells.push(line);
            }
        }
    }
    // The runs' own counters (device map cache, HPB): one row each.
    let mut keys: Vec<&str> = Vec::new();
    for res in results {
        for (k, _) in res.first().map(|r| r.counters.as_slice()).unwrap_or(&[]) {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    for k in keys {
        let mut line = vec![String::new(), "run".into(), k.to_string()];
        for res in results {
            let v = res
                .first()
                .and_then(|r| r.counters.iter().find(|(n, _)| n == k));
            line.push(v.map_or("-".to_string(), |(_, x)| format!("{x:.0}")));
        }
        cells.push(line);
    }
    let cols = cells[0].len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &cells {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c < 3 {
                let _ = write!(line, "{cell:<w$}  ", w = width[c]);
            } else {
                let _ = write!(line, "{cell:>w$}  ", w = width[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn fmt_num(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn render_json(
    labels: &[&str],
    results: &[Vec<JobFigures>],
    published: &[Vec<repro::Figure>],
) -> String {
    use serde_json::{json, Map, Value};
    let configs: Vec<Value> = labels
        .iter()
        .zip(results)
        .zip(published)
        .map(|((l, rows), pubs)| {
            let jobs: Vec<Value> = rows
                .iter()
                .map(|r| {
                    let mut dirs = Map::new();
                    for (d, _) in DIRS.iter().enumerate() {
                        if r.dirs[d].ios == 0 {
                            continue;
                        }
                        let x = &r.dirs[d];
                        dirs.insert(
                            DIRS[d].into(),
                            json!({
                                "bw_bytes": x.bw_bytes,
                                "iops": x.iops,
                                "clat_mean_ns": x.clat_mean_ns,
                                "clat_p99_ns": x.clat_pct_ns(99.0),
                            }),
                        );
                    }
                    json!({"name": r.name, "dirs": dirs})
                })
                .collect();
            let figs: Vec<Value> = pubs
                .iter()
                .map(|f| {
                    let sim = measure::metric(rows, &f.metric).ok();
                    json!({
                        "metric": f.metric,
                        "published": f.published,
                        "simulated": sim,
                        "error_pct": sim.map(|s| (s / f.published - 1.0) * 100.0),
                        "tolerance_pct": f.tolerance_pct,
                    })
                })
                .collect();
            json!({"config": l, "jobs": jobs, "published": figs})
        })
        .collect();
    // Change of each figure from the first configuration.
    let mut changes = Vec::new();
    for (j, row0) in results[0].iter().enumerate() {
        for (d, _) in DIRS.iter().enumerate() {
            if row0.dirs[d].ios == 0 {
                continue;
            }
            for (_, m) in FIGURES {
                let base = value(row0, d, m);
                let per: Vec<Value> = results
                    .iter()
                    .map(
                        |res| match (res.get(j).and_then(|r| value(r, d, m)), base) {
                            (Some(x), Some(b)) => json!((x / b - 1.0) * 100.0),
                            _ => Value::Null,
                        },
                    )
                    .collect();
                changes.push(
                    json!({"job": row0.name, "dir": DIRS[d], "metric": m, "change_pct": per}),
                );
            }
        }
    }
    serde_json::to_string_pretty(&json!({"configs": configs, "changes": changes}))
        .expect("JSON of plain values")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_make_a_grid_in_order() {
        let base = Options::default();
        let axes = [
            parse_axis("driver=mmc-legacy,mmc-hsq").unwrap(),
            parse_axis("device.write_buffer.size=256KiB,1MiB").unwrap(),
        ];
        let g = grid(&base, &axes);
        let labels: Vec<_> = g.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "driver=mmc-legacy device.write_buffer.size=256KiB",
                "driver=mmc-legacy device.write_buffer.size=1MiB",
                "driver=mmc-hsq device.write_buffer.size=256KiB",
                "driver=mmc-hsq device.write_buffer.size=1MiB",
            ]
        );
        assert_eq!(g[3].opts.driver.as_deref(), Some("mmc-hsq"));
        assert_eq!(
            g[3].opts.sets,
            [("device.write_buffer.size".to_string(), "1MiB".to_string())]
        );
    }

    #[test]
    fn bad_axes_are_errors() {
        for bad in ["driver", "speed=1,2", "driver=a,,b", "device.x="] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
    }
}
