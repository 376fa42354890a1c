//! `flashpath analyze`: where the time of a run went, and what limits its throughput —
//! the pipeline model of Micron's white paper on e.MMC command queuing, which splits
//! each request into request-pre (software before the hardware), hardware and
//! request-post (software after it; docs/published-results.md §3), applied to the run's
//! own spans and busy times.
//!
//! For each job row of the report (one with `group_reporting`), from the mean spans of
//! its I/Os and the mean I/O size, the paper's three limits:
//! - theoretical: size / (pre + hw + post) — one request at a time;
//! - theoretical max: size / (pre + post) — the same with an infinitely fast device;
//! - pipelined: size / max(pre, hw, post) — several cores overlapping the software of
//!   different requests, the largest span sets the pace.
//!
//! They describe one request at a time: with more than one I/O in flight (Little's law:
//! IOPS × mean latency), a request's pre and post include its waits (for a tag, a core,
//! the requests ahead of it on the hardware), and the formulas fall below the
//! throughput the run reaches. So analyze prints them only at depth 1 and says so
//! otherwise. At every depth it prints the same limits from busy time instead
//! (`jobs[i].flashpath.occupancy`: each core's CPU time and the time some request was
//! on the hardware over the row's measured window, `sim/occupancy.rs` in the core): a
//! server is busy at most all of the window, so size / (its busy time per I/O) bounds
//! the throughput — the busiest core's is the software limit (the paper's theoretical
//! max, the device taking no time), the hardware's the hardware limit, and the smaller
//! of the two the pipelined limit, an upper bound at that depth. At depth 1 with the
//! software on one core they are size / (pre + post) and size / hw.
//!
//! Beside them, the throughput simulated with the storage made instant
//! (`--set device.ideal=true`: no device or bus time), so the software limit can be
//! checked against a run. Every figure is read back from the JSON report of the runs,
//! so it is what `flashpath fio --output-format=json` prints, and analyze can read such
//! a report saved earlier (`--input FILE`): the same analysis without the instant-storage
//! run. A report of real fio has no spans or busy times (they are flashpath's own):
//! analyze then prints what fio's figures give (size, bandwidth, mean latencies, I/Os in
//! flight) and says that the limits need flashpath's report.
//!
//! Trims (BLKDISCARD) are requests like the others: the spans of a job cover every
//! request it made, discards included (their hw: the erase sequence or UNMAP on the
//! device), so the size and bandwidth the limits use count the trims too, with the
//! bytes each discards, as fio's trim bandwidth counts them. A job with trims says so
//! and splits its simulated bandwidth by direction: for `trimwrite` the job's limits
//! describe the mix of trims and writes, not the writes alone.
//!
//! A job with I/O in more than one direction (`randrw`, `trimwrite`, ...) also gets the
//! mean spans of each direction (the report's `flashpath.read`, `.write`, `.trim`) and,
//! at depth 1, the three limits from them, beside the direction's simulated bandwidth in
//! the run and in the instant-storage run. Busy times are not split by direction.

use crate::measure::{self, JobFigures};
use crate::run::{self, Options};
use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};

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

/// The limits from busy time over a row's measured window (valid at any depth).
#[derive(Clone, Debug, PartialEq)]
pub struct BusyLimits {
    pub window_ns: f64,
    /// CPU time per I/O of each core, ns.
    pub core_per_io_ns: Vec<f64>,
    /// The core with the most.
    pub busiest_core: usize,
    /// Time some request was on the hardware, per I/O, ns.
    pub hw_per_io_ns: f64,
    /// The same over the window's length.
    pub hw_fraction: f64,
    /// size / the busiest core's CPU time per I/O, bytes/s.
    pub software: f64,
    /// size / hardware busy time per I/O, bytes/s.
    pub hardware: f64,
    /// The smaller of the two.
    pub pipelined: f64,
    /// All cores' CPU time over it and the hardware's together.
    pub software_share: f64,
}

/// The busy-time limits of a job row, if it moved data and reported its busy times.
pub fn busy_limits(j: &JobFigures) -> Option<BusyLimits> {
    let o = j.occupancy.as_ref()?;
    let size = j.io_size()?;
    let ios: u64 = j.dirs.iter().map(|d| d.ios).sum();
    let per_io = |ns: f64| ns / ios as f64;
    let core_per_io_ns: Vec<f64> = o.core_busy_ns.iter().map(|&b| per_io(b)).collect();
    let (busiest_core, &top) = core_per_io_ns
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    let hw_per_io_ns = per_io(o.hw_busy_ns);
    let cpu: f64 = core_per_io_ns.iter().sum();
    let rate = |ns: f64| {
        if ns > 0.0 {
            size / (ns / 1e9)
        } else {
            f64::INFINITY
        }
    };
    let (software, hardware) = (rate(top), rate(hw_per_io_ns));
    Some(BusyLimits {
        window_ns: o.window_ns,
        core_per_io_ns,
        busiest_core,
        hw_per_io_ns,
        hw_fraction: if o.window_ns > 0.0 {
            o.hw_busy_ns / o.window_ns
        } else {
            0.0
        },
        software,
        hardware,
        pipelined: software.min(hardware),
        software_share: if cpu + hw_per_io_ns > 0.0 {
            cpu / (cpu + hw_per_io_ns)
        } else {
            0.0
        },
    })
}

