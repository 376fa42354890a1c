//! `flashpath flashbench`: flashbench's command line in, its tests run on the simulated
//! device, flashbench's output out, byte for byte.
//!
//! ```text
//!  flashpath options  ──▶ run::split_options / run::system ──▶ the simulated system
//!  flashbench args    ──▶ args (flashbench 62's getopt_long grammar)
//!                     ──▶ bench (the tests as pure code: one plan of accesses for all
//!                         requested tests, timed at once by a Target, then reduced and
//!                         printed as flashbench prints)
//!                     ──▶ sim_target (the plan as one scripted O_DIRECT|O_SYNC job)
//! ```
//!
//! `args`, `bench`, `vm`, `lfsr` and `cfmt` know nothing of the simulator: another
//! [`bench::Target`] (a real block device, an emulator) could drive them.
//! Reference: `docs/flashbench.md`.

pub mod args;
pub mod bench;
mod cfmt;
pub mod figures;
mod lfsr;
#[cfg(test)]
mod oracle;
pub mod sim_target;
mod vm;

use crate::run;
use anyhow::{anyhow, bail, Context, Result};
use flashpath_core::sim::Precondition;
use std::io::Write;

/// An exit status a flashbench run ends with (its messages already printed), for
/// `main` to return without a message of its own.
#[derive(Debug)]
pub struct ExitStatus(pub u8);

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flashbench exited with status {}", self.0)
    }
}

impl std::error::Error for ExitStatus {}

/// glibc's strerror text of an I/O error (Rust adds " (os error N)").
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// What flashbench prints for `-h` (its usage, all its options).
pub fn own_usage() -> String {
    match args::parse(&["-h".to_string()]) {
        Ok(_) => String::new(),
        Err(r) => r.stdout,
    }
}

pub fn command(argv: &[String]) -> Result<()> {
    let (opts, rest) = run::split_options(argv)?;
    let mut a = match args::parse(&rest) {
        Ok(a) => a,
        Err(r) => {
            crate::emit(&r.stdout)?;
            std::io::stderr().write_all(&r.stderr).ok();
            return Err(ExitStatus(r.status).into());
        }
    };
    // An error is one line: the warnings about the arguments (atoi's readings) go
    // into it; after a run that ends well they follow it.
    let warnings = std::mem::take(&mut a.warnings);
    match bench_run(a, &opts) {
        Ok(()) => {
            for w in &warnings {
                eprintln!("flashpath flashbench: {w}");
            }
            Ok(())
        }
        Err(e) if e.downcast_ref::<ExitStatus>().is_some() || warnings.is_empty() => {
            for w in &warnings {
                eprintln!("flashpath flashbench: {w}");
            }
            Err(e)
        }
        Err(e) => Err(anyhow!("{e:#} ({})", warnings.join("; "))),
    }
}

/// The run of parsed arguments `a` on the system `opts` chooses.
fn bench_run(a: args::Args, opts: &run::Options) -> Result<()> {
    if a.dev.is_empty() {
        // flashbench's open("") fails (ENOENT) before any test; nothing to simulate.
        bail!("flashbench: the device name is empty: flashbench cannot open '' (No such file or directory)");
    }
    let (host, device, driver) = run::system_announced(opts)?;
    bench::refuse_unmodelled(&a).map_err(|e| anyhow!("flashbench: {e}"))?;
    // flashbench opens (and truncates) --out before its first test, whether or not the
    // scatter test runs; a failure is perror(name) and main's return of -errno.
    let mut file = match a.out.as_deref() {
        Some(name) if name != "-" => match std::fs::File::create(name) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("{name}: {}", strerror(&e));
                let errno = e.raw_os_error().unwrap_or(5);
                return Err(ExitStatus((256 - (errno & 0xff)) as u8).into());
            }
        },
        _ => None,
    };
    let outputs = run::TraceOutputs::open(opts)?;
    let mut target = sim_target::SimTarget {
        host,
        device,
        driver,
        // An aged device's random layout would take a simulated write of every 4 KiB of
        // the span the tests touch (nearly the whole device for -a): flashbench's
        // default is the sequential layout, mapped at once.
        precondition: opts.precondition.unwrap_or(Precondition::Sequential),
        traced: outputs.wanted(),
        trace: None,
        progress: true,
    };
    let o = bench::run(&a, &mut target).map_err(|e| anyhow!("flashbench: {e}"))?;
    if let Some(trace) = &target.trace {
        outputs.write(trace, driver)?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&o.stdout)
        .and_then(|()| out.flush())
        .context("writing flashbench's output")?;
    std::io::stderr().write_all(&o.stderr).ok();
    if let (Some(f), Some(name)) = (file.as_mut(), a.out.as_deref()) {
        f.write_all(&o.file)
            .with_context(|| format!("{name}: writing the scatter output"))?;
    }
    if o.status != 0 {
        return Err(ExitStatus(o.status).into());
    }
    Ok(())
}
