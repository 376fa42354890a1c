//! `flashpath iozone`: an iozone command line in, its throughput tests run on the
//! simulated system, iozone's report out.
//!
//! ```text
//!  flashpath options ──▶ run::split_options / run::system ──▶ the simulated system
//!  iozone arguments  ──▶ args (iozone's getopt grammar) ──▶ engine (one job thread per
//!                        process, stonewalling) ──▶ report (iozone 3.508's printf formats)
//! ```
//!
//! `args` and `report` know nothing of the simulator, so another engine can drive them.

pub mod args;
mod engine;
pub mod figures;
mod order;
pub mod report;

use crate::run;
use anyhow::{bail, Context, Result};
use flashpath_core::sim::Precondition;
use std::io::Write;

pub fn command(argv: &[String]) -> Result<()> {
    let (opts, rest) = run::split_options(argv)?;
    let a = args::parse(&rest)?;
    let (host, device, driver) = run::system_announced(&opts)?;
    if a.counts.len() > 1 && (opts.trace.is_some() || opts.blktrace.is_some()) {
        bail!(
            "iozone: --trace and --blktrace record one throughput test; these arguments run {} (process counts {:?})",
            a.counts.len(),
            a.counts
        );
    }
    let sys = engine::System {
        host,
        device,
        driver,
        precondition: opts.precondition.unwrap_or(Precondition::Auto),
        progress: true,
    };
    let mut outputs = Some(run::TraceOutputs::open(&opts)?);
    let wanted = outputs.as_ref().is_some_and(|o| o.wanted());
    let mut text = report::header(&a, crate::report::REPORT_TIME);
    let mut res_prob = None;
    for &count in &a.counts {
        let (tests, trace) = engine::run(&a, &sys, count, wanted)?;
        text += &report::each_process(&a);
        for t in &tests {
            text += &report::test_block(&a, count, t);
            if report::Figures::of(t).res_prob {
                res_prob = Some(a.record_bytes);
            }
        }
        if let (Some(trace), Some(o)) = (trace, outputs.take()) {
            o.write(&trace, driver)?;
        }
    }
    run::progress::end_steps();
    text += &report::closing(res_prob);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the report")?;
    Ok(())
}
