//! `flashpath fio`: fio arguments in, a simulated run, fio's output formats out.

use crate::fiologs;
pub(crate) use crate::trace_out::TraceOutputs;
use crate::trace_out::TraceStreamer;
use crate::{jobmap, presets, report};
use anyhow::{anyhow, bail, Context, Result};
use flashpath_core::blktrace::BlkDevice;
use flashpath_core::engine::SimTime;
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{Phase, Precondition, Sim, SimConfig};
use flashpath_core::stats::RunResult;
use flashpath_core::trace::Trace;
use flashpath_fio::parse::{parse_command_line, parse_command_line_with_stdin, Env, Invocation};
use flashpath_fio::report::model::Ddir;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub(crate) mod progress;

/// flashpath's own options, taken out of the fio arguments.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub device: Option<String>,
    pub host: Option<String>,
    pub driver: Option<String>,
    /// (`device.` or `host.` field, value)
    pub sets: Vec<(String, String)>,
    /// `--blktrace DIR`: write blktrace per-CPU files there.
    pub blktrace: Option<String>,
    /// `--trace FILE`: write a Chrome trace-event JSON timeline there.
    pub trace: Option<String>,
    /// `--precondition auto|random|sequential|off`: the data layout the jobs find
    /// (`Auto` when not given).
    pub precondition: Option<Precondition>,
    /// `--costs-above-block zero`: the host's costs above the block layer taken out
    /// (`HostCosts::zero_above_block`); direct I/O only.
    pub zero_above_block: bool,
}

/// The value of option `key` if `args[*i]` is it: `KEY=V`, or `KEY V` (then `*i`
/// moves onto the value); `None` if `args[*i]` is another argument.
pub fn option_value(args: &[String], i: &mut usize, key: &str) -> Result<Option<String>> {
    let a = &args[*i];
    if a == key {
        *i += 1;
        return args
            .get(*i)
            .cloned()
            .map(Some)
            .ok_or_else(|| anyhow!("{key} needs a value"));
    }
    Ok(a.strip_prefix(&format!("{key}=")).map(str::to_string))
}

