//! `flashpath validate`'s last line sums the report up: the published figures within
//! tolerance, declared known failures and unexpected failures, the mean error, the
//! before/after comparisons and the predictions. Checked on a small scratch manifest
//! (`--jobs`, `--only`) whose counts are known.

mod common;
use common::flashpath;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A scratch jobs directory holding `manifest` and a small 4 KiB random-read job.
fn jobs(name: &str, manifest: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("flashpath-summary-{name}-{}", std::process::id()));
    let sub = d.join("set");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("small.fio"),
        "[small]\nrw=randread\nbs=4k\nsize=8M\ndirect=1\n",
    )
    .unwrap();
    std::fs::write(sub.join("reproductions.toml"), manifest).unwrap();
    d
}

fn reproduction(name: &str, driver: &str, body: &str) -> String {
    format!(
        "[[reproduction]]\nname = \"{name}\"\njob = \"small.fio\"\ndevice = \"emmc51-hs400-32g\"\n\
         host = \"sprd-sc9863a\"\ndriver = \"{driver}\"\nsource = \"test\"\n{body}\n"
    )
}

fn last_line(out: &str) -> &str {
    out.lines().last().unwrap_or("")
}

#[test]
fn validate_ends_with_a_summary_line() {
    // The simulated IOPS first (a prediction: no published figure).
    let probe = reproduction("sum-legacy", "mmc-legacy", "predict = [\"read_iops\"]");
    let d = jobs("probe", &probe);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap(), "--only", "sum-"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let iops: f64 = stdout(&o)
        .lines()
        .find(|l| l.starts_with("sum-legacy"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|x| x.parse().ok())
        .expect("simulated IOPS in the table");
    assert_eq!(
        last_line(&stdout(&o)),
        "validate: 0 published figures: 0 within tolerance, 0 declared known failures, \
         0 unexpected; 0 before/after comparisons: 0 in range, 0 declared known failures, \
         0 unexpected; 1 predicted values"
    );

    // One figure met (error ~0 %), one 50 % off and declared, one range met; a
    // prediction; a comparison in range; and a reproduction `--only` leaves out.
    let figures = format!(
        "  [[reproduction.figure]]\n  metric = \"read_iops\"\n  published = {iops}\n  \
         tolerance_pct = 10\n\
         [[reproduction.figure]]\n  metric = \"read_iops\"\n  published = {}\n  \
         tolerance_pct = 10\n  known_failure = \"test\"\n\
         [[reproduction.bound]]\n  metric = \"read_iops\"\n  min = 1.0\n  max = 1e9\n",
        iops * 2.0
    );
    let comparison = "[[comparison]]\nname = \"sum: hsq vs legacy\"\nbefore = \"sum-legacy\"\n\
                      after = \"sum-hsq\"\nmetric = \"read_iops\"\nmin_change_pct = -90.0\n";
    let manifest = [
        reproduction("sum-legacy", "mmc-legacy", &figures),
        reproduction("sum-hsq", "mmc-hsq", "predict = [\"read_iops\"]"),
        reproduction(
            "other",
            "mmc-legacy",
            "  [[reproduction.figure]]\n  metric = \"read_iops\"\n  published = 1.0\n  \
             tolerance_pct = 10\n",
        ),
        comparison.to_string(),
    ]
    .concat();
    let d = jobs("run", &manifest);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap(), "--only", "sum-"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        last_line(&stdout(&o)),
        "validate: 3 published figures: 2 within tolerance, 1 declared known failures, \
         0 unexpected (mean |error| 0.0 % over the 1 single values within tolerance, 25.0 % \
         over all 2); 1 before/after comparisons: 1 in range, 0 declared known failures, \
         0 unexpected; 1 predicted values"
    );

    // Without `--only`, `other` (published 1 IOPS, no marker) fails the run, and the
    // summary counts it as unexpected.
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let last = last_line(&out);
    assert!(
        last.starts_with(
            "validate: 4 published figures: 2 within tolerance, 1 declared known failures, \
             1 unexpected (mean |error| 0.0 % over the 1 single values within tolerance, "
        ),
        "{last}"
    );
}

