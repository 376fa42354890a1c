//! A flashbench run's figures by name, for `flashpath calibrate`: read from the lines
//! flashbench prints (so a figure is what a user copies from the real tool's output,
//! at flashbench's precision), for one test per command line.
//!
//! | test | name | flashbench's line |
//! |---|---|---|
//! | `-a` | `align_pre_us@N`, `align_on_us@N`, `align_post_us@N`, `align_diff_us@N` | `align N  pre …  on …  post …  diff …` |
//! | `-A` | `write_align_pre_us@N` … | `write align N  pre …` |
//! | `-O` | `open_au_mbs@LEN` | `LEN  RATE` |
//! | `-f` | `find_fat_auK_mbs@LEN` (K from 0) | `LEN  RATE0  RATE1 …` |
//!
//! Times are in µs, rates in flashbench's decimal MB/s (its `M/s`). `N` is the boundary
//! as printed, `LEN` a length in bytes or as flashbench prints it (`4MiB`, `512KiB`).

use super::{args, bench, sim_target};
use crate::run;
use anyhow::{anyhow, bail, Result};
use flashpath_core::sim::Precondition;

/// The one test a command line runs, for its figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    Align,
    WriteAlign,
    OpenAu,
    FindFat,
}

fn parse_args(argv: &[String]) -> Result<args::Args> {
    args::parse(argv).map_err(|r| {
        let err = String::from_utf8_lossy(&r.stderr);
        let first = err.lines().next().unwrap_or("").trim();
        if first.is_empty() {
            anyhow!(
                "flashbench refuses these arguments (it exits with status {})",
                r.status
            )
        } else {
            anyhow!("{first}")
        }
    })
}

fn test_of(a: &args::Args) -> Result<Test> {
    let runs = [
        (a.align, Test::Align, "-a"),
        (a.write_align, Test::WriteAlign, "-A"),
        (a.open_au, Test::OpenAu, "-O"),
        (a.fat, Test::FindFat, "-f"),
    ];
    let others = [(a.scatter, "-s"), (a.interval, "-i"), (a.program, "-p")];
    if let Some((_, o)) = others.iter().find(|(on, _)| *on) {
        bail!(
            "flashbench {o}: its figures are not calibrated against (one of -a, -A, -O or -f per measurement)"
        );
    }
    let on: Vec<_> = runs.iter().filter(|(on, _, _)| *on).collect();
    match on.as_slice() {
        [(_, t, _)] => Ok(*t),
        [] => bail!("flashbench: the command line runs no test (give one of -a, -A, -O or -f)"),
        many => bail!(
            "flashbench: the command line runs {}: give one test per measurement",
            many.iter()
                .map(|(_, _, o)| *o)
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    }
}

/// A length as flashbench prints it (`4MiB`, `512KiB`, `1.5MiB`, `512B`, `1GiB`) or a
/// plain byte count, in bytes.
fn length(s: &str) -> Option<u64> {
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "B"),
    };
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && x > 0.0).then(|| (x * scale).round() as u64)
}

/// A time as flashbench prints it (`999ns`, `53.3µs`, `1.08ms`, `1.235s`), in µs; a
/// negative one is cut to 7 characters without its unit (`-105724`: ns).
fn micros(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else if s.starts_with('-') {
        (s.trim_end_matches('n'), 1e-3)
    } else {
        return None;
    };
    num.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * scale)
}

/// A rate as flashbench prints it (`123B/s`, `8.2K/s`, `57.6M/s`, `1.234G/s`), in
/// decimal MB/s.
fn mbs(s: &str) -> Option<f64> {
    let n = s.strip_suffix("/s")?;
    let (num, scale) = match n.chars().last()? {
        'B' => (&n[..n.len() - 1], 1e-6),
        'K' => (&n[..n.len() - 1], 1e-3),
        'M' => (&n[..n.len() - 1], 1.0),
        'G' => (&n[..n.len() - 1], 1e3),
        _ => return None,
    };
    num.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * scale)
}

/// The figures of one test's output lines, named; lines of another shape (the VM's
/// messages, `-v`'s trace) are passed over.
fn parse_output(test: Test, text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        match test {
            Test::Align | Test::WriteAlign => {
                let (prefix, rest) = if test == Test::Align {
                    ("align", line.strip_prefix("align "))
                } else {
                    ("write_align", line.strip_prefix("write align "))
                };
                let Some(rest) = rest else { continue };
                let mut fields = rest.split('\t');
                let Some(n) = fields.next().and_then(|n| n.parse::<u64>().ok()) else {
                    continue;
                };
                for f in fields {
                    if let Some((col, v)) = f.split_once(' ') {
                        if let Some(us) = micros(v.trim()) {
                            out.push((format!("{prefix}_{col}_us@{n}"), us));
                        }
                    }
                }
            }
            Test::OpenAu | Test::FindFat => {
                let mut words = line.split_whitespace();
                let Some(len) = words.next().and_then(length) else {
                    continue;
                };
                let rates: Vec<f64> = words.map_while(mbs).collect();
                if test == Test::OpenAu {
                    if let [r] = rates[..] {
                        out.push((format!("open_au_mbs@{len}"), r));
                    }
                } else {
                    for (k, r) in rates.iter().enumerate() {
                        out.push((format!("find_fat_au{k}_mbs@{len}"), *r));
                    }
                }
            }
        }
    }
    out
}