/// I/Os in flight on average (Little's law): per direction, IOPS × mean total latency;
/// from the spans (pre + hw + post is the total latency) where the report has no
/// latencies.
pub fn in_flight(j: &JobFigures) -> f64 {
    let by_lat: f64 = j.dirs.iter().map(|d| d.iops * d.lat_mean_ns / 1e9).sum();
    if by_lat > 0.0 {
        return by_lat;
    }
    match limits(j) {
        Some(l) => j.bw_bytes() / l.size * (l.pre_ns + l.hw_ns + l.post_ns) / 1e9,
        None => 0.0,
    }
}

/// Above this many I/Os in flight on average, the spans include waits.
const ONE_AT_A_TIME: f64 = 1.05;

/// What analyze reads: a run of its own (with the instant-storage what-if), a saved
/// flashpath report, or a saved report of real fio.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    Run,
    FlashpathReport,
    FioReport,
}

struct Args {
    json: bool,
    input: Option<String>,
    rest: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut a = Args {
        json: false,
        input: None,
        rest: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let x = &args[i];
        let mut value = |key: &str| run::option_value(args, &mut i, key);
        if let Some(f) = value("--output-format")? {
            a.json = match f.as_str() {
                "normal" => false,
                "json" => true,
                _ => {
                    return Err(anyhow!(
                        "analyze prints --output-format=normal or json, not '{f}'"
                    ))
                }
            };
        } else if let Some(f) = value("--input")? {
            a.input = Some(f);
        } else {
            a.rest.push(x.clone());
        }
        i += 1;
    }
    // A lone saved report given as a job file.
    if a.input.is_none() {
        if let [f] = a.rest.as_slice() {
            if f.ends_with(".json") && std::path::Path::new(f).is_file() {
                a.input = a.rest.pop();
            }
        }
    }
    if a.input.is_some() {
        if let Some(x) = a.rest.first() {
            return Err(anyhow!(
                "--input analyzes a saved report without running: drop '{x}'"
            ));
        }
    }
    Ok(a)
}

pub fn command(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h") {
        return crate::emit(&crate::commands::help(
            crate::commands::find("analyze").expect("analyze is a command"),
        ));
    }
    let a = parse_args(args)?;
    let (base, what_if, source) = match &a.input {
        Some(f) => {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {f}"))?;
            let v: Value =
                serde_json::from_str(&text).map_err(|e| anyhow!("{f}: not a JSON report ({e})"))?;
            let rows = measure::figures_of(&v).map_err(|e| anyhow!("{f}: {e}"))?;
            let ours = v["jobs"]
                .as_array()
                .is_some_and(|j| j.iter().any(|j| j["flashpath"].is_object()));
            let source = if ours {
                Source::FlashpathReport
            } else {
                Source::FioReport
            };
            (rows, None, source)
        }
        None => {
            let (opts, fio_args) = run::split_options(&a.rest)?;
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
            (base, Some(what_if), Source::Run)
        }
    };
    if a.json {
        let v = render_json(&base, what_if.as_deref(), source);
        crate::emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&v).context("writing JSON")?
        ))
    } else if source == Source::FioReport {
        crate::emit(&render_fio(&base))
    } else {
        crate::emit(&render(&base, what_if.as_deref()))
    }
}

fn mib(bytes_per_s: f64) -> String {
    if bytes_per_s.is_finite() {
        format!("{:.1} MiB/s", bytes_per_s / MIB)
    } else {
        "unbounded".into()
    }
}