/// Splits flashpath's options (`--device X` or `--device=X`, likewise --host, --driver,
/// --set) from the fio arguments, which keep their order.
pub fn split_options(args: &[String]) -> Result<(Options, Vec<String>)> {
    let mut o = Options::default();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let mut take = |key: &str| option_value(args, &mut i, key);
        if let Some(v) = take("--device")? {
            o.device = Some(v);
        } else if let Some(v) = take("--host")? {
            o.host = Some(v);
        } else if let Some(v) = take("--driver")? {
            o.driver = Some(v);
        } else if let Some(v) = take("--blktrace")? {
            o.blktrace = Some(v);
        } else if let Some(v) = take("--trace")? {
            o.trace = Some(v);
        } else if let Some(v) = take("--precondition")? {
            o.precondition =
                Some(Precondition::parse(&v).map_err(|e| anyhow!("--precondition: {e}"))?);
        } else if let Some(v) = take("--costs-above-block")? {
            o.zero_above_block = match v.as_str() {
                "zero" => true,
                "simulated" => false,
                _ => bail!("--costs-above-block {v}: expected zero or simulated"),
            };
        } else if let Some(v) = take("--set")? {
            let (f, val) = v
                .split_once('=')
                .ok_or_else(|| anyhow!("--set {v}: expected FIELD=VALUE"))?;
            if !(f.starts_with("device.") || f.starts_with("host.")) {
                bail!("--set {v}: the field must start with 'device.' or 'host.'");
            }
            o.sets.push((f.to_string(), val.to_string()));
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    Ok((o, rest))
}

/// Builds the simulated system for the options given. Without `--host`, the device's
/// preset picks it (its `hosts`, first); without `--driver`, the host's default driver
/// where it fits the device, else the first of the device's `drivers` that fits. A
/// driver that does not fit is refused naming the ones that do.
pub fn system(o: &Options) -> Result<System> {
    Ok(resolve(o)?.0)
}

thread_local! {
    /// What [`system_announced`] has to say, printed by [`drive`] as the simulation
    /// starts (or by [`announce`]): a run refused before then (a job the system cannot
    /// run) prints its one error line alone. Per thread: runs in several threads (an
    /// embedded caller's) each say their own.
    static ANNOUNCE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// [`system`], saying on standard error (as the run starts) which host and driver the
/// device's preset picked where the user named a device but not both of them.
pub fn system_announced(o: &Options) -> Result<System> {
    let (sys, note) = resolve(o)?;
    ANNOUNCE.with(|a| *a.borrow_mut() = note);
    Ok(sys)
}

/// Says now what [`system_announced`] had to say, if it has not been said: for a
/// command whose simulations run in other threads.
pub fn announce() {
    if let Some(n) = ANNOUNCE.with(|a| a.borrow_mut().take()) {
        crate::embed::note(&format!("flashpath: {n}"));
    }
}

pub type System = (
    flashpath_core::host::HostConfig,
    flashpath_core::device::DeviceConfig,
    DriverKind,
);

fn resolve(o: &Options) -> Result<(System, Option<String>)> {
    // `device.ideal` is not a preset field: it replaces the storage with an instant one.
    let mut ideal = false;
    let mut sets = Vec::new();
    for (f, v) in &o.sets {
        if f != "device.ideal" {
            sets.push((f.clone(), v.clone()));
            continue;
        }
        ideal = match v.as_str() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => bail!("--set device.ideal={v}: expected true or false"),
        };
    }
    let pick = |prefix: &str| -> Vec<(String, String)> {
        sets.iter()
            .filter(|(f, _)| f.starts_with(prefix))
            .cloned()
            .collect()
    };
    let mut device = presets::load_device(
        o.device.as_deref().unwrap_or(presets::DEFAULT_DEVICE),
        &pick("device."),
    )?;
    let host_name = match (&o.host, device.hosts.first()) {
        (Some(h), _) => h.clone(),
        (None, Some(h)) => h.clone(),
        (None, None) => presets::DEFAULT_HOST.to_string(),
    };
    let mut host = match &o.host {
        Some(_) => presets::load_host(&host_name, &pick("host."))?,
        None => presets::load_host(&host_name, &pick("host."))
            .with_context(|| format!("device '{}' goes with host '{host_name}'", device.name))?,
    };
    let fits = |d: DriverKind| flashpath_core::sim::fits(&host, &device, d).is_ok();
    let driver = match &o.driver {
        Some(d) => DriverKind::parse(d).map_err(|e| anyhow!("--driver: {e}"))?,
        None if fits(host.default_driver) => host.default_driver,
        None => device
            .drivers
            .iter()
            .filter_map(|d| DriverKind::parse(d).ok())
            .chain(
                flashpath_core::host::DRIVER_NAMES
                    .iter()
                    .filter_map(|d| DriverKind::parse(d).ok()),
            )
            .find(|d| fits(*d))
            .unwrap_or(host.default_driver),
    };
    if let Err(e) = flashpath_core::sim::fits(&host, &device, driver) {
        let on_host: Vec<&str> = flashpath_core::host::DRIVER_NAMES
            .iter()
            .copied()
            .filter(|d| DriverKind::parse(d).is_ok_and(fits))
            .collect();
        let hint = if on_host.is_empty() {
            format!("no driver runs it on host '{}'", host.name)
        } else {
            format!(
                "on host '{}' it runs with {}",
                host.name,
                on_host.join(", ")
            )
        };
        let goes = if device.hosts.is_empty() {
            String::new()
        } else {
            format!(
                "; device '{}' goes with host {}",
                device.name,
                device.hosts.join(", ")
            )
        };
        bail!("{e} ({hint}{goes})");
    }
    let note = (o.device.is_some() && (o.host.is_none() || o.driver.is_none())).then(|| {
        format!(
            "device '{}' runs on host '{}' with driver '{}'{} (--host and --driver choose others)",
            device.name,
            host.name,
            driver.name(),
            if o.host.is_none() && o.driver.is_none() {
                ", the pairing its preset names"
            } else {
                ""
            }
        )
    });
    if ideal {
        flashpath_core::sim::instant_hardware(&mut host, &mut device);
    }
    if o.zero_above_block {
        host.costs.zero_above_block();
    }
    Ok(((host, device, driver), note))
}

/// Parses fio's command line; a job file named `-` is read from standard input, as fio
/// reads it (once a process, whatever the runs that parse it; at most
/// [`flashpath_fio::parse::JOB_FILE_LIMIT`] bytes).
pub fn parse_fio(args: &[String], env: &Env) -> Result<Invocation> {
    if !args.iter().any(|a| a == "-") {
        return parse_command_line(args, env).map_err(|e| anyhow!("{e}"));
    }
    static STDIN: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let text =
        STDIN.get_or_init(
            || match flashpath_fio::parse::read_bounded(std::io::stdin().lock()) {
                Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
                Err(Some(e)) => Err(format!("job file '-' (standard input): {e}")),
                Err(None) => Err(format!(
                    "job file '-' (standard input): {}",
                    flashpath_fio::parse::too_large()
                )),
            },
        );
    let text = text.as_ref().map_err(|e| anyhow!("{e}"))?;
    parse_command_line_with_stdin(args, env, text).map_err(|e| anyhow!("{e}"))
}

/// What a report records of how the run's system was made (`--device`, `--host` as
/// given when they are files, else the presets' names).
pub fn configuration(
    o: &Options,
    host: &str,
    device: &str,
    driver: DriverKind,
) -> flashpath_fio::report::RunConfiguration {
    let spec = |given: &Option<String>, name: &str| match given {
        Some(g) if g.ends_with(".toml") || g.contains('/') => g.clone(),
        _ => name.to_string(),
    };
    let pre = o.precondition.unwrap_or(Precondition::Auto);
    flashpath_fio::report::RunConfiguration {
        version: env!("CARGO_PKG_VERSION").to_string(),
        device: spec(&o.device, device),
        host: spec(&o.host, host),
        driver: driver.name().to_string(),
        precondition: pre.name().to_string(),
        layout: pre.layout(driver).name().to_string(),
        sets: o.sets.clone(),
        zero_above_block: o.zero_above_block,
    }
}

/// Runs the simulation, with a progress line on standard error for long runs when it
/// is a terminal.
pub fn simulate(cfg: SimConfig, progress: bool) -> Result<RunResult> {
    Ok(simulate_traced(cfg, progress, false)?.0)
}

/// [`simulate`], with the event trace recorded (and kept whole) if `traced`: for
/// short runs (iozone, flashbench); `flashpath fio` streams it ([`drive`]).
pub fn simulate_traced(
    cfg: SimConfig,
    progress: bool,
    traced: bool,
) -> Result<(RunResult, Option<Trace>)> {
    simulate_observed(cfg, progress, traced, Vec::new())
}

/// [`simulate_traced`], with per-I/O observers (closed at the end of the run).
pub fn simulate_observed(
    cfg: SimConfig,
    progress: bool,
    traced: bool,
    observers: Vec<Box<dyn flashpath_core::sim::IoObserver>>,
) -> Result<(RunResult, Option<Trace>)> {
    let mut sim = Sim::new(cfg).map_err(|e| anyhow!("{e}"))?;
    for o in observers {
        sim.add_observer(o);
    }
    if traced {
        sim.enable_trace();
    }
    drive(&mut sim, progress, None, None)?;
    if crate::signals::caught().is_some() {
        // Only an embedded caller's stop ends these runs early (the commands that make
        // them install no signal handler): a run cut short has no figures.
        bail!("interrupted");
    }
    sim.close_observers().map_err(|e| anyhow!("{e}"))?;
    let trace = sim.take_trace();
    Ok((sim.finish(), trace))
}

/// fio's `--status-interval`: every `every_ns` of simulated time from the jobs' start,
/// `report` is called with the simulation and the time of the report.
pub(crate) struct Status<'a> {
    pub every_ns: u64,
    pub report: &'a mut dyn FnMut(&Sim, SimTime) -> Result<()>,
}

