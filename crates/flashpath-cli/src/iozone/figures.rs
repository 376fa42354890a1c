//! An iozone run's figures by name, for `flashpath calibrate`: the six figures of each
//! throughput test's block, in kB/s as iozone prints them.
//!
//! | name | iozone's line |
//! |---|---|
//! | `TEST_kbs` | `Children see throughput for N TESTers` (the headline figure) |
//! | `TEST_parent_kbs` | `Parent sees throughput for N TESTers` |
//! | `TEST_min_kbs`, `TEST_max_kbs`, `TEST_avg_kbs` | `Min`/`Max`/`Avg throughput per process` |
//!
//! where TEST is `initial_write`, `rewrite`, `read`, `reread`, `random_read` or
//! `random_write` (the tests `-i 0`, `-i 1`, `-i 2` run). A command line that runs
//! several process counts (`-l 1 -u 4`, `-t 1 -t 2`) is run at the one count asked for.

use super::args::{self, Args, Test};
use super::{engine, report};
use crate::run;
use anyhow::{anyhow, bail, Result};
use flashpath_core::sim::Precondition;

/// Each test's name in a metric.
fn slug(t: Test) -> &'static str {
    match t {
        Test::InitialWrite => "initial_write",
        Test::Rewrite => "rewrite",
        Test::Read => "read",
        Test::Reread => "reread",
        Test::RandomRead => "random_read",
        Test::RandomWrite => "random_write",
    }
}

const KINDS: [&str; 5] = ["", "_parent", "_min", "_max", "_avg"];

/// The figures of one test block, named.
fn named(t: &report::TestTimes) -> [(String, f64); 5] {
    let f = report::Figures::of(t);
    let v = [
        f.total_kilos,
        f.parent,
        f.min_throughput,
        f.max_throughput,
        f.avg_throughput,
    ];
    std::array::from_fn(|i| (format!("{}{}_kbs", slug(t.test), KINDS[i]), v[i]))
}

/// Parses `argv` and checks that its run reports `metric` at the process count
/// `processes` (needed when it runs several): the parsed arguments and the count.
pub fn check(argv: &[String], metric: &str, processes: Option<u64>) -> Result<(Args, u64)> {
    let a = args::parse(argv)?;
    let count = match (processes, a.counts.as_slice()) {
        (Some(p), counts) if counts.contains(&p) => p,
        (Some(p), counts) => bail!("processes = {p}: the command line runs {counts:?} processes"),
        (None, [c]) => *c,
        (None, counts) => {
            bail!("the command line runs {counts:?} processes: say which with processes = N")
        }
    };
    let names: Vec<String> = a
        .tests()
        .into_iter()
        .flat_map(|t| KINDS.map(|k| format!("{}{k}_kbs", slug(t))))
        .collect();
    if !names.iter().any(|n| n == metric) {
        bail!(
            "metric '{metric}': this iozone command line reports {}",
            names.join(", ")
        );
    }
    Ok((a, count))
}

/// Runs iozone's tests of `argv` with `count` processes on the system `opts` chooses,
/// quietly: every figure of the run, named.
pub fn figures(opts: &run::Options, argv: &[String], count: u64) -> Result<Vec<(String, f64)>> {
    let a = args::parse(argv)?;
    if !a.counts.contains(&count) {
        return Err(anyhow!(
            "iozone: the command line does not run {count} processes"
        ));
    }
    let (host, device, driver) = run::system(opts)?;
    let sys = engine::System {
        host,
        device,
        driver,
        precondition: opts.precondition.unwrap_or(Precondition::Auto),
        progress: false,
    };
    let (tests, _) = engine::run(&a, &sys, count, false)?;
    Ok(tests.iter().flat_map(named).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn names_follow_the_tests_run() {
        let (_, n) = check(&argv("-i 0 -i 2 -t 2 -s 1m -r 4k"), "random_read_kbs", None).unwrap();
        assert_eq!(n, 2);
        check(&argv("-i 0 -t 1 -s 1m"), "rewrite_parent_kbs", None).unwrap();
        let e = check(&argv("-i 0 -+n -t 1 -s 1m"), "rewrite_kbs", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reports initial_write_kbs, initial_write_parent_kbs"),
            "{e}"
        );
        let e = check(&argv("-i 0 -l 1 -u 2 -s 1m"), "initial_write_kbs", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs [1, 2] processes"), "{e}");
        assert_eq!(
            check(&argv("-i 0 -l 1 -u 2 -s 1m"), "initial_write_kbs", Some(2))
                .unwrap()
                .1,
            2
        );
        assert!(check(&argv("-i 0 -t 1 -s 1m"), "initial_write_kbs", Some(3)).is_err());
    }
}