/// The text report, one block per job row; `what_if` (the instant-storage run) is
/// `None` for a saved report.
fn render(base: &[JobFigures], what_if: Option<&[JobFigures]>) -> String {
    let mut s = String::new();
    if what_if.is_none() {
        s += "from a saved report: no instant-storage run\n";
    }
    if base.len() > 1 {
        s += "busy times count all the work of the run in each row's window (one row: group_reporting)\n";
    }
    for (i, j) in base.iter().enumerate() {
        let w = what_if.and_then(|w| w.get(i));
        let instant = |f: &dyn Fn(&JobFigures) -> f64| match w {
            Some(w) => mib(f(w)),
            None => "not run".to_string(),
        };
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
        let depth = in_flight(j);
        let one = depth <= ONE_AT_A_TIME;
        if one {
            s += &format!(
                "  theoretical     size/(pre+hw+post) {}   one request at a time\n",
                mib(l.theoretical)
            );
            s += &format!(
                "  theoretical max size/(pre+post)    {}   infinitely fast device; simulated with instant storage: {}\n",
                mib(l.theoretical_max),
                instant(&|w| w.bw_bytes())
            );
            s += &format!(
                "  pipelined       size/max(span)     {}   several cores overlap the software; the largest span sets the pace\n",
                mib(l.pipelined)
            );
        } else {
            s += &format!(
                "  {depth:.1} I/Os in flight on average (Little's law): pre and post include waits (for a tag, a core, the hardware), so the paper's span formulas (one request at a time) do not apply; the limits from busy time below do\n"
            );
        }
        match busy_limits(j) {
            Some(b) => s += &busy_block(&b, one, &instant(&|w| w.bw_bytes())),
            None => s += "  no busy times in the report: no limits at this depth\n",
        }
        if j.spans_split() {
            for (d, name) in measure::DIRS.iter().enumerate() {
                if let Some(l) = dir_limits(j, d) {
                    let inst = instant(&|w| w.dirs[d].bw_bytes);
                    s += &dir_block(name, &l, j.dirs[d].bw_bytes, &inst, one);
                }
            }
        }
    }
    s
}

/// The limits from busy time, valid at any depth.
fn busy_block(b: &BusyLimits, one: bool, instant: &str) -> String {
    let cpu: f64 = b.core_per_io_ns.iter().sum();
    let mut s = format!(
        "  busy per I/O over the {:.1} ms window (usec): busiest core (cpu{}) {:.1}, all cores {:.1}, hardware {:.1} (on {:.1} % of the window); software share of busy time {:.1} %\n",
        b.window_ns / 1e6,
        b.busiest_core,
        b.core_per_io_ns[b.busiest_core] / 1e3,
        cpu / 1e3,
        b.hw_per_io_ns / 1e3,
        b.hw_fraction * 100.0,
        b.software_share * 100.0,
    );
    s += &format!(
        "  software limit  size/busiest core  {}   the busiest core never idle, the device taking no time{}\n",
        mib(b.software),
        if one {
            String::new()
        } else {
            format!("; simulated with instant storage: {instant}")
        }
    );
    s += &format!(
        "  hardware limit  size/hardware busy {}   some request always on the hardware\n",
        mib(b.hardware)
    );
    s += &format!(
        "  pipelined limit min of the two     {}   upper bound at this depth: the busier stage never idle\n",
        mib(b.pipelined)
    );
    s
}

/// The same figures for one direction of a mixed job, from that direction's spans: its
/// I/Os share the system with the other direction's, so its simulated speed is its part
/// of the mix, not what it would reach alone.
fn dir_block(name: &str, l: &Limits, simulated: f64, instant: &str, one: bool) -> String {
    let total = l.pre_ns + l.hw_ns + l.post_ns;
    let share = if total > 0.0 {
        (l.pre_ns + l.post_ns) / total * 100.0
    } else {
        0.0
    };
    let mut s = format!(
        "  {name}: I/O size {:.0} KiB; mean spans (usec): pre {:.1}, hw {:.1}, post {:.1}; software share {share:.1} %\n",
        l.size / 1024.0,
        l.pre_ns / 1e3,
        l.hw_ns / 1e3,
        l.post_ns / 1e3,
    );
    if one {
        s += &format!(
            "    simulated {} (its part of the mix); theoretical {}; theoretical max {} (instant storage: {}); pipelined {}\n",
            mib(simulated),
            mib(l.theoretical),
            mib(l.theoretical_max),
            instant,
            mib(l.pipelined),
        );
    } else {
        s += &format!(
            "    simulated {} (its part of the mix; instant storage: {instant})\n",
            mib(simulated)
        );
    }
    s
}

/// A report of real fio: what its figures give, without spans or limits.
fn render_fio(base: &[JobFigures]) -> String {
    let mut s = String::from(
        "a report of fio, not flashpath: the spans (pre, hw, post) and busy times are flashpath's own and not in fio's JSON, so no limits; fio's figures:\n",
    );
    for j in base {
        s += &format!("job {}:\n", j.name);
        let Some(size) = j.io_size() else {
            s += "  no I/O measured\n";
            continue;
        };
        s += &format!(
            "  I/O size {:.0} KiB; bandwidth {}\n",
            size / 1024.0,
            mib(j.bw_bytes())
        );
        for (name, d) in measure::DIRS.iter().zip(&j.dirs) {
            if d.ios > 0 {
                s += &format!(
                    "  {name}: {} I/Os, {} ({:.0} IOPS); mean latency (usec): slat {:.1}, clat {:.1}, lat {:.1}\n",
                    d.ios,
                    mib(d.bw_bytes),
                    d.iops,
                    d.slat_mean_ns / 1e3,
                    d.clat_mean_ns / 1e3,
                    d.lat_mean_ns / 1e3,
                );
            }
        }
        s += &format!(
            "  {:.1} I/Os in flight on average (Little's law: IOPS x mean latency)\n",
            in_flight(j)
        );
    }
    s
}