/// Steps `sim` to its end, with a progress line on standard error for long runs when
/// it is a terminal (`progress`), handing what the trace recorded to `stream` between
/// steps and making the `status` reports.
pub(crate) fn drive(
    sim: &mut Sim,
    progress: bool,
    mut stream: Option<&mut TraceStreamer>,
    mut status: Option<Status>,
) -> Result<()> {
    announce();
    let show = progress && progress::enabled();
    // An embedded caller's display (crate::embed), every 100 ms of wall time.
    let embedded_progress = crate::embed::wants_progress();
    let mut told = Instant::now();
    let tell = |sim: &Sim| {
        let p = sim.progress_detail();
        crate::embed::progress(progress::phase_name(p.phase), progress::summarize(&p).0);
    };
    let forced = progress::forced();
    let wall = Instant::now();
    let mut last = wall;
    let mut phase = (Phase::Precondition, wall);
    // 50 ms of simulated time between checks; a status report's time is a check's.
    let step = status
        .as_ref()
        .map_or(50_000_000, |s| s.every_ns.min(50_000_000));
    let mut limit = step;
    let mut next_status: Option<SimTime> = None;
    let mut shown = false;
    loop {
        if crate::signals::caught().is_some() {
            // SIGINT or SIGTERM: the caller reports the run so far.
            break;
        }
        let at = next_status.map_or(limit, |n| n.min(limit));
        if !sim.run_until(at) {
            break;
        }
        if at == limit {
            limit = limit.saturating_add(step);
            // Nothing happens before the next event: go straight to its slice.
            if let Some(next) = sim.next_event_at().filter(|&n| n > limit) {
                limit = limit.saturating_add((next - limit).div_ceil(step).saturating_mul(step));
            }
        }
        if let Some(s) = stream.as_deref_mut() {
            if let Some(chunk) = sim.drain_trace() {
                s.feed(chunk)?;
            }
        }
        if let Some(st) = status.as_mut() {
            if next_status.is_none() {
                next_status = sim.jobs_started_at().map(|t| t + st.every_ns);
            }
            if let Some(n) = next_status.filter(|&n| n <= at) {
                // Until the last job ends (the simulation may go on with the device's
                // own work after it).
                if sim.progress_detail().jobs.iter().all(|j| j.finished) {
                    status = None;
                    next_status = None;
                } else {
                    if shown {
                        // The report (on the same terminal, maybe) replaces the line.
                        eprint!("\r\x1b[K");
                    }
                    (st.report)(sim, at)?;
                    next_status = Some(n + st.every_ns);
                }
            }
        }
        if embedded_progress && told.elapsed() > Duration::from_millis(100) {
            told = Instant::now();
            tell(sim);
        }
        if show {
            let p = sim.progress_detail();
            let changed = p.phase != phase.0;
            if changed {
                phase = (p.phase, Instant::now());
            }
            let due = if forced {
                !shown || changed || last.elapsed() > Duration::from_millis(500)
            } else {
                last.elapsed() > Duration::from_millis(500)
                    && wall.elapsed() > Duration::from_secs(2)
            };
            if due {
                last = Instant::now();
                let l = progress::line(&progress::prefix(), &p, phase.1.elapsed().as_secs_f64());
                eprint!("\r{l}\x1b[K");
                shown = true;
            }
        }
    }
    if embedded_progress {
        tell(sim);
    }
    if shown {
        let l = progress::line(
            &progress::prefix(),
            &sim.progress_detail(),
            phase.1.elapsed().as_secs_f64(),
        );
        eprintln!("\r{l}\x1b[K");
    }
    if let Some(e) = crate::replay::take_stream_error() {
        bail!("{e}");
    }
    Ok(())
}