/// Checks that `argv` runs one test whose output has figures named like `metric`:
/// the metric as [`figures`] names it (its length in bytes).
pub fn check(argv: &[String], metric: &str) -> Result<String> {
    let a = parse_args(argv)?;
    let test = test_of(&a)?;
    let bad = || {
        let form = match test {
            Test::Align => "align_pre_us@N (pre, on, post, diff; N the boundary as printed)",
            Test::WriteAlign => "write_align_pre_us@N (pre, on, post, diff)",
            Test::OpenAu => "open_au_mbs@LEN (LEN as printed, 4MiB, or in bytes)",
            Test::FindFat => "find_fat_au0_mbs@LEN (au0, au1, ...; LEN as printed or in bytes)",
        };
        anyhow!("metric '{metric}': this flashbench command line reports {form}")
    };
    let (name, at) = metric.split_once('@').ok_or_else(bad)?;
    let ok = match test {
        Test::Align | Test::WriteAlign => {
            let stem = if test == Test::Align {
                "align_"
            } else {
                "write_align_"
            };
            let col = name.strip_prefix(stem).and_then(|c| c.strip_suffix("_us"));
            matches!(col, Some("pre" | "on" | "post" | "diff")) && at.parse::<u64>().is_ok()
        }
        Test::OpenAu => name == "open_au_mbs",
        Test::FindFat => name
            .strip_prefix("find_fat_au")
            .and_then(|k| k.strip_suffix("_mbs"))
            .and_then(|k| k.parse::<i64>().ok())
            .is_some_and(|k| k < i64::from(a.fat_nr)),
    };
    if !ok {
        return Err(bad());
    }
    match test {
        Test::Align | Test::WriteAlign => Ok(metric.to_string()),
        Test::OpenAu | Test::FindFat => {
            let len = length(at).ok_or_else(bad)?;
            Ok(format!("{name}@{len}"))
        }
    }
}

/// Runs the flashbench test of `argv` on the system `opts` chooses, quietly: the
/// figures its output prints, named.
pub fn figures(opts: &run::Options, argv: &[String]) -> Result<Vec<(String, f64)>> {
    let a = parse_args(argv)?;
    let test = test_of(&a)?;
    let (host, device, driver) = run::system(opts)?;
    let mut target = sim_target::SimTarget {
        host,
        device,
        driver,
        precondition: opts.precondition.unwrap_or(Precondition::Sequential),
        traced: false,
        trace: None,
        progress: false,
    };
    let o = bench::run(&a, &mut target).map_err(|e| anyhow!("flashbench: {e}"))?;
    if o.status != 0 {
        bail!(
            "flashbench: the run ended with status {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(parse_output(test, &String::from_utf8_lossy(&o.stdout)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn printed_units() {
        assert_eq!(length("4MiB"), Some(4 << 20));
        assert_eq!(length("1.5MiB"), Some(3 << 19));
        assert_eq!(length("512B"), Some(512));
        assert_eq!(length("262144"), Some(262_144));
        assert_eq!(length("4M"), None);
        let near = |x: Option<f64>, want: f64| {
            let x = x.unwrap_or(f64::NAN);
            assert!((x / want - 1.0).abs() < 1e-12, "{x} against {want}");
        };
        near(micros("999ns"), 0.999);
        near(micros("53.3µs"), 53.3);
        near(micros("1.08ms"), 1080.0);
        near(micros("1.235s"), 1_235_000.0);
        near(micros("-105724"), -105.724);
        assert_eq!(micros("1.08"), None);
        near(mbs("57.6M/s"), 57.6);
        near(mbs("8.2K/s"), 0.0082);
        near(mbs("123B/s"), 0.000123);
        near(mbs("1.234G/s"), 1234.0);
        assert_eq!(mbs("-nanM/s"), None);
    }

    #[test]
    fn lines_become_named_figures() {
        let a = "align 4194304\tpre 741µs\ton 1.08ms\tpost 788µs\tdiff 317µs\n";
        assert_eq!(
            parse_output(Test::Align, a),
            [
                ("align_pre_us@4194304".to_string(), 741.0),
                ("align_on_us@4194304".to_string(), 1080.0),
                ("align_post_us@4194304".to_string(), 788.0),
                ("align_diff_us@4194304".to_string(), 317.0),
            ]
        );
        let o = "call ...\n4MiB    57.6M/s \n2MiB    8.79M/s \n";
        assert_eq!(
            parse_output(Test::OpenAu, o),
            [
                ("open_au_mbs@4194304".to_string(), 57.6),
                ("open_au_mbs@2097152".to_string(), 8.79),
            ]
        );
        let f = "4MiB    5.1M/s   6.2M/s  \n";
        assert_eq!(
            parse_output(Test::FindFat, f),
            [
                ("find_fat_au0_mbs@4194304".to_string(), 5.1),
                ("find_fat_au1_mbs@4194304".to_string(), 6.2),
            ]
        );
    }

    #[test]
    fn one_test_per_measurement() {
        let x = "/dev/mmcblk0";
        assert_eq!(
            check(&argv(&format!("-O {x}")), "open_au_mbs@4MiB").unwrap(),
            "open_au_mbs@4194304"
        );
        check(&argv(&format!("-a {x}")), "align_diff_us@4194304").unwrap();
        check(
            &argv(&format!("-f --fat-nr=2 {x}")),
            "find_fat_au1_mbs@1MiB",
        )
        .unwrap();
        assert!(check(
            &argv(&format!("-f --fat-nr=2 {x}")),
            "find_fat_au2_mbs@1MiB"
        )
        .is_err());
        let e = check(&argv(&format!("-a -O {x}")), "open_au_mbs@4MiB")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs -a and -O"), "{e}");
        let e = check(&argv(&format!("-s {x}")), "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("-s: its figures are not calibrated"), "{e}");
        let e = check(&argv(&format!("-a {x}")), "open_au_mbs@4MiB")
            .unwrap_err()
            .to_string();
        assert!(e.contains("reports align_pre_us@N"), "{e}");
        assert!(check(&argv("-a"), "align_on_us@1").is_err());
    }
}