/// A rate in JSON: bytes/s, `null` when unbounded.
fn rate_json(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn limits_json(l: &Limits) -> Value {
    json!({
        "theoretical_bytes_per_s": rate_json(l.theoretical),
        "theoretical_max_bytes_per_s": rate_json(l.theoretical_max),
        "pipelined_bytes_per_s": rate_json(l.pipelined),
    })
}

/// The analysis as JSON: per job row its spans, depth, the span limits (with whether
/// they apply: depth 1), the busy-time limits and the instant-storage bandwidth.
fn render_json(base: &[JobFigures], what_if: Option<&[JobFigures]>, source: Source) -> Value {
    let jobs: Vec<Value> = base
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let w = what_if.and_then(|w| w.get(i));
            let depth = in_flight(j);
            let one = depth <= ONE_AT_A_TIME;
            let dirs: serde_json::Map<String, Value> = measure::DIRS
                .iter()
                .zip(&j.dirs)
                .enumerate()
                .filter(|(_, (_, d))| d.ios > 0)
                .map(|(k, (name, d))| {
                    let l = if j.spans_split() {
                        dir_limits(j, k)
                    } else {
                        None
                    };
                    let v = json!({
                        "ios": d.ios,
                        "io_bytes": d.io_bytes,
                        "bw_bytes": d.bw_bytes,
                        "iops": d.iops,
                        "slat_mean_ns": d.slat_mean_ns,
                        "clat_mean_ns": d.clat_mean_ns,
                        "lat_mean_ns": d.lat_mean_ns,
                        "instant_storage_bw_bytes": w.map(|w| w.dirs[k].bw_bytes),
                        "spans_ns": l.as_ref().map(|l| json!({"pre": l.pre_ns, "hw": l.hw_ns, "post": l.post_ns})),
                        "span_limits": l.as_ref().filter(|_| one).map(limits_json),
                    });
                    (name.to_string(), v)
                })
                .collect();
            let l = limits(j);
            let b = busy_limits(j);
            json!({
                "jobname": j.name,
                "io_size_bytes": j.io_size(),
                "bw_bytes": j.bw_bytes(),
                "in_flight": depth,
                "spans_ns": l.as_ref().map(|l| json!({"pre": l.pre_ns, "hw": l.hw_ns, "post": l.post_ns})),
                "software_share": l.as_ref().map(|l| {
                    let t = l.pre_ns + l.hw_ns + l.post_ns;
                    if t > 0.0 { (l.pre_ns + l.post_ns) / t } else { 0.0 }
                }),
                "span_limits_apply": l.is_some() && one,
                "span_limits": l.as_ref().filter(|_| one).map(limits_json),
                "busy": b.as_ref().map(|b| json!({
                    "window_ns": b.window_ns,
                    "core_per_io_ns": b.core_per_io_ns,
                    "busiest_core": b.busiest_core,
                    "hw_per_io_ns": b.hw_per_io_ns,
                    "software_share": b.software_share,
                })),
                "busy_limits": b.as_ref().map(|b| json!({
                    "software_bytes_per_s": rate_json(b.software),
                    "hardware_bytes_per_s": rate_json(b.hardware),
                    "pipelined_bytes_per_s": rate_json(b.pipelined),
                })),
                "instant_storage_bw_bytes": w.map(|w| w.bw_bytes()),
                "directions": dirs,
            })
        })
        .collect();
    let source = match source {
        Source::Run => "run",
        Source::FlashpathReport => "flashpath report",
        Source::FioReport => "fio report",
    };
    let mut v = json!({ "source": source, "jobs": jobs });
    if source == "fio report" {
        v["note"] =
            json!("spans and busy times are flashpath's own and not in fio's JSON: no limits");
    }
    v
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
            occupancy: None,
            lat_ms: Vec::new(),
        }
    }

    #[test]
    fn limits_are_the_papers_formulas() {
        // Jetson TX1, direct 128 KiB sequential write (the white paper's Table 2,
        // docs/published-results.md §3):
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
        let text = render(
            std::slice::from_ref(&j),
            Some(&[job(0, 0, 600.0 * MIB, &[])]),
        );
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
        let text = render(std::slice::from_ref(&j), Some(std::slice::from_ref(&j)));
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
        let text = render(std::slice::from_ref(&j), Some(std::slice::from_ref(&j)));
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