/// fio's own switches that print something and exit: --version (fio's version string,
/// which scripts parse), --help (flashpath's fio usage), --showcmd (each job file as
/// one command line, as fio prints it). --cmdhelp and --enghelp are refused: the option
/// names are fio 3.33's (`fio --cmdhelp`), and flashpath names any it does not model.
fn info_request(req: &str, inv: &flashpath_fio::parse::Invocation) -> Result<()> {
    match req.split('=').next().unwrap_or("") {
        "version" => crate::emit("fio-3.33\n")?,
        "help" => crate::emit(&crate::commands::help(
            crate::commands::find("fio").expect("fio is a command"),
        ))?,
        "showcmd" => {
            if !inv.job_files.is_empty() {
                crate::emit(&format!("{}\n", showcmd(inv)))?;
            }
        }
        other => bail!(
            "--{other} is not provided by flashpath: its options are fio 3.33's (see `fio --{other}`), and a job that sets one flashpath does not model is refused naming it"
        ),
    }
    Ok(())
}

/// fio's --showcmd for job files (init.c, dump_cmdline): `fio`, then each option as
/// `--name=value` in file order, a job section as `--name=SECTION`, [global]'s header
/// left out; a trailing space, as fio prints it.
fn showcmd(inv: &flashpath_fio::parse::Invocation) -> String {
    let mut out = String::from("fio ");
    let opt = |s: &flashpath_fio::parse::SetOption| match &s.value {
        Some(v) => format!("--{}={} ", s.name, v),
        None => format!("--{} ", s.name),
    };
    for g in &inv.global_options {
        out.push_str(&opt(g));
    }
    let mut seen = std::collections::HashSet::new();
    for j in &inv.jobs {
        if !seen.insert(j.section.clone()) {
            continue; // numjobs clones of the same section
        }
        out.push_str(&format!("--name={} ", j.section));
        for s in j
            .set_options
            .iter()
            .filter(|s| !s.inherited && s.name != "name")
        {
            out.push_str(&opt(s));
        }
    }
    out
}

