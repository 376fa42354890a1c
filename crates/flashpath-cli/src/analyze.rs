//! `flashpath analyze`: where the time of a run went, and what limits its throughput —
//! the white paper's pipeline model (seed-results §3) applied to the run's own spans.
//!
//! For each job row of the report (one with `group_reporting`), from the mean spans of
//! its I/Os and the mean I/O size:
//! - theoretical: size / (pre + hw + post) — one request at a time;
//! - theoretical max: size / (pre + post) — the same with an infinitely fast device;
//! - pipelined: size / max(pre, hw, post) — several cores overlapping the software of
//!   different requests, the largest span sets the pace;
//!
//! and beside them the throughput simulated with the storage made instant
//! (`--set device.ideal=true`: no device or bus time), so the computed software limit
//! can be checked against a run. Every figure is read back from the JSON reports of the
//! two runs, so it is what `flashpath fio --output-format=json` prints.
//!
//! Trims (BLKDISCARD) are requests like the others: the spans of a job cover every
//! request it made, discards included (their hw: the erase sequence or UNMAP on the
//! device), so the size and bandwidth the limits use count the trims too, with the
//! bytes each discards, as fio's trim bandwidth counts them. A job with trims says so
//! and splits its simulated bandwidth by direction: for `trimwrite` the job's limits
//! describe the mix of trims and writes, not the writes alone.
//!
//! A job with I/O in more than one direction (`randrw`, `trimwrite`, ...) also gets the
//! three limits of each direction from that direction's own spans and mean size (the
//! report's `flashpath.read`, `.write`, `.trim`), beside the direction's simulated
//! bandwidth in the run and in the instant-storage run.

use crate::measure::{self, JobFigures};
use crate::run::{self, Options};
use anyhow::{anyhow, Result};

const MIB: f64 = 1048576.0;

/// The paper's three limits of one job row, bytes/s.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    pub size: f64,
    pub pre_ns: f64,
    pub hw_ns: f64,
    pub post_ns: f64,
    pub theoretical: f64,
    pub theoretical_max: f64,
    pub pipelined: f64,
}

/// The limits of a job row, if it moved data and reported its spans.
pub fn limits(j: &JobFigures) -> Option<Limits> {
    let size = j.io_size()?;
    limits_of(size, j.span("pre")?, j.span("hw")?, j.span("post")?)
}

/// The limits of one direction of a job row whose report splits its spans by direction.
pub fn dir_limits(j: &JobFigures, d: usize) -> Option<Limits> {
    let x = &j.dirs[d];
    if x.ios == 0 {
        return None;
    }
    let size = x.io_bytes as f64 / x.ios as f64;
    let span = |s: &str| j.dir_span(d, s);
    limits_of(size, span("pre")?, span("hw")?, span("post")?)
}

fn limits_of(size: f64, pre: f64, hw: f64, post: f64) -> Option<Limits> {
    let per_s = |ns: f64| {
        if ns > 0.0 {
            size / (ns / 1e9)
        } else {
            f64::INFINITY
        }
    };
    Some(Limits {
        size,
        pre_ns: pre,
        hw_ns: hw,
        post_ns: post,
        theoretical: per_s(pre + hw + post),
        theoretical_max: per_s(pre + post),
        pipelined: per_s(pre.max(hw).max(post)),
    })
}

pub fn command(args: &[String]) -> Result<()> {
    let (opts, fio_args) = run::split_options(args)?;
    if opts.sets.iter().any(|(f, _)| f == "device.ideal") {
        return Err(anyhow!(
            "analyze runs the instant-storage what-if itself; drop --set device.ideal"
        ));
    }
    let mut ideal = opts.clone();
    ideal.sets.push(("device.ideal".into(), "true".into()));
    let configs: Vec<Options> = vec![opts, ideal];
    let label = |o: &Options| match o.sets.iter().any(|(f, _)| f == "device.ideal") {
        true => "instant storage".to_string(),
        false => "as configured".to_string(),
    };
    let mut runs = measure::parallel_shown("analyze", &configs, label, |o| {
        measure::run_fio_quiet(o, &fio_args)
    })?;
    let what_if = runs.pop().expect("two runs");
    let base = runs.pop().expect("two runs");
    print!("{}", render(&base, &what_if));
    Ok(())
}