/// An `[[out_of_sample]]` set: the estimates are calibrated on the before run's figure
/// alone (published 25 % above what the shipped preset gives), and the after run (hsq
/// on, its figure likewise 25 % above) is predicted with the calibrated values: the
/// calibration carries over, so the prediction's error is smaller than the in-sample
/// one. It is reported, not enforced; `--in-sample` leaves it out.
#[test]
fn out_of_sample_sets_are_calibrated_on_before_and_predict_after() {
    let probe = format!(
        "{}{}",
        reproduction("oos-legacy", "mmc-legacy", "predict = [\"read_iops\"]"),
        reproduction("oos-hsq", "mmc-hsq-v6", "predict = [\"read_iops\"]")
    );
    let d = jobs("oos-probe", &probe);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    let out = stdout(&o);
    let iops = |name: &str| -> f64 {
        out.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{name}: {out}"))
    };
    let (before, after) = (iops("oos-legacy "), iops("oos-hsq "));
    let figure = |v: f64| {
        format!("  [[reproduction.figure]]\n  metric = \"read_iops\"\n  published = {}\n  tolerance_pct = 5\n  known_failure = \"test\"\n", v * 1.25)
    };
    let manifest = format!(
        "{}{}[[out_of_sample]]\nname = \"oos\"\ncalibrate_on = [\"oos-legacy\"]\npredict = [\"oos-hsq\"]\nwhy = \"test\"\n",
        reproduction("oos-legacy", "mmc-legacy", &figure(before)),
        reproduction("oos-hsq", "mmc-hsq-v6", &figure(after)),
    );
    let d = jobs("oos", &manifest);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("set oos: calibrated on 1 figures of oos-legacy; chi2 "),
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| {
            l.trim_start().starts_with("oos-hsq") && l.contains("read_iops") && l.starts_with("  ")
        })
        .unwrap_or_else(|| panic!("no out-of-sample row:\n{out}"));
    let pct: Vec<f64> = row
        .split_whitespace()
        .filter_map(|w| w.strip_suffix('%'))
        .filter_map(|w| w.parse().ok())
        .collect();
    // predicted error, tolerance, in-sample error
    let (err, in_sample) = (pct[0], pct[2]);
    assert!((in_sample + 20.0).abs() < 1.0, "{row}");
    assert!(
        err.abs() < in_sample.abs() / 2.0,
        "the calibration carries over: {row}"
    );
    let last = last_line(&out);
    assert!(
        last.starts_with("validate: out of sample: 1 after figures predicted from before-only calibrations of 1 sets"),
        "{last}"
    );
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap(), "--in-sample"]);
    assert!(!stdout(&o).contains("out of sample"), "{}", stdout(&o));

    // A set that names a reproduction the manifests do not have.
    let bad = format!(
        "{}[[out_of_sample]]\nname = \"x\"\ncalibrate_on = [\"oos-legacy\"]\npredict = [\"nope\"]\nwhy = \"t\"\n",
        reproduction("oos-legacy", "mmc-legacy", &figure(before))
    );
    let d = jobs("oos-bad", &bad);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("out_of_sample 'x': no reproduction named 'nope'"),
        "{err}"
    );
}

/// A manifest's `[[not_checked]]` figures are listed with their reasons (not with
/// `--only`, which selects reproductions), and one without a reason is refused.
#[test]
fn figures_not_checked_are_listed_with_their_reason() {
    // A range no preset was fitted to: a prediction, said so beside it and in the count.
    let body = format!(
        "{}\n[[not_checked]]\nfigure = \"the board's clock\"\nbecause = \"a preset input\"\n",
        reproduction(
            "nc-legacy",
            "mmc-legacy",
            "[[reproduction.bound]]\nmetric = \"read_iops\"\nmin = 1.0\nmax = 1e9\nprediction = true\n\
             [[reproduction.figure]]\nmetric = \"read_iops\"\npublished = 1000.0\ntolerance_pct = 1e9\nprediction = true"
        )
    );
    let d = jobs("not-checked", &body);
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap(), "--in-sample"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    assert!(
        out.contains("not checked: 1 published figures or sentences, because:\n  set: the board's clock: a preset input\n"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("nc-legacy") && l.ends_with("predicted, ok")),
        "{out}"
    );
    assert!(
        last_line(&out).starts_with(
            "validate: 2 published figures (2 of them predictions: no preset value was fitted to them): 2 within tolerance"
        ),
        "{out}"
    );
    // Their mean error stands apart from the in-sample one (here there is none).
    assert!(
        last_line(&out).contains("(mean |error| ")
            && last_line(&out).contains(" % over the 1 predicted single values within tolerance, ")
            && !last_line(&out).contains("in-sample"),
        "{out}"
    );
    let o = flashpath(&[
        "validate",
        "--jobs",
        d.to_str().unwrap(),
        "--in-sample",
        "--only",
        "nc-",
    ]);
    assert!(!stdout(&o).contains("not checked"), "{}", stdout(&o));
    let d = jobs(
        "not-checked-bad",
        &body.replace("because = \"a preset input\"", "because = \" \""),
    );
    let o = flashpath(&["validate", "--jobs", d.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("reproductions.toml:")
            && err.contains("not_checked: figure and because must both say something"),
        "{err}"
    );
}