/// fio's other switches: accepted where they cannot change a simulated run (the ETA
/// display, fio's memory pool, its aux file path, the job count limit), implemented
/// (--warnings-fatal), or refused naming them.
fn check_switches(inv: &flashpath_fio::parse::Invocation) -> Result<()> {
    for (sw, val, index) in &inv.other_switches {
        match sw.as_str() {
            "eta" | "eta-interval" | "eta-newline" | "alloc-size" | "aux-path" | "max-jobs" => {}
            // Periodic reports in simulated time (`status_interval`).
            "status-interval" => {}
            // fio's aggregate bandwidth logs (fiologs.rs), written after the run.
            "bandwidth-log" => {}
            "warnings-fatal" => {
                if let Some(w) = inv.warnings.first() {
                    bail!("{} (--warnings-fatal)", crate::one_line(w));
                }
            }
            other => {
                let what = match other {
                    "latency-log" | "inflate-log" => "fio's logs",
                    "client" | "server" | "daemonize" | "remote-config" | "trigger"
                    | "trigger-file" | "trigger-timeout" | "trigger-remote" => {
                        "fio's client/server and triggers"
                    }
                    "idle-prof" => "CPU idleness profiling",
                    "debug" => "fio's debug output",
                    "profile" => "fio's built-in profiles",
                    "append-terse" => "--append-terse",
                    _ => "fio's self-tests and blktrace merging",
                };
                let v = val.as_deref().map(|v| format!("={v}")).unwrap_or_default();
                bail!("argument {index}: --{other}{v} is not modelled by flashpath ({what})");
            }
        }
    }
    Ok(())
}

/// fio's `--status-interval=T` (init.c, option 'L'): a time, in seconds when it has
/// no unit, kept in whole ms; under 1 ms fio refuses it. The last one given counts.
/// flashpath makes its reports every T of simulated time from the jobs' start.
fn status_interval(inv: &flashpath_fio::parse::Invocation) -> Result<Option<u64>> {
    let Some((_, val, _)) = inv
        .other_switches
        .iter()
        .rev()
        .find(|(sw, _, _)| sw == "status-interval")
    else {
        return Ok(None);
    };
    let v = val.as_deref().unwrap_or("");
    let us = flashpath_fio::parse::value::str_to_decimal(v, false, 1024, true)
        .ok_or_else(|| anyhow!("fio: failed parsing time {v} (--status-interval)"))?;
    if us < 1000 {
        bail!("fio: status interval too small (--status-interval={v})");
    }
    Ok(Some(us / 1000 * 1_000_000))
}

/// Each job's write_iolog, if it writes one (fio's init.c: a job with read_iolog does
/// not: "read iolog overrides write_iolog"). Several jobs writing one file would
/// interleave their lines into a log nothing can replay: refused.
fn iolog_targets(
    inv: &flashpath_fio::parse::Invocation,
) -> Result<Vec<Option<crate::iolog_writer::IologTarget>>> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut v = Vec::new();
    for j in &inv.jobs {
        let Some(p) = j.options.write_iolog.as_deref() else {
            v.push(None);
            continue;
        };
        if j.options.read_iolog.is_some() {
            crate::embed::note(&format!(
                "flashpath fio: warning: fio: read iolog overrides write_iolog (job '{}')",
                j.name
            ));
            v.push(None);
            continue;
        }
        if let Some((_, other)) = seen.iter().find(|(q, _)| *q == p) {
            bail!(
                "write_iolog={p}: jobs '{other}' and '{}' both write it (fio appends both into one file, interleaved, which no replay reads); give each job its own",
                j.name
            );
        }
        seen.push((p, &j.name));
        let file = match j.options.filename.as_deref() {
            Some(f) => f.split(':').next().unwrap_or(f).to_string(),
            None => format!("{}.{}.0", j.name, j.clone_index),
        };
        v.push(Some(crate::iolog_writer::IologTarget {
            path: PathBuf::from(p),
            file,
        }));
    }
    Ok(v)
}