fn mib(bytes_per_s: f64) -> String {
    if bytes_per_s.is_finite() {
        format!("{:.1} MiB/s", bytes_per_s / MIB)
    } else {
        "unbounded".into()
    }
}

/// The text report: one block per job row.
pub fn render(base: &[JobFigures], what_if: &[JobFigures]) -> String {
    let mut s = String::new();
    for (j, w) in base.iter().zip(what_if) {
        s += &format!("job {}:\n", j.name);
        let Some(l) = limits(j) else {
            s += "  no I/O measured\n";
            continue;
        };
        let total = l.pre_ns + l.hw_ns + l.post_ns;
        let share = |ns: f64| if total > 0.0 { ns / total * 100.0 } else { 0.0 };
        s += &format!(
            "  I/O size {:.0} KiB; mean spans (usec): pre {:.1} ({:.1} %), hw {:.1} ({:.1} %), post {:.1} ({:.1} %); software share {:.1} %\n",
            l.size / 1024.0,
            l.pre_ns / 1e3,
            share(l.pre_ns),
            l.hw_ns / 1e3,
            share(l.hw_ns),
            l.post_ns / 1e3,
            share(l.post_ns),
            share(l.pre_ns + l.post_ns),
        );
        let trims = &j.dirs[2];
        if trims.ios > 0 {
            let by_dir: Vec<String> = measure::DIRS
                .iter()
                .zip(&j.dirs)
                .filter(|(_, d)| d.ios > 0)
                .map(|(n, d)| format!("{n} {:.1}", d.bw_bytes / MIB))
                .collect();
            s += &format!(
                "  trims: {} of {} I/Os are discards (no data moved); I/O size and bandwidth count the bytes trimmed, as fio does, and the job's spans cover every request, discards included (the lines per direction below separate them)\n",
                trims.ios,
                j.dirs.iter().map(|d| d.ios).sum::<u64>(),
            );
            s += &format!(
                "  simulated                          {} ({} MiB/s)\n",
                mib(j.bw_bytes()),
                by_dir.join(", ")
            );
        } else {
            s += &format!(
                "  simulated                          {}\n",
                mib(j.bw_bytes())
            );
        }
        // Little's law: I/Os in flight on average = IOPS × mean life of an I/O.
        let in_flight = j.bw_bytes() / l.size * total / 1e9;
        if in_flight > 1.05 {
            s += &format!(
                "  {in_flight:.1} I/Os in flight on average (Little's law): the spans include waits for the hardware, so the formulas below describe one stream's path\n"
            );
        }
        s += &format!(
            "  theoretical     size/(pre+hw+post) {}   one request at a time\n",
            mib(l.theoretical)
        );
        s += &format!(
            "  theoretical max size/(pre+post)    {}   infinitely fast device; simulated with instant storage: {}\n",
            mib(l.theoretical_max),
            mib(w.bw_bytes())
        );
        s += &format!(
            "  pipelined       size/max(span)     {}   several cores overlap the software; the largest span sets the pace\n",
            mib(l.pipelined)
        );
        if j.spans_split() {
            for (d, name) in measure::DIRS.iter().enumerate() {
                if let Some(l) = dir_limits(j, d) {
                    s += &dir_block(name, &l, j.dirs[d].bw_bytes, w.dirs[d].bw_bytes);
                }
            }
        }
    }
    s
}