/// A fio command line taken as far as the simulation, with nothing run, written or
/// printed: what `--parse-only` checks and what the fuzz targets drive.
pub struct SetUp {
    /// The plan, its `jobs` moved into `cfg`.
    pub plan: jobmap::Plan,
    pub cfg: SimConfig,
    pub host_name: String,
    pub device_name: String,
    pub host_cores: u32,
}

/// The simulated system `opts` names and the jobs of `inv` planned on it.
pub fn set_up(opts: &Options, inv: &Invocation) -> Result<SetUp> {
    let (mut host, device, driver) = system_announced(opts)?;
    let (host_name, device_name) = (host.name.clone(), device.name.clone());
    let host_cores = host.cores;
    let mut plan = jobmap::plan(inv, &device, jobmap::journal(&host))?;
    if opts.zero_above_block {
        if let Some(j) = plan.jobs.iter().find(|j| !j.direct) {
            bail!(
                "--costs-above-block zero: job '{}' is buffered (direct=0); the page cache \
                 is above the block layer and is not taken out: give it direct=1",
                j.name
            );
        }
    }
    plan.apply(&mut host)?;
    // The simulator takes the jobs; the plan keeps what the report needs.
    let jobs = std::mem::take(&mut plan.jobs);
    Ok(SetUp {
        plan,
        cfg: SimConfig {
            host,
            device,
            driver,
            jobs,
            precondition: opts.precondition.unwrap_or(Precondition::Auto),
        },
        host_name,
        device_name,
        host_cores,
    })
}

pub fn fio_command(args: &[String]) -> Result<()> {
    // From the first moment, not only once the simulation runs: a signal that arrives
    // while the jobs are parsed and the simulation is set up (which can take seconds on
    // a loaded machine) is kept, and the run then stops at its first step and reports.
    crate::signals::install()?;
    let (opts, fio_args) = split_options(args)?;
    let env = Env::from_process();
    let inv = parse_fio(&fio_args, &env)?;
    if let Some(req) = &inv.info_request {
        return info_request(req, &inv);
    }
    check_switches(&inv)?;
    // What fio prints and goes on after (an option value out of range, ...).
    for w in &inv.warnings {
        crate::embed::note(&format!("flashpath fio: warning: {}", crate::one_line(w)));
    }
    let SetUp {
        plan,
        cfg,
        host_name,
        device_name,
        host_cores,
    } = set_up(&opts, &inv)?;
    let driver = cfg.driver;
    if inv.parse_only {
        // What the simulator would refuse (driver, host and device checks) is refused
        // here too: the simulation is set up, not run.
        Sim::new(cfg).map_err(|e| anyhow!("{e}"))?;
        fiologs::check(&inv)?;
        return Ok(());
    }
    let verifying = cfg.jobs.iter().any(|j| j.verify.is_some());
    let mut sim = Sim::new(cfg).map_err(|e| anyhow!("{e}"))?;
    if let Some(o) = crate::verifymap::FailureLog::new(&inv, &plan.metas, verifying) {
        sim.add_observer(Box::new(o));
    }
    let logs = match fiologs::open(&inv)? {
        Some((obs, handle)) => {
            sim.add_observer(Box::new(obs));
            Some(handle)
        }
        None => None,
    };
    let outputs = TraceOutputs::open(&opts)?;
    if let Some(w) = crate::iolog_writer::IologWriter::open(iolog_targets(&inv)?)? {
        sim.add_observer(Box::new(w));
    }
    let mut stream = outputs.start(&mut sim, driver, host_cores)?;
    let normal = inv
        .formats
        .contains(&flashpath_fio::parse::OutputFormat::Normal);
    let mut out: Box<dyn Write> = match &inv.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .with_context(|| format!("{}: cannot create output file", p.display()))?,
        )),
        None => crate::embed::stdout(),
    };
    let conf = configuration(&opts, &host_name, &device_name, driver);
    if normal {
        // fio prints the jobs' lines and `Starting N process(es)` before they run.
        let mut head = report::build_header(&plan.metas);
        head.configuration = Some(conf.clone());
        out.write_all(flashpath_fio::report::starting_string(&head).as_bytes())
            .and_then(|()| out.flush())
            .context("writing the report")?;
    }
    let disk = plan.disk_util.then(|| BlkDevice::for_driver(driver).name);
    let mut interim = |sim: &Sim, at: SimTime| -> Result<()> {
        let res = sim.snapshot_at(at);
        let mut rep = report::build(&plan.metas, &res, plan.global_options.clone());
        rep.startup_lines.clear();
        rep.configuration = Some(conf.clone());
        if let Some(name) = disk {
            rep.disk_util.push(report::disk_util(name, &res.system));
        }
        jobmap::write_reports(&inv, &rep, &mut out)?;
        out.flush().context("writing the report")
    };
    let status = status_interval(&inv)?.map(|every_ns| Status {
        every_ns,
        report: &mut interim,
    });
    drive(&mut sim, true, stream.as_mut(), status)?;
    let interrupted = crate::signals::caught();
    if let Some(sig) = interrupted {
        // As fio says it on the first signal.
        crate::embed::note(&format!("fio: terminating on signal {sig}"));
    }
    sim.close_observers().map_err(|e| anyhow!("{e}"))?;
    if let Some(s) = stream {
        s.finish_sim(&mut sim)?;
    }
    let (stopped_at, _) = sim.progress();
    let result = match interrupted {
        Some(_) => sim.snapshot_at(stopped_at),
        None => sim.finish(),
    };
    if inv
        .other_switches
        .iter()
        .any(|(sw, _, _)| sw == "bandwidth-log")
    {
        fiologs::write_bandwidth_logs()?;
    }
    // What fio logs as a job fails (log_err, on stderr while the jobs run).
    for (j, e) in result
        .jobs
        .iter()
        .enumerate()
        .filter_map(|(i, j)| j.error.as_ref().map(|e| (i, e)))
    {
        // fio names the job's file (its filename, else the job's name).
        let job = &inv.jobs[j];
        let file = job.options.filename.as_deref().unwrap_or(&job.name);
        if !e.message.is_empty() {
            crate::embed::note(&e.message.replace("%FILE%", file));
        }
    }
    // fill_device's last write (io_u.c io_u_log_error; the job then ends without error).
    for (s, fill) in result.jobs.iter().zip(&plan.enospc) {
        if let (Some(len), Some((file, offset))) = (s.enospc_write, fill) {
            crate::embed::note(&format!(
                "fio: io_u error on file {file}: No space left on device: write offset={offset}, buflen={len}"
            ));
        }
    }
    // fio's exit value counts the jobs that ended with an error (td->error).
    let failed = result
        .jobs
        .iter()
        .filter(|j| j.error.is_some() || j.verify_failure.is_some())
        .count();
    let mut rep = report::build(&plan.metas, &result, plan.global_options.clone());
    rep.configuration = Some(conf);
    rep.interrupted = interrupted.map(|signal| flashpath_fio::report::Interrupted {
        signal,
        simulated_ns: stopped_at,
    });
    if let Some(i) = &rep.interrupted {
        rep.startup_lines.insert(0, i.line());
    }
    if let Some(h) = &logs {
        // fio's report takes bw/iops from the logs' samples when they are written.
        for (jr, (bw, iops)) in rep.jobs.iter_mut().zip(h.report_overrides()) {
            for d in [Ddir::Read, Ddir::Write, Ddir::Trim] {
                if let Some(s) = bw {
                    jr.dir_mut(d).bw = s[d.index()];
                }
                if let Some(s) = iops {
                    jr.dir_mut(d).iops = s[d.index()];
                }
            }
        }
    }
    if let Some(name) = disk {
        rep.disk_util.push(report::disk_util(name, &result.system));
    }
    let (verify_failed, verify_lines) = crate::verifymap::failures(&result, &rep);
    // What fio prints as the jobs end (after `Starting`, before the reports), then the
    // reports.
    for l in rep
        .startup_lines
        .iter()
        .filter(|_| normal)
        .chain(&verify_lines)
    {
        writeln!(out, "{l}").context("writing the report")?;
    }
    jobmap::write_reports(&inv, &rep, &mut out).context("writing the report")?;
    out.flush().context("writing the report")?;
    if interrupted.is_some() {
        // fio's exit value when a signal ended the run (sig_int: exit_value = 128).
        return Err(crate::flashbench::ExitStatus(128).into());
    }
    if failed > 0 || verify_failed {
        // fio exits with the number of jobs that ended with an error (reap_threads:
        // exit_value++ per job; its messages are printed).
        return Err(crate::flashbench::ExitStatus(failed.clamp(1, 255) as u8).into());
    }
    Ok(())
}