/// The same figures for one direction of a mixed job, from that direction's spans: its
/// I/Os share the system with the other direction's, so its simulated speed is its part
/// of the mix, not what it would reach alone.
fn dir_block(name: &str, l: &Limits, simulated: f64, instant: f64) -> String {
    let total = l.pre_ns + l.hw_ns + l.post_ns;
    let share = if total > 0.0 {
        (l.pre_ns + l.post_ns) / total * 100.0
    } else {
        0.0
    };
    format!(
        "  {name}: I/O size {:.0} KiB; mean spans (usec): pre {:.1}, hw {:.1}, post {:.1}; software share {share:.1} %\n    simulated {} (its part of the mix); theoretical {}; theoretical max {} (instant storage: {}); pipelined {}\n",
        l.size / 1024.0,
        l.pre_ns / 1e3,
        l.hw_ns / 1e3,
        l.post_ns / 1e3,
        mib(simulated),
        mib(l.theoretical),
        mib(l.theoretical_max),
        mib(instant),
        mib(l.pipelined),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::DirFigures;

    fn job(bytes: u64, ios: u64, bw: f64, spans: &[(&str, f64)]) -> JobFigures {
        JobFigures {
            name: "t".into(),
            dirs: [
                DirFigures {
                    ios,
                    io_bytes: bytes,
                    bw_bytes: bw,
                    ..DirFigures::default()
                },
                DirFigures::default(),
                DirFigures::default(),
            ],
            spans: spans.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            dir_spans: Default::default(),
            counters: Vec::new(),
            runtime_ms: 0.0,
        }
    }

    #[test]
    fn limits_are_the_papers_formulas() {
        // Jetson TX1, direct 128 KiB sequential write (seed-results §3, Table 2):
        // pre 141, hw 1360, post 53 us -> theoretical 81, theoretical max 644 MB/s.
        let j = job(
            128 * 1024 * 10,
            10,
            71.0 * MIB,
            &[("pre", 141e3), ("hw", 1360e3), ("post", 53e3)],
        );
        let l = limits(&j).unwrap();
        assert_eq!(l.size, 131072.0);
        assert_eq!(l.theoretical, 131072.0 / (1554e3 / 1e9));
        assert_eq!(l.theoretical_max, 131072.0 / (194e3 / 1e9));
        assert_eq!(l.pipelined, 131072.0 / (1360e3 / 1e9));
        assert_eq!((l.theoretical / MIB).round(), 80.0);
        assert_eq!((l.theoretical_max / MIB).round(), 644.0);
        let text = render(std::slice::from_ref(&j), &[job(0, 0, 600.0 * MIB, &[])]);
        assert!(
            text.contains("theoretical     size/(pre+hw+post) 80.4 MiB/s"),
            "{text}"
        );
        assert!(text.contains("size/(pre+post)    644.3 MiB/s"), "{text}");
        assert!(text.contains("instant storage: 600.0 MiB/s"), "{text}");
        assert!(
            text.contains("simulated                          71.0 MiB/s"),
            "{text}"
        );
    }

    /// A trimwrite row: the limits use the mean size and the bandwidth of trims and
    /// writes together (the spans cover both), and the text says so.
    #[test]
    fn trims_count_in_size_and_bandwidth_and_are_named() {
        let mut j = job(
            64 * 1024 * 16,
            16,
            80.0 * MIB,
            &[("pre", 40e3), ("hw", 290e3), ("post", 66e3)],
        );
        j.dirs[2] = DirFigures {
            ios: 16,
            io_bytes: 16 * 128 * 1024,
            bw_bytes: 120.0 * MIB,
            ..DirFigures::default()
        };
        let l = limits(&j).unwrap();
        assert_eq!(l.size, 96.0 * 1024.0);
        assert_eq!(l.theoretical, 96.0 * 1024.0 / (396e3 / 1e9));
        let text = render(std::slice::from_ref(&j), std::slice::from_ref(&j));
        assert!(
            text.contains("trims: 16 of 32 I/Os are discards (no data moved)"),
            "{text}"
        );
        assert!(
            text.contains(
                "simulated                          200.0 MiB/s (read 80.0, trim 120.0 MiB/s)"
            ),
            "{text}"
        );
        assert!(text.contains("I/O size 96 KiB"), "{text}");
        // Without trims, no such line.
        j.dirs[2] = DirFigures::default();
        let text = render(std::slice::from_ref(&j), std::slice::from_ref(&j));
        assert!(!text.contains("trims"), "{text}");
        assert!(
            text.contains("simulated                          80.0 MiB/s\n"),
            "{text}"
        );
    }

    #[test]
    fn a_row_without_io_or_spans_has_no_limits() {
        assert!(limits(&job(0, 0, 0.0, &[("pre", 1.0), ("hw", 1.0), ("post", 1.0)])).is_none());
        assert!(limits(&job(4096, 1, 1.0, &[])).is_none());
    }
}
